//! The review section of `track report`: how each reviewer's reviews went (parse failures, N/A), mean scores
//! per criterion and generator model with their intervals, per criterion and reviewer,
//! agreement between reviewers, and the justification behind every score (bounded).

use std::fmt::Write as _;

use polars::prelude::*;

use super::columns as cols;
use super::summary::{
    ReviewFrames, agreement, criterion_generator_summary, criterion_summary, review_summary,
};
use crate::output::{counted, thousands};
use crate::report::charts::{
    Bar, BarChart, DotChart, DotRow, Heatmap, Mark, Titles, bar_chart, dot_chart, figure, heatmap,
};
use crate::report::columns::{try_counts, try_floats, try_texts, try_total};
use crate::report::html::{TableOptions, escape, frame_table, maybe_number, number, truncate};
use crate::report::{ReportError, Section};
use crate::store::{ReviewNotes, Store};

/// Reviews whose justifications are listed at most.
pub const LISTED_REVIEWS: usize = 100;
/// Characters of each justification shown.
const JUSTIFICATION_CHARS: usize = 800;
/// The Likert scale of review scores.
const SCORE_RANGE: (f64, f64) = (1.0, 5.0);

/// The summaries the section draws, as a missing column's error names them.
const BY_REVIEWER: &str = "review summary by reviewer";
const BY_CRITERION: &str = "review summary by criterion";
const BY_CRITERION_GENERATOR: &str = "review summary by criterion and generator";
const AGREEMENT: &str = "review agreement summary";

/// The reviews of some runs, summarised.
pub struct ReviewSection {
    runs: Vec<i64>,
    reviews: usize,
    by_reviewer: DataFrame,
    by_generator: DataFrame,
    by_criterion: DataFrame,
    by_criterion_generator: DataFrame,
    /// Present with two reviewers or more.
    agreement: Option<DataFrame>,
    notes: Vec<ReviewNotes>,
}

impl ReviewSection {
    /// Summarises the reviews of `runs` as `track query --by reviewer|generator|criterion`.
    pub(crate) fn load(store: &Store, runs: &[i64]) -> Result<Self, ReportError> {
        let (reviews, scores) = store.review_columns(runs)?;
        let frames = ReviewFrames::new(reviews, scores)?;
        let by_reviewer = review_summary(&frames, cols::REVIEWER)?;
        let agreement = if by_reviewer.height() > 1 {
            Some(agreement(&frames)?)
        } else {
            None
        };
        Ok(Self {
            runs: runs.to_vec(),
            reviews: frames.reviews.height(),
            by_generator: review_summary(&frames, cols::GENERATOR)?,
            by_criterion: criterion_summary(&frames)?,
            by_criterion_generator: criterion_generator_summary(&frames)?,
            by_reviewer,
            agreement,
            notes: store.review_notes(runs, LISTED_REVIEWS)?,
        })
    }

    fn run_list(&self) -> String {
        let ids: Vec<String> = self.runs.iter().map(i64::to_string).collect();
        ids.join(",")
    }

    fn overview(&self) -> Result<String, ReportError> {
        let r = &self.by_reviewer;
        Ok(format!(
            "<p>{} by {}: {} complete, {} with N/A scores, {} unparsable, {} without an \
             official datasheet, {}. The same numbers as <code>track query --by \
             reviewer|generator|criterion --run {}</code>.</p>",
            counted(self.reviews as u64, "review"),
            counted(r.height() as u64, "reviewer"),
            thousands(try_total(r, BY_REVIEWER, cols::COMPLETE)?),
            thousands(try_total(r, BY_REVIEWER, cols::WITH_NA)?),
            thousands(try_total(r, BY_REVIEWER, cols::PARSE_FAILURES)?),
            thousands(try_total(r, BY_REVIEWER, cols::NO_OFFICIAL)?),
            counted(try_total(r, BY_REVIEWER, cols::ERRORS)?, "failed call"),
            escape(&self.run_list())
        ))
    }

    /// How each reviewer's reviews went, stacked, and the per-reviewer table.
    fn reviewers_figure(&self) -> Result<String, ReportError> {
        let parts = [
            (cols::COMPLETE, "complete"),
            (cols::WITH_NA, "with N/A"),
            (cols::PARSE_FAILURES, "unparsable"),
            (cols::NO_OFFICIAL, "no official datasheet"),
            (cols::ERRORS, "failed call"),
        ];
        let reviewers = try_texts(&self.by_reviewer, BY_REVIEWER, cols::REVIEWER)?;
        let values = parts
            .iter()
            .map(|(c, _)| try_counts(&self.by_reviewer, BY_REVIEWER, c))
            .collect::<Result<Vec<_>, _>>()?;
        let bars = reviewers
            .iter()
            .enumerate()
            .map(|(i, reviewer)| Bar {
                label: reviewer.clone(),
                parts: parts
                    .iter()
                    .zip(&values)
                    .map(|((_, name), v)| (v[i] as f64, format!("{reviewer}: {} {name}", v[i])))
                    .collect(),
            })
            .collect();
        let chart = bar_chart(&BarChart {
            titles: Titles {
                id: "review-status-chart",
                title: "Reviews per reviewer, by how they went",
                x: "reviews",
                y: "reviewer",
            },
            series: parts.iter().map(|(_, name)| (*name).to_owned()).collect(),
            bars,
        });
        let table = frame_table(
            &self.by_reviewer,
            TableOptions {
                id: "review-reviewers",
                caption: "Per reviewer (as track query --by reviewer); na scores counts N/A criteria",
                max_rows: usize::MAX,
            },
        );
        Ok(figure(
            "review-status",
            "Per reviewer: parse failures and N/A",
            &chart,
            "",
            &table,
        ))
    }

    /// Mean score per criterion and generator model, with 95 % intervals.
    fn generators_figure(&self) -> Result<String, ReportError> {
        let df = &self.by_criterion_generator;
        let (criteria, generators) = (
            try_texts(df, BY_CRITERION_GENERATOR, cols::CRITERION)?,
            try_texts(df, BY_CRITERION_GENERATOR, cols::GENERATOR)?,
        );
        let (mean, low, high, n) = (
            try_floats(df, BY_CRITERION_GENERATOR, cols::MEAN_SCORE)?,
            try_floats(df, BY_CRITERION_GENERATOR, cols::MEAN_LOW)?,
            try_floats(df, BY_CRITERION_GENERATOR, cols::MEAN_HIGH)?,
            try_counts(df, BY_CRITERION_GENERATOR, cols::SCORED)?,
        );
        let series = distinct(&generators);
        let mut rows: Vec<DotRow> = distinct(&criteria)
            .into_iter()
            .map(|label| DotRow {
                label,
                marks: vec![None; series.len()],
            })
            .collect();
        for i in 0..df.height() {
            let (Some(row), Some(k), Some(value)) = (
                rows.iter().position(|r| r.label == criteria[i]),
                series.iter().position(|g| *g == generators[i]),
                mean[i],
            ) else {
                continue;
            };
            rows[row].marks[k] = Some(Mark {
                value,
                low: low[i],
                high: high[i],
                tip: format!(
                    "{} · {}: mean {} of {} scores, 95 % interval {}–{}",
                    criteria[i],
                    generators[i],
                    number(cols::MEAN_SCORE, value),
                    n[i],
                    maybe_number(cols::MEAN_LOW, low[i]),
                    maybe_number(cols::MEAN_HIGH, high[i])
                ),
            });
        }
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "review-generators-chart",
                title: "Mean score per criterion and generator model, with 95 % intervals",
                x: "mean score (1–5)",
                y: "criterion",
            },
            series,
            rows,
            domain: SCORE_RANGE,
            reference: None,
        });
        let table = frame_table(
            df,
            TableOptions {
                id: "review-criteria-generators",
                caption: "Per criterion and generator model, all reviewers pooled (95 % t intervals)",
                max_rows: usize::MAX,
            },
        );
        Ok(figure(
            "review-generators",
            "Scores per generator model",
            &chart,
            "",
            &table,
        ))
    }

    /// Mean score per criterion and reviewer as a heatmap, and the per-criterion table.
    fn criteria_figure(&self) -> Result<String, ReportError> {
        let df = &self.by_criterion;
        let (criteria, reviewers, mean) = (
            try_texts(df, BY_CRITERION, cols::CRITERION)?,
            try_texts(df, BY_CRITERION, cols::REVIEWER)?,
            try_floats(df, BY_CRITERION, cols::MEAN_SCORE)?,
        );
        let (rows, columns) = (distinct(&criteria), distinct(&reviewers));
        let mut cells = vec![vec![None; columns.len()]; rows.len()];
        for i in 0..df.height() {
            let r = rows.iter().position(|c| *c == criteria[i]);
            let c = columns.iter().position(|c| *c == reviewers[i]);
            if let (Some(r), Some(c)) = (r, c) {
                cells[r][c] = mean[i];
            }
        }
        let chart = heatmap(&Heatmap {
            titles: Titles {
                id: "review-criteria-chart",
                title: "Mean score per criterion and reviewer",
                x: "reviewer",
                y: "criterion",
            },
            columns,
            rows,
            cells,
            domain: SCORE_RANGE,
            value_column: cols::MEAN_SCORE,
        });
        let table = frame_table(
            df,
            TableOptions {
                id: "review-criteria",
                caption: "Per criterion and reviewer (as track query --by criterion)",
                max_rows: usize::MAX,
            },
        );
        Ok(figure(
            "review-criteria-figure",
            "Scores per reviewer",
            &chart,
            "",
            &table,
        ))
    }

    /// Agreement between reviewers per criterion: kappa (two reviewers) and alpha.
    fn agreement_figure(&self) -> Result<String, ReportError> {
        let Some(df) = &self.agreement else {
            return Ok(
                "<p class=\"note\">Agreement needs two reviewers or more of the same \
                       datasheets; these runs have one.</p>"
                    .to_owned(),
            );
        };
        let criteria = try_texts(df, AGREEMENT, cols::CRITERION)?;
        let (kappa, alpha) = (
            try_floats(df, AGREEMENT, cols::KAPPA_QUADRATIC)?,
            try_floats(df, AGREEMENT, cols::ALPHA_ORDINAL)?,
        );
        let mark = |name: &str, criterion: &str, v: Option<f64>| {
            v.map(|value| Mark {
                value,
                low: None,
                high: None,
                tip: format!("{criterion}: {name} {}", number("agreement", value)),
            })
        };
        let rows = criteria
            .iter()
            .enumerate()
            .map(|(i, c)| DotRow {
                label: c.clone(),
                marks: vec![mark("kappa", c, kappa[i]), mark("alpha", c, alpha[i])],
            })
            .collect();
        let chart = dot_chart(&DotChart {
            titles: Titles {
                id: "review-agreement-chart",
                title: "Agreement between reviewers per criterion",
                x: "agreement (1 = perfect, 0 = chance)",
                y: "criterion",
            },
            series: vec![
                "Cohen's kappa, quadratic (two reviewers)".into(),
                "Krippendorff's alpha, ordinal".into(),
            ],
            rows,
            domain: (-1.0, 1.0),
            reference: Some(0.0),
        });
        let table = frame_table(
            df,
            TableOptions {
                id: "review-agreement",
                caption: "Agreement (as track query --by criterion --agreement)",
                max_rows: usize::MAX,
            },
        );
        let note = "Undefined values (too few shared datasheets, or no variation) are left out of the chart.";
        Ok(figure(
            "review-agreement-figure",
            "Agreement between reviewers",
            &chart,
            note,
            &table,
        ))
    }

    /// The per-generator table of `track query --by generator`.
    fn generator_table(&self) -> String {
        frame_table(
            &self.by_generator,
            TableOptions {
                id: "review-generator-table",
                caption: "Per reviewer and generator model (as track query --by generator)",
                max_rows: usize::MAX,
            },
        )
    }

    /// Every listed review with each score's justification, collapsed.
    fn justifications(&self) -> String {
        let mut out = String::from("<h3 id=\"review-justifications\">Justifications</h3>");
        let listed = if self.notes.len() < self.reviews {
            format!(
                "The first {} of {} reviews. Every review: <code>track export csv --kind review</code>.",
                self.notes.len(),
                thousands(self.reviews as u64)
            )
        } else {
            "Every review, with the reason behind each score.".to_owned()
        };
        let _ = write!(out, "<p>{listed}</p>");
        for review in &self.notes {
            out.push_str(&review_block(review));
        }
        out
    }
}

/// One review's scores and justifications as a collapsible table.
fn review_block(review: &ReviewNotes) -> String {
    let overall = review
        .overall_score
        .map_or_else(|| "–".to_owned(), |s| s.to_string());
    let mut out = format!(
        "<details class=\"review\"><summary>{} · {} · by {} · overall {} ({})</summary>",
        escape(&review.sensor),
        escape(&review.generator),
        escape(&review.reviewer),
        escape(&overall),
        escape(review.parse_status.as_str())
    );
    if let Some(detail) = &review.detail {
        let _ = write!(
            out,
            "<p class=\"note\">{}</p>",
            escape(&truncate(detail, 600))
        );
    }
    out.push_str(
        "<table><thead><tr><th scope=\"col\">criterion</th><th scope=\"col\">score</th>\
         <th scope=\"col\">justification</th></tr></thead><tbody>",
    );
    let rows = review.scores.iter().map(|s| {
        (
            s.criterion.as_str(),
            s.score,
            s.justification.as_deref(),
            s.na_reason.as_deref(),
        )
    });
    let overall_row = (
        "Overall",
        review.overall_score,
        review.overall_justification.as_deref(),
        review.overall_na_reason.as_deref(),
    );
    for (criterion, score, justification, na_reason) in rows.chain([overall_row]) {
        let score = score.map_or_else(|| "N/A".to_owned(), |s| s.to_string());
        let why = match (justification, na_reason) {
            (Some(j), _) => j.to_owned(),
            (None, Some(na)) => format!("N/A: {na}"),
            (None, None) => "–".to_owned(),
        };
        let _ = write!(
            out,
            "<tr><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"why\">{}</td></tr>",
            escape(criterion),
            escape(&score),
            escape(&truncate(&why, JUSTIFICATION_CHARS))
        );
    }
    let _ = write!(
        out,
        "</tbody></table><p class=\"note\">{}</p></details>",
        escape(&review.generated_path)
    );
    out
}

/// The distinct values of `values`, in first-seen order.
fn distinct(values: &[String]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(v) {
            seen.push(v.clone());
        }
    }
    seen
}

impl Section for ReviewSection {
    fn anchor(&self) -> &'static str {
        "review"
    }

    fn heading(&self) -> String {
        let noun = if self.runs.len() == 1 { "run" } else { "runs" };
        format!("Reviews ({noun} {})", self.run_list().replace(',', ", "))
    }

    fn body(&self) -> Result<String, ReportError> {
        if self.reviews == 0 {
            return Ok("<p>These runs recorded no reviews yet.</p>".to_owned());
        }
        Ok([
            self.overview()?,
            self.reviewers_figure()?,
            self.generators_figure()?,
            self.criteria_figure()?,
            self.agreement_figure()?,
            self.generator_table(),
            self.justifications(),
        ]
        .concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ParseStatus;
    use crate::store::ScoreRow;

    #[test]
    fn a_review_block_escapes_justifications_and_names_na_reasons() {
        let review = ReviewNotes {
            review_id: 1,
            reviewer: "openai:gpt-4o-mini".into(),
            generator: "openai:gpt-4o".into(),
            sensor: "Bosch BME280".into(),
            generated_path: "results/x.md".into(),
            parse_status: ParseStatus::Partial,
            detail: None,
            overall_score: Some(4),
            overall_justification: Some("</script><img src=x onerror=alert(1)>".into()),
            overall_na_reason: None,
            scores: vec![ScoreRow {
                criterion: "P1".into(),
                score: None,
                justification: None,
                na_reason: Some("no disclaimer asked".into()),
            }],
        };
        let html = review_block(&review);
        let doc = roxmltree::Document::parse(&html).unwrap();
        assert!(doc.descendants().all(|n| n.tag_name().name() != "img"));
        assert!(html.contains("N/A: no disclaimer asked"));
        assert!(html.contains("overall 4 (partial)"));
    }

    #[test]
    fn distinct_keeps_first_seen_order() {
        let v: Vec<String> = ["b", "a", "b"].map(String::from).to_vec();
        assert_eq!(distinct(&v), ["b", "a"]);
    }
}
