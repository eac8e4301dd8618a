-- V11: run budgets (`--budget USD`, `budget:` in an experiment file). Why: a run may be capped
-- at an amount of US dollars. The cap is kept with the run, so `track runs` shows it next to
-- what the run paid; a run stopped by it ends with the status `budget`, which, like
-- `interrupted`, the same command (with a larger budget) finishes from the cache.
ALTER TABLE runs ADD COLUMN budget_usd REAL;

-- V1's CHECK lists the statuses a run may have; `budget` joins them. SQLite cannot alter a
-- CHECK, and rebuilding `runs` would cascade deletes into every table that references it
-- (foreign keys are on, and cannot be turned off inside the transaction a migration runs in).
-- So the constraint's text is edited in place: the procedure SQLite documents for changing a
-- CHECK that no stored row violates (https://www.sqlite.org/lang_altertable.html#otheralter).
-- The ALTER above changed the schema version, so other connections read the edited schema;
-- RESET has this one read it again.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''interrupted'')', '''interrupted'', ''budget'')')
WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = RESET;
