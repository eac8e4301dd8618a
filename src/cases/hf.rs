//! `hf://datasets/OWNER/NAME@REVISION/PATH`: a file of a Hugging Face dataset, the address
//! HfFileSystem, DuckDB and polars take. It is fetched once, from
//! `{HF_ENDPOINT}/datasets/OWNER/NAME/resolve/REVISION/PATH` (HF_ENDPOINT defaults to
//! `https://huggingface.co`), with `Authorization: Bearer $HF_TOKEN` when the token is set,
//! and kept in the database: its bytes as a blob, and in `dataset_files` the commit the
//! revision resolved to (`X-Repo-Commit`; a commit the address pins is kept as written). Every
//! later load of the address, and every load
//! offline, reads the kept bytes without the network, so re-runs and shards read the same
//! data even when the branch moved.
//!
//! Redirects (the Hub sends large files to a CDN) are followed here, at most 10, and the token
//! goes only to the endpoint's own origin (scheme, host and port). The token never appears in
//! a message. The fetch runs on a thread of its own with a small current-thread runtime, so
//! [`open`] is synchronous and may be called from inside or outside a tokio runtime.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::LOCATION;

use super::error::CasesError;
use crate::llm::client::ApiKey;
use crate::store::Store;

/// Where the Hub is and the token to show it.
#[derive(Debug, Clone)]
pub struct HfAccess {
    /// The Hub's base URL, without a trailing slash (`https://huggingface.co`, or a mirror).
    pub endpoint: String,
    /// `HF_TOKEN`, for private and gated sets. Hidden in `Debug`.
    pub token: Option<ApiKey>,
}

/// The default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

impl HfAccess {
    /// `HF_ENDPOINT` (default [`DEFAULT_ENDPOINT`]) and `HF_TOKEN` (unset when empty).
    pub(crate) fn from_env() -> Self {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let token = std::env::var("HF_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty())
            .map(|t| ApiKey::new(t.trim()));
        Self::new(endpoint, token)
    }

    /// An endpoint and a token given by the caller (tests, a mirror).
    pub(crate) fn new(endpoint: impl Into<String>, token: Option<ApiKey>) -> Self {
        Self {
            endpoint: endpoint.into().trim().trim_end_matches('/').to_owned(),
            token,
        }
    }
}

/// A parsed `hf://datasets/...` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfAddress {
    /// The address as written: the key of `dataset_files`.
    pub written: String,
    pub owner: String,
    pub name: String,
    /// The revision as written (`main` when the address has none): a branch, a tag, a commit
    /// or a special ref (`refs/convert/parquet`, `refs/pr/3`).
    pub revision: String,
    /// The file's path in the repository.
    pub path: String,
}

/// Whether a source is an `hf://` address rather than a path.
pub(crate) fn is_hf(source: &str) -> bool {
    source.starts_with("hf://")
}

impl HfAddress {
    /// Parses `hf://datasets/OWNER/NAME[@REVISION]/PATH`. A revision holding `/` is written
    /// `%2F` (`@refs%2Fconvert%2Fparquet`), or as it is for `refs/convert/NAME` and
    /// `refs/pr/N`, as HfFileSystem reads them.
    pub(crate) fn parse(written: &str) -> Result<Self, CasesError> {
        let problem = |problem: &str| CasesError::HfAddress {
            address: written.to_owned(),
            problem: problem.to_owned(),
        };
        let rest = written
            .strip_prefix("hf://")
            .ok_or_else(|| problem("not an hf:// address"))?;
        let rest = rest.strip_prefix("datasets/").ok_or_else(|| {
            problem("only datasets are read (hf://datasets/...), not models or spaces")
        })?;
        let (owner, rest) = rest
            .split_once('/')
            .ok_or_else(|| problem("no dataset name and file path"))?;
        let (name_and_revision, path) = match rest.split_once('@') {
            Some((name, after)) if !name.contains('/') => {
                let (revision, path) = split_revision(after)
                    .ok_or_else(|| problem("no file path after the revision"))?;
                ((name, Some(revision)), path)
            }
            _ => {
                let (name, path) = rest
                    .split_once('/')
                    .ok_or_else(|| problem("no file path after the dataset's name"))?;
                ((name, None), path)
            }
        };
        let (name, revision) = name_and_revision;
        let revision = revision.map_or_else(
            || "main".to_owned(),
            |r| r.replace("%2F", "/").replace("%2f", "/"),
        );
        if owner.is_empty() || name.is_empty() {
            return Err(problem("the owner or the dataset's name is empty"));
        }
        if revision.is_empty() {
            return Err(problem("the revision after `@` is empty"));
        }
        if path.is_empty() || path.ends_with('/') {
            return Err(problem("no file path (a folder is not read: name a file)"));
        }
        if path.contains(['*', '?', '[']) {
            return Err(problem(
                "globs are not read in hf:// addresses; name each file (a list in `from:` takes several)",
            ));
        }
        if path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        {
            return Err(problem("the file path has an empty, `.` or `..` step"));
        }
        Ok(Self {
            written: written.to_owned(),
            owner: owner.to_owned(),
            name: name.to_owned(),
            revision,
            path: path.to_owned(),
        })
    }

    /// The file's URL on `endpoint`: `{endpoint}/datasets/OWNER/NAME/resolve/REVISION/PATH`,
    /// every step percent-encoded (a revision's `/` too).
    pub(crate) fn url(&self, endpoint: &str) -> Result<Url, CasesError> {
        let mut url = Url::parse(endpoint).map_err(|e| CasesError::HfFetch {
            address: self.written.clone(),
            message: format!("HF_ENDPOINT `{endpoint}` is not a URL ({e}); fix it or unset it"),
        })?;
        let not_base = || CasesError::HfFetch {
            address: self.written.clone(),
            message: format!("HF_ENDPOINT `{endpoint}` cannot be a base URL; give http(s)://host"),
        };
        url.path_segments_mut()
            .map_err(|()| not_base())?
            .pop_if_empty()
            .extend([
                "datasets",
                &self.owner,
                &self.name,
                "resolve",
                &self.revision,
            ])
            .extend(self.path.split('/'));
        Ok(url)
    }
}

/// The revision and the path after `@`: a special ref with its slashes, else up to the next
/// `/`.
fn split_revision(after: &str) -> Option<(&str, &str)> {
    for prefix in ["refs/convert/", "refs/pr/"] {
        if let Some(tail) = after.strip_prefix(prefix) {
            let (word, path) = tail.split_once('/')?;
            let revision = &after[..prefix.len() + word.len()];
            return Some((revision, path));
        }
    }
    after.split_once('/')
}

/// The bytes of an `hf://` file and where they came from.
#[derive(Debug, Clone)]
pub struct HfFile {
    pub bytes: Vec<u8>,
    /// The commit the revision resolved to at the first fetch.
    pub commit: String,
    /// The sha256 of the bytes.
    pub sha256: String,
    /// Whether this load fetched it (else it was read from the database).
    pub fetched: bool,
}

/// When a kept file is read from the database and when it is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// Kept files from the database, the others fetched and kept.
    Missing,
    /// Kept files only (`--offline`): a file not kept cannot be read.
    Never,
    /// Every file fetched again, unless its address pins a commit (`--refresh-data`).
    Again,
}

impl Fetch {
    /// What `options` ask for.
    pub(crate) fn of(options: &super::LoadOptions) -> Self {
        match (options.offline, options.refresh) {
            (true, _) => Self::Never,
            (false, true) => Self::Again,
            (false, false) => Self::Missing,
        }
    }
}

/// Whether `revision` is a full commit sha (40 hex digits), whose files never change.
fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The bytes of `address`: from the database when kept there (unless `fetch` says
/// [`Fetch::Again`] and the address names a branch or tag), else (online only) fetched and
/// kept, as a blob of `media_type`. Without a database (`store` `None`) the file is fetched
/// and kept nowhere; offline, it cannot be read.
pub(crate) fn open(
    address: &HfAddress,
    media_type: &str,
    store: Option<&Store>,
    fetch: Fetch,
    access: &HfAccess,
) -> Result<HfFile, CasesError> {
    let store_error = |source| CasesError::Store {
        address: address.written.clone(),
        source,
    };
    let refetch = fetch == Fetch::Again && !is_commit(&address.revision);
    let kept = match store {
        Some(_) if refetch => None,
        Some(store) => store
            .dataset_file(&address.written)
            .map_err(store_error)?
            .map(|kept| (store, kept)),
        None => None,
    };
    if let Some((store, kept)) = kept {
        let bytes = store
            .blob(&kept.sha256)
            .map_err(store_error)?
            .ok_or_else(|| CasesError::HfFetch {
                address: address.written.clone(),
                message: format!(
                    "the database names its bytes (blob {}) but does not hold them; the database is damaged",
                    kept.sha256
                ),
            })?;
        return Ok(HfFile {
            bytes,
            commit: kept.revision,
            sha256: kept.sha256,
            fetched: false,
        });
    }
    if fetch == Fetch::Never {
        return Err(CasesError::Offline {
            address: address.written.clone(),
        });
    }
    let url = address.url(&access.endpoint)?;
    let (bytes, commit) =
        download(url, access.token.as_ref()).map_err(|message| CasesError::HfFetch {
            address: address.written.clone(),
            message,
        })?;
    let commit = kept_revision(&address.revision, commit);
    let sha256 = match store {
        Some(store) => {
            store
                .put_dataset_file(&address.written, &commit, media_type, &bytes)
                .map_err(store_error)?
                .sha256
        }
        None => crate::hash::sha256_hex(&bytes),
    };
    Ok(HfFile {
        bytes,
        commit,
        sha256,
        fetched: true,
    })
}

/// The revision kept for a fetch of `written` (the revision as the address writes it) that the
/// server said resolved to `served` (`X-Repo-Commit`). A commit the user pinned is kept as
/// written, whatever a server or mirror says; the server's commit is kept where it adds to
/// what was written: the commit a branch or tag resolved to, the full sha of an abbreviated
/// one. A server that says nothing: the revision as written.
fn kept_revision(written: &str, served: Option<String>) -> String {
    match served {
        Some(served) if served.starts_with(written) || !is_commit(written) => served,
        _ => written.to_owned(),
    }
}

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 10;

/// GETs `url` on a thread of its own: the bytes and the `X-Repo-Commit` seen first.
fn download(url: Url, token: Option<&ApiKey>) -> Result<(Vec<u8>, Option<String>), String> {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the download: {e}"))?;
                runtime.block_on(get(url, token))
            })
            .join()
            .unwrap_or_else(|_| Err("the download stopped unexpectedly".to_owned()))
    })
}

async fn get(start: Url, token: Option<&ApiKey>) -> Result<(Vec<u8>, Option<String>), String> {
    // reqwest is built without a default TLS provider: install ring once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(20))
        .read_timeout(Duration::from_secs(120))
        .user_agent(concat!("track/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let origin = start.origin();
    let mut url = start;
    let mut commit: Option<String> = None;
    for _ in 0..=MAX_REDIRECTS {
        let mut request = client.get(url.clone());
        if let Some(token) = token
            && url.origin() == origin
        {
            request = request.bearer_auth(token.expose());
        }
        let response = request
            .send()
            .await
            .map_err(|e| format!("{} ({})", transport(&e), url_without_query(&url)))?;
        if commit.is_none() {
            commit = response
                .headers()
                .get("x-repo-commit")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .filter(|c| !c.is_empty());
        }
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("HTTP {status} without a Location to follow"))?;
            url = url
                .join(location)
                .map_err(|e| format!("HTTP {status} to a bad Location `{location}` ({e})"))?;
            continue;
        }
        if !status.is_success() {
            let said = response
                .headers()
                .get("x-error-message")
                .and_then(|v| v.to_str().ok())
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            return Err(refusal(status.as_u16(), &said, token.is_some()));
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("the download broke off: {}", transport(&e)))?;
        return Ok((bytes.to_vec(), commit));
    }
    Err(format!(
        "more than {MAX_REDIRECTS} redirects; check HF_ENDPOINT and the address"
    ))
}

/// What an HTTP error status means here, with the fix.
fn refusal(status: u16, said: &str, has_token: bool) -> String {
    match status {
        401 | 403 if has_token => format!(
            "HTTP {status}{said}: HF_TOKEN was refused for this set; check that the token can read it and that you accepted the set's conditions on its page, and check the address"
        ),
        401 | 403 => format!(
            "HTTP {status}{said}: the set is gated or private (or does not exist); set HF_TOKEN to a token that can read it (huggingface.co/settings/tokens), accept its conditions on its page, and check the address"
        ),
        404 => format!(
            "HTTP 404{said}: not found; check the owner, the name, the revision and the file's path in the address"
        ),
        429 => format!("HTTP 429{said}: the Hub limits requests; wait a while and run again"),
        _ => format!("HTTP {status}{said}"),
    }
}

/// A transport error without reqwest's own URL (the URL is named once, by the caller).
fn transport(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A URL without its query (a CDN's signed query is noise in a message).
fn url_without_query(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_with_and_without_a_revision() {
        let a =
            HfAddress::parse("hf://datasets/openai/gsm8k@v1.0/main/test-00000.parquet").unwrap();
        assert_eq!(
            (
                a.owner.as_str(),
                a.name.as_str(),
                a.revision.as_str(),
                a.path.as_str()
            ),
            ("openai", "gsm8k", "v1.0", "main/test-00000.parquet")
        );
        let a = HfAddress::parse("hf://datasets/o/n/data/train.jsonl").unwrap();
        assert_eq!(
            (a.revision.as_str(), a.path.as_str()),
            ("main", "data/train.jsonl")
        );
        for written in [
            "hf://datasets/o/n@refs%2Fconvert%2Fparquet/default/train/0000.parquet",
            "hf://datasets/o/n@refs/convert/parquet/default/train/0000.parquet",
        ] {
            let a = HfAddress::parse(written).unwrap();
            assert_eq!(a.revision, "refs/convert/parquet");
            assert_eq!(a.path, "default/train/0000.parquet");
        }
        let a = HfAddress::parse("hf://datasets/o/n@refs/pr/7/a.csv").unwrap();
        assert_eq!(
            (a.revision.as_str(), a.path.as_str()),
            ("refs/pr/7", "a.csv")
        );
        // An @ in the file's path is the path's.
        let a = HfAddress::parse("hf://datasets/o/n/a@b.csv").unwrap();
        assert_eq!((a.revision.as_str(), a.path.as_str()), ("main", "a@b.csv"));
    }

    #[test]
    fn a_pinned_commit_is_kept_as_written_and_a_served_commit_where_it_adds_to_it() {
        let pin = "0123456789abcdef0123456789abcdef01234567";
        let other = "fedcba9876543210fedcba9876543210fedcba98";
        // A pinned commit: the pin, whatever the server says.
        assert_eq!(kept_revision(pin, Some(other.into())), pin);
        assert_eq!(kept_revision(pin, Some(pin.into())), pin);
        assert_eq!(kept_revision(pin, None), pin);
        // A branch or a tag: the commit it resolved to.
        assert_eq!(kept_revision("main", Some(other.into())), other);
        assert_eq!(kept_revision("v1.0", None), "v1.0");
        // An abbreviated sha: the full one the server names.
        assert_eq!(kept_revision("0123456", Some(pin.into())), pin);
    }

    #[test]
    fn bad_addresses_are_refused_with_the_form() {
        for (written, problem) in [
            ("hf://models/o/n/x.csv", "only datasets"),
            ("hf://datasets/o", "no dataset name"),
            ("hf://datasets/o/n", "no file path after the dataset's name"),
            ("hf://datasets/o/n@main", "no file path after the revision"),
            ("hf://datasets/o/n@/x.csv", "revision after `@` is empty"),
            ("hf://datasets/o/n/data/", "no file path"),
            ("hf://datasets/o/n/data/*.csv", "globs are not read"),
            ("hf://datasets/o/n/../x.csv", "`..`"),
        ] {
            let e = HfAddress::parse(written).unwrap_err().to_string();
            assert!(e.starts_with(written), "{e}");
            assert!(e.contains(problem), "{written}: {e}");
            assert!(e.contains("hf://datasets/OWNER/NAME@REVISION/PATH"), "{e}");
        }
    }

    #[test]
    fn the_file_url_is_under_resolve_with_each_step_encoded() {
        let a = HfAddress::parse("hf://datasets/o/n@refs%2Fconvert%2Fparquet/my dir/a b.parquet")
            .unwrap();
        assert_eq!(
            a.url("https://huggingface.co").unwrap().as_str(),
            "https://huggingface.co/datasets/o/n/resolve/refs%2Fconvert%2Fparquet/my%20dir/a%20b.parquet"
        );
        assert_eq!(
            a.url("http://127.0.0.1:9/mirror/").unwrap().as_str(),
            "http://127.0.0.1:9/mirror/datasets/o/n/resolve/refs%2Fconvert%2Fparquet/my%20dir/a%20b.parquet"
        );
        assert!(
            a.url("not a url")
                .unwrap_err()
                .to_string()
                .contains("HF_ENDPOINT")
        );
    }
}
