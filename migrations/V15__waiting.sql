-- V15: the run status `waiting`. Why: issue 17. A run whose calls went to a provider's batch
-- API may end its process before the batches do (`--detach`, Ctrl-C while polling): its
-- batches are submitted and not yet collected, results within 24 hours. It is not
-- interrupted (nothing was cut short) nor abandoned (its process left on purpose); like
-- `interrupted`, the same command resumes it, collecting what has finished and submitting
-- nothing twice.
--
-- V1's CHECK (as V11 edited it) lists the statuses a run may have; `waiting` joins them, the
-- same way V11 added `budget`: the constraint's text is edited in place, the procedure SQLite
-- documents for changing a CHECK that no stored row violates
-- (https://www.sqlite.org/lang_altertable.html#otheralter); rebuilding `runs` would cascade
-- deletes into every table that references it. The schema version must change for other
-- connections to read the edited schema: V11's ALTER did that; here a table made and dropped
-- does it (each bumps the version); RESET has this connection read the schema again.
CREATE TABLE v15_schema_version_bump (x INTEGER);
DROP TABLE v15_schema_version_bump;
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''budget'')', '''budget'', ''waiting'')')
WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = RESET;
