//! Judge reviews: models write sensor datasheets; a reviewer model scores each against the
//! official datasheet on criteria P1-P16 and overall, on a 1-5 Likert scale.
//!
//! Generation and review are stages of one experiment of the runtime (`experiment`); answers
//! become stored rows, files under `results/`, and the specification's CSV (`spec_csv`). The
//! reviews' summaries (`summary`), diff, report section (`html`), console output, CSV export,
//! and the registry's entries of reviews and generation (`entry`) are in this folder too. This
//! file holds what they share: errors, where files live, and which sensors.

pub mod columns;
pub mod console;
pub mod criteria;
pub mod diff;
pub mod entry;
pub mod experiment;
pub mod export;
pub mod file;
pub mod html;
pub mod parse;
pub mod prompts;
pub mod sensors;
pub mod spec_csv;
pub mod summary;

pub use entry::{GENERATE, KIND};
pub use experiment::{DatasheetExperiment, DatasheetPlan};
pub use file::from_file;
pub use prompts::{GENERATION_PROMPT, REVIEW_PROMPT};

use std::path::{Path, PathBuf};

use crate::config::ConfigError;
use crate::prompt::PromptError;
use crate::store::StoreError;
use sensors::Sensor;

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
    /// A YAML file that does not parse: `file:line:col: message`.
    #[error("{0}")]
    Yaml(String),
    /// A prompt template could not be read or lacks a placeholder.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Model(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Nothing(String),
    /// Writing a report to stdout failed.
    #[error(transparent)]
    Output(std::io::Error),
    /// The summary a run prints when it ends could not be computed.
    #[error("computing the summaries: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
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
    pub(crate) fn select(&self, path: &Path) -> Result<Vec<Sensor>, ReviewError> {
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
