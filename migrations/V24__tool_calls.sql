-- V24: the tool calls of a benchmark's tool loops, one row per call of a tool the model asked
-- for: the step (the call of the model that asked, from 1), the call's place in that answer,
-- the tool, its arguments (JSON text) and the result sent back (NULL: the loop stopped
-- there, at max_steps, before it was answered). Keyed by the result's own key.
CREATE TABLE tool_calls (
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index    INTEGER NOT NULL,
    template_index INTEGER NOT NULL,
    prompt_index   INTEGER NOT NULL,
    repeat_index   INTEGER NOT NULL,
    step           INTEGER NOT NULL,        -- the call of the model that asked, from 1
    call_index     INTEGER NOT NULL,        -- its place among that answer's calls, from 0
    call_id        TEXT NOT NULL,           -- the provider's id of the call
    name           TEXT NOT NULL,
    arguments      TEXT NOT NULL,           -- JSON object
    result         TEXT,
    PRIMARY KEY (run_id, model_index, template_index, prompt_index, repeat_index, step, call_index)
) WITHOUT ROWID;
