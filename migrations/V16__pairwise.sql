-- V16: pairwise comparisons. Why: issue 18. One row per verdict of a run: a judge saw one
-- item (a prompt, or a sensor) and two candidates' texts, in one of the two orders, and said
-- which is better. `candidate_a` and `candidate_b` are the pair in the experiment's order,
-- whatever order they were shown in (`shown_order`: `ab` showed candidate_a first); `winner`
-- is read back into that frame (`A` is candidate_a), so the two verdicts of a pair compare
-- directly. `invalid`: the judge's answer could not be read (never a guess).
CREATE TABLE pairwise_verdicts (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    judge          TEXT NOT NULL,
    item           TEXT NOT NULL,
    candidate_a    TEXT NOT NULL,
    candidate_b    TEXT NOT NULL,
    repeat_index   INTEGER NOT NULL,
    shown_order    TEXT NOT NULL CHECK (shown_order IN ('ab', 'ba')),
    winner         TEXT NOT NULL CHECK (winner IN ('A', 'B', 'tie', 'invalid')),
    justification  TEXT,
    invalid_reason TEXT,
    call_id        INTEGER REFERENCES calls (id),
    cache_hit      INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run_id, judge, item, candidate_a, candidate_b, repeat_index, shown_order)
);
