//! `track models`: the model catalog in force (built-ins plus config.yaml).

use std::process::ExitCode;

use polars::prelude::*;

use super::Context;
use crate::config::{Catalog, PRICE_SOURCE, PRICES_AS_OF};
use crate::output::columns;
use crate::output::{Columns, Format, print_frame};

/// List the model catalog: prices, parameters, whether a key is set.
///
/// List the model catalog: provider, alias, model id, prices, parameters, whether a key is
/// set, and (with --wide, CSV, JSON) the batch API `--batch` sends its calls through (empty:
/// none, they run live), the context window and where the prices come from.
#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

pub(crate) fn run(context: &Context, args: ModelsArgs) -> anyhow::Result<ExitCode> {
    let config = context.load_config()?;
    let df = catalog_frame(&config.catalog)?;
    print_frame(&df, args.format, Columns::wide_if(args.wide))?;
    if args.format == Format::Table {
        crate::output::say(crate::output::fit_line(&format!(
            "prices: USD per million tokens, from the genai-prices list as of {PRICES_AS_OF} \
             ({PRICE_SOURCE}) unless config.yaml sets them; any other id of a provider runs \
             too (`openai:<id>`), its cost unknown (–) until config.yaml gives its \
             `input_price:` and `output_price:`"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// A range as a person writes it: `7` when its ends agree, else `7–13`.
fn range(r: crate::energy::Range) -> String {
    if r.min == r.max {
        format!("{}", r.min)
    } else {
        format!("{}–{}", r.min, r.max)
    }
}

/// Whether the key of `m`'s provider is set, not needed, or missing (naming its variables).
fn key_status(catalog: &Catalog, m: &crate::config::ModelSpec) -> String {
    let provider = catalog.provider(m);
    // A target's secrets are the variables its headers name.
    if let Some(spec) = &provider.target {
        let variables = spec.spec.variables();
        let missing: Vec<&str> = variables
            .iter()
            .copied()
            .filter(|v| std::env::var(v).map_or(true, |value| value.trim().is_empty()))
            .collect();
        return match (variables.is_empty(), missing.is_empty()) {
            (true, _) => "not needed".to_owned(),
            (false, true) => "set".to_owned(),
            (false, false) => format!("missing ({})", missing.join(", ")),
        };
    }
    if !provider.key_required {
        "not needed".to_owned()
    } else if provider.endpoint().api_key.is_some() {
        "set".to_owned()
    } else {
        format!("missing ({})", provider.key_vars_text())
    }
}

/// The models of `catalog`, one row each.
fn catalog_frame(catalog: &Catalog) -> PolarsResult<DataFrame> {
    let models = &catalog.models;
    DataFrame::new_infer_height(vec![
        Column::new(
            "reference".into(),
            models.iter().map(|m| m.reference()).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::PROVIDER.name.into(),
            models
                .iter()
                .map(|m| m.provider.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::ALIAS.name.into(),
            models.iter().map(|m| m.alias.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::MODEL_ID.name.into(),
            models.iter().map(|m| m.model.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::INPUT_USD_PER_MTOK.name.into(),
            models.iter().map(|m| m.input_price).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::OUTPUT_USD_PER_MTOK.name.into(),
            models.iter().map(|m| m.output_price).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::PARAMETERS_B.name.into(),
            models
                .iter()
                .map(|m| m.energy.parameters.map(|p| p.spec))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::ACTIVE_B.name.into(),
            models
                .iter()
                .map(|m| m.energy.parameters.map(|p| range(p.active)))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::TOTAL_B.name.into(),
            models
                .iter()
                .map(|m| m.energy.parameters.map(|p| range(p.total)))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::PUE.name.into(),
            models
                .iter()
                .map(|m| range(m.energy.pue))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "key".into(),
            models
                .iter()
                .map(|m| key_status(catalog, m))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::BATCH.name.into(),
            models
                .iter()
                .map(|m| catalog.batch(m).map(|api| api.as_str()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            columns::CONTEXT_WINDOW.name.into(),
            models.iter().map(|m| m.context_window).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::PRICE_SOURCE.name.into(),
            models.iter().map(|m| m.source.clone()).collect::<Vec<_>>(),
        ),
    ])
}
