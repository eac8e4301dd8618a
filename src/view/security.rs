//! What every request and response of the viewer goes through: the token, the Host header,
//! the security headers (the Content-Security-Policy first), and the CSRF token of writes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::server::App;

/// The policy of every response, after OWASP's Content Security Policy cheat sheet: only this
/// server's own files (`'self'`), no inline script or style and no event-handler attributes
/// (no `'unsafe-inline'`), no plugins, no `<base>`, never framed, forms posted only here. An
/// escaping slip in a page then still runs nothing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// The cookie that keeps the token once given in a query string.
pub const TOKEN_COOKIE: &str = "track_view_token";

/// The form field (and header) that carries the CSRF token of a write.
pub const CSRF_FIELD: &str = "csrf";

/// The header a script's write carries the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Whether `given` is `secret`, in a time that does not tell how much of it matched.
pub(crate) fn same_secret(given: &str, secret: &str) -> bool {
    let (a, b) = (given.as_bytes(), secret.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, &s) in b.iter().enumerate() {
        diff |= s ^ a.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// A new random secret: 32 hex digits.
pub(crate) fn random_secret() -> String {
    use rand::Rng as _;
    hex::encode(rand::rng().random::<[u8; 16]>())
}

/// The token a request carries: the `token` query parameter, the bearer header, or the cookie.
/// The first says whether it came in the query string (then kept in a cookie).
fn carried_token(request: &Request) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    if let Some(query) = request.uri().query() {
        for (key, value) in
            serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default()
        {
            if key == "token" {
                found.push((value, true));
            }
        }
    }
    let headers = request.headers();
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        found.push((bearer.trim().to_owned(), false));
    }
    for cookies in headers.get_all(header::COOKIE) {
        let Ok(cookies) = cookies.to_str() else {
            continue;
        };
        for pair in cookies.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=')
                && name == TOKEN_COOKIE
            {
                found.push((value.to_owned(), false));
            }
        }
    }
    found
}

/// Whether the Host header names this server as a loopback address (a page of another site
/// that resolves its own name to 127.0.0.1, DNS rebinding, is refused).
fn local_host(headers: &HeaderMap, port: u16) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = match host.rsplit_once(':') {
        Some((name, p)) if !name.ends_with(':') && p.parse::<u16>() == Ok(port) => name,
        _ => return false,
    };
    matches!(name, "127.0.0.1" | "localhost" | "[::1]")
}

/// Checks the request (Host on loopback, the token when one is set), then adds the security
/// headers to whatever is answered.
pub(crate) async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if app.options.address.ip().is_loopback()
        && !local_host(request.headers(), app.options.address.port())
    {
        return with_headers(refusal(
            StatusCode::MISDIRECTED_REQUEST,
            "This viewer answers only at its own local address.",
        ));
    }
    let mut set_cookie = None;
    if let Some(secret) = &app.options.token {
        let carried = carried_token(&request);
        match carried.iter().find(|(t, _)| same_secret(t, secret)) {
            Some((token, true)) => set_cookie = Some(token.clone()),
            Some(_) => {}
            None => {
                return with_headers(refusal(
                    StatusCode::UNAUTHORIZED,
                    "This viewer needs its token: open the address track view printed, with ?token=…",
                ));
            }
        }
    }
    let mut response = next.run(request).await;
    if let Some(token) = set_cookie
        && let Ok(value) = HeaderValue::from_str(&format!(
            "{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
        ))
    {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    with_headers(response)
}

/// A plain-text refusal.
fn refusal(status: StatusCode, why: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why,
    )
        .into_response()
}

/// `response` with the security headers.
fn with_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (
            header::HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Whether a write's request came from this viewer's own page: its CSRF token (form field or
/// header) is the server's (`csrf`), and its Origin, when sent, is the Host it was sent to.
pub(crate) fn write_allowed(csrf: &str, headers: &HeaderMap, form_token: Option<&str>) -> bool {
    let token = form_token.or_else(|| headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()));
    let token_ok = token.is_some_and(|t| same_secret(t, csrf));
    let origin_ok = match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        None => true,
        Some(origin) => headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|host| {
                origin
                    .strip_prefix("http://")
                    .or_else(|| origin.strip_prefix("https://"))
                    == Some(host)
            }),
    };
    token_ok && origin_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abcdefgh", "abcdefgh"));
        assert!(!same_secret("abcdefg", "abcdefgh"));
        assert!(!same_secret("abcdefghi", "abcdefgh"));
        assert!(!same_secret("", "abcdefgh"));
        assert!(!same_secret("abcdefgX", "abcdefgh"));
    }

    #[test]
    fn only_a_loopback_host_at_our_port_is_local() {
        let host = |h: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(h).unwrap());
            local_host(&headers, 8765)
        };
        assert!(host("127.0.0.1:8765"));
        assert!(host("localhost:8765"));
        assert!(host("[::1]:8765"));
        assert!(!host("127.0.0.1:8766"));
        assert!(!host("evil.example:8765"));
        assert!(!host("127.0.0.1"));
        assert!(!local_host(&HeaderMap::new(), 8765));
    }

    #[test]
    fn a_write_needs_the_csrf_token_and_our_origin() {
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut map = HeaderMap::new();
            map.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8765"));
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            map
        };
        let secret = "0123456789abcdef";
        assert!(write_allowed(secret, &headers(&[]), Some(secret)));
        assert!(write_allowed(
            secret,
            &headers(&[(CSRF_HEADER, secret)]),
            None
        ));
        assert!(!write_allowed(secret, &headers(&[]), None));
        assert!(!write_allowed(
            secret,
            &headers(&[]),
            Some("0123456789abcdeX")
        ));
        let ours = headers(&[("origin", "http://127.0.0.1:8765")]);
        assert!(write_allowed(secret, &ours, Some(secret)));
        let theirs = headers(&[("origin", "http://evil.example")]);
        assert!(!write_allowed(secret, &theirs, Some(secret)));
    }

    #[test]
    fn the_policy_allows_no_inline_script() {
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(CONTENT_SECURITY_POLICY.contains(directive), "{directive}");
        }
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }
}
