//! Providers of `kind: http` and `kind: exec` in config.yaml: the user's own application as a
//! target ([`crate::targets`]). Each adds its provider and the model `<name>:default`:
//!
//! ```yaml
//! providers:
//!   my-app:
//!     kind: http
//!     url: http://127.0.0.1:8000/ask
//!     headers: {Authorization: "Bearer ${APP_TOKEN}"}
//!     body: {question: "{{prompt}}", context: "{{context}}"}
//!     answer: output.text
//!   my-script:
//!     kind: exec
//!     run: python3 app.py
//! ```

use std::path::Path;
use std::sync::Arc;

use super::{ProviderEntry, checked_rate_limit, checked_retry, checked_timeout};
use crate::config::{BatchSetting, Config, ModelSpec, ProviderSpec, RateLimit, TargetConfig};
use crate::energy::{EnergyProfile, Range};
use crate::llm::{ProviderKind, Structured};
use crate::process::Program;
use crate::targets::exec::ExecTarget;
use crate::targets::http::{BodyTemplate, HeaderTemplate, HttpTarget};
use crate::targets::path::JsonPath;
use crate::targets::{Sender, TargetSpec};

/// The alias of a target's model: `my-app:default`.
pub const TARGET_MODEL: &str = "default";

impl Config {
    /// Adds target `name` of `kind` (`http` or `exec`) and its model `name:default`; a
    /// command's relative paths are taken from `config_path`'s directory.
    pub(super) fn apply_target(
        &mut self,
        name: String,
        kind: ProviderKind,
        entry: ProviderEntry,
        config_path: &Path,
    ) -> Result<(), String> {
        let at = |e: String| format!("provider `{name}` (kind: {}): {e}", kind.as_str());
        entry.refuse_other_kinds_fields(kind).map_err(at)?;
        let sender = match kind {
            ProviderKind::Exec => exec_sender(&entry, config_path),
            _ => http_sender(&entry),
        }
        .map_err(at)?;
        let base_url = match (&sender, &entry.url, &entry.run) {
            (Sender::Http(_), Some(url), _) => url.trim().to_owned(),
            (_, _, run) => run.clone().unwrap_or_default(),
        };
        let timeout = entry
            .timeout_secs
            .map(checked_timeout)
            .transpose()
            .map_err(at)?;
        let config = TargetConfig {
            spec: Arc::new(TargetSpec { sender, timeout }),
            retry: entry.retry.map(checked_retry).transpose().map_err(at)?,
            max_cost_usd: match entry.max_cost_usd {
                Some(usd) if !(usd.is_finite() && usd >= 0.0) => {
                    return Err(at(format!(
                        "`max_cost_usd: {usd}` must be a number of US dollars, 0 or more"
                    )));
                }
                other => other,
            },
        };
        let pue = entry.pue.map_or(Range::exact(1.2), |p| p.range());
        let provider = ProviderSpec {
            name: name.clone(),
            kind,
            base_url_env: None,
            default_base_url: base_url,
            key_vars: Vec::new(),
            key_required: false,
            pue,
            rate_limit: checked_rate_limit(&name, entry.rate_limit)?.unwrap_or_default(),
            batch: match entry.batch {
                None | Some(BatchSetting::Off) => None,
                Some(setting) => return Err(at(setting.check(kind).err().unwrap_or_default())),
            },
            target: Some(Arc::new(config)),
        };
        self.catalog.models.retain(|m| m.provider != name);
        self.catalog.models.push(target_model(&name, pue));
        self.catalog.providers.insert(name, provider);
        Ok(())
    }
}

/// The model of target `provider`: `provider:default`, at no price (its cost is what it
/// reports) and without parameters (its energy is unknown).
fn target_model(provider: &str, pue: Range) -> ModelSpec {
    ModelSpec {
        provider: provider.to_owned(),
        alias: TARGET_MODEL.to_owned(),
        other_names: Vec::new(),
        model: TARGET_MODEL.to_owned(),
        // As for any provider that needs no key: 0 unless config.yaml sets a price.
        input_price: Some(0.0),
        output_price: Some(0.0),
        context_window: None,
        source: None,
        energy: EnergyProfile {
            parameters: None,
            pue,
        },
        vision: true,
        // An application answers as it answers: no schema is sent to it.
        structured: Structured::Off,
        rate_limit: RateLimit::default(),
        batch: None,
    }
}

/// The sender of an HTTP target.
fn http_sender(entry: &ProviderEntry) -> Result<Sender, String> {
    let url = entry.url.as_deref().map(str::trim).unwrap_or_default();
    if url.is_empty() {
        return Err(
            "needs `url:`, where your application answers (http://127.0.0.1:8000/ask)".into(),
        );
    }
    if url.contains("${") || url.contains("{{") {
        return Err(format!(
            "`url: {url}` names a variable or a value; a URL is sent as written: put secrets \
             in `headers:` (`Authorization: \"Bearer ${{APP_TOKEN}}\"`) and values in `body:`"
        ));
    }
    let usable = reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if !usable {
        return Err(format!(
            "`url: {}` is not an http:// or https:// URL",
            crate::config::hide_user_info(url)
        ));
    }
    let method = entry
        .method
        .as_deref()
        .unwrap_or("POST")
        .trim()
        .to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| format!("`method: {method}` is not an HTTP method (GET, POST, PUT…)"))?;
    let headers = entry
        .headers
        .iter()
        .flatten()
        .map(|(name, value)| HeaderTemplate::parse(name, value))
        .collect::<Result<Vec<_>, _>>()?;
    let path = |field: &str, written: &Option<String>| {
        written
            .as_deref()
            .map(JsonPath::parse)
            .transpose()
            .map_err(|e| format!("`{field}:` {e}"))
    };
    let answer = path("answer", &entry.answer)?.ok_or_else(|| {
        "needs `answer:`, the path to the answer's text in its JSON response (`output.text`, \
         or a JSON Pointer such as `/choices/0/message/content`)"
            .to_owned()
    })?;
    Ok(Sender::Http(Box::new(HttpTarget {
        method,
        headers,
        body: entry.body.as_ref().map(BodyTemplate::parse),
        answer,
        input_tokens: path("input_tokens", &entry.input_tokens)?,
        output_tokens: path("output_tokens", &entry.output_tokens)?,
        cost_usd: path("cost_usd", &entry.cost_usd)?,
    })))
}

/// The sender of an exec target: its command, run in `config_path`'s directory.
fn exec_sender(entry: &ProviderEntry, config_path: &Path) -> Result<Sender, String> {
    let run = entry.run.as_deref().unwrap_or_default();
    if run.contains("{{") || run.contains("${") {
        return Err(format!(
            "`run: {run}` names a value or a variable; the command reads its request (the \
             messages, the case's values) as JSON on stdin, and the environment itself"
        ));
    }
    // Relative to config.yaml, whatever the directory track runs in.
    let dir = match config_path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let program = Program::new(
        run,
        &dir,
        "the command of your application, such as `python3 app.py`",
    )?;
    Ok(Sender::Exec(ExecTarget { program }))
}

impl ProviderEntry {
    /// Refuses, on a provider of a model API, the fields only a target takes.
    pub(super) fn refuse_target_fields(&self, name: &str) -> Result<(), String> {
        match self.target_fields().first() {
            Some(field) => Err(format!(
                "provider `{name}`: `{field}:` is for your own application, with `kind: http` \
                 or `kind: exec`"
            )),
            None => Ok(()),
        }
    }

    /// Refuses on a target of `kind` what the other kind, or a model API, takes.
    fn refuse_other_kinds_fields(&self, kind: ProviderKind) -> Result<(), String> {
        let fit = |field: &str| match field {
            "run" => kind == ProviderKind::Exec,
            "timeout_secs" | "retry" | "max_cost_usd" => true,
            _ => kind == ProviderKind::Http,
        };
        let other = if kind == ProviderKind::Exec {
            "http"
        } else {
            "exec"
        };
        if let Some(field) = self.target_fields().into_iter().find(|f| !fit(f)) {
            return Err(format!("`{field}:` is for `kind: {other}`"));
        }
        if self.base_url.is_some() || self.api_key_env.is_some() {
            return Err(
                "`base_url:` and `api_key_env:` are for model APIs: give an application its \
                 `url:` and its secrets in `headers:` (`${VARIABLE}`)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The target's fields this entry sets.
    fn target_fields(&self) -> Vec<&'static str> {
        [
            ("url", self.url.is_some()),
            ("method", self.method.is_some()),
            ("headers", self.headers.is_some()),
            ("body", self.body.is_some()),
            ("answer", self.answer.is_some()),
            ("input_tokens", self.input_tokens.is_some()),
            ("output_tokens", self.output_tokens.is_some()),
            ("cost_usd", self.cost_usd.is_some()),
            ("run", self.run.is_some()),
            ("timeout_secs", self.timeout_secs.is_some()),
            ("retry", self.retry.is_some()),
            ("max_cost_usd", self.max_cost_usd.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, set)| set.then_some(field))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Catalog, Settings};

    fn apply(yaml: &str) -> Result<Config, String> {
        let mut config = Config {
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            source: None,
        };
        config
            .apply(Path::new("conf/config.yaml"), yaml)
            .map(|()| config)
            .map_err(|e| e.to_string())
    }

    const TARGETS: &str = "
providers:
  my-app:
    kind: http
    url: http://127.0.0.1:8000/ask
    headers:
      Authorization: Bearer ${APP_TOKEN}
    body: {q: '{{prompt}}'}
    answer: output.text
    cost_usd: usage.cost
    rate_limit: {rpm: 60}
    timeout_secs: 5
    retry: {max_attempts: 2}
  my-script:
    kind: exec
    run: python3 app.py
    max_cost_usd: 0.01
";

    #[test]
    fn targets_add_their_provider_and_their_default_model() {
        let config = apply(TARGETS).unwrap();
        let model = config.catalog.resolve("my-app:default").unwrap();
        assert_eq!(
            (model.input_price, model.energy.parameters),
            (Some(0.0), None)
        );
        assert_eq!(model.structured, Structured::Off);
        let provider = config.catalog.provider(model);
        assert_eq!(provider.kind, ProviderKind::Http);
        assert_eq!(provider.base_url(), "http://127.0.0.1:8000/ask");
        assert_eq!(config.catalog.rate_limit(model).rpm, Some(60.0));
        assert_eq!(config.catalog.batch(model), None);
        let app = provider.target.as_ref().unwrap();
        assert_eq!(app.spec.timeout, Some(std::time::Duration::from_secs(5)));
        assert_eq!(app.retry.unwrap().max_attempts, 2);
        let Sender::Http(http) = &app.spec.sender else {
            panic!("{app:?}")
        };
        assert_eq!(http.variables(), ["APP_TOKEN"]);
        assert_eq!(http.method, reqwest::Method::POST);
        let script = config.catalog.resolve("my-script:default").unwrap();
        let target = config.catalog.provider(script).target.clone().unwrap();
        let Sender::Exec(exec) = &target.spec.sender else {
            panic!("{target:?}")
        };
        assert_eq!(exec.program.run, "python3 app.py");
        assert!(exec.program.dir.is_absolute() && exec.program.dir.ends_with("conf"));
        assert_eq!(target.max_cost_usd, Some(0.01));
        // An exec target without `retry:` is tried once; an HTTP one with the run's policy.
        assert_eq!(target.retry_policy(config.settings.retry).max_attempts, 1);
    }

    #[test]
    fn a_target_missing_a_field_or_given_another_kinds_is_refused_naming_it() {
        for (yaml, want) in [
            (
                "providers:\n  a:\n    kind: http\n    answer: x\n",
                "provider `a` (kind: http): needs `url:`",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: http://h/x\n",
                "needs `answer:`",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: ftp://h/x\n    answer: x\n",
                "`url: ftp://h/x` is not an http:// or https:// URL",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: http://h/?k=${KEY}\n    answer: x\n",
                "put secrets in `headers:`",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: http://h/\n    answer: a..b\n",
                "`answer:` `a..b` is not a path",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: http://h/\n    answer: x\n    run: x\n",
                "`run:` is for `kind: exec`",
            ),
            (
                "providers:\n  a:\n    kind: exec\n    run: app\n    url: http://h/\n",
                "`url:` is for `kind: http`",
            ),
            ("providers:\n  a:\n    kind: exec\n", "`run` is empty"),
            (
                "providers:\n  a:\n    kind: exec\n    run: app\n    batch: openai\n",
                "it has no batch API",
            ),
            (
                "providers:\n  a:\n    kind: exec\n    run: app\n    max_cost_usd: -1\n",
                "`max_cost_usd: -1` must be a number of US dollars",
            ),
            (
                "providers:\n  a:\n    kind: http\n    url: http://h/\n    answer: x\n    method: 'P T'\n",
                "is not an HTTP method",
            ),
            (
                "providers:\n  openai:\n    url: http://h/\n",
                "provider `openai`: `url:` is for your own application",
            ),
        ] {
            let e = apply(yaml).unwrap_err();
            assert!(e.contains(want), "{yaml}: {e}");
            assert!(e.starts_with("conf/config.yaml: "), "{e}");
        }
    }
}
