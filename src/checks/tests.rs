//! The checks end to end within the module: parsed from JSON as a file gives it, prepared
//! for a case, graded, combined.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::cases::Values;

fn parse(spec: Value) -> Result<CheckSpec, String> {
    CheckSpec::parse(&spec, &ParseContext::new(Path::new(".")))
}

fn values(v: Value) -> Values {
    v.as_object().cloned().unwrap_or_default()
}

fn grade_with(spec: Value, case: Value, answer: &str, facts: CallFacts) -> CheckOutcome {
    let spec = parse(spec.clone()).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let check = spec
        .prepare(&values(case))
        .unwrap_or_else(|e| panic!("{e}"));
    check.evaluate(answer, &facts).into_outcome()
}

fn grade(spec: Value, answer: &str) -> CheckOutcome {
    grade_with(spec, json!({}), answer, CallFacts::default())
}

/// Each method passing and failing, with the reason it gives (`None`: passes, no reason).
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
fn table_of_methods_with_their_reasons() {
    let cases: Vec<(Value, &str, Option<&str>)> = vec![
        // The seed's table, kept.
        (json!({"method": "exact", "value": "4"}), " 4\n", None),
        (
            json!({"method": "exact", "value": "4"}),
            "4.",
            Some("expected `4`, got `4.`"),
        ),
        (
            json!({"method": "exact", "value": "Paris"}),
            "paris",
            Some("expected `Paris`, got `paris`"),
        ),
        (
            json!({"method": "contains", "value": "Paris"}),
            "It is Paris.",
            None,
        ),
        (
            json!({"method": "contains", "value": "Paris"}),
            "It is paris.",
            Some("expected to contain `Paris`, got `It is paris.`"),
        ),
        (
            json!({"method": "icontains", "value": "Paris"}),
            "it is PARIS",
            None,
        ),
        (
            json!({"method": "icontains", "value": "Paris"}),
            "Lyon",
            Some("expected to contain `Paris`, got `Lyon`"),
        ),
        (json!({"method": "regex", "value": r"^\d+$"}), "42", None),
        (
            json!({"method": "regex", "value": r"^\d+$"}),
            "42a",
            Some(r"expected to match `^\d+$`, got `42a`"),
        ),
        (json!({"method": "json-valid"}), r#"{"a": 1}"#, None),
        (
            json!({"method": "is-json"}),
            "```json\n{\"a\": 1}\n```",
            None,
        ),
        (
            json!({"method": "json-valid"}),
            "{a: 1}",
            Some("expected valid JSON ``, got `{a: 1}`"),
        ),
        (
            json!({"method": "json-equals", "value": r#"{"a": 1, "b": [1, 2]}"#}),
            r#"{"b":[1,2.0],"a":1}"#,
            None,
        ),
        (
            json!({"method": "json-equals", "value": r#"{"a": 1}"#}),
            r#"{"a": 2}"#,
            Some(r#"expected `{"a": 1}`, got `{"a": 2}`"#),
        ),
        (
            json!({"method": "json-equals", "value": r#"{"a": 1}"#}),
            "not json",
            Some("answer is not JSON: expected ident at line 1 column 2"),
        ),
        // JSON written as YAML.
        (
            json!({"method": "json-equals", "value": {"a": [1, 2]}}),
            "```\n{\"a\": [1, 2.0]}\n```",
            None,
        ),
        // The new methods.
        (
            json!({"method": "not-contains", "value": "sorry"}),
            "Paris.",
            None,
        ),
        (
            json!({"method": "not-contains", "value": "sorry"}),
            "I am sorry, no.",
            Some("expected not to contain `sorry`, got `I am sorry, no.`"),
        ),
        (
            json!({"method": "not-icontains", "value": "sorry"}),
            "SORRY",
            Some("expected not to contain `sorry`, got `SORRY`"),
        ),
        (
            json!({"method": "starts-with", "value": "Yes"}),
            "\n Yes, it is.",
            None,
        ),
        (
            json!({"method": "starts_with", "value": ["A", "B"]}),
            "C",
            Some("expected to start with one of `A`, `B`, got `C`"),
        ),
        (
            json!({"method": "starts-with", "value": ["A", "B"]}),
            "B.",
            None,
        ),
        (
            json!({"method": "starts-with", "value": "Yes"}),
            "yes",
            Some("expected to start with `Yes`, got `yes`"),
        ),
        (
            json!({"method": "ends-with", "value": "."}),
            "Done. \n",
            None,
        ),
        (
            json!({"method": "ends-with", "value": "END"}),
            "the end",
            Some("expected to end with `END`, got `the end`"),
        ),
        (
            json!({"method": "contains-any", "value": ["cat", "dog"]}),
            "a dog",
            None,
        ),
        (
            json!({"method": "contains-any", "value": ["cat", "dog"]}),
            "a bird",
            Some("expected to contain one of `cat`, `dog`, got `a bird`"),
        ),
        (
            json!({"method": "contains-all", "value": ["a", "b"]}),
            "b and a",
            None,
        ),
        (
            json!({"method": "contains-all", "value": ["x", "y", "z"]}),
            "only y",
            Some("expected to contain all of `x`, `y`, `z`; missing `x`, `z`, got `only y`"),
        ),
        (
            json!({"method": "icontains-any", "value": ["CAT"]}),
            "a cat",
            None,
        ),
        (
            json!({"method": "icontains-all", "value": ["A", "b"]}),
            "a B",
            None,
        ),
        (
            json!({"method": "not-regex", "value": r"\d"}),
            "no digits",
            None,
        ),
        (
            json!({"method": "not-regex", "value": r"\d+"}),
            "call 911",
            Some(r"expected not to match `\d+`, got `call 911` (matched `911`)"),
        ),
        (
            json!({"method": "json-schema", "value": {"type": "object", "required": ["name"]}}),
            r#"{"name": "x"}"#,
            None,
        ),
        (
            json!({"method": "json-schema", "value": {
                "type": "object",
                "properties": {"age": {"type": "integer"}, "name": {"type": "string"}}
            }}),
            r#"{"age": "ten", "name": 3}"#,
            Some(
                r#"answer does not match the schema at `/age`: "ten" is not of type "integer" (and 1 more violation)"#,
            ),
        ),
        (
            json!({"method": "json-schema", "value": r#"{"type": "array"}"#}),
            "[1]",
            None,
        ),
        (
            json!({"method": "json-schema", "value": {"type": "array"}}),
            "nope",
            Some("answer is not JSON: expected ident at line 1 column 2"),
        ),
        (
            json!({"method": "similar", "value": "kitten"}),
            "sitting",
            Some("expected similarity 0.80 or more to `kitten`, got 0.57 with `sitting`"),
        ),
        (
            json!({"method": "similar", "value": "colour", "threshold": 0.8}),
            "color",
            None,
        ),
    ];
    for (spec, answer, want) in cases {
        let outcome = grade(spec.clone(), answer);
        match want {
            None => assert_eq!(
                outcome.status,
                CheckStatus::Passed,
                "{spec} {answer:?}: {outcome:?}"
            ),
            Some(reason) => {
                assert_eq!(
                    outcome.status,
                    CheckStatus::Failed,
                    "{spec} {answer:?}: {outcome:?}"
                );
                assert_eq!(outcome.reason.as_deref(), Some(reason), "{spec} {answer:?}");
            }
        }
    }
}

#[test]
fn similar_scores_its_ratio_pass_or_fail() {
    let pass = grade(json!({"method": "similar", "value": "colour"}), "color");
    assert_eq!(pass.score.map(|s| (s * 1000.0).round()), Some(833.0));
    let fail = grade(
        json!({"method": "similar", "value": "kitten", "threshold": 0.5}),
        "sitting",
    );
    assert_eq!(fail.status, CheckStatus::Passed);
    let strict = grade(
        json!({"method": "similar", "value": "Color", "threshold": 1}),
        "color",
    );
    assert_eq!(strict.status, CheckStatus::Failed);
    let folded = grade(
        json!({"method": "similar", "value": "Color", "threshold": 1, "ignore_case": true}),
        "color",
    );
    assert_eq!(folded.status, CheckStatus::Passed);
}

#[test]
fn ignore_case_applies_to_the_text_methods() {
    for (spec, answer) in [
        (json!({"method": "exact", "value": "Paris"}), "PARIS"),
        (json!({"method": "contains", "value": "Paris"}), "in PARIS"),
        (json!({"method": "starts-with", "value": ["Yes"]}), "yes."),
        (json!({"method": "ends-with", "value": "END"}), "the end"),
        (json!({"method": "contains-any", "value": ["Cat"]}), "CAT"),
        (
            json!({"method": "contains-all", "value": ["A", "b"]}),
            "a B",
        ),
    ] {
        assert_eq!(
            grade(spec.clone(), answer).status,
            CheckStatus::Failed,
            "{spec}"
        );
        let mut folded = spec.clone();
        folded["ignore_case"] = json!(true);
        assert_eq!(grade(folded, answer).status, CheckStatus::Passed, "{spec}");
    }
    let spec = json!({"method": "not-contains", "value": "Sorry", "ignore_case": true});
    assert_eq!(grade(spec, "SORRY").status, CheckStatus::Failed);
}

#[test]
fn values_are_templates_rendered_per_case_and_a_missing_name_is_named() {
    let spec = parse(json!({"method": "exact", "expected": "{{answer}}"})).unwrap();
    assert_eq!(spec.names(), ["answer"]);
    let check = spec.prepare(&values(json!({"answer": 12}))).unwrap();
    assert_eq!(check.expected.as_deref(), Some("12"));
    let graded = |c: &Check, a: &str| c.evaluate(a, &CallFacts::default()).into_outcome();
    assert!(graded(&check, "12").passed());
    assert!(!graded(&check, "13").passed());
    let e = spec.prepare(&values(json!({"other": 1}))).unwrap_err();
    assert_eq!(e, "no value for `{{answer}}`");

    // Lists: each item a template.
    let spec =
        parse(json!({"method": "contains-any", "value": ["{{a}}", "{{b}}", "lit"]})).unwrap();
    let check = spec.prepare(&values(json!({"a": "x", "b": "y"}))).unwrap();
    assert_eq!(check.expected.as_deref(), Some(r#"["x","y","lit"]"#));
    assert!(graded(&check, "has y").passed());

    // A templated regex is compiled per case; a bad one is that case's error.
    let spec = parse(json!({"method": "regex", "value": "^{{n}}$"})).unwrap();
    assert!(graded(&spec.prepare(&values(json!({"n": 7}))).unwrap(), "7").passed());
    let e = spec.prepare(&values(json!({"n": "("}))).unwrap_err();
    assert!(e.starts_with("`value` `^($` is not a valid regex"), "{e}");

    // A templated json-equals is parsed per case.
    let spec = parse(json!({"method": "json-equals", "value": "{{want}}"})).unwrap();
    let check = spec.prepare(&values(json!({"want": {"k": 1}}))).unwrap();
    assert!(graded(&check, r#"{"k": 1.0}"#).passed());

    // A value is inserted as text, never expanded again.
    let spec = parse(json!({"method": "exact", "value": "{{a}}"})).unwrap();
    let check = spec
        .prepare(&values(json!({"a": "{{b}}", "b": "no"})))
        .unwrap();
    assert!(graded(&check, "{{b}}").passed());
}

#[test]
fn a_literal_check_is_prepared_once_at_parsing_and_its_errors_come_then() {
    // A bad regex without names is refused when the file is read, not per case.
    let e = parse(json!({"method": "regex", "value": "(["})).unwrap_err();
    assert_eq!(
        e,
        "`value` `([` is not a valid regex: unclosed character class"
    );
    let spec = parse(json!({"method": "regex", "value": "a+"})).unwrap();
    // Preparing for any case gives the same check, with no values needed.
    let a = spec.prepare(&Values::new()).unwrap();
    let b = spec.prepare(&values(json!({"x": 1}))).unwrap();
    assert_eq!(a.expected, b.expected);
    assert!(spec.names().is_empty());
}

#[test]
fn latency_cost_and_tokens_read_the_calls_facts() {
    let facts = CallFacts {
        latency_ms: Some(1500.0),
        cost_usd: Some(0.002),
        output_tokens: Some(120),
        tools: None,
    };
    let cases = [
        (json!({"method": "latency", "value": 2000}), None),
        (
            json!({"method": "latency", "value": 1000}),
            Some("expected at most 1000 ms, took 1500 ms"),
        ),
        (json!({"method": "cost", "value": 0.01}), None),
        (json!({"method": "cost", "value": "$0.01"}), None),
        (
            json!({"method": "cost", "value": 0.001}),
            Some("expected at most $0.001, cost $0.002"),
        ),
        (json!({"method": "tokens", "value": 120}), None),
        (
            json!({"method": "tokens", "value": 100}),
            Some("expected at most 100 output tokens, used 120"),
        ),
    ];
    for (spec, want) in cases {
        let outcome = grade_with(spec.clone(), json!({}), "x", facts.clone());
        assert_eq!(outcome.reason.as_deref(), want, "{spec}");
        assert_eq!(outcome.passed(), want.is_none(), "{spec}");
    }
    // A fact the call did not record is an error, not a pass.
    let outcome = grade(json!({"method": "cost", "value": 1}), "x");
    assert_eq!(outcome.status, CheckStatus::Error);
    assert!(outcome.reason.unwrap().contains("cost is unknown"));
    let outcome = grade(json!({"method": "latency", "value": 1}), "x");
    assert_eq!(outcome.status, CheckStatus::Error);
}

#[test]
fn judge_and_script_checks_are_handed_on_never_passed_inline() {
    let context = ParseContext {
        default_judge: Some("openai:gpt-4o-mini"),
        ..ParseContext::new(Path::new("."))
    };
    let spec = CheckSpec::parse(
        &json!({"method": "llm-rubric", "value": "Is it about {{topic}}?"}),
        &context,
    )
    .unwrap();
    let check = spec.prepare(&values(json!({"topic": "cats"}))).unwrap();
    match check.evaluate("meow", &CallFacts::default()) {
        Evaluation::Judge(j) => assert_eq!(
            j,
            &JudgeCheck {
                rubric: "Is it about cats?".into(),
                threshold: 4,
                judge: "openai:gpt-4o-mini".into()
            }
        ),
        other => panic!("{other:?}"),
    }
    let outcome = check.evaluate("meow", &CallFacts::default()).into_outcome();
    assert_eq!(outcome.status, CheckStatus::Error);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("a judge check is graded by its judge model")
    );
    let spec = parse(json!({"method": "script", "run": "python3 grade.py"})).unwrap();
    let check = spec.prepare(&Values::new()).unwrap();
    assert!(matches!(
        check.evaluate("x", &CallFacts::default()),
        Evaluation::Script(s) if s.run == "python3 grade.py"
    ));
    // A judge's score: passes at its threshold, counts (score - 1) / 4.
    let judged = CheckOutcome::judged(3, 4, Some("half right"));
    assert_eq!(judged.status, CheckStatus::Failed);
    assert_eq!(judged.score, Some(0.5));
    assert_eq!(
        judged.reason.as_deref(),
        Some("scored 3/5, below 4: half right")
    );
    assert!(CheckOutcome::judged(5, 4, None).passed());
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
fn refusals_name_the_key_and_the_fix() {
    let cases = [
        (
            json!({"method": "contains", "valeu": "x"}),
            "unknown key `valeu`; did you mean `value`? valid keys: method, value, expected",
        ),
        (
            json!({"method": "fuzzy", "value": "x"}),
            "unknown method `fuzzy`; valid methods: exact, contains, icontains, regex, json-valid, json-equals, judge",
        ),
        (
            json!({"method": "javascript", "value": "output.length > 3"}),
            "use `method: script`",
        ),
        (
            json!({"value": "x"}),
            "the check has no `method:`; valid methods: exact",
        ),
        (
            json!({"method": "exact", "value": "a", "expected": "b"}),
            "`value` and `expected` are the same thing",
        ),
        (json!({"method": "exact"}), "the check has no `value:`"),
        (
            json!({"method": "regex", "value": "("}),
            "`value` `(` is not a valid regex: unclosed group",
        ),
        (
            json!({"method": "json-equals", "expected": "{"}),
            "`expected` is not valid JSON for json-equals",
        ),
        (
            json!({"method": "json-schema", "value": {"type": 5}}),
            "`value` is not a usable JSON Schema",
        ),
        (
            json!({"method": "json-schema", "value": {"$ref": "https://example.com/s.json"}}),
            "`value` is not a usable JSON Schema",
        ),
        (
            json!({"method": "json-schema", "value": "file://missing.json"}),
            "`value: file://missing.json`: cannot read",
        ),
        (
            json!({"method": "exact", "value": "x", "weight": 0}),
            "`weight: 0` must be a number above 0",
        ),
        (
            json!({"method": "exact", "value": "x", "weight": -2}),
            "`weight: -2` must be a number above 0",
        ),
        (
            json!({"method": "exact", "value": "x", "weight": "heavy"}),
            "`weight` must be a number, not `\"heavy\"`",
        ),
        (
            json!({"method": "regex", "value": "x", "ignore_case": true}),
            "`ignore_case` goes with exact, contains",
        ),
        (
            json!({"method": "icontains", "value": "x", "ignore_case": false}),
            "`icontains` always ignores case; for `ignore_case: false` use `contains`",
        ),
        (
            json!({"method": "exact", "value": "x", "rubric": "kind"}),
            "`rubric`, `threshold` and `judge` go with `method: judge`",
        ),
        (
            json!({"method": "exact", "value": "x", "threshold": 0.5}),
            "go with `method: judge`",
        ),
        (
            json!({"method": "similar", "value": "x", "threshold": 2}),
            "`threshold: 2` of `similar` must be a ratio from 0 to 1",
        ),
        (
            json!({"method": "judge", "rubric": "kind"}),
            "uses method judge but names no judge model",
        ),
        (
            json!({"method": "judge", "rubric": "kind", "judge": "a:b", "threshold": 9}),
            "`threshold` must be a whole score from 1 to 5",
        ),
        (
            json!({"method": "judge", "judge": "a:b"}),
            "uses method judge but has no `rubric:` (or `value:`)",
        ),
        (
            json!({"method": "exact", "value": ["a", "b"]}),
            "`value` is a list; only starts-with, contains-any",
        ),
        (
            json!({"method": "contains-any", "value": []}),
            "`value` is an empty list",
        ),
        (
            json!({"method": "contains-any", "value": [{"a": 1}]}),
            "`value` of `contains-any` is a list of texts; `{\"a\":1}` is not one",
        ),
        (
            json!({"method": "latency", "value": -1}),
            "`value: -1` must be a number of milliseconds, at least 0",
        ),
        (
            json!({"method": "tokens", "value": 1.5}),
            "`value: 1.5` of `tokens` must be a whole number of tokens",
        ),
        (json!({"method": "script"}), "a script check needs `run:`"),
        (
            json!({"method": "script", "run": "python3 'grade.py"}),
            "`run: python3 'grade.py` cannot be split into words",
        ),
        (
            json!({"method": "script", "run": "python3 grade.py {{answer}}"}),
            "never in its command",
        ),
        (
            json!({"method": "script", "run": "x", "timeout_secs": 0}),
            "`timeout_secs: 0` must be above 0",
        ),
        (
            json!({"method": "exact", "value": "x", "run": "y"}),
            "`run` and `timeout_secs` go with `method: script`",
        ),
        (json!("contains"), "a check is a mapping such as"),
    ];
    for (spec, want) in cases {
        let e = parse(spec.clone()).unwrap_err();
        assert!(e.contains(want), "{spec}\n=> {e}");
    }
}

#[test]
fn the_seeds_inline_tests_parse_with_output_and_their_messages() {
    let context = ParseContext {
        inline_test: true,
        ..ParseContext::new(Path::new("."))
    };
    let parse = |v: Value| CheckSpec::parse(&v, &context);
    let spec = parse(json!({"method": "exact", "output": 4})).unwrap();
    assert_eq!(
        spec.prepare(&Values::new()).unwrap().expected.as_deref(),
        Some("4")
    );
    let e = parse(json!({"method": "exact"})).unwrap_err();
    assert_eq!(e, "the test has no `output:` (the expected output)");
    let e = parse(json!({"method": "regex", "output": "(["})).unwrap_err();
    assert_eq!(
        e,
        "`output` `([` is not a valid regex: unclosed character class"
    );
    let e = parse(json!({"method": "json-equals", "output": "{"})).unwrap_err();
    assert!(
        e.starts_with("`output` is not valid JSON for json-equals: "),
        "{e}"
    );
    let e = parse(json!({"method": "judge"})).unwrap_err();
    assert!(e.contains("has no `rubric:` (or `output:`)"), "{e}");
    // A check's own keys are not an inline test's.
    let e = parse(json!({"method": "exact", "value": "x"})).unwrap_err();
    assert!(e.starts_with("unknown key `value`"), "{e}");
    // The judge's threshold may be written as text, as the seed allowed.
    let spec =
        parse(json!({"method": "judge", "output": "kind", "threshold": "3", "judge": "a:b"}))
            .unwrap();
    let check = spec.prepare(&Values::new()).unwrap();
    assert_eq!(check.judge().map(|j| j.threshold), Some(3));
}

#[test]
fn a_schema_is_read_from_a_file_beside_the_benchmark() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("person.json"),
        r#"{"type": "object", "required": ["name"]}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.json"), "{not json").unwrap();
    let context = ParseContext::new(dir.path());
    let spec = CheckSpec::parse(
        &json!({"method": "json-schema", "value": "file://person.json"}),
        &context,
    )
    .unwrap();
    let check = spec.prepare(&Values::new()).unwrap();
    assert_eq!(check.expected.as_deref(), Some("file://person.json"));
    let facts = CallFacts::default();
    assert!(
        check
            .evaluate(r#"{"name": "A"}"#, &facts)
            .into_outcome()
            .passed()
    );
    let outcome = check.evaluate(r#"{"age": 3}"#, &facts).into_outcome();
    assert_eq!(
        outcome.reason.as_deref(),
        Some(r#"answer does not match the schema: "name" is a required property"#)
    );
    let e = CheckSpec::parse(
        &json!({"method": "json-schema", "value": "file://bad.json"}),
        &context,
    )
    .unwrap_err();
    assert!(e.contains("bad.json is not a JSON Schema"), "{e}");
}

#[test]
fn weights_and_a_threshold_make_the_case() {
    let specs = [
        json!({"method": "contains", "value": "a", "weight": 3}),
        json!({"method": "contains", "value": "b"}),
        json!({"method": "similar", "value": "abcd", "threshold": 0.9}),
    ];
    let checks: Vec<Check> = specs
        .iter()
        .map(|s| parse(s.clone()).unwrap().prepare(&Values::new()).unwrap())
        .collect();
    let facts = CallFacts::default();
    let grade_all = |answer: &str| -> Vec<CheckOutcome> {
        checks
            .iter()
            .map(|c| c.evaluate(answer, &facts).into_outcome())
            .collect()
    };
    // "abc": contains a (3), contains b (1), similar 0.75 (fails but counts 0.75 of 1).
    let outcomes = grade_all("abc");
    let all = combine(PassRule::All, checks.iter().zip(&outcomes));
    assert_eq!(all.status, CheckStatus::Failed);
    assert_eq!(
        all.reason.as_deref(),
        Some("similar: expected similarity 0.90 or more to `abcd`, got 0.75 with `abc`")
    );
    assert!((all.score - 4.75 / 5.0).abs() < 1e-9, "{}", all.score);
    let rule = PassRule::parse(Some(&json!({"threshold": 0.9}))).unwrap();
    assert_eq!(rule, PassRule::Threshold(0.9));
    let weighted = combine(rule, checks.iter().zip(&outcomes));
    assert_eq!(weighted.status, CheckStatus::Passed, "{weighted:?}");
    let strict = combine(PassRule::Threshold(0.96), checks.iter().zip(&outcomes));
    assert_eq!(strict.status, CheckStatus::Failed);
    assert!(
        strict
            .reason
            .as_deref()
            .unwrap()
            .starts_with("weighted score 0.95 is below 0.96; similar: expected similarity"),
        "{strict:?}"
    );
    // "xb": only `contains b` passes: 1 of 5 plus similar's 0.25.
    let outcomes = grade_all("xb");
    let case = combine(PassRule::Threshold(0.5), checks.iter().zip(&outcomes));
    assert_eq!(case.status, CheckStatus::Failed);
    assert!(case.reason.unwrap().contains("(and 1 more check failed)"));
    // An error makes the case an error, whatever the score.
    let mut outcomes = grade_all("abcd");
    outcomes[1] = CheckOutcome::error("script `x` exited with status 1");
    let case = combine(PassRule::Threshold(0.1), checks.iter().zip(&outcomes));
    assert_eq!(case.status, CheckStatus::Error);
    assert_eq!(
        case.reason.as_deref(),
        Some("contains: script `x` exited with status 1")
    );
    // No check: an error.
    let none: Vec<(&Check, &CheckOutcome)> = Vec::new();
    assert_eq!(combine(PassRule::All, none).status, CheckStatus::Error);
}

#[test]
fn the_pass_rule_is_parsed_and_refused_with_the_fix() {
    assert_eq!(PassRule::parse(None), Ok(PassRule::All));
    assert_eq!(PassRule::parse(Some(&json!({}))), Ok(PassRule::All));
    for (pass, want) in [
        (
            json!({"threshold": 0}),
            "must be a score above 0 and at most 1",
        ),
        (
            json!({"threshold": 1.5}),
            "must be a score above 0 and at most 1",
        ),
        (
            json!({"treshold": 0.5}),
            "unknown key `treshold`; did you mean `threshold`?",
        ),
        (json!(0.8), "`pass` is a mapping such as `{threshold: 0.8}`"),
    ] {
        let e = PassRule::parse(Some(&pass)).unwrap_err();
        assert!(e.contains(want), "{pass} => {e}");
    }
}

#[test]
fn a_slip_in_a_method_name_gets_a_suggestion() {
    let e = "containz".parse::<Method>().unwrap_err();
    assert!(
        e.starts_with("unknown method `containz`; did you mean `contains`? valid methods:"),
        "{e}"
    );
}

#[test]
fn a_check_names_the_turn_of_a_conversation_it_grades() {
    let spec = parse(json!({"method": "contains", "value": "x", "turn": 2})).unwrap();
    assert_eq!(spec.prepare(&Values::new()).unwrap().turn, Some(2));
    let last = parse(json!({"method": "contains", "value": "x"})).unwrap();
    assert_eq!(last.prepare(&Values::new()).unwrap().turn, None, "the last");
    for (turn, says) in [
        (json!(0), "a whole number from 1"),
        (json!(1.5), "a whole number from 1"),
        (json!("two"), "`turn` must be a number"),
    ] {
        let e = parse(json!({"method": "contains", "value": "x", "turn": turn})).unwrap_err();
        assert!(e.contains(says), "{turn}: {e}");
    }
    let e = parse(json!({"method": "judge", "rubric": "r", "judge": "openai:gpt-4o", "turn": 1}))
        .unwrap_err();
    assert!(e.contains("does not apply to `judge`"), "{e}");
}

/// The tool checks grade the loop's trace: passing and failing, with their reasons; a case's
/// value in the tool's name; malformed ones refused.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a test reads as one scenario (or table), top to bottom"
)]
fn tool_checks_grade_the_calls_and_steps_of_a_loop() {
    let trace = ToolTrace {
        calls: vec![
            (
                "weather".into(),
                json!({"city": "Paris", "units": {"temp": "C", "wind": "kmh"}}),
            ),
            ("clock".into(), json!({})),
        ],
        steps: 3,
    };
    let facts = CallFacts {
        tools: Some(std::sync::Arc::new(trace)),
        ..CallFacts::default()
    };
    let graded = |spec: Value| grade_with(spec, json!({"tool": "weather"}), "", facts.clone());
    for (spec, reason) in [
        (json!({"method": "tool-called", "value": "weather"}), None),
        (json!({"method": "tool-called", "value": "{{tool}}"}), None),
        (
            json!({"method": "tool-called", "value": "weather",
                   "arguments": {"city": "Paris", "units": {"temp": "C"}}}),
            None,
        ),
        (
            json!({"method": "tool-called", "value": "weather", "arguments": {"city": "Rome"}}),
            Some(r#"expected a call of `weather` with arguments holding {"city":"Rome"}, got"#),
        ),
        (
            json!({"method": "tool-called", "value": "search"}),
            Some("expected a call of `search`, got `weather`, `clock`"),
        ),
        (
            json!({"method": "tool-not-called", "value": "search"}),
            None,
        ),
        (
            json!({"method": "tool-not-called", "value": "clock"}),
            Some("expected no call of `clock`, got 1 call"),
        ),
        (
            json!({"method": "tool-sequence", "value": ["weather", "clock"]}),
            None,
        ),
        (
            json!({"method": "tool-sequence", "value": ["clock", "weather"]}),
            Some("expected the calls [clock, weather], got [weather, clock]"),
        ),
        (
            json!({"method": "tool-sequence", "value": ["weather"]}),
            Some("expected the calls [weather], got [weather, clock]"),
        ),
        (json!({"method": "steps", "value": 3}), None),
        (
            json!({"method": "steps", "value": 2}),
            Some("expected at most 2 steps, took 3"),
        ),
    ] {
        let outcome = graded(spec.clone());
        match reason {
            None => assert!(outcome.passed(), "{spec}: {outcome:?}"),
            Some(reason) => {
                assert_eq!(outcome.status, CheckStatus::Failed, "{spec}");
                let said = outcome.reason.unwrap_or_default();
                assert!(said.contains(reason), "{spec}: {said}");
            }
        }
    }
    // No loop: no tool called, one step.
    let none = grade(json!({"method": "tool-called", "value": "weather"}), "hi");
    assert_eq!(none.status, CheckStatus::Failed);
    assert!(grade(json!({"method": "steps", "value": 1}), "hi").passed());
    for (spec, says) in [
        (
            json!({"method": "steps", "value": "many"}),
            "must be a whole number of calls",
        ),
        (
            json!({"method": "tool-called", "value": "w", "arguments": "city=Paris"}),
            "`arguments` is a mapping",
        ),
        (
            json!({"method": "contains", "value": "w", "arguments": {"a": 1}}),
            "`arguments` goes with `method: tool-called`",
        ),
        (json!({"method": "tool-called"}), "has no `value:`"),
    ] {
        let e = parse(spec.clone())
            .and_then(|s| s.prepare(&Values::new()))
            .unwrap_err();
        assert!(e.contains(says), "{spec}: {e}");
    }
}

/// The excerpt made in one pass is what trimming, flattening newlines to `⏎` and cutting at
/// 60 characters with an ellipsis make, at the edges of the cut and with wide characters.
#[test]
fn an_excerpt_is_the_trimmed_flattened_text_cut_at_60_characters() {
    let reference = |s: &str| {
        let flat = s.trim().replace('\n', "⏎");
        crate::llm::client::truncate_chars(&flat, 60)
    };
    let texts = [
        String::new(),
        "  \n ".to_owned(),
        " 42\n".to_owned(),
        "a\nb\r\nc".to_owned(),
        "x".repeat(59),
        "x".repeat(60),
        "x".repeat(61),
        format!("{}\n", "é".repeat(60)),
        format!("\n{}\n{}", "日本".repeat(30), "z"),
        "🙂\n".repeat(40),
    ];
    for text in &texts {
        assert_eq!(excerpt(text), reference(text), "{text:?}");
    }
    assert_eq!(excerpt(&"x".repeat(61)), format!("{}…", "x".repeat(60)));
    assert_eq!(excerpt(" a\nb "), "a⏎b");
}

/// Case ignored, `exact` and `icontains` decide as lower-casing both texts does: in place
/// for ASCII, and for texts whose lower case is not byte for byte (the Kelvin sign `K`
/// lower-cases to `k`, `İ` to `i̇`), a long value, an empty one.
#[test]
fn ignored_case_decides_as_lower_casing_both_texts() {
    let long = format!("{}Needle", "ab".repeat(40));
    let pairs = [
        ("The answer is PARIS.", "paris"),
        ("The answer is PARIS.", "lyon"),
        ("PARIS", "paris"),
        ("PARIS ", "Paris!"),
        ("\u{212A}elvin", "kelvin"),
        ("kelvin", "\u{212A}ELVIN"),
        ("İstanbul", "i̇stanbul"),
        ("ÉCOLE", "école"),
        ("anything", ""),
        ("", "a"),
        ("ab", "abc"),
        ("xxxxxxxxxx", "X"),
    ];
    let long_answer = format!("say {} now", long.to_uppercase());
    let pairs = pairs
        .iter()
        .map(|(a, w)| ((*a).to_owned(), (*w).to_owned()))
        .chain([
            (long_answer.clone(), long.clone()),
            (long_answer, format!("{long}!")),
        ]);
    for (answer, want) in pairs {
        let contains = answer.to_lowercase().contains(&want.to_lowercase());
        let spec = json!({"method": "icontains", "value": want});
        assert_eq!(
            grade(spec, &answer).passed(),
            contains,
            "{answer:?} {want:?}"
        );
        let same = answer.trim().to_lowercase() == want.trim().to_lowercase();
        let spec = json!({"method": "exact", "value": want, "ignore_case": true});
        assert_eq!(grade(spec, &answer).passed(), same, "{answer:?} {want:?}");
    }
}

/// A case's reason names its first failed check and how many more failed, whatever their
/// number, and the first in error before any failure.
#[test]
fn a_reason_names_the_first_check_and_counts_the_others() {
    let checks: Vec<Check> = ["a", "b", "c"]
        .iter()
        .map(|v| {
            parse(json!({"method": "contains", "value": v}))
                .unwrap()
                .prepare(&Values::new())
                .unwrap()
        })
        .collect();
    let facts = CallFacts::default();
    let outcomes: Vec<CheckOutcome> = checks
        .iter()
        .map(|c| c.evaluate("zzz", &facts).into_outcome())
        .collect();
    let reason = |outcomes: &[CheckOutcome]| {
        combine(PassRule::All, checks.iter().zip(outcomes))
            .reason
            .unwrap_or_default()
    };
    assert_eq!(
        reason(&outcomes),
        "contains: expected to contain `a`, got `zzz` (and 2 more checks failed)"
    );
    assert_eq!(
        reason(&outcomes[1..]),
        "contains: expected to contain `b`, got `zzz` (and 1 more check failed)"
    );
    let mut errored = outcomes.clone();
    errored[2] = CheckOutcome::error("timed out");
    errored[1] = CheckOutcome {
        status: CheckStatus::Error,
        score: None,
        reason: None,
    };
    assert_eq!(
        reason(&errored),
        "contains: no reason given (and 1 more check in error)"
    );
}

#[test]
fn a_null_value_is_named_with_the_quote_that_keeps_the_text() {
    let e = parse(json!({"method": "exact", "value": null})).unwrap_err();
    assert_eq!(
        e,
        "`value` is null: YAML reads `~`, `null` and nothing as no value; to compare with a \
         text, quote it (`value: \"null\"`)"
    );
    let e = parse(json!({"method": "exact"})).unwrap_err();
    assert!(e.starts_with("the check has no `value:`"), "{e}");
    let quoted = parse(json!({"method": "exact", "value": "null"})).unwrap();
    let check = quoted.prepare(&Values::new()).unwrap();
    assert!(
        check
            .evaluate("null", &CallFacts::default())
            .into_outcome()
            .passed()
    );
}
