//! The report's header: which runs, of which kinds and files, when, in what state (a banner
//! for each run that did not complete), and what they did: calls, cache hits, errors, cost,
//! paid and energy.

use std::fmt::Write as _;
use std::path::Path;

use super::html::{escape, number, text_table};
use super::selection::{SelectedRun, Selection};
use crate::experiment::ExperimentKind;
use crate::output::count;
use crate::output::thousands;
use crate::store::RunStatus;

/// Energy of the runs' results (benchmarks estimate it): the estimate and its range, in Wh.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Energy {
    pub wh: f64,
    pub min_wh: Option<f64>,
    pub max_wh: Option<f64>,
}

impl Energy {
    /// The energy of two kinds' results together; `None` when neither has any.
    pub(crate) fn total(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        let bound = |x: Option<f64>, y: Option<f64>| Some(x? + y?);
        match (a, b) {
            (None, e) | (e, None) => e,
            (Some(a), Some(b)) => Some(Self {
                wh: a.wh + b.wh,
                min_wh: bound(a.min_wh, b.min_wh),
                max_wh: bound(a.max_wh, b.max_wh),
            }),
        }
    }
}

/// The header of a report.
#[derive(Debug, Clone)]
pub struct Header {
    selection: Selection,
    energy: Option<Energy>,
    database: String,
}

impl Header {
    /// The header of `selection`, read from the database at `db`; `energy` of its benchmarks.
    /// The database is named by its file name: a report is sent to others, and the folders
    /// of the machine it was made on are nobody's business.
    pub(crate) fn new(selection: Selection, energy: Option<Energy>, db: &Path) -> Self {
        let database = db.file_name().map_or_else(
            || db.display().to_string(),
            |name| name.display().to_string(),
        );
        Self {
            selection,
            energy,
            database,
        }
    }

    /// The document's title: `track report: runs 3, 5`.
    pub(crate) fn title(&self) -> String {
        let ids: Vec<String> = self.runs().iter().map(|r| r.info.id.to_string()).collect();
        let noun = if ids.len() == 1 { "run" } else { "runs" };
        format!("track report: {noun} {}", ids.join(", "))
    }

    fn runs(&self) -> &[SelectedRun] {
        &self.selection.runs
    }

    /// The header's HTML: title, banners, key figures and the runs table.
    pub(crate) fn html(&self) -> String {
        let mut out = String::from("<header>");
        let _ = write!(out, "<h1>{}</h1>", escape(&self.title()));
        let _ = write!(
            out,
            "<p class=\"lede\">{} · from {} to {} · database <code>{}</code></p>",
            escape(&self.kinds_line()),
            escape(&self.first_start()),
            escape(&self.last_end()),
            escape(&self.database)
        );
        for run in self.runs() {
            if run.status != RunStatus::Completed {
                out.push_str(&banner(run));
            } else if let Some((k, n)) = run.info.shard {
                out.push_str(&shard_banner(run.info.id, k, n));
            }
        }
        out.push_str(&self.key_figures());
        out.push_str(&self.runs_table());
        out.push_str("</header>");
        out
    }

    /// `3 runs: 1 benchmark, 2 reviews`.
    fn kinds_line(&self) -> String {
        let mut kinds: Vec<(ExperimentKind, &str, u64)> = Vec::new();
        for run in self.runs() {
            match kinds.iter_mut().find(|(k, _, _)| *k == run.info.kind) {
                Some((_, _, n)) => *n += 1,
                None => kinds.push((run.info.kind, run.noun, 1)),
            }
        }
        let parts: Vec<String> = kinds.iter().map(|&(_, noun, n)| count(n, noun)).collect();
        format!(
            "{}: {}",
            count(self.runs().len() as u64, "run"),
            parts.join(", ")
        )
    }

    fn first_start(&self) -> String {
        let first = self.runs().iter().map(|r| r.info.started_at.as_str()).min();
        first.map_or_else(|| "–".to_owned(), readable_time)
    }

    fn last_end(&self) -> String {
        let ends: Vec<Option<&str>> = self
            .runs()
            .iter()
            .map(|r| r.info.finished_at.as_deref())
            .collect();
        if ends.iter().any(Option::is_none) {
            return "now (a run has not finished)".to_owned();
        }
        let last = ends.into_iter().flatten().max();
        last.map_or_else(|| "–".to_owned(), readable_time)
    }

    /// Totals of the selection as a definition list.
    fn key_figures(&self) -> String {
        let tallies = self.runs().iter().map(|r| r.info.tally);
        let (mut calls, mut planned, mut hits, mut errors) = (0, 0, 0, 0);
        let (mut cost, mut paid) = (0.0, 0.0);
        for t in tallies {
            calls += t.calls;
            planned += t.planned_calls;
            hits += t.cache_hits;
            errors += t.errors;
            cost += t.cost_usd;
            paid += t.paid_usd;
        }
        let mut figures = vec![
            (
                "Calls",
                format!("{} of {} planned", thousands(calls), thousands(planned)),
            ),
            ("Cache hits", thousands(hits)),
            ("Errors", thousands(errors)),
            ("Cost ($)", self.unless_unpriced("cost_usd", cost)),
            ("Paid ($)", self.unless_unpriced("paid_usd", paid)),
        ];
        figures.push(("Energy (Wh)", self.energy_text()));
        let mut out = String::from("<dl class=\"figures\">");
        for (name, value) in figures {
            let _ = write!(
                out,
                "<div><dt>{}</dt><dd>{}</dd></div>",
                escape(name),
                escape(&value)
            );
        }
        out.push_str("</dl>");
        out
    }

    /// The total `usd` of the column `name`, or `–` when a run had a model without a price:
    /// a sum without its answers would look complete and be too low.
    fn unless_unpriced(&self, name: &str, usd: f64) -> String {
        if self.runs().iter().any(|r| r.info.unpriced.is_some()) {
            "–".to_owned()
        } else {
            number(name, usd)
        }
    }

    fn energy_text(&self) -> String {
        match self.energy {
            None => "–".to_owned(),
            Some(e) => match (e.min_wh, e.max_wh) {
                (Some(min), Some(max)) => format!(
                    "{} ({}–{})",
                    number("energy_wh", e.wh),
                    number("energy_wh_min", min),
                    number("energy_wh_max", max)
                ),
                _ => number("energy_wh", e.wh),
            },
        }
    }

    /// One row per run.
    fn runs_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .runs()
            .iter()
            .map(|r| {
                let t = r.info.tally;
                vec![
                    r.info.id.to_string(),
                    r.info.kind.as_str().to_owned(),
                    r.info.file.clone().unwrap_or_else(|| "–".to_owned()),
                    readable_time(&r.info.started_at),
                    r.info
                        .finished_at
                        .as_deref()
                        .map_or_else(|| "–".to_owned(), readable_time),
                    r.status.to_string(),
                    thousands(t.calls),
                    thousands(t.planned_calls),
                    thousands(t.cache_hits),
                    thousands(t.errors),
                    if r.info.unpriced.is_some() {
                        "–".to_owned()
                    } else {
                        number("cost_usd", t.cost_usd)
                    },
                    if r.info.unpriced.is_some() {
                        "–".to_owned()
                    } else {
                        number("paid_usd", t.paid_usd)
                    },
                ]
            })
            .collect();
        let headers = [
            "run",
            "kind",
            "file",
            "started",
            "finished",
            "status",
            "calls",
            "planned",
            "cache hits",
            "errors",
            "cost ($)",
            "paid ($)",
        ];
        text_table("runs", "Runs", &headers, &rows)
    }
}

/// A stored RFC 3339 time as people read it: `2025-05-04 03:07:59 UTC`.
fn readable_time(stored: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(stored).map_or_else(
        |_| stored.to_owned(),
        |t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string()
        },
    )
}

/// The notice of one shard of a plan, read on its own: its figures are not the plan's.
fn shard_banner(id: i64, k: u32, n: u32) -> String {
    format!(
        "<p class=\"banner\" role=\"alert\"><strong>Run {id} is shard {k}/{n} of its plan.</strong> \
         The figures below cover that shard only; <code>track merge OUT.db SHARD.db…</code> \
         joins the {n} shards' databases into one run of the whole plan.</p>"
    )
}

/// The loud notice of a run that did not complete: its figures cover only what it recorded.
fn banner(run: &SelectedRun) -> String {
    let why = match run.status {
        RunStatus::Running => "is still running",
        RunStatus::Abandoned => "was abandoned: its process is gone",
        RunStatus::Interrupted => "was interrupted",
        RunStatus::Budget => "was stopped by its budget",
        RunStatus::Waiting => "is waiting for its batches (the same command collects them)",
        RunStatus::Failed => "failed",
        RunStatus::Partial => {
            "was merged from some of its shards only (track merge --allow-partial)"
        }
        RunStatus::Completed => "completed",
    };
    format!(
        "<p class=\"banner\" role=\"alert\"><strong>Run {} ({}) {why}.</strong> It recorded {} \
         of the {} calls it planned; the figures below cover only those. Status: {}.</p>",
        run.info.id,
        run.info.kind.as_str(),
        thousands(run.info.tally.calls),
        thousands(run.info.tally.planned_calls),
        run.status
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RunInfo, RunTally};

    fn run(id: i64, kind: ExperimentKind, status: RunStatus) -> SelectedRun {
        SelectedRun {
            noun: if kind == ExperimentKind::Bench {
                "benchmark"
            } else {
                "review"
            },
            info: RunInfo {
                id,
                kind,
                file: Some("<bench>.yaml".into()),
                models: Some("openai:gpt-4o".into()),
                command: Some("run <bench>.yaml".into()),
                started_at: "2025-05-04T03:07:59.123Z".into(),
                finished_at: Some("2025-05-04T03:08:10.000Z".into()),
                status,
                tally: RunTally {
                    planned_calls: 20,
                    calls: 8,
                    cache_hits: 2,
                    failed_calls: 0,
                    errors: 1,
                    cost_usd: 0.25,
                    paid_usd: 0.125,
                },
                budget_usd: None,
                shard: None,
                merged_shards: None,
                plan_calls: None,
                unpriced: None,
                resumed_by: None,
            },
            status,
        }
    }

    #[test]
    fn the_header_names_runs_and_warns_of_incomplete_ones() {
        let selection = Selection {
            runs: vec![
                run(3, ExperimentKind::Bench, RunStatus::Completed),
                run(5, ExperimentKind::Bench, RunStatus::Abandoned),
                run(6, ExperimentKind::Review, RunStatus::Completed),
            ],
            named: true,
        };
        let energy = Energy {
            wh: 1.5,
            min_wh: Some(1.0),
            max_wh: Some(2.0),
        };
        let header = Header::new(
            selection,
            Some(energy),
            Path::new("/home/someone/private/projects/track.db"),
        );
        assert_eq!(header.title(), "track report: runs 3, 5, 6");
        let html = header.html();
        roxmltree::Document::parse(&html).unwrap();
        assert!(html.contains("3 runs: 2 benchmarks, 1 review"), "{html}");
        assert!(html.contains("Run 5 (bench) was abandoned"), "{html}");
        assert!(
            !html.contains("Run 3 (bench)"),
            "a completed run has no banner"
        );
        assert!(html.contains("24 of 60 planned"), "{html}");
        assert!(html.contains("1.5000 (1.0000–2.0000)"), "{html}");
        assert!(html.contains("2025-05-04 03:07:59 UTC"), "{html}");
        assert!(html.contains("&lt;bench&gt;.yaml"));
        assert!(html.contains("database <code>track.db</code>"), "{html}");
        assert!(
            !html.contains("/home/someone"),
            "no folder of the machine: {html}"
        );
    }

    #[test]
    fn a_run_with_a_model_without_a_price_has_an_unknown_cost_and_so_has_the_total() {
        let cost = |html: &str| html.contains("<dt>Cost ($)</dt><dd>–</dd>");
        let mut unpriced = run(4, ExperimentKind::Bench, RunStatus::Completed);
        unpriced.info.unpriced = Some("openai:gpt-9".into());
        let priced = run(3, ExperimentKind::Bench, RunStatus::Completed);
        let header = |runs| {
            let selection = Selection { runs, named: true };
            Header::new(selection, None, Path::new("track.db")).html()
        };
        let html = header(vec![priced.clone()]);
        assert!(!cost(&html) && html.contains(">0.250000<"), "{html}");
        let html = header(vec![priced, unpriced]);
        assert!(cost(&html), "{html}");
        assert!(html.contains("<dt>Paid ($)</dt><dd>–</dd>"), "{html}");
        assert!(
            html.contains(">0.250000<") && html.contains("data-column=\"cost ($)\">–<"),
            "run 3 keeps its cost, run 4's is unknown: {html}"
        );
    }
}
