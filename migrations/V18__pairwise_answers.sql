-- V18: the candidates' answers of a pairwise run as rows. Why: until now they were calls only
-- (the cache), which no row referenced: `track export parquet` left them out, `track merge`
-- could not carry them as rows, and nothing row-based showed what each candidate answered.
-- One row per candidate model and item (a prompt) of a run with candidate models (a run of
-- generated datasheets has no answers stage): `candidate` and `item` name them as the
-- verdicts do. `call_id` is the stored call, the answer's text in its blob; `error` is why
-- the candidate did not answer (NULL when it did; `call_id` NULL too when no request was
-- stored). `uid` as V17 makes the rows': `track_sha256('answer', run uid, candidate, item)`,
-- computed at every insert. Runs recorded before have no rows here: which call answered
-- which candidate was not recorded, and a cached call may serve several runs.
CREATE TABLE pairwise_answers (
    id        INTEGER PRIMARY KEY,
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    candidate TEXT NOT NULL,
    item      TEXT NOT NULL,
    call_id   INTEGER REFERENCES calls (id),
    cache_hit INTEGER NOT NULL DEFAULT 0,
    error     TEXT,
    uid       TEXT,
    UNIQUE (run_id, candidate, item)
);
CREATE UNIQUE INDEX answers_by_uid ON pairwise_answers (uid);
