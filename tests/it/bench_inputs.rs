//! Bad input gets one clear line naming the thing and the fix, never a panic, and nothing
//! already stored is lost.

use crate::support::{Sandbox, bench_yaml, text};

/// Runs `track args`, which must refuse its input: exit status 2, as a usage error, whether
/// clap or track finds it. Returns stderr.
fn failure(s: &Sandbox, args: &[&str]) -> String {
    let out = s.track().args(args).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
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
            bench_yaml(&["acme:gpt-9"], &[("a", "b", "c", "exact")]),
            "model.yaml:3: unknown provider `acme` in `acme:gpt-9`; known providers: anthropic",
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
    assert!(stderr.contains("no run 42 in this database"), "{stderr}");
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

/// Every kind's file refuses a key it does not know, in every form a key can take, with the
/// key, its line and the valid keys, before any call; YAML slips are pointed at and explained.
#[test]
fn unknown_keys_and_yaml_slips_are_named_in_every_kinds_file_before_any_call() {
    let s = Sandbox::new();
    let bench_head = "models: [openai:gpt-4o]\nprompts:\n";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "vars.yaml",
            format!(
                "{bench_head}  - name: capital\n    prompt: \"Capital of {{{{country}}}}?\"\n    \
                 vars: {{country: France}}\n    output: paris\n    method: icontains\n"
            ),
            "vars.yaml:5: prompt `capital`: unknown key `vars`; valid keys: name, prompt, output, expected, method, checks, system, temperature, top_p, max_tokens, rubric, threshold, judge",
        ),
        (
            "nested.yaml",
            format!("{bench_head}  - capital:\n      prompt: x\n      outptu: y\n      method: exact\n"),
            "nested.yaml:5: prompt `capital`: unknown key `outptu`; did you mean `output`?",
        ),
        (
            "sibling.yaml",
            format!("{bench_head}  - capital:\n    prompt: x\n    output: y\n    method: exact\n    judge_model: z\n"),
            "sibling.yaml:7: prompt `capital`: unknown key `judge_model`",
        ),
        (
            "promts.yaml",
            "models: [openai:gpt-4o]\npromts:\n  - a:\n    prompt: x\n".into(),
            "promts.yaml:2:1: unknown key `promts`; did you mean `prompts`? valid keys: kind, description, models, prompts",
        ),
        (
            "tab.yaml",
            format!("{bench_head}  - a:\n    prompt: x\n\toutput: y\n    method: exact\n"),
            "tab.yaml:5:1: a tab indents this line: indent with spaces",
        ),
        (
            "csv.yaml",
            "models: [openai:gpt-4o]\nprompts: cases.csv\n".into(),
            "csv.yaml:2: `prompts: cases.csv` is not a list of tests: cases read from a file go under `cases:`",
        ),
        (
            "systm.yaml",
            "kind: pairwise\ncandidates:\n  - model: openai:gpt-4o\n    systm: Be brief.\n  - openai:gpt-4o-mini\njudges: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: x\n".into(),
            "systm.yaml:4: candidate 1: unknown key `systm`; did you mean `system`? valid keys: model, name, system, temperature",
        ),
        (
            "candidate-prompt.yaml",
            "kind: pairwise\ncandidates:\n  - openai:gpt-4o\n  - model: openai:gpt-4o-mini\n    prompt: Capital of France?\njudges: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: x\n".into(),
            "candidate-prompt.yaml:5: candidate 2: unknown key `prompt`; valid keys: model, name, system, temperature",
        ),
        (
            "pairwise-vars.yaml",
            "kind: pairwise\ncandidates: [openai:gpt-4o, openai:gpt-4o-mini]\njudges: [openai:gpt-4o]\nprompts:\n  - name: a\n    prompt: x\n    vars: {country: France}\n".into(),
            "pairwise-vars.yaml:7: prompt `a`: unknown key `vars`",
        ),
        (
            "review.yaml",
            "kind: review\nreviewers: [openai:gpt-4o]\nbrnd: Bosch\n".into(),
            "review.yaml:3:1: unknown key `brnd`; did you mean `brand`?",
        ),
        (
            "relevance.yaml",
            "kind: relevance\nmodel: openai:gpt-4o\nimages: \"*.png\"\nground_truth: truth.json\nprompt_wth: with.txt\n".into(),
            "relevance.yaml:5:1: unknown key `prompt_wth`; did you mean `prompt_with`?",
        ),
    ];
    for (file, content, want) in cases {
        s.write(file, &content);
        let stderr = failure(&s, &["run", file]);
        assert!(stderr.contains(want), "{file}: {stderr}");
        assert!(!stderr.contains("untagged"), "{file}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    assert_eq!(s.mock.request_count(), 0, "nothing was asked");
}

#[test]
fn bad_input_exits_2_whoever_finds_it_and_what_a_run_found_exits_1() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(&["openai:gpt-4o"], &[("a", "b", "mock", "contains")]),
    );
    for args in [
        &["run", "bench.yaml", "--budget", "abc"][..],
        &["run", "bench.yaml", "--concurrency", "many"],
        &["run", "bench.yaml", "--no-such-option"],
        &["query", "--by", "weather"],
        &["query", "--by", "model"],
        &["run", "missing.yaml"],
        &["--config", "nope.yaml", "models"],
    ] {
        failure(&s, args);
    }
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    for args in [
        &["query", "--by", "model", "--run", "42"][..],
        &["diff", "1", "42"],
        &["export", "csv", "--run", "yesterday"],
    ] {
        failure(&s, args);
    }
    // What a run found is not bad input: --offline meeting a call not in the cache exits 1.
    s.write(
        "other.yaml",
        &bench_yaml(&["openai:gpt-4o"], &[("c", "d", "mock", "contains")]),
    );
    let out = s
        .track()
        .args(["run", "other.yaml", "--offline", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let help = s.track().arg("--help").output().unwrap();
    let help = text(&help.stdout);
    assert!(help.contains("Exit status:"), "{help}");
    assert!(help.contains("  2        bad input"), "{help}");
}
