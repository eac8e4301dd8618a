//! `track view` end to end: the real binary serves a temp database filled by a mock run, and
//! its pages are fetched over HTTP: statuses, the Content-Security-Policy, escaping of hostile
//! answers, the token off loopback, and counts that are `track query`'s. The same in a real
//! browser: `browser`.

mod browser;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};

use crate::support::mock::{Action, Rule};
use crate::support::{Sandbox, bench_yaml, text};

const MODELS: [&str; 2] = ["openai:gpt-4o", "anthropic:sonnet 3.5"];

/// An answer built to run a script in any page that shows it unescaped.
const HOSTILE: &str = "<script>alert(1)</script><img src=x onerror=alert(2)> \
                       <a href=\"javascript:alert(3)\">click</a> zebra";

/// A benchmark of two models on four prompts: one sum answered wrong by both, a capital
/// answered right, a hostile answer that fails its check, and a word (`zebra`) in 3 answers
/// (the hostile one of each model and gpt-4o's capital).
fn add_bench(s: &Sandbox) {
    s.mock
        .add_rule(Rule::reply("2+2", "five").model("gpt-4o").times(1));
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock
        .add_rule(Rule::reply("Capital of France", "Paris, like a zebra.").model("gpt-4o"));
    s.mock.add_rule(Rule::reply("Capital of France", "Paris."));
    s.mock.add_rule(Rule::reply("magic words", HOSTILE));
    s.mock.add_rule(Rule::reply("colour", "blue"));
    let prompts = [
        ("sum", "What is 2+2?", "4", "exact"),
        ("capital", "Capital of France?", "Paris", "contains"),
        ("magic", "Say the magic words", "please", "contains"),
        ("colour", "Which colour is the sky?", "blue", "contains"),
    ];
    s.write("bench.yaml", &bench_yaml(&MODELS, &prompts));
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results"),
        8,
        "{}",
        text(&out.stderr)
    );
}

/// A `track view` process, killed when dropped.
struct Viewer {
    child: Child,
    /// `http://127.0.0.1:PORT` (no trailing slash).
    base: String,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `track view --port 0 ARGS` and reads the address it prints.
fn start_viewer(s: &Sandbox, args: &[&str]) -> Viewer {
    let mut cmd = s.track_process();
    cmd.args(["view", "--port", "0"]).args(args);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn track view");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("track view: ")
        .unwrap_or_else(|| panic!("no address printed: {line:?}"))
        .to_owned();
    let base = url
        .split_once("/?")
        .map_or(url.trim_end_matches('/'), |(b, _)| b)
        .to_owned();
    Viewer { child, base }
}

/// A page: its status, its CSP header, its body.
struct Page {
    status: u16,
    csp: Option<String>,
    body: String,
}

/// GETs `url` with `headers`.
fn get(url: &str, headers: &[(&str, &str)]) -> Page {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder().build().unwrap();
        let mut request = client.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("fetch a page");
        let status = response.status().as_u16();
        let csp = response
            .headers()
            .get("content-security-policy")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.text().await.unwrap();
        Page { status, csp, body }
    })
}

/// The number in the element `id="…"` of a page.
fn number_in(body: &str, id: &str) -> u64 {
    let start = body
        .find(&format!("id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no #{id} in the page"))
        + id.len()
        + 6;
    body[start..]
        .split('<')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `track query --by model --format csv`: its rows as maps of column to value.
fn query_by_model(s: &Sandbox) -> Vec<std::collections::HashMap<String, String>> {
    let out = s
        .track()
        .args(["query", "--by", "model", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect()
}

#[test]
fn every_page_is_served_with_the_policy_and_hostile_answers_escaped() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let hostile: i64 = s.count(
        "SELECT r.id FROM bench_results r WHERE r.prompt_name = 'magic' ORDER BY r.id LIMIT 1",
    );
    let pages = [
        "/".to_owned(),
        format!("/runs/{run}"),
        format!("/runs/{run}?filter=failures&sort=latency"),
        format!("/runs/{run}?q=zebra"),
        format!("/runs/{run}/results/{hostile}"),
        format!("/runs/{run}/cases/2"),
    ];
    for path in &pages {
        let page = get(&format!("{}{path}", viewer.base), &[]);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let csp = page.csp.unwrap_or_else(|| panic!("{path} has no CSP"));
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        // No markup of an answer got through: every `<` of it is escaped.
        assert!(!page.body.contains("<script>alert"), "{path}");
        assert!(!page.body.contains("<img"), "{path}");
        assert!(!page.body.contains("href=\"javascript:"), "{path}");
        // The only script is the viewer's own file.
        assert_eq!(page.body.matches("<script").count(), 1, "{path}");
        assert!(
            page.body.contains("<script src=\"/assets/view.js\""),
            "{path}"
        );
    }
    // The hostile answer is there, as text.
    let transcript = get(
        &format!("{}/runs/{run}/results/{hostile}", viewer.base),
        &[],
    );
    assert!(
        transcript
            .body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"),
        "{}",
        transcript.body
    );
    assert!(
        transcript.body.contains("Say the magic words"),
        "the request"
    );
    // The icon browsers ask for unbidden is there (a 404 would be an error in the console).
    let icon = get(&format!("{}/favicon.ico", viewer.base), &[]);
    assert_eq!(icon.status, 200);
    assert!(icon.body.starts_with("<svg"), "{}", icon.body);
    // A missing page is a 404 that carries the policy too.
    let missing = get(&format!("{}/runs/{run}/results/999999", viewer.base), &[]);
    assert_eq!(missing.status, 404);
    assert!(missing.csp.is_some());
    // Another Host (DNS rebinding) is refused.
    let rebound = get(
        &format!("{}/", viewer.base),
        &[("host", "attacker.example:80")],
    );
    assert_eq!(rebound.status, 421);
}

/// Issue 45: the run page gave no pass rate, and `/runs/ID/cases/q02` answered 400 (cases were
/// addressed by their index, the guide says by their id). Now each model's pass rate is there,
/// as `track query` counts it, and a case is reached by its id, its index still working.
#[test]
fn a_run_page_gives_each_models_pass_rate_and_cases_are_reached_by_their_id() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let page = get(&format!("{}/runs/{run}", viewer.base), &[]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Pass rate"), "{}", page.body);
    for model in query_by_model(&s) {
        let (passed, failed): (u64, u64) = (
            model["passed"].parse().unwrap(),
            model["failed"].parse().unwrap(),
        );
        let rate = format!(
            "{:.1} % ({passed} of {})",
            passed as f64 * 100.0 / (passed + failed) as f64,
            passed + failed
        );
        assert!(page.body.contains(&rate), "{rate} of {}", model["model"]);
    }
    // The grid links each case by its id.
    assert!(
        page.body
            .contains(&format!("href=\"/runs/{run}/cases/capital\"")),
        "{}",
        page.body
    );
    let by_id = get(&format!("{}/runs/{run}/cases/capital", viewer.base), &[]);
    assert_eq!(by_id.status, 200, "{}", by_id.body);
    assert!(
        by_id.body.contains("Paris, like a zebra."),
        "{}",
        by_id.body
    );
    let by_index = get(&format!("{}/runs/{run}/cases/1", viewer.base), &[]);
    assert_eq!(by_index.status, 200);
    assert!(by_index.body.contains("Paris, like a zebra."));
    let missing = get(&format!("{}/runs/{run}/cases/q02", viewer.base), &[]);
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert!(
        missing.body.contains("has no case `q02`"),
        "{}",
        missing.body
    );
}

#[test]
fn pages_name_the_database_by_its_file_and_list_models_and_times_as_people_read_them() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let runs = get(&format!("{}/", viewer.base), &[]);
    let grid = get(&format!("{}/runs/{run}", viewer.base), &[]);
    for page in [&runs.body, &grid.body] {
        // The header shows the database's file name, not its whole (temporary) path.
        let header = page.split("class=\"db\"").nth(1).expect("a header");
        let shown = header.split('>').nth(1).unwrap().split('<').next().unwrap();
        assert_eq!(shown, "track.db", "{page}");
        assert!(
            page.contains("openai:gpt-4o, anthropic:sonnet 3.5"),
            "{page}"
        );
        // Started: to the second, in UTC.
        let started = page.split("<time datetime=\"").nth(1).expect("a time");
        let shown = started
            .split('>')
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap();
        assert!(
            shown.len() == 23 && shown.ends_with(" UTC") && shown.as_bytes()[10] == b' ',
            "{shown}"
        );
    }
    assert!(runs.body.contains(">1 run<"), "{}", runs.body);
}

#[test]
fn grid_counts_are_those_of_track_query_and_search_finds_the_answers() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let rows = query_by_model(&s);
    let sum = |column: &str| -> u64 {
        rows.iter()
            .map(|r| {
                r.get(column)
                    .unwrap_or_else(|| panic!("no column {column} in {r:?}"))
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    let failures = get(&format!("{}/runs/{run}?filter=failures", viewer.base), &[]);
    assert_eq!(number_in(&failures.body, "result-count"), sum("failed"));
    let passes = get(&format!("{}/runs/{run}?filter=passes", viewer.base), &[]);
    assert_eq!(number_in(&passes.body, "result-count"), sum("passed"));
    let all = get(&format!("{}/runs/{run}", viewer.base), &[]);
    assert_eq!(number_in(&all.body, "result-count"), 8);
    assert_eq!(number_in(&all.body, "case-count"), 4);
    // `zebra` is in three answers: the hostile one of each model and gpt-4o's capital.
    let zebra = get(&format!("{}/runs/{run}?q=zebra", viewer.base), &[]);
    assert_eq!(number_in(&zebra.body, "result-count"), 3);
    assert_eq!(number_in(&zebra.body, "case-count"), 2);
    // A word of the prompts is found too, in every result of its case.
    let sky = get(&format!("{}/runs/{run}?q=sky", viewer.base), &[]);
    assert_eq!(number_in(&sky.body, "result-count"), 2);
    // The sum is the case the models disagree on.
    let disagree = get(&format!("{}/runs/{run}?filter=disagree", viewer.base), &[]);
    assert_eq!(number_in(&disagree.body, "case-count"), 1);
    assert!(disagree.body.contains(">sum<"), "{}", disagree.body);
}

#[test]
fn off_loopback_the_token_is_required_on_every_request() {
    let s = Sandbox::new();
    add_bench(&s);
    // No token: refused before it listens.
    let out = s
        .track()
        .args(["view", "--host", "0.0.0.0", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--token"),
        "{}",
        text(&out.stderr)
    );
    let token = "s3cret-token-for-tests";
    let viewer = start_viewer(&s, &["--host", "0.0.0.0", "--token", token]);
    let port = viewer.base.rsplit(':').next().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let run: i64 = s.count("SELECT max(id) FROM runs");
    for path in [
        "/".to_owned(),
        format!("/runs/{run}"),
        "/assets/view.js".into(),
    ] {
        let refused = get(&format!("{base}{path}"), &[]);
        assert_eq!(refused.status, 401, "{path}");
        assert!(refused.csp.is_some());
        let wrong = get(&format!("{base}{path}?token=nope-nope-nope"), &[]);
        assert_eq!(wrong.status, 401, "{path}");
        let bearer = get(
            &format!("{base}{path}"),
            &[("authorization", &format!("Bearer {token}"))],
        );
        assert_eq!(bearer.status, 200, "{path}");
        let query = get(&format!("{base}{path}?token={token}"), &[]);
        assert_eq!(query.status, 200, "{path}");
    }
}

/// The page of the latest run of `s` (served by a new viewer), checked for the policy; its
/// body.
fn latest_run_page(s: &Sandbox) -> (Viewer, i64, String) {
    let viewer = start_viewer(s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let page = get(&format!("{}/runs/{run}", viewer.base), &[]);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.csp.is_some());
    assert_eq!(page.body.matches("<script").count(), 1);
    (viewer, run, page.body)
}

#[test]
fn reviews_relevance_and_pairwise_runs_have_their_pages() {
    // Reviews: criterion x reviewer, with justifications; a review's datasheets side by side.
    let s = Sandbox::new();
    crate::review::add_review_files(&s);
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o-mini,anthropic:haiku 3.5",
            "-q",
        ])
        .assert()
        .success();
    let (viewer, run, body) = latest_run_page(&s);
    assert!(body.contains("datasheets reviewed"), "{body}");
    assert!(body.contains("anthropic:haiku 3.5"), "{body}");
    let review: i64 = s.count("SELECT min(id) FROM reviews WHERE official_sha256 IS NOT NULL");
    let sheets = get(&format!("{}/runs/{run}/reviews/{review}", viewer.base), &[]);
    assert_eq!(sheets.status, 200);
    assert!(sheets.body.contains("Official (Found)"), "{}", sheets.body);
    drop(viewer);

    // Relevance: confusion counts, each image served as an image, WITH and WITHOUT.
    let s = Sandbox::new();
    crate::relevance::add_compare_files(&s);
    s.track()
        .args([
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_*.png",
            "--ground-truth",
            "truth.json",
            "--out",
            "out",
            "-q",
        ])
        .assert()
        .success();
    let (viewer, _, body) = latest_run_page(&s);
    assert!(
        body.contains("Confusion counts") && body.contains("WITHOUT"),
        "{body}"
    );
    let sha: String = s
        .db()
        .query_row(
            "SELECT image_sha256 FROM relevance_predictions LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(body.contains(&format!("/blobs/{sha}")));
    let image = get(&format!("{}/blobs/{sha}", viewer.base), &[]);
    assert_eq!(image.status, 200);
    // A blob that is no image (a request, an answer) is never served.
    let request: String = s
        .db()
        .query_row("SELECT cache_key FROM calls LIMIT 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        get(&format!("{}/blobs/{request}", viewer.base), &[]).status,
        404
    );
    drop(viewer);

    // Pairwise: the win matrix, both orders of each verdict, the candidates' answers.
    let s = crate::pairwise::answers_sandbox();
    s.track()
        .args(["run", "pairwise.yaml", "-q"])
        .assert()
        .success();
    let (_viewer, _, body) = latest_run_page(&s);
    assert!(body.contains("Win matrix"), "{body}");
    assert!(body.contains("Shown B first (ba)"));
    assert!(
        body.contains("ANS-GOOD") && body.contains("ANS-BAD"),
        "{body}"
    );
}

/// A second run of `add_bench`'s benchmark: every sum answered wrong, the colour now an
/// error. The ids of the first run and of this one.
fn add_second_run(s: &Sandbox) -> (i64, i64) {
    s.mock.clear_rules();
    s.mock.add_rule(Rule::reply("2+2", "five"));
    s.mock.add_rule(Rule::fail("colour", 400, 100));
    s.mock.add_rule(Rule::reply("", "Paris, like a zebra."));
    s.track()
        .args(["run", "bench.yaml", "-q", "--no-cache"])
        .output()
        .unwrap();
    (
        s.count("SELECT min(id) FROM runs"),
        s.count("SELECT max(id) FROM runs"),
    )
}

#[test]
fn two_runs_compare_as_track_diff_compares_them() {
    let s = Sandbox::new();
    add_bench(&s);
    let (base, new) = add_second_run(&s);
    let out = s
        .track()
        .args([
            "diff",
            &base.to_string(),
            &new.to_string(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let summary: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    let rows = summary.as_array().unwrap();
    let total = |column: &str| -> u64 {
        rows.iter()
            .map(|r| {
                r[column]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{column}: {r}"))
            })
            .sum()
    };
    let viewer = start_viewer(&s, &[]);
    let page = get(&format!("{}/diff?base={base}&new={new}", viewer.base), &[]);
    assert_eq!(page.status, 200, "{}", page.body);
    let changed = number_in(&page.body, "changed-count");
    assert_eq!(
        changed,
        total("regressions") + total("fixes") + total("new_errors"),
        "{summary}"
    );
    assert!(
        total("regressions") > 0 && total("new_errors") > 0,
        "{summary}"
    );
    // Regressions come first.
    let first_change = page.body.find(">regression<").unwrap();
    assert!(
        page.body
            .find(">new error<")
            .is_none_or(|i| i > first_change)
    );
}

/// The server-sent events of `url` until `done` (or the stream's end): each event's name and
/// data. `on_first` runs once the first event has come.
fn events(url: &str, on_first: impl FnOnce()) -> Vec<(String, String)> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // A bound: a stream that never ends fails the test instead of hanging it.
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .unwrap();
        let mut response = client.get(url).send().await.expect("open the event stream");
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        let mut buffer = String::new();
        let mut found: Vec<(String, String)> = Vec::new();
        let mut on_first = Some(on_first);
        while let Some(chunk) = response.chunk().await.expect("the stream ended in time") {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("{name}:")))
                        .map(|v| v.trim().to_owned())
                };
                if let Some(event) = field("event") {
                    found.push((event, field("data").unwrap_or_default()));
                    if let Some(first) = on_first.take() {
                        first();
                    }
                }
            }
            if found.last().is_some_and(|(e, _)| e == "done") {
                break;
            }
        }
        found
    })
}

/// A benchmark run started in `s` and held by the mock at its first call (the mock answers
/// `4`); returns it and its run id.
fn held_run(s: &Sandbox) -> (crate::support::Running, i64) {
    use crate::support::mock::Hold;
    s.mock.add_rule(Rule::reply("", "4"));
    s.write(
        "bench.yaml",
        &bench_yaml(&MODELS, &[("sum", "What is 2+2?", "4", "exact")]),
    );
    s.mock.hold(Hold::From(1));
    let run = s.start(&["run", "bench.yaml", "-q"]);
    s.mock.wait_held(1);
    (run, s.count("SELECT max(id) FROM runs"))
}

#[test]
fn a_running_run_s_progress_is_followed_live_to_its_end() {
    let s = Sandbox::new();
    let (run, id) = held_run(&s);
    let viewer = start_viewer(&s, &[]);
    // The run's page says it is going, and will reload when it ends.
    let page = get(&format!("{}/runs/{id}", viewer.base), &[]);
    assert!(
        page.body.contains("data-reload-when-done=\"true\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("data-live=\"true\""));
    assert!(page.body.contains("No result stored yet"), "{}", page.body);
    let seen = events(&format!("{}/events?ids={id}", viewer.base), || {
        s.mock.release()
    });
    let (_, first) = &seen[0];
    let first: serde_json::Value = serde_json::from_str(first).unwrap();
    assert_eq!(first[0]["status"], "running", "{seen:?}");
    assert_eq!(seen.last().unwrap().0, "done", "{seen:?}");
    // With data: a browser dispatches no event whose data is empty.
    assert!(!seen.last().unwrap().1.is_empty(), "{seen:?}");
    let last = seen.iter().rev().find(|(e, _)| e == "progress").unwrap();
    let last: serde_json::Value = serde_json::from_str(&last.1).unwrap();
    assert_eq!(last[0]["status"], "completed", "{seen:?}");
    assert_eq!(last[0]["calls"], 2);
    assert_eq!(last[0]["results"], 2);
    run.finish();
}

#[test]
fn stopped_while_a_page_follows_a_live_run_the_viewer_ends_at_once() {
    let s = Sandbox::new();
    let (_run, id) = held_run(&s);
    let mut viewer = start_viewer(&s, &[]);
    let pid = viewer.child.id().to_string();
    // The stream is open (its first event came) when the viewer is told to stop.
    let seen = events(&format!("{}/events?ids={id}", viewer.base), || {
        let stopped = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(stopped.success());
    });
    assert_eq!(seen.last().unwrap().0, "done", "{seen:?}");
    crate::support::wait_for("the viewer to end", || {
        viewer.child.try_wait().unwrap().is_some()
    });
    assert!(viewer.child.wait().unwrap().success());
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM runs WHERE id = {id} AND status = 'running'"
        )),
        1
    );
    s.mock.release();
}

/// POSTs the form `fields` to `url` with `headers`; the status.
fn post(url: &str, fields: &[(&str, &str)], headers: &[(&str, &str)]) -> u16 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let body = serde_urlencoded::to_string(fields).unwrap();
        let mut request = client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("post").status().as_u16()
    })
}

/// The value of the `<meta name="csrf-token">` of a page.
fn csrf_of(body: &str) -> String {
    let start = body
        .find("name=\"csrf-token\" content=\"")
        .expect("a CSRF token")
        + 27;
    body[start..].split('"').next().unwrap().to_owned()
}

#[test]
fn ratings_need_the_page_s_csrf_token_and_are_kept_and_exported() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &["--rater", "ada"]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let (id, uid): (i64, String) = s
        .db()
        .query_row(
            "SELECT id, uid FROM bench_results WHERE prompt_name = 'magic' ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let url = format!("{}/runs/{run}/ratings", viewer.base);
    // Without the token, or with another, nothing is stored.
    assert_eq!(
        post(&url, &[("result", &uid), ("verdict", "pass")], &[]),
        403
    );
    assert_eq!(
        post(
            &url,
            &[
                ("result", &uid),
                ("verdict", "pass"),
                ("csrf", "0123456789abcdef0123456789abcdef")
            ],
            &[]
        ),
        403
    );
    assert_eq!(s.count("SELECT count(*) FROM ratings"), 0);
    let page = get(&format!("{}/runs/{run}", viewer.base), &[]);
    assert!(page.body.contains("data-ratings=\"true\""));
    let csrf = csrf_of(&page.body);
    // From another site's page (its Origin), even with the token: refused.
    assert_eq!(
        post(
            &url,
            &[("result", &uid), ("verdict", "pass"), ("csrf", &csrf)],
            &[("origin", "http://evil.example")]
        ),
        403
    );
    // The form of the transcript: a redirect back to it.
    let back = format!("/runs/{run}/results/{id}");
    assert_eq!(
        post(
            &url,
            &[
                ("result", &uid),
                ("verdict", "pass"),
                ("score", "4"),
                ("comment", "<b>fine</b>"),
                ("csrf", &csrf),
                ("back", &back)
            ],
            &[]
        ),
        303
    );
    // The keys' script: the token in a header, 204.
    let (_, other_uid): (i64, String) = s
        .db()
        .query_row(
            "SELECT id, uid FROM bench_results WHERE prompt_name = 'sum' ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        post(
            &url,
            &[("result", &other_uid), ("verdict", "fail")],
            &[("x-csrf-token", &csrf)]
        ),
        204
    );
    // A bad score is refused, naming it.
    assert_eq!(
        post(
            &url,
            &[("result", &uid), ("score", "9"), ("csrf", &csrf)],
            &[]
        ),
        400
    );
    assert_eq!(s.count("SELECT count(*) FROM ratings"), 2);
    // Reloaded: the transcript shows it (the comment as text), the grid marks both.
    let transcript = get(&format!("{}{back}", viewer.base), &[]);
    assert!(transcript.body.contains("by ada"), "{}", transcript.body);
    assert!(transcript.body.contains("&lt;b&gt;fine&lt;/b&gt;"));
    let grid = get(&format!("{}/runs/{run}", viewer.base), &[]);
    assert_eq!(
        grid.body.matches("class=\"rated\"").count(),
        2,
        "{}",
        grid.body
    );
    // And the export carries it.
    s.track()
        .args(["export", "csv", "--out", "out", "-q"])
        .assert()
        .success();
    let csv = std::fs::read_to_string(s.path("out/bench_results.csv")).unwrap();
    assert!(csv.contains("ada"), "{csv}");
}

/// Issue 45: `p` then `3` then a comment used to erase the pass. Each key sends its field and
/// keeps the others, as `track rate` does; the transcript's form is filled with the rater's
/// rating, so sending it back unchanged but for the comment keeps them too; `x` unmarks.
#[test]
fn a_rating_in_three_steps_in_the_viewer_keeps_each_field() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &["--rater", "ada"]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let (id, uid): (i64, String) = s
        .db()
        .query_row(
            "SELECT id, uid FROM bench_results WHERE prompt_name = 'magic' ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let url = format!("{}/runs/{run}/ratings", viewer.base);
    let csrf = csrf_of(&get(&format!("{}/runs/{run}", viewer.base), &[]).body);
    let key = |field: &str, value: &str| {
        assert_eq!(
            post(
                &url,
                &[("result", &uid), (field, value)],
                &[("x-csrf-token", &csrf)]
            ),
            204,
            "{field}={value}"
        );
    };
    let current = || -> (Option<String>, Option<i64>, Option<String>) {
        s.db()
            .query_row(
                "SELECT verdict, score, comment FROM ratings ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
    };
    key("verdict", "pass");
    key("score", "3");
    key("comment", "fine after all");
    assert_eq!(
        current(),
        (Some("pass".into()), Some(3), Some("fine after all".into()))
    );
    // The form holds ada's rating; sent back with a new comment, the rest is kept.
    let back = format!("/runs/{run}/results/{id}");
    let page = get(&format!("{}{back}", viewer.base), &[]);
    assert!(
        page.body.contains("value=\"pass\" checked")
            && page.body.contains("value=\"3\" selected")
            && page.body.contains(">fine after all</textarea>"),
        "{}",
        page.body
    );
    let form = |fields: &[(&str, &str)]| {
        let mut all = vec![
            ("result", uid.as_str()),
            ("csrf", csrf.as_str()),
            ("back", back.as_str()),
            ("clear", "all"),
        ];
        all.extend_from_slice(fields);
        assert_eq!(post(&url, &all, &[]), 303, "{fields:?}");
    };
    form(&[
        ("verdict", "pass"),
        ("score", "3"),
        ("comment", "fine, on reflection"),
    ]);
    assert_eq!(
        current(),
        (
            Some("pass".into()),
            Some(3),
            Some("fine, on reflection".into())
        )
    );
    // What the form leaves empty is cleared; `x` and `0` clear one field each.
    form(&[("verdict", "fail"), ("score", ""), ("comment", "")]);
    assert_eq!(current(), (Some("fail".into()), None, None));
    key("score", "2");
    key("clear", "verdict");
    assert_eq!(current(), (None, Some(2), None));
    // An unknown field is refused, naming it.
    assert_eq!(
        post(
            &url,
            &[("result", &uid), ("clear", "mood")],
            &[("x-csrf-token", &csrf)]
        ),
        400
    );
    // The command line agrees: a comment alone keeps the score ada gave in the viewer.
    s.track()
        .args([
            "rate",
            &run.to_string(),
            &uid,
            "--rater",
            "ada",
            "--comment",
            "ok",
        ])
        .assert()
        .success();
    assert_eq!(current(), (None, Some(2), Some("ok".into())));
}

/// Issue 45: a script check that crashed and a tool loop stopped at `max_steps` are error rows
/// that `--fail-on-errors` counted (exit 3) while the tally line, `track runs`, `runs --errors`
/// and the viewer's header said 0. They all count the same 2 rows now, and `runs --errors`
/// shows each answer's start and the reason.
#[test]
fn every_count_of_errors_counts_the_same_error_rows() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::new(
        "Loop forever",
        Action::ToolCalls(vec![(
            "weather".into(),
            serde_json::json!({"city": "Oslo"}),
        )]),
    ));
    s.mock.add_rule(Rule::reply("Say hi", "hi there, friend"));
    s.mock.add_rule(Rule::reply("Say ok", "ok"));
    s.write(
        "crash.py",
        "import sys\nsys.stdin.read()\nsys.stderr.write('grader broke\\n')\nsys.exit(3)\n",
    );
    s.write(
        "bench.yaml",
        r#"models: [openai:gpt-4o]
max_steps: 2
tools:
  - {name: weather, parameters: {type: object, properties: {city: {type: string}}}, result: rain}
prompts:
  - forever:
    prompt: "Loop forever"
    checks: [{method: tool-called, value: weather}]
  - crash:
    prompt: "Say hi"
    checks: [{method: script, run: python3 crash.py}]
  - fine:
    prompt: "Say ok"
    checks: [{method: contains, value: ok}]
"#,
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "--fail-on-errors"])
        .output()
        .unwrap();
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'error'"),
        2,
        "{said}"
    );
    // The run's tally line.
    assert!(said.contains("0 cache hits, 2 errors"), "{said}");
    // `track runs`.
    let runs = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    s.write("runs.csv", &text(&runs.stdout));
    let rows = crate::answers::csv_rows(&s.path("runs.csv"));
    assert_eq!(rows[0]["errors"], "2", "{rows:?}");
    // `track runs --errors 1`: both rows, each with its answer's start and why.
    let errors = s
        .track()
        .args(["runs", "--errors", "1", "--format", "csv"])
        .output()
        .unwrap();
    assert!(errors.status.success(), "{}", text(&errors.stderr));
    s.write("errors.csv", &text(&errors.stdout));
    let rows = crate::answers::csv_rows(&s.path("errors.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    let crash = rows.iter().find(|r| r["item"].contains("crash")).unwrap();
    assert_eq!(crash["answer"], "hi there, friend", "{crash:?}");
    assert!(crash["error"].contains("grader broke"), "{crash:?}");
    let forever = rows.iter().find(|r| r["item"].contains("forever")).unwrap();
    assert!(
        forever["error"].contains("max_steps (2) reached"),
        "{forever:?}"
    );
    let table = s
        .track()
        .env("COLUMNS", "200")
        .args(["runs", "--errors", "1"])
        .output()
        .unwrap();
    let table = text(&table.stdout);
    assert!(
        table.contains("hi there, friend") && !table.contains("recorded no errors"),
        "{table}"
    );
    // The viewer's header of the run.
    let viewer = start_viewer(&s, &[]);
    let page = get(&format!("{}/runs/1", viewer.base), &[]);
    assert!(
        page.body.contains("<dt>Errors</dt><dd>2</dd>"),
        "{}",
        page.body
    );
    // A re-run from the cache counts them again, as its rows are graded again.
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let said = text(&out.stderr);
    assert!(said.contains("2 errors"), "{said}");
}

/// Issue 45: a search for a NUL (`?q=%00`) answered 500. Odd input to the search is words,
/// never an error: a normal page, with what matches (here nothing, or what the other words
/// find).
#[test]
fn a_search_for_odd_bytes_is_a_normal_page() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    for q in [
        "%00", "zeb%00ra", "%01%7F", "%00%22", "%FF", "%22", "*", "NEAR(", "a%00%00b",
    ] {
        let page = get(&format!("{}/runs/{run}?q={q}", viewer.base), &[]);
        assert_eq!(page.status, 200, "q={q}: {}", page.body);
    }
    // A NUL between words splits them: `zebra%00` still finds the zebra's answers.
    let page = get(&format!("{}/runs/{run}?q=zebra%00", viewer.base), &[]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("zebra"), "{}", page.body);
}

#[test]
fn a_run_with_a_model_without_a_price_shows_its_cost_as_unknown() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o", "openai:gpt-9.9-preview"],
            &[("sum", "What is 2+2?", "4", "exact")],
        ),
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let viewer = start_viewer(&s, &[]);
    // The runs list and the run's heading: "–", not the part its tally knows.
    let list = get(&format!("{}/", viewer.base), &[]);
    assert_eq!(list.status, 200);
    assert!(
        list.body.contains("<td class=\"num\">–</td>"),
        "{}",
        list.body
    );
    let run = get(&format!("{}/runs/1", viewer.base), &[]);
    assert!(
        run.body.contains("<dt>Cost</dt><dd>– (paid –)</dd>"),
        "{}",
        run.body
    );
}

#[test]
fn a_conversation_s_result_page_shows_every_turn_and_answer() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ncases:\n  - id: trip\n    turns: [\"Plan a trip to Rome\", \
         \"How many days?\", \"Summarize it\"]\nchecks:\n  - {method: contains, value: mock}\n",
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let result: i64 = s.count("SELECT id FROM bench_results");
    let page = get(&format!("{}/runs/{run}/results/{result}", viewer.base), &[]);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Conversation as sent (3 turns"),
        "{}",
        page.body
    );
    let mut at = 0;
    // Each turn's user message, then the model's answer to it, in order.
    for text in [
        "Plan a trip to Rome",
        "mock reply to: Plan a trip to Rome",
        "How many days?",
        "mock reply to: How many days?",
        "Summarize it",
        "mock reply to: Summarize it",
    ] {
        let found = page.body[at..]
            .find(text)
            .unwrap_or_else(|| panic!("`{text}` not after byte {at}: {}", page.body));
        at += found + text.len();
    }
}

#[test]
fn a_transcript_shows_the_tool_calls_of_its_loop_in_step_order_escaped() {
    let s = Sandbox::new();
    add_bench(&s);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let (result, with_tools): (i64, i64) = (
        s.count("SELECT id FROM bench_results WHERE prompt_name = 'capital' ORDER BY id LIMIT 1"),
        s.count("SELECT id FROM bench_results WHERE prompt_name = 'sum' ORDER BY id LIMIT 1"),
    );
    // Two steps of a loop of the `sum` result, written as the run writes them (the second
    // left unanswered at max_steps), the first with a hostile result.
    rusqlite::Connection::open(s.db_path())
        .unwrap()
        .execute_batch(&format!(
            "INSERT INTO tool_calls (run_id, model_index, template_index, prompt_index,
                 repeat_index, step, call_index, call_id, name, arguments, result)
             SELECT run_id, model_index, template_index, prompt_index, repeat_index, 2, 0,
                 'c2', 'add', '{{\"a\":2,\"b\":2}}', NULL
             FROM bench_results WHERE id = {with_tools};
             INSERT INTO tool_calls (run_id, model_index, template_index, prompt_index,
                 repeat_index, step, call_index, call_id, name, arguments, result)
             SELECT run_id, model_index, template_index, prompt_index, repeat_index, 1, 0,
                 'c1', 'lookup', '{{\"q\":\"sum\"}}', '<script>alert(9)</script>'
             FROM bench_results WHERE id = {with_tools};"
        ))
        .unwrap();
    let viewer = start_viewer(&s, &[]);
    let page = get(
        &format!("{}/runs/{run}/results/{with_tools}", viewer.base),
        &[],
    );
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Tool calls (2)"), "{}", page.body);
    let (first, second) = (
        page.body.find("lookup").expect("the first step's tool"),
        page.body.find(">add<").expect("the second step's tool"),
    );
    assert!(first < second, "in step order");
    assert!(
        page.body.contains("{&quot;q&quot;:&quot;sum&quot;}"),
        "the arguments"
    );
    assert!(
        !page.body.contains("<script>alert(9)"),
        "the result is escaped"
    );
    assert!(page.body.contains("&lt;script&gt;alert(9)"), "and shown");
    assert!(
        page.body.contains("stopped at max_steps"),
        "the unanswered call"
    );
    // A result without tools has no such section.
    let plain = get(&format!("{}/runs/{run}/results/{result}", viewer.base), &[]);
    assert_eq!(plain.status, 200);
    assert!(!plain.body.contains("Tool calls"), "{}", plain.body);
}

#[test]
fn a_run_that_a_later_run_resumed_links_to_it_in_the_runs_list() {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.write(
        "bench.yaml",
        &bench_yaml(&["openai:gpt-4o"], &[("sum", "What is 2+2?", "4", "exact")]),
    );
    // Without its key nothing can run: run 1 ends `failed`, and run 2 does its work.
    let run = |key: bool| {
        let mut cmd = s.track();
        cmd.args(["run", "bench.yaml", "-q"]);
        if !key {
            cmd.env_remove("OPENAI_API_KEY");
        }
        cmd.output().unwrap()
    };
    let out = run(false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = run(true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&s.track().args(["runs"]).output().unwrap().stdout);
    assert!(table.contains("failed, resumed by 2"), "{table}");
    let viewer = start_viewer(&s, &[]);
    let list = get(&format!("{}/", viewer.base), &[]);
    assert_eq!(list.status, 200);
    assert!(
        list.body
            .contains(" · resumed by <a href=\"/runs/2\">run 2</a>"),
        "{}",
        list.body
    );
    assert_eq!(list.body.matches("resumed by").count(), 1, "{}", list.body);
}
