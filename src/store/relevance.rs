//! Relevance predictions: one row per image x predicate x variant x trial of a run.

use rusqlite::params;

use super::{Result, Store};
use crate::relevance::variant::Variant;

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
    pub fn insert_predictions(&mut self, rows: &[PredictionRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO relevance_predictions (run_id, model_ref, image, image_sha256,
                    predicate, predicate_kind, variant, trial, score, invalid_reason, truth, call_id, cache_hit,
                    prompt_sha256)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )?;
            for r in rows {
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
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The predictions of `run_ids`, ordered by image, predicate, variant and trial.
    pub fn predictions(&self, run_ids: &[i64]) -> Result<Vec<PredictionRow>> {
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
