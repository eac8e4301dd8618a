//! Answers of a datasheet experiment become what is kept: a generated datasheet becomes a
//! file under `results/` and a row; a review becomes a row with its scores and a line of the
//! specification's CSV. It must not decide what is called: that is `run`'s and the runtime's.

use std::path::{Path, PathBuf};

use super::ReviewError;
use super::criteria::Criteria;
use super::parse::{ParseStatus, ParsedReview, ScoreEntry, parse_review};
use super::run::{DatasheetExperiment, Item};
use super::sensors::{Sensor, safe_component};
use super::spec_csv::{self, csv_row};
use crate::experiment::{ExperimentError, PlannedCall};
use crate::hash::sha256_hex;
use crate::llm::CallOutcome;
use crate::store::{NewGenerated, ReviewRow, ScoreRow, Store};

impl DatasheetExperiment {
    /// Writes (or, for a cached answer already on disk, reuses) the file of a generated
    /// datasheet and records it; a failed call leaves nothing but its error.
    pub(super) fn save_generated(
        &self,
        store: &Store,
        run_id: i64,
        call: &PlannedCall,
        outcome: &CallOutcome,
    ) -> Result<(), ExperimentError> {
        let Some(answer) = outcome.call() else {
            return Ok(());
        };
        let (g, s, _) = self.generation_item(call.item);
        let sensor = &self.plan.sensors[s];
        let (provider, model) = self.names(g);
        let write_error =
            |path: PathBuf, source| ExperimentError::kind(ReviewError::Write { path, source });
        let existing = store
            .generated_path_for_call(answer.id)?
            .map(PathBuf::from)
            // Reused only where asked (`--results DIR`) and unchanged.
            .filter(|p| p.starts_with(&self.plan.paths.results))
            .filter(|p| std::fs::read_to_string(p).is_ok_and(|text| text == answer.text));
        let path = match existing {
            Some(path) => path,
            None => {
                let path = new_datasheet_path(&self.plan.paths.results, sensor, &provider, &model)
                    .map_err(|(path, e)| write_error(path, e))?;
                std::fs::write(&path, &answer.text).map_err(|e| write_error(path.clone(), e))?;
                path
            }
        };
        let hit = matches!(outcome, CallOutcome::Hit(_));
        store.insert_generated(&NewGenerated {
            run_id: Some(run_id),
            brand: &sensor.brand,
            sensor: &sensor.sensor,
            generator_provider: &provider,
            generator_model: &model,
            model_ref: Some(&self.targets[g].reference),
            call_id: Some(answer.id),
            cache_hit: hit,
            cost_usd: Some(answer.cost_usd),
            paid_usd: Some(if hit { 0.0 } else { answer.cost_usd }),
            content: &answer.text,
            path: &path.display().to_string(),
        })?;
        Ok(())
    }
}

/// A free path `results/<Brand>/<Sensor>/<provider>_<model>_<stamp>[-N].md`, its folder made.
fn new_datasheet_path(
    results: &Path,
    sensor: &Sensor,
    provider: &str,
    model: &str,
) -> Result<PathBuf, (PathBuf, std::io::Error)> {
    let dir = results
        .join(safe_component(&sensor.brand))
        .join(safe_component(&sensor.sensor));
    std::fs::create_dir_all(&dir).map_err(|e| (dir.clone(), e))?;
    let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S").to_string();
    let base = format!(
        "{}_{}_{stamp}",
        safe_component(provider),
        safe_component(model)
    );
    let mut path = dir.join(format!("{base}.md"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{base}-{n}.md"));
        n += 1;
    }
    Ok(path)
}

/// One review to record: a datasheet, its reviewer and the sample.
pub(super) struct Record<'a> {
    pub(super) experiment: &'a DatasheetExperiment,
    pub(super) item: &'a Item,
    pub(super) reviewer: usize,
    pub(super) repeat: u32,
}

impl Record<'_> {
    /// What the review depends on: reviewer, texts, prompt, criteria (and the sample).
    fn key(&self) -> String {
        let reviewing = &self.experiment.plan.reviewing;
        let official_sha = self
            .item
            .official
            .text
            .as_deref()
            .map(|t| sha256_hex(t.as_bytes()));
        let mut key = format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            self.experiment.targets[self.reviewer].reference,
            sha256_hex(self.item.generated.as_bytes()),
            self.item.official.status.as_str(),
            official_sha.as_deref().unwrap_or("-"),
            reviewing.template.sha256,
            reviewing.criteria.sha256
        );
        if self.repeat > 0 {
            key.push_str(&format!("\nrepeat {}", self.repeat));
        }
        sha256_hex(key.as_bytes())
    }

    /// Stores the review (`outcome` is `None` when there was nothing to call) and, unless the
    /// call failed, appends it to the CSV. Returns the problem of an unparsable answer.
    pub(super) fn store(
        &self,
        store: &mut Store,
        run_id: i64,
        outcome: Option<&CallOutcome>,
    ) -> Result<Option<String>, ExperimentError> {
        let criteria = &self.experiment.plan.reviewing.criteria;
        let key = self.key();
        let (parsed, call) = match outcome {
            None => (
                not_reviewed(criteria, "no official datasheet to compare with"),
                None,
            ),
            Some(CallOutcome::Failed { error, call_id, .. }) => {
                let mut row = self.row(
                    run_id,
                    &key,
                    not_reviewed(criteria, "the reviewer call failed"),
                );
                row.parse_status = "error".into();
                row.call_id = *call_id;
                row.detail = Some(error.clone());
                row.reviewed_at = crate::store::now_rfc3339();
                store.insert_review(&row)?;
                return Ok(None);
            }
            Some(CallOutcome::Hit(call) | CallOutcome::Fresh(call)) => {
                (parse_review(&call.text, criteria), Some(call))
            }
        };
        let problem = (parsed.status == ParseStatus::Failed && call.is_some()).then(|| {
            format!(
                "{} reviewing {} {}: unparsable answer ({})",
                self.experiment.targets[self.reviewer].reference,
                self.item.file.sensor.brand,
                self.item.file.sensor.sensor,
                parsed.detail.as_deref().unwrap_or("no JSON object")
            )
        });
        let mut row = self.row(run_id, &key, parsed);
        if outcome.is_none() {
            row.parse_status = "skipped".into();
        }
        if let Some(call) = call {
            let hit = matches!(outcome, Some(CallOutcome::Hit(_)));
            row.call_id = Some(call.id);
            row.cache_hit = hit;
            row.cost_usd = Some(call.cost_usd);
            row.paid_usd = Some(if hit { 0.0 } else { call.cost_usd });
        }
        // The same review keeps its first time, so re-runs append no duplicate CSV rows.
        row.reviewed_at = store
            .first_review_time(&key)?
            .or_else(|| call.map(|c| c.created_at.clone()))
            .unwrap_or_else(crate::store::now_rfc3339);
        store.insert_review(&row)?;
        let reviews = &self.experiment.plan.paths.reviews;
        spec_csv::append(reviews, criteria, &csv_row(&row)).map_err(ExperimentError::kind)?;
        Ok(problem)
    }

    fn row(&self, run_id: i64, review_key: &str, parsed: ParsedReview) -> ReviewRow {
        let experiment = self.experiment;
        let reviewing = &experiment.plan.reviewing;
        let (provider, model) = experiment.names(self.reviewer);
        let item = self.item;
        ReviewRow {
            run_id,
            review_key: review_key.to_owned(),
            brand: item.file.sensor.brand.clone(),
            sensor: item.file.sensor.sensor.clone(),
            generator_provider: item.file.provider.clone(),
            generator_model: item.file.model.clone(),
            generated_path: item.file.path.display().to_string(),
            generated_text: item.generated.clone(),
            reviewer_ref: experiment.targets[self.reviewer].reference.clone(),
            reviewer_provider: provider,
            reviewer_model: model,
            official_status: item.official.status.as_str().to_owned(),
            official_text: item.official.text.clone(),
            prompt_sha256: reviewing.template.sha256.clone(),
            criteria_sha256: reviewing.criteria.sha256.clone(),
            call_id: None,
            cache_hit: false,
            parse_status: parsed.status.as_str().to_owned(),
            detail: parsed.detail.clone(),
            average_score: parsed.average(),
            overall_score: parsed.overall.score,
            overall_justification: parsed.overall.justification.clone(),
            overall_na_reason: parsed.overall.na_reason.clone(),
            cost_usd: None,
            paid_usd: None,
            reviewed_at: String::new(),
            scores: parsed
                .scores
                .into_iter()
                .map(|s| ScoreRow {
                    criterion: s.id,
                    score: s.score,
                    justification: s.justification,
                    na_reason: s.na_reason,
                })
                .collect(),
        }
    }
}

/// A review that has no scores: every criterion N/A for `reason`.
fn not_reviewed(criteria: &Criteria, reason: &str) -> ParsedReview {
    let na = |id: &str| ScoreEntry {
        id: id.to_owned(),
        score: None,
        justification: None,
        na_reason: Some(reason.to_owned()),
    };
    ParsedReview {
        status: ParseStatus::Failed,
        detail: Some(reason.to_owned()),
        scores: criteria.items.iter().map(|c| na(&c.id)).collect(),
        overall: na("overall"),
    }
}
