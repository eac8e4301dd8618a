//! Tests of [`super::load`]: every format through a file, globs and lists, ids, duplicates,
//! `limit:` and `sample:`, both converters, the summary, and `hf://` against a local server
//! standing in for `HF_ENDPOINT`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;
use crate::llm::Role;
use crate::llm::client::ApiKey;

fn write(dir: &Path, name: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn spec(yaml: &str) -> CasesSpec {
    serde_saphyr::from_str(yaml).unwrap()
}

/// A Hub nowhere: a test of local files never reaches the network.
fn nowhere() -> HfAccess {
    HfAccess::new("http://127.0.0.1:9", None)
}

fn load_yaml(dir: &Path, yaml: &str) -> Result<LoadedCases, CasesError> {
    load_with(&spec(yaml), dir, &LoadOptions::default(), &nowhere())
}

fn ids(loaded: &LoadedCases) -> Vec<&str> {
    loaded.cases.iter().map(|c| c.id.as_str()).collect()
}

/// `data/math.jsonl`, the quick start's data set.
fn math_jsonl() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/math.jsonl")).unwrap()
}

#[test]
fn the_quick_starts_jsonl_loads_with_its_ids_columns_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let text = math_jsonl();
    write(dir.path(), "data/math.jsonl", &text);
    let loaded = load_yaml(dir.path(), "from: data/math.jsonl\nid: qid\n").unwrap();
    assert_eq!(loaded.cases.len(), 20);
    assert_eq!(loaded.columns, ["qid", "a", "b", "answer"]);
    assert_eq!(
        loaded.summary(),
        "loaded 20 cases from data/math.jsonl (columns: qid, a, b, answer)"
    );
    let first = &loaded.cases[0];
    assert_eq!(first.id, "m01");
    assert_eq!(loaded.place(first.origin), "data/math.jsonl:1");
    assert_eq!(first.messages, None);
    assert!(first.checks.is_empty());
    for case in &loaded.cases {
        let a = case.values["a"].as_i64().unwrap();
        let b = case.values["b"].as_i64().unwrap();
        assert_eq!(
            case.values["answer"],
            json!((a * b).to_string()),
            "{}",
            case.id
        );
    }
    let source = &loaded.sources[0];
    assert_eq!(source.address, "data/math.jsonl");
    assert_eq!(source.rows, 20);
    assert_eq!(source.sha256, crate::hash::sha256_hex(text.as_bytes()));
    assert_eq!(
        source.resolved,
        Resolved::File(dir.path().join("data/math.jsonl"))
    );
}

#[test]
fn a_csv_with_quoted_commas_newlines_unicode_and_a_bom_loads() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "q.csv",
        "\u{feff}qid,question,answer\n1,\"Paris, or Lyon?\",\"Paris\nsurely\"\n2,Ça va? ☃,oui\n",
    );
    let loaded = load_yaml(dir.path(), "from: q.csv\nid: qid\n").unwrap();
    assert_eq!(ids(&loaded), ["1", "2"]);
    assert_eq!(loaded.columns, ["qid", "question", "answer"]);
    assert_eq!(loaded.cases[0].values["question"], json!("Paris, or Lyon?"));
    assert_eq!(loaded.cases[0].values["answer"], json!("Paris\nsurely"));
    assert_eq!(loaded.cases[1].values["question"], json!("Ça va? ☃"));
    assert_eq!(loaded.place(loaded.cases[1].origin), "q.csv:4");
}

#[test]
fn tsv_json_and_parquet_load_by_their_extension() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.tsv", "k\tv\nx\t1, 2\n");
    write(dir.path(), "b.json", "[\n {\"k\": \"y\", \"v\": 3}\n]\n");
    write(
        dir.path(),
        "c.parquet",
        parquet::write_for_test(&[("k", vec![Some(json!("z"))]), ("v", vec![Some(json!(4))])]),
    );
    let loaded = load_yaml(dir.path(), "from: [a.tsv, b.json, c.parquet]\nid: k\n").unwrap();
    assert_eq!(ids(&loaded), ["x", "y", "z"]);
    let v: Vec<&Value> = loaded.cases.iter().map(|c| &c.values["v"]).collect();
    assert_eq!(v, [&json!("1, 2"), &json!(3), &json!(4)]);
    let places: Vec<String> = loaded
        .cases
        .iter()
        .map(|c| loaded.place(c.origin))
        .collect();
    assert_eq!(places, ["a.tsv:2", "b.json:2", "c.parquet, row 1"]);
    let formats: Vec<FileFormat> = loaded.sources.iter().map(|s| s.format).collect();
    assert_eq!(
        formats,
        [FileFormat::Tsv, FileFormat::Json, FileFormat::Parquet]
    );
    assert_eq!(
        loaded.summary(),
        "loaded 3 cases from a.tsv, b.json, c.parquet (columns: k, v)"
    );
}

#[test]
fn a_glob_reads_its_files_sorted_and_format_overrides_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "d/2.jsonl", "{\"q\": \"b\"}\n");
    write(
        dir.path(),
        "d/1.jsonl",
        "{\"q\": \"a\"}\n{\"q\": \"c\", \"extra\": 1}\n",
    );
    let loaded = load_yaml(dir.path(), "from: d/*.jsonl\nid: q\n").unwrap();
    assert_eq!(ids(&loaded), ["a", "c", "b"]);
    assert_eq!(loaded.columns, ["q", "extra"]);
    assert_eq!(
        loaded.summary(),
        "loaded 3 cases from d/*.jsonl (2 files) (columns: q, extra)"
    );
    write(dir.path(), "rows.txt", "{\"q\": \"t\"}\n");
    let e = load_yaml(dir.path(), "from: rows.txt\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("rows.txt: cannot tell the format from its name;"),
        "{e}"
    );
    let loaded = load_yaml(dir.path(), "from: rows.txt\nformat: jsonl\n").unwrap();
    assert_eq!(loaded.cases[0].values["q"], json!("t"));
    let e = load_yaml(dir.path(), "from: missing.csv\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot read missing.csv: "), "{e}");
}

#[test]
fn the_summary_writes_thousands_with_separators() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..2000).map(|i| format!("{{\"n\": {i}}}\n")).collect();
    write(dir.path(), "d.jsonl", &rows);
    let loaded = load_yaml(dir.path(), "from: d.jsonl\n").unwrap();
    assert_eq!(
        loaded.summary(),
        "loaded 2,000 cases from d.jsonl (columns: n)"
    );
    let loaded = load_yaml(dir.path(), "from: d.jsonl\nlimit: 1\n").unwrap();
    assert_eq!(
        loaded.summary(),
        "loaded 1 of 2,000 cases (limit) from d.jsonl (columns: n)"
    );
}

#[test]
fn a_bad_jsonl_line_is_named_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "d.jsonl", "{\"q\": 1}\n\n{\"q\": 2\n");
    let e = load_yaml(dir.path(), "from: d.jsonl\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("d.jsonl:3: not a JSON object: EOF"), "{e}");
}

#[test]
fn ids_hash_the_values_without_an_id_column_and_missing_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "d.jsonl",
        "{\"a\": 1, \"b\": 2}\n{\"b\": 2, \"a\": 3}\n",
    );
    let loaded = load_yaml(dir.path(), "from: d.jsonl\n").unwrap();
    assert_eq!(loaded.cases[0].id, ids::hash_id(&loaded.cases[0].values));
    assert_eq!(loaded.cases[0].id.len(), 16);
    assert_ne!(loaded.cases[0].id, loaded.cases[1].id);
    let e = load_yaml(dir.path(), "from: d.jsonl\nid: qid\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "d.jsonl: `id: qid` names no column of the cases; columns: a, b"
    );
    write(
        dir.path(),
        "q.jsonl",
        "{\"qid\": \"q1\", \"a\": 1}\n{\"a\": 3}\n",
    );
    let e = load_yaml(dir.path(), "from: q.jsonl\nid: qd\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "q.jsonl: `id: qd` names no column of the cases; did you mean `qid`? columns: qid, a"
    );
    let e = load_yaml(dir.path(), "from: q.jsonl\nid: qid\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "q.jsonl:2: no value in the id column `qid`; give every row one, or name another column in `id:` (columns: a)"
    );
}

#[test]
fn duplicate_ids_are_refused_naming_both_rows_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.csv", "id,q\n1,x\n2,y\n");
    write(dir.path(), "b.csv", "id,q\n3,z\n2,w\n");
    let e = load_yaml(dir.path(), "from: [a.csv, b.csv]\nid: id\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "duplicate id `2`: a.csv:3 and b.csv:3; ids must be unique: give one row another id, or remove the repeated row"
    );
    write(
        dir.path(),
        "c.jsonl",
        "{\"q\": 1}\n{\"q\": 2}\n{\"q\": 1}\n",
    );
    let e = load_yaml(dir.path(), "from: c.jsonl\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(": c.jsonl:1 and c.jsonl:3; the two rows hold the same values"),
        "{e}"
    );
}

#[test]
fn limit_takes_the_first_rows_and_sample_a_stable_subset_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..50)
        .map(|i| format!("{{\"qid\": \"q{i}\"}}\n"))
        .collect();
    write(dir.path(), "d.jsonl", &rows);
    let loaded = load_yaml(dir.path(), "from: d.jsonl\nid: qid\nlimit: 3\n").unwrap();
    assert_eq!(ids(&loaded), ["q0", "q1", "q2"]);
    assert_eq!(loaded.rows, 50);
    // `file://` (promptfoo's way to name a file) is the path.
    let same = load_yaml(dir.path(), "from: file://d.jsonl\nid: qid\nlimit: 3\n").unwrap();
    assert_eq!(ids(&same), ids(&loaded));
    assert_eq!(
        loaded.summary(),
        "loaded 3 of 50 cases (limit) from d.jsonl (columns: qid)"
    );
    let sampled = load_yaml(
        dir.path(),
        "from: d.jsonl\nid: qid\nsample: {n: 10, seed: 7}\n",
    )
    .unwrap();
    assert_eq!(sampled.cases.len(), 10);
    let lines: Vec<u64> = sampled.cases.iter().map(|c| c.origin.line).collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    assert_eq!(
        sampled.summary(),
        "loaded 10 of 50 cases (sample, seed 7) from d.jsonl (columns: qid)"
    );
    // A row inserted at the top moves at most one other row out of the sample.
    write(
        dir.path(),
        "d.jsonl",
        format!("{{\"qid\": \"new\"}}\n{rows}"),
    );
    let again = load_yaml(
        dir.path(),
        "from: d.jsonl\nid: qid\nsample: {n: 10, seed: 7}\n",
    )
    .unwrap();
    let before: Vec<&str> = ids(&sampled);
    let after: Vec<&str> = ids(&again);
    let gone = before.iter().filter(|id| !after.contains(id)).count();
    assert!(gone <= 1, "{before:?} → {after:?}");
}

#[test]
fn a_checks_column_and_a_messages_column_are_read() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "d.csv",
        "id,messages,checks\n1,\"[{\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"Hi\"\"}]\",\"[{\"\"method\"\": \"\"contains\"\", \"\"value\"\": \"\"hello\"\"}]\"\n2,\"[{\"\"role\"\": \"\"user\"\", \"\"content\"\": \"\"Yo\"\"}]\",\n",
    );
    let loaded = load_yaml(dir.path(), "from: d.csv\nid: id\n").unwrap();
    let case = &loaded.cases[0];
    assert_eq!(
        case.checks,
        [json!({"method": "contains", "value": "hello"})]
    );
    assert_eq!(
        case.messages.as_deref(),
        Some(
            &[CaseMessage {
                role: Role::User,
                content: "Hi".into()
            }][..]
        )
    );
    assert_eq!(
        case.values["messages"],
        json!([{"role": "user", "content": "Hi"}])
    );
    assert!(!case.values.contains_key("checks"));
    assert!(loaded.cases[1].checks.is_empty());
    assert_eq!(loaded.columns, ["id", "messages"]);
    write(dir.path(), "e.jsonl", "{\"id\": 1, \"checks\": \"nope\"}\n");
    let e = load_yaml(dir.path(), "from: e.jsonl\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("e.jsonl:1: `checks` is not JSON"), "{e}");
}

#[test]
fn openai_evals_samples_load_with_messages_and_the_match_check() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "samples.jsonl",
        concat!(
            r#"{"input": [{"role": "system", "content": "Reply with the number."}, {"role": "user", "content": "2+2?"}], "ideal": "4"}"#,
            "\n",
            r#"{"input": "3+3?", "ideal": ["6", "six"]}"#,
            "\n",
            r#"{"ideal": "x"}"#,
            "\n"
        ),
    );
    let e = load_yaml(dir.path(), "from: samples.jsonl\nformat: openai-evals\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("samples.jsonl:3: no `input`"), "{e}");
    let loaded = load_yaml(
        dir.path(),
        "from: samples.jsonl\nformat: openai-evals\nlimit: 2\n",
    );
    // The bad third row is read (and refused) before the limit applies.
    assert!(loaded.is_err());
    write(
        dir.path(),
        "samples.jsonl",
        std::fs::read_to_string(dir.path().join("samples.jsonl"))
            .unwrap()
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let loaded = load_yaml(dir.path(), "from: samples.jsonl\nformat: openai-evals\n").unwrap();
    assert_eq!(loaded.columns, ["input", "ideal"]);
    let case = &loaded.cases[0];
    assert_eq!(case.messages.as_ref().unwrap().len(), 2);
    assert_eq!(
        case.checks,
        [json!({"method": "starts-with", "value": ["4"]})]
    );
    assert_eq!(
        loaded.cases[1].checks,
        [json!({"method": "starts-with", "value": ["6", "six"]})]
    );
}

#[test]
fn a_promptfoo_csv_is_converted_by_its_expected_column_and_bad_forms_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "tests.csv",
        "question,__expected,__expected2,__description\n\"Capital of France, please?\",equals: Paris,not-contains: sorry,capitals\nWhat is 2+2?,4,,sums\n",
    );
    let loaded = load_yaml(dir.path(), "from: tests.csv\n").unwrap();
    assert_eq!(loaded.columns, ["question", "description"]);
    assert_eq!(
        loaded.cases[0].checks,
        [
            json!({"method": "exact", "value": "Paris"}),
            json!({"method": "not-contains", "value": "sorry"}),
        ]
    );
    assert_eq!(
        loaded.cases[1].checks,
        [json!({"method": "exact", "value": "4"})]
    );
    write(
        dir.path(),
        "bad.csv",
        "question,__expected\nok?,contains: ok\nlong?,javascript: output.length > 10\n",
    );
    let e = load_yaml(dir.path(), "from: bad.csv\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bad.csv:3: `__expected`: the form `javascript:` is not supported"),
        "{e}"
    );
    // `format: promptfoo` converts a JSONL too.
    write(
        dir.path(),
        "t.jsonl",
        "{\"q\": \"x\", \"__expected\": \"icontains: X\"}\n",
    );
    let loaded = load_yaml(dir.path(), "from: t.jsonl\nformat: promptfoo\n").unwrap();
    assert_eq!(
        loaded.cases[0].checks,
        [json!({"method": "icontains", "value": "X"})]
    );
    // Without it, a JSONL's `__expected` is a value like any other.
    let loaded = load_yaml(dir.path(), "from: t.jsonl\n").unwrap();
    assert!(loaded.cases[0].checks.is_empty());
}

#[test]
fn no_rows_at_all_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "e.jsonl", "\n\n");
    let e = load_yaml(dir.path(), "from: e.jsonl\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "e.jsonl holds no cases; add rows to it, or point `from:` at the file that has them"
    );
}

/// A stand-in for the Hub on 127.0.0.1: files by path, each with a status, headers and a
/// body; every request's path and `Authorization` logged. Dropping it stops it.
struct Hub {
    url: String,
    log: Log,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Routes = HashMap<String, (u16, Vec<(String, String)>, Vec<u8>)>;

/// Each request's path and `Authorization` header.
type Log = Arc<Mutex<Vec<(String, Option<String>)>>>;

impl Hub {
    fn start(routes: Routes) -> Self {
        use axum::extract::{Request, State};
        use axum::response::Response;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log: Log = Arc::default();
        let state = (Arc::new(routes), Arc::clone(&log));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                type Shared = (Arc<Routes>, Arc<Mutex<Vec<(String, Option<String>)>>>);
                async fn handle(State((routes, log)): State<Shared>, request: Request) -> Response {
                    let path = request.uri().path().to_owned();
                    let auth = request
                        .headers()
                        .get("authorization")
                        .map(|v| v.to_str().unwrap().to_owned());
                    log.lock().unwrap().push((path.clone(), auth));
                    let (status, headers, body) = routes.get(&path).cloned().unwrap_or((
                        404,
                        Vec::new(),
                        b"Entry not found".to_vec(),
                    ));
                    let mut response = Response::builder().status(status);
                    for (name, value) in headers {
                        response = response.header(name, value);
                    }
                    response.body(axum::body::Body::from(body)).unwrap()
                }
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(handle).with_state(state);
                tokio::select! {
                    _ = async { axum::serve(listener, app).await } => {}
                    _ = rx => {}
                }
            });
        });
        Self {
            url,
            log,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    fn requests(&self) -> Vec<(String, Option<String>)> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const TOKEN: &str = "hf_test_CANARY_token_0042";

/// The options of a run whose database is `db`.
fn options(db: &Path, offline: bool) -> LoadOptions {
    LoadOptions {
        db: Some(db.to_path_buf()),
        offline,
        refresh: false,
        keep_values: false,
    }
}

/// The Hub at `url`, with the test token.
fn access(url: &str) -> HfAccess {
    HfAccess::new(url, Some(ApiKey::new(TOKEN)))
}

#[test]
fn an_hf_file_is_fetched_with_the_token_kept_and_then_read_offline_without_the_server() {
    let body = math_jsonl().into_bytes();
    let mut routes = Routes::new();
    routes.insert(
        "/datasets/o/math/resolve/main/data/math.jsonl".into(),
        (
            200,
            vec![("X-Repo-Commit".into(), COMMIT.into())],
            body.clone(),
        ),
    );
    let hub = Hub::start(routes);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let yaml = "from: hf://datasets/o/math/data/math.jsonl\nid: qid\n";
    let first = load_with(
        &spec(yaml),
        dir.path(),
        &options(&db, false),
        &access(&hub.url),
    )
    .unwrap();
    assert_eq!(first.cases.len(), 20);
    assert_eq!(
        hub.requests(),
        [(
            "/datasets/o/math/resolve/main/data/math.jsonl".to_owned(),
            Some(format!("Bearer {TOKEN}"))
        )]
    );
    assert_eq!(
        first.sources[0].resolved,
        Resolved::Hf {
            commit: COMMIT.into(),
            fetched: true
        }
    );
    assert_eq!(first.sources[0].sha256, crate::hash::sha256_hex(&body));
    let kept = Store::open(&db)
        .unwrap()
        .dataset_file("hf://datasets/o/math/data/math.jsonl")
        .unwrap()
        .unwrap();
    assert_eq!(kept.revision, COMMIT);
    assert_eq!(kept.sha256, first.sources[0].sha256);
    assert_eq!(
        first.summary(),
        "loaded 20 cases from hf://datasets/o/math/data/math.jsonl (columns: qid, a, b, answer)"
    );
    // Online again: read from the database, no request.
    let again = load_with(
        &spec(yaml),
        dir.path(),
        &options(&db, false),
        &access(&hub.url),
    )
    .unwrap();
    assert_eq!(hub.requests().len(), 1);
    assert_eq!(again.cases, first.cases);
    drop(hub);
    // Offline, the server gone: the same bytes.
    let offline = load_with(&spec(yaml), dir.path(), &options(&db, true), &nowhere()).unwrap();
    assert_eq!(offline.cases, first.cases);
    assert_eq!(offline.sources[0].sha256, first.sources[0].sha256);
    assert_eq!(
        offline.sources[0].resolved,
        Resolved::Hf {
            commit: COMMIT.into(),
            fetched: false
        }
    );
}

/// A Hub serving `body` for `route`, as of commit `commit`.
fn hub_serving(route: &str, commit: &str, body: &str) -> Hub {
    let mut routes = Routes::new();
    routes.insert(
        route.into(),
        (
            200,
            vec![("X-Repo-Commit".into(), commit.into())],
            body.as_bytes().to_vec(),
        ),
    );
    Hub::start(routes)
}

#[test]
fn refresh_fetches_a_moved_branch_again_and_keeps_its_new_commit_but_not_a_pinned_commit() {
    const MOVED: &str = "fedcba9876543210fedcba9876543210fedcba98";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let refresh = LoadOptions {
        refresh: true,
        ..options(&db, false)
    };
    let route = "/datasets/o/n/resolve/main/t.csv";
    let yaml = "from: hf://datasets/o/n/t.csv\n";
    let before = hub_serving(route, COMMIT, "q,a\nold,1\n");
    let first = load_with(
        &spec(yaml),
        dir.path(),
        &options(&db, false),
        &access(&before.url),
    );
    assert_eq!(first.unwrap().cases[0].values["q"], json!("old"));
    drop(before);
    // The branch moved: a plain run still reads the kept bytes, with no request.
    let after = hub_serving(route, MOVED, "q,a\nnew,2\n");
    let kept = load_with(
        &spec(yaml),
        dir.path(),
        &options(&db, false),
        &access(&after.url),
    );
    assert_eq!(kept.unwrap().cases[0].values["q"], json!("old"));
    assert!(after.requests().is_empty());
    // --refresh-data fetches it again, and keeps the new bytes and commit for later runs.
    let fresh = load_with(&spec(yaml), dir.path(), &refresh, &access(&after.url)).unwrap();
    assert_eq!(fresh.cases[0].values["q"], json!("new"));
    assert_eq!(
        fresh.sources[0].resolved,
        Resolved::Hf {
            commit: MOVED.into(),
            fetched: true
        }
    );
    assert_eq!(after.requests().len(), 1);
    drop(after);
    let offline = load_with(&spec(yaml), dir.path(), &options(&db, true), &nowhere());
    assert_eq!(offline.unwrap().cases[0].values["q"], json!("new"));
    // An address pinned to a commit cannot move: refreshing it reads the database.
    let pinned = format!("/datasets/o/n/resolve/{COMMIT}/t.csv");
    let hub = hub_serving(&pinned, COMMIT, "q,a\npinned,3\n");
    let yaml = format!("from: hf://datasets/o/n@{COMMIT}/t.csv\n");
    for _ in 0..2 {
        let loaded = load_with(&spec(&yaml), dir.path(), &refresh, &access(&hub.url));
        assert_eq!(loaded.unwrap().cases[0].values["q"], json!("pinned"));
    }
    assert_eq!(hub.requests().len(), 1);
}

#[test]
fn without_a_database_an_hf_file_is_fetched_and_kept_nowhere() {
    let mut routes = Routes::new();
    routes.insert(
        "/datasets/o/n/resolve/main/t.csv".into(),
        (200, Vec::new(), b"q\nx\n".to_vec()),
    );
    let hub = Hub::start(routes);
    let dir = tempfile::tempdir().unwrap();
    let yaml = "from: hf://datasets/o/n/t.csv\n";
    for _ in 0..2 {
        let loaded = load_with(
            &spec(yaml),
            dir.path(),
            &LoadOptions::default(),
            &access(&hub.url),
        )
        .unwrap();
        // A mirror that does not say the commit: the revision as written.
        assert_eq!(
            loaded.sources[0].resolved,
            Resolved::Hf {
                commit: "main".into(),
                fetched: true
            }
        );
    }
    assert_eq!(hub.requests().len(), 2);
}

#[test]
fn offline_with_nothing_kept_names_the_address_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "from: hf://datasets/o/n@v2/t.csv\n";
    let db = dir.path().join("track.db");
    let e = load_with(&spec(yaml), dir.path(), &options(&db, true), &nowhere())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "hf://datasets/o/n@v2/t.csv is not stored yet and the run is offline; run once online to fetch and keep it (it is then read from the database, also offline)"
    );
    // Without a database, offline, the same.
    let no_db = LoadOptions {
        db: None,
        offline: true,
        refresh: false,
        keep_values: false,
    };
    let again = load_with(&spec(yaml), dir.path(), &no_db, &nowhere())
        .unwrap_err()
        .to_string();
    assert_eq!(again, e);
}

#[test]
fn a_redirect_to_another_host_is_followed_without_the_token() {
    let cdn_body = b"a,b\n1,2\n".to_vec();
    let mut cdn_routes = Routes::new();
    cdn_routes.insert("/blobs/xyz".into(), (200, Vec::new(), cdn_body.clone()));
    let cdn = Hub::start(cdn_routes);
    let mut routes = Routes::new();
    routes.insert(
        "/datasets/o/n/resolve/v1/t.csv".into(),
        (
            302,
            vec![
                ("X-Repo-Commit".into(), COMMIT.into()),
                ("Location".into(), format!("{}/blobs/xyz?sig=1", cdn.url)),
            ],
            Vec::new(),
        ),
    );
    // A relative redirect on the Hub itself keeps the token.
    routes.insert(
        "/datasets/o/n/resolve/v1/moved.csv".into(),
        (
            307,
            vec![("Location".into(), "/datasets/o/n/resolve/v1/t.csv".into())],
            Vec::new(),
        ),
    );
    let hub = Hub::start(routes);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let loaded = load_with(
        &spec("from: hf://datasets/o/n@v1/moved.csv\n"),
        dir.path(),
        &options(&db, false),
        &access(&hub.url),
    )
    .unwrap();
    assert_eq!(loaded.cases[0].values["a"], json!("1"));
    let bearer = Some(format!("Bearer {TOKEN}"));
    assert_eq!(
        hub.requests(),
        [
            (
                "/datasets/o/n/resolve/v1/moved.csv".to_owned(),
                bearer.clone()
            ),
            ("/datasets/o/n/resolve/v1/t.csv".to_owned(), bearer),
        ]
    );
    assert_eq!(cdn.requests(), [("/blobs/xyz".to_owned(), None)]);
    let kept = Store::open(&db)
        .unwrap()
        .dataset_file("hf://datasets/o/n@v1/moved.csv")
        .unwrap()
        .unwrap();
    assert_eq!(kept.revision, COMMIT);
}

#[test]
fn gated_and_missing_files_give_clear_messages_without_the_token() {
    let mut routes = Routes::new();
    routes.insert(
        "/datasets/o/gated/resolve/main/t.jsonl".into(),
        (
            401,
            vec![(
                "X-Error-Message".into(),
                "Access to dataset o/gated is restricted.".into(),
            )],
            Vec::new(),
        ),
    );
    let hub = Hub::start(routes);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let gated = spec("from: hf://datasets/o/gated/t.jsonl\n");
    let no_token = HfAccess::new(&hub.url, None);
    let e = load_with(&gated, dir.path(), &options(&db, false), &no_token)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "cannot fetch hf://datasets/o/gated/t.jsonl: HTTP 401 (Access to dataset o/gated is restricted.): the set is gated or private (or does not exist); set HF_TOKEN to a token that can read it (huggingface.co/settings/tokens), accept its conditions on its page, and check the address"
    );
    let e = load_with(&gated, dir.path(), &options(&db, false), &access(&hub.url))
        .unwrap_err()
        .to_string();
    assert!(e.contains("HF_TOKEN was refused for this set"), "{e}");
    assert!(!e.contains(TOKEN), "{e}");
    let missing = spec("from: hf://datasets/o/none/t.jsonl\n");
    let e = load_with(
        &missing,
        dir.path(),
        &options(&db, false),
        &access(&hub.url),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "cannot fetch hf://datasets/o/none/t.jsonl: HTTP 404: not found; check the owner"
        ),
        "{e}"
    );
    assert!(!e.contains(TOKEN), "{e}");
    // Nothing was kept of a refused fetch.
    let store = Store::open(&db).unwrap();
    assert_eq!(
        store.dataset_file("hf://datasets/o/none/t.jsonl").unwrap(),
        None
    );
    assert_eq!(
        store.dataset_file("hf://datasets/o/gated/t.jsonl").unwrap(),
        None
    );
}
