//! `track report`: one self-contained HTML file of the selected runs, charts inline.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{Context, shown};
use crate::report::{RunChoice, build};

/// Write one self-contained HTML report with charts (no server, no network: it opens from
/// disk and can be sent by email), e.g. `track report --run all --out report.html`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    // Its help names each kind's default, from the registry.
    #[arg(long, value_name = "ID|latest|all|ID,ID…", help = run_help())]
    run: Option<RunChoice>,
    /// The HTML file to write; `-` writes to stdout.
    #[arg(long, default_value = "report.html", value_name = "FILE")]
    out: PathBuf,
}

/// `--run`'s help, with the rule every command that reads runs follows without it.
fn run_help() -> String {
    format!(
        "Which runs: a run id, several (`3,5`), `latest` (the newest of each kind) or `all` \
         [default: {}]",
        crate::kinds::default_rule_help()
    )
}

/// Builds the report of the selected runs and writes it to `--out` (its path on stdout), or to
/// stdout with `--out -`.
pub(crate) fn run(context: &Context, args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = context.open_existing_store()?;
    let report = build(&store, &context.db, &args.run.unwrap_or_default())?;
    let html = report.to_html();
    if args.out.as_os_str() == "-" {
        write_stdout(html.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::write(&args.out, &html)
        .map_err(|e| anyhow::anyhow!("cannot write the report to {}: {e}", shown(&args.out)))?;
    crate::output::say(format_args!("{}", shown(&args.out)));
    context.note(format!(
        "{} KB; open it in any browser",
        html.len().div_ceil(1024)
    ));
    Ok(ExitCode::SUCCESS)
}

/// Writes the report to stdout. A pipe closed early is an error here, unlike for tables: the
/// reader got a cut, broken document. The message is text only, so it is not taken for the
/// quiet end of `track query | head`.
fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the report to stdout: {e}"))
}
