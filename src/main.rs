//! The `track` binary: parse arguments, set up logging and `.env`, run, print the error chain
//! (exit status 2, as a usage error: `track --help` lists the statuses).

use std::process::ExitCode;

/// mimalloc, not the system's allocator: a cached run of 400,000 results allocates and frees
/// millions of rows, names and checks across threads, and spent 3.5 s less of CPU this way
/// (PERFORMANCE.md). Version 2: version 3 held 20 MB more at the dry run's peak.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = track::commands::Cli::parse_with_global_options_on_top();
    // A missing .env is normal; a malformed one is worth a warning (that never shows a key).
    if let Some(warning) = track::config::env_file::load() {
        track::output::tell(format_args!("track: warning: {warning}"));
    }
    let default_level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "track=debug,info",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TRACK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_env_filter(filter);
    // With -v, each line carries the time since start, which shows where a run spends it.
    if cli.verbose > 0 {
        logs.with_timer(tracing_subscriber::fmt::time::uptime())
            .init();
    } else {
        logs.without_time().init();
    }
    match track::commands::dispatch(cli) {
        Ok(code) => code,
        Err(error) => {
            if track::output::is_closed_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
            track::output::tell(format_args!("track: {}", dedupe_chain(&chain).join(": ")));
            ExitCode::from(track::exit::BAD_INPUT)
        }
    }
}

/// Drops causes whose text the previous message already contains.
fn dedupe_chain(chain: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for message in chain {
        if out
            .last()
            .is_some_and(|last| last.contains(message.as_str()))
        {
            continue;
        }
        out.push(message.clone());
    }
    out
}
