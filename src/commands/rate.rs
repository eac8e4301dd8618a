//! `track rate`: a person's rating of one result, from the command line (the viewer's `p`/`f`
//! keys do the same): pass or fail, a 1-5 score, a comment. Stored as a new row of `ratings`;
//! the result itself is never changed.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::store::{NewRating, Verdict};

/// Rate a result by hand: pass or fail, a 1-5 score, a comment.
///
/// Rate a result: pass or fail (overriding its checks), a 1-5 score and a comment, e.g.
/// `track rate 3 9f2c41 --fail --comment "cites the wrong year"`. Each rating is a new row:
/// the newest of a rater is their current one (`track query --by result` shows it, `--by human`
/// the agreement of people with each check, `track export csv` the columns human_verdict,
/// human_score, human_comment and rater).
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
    if store.runs_by_id(&[args.run])?.is_empty() {
        anyhow::bail!(
            "no run {} in the database: `track runs` lists them",
            args.run
        );
    }
    let uid = store
        .result_uid_by_prefix(args.run, &args.uid)?
        .unwrap_or(args.uid);
    let rating = NewRating {
        run_id: args.run,
        result_uid: uid.clone(),
        verdict,
        score: args.score,
        comment: args.comment,
        rater,
    };
    store.add_rating(&rating)?;
    context.note(format!(
        "track: rated result {} of run {} ({}) as {}",
        &uid[..uid.len().min(12)],
        args.run,
        rating.rater,
        [
            rating.verdict.map(|v| v.as_str().to_owned()),
            rating.score.map(|s| format!("score {s}")),
            rating.comment.as_ref().map(|_| "a comment".to_owned()),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    ));
    Ok(ExitCode::SUCCESS)
}
