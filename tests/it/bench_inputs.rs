//! Bad input gets one clear line naming the thing and the fix, never a panic, and nothing
//! already stored is lost.

use crate::support::{Sandbox, bench_yaml, text};

fn failure(s: &Sandbox, args: &[&str]) -> String {
    let out = s.track().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Argument errors come from clap ("error: ..."), the rest from track.
    assert!(
        stderr.starts_with("track: ") || stderr.starts_with("error: "),
        "{stderr}"
    );
    stderr
}

#[test]
fn bad_benchmark_files_are_named_with_the_fix() {
    let s = Sandbox::new();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "missing.yaml",
            String::new(),
            "cannot read the experiment file missing.yaml",
        ),
        (
            "broken.yaml",
            "models: [openai:gpt-4o\nprompts:\n".into(),
            "broken.yaml:2:8: illegal placement of ':' indicator",
        ),
        (
            "model.yaml",
            bench_yaml(&["openai:gpt-9"], &[("a", "b", "c", "exact")]),
            "model.yaml:3: unknown model `openai:gpt-9`; openai models: `gpt-4o`, `gpt-4o-mini`",
        ),
        (
            "provider.yaml",
            bench_yaml(&["acme:rocket"], &[("a", "b", "c", "exact")]),
            "unknown provider `acme` in `acme:rocket`; known providers: anthropic, google, local, ollama, openai, openrouter",
        ),
        (
            "method.yaml",
            bench_yaml(&["openai:gpt-4o"], &[("a", "b", "c", "semantic")]),
            "method.yaml:5: prompt `a`: unknown method `semantic`; valid methods: exact, contains, icontains, regex, json-valid, json-equals",
        ),
        (
            "list.yaml",
            "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: [1, 2]\n    output: x\n    method: contains\n".to_owned(),
            "list.yaml:3: prompt `a`: `prompt` is a list; write it as text",
        ),
        (
            "negative.yaml",
            "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: hi\n    output: x\n    method: contains\n    max_tokens: -5\n".to_owned(),
            "prompt `a`: `max_tokens: -5` must be a whole number from 1 to 1000000",
        ),
        (
            "huge.yaml",
            "repeat: 4294967295\nmodels: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: hi\n    output: x\n    method: contains\n".to_owned(),
            "`repeat: 4294967295` is more than the 10000 samples of each call track accepts; lower it",
        ),
        (
            "reference.yaml",
            bench_yaml(&["gpt-4o"], &[("a", "b", "c", "exact")]),
            "write <provider>:<name>",
        ),
    ];
    for (file, content, want) in cases {
        if !content.is_empty() {
            s.write(file, &content);
        }
        let stderr = failure(&s, &["run", file]);
        assert!(stderr.contains(want), "{file}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn bad_config_and_arguments_are_named() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(&["openai:gpt-4o"], &[("a", "b", "c", "exact")]),
    );
    s.write(
        "bad-config.yaml",
        "models:\n  openai:x:\n    total_parameters: 440\n",
    );
    let stderr = failure(&s, &["--config", "bad-config.yaml", "run", "bench.yaml"]);
    assert!(
        stderr
            .contains("bad-config.yaml: model `openai:x`: `total_parameters:` needs `parameters:`"),
        "{stderr}"
    );
    let stderr = failure(&s, &["--config", "nope.yaml", "models"]);
    assert!(stderr.contains("cannot read nope.yaml"), "{stderr}");
    let stderr = failure(&s, &["query", "--by", "model"]);
    assert!(stderr.contains("no database at"), "{stderr}");
}

#[test]
fn queries_of_unknown_runs_keep_what_is_stored() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(&["openai:gpt-4o"], &[("a", "b", "mock", "contains")]),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let stderr = failure(&s, &["query", "--by", "model", "--run", "42"]);
    assert!(stderr.contains("no run matches `42"), "{stderr}");
    let stderr = failure(&s, &["query", "--by", "model", "--run", "yesterday"]);
    assert!(
        stderr.contains("use a run id, `latest` or `all`"),
        "{stderr}"
    );
    assert_eq!(s.count("SELECT count(*) FROM bench_results"), 1);
}

#[test]
fn models_lists_the_catalog_with_config_additions() {
    let s = Sandbox::new();
    s.write(
        "config.yaml",
        "models:\n  ollama:phi3:\n    model: phi3:mini\n    parameters: 3.8\n",
    );
    let out = s
        .track()
        .args(["models", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = text(&out.stdout);
    assert!(csv.contains("ollama:phi3,ollama,phi3,phi3:mini,"), "{csv}");
    assert!(
        csv.contains(
            "anthropic:sonnet 3.5,anthropic,sonnet 3.5,claude-3-5-sonnet-20241022,3.0,15.0,175.0"
        ),
        "{csv}"
    );
}

#[test]
fn yaml_errors_and_bad_regexes_are_one_line_with_file_line_and_column() {
    let s = Sandbox::new();
    for (file, content, want) in [
        (
            "quote.yaml",
            "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: \"unterminated\n    output: x\n",
            "quote.yaml:5:5: invalid indentation in multiline quoted scalar",
        ),
        (
            "regex.yaml",
            "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: hi\n    output: \"([\"\n    method: regex\n",
            "regex.yaml:3: prompt `a`: `output` `([` is not a valid regex: unclosed character class",
        ),
        (
            "review.yaml",
            "kind: review\nreviewers: [openai:gpt-4o\n",
            "review.yaml:2:12: unclosed bracket",
        ),
    ] {
        s.write(file, content);
        let stderr = failure(&s, &["run", file]);
        assert!(stderr.contains(want), "{file}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    s.write("config.yaml", "energy_method: magic\n");
    let stderr = failure(&s, &["models"]);
    assert!(
        stderr.contains(
            "config.yaml:1:16: unknown variant `magic`, expected one of ecologits-0.9, seed-linear"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
