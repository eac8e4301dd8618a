//! The catalog: providers, models and the resolution of `<provider>:<name>` references. It
//! must not hold the built-in data nor read config files; calling a resolved model is the
//! runtime's (`experiment::Target`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::ConfigError;
use super::RateLimit;
use crate::cost::Price;
use crate::energy::{EnergyProfile, Range};
use crate::llm::batch::BatchApi;
use crate::llm::client::ApiKey;
use crate::llm::{Endpoint, ProviderKind};

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
    /// Limits set in config.yaml for every model of the provider (`rate_limit:`).
    pub rate_limit: RateLimit,
    /// The batch API config.yaml sets for every model of the provider (`batch:`); `None`:
    /// its kind's ([`BatchApi::of`]).
    pub batch: Option<BatchSetting>,
    /// What a provider of kind `http` or `exec` (the user's application) is sent, and how.
    pub target: Option<std::sync::Arc<super::TargetConfig>>,
}

/// `batch:` in config.yaml: which batch API a provider's or a model's calls may go through,
/// or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchSetting {
    /// `batch: openai` or `batch: anthropic`.
    Api(BatchApi),
    /// `batch: off`: its calls always run live.
    Off,
}

impl BatchSetting {
    /// The values `batch:` accepts, for messages.
    pub const ALLOWED: &'static str = "openai, anthropic or off";

    /// The setting written `name` (`openai`, `anthropic`, `off`; case ignored).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "off" | "none" | "false" => Some(Self::Off),
            other => BatchApi::from_name(other).map(Self::Api),
        }
    }

    /// Its name, as config.yaml writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Api(api) => api.as_str(),
            Self::Off => "off",
        }
    }

    /// Refuses an API that `kind`'s requests cannot be sent through: OpenAI's batch API takes
    /// the bodies of OpenAI and OpenAI-compatible providers; Anthropic's, Anthropic's.
    pub(crate) fn check(self, kind: ProviderKind) -> Result<(), String> {
        let fits = match self {
            Self::Off => true,
            Self::Api(BatchApi::Openai) => {
                matches!(kind, ProviderKind::Openai | ProviderKind::OpenaiCompatible)
            }
            Self::Api(BatchApi::Anthropic) => kind == ProviderKind::Anthropic,
        };
        if fits {
            return Ok(());
        }
        let fix = match kind {
            ProviderKind::Anthropic => "write `batch: anthropic` or `batch: off`",
            ProviderKind::Openai | ProviderKind::OpenaiCompatible => {
                "write `batch: openai` or `batch: off`"
            }
            ProviderKind::Ollama | ProviderKind::Http | ProviderKind::Exec => {
                "it has no batch API: write `batch: off` or leave it out"
            }
        };
        Err(format!(
            "`batch: {}` does not fit a provider of kind {}: {fix}",
            self.as_str(),
            kind.as_str(),
        ))
    }
}

impl<'de> serde::Deserialize<'de> for BatchSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;

        impl serde::de::Visitor<'_> for Name {
            type Value = BatchSetting;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "`batch:` as {}", BatchSetting::ALLOWED)
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<BatchSetting, E> {
                BatchSetting::from_name(text).ok_or_else(|| {
                    E::custom(format!(
                        "`batch: {text}` is not a batch API: write {}",
                        BatchSetting::ALLOWED
                    ))
                })
            }

            // YAML 1.1 reads a bare `off` as false.
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<BatchSetting, E> {
                if on {
                    Err(E::custom(format!(
                        "`batch: true` does not say which batch API: write {}",
                        BatchSetting::ALLOWED
                    )))
                } else {
                    Ok(BatchSetting::Off)
                }
            }
        }

        deserializer.deserialize_any(Name)
    }
}

impl ProviderSpec {
    /// The base URL in force: the environment variable if set, else the configured default.
    pub(crate) fn base_url(&self) -> String {
        self.base_url_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| self.default_base_url.clone())
    }

    /// Where the base URL in force was set, for messages: the variable, or config.yaml.
    pub(crate) fn base_url_setting(&self) -> String {
        match self.base_url_env.as_deref() {
            Some(var) if std::env::var(var).is_ok_and(|v| !v.trim().is_empty()) => var.to_owned(),
            Some(var) => format!("`base_url` of `{}` in config.yaml, or set {var}", self.name),
            None => format!("`base_url` of `{}` in config.yaml", self.name),
        }
    }

    /// Refuses a base URL that cannot be posted to (`htp://…`, `localhost:8080` without a
    /// scheme), before any call is tried.
    pub(crate) fn check_base_url(&self) -> Result<(), ConfigError> {
        // An exec target's "URL" is its command.
        if self.kind == ProviderKind::Exec {
            return Ok(());
        }
        let endpoint = Endpoint {
            provider: self.name.clone(),
            kind: self.kind,
            base_url: self.base_url(),
            api_key: None,
            basic_auth: None,
        };
        let usable = reqwest::Url::parse(&endpoint.chat_url())
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if usable {
            return Ok(());
        }
        Err(ConfigError::BadBaseUrl {
            provider: self.name.clone(),
            url: hide_user_info(&endpoint.base_url),
            setting: self.base_url_setting(),
        })
    }

    /// The endpoint with its key read from the environment (None when none is set).
    pub(crate) fn endpoint(&self) -> Endpoint {
        let api_key = self
            .key_vars
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .map(|v| v.trim().to_owned())
            .find(|v| !v.is_empty())
            .map(ApiKey::new);
        let (base_url, basic_auth) = split_user_info(&self.base_url());
        Endpoint {
            provider: self.name.clone(),
            kind: self.kind,
            base_url,
            api_key,
            basic_auth,
        }
    }

    /// The variables a user can set for the key, for messages.
    pub(crate) fn key_vars_text(&self) -> String {
        self.key_vars.join(" or ")
    }
}

/// ` did you mean `x`?` naming the one or two `known` names closest to `typed`, or nothing
/// when none is within `max(1, significant / 4)` edits (Damerau-Levenshtein, case ignored):
/// a slip of a letter or two, not another model.
fn did_you_mean<'a>(
    typed: &str,
    significant: usize,
    known: impl Iterator<Item = &'a str>,
) -> String {
    let limit = (significant / 4).max(1);
    let typed = typed.to_ascii_lowercase();
    let mut close: Vec<(usize, &str)> = known
        .map(|k| {
            (
                strsim::damerau_levenshtein(&typed, &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .collect();
    close.sort_by_key(|(distance, _)| *distance);
    match close.as_slice() {
        [] => String::new(),
        [(_, one)] => format!(" did you mean `{one}`?"),
        [(_, one), (_, two), ..] => format!(" did you mean `{one}` or `{two}`?"),
    }
}

/// The base URL without its user-info, and the user and password it held (the password
/// remembered as a secret, redacted from every message). The URL is rewritten only when it
/// held some, so cache keys of URLs without credentials are unchanged.
fn split_user_info(base_url: &str) -> (String, Option<(String, ApiKey)>) {
    let Ok(mut url) = reqwest::Url::parse(base_url) else {
        return (base_url.to_owned(), None);
    };
    if url.username().is_empty() && url.password().is_none() {
        return (base_url.to_owned(), None);
    }
    let user = url.username().to_owned();
    let password = ApiKey::new(url.password().unwrap_or_default());
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let mut stripped = url.to_string();
    // Url adds a `/` to a bare host; keep the user's form otherwise.
    if !base_url.ends_with('/') && stripped.ends_with('/') {
        stripped.pop();
    }
    (stripped, Some((user, password)))
}

/// `url` with anything between `://` and `@` (a user and password) replaced by `***`.
pub(crate) fn hide_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
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
    /// USD per million input tokens; `None`: unknown (a model not in the catalog, or a
    /// config.yaml entry that gives none), so its calls' cost is unknown too.
    pub input_price: Option<f64>,
    /// USD per million output tokens; `None`: unknown.
    pub output_price: Option<f64>,
    /// The most tokens it reads and writes in one call, where published.
    pub context_window: Option<u64>,
    /// Where its prices come from (the price list and its commit, or config.yaml); `None`:
    /// a model not in the catalog, called by the id as written.
    pub source: Option<String>,
    pub energy: EnergyProfile,
    /// Whether it reads images (relevance experiments need a model that does).
    pub vision: bool,
    /// Whether its model-graded calls ask for structured output.
    pub structured: crate::llm::Structured,
    /// Limits set in config.yaml for this model (`rate_limit:`), over its provider's.
    pub rate_limit: RateLimit,
    /// The batch API config.yaml sets for this model (`batch:`), over its provider's.
    pub batch: Option<BatchSetting>,
}

impl ModelSpec {
    /// `provider:alias`.
    pub(crate) fn reference(&self) -> String {
        format!("{}:{}", self.provider, self.alias)
    }

    /// A model `provider` serves that the catalog does not list, called by `name` as written:
    /// its price is unknown (0 on a provider that needs no key: a local server), and so is its
    /// energy (no parameter count).
    pub(crate) fn unlisted(provider: &ProviderSpec, name: &str) -> Self {
        let price = (!provider.key_required).then_some(0.0);
        Self {
            provider: provider.name.clone(),
            alias: name.to_owned(),
            other_names: Vec::new(),
            model: name.to_owned(),
            input_price: price,
            output_price: price,
            context_window: None,
            source: None,
            energy: EnergyProfile {
                parameters: None,
                pue: provider.pue,
            },
            vision: true,
            structured: crate::llm::Structured::Auto,
            rate_limit: RateLimit::default(),
            batch: None,
        }
    }

    /// Its prices, to cost its calls with; `None` when either is unknown.
    pub(crate) fn price(&self) -> Option<Price> {
        Some(Price {
            input_per_mtok: self.input_price?,
            output_per_mtok: self.output_price?,
        })
    }

    /// What to set in config.yaml for its price to be known: `` `input_price:` and
    /// `output_price:` under `models: openai:gpt-5.1:` in config.yaml `` (only those missing).
    pub(crate) fn price_to_set(&self) -> String {
        let missing: Vec<&str> = [
            ("`input_price:`", self.input_price),
            ("`output_price:`", self.output_price),
        ]
        .into_iter()
        .filter(|(_, price)| price.is_none())
        .map(|(key, _)| key)
        .collect();
        format!(
            "{} (USD per million tokens) under `models: {}:` in config.yaml",
            missing.join(" and "),
            self.reference()
        )
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

/// The provider and name of a `<provider>:<name>` reference, trimmed; both must be non-empty.
pub(super) fn split_reference(reference: &str) -> Result<(&str, &str), ConfigError> {
    reference
        .split_once(':')
        .map(|(p, n)| (p.trim(), n.trim()))
        .filter(|(p, n)| !p.is_empty() && !n.is_empty())
        .ok_or_else(|| ConfigError::BadReference {
            reference: reference.to_owned(),
        })
}

impl Catalog {
    /// The model a `<provider>:<name>` reference names (by alias, other name or model id).
    pub(crate) fn resolve(&self, reference: &str) -> Result<&ModelSpec, ConfigError> {
        let (provider, name) = split_reference(reference)?;
        let provider_key = self
            .providers
            .keys()
            .find(|k| k.eq_ignore_ascii_case(provider))
            .ok_or_else(|| ConfigError::UnknownProvider {
                reference: reference.to_owned(),
                provider: provider.to_owned(),
                known: self.provider_names(),
                suggestion: did_you_mean(
                    provider,
                    provider.len(),
                    self.providers.keys().map(String::as_str),
                ),
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
                suggestion: did_you_mean(
                    &format!("{provider_key}:{name}"),
                    name.len(),
                    self.models
                        .iter()
                        .map(|m| m.reference())
                        .collect::<Vec<_>>()
                        .iter()
                        .map(String::as_str),
                ),
            })
    }

    /// The model a `<provider>:<name>` reference names, as [`resolve`](Self::resolve) finds
    /// it; a name the catalog does not list, of a known provider, is that provider's model of
    /// that id ([`ModelSpec::unlisted`]: price and energy unknown), as promptfoo takes
    /// `openai:<any id>`.
    pub(crate) fn model(&self, reference: &str) -> Result<Cow<'_, ModelSpec>, ConfigError> {
        match self.resolve(reference) {
            Ok(model) => Ok(Cow::Borrowed(model)),
            Err(ConfigError::UnknownModel { provider, .. }) => {
                let (_, name) = split_reference(reference)?;
                Ok(Cow::Owned(ModelSpec::unlisted(
                    &self.providers[&provider],
                    name,
                )))
            }
            Err(other) => Err(other),
        }
    }

    /// ` did you mean `x`?` naming the one or two entries closest to `reference` (a model
    /// not in the catalog: maybe a typo), or nothing.
    pub(crate) fn nearest(&self, reference: &str) -> String {
        let references: Vec<String> = self.models.iter().map(ModelSpec::reference).collect();
        let name = split_reference(reference).map_or(reference, |(_, name)| name);
        did_you_mean(reference, name.len(), references.iter().map(String::as_str))
    }

    /// The provider of a model.
    pub(crate) fn provider(&self, model: &ModelSpec) -> &ProviderSpec {
        &self.providers[&model.provider]
    }

    /// The rate limits config.yaml sets for `model`: its own, then its provider's.
    pub(crate) fn rate_limit(&self, model: &ModelSpec) -> RateLimit {
        model.rate_limit.over(self.provider(model).rate_limit)
    }

    /// The batch API `model`'s calls may go through: its own `batch:`, else its provider's,
    /// else its provider kind's ([`BatchApi::of`]); `None` when it has none or `batch: off`.
    pub(crate) fn batch(&self, model: &ModelSpec) -> Option<BatchApi> {
        let provider = self.provider(model);
        match model.batch.or(provider.batch) {
            Some(BatchSetting::Api(api)) => Some(api),
            Some(BatchSetting::Off) => None,
            None => BatchApi::of(provider.kind),
        }
    }

    /// Whether a provider is the user's application (`kind: http` or `kind: exec`).
    pub(crate) fn has_targets(&self) -> bool {
        self.providers.values().any(|p| p.target.is_some())
    }

    /// The provider names, comma-separated, for messages.
    pub(super) fn provider_names(&self) -> String {
        self.providers
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_base_url_and_the_cache_key() {
        let (url, auth) = split_user_info("http://alice:s3cret-pass@proxy.local:8080/v1");
        assert_eq!(url, "http://proxy.local:8080/v1");
        let (user, password) = auth.unwrap();
        assert_eq!((user.as_str(), password.expose()), ("alice", "s3cret-pass"));
        assert_eq!(
            crate::llm::client::redact("failed with s3cret-pass"),
            "failed with ***"
        );
        let (same, none) = split_user_info("http://proxy.local:8080/v1");
        assert_eq!(
            (same.as_str(), none.is_none()),
            ("http://proxy.local:8080/v1", true)
        );
        assert_eq!(
            hide_user_info("http://alice:s3cret-pass@proxy/v1"),
            "http://***@proxy/v1"
        );
    }

    #[test]
    fn a_typo_in_a_reference_suggests_the_nearest_entries() {
        let c = Catalog::builtin();
        let e = c.resolve("local:smolm2").unwrap_err().to_string();
        assert!(e.contains("did you mean `local:smollm2`?"), "{e}");
        let e = c.resolve("opneai:gpt-4o").unwrap_err().to_string();
        assert!(e.contains("did you mean `openai`?"), "{e}");
        let e = c.resolve("openai:llama-9000").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn any_id_of_a_known_provider_is_a_model_of_unknown_price() {
        let c = Catalog::builtin();
        let m = c.model("OpenAI:gpt-9.9-preview").unwrap();
        assert!(matches!(m, Cow::Owned(_)), "not in the catalog");
        assert_eq!(
            (
                m.provider.as_str(),
                m.model.as_str(),
                m.reference().as_str()
            ),
            ("openai", "gpt-9.9-preview", "openai:gpt-9.9-preview")
        );
        assert_eq!((m.price(), m.source.as_deref()), (None, None));
        assert_eq!(m.energy.parameters, None, "energy unknown too");
        assert_eq!(m.energy.pue, c.providers["openai"].pue);
        assert_eq!(
            m.price_to_set(),
            "`input_price:` and `output_price:` (USD per million tokens) under \
             `models: openai:gpt-9.9-preview:` in config.yaml"
        );
        // A local server's model costs nothing.
        let local = c.model("ollama:mistral:7b").unwrap();
        assert_eq!(local.price(), Some(Price::default()));
        assert_eq!(local.model, "mistral:7b");
        // One that may be a typo is named with the nearest entry.
        assert_eq!(c.nearest("local:smolm2"), " did you mean `local:smollm2`?");
        assert_eq!(c.nearest("openai:gpt-9.9-preview"), "");
        // A listed name is the catalog's entry; a bad provider or reference is still refused.
        assert!(matches!(
            c.model("openai:gpt-4o-mini"),
            Ok(Cow::Borrowed(_))
        ));
        assert!(matches!(
            c.model("acme:x"),
            Err(ConfigError::UnknownProvider { .. })
        ));
        assert!(matches!(
            c.model("gpt-5"),
            Err(ConfigError::BadReference { .. })
        ));
    }

    #[test]
    fn a_config_entry_without_a_price_has_it_unknown_unless_it_replaces_one_or_is_local() {
        let mut config = super::super::Config {
            catalog: Catalog::builtin(),
            settings: super::super::Settings::default(),
            source: None,
        };
        let yaml = "
providers:
  vllm: {kind: openai-compatible, base_url: \"http://127.0.0.1:8000/v1\"}
models:
  openai:gpt-9: {parameters: 8}
  openai:half: {input_price: 1}
  openai:gpt-4o: {model: gpt-4o-2024-08-06}
  vllm:llama3: {parameters: 8}
";
        config
            .apply(std::path::Path::new("config.yaml"), yaml)
            .unwrap();
        let price = |reference: &str| {
            let m = config.catalog.resolve(reference).unwrap();
            (m.input_price, m.output_price, m.source.clone())
        };
        let from_file = Some("config.yaml".to_owned());
        assert_eq!(price("openai:gpt-9"), (None, None, from_file.clone()));
        assert_eq!(price("openai:half"), (Some(1.0), None, from_file.clone()));
        assert_eq!(
            config
                .catalog
                .resolve("openai:half")
                .unwrap()
                .price_to_set(),
            "`output_price:` (USD per million tokens) under `models: openai:half:` in config.yaml"
        );
        assert_eq!(
            price("openai:gpt-4o"),
            (Some(2.5), Some(10.0), from_file.clone()),
            "the built-in's prices stay"
        );
        assert_eq!(price("vllm:llama3"), (Some(0.0), Some(0.0), from_file));
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
}
