//! The user's application, for the tests of targets (`kind: http`): a small JSON service on
//! 127.0.0.1 that wants a bearer token, answers from the body's `context`, reports its usage
//! and cost, and can hold its requests until released (for the tests of signals).
//!
//! A request's `question` picks the answer: one holding `noanswer` gets a JSON body without
//! the answer's path, one holding `html` a body that is not JSON; any other gets
//! `{"output": {"text": "The answer is <context>"}, "usage": {"in": 11, "out": 4, "cost":
//! 0.01}}`. A request without the token gets a 401.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One request the application received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub authorization: Option<String>,
    pub tenant: Option<String>,
    pub body: Value,
}

struct Shared {
    token: String,
    seen: Mutex<Vec<Seen>>,
    hold: AtomicBool,
    held: AtomicUsize,
    released: tokio::sync::watch::Sender<bool>,
}

/// The application, serving until dropped.
pub struct AppServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl AppServer {
    /// Starts the application, wanting `Authorization: Bearer <token>`.
    pub fn start(token: &str) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("app: bind");
        listener.set_nonblocking(true).expect("app: nonblocking");
        let addr = listener.local_addr().expect("app: addr");
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            seen: Mutex::new(Vec::new()),
            hold: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            released: tokio::sync::watch::Sender::new(false),
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("app: runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("app: listener");
                let app = Router::new()
                    .route("/ask", axum::routing::post(ask))
                    .with_state(state);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = rx => {}
                }
            });
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        });
        Self {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/ask`
    pub fn url(&self) -> String {
        format!("http://{}/ask", self.addr)
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.shared.seen.lock().unwrap().len()
    }

    /// Holds every request from now on, once recorded, until [`AppServer::release`].
    pub fn hold(&self) {
        self.shared.released.send_replace(false);
        self.shared.hold.store(true, Ordering::SeqCst);
    }

    /// Answers the held requests, and holds no more.
    pub fn release(&self) {
        self.shared.hold.store(false, Ordering::SeqCst);
        self.shared.released.send_replace(true);
    }

    /// Blocks until `n` requests are held.
    pub fn wait_held(&self, n: usize) {
        super::wait_for(&format!("{n} held requests"), || {
            self.shared.held.load(Ordering::SeqCst) >= n
        });
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        self.release();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn ask(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = text(header::AUTHORIZATION);
    shared.seen.lock().unwrap().push(Seen {
        authorization: authorization.clone(),
        tenant: text(header::HeaderName::from_static("x-tenant")),
        body: body.clone(),
    });
    if shared.hold.load(Ordering::SeqCst) {
        shared.held.fetch_add(1, Ordering::SeqCst);
        let mut released = shared.released.subscribe();
        let _ = released.wait_for(|r| *r).await;
    }
    if authorization.as_deref() != Some(&format!("Bearer {}", shared.token)) {
        let refusal = json!({"error": {"message": "a bearer token is needed"}});
        return (StatusCode::UNAUTHORIZED, axum::Json(refusal)).into_response();
    }
    let question = body["question"].as_str().unwrap_or_default();
    if question.contains("noanswer") {
        return axum::Json(json!({"result": "I looked everywhere"})).into_response();
    }
    if question.contains("html") {
        let page = "<html><body>Service Unavailable</body></html>";
        return ([(header::CONTENT_TYPE, "text/html")], page).into_response();
    }
    let context = body["context"].as_str().unwrap_or_default();
    axum::Json(json!({
        "output": {"text": format!("The answer is {context}")},
        "usage": {"in": 11, "out": 4, "cost": 0.01},
    }))
    .into_response()
}
