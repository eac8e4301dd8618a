//! A review experiment as a file (`kind: review`), run by `track run FILE.yaml`; the
//! `review-datasheets` command builds the same from its flags.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ReviewError;

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
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
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
    pub fn parse(path: &Path, text: &str) -> Result<Self, ReviewError> {
        let invalid = |message: String| ReviewError::Invalid {
            origin: path.display().to_string(),
            message,
        };
        let experiment: Self = serde_saphyr::from_str(text).map_err(|e| {
            invalid(format!(
                "not a valid review experiment: {}",
                e.to_string().trim().replace('\n', " ")
            ))
        })?;
        if experiment.reviewers.is_empty() {
            return Err(invalid(
                "`reviewers:` is empty; list at least one <provider>:<name>".into(),
            ));
        }
        Ok(experiment)
    }
}

/// The `kind:` of an experiment file (`bench`, the default, or `review`): a top-level
/// `kind:` line, read without parsing the whole file (benchmark files can be huge).
pub fn experiment_kind(text: &str) -> Option<String> {
    text.lines()
        .find_map(|line| line.strip_prefix("kind:"))
        .map(|rest| {
            let value = rest.split('#').next().unwrap_or_default().trim();
            value.trim_matches(|c| c == '"' || c == '\'').to_owned()
        })
        .filter(|kind| !kind.is_empty())
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
        assert_eq!(
            experiment_kind("kind: review\nother: 1\n").as_deref(),
            Some("review")
        );
        assert_eq!(experiment_kind("models: [a:b]\n"), None);
        assert_eq!(
            experiment_kind("# x\nkind: \"review\" # a comment\n").as_deref(),
            Some("review")
        );
        assert_eq!(
            experiment_kind("prompts:\n  - kind:\n    prompt: x\n"),
            None,
            "only top-level keys"
        );
        let e = ReviewExperiment::parse(Path::new("r.yaml"), "reviewers: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.yaml: `reviewers:` is empty"), "{e}");
        let e = ReviewExperiment::parse(Path::new("r.yaml"), "reviewers: [a:b]\ncolour: red\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.yaml: not a valid review experiment") && e.contains("colour"),
            "{e}"
        );
    }
}
