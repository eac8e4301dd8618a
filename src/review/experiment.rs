//! Datasheet experiments for the runtime. Generation: a model writes a datasheet of each
//! sensor (kind `generate`). Review: each reviewer scores every generated datasheet against
//! the official one (kind `review`); a review experiment may generate first, and then its
//! reviews cover what it generated too.
//!
//! Stages: `generation` (one group per generator), then `reviews` (one group per reviewer).
//! Answers become what is kept: a generated datasheet a file under `results/` and a row; a
//! review a row with its scores and a line of the specification's CSV. Whether a call is
//! sent is the runtime's to decide, not this file's.

use std::path::{Path, PathBuf};

use super::criteria::Criteria;
use super::parse::{ParsedReview, ScoreEntry, parse_review};
use super::sensors::{self, GeneratedFile, Official, Sensor, safe_component};
use super::spec_csv::{self, csv_row};
use super::{Paths, ReviewError};
use crate::config::Catalog;
use crate::dispatch::{CallJob, CallOutcome};
use crate::experiment::{
    Answers, Experiment, ExperimentError, ExperimentKind, PendingCall, PlannedCall, ReportOptions,
    RunHeader, RunSummary, Shard, Stage, StageData, Target, check_size,
};
use crate::hash::sha256_hex;
use crate::llm::{AnswerSchema, ChatRequest, Message, SamplingParams, tokens_bound};
use crate::prompt::Template;
use crate::store::{
    NewGenerated, ParseStatus, ReviewRow, RunErrorRow, ScoreRow, Store, StoreError, StoredCall,
};

/// How datasheets are written.
#[derive(Debug, Clone)]
pub struct Generation {
    pub template: Template,
    pub params: SamplingParams,
}

/// How datasheets are reviewed.
#[derive(Debug, Clone)]
pub struct Reviewing {
    pub template: Template,
    pub criteria: Criteria,
    pub params: SamplingParams,
    /// Review only datasheets written by this model (`provider:name`).
    pub only_generator: Option<String>,
}

/// What a datasheet experiment is made of, before its models are resolved.
#[derive(Debug, Clone)]
pub struct DatasheetPlan {
    /// The experiment file, when it came from one, with its hash.
    pub file: Option<(PathBuf, String)>,
    pub generators: Vec<String>,
    pub reviewers: Vec<String>,
    pub sensors: Vec<Sensor>,
    pub paths: Paths,
    pub generation: Generation,
    pub reviewing: Reviewing,
    /// Samples of each call, each a distinct cache entry.
    pub repeats: u32,
    /// The most a run may spend, in USD (the file's `budget:`).
    pub budget_usd: Option<f64>,
    /// Whether its calls go through batch APIs (the file's `batch: true`).
    pub batch: bool,
}

/// A datasheet experiment resolved for the runtime.
#[derive(Debug, Clone)]
pub struct DatasheetExperiment {
    plan: DatasheetPlan,
    /// Generators, then reviewers.
    targets: Vec<Target>,
    generators: usize,
    catalog: Catalog,
    /// The canonical reference of `--generator`, resolved once (`None`: every generator).
    only_generator: Option<String>,
}

/// One generated datasheet to review, with its official datasheet.
#[derive(Debug, Clone)]
struct Item {
    file: GeneratedFile,
    generated: String,
    official: Official,
}

/// The datasheets a reviews stage reviews, shared by its calls.
#[derive(Debug)]
struct ReviewItems(Vec<Item>);

impl DatasheetExperiment {
    /// Resolves the generators and reviewers of `plan`.
    pub(crate) fn new(plan: DatasheetPlan, catalog: &Catalog) -> Result<Self, ExperimentError> {
        let mut targets = Vec::new();
        for reference in &plan.generators {
            targets.push(Target::resolve(catalog, reference)?);
        }
        let generators = targets.len();
        for reference in &plan.reviewers {
            targets.push(Target::resolve(catalog, reference)?.with_role("reviewer"));
        }
        // An unknown `--generator` matches no generator of this run; on disk, files are matched
        // by name too (`generated_by`).
        let only_generator = plan
            .reviewing
            .only_generator
            .as_ref()
            .map(|g| Target::resolve(catalog, g).map_or_else(|_| g.clone(), |t| t.reference));
        let repeats = u64::from(plan.repeats);
        check_size(generators as u64 * plan.sensors.len() as u64 * repeats)?;
        Ok(Self {
            plan,
            targets,
            generators,
            catalog: catalog.clone(),
            only_generator,
        })
    }

    fn reviewers(&self) -> std::ops::Range<usize> {
        self.generators..self.targets.len()
    }

    fn repeats(&self) -> usize {
        self.plan.repeats.max(1) as usize
    }

    /// `(provider, model)` as file and CSV names show a model: `anthropic`, `haiku-3.5`.
    fn names(&self, target: usize) -> (String, String) {
        let spec = &self.targets[target].spec;
        (
            spec.provider.clone(),
            spec.alias.replace(char::is_whitespace, "-"),
        )
    }

    /// Generator, sensor and sample of a generation call's item.
    fn generation_item(&self, item: usize) -> (usize, usize, u32) {
        let (sensors, repeats) = (self.plan.sensors.len(), self.repeats());
        (
            item / (sensors * repeats),
            (item / repeats) % sensors,
            (item % repeats) as u32,
        )
    }

    /// Every generator writes every sensor's datasheet, `repeats` times.
    fn generation_stage(&self, follow_up: bool) -> Stage {
        let generation = &self.plan.generation;
        let mut calls = Vec::new();
        for g in 0..self.generators {
            for (s, sensor) in self.plan.sensors.iter().enumerate() {
                let text = generation
                    .template
                    .render(&[("brand", &sensor.brand), ("sensor", &sensor.sensor)]);
                for repeat in 0..self.repeats() {
                    calls.push(PlannedCall {
                        target: g,
                        job: self.job(g, text.clone(), &generation.params, (repeat as u32, None)),
                        item: (g * self.plan.sensors.len() + s) * self.repeats() + repeat,
                        group: g as u32,
                        follow_up,
                        after: None,
                    });
                }
            }
        }
        Stage {
            name: "generation",
            calls,
            ..Stage::default()
        }
    }

    /// The call of prompt `text` to `target` for sample `repeat`, its answer in the shape
    /// `schema` when one is given (reviews).
    fn job(
        &self,
        target: usize,
        text: String,
        params: &SamplingParams,
        (repeat, schema): (u32, Option<AnswerSchema>),
    ) -> CallJob {
        let target = &self.targets[target];
        let request = ChatRequest {
            tools: None,
            model: target.spec.model.as_str().into(),
            schema: None,
            system: None,
            messages: vec![Message::user(text)].into(),
            params: params.clone().into(),
        };
        match schema {
            Some(schema) => target.shaped_job(request, schema, repeat),
            None => target.job(request, repeat),
        }
    }

    /// Every reviewer reviews every datasheet found on disk and every one the previous stage
    /// wrote; a datasheet not written yet (a plan) is bounded by the generation's max_tokens.
    fn reviews_stage(
        &self,
        previous: Option<(&Stage, &Answers)>,
    ) -> Result<Stage, ExperimentError> {
        let mut items = self.items_on_disk()?;
        let mut pending = Vec::new();
        if let Some((generation, answers)) = previous {
            for (call, answer) in generation.calls.iter().zip(answers) {
                let (g, s, _) = self.generation_item(call.item);
                let sensor = &self.plan.sensors[s];
                match answer {
                    Some(CallOutcome::Hit(c) | CallOutcome::Fresh(c)) => {
                        self.add_written(&mut items, g, sensor, c);
                    }
                    None if call.follow_up && self.keeps_generator(g) => {
                        pending.extend(self.pending_reviews(sensor));
                    }
                    _ => {}
                }
            }
        } else if items.is_empty() {
            return Err(ExperimentError::kind(self.nothing_to_review()));
        }
        let repeats = self.repeats();
        let mut calls = Vec::new();
        for r in self.reviewers() {
            for (i, item) in items.iter().enumerate() {
                let Some(official) = &item.official.text else {
                    continue;
                };
                let text = self.review_prompt(item, official);
                for repeat in 0..repeats {
                    let params = &self.plan.reviewing.params;
                    let shape = self.plan.reviewing.criteria.answer_schema();
                    calls.push(PlannedCall {
                        target: r,
                        job: self.job(r, text.clone(), params, (repeat as u32, Some(shape))),
                        item: i * repeats + repeat,
                        group: r as u32,
                        follow_up: false,
                        after: None,
                    });
                }
            }
        }
        Ok(Stage {
            name: REVIEWS,
            calls,
            pending,
            data: Some(StageData::new(ReviewItems(items))),
        })
    }

    /// The generated datasheets of the plan's sensors under `results/`, read.
    fn items_on_disk(&self) -> Result<Vec<Item>, ExperimentError> {
        let mut files = sensors::find_generated(&self.plan.paths.results, &self.plan.sensors);
        if let Some(generator) = &self.plan.reviewing.only_generator {
            files.retain(|f| generated_by(f, generator, &self.catalog));
        }
        let mut items = Vec::new();
        for file in files {
            let generated = std::fs::read_to_string(&file.path).map_err(|source| {
                ExperimentError::kind(ReviewError::Read {
                    what: "generated datasheet",
                    path: file.path.clone(),
                    source,
                })
            })?;
            let official = sensors::load_official(&self.plan.paths.datasheets, &file.sensor);
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
        Ok(items)
    }

    /// Adds a datasheet generator `g` wrote (in this run or, in a plan, cached) unless it is
    /// already on disk.
    fn add_written(&self, items: &mut Vec<Item>, g: usize, sensor: &Sensor, call: &StoredCall) {
        if !self.keeps_generator(g) {
            return;
        }
        let (provider, model) = self.names(g);
        let known = items.iter().any(|i| {
            i.file.sensor == *sensor
                && i.file.provider == provider
                && i.file.model == model
                && i.generated == call.text
        });
        if known {
            return;
        }
        items.push(Item {
            file: GeneratedFile {
                sensor: sensor.clone(),
                provider,
                model,
                stamp: String::new(),
                path: PathBuf::from("(not written yet)"),
            },
            generated: call.text.clone(),
            official: sensors::load_official(&self.plan.paths.datasheets, sensor),
        });
    }

    /// Whether reviews take datasheets of generator `g` (`--generator` may exclude it).
    fn keeps_generator(&self, g: usize) -> bool {
        self.only_generator
            .as_ref()
            .is_none_or(|wanted| *wanted == self.targets[g].reference)
    }

    /// The reviews of a datasheet of `sensor` that is not written yet, bounded.
    fn pending_reviews(&self, sensor: &Sensor) -> Vec<PendingCall> {
        let official = sensors::load_official(&self.plan.paths.datasheets, sensor);
        let Some(official) = official.text else {
            return Vec::new();
        };
        let reviewing = &self.plan.reviewing;
        let generated = self.plan.generation.params.max_tokens.unwrap_or(0);
        let input = tokens_bound(&reviewing.template.text)
            + tokens_bound(&official)
            + tokens_bound(&reviewing.criteria.criteria_text())
            + u64::from(generated);
        let output = u64::from(
            reviewing
                .params
                .max_tokens
                .unwrap_or(crate::dispatch::budget::ASSUMED_MAX_OUTPUT_TOKENS),
        );
        self.reviewers()
            .flat_map(|target| {
                std::iter::repeat_n(
                    PendingCall {
                        target,
                        input_tokens: input,
                        output_tokens: output,
                    },
                    self.repeats(),
                )
            })
            .collect()
    }

    fn nothing_to_review(&self) -> ReviewError {
        ReviewError::Nothing(format!(
            "no generated datasheets under {} for {}{}; write some with `track generate-datasheets --model <provider:name>`",
            self.plan.paths.results.display(),
            self.plan
                .sensors
                .iter()
                .map(|s| format!("{} {}", s.brand, s.sensor))
                .collect::<Vec<_>>()
                .join(", "),
            self.plan
                .reviewing
                .only_generator
                .as_ref()
                .map(|g| format!(" by {g}"))
                .unwrap_or_default()
        ))
    }

    fn review_prompt(&self, item: &Item, official: &str) -> String {
        let reviewing = &self.plan.reviewing;
        let criteria = &reviewing.criteria;
        let last_id = criteria
            .items
            .last()
            .map(|c| c.id.clone())
            .unwrap_or_default();
        reviewing.template.render(&[
            ("brand", &item.file.sensor.brand),
            ("sensor", &item.file.sensor.sensor),
            ("last_id", &last_id),
            ("scale", &criteria.scale_text()),
            ("criteria", &criteria.criteria_text()),
            ("json_keys", &criteria.json_keys_text()),
            ("official_datasheet", official.trim()),
            ("generated_datasheet", item.generated.trim()),
        ])
    }
}

impl Experiment for DatasheetExperiment {
    fn kind(&self) -> ExperimentKind {
        if self.plan.reviewers.is_empty() {
            ExperimentKind::Generate
        } else {
            ExperimentKind::Review
        }
    }

    fn header(&self) -> RunHeader {
        let reviewing = &self.plan.reviewing;
        let (file, spec_sha256) = match &self.plan.file {
            // A run of a command, not of a file, is named by its command line (`track runs`).
            Some((path, sha)) => (Some(path.display().to_string()), Some(sha.clone())),
            None => (None, None),
        };
        let refs = |range: std::ops::Range<usize>| {
            self.targets[range]
                .iter()
                .map(|t| t.reference.clone())
                .collect::<Vec<_>>()
        };
        RunHeader {
            file,
            spec_sha256,
            options: serde_json::json!({
                "generators": refs(0..self.generators),
                "reviewers": refs(self.reviewers()),
                "generator": reviewing.only_generator,
                "repeat": self.plan.repeats,
                "generation_prompt_sha256": self.plan.generation.template.sha256,
                "prompt_sha256": reviewing.template.sha256,
                "criteria_sha256": reviewing.criteria.sha256,
            }),
        }
    }

    fn targets(&self) -> &[Target] {
        &self.targets
    }

    fn budget_usd(&self) -> Option<f64> {
        self.plan.budget_usd
    }

    fn batch(&self) -> bool {
        self.plan.batch
    }

    fn stage(
        &self,
        index: usize,
        previous: Option<(&Stage, &Answers)>,
    ) -> Result<Option<Stage>, ExperimentError> {
        let generates = self.generators > 0;
        let reviews = !self.reviewers().is_empty();
        Ok(match (index, generates, reviews) {
            (0, true, _) => Some(self.generation_stage(reviews)),
            (0, false, true) => Some(self.reviews_stage(None)?),
            (1, true, true) => Some(self.reviews_stage(previous)?),
            _ => None,
        })
    }

    fn begin(
        &mut self,
        store: &mut Store,
        run_id: i64,
        stage: &Stage,
        shard: Shard,
    ) -> Result<Vec<String>, ExperimentError> {
        let Some(items) = review_items(stage) else {
            return Ok(Vec::new());
        };
        // Datasheets without an official one to compare with are recorded as skipped.
        let of_shard =
            |i: &&Item| shard.keeps(&sensor_key(&i.file.sensor.brand, &i.file.sensor.sensor));
        for item in items
            .iter()
            .filter(|i| i.official.text.is_none())
            .filter(of_shard)
        {
            for r in self.reviewers() {
                let record = Record {
                    experiment: self,
                    item,
                    reviewer: r,
                    repeat: 0,
                };
                record.store(store, run_id, None)?;
            }
        }
        Ok(Vec::new())
    }

    fn record(
        &mut self,
        store: &mut Store,
        run_id: i64,
        stage: &Stage,
        outcomes: &[(usize, &CallOutcome)],
    ) -> Result<Vec<String>, ExperimentError> {
        let mut problems = Vec::new();
        for &(i, outcome) in outcomes {
            let call = &stage.calls[i];
            match review_items(stage) {
                None => self.save_generated(store, run_id, call, outcome)?,
                Some(items) => {
                    let record = Record {
                        experiment: self,
                        item: &items[call.item / self.repeats()],
                        reviewer: call.target,
                        repeat: (call.item % self.repeats()) as u32,
                    };
                    problems.extend(record.store(store, run_id, Some(outcome))?);
                }
            }
        }
        Ok(problems)
    }

    fn shard_key(&self, stage: &Stage, index: usize) -> String {
        // A sensor: its datasheets' generation and their reviews go together.
        let call = &stage.calls[index];
        match review_items(stage) {
            None => {
                let sensor = &self.plan.sensors[self.generation_item(call.item).1];
                sensor_key(&sensor.brand, &sensor.sensor)
            }
            Some(items) => {
                let sensor = &items[call.item / self.repeats()].file.sensor;
                sensor_key(&sensor.brand, &sensor.sensor)
            }
        }
    }

    fn label(&self, stage: &Stage, index: usize) -> String {
        let call = &stage.calls[index];
        let model = &self.targets[call.target].reference;
        match review_items(stage) {
            None => {
                let (_, s, _) = self.generation_item(call.item);
                let sensor = &self.plan.sensors[s];
                format!("{model} writing {} {}", sensor.brand, sensor.sensor)
            }
            Some(items) => {
                let file = &items[call.item / self.repeats()].file;
                review_label(
                    model,
                    &file.sensor.brand,
                    &file.sensor.sensor,
                    &format!("{}:{}", file.provider, file.model),
                )
            }
        }
    }

    fn report(
        &self,
        store: &Store,
        summary: &RunSummary,
        options: &ReportOptions,
        out: &mut dyn std::io::Write,
    ) -> Result<(), ExperimentError> {
        super::console::print(store, summary, &self.plan.paths, options, out)
            .map_err(ExperimentError::kind)
    }
}

/// The datasheets of a reviews stage (`None` for the generation stage).
fn review_items(stage: &Stage) -> Option<&[Item]> {
    stage
        .data
        .as_ref()
        .and_then(|d| d.get::<ReviewItems>())
        .map(|items| items.0.as_slice())
}

/// Whether `file` was written by the model `generator` names (by reference or file name).
pub(crate) fn generated_by(file: &GeneratedFile, generator: &str, catalog: &Catalog) -> bool {
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

impl DatasheetExperiment {
    /// Writes (or, for a cached answer already on disk, reuses) the file of a generated
    /// datasheet and records it; a failed call leaves nothing but its error.
    fn save_generated(
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
            cost_usd: answer.cost_usd,
            paid_usd: if hit { Some(0.0) } else { answer.cost_usd },
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

/// The reviews stage's name, as `track runs --errors` lists it.
const REVIEWS: &str = "reviews";

/// A review's call as it is labelled: `openai:gpt-4o-mini reviewing Bosch BME280 by
/// openai:gpt-4o` (the reviewer, the sensor, the datasheet's generator).
fn review_label(reviewer: &str, brand: &str, sensor: &str, generator: &str) -> String {
    format!("{reviewer} reviewing {brand} {sensor} by {generator}")
}

/// The errors found in the answers of run `run_id` (`track runs --errors`): the reviews whose
/// answer could not be parsed, each labelled as its call is. (A reviewer's call that got no
/// answer is listed by the runtime, with the other failed calls.)
pub(crate) fn answer_errors(store: &Store, run_id: i64) -> Result<Vec<RunErrorRow>, StoreError> {
    Ok(store
        .unparsable_reviews(run_id)?
        .into_iter()
        .map(|r| RunErrorRow {
            stage: REVIEWS.to_owned(),
            item: review_label(
                &r.reviewer_ref,
                &r.brand,
                &r.sensor,
                &format!("{}:{}", r.generator_provider, r.generator_model),
            ),
            model_ref: r.reviewer_ref,
            error: format!(
                "unparsable answer ({})",
                r.detail.as_deref().unwrap_or("no JSON object")
            ),
            call_id: r.call_id,
            attempts: r.attempts.unwrap_or(0),
        })
        .collect())
}

/// One review to record: a datasheet, its reviewer and the sample.
struct Record<'a> {
    experiment: &'a DatasheetExperiment,
    item: &'a Item,
    reviewer: usize,
    repeat: u32,
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
    fn store(
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
                row.parse_status = ParseStatus::Error;
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
            row.parse_status = ParseStatus::Skipped;
        }
        if let Some(call) = call {
            let hit = matches!(outcome, Some(CallOutcome::Hit(_)));
            row.call_id = Some(call.id);
            row.cache_hit = hit;
            row.cost_usd = call.cost_usd;
            row.paid_usd = if hit { Some(0.0) } else { call.cost_usd };
        }
        // A review is dated by the answer it stores: a re-run served from the cache stores the
        // same answer, keeps its first time and appends no duplicate CSV row; a review asked
        // again (`--no-cache`) stores a new answer, dated by its new call.
        row.reviewed_at = store
            .first_review_time(&key, row.call_id)?
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
            parse_status: parsed.status,
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

/// A sensor as `--shard` keys it: its brand and name.
fn sensor_key(brand: &str, sensor: &str) -> String {
    format!("{brand}\x1f{sensor}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::{GENERATION_PROMPT, REVIEW_PROMPT};

    /// gpt-4o writes the datasheets of two sensors, one with an official datasheet; haiku
    /// reviews them. Files live under `dir`.
    fn experiment(dir: &Path) -> DatasheetExperiment {
        let paths = Paths {
            sensors: dir.join("sensors.csv"),
            datasheets: dir.join("datasheet"),
            results: dir.join("results"),
            reviews: dir.join("results/reviews"),
        };
        std::fs::create_dir_all(&paths.datasheets).unwrap();
        std::fs::write(paths.datasheets.join("Bosch_BME280.md"), "# BME280\n").unwrap();
        let sensor = |brand: &str, sensor: &str| Sensor {
            brand: brand.into(),
            sensor: sensor.into(),
        };
        let plan = DatasheetPlan {
            file: None,
            generators: vec!["openai:gpt-4o".into()],
            reviewers: vec!["anthropic:claude-3-5-haiku".into()],
            sensors: vec![sensor("Bosch", "BME280"), sensor("Acme", "X1")],
            paths,
            generation: Generation {
                template: Template::load(None, GENERATION_PROMPT, &["brand", "sensor"]).unwrap(),
                params: SamplingParams::default(),
            },
            reviewing: Reviewing {
                template: Template::load(None, REVIEW_PROMPT, &[]).unwrap(),
                criteria: Criteria::builtin(),
                params: SamplingParams::default(),
                only_generator: None,
            },
            repeats: 1,
            budget_usd: None,
            batch: false,
        };
        DatasheetExperiment::new(plan, &Catalog::builtin()).unwrap()
    }

    /// An answer stored as a call, as the executor would have.
    fn answered(store: &mut Store, key: &str, text: &str) -> CallOutcome {
        CallOutcome::Fresh(Box::new(store.insert_answered(key, text)))
    }

    /// An answer stored as a call, dated `at` (the time a review of it is given).
    fn answered_at(store: &mut Store, key: &str, text: &str, at: &str) -> CallOutcome {
        let CallOutcome::Fresh(mut call) = answered(store, key, text) else {
            unreachable!("answered makes fresh outcomes")
        };
        call.created_at = at.to_owned();
        CallOutcome::Fresh(call)
    }

    fn full_answer(score: u8) -> String {
        let mut parts: Vec<String> = (1..=16)
            .map(|i| format!("\"p{i}_score\": {score}, \"p{i}_justification\": \"reason {i}\""))
            .collect();
        parts.push(format!(
            "\"overall_score\": {score}, \"overall_justification\": \"fine\""
        ));
        format!("{{{}}}", parts.join(", "))
    }

    #[test]
    fn stage_plans_generation_then_a_review_of_each_datasheet_with_an_official_one() {
        let dir = tempfile::tempdir().unwrap();
        let e = experiment(dir.path());
        assert_eq!(e.kind(), ExperimentKind::Review);
        let generation = e.stage(0, None).unwrap().unwrap();
        assert_eq!(generation.name, "generation");
        let labels: Vec<String> = (0..generation.calls.len())
            .map(|i| e.label(&generation, i))
            .collect();
        assert_eq!(
            labels,
            [
                "openai:gpt-4o writing Bosch BME280",
                "openai:gpt-4o writing Acme X1"
            ]
        );
        assert!(
            generation
                .calls
                .iter()
                .all(|c| c.follow_up && c.target == 0)
        );
        // Not answered yet: the reviews are bounded, not planned.
        let unanswered = [None, None];
        let reviews = e
            .stage(1, Some((&generation, &unanswered)))
            .unwrap()
            .unwrap();
        assert_eq!(reviews.name, "reviews");
        assert!(reviews.calls.is_empty());
        assert_eq!(
            reviews.pending.len(),
            1,
            "Acme X1 has no official datasheet"
        );
        assert_eq!(reviews.pending[0].target, 1);
        assert!(e.stage(2, None).unwrap().is_none());
    }

    #[test]
    fn record_stores_datasheets_then_reviews_with_each_status() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = experiment(dir.path());
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::experiment::ExperimentKind::Review, None, None, "{}")
            .unwrap();
        let generation = e.stage(0, None).unwrap().unwrap();
        let written = [
            answered(&mut store, "g0", "# BME280, as written\n"),
            answered(&mut store, "g1", "# X1, as written\n"),
        ];
        let outcomes: Vec<(usize, &CallOutcome)> = written.iter().enumerate().collect();
        e.record(&mut store, run, &generation, &outcomes).unwrap();
        assert_eq!(store.generated_paths(run).unwrap().len(), 2);

        let answers = written.map(Some);
        let reviews = e.stage(1, Some((&generation, &answers))).unwrap().unwrap();
        assert_eq!(reviews.calls.len(), 1, "one datasheet has an official one");
        assert_eq!(
            e.label(&reviews, 0),
            "anthropic:haiku 3.5 reviewing Bosch BME280 by openai:gpt-4o"
        );
        e.begin(&mut store, run, &reviews, crate::experiment::Shard::WHOLE)
            .unwrap();
        let garbage = answered_at(&mut store, "r0", "no JSON here", "2026-01-01T10:00:00.000Z");
        let failed = CallOutcome::Failed {
            call_id: None,
            error: "HTTP 500".into(),
            attempts: 3,
        };
        // The same review asked again (`--no-cache`): a new call, answered a day later.
        let good = answered_at(
            &mut store,
            "r1",
            &full_answer(4),
            "2026-01-02T10:00:00.000Z",
        );
        let mut problems = Vec::new();
        for outcome in [&garbage, &failed, &good] {
            problems.extend(
                e.record(&mut store, run, &reviews, &[(0, outcome)])
                    .unwrap(),
            );
        }
        assert_eq!(problems.len(), 1, "the unparsable answer: {problems:?}");
        assert!(problems[0].contains("unparsable answer"), "{problems:?}");
        let rows = store.review_rows(&[run]).unwrap();
        let got: Vec<(&str, ParseStatus, Option<i64>, usize)> = rows
            .iter()
            .map(|r| {
                (
                    r.sensor.as_str(),
                    r.parse_status,
                    r.overall_score,
                    r.scores.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("X1", ParseStatus::Skipped, None, 16),
                ("BME280", ParseStatus::Failed, None, 16),
                ("BME280", ParseStatus::Error, None, 16),
                ("BME280", ParseStatus::Ok, Some(4), 16),
            ]
        );
        assert_eq!(rows[2].detail.as_deref(), Some("HTTP 500"));
        assert_eq!(rows[3].average_score, Some(4.0));
        assert!(rows.iter().all(|r| r.reviewer_ref == "anthropic:haiku 3.5"));
        // Each review is dated by the answer it stores: the re-asked one by its own call,
        // not by the first (unparsable) review of the same datasheet.
        assert_eq!(rows[1].reviewed_at, "2026-01-01T10:00:00.000Z");
        assert_eq!(rows[3].reviewed_at, "2026-01-02T10:00:00.000Z");

        // A re-run served from the cache stores the same answer: it keeps the time first
        // recorded with it, whatever the call says now (no duplicate CSV row).
        let CallOutcome::Fresh(mut call) = good else {
            unreachable!("answered_at makes fresh outcomes")
        };
        call.created_at = "2026-01-03T10:00:00.000Z".into();
        e.record(&mut store, run, &reviews, &[(0, &CallOutcome::Hit(call))])
            .unwrap();
        let rows = store.review_rows(&[run]).unwrap();
        assert_eq!(rows[4].reviewed_at, "2026-01-02T10:00:00.000Z");
    }
}
