-- V3: the names of each run's models and prompts by index, so that summaries over millions
-- of results read numbers only and look the few names up here. Why: `track query` speed and
-- memory on large runs (issue 2's benchmark of 1,000,000 results).
CREATE TABLE bench_labels (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind   TEXT NOT NULL CHECK (kind IN ('model', 'prompt')),
    idx    INTEGER NOT NULL,
    label  TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, idx)
) WITHOUT ROWID;

INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
SELECT run_id, 'model', model_index, min(model_ref) FROM bench_results GROUP BY run_id, model_index;
INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
SELECT run_id, 'prompt', prompt_index, min(prompt_name) FROM bench_results GROUP BY run_id, prompt_index;
