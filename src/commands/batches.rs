//! `track batches`: the batches sent to providers' batch APIs, across runs, and `track batches
//! cancel ID`. Glue only: rows come from the store, a cancel goes through `llm::batch`, and
//! what the provider answered is stored as a poll before it is printed.

use std::process::ExitCode;

use anyhow::{Context as _, bail};
use polars::prelude::*;

use super::Context;
use crate::llm::LlmClient;
use crate::llm::batch;
use crate::output::columns;
use crate::output::{Columns, Format, print_frame};
use crate::store::{BatchRow, BatchState, Store};

/// List the batches sent to providers' batch APIs (`--batch`), or cancel one.
///
/// List the batches sent to providers' batch APIs (`--batch`), newest first: track's id, the
/// run, the model's reference, its status (track's step before it is submitted or once void,
/// then the provider's at the last poll and how long ago: validating, in_progress,
/// finalizing, completed, expired, cancelled, failed; `collected` once its results are
/// stored, with how it ended when not plainly), requests that ran of all, with those that
/// errored, expired or were cancelled, what its answers cost so far (at the batch rate) and
/// when it expires; with --wide, CSV or JSON, the provider, the provider's batch id, track's
/// step, when its status was seen and when it was submitted too. `track batches cancel ID`
/// cancels one.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BatchesArgs {
    #[command(subcommand)]
    action: Option<BatchesAction>,
    /// Only the batches of this run.
    #[arg(long, value_name = "RUN")]
    run: Option<i64>,
    /// Only the newest N batches [default: 20].
    #[arg(long, value_name = "N", conflicts_with = "all")]
    limit: Option<usize>,
    /// Every batch, however many.
    #[arg(long)]
    all: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A table with every column under its full header [default: the main columns].
    #[arg(long)]
    wide: bool,
}

/// What `track batches` does besides listing.
#[derive(Debug, clap::Subcommand)]
enum BatchesAction {
    /// Ask the provider to cancel a batch: requests already done keep their results, which
    /// the run's command collects when run again; the rest are sent again by that run.
    Cancel(CancelArgs),
}

#[derive(Debug, clap::Args)]
struct CancelArgs {
    /// The batch: track's id (the first column of `track batches`) or the provider's
    /// (`batch_…`, `msgbatch_…`).
    id: String,
}

/// Batches listed when neither --limit nor --all is given.
const DEFAULT_LIMIT: usize = 20;

pub(crate) fn run(context: &Context, args: BatchesArgs) -> anyhow::Result<ExitCode> {
    if let Some(BatchesAction::Cancel(cancel_args)) = args.action {
        return cancel(context, &cancel_args.id);
    }
    let store = context.open_existing_store()?;
    let limit = match (args.all, args.limit) {
        (true, _) => usize::MAX,
        (false, limit) => limit.unwrap_or(DEFAULT_LIMIT),
    };
    if let Some(run) = args.run {
        store.existing_run(run)?;
    }
    let mut batches = store.list_batches(args.run, limit)?;
    let ids: Vec<i64> = batches.iter().map(|b| b.id).collect();
    count_collected(&mut batches, &store.batch_outcomes(&ids)?);
    let costs = store.batch_costs(&ids)?;
    let cost = |b: &BatchRow| costs.get(&b.id).copied().unwrap_or(0.0);
    let references = model_references(context, &store, &batches);
    let model = |b: &BatchRow| {
        references
            .get(&b.id)
            .cloned()
            .unwrap_or_else(|| b.model.clone())
    };
    if batches.is_empty() && args.format == Format::Table {
        context.note(match args.run {
            Some(run) => format!("run {run} sent no batch"),
            None => "no batches yet: `--batch` sends a run's calls through them".to_owned(),
        });
        return Ok(ExitCode::SUCCESS);
    }
    let df = match args.format {
        Format::Table | Format::Markdown => table_frame(&batches, (&cost, &model), args.wide)?,
        Format::Csv | Format::Json => data_frame(&batches, (&cost, &model))?,
    };
    print_frame(&df, args.format, Columns::wide_if(args.wide))?;
    Ok(ExitCode::SUCCESS)
}

/// What a listing looks up for each batch: what its answers cost so far, and its model's
/// name.
type Looks<'a> = (
    &'a dyn Fn(&BatchRow) -> f64,
    &'a dyn Fn(&BatchRow) -> String,
);

/// The reference each batch's model goes by (`openai:gpt-4o-mini`), as every other table
/// names models: the one of its run's references that config.yaml resolves to its provider
/// and model id, else the catalog's for them. Absent when neither knows it (the provider's
/// id is shown then), or config.yaml cannot be read.
fn model_references(
    context: &Context,
    store: &Store,
    batches: &[BatchRow],
) -> std::collections::HashMap<i64, String> {
    let mut found = std::collections::HashMap::new();
    let Ok(config) = context.load_config() else {
        return found;
    };
    let catalog = &config.catalog;
    let mut run_ids: Vec<i64> = batches.iter().filter_map(|b| b.run_id).collect();
    run_ids.sort_unstable();
    run_ids.dedup();
    let runs = store.runs_by_id(&run_ids).unwrap_or_default();
    let names = |b: &BatchRow| -> Vec<String> {
        let of_run = runs
            .iter()
            .filter(|r| Some(r.id) == b.run_id)
            .filter_map(|r| r.models.as_deref())
            .flat_map(|m| m.split(','))
            .map(str::to_owned);
        let of_catalog = catalog.models.iter().map(|m| m.reference());
        of_run.chain(of_catalog).collect()
    };
    for b in batches {
        let reference = names(b).into_iter().find(|name| {
            catalog
                .model(name)
                .is_ok_and(|m| m.provider == b.provider && m.model == b.model)
        });
        if let Some(reference) = reference {
            found.insert(b.id, reference);
        }
    }
    found
}

/// The counts of each collected batch as its stored calls tell them, rather than as its last
/// poll did (OpenAI counts expired requests among the failed ones, or not at all): answered,
/// errored, and what never ran as expired, or cancelled when the batch was.
fn count_collected(
    batches: &mut [BatchRow],
    outcomes: &std::collections::HashMap<i64, (u64, u64, u64)>,
) {
    for b in batches
        .iter_mut()
        .filter(|b| b.state == BatchState::Collected)
    {
        let Some(&(answered, failed, unfinished)) = outcomes.get(&b.id) else {
            continue;
        };
        let cancelled = b.status.as_deref() == Some("cancelled");
        b.counts = crate::store::BatchCountsRow {
            total: answered + failed + unfinished,
            processing: 0,
            succeeded: answered,
            errored: failed,
            cancelled: if cancelled { unfinished } else { 0 },
            expired: if cancelled { 0 } else { unfinished },
        };
    }
}

/// What a batch's `done` says: requests that ran of all, and, apart, those that errored,
/// expired or were cancelled (`3/10, 7 expired`).
fn done_text(b: &BatchRow, errors: bool) -> String {
    let c = &b.counts;
    let mut text = format!("{}/{}", b.done(), b.request_count);
    for (n, word) in [
        (if errors { c.errored } else { 0 }, "err"),
        (c.expired, "expired"),
        (c.cancelled, "cancelled"),
    ] {
        if n > 0 {
            text.push_str(&format!(", {n} {word}"));
        }
    }
    text
}

/// How long ago a stored time was, in one unit: `40 s`, `12 min`, `3 h`, `2 d`.
fn age(stored: &str) -> String {
    let Ok(then) = chrono::DateTime::parse_from_rfc3339(stored) else {
        return "?".to_owned();
    };
    let secs = (chrono::Utc::now() - then.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    match secs {
        0..120 => format!("{secs} s"),
        120..7_200 => format!("{} min", secs / 60),
        7_200..172_800 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// A stored time as a table shows it, in UTC to the minute: `2026-11-25 14:03`, or without
/// its year unless `year` (`11-25 14:03`: a batch lives 24 hours).
fn short_time(stored: &str, year: bool) -> String {
    let format = if year {
        "%Y-%m-%d %H:%M"
    } else {
        "%m-%d %H:%M"
    };
    chrono::DateTime::parse_from_rfc3339(stored).map_or_else(
        |_| stored.to_owned(),
        |t| t.with_timezone(&chrono::Utc).format(format).to_string(),
    )
}

/// The batches as a terminal shows them: compact (id, run, model, status, done with the
/// errored among them, cost, expires to the minute: within 80 columns for model ids up to
/// about 20 characters, in parts beyond), or with `wide` the provider, its batch id, track's
/// step, errors and when it was submitted too, times with their year.
fn table_frame(
    batches: &[BatchRow],
    (cost, model): Looks<'_>,
    wide: bool,
) -> PolarsResult<DataFrame> {
    let text = |f: &dyn Fn(&BatchRow) -> Option<String>| -> Vec<Option<String>> {
        batches.iter().map(f).collect()
    };
    let mut columns = vec![
        Column::new(
            "id".into(),
            batches.iter().map(|b| b.id).collect::<Vec<_>>(),
        ),
        Column::new(
            "run".into(),
            batches.iter().map(|b| b.run_id).collect::<Vec<_>>(),
        ),
    ];
    if wide {
        columns.push(Column::new(
            columns::PROVIDER.name.into(),
            text(&|b| Some(b.provider.clone())),
        ));
    }
    columns.push(Column::new("model".into(), text(&|b| Some(model(b)))));
    if wide {
        columns.push(Column::new(
            "batch_id".into(),
            text(&|b| b.batch_id.clone()),
        ));
        columns.push(Column::new(
            "state".into(),
            text(&|b| Some(b.state.as_str().to_owned())),
        ));
    }
    columns.extend([Column::new(
        "status".into(),
        text(&|b| {
            // A provider's status is as of its last poll: how long ago, unless shown
            // apart (wide).
            let status = b.shown_status();
            Some(match (b.state, wide) {
                (BatchState::Submitted, false) => {
                    format!("{status} ({} ago)", age(b.status_at()))
                }
                _ => status,
            })
        }),
    )]);
    if wide {
        columns.push(Column::new(
            "seen".into(),
            text(&|b| Some(short_time(b.status_at(), true))),
        ));
    }
    columns.push(Column::new(
        "done".into(),
        text(&|b| Some(done_text(b, !wide))),
    ));
    if wide {
        columns.push(Column::new(
            columns::ERRORS.name.into(),
            batches.iter().map(|b| b.counts.errored).collect::<Vec<_>>(),
        ));
        columns.push(Column::new(
            "submitted".into(),
            text(&|b| b.submitted_at.as_deref().map(|t| short_time(t, true))),
        ));
    }
    columns.extend([
        Column::new(
            columns::COST_USD.name.into(),
            batches.iter().map(cost).collect::<Vec<_>>(),
        ),
        Column::new(
            "expires".into(),
            text(&|b| b.expires_at.as_deref().map(|t| short_time(t, wide))),
        ),
    ]);
    DataFrame::new_infer_height(columns)
}

/// The batches for CSV and JSON: every figure in a column of its own, times as stored (RFC
/// 3339, UTC).
fn data_frame(batches: &[BatchRow], (cost, model): Looks<'_>) -> PolarsResult<DataFrame> {
    let text = |f: &dyn Fn(&BatchRow) -> Option<String>| -> Vec<Option<String>> {
        batches.iter().map(f).collect()
    };
    let number = |f: &dyn Fn(&BatchRow) -> u64| -> Vec<u64> { batches.iter().map(f).collect() };
    DataFrame::new_infer_height(vec![
        Column::new(
            "id".into(),
            batches.iter().map(|b| b.id).collect::<Vec<_>>(),
        ),
        Column::new(
            "run".into(),
            batches.iter().map(|b| b.run_id).collect::<Vec<_>>(),
        ),
        Column::new(
            columns::PROVIDER.name.into(),
            text(&|b| Some(b.provider.clone())),
        ),
        Column::new("api".into(), text(&|b| Some(b.api.as_str().to_owned()))),
        Column::new("model".into(), text(&|b| Some(model(b)))),
        Column::new(
            columns::MODEL_ID.name.into(),
            text(&|b| Some(b.model.clone())),
        ),
        Column::new("batch_id".into(), text(&|b| b.batch_id.clone())),
        Column::new("state".into(), text(&|b| Some(b.state.as_str().to_owned()))),
        Column::new("status".into(), text(&|b| Some(b.shown_status()))),
        Column::new(
            "status_at".into(),
            text(&|b| Some(b.status_at().to_owned())),
        ),
        Column::new("provider_status".into(), text(&|b| b.status.clone())),
        Column::new("requests".into(), number(&|b| b.request_count)),
        Column::new("done".into(), number(&|b| b.done())),
        Column::new("succeeded".into(), number(&|b| b.counts.succeeded)),
        Column::new("errored".into(), number(&|b| b.counts.errored)),
        Column::new("cancelled".into(), number(&|b| b.counts.cancelled)),
        Column::new("expired".into(), number(&|b| b.counts.expired)),
        Column::new("created_at".into(), text(&|b| Some(b.created_at.clone()))),
        Column::new("submitted_at".into(), text(&|b| b.submitted_at.clone())),
        Column::new(
            columns::COST_USD.name.into(),
            batches.iter().map(cost).collect::<Vec<_>>(),
        ),
        Column::new("expires_at".into(), text(&|b| b.expires_at.clone())),
        Column::new("ended_at".into(), text(&|b| b.ended_at.clone())),
        Column::new("note".into(), text(&|b| b.note.clone())),
    ])
}

/// The batch `id` names: track's number, else the provider's id.
fn find(store: &Store, id: &str) -> anyhow::Result<BatchRow> {
    let id = id.trim();
    let found = match id.parse::<i64>() {
        Ok(number) => store.batch(number)?,
        Err(_) => store.batch_by_provider_id(id)?,
    };
    found.with_context(|| format!("no batch `{id}` is recorded; `track batches` lists them"))
}

/// `track batches cancel ID`: asks the provider to cancel the batch, stores its answer as a
/// poll, and prints the status it gave.
fn cancel(context: &Context, id: &str) -> anyhow::Result<ExitCode> {
    let mut store = context.open_existing_store()?;
    let row = find(&store, id)?;
    let name = match &row.batch_id {
        Some(batch_id) => format!("batch {} ({} {batch_id})", row.id, row.provider),
        None => format!("batch {} ({})", row.id, row.provider),
    };
    let batch_id = match (row.state, row.batch_id.as_deref()) {
        (BatchState::Submitted, Some(batch_id)) => batch_id.to_owned(),
        (BatchState::Intent | BatchState::Uploaded, _) | (BatchState::Submitted, None) => {
            bail!(
                "{name} was never submitted (track's step: {}): there is nothing at {} to \
                 cancel; the run that made it finds it again or gives it up when it runs again",
                row.state.as_str(),
                row.provider
            );
        }
        (BatchState::Collected | BatchState::Void, _) => {
            crate::output::say(format_args!(
                "{name} has already ended ({}): nothing to cancel",
                row.shown_status()
            ));
            return Ok(ExitCode::SUCCESS);
        }
    };
    let ended = row
        .status
        .as_deref()
        .map(|s| batch::BatchStatus::from_stored(s, Vec::new()))
        .is_some_and(|s| s.is_ended());
    if ended {
        crate::output::say(format_args!(
            "{name} has already ended ({}): nothing to cancel; {}",
            row.shown_status(),
            collect_hint(&row)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let api = row.api;
    let config = context.load_config()?;
    let endpoint = endpoint_of(&config, &row, &name)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let client = LlmClient::new(config.settings.timeout)?;
    let info = runtime
        .block_on(batch::cancel(&client, &endpoint, api, &batch_id))
        .with_context(|| format!("cancelling {name}"))?;
    crate::dispatch::batch::with_poll(&info, |poll| store.record_batch_poll(row.id, poll))?;
    let counts = info.counts;
    let done = counts.succeeded + counts.errored + counts.cancelled + counts.expired;
    crate::output::say(format_args!(
        "{name}: {} ({done} of {} requests done); what finished keeps its results: {}",
        info.status,
        row.request_count,
        collect_hint(&row)
    ));
    Ok(ExitCode::SUCCESS)
}

/// The endpoint batch `row` (called `name` in messages) was sent to, with its key: refused
/// when the catalog no longer has its provider, points elsewhere now, or has no key.
fn endpoint_of(
    config: &crate::config::Config,
    row: &BatchRow,
    name: &str,
) -> anyhow::Result<crate::llm::Endpoint> {
    let provider = config.catalog.providers.get(&row.provider).with_context(|| {
        format!(
            "{name} was sent to the provider `{}`, which the catalog no longer has; add it back \
             under `providers:` in config.yaml to cancel it",
            row.provider
        )
    })?;
    let endpoint = provider.endpoint();
    if endpoint.base_url.trim_end_matches('/') != row.base_url.trim_end_matches('/') {
        bail!(
            "{name} was sent to {}, but {}'s base URL is now {} (from {}): set it back to \
             cancel the batch",
            crate::config::hide_user_info(&row.base_url),
            row.provider,
            crate::config::hide_user_info(&endpoint.base_url),
            provider.base_url_setting()
        );
    }
    if endpoint.api_key.is_none() && provider.key_required {
        bail!(
            "no API key for {}: set {} in the environment or in .env to cancel {name}",
            row.provider,
            provider.key_vars_text()
        );
    }
    Ok(endpoint)
}

/// How the results of `row` are collected, for messages.
fn collect_hint(row: &BatchRow) -> String {
    match row.run_id {
        Some(run) => format!("run the command of run {run} again to collect them"),
        None => "the next run of the same calls collects them".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_to_the_minute_in_utc() {
        assert_eq!(
            short_time("2026-11-25T14:03:59.123Z", true),
            "2026-11-25 14:03"
        );
        assert_eq!(
            short_time("2026-11-25T15:03:00+01:00", false),
            "11-25 14:03"
        );
        assert_eq!(short_time("soon", false), "soon");
    }

    #[test]
    fn listing_and_cancel_parse() {
        #[derive(Debug, clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: BatchesArgs,
        }
        use clap::Parser as _;
        let listed = Cli::try_parse_from(["track", "--run", "7", "--limit", "3"]).unwrap();
        assert!(listed.args.action.is_none());
        assert_eq!((listed.args.run, listed.args.limit), (Some(7), Some(3)));
        let cancel = Cli::try_parse_from(["track", "cancel", "batch_abc"]).unwrap();
        assert!(
            matches!(cancel.args.action, Some(BatchesAction::Cancel(CancelArgs { ref id })) if id == "batch_abc")
        );
        assert!(Cli::try_parse_from(["track", "--all", "--limit", "3"]).is_err());
    }
}
