#!/bin/sh
# Submits the shards, then the merge that waits for all of them.
set -eu
shards=$(sbatch --parsable slurm-array.sbatch)
merge=$(sbatch --parsable --dependency=afterok:"$shards" slurm-merge.sbatch)
echo "shards: job $shards; merge: job $merge"
