//! The `config.yaml` schema and how a file's text is applied over a [`Config`]. It must not
//! read the file (that is [`Config::load`]) nor resolve references for calling.

mod target;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::RateLimit;
use super::catalog::split_reference;
use super::{BatchSetting, Config, ConfigError, ModelSpec, ProviderSpec};
use crate::config::RetryPolicy;
use crate::energy::{EnergyMethod, EnergyProfile, Parameters, Range};
use crate::llm::ProviderKind;

impl Config {
    /// Applies a config file's text over what is loaded.
    pub(crate) fn apply(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            path: path.to_path_buf(),
            message,
        };
        let file: ConfigFile = if text.trim().is_empty() {
            ConfigFile::default()
        } else {
            serde_saphyr::from_str(text)
                .map_err(|e| ConfigError::Yaml(crate::yaml::describe(path, text, &e)))?
        };
        for (name, entry) in file.providers {
            match entry.kind.filter(|kind| kind.is_target()) {
                Some(kind) => self.apply_target(name, kind, entry, path),
                None => entry
                    .refuse_target_fields(&name)
                    .and_then(|()| self.apply_provider(name, entry)),
            }
            .map_err(parse_error)?;
        }
        for (reference, entry) in file.models {
            let (provider, alias) = split_reference(&reference)?;
            self.apply_model(&reference, provider, alias, entry)
                .map_err(parse_error)?;
        }
        if let Some(retry) = file.retry {
            self.settings.retry = checked_retry(retry).map_err(parse_error)?;
        }
        if let Some(secs) = file.timeout_secs {
            self.settings.timeout = checked_timeout(secs).map_err(parse_error)?;
        }
        if let Some(n) = file.concurrency {
            if n > MAX_CONCURRENCY {
                return Err(parse_error(format!(
                    "`concurrency: {n}` is more than {MAX_CONCURRENCY} calls in flight; lower it"
                )));
            }
            self.settings.concurrency = n.max(1);
        }
        if let Some(method) = file.energy_method {
            self.settings.energy_method = method;
        }
        Ok(())
    }

    /// Adds provider `name`, or changes what the file sets of a known one.
    fn apply_provider(&mut self, name: String, p: ProviderEntry) -> Result<(), String> {
        let existing = self.catalog.providers.get(&name).cloned();
        let kind = match (p.kind, &existing) {
            (Some(kind), _) => kind,
            (None, Some(e)) => e.kind,
            (None, None) => {
                return Err(format!(
                    "provider `{name}` needs `kind:` (openai, anthropic, ollama, \
                     openai-compatible, or http or exec for your own application)"
                ));
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
            rate_limit: RateLimit::default(),
            batch: None,
            target: None,
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
            rate_limit: checked_rate_limit(&name, p.rate_limit)?.unwrap_or(base.rate_limit),
            batch: checked_batch(&name, p.batch, kind)?.or(base.batch),
            ..base
        };
        if spec.default_base_url.is_empty() {
            return Err(format!("provider `{name}` needs `base_url:`"));
        }
        if base_url_given && let Err(e) = spec.check_base_url() {
            return Err(format!("provider `{name}`: {e}"));
        }
        self.catalog.providers.insert(name, spec);
        Ok(())
    }

    /// Adds model `provider:alias`, replacing a built-in of the same reference; an entry with
    /// only `structured:` or `rate_limit:` changes those settings of a model the catalog has.
    fn apply_model(
        &mut self,
        reference: &str,
        provider: &str,
        alias: &str,
        m: ModelEntry,
    ) -> Result<(), String> {
        let rate_limit = checked_rate_limit(reference, m.rate_limit)?;
        if let Some(kind) = self.catalog.providers.get(provider).map(|p| p.kind) {
            checked_batch(reference, m.batch, kind)?;
        }
        if m.is_only_settings()
            && let Some(existing) = self
                .catalog
                .models
                .iter_mut()
                .find(|e| e.provider == provider && e.alias == alias)
        {
            if let Some(structured) = m.structured {
                existing.structured = structured;
            }
            if let Some(limit) = rate_limit {
                existing.rate_limit = limit;
            }
            if let Some(batch) = m.batch {
                existing.batch = Some(batch);
            }
            return Ok(());
        }
        let Some(pue) = self.catalog.providers.get(provider).map(|p| p.pue) else {
            return Err(format!(
                "model `{reference}`: unknown provider `{provider}`; known providers: {}",
                self.catalog.provider_names()
            ));
        };
        // Without a parameter count the model still runs; its energy is unknown (the run
        // says so once).
        let parameters = m.parameters.map(NumberOrRange::range);
        let active = m.active_parameters.map(NumberOrRange::range).or(parameters);
        let total = m.total_parameters.map(NumberOrRange::range);
        let parameters = match (active, total) {
            (Some(active), total) => Some(Parameters {
                spec: parameters.unwrap_or(active).mid(),
                active,
                total: total.unwrap_or(active),
            }),
            (None, None) => None,
            (None, Some(_)) => {
                return Err(format!(
                    "model `{reference}`: `total_parameters:` needs `parameters:` or \
                     `active_parameters:` too (billions, a number or [min, max]); without any, \
                     its energy is left unknown"
                ));
            }
        };
        // A price not written is the replaced entry's; else unknown, or 0 on a provider that
        // needs no key (a local server).
        let replaced = self
            .catalog
            .models
            .iter()
            .find(|e| e.provider == provider && e.alias == alias);
        let free = (!self.catalog.providers[provider].key_required).then_some(0.0);
        let spec = ModelSpec {
            provider: provider.to_owned(),
            alias: alias.to_owned(),
            other_names: Vec::new(),
            model: m.model.unwrap_or_else(|| alias.to_owned()),
            input_price: m
                .input_price
                .or(replaced.and_then(|e| e.input_price))
                .or(free),
            output_price: m
                .output_price
                .or(replaced.and_then(|e| e.output_price))
                .or(free),
            context_window: None,
            source: Some("config.yaml".to_owned()),
            energy: EnergyProfile { parameters, pue },
            vision: m.vision,
            structured: m.structured.unwrap_or_default(),
            rate_limit: rate_limit.unwrap_or_default(),
            batch: m.batch,
        };
        self.catalog.models.retain(|existing| {
            !(existing.provider == spec.provider && existing.alias == spec.alias)
        });
        self.catalog.models.push(spec);
        Ok(())
    }
}

/// The most calls in flight a config may ask for.
pub const MAX_CONCURRENCY: usize = 4_096;
/// The longest per-request timeout and retry wait a config may set: a day.
const MAX_SECONDS: f64 = 86_400.0;

/// `timeout_secs`, refused unless a finite number of seconds from 0.001 to a day.
fn checked_timeout(secs: f64) -> Result<Duration, String> {
    if !(0.001..=MAX_SECONDS).contains(&secs) {
        return Err(format!(
            "`timeout_secs: {secs}` must be a number of seconds from 0.001 to {MAX_SECONDS} (a day)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `retry:`, refused when its waits are longer than a day or it allows no attempt.
fn checked_retry(retry: RetryPolicy) -> Result<RetryPolicy, String> {
    let day = Duration::from_secs_f64(MAX_SECONDS);
    if retry.base_delay > day || retry.max_delay > day {
        return Err(
            "`retry: base_delay` and `max_delay` are milliseconds and must be at most a day (86400000)"
                .into(),
        );
    }
    if retry.max_attempts == 0 || retry.max_attempts > 100 {
        return Err(format!(
            "`retry: max_attempts: {}` must be from 1 to 100 (the first attempt included)",
            retry.max_attempts
        ));
    }
    Ok(retry)
}

/// `rate_limit:` of `whose`, refused when a limit is not a positive number.
fn checked_rate_limit(whose: &str, limit: Option<RateLimit>) -> Result<Option<RateLimit>, String> {
    match limit {
        Some(limit) => limit
            .check()
            .map(|()| Some(limit))
            .map_err(|e| format!("`{whose}`: {e}")),
        None => Ok(None),
    }
}

/// `batch:` of `whose`, refused when its API does not take the requests of a provider of
/// `kind` (Anthropic's batch API for an OpenAI-compatible server).
fn checked_batch(
    whose: &str,
    batch: Option<BatchSetting>,
    kind: ProviderKind,
) -> Result<Option<BatchSetting>, String> {
    match batch {
        Some(setting) => setting
            .check(kind)
            .map(|()| Some(setting))
            .map_err(|e| format!("`{whose}`: {e}")),
        None => Ok(None),
    }
}

/// A number or a `[min, max]` pair in a config file.
#[derive(Debug, Clone, Copy)]
enum NumberOrRange {
    One(f64),
    Two([f64; 2]),
}

impl<'de> Deserialize<'de> for NumberOrRange {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::{Error, SeqAccess, Visitor};
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = NumberOrRange;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or a [min, max] pair of numbers")
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<NumberOrRange, E> {
                Ok(NumberOrRange::One(v))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<NumberOrRange, E> {
                Ok(NumberOrRange::One(v as f64))
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<NumberOrRange, E> {
                Ok(NumberOrRange::One(v as f64))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NumberOrRange, A::Error> {
                let pair: [f64; 2] =
                    Deserialize::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(NumberOrRange::Two(pair))
            }
        }
        deserializer.deserialize_any(Either)
    }
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

/// A whole `config.yaml`; every section is optional.
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

/// An entry under `providers:`; what it leaves out is kept from the provider it overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    kind: Option<ProviderKind>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    pue: Option<NumberOrRange>,
    /// Requests and tokens a minute for every model of the provider.
    rate_limit: Option<RateLimit>,
    /// The batch API of every model of the provider: openai, anthropic or off.
    batch: Option<BatchSetting>,
    // The rest are a target's (the user's application), `kind: http` or `kind: exec`: see
    // [`target`].
    url: Option<String>,
    method: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    body: Option<serde_json::Value>,
    answer: Option<String>,
    input_tokens: Option<String>,
    output_tokens: Option<String>,
    cost_usd: Option<String>,
    run: Option<String>,
    timeout_secs: Option<f64>,
    retry: Option<RetryPolicy>,
    max_cost_usd: Option<f64>,
}

/// An entry under `models:`, keyed by its `<provider>:<name>` reference.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntry {
    model: Option<String>,
    /// USD per million tokens; not written: unknown (see `apply_model`).
    input_price: Option<f64>,
    output_price: Option<f64>,
    parameters: Option<NumberOrRange>,
    active_parameters: Option<NumberOrRange>,
    total_parameters: Option<NumberOrRange>,
    /// Whether it reads images (default: yes).
    #[serde(default = "yes")]
    vision: bool,
    /// Whether model-graded calls ask it for structured output: auto (default), on, off.
    structured: Option<crate::llm::Structured>,
    /// Requests and tokens a minute for this model, over its provider's.
    rate_limit: Option<RateLimit>,
    /// The batch API of this model, over its provider's: openai, anthropic or off.
    batch: Option<BatchSetting>,
}

impl ModelEntry {
    /// Whether the entry sets only settings of a model (`structured`, `rate_limit`,
    /// `batch`), not the model itself.
    fn is_only_settings(&self) -> bool {
        (self.structured.is_some() || self.rate_limit.is_some() || self.batch.is_some())
            && self.model.is_none()
            && self.input_price.is_none()
            && self.output_price.is_none()
            && self.parameters.is_none()
            && self.active_parameters.is_none()
            && self.total_parameters.is_none()
            && self.vision
    }
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Catalog, Settings};

    /// The built-in catalog and settings, before any file.
    fn builtin() -> Config {
        Config {
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            source: None,
        }
    }

    #[test]
    fn absurd_timeouts_and_waits_are_refused_not_a_panic() {
        for yaml in [
            "timeout_secs: 1e300\n",
            "timeout_secs: .inf\n",
            "timeout_secs: .nan\n",
            "timeout_secs: -1\n",
            "retry:\n  max_delay: 18446744073709551615\n",
            "retry:\n  max_attempts: 0\n",
            "concurrency: 100000000\n",
        ] {
            let mut config = builtin();
            let e = config
                .apply(Path::new("config.yaml"), yaml)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("config.yaml: `"), "{yaml}: {e}");
        }
    }

    #[test]
    fn a_number_or_range_that_is_neither_says_what_it_takes() {
        for (yaml, want) in [
            (
                "models:\n  openai:x:\n    parameters: many\n",
                "config.yaml:3:5: invalid type: string \"many\", expected a number or a [min, max] pair",
            ),
            (
                "providers:\n  openai:\n    pue: [1.1, high]\n",
                "config.yaml:3:16: invalid floating point",
            ),
        ] {
            let mut config = builtin();
            let e = config
                .apply(Path::new("config.yaml"), yaml)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{yaml}: {e}");
            assert!(!e.contains("untagged"), "{yaml}: {e}");
        }
        let mut config = builtin();
        let yaml = "models:\n  openai:x:\n    parameters: [7, 8]\n";
        config.apply(Path::new("config.yaml"), yaml).unwrap();
    }

    #[test]
    fn config_file_adds_providers_and_models() {
        let mut config = builtin();
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
            Some(1.0)
        );
        assert_eq!(config.settings.retry.max_attempts, 2);
        assert_eq!(config.settings.energy_method, EnergyMethod::SeedLinear);
    }

    #[test]
    fn config_errors_name_the_file_and_fix() {
        let mut config = builtin();
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
                "models:\n  openai:x:\n    total_parameters: 440\n",
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.yaml") && e.contains("`total_parameters:` needs `parameters:`"),
            "{e}"
        );
        assert!(config.apply(Path::new("c.yaml"), "nonsense: [").is_err());
    }

    #[test]
    fn a_model_without_parameters_is_added_with_energy_unknown() {
        let mut config = builtin();
        config
            .apply(
                Path::new("c.yaml"),
                "models:\n  openai:x:\n    input_price: 1\n  openai:y:\n    active_parameters: [8, 28]\n",
            )
            .unwrap();
        let x = config.catalog.resolve("openai:x").unwrap();
        assert_eq!((x.model.as_str(), x.input_price), ("x", Some(1.0)));
        assert_eq!(x.energy.parameters, None, "no count: energy unknown");
        assert_eq!(x.energy.pue, Range::exact(1.2), "the provider's PUE stays");
        // `active_parameters:` alone is enough: total and spec follow from it.
        let y = config.catalog.resolve("openai:y").unwrap();
        assert_eq!(
            y.energy.parameters,
            Some(Parameters {
                spec: 18.0,
                active: Range {
                    min: 8.0,
                    max: 28.0
                },
                total: Range {
                    min: 8.0,
                    max: 28.0
                },
            })
        );
    }

    #[test]
    fn rate_limits_per_provider_and_model() {
        let mut config = builtin();
        let yaml = "
providers:
  openai:
    rate_limit: {rpm: 500, tpm: 30000}
models:
  openai:gpt-4o:
    rate_limit: {rpm: 60}
";
        config.apply(Path::new("config.yaml"), yaml).unwrap();
        let limit = |reference: &str| {
            let model = config.catalog.resolve(reference).unwrap();
            config.catalog.rate_limit(model)
        };
        let gpt = limit("openai:gpt-4o");
        assert_eq!((gpt.rpm, gpt.tpm), (Some(60.0), Some(30000.0)));
        let mini = limit("openai:gpt-4o-mini");
        assert_eq!((mini.rpm, mini.tpm), (Some(500.0), Some(30000.0)));
        // The model kept its prices: only its limit changed.
        assert!(config.catalog.resolve("openai:gpt-4o").unwrap().input_price > Some(0.0));
        assert!(limit("anthropic:haiku 3.5").is_empty());
    }

    #[test]
    fn batch_apis_per_provider_and_model() {
        let mut config = builtin();
        let yaml = "
providers:
  openrouter:
    kind: openai-compatible
    base_url: https://openrouter.ai/api/v1
    batch: openai
  anthropic:
    batch: off
models:
  anthropic:sonnet 3.5:
    batch: anthropic
  openai:gpt-4o:
    batch: \"off\"
";
        config.apply(Path::new("config.yaml"), yaml).unwrap();
        let batch = |config: &Config, reference: &str| {
            let model = config.catalog.resolve(reference).unwrap();
            config.catalog.batch(model)
        };
        use crate::llm::batch::BatchApi;
        // Defaults follow the provider's kind.
        assert_eq!(batch(&config, "openai:gpt-4o-mini"), Some(BatchApi::Openai));
        assert_eq!(batch(&config, "ollama:qwen2.5-coder"), None);
        // The provider's setting, and the model's over it.
        assert_eq!(batch(&config, "anthropic:haiku 3.5"), None);
        assert_eq!(
            batch(&config, "anthropic:sonnet 3.5"),
            Some(BatchApi::Anthropic)
        );
        assert_eq!(batch(&config, "openai:gpt-4o"), None);
        // A model entry with only `batch:` keeps the model's prices.
        assert!(config.catalog.resolve("openai:gpt-4o").unwrap().input_price > Some(0.0));
        config
            .apply(
                Path::new("config.yaml"),
                "models:\n  openrouter:llama:\n    model: meta/llama\n",
            )
            .unwrap();
        assert_eq!(batch(&config, "openrouter:llama"), Some(BatchApi::Openai));
    }

    #[test]
    fn bad_batch_values_name_the_setting_and_the_allowed_values() {
        for (yaml, expected) in [
            (
                "providers:\n  openai:\n    batch: openia\n",
                "`batch: openia` is not a batch API: write openai, anthropic or off",
            ),
            (
                "models:\n  openai:gpt-4o:\n    batch: true\n",
                "`batch: true` does not say which batch API: write openai, anthropic or off",
            ),
            (
                "models:\n  openai:gpt-4o:\n    batch: 3\n",
                "openai, anthropic or off",
            ),
            (
                "models:\n  openai:gpt-4o:\n    batch: anthropic\n",
                "`openai:gpt-4o`: `batch: anthropic` does not fit a provider of kind openai: \
                 write `batch: openai` or `batch: off`",
            ),
            (
                "providers:\n  ollama:\n    batch: openai\n",
                "`ollama`: `batch: openai` does not fit a provider of kind ollama: it has no \
                 batch API",
            ),
        ] {
            let mut config = builtin();
            let e = config
                .apply(Path::new("config.yaml"), yaml)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected), "{yaml}: {e}");
            assert!(e.starts_with("config.yaml"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn bad_rate_limits_name_the_setting_and_the_fix() {
        for (yaml, expected) in [
            (
                "models:\n  openai:gpt-4o:\n    rate_limit: {rpm: 0}\n",
                "`openai:gpt-4o`: `rate_limit: rpm: 0` must be a positive number",
            ),
            (
                "providers:\n  openai:\n    rate_limit: {tpm: -5}\n",
                "`openai`: `rate_limit: tpm: -5` must be a positive number",
            ),
            ("providers:\n  openai:\n    rate_limit: {rpn: 5}\n", "rpn"),
        ] {
            let mut config = builtin();
            let e = config
                .apply(Path::new("config.yaml"), yaml)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected), "{yaml}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
