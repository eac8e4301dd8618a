-- V23: a result's checks are keyed by the result's own key (run, model, template, case,
-- repeat), not by its uid. A run records its results in key order, so its checks are
-- appended at the end of the table's B-tree instead of being scattered by a hash: a cached
-- run of 400,000 results with two checks each wrote 800,000 rows at random places in
-- two trees (the table, 125 MB, and an index by run, 66 MB) and spent most of its time
-- reading and writing their pages. The uid stays on the result (bench_results.uid).
CREATE TABLE bench_checks_v23 (
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index    INTEGER NOT NULL,
    template_index INTEGER NOT NULL,
    prompt_index   INTEGER NOT NULL,
    repeat_index   INTEGER NOT NULL,
    check_index    INTEGER NOT NULL,        -- in the order the file gives the checks
    method         TEXT NOT NULL,
    expected       TEXT,                    -- the value compared with, rendered for the case
    status         TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
    score          REAL,                    -- 0-1 where the method gives one
    weight         REAL NOT NULL DEFAULT 1,
    reason         TEXT,
    PRIMARY KEY (run_id, model_index, template_index, prompt_index, repeat_index, check_index)
) WITHOUT ROWID;
INSERT INTO bench_checks_v23 (run_id, model_index, template_index, prompt_index, repeat_index,
    check_index, method, expected, status, score, weight, reason)
SELECT b.run_id, b.model_index, b.template_index, b.prompt_index, b.repeat_index,
    k.check_index, k.method, k.expected, k.status, k.score, k.weight, k.reason
FROM bench_checks k JOIN bench_results b ON b.uid = k.result_uid;
DROP TABLE bench_checks;
ALTER TABLE bench_checks_v23 RENAME TO bench_checks;

