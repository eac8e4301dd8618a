//! A WITH vs WITHOUT comparison as an experiment of the runtime: every image is shown to the
//! model with each prompt variant (and `repeat` trials), answers become stored predictions,
//! and the metrics of both variants come from what was stored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::RelevanceError;
use super::parse::{answer_schema, parse_answer};
use super::predicates::Predicate;
use crate::config::{Catalog, Config};
use crate::dispatch::CallOutcome;
use crate::experiment::{
    Answers, Experiment, ExperimentError, ExperimentKind, FileBudget, Override, Overrides,
    PlannedCall, ReportOptions, RunHeader, RunSummary, Shard, Stage, Target, check_size,
};
use crate::llm::{ChatRequest, Image, Message, Part, Role, SamplingParams};
use crate::prompt::Template;
use crate::store::{PredictionRow, Store, Variant};

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
    /// The prompt templates of the two variants (default: the built-in blocks-world ones).
    /// `{predicates}` is required; `{domain}` is replaced by `domain`.
    #[serde(default)]
    pub prompt_with: Option<PathBuf>,
    #[serde(default)]
    pub prompt_without: Option<PathBuf>,
    /// What the images show, for the `{domain}` placeholder of the prompts.
    #[serde(default)]
    pub domain: Option<String>,
    /// The predicates to ask about every image, instead of those its ground truth lists;
    /// `world` says what an unlisted one is.
    #[serde(default)]
    pub predicates: Option<Vec<String>>,
    /// With `predicates`: `closed` (a predicate the ground truth does not list is false) or
    /// `open` (it is unknown, and not asked).
    #[serde(default)]
    pub world: Option<World>,
    /// The most a run may spend, in USD (`--budget` wins over it).
    #[serde(default)]
    pub budget: Option<FileBudget>,
    /// Send the calls through batch APIs, at half price (`--batch` asks the same).
    #[serde(default, deserialize_with = "crate::experiment::batch_flag")]
    pub batch: bool,
}

/// What a predicate the ground truth does not list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum World {
    /// False: the ground truth lists every true predicate.
    Closed,
    /// Unknown: only predicates the ground truth lists are asked.
    Open,
}

/// Which predicates each image is asked about.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Those its ground truth lists.
    Listed,
    /// These, each image's unlisted ones read by the world assumption.
    These(Vec<Predicate>, World),
}

/// Reads a predicates file: one ground predicate a line; blank lines and `#` comments skipped.
pub(crate) fn read_predicates(path: &Path) -> Result<Vec<String>, RelevanceError> {
    let text = std::fs::read_to_string(path).map_err(|source| RelevanceError::Read {
        what: "the predicates file",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Loads a relevance experiment file for `track run`; `--models` may name its one model.
pub fn from_file(
    path: &Path,
    text: &str,
    config: &Config,
    overrides: &Overrides,
) -> Result<Box<dyn Experiment>, ExperimentError> {
    let mut file = RelevanceExperiment::parse(path, text).map_err(ExperimentError::kind)?;
    if let Some(models) = overrides.models.as_deref() {
        match models {
            [model] => file.model = model.trim().to_owned(),
            _ => {
                return Err(ExperimentError::Unsupported {
                    kind: ExperimentKind::Relevance,
                    option: "--models with several models",
                    why: "an experiment compares the two prompt variants of one model; run it once per model",
                });
            }
        }
    }
    let sha = crate::hash::sha256_hex(text.as_bytes());
    let experiment = file.plan(Some((path.to_path_buf(), sha)), config, overrides)?;
    Ok(Box::new(experiment))
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
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, RelevanceError> {
        serde_saphyr::from_str(text)
            .map_err(|e| RelevanceError::File(crate::yaml::describe(path, text, &e)))
    }

    /// The experiment resolved: images read, ground truth loaded, the model found.
    pub(crate) fn plan(
        &self,
        file: Option<(PathBuf, String)>,
        config: &Config,
        overrides: &Overrides,
    ) -> Result<CompareExperiment, ExperimentError> {
        overrides.refuse(
            ExperimentKind::Relevance,
            &[(Override::Energy, "relevance experiments record no energy")],
        )?;
        let kind = ExperimentError::kind;
        let truth = load_ground_truth(&self.ground_truth).map_err(kind)?;
        let paths = find_images(&self.images).map_err(kind)?;
        let blocks: Option<Vec<String>> = self
            .blocks
            .as_ref()
            .map(|b| b.iter().map(|c| c.trim().to_ascii_lowercase()).collect());
        let asked = self.asked(blocks.as_deref()).map_err(kind)?;
        let images = load_images(&paths, &truth, &asked).map_err(kind)?;
        CompareExperiment::new(
            ComparePlan {
                file,
                model: self.model.trim().to_owned(),
                images,
                repeat: overrides.repeat_or(self.repeat)?,
                params: SamplingParams {
                    temperature: Some(self.temperature),
                    max_tokens: Some(self.max_tokens),
                    ..SamplingParams::default()
                },
                with_prompt: Template::load(
                    self.prompt_with.as_deref(),
                    WITH_PROMPT,
                    &["predicates"],
                )
                .map_err(|e| kind(RelevanceError::from(e)))?,
                without_prompt: Template::load(
                    self.prompt_without.as_deref(),
                    WITHOUT_PROMPT,
                    &["predicates"],
                )
                .map_err(|e| kind(RelevanceError::from(e)))?,
                domain: self.domain.clone().unwrap_or_default(),
                out: self.out.clone(),
                budget_usd: self.budget.map(|b| b.0),
                batch: self.batch,
            },
            &config.catalog,
        )
    }
}

impl RelevanceExperiment {
    /// The predicates asked: `--blocks` (closed world), a list (with its explicit world), or
    /// those each ground truth lists.
    fn asked(&self, blocks: Option<&[String]>) -> Result<Asked, RelevanceError> {
        match (blocks, &self.predicates, self.world) {
            (Some(_), Some(_), _) => Err(RelevanceError::Predicates(
                "give --blocks or a predicate list, not both".into(),
            )),
            (Some(colours), None, world) => Ok(Asked::These(
                Predicate::all(colours),
                world.unwrap_or(World::Closed),
            )),
            (None, Some(_), None) => Err(RelevanceError::Predicates(
                "a predicate list needs its world: --world closed (a predicate the ground truth \
                 does not list is false) or --world open (it is unknown, and not asked)"
                    .into(),
            )),
            (None, Some(list), Some(world)) => {
                let predicates = list
                    .iter()
                    .map(|p| p.parse::<Predicate>().map_err(RelevanceError::Predicates))
                    .collect::<Result<Vec<_>, _>>()?;
                if predicates.is_empty() {
                    return Err(RelevanceError::Predicates(
                        "the predicate list is empty".into(),
                    ));
                }
                Ok(Asked::These(predicates, world))
            }
            (None, None, _) => Ok(Asked::Listed),
        }
    }
}

/// Ground truth: image stem -> predicate -> true or false.
pub type GroundTruth = BTreeMap<String, BTreeMap<Predicate, bool>>;

/// Reads a ground-truth JSON file (`{"state_0000": {"clear(red:block)": 1, ...}}`).
pub(crate) fn load_ground_truth(path: &Path) -> Result<GroundTruth, RelevanceError> {
    let text = std::fs::read_to_string(path).map_err(|source| RelevanceError::Read {
        what: "the ground truth",
        path: path.to_path_buf(),
        source,
    })?;
    let invalid = |message: String| RelevanceError::GroundTruth {
        path: path.to_path_buf(),
        message,
    };
    let raw: BTreeMap<String, BTreeMap<String, serde_json::Value>> = serde_json::from_str(&text)
        .map_err(|e| invalid(format!("not a ground-truth file ({e})")))?;
    raw.into_iter()
        .map(|(image, predicates)| {
            let parsed = predicates
                .into_iter()
                .map(|(p, v)| {
                    let predicate = p
                        .parse::<Predicate>()
                        .map_err(|e| invalid(format!("{image}: {e}")))?;
                    let truth = match v.as_u64() {
                        Some(0) => false,
                        Some(1) => true,
                        _ => {
                            return Err(invalid(format!("{image}: `{p}` must be 0 or 1, not {v}")));
                        }
                    };
                    Ok((predicate, truth))
                })
                .collect::<Result<BTreeMap<_, _>, RelevanceError>>()?;
            Ok((image, parsed))
        })
        .collect()
}

/// One image of a comparison: its stem, bytes and the predicates asked with their truth.
#[derive(Debug, Clone)]
pub struct ImageItem {
    pub stem: String,
    pub image: Image,
    pub truth: BTreeMap<Predicate, bool>,
}

/// What to compare, resolved.
#[derive(Debug, Clone)]
pub struct ComparePlan {
    /// The experiment file, when it came from one, with its hash.
    pub file: Option<(PathBuf, String)>,
    pub model: String,
    pub images: Vec<ImageItem>,
    pub repeat: u32,
    pub params: SamplingParams,
    pub with_prompt: Template,
    pub without_prompt: Template,
    /// The `{domain}` text of the prompts.
    pub domain: String,
    /// Folder of the CSV files.
    pub out: PathBuf,
    /// The most a run may spend, in USD (the file's `budget:`).
    pub budget_usd: Option<f64>,
    /// Whether its calls go through batch APIs (the file's `batch: true`).
    pub batch: bool,
}

/// The files a `--images` pattern (or plain path) names, in order.
pub(crate) fn find_images(pattern: &str) -> Result<Vec<PathBuf>, RelevanceError> {
    let bad_pattern = |e: glob::PatternError| RelevanceError::Pattern {
        pattern: pattern.to_owned(),
        message: e.to_string(),
    };
    let mut images: Vec<PathBuf> = glob::glob(pattern)
        .map_err(bad_pattern)?
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    images.sort();
    if images.is_empty() {
        return Err(RelevanceError::NoImages(pattern.to_owned()));
    }
    Ok(images)
}

/// Reads each image with the truth of the predicates it is asked about (`asked`). The media
/// type comes from the bytes.
pub(crate) fn load_images(
    paths: &[PathBuf],
    truth: &GroundTruth,
    asked: &Asked,
) -> Result<Vec<ImageItem>, RelevanceError> {
    let mut items = Vec::new();
    for path in paths {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(listed) = truth.get(&stem) else {
            return Err(RelevanceError::NoTruth {
                path: path.clone(),
                stem,
            });
        };
        let bytes = std::fs::read(path).map_err(|source| RelevanceError::Read {
            what: "the image",
            path: path.clone(),
            source,
        })?;
        let media_type =
            media_type(&bytes).ok_or_else(|| RelevanceError::NotAnImage { path: path.clone() })?;
        let truth = match asked {
            Asked::These(predicates, World::Closed) => predicates
                .iter()
                .map(|p| (p.clone(), listed.get(p).copied().unwrap_or(false)))
                .collect(),
            Asked::These(predicates, World::Open) => predicates
                .iter()
                .filter_map(|p| listed.get(p).map(|&t| (p.clone(), t)))
                .collect(),
            Asked::Listed => listed.clone(),
        };
        items.push(ImageItem {
            stem,
            image: Image::new(media_type, bytes),
            truth,
        });
    }
    Ok(items)
}

/// The media type of image bytes every wire format accepts (PNG, JPEG, GIF, WebP), from their
/// first bytes; `None` for anything else.
pub(crate) fn media_type(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some("image/png"),
        [0xff, 0xd8, 0xff, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// A relevance comparison resolved for the runtime.
#[derive(Debug, Clone)]
pub struct CompareExperiment {
    plan: ComparePlan,
    targets: Vec<Target>,
}

impl CompareExperiment {
    /// Resolves the plan's model.
    pub(crate) fn new(plan: ComparePlan, catalog: &Catalog) -> Result<Self, ExperimentError> {
        let target = Target::resolve(catalog, &plan.model)?;
        if !target.spec.vision {
            return Err(ExperimentError::kind(RelevanceError::NoVision(
                target.reference.clone(),
            )));
        }
        check_size(plan.images.len() as u64 * 2 * u64::from(plan.repeat))?;
        Ok(Self {
            plan,
            targets: vec![target],
        })
    }

    fn repeats(&self) -> usize {
        self.plan.repeat.max(1) as usize
    }

    /// Image, variant and trial of a call's item.
    fn item(&self, item: usize) -> (usize, Variant, u32) {
        let repeats = self.repeats();
        let variant = if (item / repeats).is_multiple_of(2) {
            Variant::With
        } else {
            Variant::Without
        };
        (item / (2 * repeats), variant, (item % repeats) as u32)
    }

    /// Every image with each variant's prompt, `repeat` trials each.
    fn predictions_stage(&self) -> Stage {
        let target = &self.targets[0];
        let mut calls = Vec::new();
        for (i, item) in self.plan.images.iter().enumerate() {
            let list: Vec<String> = item.truth.keys().map(|p| format!("- {p}")).collect();
            let asked: Vec<Predicate> = item.truth.keys().cloned().collect();
            for (v, variant) in [Variant::With, Variant::Without].into_iter().enumerate() {
                let template = match variant {
                    Variant::With => &self.plan.with_prompt,
                    Variant::Without => &self.plan.without_prompt,
                };
                let text = template.render(&[
                    ("predicates", &list.join("\n")),
                    ("domain", &self.plan.domain),
                ]);
                let request = ChatRequest {
                    tools: None,
                    model: target.spec.model.as_str().into(),
                    schema: None,
                    system: None,
                    messages: vec![Message {
                        role: Role::User,
                        parts: vec![Part::Text(text), Part::Image(item.image.clone())],
                    }]
                    .into(),
                    params: self.plan.params.clone().into(),
                };
                for trial in 0..self.repeats() {
                    calls.push(PlannedCall {
                        target: 0,
                        job: target.shaped_job(
                            request.clone(),
                            answer_schema(&asked, variant),
                            trial as u32,
                        ),
                        item: (i * 2 + v) * self.repeats() + trial,
                        group: 0,
                        follow_up: false,
                        after: None,
                    });
                }
            }
        }
        Stage {
            name: "predictions",
            calls,
            ..Stage::default()
        }
    }

    /// The predictions of one answer.
    fn predictions(&self, run_id: i64, item: usize, outcome: &CallOutcome) -> Vec<PredictionRow> {
        let Some(call) = outcome.call() else {
            return Vec::new();
        };
        let (i, variant, trial) = self.item(item);
        let image = &self.plan.images[i];
        let asked: Vec<Predicate> = image.truth.keys().cloned().collect();
        let parsed = parse_answer(&call.text, &asked, variant);
        let template = match variant {
            Variant::With => &self.plan.with_prompt,
            Variant::Without => &self.plan.without_prompt,
        };
        parsed
            .scores
            .iter()
            .map(|(predicate, score)| PredictionRow {
                run_id,
                model_ref: self.targets[0].reference.clone(),
                image: image.stem.clone(),
                image_sha256: image.image.sha256.clone(),
                predicate: predicate.to_string(),
                predicate_kind: predicate.kind().to_owned(),
                variant,
                trial,
                score: score.as_ref().ok().copied(),
                invalid_reason: score.as_ref().err().cloned(),
                truth: image.truth[predicate],
                call_id: Some(call.id),
                cache_hit: matches!(outcome, CallOutcome::Hit(_)),
                prompt_sha256: Some(template.sha256.clone()),
            })
            .collect()
    }
}

impl Experiment for CompareExperiment {
    fn kind(&self) -> ExperimentKind {
        ExperimentKind::Relevance
    }

    fn header(&self) -> RunHeader {
        let (file, spec_sha256) = match &self.plan.file {
            Some((path, sha)) => (Some(path.display().to_string()), Some(sha.clone())),
            None => (None, None),
        };
        RunHeader {
            file,
            spec_sha256,
            options: serde_json::json!({
                "model": self.targets[0].reference,
                "repeat": self.plan.repeat,
                "params": self.plan.params,
                "images": self.plan.images.len(),
                "prompt_with_sha256": self.plan.with_prompt.sha256,
                "prompt_without_sha256": self.plan.without_prompt.sha256,
                "domain": self.plan.domain,
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
        _previous: Option<(&Stage, &Answers)>,
    ) -> Result<Option<Stage>, ExperimentError> {
        Ok((index == 0).then(|| self.predictions_stage()))
    }

    fn begin(
        &mut self,
        store: &mut Store,
        _run_id: i64,
        _stage: &Stage,
        _shard: Shard,
    ) -> Result<Vec<String>, ExperimentError> {
        // The images are stored once, by hash; predictions point at them.
        for item in &self.plan.images {
            store.put_blob(&item.image.media_type, &item.image.data)?;
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
        let rows: Vec<PredictionRow> = outcomes
            .iter()
            .flat_map(|&(i, outcome)| self.predictions(run_id, stage.calls[i].item, outcome))
            .collect();
        store.insert_predictions(&rows)?;
        Ok(Vec::new())
    }

    fn shard_key(&self, stage: &Stage, index: usize) -> String {
        // An image: its WITH and WITHOUT trials go together (McNemar pairs them).
        let (i, _, _) = self.item(stage.calls[index].item);
        self.plan.images[i].stem.clone()
    }

    fn label(&self, stage: &Stage, index: usize) -> String {
        let (i, variant, trial) = self.item(stage.calls[index].item);
        let mut label = format!("{} ({})", self.plan.images[i].stem, variant.name());
        if self.repeats() > 1 {
            label.push_str(&format!(" trial {}", trial + 1));
        }
        label
    }

    fn report(
        &self,
        store: &Store,
        summary: &RunSummary,
        options: &ReportOptions,
        out: &mut dyn std::io::Write,
    ) -> Result<(), ExperimentError> {
        super::console::print_run(store, summary, &self.plan.out, options, out)
            .map_err(ExperimentError::kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoredCall;

    /// A 1x1 PNG's first bytes: enough for its media type.
    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 1];

    /// Two images, each asked two predicates, `repeat` trials, with gpt-4o.
    fn experiment(repeat: u32) -> CompareExperiment {
        let image = |stem: &str, byte: u8, truths: [bool; 2]| ImageItem {
            stem: stem.into(),
            image: Image::new("image/png", [PNG, &[byte]].concat()),
            truth: ["clear(red:block)", "on(red:block,blue:block)"]
                .into_iter()
                .zip(truths)
                .map(|(p, t)| (p.parse().unwrap(), t))
                .collect(),
        };
        let template = |builtin| Template::load(None, builtin, &["predicates"]).unwrap();
        let plan = ComparePlan {
            file: None,
            model: "openai:gpt-4o".into(),
            images: vec![
                image("state_0", 0, [true, false]),
                image("state_1", 1, [false, true]),
            ],
            repeat,
            params: SamplingParams::default(),
            with_prompt: template(WITH_PROMPT),
            without_prompt: template(WITHOUT_PROMPT),
            domain: String::new(),
            out: PathBuf::from("unused"),
            budget_usd: None,
            batch: false,
        };
        CompareExperiment::new(plan, &Catalog::builtin()).unwrap()
    }

    /// An answer stored as a call, as the executor would have.
    fn answered(store: &mut Store, key: &str, text: &str) -> StoredCall {
        store.insert_answered(key, text)
    }

    #[test]
    fn a_relevance_file_may_ask_for_batches() {
        let parse = |yaml: &str| RelevanceExperiment::parse(Path::new("c.yaml"), yaml);
        let body = "model: openai:gpt-4o\nimages: \"*.png\"\nground_truth: gt.csv\n";
        assert!(parse(&format!("{body}batch: true\n")).unwrap().batch);
        assert!(!parse(body).unwrap().batch);
        let e = parse(&format!("{body}batchs: true\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown key `batchs`; did you mean `batch`?"),
            "{e}"
        );
    }

    #[test]
    fn stage_plans_every_image_with_both_variants_and_every_trial() {
        let e = experiment(2);
        let stage = e.stage(0, None).unwrap().unwrap();
        assert_eq!(stage.name, "predictions");
        assert_eq!(stage.calls.len(), 2 * 2 * 2, "images x variants x trials");
        let labels: Vec<String> = (0..stage.calls.len()).map(|i| e.label(&stage, i)).collect();
        assert_eq!(labels[0], "state_0 (WITH) trial 1");
        assert_eq!(labels[3], "state_0 (WITHOUT) trial 2");
        assert_eq!(labels[4], "state_1 (WITH) trial 1");
        let mut items: Vec<usize> = stage.calls.iter().map(|c| c.item).collect();
        items.dedup();
        assert_eq!(items, (0..8).collect::<Vec<_>>(), "one item per call");
        assert!(e.stage(1, None).unwrap().is_none(), "one stage only");
    }

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn record_stores_a_prediction_per_predicate_asked_with_invalid_answers_counted() {
        let mut e = experiment(1);
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(
                crate::experiment::ExperimentKind::Relevance,
                None,
                None,
                "{}",
            )
            .unwrap();
        let stage = e.stage(0, None).unwrap().unwrap();
        e.begin(&mut store, run, &stage, crate::experiment::Shard::WHOLE)
            .unwrap();
        // state_0 WITH: an abstention; state_0 WITHOUT: a forbidden 1 and a missing predicate;
        // state_1 WITH fails; state_1 WITHOUT is not answered yet.
        let with = answered(
            &mut store,
            "a",
            r#"{"clear(red:block)": 2, "on(red:block,blue:block)": 1}"#,
        );
        let without = answered(&mut store, "b", r#"{"clear(red:block)": 1}"#);
        let failed = CallOutcome::Failed {
            call_id: None,
            error: "HTTP 500".into(),
            attempts: 3,
        };
        let (with, without) = (
            CallOutcome::Fresh(Box::new(with)),
            CallOutcome::Hit(Box::new(without)),
        );
        let problems = e
            .record(
                &mut store,
                run,
                &stage,
                &[(0, &with), (1, &without), (2, &failed)],
            )
            .unwrap();
        assert!(problems.is_empty());
        let rows = store.predictions(&[run]).unwrap();
        type Got<'a> = (&'a str, &'a str, Variant, Option<u8>, bool, bool);
        let got: Vec<Got<'_>> = rows
            .iter()
            .map(|r| {
                (
                    r.image.as_str(),
                    r.predicate.as_str(),
                    r.variant,
                    r.score,
                    r.truth,
                    r.cache_hit,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "state_0",
                    "clear(red:block)",
                    Variant::With,
                    Some(2),
                    true,
                    false
                ),
                (
                    "state_0",
                    "clear(red:block)",
                    Variant::Without,
                    None,
                    true,
                    true
                ),
                (
                    "state_0",
                    "on(red:block,blue:block)",
                    Variant::With,
                    Some(1),
                    false,
                    false
                ),
                (
                    "state_0",
                    "on(red:block,blue:block)",
                    Variant::Without,
                    None,
                    false,
                    true
                ),
            ]
        );
        assert!(rows.iter().all(|r| r.run_id == run && r.trial == 0));
        assert!(
            rows.iter()
                .filter(|r| r.score.is_none())
                .all(|r| r.invalid_reason.is_some()),
            "{rows:#?}"
        );
    }
}
