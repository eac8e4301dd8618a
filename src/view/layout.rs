//! What every page shares: its frame (head, navigation, footer), the pager, a run's heading.

use maud::{DOCTYPE, Markup, html};

use super::format;
use super::server::App;
use crate::store::RunInfo;

/// A whole page titled `title` around `body`.
pub(crate) fn page(app: &App, title: &str, body: Markup) -> Markup {
    page_of_run(app, title, body, None)
}

/// A whole page about `run` (its script rates its results, and reloads the page when the
/// run, still going, ends).
pub(crate) fn page_of_run(app: &App, title: &str, body: Markup, run: Option<&RunInfo>) -> Markup {
    let live = run.is_some_and(|r| matches!(r.status.as_str(), "running" | "waiting"));
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="csrf-token" content=(app.csrf);
                title { (title) " · track view" }
                link rel="icon" type="image/svg+xml" href=(super::assets::ICON_PATH);
                link rel="stylesheet" href="/assets/view.css";
                script src="/assets/view.js" defer {}
            }
            body data-run=[run.map(|r| r.id)] data-reload-when-done=[live.then_some("true")]
                    data-ratings=[app.ratings.then_some("true")] {
                header.top {
                    a.brand href="/" { "track view" }
                    span.db title=(app.db) { (format::database_name(std::path::Path::new(&app.db))) }
                }
                main { (body) }
            }
        }
    }
}

/// "Page x of y" with links to the previous and next pages, made by `link(page)`.
pub(crate) fn pager(page: u64, pages: u64, link: impl Fn(u64) -> String) -> Markup {
    pager_open(page, pages, false, link)
}

/// [`pager`] of a count that stopped (`more`: more pages than `pages` follow).
pub(crate) fn pager_open(
    page: u64,
    pages: u64,
    more: bool,
    link: impl Fn(u64) -> String,
) -> Markup {
    html! {
        nav.pager aria-label="pages" {
            @if page > 1 {
                a rel="prev" href=(link(page - 1)) { "← Previous" }
            }
            span { "Page " (page) " of " (pages) @if more { "+" } }
            @if page < pages || more {
                a rel="next" href=(link(page + 1)) { "Next →" }
            }
        }
    }
}

/// A run's status and progress, updated live while it runs (`data-run`).
pub(crate) fn progress(run: &RunInfo) -> Markup {
    let planned = run.plan_calls.unwrap_or(run.tally.planned_calls);
    let live = matches!(run.status.as_str(), "running" | "waiting");
    html! {
        span.progress data-run=(run.id) data-live=(live) {
            span.status.(run.status.as_str()) { (run.status.as_str()) }
            " "
            span.calls {
                (run.tally.calls) " / " (if planned > 0 { planned.to_string() } else { "?".into() })
                " calls"
            }
        }
    }
}

/// `usd`, a sum of `run`'s tally, or `None` (`–`, unknown) when a model of the run had no
/// price: the sum leaves its answers out.
pub(crate) fn known_cost(run: &RunInfo, usd: f64) -> Option<f64> {
    run.unpriced.is_none().then_some(usd)
}

/// The heading of run pages: what the run is, with its tally.
pub(crate) fn run_heading(run: &RunInfo) -> Markup {
    html! {
        h1 { "Run " (run.id) " · " (run.kind.as_str()) }
        dl.facts {
            dt { "File" } dd { (run.file.as_deref().unwrap_or("–")) }
            dt { "Models" } dd { (format::models(run.models.as_deref())) }
            dt { "Started" } dd { time datetime=(run.started_at) { (format::when(&run.started_at)) } }
            dt { "Status" } dd { (progress(run)) }
            dt { "Cost" } dd { (format::usd(known_cost(run, run.tally.cost_usd))) " (paid " (format::usd(known_cost(run, run.tally.paid_usd))) ")" }
            dt { "Cache hits" } dd { (run.tally.cache_hits) }
            dt { "Errors" } dd { (run.tally.errors) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pager_of_a_stopped_count_leads_on() {
        let link = |p: u64| format!("/runs/1?page={p}");
        let stopped = pager_open(200, 200, true, link).into_string();
        assert!(stopped.contains("Page 200 of 200+"), "{stopped}");
        assert!(stopped.contains("href=\"/runs/1?page=201\""), "{stopped}");
        let last = pager(3, 3, link).into_string();
        assert!(last.contains("Page 3 of 3<"), "{last}");
        assert!(!last.contains("rel=\"next\""), "{last}");
    }
}
