//! The viewer's server: its state, its routes, and how a handler reads the database.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use super::ViewOptions;
use crate::store::Store;

/// What every handler shares.
pub struct App {
    /// One connection, taken in turn by handlers on blocking threads (every query is short).
    store: Mutex<Store>,
    pub options: ViewOptions,
    /// The CSRF token of this server's pages: random, made at start.
    pub csrf: String,
    /// The database's path, as shown in the pages' footer.
    pub db: String,
    /// Whether results can be rated here (the pages' keys p, f, 1-5).
    pub ratings: bool,
    /// Becomes true when the server is asked to stop: live streams end then, or the server
    /// would wait for the runs they follow.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// Who the ratings given here are by.
    pub rater: String,
}

impl App {
    /// Runs `query` on the store on a blocking thread.
    pub(crate) async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        query: impl FnOnce(&Store) -> crate::store::Result<T> + Send + 'static,
    ) -> Result<T, ViewError> {
        let app = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let store = app.store.lock().unwrap_or_else(|e| e.into_inner());
            query(&store)
        })
        .await
        .map_err(|e| ViewError::Internal(format!("the query stopped: {e}")))?
        .map_err(|e| ViewError::Internal(e.to_string()))
    }

    /// Runs `write` on the store on a blocking thread.
    pub(crate) async fn write<T: Send + 'static>(
        self: &Arc<Self>,
        write: impl FnOnce(&mut Store) -> crate::store::Result<T> + Send + 'static,
    ) -> Result<T, ViewError> {
        let app = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let mut store = app.store.lock().unwrap_or_else(|e| e.into_inner());
            write(&mut store)
        })
        .await
        .map_err(|e| ViewError::Internal(format!("the write stopped: {e}")))?
        .map_err(|e| ViewError::Internal(e.to_string()))
    }
}

/// What a page could not show.
#[derive(Debug)]
pub enum ViewError {
    /// No such run, result or case.
    NotFound(String),
    /// A request the viewer refuses (a bad parameter, a write without its CSRF token).
    Refused(StatusCode, String),
    /// The database failed.
    Internal(String),
}

impl IntoResponse for ViewError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Self::NotFound(what) => (StatusCode::NOT_FOUND, what),
            Self::Refused(status, why) => (status, why),
            Self::Internal(why) => {
                tracing::warn!("view: {why}");
                (StatusCode::INTERNAL_SERVER_ERROR, why)
            }
        };
        let page = maud::html! {
            (maud::DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "track view: " (status.as_str()) }
                    link rel="icon" type="image/svg+xml" href=(super::assets::ICON_PATH);
                    link rel="stylesheet" href="/assets/view.css";
                }
                body {
                    main {
                        h1 { (status.canonical_reason().unwrap_or("Error")) }
                        p { (message) }
                        p { a href="/" { "All runs" } }
                    }
                }
            }
        };
        (status, Html(page.into_string())).into_response()
    }
}

/// The routes.
fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(super::runs::list))
        .route("/runs/{run}", get(super::grid::grid))
        .route(
            "/runs/{run}/results/{result}",
            get(super::transcript::result),
        )
        .route("/runs/{run}/cases/{case}", get(super::transcript::case))
        .route(
            "/runs/{run}/reviews/{review}",
            get(super::kinds::review_sheets),
        )
        .route("/blobs/{sha}", get(super::kinds::image))
        .route("/diff", get(super::diff::diff))
        .route(
            "/runs/{run}/ratings",
            axum::routing::post(super::ratings::rate),
        )
        .route("/events", get(super::live::events))
        .route("/assets/{file}", get(super::assets::file))
        .route("/favicon.ico", get(super::assets::icon))
        .fallback(|| async { ViewError::NotFound("No page at this address.".into()) })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            super::security::guard,
        ))
        .with_state(app)
}

/// Serves until Ctrl-C or SIGTERM.
pub(crate) async fn run(store: Store, db: &Path, mut options: ViewOptions) -> anyhow::Result<()> {
    store
        .prepare_for_viewing()
        .context("readying the database for the viewer")?;
    let listener = tokio::net::TcpListener::bind(options.address)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {}; is another viewer there? Give another --port",
                options.address
            )
        })?;
    let bound = listener.local_addr().context("reading the bound address")?;
    // With --port 0 the port is the one the system gave: the Host check compares with it.
    options.address = bound;
    let mut url = format!("http://{bound}/");
    if let Some(token) = &options.token {
        url.push_str(&format!("?token={token}"));
    }
    println!("track view: {url}");
    if options.open {
        open_browser(&url);
    }
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let rater = options.rater.clone();
    let app = Arc::new(App {
        store: Mutex::new(store),
        options,
        csrf: super::security::random_secret(),
        db: db.display().to_string(),
        ratings: true,
        stopping,
        rater,
    });
    axum::serve(listener, router(app))
        .with_graceful_shutdown(async move {
            shutdown().await;
            let _ = stop.send(true);
        })
        .await
        .context("serving the viewer")
}

/// Resolves at Ctrl-C or SIGTERM.
async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Opens `url` in the default browser, or says how to.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_err()
    {
        crate::output::tell(format_args!(
            "track view: could not start {opener}; open {url} in a browser"
        ));
    }
}
