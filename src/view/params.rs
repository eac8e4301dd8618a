//! The query strings of the viewer's pages: what they hold, how they are read, and the links
//! that reopen a view as it is (run, filter, search, order, page).

use axum::http::StatusCode;
use serde::Deserialize;

use super::server::ViewError;
use crate::store::{CaseOrder, GridQuery, ResultFilter, RunFilter};

/// Rows of a page: cases of a grid, runs of the list.
pub const PAGE_SIZE: u64 = 50;

/// `?kind=&status=&model=&page=` of the runs page.
#[derive(Debug, Default, Deserialize)]
pub struct RunsParams {
    pub kind: Option<String>,
    pub status: Option<String>,
    pub model: Option<String>,
    pub page: Option<String>,
}

impl RunsParams {
    /// The filter it asks for (empty values ask for nothing).
    pub(crate) fn filter(&self) -> RunFilter {
        RunFilter {
            kind: given(&self.kind),
            status: given(&self.status),
            model: given(&self.model),
        }
    }

    /// The link of this list at `page`.
    pub(crate) fn link(&self, page: u64) -> String {
        link(
            "/",
            &[
                ("kind", self.kind.as_deref()),
                ("status", self.status.as_deref()),
                ("model", self.model.as_deref()),
                ("page", page_value(page).as_deref()),
            ],
        )
    }
}

/// `?filter=&check=&q=&sort=&page=` of a run's grid.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct GridParams {
    pub filter: Option<String>,
    pub check: Option<String>,
    pub q: Option<String>,
    pub sort: Option<String>,
    pub page: Option<String>,
}

/// The grid's filters as they are named in links, with their labels.
pub const FILTERS: [(&str, &str); 5] = [
    ("all", "All"),
    ("failures", "Failures"),
    ("errors", "Errors"),
    ("passes", "Passes"),
    ("disagree", "Models disagree"),
];

/// The grid's orders as they are named in links, with their labels.
pub const ORDERS: [(&str, &str); 4] = [
    ("case", "Case"),
    ("latency", "Latency"),
    ("cost", "Cost"),
    ("tokens", "Tokens"),
];

impl GridParams {
    /// The query it asks for; an unknown filter or order is refused, naming the known ones.
    pub(crate) fn query(&self) -> Result<GridQuery, ViewError> {
        let filter = match (given(&self.check), given(&self.filter).as_deref()) {
            (Some(method), _) => ResultFilter::Check(method),
            (None, None | Some("all")) => ResultFilter::All,
            (None, Some("failures")) => ResultFilter::Failures,
            (None, Some("errors")) => ResultFilter::Errors,
            (None, Some("passes")) => ResultFilter::Passes,
            (None, Some("disagree")) => ResultFilter::Disagree,
            (None, Some(other)) => {
                return Err(refused(format!(
                    "No filter `{other}`: use all, failures, errors, passes or disagree."
                )));
            }
        };
        let order = match given(&self.sort).as_deref() {
            None | Some("case") => CaseOrder::Case,
            Some("latency") => CaseOrder::Latency,
            Some("cost") => CaseOrder::Cost,
            Some("tokens") => CaseOrder::Tokens,
            Some(other) => {
                return Err(refused(format!(
                    "No order `{other}`: use case, latency, cost or tokens."
                )));
            }
        };
        Ok(GridQuery {
            filter,
            search: given(&self.q),
            order,
        })
    }

    /// The page asked for, from 1.
    pub(crate) fn page(&self) -> u64 {
        page_number(&self.page)
    }

    /// The link of run `run`'s grid with this query, changed by `change`.
    pub(crate) fn link(&self, run: i64, change: impl FnOnce(&mut Self)) -> String {
        let mut changed = self.clone();
        change(&mut changed);
        link(
            &format!("/runs/{run}"),
            &[
                ("filter", changed.filter.as_deref()),
                ("check", changed.check.as_deref()),
                ("q", changed.q.as_deref()),
                ("sort", changed.sort.as_deref()),
                ("page", changed.page.as_deref()),
            ],
        )
    }
}

/// The value of a page number in a link: none for the first page.
pub(crate) fn page_value(page: u64) -> Option<String> {
    (page > 1).then(|| page.to_string())
}

/// The page number of `?page=` (1 when absent or not a number).
pub(crate) fn page_number(page: &Option<String>) -> u64 {
    page.as_deref()
        .and_then(|p| p.trim().parse::<u64>().ok())
        .filter(|&p| p >= 1)
        .unwrap_or(1)
}

/// How many pages `rows` fill.
pub(crate) fn page_count(rows: u64) -> u64 {
    rows.div_ceil(PAGE_SIZE).max(1)
}

/// `value` when it holds more than spaces.
fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// `path` with the non-empty `pairs` as its query string, percent-encoded.
pub(crate) fn link(path: &str, pairs: &[(&str, Option<&str>)]) -> String {
    let kept: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|&(k, v)| v.filter(|v| !v.trim().is_empty()).map(|v| (k, v)))
        .collect();
    if kept.is_empty() {
        return path.to_owned();
    }
    let query = serde_urlencoded::to_string(&kept).unwrap_or_default();
    format!("{path}?{query}")
}

fn refused(why: String) -> ViewError {
    ViewError::Refused(StatusCode::BAD_REQUEST, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_link_reopens_its_query() {
        let params = GridParams {
            filter: Some("failures".into()),
            q: Some("paris & <b>".into()),
            sort: Some("latency".into()),
            ..Default::default()
        };
        let url = params.link(7, |p| p.page = page_value(3));
        assert_eq!(
            url,
            "/runs/7?filter=failures&q=paris+%26+%3Cb%3E&sort=latency&page=3"
        );
        let (_, query) = url.split_once('?').unwrap();
        let back: GridParams = serde_urlencoded::from_str(query).unwrap();
        assert_eq!(back.query().unwrap(), params.query().unwrap());
        assert_eq!(back.page(), 3);
    }

    #[test]
    fn a_check_filter_wins_and_unknown_values_are_refused() {
        let params = GridParams {
            filter: Some("failures".into()),
            check: Some("contains".into()),
            ..Default::default()
        };
        assert_eq!(
            params.query().unwrap().filter,
            ResultFilter::Check("contains".into())
        );
        let bad = GridParams {
            filter: Some("nope".into()),
            ..Default::default()
        };
        assert!(bad.query().is_err());
        let bad = GridParams {
            sort: Some("nope".into()),
            ..Default::default()
        };
        assert!(bad.query().is_err());
    }

    #[test]
    fn pages_count_from_one() {
        assert_eq!(page_number(&None), 1);
        assert_eq!(page_number(&Some("0".into())), 1);
        assert_eq!(page_number(&Some("x".into())), 1);
        assert_eq!(page_number(&Some("4".into())), 4);
        assert_eq!(page_count(0), 1);
        assert_eq!(page_count(50), 1);
        assert_eq!(page_count(51), 2);
    }
}
