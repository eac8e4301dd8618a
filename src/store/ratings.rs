//! Human ratings of results (`ratings`, migration V21): a person's pass or fail, 1-5 score and
//! comment on one result row of a run. Ratings are only ever appended, never edited, and never
//! change the result they rate: the newest row of a (result, rater) is that rater's current
//! rating, the older ones its history. A new rating changes only the fields it gives (or
//! clears): a score alone keeps the rater's verdict and comment, so each row holds the rater's
//! whole rating as it stood. A row whose three fields are empty (every field cleared) withdraws
//! the rater's rating: readers skip it.

use std::collections::HashMap;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension as _, params};

use super::{Result, Store, StoreError, now_rfc3339};

/// The names of the columns every kind's outputs give ratings and answers (see
/// `crate::rating`), here because the export writes them too.
pub mod columns {
    /// A person's pass or fail (`pass`, `fail`), beside the checks' outcome.
    pub const HUMAN_VERDICT: &str = "human_verdict";
    /// A person's score, 1-5.
    pub const HUMAN_SCORE: &str = "human_score";
    pub const HUMAN_COMMENT: &str = "human_comment";
    /// Who gave the rating shown.
    pub const RATER: &str = "rater";
    /// The whole answer of the call a row points at (a model's, or a judge's for a verdict).
    pub const ANSWER: &str = "answer";
}

/// A person's verdict on a result: it passes or it fails, whatever its checks said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Pass,
    Fail,
}

impl Verdict {
    /// As stored and exported: `pass` or `fail`.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
        }
    }

    /// The verdict named `name` (`pass`, `fail`), if it is one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "pass" => Some(Self::Pass),
            "fail" => Some(Self::Fail),
            _ => None,
        }
    }

    /// Whether it says the result passed.
    pub(crate) const fn passed(self) -> bool {
        matches!(self, Self::Pass)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToSql for Verdict {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for Verdict {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let name = value.as_str()?;
        Self::parse(name).ok_or_else(|| FromSqlError::Other(format!("verdict `{name}`").into()))
    }
}

/// A field of a rating, as `track rate --clear` and the viewer's form name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RatingField {
    Verdict,
    Score,
    Comment,
}

impl RatingField {
    /// Every field, in the order of the columns.
    pub const ALL: [Self; 3] = [Self::Verdict, Self::Score, Self::Comment];

    /// As written: `verdict`, `score`, `comment`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Verdict => "verdict",
            Self::Score => "score",
            Self::Comment => "comment",
        }
    }

    /// The fields `name` names: one (`verdict`, `score`, `comment`) or `all`; `None` for
    /// another word.
    pub fn parse(name: &str) -> Option<Vec<Self>> {
        match name.trim() {
            "all" => Some(Self::ALL.to_vec()),
            word => Self::ALL
                .into_iter()
                .find(|f| f.as_str() == word)
                .map(|f| vec![f]),
        }
    }
}

/// A rating to store: the fields it gives replace the rater's current ones, the fields in
/// `clear` (and not given) are emptied, and the others are kept as they were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewRating {
    /// The run of the rated result.
    pub run_id: i64,
    /// The rated row's `uid` (a benchmark result, a pairwise verdict, a review...).
    pub result_uid: String,
    pub verdict: Option<Verdict>,
    /// 1 to 5.
    pub score: Option<u8>,
    /// Empty or blank: not given.
    pub comment: Option<String>,
    /// The fields emptied (those also given are set, not emptied).
    pub clear: Vec<RatingField>,
    /// Who rated: a name, never empty.
    pub rater: String,
}

/// A stored rating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rating {
    pub id: i64,
    pub run_id: i64,
    pub result_uid: String,
    /// The table of the rated row (`bench_results`, `pairwise_verdicts`...).
    pub kind: Option<String>,
    pub verdict: Option<Verdict>,
    pub score: Option<u8>,
    pub comment: Option<String>,
    pub rater: String,
    /// When it was given (RFC 3339).
    pub created_at: String,
}

/// Why a rating cannot be stored.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RatingError {
    #[error(
        "a rating gives a verdict (pass or fail), a score or a comment, or clears one \
         (--clear verdict|score|comment|all): this one does neither"
    )]
    Empty,
    #[error("a score is 1 to 5, not {0}")]
    Score(u8),
    #[error("a rating needs the rater's name: give one (--rater, or TRACK_RATER)")]
    NoRater,
    #[error(
        "run {run} has no result `{uid}`: `track query --by result --run {run}` lists its results"
    )]
    NoSuchResult { run: i64, uid: String },
    #[error("several results of run {run} have a uid that starts with `{uid}`: give more of it")]
    Ambiguous { run: i64, uid: String },
}

/// The tables whose rows can be rated: each has a `uid` and a `run_id`.
pub const RATED_TABLES: &[&str] = &[
    "bench_results",
    "pairwise_verdicts",
    "pairwise_answers",
    "reviews",
    "relevance_predictions",
    "generated_datasheets",
];

/// The columns of a rating, in [`rating`]'s order.
const COLUMNS: &str = "id, run_id, result_uid, kind, verdict, score, comment, rater, created_at";

/// The SQL condition that keeps the row `r` of `ratings` when it is its rater's current
/// rating of its result (their newest row) and not a withdrawn one (all fields empty). The
/// current rating of a result is the newest row this keeps.
pub(crate) const CURRENT: &str = "r.id = (SELECT max(x.id) FROM ratings x
                   WHERE x.result_uid = r.result_uid AND x.rater = r.rater)
              AND (r.verdict IS NOT NULL OR r.score IS NOT NULL OR r.comment IS NOT NULL)";

fn rating(r: &rusqlite::Row<'_>) -> rusqlite::Result<Rating> {
    Ok(Rating {
        id: r.get(0)?,
        run_id: r.get(1)?,
        result_uid: r.get(2)?,
        kind: r.get(3)?,
        verdict: r.get(4)?,
        score: r.get(5)?,
        comment: r.get(6)?,
        rater: r.get(7)?,
        created_at: r.get(8)?,
    })
}

impl Store {
    /// Stores a rating of result `result_uid` of run `run_id` by its rater: the fields it
    /// gives replace the rater's current ones, those it clears are emptied, the rest kept.
    /// Returns the rater's rating as it now stands (all fields empty: withdrawn). Checks it
    /// first: something given or cleared (a score of 1 to 5), a rater, and a result of that
    /// run. The result itself is not changed.
    pub(crate) fn add_rating(&self, new: &NewRating) -> Result<Rating> {
        let comment = new
            .comment
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        if new.verdict.is_none() && new.score.is_none() && comment.is_none() && new.clear.is_empty()
        {
            return Err(RatingError::Empty.into());
        }
        if let Some(score) = new.score.filter(|s| !(1..=5).contains(s)) {
            return Err(RatingError::Score(score).into());
        }
        let rater = new.rater.trim();
        if rater.is_empty() {
            return Err(RatingError::NoRater.into());
        }
        let kind = self
            .rated_table(new.run_id, &new.result_uid)?
            .ok_or_else(|| RatingError::NoSuchResult {
                run: new.run_id,
                uid: new.result_uid.clone(),
            })?;
        let now = self.rater_rating(&new.result_uid, rater)?;
        // Each field given replaces the rater's; one cleared is emptied; the rest are kept.
        let clear = |field| new.clear.contains(&field);
        let verdict = new.verdict.or_else(|| {
            (!clear(RatingField::Verdict))
                .then(|| now.as_ref().and_then(|r| r.verdict))
                .flatten()
        });
        let score = new.score.or_else(|| {
            (!clear(RatingField::Score))
                .then(|| now.as_ref().and_then(|r| r.score))
                .flatten()
        });
        let comment = comment.map(str::to_owned).or_else(|| {
            (!clear(RatingField::Comment))
                .then(|| now.and_then(|r| r.comment))
                .flatten()
        });
        let created_at = now_rfc3339();
        let uid = super::uid(&[
            "rating".into(),
            new.result_uid.as_str().into(),
            rater.into(),
            created_at.as_str().into(),
            super::ids::salt().into(),
        ]);
        self.conn
            .prepare_cached(
                "INSERT INTO ratings (run_id, result_uid, kind, verdict, score, comment, rater,
                                      created_at, uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                new.run_id,
                new.result_uid,
                kind,
                verdict,
                score,
                comment,
                rater,
                created_at,
                uid
            ])?;
        Ok(Rating {
            id: self.conn.last_insert_rowid(),
            run_id: new.run_id,
            result_uid: new.result_uid.clone(),
            kind: Some(kind.to_owned()),
            verdict,
            score,
            comment,
            rater: rater.to_owned(),
            created_at,
        })
    }

    /// The current rating of result `result_uid` by `rater` (their newest row, a withdrawn
    /// one included), if they rated it.
    pub(crate) fn rater_rating(&self, result_uid: &str, rater: &str) -> Result<Option<Rating>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM ratings WHERE result_uid = ?1 AND rater = ?2
                 ORDER BY id DESC LIMIT 1"
            ))?
            .query_row([result_uid, rater], rating)
            .optional()?)
    }

    /// The table of the row `uid` of run `run_id` among [`RATED_TABLES`], if there is one.
    fn rated_table(&self, run_id: i64, uid: &str) -> Result<Option<&'static str>> {
        for table in RATED_TABLES {
            let found = self
                .conn
                .prepare_cached(&format!(
                    "SELECT 1 FROM {table} WHERE uid = ?1 AND run_id = ?2"
                ))?
                .query_row(params![uid, run_id], |_| Ok(()))
                .optional()?;
            if found.is_some() {
                return Ok(Some(table));
            }
        }
        Ok(None)
    }

    /// The current ratings of run `run_id`: the newest of each (result, rater), oldest first,
    /// without the withdrawn ones.
    pub(crate) fn ratings_for_run(&self, run_id: i64) -> Result<Vec<Rating>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM ratings r WHERE r.run_id = ?1 AND {CURRENT} ORDER BY r.id"
        ))?;
        let rows = stmt.query_map([run_id], rating)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The current rating of result `result_uid`: the newest of its raters' current ratings
    /// (a withdrawn one left out), whoever gave it.
    pub(crate) fn rating_for(&self, result_uid: &str) -> Result<Option<Rating>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM ratings r WHERE r.result_uid = ?1 AND {CURRENT}
                 ORDER BY r.id DESC LIMIT 1"
            ))?
            .query_row([result_uid], rating)
            .optional()?)
    }

    /// The current rating (the newest, whoever gave it) of each rated row of `table` (one of
    /// [`RATED_TABLES`]) in `run_ids`, by the values of the row's `key` columns as text: how an
    /// export whose rows carry no uid finds their ratings. `table` and `key` are names from
    /// the code, never input.
    pub(crate) fn current_ratings_by_key(
        &self,
        run_ids: &[i64],
        table: &'static str,
        key: &[&'static str],
    ) -> Result<HashMap<Vec<String>, Rating>> {
        debug_assert!(RATED_TABLES.contains(&table));
        let keys: Vec<String> = key
            .iter()
            .map(|k| format!("CAST(t.\"{k}\" AS TEXT)"))
            .collect();
        let columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("r.{c}")).collect();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {columns}, {keys} FROM ratings r JOIN \"{table}\" t ON t.uid = r.result_uid
             WHERE r.run_id = ?1 AND {CURRENT}
               AND NOT EXISTS (SELECT 1 FROM ratings n
                               WHERE n.result_uid = r.result_uid AND n.id > r.id
                                 AND n.id = (SELECT max(x.id) FROM ratings x
                                             WHERE x.result_uid = n.result_uid
                                               AND x.rater = n.rater)
                                 AND (n.verdict IS NOT NULL OR n.score IS NOT NULL
                                      OR n.comment IS NOT NULL))",
            columns = columns.join(", "),
            keys = keys.join(", "),
        ))?;
        let mut out = HashMap::new();
        for &run in run_ids {
            let mut rows = stmt.query([run])?;
            while let Some(row) = rows.next()? {
                let values = (0..key.len())
                    .map(|i| {
                        row.get::<_, Option<String>>(9 + i)
                            .map(Option::unwrap_or_default)
                    })
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                out.insert(values, rating(row)?);
            }
        }
        Ok(out)
    }

    /// The current rating of each rated result of `run_ids`, by result uid: the newest
    /// rating of it, whoever gave it (what exports and reports show beside the checks).
    pub(crate) fn current_ratings(&self, run_ids: &[i64]) -> Result<HashMap<String, Rating>> {
        let mut by_result: HashMap<String, Rating> = HashMap::new();
        for &run in run_ids {
            for r in self.ratings_for_run(run)? {
                match by_result.get(&r.result_uid) {
                    Some(kept) if kept.id > r.id => {}
                    _ => {
                        by_result.insert(r.result_uid.clone(), r);
                    }
                }
            }
        }
        Ok(by_result)
    }
}

/// A benchmark result a person rated, with what its checks said: what agreement is computed
/// from.
#[derive(Debug, Clone, PartialEq)]
pub struct RatedBenchResult {
    /// The current rating of one rater.
    pub rating: Rating,
    pub model_ref: String,
    pub prompt_name: String,
    pub repeat_index: u32,
    /// The result's outcome (all its checks).
    pub status: super::Outcome,
    /// Its check's method (`checks` when it has several).
    pub method: String,
    /// Each check of a result with several, in the file's order; empty with one.
    pub checks: Vec<super::CheckRow>,
}

impl Store {
    /// The current ratings (one a rater) of the benchmark results of `run_ids`, each with its
    /// result's outcome and checks, in the order they were given.
    pub(crate) fn rated_bench_results(&self, run_ids: &[i64]) -> Result<Vec<RatedBenchResult>> {
        let mut out = Vec::new();
        for &run in run_ids {
            for rating in self.ratings_for_run(run)? {
                let found = self
                    .conn
                    .prepare_cached(
                        "SELECT model_ref, prompt_name, repeat_index, status, method, run_id,
                             model_index, template_index, prompt_index
                         FROM bench_results WHERE uid = ?1",
                    )?
                    .query_row([&rating.result_uid], |r| {
                        let key = super::ResultKey {
                            run_id: r.get(5)?,
                            model_index: r.get(6)?,
                            template_index: r.get(7)?,
                            prompt_index: r.get(8)?,
                            repeat_index: r.get(2)?,
                        };
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, key))
                    })
                    .optional()?;
                let Some((model_ref, prompt_name, repeat_index, status, method, key)) = found
                else {
                    continue;
                };
                let checks = self.bench_checks_of(&key)?;
                out.push(RatedBenchResult {
                    rating,
                    model_ref,
                    prompt_name,
                    repeat_index,
                    status,
                    method,
                    checks,
                });
            }
        }
        Ok(out)
    }

    /// The uid of the result of run `run_id` whose uid is `uid` or starts with it (as `track
    /// query --by result` shows them); `None` when none does. Several: an error saying so.
    pub(crate) fn result_uid_by_prefix(&self, run_id: i64, uid: &str) -> Result<Option<String>> {
        if self.rated_table(run_id, uid)?.is_some() {
            return Ok(Some(uid.to_owned()));
        }
        if uid.is_empty() || !uid.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let prefix = uid.to_ascii_lowercase();
        let mut found: Vec<String> = Vec::new();
        for table in RATED_TABLES {
            let mut stmt = self.conn.prepare_cached(&format!(
                "SELECT uid FROM {table} WHERE run_id = ?1 AND substr(uid, 1, length(?2)) = ?2
                 LIMIT 2"
            ))?;
            let rows = stmt.query_map(params![run_id, prefix], |r| r.get(0))?;
            for row in rows {
                found.push(row?);
            }
        }
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ => Err(RatingError::Ambiguous {
                run: run_id,
                uid: uid.to_owned(),
            }
            .into()),
        }
    }
}

impl From<RatingError> for StoreError {
    fn from(e: RatingError) -> Self {
        Self::Rating(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Outcome;
    use crate::store::bench::tests::row;

    /// A store with one benchmark run of two results; their uids.
    fn rated() -> (Store, i64, Vec<String>) {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        store
            .insert_bench_results(&[
                row(run, 0, 0, Outcome::Passed),
                row(run, 0, 1, Outcome::Failed),
            ])
            .unwrap();
        let uids: Vec<String> = store
            .conn
            .prepare("SELECT uid FROM bench_results ORDER BY prompt_index")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (store, run, uids)
    }

    fn new(run_id: i64, uid: &str, verdict: Option<Verdict>, rater: &str) -> NewRating {
        NewRating {
            run_id,
            result_uid: uid.to_owned(),
            verdict,
            score: None,
            comment: None,
            clear: Vec::new(),
            rater: rater.to_owned(),
        }
    }

    #[test]
    fn a_rating_changes_the_fields_it_gives_or_clears_and_keeps_the_others() {
        let (store, run, uids) = rated();
        let uid = &uids[0];
        let current = |store: &Store| store.rating_for(uid).unwrap();
        // Pass, then a score alone, then a comment alone: the pass is kept throughout.
        store
            .add_rating(&new(run, uid, Some(Verdict::Pass), "ann"))
            .unwrap();
        let scored = store
            .add_rating(&NewRating {
                score: Some(3),
                ..new(run, uid, None, "ann")
            })
            .unwrap();
        assert_eq!(
            (scored.verdict, scored.score),
            (Some(Verdict::Pass), Some(3))
        );
        store
            .add_rating(&NewRating {
                comment: Some("fine".into()),
                ..new(run, uid, None, "ann")
            })
            .unwrap();
        let r = current(&store).unwrap();
        assert_eq!(
            (r.verdict, r.score, r.comment.as_deref()),
            (Some(Verdict::Pass), Some(3), Some("fine"))
        );
        // Another rater's rating starts from nothing of ann's.
        let bob = store
            .add_rating(&NewRating {
                score: Some(1),
                ..new(run, uid, None, "bob")
            })
            .unwrap();
        assert_eq!((bob.verdict, bob.comment), (None, None));
        // A field cleared is emptied, the others kept; a field given and cleared is set.
        let cleared = store
            .add_rating(&NewRating {
                clear: vec![RatingField::Score, RatingField::Verdict],
                verdict: Some(Verdict::Fail),
                ..new(run, uid, None, "ann")
            })
            .unwrap();
        assert_eq!(
            (cleared.verdict, cleared.score, cleared.comment.as_deref()),
            (Some(Verdict::Fail), None, Some("fine"))
        );
        // Every field cleared: ann's rating is withdrawn, and bob's is the current one.
        store
            .add_rating(&NewRating {
                clear: RatingField::ALL.to_vec(),
                ..new(run, uid, None, "ann")
            })
            .unwrap();
        assert_eq!(current(&store).unwrap().rater, "bob");
        let of_run = store.ratings_for_run(run).unwrap();
        assert_eq!(of_run.len(), 1, "{of_run:?}");
        let by_key = store
            .current_ratings_by_key(&[run], "bench_results", &["uid"])
            .unwrap();
        assert_eq!(by_key[&vec![uid.clone()]].rater, "bob");
        assert_eq!(RatingField::parse("all"), Some(RatingField::ALL.to_vec()));
        assert_eq!(RatingField::parse("score"), Some(vec![RatingField::Score]));
        assert_eq!(RatingField::parse("scores"), None);
    }

    #[test]
    fn the_newest_rating_of_a_rater_is_the_current_one_and_none_is_lost() {
        let (store, run, uids) = rated();
        store
            .add_rating(&new(run, &uids[0], Some(Verdict::Fail), "ann"))
            .unwrap();
        store
            .add_rating(&NewRating {
                score: Some(4),
                comment: Some(" fine after all ".into()),
                ..new(run, &uids[0], Some(Verdict::Pass), "ann")
            })
            .unwrap();
        store
            .add_rating(&new(run, &uids[1], Some(Verdict::Fail), "bob"))
            .unwrap();
        let current = store.ratings_for_run(run).unwrap();
        assert_eq!(current.len(), 2, "{current:?}");
        assert_eq!(current[0].result_uid, uids[0]);
        assert_eq!(current[0].verdict, Some(Verdict::Pass));
        assert_eq!(current[0].score, Some(4));
        assert_eq!(current[0].comment.as_deref(), Some("fine after all"));
        assert_eq!(current[0].kind.as_deref(), Some("bench_results"));
        assert_eq!(current[1].verdict, Some(Verdict::Fail));
        let for_first = store.rating_for(&uids[0]).unwrap().unwrap();
        assert_eq!(for_first.rater, "ann");
        assert_eq!(for_first.verdict, Some(Verdict::Pass));
        assert_eq!(store.rating_for("nothing").unwrap(), None);
        // Appended, never edited: both of ann's rows are kept.
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM ratings", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        // The result is as it was.
        let status: String = store
            .conn
            .query_row(
                "SELECT status FROM bench_results WHERE uid = ?1",
                [&uids[0]],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(status, "passed");
        let all = store.current_ratings(&[run]).unwrap();
        assert_eq!(all[&uids[0]].verdict, Some(Verdict::Pass));
    }

    #[test]
    fn a_bad_rating_is_refused_with_what_is_wrong() {
        let (store, run, uids) = rated();
        let refused = |r: NewRating| match store.add_rating(&r) {
            Err(StoreError::Rating(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(new(run, &uids[0], None, "ann")), RatingError::Empty);
        assert_eq!(
            refused(NewRating {
                comment: Some("  ".into()),
                ..new(run, &uids[0], None, "ann")
            }),
            RatingError::Empty
        );
        assert_eq!(
            refused(NewRating {
                score: Some(6),
                ..new(run, &uids[0], None, "ann")
            }),
            RatingError::Score(6)
        );
        assert_eq!(
            refused(NewRating {
                score: Some(0),
                ..new(run, &uids[0], None, "ann")
            }),
            RatingError::Score(0)
        );
        assert_eq!(
            refused(new(run, &uids[0], Some(Verdict::Pass), " ")),
            RatingError::NoRater
        );
        assert!(matches!(
            refused(new(run, "no-such-uid", Some(Verdict::Pass), "ann")),
            RatingError::NoSuchResult { .. }
        ));
        let other = store
            .create_run(crate::kind::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        assert!(matches!(
            refused(new(other, &uids[0], Some(Verdict::Pass), "ann")),
            RatingError::NoSuchResult { .. }
        ));
        assert!(store.ratings_for_run(run).unwrap().is_empty());
    }

    #[test]
    fn a_rated_result_comes_with_its_outcome_and_a_uid_is_found_by_its_start() {
        let (store, run, uids) = rated();
        store
            .add_rating(&new(run, &uids[1], Some(Verdict::Pass), "ann"))
            .unwrap();
        let rated = store.rated_bench_results(&[run]).unwrap();
        assert_eq!(rated.len(), 1);
        assert_eq!(rated[0].status, Outcome::Failed);
        assert_eq!(rated[0].rating.verdict, Some(Verdict::Pass));
        assert_eq!(rated[0].prompt_name, "p1");
        for given in [&uids[0][..12], &uids[0]] {
            assert_eq!(
                store.result_uid_by_prefix(run, given).unwrap(),
                Some(uids[0].clone())
            );
        }
        assert_eq!(store.result_uid_by_prefix(run, "zz").unwrap(), None);
        store
            .conn
            .execute_batch(
                "UPDATE bench_results SET uid = 'abc' || substr(uid, 4) WHERE uid IS NOT NULL",
            )
            .unwrap();
        assert!(matches!(
            store.result_uid_by_prefix(run, "abc"),
            Err(StoreError::Rating(RatingError::Ambiguous { .. }))
        ));
    }

    #[test]
    fn ratings_go_with_their_run() {
        let (store, run, uids) = rated();
        store
            .add_rating(&new(run, &uids[0], Some(Verdict::Pass), "ann"))
            .unwrap();
        store
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [run])
            .unwrap();
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM ratings", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
    }
}
