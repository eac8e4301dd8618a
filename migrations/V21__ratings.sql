-- V21: human ratings (issue 30). A person marks a result pass or fail (overriding its checks),
-- gives it a 1-5 score and a comment. A rating is a row of its own, never an edit of the result:
-- rows are only appended, and the newest row of a (result_uid, rater) is that rater's current
-- rating. `result_uid` is the rated row's uid in its kind's table (`kind`: bench_results for a
-- benchmark result, pairwise_verdicts, reviews, relevance_predictions...). `uid` makes a merge
-- copy each rating once.
CREATE TABLE ratings (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    result_uid TEXT NOT NULL,
    kind       TEXT,
    verdict    TEXT CHECK (verdict IN ('pass', 'fail')),
    score      INTEGER CHECK (score BETWEEN 1 AND 5),
    comment    TEXT,
    rater      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    uid        TEXT
);
CREATE INDEX ratings_by_result ON ratings (result_uid, rater, id);
CREATE INDEX ratings_by_run ON ratings (run_id);
CREATE UNIQUE INDEX ratings_by_uid ON ratings (uid);
