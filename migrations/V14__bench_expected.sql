-- V14: each benchmark result keeps the expected output its answer was tested against ('' for
-- tests without one: json-valid, and judge tests, graded by their rubric). Why: issue 16: the
-- HTML report read the benchmark file again from disk to show expected outputs, and silently
-- lost them when run from another folder or after the file was edited. NULL: a result recorded
-- before this migration, whose expected output was never stored (the report says so).
ALTER TABLE bench_results ADD COLUMN expected TEXT;
