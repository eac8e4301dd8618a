//! A review experiment as a file (`kind: review`), run by `track run FILE.yaml`; the
//! `review-datasheets` command builds the same from its flags. Both become a
//! [`DatasheetPlan`] for the runtime.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::criteria::Criteria;
use super::experiment::{DatasheetExperiment, DatasheetPlan, Generation, Reviewing};
use super::{GENERATION_PROMPT, Paths, REVIEW_PROMPT, ReviewError, SensorFilter};
use crate::config::Config;
use crate::experiment::{
    Experiment, ExperimentError, ExperimentKind, FileBudget, Override, Overrides,
};
use crate::llm::SamplingParams;
use crate::prompt::Template;

/// Loads a review experiment file for `track run`; `--models` replaces its `generators:`.
pub fn from_file(
    path: &Path,
    text: &str,
    config: &Config,
    overrides: &Overrides,
) -> Result<Box<dyn Experiment>, ExperimentError> {
    overrides.refuse(
        ExperimentKind::Review,
        &[(Override::Energy, "reviews record no energy")],
    )?;
    let mut file = ReviewExperiment::parse(path, text).map_err(ExperimentError::kind)?;
    file.generators = overrides.models_or(&file.generators);
    let sha = crate::hash::sha256_hex(text.as_bytes());
    let plan = file.plan(Some((path.to_path_buf(), sha)), overrides)?;
    Ok(Box::new(DatasheetExperiment::new(plan, &config.catalog)?))
}

/// Everything a review experiment needs. Paths are relative to the working directory, as on
/// the command line.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewExperiment {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Reviewer models (`provider:name`), each reviewing every selected datasheet.
    pub reviewers: Vec<String>,
    /// Models that first write a datasheet for each selected sensor (optional).
    #[serde(default)]
    pub generators: Vec<String>,
    /// Review only datasheets written by this model.
    #[serde(default)]
    pub generator: Option<String>,
    #[serde(default)]
    pub brand: Option<String>,
    #[serde(default)]
    pub sensor: Option<String>,
    #[serde(default = "default_sensors")]
    pub sensors: PathBuf,
    #[serde(default = "default_datasheets")]
    pub datasheets: PathBuf,
    #[serde(default = "default_results")]
    pub results: PathBuf,
    #[serde(default = "default_out")]
    pub out: PathBuf,
    /// Review prompt template (default: built in).
    #[serde(default)]
    pub prompt: Option<PathBuf>,
    /// Criteria file (default: P1-P16).
    #[serde(default)]
    pub criteria: Option<PathBuf>,
    /// Generation prompt template (default: built in).
    #[serde(default)]
    pub generation_prompt: Option<PathBuf>,
    /// Most tokens of a review's answer, and of a generated datasheet unless
    /// `generation_max_tokens` says otherwise.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Most tokens of a generated datasheet [default: `max_tokens`].
    #[serde(default)]
    pub generation_max_tokens: Option<u32>,
    /// Samples of each call (generation and review), each a distinct cache entry.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// The most a run may spend, in USD (`--budget` wins over it).
    #[serde(default)]
    pub budget: Option<FileBudget>,
    /// Send the calls through batch APIs, at half price (`--batch` asks the same).
    #[serde(default, deserialize_with = "crate::experiment::batch_flag")]
    pub batch: bool,
}

fn default_sensors() -> PathBuf {
    PathBuf::from("data/sensors.csv")
}
fn default_datasheets() -> PathBuf {
    PathBuf::from("datasheet")
}
fn default_results() -> PathBuf {
    PathBuf::from("results")
}
fn default_out() -> PathBuf {
    PathBuf::from("results/reviews")
}
fn default_max_tokens() -> u32 {
    4096
}

impl ReviewExperiment {
    /// Parses an experiment file's text; `path` names it in messages.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, ReviewError> {
        let invalid = |message: String| ReviewError::Invalid {
            origin: path.display().to_string(),
            message,
        };
        let experiment: Self = serde_saphyr::from_str(text)
            .map_err(|e| ReviewError::Yaml(crate::yaml::describe(path, text, &e)))?;
        if experiment.reviewers.is_empty() {
            return Err(invalid(
                "`reviewers:` is empty; list at least one <provider>:<name>".into(),
            ));
        }
        Ok(experiment)
    }
}

impl ReviewExperiment {
    /// The plan: sensors selected, prompts and criteria loaded, settings resolved.
    pub(crate) fn plan(
        &self,
        file: Option<(PathBuf, String)>,
        overrides: &Overrides,
    ) -> Result<DatasheetPlan, ExperimentError> {
        let kind = |e: ReviewError| ExperimentError::kind(e);
        let filter = SensorFilter {
            brand: self.brand.clone(),
            sensor: self.sensor.clone(),
        };
        let sensors = filter.select(&self.sensors).map_err(kind)?;
        let criteria = match &self.criteria {
            Some(path) => Criteria::load(path).map_err(kind)?,
            None => Criteria::builtin(),
        };
        let template = |path: &Option<PathBuf>, builtin, required: &[&str]| {
            Template::load(path.as_deref(), builtin, required)
                .map_err(|e| ExperimentError::kind(ReviewError::from(e)))
        };
        let max_tokens = Some(self.max_tokens);
        Ok(DatasheetPlan {
            file,
            generators: self
                .generators
                .iter()
                .map(|g| g.trim().to_owned())
                .collect(),
            reviewers: self.reviewers.iter().map(|r| r.trim().to_owned()).collect(),
            sensors,
            paths: Paths {
                sensors: self.sensors.clone(),
                datasheets: self.datasheets.clone(),
                results: self.results.clone(),
                reviews: self.out.clone(),
            },
            generation: Generation {
                template: template(
                    &self.generation_prompt,
                    GENERATION_PROMPT,
                    &["brand", "sensor"],
                )?,
                params: SamplingParams {
                    max_tokens: self.generation_max_tokens.or(max_tokens),
                    ..SamplingParams::default()
                },
            },
            reviewing: Reviewing {
                template: template(
                    &self.prompt,
                    REVIEW_PROMPT,
                    &["official_datasheet", "generated_datasheet"],
                )?,
                criteria,
                // A judge should be as repeatable as the provider allows.
                params: SamplingParams {
                    temperature: Some(0.0),
                    max_tokens,
                    ..SamplingParams::default()
                },
                only_generator: self.generator.clone(),
            },
            repeats: overrides.repeat_or(self.repeat.unwrap_or(1))?,
            budget_usd: self.budget.map(|b| b.0),
            batch: self.batch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_file_with_defaults() {
        let e = ReviewExperiment::parse(
            Path::new("r.yaml"),
            "kind: review\nreviewers: [openai:gpt-4o-mini]\ngenerators: [openai:gpt-4o]\nsensor: BME280\n",
        )
        .unwrap();
        assert_eq!(e.reviewers, ["openai:gpt-4o-mini"]);
        assert_eq!(e.sensors, PathBuf::from("data/sensors.csv"));
        assert_eq!(e.max_tokens, 4096);
        let e = ReviewExperiment::parse(Path::new("r.yaml"), "reviewers: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.yaml: `reviewers:` is empty"), "{e}");
        let e = ReviewExperiment::parse(Path::new("r.yaml"), "reviewers: [a:b]\ncolour: red\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.yaml:2:1: unknown key `colour`"), "{e}");
    }

    #[test]
    fn a_review_file_may_ask_for_batches() {
        let parse = |yaml: &str| ReviewExperiment::parse(Path::new("r.yaml"), yaml);
        assert!(parse("reviewers: [a:b]\nbatch: true\n").unwrap().batch);
        assert!(!parse("reviewers: [a:b]\n").unwrap().batch);
        let e = parse("reviewers: [a:b]\nbatched: true\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown key `batched`; did you mean `batch`?"),
            "{e}"
        );
    }

    #[test]
    fn a_review_file_may_cap_its_runs() {
        let parse = |yaml: &str| ReviewExperiment::parse(Path::new("r.yaml"), yaml);
        let e = parse("reviewers: [a:b]\nbudget: \"$2.5\"\n").unwrap();
        assert_eq!(e.budget, Some(FileBudget(2.5)));
        assert_eq!(parse("reviewers: [a:b]\n").unwrap().budget, None);
        let e = parse("reviewers: [a:b]\nbudget: none\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.yaml:2:9: `budget:` `none` is not an amount"),
            "{e}"
        );
    }
}
