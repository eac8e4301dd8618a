//! `track view` in a real browser: headless Chromium driven over the WebDriver protocol by
//! Debian's `chromium-driver` (`bash .ci/browser.sh install`), spoken here directly with
//! reqwest. Each item of issue 30's "Tests in a real browser" is asserted here: a run opened,
//! filtered to its failures (the count `track query`'s), searched, a transcript opened;
//! results rated with the keys, kept across a reload and exported; a live run followed to its
//! end; a hostile answer that runs nothing, the page's console read; the token off loopback.
//!
//! With `TRACK_VIEW_SCREENSHOTS=DIR` every view these tests open is saved as `DIR/NAME.png`,
//! 1280 × 800: the book's pictures (docs/src/images/viewer).
//!
//! The tests are `#[ignore]`d (they need chromium): the README's test command runs them with
//! `--include-ignored`.

use std::collections::HashMap;
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use super::{add_bench, add_second_run, held_run, query_by_model, start_viewer};
use crate::support::Sandbox;

/// WebDriver's key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// WebDriver's Enter key.
const ENTER: &str = "\u{e007}";

/// The size of the viewport, and of the screenshots.
const WIDTH: u32 = 1280;
const HEIGHT: u32 = 800;

/// A browser session of headless Chromium over WebDriver: new session, go to, click, type,
/// keys, script, alert, console, screenshot. Ended, with its driver, when dropped.
struct Browser {
    driver: Child,
    base: String,
    session: String,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Browser {
    /// Starts chromedriver on a free port and a session of headless Chromium whose console
    /// is kept (`goog:loggingPrefs`), whose alerts stay open for [`Browser::alert_open`] to
    /// see, and whose viewport is 1280 × 800.
    fn start() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is not installed: bash .ci/browser.sh install");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Self {
            driver,
            base,
            session: String::new(),
            runtime,
            client,
        };
        crate::support::wait_for("chromedriver to listen", || {
            browser
                .runtime
                .block_on(
                    browser
                        .client
                        .get(format!("{}/status", browser.base))
                        .send(),
                )
                .is_ok()
        });
        let created = browser.call(
            reqwest::Method::POST,
            "/session",
            json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "unhandledPromptBehavior": "ignore",
                "goog:loggingPrefs": {"browser": "ALL"},
                "goog:chromeOptions": {"args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--hide-scrollbars", format!("--window-size={WIDTH},{HEIGHT}")
                ]}
            }}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        // The window's size includes its frame: the page's own area is set exactly.
        let sized = browser.command(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": false
            }}),
        );
        assert!(sized.get("error").is_none(), "{sized}");
        browser
    }

    /// A WebDriver command; its `value` (an error is returned as the value too).
    fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        self.runtime.block_on(async {
            let mut request = self.client.request(method, format!("{}{path}", self.base));
            if !body.is_null() {
                request = request.json(&body);
            }
            let response = request.send().await.expect("a WebDriver command");
            let value: Value = response.json().await.unwrap();
            value["value"].clone()
        })
    }

    /// A command of this session.
    fn command(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Goes to `url` and waits for it to load.
    fn go(&self, url: &str) {
        let value = self.command(reqwest::Method::POST, "/url", json!({"url": url}));
        assert!(value.is_null(), "navigating to {url}: {value}");
    }

    /// Runs `script` (a function body) in the page; its result.
    fn script(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// The number `script` returns.
    fn number(&self, script: &str) -> u64 {
        let value = self.script(script);
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .unwrap_or_else(|| panic!("{script}: {value}"))
    }

    /// The element `css` finds, as WebDriver names it.
    fn find(&self, css: &str) -> String {
        let found = self.command(
            reqwest::Method::POST,
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    /// Clicks the element `css` finds, as a user's pointer would.
    fn click(&self, css: &str) {
        let element = self.find(css);
        let value = self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            json!({}),
        );
        assert!(value.is_null(), "clicking {css}: {value}");
    }

    /// Types `text` into the element `css` finds.
    fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        let value = self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            json!({"text": text}),
        );
        assert!(value.is_null(), "typing into {css}: {value}");
    }

    /// Types `keys`, one key at a time, into the page.
    fn keys(&self, keys: &str) {
        let mut actions = Vec::new();
        for key in keys.chars() {
            actions.push(json!({"type": "keyDown", "value": key.to_string()}));
            actions.push(json!({"type": "keyUp", "value": key.to_string()}));
        }
        let value = self.command(
            reqwest::Method::POST,
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        );
        assert!(value.is_null(), "typing {keys}: {value}");
    }

    /// Waits until the page's address holds `part` and it is loaded.
    fn wait_for_address(&self, part: &str) {
        crate::support::wait_for(&format!("a page at …{part}…"), || {
            self.script("return location.pathname + location.search")
                .as_str()
                .is_some_and(|a| a.contains(part))
                && self.script("return document.readyState") == "complete"
        });
    }

    /// Whether an alert (a script the page ran) is open.
    fn alert_open(&self) -> bool {
        let value = self.command(reqwest::Method::GET, "/alert/text", Value::Null);
        match value.get("error") {
            None => true,
            Some(error) if error == "no such alert" => false,
            Some(_) => panic!("asking for an alert: {value}"),
        }
    }

    /// The page's console since the last call: each entry's level and message (a script's
    /// `console` calls, the policy's refusals, failed loads).
    fn console(&self) -> Vec<(String, String)> {
        let entries = self.command(reqwest::Method::POST, "/se/log", json!({"type": "browser"}));
        entries
            .as_array()
            .unwrap_or_else(|| panic!("no console log: {entries}"))
            .iter()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or_default().to_owned(),
                    e["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Checks that the console is read: a message the test writes is found there.
    fn check_console_is_read(&self) {
        self.script("console.error('console-probe-7f3a'); return null");
        let seen = self.console();
        assert!(
            seen.iter().any(|(level, message)| level == "SEVERE"
                && message.contains("console-probe-7f3a")),
            "the console's messages are not read: {seen:?}"
        );
    }

    /// Checks the page `what`: the viewer's script ran, nothing else did (no alert open, one
    /// script element: the viewer's file), and its console is empty: no error, no script's
    /// message, no refusal by the Content-Security-Policy (which an answer that got through
    /// as markup would cause).
    fn assert_clean(&self, what: &str) {
        assert!(!self.alert_open(), "{what}: a script opened an alert");
        let console = self.console();
        assert!(console.is_empty(), "{what}: the console has {console:?}");
        assert_eq!(
            self.script("return document.documentElement.dataset.script"),
            "ran",
            "{what}: the viewer's script did not run"
        );
        assert_eq!(
            self.script(
                "return Array.from(document.scripts).map(s => s.getAttribute('src')).join(',')"
            ),
            "/assets/view.js",
            "{what}"
        );
    }

    /// With `TRACK_VIEW_SCREENSHOTS=DIR`, saves the page as `DIR/NAME.png`, 1280 × 800.
    fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("TRACK_VIEW_SCREENSHOTS") else {
            return;
        };
        use base64::Engine as _;
        let encoded = self.command(reqwest::Method::GET, "/screenshot", Value::Null);
        let png = base64::engine::general_purpose::STANDARD
            .decode(
                encoded
                    .as_str()
                    .unwrap_or_else(|| panic!("screenshot: {encoded}")),
            )
            .unwrap();
        let size = image::load_from_memory(&png).unwrap();
        assert_eq!((size.width(), size.height()), (WIDTH, HEIGHT), "{name}");
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.command(reqwest::Method::DELETE, "", Value::Null);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// How many results of the page are shown as matched (not dimmed).
const MATCHED: &str = "return document.querySelectorAll('a.cell:not(.dim)').length";

#[test]
#[ignore = "needs chromium and chromium-driver (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn in_a_real_browser_results_are_filtered_searched_and_opened() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let browser = Browser::start();
    browser.check_console_is_read();
    // Open the run from the runs page.
    browser.go(&format!("{}/", viewer.base));
    browser.assert_clean("the runs");
    browser.screenshot("runs");
    browser.click(&format!("a[href=\"/runs/{run}\"]"));
    browser.wait_for_address(&format!("/runs/{run}"));
    browser.assert_clean("the run");
    assert_eq!(
        browser.number("return document.querySelectorAll('a.cell').length"),
        8
    );
    browser.screenshot("grid");
    // Filter to failures with its link: the count is track query's, each failure shown.
    let failed: u64 = query_by_model(&s)
        .iter()
        .map(|r| r["failed"].parse::<u64>().unwrap())
        .sum();
    assert!(failed > 0);
    browser.click("nav.filters a[href*=\"filter=failures\"]");
    browser.wait_for_address("filter=failures");
    assert_eq!(
        browser.number("return document.getElementById('result-count').textContent"),
        failed
    );
    assert_eq!(browser.number(MATCHED), failed);
    assert_eq!(
        browser.number("return document.querySelectorAll('a.cell.failed:not(.dim)').length"),
        failed
    );
    browser.assert_clean("the failures");
    browser.screenshot("failures");
    // Back to all; search a word three answers hold, typed into the page's form.
    browser.click("nav.filters a:first-child");
    browser.wait_for_address(&format!("/runs/{run}"));
    assert_eq!(browser.script("return location.search"), "");
    browser.type_into("input[name=q]", &format!("zebra{ENTER}"));
    browser.wait_for_address("q=zebra");
    assert_eq!(
        browser.number("return document.getElementById('result-count').textContent"),
        3
    );
    assert_eq!(browser.number(MATCHED), 3);
    browser.assert_clean("the search");
    browser.screenshot("search");
    // Open a transcript with the keys: j selects the first result, Enter opens it.
    browser.keys(&format!("j{ENTER}"));
    browser.wait_for_address("/results/");
    browser.assert_clean("the transcript");
    let answer = browser.script(
        "return Array.from(document.querySelectorAll('pre.answer')).map(e => e.textContent).join('\\n')",
    );
    assert!(answer.as_str().unwrap().contains("zebra"), "{answer}");
    let headings = browser.script(
        "return Array.from(document.querySelectorAll('h2')).map(e => e.textContent).join('|')",
    );
    assert!(
        headings.as_str().unwrap().contains("Request as sent"),
        "{headings}"
    );
    // A case's answers side by side, from its link in the grid.
    browser.go(&format!("{}/runs/{run}", viewer.base));
    browser.click("th.case a");
    browser.wait_for_address("/cases/");
    assert_eq!(
        browser.number("return document.querySelectorAll('pre.answer').length"),
        2
    );
    browser.assert_clean("the case side by side");
}

#[test]
#[ignore = "needs chromium and chromium-driver (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn in_a_real_browser_an_answer_built_to_run_a_script_runs_nothing() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let hostile: i64 = s.count("SELECT min(id) FROM bench_results WHERE prompt_name = 'magic'");
    let case: i64 =
        s.count("SELECT min(prompt_index) FROM bench_results WHERE prompt_name = 'magic'");
    let browser = Browser::start();
    browser.check_console_is_read();
    let pages = [
        ("grid", format!("/runs/{run}")),
        ("failures", format!("/runs/{run}?filter=failures")),
        ("search", format!("/runs/{run}?q=zebra")),
        ("transcript", format!("/runs/{run}/results/{hostile}")),
        ("side-by-side", format!("/runs/{run}/cases/{case}")),
    ];
    for (name, path) in &pages {
        browser.go(&format!("{}{path}", viewer.base));
        // No alert, no element made of the answer, no script but the viewer's, and a console
        // with no refusal of the policy in it (an answer let through as markup would cause
        // one) and no message of a script.
        browser.assert_clean(path);
        assert_eq!(
            browser
                .number("return document.querySelectorAll('img, a[href^=\"javascript:\"]').length"),
            0,
            "{path}"
        );
        if matches!(*name, "transcript" | "side-by-side") {
            // The answer is there, as text.
            let shown = browser.script(
                "return Array.from(document.querySelectorAll('pre.answer')).map(e => e.textContent).join('\\n')",
            );
            assert!(
                shown
                    .as_str()
                    .unwrap()
                    .contains("<script>alert(1)</script><img src=x onerror=alert(2)>"),
                "{path}: {shown}"
            );
            browser.screenshot(name);
        }
    }
}

#[test]
#[ignore = "needs chromium and chromium-driver (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn in_a_real_browser_three_results_are_rated_with_the_keyboard_and_kept() {
    let s = Sandbox::new();
    add_bench(&s);
    let viewer = start_viewer(&s, &["--rater", "grace"]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    let browser = Browser::start();
    // Rate three results with the keys: j p (pass), j f (fail), j 3 (score 3).
    browser.go(&format!("{}/runs/{run}", viewer.base));
    let uids = browser.script(
        "return Array.from(document.querySelectorAll('a.cell')).slice(0, 3).map(e => e.dataset.uid)",
    );
    let uids: Vec<String> = serde_json::from_value(uids).unwrap();
    browser.keys("jpjfj3");
    crate::support::wait_for("three ratings stored", || {
        s.count("SELECT count(*) FROM ratings") == 3
    });
    // Back to the first (k k) and score it 3: its pass is kept (issue 45), and so is its mark.
    browser.keys("kk3");
    crate::support::wait_for("the score stored", || {
        s.count("SELECT count(*) FROM ratings") == 4
    });
    let (verdict, score): (String, i64) = s
        .db()
        .query_row(
            "SELECT verdict, score FROM ratings WHERE result_uid = ?1 ORDER BY id DESC LIMIT 1",
            [&uids[0]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((verdict.as_str(), score), ("pass", 3));
    // Reloaded, they are kept, on the results rated.
    browser.go(&format!("{}/runs/{run}", viewer.base));
    let marks = browser.script(
        "return Array.from(document.querySelectorAll('a.cell')).slice(0, 4).map(e => { const m = e.querySelector('.rated'); return m ? m.textContent : '' }).join(',')",
    );
    assert_eq!(marks, "P,F,3,");
    browser.assert_clean("the rated grid");
    browser.keys("j");
    browser.screenshot("ratings");
    // The export carries them, each on its result.
    s.track()
        .args(["export", "csv", "--out", "out", "-q"])
        .assert()
        .success();
    let csv = std::fs::read_to_string(s.path("out/bench_results.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<HashMap<String, String>> = reader
        .records()
        .map(|r| {
            headers
                .iter()
                .zip(r.unwrap().iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect()
        })
        .collect();
    // The export names a result by its model and case.
    let rating = |uid: &str| {
        let (model, case): (String, String) = s
            .db()
            .query_row(
                "SELECT model_ref, prompt_name FROM bench_results WHERE uid = ?1",
                [uid],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let row = rows
            .iter()
            .find(|r| r["model"] == model && r["case"] == case)
            .unwrap_or_else(|| panic!("no row of {model} on {case} in {csv}"));
        (
            row["human_verdict"].as_str(),
            row["human_score"].as_str(),
            row["rater"].as_str(),
        )
    };
    // The first was passed, then scored 3 (k k 3): both kept.
    assert_eq!(rating(&uids[0]), ("pass", "3", "grace"));
    assert_eq!(rating(&uids[1]), ("fail", "", "grace"));
    assert_eq!(rating(&uids[2]), ("", "3", "grace"));
    assert_eq!(rows.iter().filter(|r| r["rater"] == "grace").count(), 3);
}

#[test]
#[ignore = "needs chromium and chromium-driver (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn in_a_real_browser_a_live_run_reaches_completion_and_the_token_is_asked_for() {
    let s = Sandbox::new();
    let (running, id) = held_run(&s);
    let token = "browser-token-1234";
    let viewer = start_viewer(&s, &["--host", "0.0.0.0", "--token", token]);
    let port = viewer.base.rsplit(':').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{port}");
    let browser = Browser::start();
    // Without the token: refused; with it once, the cookie keeps it for every later page.
    browser.go(&format!("{base}/runs/{id}"));
    let refused = browser.script("return document.body.textContent");
    assert!(
        refused.as_str().unwrap().contains("needs its token"),
        "{refused}"
    );
    browser.go(&format!("{base}/?token={token}"));
    browser.go(&format!("{base}/runs/{id}"));
    assert_eq!(
        browser.script("return document.querySelector('.progress .status').textContent"),
        "running"
    );
    assert_eq!(
        browser.script("return document.querySelector('.progress .calls').textContent"),
        "0 / 2 calls"
    );
    let empty = browser.script("return document.querySelector('p.empty').textContent");
    assert!(
        empty.as_str().unwrap().starts_with("No result stored yet"),
        "{empty}"
    );
    browser.console();
    browser.screenshot("live");
    // What the page shows of its progress is recorded as it changes, in the tab's session
    // storage (kept when the page reloads at the run's end).
    browser.script(
        "const shown = document.querySelector('.progress');
         new MutationObserver(() => {
             const seen = JSON.parse(sessionStorage.getItem('seen') || '[]');
             seen.push(shown.querySelector('.status').textContent + ' ' + shown.querySelector('.calls').textContent);
             sessionStorage.setItem('seen', JSON.stringify(seen));
         }).observe(shown, {subtree: true, childList: true, characterData: true});
         return null",
    );
    // The run goes on: the page follows it live to its end, then reloads with its results.
    s.mock.release();
    crate::support::wait_for("the reloaded page's results", || {
        browser.script("return document.querySelectorAll('a.cell').length") == 2
    });
    let seen = browser.script("return JSON.parse(sessionStorage.getItem('seen') || '[]')");
    let seen: Vec<String> = serde_json::from_value(seen).unwrap();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("completed 2 / 2 calls"),
        "{seen:?}"
    );
    assert_eq!(
        browser.script("return document.querySelector('.progress .status').textContent"),
        "completed"
    );
    browser.assert_clean("the completed run");
    running.finish();
}

#[test]
#[ignore = "needs chromium and chromium-driver (bash .ci/browser.sh install): run with --include-ignored (README)"]
fn in_a_real_browser_the_other_kinds_and_two_runs_have_their_pages() {
    let browser = Browser::start();
    browser.check_console_is_read();
    // Reviews: the criteria × reviewers, then a review's datasheets side by side.
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
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    browser.go(&format!("{}/runs/{run}", viewer.base));
    browser.assert_clean("a review run");
    assert!(browser.number("return document.querySelectorAll('table.review').length") > 0);
    browser.screenshot("review");
    // The second reviewer's (a JSON answer, laid out on lines).
    browser.click("table.review thead th:nth-child(3) a");
    browser.wait_for_address("/reviews/");
    browser.assert_clean("a review's datasheets");
    assert_eq!(
        browser.number("return document.querySelectorAll('pre.answer').length"),
        3
    );
    browser.screenshot("review-datasheets");
    drop(viewer);

    // Relevance: the confusion counts, each image (loaded), WITH and WITHOUT.
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
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    browser.go(&format!("{}/runs/{run}", viewer.base));
    browser.assert_clean("a relevance run");
    let images = browser.number("return document.querySelectorAll('img.shown').length");
    assert!(images > 0);
    assert_eq!(
        browser.number(
            "return Array.from(document.querySelectorAll('img.shown')).filter(i => i.complete && i.naturalWidth > 0).length"
        ),
        images,
        "every image loads"
    );
    browser.screenshot("relevance");
    drop(viewer);

    // Pairwise: the win matrix, both orders of each verdict, the candidates' answers.
    let s = crate::pairwise::answers_sandbox();
    s.track()
        .args(["run", "pairwise.yaml", "-q"])
        .assert()
        .success();
    let viewer = start_viewer(&s, &[]);
    let run: i64 = s.count("SELECT max(id) FROM runs");
    browser.go(&format!("{}/runs/{run}", viewer.base));
    browser.assert_clean("a pairwise run");
    assert_eq!(
        browser.number("return document.querySelectorAll('table.win-matrix').length"),
        1
    );
    let text = browser.script("return document.body.textContent");
    assert!(text.as_str().unwrap().contains("ANS-GOOD"), "{text}");
    browser.screenshot("pairwise");
    drop(viewer);

    // Two runs compared, from the runs page's form.
    let s = Sandbox::new();
    add_bench(&s);
    let (base, new) = add_second_run(&s);
    let viewer = start_viewer(&s, &[]);
    browser.go(&format!("{}/", viewer.base));
    browser.type_into("input[name=base]", &base.to_string());
    browser.type_into("input[name=new]", &format!("{new}{ENTER}"));
    browser.wait_for_address("/diff?");
    browser.assert_clean("two runs compared");
    assert!(browser.number("return document.getElementById('changed-count').textContent") > 0);
    assert_eq!(
        browser.script("return document.querySelector('table.diff-items td span').textContent"),
        "regression"
    );
    browser.screenshot("diff");
}
