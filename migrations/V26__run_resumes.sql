-- V26: the run that resumed an unfinished one. Why: issue 45. A run interrupted, stopped by
-- its budget, failed or abandoned is finished by the same command run again, which starts a
-- new run of the same plan; the old run kept its status with nothing pointing to the run
-- that finished its work. `resumes` is, for a new run, the newest unfinished run of its plan
-- and shard when it started (what `experiment::resumed_run` finds), so that `track runs` can
-- show `interrupted, resumed by 7`. NULL for a run that resumed none, and for every run
-- before V26. A run deleted leaves its successor pointing nowhere (NULL).
ALTER TABLE runs ADD COLUMN resumes INTEGER REFERENCES runs (id) ON DELETE SET NULL;
CREATE INDEX runs_by_resumes ON runs (resumes) WHERE resumes IS NOT NULL;
