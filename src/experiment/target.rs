//! A catalog model resolved for calling, as every experiment kind uses it: its canonical
//! reference, its role, its endpoint (key read from the environment) and, when its provider
//! needs a key that is not set, why it cannot be called. The runtime turns a blocked target's
//! uncached calls into error rows naming the variable to set; cached answers are still served.

use std::sync::Arc;

use crate::cases::Values;
use crate::config::RateLimit;
use crate::config::{Catalog, ConfigError, ModelSpec};
use crate::dispatch::{AppCall, CallJob};
use crate::llm::{AnswerSchema, ChatRequest, Endpoint, Structured};
use crate::targets::App;

/// A model an experiment calls.
#[derive(Debug, Clone)]
pub struct Target {
    /// `provider:alias`, the one form stored with every row, whatever the user typed.
    pub reference: String,
    /// What it does when it is not the model under evaluation: `judge`, `reviewer`.
    pub role: Option<&'static str>,
    pub spec: ModelSpec,
    pub endpoint: Arc<Endpoint>,
    /// Why its calls cannot be sent (no key), if so.
    pub blocked: Option<String>,
    /// Whether its model-graded calls ask for structured output.
    pub structured: Structured,
    /// The rate limits config.yaml sets for it (its own, then its provider's).
    pub rate_limit: RateLimit,
    /// The batch API its calls may go through in batch mode (`batch:` in config.yaml, else
    /// its provider kind's); `None`: they run live.
    pub batch: Option<crate::llm::batch::BatchApi>,
    /// When the catalog does not list it, the note that says so (its id is sent as written),
    /// with the nearest entries in case of a typo.
    pub unlisted: Option<String>,
    /// The user's application, when it is one (`kind: http` or `kind: exec`); its calls are
    /// sent the values of the case they are made of.
    pub app: Option<AppCall>,
}

impl Target {
    /// Resolves `reference` (any name the catalog knows, or any id of a known provider) for
    /// calling.
    pub(crate) fn resolve(catalog: &Catalog, reference: &str) -> Result<Self, ConfigError> {
        // A name the catalog does not list runs too, its price and energy unknown.
        let model = catalog.model(reference)?;
        let unlisted = matches!(model, std::borrow::Cow::Owned(_)).then(|| {
            let nearest = catalog.nearest(reference);
            format!(
                "`{}` is not in the catalog: its id `{}` is sent to {} as written{}",
                model.reference(),
                model.model,
                model.provider,
                if nearest.is_empty() {
                    String::new()
                } else {
                    format!(";{nearest}")
                }
            )
        });
        let provider = catalog.provider(&model);
        provider.check_base_url()?;
        let endpoint = provider.endpoint();
        let app = provider.target.as_ref().map(|config| AppCall {
            app: Arc::new(App::resolve(&provider.name, config.spec.clone())),
            config: config.clone(),
            values: None,
        });
        let blocked = match &app {
            Some(call) if !call.app.missing.is_empty() => Some(format!(
                "no value for {}, named in the headers of {}: set it in the environment or in \
                 .env",
                call.app.missing.join(" and "),
                provider.name
            )),
            Some(_) => None,
            None => (provider.key_required && endpoint.api_key.is_none()).then(|| {
                format!(
                    "no API key for {}: set {} in the environment or in .env",
                    provider.name,
                    provider.key_vars_text()
                )
            }),
        };
        Ok(Self {
            reference: model.reference(),
            role: None,
            endpoint: Arc::new(endpoint),
            blocked,
            structured: model.structured,
            rate_limit: catalog.rate_limit(&model),
            batch: catalog.batch(&model),
            spec: model.into_owned(),
            unlisted,
            app,
        })
    }

    /// The same model in another role.
    pub(crate) fn with_role(mut self, role: &'static str) -> Self {
        self.role = Some(role);
        self
    }

    /// The reference with its role, for tables: `openai:gpt-4o (judge)`.
    pub(crate) fn label(&self) -> String {
        match self.role {
            Some(role) => format!("{} ({role})", self.reference),
            None => self.reference.clone(),
        }
    }

    /// The call of `request` to this model, for sample `repeat`, priced with its prices.
    pub(crate) fn job(&self, request: ChatRequest, repeat: u32) -> CallJob {
        self.case_job(request, None, repeat)
    }

    /// The call of `request` made of a case whose values are `values`: a target is sent them
    /// too (a model API only the request).
    pub(crate) fn case_job(
        &self,
        request: ChatRequest,
        values: Option<Arc<Values>>,
        repeat: u32,
    ) -> CallJob {
        match &self.app {
            Some(app) => {
                let app = AppCall {
                    values,
                    ..app.clone()
                };
                CallJob::to_app(
                    self.endpoint.clone(),
                    app,
                    request,
                    repeat,
                    self.spec.price(),
                )
            }
            None => CallJob::new(self.endpoint.clone(), request, repeat, self.spec.price()),
        }
    }

    /// The call of a model-graded `request` whose answer should take the shape `schema`: with
    /// the schema unless this model's `structured` setting is `off`; with `auto`, asked again
    /// without it when the server refuses it.
    pub(crate) fn shaped_job(
        &self,
        mut request: ChatRequest,
        schema: AnswerSchema,
        repeat: u32,
    ) -> CallJob {
        if self.structured != Structured::Off {
            request.schema = Some(Box::new(schema));
        }
        let mut job = self.job(request, repeat);
        job.plain_fallback = self.structured == Structured::Auto;
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_become_canonical() {
        let catalog = Catalog::builtin();
        let t = Target::resolve(&catalog, "anthropic:claude-3-5-haiku").unwrap();
        assert_eq!(t.reference, "anthropic:haiku 3.5");
        assert_eq!(
            t.clone().with_role("judge").label(),
            "anthropic:haiku 3.5 (judge)"
        );
        let t = Target::resolve(&catalog, "ollama:qwen2.5-coder:7b").unwrap();
        assert_eq!(t.reference, "ollama:qwen2.5-coder");
        assert_eq!(t.blocked, None, "ollama needs no key");
        assert_eq!(t.batch, None, "ollama has no batch API");
        use crate::llm::batch::BatchApi;
        let batch = |r: &str| Target::resolve(&catalog, r).unwrap().batch;
        assert_eq!(batch("openai:gpt-4o-mini"), Some(BatchApi::Openai));
        assert_eq!(batch("anthropic:haiku 3.5"), Some(BatchApi::Anthropic));
    }
}
