//! `track view`: the local web viewer of the database (issue 30).

use std::process::ExitCode;

use crate::view::{ViewOptions, serve};

use super::Context;

/// Serve a web viewer of the database (runs, results, transcripts, ratings, live progress).
///
/// Serve a web viewer of the database: runs, a benchmark's grid of results, transcripts,
/// cases side by side, search, live progress. Local only unless --host is given.
#[derive(Debug, clap::Args)]
pub struct ViewArgs {
    /// The port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8765)]
    port: u16,
    /// The address to listen on. Anything but a loopback address (127.0.0.1, ::1, localhost)
    /// needs --token.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// A secret every request must carry: `?token=…` once (kept in a cookie), or the header
    /// `Authorization: Bearer …`.
    #[arg(long, env = "TRACK_VIEW_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Open the viewer in the default browser.
    #[arg(long)]
    open: bool,
    /// Who the ratings given in the viewer are by [default: $USER].
    #[arg(long, env = "TRACK_RATER", value_name = "NAME")]
    rater: Option<String>,
}

pub(crate) fn run(context: &Context, args: ViewArgs) -> anyhow::Result<ExitCode> {
    let rater = args
        .rater
        .or_else(|| std::env::var("USER").ok())
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "viewer".to_owned());
    let options = ViewOptions::new(&args.host, args.port, args.token, args.open, &rater)?;
    let store = context.open_existing_store()?;
    serve(store, &context.db, options)?;
    Ok(ExitCode::SUCCESS)
}
