-- V6: relevance experiments. One row per image x predicate x variant x trial of a run: the
-- model's score (or why it is invalid), the ground truth and the call. Why: issue 4.
CREATE TABLE relevance_predictions (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_ref      TEXT NOT NULL,
    image          TEXT NOT NULL,            -- the image's stem, as in the ground truth
    image_sha256   TEXT NOT NULL REFERENCES blobs (sha256),
    predicate      TEXT NOT NULL,
    predicate_kind TEXT NOT NULL,            -- clear, on, ontable, holding
    variant        TEXT NOT NULL CHECK (variant IN ('WITH', 'WITHOUT')),
    trial          INTEGER NOT NULL,
    score          INTEGER,                  -- 0, 1 or 2; NULL when invalid
    invalid_reason TEXT,
    truth          INTEGER NOT NULL CHECK (truth IN (0, 1)),
    call_id        INTEGER REFERENCES calls (id),
    cache_hit      INTEGER NOT NULL DEFAULT 0,
    UNIQUE (run_id, image, predicate, variant, trial)
);
