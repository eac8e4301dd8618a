-- The expected outputs a run made now stores with each benchmark result (migration V14), for
-- the fixture's two benchmark runs, made before V14 stored them. Applied by the golden test to
-- its migrated copy of fixture.db (the committed file stays as it was made): see README.md.
-- Each value is the prompt's `output:` in inputs/bench_v1.yaml (run 1) or inputs/bench_v2.yaml
-- (run 4), as `BenchExperiment::result_row` stores it; '' where the test has none (json-valid,
-- and the judge test, graded by its rubric). The two files agree on the prompts they share.
UPDATE bench_results
SET expected = CASE prompt_name
    WHEN 'arithmetic' THEN '391'
    WHEN 'capital' THEN 'canberra'
    WHEN 'python_reverse' THEN '[::-1]'
    WHEN 'iso_date' THEN '^\s*\d{4}-\d{2}-\d{2}\s*$'
    WHEN 'json_person' THEN '{"name": "Ada", "born": 1815}'
    WHEN 'json_any' THEN ''
    WHEN 'explain_recursion' THEN ''
    WHEN 'haiku' THEN 'cache'
END
WHERE run_id IN (1, 4) AND expected IS NULL;
