//! The pages of runs that are not benchmarks: reviews (criterion × reviewer, the datasheets
//! side by side), relevance (the image, its predicates, WITH and WITHOUT answers, confusion
//! counts) and pairwise comparisons (both orders of each verdict, the win matrix).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use maud::{Markup, html};

use super::layout::{page, pager, run_heading};
use super::params::{PAGE_SIZE, link, page_count, page_value};
use super::server::{App, ViewError};
use crate::store::{PredictionCell, RunInfo, VerdictCell};

/// Images on a relevance page (each with its predicates and answers).
const IMAGES_PER_PAGE: u64 = 10;

/// Items on a pairwise page (each with its verdicts and answers).
const ITEMS_PER_PAGE: u64 = 20;

/// The page of `run`, a run of another kind than `bench`, at page `number`.
pub(crate) async fn page_of(
    app: Arc<App>,
    run: RunInfo,
    number: u64,
) -> Result<Html<String>, ViewError> {
    let run_id = run.id;
    let more = |p: u64| {
        link(
            &format!("/runs/{run_id}"),
            &[("page", page_value(p).as_deref())],
        )
    };
    let body = match run.kind.as_str() {
        "review" => review(&app, run_id, number, &more).await?,
        "relevance" => relevance(&app, run_id, number, &more).await?,
        "pairwise" => pairwise(&app, run_id, number, &more).await?,
        _ => {
            html! { p.empty { "The viewer has no page for runs of this kind: `track query` summarises them." } }
        }
    };
    let body = html! { (run_heading(&run)) (body) };
    Ok(Html(
        page(&app, &format!("Run {run_id}"), body).into_string(),
    ))
}

/// A review run: each datasheet's criteria × reviewers, scores with their justifications.
async fn review(
    app: &Arc<App>,
    run_id: i64,
    number: u64,
    more: &(dyn Fn(u64) -> String + Sync),
) -> Result<Markup, ViewError> {
    let offset = (number - 1) * PAGE_SIZE;
    let (sheets, total, cells) = app
        .read(move |store| {
            let (sheets, total) = store.review_sheets(run_id, PAGE_SIZE, offset)?;
            let keys: Vec<String> = sheets.iter().map(|s| s.generated_sha256.clone()).collect();
            Ok((sheets, total, store.review_scores(run_id, &keys)?))
        })
        .await?;
    Ok(html! {
        p.count { (total) " datasheets reviewed" }
        @for sheet in &sheets {
            @let mine: Vec<_> = cells.iter().filter(|c| c.generated_sha256 == sheet.generated_sha256).collect();
            @let reviewers: BTreeMap<&str, i64> = mine.iter().map(|c| (c.reviewer_ref.as_str(), c.review_id)).collect();
            @let criteria: Vec<&str> = {
                let mut seen = BTreeSet::new();
                mine.iter().filter_map(|c| c.criterion.as_deref()).filter(|c| seen.insert(*c)).collect()
            };
            section.sheet {
                h2 { (sheet.brand) " " (sheet.sensor) " · written by " (sheet.generator) }
                table.review {
                    thead { tr {
                        th { "Criterion" }
                        @for (reviewer, review_id) in &reviewers {
                            th { a href=(format!("/runs/{run_id}/reviews/{review_id}")) title="the datasheets side by side" { (reviewer) } }
                        }
                    } }
                    tbody {
                        @for criterion in &criteria {
                            tr {
                                th { (criterion) }
                                @for reviewer in reviewers.keys() {
                                    td {
                                        @if let Some(cell) = mine.iter().find(|c| c.reviewer_ref == *reviewer && c.criterion.as_deref() == Some(*criterion)) {
                                            strong { (cell.score.map_or_else(|| "N/A".to_owned(), |s| s.to_string())) }
                                            @if let Some(why) = cell.justification.as_deref().or(cell.na_reason.as_deref()) {
                                                p.detail { (why) }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                        tr {
                            th { "Overall" }
                            @for reviewer in reviewers.keys() {
                                td {
                                    @if let Some(cell) = mine.iter().find(|c| c.reviewer_ref == *reviewer) {
                                        strong { (cell.overall_score.map_or_else(|| cell.parse_status.clone(), |s| s.to_string())) }
                                        @if let Some(why) = &cell.overall_justification {
                                            p.detail { (why) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        (pager(number, page_count(total), more))
    })
}

/// `/runs/{run}/reviews/{review}`: the generated datasheet beside the official one.
pub(crate) async fn review_sheets(
    State(app): State<Arc<App>>,
    Path((run_id, review_id)): Path<(i64, i64)>,
) -> Result<Html<String>, ViewError> {
    let sheets = app
        .read(move |store| store.review_texts(run_id, review_id))
        .await?
        .ok_or_else(|| ViewError::NotFound(format!("Run {run_id} has no review {review_id}.")))?;
    let body = html! {
        nav.crumbs { a href=(format!("/runs/{run_id}")) { "Run " (run_id) } " › " (sheets.brand) " " (sheets.sensor) }
        h1 { (sheets.brand) " " (sheets.sensor) " · reviewed by " (sheets.reviewer_ref) }
        div.side {
            section.answer-card {
                h2 { "Generated by " (sheets.generator) }
                pre.answer { (sheets.generated.as_deref().unwrap_or("")) }
            }
            section.answer-card {
                h2 { "Official (" (sheets.official_status) ")" }
                @match &sheets.official {
                    Some(text) => { pre.answer { (text) } }
                    None => { p.empty { "No official datasheet." } }
                }
            }
        }
        h2 { "The reviewer's answer" }
        @match &sheets.answer {
            Some(text) => { pre.answer { (readable_json(text)) } }
            None => { p.empty { "No answer stored." } }
        }
    };
    Ok(Html(page(&app, "Review", body).into_string()))
}

/// `text` laid out on several lines when it is a JSON object (as reviewers answer), else as
/// it is.
fn readable_json(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => {
            serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned())
        }
        _ => text.to_owned(),
    }
}

/// A relevance run: the confusion counts, then each image with its predicates' WITH and
/// WITHOUT scores and the answers they were read from.
async fn relevance(
    app: &Arc<App>,
    run_id: i64,
    number: u64,
    more: &(dyn Fn(u64) -> String + Sync),
) -> Result<Markup, ViewError> {
    let offset = (number - 1) * IMAGES_PER_PAGE;
    let (images, total, predictions, confusion) = app
        .read(move |store| {
            let (images, total) = store.relevance_images(run_id, IMAGES_PER_PAGE, offset)?;
            let names: Vec<String> = images.iter().map(|(name, _)| name.clone()).collect();
            Ok((
                images,
                total,
                store.relevance_predictions(run_id, &names)?,
                store.relevance_confusion(run_id)?,
            ))
        })
        .await?;
    let score_name = |s: Option<i64>| s.map_or_else(|| "invalid".to_owned(), |s| s.to_string());
    Ok(html! {
        h2 { "Confusion counts" }
        p.keys { "Scores: 2 = holds, 0 = does not hold, 1 = uncertain (WITH only)." }
        table.confusion {
            thead { tr { th { "Variant" } th { "Truth" } th { "Score" } th.num { "Predictions" } } }
            tbody {
                @for c in &confusion {
                    tr { td { (c.variant) } td { (c.truth) } td { (score_name(c.score)) } td.num { (c.count) } }
                }
            }
        }
        p.count { (total) " images" }
        @for (image, sha) in &images {
            @let mine: Vec<&PredictionCell> = predictions.iter().filter(|p| &p.image == image).collect();
            section.sheet {
                h2 { (image) }
                img.shown src=(format!("/blobs/{sha}")) alt=(image);
                table.predictions {
                    thead { tr { th { "Predicate" } th { "Truth" } th { "Model" } th { "Trial" } th { "WITH" } th { "WITHOUT" } } }
                    tbody {
                        @for p in mine.iter().filter(|p| p.variant == "WITH") {
                            @let without = mine.iter().find(|q| q.variant == "WITHOUT" && q.predicate == p.predicate && q.model_ref == p.model_ref && q.trial == p.trial);
                            tr {
                                td { (p.predicate) } td { (p.truth) } td { (p.model_ref) } td { (p.trial) }
                                td { (score_name(p.score)) @if let Some(why) = &p.invalid_reason { p.detail { (why) } } }
                                td { (without.map_or_else(|| "–".to_owned(), |q| score_name(q.score))) }
                            }
                        }
                    }
                }
                @let answers: BTreeMap<(String, i64, String), &str> = mine.iter()
                    .filter_map(|p| p.answer.as_deref().map(|a| ((p.model_ref.clone(), p.trial, p.variant.clone()), a)))
                    .collect();
                div.side {
                    @for ((model, trial, variant), answer) in &answers {
                        section.answer-card {
                            h2 { (variant) " · " (model) " · trial " (trial) }
                            pre.answer { (answer) }
                        }
                    }
                }
            }
        }
        (pager(number, total.div_ceil(IMAGES_PER_PAGE).max(1), more))
    })
}

/// A pairwise run: the win matrix, then each item's verdicts in both orders with their
/// justifications, and the candidates' answers.
async fn pairwise(
    app: &Arc<App>,
    run_id: i64,
    number: u64,
    more: &(dyn Fn(u64) -> String + Sync),
) -> Result<Markup, ViewError> {
    let offset = (number - 1) * ITEMS_PER_PAGE;
    let (counts, items, total, verdicts, answers) = app
        .read(move |store| {
            let (items, total) = store.pairwise_items(run_id, ITEMS_PER_PAGE, offset)?;
            let (verdicts, answers) = store.pairwise_verdicts_of(run_id, &items)?;
            Ok((
                store.pairwise_counts(run_id)?,
                items,
                total,
                verdicts,
                answers,
            ))
        })
        .await?;
    // wins[(x, y)]: how often x beat y, whatever the order shown.
    let mut wins: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut candidates = BTreeSet::new();
    for c in &counts {
        candidates.insert(c.candidate_a.as_str());
        candidates.insert(c.candidate_b.as_str());
        let pair = match c.winner.as_str() {
            "A" => (c.candidate_a.as_str(), c.candidate_b.as_str()),
            "B" => (c.candidate_b.as_str(), c.candidate_a.as_str()),
            _ => continue,
        };
        *wins.entry(pair).or_default() += c.count;
    }
    Ok(html! {
        h2 { "Win matrix" }
        p.keys { "Each cell: how often the row's candidate beat the column's (both orders shown counted)." }
        table.win-matrix {
            thead { tr { th { "" } @for c in &candidates { th { (c) } } } }
            tbody {
                @for x in &candidates {
                    tr {
                        th { (x) }
                        @for y in &candidates {
                            td { @if x == y { "–" } @else { (wins.get(&(*x, *y)).copied().unwrap_or(0)) } }
                        }
                    }
                }
            }
        }
        p.count { (total) " items" }
        @for item in &items {
            section.sheet {
                h2 { (item) }
                table.verdicts {
                    thead { tr { th { "Judge" } th { "A" } th { "B" } th { "Repeat" } th { "Shown A first (ab)" } th { "Shown B first (ba)" } } }
                    tbody {
                        @for v in verdicts.iter().filter(|v| &v.item == item && v.shown_order == "ab") {
                            @let other = verdicts.iter().find(|w| w.item == v.item && w.judge == v.judge && w.candidate_a == v.candidate_a && w.candidate_b == v.candidate_b && w.repeat_index == v.repeat_index && w.shown_order == "ba");
                            tr {
                                td { (v.judge) } td { (v.candidate_a) } td { (v.candidate_b) } td { (v.repeat_index) }
                                td { (verdict(v)) }
                                td { @if let Some(w) = other { (verdict(w)) } @else { "–" } }
                            }
                        }
                    }
                }
                div.side {
                    @for a in answers.iter().filter(|a| &a.item == item) {
                        section.answer-card {
                            h2 { (a.candidate) }
                            @match (&a.answer, &a.error) {
                                (Some(text), _) => { pre.answer { (text) } }
                                (None, Some(error)) => { p.error { "Error: " (error) } }
                                (None, None) => { p.empty { "No answer." } }
                            }
                        }
                    }
                }
            }
        }
        (pager(number, total.div_ceil(ITEMS_PER_PAGE).max(1), more))
    })
}

/// A verdict: its winner (named by candidate) and justification.
fn verdict(v: &VerdictCell) -> Markup {
    let winner = match v.winner.as_str() {
        "A" => v.candidate_a.as_str(),
        "B" => v.candidate_b.as_str(),
        other => other,
    };
    html! {
        strong { (winner) }
        @if let Some(why) = v.justification.as_deref().or(v.invalid_reason.as_deref()) {
            p.detail { (why) }
        }
    }
}

/// `/blobs/{sha256}`: an image stored in the database (PNG, JPEG, GIF or WebP only).
pub(crate) async fn image(
    State(app): State<Arc<App>>,
    Path(sha): Path<String>,
) -> Result<Response, ViewError> {
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ViewError::NotFound("No such image.".into()));
    }
    let (media_type, content) = app
        .read(move |store| store.view_image(&sha))
        .await?
        .ok_or_else(|| ViewError::NotFound("No such image.".into()))?;
    Ok((
        [
            (header::CONTENT_TYPE, media_type),
            (header::CACHE_CONTROL, "max-age=86400, immutable".to_owned()),
        ],
        content,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::readable_json;

    #[test]
    fn a_json_answer_is_laid_out_and_other_text_kept() {
        assert_eq!(
            readable_json(r#"{"p1_score": 4, "p1_justification": "fine"}"#),
            "{\n  \"p1_score\": 4,\n  \"p1_justification\": \"fine\"\n}"
        );
        assert_eq!(readable_json("Sorry, no."), "Sorry, no.");
        assert_eq!(readable_json("[1, 2]"), "[1, 2]");
        assert_eq!(readable_json(r#"{"a": 1,}"#), r#"{"a": 1,}"#);
    }
}
