-- V20: benchmarks from data (issue 29). A benchmark may read its cases from files and run
-- several prompt templates on every case, with several checks on every answer.
--
-- 1. A result is one (model, template, case, repeat): `template_index` joins the natural key.
--    SQLite cannot change a table's UNIQUE constraint, so the table is made anew with it and
--    the rows copied (columns in their old order, the new one last). A benchmark without
--    templates has the one template 0. `prompt_name` holds the case's id when the cases come
--    from data.
CREATE TABLE bench_results_v20 (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index      INTEGER NOT NULL,
    prompt_index     INTEGER NOT NULL,
    repeat_index     INTEGER NOT NULL,
    model_ref        TEXT NOT NULL,         -- provider:alias as written in the benchmark file
    provider         TEXT NOT NULL,
    model_id         TEXT NOT NULL,
    prompt_name      TEXT NOT NULL,         -- the test's name, or the case's id
    method           TEXT NOT NULL,         -- the check's method; `checks` when several
    call_id          INTEGER REFERENCES calls (id),
    cache_hit        INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
    detail           TEXT,                  -- why a test failed, or the error
    latency_ms       REAL,
    input_tokens     INTEGER,
    output_tokens    INTEGER,
    tokens_estimated INTEGER NOT NULL DEFAULT 0,
    cost_usd         REAL,                  -- what the call cost when it was made
    paid_usd         REAL,                  -- what this run paid: 0 on a cache hit
    energy_wh        REAL,
    energy_wh_min    REAL,
    energy_wh_max    REAL,
    energy_method    TEXT,
    created_at       TEXT NOT NULL,
    judge_call_id    INTEGER REFERENCES calls (id),
    judge_score      INTEGER,
    judge_cost_usd   REAL,
    expected         TEXT,
    uid              TEXT,
    template_index   INTEGER NOT NULL DEFAULT 0,
    template_name    TEXT,                  -- the template's name (NULL: no templates)
    score            REAL,                  -- the weighted score of the checks, 0-1, when asked
    UNIQUE (run_id, model_index, template_index, prompt_index, repeat_index)
);
INSERT INTO bench_results_v20 (id, run_id, model_index, prompt_index, repeat_index, model_ref,
    provider, model_id, prompt_name, method, call_id, cache_hit, status, detail, latency_ms,
    input_tokens, output_tokens, tokens_estimated, cost_usd, paid_usd, energy_wh, energy_wh_min,
    energy_wh_max, energy_method, created_at, judge_call_id, judge_score, judge_cost_usd,
    expected, uid)
SELECT id, run_id, model_index, prompt_index, repeat_index, model_ref, provider, model_id,
    prompt_name, method, call_id, cache_hit, status, detail, latency_ms, input_tokens,
    output_tokens, tokens_estimated, cost_usd, paid_usd, energy_wh, energy_wh_min,
    energy_wh_max, energy_method, created_at, judge_call_id, judge_score, judge_cost_usd,
    expected, uid
FROM bench_results;
DROP TABLE bench_results;
ALTER TABLE bench_results_v20 RENAME TO bench_results;
CREATE UNIQUE INDEX bench_results_by_uid ON bench_results (uid);

-- 2. Labels by index gain templates' names.
CREATE TABLE bench_labels_v20 (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind   TEXT NOT NULL CHECK (kind IN ('model', 'prompt', 'template')),
    idx    INTEGER NOT NULL,
    label  TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, idx)
) WITHOUT ROWID;
INSERT INTO bench_labels_v20 SELECT run_id, kind, idx, label FROM bench_labels;
DROP TABLE bench_labels;
ALTER TABLE bench_labels_v20 RENAME TO bench_labels;

-- 3. Every check of a result that has several: its outcome and why. A result with one check
--    holds it in its own row (method, expected, status, detail), as before.
CREATE TABLE bench_checks (
    result_uid  TEXT NOT NULL,              -- bench_results.uid
    check_index INTEGER NOT NULL,           -- in the order the file gives the checks
    run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    method      TEXT NOT NULL,
    expected    TEXT,                       -- the value compared with, rendered for the case
    status      TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
    score       REAL,                       -- 0-1 where the method gives one
    weight      REAL NOT NULL DEFAULT 1,
    reason      TEXT,
    PRIMARY KEY (result_uid, check_index)
) WITHOUT ROWID;
CREATE INDEX bench_checks_by_run ON bench_checks (run_id);

-- 4. Data files fetched from an address (hf://), kept so that re-runs, --offline and shards
--    read the same bytes: the address as written, the commit its revision resolved to, and
--    the blob of the file's bytes.
CREATE TABLE dataset_files (
    address    TEXT PRIMARY KEY,            -- hf://datasets/OWNER/NAME@REVISION/PATH
    revision   TEXT NOT NULL,               -- the commit sha the revision resolved to
    sha256     TEXT NOT NULL REFERENCES blobs (sha256),
    fetched_at TEXT NOT NULL
) WITHOUT ROWID;
