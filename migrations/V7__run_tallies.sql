-- V7: one runtime for every experiment kind. Why: issue 7. The run row carries its own tally
-- (calls, cache hits, failed calls, errors, cost, paid) kept current as outcomes land, so
-- `track runs` reads every kind the same way and a killed run still shows what it did; the
-- calls it planned, so a query can say "8 of 20"; the process id, for the record. Calls that
-- got no answer (failed, refused for a missing key, not cached under --offline) are listed in
-- run_errors for every kind, including those whose rows have no place for an error.
ALTER TABLE runs ADD COLUMN planned_calls INTEGER;
ALTER TABLE runs ADD COLUMN calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cache_hits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN failed_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN paid_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pid INTEGER;

CREATE TABLE run_errors (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    stage      TEXT NOT NULL,           -- answers, judges, generation, reviews, predictions
    model_ref  TEXT NOT NULL,           -- provider:alias
    item       TEXT NOT NULL,           -- what the call was for, e.g. `openai:gpt-4o on p1`
    error      TEXT NOT NULL,
    call_id    INTEGER REFERENCES calls (id),
    attempts   INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX run_errors_by_run ON run_errors (run_id);

-- Tallies of the runs recorded before this migration, from their result rows.
UPDATE runs SET
    calls = (SELECT count(*) FROM bench_results b WHERE b.run_id = runs.id),
    cache_hits = (SELECT coalesce(sum(cache_hit), 0) FROM bench_results b WHERE b.run_id = runs.id),
    errors = (SELECT coalesce(sum(status = 'error'), 0) FROM bench_results b WHERE b.run_id = runs.id),
    cost_usd = (SELECT coalesce(sum(cost_usd), 0) FROM bench_results b WHERE b.run_id = runs.id),
    paid_usd = (SELECT coalesce(sum(paid_usd), 0) FROM bench_results b WHERE b.run_id = runs.id)
WHERE kind = 'bench';
UPDATE runs SET
    calls = (SELECT count(call_id) FROM reviews r WHERE r.run_id = runs.id),
    cache_hits = (SELECT coalesce(sum(cache_hit), 0) FROM reviews r WHERE r.run_id = runs.id),
    errors = (SELECT coalesce(sum(parse_status IN ('error', 'failed')), 0) FROM reviews r WHERE r.run_id = runs.id),
    cost_usd = (SELECT coalesce(sum(cost_usd), 0) FROM reviews r WHERE r.run_id = runs.id),
    paid_usd = (SELECT coalesce(sum(paid_usd), 0) FROM reviews r WHERE r.run_id = runs.id)
WHERE kind = 'review';
UPDATE runs SET
    calls = (SELECT count(*) FROM generated_datasheets g WHERE g.run_id = runs.id),
    cache_hits = (SELECT coalesce(sum(cache_hit), 0) FROM generated_datasheets g WHERE g.run_id = runs.id),
    cost_usd = (SELECT coalesce(sum(cost_usd), 0) FROM generated_datasheets g WHERE g.run_id = runs.id),
    paid_usd = (SELECT coalesce(sum(paid_usd), 0) FROM generated_datasheets g WHERE g.run_id = runs.id)
WHERE kind = 'generate';
UPDATE runs SET
    calls = (SELECT count(DISTINCT call_id) FROM relevance_predictions p WHERE p.run_id = runs.id),
    cache_hits = (SELECT count(DISTINCT call_id) FROM relevance_predictions p WHERE p.run_id = runs.id AND p.cache_hit = 1),
    cost_usd = (SELECT coalesce(sum(c.cost_usd), 0) FROM calls c WHERE c.id IN
                   (SELECT call_id FROM relevance_predictions p WHERE p.run_id = runs.id)),
    paid_usd = (SELECT coalesce(sum(c.cost_usd), 0) FROM calls c WHERE c.id IN
                   (SELECT call_id FROM relevance_predictions p WHERE p.run_id = runs.id AND p.cache_hit = 0))
WHERE kind = 'relevance';
