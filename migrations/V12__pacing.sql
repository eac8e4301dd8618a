-- V12: the pacer's buckets. Why: issue 15. Providers limit requests and tokens a minute per
-- key and model, and refuse what goes over (429). Runs sharing one database and one key (two
-- terminals, shards on one machine) must stay within the limits together, so each bucket's
-- level lives here, where both see it, and is taken from in one IMMEDIATE transaction.
-- A scope is provider | base URL | key fingerprint (a hash, never the key) | model.
CREATE TABLE pacing_buckets (
    scope         TEXT NOT NULL,
    dimension     TEXT NOT NULL,   -- requests | tokens | input_tokens | output_tokens
    limit_per_min REAL NOT NULL,   -- as the provider's headers (or rate_limit: in config) say
    level         REAL NOT NULL,   -- what may be sent now (negative: a large request's debt)
    updated_at    REAL NOT NULL,   -- unix seconds of `level`
    PRIMARY KEY (scope, dimension)
) WITHOUT ROWID;

-- After a refusal, nothing is sent to the scope before `blocked_until` (unix seconds).
CREATE TABLE pacing_scopes (
    scope         TEXT PRIMARY KEY,
    blocked_until REAL NOT NULL
) WITHOUT ROWID;
