//! Targets (issue 32): the user's own application evaluated in place of a model API, as a
//! provider of `kind: http` (a small service started here, wanting a bearer token from the
//! environment) or `kind: exec` (a Python script). Each answers, fails as applications fail,
//! and goes through the dispatcher like any model: cache, budget, `--offline`, signals,
//! `--shard` and `--batch`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::app::AppServer;
use crate::support::{Sandbox, any_file_contains, text, wait_for};

/// The application's token: a canary that must never be stored or printed.
const TOKEN: &str = "tok-app-CANARY-7731";

/// The HTTP target `my-app` at `URL`, with the token in a header.
const HTTP_CONFIG: &str = r#"retry:
  max_attempts: 3
  base_delay: 10
  max_delay: 50
timeout_secs: 30
providers:
  my-app:
    kind: http
    url: URL
    headers:
      Authorization: Bearer ${APP_TOKEN}
      X-Tenant: acme
    body:
      question: "{{prompt}}"
      context: "{{context}}"
      history: "{{messages}}"
    answer: output.text
    input_tokens: usage.in
    output_tokens: /usage/out
    cost_usd: usage.cost
"#;

/// The exec target `my-app`: `app.py` in the sandbox.
const EXEC_CONFIG: &str = "timeout_secs: 30\nproviders:\n  my-app:\n    kind: exec\n    \
                           run: python3 app.py\n    timeout_secs: 5\n";

/// The application as a script: it logs each call in `calls.log` and its request in
/// `request-<context>.json`, then answers as the HTTP application does (from the case's
/// `context`); a prompt naming `crash`, `hang` or `garbage` does that, one naming `input`
/// reports only its input tokens, and while the file `gate` exists it marks that it started
/// and sleeps.
const APP_PY: &str = r#"import json, os, sys, time
request = json.load(sys.stdin)
with open("calls.log", "a") as log:
    log.write(request["prompt"] + "\n")
context = request["values"].get("context", "")
with open(f"request-{context}.json", "w") as out:
    json.dump(request, out)
prompt = request["prompt"]
if os.path.exists("gate"):
    open(f"started-{os.getpid()}", "w").close()
    time.sleep(60)
if "crash" in prompt:
    sys.stderr.write("loading the index\n")
    raise RuntimeError("the index is missing")
if "hang" in prompt:
    sys.stderr.write("waiting for the upstream model\n")
    sys.stderr.flush()
    time.sleep(60)
if "garbage" in prompt:
    print("The answer is 4")
    sys.exit(0)
answer = {"answer": "The answer is " + context, "input_tokens": 11}
if "input" not in prompt:
    answer.update(output_tokens=4, cost_usd=0.01)
print("warming up")
print(json.dumps(answer))
"#;

/// A benchmark of `my-app:default` over cases `(id, question, context)`, each passing when
/// the answer names its context.
fn bench(cases: &[(&str, &str, &str)]) -> String {
    let mut yaml = String::from(
        "temperature: 0\nmodels: [my-app:default]\ntemplates:\n  - {name: ask, prompt: \"Q: {{question}}\"}\ncases:\n",
    );
    for (id, question, context) in cases {
        yaml.push_str(&format!(
            "  - {{id: {id}, question: {}, context: {context}}}\n",
            serde_json::to_string(question).unwrap()
        ));
    }
    yaml.push_str("checks: [{method: contains, value: \"{{context}}\"}]\n");
    yaml
}

/// Four cases every application answers right.
const CAPITALS: [(&str, &str, &str); 4] = [
    ("fr", "Capital of France?", "Paris"),
    ("jp", "Capital of Japan?", "Tokyo"),
    ("it", "Capital of Italy?", "Rome"),
    ("es", "Capital of Spain?", "Madrid"),
];

/// A sandbox whose `my-app` is one kind of target, and how many calls that target got.
struct Target {
    s: Sandbox,
    /// The HTTP application, for `kind: http`; `None` for the script.
    app: Option<AppServer>,
}

impl Target {
    /// `my-app` as an HTTP service, with `extra` lines under its provider entry.
    fn http(extra: &str) -> Self {
        let app = AppServer::start(TOKEN);
        let s = Sandbox::new();
        s.write(
            "config.yaml",
            &(HTTP_CONFIG.replace("URL", &app.url()) + extra),
        );
        Self { s, app: Some(app) }
    }

    /// `my-app` as a script, with `extra` lines under its provider entry.
    fn exec(extra: &str) -> Self {
        let s = Sandbox::new();
        s.write("config.yaml", &(EXEC_CONFIG.to_owned() + extra));
        s.write("app.py", APP_PY);
        Self { s, app: None }
    }

    /// Both kinds, each with `extra`.
    fn both(extra: &str) -> [Self; 2] {
        [Self::http(extra), Self::exec(extra)]
    }

    fn kind(&self) -> &'static str {
        if self.app.is_some() { "http" } else { "exec" }
    }

    /// The calls the application got so far.
    fn calls(&self) -> usize {
        match &self.app {
            Some(app) => app.count(),
            None => std::fs::read_to_string(self.s.path("calls.log"))
                .map(|log| log.lines().count())
                .unwrap_or(0),
        }
    }

    /// `track` with the application's token in its environment.
    fn track(&self) -> assert_cmd::Command {
        let mut cmd = self.s.track();
        cmd.env("APP_TOKEN", TOKEN);
        cmd
    }

    /// `track run bench.yaml -q` with `extra` arguments.
    fn run(&self, extra: &[&str]) -> std::process::Output {
        self.track()
            .args(["run", "bench.yaml", "-q"])
            .args(extra)
            .output()
            .unwrap()
    }

    fn status(&self, run: i64) -> String {
        self.s
            .db()
            .query_row("SELECT status FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .unwrap()
    }
}

/// `track runs --errors <run>`, as text.
fn run_errors(t: &Target, run: &str) -> String {
    let out = t
        .track()
        .args(["runs", "--errors", run])
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    text(&out.stdout)
}

/// Every stored text and blob of the sandbox's database, and every file under the sandbox
/// (the database, its journal, the exports): where `needle` is, if anywhere.
fn stored_anywhere(s: &Sandbox, needle: &str) -> Option<String> {
    let db = s.db();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for table in &tables {
        let mut select = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = select.column_count();
        let mut rows = select.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                use rusqlite::types::ValueRef;
                let bytes = match row.get_ref(i).unwrap() {
                    ValueRef::Text(b) | ValueRef::Blob(b) => b,
                    _ => continue,
                };
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    return Some(format!("table {table}, column {i}"));
                }
            }
        }
    }
    any_file_contains(s.dir.path(), needle).map(|p| p.display().to_string())
}

#[test]
fn an_http_target_gets_its_token_from_the_environment_and_no_stored_byte_holds_it() {
    let t = Target::http("");
    let mut cases = CAPITALS[..2].to_vec();
    cases.extend([
        ("lost", "noanswer, please", "Lima"),
        ("down", "html, please", "Oslo"),
    ]);
    t.s.write("bench.yaml", &bench(&cases));
    // Every log line on, to see that none holds the token.
    let out = t
        .track()
        .env("TRACK_LOG", "trace")
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("my-app"), "logged");
    let app = t.app.as_ref().unwrap();
    // The token and the literal header on every request; the body rendered from the case.
    let seen = app.seen();
    for request in &seen {
        assert_eq!(request.authorization, Some(format!("Bearer {TOKEN}")));
        assert_eq!(request.tenant.as_deref(), Some("acme"));
    }
    let paris = seen.iter().find(|r| r.body["context"] == "Paris").unwrap();
    assert_eq!(
        paris.body,
        json!({
            "question": "Q: Capital of France?",
            "context": "Paris",
            "history": [{"role": "user", "content": "Q: Capital of France?"}],
        })
    );
    // A body that is not JSON is retried (3 attempts); one without the path is not.
    let asked = |context: &str| seen.iter().filter(|r| r.body["context"] == context).count();
    assert_eq!((asked("Paris"), asked("Lima"), asked("Oslo")), (1, 1, 3));
    let errors = run_errors(&t, "1");
    assert!(
        errors.contains(
            "my-app: `answer: output.text` finds nothing in its response; it begins: \
             `{\"result\":\"I looked everywhere\"}` (1 attempt; not retried"
        ),
        "{errors}"
    );
    assert!(
        errors.contains(
            "its response is not JSON (expected value at line 1 column 1), so `answer: \
             output.text` finds nothing in it; it begins: `<html><body>Service \
             Unavailable</body></html>` (3 attempts"
        ),
        "{errors}"
    );
    // The answers passed, with the reported tokens and cost.
    let (passed, cost, estimated): (i64, f64, i64) =
        t.s.db()
            .query_row(
                "SELECT count(*), sum(cost_usd), sum(tokens_estimated) FROM calls \
             WHERE status = 'ok' AND input_tokens = 11 AND output_tokens = 4",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
    assert_eq!((passed, estimated), (2, 0));
    assert!((cost - 0.02).abs() < 1e-12, "{cost}");
    let models = t
        .track()
        .args(["models", "--format", "csv"])
        .output()
        .unwrap();
    let models = text(&models.stdout);
    let line = models
        .lines()
        .find(|l| l.starts_with("my-app:default,"))
        .unwrap_or_else(|| panic!("{models}"));
    assert!(line.contains(",set,"), "{line}");
    // Exported, the run holds no token either; nor does anything printed.
    for export in [
        &["export", "csv", "--out", "csv-out"][..],
        &["export", "parquet", "--out", "parquet-out"][..],
    ] {
        let out = t.track().args(export).output().unwrap();
        assert!(out.status.success(), "{export:?}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains(TOKEN) && !text(&out.stdout).contains(TOKEN));
    }
    assert!(Path::new(&t.s.path("csv-out")).exists());
    assert!(!text(&out.stdout).contains(TOKEN) && !text(&out.stderr).contains(TOKEN));
    assert_eq!(stored_anywhere(&t.s, TOKEN), None);
    // (The scan finds what is stored: the rendered question, and the tenant of the key.)
    assert!(stored_anywhere(&t.s, "Capital of France?").is_some());
    assert!(stored_anywhere(&t.s, "acme").is_some());
    // Another token: the same keys, so the answers come from the cache.
    let before = app.count();
    let again =
        t.s.track()
            .env("APP_TOKEN", "tok-other-CANARY-2")
            .args(["run", "bench.yaml", "-q"])
            .output()
            .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(t.s.count("SELECT cache_hits FROM runs WHERE id = 2"), 2);
    // Only the failed calls were asked again (each once: they failed every attempt before).
    assert_eq!(app.count() - before, 2);
    // Without the variable the uncached calls are not sent, and the error names it.
    let bare =
        t.s.track()
            .args(["run", "bench.yaml", "-q"])
            .output()
            .unwrap();
    assert_eq!(app.count() - before, 2, "nothing sent without the token");
    let errors = run_errors(&t, "3");
    assert!(
        errors.contains(
            "no value for APP_TOKEN, named in the headers of my-app: set it in the environment \
             or in .env"
        ),
        "{errors}\n{}",
        text(&bare.stderr)
    );
    assert_eq!(stored_anywhere(&t.s, TOKEN), None);
    assert_eq!(stored_anywhere(&t.s, "tok-other-CANARY-2"), None);
}

#[test]
fn an_exec_target_answers_and_a_crash_a_hang_or_garbage_is_an_error_with_its_stderr() {
    let t = Target::exec("");
    t.s.write(
        "bench.yaml",
        &bench(&[
            ("fr", "Capital of France?", "Paris"),
            ("jp", "input only: Capital of Japan?", "Tokyo"),
            ("crash", "crash, please", "Lima"),
            ("hang", "hang, please", "Oslo"),
            ("garbage", "garbage, please", "Rome"),
        ]),
    );
    let started = Instant::now();
    let out = t.run(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The hang was stopped at its 5 s timeout, not waited for (it sleeps 60 s). (5 s, not
    // less: its calls start together, and five Pythons starting at once on a busy machine
    // take seconds.)
    assert!(started.elapsed() < Duration::from_secs(40));
    // The request on stdin: the messages, the case's values, the sampling parameters.
    let request: Value =
        serde_json::from_str(&std::fs::read_to_string(t.s.path("request-Paris.json")).unwrap())
            .unwrap();
    assert_eq!(
        request,
        json!({
            "model": "default",
            "messages": [{"role": "user", "content": "Q: Capital of France?"}],
            "prompt": "Q: Capital of France?",
            "values": {"id": "fr", "question": "Capital of France?", "context": "Paris"},
            "params": {"temperature": 0.0},
        })
    );
    let errors = run_errors(&t, "1");
    for want in [
        "my-app: `python3 app.py` exited with status 1; stderr: RuntimeError: the index is \
         missing (1 attempt",
        "my-app: `python3 app.py` ran longer than its timeout of 5 s and was stopped; stderr: \
         waiting for the upstream model (1 attempt",
        "my-app: `python3 app.py` printed no JSON answer ({\"answer\": …}): it printed `The \
         answer is 4` (1 attempt",
    ] {
        assert!(errors.contains(want), "{want}\n{errors}");
    }
    // Tokens it reports are kept; those it does not are estimated, and flagged.
    let row = |context: &str| -> (i64, i64, f64, i64) {
        t.s.db()
            .query_row(
                "SELECT c.input_tokens, c.output_tokens, c.cost_usd, c.tokens_estimated \
                 FROM calls c JOIN blobs b ON b.sha256 = c.response_sha256 \
                 WHERE c.status = 'ok' AND CAST(b.content AS TEXT) LIKE ?1",
                [format!("%{context}")],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap()
    };
    assert_eq!(row("Paris"), (11, 4, 0.01, 0));
    let (input, output, cost, estimated) = row("Tokyo");
    assert_eq!((input, cost, estimated), (11, 0.0, 1));
    assert!(output > 0, "estimated from the answer: {output}");
    assert_eq!(
        t.s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        2
    );
    // Again: the answers from the cache, the failures asked again.
    assert_eq!(t.calls(), 5);
    let out = t.run(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(t.s.count("SELECT cache_hits FROM runs WHERE id = 2"), 2);
    assert_eq!(t.calls(), 8);
}

#[test]
fn a_budget_bounds_each_target_by_its_max_cost_and_refuses_one_without() {
    for t in Target::both("    max_cost_usd: 0.01\n") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        // Each call reports $0.01: three fit in $0.035, the fourth's worst case does not.
        let out = t.run(&["--budget", "0.035", "--concurrency", "1"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert_eq!(t.status(1), "budget", "{}", t.kind());
        assert_eq!(t.calls(), 3, "{}", t.kind());
        let paid: f64 =
            t.s.db()
                .query_row("SELECT sum(cost_usd) FROM calls", [], |r| r.get(0))
                .unwrap();
        assert!(paid <= 0.035, "{}: {paid}", t.kind());
        let out = t.run(&["--budget", "1"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(t.s.count("SELECT cache_hits FROM runs WHERE id = 2"), 3);
        assert_eq!(t.calls(), 4, "{}: nothing paid twice", t.kind());
    }
    // Without `max_cost_usd:`, a target that reports costs cannot be held to a budget: its
    // calls are not sent, and the error says what to set.
    for t in Target::both("") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        let out = t.run(&["--budget", "1"]);
        assert!(!out.status.success(), "{}", t.kind());
        assert!(
            text(&out.stderr).contains("nothing could run (4 errors); first: my-app:default on "),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(t.calls(), 0, "{}", t.kind());
        assert!(
            text(&out.stderr).contains(
                "(ask): a budget cannot bound the calls to my-app: what each costs is known \
                 only once it answers; set `max_cost_usd:` (the most one call costs, 0 if it is \
                 free) under `providers: my-app:` in config.yaml (not sent)"
            ),
            "{}: {}",
            t.kind(),
            text(&out.stderr)
        );
    }
}

#[test]
fn offline_serves_each_target_from_the_cache_only() {
    for t in Target::both("") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        let out = t.run(&["--offline"]);
        assert!(!out.status.success(), "{}", t.kind());
        assert!(
            text(&out.stderr).contains("nothing could run (4 errors); first: my-app:default on "),
            "{}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("(ask): not in the cache, and --offline forbids calls"),
            "{}: {}",
            t.kind(),
            text(&out.stderr)
        );
        assert_eq!(t.calls(), 0, "{}", t.kind());
        assert!(t.run(&[]).status.success());
        assert_eq!(t.calls(), 4);
        let out = t.run(&["--offline"]);
        assert!(out.status.success(), "{}: {}", t.kind(), text(&out.stderr));
        assert_eq!(t.s.count("SELECT cache_hits FROM runs WHERE id = 3"), 4);
        assert_eq!(t.calls(), 4, "{}", t.kind());
    }
}

#[test]
fn shards_split_each_targets_calls_and_batch_runs_them_live_saying_so_once() {
    for t in Target::both("") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        for k in 0..2 {
            let shard = format!("{k}/2");
            let db = format!("shard-{k}.db");
            let out = t.run(&["--shard", &shard, "--db", &db]);
            assert!(out.status.success(), "{}: {}", t.kind(), text(&out.stderr));
        }
        // Every case asked once, in one shard or the other.
        assert_eq!(t.calls(), 4, "{}", t.kind());
        let keys = |db: &str| -> Vec<String> {
            let db = rusqlite::Connection::open(t.s.path(db)).unwrap();
            let mut select = db.prepare("SELECT cache_key FROM calls").unwrap();
            select
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let (zero, one) = (keys("shard-0.db"), keys("shard-1.db"));
        assert!(!zero.is_empty() && !one.is_empty(), "{}", t.kind());
        assert!(zero.iter().all(|k| !one.contains(k)), "{}", t.kind());
        assert_eq!(zero.len() + one.len(), 4, "{}", t.kind());
        let out = t
            .track()
            .args(["merge", "merged.db", "shard-0.db", "shard-1.db"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", t.kind(), text(&out.stderr));
        // The merged database holds every answer.
        let out = t.run(&["--offline", "--db", "merged.db"]);
        assert!(out.status.success(), "{}: {}", t.kind(), text(&out.stderr));
        assert_eq!(t.calls(), 4, "{}", t.kind());
        // --batch: a target has no batch API; its calls run live, and it is said once (a
        // note: not under -q).
        let out = t
            .track()
            .args(["run", "bench.yaml", "--batch", "--db", "batch.db"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {}", t.kind(), text(&out.stderr));
        let said = "my-app:default has no batch API: its calls run live, at the standard price";
        assert_eq!(
            text(&out.stderr).matches(said).count(),
            1,
            "{}",
            text(&out.stderr)
        );
        assert_eq!(t.calls(), 8, "{}", t.kind());
    }
}

#[test]
fn a_signal_stops_each_target_and_the_same_command_finishes_the_run() {
    // HTTP: the call in flight lands and is stored, as a model API's does.
    let t = Target::http("");
    t.s.write("bench.yaml", &bench(&CAPITALS));
    let app = t.app.as_ref().unwrap();
    app.hold();
    let mut cmd = t.s.track_process();
    cmd.env("APP_TOKEN", TOKEN)
        .args(["run", "bench.yaml", "-q", "--concurrency", "1"]);
    let run = crate::support::Running::start(cmd);
    app.wait_held(1);
    run.signal("INT");
    run.wait_for_stderr("INT received: sending no more calls");
    app.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(t.status(1), "interrupted");
    assert_eq!(app.count(), 1);
    assert_eq!(
        t.s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        1
    );
    let out = t.run(&["--concurrency", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(t.status(2), "completed");
    assert_eq!(t.s.count("SELECT cache_hits FROM runs WHERE id = 2"), 1);
    assert_eq!(app.count(), 4);

    // A command: the one running is killed (and what it started), nothing is stored of it,
    // and the run ends at once rather than after its 60 s sleep.
    let t = Target::exec("");
    t.s.write(
        "config.yaml",
        "providers:\n  my-app:\n    kind: exec\n    run: python3 app.py\n    timeout_secs: 300\n",
    );
    t.s.write("bench.yaml", &bench(&CAPITALS));
    t.s.write("gate", "");
    let mut cmd = t.s.track_process();
    cmd.env("APP_TOKEN", TOKEN)
        .args(["run", "bench.yaml", "-q", "--concurrency", "1"]);
    let started = Instant::now();
    let run = crate::support::Running::start(cmd);
    let marker = || {
        std::fs::read_dir(t.s.dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .find_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix("started-").map(str::to_owned)
            })
    };
    wait_for("the application to start", || marker().is_some());
    run.signal("INT");
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(40), "{stderr}");
    assert_eq!(t.status(1), "interrupted");
    assert_eq!(t.s.count("SELECT count(*) FROM calls"), 0);
    let pid = marker().unwrap();
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    };
    wait_for("the application to be killed", gone);
    std::fs::remove_file(t.s.path("gate")).unwrap();
    let out = t.run(&["--concurrency", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(t.status(2), "completed");
    assert_eq!(
        t.s.count("SELECT count(*) FROM calls WHERE status = 'ok'"),
        4
    );
    assert_eq!(t.calls(), 5, "the killed call, then the four");
}

/// A script that answers only once four of its calls run at once (or after 10 s), saying
/// which in `met.log`: whether the calls went together or the first alone.
const BARRIER_PY: &str = r#"import glob, json, os, sys, time
request = json.load(sys.stdin)
open(f"started-{os.getpid()}", "w").close()
deadline = time.time() + 10
while len(glob.glob("started-*")) < 4 and time.time() < deadline:
    time.sleep(0.01)
met = "together" if len(glob.glob("started-*")) >= 4 else "alone"
with open("met.log", "a") as log:
    log.write(met + "\n")
print(json.dumps({"answer": "The answer is " + request["values"]["context"]}))
"#;

#[test]
fn a_target_is_called_at_its_concurrency_from_the_first_call() {
    // A model API's first call goes alone, to learn its rate limits from the answer's
    // headers; a target has none to teach, and its first call does not wait for the others.
    let t = Target::http("");
    t.s.write("bench.yaml", &bench(&CAPITALS));
    let app = t.app.as_ref().unwrap();
    app.hold();
    let mut cmd = t.s.track_process();
    cmd.env("APP_TOKEN", TOKEN)
        .args(["run", "bench.yaml", "-q", "--concurrency", "4"]);
    let run = crate::support::Running::start(cmd);
    app.wait_held(4);
    app.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(app.count(), 4);

    let t = Target::exec("");
    t.s.write(
        "config.yaml",
        "providers:\n  my-app:\n    kind: exec\n    run: python3 barrier.py\n    \
         timeout_secs: 60\n",
    );
    t.s.write("barrier.py", BARRIER_PY);
    t.s.write("bench.yaml", &bench(&CAPITALS));
    let out = t.run(&["--concurrency", "4"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let met = std::fs::read_to_string(t.s.path("met.log")).unwrap();
    assert_eq!(met, "together\n".repeat(4), "{met}");
}

/// What a run stopped by a target's cost above its `max_cost_usd: 0.000001` says (each call
/// of the test applications reports $0.01).
const OVERRUN: &str = "my-app reported $0.01 for one call, above its `max_cost_usd: 0.000001`";

#[test]
fn a_target_reporting_more_than_its_max_cost_stops_the_run_at_once() {
    // Each call reserves its `max_cost_usd` and reports 10,000 times that: the first answer
    // stops the run, naming the target, its bound and the cost it reported.
    for t in Target::both("    max_cost_usd: 0.000001\n") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        let out = t.run(&["--budget", "0.001", "--concurrency", "1"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", t.kind());
        assert_eq!(t.status(1), "budget", "{}", t.kind());
        assert_eq!(t.calls(), 1, "{}: stopped at once", t.kind());
        assert!(stderr.contains(OVERRUN), "{}: {stderr}", t.kind());
        assert!(
            stderr.contains("under `providers: my-app:` in config.yaml"),
            "{}: {stderr}",
            t.kind()
        );
    }
    // Four calls in flight at once, all within the budget as reserved, all over it as
    // billed: the run that paid more than its budget does not end `completed`, nor exit 0.
    let t = Target::http("    max_cost_usd: 0.000001\n");
    t.s.write("bench.yaml", &bench(&CAPITALS));
    let app = t.app.as_ref().unwrap();
    app.hold();
    let mut cmd = t.s.track_process();
    cmd.env("APP_TOKEN", TOKEN).args([
        "run",
        "bench.yaml",
        "-q",
        "--concurrency",
        "4",
        "--budget",
        "0.001",
    ]);
    let run = crate::support::Running::start(cmd);
    app.wait_held(4);
    app.release();
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(t.status(1), "budget");
    assert!(stderr.contains(OVERRUN), "{stderr}");
    assert!(
        stderr.contains("spent $0.04 of its $0.001 budget"),
        "{stderr}"
    );
}

#[test]
fn a_dry_run_with_a_budget_says_a_target_without_max_cost_is_refused() {
    for t in Target::both("") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        let out = t
            .track()
            .args(["run", "bench.yaml", "--dry-run", "--budget", "1"])
            .env("COLUMNS", "400")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(!stdout.contains(" fits"), "{}: {stdout}", t.kind());
        assert!(
            stdout.contains(
                "budget $1: the 4 calls to my-app:default would not be sent: a budget cannot \
                 bound the calls to my-app"
            ),
            "{}: {stdout}",
            t.kind()
        );
        assert_eq!(t.calls(), 0);
    }
    // With `max_cost_usd:`, each call is bounded by it.
    for t in Target::both("    max_cost_usd: 0.5\n") {
        t.s.write("bench.yaml", &bench(&CAPITALS));
        let out = t
            .track()
            .args(["run", "bench.yaml", "--dry-run", "--budget", "1"])
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains("budget $1: the plan's bound $2 does not fit"),
            "{}: {stdout}",
            t.kind()
        );
    }
}
