//! Judge reviews: generated datasheets, reviews and their per-criterion scores.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, params};

use super::blobs::insert_blob;
use super::{Result, Store, now_rfc3339};
use crate::hash::sha256_hex;

/// What became of a review: how well its answer could be read, or why there is none. One value
/// per review row, stored in `reviews.parse_status` under the names of [`ParseStatus::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParseStatus {
    /// Every score valid.
    Ok,
    /// A JSON object, but some scores N/A.
    Partial,
    /// No usable JSON object: counted apart, never scored.
    Failed,
    /// The reviewer call failed: no answer to read.
    Error,
    /// No official datasheet to compare with: never asked.
    Skipped,
}

impl ParseStatus {
    /// Every status, in the order the console counts them.
    pub const ALL: [Self; 5] = [
        Self::Ok,
        Self::Partial,
        Self::Failed,
        Self::Skipped,
        Self::Error,
    ];

    /// The name stored in the database.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Partial => "partial",
            Self::Failed => "failed",
            Self::Error => "error",
            Self::Skipped => "skipped",
        }
    }

    /// Whether the review has scores (complete or with N/A ones).
    pub(crate) fn is_scored(self) -> bool {
        match self {
            Self::Ok | Self::Partial => true,
            Self::Failed | Self::Error | Self::Skipped => false,
        }
    }
}

impl std::fmt::Display for ParseStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored name that is no review status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown review status {0:?} (expected ok, partial, failed, error or skipped)")]
pub struct UnknownStatus(pub String);

impl std::str::FromStr for ParseStatus {
    type Err = UnknownStatus;

    fn from_str(name: &str) -> std::result::Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| UnknownStatus(name.to_owned()))
    }
}

impl ToSql for ParseStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for ParseStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e: UnknownStatus| FromSqlError::Other(Box::new(e)))
    }
}

/// A review whose answer could not be parsed (a parse failure: counted apart, never scored).
#[derive(Debug, Clone, PartialEq)]
pub struct UnparsableReviewRow {
    /// The reviewer, as its run named it.
    pub reviewer_ref: String,
    /// The sensor reviewed: its brand and name.
    pub brand: String,
    pub sensor: String,
    /// Who wrote the datasheet reviewed.
    pub generator_provider: String,
    pub generator_model: String,
    /// Why the answer could not be read.
    pub detail: Option<String>,
    /// The reviewer's call.
    pub call_id: Option<i64>,
    /// The attempts of its call; `None` when the call is not stored.
    pub attempts: Option<u32>,
}

/// A generated datasheet to record.
#[derive(Debug, Clone)]
pub struct NewGenerated<'a> {
    pub run_id: Option<i64>,
    pub brand: &'a str,
    pub sensor: &'a str,
    pub generator_provider: &'a str,
    pub generator_model: &'a str,
    pub model_ref: Option<&'a str>,
    pub call_id: Option<i64>,
    pub cache_hit: bool,
    pub cost_usd: Option<f64>,
    pub paid_usd: Option<f64>,
    pub content: &'a str,
    pub path: &'a str,
}

/// One criterion's score of a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreRow {
    pub criterion: String,
    pub score: Option<i64>,
    pub justification: Option<String>,
    pub na_reason: Option<String>,
}

/// A review to record, with its scores.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewRow {
    pub run_id: i64,
    pub review_key: String,
    pub brand: String,
    pub sensor: String,
    pub generator_provider: String,
    pub generator_model: String,
    pub generated_path: String,
    pub generated_text: String,
    pub reviewer_ref: String,
    pub reviewer_provider: String,
    pub reviewer_model: String,
    pub official_status: String,
    pub official_text: Option<String>,
    pub prompt_sha256: String,
    pub criteria_sha256: String,
    pub call_id: Option<i64>,
    pub cache_hit: bool,
    pub parse_status: ParseStatus,
    pub detail: Option<String>,
    pub average_score: Option<f64>,
    pub overall_score: Option<i64>,
    pub overall_justification: Option<String>,
    pub overall_na_reason: Option<String>,
    pub cost_usd: Option<f64>,
    pub paid_usd: Option<f64>,
    pub reviewed_at: String,
    pub scores: Vec<ScoreRow>,
}

/// Reviews as columns for analysis: one entry per review.
#[derive(Debug, Default, Clone)]
pub struct ReviewColumns {
    pub review_id: Vec<i64>,
    pub run_id: Vec<i64>,
    pub reviewer: Vec<String>,
    pub generator: Vec<String>,
    pub sensor: Vec<String>,
    /// The item reviewed: sensor, generator model and generated file (two files with the same
    /// text are two items).
    pub target: Vec<String>,
    pub official_status: Vec<String>,
    pub parse_status: Vec<ParseStatus>,
    pub average_score: Vec<Option<f64>>,
    pub overall_score: Vec<Option<i64>>,
    pub cost_usd: Vec<Option<f64>>,
    pub paid_usd: Vec<Option<f64>>,
    pub cache_hit: Vec<bool>,
    /// The reviewer's call (its answer), when one was made or served.
    pub call_id: Vec<Option<i64>>,
}

/// A review with every score's justification, as a reader checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewNotes {
    pub review_id: i64,
    pub reviewer: String,
    /// `provider:model` of the model that wrote the datasheet.
    pub generator: String,
    /// Brand and sensor.
    pub sensor: String,
    pub generated_path: String,
    pub parse_status: ParseStatus,
    /// Why the answer could not be read, or the error.
    pub detail: Option<String>,
    pub overall_score: Option<i64>,
    pub overall_justification: Option<String>,
    pub overall_na_reason: Option<String>,
    pub scores: Vec<ScoreRow>,
}

/// Criterion scores as columns for analysis: one entry per review and criterion.
#[derive(Debug, Default, Clone)]
pub struct ScoreColumns {
    pub review_id: Vec<i64>,
    pub position: Vec<u32>,
    pub criterion: Vec<String>,
    pub score: Vec<Option<i64>>,
}

impl Store {
    /// Records a generated datasheet (its text as a blob) and returns its id.
    pub(crate) fn insert_generated(&self, g: &NewGenerated<'_>) -> Result<i64> {
        let sha = sha256_hex(g.content.as_bytes());
        insert_blob(
            &self.conn,
            &sha,
            "text/markdown; charset=utf-8",
            g.content.as_bytes(),
        )?;
        let created_at = now_rfc3339();
        let run_uid = match g.run_id {
            Some(id) => super::ids::run_uid(&self.conn, id)?,
            None => None,
        };
        let uid = super::uid(&[
            "generated".into(),
            run_uid.as_ref().into(),
            g.path.into(),
            (&sha).into(),
            (&created_at).into(),
            super::ids::salt().into(),
        ]);
        self.conn.execute(
            "INSERT INTO generated_datasheets (run_id, brand, sensor, generator_provider, generator_model,
                model_ref, call_id, cache_hit, cost_usd, paid_usd, content_sha256, path, created_at, uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                g.run_id,
                g.brand,
                g.sensor,
                g.generator_provider,
                g.generator_model,
                g.model_ref,
                g.call_id,
                g.cache_hit,
                g.cost_usd,
                g.paid_usd,
                sha,
                g.path,
                created_at,
                uid
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The file a call's datasheet was last written to, if any.
    pub(crate) fn generated_path_for_call(&self, call_id: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT path FROM generated_datasheets WHERE call_id = ?1 ORDER BY id DESC LIMIT 1",
                [call_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The files of the datasheets a run wrote or reused, in the order recorded, each once.
    pub(crate) fn generated_paths(&self, run_id: i64) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT path FROM generated_datasheets WHERE run_id = ?1 GROUP BY path ORDER BY min(id)",
        )?;
        let rows = stmt.query_map([run_id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// When the review with `review_key` was first recorded from the answer of call `call_id`
    /// (`None`: a review that needed no call), failed calls aside; `None` if never. A review
    /// asked again (a fresh call) has a call of its own, so it does not inherit this time.
    pub(crate) fn first_review_time(
        &self,
        review_key: &str,
        call_id: Option<i64>,
    ) -> Result<Option<String>> {
        Ok(self.conn.query_row(
            "SELECT min(reviewed_at) FROM reviews
             WHERE review_key = ?1 AND call_id IS ?2 AND parse_status != ?3",
            params![review_key, call_id, ParseStatus::Error],
            |r| r.get(0),
        )?)
    }

    /// The reviews of `run_id` whose answer could not be parsed, in the order recorded.
    pub(crate) fn unparsable_reviews(&self, run_id: i64) -> Result<Vec<UnparsableReviewRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.reviewer_ref, r.brand, r.sensor, r.generator_provider, r.generator_model,
                    r.detail, r.call_id, c.attempts
             FROM reviews r LEFT JOIN calls c ON c.id = r.call_id
             WHERE r.run_id = ?1 AND r.parse_status = ?2
             ORDER BY r.id",
        )?;
        let rows = stmt.query_map(params![run_id, ParseStatus::Failed], |r| {
            Ok(UnparsableReviewRow {
                reviewer_ref: r.get(0)?,
                brand: r.get(1)?,
                sensor: r.get(2)?,
                generator_provider: r.get(3)?,
                generator_model: r.get(4)?,
                detail: r.get(5)?,
                call_id: r.get(6)?,
                attempts: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Records a review and its scores in one transaction; returns its id.
    pub(crate) fn insert_review(&mut self, r: &ReviewRow) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let generated_sha = sha256_hex(r.generated_text.as_bytes());
        insert_blob(
            &tx,
            &generated_sha,
            "text/markdown; charset=utf-8",
            r.generated_text.as_bytes(),
        )?;
        let official_sha = match &r.official_text {
            Some(text) => {
                let sha = sha256_hex(text.as_bytes());
                insert_blob(&tx, &sha, "text/markdown; charset=utf-8", text.as_bytes())?;
                Some(sha)
            }
            None => None,
        };
        tx.execute(
            "INSERT INTO reviews (run_id, review_key, brand, sensor, generator_provider, generator_model,
                generated_path, generated_sha256, reviewer_ref, reviewer_provider, reviewer_model,
                official_status, official_sha256, prompt_sha256, criteria_sha256, call_id, cache_hit,
                parse_status, detail, average_score, overall_score, overall_justification,
                overall_na_reason, cost_usd, paid_usd, reviewed_at, uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
            params![
                r.run_id,
                r.review_key,
                r.brand,
                r.sensor,
                r.generator_provider,
                r.generator_model,
                r.generated_path,
                generated_sha,
                r.reviewer_ref,
                r.reviewer_provider,
                r.reviewer_model,
                r.official_status,
                official_sha,
                r.prompt_sha256,
                r.criteria_sha256,
                r.call_id,
                r.cache_hit,
                r.parse_status,
                r.detail,
                r.average_score,
                r.overall_score,
                r.overall_justification,
                r.overall_na_reason,
                r.cost_usd,
                r.paid_usd,
                r.reviewed_at,
                super::uid(&[
                    "review".into(),
                    super::ids::run_uid(&tx, r.run_id)?.as_ref().into(),
                    (&r.review_key).into(),
                    (&r.generated_path).into(),
                    (&r.reviewed_at).into(),
                    super::ids::salt().into(),
                ]),
            ],
        )?;
        let review_id = tx.last_insert_rowid();
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO review_scores (review_id, position, criterion, score, justification, na_reason)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (position, s) in r.scores.iter().enumerate() {
                stmt.execute(params![
                    review_id,
                    position as i64,
                    s.criterion,
                    s.score,
                    s.justification,
                    s.na_reason
                ])?;
            }
        }
        tx.commit()?;
        Ok(review_id)
    }

    /// The reviews of `run_ids` with their scores, in the order they were recorded.
    pub(crate) fn review_rows(&self, run_ids: &[i64]) -> Result<Vec<ReviewRow>> {
        let mut reviews = Vec::new();
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.run_id, r.review_key, r.brand, r.sensor, r.generator_provider, r.generator_model,
                    r.generated_path, g.content, r.reviewer_ref, r.reviewer_provider, r.reviewer_model,
                    r.official_status, o.content, r.prompt_sha256, r.criteria_sha256, r.call_id, r.cache_hit,
                    r.parse_status, r.detail, r.average_score, r.overall_score, r.overall_justification,
                    r.overall_na_reason, r.cost_usd, r.paid_usd, r.reviewed_at
             FROM reviews r JOIN blobs g ON g.sha256 = r.generated_sha256
                  LEFT JOIN blobs o ON o.sha256 = r.official_sha256
             WHERE r.run_id = ?1 ORDER BY r.id",
        )?;
        let mut scores = self.conn.prepare(
            "SELECT criterion, score, justification, na_reason FROM review_scores
             WHERE review_id = ?1 ORDER BY position",
        )?;
        let text = |bytes: Option<Vec<u8>>| bytes.map(|b| String::from_utf8_lossy(&b).into_owned());
        for run_id in run_ids {
            let mut rows = stmt.query([run_id])?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let score_rows = scores
                    .query_map([id], |s| {
                        Ok(ScoreRow {
                            criterion: s.get(0)?,
                            score: s.get(1)?,
                            justification: s.get(2)?,
                            na_reason: s.get(3)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                reviews.push(ReviewRow {
                    run_id: r.get(1)?,
                    review_key: r.get(2)?,
                    brand: r.get(3)?,
                    sensor: r.get(4)?,
                    generator_provider: r.get(5)?,
                    generator_model: r.get(6)?,
                    generated_path: r.get(7)?,
                    generated_text: text(r.get(8)?).unwrap_or_default(),
                    reviewer_ref: r.get(9)?,
                    reviewer_provider: r.get(10)?,
                    reviewer_model: r.get(11)?,
                    official_status: r.get(12)?,
                    official_text: text(r.get(13)?),
                    prompt_sha256: r.get(14)?,
                    criteria_sha256: r.get(15)?,
                    call_id: r.get(16)?,
                    cache_hit: r.get(17)?,
                    parse_status: r.get(18)?,
                    detail: r.get(19)?,
                    average_score: r.get(20)?,
                    overall_score: r.get(21)?,
                    overall_justification: r.get(22)?,
                    overall_na_reason: r.get(23)?,
                    cost_usd: r.get(24)?,
                    paid_usd: r.get(25)?,
                    reviewed_at: r.get(26)?,
                    scores: score_rows,
                });
            }
        }
        Ok(reviews)
    }

    /// Reviews and scores of `run_ids` as columns. With several reviews of the same datasheet
    /// by the same reviewer (re-runs), only the newest counts. In one order whatever order
    /// the answers arrived in, or the shards of a merged run were copied in: by reviewer,
    /// sensor, generator and file, so summaries in first-appearance order are the same for a
    /// run and for its shards merged.
    pub(crate) fn review_columns(&self, run_ids: &[i64]) -> Result<(ReviewColumns, ScoreColumns)> {
        let newest = newest_reviews(run_ids);
        let mut reviews = ReviewColumns::default();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, run_id, reviewer_ref, generator_provider || ':' || generator_model, brand || ' ' || sensor,
                    brand || ' ' || sensor || ' | ' || generator_provider || ':' || generator_model
                        || ' | ' || generated_path, official_status, parse_status, average_score, overall_score,
                    cost_usd, paid_usd, cache_hit, call_id
             FROM reviews WHERE id IN ({newest})
             ORDER BY reviewer_ref, brand, sensor, generator_provider, generator_model,
                      generated_path, review_key, reviewed_at, id"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            reviews.review_id.push(r.get(0)?);
            reviews.run_id.push(r.get(1)?);
            reviews.reviewer.push(r.get(2)?);
            reviews.generator.push(r.get(3)?);
            reviews.sensor.push(r.get(4)?);
            reviews.target.push(r.get(5)?);
            reviews.official_status.push(r.get(6)?);
            reviews.parse_status.push(r.get(7)?);
            reviews.average_score.push(r.get(8)?);
            reviews.overall_score.push(r.get(9)?);
            reviews.cost_usd.push(r.get(10)?);
            reviews.paid_usd.push(r.get(11)?);
            reviews.cache_hit.push(r.get(12)?);
            reviews.call_id.push(r.get(13)?);
        }
        let mut scores = ScoreColumns::default();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT review_id, position, criterion, score FROM review_scores
             WHERE review_id IN ({newest}) ORDER BY review_id, position"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            scores.review_id.push(r.get(0)?);
            scores.position.push(r.get(1)?);
            scores.criterion.push(r.get(2)?);
            scores.score.push(r.get(3)?);
        }
        Ok((reviews, scores))
    }
}

/// The SQL of the ids of the reviews of `run_ids` that count: with several reviews of the same
/// datasheet by the same reviewer (re-runs), the newest.
fn newest_reviews(run_ids: &[i64]) -> String {
    let ids = run_ids
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "SELECT max(id) FROM reviews WHERE run_id IN ({ids})
         GROUP BY reviewer_ref, brand, sensor, generator_provider, generator_model,
                  generated_path, official_status"
    )
}

impl Store {
    /// The first `limit` reviews that count of `run_ids` (as [`Store::review_columns`] picks
    /// them), in the order they were recorded, with every justification and N/A reason.
    pub(crate) fn review_notes(&self, run_ids: &[i64], limit: usize) -> Result<Vec<ReviewNotes>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, reviewer_ref, generator_provider || ':' || generator_model, brand || ' ' || sensor,
                    generated_path, parse_status, detail, overall_score, overall_justification,
                    overall_na_reason
             FROM reviews WHERE id IN ({}) ORDER BY id LIMIT ?1",
            newest_reviews(run_ids)
        ))?;
        let mut scores = self.conn.prepare(
            "SELECT criterion, score, justification, na_reason FROM review_scores
             WHERE review_id = ?1 ORDER BY position",
        )?;
        let mut notes = Vec::new();
        let mut rows = stmt.query([limit as i64])?;
        while let Some(r) = rows.next()? {
            let review_id: i64 = r.get(0)?;
            let score_rows = scores
                .query_map([review_id], |s| {
                    Ok(ScoreRow {
                        criterion: s.get(0)?,
                        score: s.get(1)?,
                        justification: s.get(2)?,
                        na_reason: s.get(3)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            notes.push(ReviewNotes {
                review_id,
                reviewer: r.get(1)?,
                generator: r.get(2)?,
                sensor: r.get(3)?,
                generated_path: r.get(4)?,
                parse_status: r.get(5)?,
                detail: r.get(6)?,
                overall_score: r.get(7)?,
                overall_justification: r.get(8)?,
                overall_na_reason: r.get(9)?,
                scores: score_rows,
            });
        }
        Ok(notes)
    }
}
