-- V5: bench_results_by_run duplicates the leading column of the UNIQUE (run_id, model_index,
-- prompt_index, repeat_index) index, which serves the same lookups. Why: one index less to
-- maintain on every result written (cached runs write tens of thousands at once).
DROP INDEX IF EXISTS bench_results_by_run;
