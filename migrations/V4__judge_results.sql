-- V4: benchmark tests graded by a judge model (`method: judge`). Why: issue 3's judge-graded
-- benchmark tests; the judge's call, score and cost are kept with the result. The result's
-- cost_usd and paid_usd include the judge's.
ALTER TABLE bench_results ADD COLUMN judge_call_id INTEGER REFERENCES calls (id);
ALTER TABLE bench_results ADD COLUMN judge_score INTEGER;
ALTER TABLE bench_results ADD COLUMN judge_cost_usd REAL;
