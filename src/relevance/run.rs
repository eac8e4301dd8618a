//! A WITH vs WITHOUT comparison run: every image is shown to the model with each prompt
//! variant (and `repeat` trials), answers become stored predictions, and the metrics of both
//! variants come from what was stored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::Catalog;
use crate::llm::{CallOutcome, ChatRequest, Executor, Image, Message, Part, Role, SamplingParams};
use crate::review::prompt::Template;
use crate::store::{PredictionRow, RunStatus, Store, lock};

use super::metrics::{Scored, VariantMetrics};
use super::parse::{Variant, parse_answer};
use super::predicates::Predicate;

/// The built-in prompts of the two variants.
pub const WITH_PROMPT: &str = include_str!("../../prompts/relevance_with_uncertain.txt");
pub const WITHOUT_PROMPT: &str = include_str!("../../prompts/relevance_without_uncertain.txt");

/// A relevance experiment as a file (`kind: relevance`) for `track run`; the
/// `relevance compare` command builds the same from its flags.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelevanceExperiment {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The vision model (`provider:name`).
    pub model: String,
    /// A glob pattern of the images.
    pub images: String,
    pub ground_truth: PathBuf,
    #[serde(default)]
    pub temperature: f64,
    #[serde(default = "one")]
    pub repeat: u32,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default = "default_out")]
    pub out: PathBuf,
    /// Ask about all predicates over these colours (closed world) instead of those listed.
    #[serde(default)]
    pub blocks: Option<Vec<String>>,
}

fn one() -> u32 {
    1
}
fn default_max_tokens() -> u32 {
    1024
}
fn default_out() -> PathBuf {
    PathBuf::from("results/relevance")
}

impl RelevanceExperiment {
    /// Parses an experiment file's text; `path` names it in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Self, String> {
        serde_saphyr::from_str(text).map_err(|e| {
            format!(
                "{}: not a valid relevance experiment: {}",
                path.display(),
                e.to_string().trim().replace('\n', " ")
            )
        })
    }
}

/// Ground truth: image stem -> predicate -> true or false.
pub type GroundTruth = BTreeMap<String, BTreeMap<Predicate, bool>>;

/// Reads a ground-truth JSON file (`{"state_0000": {"clear(red:block)": 1, ...}}`).
pub fn load_ground_truth(path: &Path) -> Result<GroundTruth, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the ground truth {}: {e}", path.display()))?;
    let raw: BTreeMap<String, BTreeMap<String, serde_json::Value>> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a ground-truth file ({e})", path.display()))?;
    raw.into_iter()
        .map(|(image, predicates)| {
            let parsed = predicates
                .into_iter()
                .map(|(p, v)| {
                    let predicate = p
                        .parse::<Predicate>()
                        .map_err(|e| format!("{}: {image}: {e}", path.display()))?;
                    let truth = match v.as_u64() {
                        Some(0) => false,
                        Some(1) => true,
                        _ => {
                            return Err(format!(
                                "{}: {image}: `{p}` must be 0 or 1, not {v}",
                                path.display()
                            ));
                        }
                    };
                    Ok((predicate, truth))
                })
                .collect::<Result<BTreeMap<_, _>, String>>()?;
            Ok((image, parsed))
        })
        .collect()
}

/// What to compare.
#[derive(Debug, Clone)]
pub struct ComparePlan {
    pub model: String,
    pub images: Vec<PathBuf>,
    pub truth: GroundTruth,
    /// Ask about every predicate over these block colours instead of those the ground truth
    /// lists; predicates the ground truth does not list are false (the closed world).
    pub blocks: Option<Vec<String>>,
    pub repeat: u32,
    pub params: SamplingParams,
    pub with_prompt: Template,
    pub without_prompt: Template,
}

/// The outcome of a comparison run.
#[derive(Debug, Clone)]
pub struct CompareReport {
    pub run_id: i64,
    pub with: VariantMetrics,
    pub without: VariantMetrics,
    /// Invalid predictions per variant (WITH, WITHOUT).
    pub invalid: [u64; 2],
    pub calls: usize,
    pub cache_hits: usize,
    pub cost_usd: f64,
    pub paid_usd: f64,
    pub errors: Vec<String>,
    /// The stored predictions of the run.
    pub rows: Vec<PredictionRow>,
}

/// Runs the comparison and measures both variants from the stored predictions.
pub async fn compare(
    store: &Arc<Mutex<Store>>,
    executor: &Executor,
    catalog: &Catalog,
    plan: &ComparePlan,
    show_progress: bool,
) -> Result<CompareReport, String> {
    let target = catalog.target(&plan.model).map_err(|e| e.to_string())?;
    let reference = target.spec.reference();
    // Each image with its stem, bytes and predicates.
    let mut items = Vec::new();
    for path in &plan.images {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(truth) = plan.truth.get(&stem) else {
            return Err(format!(
                "{} has no ground truth (no `{stem}` in the ground-truth file)",
                path.display()
            ));
        };
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let media_type = match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("jpg" | "jpeg") => "image/jpeg",
            Some("webp") => "image/webp",
            Some("gif") => "image/gif",
            _ => "image/png",
        };
        let truth: BTreeMap<Predicate, bool> = match &plan.blocks {
            Some(colours) => Predicate::all(colours)
                .into_iter()
                .map(|p| {
                    let value = truth.get(&p).copied().unwrap_or(false);
                    (p, value)
                })
                .collect(),
            None => truth.clone(),
        };
        items.push((stem, Image::new(media_type, bytes), truth));
    }
    if items.is_empty() {
        return Err("no images to compare; check --images".into());
    }
    let mut jobs = Vec::new();
    let mut job_meta = Vec::new();
    for (i, (_, image, truth)) in items.iter().enumerate() {
        let list: Vec<String> = truth.keys().map(|p| format!("- {p}")).collect();
        for variant in [Variant::With, Variant::Without] {
            let template = if variant == Variant::With {
                &plan.with_prompt
            } else {
                &plan.without_prompt
            };
            let text = template.render(&[("predicates", &list.join("\n"))]);
            let request = ChatRequest {
                model: target.spec.model.clone(),
                system: None,
                messages: vec![Message {
                    role: Role::User,
                    parts: vec![Part::Text(text), Part::Image(image.clone())],
                }],
                params: plan.params.clone(),
            };
            for trial in 0..plan.repeat.max(1) {
                jobs.push(target.job(request.clone(), trial));
                job_meta.push((i, variant, trial));
            }
        }
    }
    if let Some(reason) = &target.blocked
        && !executor.all_cached(&jobs).map_err(|e| e.to_string())?
    {
        return Err(reason.clone());
    }
    let (run_id, image_shas) = {
        let s = lock(store);
        let options =
            serde_json::json!({"model": reference, "repeat": plan.repeat, "params": plan.params})
                .to_string();
        let run_id = s
            .create_run("relevance", None, None, &options)
            .map_err(|e| e.to_string())?;
        let mut shas = Vec::new();
        for (_, image, _) in &items {
            shas.push(
                s.put_blob(&image.media_type, &image.data)
                    .map_err(|e| e.to_string())?,
            );
        }
        (run_id, shas)
    };
    let progress = crate::output::progress_bar(jobs.len(), show_progress);
    let mut report = CompareReport {
        run_id,
        with: VariantMetrics::measure(Vec::new()),
        without: VariantMetrics::measure(Vec::new()),
        invalid: [0, 0],
        calls: jobs.len(),
        cache_hits: 0,
        cost_usd: 0.0,
        paid_usd: 0.0,
        errors: Vec::new(),
        rows: Vec::new(),
    };
    let mut failure = None;
    executor
        .run(jobs, |j, outcome| {
            progress.inc(1);
            let (i, variant, trial) = job_meta[j];
            let (stem, _, truth) = &items[i];
            let call = match &outcome {
                CallOutcome::Failed { error, .. } => {
                    report
                        .errors
                        .push(format!("{stem} ({}): {error}", variant.name()));
                    return;
                }
                CallOutcome::Hit(call) | CallOutcome::Fresh(call) => call,
            };
            report.cost_usd += call.cost_usd;
            if matches!(outcome, CallOutcome::Hit(_)) {
                report.cache_hits += 1;
            } else {
                report.paid_usd += call.cost_usd;
            }
            let asked: Vec<Predicate> = truth.keys().cloned().collect();
            let parsed = parse_answer(&call.text, &asked, variant);
            let rows: Vec<PredictionRow> = parsed
                .scores
                .iter()
                .map(|(predicate, score)| PredictionRow {
                    run_id,
                    model_ref: reference.clone(),
                    image: stem.clone(),
                    image_sha256: image_shas[i].clone(),
                    predicate: predicate.to_string(),
                    predicate_kind: predicate.kind().to_owned(),
                    variant: variant.name().to_owned(),
                    trial,
                    score: score.as_ref().ok().copied(),
                    invalid_reason: score.as_ref().err().cloned(),
                    truth: truth[predicate],
                    call_id: Some(call.id),
                    cache_hit: matches!(outcome, CallOutcome::Hit(_)),
                })
                .collect();
            if let Err(e) = lock(store).insert_predictions(&rows) {
                failure.get_or_insert(e.to_string());
            }
        })
        .await
        .map_err(|e| e.to_string())?;
    progress.finish_and_clear();
    let status = if failure.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Completed
    };
    let s = lock(store);
    s.finish_run(run_id, status).map_err(|e| e.to_string())?;
    if let Some(e) = failure {
        return Err(e);
    }
    let rows = s.predictions(&[run_id]).map_err(|e| e.to_string())?;
    let measured = measure_rows(&rows);
    report.with = measured.0;
    report.without = measured.1;
    report.invalid = measured.2;
    report.rows = rows;
    Ok(report)
}

/// Metrics of WITH and WITHOUT, and their invalid counts, from stored predictions.
pub fn measure_rows(rows: &[PredictionRow]) -> (VariantMetrics, VariantMetrics, [u64; 2]) {
    let mut invalid = [0u64; 2];
    let mut scored: [Vec<Scored>; 2] = [Vec::new(), Vec::new()];
    for r in rows {
        let v = usize::from(r.variant != Variant::With.name());
        match r.score {
            Some(score) => scored[v].push(Scored {
                score,
                truth: r.truth,
            }),
            None => invalid[v] += 1,
        }
    }
    let [with, without] = scored;
    (
        VariantMetrics::measure(with),
        VariantMetrics::measure(without),
        invalid,
    )
}
