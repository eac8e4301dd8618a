//! The runs page (`/`): `track runs` with filters by kind, status and model, paged, the runs
//! still going updated live.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::Html;
use maud::html;

use super::format;
use super::layout::{known_cost, page, pager, progress};
use super::params::{PAGE_SIZE, RunsParams, page_count, page_number};
use super::server::{App, ViewError};

/// The statuses a run can have, for the filter.
const STATUSES: [&str; 8] = [
    "running",
    "completed",
    "failed",
    "interrupted",
    "budget",
    "waiting",
    "partial",
    "abandoned",
];

/// `/`.
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    Query(params): Query<RunsParams>,
) -> Result<Html<String>, ViewError> {
    let filter = params.filter();
    let number = page_number(&params.page);
    let offset = (number - 1) * PAGE_SIZE;
    let (runs, total, kinds) = app
        .read(move |store| {
            let (runs, total) = store.view_runs(&filter, PAGE_SIZE, offset)?;
            Ok((runs, total, store.view_run_kinds()?))
        })
        .await?;
    let pages = page_count(total);
    let body = html! {
        h1 { "Runs" }
        form.filters method="get" action="/" {
            label { "Kind "
                select name="kind" {
                    option value="" { "any" }
                    @for kind in &kinds {
                        option value=(kind) selected[params.kind.as_deref() == Some(kind.as_str())] { (kind) }
                    }
                }
            }
            label { "Status "
                select name="status" {
                    option value="" { "any" }
                    @for status in STATUSES {
                        option value=(status) selected[params.status.as_deref() == Some(status)] { (status) }
                    }
                }
            }
            label { "Model "
                input type="search" name="model" value=(params.model.as_deref().unwrap_or("")) placeholder="gpt-4o";
            }
            button type="submit" { "Filter" }
        }
        p.count { (format::counted(total, "run", "runs")) }
        table.runs {
            thead { tr {
                th { "Run" } th { "Kind" } th { "Status" } th { "File" } th { "Models" }
                th { "Started" } th.num { "Cost" } th.num { "Errors" }
            } }
            tbody {
                @for run in &runs {
                    tr {
                        td { a href=(format!("/runs/{}", run.id)) { (run.id) } }
                        td { (run.kind.as_str()) }
                        td {
                            (progress(run))
                            // An unfinished run that the same command, run again, finished.
                            @if let Some(next) = run.resumed_by {
                                " · resumed by " a href=(format!("/runs/{next}")) { "run " (next) }
                            }
                        }
                        td { (run.file.as_deref().unwrap_or("–")) }
                        td.models { (format::models(run.models.as_deref())) }
                        td { time datetime=(run.started_at) { (format::when(&run.started_at)) } }
                        td.num { (format::usd(known_cost(run, run.tally.cost_usd))) }
                        td.num { (run.tally.errors) }
                    }
                }
            }
        }
        (pager(number, pages, |p| params.link(p)))
        h2 { "Compare two benchmark runs" }
        form.filters method="get" action="/diff" {
            label { "Base run " input type="number" name="base" min="1" required; }
            label { "New run " input type="number" name="new" min="1" required; }
            button type="submit" { "Compare" }
        }
    };
    Ok(Html(page(&app, "Runs", body).into_string()))
}
