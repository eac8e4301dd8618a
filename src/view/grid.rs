//! A run's page (`/runs/{run}`): for a benchmark, the grid of its cases × (model, template),
//! each cell coloured by outcome, with filters, search, order and pages.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use maud::{Markup, html};

use super::format;
use super::layout::{page_of_run, pager_open, run_heading};
use super::params::{FILTERS, GridParams, ORDERS, PAGE_SIZE, page_count, page_value};
use super::server::{App, ViewError};
use crate::store::{
    COUNT_CASES, ColumnOutcomes, GridCell, GridColumn, GridCount, GridQuery, Outcome, Rating,
    ResultFilter, RunInfo,
};

/// What the grid page shows, read in one go.
struct Grid {
    run: RunInfo,
    columns: Vec<GridColumn>,
    methods: Vec<String>,
    count: GridCount,
    cases: Vec<i64>,
    cells: Vec<GridCell>,
    /// The current human rating of the page's rated results, by uid.
    rated: HashMap<String, Rating>,
    /// The outcomes of each model and template, for their pass rates.
    outcomes: Vec<ColumnOutcomes>,
}

/// `/runs/{run}`.
pub(crate) async fn grid(
    State(app): State<Arc<App>>,
    Path(run_id): Path<i64>,
    Query(params): Query<GridParams>,
) -> Result<Html<String>, ViewError> {
    let run = app
        .read(move |store| store.view_run(run_id))
        .await?
        .ok_or_else(|| ViewError::NotFound(format!("No run {run_id}.")))?;
    if run.kind != crate::experiment::ExperimentKind::Bench {
        return super::kinds::page_of(app, run, params.page()).await;
    }
    let query = params.query()?;
    let number = params.page();
    let offset = (number - 1) * PAGE_SIZE;
    let grid = app
        .read(move |store| {
            // Counted far enough to know whether a page follows this one.
            let enough = COUNT_CASES.max(offset + PAGE_SIZE);
            let count = store.grid_count(run_id, &query, enough)?;
            let cases = store.grid_cases(run_id, &query, PAGE_SIZE, offset)?;
            let cells = store.grid_cells(run_id, &query, &cases)?;
            let uids: Vec<String> = cells.iter().filter_map(|c| c.uid.clone()).collect();
            let rated = super::ratings::current(store, &uids)?;
            Ok(Grid {
                run,
                columns: store.grid_columns(run_id)?,
                methods: store.grid_check_methods(run_id)?,
                count,
                cases,
                cells,
                rated,
                outcomes: store.grid_outcomes(run_id)?,
            })
        })
        .await?;
    let body = render(&grid, &params, number, &app.rater);
    let title = format!("Run {run_id}");
    Ok(Html(
        page_of_run(&app, &title, body, Some(&grid.run)).into_string(),
    ))
}

/// The grid's page body: the filters, the count, the table of results, the pager.
fn render(grid: &Grid, params: &GridParams, number: u64, app_rater: &str) -> Markup {
    let run_id = grid.run.id;
    html! {
        (run_heading(&grid.run))
        (pass_rates(grid))
        (filters(grid, params))
        p.keys { "Keys: j/k move between results, Enter opens one, p/f mark it pass/fail, x unmarks it, 1-5 score it, 0 unscores it; each key changes that field only (rated by " (app_rater) ")." }
        (count(grid))
        @if grid.cases.is_empty() {
            @if is_live(&grid.run) && grid.count.results == 0 && params.query().is_ok_and(|q| q == GridQuery::default()) {
                p.empty { "No result stored yet: this page follows the run and shows its results when it ends." }
            } @else {
                p.empty { "No case matches." }
            }
        } @else {
            (table(grid))
        }
        (pager_open(number, page_count(grid.count.cases), grid.count.more, |p| params.link(run_id, |q| q.page = page_value(p))))
    }
}

/// The grid's filters (outcome, search, failed check) and its order, each a link or a form
/// that keeps the others.
fn filters(grid: &Grid, params: &GridParams) -> Markup {
    let run_id = grid.run.id;
    let active_filter = match params.query().map(|q| q.filter) {
        Ok(ResultFilter::Check(_)) => "check",
        _ => params
            .filter
            .as_deref()
            .filter(|f| !f.is_empty())
            .unwrap_or("all"),
    };
    let active_order = params
        .sort
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("case");
    html! {
        nav.filters aria-label="filters" {
            @for (name, label) in FILTERS {
                a.active[active_filter == name] href=(params.link(run_id, |p| {
                    p.filter = (name != "all").then(|| name.to_owned());
                    p.check = None;
                    p.page = None;
                })) { (label) }
            }
        }
        form.filters method="get" action=(format!("/runs/{run_id}")) {
            @if let Some(sort) = params.sort.as_deref().filter(|s| !s.is_empty()) {
                input type="hidden" name="sort" value=(sort);
            }
            @if let Some(filter) = params.filter.as_deref().filter(|s| !s.is_empty()) {
                input type="hidden" name="filter" value=(filter);
            }
            label { "Search "
                input type="search" name="q" value=(params.q.as_deref().unwrap_or("")) placeholder="words in prompts and answers";
            }
            label { "Failed check "
                select name="check" {
                    option value="" { "any" }
                    @for method in &grid.methods {
                        option value=(method) selected[params.check.as_deref() == Some(method.as_str())] { (method) }
                    }
                }
            }
            button type="submit" { "Show" }
        }
        nav.sort aria-label="order" {
            "Sort: "
            @for (name, label) in ORDERS {
                a.active[active_order == name] href=(params.link(run_id, |p| {
                    p.sort = (name != "case").then(|| name.to_owned());
                    p.page = None;
                })) { (label) }
            }
        }
    }
}

/// The pass rate of each model with each template, as `track query --by template` gives it:
/// a row per model, a column per template (one column without templates); passed of passed
/// plus failed, errors left out and said apart.
fn pass_rates(grid: &Grid) -> Markup {
    let mut templates: Vec<(i64, Option<&str>)> = Vec::new();
    let mut models: Vec<(i64, &str)> = Vec::new();
    for column in &grid.columns {
        if !templates.iter().any(|(i, _)| *i == column.template_index) {
            templates.push((column.template_index, column.template_name.as_deref()));
        }
        if !models.iter().any(|(i, _)| *i == column.model_index) {
            models.push((column.model_index, &column.model_ref));
        }
    }
    templates.sort_by_key(|(i, _)| *i);
    let cell = |model: i64, template: i64| {
        grid.outcomes
            .iter()
            .find(|o| o.model_index == model && o.template_index == template)
    };
    html! {
        @if !grid.outcomes.is_empty() {
            table.pass-rates {
                caption { "Pass rate: passed of passed and failed; errors apart" }
                thead { tr {
                    th { "Model" }
                    @for (_, name) in &templates {
                        th.num { (name.unwrap_or("pass rate")) }
                    }
                } }
                tbody {
                    @for (model, reference) in &models {
                        tr {
                            th { (reference) }
                            @for (template, _) in &templates {
                                td.num { (rate(cell(*model, *template))) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `75.0 % (3 of 4)`, with `, 1 error` when some; `–` without results.
fn rate(outcomes: Option<&ColumnOutcomes>) -> String {
    let Some(o) = outcomes else {
        return "–".to_owned();
    };
    let decided = o.passed + o.failed;
    let errors = match o.errors {
        0 => String::new(),
        n => format!(", {}", crate::output::count(n, "error")),
    };
    if decided == 0 {
        return format!("– (no answer{errors})");
    }
    format!(
        "{:.1} % ({} of {decided}{errors})",
        o.passed as f64 * 100.0 / decided as f64,
        o.passed
    )
}

/// How many results and cases match, or that more match than were counted.
fn count(grid: &Grid) -> Markup {
    html! {
        @if grid.count.more {
            p.count title=(format!("Counted to the first {} matching cases: more match.", grid.count.cases)) {
                "More than " span #result-count { (grid.count.results) } " results in more than "
                span #case-count { (grid.count.cases) } " cases"
            }
        } @else {
            p.count {
                span #result-count { (grid.count.results) } " results in "
                span #case-count { (grid.count.cases) } " cases"
            }
        }
    }
}

/// The table of results: a row per case, a column per model (and template), each cell the
/// links to its results.
fn table(grid: &Grid) -> Markup {
    let run_id = grid.run.id;
    let mut by_cell: HashMap<(i64, i64, i64), Vec<&GridCell>> = HashMap::new();
    let mut names: HashMap<i64, &str> = HashMap::new();
    for cell in &grid.cells {
        by_cell
            .entry((cell.prompt_index, cell.model_index, cell.template_index))
            .or_default()
            .push(cell);
        names.insert(cell.prompt_index, &cell.prompt_name);
    }
    let several_templates = grid.columns.iter().any(|c| c.template_name.is_some());
    html! {
        table.grid {
            thead {
                tr {
                    th { "Case" }
                    @for column in &grid.columns {
                        th {
                            (column.model_ref)
                            @if several_templates {
                                br;
                                small { (column.template_name.as_deref().unwrap_or("–")) }
                            }
                        }
                    }
                }
            }
            tbody {
                @for case in &grid.cases {
                    tr {
                        th.case {
                            @let name = names.get(case).copied().unwrap_or("?");
                            a href=(super::transcript::case_path(run_id, name)) title="all answers side by side" {
                                (name)
                            }
                        }
                        @for column in &grid.columns {
                            td {
                                @if let Some(cells) = by_cell.get(&(*case, column.model_index, column.template_index)) {
                                    @for cell in cells {
                                        (cell_link(run_id, cell, cell.uid.as_ref().and_then(|u| grid.rated.get(u))))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether `run` is still going (its page follows it live).
fn is_live(run: &RunInfo) -> bool {
    matches!(run.status.as_str(), "running" | "waiting")
}

/// One result in a cell: its outcome's mark and latency, a link to its transcript.
fn cell_link(run_id: i64, cell: &GridCell, rating: Option<&Rating>) -> Markup {
    let mark = match cell.outcome {
        Outcome::Passed => "✓",
        Outcome::Failed => "✗",
        Outcome::Error => "!",
    };
    html! {
        a.cell.(cell.outcome.as_str()).dim[!cell.matched]
            href=(format!("/runs/{run_id}/results/{}", cell.id))
            data-uid=[cell.uid.as_deref()]
            title=(format!("{} · repeat {} · {} · {} tokens · {}",
                cell.outcome, cell.repeat_index, format::latency(cell.latency_ms),
                format::count(cell.tokens), format::usd(cell.cost_usd))) {
            (mark) " " (format::latency(cell.latency_ms))
            @if let Some(rating) = rating {
                span.rated title=(format!("rated by {}", rating.rater)) { (super::ratings::mark(rating)) }
            }
        }
    }
}
