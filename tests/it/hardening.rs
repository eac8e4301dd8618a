//! Regression tests of issue 8's hardening, each named after what it guards: hostile
//! providers, bad input and secrets.

use crate::support::mock::{Hold, Rule};
use crate::support::{Sandbox, bench_yaml, text, wait_for};

fn one_prompt_bench(s: &Sandbox) {
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[("a", "limited question", "mock", "contains")],
        ),
    );
}

#[test]
fn an_absurd_retry_after_is_clamped_not_a_panic() {
    for value in ["inf", "1e300", "99999999999999999999"] {
        let s = Sandbox::new();
        one_prompt_bench(&s);
        s.mock.add_rule(Rule::rate_limit("limited", value, 1));
        let out = s
            .track()
            .args(["run", "bench.yaml", "-q"])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{value}: {stderr}");
        assert_eq!(
            s.mock.request_count(),
            2,
            "{value}: retried once, after the cap"
        );
        assert_eq!(
            s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
            1
        );
    }
}

#[test]
fn absurd_numbers_in_config_yaml_are_refused_in_one_line() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    for config in ["timeout_secs: .inf\n", "timeout_secs: 1e300\n"] {
        s.write("config.yaml", config);
        let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{config}");
        assert!(
            stderr.contains("config.yaml: `timeout_secs:") && !stderr.contains("panicked"),
            "{config}: {stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn a_malformed_env_file_never_prints_its_keys() {
    let s = Sandbox::new();
    s.write(
        ".env",
        "TRACK_LOG=warn\nOPENAI_API_KEY=\"sk-leaked-CANARY-9\nANTHROPIC_API_KEY=sk-ant-also-CANARY\n",
    );
    let out = s.track().args(["models"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(".env from line 2 (OPENAI_API_KEY)"),
        "{stderr}"
    );
    assert!(!stderr.contains("CANARY"), "{stderr}");
    assert!(!text(&out.stdout).contains("CANARY"));
}

#[test]
fn logs_carry_no_colour_codes_off_a_terminal_or_with_no_color() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    for no_color in [None, Some("1")] {
        let mut cmd = s.track();
        cmd.args(["-v", "run", "bench.yaml", "--dry-run"]);
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = cmd.output().unwrap();
        let stderr = text(&out.stderr);
        assert!(stderr.contains("DEBUG"), "{stderr}");
        assert!(!stderr.contains('\u{1b}'), "{no_color:?}: {stderr:?}");
    }
}

#[test]
fn json_output_keeps_the_column_order() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["query", "--by", "model", "--format", "json"])
        .output()
        .unwrap();
    let json = text(&out.stdout);
    let at = |key: &str| json.find(&format!("\"{key}\"")).unwrap_or(usize::MAX);
    assert!(
        at("model") < at("results")
            && at("results") < at("success_pct")
            && at("success_pct") < at("status"),
        "{json}"
    );
}

#[test]
fn a_cached_datasheet_is_written_where_results_points() {
    let s = Sandbox::new();
    s.write("data/sensors.csv", "Brand,Sensor\nTI,HDC1080\n");
    let args = [
        "generate-datasheets",
        "--model",
        "openai:gpt-4o",
        "--results",
    ];
    let first = s.track().args(args).arg("one").output().unwrap();
    assert!(first.status.success(), "{}", text(&first.stderr));
    let second = s.track().args(args).arg("two").output().unwrap();
    assert!(second.status.success(), "{}", text(&second.stderr));
    let path = text(&second.stdout).trim().to_owned();
    assert!(path.starts_with("two/TI/HDC1080/"), "{path}");
    assert!(s.path(&path).is_file(), "{path}");
    assert_eq!(
        s.mock.request_count(),
        1,
        "the second was served from the cache"
    );
}

#[test]
fn relevance_refuses_files_that_are_not_images_before_any_call() {
    let s = Sandbox::new();
    crate::support::synth_blocks(&s, 1, "blocks");
    for (name, bytes) in [
        ("state_0000.png", &b"not a picture"[..]),
        ("state_0000.png", b""),
    ] {
        s.write(&format!("bad/{name}"), "");
        std::fs::write(s.path(&format!("bad/{name}")), bytes).unwrap();
        let out = s
            .track()
            .args([
                "relevance",
                "compare",
                "--model",
                "openai:gpt-4o",
                "--images",
                "bad/*.png",
                "--ground-truth",
                "blocks/ground_truth.json",
            ])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("bad/state_0000.png is not a PNG, JPEG, GIF or WebP image"),
            "{stderr}"
        );
    }
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn a_base_url_typo_fails_at_once_naming_the_variable() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    let out = s
        .track()
        .args(["run", "bench.yaml"])
        .env("OPENAI_BASE_URL", "htp://user:secret-pass@127.0.0.1:1/v1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is not an http:// or https:// URL; fix OPENAI_BASE_URL"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret-pass"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        !s.db_path().exists(),
        "refused before a run began: no database, so no call and no retry"
    );
    s.write(
        "config.yaml",
        "providers:\n  vllm:\n    kind: openai-compatible\n    base_url: localhost:8000/v1\n",
    );
    let out = s.track().args(["models"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config.yaml: provider `vllm`: the base URL `localhost:8000/v1`"),
        "{stderr}"
    );
}

#[test]
fn a_200_that_is_not_the_providers_format_is_retried_then_recorded() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    let html = crate::support::mock::Action::Status {
        code: 200,
        retry_after: None,
        body: "<html><body>502 Bad Gateway</body></html>".into(),
    };
    s.mock.add_rule(Rule::new("limited", html.clone()).times(2));
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.mock.request_count(),
        3,
        "two gateway pages, then the answer"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        1
    );
    // Always the gateway page: recorded as an error after the bounded attempts, not cached.
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.mock.add_rule(Rule::new("limited", html));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("not in the expected format")
            && stderr.contains("(4 attempts; gave up after the last)"),
        "{stderr}"
    );
    assert_eq!(s.count("SELECT count(*) FROM calls WHERE status = 'ok'"), 0);
}

#[test]
fn an_error_that_cannot_change_says_it_was_not_retried() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.mock.add_rule(Rule::fail("limited", 401, 100));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(s.mock.request_count(), 1);
    assert!(
        stderr.contains("(1 attempt; not retried: this HTTP status does not change on retry)"),
        "{stderr}"
    );
}

#[test]
fn a_model_typo_on_the_command_line_is_blamed_on_it_with_a_suggestion() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    // A provider that does not exist is refused.
    let out = s
        .track()
        .args(["run", "bench.yaml", "--models", "opneai:gpt-4o"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "--models: unknown provider `opneai` in `opneai:gpt-4o`; did you mean `openai`?"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // A model the catalog does not list is sent as written (a new model runs), and the run
    // names the entry it may be a typo of.
    let out = s
        .track()
        .args(["run", "bench.yaml", "--models", "openai:gpt-4o-mnii"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "track: note: `openai:gpt-4o-mnii` is not in the catalog: its id `gpt-4o-mnii` is \
             sent to openai as written; did you mean `openai:gpt-4o-mini`?"
        ),
        "{stderr}"
    );
    assert_eq!(
        s.mock
            .last_request()
            .and_then(|r| r.model().map(str::to_owned)),
        Some("gpt-4o-mnii".to_owned())
    );
}

/// Starts `n` identical runs of a 20-prompt benchmark on one database at once; returns the
/// requests the provider got and the distinct calls among them.
fn identical_concurrent_runs(n: usize) -> (usize, i64) {
    let s = Sandbox::new().patient();
    let prompts: Vec<(String, String)> = (0..20)
        .map(|i| (format!("p{i}"), format!("shared question {i}")))
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str(), "mock", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &prompts));
    // Nothing is answered until a run has sent its first call and every run has started,
    // that is has planned with nothing in the cache: from then on only the claims keep a
    // call from being paid twice.
    s.mock.hold(Hold::From(1));
    let runs: Vec<_> = (0..n)
        .map(|_| s.start(&["run", "bench.yaml", "-q", "--concurrency", "4"]))
        .collect();
    s.mock.wait_held(1);
    wait_for(&format!("{n} runs started"), || {
        s.try_count("SELECT count(*) FROM runs") == Some(n as i64)
    });
    s.mock.release();
    for run in runs {
        let (code, stderr) = run.finish();
        assert_eq!(code, Some(0), "{stderr}");
    }
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE status = 'completed'"),
        n as i64
    );
    assert_eq!(s.count("SELECT count(*) FROM bench_results"), 20 * n as i64);
    (
        s.mock.request_count(),
        s.count("SELECT count(DISTINCT cache_key) FROM calls"),
    )
}

#[test]
fn concurrent_identical_runs_pay_each_call_once() {
    for n in [2, 4] {
        let (requests, distinct) = identical_concurrent_runs(n);
        assert_eq!(distinct, 20);
        assert_eq!(
            requests,
            20,
            "{n} runs at once: {} calls paid twice",
            requests as i64 - distinct
        );
    }
}

#[test]
fn credentials_in_a_base_url_are_sent_as_basic_auth_and_never_stored() {
    let s = Sandbox::with_mock(crate::support::mock::MockProvider::start_with(
        crate::support::mock::MockConfig {
            basic_auth_proxy: true,
            ..Default::default()
        },
    ));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["local:smollm2"],
            &[("a", "proxy question", "mock", "contains")],
        ),
    );
    let base = |password: &str| {
        s.mock
            .openai_base_url()
            .replacen("http://", &format!("http://alice:{password}@"), 1)
    };
    let out = s
        .track()
        .args(["run", "bench.yaml"])
        .env("LOCAL_MODEL_BASE_URL", base("pw-CANARY-1"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    use base64::Engine as _;
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:pw-CANARY-1")
    );
    assert_eq!(
        s.mock.last_request().unwrap().header("authorization"),
        Some(expected.as_str())
    );
    // Another password: the same call, served from the cache.
    let again = s
        .track()
        .args(["run", "bench.yaml"])
        .env("LOCAL_MODEL_BASE_URL", base("pw-CANARY-2"))
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        s.mock.request_count(),
        1,
        "the cache key ignores the password"
    );
    for output in [&out, &again] {
        assert!(
            !text(&output.stdout).contains("CANARY") && !text(&output.stderr).contains("CANARY")
        );
    }
    drop(s.db());
    let found = crate::support::any_file_contains(s.dir.path(), "pw-CANARY");
    assert!(found.is_none(), "a password reached {found:?}");
}

/// Whether this test process can run a command as an unprivileged user (root with setpriv):
/// the only way to make a folder read-only for a process when tests run as root.
fn can_drop_privileges() -> bool {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| text(&o.stdout).trim() == "0");
    root && std::path::Path::new("/usr/bin/setpriv").exists()
}

#[test]
fn a_database_in_a_read_only_folder_is_queried_and_exported_read_only() {
    use std::os::unix::fs::PermissionsExt as _;
    if !can_drop_privileges() {
        eprintln!("skipped: needs root and setpriv to act as a user without write access");
        return;
    }
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let exports = tempfile::tempdir().unwrap();
    for (path, mode) in [(s.dir.path(), 0o555), (exports.path(), 0o777)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    for file in std::fs::read_dir(s.dir.path()).unwrap() {
        let path = file.unwrap().path();
        if path.is_file() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
    }
    let as_nobody = |args: &[&str]| {
        let mut cmd = s.track_process();
        let program = cmd.get_program().to_owned();
        let mut nobody = std::process::Command::new("setpriv");
        nobody
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program)
            .args(args)
            .current_dir(s.dir.path());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(v) => nobody.env(key, v),
                None => nobody.env_remove(key),
            };
        }
        let _ = &mut cmd;
        nobody.output().unwrap()
    };
    let query = as_nobody(&["query", "--by", "model", "--format", "csv"]);
    assert!(query.status.success(), "{}", text(&query.stderr));
    assert!(text(&query.stdout).contains("openai:gpt-4o,1,1,0,0,100.0"));
    let out = exports.path().join("out");
    let export = as_nobody(&["export", "csv", "--out", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", text(&export.stderr));
    assert!(out.join("bench_results.csv").is_file());
    let run = as_nobody(&["run", "bench.yaml"]);
    let stderr = text(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("to write in it") && stderr.contains("readonly"),
        "{stderr}"
    );
    std::fs::set_permissions(s.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_call_that_failed_every_attempt_is_tried_once_on_the_next_run() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.mock.add_rule(Rule::fail("limited", 503, 1_000));
    let first = s.track().args(["run", "bench.yaml"]).output().unwrap();
    assert!(text(&first.stderr).contains("(4 attempts; gave up after the last)"));
    assert_eq!(s.mock.request_count(), 4, "the config allows 4 attempts");
    let second = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&second.stderr);
    assert_eq!(s.mock.request_count(), 5, "one attempt, not four more");
    assert!(
        stderr.contains("every attempt of an earlier run failed too, so it was tried once"),
        "{stderr}"
    );
    // Once the provider is back, the call is answered.
    s.mock.clear_rules();
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        1
    );
}

#[test]
fn a_model_without_vision_stops_a_relevance_experiment_before_any_call() {
    let s = Sandbox::new();
    crate::support::synth_blocks(&s, 2, "blocks");
    let out = s
        .track()
        .args([
            "relevance",
            "compare",
            "--model",
            "local:smollm2",
            "--images",
            "blocks/*.png",
            "--ground-truth",
            "blocks/ground_truth.json",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("local:smollm2 reads no images")
            && stderr.contains("choose a vision model"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(s.mock.request_count(), 0);
}

/// Issue 45: a `--run` (or run argument) that names no run says so, naming the run and the
/// latest runs, in every command that takes one (`export csv --run 999` said "no run to export
/// in DB"); a run of another kind says which kind it is, without the quoting that read
/// `999 (of kind bench)`.
#[test]
fn every_run_that_does_not_exist_is_named_with_the_latest_runs() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.mock.add_rule(Rule::reply("limited", "mock"));
    for _ in 0..2 {
        s.track()
            .args(["run", "bench.yaml", "-q"])
            .assert()
            .success();
    }
    let missing: [&[&str]; 11] = [
        &["export", "csv", "--run", "999", "--out", "x"],
        &[
            "export", "csv", "--kind", "bench", "--run", "999", "--out", "x",
        ],
        &["export", "parquet", "--run", "999", "--out", "x"],
        &["export", "junit", "--run", "999", "--out", "x.xml"],
        &["query", "--by", "model", "--run", "999"],
        &["report", "--run", "999", "--out", "r.html"],
        &["runs", "--errors", "999"],
        &["diff", "1", "999"],
        &["diff", "999", "latest"],
        &["rate", "999", "abc", "--pass", "--rater", "ann"],
        &["batches", "--run", "999"],
    ];
    for args in missing {
        let out = s.track().args(args).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "no run 999 in this database; the latest are run 2 (bench), run 1 (bench): \
                 `track runs` lists them all"
            ),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("(of kind"), "{args:?}: {stderr}");
    }
    // A run of another kind: which kind it is.
    let out = s
        .track()
        .args([
            "export",
            "csv",
            "--kind",
            "relevance",
            "--run",
            "1",
            "--out",
            "x",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("run 1 is a bench run, not a relevance run; `track runs` lists the runs"),
        "{stderr}"
    );
    let out = s
        .track()
        .args(["export", "csv", "--kind", "relevance", "--out", "x"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no run matches `latest`: no relevance run is recorded yet"),
        "{stderr}"
    );
}

/// Issue 45: `track export junit --out -` wrote a file named `-`: it writes to stdout, as
/// `track report --out -` does.
#[test]
fn junit_to_a_dash_goes_to_stdout() {
    let s = Sandbox::new();
    one_prompt_bench(&s);
    s.mock.add_rule(Rule::reply("limited", "mock"));
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["export", "junit", "--out", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let xml = text(&out.stdout);
    assert!(
        xml.starts_with("<?xml") && xml.contains("<testcase"),
        "{xml}"
    );
    assert!(!s.path("-").exists(), "no file named -");
}
