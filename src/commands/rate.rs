//! `track rate`: a person's rating of one result, from the command line (the viewer's keys and
//! form do the same): pass or fail, a 1-5 score, a comment. Each field given replaces the
//! rater's, `--clear` empties one, the others are kept. Stored as a new row of `ratings`; the
//! result itself is never changed.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::store::{NewRating, Rating, RatingField, Verdict};

/// Rate a result by hand: pass or fail, a 1-5 score, a comment.
///
/// Rate a result: pass or fail (overriding its checks), a 1-5 score and a comment, e.g.
/// `track rate 3 9f2c41 --fail --comment "cites the wrong year"`. Each field given replaces
/// yours and the others are kept: `--pass`, then `--score 3`, then `--comment …` leave a pass
/// scored 3 with a comment. `--clear score` (or verdict, comment, all) empties a field; `--clear
/// all` withdraws your rating. Each rating is a new row: the newest of a rater is their current
/// one (`track query --by result` shows it, `--by human` the agreement of people with each
/// check, `track export csv` the columns human_verdict, human_score, human_comment and rater).
#[derive(Debug, clap::Args)]
pub struct RateArgs {
    /// The run of the result (a run id).
    #[arg(value_name = "RUN")]
    run: i64,
    /// The result's uid, or its first characters (`track query --by result --run RUN` lists
    /// them).
    #[arg(value_name = "UID")]
    uid: String,
    /// The result passes, whatever its checks said.
    #[arg(long, conflicts_with = "fail")]
    pass: bool,
    /// The result fails, whatever its checks said.
    #[arg(long)]
    fail: bool,
    /// A score from 1 (bad) to 5 (good).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=5))]
    score: Option<u8>,
    /// Why, in a sentence.
    #[arg(long, value_name = "TEXT")]
    comment: Option<String>,
    /// Empty a field of your rating: verdict, score, comment, or all (withdraws it); several
    /// with commas. A field given as well is set, not emptied.
    #[arg(long, value_name = "FIELD", value_delimiter = ',', value_parser = clear_field)]
    clear: Vec<Vec<RatingField>>,
    /// Who rates [default: $TRACK_RATER, else $USER]
    #[arg(long, value_name = "NAME")]
    rater: Option<String>,
}

pub(crate) fn run(context: &Context, args: RateArgs) -> anyhow::Result<ExitCode> {
    let rater = args
        .rater
        .or_else(|| std::env::var("TRACK_RATER").ok())
        .or_else(|| std::env::var("USER").ok())
        .filter(|r| !r.trim().is_empty())
        .context("who rates? give --rater NAME (or set TRACK_RATER)")?;
    let verdict = match (args.pass, args.fail) {
        (true, _) => Some(Verdict::Pass),
        (_, true) => Some(Verdict::Fail),
        _ => None,
    };
    let store = context.open_existing_store()?;
    store.existing_run(args.run)?;
    let uid = store
        .result_uid_by_prefix(args.run, &args.uid)?
        .unwrap_or(args.uid);
    let rating = NewRating {
        run_id: args.run,
        result_uid: uid.clone(),
        verdict,
        score: args.score,
        comment: args.comment,
        clear: args.clear.into_iter().flatten().collect(),
        rater,
    };
    let now = store.add_rating(&rating)?;
    context.note(format!(
        "track: rated result {} of run {} ({}): {}",
        &uid[..uid.len().min(12)],
        args.run,
        now.rater,
        described(&now)
    ));
    Ok(ExitCode::SUCCESS)
}

/// `--clear`'s value: a field's name, or `all`.
fn clear_field(name: &str) -> Result<Vec<RatingField>, String> {
    RatingField::parse(name)
        .ok_or_else(|| format!("`{name}` is not a field: use verdict, score, comment or all"))
}

/// A rater's rating as it stands, in words: `pass, score 3, comment "…"`, or `withdrawn`.
fn described(rating: &Rating) -> String {
    let fields: Vec<String> = [
        rating.verdict.map(|v| v.as_str().to_owned()),
        rating.score.map(|s| format!("score {s}")),
        rating.comment.as_ref().map(|c| format!("comment {c:?}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if fields.is_empty() {
        "withdrawn (no verdict, score or comment left)".to_owned()
    } else {
        fields.join(", ")
    }
}
