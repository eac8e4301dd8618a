//! Two benchmark runs compared (`/diff?base=…&new=…`), as `track diff` compares them: per
//! model the success rates, regressions and fixes with McNemar's p, then the results that
//! changed, regressions first, paged.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{page, pager};
use super::params::{PAGE_SIZE, link, page_count, page_number, page_value};
use super::server::{App, ViewError};
use crate::analysis::diff::SIGNIFICANCE;
use crate::analysis::stats::McNemar;
use crate::store::{DiffItem, DiffModelRow};

/// `?base=&new=&page=`.
#[derive(Debug, Deserialize)]
pub struct DiffParams {
    base: Option<String>,
    new: Option<String>,
    page: Option<String>,
}

/// McNemar's p of a model's regressions against its fixes; `None` with nothing paired.
fn p_value(row: &DiffModelRow) -> Option<f64> {
    (row.paired > 0)
        .then(|| McNemar::new(row.regressions, row.fixes).p_value())
        .flatten()
}

/// Whether the success rate dropped with McNemar p < 0.05 (as `track diff` says).
fn significant(row: &DiffModelRow) -> bool {
    row.regressions > row.fixes && p_value(row).is_some_and(|p| p < SIGNIFICANCE)
}

/// `/diff`.
pub(crate) async fn diff(
    State(app): State<Arc<App>>,
    Query(params): Query<DiffParams>,
) -> Result<Html<String>, ViewError> {
    let (base, new) = (
        run_id(params.base.as_deref(), "base")?,
        run_id(params.new.as_deref(), "new")?,
    );
    let number = page_number(&params.page);
    let offset = (number - 1) * PAGE_SIZE;
    let (runs, models, (items, total)) = app
        .read(move |store| {
            let runs = (store.view_run(base)?, store.view_run(new)?);
            Ok((
                runs,
                store.diff_models(base, new)?,
                store.diff_items(base, new, PAGE_SIZE, offset)?,
            ))
        })
        .await?;
    let (Some(base_run), Some(new_run)) = runs else {
        return Err(ViewError::NotFound(format!(
            "No run {base} or no run {new}."
        )));
    };
    if base_run.kind != crate::experiment::ExperimentKind::Bench
        || new_run.kind != crate::experiment::ExperimentKind::Bench
    {
        return Err(ViewError::Refused(
            StatusCode::BAD_REQUEST,
            format!(
                "The viewer compares benchmark runs; `track diff {base} {new}` compares runs of other kinds."
            ),
        ));
    }
    let body = html! {
        h1 { "Run " a href=(format!("/runs/{base}")) { (base) } " → run " a href=(format!("/runs/{new}")) { (new) } }
        h2 { "Per model" }
        (models_table(&models))
        h2 { "Changed results" }
        p.count { span #changed-count { (total) } " results changed" }
        (items_table(base, new, &items))
        (pager(number, page_count(total), |p| link("/diff", &[
            ("base", Some(&base.to_string())),
            ("new", Some(&new.to_string())),
            ("page", page_value(p).as_deref()),
        ])))
    };
    Ok(Html(
        page(&app, &format!("Run {base} → run {new}"), body).into_string(),
    ))
}

/// The run id `value` gives as `?{name}=`, or a refusal saying how to give it.
fn run_id(value: Option<&str>, name: &str) -> Result<i64, ViewError> {
    value
        .and_then(|v| v.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            ViewError::Refused(
                StatusCode::BAD_REQUEST,
                format!("Give the {name} run's id: /diff?base=1&new=2."),
            )
        })
}

/// `passed` of `n` as a percentage with one decimal, `–` of none.
fn pct(passed: u64, n: u64) -> String {
    if n == 0 {
        "–".to_owned()
    } else {
        format!("{:.1} %", passed as f64 * 100.0 / n as f64)
    }
}

/// Per model (and template): the success rates, regressions, fixes and new errors, McNemar's
/// p, and a mark on each significant regression.
fn models_table(models: &[DiffModelRow]) -> Markup {
    let any_significant = models.iter().any(significant);
    html! {
        table.diff {
            thead { tr {
                th { "Model" } th { "Template" } th.num { "Shared" } th.num { "Success before" }
                th.num { "Success after" } th.num { "Regressions" } th.num { "Fixes" }
                th.num { "New errors" } th.num { "McNemar p" }
                @if any_significant { th { "" } }
            } }
            tbody {
                @for row in models {
                    tr {
                        td { (row.model_ref) }
                        td { (row.template_name.as_deref().unwrap_or("–")) }
                        td.num { (row.shared) }
                        td.num { (pct(row.base_passed, row.paired)) }
                        td.num { (pct(row.new_passed, row.paired)) }
                        td.num { (row.regressions) }
                        td.num { (row.fixes) }
                        td.num { (row.new_errors) }
                        td.num { (p_value(row).map_or_else(|| "–".to_owned(), |p| format!("{p:.4}"))) }
                        @if any_significant {
                            td {
                                @if significant(row) { span.diff-regression { "significant regression" } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The results that changed, on this page: each with its change, its case and both outcomes,
/// linked to their transcripts.
fn items_table(base: i64, new: i64, items: &[DiffItem]) -> Markup {
    html! {
        table.diff-items {
            thead { tr { th { "Change" } th { "Model" } th { "Template" } th { "Case" } th.num { "Repeat" } th { "Before" } th { "After" } } }
            tbody {
                @for item in items {
                    tr {
                        td { span.diff-regression[item.change == "regression" || item.change == "new error"]
                                  .diff-improvement[item.change == "fix" || item.change == "error resolved"] { (item.change) } }
                        td { (item.model_ref) }
                        td { (item.template_name.as_deref().unwrap_or("–")) }
                        td { (item.prompt_name) }
                        td.num { (item.repeat_index) }
                        td { a.outcome.(item.base.as_str()) href=(format!("/runs/{base}/results/{}", item.base_id)) { (item.base) } }
                        td { a.outcome.(item.new.as_str()) href=(format!("/runs/{new}/results/{}", item.new_id)) { (item.new) } }
                    }
                }
            }
        }
    }
}
