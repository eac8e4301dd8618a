//! `track runs`: the runs recorded in the database, and the errors of one.

use std::process::ExitCode;

use polars::prelude::*;

use super::Context;
use crate::analysis::diff::{ANSWER_CHARS_SHOWN, shortened};
use crate::experiment::observed_status;
use crate::output::columns;
use crate::output::{Columns, Format, print_frame};
use crate::store::{BatchRow, RunErrorRow, RunInfo, RunStatus, Store};

/// List runs, newest first, with their status, calls, cost and what they paid.
///
/// List runs, newest first by the time they started: id, kind, file (or the command line of a
/// run without one), models, started, the time it took (`wall_time_s`, start to end),
/// status (a run whose process is gone shows as `abandoned`; one stopped by its budget as
/// `budget`; one whose batches are not collected yet as `waiting`, with a line under the table
/// saying what it waits for; one where nothing could run as `failed`; one that did not finish,
/// once the same command run again has resumed it, as `interrupted, resumed by 7`, with
/// `resumed_by` in CSV and JSON), calls, cache hits, errors, cost, what it paid and its budget
/// (`--budget`, `budget:`; empty when none); with --wide or in CSV/JSON, the command line too, and the
/// inputs a benchmark read its cases and prompts from: each data file and template with the
/// first 12 hex digits of its sha256 (`data/math.jsonl 9f86d081884c (2,000 rows); template
/// terse 60303ae22b99`), an hf:// file with the commit its revision resolved to. `--errors
/// ID` lists what run ID counts as errors, the rows its tally and `--fail-on-errors` count, each
/// with its item, the start of its answer and why (a run without any says so; one that does not
/// exist is an error).
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    /// List the errors this run counts: the calls that got no answer (failed, no key, not
    /// cached offline), then the answers that could not be used (an unparsable review, a
    /// judge's garbage verdict, a script check that crashed, `max_steps` reached), each with
    /// the start of its answer.
    #[arg(long, value_name = "RUN")]
    errors: Option<i64>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

pub(crate) fn run(context: &Context, args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    if let Some(run_id) = args.errors {
        let errors = super::registry::run_errors(&store, run_id)?;
        if errors.is_empty() && args.format.for_people() {
            // A sentence, not an empty frame; CSV and JSON stay a header and `[]`.
            crate::output::say(format_args!("run {run_id} recorded no errors"));
            return Ok(ExitCode::SUCCESS);
        }
        // Each answer's start beside why it is an error (whole in CSV and JSON).
        let shown = args.format.for_people().then_some(ANSWER_CHARS_SHOWN);
        let mut answers = Vec::with_capacity(errors.len());
        for e in &errors {
            let text = match e.call_id {
                Some(id) => store.answer_text(id)?,
                None => None,
            };
            answers.push(text.map(|t| match shown {
                Some(chars) => shortened(&t, chars),
                None => t,
            }));
        }
        print_frame(
            &errors_frame(&errors, answers)?,
            args.format,
            Columns::wide_if(args.wide),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut runs = store.list_runs()?;
    if let Some(limit) = args.limit {
        runs.truncate(limit);
    }
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    let options = store.runs_options_json(&ids)?;
    let inputs: Vec<Option<String>> = ids
        .iter()
        .map(|id| options.get(id).and_then(|json| inputs_of(json)))
        .collect();
    let unpriced: Vec<Option<String>> = runs.iter().map(|r| r.unpriced.clone()).collect();
    let mut df = runs_frame(context, &runs, &unpriced, args.format.for_people())?;
    df.with_column(Column::new(columns::INPUTS.name.into(), inputs))?;
    df.with_column(Column::new(columns::UNPRICED.name.into(), unpriced.clone()))?;
    df.with_column(Column::new(
        columns::RESUMED_BY.name.into(),
        runs.iter().map(|r| r.resumed_by).collect::<Vec<_>>(),
    ))?;
    if args.format.for_people() && !args.wide {
        // Compact tables leave what was paid to --wide, but a run's budget is read against
        // what it paid: here it stays, beside the budget.
        df.rename(columns::PAID_USD.name, columns::RUN_PAID_USD.name.into())?;
    }
    print_frame(&df, args.format, Columns::wide_if(args.wide))?;
    if args.format.for_people() {
        for (run, models) in runs.iter().zip(&unpriced) {
            if let Some(models) = models {
                crate::output::say(format_args!(
                    "run {}: cost unknown (–): {models} had no price; set `input_price:` and \
                     `output_price:` under `models:` in config.yaml for later runs",
                    run.id
                ));
            }
        }
        for run in runs.iter().filter(|r| r.status == RunStatus::Waiting) {
            crate::output::say(format_args!(
                "{}",
                waiting_note(run.id, &waited_for(&store, run.id)?)
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The batches run `run_id` waits for: those not collected nor given up.
fn waited_for(store: &Store, run_id: i64) -> anyhow::Result<Vec<BatchRow>> {
    let mut batches = store.list_batches(Some(run_id), usize::MAX)?;
    batches.retain(|b| b.state.is_open());
    batches.reverse();
    Ok(batches)
}

/// The line under the table for a `waiting` run: `run 7 waits for 2 batches (openai
/// gpt-4o-mini: 40 of 120 done); run the same command to collect, or see track batches`.
/// Batches of the same provider and model are counted together, in the order sent.
fn waiting_note(run_id: i64, batches: &[BatchRow]) -> String {
    if batches.is_empty() {
        return format!(
            "run {run_id} is waiting with no batch left open; run the same command to finish it"
        );
    }
    let mut groups: Vec<(String, u64, u64)> = Vec::new();
    for b in batches {
        let name = format!("{} {}", b.provider, b.model);
        match groups.iter_mut().find(|(n, ..)| *n == name) {
            Some((_, done, total)) => {
                *done += b.done();
                *total += b.request_count;
            }
            None => groups.push((name, b.done(), b.request_count)),
        }
    }
    let counts: Vec<String> = groups
        .iter()
        .map(|(name, done, total)| format!("{name}: {done} of {total} done"))
        .collect();
    format!(
        "run {run_id} waits for {} ({}); run the same command to collect, or see track batches",
        match batches.len() {
            1 => "1 batch".to_owned(),
            n => format!("{n} batches"),
        },
        counts.join(", ")
    )
}

/// One input a run read, as its options JSON records it (`options.inputs`).
#[derive(Debug, serde::Deserialize)]
struct RunInput {
    /// `data` or `template`.
    kind: String,
    /// The data file as written (`data/math.jsonl`, `hf://…`) or the template's name.
    name: String,
    sha256: Option<String>,
    /// The commit an hf:// revision resolved to.
    revision: Option<String>,
    /// The rows a data file held.
    rows: Option<u64>,
}

/// Hex digits of a sha256 or commit shown: as many as git's long short form.
const SHORT_HASH: usize = 12;

/// The inputs a run's options JSON records, one phrase each: `data/math.jsonl 9f86d081884c
/// (2,000 rows)`, `template terse 60303ae22b99`, an hf:// file with `, commit 1a2b3c4d5e6f`;
/// `None` for a run that records none (every run before issue 29, and other kinds).
fn inputs_of(options_json: &str) -> Option<String> {
    let options: serde_json::Value = serde_json::from_str(options_json).ok()?;
    let inputs: Vec<RunInput> = serde_json::from_value(options.get("inputs")?.clone()).ok()?;
    let short = |hash: &str| hash.chars().take(SHORT_HASH).collect::<String>();
    let phrases: Vec<String> = inputs
        .iter()
        .map(|input| {
            let mut phrase = match input.kind.as_str() {
                "data" => input.name.clone(),
                kind => format!("{kind} {}", input.name),
            };
            if let Some(sha) = &input.sha256 {
                phrase = format!("{phrase} {}", short(sha));
            }
            let mut notes = Vec::new();
            if let Some(rows) = input.rows {
                notes.push(crate::output::counted(rows, "row"));
            }
            if let Some(revision) = &input.revision {
                notes.push(format!("commit {}", short(revision)));
            }
            if notes.is_empty() {
                phrase
            } else {
                format!("{phrase} ({})", notes.join(", "))
            }
        })
        .collect();
    (!phrases.is_empty()).then(|| phrases.join("; "))
}

/// The errors of a run, one row each (`track runs --errors ID`), with the answer of each
/// (`answers`, none for a call that got no answer).
fn errors_frame(errors: &[RunErrorRow], answers: Vec<Option<String>>) -> PolarsResult<DataFrame> {
    let column = |name: &str, values: Vec<String>| Column::new(name.into(), values);
    DataFrame::new_infer_height(vec![
        column("stage", errors.iter().map(|e| e.stage.clone()).collect()),
        column(
            "model",
            errors.iter().map(|e| e.model_ref.clone()).collect(),
        ),
        column("item", errors.iter().map(|e| e.item.clone()).collect()),
        Column::new(
            "attempts".into(),
            errors.iter().map(|e| e.attempts).collect::<Vec<_>>(),
        ),
        column("error", errors.iter().map(|e| e.error.clone()).collect()),
        Column::new("answer".into(), answers),
    ])
}

/// The seconds from a run's start to its end; none while it runs (or for a time that does
/// not read).
fn wall_time_s(started: &str, finished: Option<&str>) -> Option<f64> {
    let read = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let started = read(started)?;
    let finished = read(finished?)?;
    Some((finished - started).num_milliseconds() as f64 / 1000.0)
}

/// Each run's status as `track runs` shows it: what is observed of it now, its shard, and
/// (for people) the run that resumed it.
fn status_texts(context: &Context, runs: &[RunInfo], for_people: bool) -> Vec<String> {
    runs.iter()
        .map(|r| {
            let status = observed_status(&context.db, r.id, r.status);
            let status = match r.shard {
                Some((k, n)) => format!("{status}, shard {k}/{n}"),
                None => status.to_string(),
            };
            // An unfinished run points to the run that took its work over (CSV and JSON
            // have it in `resumed_by`).
            match r.resumed_by.filter(|_| for_people) {
                Some(id) => format!("{status}, resumed by {id}"),
                None => status,
            }
        })
        .collect()
}

/// The runs, one row each, with the status observed now (a run whose process is gone is
/// `abandoned`); one shard of a plan says which (`completed, shard 1/3`), and in a table `for_people`
/// one that a later run resumed says which (`interrupted, resumed by 7`). The cost and paid of
/// a run with models without a price (`unpriced`, by run: [`RunInfo::unpriced`]) are unknown: null, not the sum of
/// the known part.
fn runs_frame(
    context: &Context,
    runs: &[RunInfo],
    unpriced: &[Option<String>],
    for_people: bool,
) -> PolarsResult<DataFrame> {
    let unless_unpriced = |usd: fn(&RunInfo) -> f64| {
        runs.iter()
            .zip(unpriced)
            .map(|(r, models)| models.is_none().then(|| usd(r)))
            .collect::<Vec<_>>()
    };
    let status = status_texts(context, runs, for_people);
    DataFrame::new_infer_height(vec![
        Column::new("id".into(), runs.iter().map(|r| r.id).collect::<Vec<_>>()),
        Column::new(
            "kind".into(),
            runs.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(),
        ),
        // A run of a command without an experiment file is named by its command line.
        Column::new(
            "file".into(),
            runs.iter()
                .map(|r| r.file.clone().or_else(|| r.command.clone()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "models".into(),
            runs.iter().map(|r| r.models.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "started".into(),
            runs.iter()
                .map(|r| r.started_at.clone())
                .collect::<Vec<_>>(),
        ),
        // The time the run took, start to end: what its per-model latency sums are not.
        Column::new(
            columns::WALL_TIME_S.name.into(),
            runs.iter()
                .map(|r| wall_time_s(&r.started_at, r.finished_at.as_deref()))
                .collect::<Vec<_>>(),
        ),
        Column::new("status".into(), status),
        Column::new(
            "calls".into(),
            runs.iter().map(|r| r.tally.calls).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::CACHE_HITS.name.into(),
            runs.iter().map(|r| r.tally.cache_hits).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::ERRORS.name.into(),
            runs.iter().map(|r| r.tally.errors).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::COST_USD.name.into(),
            unless_unpriced(|r| r.tally.cost_usd),
        ),
        Column::new(
            columns::PAID_USD.name.into(),
            unless_unpriced(|r| r.tally.paid_usd),
        ),
        Column::new(
            columns::BUDGET_USD.name.into(),
            runs.iter().map(|r| r.budget_usd).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::COMMAND.name.into(),
            runs.iter().map(|r| r.command.clone()).collect::<Vec<_>>(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{BatchCountsRow, BatchState};

    fn batch(id: i64, provider: &str, model: &str, done: u64, total: u64) -> BatchRow {
        BatchRow {
            id,
            tag: format!("track-{id}"),
            run_id: Some(7),
            provider: provider.into(),
            api: crate::llm::batch::BatchApi::from_name(provider).unwrap(),
            base_url: "https://example.test/v1".into(),
            key_fingerprint: "0123456789abcdef".into(),
            model: model.into(),
            payload_sha256: "ab".into(),
            payload_bytes: 10,
            request_count: total,
            created_at: "2026-11-25T14:00:00.000Z".into(),
            state: BatchState::Submitted,
            file_id: None,
            batch_id: Some(format!("batch_{id}")),
            submitted_at: None,
            status: Some("in_progress".into()),
            failures: None,
            counts: BatchCountsRow {
                total,
                processing: total - done,
                succeeded: done,
                ..BatchCountsRow::default()
            },
            output_file_id: None,
            error_file_id: None,
            results_url: None,
            expires_at: None,
            polls: 1,
            last_polled_at: None,
            ended_at: None,
            collected_at: None,
            note: None,
        }
    }

    #[test]
    fn a_runs_inputs_read_with_short_hashes_rows_and_commits() {
        let options = r#"{"concurrency": 8, "inputs": [
            {"kind": "data", "name": "data/math.jsonl", "rows": 2000,
             "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
            {"kind": "data", "name": "hf://datasets/o/n@main/test.jsonl", "rows": 1,
             "sha256": "aaaabbbbccccddddeeeeffff00001111222233334444555566667777888899990",
             "revision": "0123456789abcdef0123456789abcdef01234567"},
            {"kind": "template", "name": "terse",
             "sha256": "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"}
        ]}"#;
        assert_eq!(
            inputs_of(options).as_deref(),
            Some(
                "data/math.jsonl 9f86d081884c (2,000 rows); hf://datasets/o/n@main/test.jsonl \
                 aaaabbbbcccc (1 row, commit 0123456789ab); template terse 60303ae22b99"
            )
        );
        assert_eq!(inputs_of(r#"{"concurrency": 8}"#), None, "no inputs");
        assert_eq!(inputs_of(r#"{"inputs": []}"#), None);
        assert_eq!(inputs_of("not json"), None);
    }

    #[test]
    fn a_runs_wall_time_is_from_its_start_to_its_end() {
        let started = "2026-11-24T00:04:58.184Z";
        assert_eq!(
            wall_time_s(started, Some("2026-11-24T00:05:05.954Z")),
            Some(7.77)
        );
        assert_eq!(wall_time_s(started, None), None, "still running");
    }

    #[test]
    fn a_waiting_run_says_what_it_waits_for_per_model() {
        let batches = [
            batch(1, "openai", "gpt-4o-mini", 30, 100),
            batch(2, "anthropic", "claude-3-5-haiku", 0, 50),
            batch(3, "openai", "gpt-4o-mini", 10, 20),
        ];
        assert_eq!(
            waiting_note(7, &batches),
            "run 7 waits for 3 batches (openai gpt-4o-mini: 40 of 120 done, anthropic \
             claude-3-5-haiku: 0 of 50 done); run the same command to collect, or see track \
             batches"
        );
        assert_eq!(
            waiting_note(7, &batches[1..2]),
            "run 7 waits for 1 batch (anthropic claude-3-5-haiku: 0 of 50 done); run the same \
             command to collect, or see track batches"
        );
        assert!(waiting_note(8, &[]).starts_with("run 8 is waiting with no batch left open"));
    }
}
