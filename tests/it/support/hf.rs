//! A stand-in for the Hugging Face Hub on 127.0.0.1 (`HF_ENDPOINT`): it serves files at
//! `/datasets/OWNER/NAME/resolve/REVISION/PATH` with the `X-Repo-Commit` header the Hub sends,
//! and records each request's path and `Authorization` header.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// A request the stand-in got: its path and its `Authorization` header.
#[derive(Debug, Clone)]
pub struct HubRequest {
    pub path: String,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Hub {
    /// `OWNER/NAME/PATH` → bytes.
    files: Mutex<HashMap<String, Vec<u8>>>,
    /// What a revision name resolves to.
    commit: Mutex<String>,
    requests: Mutex<Vec<HubRequest>>,
}

/// A running stand-in; dropping it stops it.
pub struct HubServer {
    url: String,
    hub: Arc<Hub>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl HubServer {
    /// Starts a stand-in whose revisions resolve to `commit`.
    pub fn start(commit: &str) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("hub: bind");
        listener.set_nonblocking(true).expect("hub: nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("hub: addr"));
        let hub = Arc::new(Hub::default());
        *hub.commit.lock().unwrap() = commit.to_owned();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&hub);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("hub: runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("hub: listener");
                let app = Router::new().fallback(serve).with_state(state);
                tokio::select! {
                    _ = async { let _ = axum::serve(listener, app).await; } => {}
                    _ = rx => {}
                }
            });
        });
        Self {
            url,
            hub,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, for `HF_ENDPOINT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves `bytes` as `PATH` of the dataset `OWNER/NAME` (`repo`).
    pub fn add(&self, repo: &str, path: &str, bytes: &[u8]) {
        self.hub
            .files
            .lock()
            .unwrap()
            .insert(format!("{repo}/{path}"), bytes.to_vec());
    }

    /// From now on, revisions resolve to `commit` (a branch that moved).
    pub fn set_commit(&self, commit: &str) {
        *self.hub.commit.lock().unwrap() = commit.to_owned();
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<HubRequest> {
        self.hub.requests.lock().unwrap().clone()
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(State(hub): State<Arc<Hub>>, headers: HeaderMap, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    hub.requests.lock().unwrap().push(HubRequest {
        path: path.clone(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    });
    // /datasets/OWNER/NAME/resolve/REVISION/PATH
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(6, '/').collect();
    let ["datasets", owner, name, "resolve", _revision, file] = parts.as_slice() else {
        return (StatusCode::NOT_FOUND, "not a dataset file").into_response();
    };
    let key = format!("{owner}/{name}/{file}");
    match hub.files.lock().unwrap().get(&key) {
        Some(bytes) => {
            let commit = hub.commit.lock().unwrap().clone();
            ([("x-repo-commit", commit)], bytes.clone()).into_response()
        }
        None => (StatusCode::NOT_FOUND, "Entry not found").into_response(),
    }
}
