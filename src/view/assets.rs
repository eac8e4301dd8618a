//! The viewer's stylesheet, script and icon, written here and compiled into the binary: no Node
//! build step, nothing fetched from the network.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::server::ViewError;

/// The stylesheet.
const CSS: &str = include_str!("assets/view.css");

/// The one script: keyboard moves and ratings, live progress. No inline script anywhere.
const JS: &str = include_str!("assets/view.js");

/// The icon of the pages (also at `/favicon.ico`, which browsers ask for unbidden: a 404
/// there would be an error in every page's console).
const ICON: &str = include_str!("assets/favicon.svg");

/// Where pages link the icon.
pub const ICON_PATH: &str = "/assets/favicon.svg";

/// `/favicon.ico`: the icon.
pub(crate) async fn icon() -> Result<Response, ViewError> {
    file(Path("favicon.svg".to_owned())).await
}

/// `/assets/{file}`.
pub(crate) async fn file(Path(name): Path<String>) -> Result<Response, ViewError> {
    let (body, media_type) = match name.as_str() {
        "view.css" => (CSS, "text/css; charset=utf-8"),
        "view.js" => (JS, "text/javascript; charset=utf-8"),
        "favicon.svg" => (ICON, "image/svg+xml"),
        _ => return Err(ViewError::NotFound(format!("No file {name}."))),
    };
    Ok((
        [
            (header::CONTENT_TYPE, media_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response())
}
