//! The pages of runs that are not benchmarks: reviews, relevance, pairwise comparisons.

use std::sync::Arc;

use axum::response::Html;
use maud::html;

use super::layout::{page, run_heading};
use super::server::{App, ViewError};
use crate::store::RunInfo;

/// The page of `run`, a run of another kind than `bench`.
pub async fn page_of(app: Arc<App>, run: RunInfo) -> Result<Html<String>, ViewError> {
    let body = html! {
        (run_heading(&run))
        p.empty { "The viewer shows benchmark runs; this run's kind has its summary in `track query`." }
    };
    Ok(Html(
        page(&app, &format!("Run {}", run.id), body).into_string(),
    ))
}
