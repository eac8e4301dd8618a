-- V25: narrow benchmark rows (issue 29: a fully cached run of 400,000 results at 50,000
-- results/s). A result row held its model's reference, provider, id and energy method, its
-- case's id and its template's name: the same few names written again in every row, each a
-- text the writer binds and SQLite copies, and a unique index of 64-character uids that
-- took each row at a random place (3 s of 15 for 400,000 results). So:
--
-- 1. `bench_rows` holds what differs from row to row: the key, the numbers, the outcome, the
--    expected value, the uid (still written, no longer indexed: a result is found by its run
--    and key, and `track merge` copies by them). The names are kept once per run: the case's
--    id and the template's name in `bench_labels` (as they already were), the model's in
--    `bench_models`.
-- 2. `bench_results` is a VIEW of the same name and columns as the table it replaces, so that
--    queries, exports and your own SQL read it as before; its INSTEAD OF triggers take
--    INSERT, UPDATE and DELETE as the table did (the names in an UPDATE are not changed).
CREATE TABLE bench_rows (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index      INTEGER NOT NULL,
    prompt_index     INTEGER NOT NULL,      -- the test's, or the case's, index
    repeat_index     INTEGER NOT NULL,
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
    energy_wh        REAL,                  -- NULL: unknown (then so is the method)
    energy_wh_min    REAL,
    energy_wh_max    REAL,
    created_at       TEXT NOT NULL,
    judge_call_id    INTEGER REFERENCES calls (id),
    judge_score      INTEGER,
    judge_cost_usd   REAL,
    expected         TEXT,
    uid              TEXT,
    template_index   INTEGER NOT NULL DEFAULT 0,
    score            REAL,                  -- the weighted score of the checks, 0-1, when asked
    UNIQUE (run_id, model_index, template_index, prompt_index, repeat_index)
);

-- Each run's models: what `bench_results` showed in every row of a model.
CREATE TABLE bench_models (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index   INTEGER NOT NULL,
    model_ref     TEXT NOT NULL,            -- provider:alias as written in the benchmark file
    provider      TEXT NOT NULL,
    model_id      TEXT NOT NULL,
    energy_method TEXT,                     -- how its energy was estimated, where it was
    PRIMARY KEY (run_id, model_index)
) WITHOUT ROWID;

INSERT INTO bench_rows (id, run_id, model_index, prompt_index, repeat_index, method, call_id,
    cache_hit, status, detail, latency_ms, input_tokens, output_tokens, tokens_estimated,
    cost_usd, paid_usd, energy_wh, energy_wh_min, energy_wh_max, created_at, judge_call_id,
    judge_score, judge_cost_usd, expected, uid, template_index, score)
SELECT id, run_id, model_index, prompt_index, repeat_index, method, call_id, cache_hit, status,
    detail, latency_ms, input_tokens, output_tokens, tokens_estimated, cost_usd, paid_usd,
    energy_wh, energy_wh_min, energy_wh_max, created_at, judge_call_id, judge_score,
    judge_cost_usd, expected, uid, template_index, score
FROM bench_results ORDER BY id;
INSERT INTO bench_models (run_id, model_index, model_ref, provider, model_id, energy_method)
SELECT run_id, model_index, min(model_ref), min(provider), min(model_id), max(energy_method)
FROM bench_results GROUP BY run_id, model_index;
-- Every name a row held is labelled (the writer labelled each run's models, cases and
-- templates since V3 and V20; this covers a row written by hand).
INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
SELECT run_id, 'prompt', prompt_index, min(prompt_name) FROM bench_results
GROUP BY run_id, prompt_index;
INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
SELECT run_id, 'template', template_index, min(template_name) FROM bench_results
WHERE template_name IS NOT NULL GROUP BY run_id, template_index;
INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
SELECT run_id, 'model', model_index, min(model_ref) FROM bench_results
GROUP BY run_id, model_index;
DROP TABLE bench_results;

-- The indexes of V22, under their names, on the rows; no index of uids.
CREATE INDEX bench_results_by_case ON bench_rows (run_id, prompt_index, status, template_index)
    WHERE template_index >= 0;
CREATE INDEX bench_results_by_status ON bench_rows (run_id, status, prompt_index, template_index)
    WHERE template_index >= 0;
CREATE INDEX bench_results_by_call ON bench_rows (call_id) WHERE call_id IS NOT NULL;

CREATE VIEW bench_results AS
SELECT b.id, b.run_id, b.model_index, b.prompt_index, b.repeat_index, m.model_ref, m.provider,
    m.model_id, p.label AS prompt_name, b.method, b.call_id, b.cache_hit, b.status, b.detail,
    b.latency_ms, b.input_tokens, b.output_tokens, b.tokens_estimated, b.cost_usd, b.paid_usd,
    b.energy_wh, b.energy_wh_min, b.energy_wh_max, e.energy_method, b.created_at, b.judge_call_id, b.judge_score, b.judge_cost_usd, b.expected, b.uid,
    b.template_index, t.label AS template_name, b.score
FROM bench_rows b
LEFT JOIN bench_models m ON m.run_id = b.run_id AND m.model_index = b.model_index
-- A row without an energy estimate has no method (a join, not a CASE: its column keeps the
-- declared type TEXT, which exports read).
LEFT JOIN bench_models e
    ON e.run_id = b.run_id AND e.model_index = b.model_index AND b.energy_wh IS NOT NULL
LEFT JOIN bench_labels p ON p.run_id = b.run_id AND p.kind = 'prompt' AND p.idx = b.prompt_index
LEFT JOIN bench_labels t
    ON t.run_id = b.run_id AND t.kind = 'template' AND t.idx = b.template_index;

CREATE TRIGGER bench_results_insert INSTEAD OF INSERT ON bench_results BEGIN
    INSERT OR IGNORE INTO bench_models (run_id, model_index, model_ref, provider, model_id,
        energy_method)
    VALUES (new.run_id, new.model_index, new.model_ref, new.provider, new.model_id,
        new.energy_method);
    INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
    VALUES (new.run_id, 'model', new.model_index, new.model_ref),
           (new.run_id, 'prompt', new.prompt_index, new.prompt_name);
    INSERT OR IGNORE INTO bench_labels (run_id, kind, idx, label)
    SELECT new.run_id, 'template', coalesce(new.template_index, 0), new.template_name
    WHERE new.template_name IS NOT NULL;
    INSERT INTO bench_rows (id, run_id, model_index, prompt_index, repeat_index, method,
        call_id, cache_hit, status, detail, latency_ms, input_tokens, output_tokens,
        tokens_estimated, cost_usd, paid_usd, energy_wh, energy_wh_min, energy_wh_max,
        created_at, judge_call_id, judge_score, judge_cost_usd, expected, uid, template_index,
        score)
    VALUES (new.id, new.run_id, new.model_index, new.prompt_index, new.repeat_index,
        new.method, new.call_id, new.cache_hit, new.status, new.detail, new.latency_ms,
        new.input_tokens, new.output_tokens, coalesce(new.tokens_estimated, 0), new.cost_usd,
        new.paid_usd, new.energy_wh, new.energy_wh_min, new.energy_wh_max, new.created_at,
        new.judge_call_id, new.judge_score, new.judge_cost_usd, new.expected, new.uid,
        coalesce(new.template_index, 0), new.score);
END;

CREATE TRIGGER bench_results_update INSTEAD OF UPDATE ON bench_results BEGIN
    UPDATE bench_rows SET run_id = new.run_id, model_index = new.model_index,
        prompt_index = new.prompt_index, repeat_index = new.repeat_index, method = new.method,
        call_id = new.call_id, cache_hit = new.cache_hit, status = new.status,
        detail = new.detail, latency_ms = new.latency_ms, input_tokens = new.input_tokens,
        output_tokens = new.output_tokens, tokens_estimated = new.tokens_estimated,
        cost_usd = new.cost_usd, paid_usd = new.paid_usd, energy_wh = new.energy_wh,
        energy_wh_min = new.energy_wh_min, energy_wh_max = new.energy_wh_max,
        created_at = new.created_at, judge_call_id = new.judge_call_id,
        judge_score = new.judge_score, judge_cost_usd = new.judge_cost_usd,
        expected = new.expected, uid = new.uid, template_index = new.template_index,
        score = new.score
    WHERE id = old.id;
END;

CREATE TRIGGER bench_results_delete INSTEAD OF DELETE ON bench_results BEGIN
    DELETE FROM bench_rows WHERE id = old.id;
END;

-- 3. A result's checks are keyed by the result's row id: a key of two integers, where V23's
--    six-column key (run, model, template, case, repeat, check) made each of a cached run's
--    800,000 check rows a wide key to compare and to store. `bench_checks` becomes a view of
--    the same columns, as `bench_results` did; deleting a result deletes its checks.
CREATE TABLE bench_check_rows (
    result_id   INTEGER NOT NULL REFERENCES bench_rows (id) ON DELETE CASCADE,
    check_index INTEGER NOT NULL,           -- in the order the file gives the checks
    method      TEXT NOT NULL,
    expected    TEXT,                       -- the value compared with, rendered for the case
    status      TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
    score       REAL,                       -- 0-1 where the method gives one
    weight      REAL NOT NULL DEFAULT 1,
    reason      TEXT,
    PRIMARY KEY (result_id, check_index)
) WITHOUT ROWID;
INSERT INTO bench_check_rows (result_id, check_index, method, expected, status, score, weight,
    reason)
SELECT b.id, k.check_index, k.method, k.expected, k.status, k.score, k.weight, k.reason
FROM bench_checks k JOIN bench_rows b ON b.run_id = k.run_id AND b.model_index = k.model_index
    AND b.template_index = k.template_index AND b.prompt_index = k.prompt_index
    AND b.repeat_index = k.repeat_index
ORDER BY b.id, k.check_index;
DROP TABLE bench_checks;

CREATE VIEW bench_checks AS
SELECT b.run_id, b.model_index, b.template_index, b.prompt_index, b.repeat_index,
    k.check_index, k.method, k.expected, k.status, k.score, k.weight, k.reason
FROM bench_check_rows k JOIN bench_rows b ON b.id = k.result_id;

CREATE TRIGGER bench_checks_insert INSTEAD OF INSERT ON bench_checks BEGIN
    INSERT INTO bench_check_rows (result_id, check_index, method, expected, status, score,
        weight, reason)
    SELECT b.id, new.check_index, new.method, new.expected, new.status, new.score,
        coalesce(new.weight, 1), new.reason
    FROM bench_rows b
    WHERE b.run_id = new.run_id AND b.model_index = new.model_index
        AND b.template_index = new.template_index AND b.prompt_index = new.prompt_index
        AND b.repeat_index = new.repeat_index;
END;

CREATE TRIGGER bench_checks_update INSTEAD OF UPDATE ON bench_checks BEGIN
    UPDATE bench_check_rows SET check_index = new.check_index, method = new.method,
        expected = new.expected, status = new.status, score = new.score, weight = new.weight,
        reason = new.reason
    WHERE check_index = old.check_index AND result_id = (SELECT b.id FROM bench_rows b
        WHERE b.run_id = old.run_id AND b.model_index = old.model_index
        AND b.template_index = old.template_index AND b.prompt_index = old.prompt_index
        AND b.repeat_index = old.repeat_index);
END;

CREATE TRIGGER bench_checks_delete INSTEAD OF DELETE ON bench_checks BEGIN
    DELETE FROM bench_check_rows
    WHERE check_index = old.check_index AND result_id = (SELECT b.id FROM bench_rows b
        WHERE b.run_id = old.run_id AND b.model_index = old.model_index
        AND b.template_index = old.template_index AND b.prompt_index = old.prompt_index
        AND b.repeat_index = old.repeat_index);
END;
