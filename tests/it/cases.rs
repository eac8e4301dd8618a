//! Benchmarks from data end to end (issue 29): cases and templates, every template on every
//! model and case, several checks per case, re-grading without a call, and the refusals made
//! before any call.

use crate::support::mock::Rule;
use crate::support::{Sandbox, text};

const MODELS: [&str; 2] = ["openai:gpt-4o-mini", "anthropic:haiku 3.5"];

/// `n` cases `{qid, a, b, answer}` with `a` from 1 and `b = a + 1`, as JSON lines.
fn math_rows(n: usize) -> Vec<String> {
    (1..=n)
        .map(|a| {
            let b = a + 1;
            format!(
                r#"{{"qid": "q{a}", "a": {a}, "b": {b}, "answer": "{}"}}"#,
                a * b
            )
        })
        .collect()
}

/// A benchmark of two templates over `cases` (a YAML value: a list, or `{from: …}`).
fn math_yaml(cases: &str, checks: &str) -> String {
    format!(
        "temperature: 0\nmodels: [{}]\ntemplates:\n  - name: terse\n    prompt: \"What is {{{{a}}}} * {{{{b}}}}?\"\n  - name: steps\n    system: Think step by step.\n    prompt: \"Multiply {{{{a}}}} by {{{{b}}}}.\"\ncases: {cases}\nchecks:\n{checks}",
        MODELS.join(", ")
    )
}

const EXACT: &str =
    "  - {method: exact, expected: \"{{answer}}\"}\n  - {method: not-contains, value: sorry}\n";

/// The mock answers `terse` right on every case and `steps` right on cases with an even `a`
/// (else it apologises).
fn answer_math(s: &Sandbox, n: usize) {
    for a in 1..=n {
        let b = a + 1;
        s.mock.add_rule(Rule::reply(
            &format!("What is {a} * {b}?"),
            &(a * b).to_string(),
        ));
        let steps = if a % 2 == 0 {
            (a * b).to_string()
        } else {
            "sorry, I cannot".to_owned()
        };
        s.mock
            .add_rule(Rule::reply(&format!("Multiply {a} by {b}."), &steps));
    }
}

/// Writes `rows` to `data/math.jsonl`; returns the `cases:` that reads them.
fn cases_file(s: &Sandbox, rows: &[String]) -> &'static str {
    s.write("data/math.jsonl", &(rows.join("\n") + "\n"));
    "{from: data/math.jsonl, id: qid}"
}

#[test]
fn two_templates_on_two_models_give_every_result_with_each_templates_pass_rate() {
    let s = Sandbox::new();
    answer_math(&s, 50);
    let cases = cases_file(&s, &math_rows(50));
    s.write("math.yaml", &math_yaml(cases, EXACT));
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        s.mock.request_count(),
        200,
        "2 templates x 2 models x 50 cases"
    );
    assert_eq!(s.count("SELECT count(*) FROM bench_results"), 200);
    let passed = |template: i64| {
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE template_index = {template} AND status = 'passed'"
        ))
    };
    assert_eq!(passed(0), 100, "terse: every case on both models");
    assert_eq!(passed(1), 50, "steps: the 25 even cases on both models");
    // Both checks of every result are rows; a failed case names the check that failed.
    assert_eq!(s.count("SELECT count(*) FROM bench_checks"), 400);
    assert_eq!(
        s.count(
            "SELECT count(*) FROM bench_checks WHERE method = 'not-contains' AND status = 'failed'"
        ),
        50
    );
    // The request each template sent: its own system prompt and its own wording.
    let steps = s
        .mock
        .requests()
        .into_iter()
        .find(|r| r.last_user_text() == "Multiply 3 by 4.")
        .expect("the steps template's request for a = 3");
    assert!(steps.body.to_string().contains("Think step by step."));
}

#[test]
fn inserting_a_case_pays_only_for_it_and_changing_only_a_check_sends_nothing() {
    let s = Sandbox::new();
    answer_math(&s, 11);
    let mut rows = math_rows(10);
    s.write("math.yaml", &math_yaml(cases_file(&s, &rows), EXACT));
    let run = |s: &Sandbox| {
        let out = s.track().args(["run", "math.yaml"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    };
    run(&s);
    assert_eq!(s.mock.request_count(), 40);
    // A row inserted in the middle: only its own (templates x models) requests are sent.
    rows.insert(5, math_rows(11).pop().unwrap());
    cases_file(&s, &rows);
    s.mock.reset_requests();
    run(&s);
    assert_eq!(
        s.mock.request_count(),
        4,
        "2 templates x 2 models for the new row"
    );
    // Only the checks change: no request, and the stored answers are graded anew.
    s.mock.reset_requests();
    s.write(
        "math.yaml",
        &math_yaml(
            "{from: data/math.jsonl, id: qid}",
            "  - {method: contains, value: \"{{answer}}\"}\n",
        ),
    );
    let out = run(&s);
    assert_eq!(s.mock.request_count(), 0);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no request sent: 44 stored answers from the cache graded anew"),
        "{stderr}"
    );
    let last = s.count("SELECT max(id) FROM runs");
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE run_id = {last} AND status = 'passed'"
        )),
        // `contains` passes "sorry" nowhere but the right number everywhere it was given.
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE run_id = {last} AND (template_index = 0 OR prompt_name IN ({}))",
            (1..=11).filter(|a| a % 2 == 0).map(|a| format!("'q{a}'")).collect::<Vec<_>>().join(",")
        ))
    );
}

#[test]
fn a_name_no_case_has_and_a_case_without_checks_are_refused_before_any_call() {
    let s = Sandbox::new();
    let yaml = math_yaml(cases_file(&s, &math_rows(3)), EXACT).replace("{{b}}?", "{{c}}?");
    s.write("math.yaml", &yaml);
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("math.yaml:4: template `terse` uses `{{c}}`, but no case has a column `c`"),
        "{stderr}"
    );
    assert!(stderr.contains("columns qid, a, b, answer"), "{stderr}");
    let yaml = math_yaml(cases_file(&s, &math_rows(3)), "");
    s.write("math.yaml", yaml.trim_end_matches("checks:\n"));
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("case `q1`: it has no check"), "{stderr}");
    // Two rows with one id: both named.
    let mut rows = math_rows(3);
    rows.push(rows[1].clone());
    s.write("math.yaml", &math_yaml(cases_file(&s, &rows), EXACT));
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`q2`")
            && stderr.contains("data/math.jsonl:2")
            && stderr.contains("data/math.jsonl:4"),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0);
    // A column nothing uses is a warning, and the run goes on.
    let rows: Vec<String> = math_rows(2)
        .iter()
        .map(|r| r.replace("\"qid\"", "\"note\": \"x\", \"qid\""))
        .collect();
    answer_math(&s, 2);
    s.write("math.yaml", &math_yaml(cases_file(&s, &rows), EXACT));
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: data/math.jsonl: column `note` is used by no template and no check"
        ),
        "{stderr}"
    );
}

#[test]
fn cases_from_a_jsonl_file_say_what_was_read_in_the_run_and_in_the_plan() {
    let s = Sandbox::new();
    answer_math(&s, 50);
    s.write("data/math.jsonl", &(math_rows(50).join("\n") + "\n"));
    s.write(
        "math.yaml",
        &math_yaml("{from: data/math.jsonl, id: qid}", EXACT),
    );
    let plan = s
        .track()
        .args(["run", "math.yaml", "--dry-run"])
        .output()
        .unwrap();
    let stdout = text(&plan.stdout);
    assert!(plan.status.success(), "{stdout}\n{}", text(&plan.stderr));
    let loaded = "loaded 50 cases from data/math.jsonl (columns: qid, a, b, answer)";
    assert!(stdout.contains(loaded), "{stdout}");
    assert!(stdout.contains("200 calls planned"), "{stdout}");
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(loaded), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 200);
    // Cases are known by their ids, and the file's hash is stored with the run.
    assert_eq!(
        s.count(
            "SELECT count(DISTINCT prompt_name) FROM bench_results WHERE prompt_name LIKE 'q%'"
        ),
        50
    );
    let options: String = s
        .db()
        .query_row("SELECT options_json FROM runs WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    let options: serde_json::Value = serde_json::from_str(&options).unwrap();
    let inputs = options["inputs"].as_array().unwrap();
    let data = &inputs[0];
    assert_eq!(data["kind"], "data");
    assert_eq!(data["rows"], 50);
    let bytes = std::fs::read(s.path("data/math.jsonl")).unwrap();
    assert_eq!(data["sha256"], sha256_hex(&bytes));
    assert_eq!(inputs.iter().filter(|i| i["kind"] == "template").count(), 2);
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn a_csv_with_quoted_commas_newlines_and_unicode_reaches_the_model_as_written() {
    let s = Sandbox::new();
    s.write(
        "data/q.csv",
        "\u{feff}id,question,answer\n\
         a1,\"Paris, Lyon or Nice?\",Paris\n\
         a2,\"Line one\nline two: « déjà vu » 東京\",東京\n",
    );
    s.write(
        "q.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates:\n  - {name: ask, prompt: \"Q: {{question}}\"}\ncases: {from: data/q.csv}\nchecks: [{method: contains, value: \"{{answer}}\"}]\n",
    );
    s.mock.add_rule(Rule::reply("Paris, Lyon", "Paris"));
    s.mock.add_rule(Rule::reply("déjà vu", "東京"));
    let out = s.track().args(["run", "q.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let texts: Vec<String> = s
        .mock
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .collect();
    assert!(
        texts.contains(&"Q: Paris, Lyon or Nice?".to_owned()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"Q: Line one\nline two: « déjà vu » 東京".to_owned()),
        "{texts:?}"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        2
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE prompt_name IN ('a1', 'a2')"),
        2
    );
}

#[test]
fn ctrl_c_during_script_checks_kills_them_stores_no_made_up_verdict_and_a_rerun_grades_from_the_cache()
 {
    let s = Sandbox::new().patient();
    // Each grader leaves a file named by its pid, then takes a minute.
    s.write(
        "grade.py",
        "import json, os, sys, time\njson.load(sys.stdin)\n\
         open(f'started-{os.getpid()}', 'w').close()\ntime.sleep(60)\n",
    );
    s.write(
        "data/s.jsonl",
        "{\"qid\": \"c1\", \"q\": \"one\"}\n{\"qid\": \"c2\", \"q\": \"two\"}\n\
         {\"qid\": \"c3\", \"q\": \"three\"}\n{\"qid\": \"c4\", \"q\": \"four\"}\n",
    );
    s.write(
        "s.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates: [\"Spell {{q}} as a digit.\"]\ncases: {from: data/s.jsonl, id: qid}\nchecks: [{method: script, run: python3 grade.py, timeout_secs: 300}]\n",
    );
    let started = || {
        std::fs::read_dir(s.dir.path())
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("started-")
            })
            .count()
    };
    let began = std::time::Instant::now();
    let run = s.start(&["run", "s.yaml", "-q"]);
    crate::support::wait_for("a script check to start", || started() > 0);
    run.signal("INT");
    let (code, stderr) = run.finish();
    // Stopped at once: the graders would take a minute each.
    assert!(
        began.elapsed() < std::time::Duration::from_secs(50),
        "{stderr}"
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("run the same command again to finish it from the cache"),
        "{stderr}"
    );
    let status: String = s
        .db()
        .query_row("SELECT status FROM runs WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "interrupted");
    // No verdict made up for a grader that was killed: nothing stored for those cases.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE run_id = 1"),
        0
    );
    assert_eq!(s.count("SELECT count(*) FROM calls WHERE status = 'ok'"), 4);
    // The same command again, with a grader that answers: graded from the cache.
    s.write(
        "grade.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'pass': True}))\n",
    );
    s.mock.reset_requests();
    let out = s.track().args(["run", "s.yaml", "-q"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 0);
    let last = s.count("SELECT max(id) FROM runs");
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE run_id = {last} AND status = 'passed'"
        )),
        4
    );
}

#[test]
fn a_script_check_passes_fails_and_makes_errors_of_crashes_and_hangs() {
    let s = Sandbox::new();
    s.write(
        "grade.py",
        "import json, sys, time\n\
         job = json.load(sys.stdin)\n\
         case = job['values']['qid']\n\
         if case == 'crash':\n    sys.stderr.write('grader: cannot read the rubric\\n'); sys.exit(3)\n\
         if case == 'hang':\n    time.sleep(30)\n\
         ok = job['answer'].strip() == job['values']['answer']\n\
         print(json.dumps({'pass': ok, 'score': 1.0 if ok else 0.0, 'reason': 'compared ' + case}))\n",
    );
    s.write(
        "data/s.jsonl",
        "{\"qid\": \"good\", \"q\": \"one\", \"answer\": \"1\"}\n\
         {\"qid\": \"bad\", \"q\": \"two\", \"answer\": \"2\"}\n\
         {\"qid\": \"crash\", \"q\": \"three\", \"answer\": \"3\"}\n\
         {\"qid\": \"hang\", \"q\": \"four\", \"answer\": \"4\"}\n",
    );
    s.write(
        "s.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates: [\"Spell {{q}} as a digit.\"]\ncases: {from: data/s.jsonl, id: qid}\nchecks: [{method: script, run: python3 grade.py, timeout_secs: 2}]\n",
    );
    for (q, a) in [("one", "1"), ("two", "7"), ("three", "3"), ("four", "4")] {
        s.mock.add_rule(Rule::reply(&format!("Spell {q} "), a));
    }
    let out = s.track().args(["run", "s.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    let status = |case: &str| -> (String, Option<String>) {
        s.db()
            .query_row(
                "SELECT status, detail FROM bench_results WHERE prompt_name = ?1",
                [case],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(status("good").0, "passed", "{stderr}");
    assert_eq!(status("bad").0, "failed");
    let (crash, why) = status("crash");
    assert_eq!(crash, "error", "a crashed grader is never a pass");
    let why = why.unwrap();
    assert!(
        why.contains("grade.py") && why.contains("grader: cannot read the rubric"),
        "{why}"
    );
    let (hang, why) = status("hang");
    assert_eq!(hang, "error");
    assert!(why.unwrap().contains("2 s"), "the timeout is named");
    // Script verdicts are not cached: a fixed grader re-grades the stored answers offline.
    s.write(
        "grade.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'pass': True}))\n",
    );
    s.mock.reset_requests();
    let out = s
        .track()
        .args(["run", "s.yaml", "--offline"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 0);
    let last = s.count("SELECT max(id) FROM runs");
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM bench_results WHERE run_id = {last} AND status = 'passed'"
        )),
        4
    );
}

#[test]
fn an_hf_file_is_fetched_once_with_the_token_and_then_read_offline() {
    use crate::support::hf::HubServer;
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let hub = HubServer::start(commit);
    hub.add(
        "acme/math",
        "data/test.jsonl",
        (math_rows(4).join("\n") + "\n").as_bytes(),
    );
    let s = Sandbox::new();
    answer_math(&s, 4);
    s.write(
        "hf.yaml",
        &math_yaml(
            "{from: \"hf://datasets/acme/math@main/data/test.jsonl\", id: qid}",
            EXACT,
        ),
    );
    let out = s
        .track()
        .args(["run", "hf.yaml"])
        .env("HF_ENDPOINT", hub.url())
        .env("HF_TOKEN", "hf_secret_token")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(s.mock.request_count(), 16);
    let requests = hub.requests();
    assert_eq!(requests.len(), 1, "fetched once: {requests:?}");
    assert_eq!(
        requests[0].path,
        "/datasets/acme/math/resolve/main/data/test.jsonl"
    );
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some("Bearer hf_secret_token")
    );
    let revision: String = s
        .db()
        .query_row("SELECT revision FROM dataset_files", [], |r| r.get(0))
        .unwrap();
    assert_eq!(revision, commit);
    // The token is nowhere in the database.
    assert_eq!(
        crate::support::any_file_contains(&s.path(""), "hf_secret_token"),
        None
    );
    // With the hub gone: --offline reads the stored bytes, and the plan is all cached.
    drop(hub);
    let out = s
        .track()
        .args(["run", "hf.yaml", "--offline"])
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 16);
}

#[test]
fn openai_evals_samples_run_as_they_are_with_the_registrys_match() {
    let s = Sandbox::new();
    s.write(
        "evals/samples.jsonl",
        "{\"input\": [{\"role\": \"system\", \"content\": \"Answer tersely.\"}, {\"role\": \"user\", \"content\": \"Capital of France?\"}], \"ideal\": \"Paris\"}\n\
         {\"input\": [{\"role\": \"user\", \"content\": \"Largest planet?\"}], \"ideal\": [\"Jupiter\", \"jupiter\"]}\n\
         {\"input\": \"2 + 2?\", \"ideal\": \"4\"}\n",
    );
    s.write(
        "evals.yaml",
        "models: [openai:gpt-4o-mini]\ncases: {from: evals/samples.jsonl, format: openai-evals}\n",
    );
    s.mock
        .add_rule(Rule::reply("Capital of France?", "Paris, of course."));
    s.mock.add_rule(Rule::reply("Largest planet?", "jupiter"));
    s.mock.add_rule(Rule::reply("2 + 2?", "The answer is 4"));
    let out = s.track().args(["run", "evals.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let first = s
        .mock
        .requests()
        .into_iter()
        .find(|r| r.last_user_text() == "Capital of France?")
        .unwrap();
    assert!(
        first.body.to_string().contains("Answer tersely."),
        "the system message is sent"
    );
    // Match: the answer starts with an ideal; "The answer is 4" does not.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        2
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'failed'"),
        1
    );
}

#[test]
fn promptfoo_csvs_become_cases_and_an_expectation_track_cannot_read_is_refused() {
    let s = Sandbox::new();
    s.write(
        "tests.csv",
        "question,__expected\n\
         Capital of France?,contains: Paris\n\
         2 + 2?,4\n\
         Say hi,icontains: HELLO\n\
         Count to 3,regex: ^1\\D+2\\D+3\n\
         Be rude,not-contains: idiot\n",
    );
    s.write(
        "pf.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates: [\"{{question}}\"]\ncases: {from: tests.csv}\n",
    );
    for (q, a) in [
        ("Capital of France?", "It is Paris."),
        ("2 + 2?", "4"),
        ("Say hi", "hello there"),
        ("Count to 3", "1, 2, 3"),
        ("Be rude", "No."),
    ] {
        s.mock.add_rule(Rule::reply(q, a));
    }
    let out = s.track().args(["run", "pf.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        5
    );
    let methods: Vec<String> = s
        .db()
        .prepare("SELECT method FROM bench_results ORDER BY prompt_index")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        methods,
        ["contains", "exact", "icontains", "regex", "not-contains"]
    );
    s.write(
        "tests.csv",
        "question,__expected\nCapital of France?,contains: Paris\nLong?,javascript: output.length > 3\n",
    );
    s.mock.reset_requests();
    let out = s.track().args(["run", "pf.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tests.csv:3") && stderr.contains("javascript"),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0);
}

/// `n` math cases as CSV rows `qid,a,b,answer` under their header, row `at` (1-based)
/// replaced by `row`.
fn math_csv(n: usize, at: usize, row: &str) -> String {
    let mut text = "qid,a,b,answer\n".to_owned();
    for a in 1..=n {
        if a == at {
            text.push_str(row);
        } else {
            text.push_str(&format!("q{a},{a},{},{}", a + 1, a * (a + 1)));
        }
        text.push('\n');
    }
    text
}

#[test]
fn a_stray_quote_in_a_csv_is_refused_naming_the_line_it_opened_on_before_any_call() {
    let s = Sandbox::new();
    answer_math(&s, 1000);
    // Row 3 (line 4) opens a quote that nothing closes: the csv reader alone would read three
    // cases, the third's answer swallowing the 997 rows after it.
    s.write("data/math.csv", &math_csv(1000, 3, "q3,3,4,\"12"));
    s.write(
        "math.yaml",
        &math_yaml("{from: data/math.csv, id: qid}", EXACT),
    );
    for args in [
        &["run", "math.yaml", "--dry-run"][..],
        &["run", "math.yaml"],
    ] {
        let out = s.track().args(args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "data/math.csv:4: the quote that opens a field here (`\"12`) never closes, so the rest of the file (998 lines) would be read as one value;"
            ),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("loaded"), "{stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
    assert_eq!(
        s.try_count("SELECT count(*) FROM bench_results")
            .unwrap_or(0),
        0
    );
    // A stray quote that a later quoted field closes: refused at the stray one, not read as
    // one long answer.
    let closed = math_csv(1000, 3, "q3,3,4,\"12").replace("q9,9,10,90", "q9,9,10,\"90\"");
    s.write("data/math.csv", &closed);
    let out = s.track().args(["run", "math.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("data/math.csv:4: the quote that opens a field here (`\"12`) closes only on line 10, where text follows it"),
        "{stderr}"
    );
    // The file fixed, with CRLF line ends and a BOM as Excel writes it: all 1,000 cases.
    let fixed = "\u{feff}".to_owned() + &math_csv(1000, 0, "").replace('\n', "\r\n");
    s.write("data/math.csv", &fixed);
    let out = s
        .track()
        .args(["run", "math.yaml", "--dry-run"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("loaded 1,000 cases from data/math.csv (columns: qid, a, b, answer)"),
        "{stdout}"
    );
}

#[test]
fn a_csv_row_with_too_few_or_too_many_fields_is_refused_naming_its_line() {
    let s = Sandbox::new();
    s.write(
        "math.yaml",
        &math_yaml("{from: data/math.csv, id: qid}", EXACT),
    );
    for (row, needle) in [
        (
            "q5,5,6",
            "data/math.csv:6: this row has 3 fields, the header 4; add the missing fields",
        ),
        (
            "q5,5,6,30,extra",
            "data/math.csv:6: this row has 5 fields, the header 4; quote a field",
        ),
        (
            "q5,5, \"6, 7\",30",
            "data/math.csv:6: this row has 5 fields, the header 4; a quote after a space is text",
        ),
    ] {
        s.write("data/math.csv", &math_csv(10, 5, row));
        let out = s.track().args(["run", "math.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{row}: {stderr}");
        assert!(stderr.contains(needle), "{row}: {stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
}

/// The outcomes of a run's results, by case name, in case order.
fn outcomes_by_case(s: &Sandbox) -> Vec<(String, String)> {
    s.db()
        .prepare("SELECT prompt_name, status FROM bench_results ORDER BY prompt_index")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn yaml_scalars_that_look_like_booleans_or_numbers_are_compared_as_written() {
    // Each answer is the text the file writes, unquoted: YAML 1.1 booleans, numbers with a
    // trailing zero, hex, octal-looking, exponent, capitalised true.
    let written = [
        "yes", "no", "on", "y", "1.10", "0x1F", "001", "1e3", "True", "+1",
    ];
    let s = Sandbox::new();
    let mut yaml = String::from("models: [openai:gpt-4o-mini]\nprompts:\n");
    for (i, w) in written.iter().enumerate() {
        yaml.push_str(&format!(
            "  - t{i}:\n    prompt: \"Question {i}?\"\n    method: exact\n    output: {w}\n"
        ));
        s.mock.add_rule(Rule::reply(&format!("Question {i}?"), w));
    }
    s.write("b.yaml", &yaml);
    let out = s.track().args(["run", "b.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let outcomes = outcomes_by_case(&s);
    assert_eq!(outcomes.len(), written.len());
    for ((name, status), w) in outcomes.iter().zip(written) {
        assert_eq!(
            status, "passed",
            "{name}: `output: {w}` against the answer `{w}`"
        );
    }
    let expected: Vec<String> = s
        .db()
        .prepare("SELECT expected FROM bench_results ORDER BY prompt_index")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        expected, written,
        "the expected values are stored as written"
    );
}

#[test]
fn inline_cases_keep_their_ids_and_values_as_written() {
    let s = Sandbox::new();
    s.write(
        "b.yaml",
        "models: [openai:gpt-4o-mini]\ntemplates: [\"Is {{thing}} alive?\"]\n\
         cases:\n  - {id: 001, thing: a cat, answer: yes}\n  - {id: 1.10, thing: a rock, answer: no}\n\
         checks:\n  - {method: exact, value: \"{{answer}}\"}\n",
    );
    s.mock.add_rule(Rule::reply("a cat", "yes"));
    s.mock.add_rule(Rule::reply("a rock", "no"));
    let out = s.track().args(["run", "b.yaml"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(
        outcomes_by_case(&s),
        [
            ("001".to_owned(), "passed".to_owned()),
            ("1.10".to_owned(), "passed".to_owned())
        ]
    );
}

#[test]
fn a_promptfoo_csv_with_rubrics_descriptions_and_metadata_runs_with_the_files_judge() {
    let s = Sandbox::new();
    // Shaped like promptfoo's own examples: a variable, `__expected` forms, a description and
    // metadata.
    s.write(
        "tests.csv",
        "topic,__expected,__expected1,__description,__metadata:team\n\
         bananas,llm-rubric: Is a haiku about fruit,contains: banana,Banana haiku,poetry\n\
         rain,model-graded-closedqa: Mentions the weather,,Rain haiku,poetry\n\
         Paris,factuality: Paris is the capital of France,,Capital fact,geo\n",
    );
    s.write(
        "pf.yaml",
        "models: [openai:gpt-4o-mini]\njudge: openai:gpt-4o\n\
         templates: [\"Write about {{topic}}\"]\ncases: {from: tests.csv}\n",
    );
    // The judge's prompt holds the question too: its rule comes first.
    s.mock.add_rule(Rule::reply(
        "RUBRIC",
        r#"{"justification": "meets it", "score": 5}"#,
    ));
    s.mock
        .add_rule(Rule::reply("Write about bananas", "yellow banana sun"));
    s.mock
        .add_rule(Rule::reply("Write about rain", "grey rain falls"));
    s.mock.add_rule(Rule::reply(
        "Write about Paris",
        "Paris is France's capital",
    ));
    let out = s.track().args(["run", "pf.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", text(&out.stdout));
    assert!(
        !stderr.contains("warning"),
        "description and metadata are used: {stderr}"
    );
    assert_eq!(
        outcomes_by_case(&s),
        [
            ("Banana haiku".to_owned(), "passed".to_owned()),
            ("Rain haiku".to_owned(), "passed".to_owned()),
            ("Capital fact".to_owned(), "passed".to_owned()),
        ],
        "each case is named by its description"
    );
    // Three judge calls by the file's judge, each with its rubric; factuality's asks for
    // the reference's facts.
    let judged: Vec<String> = s
        .mock
        .requests()
        .into_iter()
        .filter(|r| r.model() == Some("gpt-4o"))
        .map(|r| r.last_user_text())
        .collect();
    assert_eq!(judged.len(), 3, "{judged:?}");
    for rubric in [
        "Is a haiku about fruit",
        "Mentions the weather",
        "Paris is the capital of France",
    ] {
        assert!(
            judged.iter().any(|j| j.contains(rubric)),
            "{rubric}: {judged:?}"
        );
    }
    assert!(judged.iter().any(|j| j.contains("reference answer")));
}

#[test]
fn a_failed_weighted_case_says_its_score_once_and_weights_too_big_to_add_are_refused() {
    let s = Sandbox::new();
    s.write(
        "w.yaml",
        "models: [openai:gpt-4o-mini]\npass: {threshold: 0.8}\nprompts:\n  - t:\n      \
         prompt: \"Name a fruit\"\n      checks:\n        - {method: contains, value: apple}\n        \
         - {method: contains, value: red}\n",
    );
    s.mock.add_rule(Rule::reply("Name a fruit", "an apple"));
    let out = s.track().args(["run", "w.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let detail: String = s
        .db()
        .query_row("SELECT detail FROM bench_results", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        detail.matches("0.50").count(),
        1,
        "the score is said once: {detail}"
    );
    assert!(detail.contains("below 0.8"), "{detail}");
    assert!(
        detail.contains("red"),
        "the failed check is named: {detail}"
    );
    s.write(
        "w.yaml",
        "models: [openai:gpt-4o-mini]\nprompts:\n  - t:\n      prompt: \"Name a fruit\"\n      \
         checks:\n        - {method: contains, value: apple, weight: 1e308}\n        \
         - {method: contains, value: an, weight: 1e308}\n",
    );
    s.mock.reset_requests();
    let out = s.track().args(["run", "w.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("w.yaml:3: `t`: the weights of its checks (1e308 + 1e308) add up to more")
            && stderr.contains("such as 1 to 100"),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn an_address_pinned_to_a_commit_keeps_the_pin_and_a_short_sha_its_full_commit() {
    use crate::support::hf::HubServer;
    let served = "0123456789abcdef0123456789abcdef01234567";
    let pin = "fedcba9876543210fedcba9876543210fedcba98";
    // A mirror that names its own head for every revision.
    let hub = HubServer::start(served);
    hub.add(
        "acme/math",
        "data/test.jsonl",
        (math_rows(2).join("\n") + "\n").as_bytes(),
    );
    let s = Sandbox::new();
    answer_math(&s, 2);
    let revisions = |address: &str| -> (String, String) {
        s.write(
            "hf.yaml",
            &math_yaml(&format!("{{from: \"{address}\", id: qid}}"), EXACT),
        );
        let out = s
            .track()
            .args(["run", "hf.yaml"])
            .env("HF_ENDPOINT", hub.url())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let kept: String = s
            .db()
            .query_row(
                "SELECT revision FROM dataset_files WHERE address = ?1",
                [address],
                |r| r.get(0),
            )
            .unwrap();
        let options: String = s
            .db()
            .query_row(
                "SELECT options_json FROM runs ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let options: serde_json::Value = serde_json::from_str(&options).unwrap();
        let input = options["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["kind"] == "data")
            .unwrap()
            .clone();
        (kept, input["revision"].as_str().unwrap().to_owned())
    };
    let pinned = format!("hf://datasets/acme/math@{pin}/data/test.jsonl");
    assert_eq!(revisions(&pinned), (pin.to_owned(), pin.to_owned()));
    // An abbreviated sha: the full commit the server names adds to it.
    let short = "hf://datasets/acme/math@0123456/data/test.jsonl";
    assert_eq!(revisions(short), (served.to_owned(), served.to_owned()));
    // A branch: the commit it resolved to.
    let branch = "hf://datasets/acme/math@main/data/test.jsonl";
    assert_eq!(revisions(branch), (served.to_owned(), served.to_owned()));
}

#[test]
fn the_quick_starts_math_checks_the_answers_final_number() {
    let s = Sandbox::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["data/math.yaml", "data/math.jsonl"] {
        s.write(file, &std::fs::read_to_string(repo.join(file)).unwrap());
    }
    // m01 is 3 * 4 = 12. The terse template is answered right, worded with an echo of the
    // question that holds no 12; m02 (6 * 7 = 42) with "42" inside another number.
    s.mock
        .add_rule(Rule::reply("What is 3 * 4?", "3 * 4 = 12."));
    s.mock.add_rule(Rule::reply(
        "Multiply 3 by 4.",
        "Multiply 3 by 4 to get 12, no: 13",
    ));
    s.mock.add_rule(Rule::reply("What is 6 * 7?", "420"));
    s.mock.add_rule(Rule::reply("", "I do not know"));
    let out = s
        .track()
        .args(["run", "data/math.yaml"])
        .env("LOCAL_MODEL_BASE_URL", s.mock.openai_base_url())
        .env("LOCAL_MODEL_API_KEY", crate::support::OPENAI_KEY)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let status = |case: &str, template: i64| -> String {
        s.db()
            .query_row(
                "SELECT status FROM bench_results WHERE prompt_name = ?1 AND template_index = ?2",
                rusqlite::params![case, template],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(status("m01", 0), "passed", "12 is the final number");
    assert_eq!(status("m01", 1), "failed", "13 is the final number");
    assert_eq!(status("m02", 0), "failed", "420 is not 42");
}
