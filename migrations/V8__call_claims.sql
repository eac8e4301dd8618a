-- V8: a call in flight is claimed. Why: issue 8. Two runs on one database (two terminals, a
-- re-run started while the first still works) each looked the cache up once, at plan time, and
-- both paid for every call neither had yet. A run claims a key before sending it; another run
-- that needs the same key waits for the answer instead of paying again. A claim names its
-- owner (a run) and expires, so a claim of a killed run never blocks for long.
CREATE TABLE call_claims (
    cache_key  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,    -- the run that sends the call
    expires_at REAL NOT NULL     -- unix seconds; an expired claim can be taken over
) WITHOUT ROWID;
