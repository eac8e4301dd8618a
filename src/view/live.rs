//! Live progress of runs still going (`/events?ids=…`): server-sent events, one a second with
//! each run's progress, until none of them is running any more.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;

use super::server::{App, ViewError};

/// How often progress is read.
const EVERY: Duration = Duration::from_millis(1000);

/// Where the stream of events is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The first progress, sent at once.
    First,
    /// The next progress, a second later.
    Again,
    /// No run asked for goes on: `done` is next.
    Ending,
    /// The stream has ended.
    Over,
}

/// `?ids=1,2,3`.
#[derive(Debug, Deserialize)]
pub struct EventParams {
    ids: Option<String>,
}

/// The run ids of `?ids=`, at most 100.
fn run_ids(ids: Option<&str>) -> Vec<i64> {
    ids.unwrap_or("")
        .split(',')
        .filter_map(|id| id.trim().parse().ok())
        .take(100)
        .collect()
}

/// `/events`: an event `progress` (a JSON list of runs' progress) every second, then `done`
/// once no run asked for is running or waiting.
pub(crate) async fn events(
    State(app): State<Arc<App>>,
    Query(params): Query<EventParams>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ViewError> {
    let ids = run_ids(params.ids.as_deref());
    let stream = futures::stream::unfold((app, ids, Step::First), |(app, ids, step)| async move {
        // Some data: a browser dispatches no event whose data is empty.
        let done = || Ok(Event::default().event("done").data("end"));
        match step {
            Step::Over => None,
            Step::Ending => Some((done(), (app, ids, Step::Over))),
            Step::First | Step::Again => {
                if step == Step::Again {
                    let mut stopping = app.stopping.clone();
                    tokio::select! {
                        () = tokio::time::sleep(EVERY) => {}
                        _ = stopping.wait_for(|stop| *stop) => {
                            return Some((done(), (app, ids, Step::Over)));
                        }
                    }
                }
                let asked = ids.clone();
                let Ok(progress) = app.read(move |store| store.view_progress(&asked)).await else {
                    return Some((done(), (app, ids, Step::Over)));
                };
                let going = progress
                    .iter()
                    .any(|p| matches!(p.status.as_str(), "running" | "waiting"));
                let event = Event::default()
                    .event("progress")
                    .json_data(&progress)
                    .unwrap_or_else(|_| Event::default().event("progress").data("[]"));
                let next = if going { Step::Again } else { Step::Ending };
                Some((Ok(event), (app, ids, next)))
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_leniently_and_bounded() {
        assert_eq!(run_ids(Some("1, 2,x,,3")), [1, 2, 3]);
        assert!(run_ids(None).is_empty());
        let many: String = (0..500).map(|i| format!("{i},")).collect();
        assert_eq!(run_ids(Some(&many)).len(), 100);
    }
}
