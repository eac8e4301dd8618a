-- V19: the whole plan's size on each run. Why: issue 27. A shard (`--shard k/N`) records in
-- `planned_calls` only its own part of the plan, so a merge of some of the shards
-- (`--allow-partial`) summed what was there and told "recorded 18 of the 18 calls it planned"
-- of a plan of 20. `plan_calls` is how many calls the whole plan makes, whichever shard runs:
-- NULL when it is not known (runs recorded before, or a shard of a plan whose later stages
-- follow from answers the shard does not have).
ALTER TABLE runs ADD COLUMN plan_calls INTEGER;
