//! `track view`: a local web viewer of the database (issue 30), served with axum.
//!
//! Every page is one bounded query through `store/` (see `store::view`): the grid of a run is
//! paged by case on the server, so a run of a million results costs what a page of fifty
//! cases costs. The viewer reads the database while runs write to it (WAL), and follows runs
//! still going over server-sent events.
//!
//! Pages are built with maud: its templates are Rust expressions checked when track is
//! compiled (a template naming a missing field does not build), compiled into the binary with
//! no template files to ship, and every value spliced into one is HTML-escaped unless it is
//! wrapped in `PreEscaped`, which this module never does with stored text. askama would have
//! meant template files kept beside the code and read by a derive; maud keeps each page next
//! to the handler that fills it.
//!
//! Security (see `security`): it listens on 127.0.0.1 unless `--host` is given, and then only
//! with `--token`, checked on every request; every response carries a Content-Security-Policy
//! with no inline script; the one script and the stylesheet are files of this module,
//! embedded with `include_str!`, so the viewer works with no network; writes carry a CSRF
//! token.

mod assets;
mod diff;
mod format;
mod grid;
mod kinds;
mod layout;
mod live;
mod params;
mod ratings;
mod runs;
mod security;
mod server;
mod transcript;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use anyhow::Context as _;

use crate::store::Store;

pub use security::CONTENT_SECURITY_POLICY;

/// How `track view` listens.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// The address and port to bind.
    pub address: SocketAddr,
    /// The secret every request must carry; required off loopback.
    pub token: Option<String>,
    /// Open the default browser at the viewer's address.
    pub open: bool,
    /// Who the ratings given in this viewer are by.
    pub rater: String,
}

impl ViewOptions {
    /// The options of `--host HOST --port PORT [--token] [--open]`: a host that is not a
    /// loopback address needs a token.
    pub(crate) fn new(
        host: &str,
        port: u16,
        token: Option<String>,
        open: bool,
        rater: &str,
    ) -> anyhow::Result<Self> {
        let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
            IpAddr::from([127, 0, 0, 1])
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .with_context(|| {
                    format!(
                        "--host {host} is not an IP address; give one, e.g. 127.0.0.1 or 0.0.0.0"
                    )
                })?
        };
        let token = token.filter(|t| !t.is_empty());
        if !ip.is_loopback() && token.is_none() {
            anyhow::bail!(
                "--host {host} lets other machines reach the viewer: give --token SECRET (or \
                 TRACK_VIEW_TOKEN) too, which every request must carry"
            );
        }
        if let Some(token) = &token
            && (token.len() < 8 || token.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            anyhow::bail!(
                "--token must be at least 8 characters without spaces (a random one: `openssl rand -hex 16`)"
            );
        }
        let rater = rater.trim();
        if rater.is_empty() {
            anyhow::bail!("--rater needs a name: who the ratings given in the viewer are by");
        }
        Ok(Self {
            address: SocketAddr::new(ip, port),
            token,
            open,
            rater: rater.to_owned(),
        })
    }
}

/// Serves the viewer of `store` (the database at `db`) until interrupted (Ctrl-C, SIGTERM).
/// Prints the address it listens on, first, on stdout.
pub(crate) fn serve(store: Store, db: &Path, options: ViewOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the viewer's runtime")?;
    runtime.block_on(server::run(store, db, options))
}
