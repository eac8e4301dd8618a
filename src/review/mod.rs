//! Judge reviews: models write sensor datasheets; a reviewer model scores each against the
//! official datasheet on criteria P1-P16 and overall, on a 1-5 Likert scale.
//!
//! Generation and review both become call jobs for the shared executor (so both are cached);
//! answers become stored rows, files under `results/`, and the specification's CSV.

pub mod criteria;
pub mod experiment;
pub mod parse;
pub mod prompt;
pub mod sensors;
pub mod spec_csv;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::{Catalog, ConfigError, Target};
use crate::llm::{CallJob, CallOutcome, ChatRequest, Executor, Message, SamplingParams};
use crate::store::{
    NewGenerated, ReviewRow, RunStatus, ScoreRow, Store, StoreError, StoredCall, lock,
};
use criteria::Criteria;
use parse::{ParseStatus, ParsedReview, parse_review};
use prompt::Template;
use sensors::{GeneratedFile, Sensor, safe_component};
use spec_csv::ReviewCsvRow;

/// What stops a generation or review from running at all.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("cannot read the {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error(transparent)]
    Model(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Nothing(String),
    /// A provider needs a key that is not set (the message says which variables).
    #[error("{0}")]
    MissingKey(String),
}

/// Where the data of reviews lives.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `data/sensors.csv`.
    pub sensors: PathBuf,
    /// `datasheet/`: official datasheets `<Brand>_<Sensor>.md`.
    pub datasheets: PathBuf,
    /// `results/`: generated datasheets `<Brand>/<Sensor>/<provider>_<model>_<stamp>.md`.
    pub results: PathBuf,
    /// `results/reviews/`: the specification's CSV files.
    pub reviews: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Self {
            sensors: PathBuf::from("data/sensors.csv"),
            datasheets: PathBuf::from("datasheet"),
            results: PathBuf::from("results"),
            reviews: PathBuf::from("results/reviews"),
        }
    }
}

/// Which sensors: all, or those matching a brand and/or a sensor name (any case).
#[derive(Debug, Clone, Default)]
pub struct SensorFilter {
    pub brand: Option<String>,
    pub sensor: Option<String>,
}

impl SensorFilter {
    fn keeps(&self, s: &Sensor) -> bool {
        let matches = |want: &Option<String>, have: &str| {
            want.as_ref().is_none_or(|w| w.eq_ignore_ascii_case(have))
        };
        matches(&self.brand, &s.brand) && matches(&self.sensor, &s.sensor)
    }

    /// The sensors of the list at `path` that pass the filter; an error if none do.
    pub fn select(&self, path: &Path) -> Result<Vec<Sensor>, ReviewError> {
        let all = sensors::load_sensors(path)?;
        let chosen: Vec<Sensor> = all.iter().filter(|s| self.keeps(s)).cloned().collect();
        if chosen.is_empty() {
            return Err(ReviewError::Nothing(format!(
                "no sensor of {} matches{}{}; it lists {}",
                path.display(),
                self.brand
                    .as_ref()
                    .map(|b| format!(" --brand {b}"))
                    .unwrap_or_default(),
                self.sensor
                    .as_ref()
                    .map(|s| format!(" --sensor {s}"))
                    .unwrap_or_default(),
                all.iter()
                    .map(|s| format!("{} {}", s.brand, s.sensor))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(chosen)
    }
}

/// How to call a model for generation or review.
#[derive(Debug, Clone, Default)]
pub struct CallSettings {
    pub params: SamplingParams,
    pub show_progress: bool,
}

/// Totals of a generation or review run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub run_id: i64,
    pub done: usize,
    pub cache_hits: usize,
    pub errors: Vec<String>,
    pub cost_usd: f64,
    pub paid_usd: f64,
    /// Files written (generated datasheets or CSV files).
    pub files: BTreeSet<PathBuf>,
    /// Reviews by parse status: ok, partial, failed, skipped.
    pub parsed: [usize; 4],
}

impl Totals {
    fn add_call(&mut self, outcome: &CallOutcome) {
        if let Some(call) = outcome.call() {
            self.cost_usd += call.cost_usd;
            if matches!(outcome, CallOutcome::Hit(_)) {
                self.cache_hits += 1;
            } else {
                self.paid_usd += call.cost_usd;
            }
        }
    }
}

/// A catalog model resolved for calling, as generation and review use it.
struct Caller {
    target: Target,
    /// `provider:alias`, the form stored with reviews.
    reference: String,
}

impl Caller {
    fn new(catalog: &Catalog, reference: &str) -> Result<Self, ReviewError> {
        let target = catalog.target(reference)?;
        Ok(Self {
            reference: target.spec.reference(),
            target,
        })
    }

    /// Fails when the provider needs a key that is not set and some call is not cached.
    fn check_key(&self, executor: &Executor, jobs: &[CallJob]) -> Result<(), ReviewError> {
        match &self.target.blocked {
            Some(reason) if !executor.all_cached(jobs)? => {
                Err(ReviewError::MissingKey(reason.clone()))
            }
            _ => Ok(()),
        }
    }

    fn job(&self, text: String, params: &SamplingParams) -> CallJob {
        let request = ChatRequest {
            model: self.target.spec.model.clone(),
            system: None,
            messages: vec![Message::user(text)],
            params: params.clone(),
        };
        self.target.job(request, 0)
    }

    /// `(provider, model)` as file and CSV names show them: `anthropic`, `claude-3-5-haiku`.
    fn names(&self) -> (String, String) {
        let spec = &self.target.spec;
        (
            spec.provider.clone(),
            spec.alias.replace(char::is_whitespace, "-"),
        )
    }
}

/// What to generate: a datasheet of each sensor by one model.
#[derive(Debug, Clone)]
pub struct GeneratePlan {
    pub model: String,
    pub sensors: Vec<Sensor>,
    pub paths: Paths,
    pub template: Template,
}

/// Writes a datasheet for each sensor with the plan's model, saved under `paths.results` and
/// stored. A cached answer reuses its file instead of writing a copy.
pub async fn generate(
    store: &Arc<Mutex<Store>>,
    executor: &Executor,
    catalog: &Catalog,
    plan: &GeneratePlan,
    settings: &CallSettings,
) -> Result<Totals, ReviewError> {
    let GeneratePlan {
        model: model_ref,
        sensors,
        paths,
        template,
    } = plan;
    let caller = Caller::new(catalog, model_ref)?;
    let jobs: Vec<CallJob> = sensors
        .iter()
        .map(|s| {
            caller.job(
                template.render(&[("brand", &s.brand), ("sensor", &s.sensor)]),
                &settings.params,
            )
        })
        .collect();
    caller.check_key(executor, &jobs)?;
    let options = serde_json::json!({"model": caller.reference, "prompt_sha256": template.sha256})
        .to_string();
    let run_id = lock(store).create_run(
        "generate",
        Some(&paths.sensors.display().to_string()),
        None,
        &options,
    )?;
    let mut totals = Totals {
        run_id,
        ..Totals::default()
    };
    let progress = crate::output::progress_bar(jobs.len(), settings.show_progress);
    let (provider, model) = caller.names();
    let mut failure = None;
    executor
        .run(jobs, |index, outcome| {
            progress.inc(1);
            totals.add_call(&outcome);
            let sensor = &sensors[index];
            let call = match &outcome {
                CallOutcome::Failed { error, .. } => {
                    totals
                        .errors
                        .push(format!("{} {}: {error}", sensor.brand, sensor.sensor));
                    return;
                }
                CallOutcome::Hit(call) | CallOutcome::Fresh(call) => call,
            };
            let result = save_generated(
                store,
                run_id,
                &caller,
                (&provider, &model),
                sensor,
                call,
                &outcome,
                paths,
            );
            match result {
                Ok(path) => {
                    totals.done += 1;
                    totals.files.insert(path);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        })
        .await?;
    finish_run(store, &progress, failure, totals)
}

/// Writes (or, for a cached answer already on disk, reuses) the file of a generated datasheet
/// and records it.
#[allow(clippy::too_many_arguments)]
fn save_generated(
    store: &Mutex<Store>,
    run_id: i64,
    caller: &Caller,
    (provider, model): (&str, &str),
    sensor: &Sensor,
    call: &StoredCall,
    outcome: &CallOutcome,
    paths: &Paths,
) -> Result<PathBuf, ReviewError> {
    let store = lock(store);
    let existing = store
        .generated_path_for_call(call.id)?
        .map(PathBuf::from)
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|text| text == call.text));
    let path = match existing {
        Some(path) => path,
        None => {
            let dir = paths
                .results
                .join(safe_component(&sensor.brand))
                .join(safe_component(&sensor.sensor));
            std::fs::create_dir_all(&dir).map_err(|source| ReviewError::Write {
                path: dir.clone(),
                source,
            })?;
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
            std::fs::write(&path, &call.text).map_err(|source| ReviewError::Write {
                path: path.clone(),
                source,
            })?;
            path
        }
    };
    let hit = matches!(outcome, CallOutcome::Hit(_));
    store.insert_generated(&NewGenerated {
        run_id: Some(run_id),
        brand: &sensor.brand,
        sensor: &sensor.sensor,
        generator_provider: provider,
        generator_model: model,
        model_ref: Some(&caller.reference),
        call_id: Some(call.id),
        cache_hit: hit,
        cost_usd: Some(call.cost_usd),
        paid_usd: Some(if hit { 0.0 } else { call.cost_usd }),
        content: &call.text,
        path: &path.display().to_string(),
    })?;
    Ok(path)
}

/// What to review and how.
#[derive(Debug, Clone)]
pub struct ReviewPlan {
    pub reviewer: String,
    /// Only datasheets generated by this model (`provider:name`).
    pub generator: Option<String>,
    pub sensors: Vec<Sensor>,
    pub paths: Paths,
    pub template: Template,
    pub criteria: Criteria,
}

/// One generated datasheet to review, with its official datasheet.
struct Item {
    file: GeneratedFile,
    generated: String,
    official: sensors::Official,
}

/// Reviews every generated datasheet of the plan's sensors with the reviewer; stores each
/// review with its scores and appends it to the specification's CSV.
pub async fn review(
    store: &Arc<Mutex<Store>>,
    executor: &Executor,
    catalog: &Catalog,
    plan: &ReviewPlan,
    settings: &CallSettings,
) -> Result<Totals, ReviewError> {
    let caller = Caller::new(catalog, &plan.reviewer)?;
    let (reviewer_provider, reviewer_model) = caller.names();
    let mut files = sensors::find_generated(&plan.paths.results, &plan.sensors);
    if let Some(generator) = &plan.generator {
        files.retain(|f| generated_by(f, generator, catalog));
    }
    if files.is_empty() {
        return Err(ReviewError::Nothing(format!(
            "no generated datasheets under {} for {}{}; write some with `track generate-datasheets --model <provider:name>`",
            plan.paths.results.display(),
            plan.sensors
                .iter()
                .map(|s| format!("{} {}", s.brand, s.sensor))
                .collect::<Vec<_>>()
                .join(", "),
            plan.generator
                .as_ref()
                .map(|g| format!(" by {g}"))
                .unwrap_or_default()
        )));
    }
    let mut items = Vec::new();
    for file in files {
        let generated =
            std::fs::read_to_string(&file.path).map_err(|source| ReviewError::Read {
                what: "generated datasheet",
                path: file.path.clone(),
                source,
            })?;
        let official = sensors::load_official(&plan.paths.datasheets, &file.sensor);
        if let Some(detail) = &official.detail {
            tracing::warn!(
                "{} {}: {} ({detail})",
                file.sensor.brand,
                file.sensor.sensor,
                official.status.as_str()
            );
        }
        items.push(Item {
            file,
            generated,
            official,
        });
    }
    // Items with an official datasheet get a reviewer call; the others are recorded as skipped.
    let mut jobs = Vec::new();
    let mut job_item = Vec::new();
    for (index, item) in items.iter().enumerate() {
        if let Some(official) = &item.official.text {
            let prompt = render_review_prompt(plan, item, official);
            jobs.push(caller.job(prompt, &settings.params));
            job_item.push(index);
        }
    }
    caller.check_key(executor, &jobs)?;
    let options = serde_json::json!({
        "reviewer": caller.reference,
        "generator": plan.generator,
        "prompt_sha256": plan.template.sha256,
        "criteria_sha256": plan.criteria.sha256,
    })
    .to_string();
    let run_id = lock(store).create_run(
        "review",
        Some(&plan.paths.sensors.display().to_string()),
        None,
        &options,
    )?;
    let mut totals = Totals {
        run_id,
        ..Totals::default()
    };
    let progress = crate::output::progress_bar(items.len(), settings.show_progress);
    let context = RecordContext {
        store,
        plan,
        caller: &caller,
        reviewer: (&reviewer_provider, &reviewer_model),
        run_id,
    };
    let mut failure: Option<ReviewError> = None;
    for item in items.iter().filter(|i| i.official.text.is_none()) {
        progress.inc(1);
        if let Err(e) = context.record(item, None, &mut totals) {
            failure.get_or_insert(e);
        }
    }
    executor
        .run(jobs, |j, outcome| {
            progress.inc(1);
            totals.add_call(&outcome);
            if let Err(e) = context.record(&items[job_item[j]], Some(&outcome), &mut totals) {
                failure.get_or_insert(e);
            }
        })
        .await?;
    finish_run(store, &progress, failure, totals)
}

/// Ends a generation or review run: completed, or failed with the first error that stopped
/// results from being recorded.
fn finish_run(
    store: &Mutex<Store>,
    progress: &indicatif::ProgressBar,
    failure: Option<ReviewError>,
    totals: Totals,
) -> Result<Totals, ReviewError> {
    progress.finish_and_clear();
    let status = if failure.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    };
    lock(store).finish_run(totals.run_id, status)?;
    match failure {
        Some(e) => Err(e),
        None => Ok(totals),
    }
}

/// Whether `file` was written by the model `generator` names (by reference or file name).
fn generated_by(file: &GeneratedFile, generator: &str, catalog: &Catalog) -> bool {
    let Some((provider, name)) = generator.split_once(':') else {
        return false;
    };
    if !file.provider.eq_ignore_ascii_case(provider.trim()) {
        return false;
    }
    let name = name.trim();
    if file.model.eq_ignore_ascii_case(name) || file.model == safe_component(name) {
        return true;
    }
    let wanted = catalog.resolve(generator).ok();
    let found = catalog
        .resolve(&format!("{}:{}", file.provider, file.model))
        .or_else(|_| {
            catalog.resolve(&format!(
                "{}:{}",
                file.provider,
                file.model.replace('-', " ")
            ))
        })
        .ok();
    wanted.is_some() && wanted == found
}

fn render_review_prompt(plan: &ReviewPlan, item: &Item, official: &str) -> String {
    let last_id = plan
        .criteria
        .items
        .last()
        .map(|c| c.id.clone())
        .unwrap_or_default();
    plan.template.render(&[
        ("brand", &item.file.sensor.brand),
        ("sensor", &item.file.sensor.sensor),
        ("last_id", &last_id),
        ("scale", &plan.criteria.scale_text()),
        ("criteria", &plan.criteria.criteria_text()),
        ("json_keys", &plan.criteria.json_keys_text()),
        ("official_datasheet", official.trim()),
        ("generated_datasheet", item.generated.trim()),
    ])
}

/// What recording a review needs besides the review.
struct RecordContext<'a> {
    store: &'a Mutex<Store>,
    plan: &'a ReviewPlan,
    caller: &'a Caller,
    reviewer: (&'a str, &'a str),
    run_id: i64,
}

impl RecordContext<'_> {
    /// Stores the review of `item` (`outcome` is `None` when there was nothing to call) and,
    /// unless the call failed, appends it to the CSV.
    fn record(
        &self,
        item: &Item,
        outcome: Option<&CallOutcome>,
        totals: &mut Totals,
    ) -> Result<(), ReviewError> {
        let criteria = &self.plan.criteria;
        let generated_sha = crate::hash::sha256_hex(item.generated.as_bytes());
        let official_sha = item
            .official
            .text
            .as_deref()
            .map(|t| crate::hash::sha256_hex(t.as_bytes()));
        let review_key = crate::hash::sha256_hex(
            format!(
                "{}\n{}\n{}\n{}\n{}\n{}",
                self.caller.reference,
                generated_sha,
                item.official.status.as_str(),
                official_sha.as_deref().unwrap_or("-"),
                self.plan.template.sha256,
                criteria.sha256
            )
            .as_bytes(),
        );
        let (parsed, call, status_name, detail) = match outcome {
            None => (
                not_reviewed(criteria, "no official datasheet to compare with"),
                None,
                "skipped",
                item.official.detail.clone(),
            ),
            Some(CallOutcome::Failed { error, call_id, .. }) => {
                totals.errors.push(format!(
                    "{} {}: {error}",
                    item.file.sensor.brand, item.file.sensor.sensor
                ));
                let mut row = self.row(
                    item,
                    &review_key,
                    not_reviewed(criteria, "the reviewer call failed"),
                    "error",
                );
                row.call_id = *call_id;
                row.detail = Some(error.clone());
                row.reviewed_at = crate::store::now_rfc3339();
                lock(self.store).insert_review(&row)?;
                return Ok(());
            }
            Some(CallOutcome::Hit(call) | CallOutcome::Fresh(call)) => {
                let parsed = parse_review(&call.text, criteria);
                let status = parsed.status.as_str();
                let detail = parsed.detail.clone();
                (parsed, Some(call), status, detail)
            }
        };
        totals.done += 1;
        totals.parsed[match status_name {
            "ok" => 0,
            "partial" => 1,
            "failed" => 2,
            _ => 3,
        }] += 1;
        let mut row = self.row(item, &review_key, parsed, status_name);
        row.detail = detail;
        if let Some(call) = call {
            let hit = matches!(outcome, Some(CallOutcome::Hit(_)));
            row.call_id = Some(call.id);
            row.cache_hit = hit;
            row.cost_usd = Some(call.cost_usd);
            row.paid_usd = Some(if hit { 0.0 } else { call.cost_usd });
        }
        let mut store = lock(self.store);
        // The same review keeps its first time, so re-runs append no duplicate CSV rows.
        row.reviewed_at = store
            .first_review_time(&review_key)?
            .or_else(|| call.map(|c| c.created_at.clone()))
            .unwrap_or_else(crate::store::now_rfc3339);
        store.insert_review(&row)?;
        drop(store);
        let (path, _) = spec_csv::append(&self.plan.paths.reviews, criteria, &csv_row(&row))?;
        totals.files.insert(path);
        Ok(())
    }

    fn row(&self, item: &Item, review_key: &str, parsed: ParsedReview, status: &str) -> ReviewRow {
        ReviewRow {
            run_id: self.run_id,
            review_key: review_key.to_owned(),
            brand: item.file.sensor.brand.clone(),
            sensor: item.file.sensor.sensor.clone(),
            generator_provider: item.file.provider.clone(),
            generator_model: item.file.model.clone(),
            generated_path: item.file.path.display().to_string(),
            generated_text: item.generated.clone(),
            reviewer_ref: self.caller.reference.clone(),
            reviewer_provider: self.reviewer.0.to_owned(),
            reviewer_model: self.reviewer.1.to_owned(),
            official_status: item.official.status.as_str().to_owned(),
            official_text: item.official.text.clone(),
            prompt_sha256: self.plan.template.sha256.clone(),
            criteria_sha256: self.plan.criteria.sha256.clone(),
            call_id: None,
            cache_hit: false,
            parse_status: status.to_owned(),
            detail: None,
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

/// A stored review as the specification's CSV row: scores or `N/A`, and for each N/A without
/// a justification the reason it is N/A.
pub fn csv_row(row: &ReviewRow) -> ReviewCsvRow {
    let score = |s: Option<i64>| s.map_or_else(|| "N/A".to_owned(), |v| v.to_string());
    let justification = |text: &Option<String>, reason: &Option<String>| match (text, reason) {
        (Some(text), _) => text.clone(),
        (None, Some(reason)) => format!("N/A: {reason}"),
        (None, None) => String::new(),
    };
    let overall_justification = if row.parse_status == ParseStatus::Failed.as_str() {
        format!(
            "N/A: the reviewer's answer could not be parsed ({})",
            row.detail.as_deref().unwrap_or("no JSON object")
        )
    } else {
        justification(&row.overall_justification, &row.overall_na_reason)
    };
    ReviewCsvRow {
        brand: row.brand.clone(),
        sensor: row.sensor.clone(),
        generator_provider: row.generator_provider.clone(),
        generator_model: row.generator_model.clone(),
        reviewer_provider: row.reviewer_provider.clone(),
        reviewer_model: row.reviewer_model.clone(),
        official_status: row.official_status.clone(),
        scores: row.scores.iter().map(|s| score(s.score)).collect(),
        average: row
            .average_score
            .map_or_else(|| "N/A".to_owned(), |a| format!("{a:.2}")),
        overall: score(row.overall_score),
        justifications: row
            .scores
            .iter()
            .map(|s| justification(&s.justification, &s.na_reason))
            .collect(),
        overall_justification,
        timestamp: csv_timestamp(&row.reviewed_at),
    }
}

/// A review that has no scores: every criterion N/A for `reason`.
fn not_reviewed(criteria: &Criteria, reason: &str) -> ParsedReview {
    let na = |id: &str| parse::ScoreEntry {
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

/// RFC 3339 as the CSV wants it: `YYYY-MM-DD HH:MM:SS` (UTC).
fn csv_timestamp(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_owned())
}
