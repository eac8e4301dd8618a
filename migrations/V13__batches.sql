-- V13: batches. Why: issue 17. OpenAI's Batch API and Anthropic's Message Batches answer at
-- half price within 24 hours, but neither keeps a client's place: a client that loses a
-- batch's id has paid for results it cannot find. So every step of a batch is stored here
-- before anything relies on it: the intent (what will be sent, under a tag of its own, with
-- the payload's sha256 and its keys) before the upload, then the file id, the batch id, the
-- last poll's status and counts, and each result as an ordinary row of `calls`.
CREATE TABLE batches (
    id              INTEGER PRIMARY KEY,
    tag             TEXT NOT NULL UNIQUE,   -- random; OpenAI's metadata `track_intent` names it
    run_id          INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    provider        TEXT NOT NULL,          -- the provider's name, as in model references
    api             TEXT NOT NULL CHECK (api IN ('openai', 'anthropic')),
    base_url        TEXT NOT NULL,
    key_fingerprint TEXT NOT NULL,          -- a hash of the key (the pacer's), never the key
    model           TEXT NOT NULL,
    payload_sha256  TEXT NOT NULL,
    payload_bytes   INTEGER NOT NULL,
    request_count   INTEGER NOT NULL,
    created_at      TEXT NOT NULL,          -- when the intent was stored: before any upload
    -- track's step: intent (stored, nothing sent yet), uploaded (OpenAI's file id known),
    -- submitted (the batch id known: polled until it ends), collected (every result
    -- stored), void (never created, or given up; its calls are sent again)
    state           TEXT NOT NULL DEFAULT 'intent'
                    CHECK (state IN ('intent', 'uploaded', 'submitted', 'collected', 'void')),
    file_id         TEXT,                   -- OpenAI's input file
    batch_id        TEXT,                   -- the provider's id
    submitted_at    TEXT,
    -- The provider's word at the last poll, made neutral: validating, in_progress,
    -- finalizing, cancelling, completed, expired, cancelled, failed.
    status          TEXT,
    failures        TEXT,                   -- a failed batch's errors, JSON [{code, message, param, line}]
    total           INTEGER NOT NULL DEFAULT 0,
    processing      INTEGER NOT NULL DEFAULT 0,
    succeeded       INTEGER NOT NULL DEFAULT 0,
    errored         INTEGER NOT NULL DEFAULT 0,
    cancelled       INTEGER NOT NULL DEFAULT 0,
    expired         INTEGER NOT NULL DEFAULT 0,
    output_file_id  TEXT,                   -- OpenAI: answered requests
    error_file_id   TEXT,                   -- OpenAI: failed, expired and cancelled requests
    results_url     TEXT,                   -- Anthropic: followed as given, never built
    expires_at      TEXT,
    polls           INTEGER NOT NULL DEFAULT 0,
    last_polled_at  TEXT,
    ended_at        TEXT,                   -- when the provider says it ended
    collected_at    TEXT,
    note            TEXT                    -- why it is void
);
-- Batches still to be followed, found at every run's start.
CREATE INDEX batches_open ON batches (state) WHERE state IN ('intent', 'uploaded', 'submitted');

-- The calls of each batch, by cache key (the requests' custom_id), in payload order.
CREATE TABLE batch_calls (
    batch     INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    cache_key TEXT NOT NULL,
    position  INTEGER NOT NULL,             -- its line in the payload, from 1 (OpenAI's errors name lines)
    -- pending: waits in a batch not collected; answered / failed: its outcome is `call_id`;
    -- unfinished: expired, cancelled, or its batch was never created: sent again
    outcome   TEXT NOT NULL DEFAULT 'pending'
              CHECK (outcome IN ('pending', 'answered', 'failed', 'unfinished')),
    call_id   INTEGER REFERENCES calls (id),
    PRIMARY KEY (batch, cache_key)
) WITHOUT ROWID;
-- A call waits in one batch at most: never paid twice by two batches.
CREATE UNIQUE INDEX batch_calls_pending ON batch_calls (cache_key) WHERE outcome = 'pending';

-- A call answered in a batch is billed at the batch rate (half). Its stored prices
-- (input_price_per_mtok, output_price_per_mtok) are the halved ones its cost_usd was computed
-- with, as for every call; `batch` says why they are half the catalog's, and which batch
-- answered it. NULL: sent live, at the standard price.
ALTER TABLE calls ADD COLUMN batch INTEGER REFERENCES batches (id);
