//! A result's transcript (`/runs/{run}/results/{result}`): the request as sent, the answer,
//! its measures, every check and the judge; and a case side by side
//! (`/runs/{run}/cases/{case}`): every model's and template's answer to it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Html;
use maud::{Markup, html};
use serde_json::Value;

use super::format;
use super::layout::page;
use super::server::{App, ViewError};
use crate::store::{CallText, CaseAnswer, Transcript};

/// `/runs/{run}/results/{result}`.
pub(crate) async fn result(
    State(app): State<Arc<App>>,
    Path((run_id, result_id)): Path<(i64, i64)>,
) -> Result<Html<String>, ViewError> {
    let rater = app.rater.clone();
    let (transcript, rating) = app
        .read(move |store| {
            let transcript = store.transcript(run_id, result_id)?;
            let uid = transcript.as_ref().and_then(|t| t.cell.uid.clone());
            // The current rating, and the viewer's rater's own (what the form holds).
            let rating = match uid {
                Some(u) => (store.rating_for(&u)?, store.rater_rating(&u, &rater)?),
                None => (None, None),
            };
            Ok((transcript, rating))
        })
        .await?;
    let transcript = transcript
        .ok_or_else(|| ViewError::NotFound(format!("Run {run_id} has no result {result_id}.")))?;
    let t = &transcript;
    let cell = &t.cell;
    let body = html! {
        nav.crumbs {
            a href=(format!("/runs/{run_id}")) { "Run " (run_id) }
            " › "
            a href=(case_path(run_id, &cell.prompt_name)) { (cell.prompt_name) }
            " › " (t.model_ref)
            @if let Some(template) = &t.template_name { " · " (template) }
            " · repeat " (cell.repeat_index)
        }
        h1 {
            span.outcome.(cell.outcome.as_str()) { (cell.outcome) }
            " " (cell.prompt_name) " · " (t.model_ref)
        }
        (measures(t))
        @match &t.call {
            Some(call) => {
                @match turns(call.request.as_deref()) {
                    Some(turns) => h2 { "Conversation as sent (" (turns) " turns: each answer in place, the last below)" },
                    None => h2 { "Request as sent" },
                }
                (request(call.request.as_deref()))
                h2 { "Answer" }
                (answer(call))
            }
            None => {
                h2 { "Answer" }
                p.empty { "No call was made." }
            }
        }
        (checks(t))
        (tool_calls(t))
        @if let Some(uid) = &cell.uid {
            (super::ratings::form(&app, run_id, uid, &format!("/runs/{run_id}/results/{result_id}"), (rating.0.as_ref(), rating.1.as_ref())))
        }
        @if t.judge.is_some() || t.judge_score.is_some() {
            h2 { "Judge" }
            dl.facts {
                dt { "Score" } dd { (format::count(t.judge_score)) }
                @if let Some(judge) = &t.judge {
                    dt { "Judge" } dd { (judge.provider) ":" (judge.model) }
                }
            }
            @if let Some(judge) = &t.judge {
                h3 { "Justification (the judge's answer)" }
                (answer(judge))
            }
        }
    };
    Ok(Html(
        page(
            &app,
            &format!("{} · {}", cell.prompt_name, t.model_ref),
            body,
        )
        .into_string(),
    ))
}

/// The result's measures.
fn measures(t: &Transcript) -> Markup {
    let cell = &t.cell;
    html! {
        dl.facts {
            dt { "Model" } dd { (t.model_ref) " (" (t.model_id) ")" }
            dt { "Latency" } dd { (format::latency(cell.latency_ms)) }
            dt { "Tokens" } dd {
                (format::count(t.input_tokens)) " in, " (format::count(t.output_tokens)) " out"
                @if t.tokens_estimated { " (estimated)" }
            }
            dt { "Cost" } dd { (format::usd(cell.cost_usd)) " (paid " (format::usd(t.paid_usd)) ")" }
            dt { "Cache hit" } dd { (if cell.cache_hit { "yes" } else { "no" }) }
            @if let Some(call) = &t.call {
                dt { "Attempts" } dd { (call.attempts) }
                dt { "Finish" } dd { (call.finish_reason.as_deref().unwrap_or("–")) }
            }
            @if let Some(score) = t.score {
                dt { "Score" } dd { (format!("{score:.3}")) }
            }
            dt { "Answered" } dd { time datetime=(t.created_at) { (format::when(&t.created_at)) } }
        }
    }
}

/// Every check with its outcome and reason.
fn checks(t: &Transcript) -> Markup {
    html! {
        h2 { "Checks" }
        table.checks {
            thead { tr { th { "Check" } th { "Expected" } th { "Outcome" } th.num { "Score" } th.num { "Weight" } th { "Reason" } } }
            tbody {
                @if t.checks.is_empty() {
                    tr {
                        td { (t.method) }
                        td { pre.inline { (t.expected.as_deref().unwrap_or("–")) } }
                        td { span.outcome.(t.cell.outcome.as_str()) { (t.cell.outcome) } }
                        td.num { "–" }
                        td.num { "1" }
                        td { pre.inline { (t.detail.as_deref().unwrap_or("")) } }
                    }
                }
                @for check in &t.checks {
                    tr {
                        td { (check.method) }
                        td { pre.inline { (check.expected.as_deref().unwrap_or("–")) } }
                        td { span.outcome.(check.outcome.as_str()) { (check.outcome) } }
                        td.num { (check.score.map_or_else(|| "–".into(), |s| format!("{s:.2}"))) }
                        td.num { (check.weight) }
                        td { pre.inline { (check.reason.as_deref().unwrap_or("")) } }
                    }
                }
            }
        }
    }
}

/// The tools the model called in its tool loop, step by step, with what each was sent back;
/// nothing for a result without tools.
fn tool_calls(t: &Transcript) -> Markup {
    html! {
        @if !t.tool_calls.is_empty() {
            h2 { "Tool calls (" (t.tool_calls.len()) ")" }
            table.checks {
                thead { tr { th.num { "Step" } th { "Tool" } th { "Arguments" } th { "Result sent back" } } }
                tbody {
                    @for call in &t.tool_calls {
                        tr {
                            td.num { (call.step) }
                            td { (call.name) }
                            td { pre.inline { (call.arguments) } }
                            td { pre.inline { (call.result.as_deref().unwrap_or("– (the loop stopped at max_steps)")) } }
                        }
                    }
                }
            }
        }
    }
}

/// The turns of a conversation's last request (the model's earlier answers are among its
/// messages): its user turns, answered and to answer; `None` for a request of one turn.
fn turns(json: Option<&str>) -> Option<usize> {
    let value = serde_json::from_str::<Value>(json?).ok()?;
    let messages = value.get("messages")?.as_array()?;
    let answered = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count();
    (answered > 0).then(|| answered + 1)
}

/// The canonical request: system prompt, messages (text, images by hash), parameters.
fn request(json: Option<&str>) -> Markup {
    let Some(value) = json.and_then(|j| serde_json::from_str::<Value>(j).ok()) else {
        return html! { p.empty { "The request was not stored." } };
    };
    let system = value.get("system").and_then(Value::as_str);
    let messages = value
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let settings: Vec<(String, String)> = value
        .get("params")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
        .unwrap_or_default();
    html! {
        dl.facts {
            dt { "Model" } dd {
                (value.get("provider").and_then(Value::as_str).unwrap_or("?")) ":"
                (value.get("model").and_then(Value::as_str).unwrap_or("?"))
            }
            @for (name, setting) in &settings {
                dt { (name) } dd { (setting) }
            }
            @if let Some(schema) = value.get("schema").and_then(|s| s.get("name")).and_then(Value::as_str) {
                dt { "Answer schema" } dd { (schema) }
            }
        }
        @if let Some(system) = system {
            div.message.system {
                div.role { "system" }
                pre { (system) }
            }
        }
        @for message in &messages {
            div.message.(message.get("role").and_then(Value::as_str).unwrap_or("user")) {
                div.role { (message.get("role").and_then(Value::as_str).unwrap_or("?")) }
                @for part in message.get("content").and_then(Value::as_array).into_iter().flatten() {
                    @match part.get("type").and_then(Value::as_str) {
                        Some("image") => {
                            p.image { "image " (part.get("media_type").and_then(Value::as_str).unwrap_or("")) " sha256 "
                                code { (part.get("sha256").and_then(Value::as_str).unwrap_or("?")) } }
                        }
                        _ => { pre { (part.get("text").and_then(Value::as_str).unwrap_or("")) } }
                    }
                }
            }
        }
    }
}

/// A call's answer, or its error.
fn answer(call: &CallText) -> Markup {
    html! {
        @match (&call.answer, &call.error) {
            (Some(text), _) => { pre.answer { (text) } }
            (None, Some(error)) => {
                p.error { "Error"
                    @if let Some(status) = call.http_status { " (HTTP " (status) ")" }
                    ": " }
                pre.answer { (error) }
            }
            (None, None) => { p.empty { "No answer." } }
        }
    }
}

/// The page of the case `name` of run `run_id`: `/runs/{run}/cases/{id}`, the id
/// percent-encoded as a path segment.
pub(crate) fn case_path(run_id: i64, name: &str) -> String {
    let mut path = format!("/runs/{run_id}/cases/");
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            path.push(char::from(byte));
        } else {
            path.push_str(&format!("%{byte:02X}"));
        }
    }
    path
}

/// `/runs/{run}/cases/{case}`: the case by its id (`q02`, as tables and the guide name it),
/// or by its index in the run (`0`, the first) when no case has that id.
pub(crate) async fn case(
    State(app): State<Arc<App>>,
    Path((run_id, case)): Path<(i64, String)>,
) -> Result<Html<String>, ViewError> {
    let asked = case.clone();
    let (columns, results) = app
        .read(move |store| {
            let index = match store.case_index_named(run_id, &case)? {
                Some(index) => Some(index),
                None => case.parse::<i64>().ok(),
            };
            let results = match index {
                Some(index) => store.case_results(run_id, index)?,
                None => Vec::new(),
            };
            Ok((store.grid_columns(run_id)?, results))
        })
        .await?;
    let case = asked;
    let Some(first) = results.first().map(|r| &r.cell) else {
        return Err(ViewError::NotFound(format!(
            "Run {run_id} has no case `{case}`: give a case by its id, as its tables name it, or by its index from 0."
        )));
    };
    let name = first.prompt_name.clone();
    let label = |model: i64, template: i64| {
        columns
            .iter()
            .find(|c| c.model_index == model && c.template_index == template)
            .map(|c| match &c.template_name {
                Some(t) => format!("{} · {t}", c.model_ref),
                None => c.model_ref.clone(),
            })
            .unwrap_or_else(|| format!("model {model}"))
    };
    let body = html! {
        nav.crumbs { a href=(format!("/runs/{run_id}")) { "Run " (run_id) } " › " (name) }
        h1 { (name) " · side by side" }
        div.side {
            @for CaseAnswer { cell, answer, detail } in &results {
                section.answer-card {
                    h2 {
                        a href=(format!("/runs/{run_id}/results/{}", cell.id)) {
                            span.outcome.(cell.outcome.as_str()) { (cell.outcome) }
                            " " (label(cell.model_index, cell.template_index))
                            @if cell.repeat_index > 0 { " · repeat " (cell.repeat_index) }
                        }
                    }
                    p.meta { (format::latency(cell.latency_ms)) " · " (format::count(cell.tokens)) " tokens · " (format::usd(cell.cost_usd)) }
                    @match answer {
                        Some(text) => { pre.answer { (text) } }
                        None => { p.empty { "No answer." } }
                    }
                    @if let Some(detail) = detail {
                        p.detail { (detail) }
                    }
                }
            }
        }
    };
    Ok(Html(
        page(&app, &format!("{name} · side by side"), body).into_string(),
    ))
}
