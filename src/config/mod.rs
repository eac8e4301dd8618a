//! The model catalog and settings: built-in providers and models, extended or overridden by
//! `config.yaml`, and the resolution of `<provider>:<name>` references.
//!
//! This file owns the errors, the [`Settings`] and [`Config::load`] (which file is read); it
//! must not hold catalog lookups (`catalog`), the built-in data (`builtin`) or the YAML schema
//! (`file`).

mod builtin;
mod catalog;
pub mod env_file;
mod file;
mod rate_limit;
mod retry;
mod target;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::energy::EnergyMethod;

pub use builtin::{PRICE_LIST_URL, PRICE_SOURCE, PRICES_AS_OF};
pub(crate) use catalog::hide_user_info;
pub use catalog::{BatchSetting, Catalog, ModelSpec, ProviderSpec};
pub use rate_limit::RateLimit;
pub use retry::RetryPolicy;
pub use target::TargetConfig;

/// Errors in the catalog, the config file or a model reference.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A config file that does not parse: `file:line:col: message`.
    #[error("{0}")]
    Yaml(String),
    #[error("`{reference}` is not a model reference: write <provider>:<name>, e.g. openai:gpt-4o")]
    BadReference { reference: String },
    #[error("unknown provider `{provider}` in `{reference}`;{suggestion} known providers: {known}")]
    UnknownProvider {
        reference: String,
        provider: String,
        known: String,
        /// ` did you mean `x`?` when a provider is close, else empty.
        suggestion: String,
    },
    #[error(
        "unknown model `{reference}`;{suggestion} {provider} models: {known} (add others under `models:` in config.yaml)"
    )]
    UnknownModel {
        reference: String,
        provider: String,
        known: String,
        /// ` did you mean `x`?` when a catalog entry is close, else empty.
        suggestion: String,
    },
    #[error("the base URL `{url}` of {provider} is not an http:// or https:// URL; fix {setting}")]
    BadBaseUrl {
        provider: String,
        /// The URL with any user-info replaced by `***`.
        url: String,
        /// Where it was set: a variable or config.yaml.
        setting: String,
    },
}

/// Settings from `config.yaml` besides the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub retry: RetryPolicy,
    pub timeout: Duration,
    pub concurrency: usize,
    pub energy_method: EnergyMethod,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(300),
            concurrency: 8,
            energy_method: EnergyMethod::default(),
        }
    }
}

/// The catalog and settings in force.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub catalog: Catalog,
    pub settings: Settings,
    /// The file they were read from, if any.
    pub source: Option<PathBuf>,
}

impl Config {
    /// The built-ins, extended by `path` when given (it must exist) or by `./config.yaml` when
    /// that exists.
    pub(crate) fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let default = Path::new("config.yaml");
        let chosen = match path {
            Some(p) => Some(p),
            None if default.exists() => Some(default),
            None => None,
        };
        let mut config = Self {
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            source: None,
        };
        if let Some(path) = chosen {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            config.apply(path, &text)?;
            config.source = Some(path.to_path_buf());
        }
        Ok(config)
    }
}
