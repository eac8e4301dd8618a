//! The built-in providers and models: data only. It must not hold lookup logic nor read the
//! environment or files.

use super::RateLimit;
use std::collections::BTreeMap;

use super::{Catalog, ModelSpec, ProviderSpec};
use crate::energy::{EnergyProfile, Parameters, Range};
use crate::llm::ProviderKind;

/// Where the hosted models' prices and context windows come from: the `genai-prices` data of
/// Pydantic (MIT licence), maintained from the providers' price pages, at this commit.
pub const PRICE_LIST_URL: &str = "https://github.com/pydantic/genai-prices/blob/\
47df840a5ab10bbcffb8e5ac01b9899032245d1b/prices/data.json";

/// The source of each hosted model's prices, as `track models` shows it: [`PRICE_LIST_URL`]'s
/// repository, commit and date, short enough for a table cell.
pub const PRICE_SOURCE: &str = "genai-prices@47df840a5ab1 (2026-08-21)";

/// The date of [`PRICE_SOURCE`]'s commit. Where it dates a change of price (Claude Sonnet 5's
/// introductory price ended on 2026-08-31), the price in force since is the catalog's.
pub const PRICES_AS_OF: &str = "2026-08-21";

/// The source of a local model's price: nothing is billed.
const LOCAL_SOURCE: &str = "local model: no charge";

impl Catalog {
    /// The built-in providers and models (prices and context windows: [`PRICE_LIST_URL`] as of
    /// [`PRICES_AS_OF`], the specification's for the models it names; parameter counts: the
    /// specification's, and EcoLogits 0.9.1's assumptions for closed models; none published
    /// for current ones, whose energy is unknown).
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
        let x = Range::exact;
        // An entry whose parameter count is published, or assumed by EcoLogits 0.9.1.
        let model = |provider: &str,
                     alias: &str,
                     others: &[&str],
                     id: &str,
                     (prices, context): ((f64, f64), Option<u64>),
                     spec_p: f64,
                     active: Range,
                     total: Range| {
            ModelSpec {
                provider: provider.to_owned(),
                alias: alias.to_owned(),
                other_names: others.iter().map(|n| (*n).to_owned()).collect(),
                model: id.to_owned(),
                input_price: Some(prices.0),
                output_price: Some(prices.1),
                context_window: context,
                source: Some(if providers[provider].key_required {
                    PRICE_SOURCE.to_owned()
                } else {
                    LOCAL_SOURCE.to_owned()
                }),
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
        // A current model of the price list: no parameter count is published (energy
        // unknown), its alias is its id.
        let current = |provider: &str, id: &str, prices: (f64, f64), context: Option<u64>| {
            let mut m = model(
                provider,
                id,
                &[],
                id,
                (prices, context),
                0.0,
                x(0.0),
                x(0.0),
            );
            m.energy.parameters = None;
            m
        };
        let r = |min, max| Range { min, max };
        let k = |thousands: u64| Some(thousands * 1_000);
        let mut models = vec![
            // Prices fixed by the specification's reference (measurement.md); the price list
            // agrees.
            model(
                "openai",
                "gpt-4o",
                &[],
                "gpt-4o",
                ((2.5, 10.0), k(128)),
                200.0,
                r(44.0, 132.0),
                x(440.0),
            ),
            model(
                "openai",
                "gpt-4o-mini",
                &[],
                "gpt-4o-mini",
                ((0.15, 0.6), k(128)),
                18.0,
                r(8.0, 28.0),
                r(8.0, 28.0),
            ),
            model(
                "anthropic",
                "sonnet 3.5",
                &["claude-3-5-sonnet", "claude-3.5-sonnet"],
                "claude-3-5-sonnet-20241022",
                ((3.0, 15.0), k(200)),
                175.0,
                r(44.0, 132.0),
                x(440.0),
            ),
            model(
                "anthropic",
                "haiku 3.5",
                &["claude-3-5-haiku", "claude-3.5-haiku"],
                "claude-3-5-haiku-20241022",
                ((0.8, 4.0), k(200)),
                18.0,
                r(8.0, 28.0),
                r(8.0, 28.0),
            ),
            model(
                "google",
                "gemini-1.5-pro",
                &[],
                "gemini-1.5-pro",
                ((1.25, 5.0), Some(2_000_000)),
                220.0,
                r(55.0, 220.0),
                x(440.0),
            ),
            model(
                "google",
                "gemini-1.5-flash",
                &[],
                "gemini-1.5-flash",
                ((0.075, 0.3), Some(1_000_000)),
                45.0,
                r(20.0, 70.0),
                r(20.0, 70.0),
            ),
            // Current models (PRICE_SOURCE, PRICES_AS_OF). A price tiered by prompt length is
            // its first tier's (docs/src/models.md says which); cached-input prices are not used.
            current("openai", "gpt-5.6-sol", (5.0, 30.0), Some(1_050_000)),
            current("openai", "gpt-5.6-terra", (2.5, 15.0), Some(1_050_000)),
            current("openai", "gpt-5.6-luna", (1.0, 6.0), Some(1_050_000)),
            current("openai", "gpt-5.5", (5.0, 30.0), Some(1_000_000)),
            current("openai", "gpt-5.4", (2.5, 15.0), Some(1_050_000)),
            current("openai", "gpt-5.4-mini", (0.75, 4.5), k(400)),
            current("openai", "gpt-5.4-nano", (0.2, 1.25), k(400)),
            current("openai", "gpt-5.2", (1.75, 14.0), k(400)),
            current("openai", "gpt-5.1", (1.25, 10.0), k(400)),
            current("openai", "gpt-5", (1.25, 10.0), k(400)),
            current("openai", "gpt-5-mini", (0.25, 2.0), k(400)),
            current("openai", "gpt-5-nano", (0.05, 0.4), k(400)),
            current("openai", "gpt-4.1", (2.0, 8.0), Some(1_000_000)),
            current("openai", "gpt-4.1-mini", (0.4, 1.6), Some(1_000_000)),
            current("openai", "gpt-4.1-nano", (0.1, 0.4), Some(1_000_000)),
            current("openai", "o3", (2.0, 8.0), None),
            current("openai", "o4-mini", (1.1, 4.4), None),
            current("anthropic", "claude-opus-5", (5.0, 25.0), Some(1_000_000)),
            // Its introductory $2 / $10 ended on 2026-08-31.
            current("anthropic", "claude-sonnet-5", (3.0, 15.0), Some(1_000_000)),
            current("anthropic", "claude-fable-5", (10.0, 50.0), Some(1_000_000)),
            current("anthropic", "claude-opus-4-8", (5.0, 25.0), Some(1_000_000)),
            current("anthropic", "claude-opus-4-7", (5.0, 25.0), Some(1_000_000)),
            current("anthropic", "claude-opus-4-6", (5.0, 25.0), k(200)),
            current(
                "anthropic",
                "claude-sonnet-4-6",
                (3.0, 15.0),
                Some(1_000_000),
            ),
            current(
                "anthropic",
                "claude-sonnet-4-5",
                (3.0, 15.0),
                Some(1_000_000),
            ),
            current("anthropic", "claude-haiku-4-5", (1.0, 5.0), k(200)),
            current("google", "gemini-3.6-flash", (1.5, 7.5), Some(1_000_000)),
            current("google", "gemini-3.5-flash", (1.5, 9.0), Some(1_000_000)),
            current(
                "google",
                "gemini-3.5-flash-lite",
                (0.3, 2.5),
                Some(1_000_000),
            ),
            current("google", "gemini-3.1-pro-preview", (2.0, 12.0), None),
            current(
                "google",
                "gemini-3.1-flash-lite",
                (0.25, 1.5),
                Some(1_000_000),
            ),
            current("google", "gemini-2.5-pro", (1.25, 10.0), None),
            current("google", "gemini-2.5-flash", (0.3, 2.5), None),
            current(
                "google",
                "gemini-2.5-flash-lite",
                (0.1, 0.4),
                Some(1_000_000),
            ),
            // Local models: no charge; their real parameter counts.
            model(
                "ollama",
                "qwen2.5-coder",
                &[],
                "qwen2.5-coder:7b",
                ((0.0, 0.0), None),
                7.0,
                x(7.6),
                x(7.6),
            ),
            model(
                "ollama",
                "llama3.2",
                &[],
                "llama3.2:3b",
                ((0.0, 0.0), None),
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
                ((0.0, 0.0), None),
                7.0,
                x(7.0),
                x(7.0),
            ),
            model(
                "local",
                "smollm2",
                &["smollm2-135m"],
                "smollm2",
                ((0.0, 0.0), None),
                0.135,
                x(0.135),
                x(0.135),
            ),
        ];
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
            Some(0.8)
        );
        let gpt = c.resolve("openai:gpt-4o").unwrap();
        assert_eq!(
            (
                gpt.input_price,
                gpt.output_price,
                gpt.energy.parameters.map(|p| p.spec)
            ),
            (Some(2.5), Some(10.0), Some(200.0))
        );
    }

    /// The entries of `catalog` without a known price or a source, as `provider:alias: what`.
    fn without_price_or_source(catalog: &Catalog) -> Vec<String> {
        catalog
            .models
            .iter()
            .filter_map(|m| {
                let mut missing = Vec::new();
                if m.input_price.is_none_or(|p| !p.is_finite() || p < 0.0) {
                    missing.push("input price");
                }
                if m.output_price.is_none_or(|p| !p.is_finite() || p < 0.0) {
                    missing.push("output price");
                }
                if m.source.as_deref().is_none_or(|s| s.trim().is_empty()) {
                    missing.push("source");
                }
                (!missing.is_empty()).then(|| format!("{}: {}", m.reference(), missing.join(", ")))
            })
            .collect()
    }

    #[test]
    fn every_catalog_entry_has_a_price_and_a_source() {
        let catalog = Catalog::builtin();
        assert_eq!(without_price_or_source(&catalog), Vec::<String>::new());
        // Hosted models name the price list and its commit; local ones cost nothing.
        for m in &catalog.models {
            let hosted = catalog.provider(m).key_required;
            let source = m.source.as_deref().unwrap_or_default();
            assert_eq!(
                source == PRICE_SOURCE,
                hosted,
                "{}: {source}",
                m.reference()
            );
            if !hosted {
                assert_eq!(m.price(), Some(crate::cost::Price::default()));
            }
        }
        assert!(PRICE_LIST_URL.contains("47df840a5ab10bbcffb8e5ac01b9899032245d1b"));
        assert!(PRICE_SOURCE.contains("47df840a5ab1") && PRICE_SOURCE.contains(PRICES_AS_OF));
        // The check finds an entry that lost its price or its source.
        let mut broken = catalog.clone();
        broken.models[0].output_price = None;
        broken.models[1].source = None;
        assert_eq!(
            without_price_or_source(&broken),
            ["openai:gpt-4o: output price", "openai:gpt-4o-mini: source"]
        );
    }

    #[test]
    fn the_specification_fixes_the_prices_of_the_models_it_names() {
        // measurement.md: USD per million tokens, input / output.
        let c = Catalog::builtin();
        for (reference, prices) in [
            ("openai:gpt-4o", (2.5, 10.0)),
            ("openai:gpt-4o-mini", (0.15, 0.6)),
            ("anthropic:sonnet 3.5", (3.0, 15.0)),
            ("anthropic:haiku 3.5", (0.8, 4.0)),
            ("google:gemini-1.5-pro", (1.25, 5.0)),
            ("ollama:qwen2.5-coder", (0.0, 0.0)),
        ] {
            let m = c.resolve(reference).unwrap();
            assert_eq!(
                (m.input_price, m.output_price),
                (Some(prices.0), Some(prices.1)),
                "{reference}"
            );
        }
    }

    #[test]
    fn current_models_have_their_list_prices_and_no_parameter_count() {
        let c = Catalog::builtin();
        for (reference, prices, context) in [
            ("openai:gpt-5.1", (1.25, 10.0), Some(400_000)),
            ("openai:gpt-5-mini", (0.25, 2.0), Some(400_000)),
            ("anthropic:claude-sonnet-4-5", (3.0, 15.0), Some(1_000_000)),
            ("anthropic:claude-haiku-4-5", (1.0, 5.0), Some(200_000)),
            ("google:gemini-2.5-flash", (0.3, 2.5), None),
        ] {
            let m = c.resolve(reference).unwrap();
            assert_eq!(m.model, reference.split_once(':').unwrap().1);
            assert_eq!(
                (m.input_price, m.output_price, m.context_window),
                (Some(prices.0), Some(prices.1), context),
                "{reference}"
            );
            assert_eq!(m.energy.parameters, None, "{reference}: none published");
        }
        // Every reference is one entry's.
        let mut references: Vec<String> = c.models.iter().map(ModelSpec::reference).collect();
        references.sort();
        references.dedup();
        assert_eq!(references.len(), c.models.len());
    }
}
