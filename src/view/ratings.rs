//! Human ratings in the viewer: a result marked pass or fail (overriding its checks), scored 1
//! to 5 and commented, with the keyboard on a grid (j/k to move, p/f to mark, x to unmark, 1-5
//! to score, 0 to unscore) or with the form of its transcript. As with `track rate`, each field
//! sent replaces the rater's, a field named in `clear` is emptied, and the others are kept: a
//! key sends one field, the form (filled with the rater's rating) all three. Each is a new row
//! of `ratings` (never an edit of the result), by the viewer's rater (`--rater`), sent with the
//! page's CSRF token.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use super::security::{CSRF_FIELD, CSRF_HEADER, write_allowed};
use super::server::{App, ViewError};
use crate::store::{NewRating, Rating, RatingField, StoreError, Verdict};

/// The response header that gives a script the grid's new mark of the rated result (empty:
/// none left).
pub(crate) const MARK_HEADER: &str = "x-rating-mark";

/// The form of a rating (`POST /runs/{run}/ratings`).
#[derive(Debug, Deserialize)]
pub struct RatingForm {
    csrf: Option<String>,
    /// The rated result's uid.
    result: String,
    /// `pass`, `fail`, or empty.
    verdict: Option<String>,
    /// `1`..`5`, or empty.
    score: Option<String>,
    comment: Option<String>,
    /// The fields emptied unless given: `verdict`, `score`, `comment` or `all`, with commas
    /// (the form sends `all`: what it leaves empty is emptied).
    clear: Option<String>,
    /// The viewer's page to go back to (a form's post; a script's gets 204).
    back: Option<String>,
}

/// `POST /runs/{run}/ratings`.
pub(crate) async fn rate(
    State(app): State<Arc<App>>,
    Path(run_id): Path<i64>,
    headers: HeaderMap,
    Form(form): Form<RatingForm>,
) -> Result<Response, ViewError> {
    if !write_allowed(&app.csrf, &headers, form.csrf.as_deref()) {
        return Err(ViewError::Refused(
            StatusCode::FORBIDDEN,
            "This rating did not come from a page of this viewer (no valid CSRF token): reload the page and rate again.".into(),
        ));
    }
    let refused = |why: String| ViewError::Refused(StatusCode::BAD_REQUEST, why);
    let verdict = match form
        .verdict
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(name) => Some(
            Verdict::parse(name)
                .ok_or_else(|| refused(format!("No verdict `{name}`: pass or fail.")))?,
        ),
    };
    let score = match form
        .score
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(n) => Some(
            n.parse::<u8>()
                .map_err(|_| refused(format!("A score is 1 to 5, not `{n}`.")))?,
        ),
    };
    let mut clear = Vec::new();
    for name in form.clear.as_deref().unwrap_or("").split(',') {
        if name.trim().is_empty() {
            continue;
        }
        clear.extend(RatingField::parse(name).ok_or_else(|| {
            refused(format!(
                "No field `{}` to clear: verdict, score, comment or all.",
                name.trim()
            ))
        })?);
    }
    let rating = NewRating {
        run_id,
        result_uid: form.result.clone(),
        verdict,
        score,
        comment: form.comment.clone().filter(|c| !c.trim().is_empty()),
        clear,
        rater: app.rater.clone(),
    };
    // A rating the store refuses (no such result, nothing in it) is the request's fault; a
    // database that fails is the server's. The grid's mark is the result's current rating.
    let mark = app
        .write(move |store| match store.add_rating(&rating) {
            Ok(_) => Ok(Ok(store
                .rating_for(&rating.result_uid)?
                .map(|r| mark(&r))
                .unwrap_or_default())),
            Err(StoreError::Rating(why)) => Ok(Err(why.to_string())),
            Err(other) => Err(other),
        })
        .await?
        .map_err(refused)?;
    let scripted = headers.contains_key(CSRF_HEADER);
    Ok(match form.back.as_deref().filter(|b| local_path(b)) {
        Some(back) if !scripted => Redirect::to(back).into_response(),
        _ => (StatusCode::NO_CONTENT, [(MARK_HEADER, mark)]).into_response(),
    })
}

/// Whether `path` is a page of this viewer (`/…`, never `//host` or a scheme).
fn local_path(path: &str) -> bool {
    path.starts_with('/') && !path.starts_with("//") && !path.contains('\\')
}

/// The current ratings of the results `uids`, by uid.
pub(crate) fn current(
    store: &crate::store::Store,
    uids: &[String],
) -> crate::store::Result<HashMap<String, Rating>> {
    let mut found = HashMap::new();
    for uid in uids {
        if let Some(rating) = store.rating_for(uid)? {
            found.insert(uid.clone(), rating);
        }
    }
    Ok(found)
}

/// The short mark of a rating on a grid's cell: `P`, `F`, or its score.
pub(crate) fn mark(rating: &Rating) -> String {
    match (rating.verdict, rating.score) {
        (Some(Verdict::Pass), _) => "P".into(),
        (Some(Verdict::Fail), _) => "F".into(),
        (None, Some(score)) => score.to_string(),
        (None, None) => "…".into(),
    }
}

/// A transcript's rating: the current one, and the form that changes the viewer's rater's
/// (`own`), filled with it: what the form leaves empty is emptied.
pub(crate) fn form(
    app: &App,
    run_id: i64,
    uid: &str,
    back: &str,
    (current, own): (Option<&Rating>, Option<&Rating>),
) -> Markup {
    let verdict = own.and_then(|r| r.verdict);
    let score = own.and_then(|r| r.score);
    html! {
        h2 { "Human rating" }
        @if let Some(r) = current {
            p.current-rating {
                "Rated " strong { (r.verdict.map_or("–", Verdict::as_str)) }
                @if let Some(score) = r.score { ", " (score) "/5" }
                " by " (r.rater) " at " time datetime=(r.created_at) { (super::format::when(&r.created_at)) }
                @if let Some(comment) = &r.comment { ": " (comment) }
            }
        } @else {
            p.empty { "Not rated yet." }
        }
        form.rating-form method="post" action=(format!("/runs/{run_id}/ratings")) {
            input type="hidden" name=(CSRF_FIELD) value=(app.csrf);
            input type="hidden" name="result" value=(uid);
            input type="hidden" name="back" value=(back);
            input type="hidden" name="clear" value="all";
            label { input type="radio" name="verdict" value="pass" checked[verdict == Some(Verdict::Pass)]; " pass" }
            label { input type="radio" name="verdict" value="fail" checked[verdict == Some(Verdict::Fail)]; " fail" }
            label { input type="radio" name="verdict" value="" checked[verdict.is_none()]; " no verdict" }
            label { "Score "
                select name="score" {
                    option value="" selected[score.is_none()] { "–" }
                    @for n in 1..=5u8 { option value=(n) selected[score == Some(n)] { (n) } }
                }
            }
            textarea name="comment" placeholder="a comment" { (own.and_then(|r| r.comment.as_deref()).unwrap_or("")) }
            button type="submit" { "Rate as " (app.rater) }
        }
        p.keys { "The form holds your rating: what you empty is cleared. On a run's grid: j/k move, p/f mark pass/fail, x unmarks, 1-5 score, 0 unscores; each key changes that field only." }
    }
}
