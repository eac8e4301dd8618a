//! Batch mode as a user meets it around the runtime: `--batch` and `--detach` (refused when
//! they contradict the run), `batch:` in config.yaml and in experiment files, the `waiting`
//! status in `track runs`, `track batches` (listing, cancel against the batch mock), and the
//! half-price bound of `--dry-run --batch`.

use crate::support::mock::MockProvider;
use crate::support::{Sandbox, bench_yaml, text};

/// A benchmark of `models` and two prompts, with `extra` lines before it.
fn bench(s: &Sandbox, name: &str, models: &[&str], extra: &str) {
    let yaml = bench_yaml(
        models,
        &[
            ("p1", "first question", "mock", "contains"),
            ("p2", "second question", "mock", "contains"),
        ],
    );
    s.write(name, &format!("{extra}{yaml}"));
}

#[test]
fn batch_with_offline_and_detach_without_batch_are_refused_before_anything_is_sent() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", &["openai:gpt-4o"], "");
    for extra in [&[][..], &["--dry-run"][..]] {
        let out = s
            .track()
            .args(["run", "bench.yaml", "--batch", "--offline"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(
            stderr.trim_end(),
            "track: --batch sends calls to a provider's batch API; --offline forbids calls: \
             drop one"
        );
        let out = s
            .track()
            .args(["run", "bench.yaml", "--detach"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("track: --detach ") && stderr.contains("--batch"),
            "{stderr}"
        );
    }
    assert!(!s.db_path().exists(), "a refused run opens no database");
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn batch_true_in_an_experiment_file_is_batch_mode_and_detach_is_then_accepted() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", &["openai:gpt-4o"], "batch: true\n");
    let out = s
        .track()
        .args(["run", "bench.yaml", "--detach", "--dry-run"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("dry run"), "{stdout}");
    // --offline wins over the file's `batch: true`: nothing is sent, the cache serves what
    // it has (only --batch itself, asked on the same command line, is a contradiction).
    let out = s
        .track()
        .args(["run", "bench.yaml", "--offline", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // An unknown key is still refused.
    bench(&s, "typo.yaml", &["openai:gpt-4o"], "batched: true\n");
    let out = s.track().args(["run", "typo.yaml"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown field `batched`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn batch_in_config_per_provider_and_model_shows_in_track_models() {
    let s = Sandbox::with_mock(MockProvider::start());
    s.write(
        "config.yaml",
        "providers:
  openrouter:
    kind: openai-compatible
    base_url: http://127.0.0.1:9/v1
    batch: openai
  anthropic:
    batch: off
models:
  openrouter:llama:
    model: meta/llama
  anthropic:sonnet 3.5:
    batch: anthropic
  openai:gpt-4o:
    batch: \"off\"
",
    );
    let out = s
        .track()
        .args(["models", "--format", "csv"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let header: Vec<&str> = stdout.lines().next().unwrap().split(',').collect();
    let column = header
        .iter()
        .position(|h| *h == "batch")
        .expect("batch column");
    let batch_of = |reference: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{reference},")))
            .unwrap_or_else(|| panic!("{reference} in {stdout}"));
        line.split(',').nth(column).unwrap().to_owned()
    };
    assert_eq!(batch_of("openai:gpt-4o-mini"), "openai");
    assert_eq!(batch_of("openai:gpt-4o"), "");
    assert_eq!(batch_of("anthropic:haiku 3.5"), "");
    assert_eq!(batch_of("anthropic:sonnet 3.5"), "anthropic");
    assert_eq!(batch_of("openrouter:llama"), "openai");
    assert_eq!(batch_of("ollama:qwen2.5-coder"), "");
    let json = s
        .track()
        .args(["models", "--format", "json"])
        .output()
        .unwrap();
    assert!(text(&json.stdout).contains("\"batch\": \"anthropic\""));
    assert!(text(&json.stdout).contains("\"batch\": null"));
}

#[test]
fn a_bad_batch_in_config_is_one_line_naming_the_setting_and_the_allowed_values() {
    let s = Sandbox::with_mock(MockProvider::start());
    for (yaml, expected) in [
        (
            "models:\n  openai:gpt-4o:\n    batch: openia\n",
            "`batch: openia` is not a batch API: write openai, anthropic or off",
        ),
        (
            "providers:\n  ollama:\n    batch: openai\n",
            "`ollama`: `batch: openai` does not fit a provider of kind ollama",
        ),
    ] {
        s.write("config.yaml", yaml);
        let out = s.track().args(["models"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("config.yaml"), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}
