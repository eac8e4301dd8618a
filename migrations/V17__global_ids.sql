-- V17: global identities, plans and shards. Why: issue 19. Integer ids are local to one
-- database: two databases (two shards, a teammate's) cannot be combined by them. So every run,
-- call and result row gets an id that is the same wherever it was made (`uid`), and merging
-- copies by it:
--   runs:  a UUIDv7 (time-ordered, random), made when the run starts;
--   calls: the sha256 of the call's content (its key, outcome, answer, time, attempts) and a
--          salt made with it (a random number; the local id here), so that two calls alike
--          to the millisecond stay two;
--   rows:  the sha256 of their run's uid and what the row is within it (its natural key:
--          model, prompt and repeat of a benchmark result, ...); rows without one (reviews,
--          generated datasheets, errors) add a salt as calls do.
-- Hashes come from `track_sha256(...)`, a function track registers on every connection: its
-- arguments as text (NULL as \0) joined by \x1f, a tag first. The same function fills the
-- uid at every insert, so a backfilled row and a new one are made alike.
--
-- A run also records its plan (`plan_sha256`: what it would call, whatever it has cached or
-- which shard it is) and, when it ran one part of a plan (`--shard k/N`), which part. A
-- merge (`track merge`) makes one run of each plan's shards, `merged_into` points each shard
-- at it, and the merged rows belong to it: statistics come from the rows of the whole plan.

ALTER TABLE runs ADD COLUMN uid TEXT;
ALTER TABLE runs ADD COLUMN plan_sha256 TEXT;
ALTER TABLE runs ADD COLUMN shard_index INTEGER;   -- k of --shard k/N, from 0
ALTER TABLE runs ADD COLUMN shard_count INTEGER;   -- N; on a merged run: how many shards it joins
ALTER TABLE runs ADD COLUMN merged_into INTEGER REFERENCES runs (id) ON DELETE SET NULL;

-- Runs recorded before: a UUIDv7 of their start and their content (the same for two copies
-- of one database); their plan from what they recorded of it (kind, file text, options).
UPDATE runs SET uid = track_uuid7(started_at, 'run', id, kind, file, spec_sha256, options_json, pid)
WHERE uid IS NULL;
UPDATE runs SET plan_sha256 = track_sha256('plan-v0', kind, spec_sha256, options_json)
WHERE plan_sha256 IS NULL;
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);

ALTER TABLE calls ADD COLUMN uid TEXT;
UPDATE calls SET uid = track_sha256('call', cache_key, status, response_sha256, created_at, attempts, error, id)
WHERE uid IS NULL;
CREATE UNIQUE INDEX calls_by_uid ON calls (uid);

ALTER TABLE bench_results ADD COLUMN uid TEXT;
UPDATE bench_results SET uid = track_sha256('bench_result',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), model_index, prompt_index, repeat_index);
CREATE UNIQUE INDEX bench_results_by_uid ON bench_results (uid);

ALTER TABLE generated_datasheets ADD COLUMN uid TEXT;
UPDATE generated_datasheets SET uid = track_sha256('generated',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), path, content_sha256, created_at, id);
CREATE UNIQUE INDEX generated_by_uid ON generated_datasheets (uid);

ALTER TABLE reviews ADD COLUMN uid TEXT;
UPDATE reviews SET uid = track_sha256('review',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), review_key, generated_path, reviewed_at, id);
CREATE UNIQUE INDEX reviews_by_uid ON reviews (uid);

ALTER TABLE relevance_predictions ADD COLUMN uid TEXT;
UPDATE relevance_predictions SET uid = track_sha256('prediction',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), image, predicate, variant, trial);
CREATE UNIQUE INDEX predictions_by_uid ON relevance_predictions (uid);

ALTER TABLE pairwise_verdicts ADD COLUMN uid TEXT;
UPDATE pairwise_verdicts SET uid = track_sha256('verdict',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), judge, item, candidate_a, candidate_b,
    repeat_index, shown_order);
CREATE UNIQUE INDEX verdicts_by_uid ON pairwise_verdicts (uid);

ALTER TABLE run_errors ADD COLUMN uid TEXT;
UPDATE run_errors SET uid = track_sha256('run_error',
    (SELECT r.uid FROM runs r WHERE r.id = run_id), stage, model_ref, item, error, created_at, id);
CREATE UNIQUE INDEX run_errors_by_uid ON run_errors (uid);

-- The status `partial`: a merged run some of whose shards were missing or unfinished
-- (`track merge --allow-partial`). Added to V1's CHECK as V11 and V15 did: the constraint's
-- text edited in place (https://www.sqlite.org/lang_altertable.html#otheralter); the ALTERs
-- above changed the schema version, and RESET has this connection read the schema again.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''waiting'')', '''waiting'', ''partial'')')
WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = RESET;
