//! Relevance predictions: one row per image x predicate x variant x trial of a run, and the
//! two prompt variants they are stored under.

use rusqlite::params;

use super::{Result, Store};

/// The two prompt variants of a relevance experiment, WITH and WITHOUT the "uncertain"
/// option: their names (stored, and as the specification spells them) and the scores each
/// allows. Every part of the kind (prompts, answers, rows, summaries, diffs) reads variants
/// from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Scores 2 / 1 / 0: 1 means uncertain.
    With,
    /// Scores 2 / 0 only.
    Without,
}

impl Variant {
    /// Both variants, in the order of every table.
    pub const ALL: [Self; 2] = [Self::With, Self::Without];

    /// The name stored in the database (`WITH`, `WITHOUT`) and shown in the console block.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::With => "WITH",
            Self::Without => "WITHOUT",
        }
    }

    /// The specification's spelling, in every CSV, query and export: `with_uncertain`.
    pub(crate) fn spec_name(self) -> &'static str {
        match self {
            Self::With => "with_uncertain",
            Self::Without => "without_uncertain",
        }
    }

    /// Whether `score` is an answer this variant allows.
    pub(crate) fn allows(self, score: i64) -> bool {
        match self {
            Self::With => (0..=2).contains(&score),
            Self::Without => score == 0 || score == 2,
        }
    }
}

/// The stored name (`WITH`).
impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no variant, named in the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown relevance variant {0:?} (expected WITH or WITHOUT)")]
pub struct UnknownVariant(pub String);

/// From the stored name (`WITH`, `WITHOUT`) or the specification's (`with_uncertain`).
impl std::str::FromStr for Variant {
    type Err = UnknownVariant;

    fn from_str(name: &str) -> std::result::Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == name || v.spec_name() == name)
            .ok_or_else(|| UnknownVariant(name.to_owned()))
    }
}

impl rusqlite::types::ToSql for Variant {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.name().into())
    }
}

impl rusqlite::types::FromSql for Variant {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e: UnknownVariant| rusqlite::types::FromSqlError::Other(Box::new(e)))
    }
}

/// One prediction of a relevance run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredictionRow {
    pub run_id: i64,
    pub model_ref: String,
    pub image: String,
    pub image_sha256: String,
    pub predicate: String,
    pub predicate_kind: String,
    /// WITH or WITHOUT the uncertain option (stored `WITH`, `WITHOUT`).
    pub variant: Variant,
    pub trial: u32,
    /// 0, 1 or 2; `None` when the answer for it was invalid.
    pub score: Option<u8>,
    pub invalid_reason: Option<String>,
    pub truth: bool,
    pub call_id: Option<i64>,
    pub cache_hit: bool,
    /// The sha256 of the prompt template it was asked with.
    pub prompt_sha256: Option<String>,
}

impl Store {
    /// Writes predictions in one transaction (a repeated one replaces the earlier).
    pub(crate) fn insert_predictions(&mut self, rows: &[PredictionRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO relevance_predictions (run_id, model_ref, image, image_sha256,
                    predicate, predicate_kind, variant, trial, score, invalid_reason, truth, call_id, cache_hit,
                    prompt_sha256, uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            for r in rows {
                let uid = super::uid(&[
                    "prediction".into(),
                    super::ids::run_uid(&tx, r.run_id)?.as_ref().into(),
                    (&r.image).into(),
                    (&r.predicate).into(),
                    r.variant.name().into(),
                    i64::from(r.trial).into(),
                ]);
                stmt.execute(params![
                    r.run_id,
                    r.model_ref,
                    r.image,
                    r.image_sha256,
                    r.predicate,
                    r.predicate_kind,
                    r.variant,
                    r.trial,
                    r.score,
                    r.invalid_reason,
                    r.truth,
                    r.call_id,
                    r.cache_hit,
                    r.prompt_sha256,
                    uid,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The predictions of `run_ids`, ordered by image, predicate, variant and trial.
    pub(crate) fn predictions(&self, run_ids: &[i64]) -> Result<Vec<PredictionRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT run_id, model_ref, image, image_sha256, predicate, predicate_kind, variant, trial, score,
                    invalid_reason, truth, call_id, cache_hit, prompt_sha256
             FROM relevance_predictions WHERE run_id = ?1 ORDER BY image, predicate, variant, trial",
        )?;
        let mut out = Vec::new();
        for run_id in run_ids {
            let rows = stmt.query_map([run_id], |r| {
                Ok(PredictionRow {
                    run_id: r.get(0)?,
                    model_ref: r.get(1)?,
                    image: r.get(2)?,
                    image_sha256: r.get(3)?,
                    predicate: r.get(4)?,
                    predicate_kind: r.get(5)?,
                    variant: r.get(6)?,
                    trial: r.get(7)?,
                    score: r.get(8)?,
                    invalid_reason: r.get(9)?,
                    truth: r.get(10)?,
                    call_id: r.get(11)?,
                    cache_hit: r.get(12)?,
                    prompt_sha256: r.get(13)?,
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_name_reads_back_and_an_unknown_one_is_an_error_naming_it() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse(), Ok(v));
            assert_eq!(v.spec_name().parse(), Ok(v));
        }
        let err = "WITHIN".parse::<Variant>().unwrap_err();
        assert!(err.to_string().contains("\"WITHIN\""), "{err}");
    }
}
