-- V1: the store of track: content-addressed blobs, the call cache, runs and benchmark results.
-- Why one file: this is the first schema; later changes are new files, never edits of this one.

-- Large texts (canonical requests, responses, prompts) and images, stored once by content hash.
CREATE TABLE blobs (
    sha256     TEXT PRIMARY KEY,            -- lowercase hex of the content
    media_type TEXT NOT NULL,               -- e.g. application/json, text/plain, image/png
    size       INTEGER NOT NULL,
    content    BLOB NOT NULL
) WITHOUT ROWID;

-- One row per LLM call attempt sequence (a call with its retries). Successful calls are the cache;
-- errors are kept for the record but never served from the cache.
CREATE TABLE calls (
    id                    INTEGER PRIMARY KEY,
    cache_key             TEXT NOT NULL,    -- sha256 hex of the canonical request (blob of the same hash)
    provider              TEXT NOT NULL,
    model                 TEXT NOT NULL,    -- the resolved model id sent to the provider
    status                TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    response_sha256       TEXT REFERENCES blobs (sha256),
    finish_reason         TEXT,
    input_tokens          INTEGER,
    output_tokens         INTEGER,
    tokens_estimated      INTEGER NOT NULL DEFAULT 0,   -- 1 when the provider gave no usage
    latency_ms            REAL,
    attempts              INTEGER NOT NULL,
    input_price_per_mtok  REAL,             -- USD per million tokens, as used for cost_usd
    output_price_per_mtok REAL,
    cost_usd              REAL,
    http_status           INTEGER,
    error                 TEXT,
    created_at            TEXT NOT NULL
);
-- A key may hold several ok calls (--no-cache makes a fresh one); the newest is served.
CREATE INDEX calls_by_key ON calls (cache_key, status);

-- One row per invocation of an experiment.
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,             -- bench (later: review, relevance)
    file         TEXT,
    spec_sha256  TEXT,
    options_json TEXT NOT NULL DEFAULT '{}',
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    status       TEXT NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'completed', 'failed', 'interrupted'))
);

-- One row per run x model x prompt x repeat of a benchmark. Measures are copied from the call so
-- that summaries over millions of rows read one table.
CREATE TABLE bench_results (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    model_index      INTEGER NOT NULL,
    prompt_index     INTEGER NOT NULL,
    repeat_index     INTEGER NOT NULL,
    model_ref        TEXT NOT NULL,         -- provider:alias as written in the benchmark file
    provider         TEXT NOT NULL,
    model_id         TEXT NOT NULL,
    prompt_name      TEXT NOT NULL,
    method           TEXT NOT NULL,
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
    energy_wh        REAL,
    energy_wh_min    REAL,
    energy_wh_max    REAL,
    energy_method    TEXT,
    created_at       TEXT NOT NULL,
    UNIQUE (run_id, model_index, prompt_index, repeat_index)
);
CREATE INDEX bench_results_by_run ON bench_results (run_id);
