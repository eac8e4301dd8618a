//! The built-in providers and models: data only. It must not hold lookup logic nor read the
//! environment or files.

use super::RateLimit;
use std::collections::BTreeMap;

use super::{Catalog, ModelSpec, ProviderSpec};
use crate::energy::{EnergyProfile, Parameters, Range};
use crate::llm::ProviderKind;

impl Catalog {
    /// The built-in providers and models (prices: public lists, August 2026; parameter counts:
    /// the specification's, and EcoLogits 0.9.1's assumptions for closed models).
    #[allow(
        clippy::too_many_lines,
        reason = "a data table: the built-in models and their prices, one entry each"
    )]
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
                        rate_limit: RateLimit::default(),
                        // The kind's own batch API, if it has one.
                        batch: None,
                        target: None,
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
                    parameters: Some(Parameters {
                        spec: spec_p,
                        active,
                        total,
                    }),
                    pue: providers[provider].pue,
                },
                // Text-only models are marked after the list.
                vision: true,
                structured: crate::llm::Structured::Auto,
                rate_limit: RateLimit::default(),
                batch: None,
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
            // A vision model served locally, for relevance experiments without keys.
            model(
                "ollama",
                "llava",
                &[],
                "llava:7b",
                (0.0, 0.0),
                7.0,
                x(7.0),
                x(7.0),
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
        let mut models = models;
        // Text only: a relevance experiment with them fails before any call.
        for m in &mut models {
            m.vision = !matches!(m.alias.as_str(), "qwen2.5-coder" | "llama3.2" | "smollm2");
        }
        Self { providers, models }
    }
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
                gpt.energy.parameters.map(|p| p.spec)
            ),
            (2.5, 10.0, Some(200.0))
        );
    }
}
