//! The model catalog and settings: built-in providers and models, extended or overridden by
//! `config.yaml`, and the resolution of `<provider>:<name>` references.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::cost::Price;
use crate::energy::{EnergyMethod, EnergyProfile, Range};
use crate::llm::client::ApiKey;
use crate::llm::{CallJob, CanonicalRequest, ChatRequest, Endpoint, ProviderKind, RetryPolicy};

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
    #[error("`{reference}` is not a model reference: write <provider>:<name>, e.g. openai:gpt-4o")]
    BadReference { reference: String },
    #[error("unknown provider `{provider}` in `{reference}`; known providers: {known}")]
    UnknownProvider {
        reference: String,
        provider: String,
        known: String,
    },
    #[error(
        "unknown model `{reference}`; {provider} models: {known} (add others under `models:` in config.yaml)"
    )]
    UnknownModel {
        reference: String,
        provider: String,
        known: String,
    },
}

/// A provider: where it lives, its wire format, where its key comes from, and its PUE.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSpec {
    pub name: String,
    pub kind: ProviderKind,
    /// Environment variable that overrides the base URL (as the official SDKs read it).
    pub base_url_env: Option<String>,
    pub default_base_url: String,
    /// Environment variables tried in order for the key.
    pub key_vars: Vec<String>,
    /// Whether calls need a key (hosted APIs do; local servers do not).
    pub key_required: bool,
    pub pue: Range,
}

impl ProviderSpec {
    /// The base URL in force: the environment variable if set, else the configured default.
    pub fn base_url(&self) -> String {
        self.base_url_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| self.default_base_url.clone())
    }

    /// The endpoint with its key read from the environment (None when none is set).
    pub fn endpoint(&self) -> Endpoint {
        let api_key = self
            .key_vars
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .map(|v| v.trim().to_owned())
            .find(|v| !v.is_empty())
            .map(ApiKey::new);
        Endpoint {
            provider: self.name.clone(),
            kind: self.kind,
            base_url: self.base_url(),
            api_key,
        }
    }

    /// The variables a user can set for the key, for messages.
    pub fn key_vars_text(&self) -> String {
        self.key_vars.join(" or ")
    }
}

/// A model of the catalog: its reference, the id sent to the provider, prices and size.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub provider: String,
    /// The short name used in references (`gpt-4o`, `sonnet 3.5`).
    pub alias: String,
    /// Other names that also resolve to it.
    pub other_names: Vec<String>,
    /// The model id sent to the provider.
    pub model: String,
    /// USD per million input and output tokens.
    pub input_price: f64,
    pub output_price: f64,
    pub energy: EnergyProfile,
}

impl ModelSpec {
    /// `provider:alias`.
    pub fn reference(&self) -> String {
        format!("{}:{}", self.provider, self.alias)
    }

    /// Its prices, to cost its calls with.
    pub fn price(&self) -> Price {
        Price {
            input_per_mtok: self.input_price,
            output_per_mtok: self.output_price,
        }
    }

    fn answers_to(&self, name: &str) -> bool {
        std::iter::once(&self.alias)
            .chain(&self.other_names)
            .chain(std::iter::once(&self.model))
            .any(|n| n == name || n.eq_ignore_ascii_case(name))
    }
}

/// Providers and models known to track.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub providers: BTreeMap<String, ProviderSpec>,
    pub models: Vec<ModelSpec>,
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
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
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

    /// Applies a config file's text over what is loaded.
    pub fn apply(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        };
        let file: ConfigFile = if text.trim().is_empty() {
            ConfigFile::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| parse_error(e.to_string()))?
        };
        for (name, p) in file.providers {
            let existing = self.catalog.providers.get(&name).cloned();
            let kind = match (p.kind, &existing) {
                (Some(kind), _) => kind,
                (None, Some(e)) => e.kind,
                (None, None) => {
                    return Err(parse_error(format!(
                        "provider `{name}` needs `kind:` (openai, anthropic, ollama or openai-compatible)"
                    )));
                }
            };
            let base = existing.unwrap_or_else(|| ProviderSpec {
                name: name.clone(),
                kind,
                base_url_env: None,
                default_base_url: String::new(),
                key_vars: Vec::new(),
                key_required: false,
                pue: Range::exact(1.2),
            });
            let base_url_given = p.base_url.is_some();
            let spec = ProviderSpec {
                kind,
                default_base_url: p.base_url.unwrap_or(base.default_base_url),
                // A base URL written in the file wins over the environment.
                base_url_env: if base_url_given {
                    None
                } else {
                    base.base_url_env
                },
                key_required: p.api_key_env.is_some() || base.key_required,
                key_vars: p.api_key_env.map(|v| vec![v]).unwrap_or(base.key_vars),
                pue: p.pue.map(NumberOrRange::range).unwrap_or(base.pue),
                ..base
            };
            if spec.default_base_url.is_empty() {
                return Err(parse_error(format!("provider `{name}` needs `base_url:`")));
            }
            self.catalog.providers.insert(name, spec);
        }
        for (reference, m) in file.models {
            let (provider, alias) = split_reference(&reference)?;
            if !self.catalog.providers.contains_key(provider) {
                return Err(parse_error(format!(
                    "model `{reference}`: unknown provider `{provider}`; known providers: {}",
                    self.catalog.provider_names()
                )));
            }
            let parameters = m.parameters.map(NumberOrRange::range);
            let active = m.active_parameters.map(NumberOrRange::range).or(parameters);
            let Some(active) = active else {
                return Err(parse_error(format!(
                    "model `{reference}` needs `parameters:` (billions, a number or [min, max]) for energy estimates"
                )));
            };
            let total = m
                .total_parameters
                .map(NumberOrRange::range)
                .unwrap_or(active);
            let spec = ModelSpec {
                provider: provider.to_owned(),
                alias: alias.to_owned(),
                other_names: Vec::new(),
                model: m.model.unwrap_or_else(|| alias.to_owned()),
                input_price: m.input_price,
                output_price: m.output_price,
                energy: EnergyProfile {
                    spec_parameters: parameters.unwrap_or(active).mid(),
                    active_parameters: active,
                    total_parameters: total,
                    pue: self.catalog.providers[provider].pue,
                },
            };
            self.catalog.models.retain(|existing| {
                !(existing.provider == spec.provider && existing.alias == spec.alias)
            });
            self.catalog.models.push(spec);
        }
        if let Some(retry) = file.retry {
            self.settings.retry = retry;
        }
        if let Some(secs) = file.timeout_secs {
            self.settings.timeout = Duration::from_secs_f64(secs.max(0.001));
        }
        if let Some(n) = file.concurrency {
            self.settings.concurrency = n.max(1);
        }
        if let Some(method) = file.energy_method {
            self.settings.energy_method = method;
        }
        Ok(())
    }
}

fn split_reference(reference: &str) -> Result<(&str, &str), ConfigError> {
    reference
        .split_once(':')
        .map(|(p, n)| (p.trim(), n.trim()))
        .filter(|(p, n)| !p.is_empty() && !n.is_empty())
        .ok_or_else(|| ConfigError::BadReference {
            reference: reference.to_owned(),
        })
}

/// A catalog model resolved for calling: its endpoint (key read from the environment) and,
/// when its provider needs a key that is not set, why it cannot be called (cached answers are
/// still served). Every experiment kind builds its calls from one.
#[derive(Debug, Clone)]
pub struct Target {
    /// The reference as written (`anthropic:sonnet 3.5`).
    pub reference: String,
    pub spec: ModelSpec,
    pub endpoint: Arc<Endpoint>,
    pub blocked: Option<String>,
}

impl Target {
    /// The call of `request` to this model, for sample `repeat`, priced with its prices.
    pub fn job(&self, request: ChatRequest, repeat: u32) -> CallJob {
        let canonical = CanonicalRequest::new(
            &self.endpoint.provider,
            &self.endpoint.base_url,
            &request,
            repeat,
        );
        CallJob {
            endpoint: self.endpoint.clone(),
            request,
            canonical,
            price: self.spec.price(),
        }
    }
}

impl Catalog {
    /// Resolves `reference` for calling.
    pub fn target(&self, reference: &str) -> Result<Target, ConfigError> {
        let model = self.resolve(reference)?;
        let provider = self.provider(model);
        let endpoint = provider.endpoint();
        let blocked = (provider.key_required && endpoint.api_key.is_none()).then(|| {
            format!(
                "no API key for {}: set {} in the environment or in .env",
                provider.name,
                provider.key_vars_text()
            )
        });
        Ok(Target {
            reference: reference.to_owned(),
            spec: model.clone(),
            endpoint: Arc::new(endpoint),
            blocked,
        })
    }

    /// The model a `<provider>:<name>` reference names (by alias, other name or model id).
    pub fn resolve(&self, reference: &str) -> Result<&ModelSpec, ConfigError> {
        let (provider, name) = split_reference(reference)?;
        let provider_key = self
            .providers
            .keys()
            .find(|k| k.eq_ignore_ascii_case(provider))
            .ok_or_else(|| ConfigError::UnknownProvider {
                reference: reference.to_owned(),
                provider: provider.to_owned(),
                known: self.provider_names(),
            })?;
        let candidates: Vec<&ModelSpec> = self
            .models
            .iter()
            .filter(|m| &m.provider == provider_key)
            .collect();
        // An exact alias beats a case-insensitive or model-id match.
        candidates
            .iter()
            .find(|m| m.alias == name)
            .or_else(|| candidates.iter().find(|m| m.answers_to(name)))
            .copied()
            .ok_or_else(|| ConfigError::UnknownModel {
                reference: reference.to_owned(),
                provider: provider_key.clone(),
                known: if candidates.is_empty() {
                    "none yet".into()
                } else {
                    candidates
                        .iter()
                        .map(|m| format!("`{}`", m.alias))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            })
    }

    /// The provider of a model.
    pub fn provider(&self, model: &ModelSpec) -> &ProviderSpec {
        &self.providers[&model.provider]
    }

    fn provider_names(&self) -> String {
        self.providers
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The built-in providers and models (prices: public lists, August 2026; parameter counts:
    /// the specification's, and EcoLogits 0.9.1's assumptions for closed models).
    pub fn builtin() -> Self {
        let provider =
            |name: &str, kind, env: Option<&str>, url: &str, keys: &[&str], required, pue| {
                (
                    name.to_owned(),
                    ProviderSpec {
                        name: name.to_owned(),
                        kind,
                        base_url_env: env.map(str::to_owned),
                        default_base_url: url.to_owned(),
                        key_vars: keys.iter().map(|k| (*k).to_owned()).collect(),
                        key_required: required,
                        pue,
                    },
                )
            };
        use ProviderKind::*;
        let providers: BTreeMap<_, _> = [
            provider(
                "openai",
                Openai,
                Some("OPENAI_BASE_URL"),
                "https://api.openai.com/v1",
                &["OPENAI_API_KEY", "OPENAI_KEY"],
                true,
                Range::exact(1.2),
            ),
            provider(
                "anthropic",
                Anthropic,
                Some("ANTHROPIC_BASE_URL"),
                "https://api.anthropic.com",
                &["ANTHROPIC_API_KEY", "ANTHROPIC_KEY"],
                true,
                Range {
                    min: 1.09,
                    max: 1.14,
                },
            ),
            provider(
                "ollama",
                Ollama,
                Some("OLLAMA_HOST"),
                "http://127.0.0.1:11434",
                &[],
                false,
                Range::exact(1.2),
            ),
            provider(
                "google",
                OpenaiCompatible,
                Some("GEMINI_BASE_URL"),
                "https://generativelanguage.googleapis.com/v1beta/openai",
                &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
                true,
                Range::exact(1.09),
            ),
            provider(
                "openrouter",
                OpenaiCompatible,
                Some("OPENROUTER_BASE_URL"),
                "https://openrouter.ai/api/v1",
                &["OPENROUTER_API_KEY"],
                true,
                Range::exact(1.2),
            ),
            provider(
                "local",
                OpenaiCompatible,
                Some("LOCAL_MODEL_BASE_URL"),
                "http://127.0.0.1:8088/v1",
                &["LOCAL_MODEL_API_KEY"],
                false,
                Range::exact(1.2),
            ),
        ]
        .into_iter()
        .collect();
        let model = |provider: &str,
                     alias: &str,
                     others: &[&str],
                     id: &str,
                     prices: (f64, f64),
                     spec_p: f64,
                     active: Range,
                     total: Range| {
            ModelSpec {
                provider: provider.to_owned(),
                alias: alias.to_owned(),
                other_names: others.iter().map(|n| (*n).to_owned()).collect(),
                model: id.to_owned(),
                input_price: prices.0,
                output_price: prices.1,
                energy: EnergyProfile {
                    spec_parameters: spec_p,
                    active_parameters: active,
                    total_parameters: total,
                    pue: providers[provider].pue,
                },
            }
        };
        let r = |min, max| Range { min, max };
        let x = Range::exact;
        let models = vec![
            model(
                "openai",
                "gpt-4o",
                &[],
                "gpt-4o",
                (2.5, 10.0),
                200.0,
                r(44.0, 132.0),
                x(440.0),
            ),
            model(
                "openai",
                "gpt-4o-mini",
                &[],
                "gpt-4o-mini",
                (0.15, 0.6),
                18.0,
                r(8.0, 28.0),
                r(8.0, 28.0),
            ),
            model(
                "anthropic",
                "sonnet 3.5",
                &["claude-3-5-sonnet", "claude-3.5-sonnet"],
                "claude-3-5-sonnet-20241022",
                (3.0, 15.0),
                175.0,
                r(44.0, 132.0),
                x(440.0),
            ),
            model(
                "anthropic",
                "haiku 3.5",
                &["claude-3-5-haiku", "claude-3.5-haiku"],
                "claude-3-5-haiku-20241022",
                (0.8, 4.0),
                18.0,
                r(8.0, 28.0),
                r(8.0, 28.0),
            ),
            model(
                "google",
                "gemini-1.5-pro",
                &[],
                "gemini-1.5-pro",
                (1.25, 5.0),
                220.0,
                r(55.0, 220.0),
                x(440.0),
            ),
            model(
                "google",
                "gemini-1.5-flash",
                &[],
                "gemini-1.5-flash",
                (0.075, 0.3),
                45.0,
                r(20.0, 70.0),
                r(20.0, 70.0),
            ),
            model(
                "ollama",
                "qwen2.5-coder",
                &[],
                "qwen2.5-coder:7b",
                (0.0, 0.0),
                7.0,
                x(7.6),
                x(7.6),
            ),
            model(
                "ollama",
                "llama3.2",
                &[],
                "llama3.2:3b",
                (0.0, 0.0),
                3.2,
                x(3.2),
                x(3.2),
            ),
            model(
                "local",
                "smollm2",
                &["smollm2-135m"],
                "smollm2",
                (0.0, 0.0),
                0.135,
                x(0.135),
                x(0.135),
            ),
        ];
        Self { providers, models }
    }
}

/// A number or a `[min, max]` pair in a config file.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum NumberOrRange {
    One(f64),
    Two([f64; 2]),
}

impl NumberOrRange {
    fn range(self) -> Range {
        match self {
            Self::One(v) => Range::exact(v),
            Self::Two([a, b]) => Range {
                min: a.min(b),
                max: a.max(b),
            },
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    models: BTreeMap<String, ModelEntry>,
    retry: Option<RetryPolicy>,
    timeout_secs: Option<f64>,
    concurrency: Option<usize>,
    energy_method: Option<EnergyMethod>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    kind: Option<ProviderKind>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    pue: Option<NumberOrRange>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    model: Option<String>,
    #[serde(default)]
    input_price: f64,
    #[serde(default)]
    output_price: f64,
    parameters: Option<NumberOrRange>,
    active_parameters: Option<NumberOrRange>,
    total_parameters: Option<NumberOrRange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_references_resolve() {
        let c = Catalog::builtin();
        assert_eq!(c.resolve("openai:gpt-4o").unwrap().model, "gpt-4o");
        assert_eq!(
            c.resolve("anthropic:sonnet 3.5").unwrap().model,
            "claude-3-5-sonnet-20241022"
        );
        assert_eq!(
            c.resolve("ollama:qwen2.5-coder").unwrap().model,
            "qwen2.5-coder:7b"
        );
        assert_eq!(
            c.resolve("ollama:qwen2.5-coder:7b").unwrap().alias,
            "qwen2.5-coder"
        );
        assert_eq!(
            c.resolve("anthropic:claude-3-5-haiku").unwrap().input_price,
            0.8
        );
        let gpt = c.resolve("openai:gpt-4o").unwrap();
        assert_eq!(
            (
                gpt.input_price,
                gpt.output_price,
                gpt.energy.spec_parameters
            ),
            (2.5, 10.0, 200.0)
        );
    }

    #[test]
    fn bad_references_name_the_choices() {
        let c = Catalog::builtin();
        let e = c.resolve("openai:gpt-9").unwrap_err().to_string();
        assert!(e.contains("`gpt-4o`") && e.contains("config.yaml"), "{e}");
        let e = c.resolve("acme:x").unwrap_err().to_string();
        assert!(e.contains("anthropic") && e.contains("ollama"), "{e}");
        assert!(matches!(
            c.resolve("gpt-4o"),
            Err(ConfigError::BadReference { .. })
        ));
    }

    #[test]
    fn config_file_adds_providers_and_models() {
        let mut config = Config {
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            source: None,
        };
        let yaml = "
providers:
  vllm:
    kind: openai-compatible
    base_url: http://127.0.0.1:8000/v1
    api_key_env: VLLM_KEY
    pue: [1.1, 1.3]
models:
  vllm:llama3:
    model: meta-llama/Meta-Llama-3-8B-Instruct
    input_price: 0.1
    output_price: 0.2
    parameters: 8
  openai:gpt-4o:
    input_price: 1
    output_price: 2
    parameters: 200
    active_parameters: [44, 132]
    total_parameters: 440
retry:
  max_attempts: 2
  base_delay: 10
  max_delay: 20
energy_method: seed-linear
";
        config.apply(Path::new("config.yaml"), yaml).unwrap();
        let m = config.catalog.resolve("vllm:llama3").unwrap();
        assert_eq!(m.model, "meta-llama/Meta-Llama-3-8B-Instruct");
        assert_eq!(m.energy.pue, Range { min: 1.1, max: 1.3 });
        let p = config.catalog.provider(m);
        assert!(p.key_required);
        assert_eq!(p.base_url(), "http://127.0.0.1:8000/v1");
        assert_eq!(
            config.catalog.resolve("openai:gpt-4o").unwrap().input_price,
            1.0
        );
        assert_eq!(config.settings.retry.max_attempts, 2);
        assert_eq!(config.settings.energy_method, EnergyMethod::SeedLinear);
    }

    #[test]
    fn config_errors_name_the_file_and_fix() {
        let mut config = Config {
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            source: None,
        };
        let e = config
            .apply(
                Path::new("c.yaml"),
                "models:\n  acme:x:\n    parameters: 1\n",
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.yaml") && e.contains("unknown provider `acme`"),
            "{e}"
        );
        let e = config
            .apply(
                Path::new("c.yaml"),
                "models:\n  openai:x:\n    input_price: 1\n",
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs `parameters:`"), "{e}");
        assert!(config.apply(Path::new("c.yaml"), "nonsense: [").is_err());
    }
}
