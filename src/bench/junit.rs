//! Benchmark results as JUnit XML (`track export junit`), the layout GitLab, Jenkins and
//! GitHub test reporters read (the Jenkins/Ant `junit-10.xsd`): `<testsuites>`, a
//! `<testsuite>` per run, a `<testcase>` per result (case, model, template, repeat) whose
//! classname is the model; a failed check is a `<failure>` with the reason, an error row an
//! `<error>`; times are the latencies, in seconds. quick-xml escapes every value; characters
//! XML 1.0 cannot hold at all (control characters) are written as `\u001b`.

use std::borrow::Cow;
use std::io::Write;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::store::{CaseRow, Outcome, Store, SuiteRow};

/// The longest `message` attribute, in characters: the first line of the reason; the whole
/// reason is the element's text.
const MESSAGE_CHARS: usize = 240;

/// What an export wrote, for the command's note.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JunitCounts {
    pub tests: u64,
    pub failures: u64,
    pub errors: u64,
}

/// Writes the results of the benchmark runs `run_ids` to `out` as JUnit XML, one
/// `<testsuite>` per run, reading them from `store` a row at a time.
pub fn write(store: &Store, run_ids: &[i64], out: impl Write) -> anyhow::Result<JunitCounts> {
    let suites: Vec<SuiteRow> = run_ids
        .iter()
        .map(|&id| store.bench_suite(id))
        .collect::<Result<_, _>>()?;
    let total = JunitCounts {
        tests: suites.iter().map(|s| s.passed + s.failed + s.errors).sum(),
        failures: suites.iter().map(|s| s.failed).sum(),
        errors: suites.iter().map(|s| s.errors).sum(),
    };
    let seconds: f64 = suites.iter().map(|s| s.latency_ms).sum::<f64>() / 1000.0;
    let mut xml = Writer::new_with_indent(out, b' ', 2);
    xml.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", "track"));
    push_counts(&mut root, total);
    root.push_attribute(("time", seconds_text(seconds).as_str()));
    xml.write_event(Event::Start(root))?;
    for suite in &suites {
        write_suite(store, suite, &mut xml)?;
    }
    xml.write_event(Event::End(BytesEnd::new("testsuites")))?;
    xml.get_mut().write_all(b"\n")?;
    Ok(total)
}

/// The `tests`, `failures` and `errors` attributes.
fn push_counts(start: &mut BytesStart<'_>, counts: JunitCounts) {
    start.push_attribute(("tests", counts.tests.to_string().as_str()));
    start.push_attribute(("failures", counts.failures.to_string().as_str()));
    start.push_attribute(("errors", counts.errors.to_string().as_str()));
}

/// One run's `<testsuite>` and its test cases.
fn write_suite(
    store: &Store,
    suite: &SuiteRow,
    xml: &mut Writer<impl Write>,
) -> anyhow::Result<()> {
    let name = match &suite.file {
        Some(file) => format!("{file} (run {})", suite.run_id),
        None => format!("run {}", suite.run_id),
    };
    let mut start = BytesStart::new("testsuite");
    start.push_attribute(("name", xml_safe(&name).as_ref()));
    push_counts(
        &mut start,
        JunitCounts {
            tests: suite.passed + suite.failed + suite.errors,
            failures: suite.failed,
            errors: suite.errors,
        },
    );
    start.push_attribute(("skipped", "0"));
    start.push_attribute(("time", seconds_text(suite.latency_ms / 1000.0).as_str()));
    start.push_attribute(("timestamp", suite.started_at.as_str()));
    start.push_attribute(("id", suite.run_id.to_string().as_str()));
    xml.write_event(Event::Start(start))?;
    store.for_each_bench_case(suite.run_id, |case| {
        write_case(&case, suite.repeats, xml)?;
        Ok(())
    })?;
    xml.write_event(Event::End(BytesEnd::new("testsuite")))?;
    Ok(())
}

/// One result's `<testcase>`: named by its case, with its template in brackets and its repeat
/// (from 1) after `#` when the run has repeats.
fn write_case(case: &CaseRow, repeats: bool, xml: &mut Writer<impl Write>) -> std::io::Result<()> {
    let mut name = case.prompt_name.clone();
    if let Some(template) = &case.template {
        name.push_str(&format!(" [{template}]"));
    }
    if repeats {
        name.push_str(&format!(" #{}", case.repeat_index + 1));
    }
    let mut start = BytesStart::new("testcase");
    start.push_attribute(("classname", xml_safe(&case.model_ref).as_ref()));
    start.push_attribute(("name", xml_safe(&name).as_ref()));
    if let Some(ms) = case.latency_ms {
        start.push_attribute(("time", seconds_text(ms / 1000.0).as_str()));
    }
    let (element, kind) = match case.outcome {
        Outcome::Passed => return xml.write_event(Event::Empty(start)),
        Outcome::Failed => ("failure", case.method.as_str()),
        Outcome::Error => ("error", "error"),
    };
    xml.write_event(Event::Start(start))?;
    let reason = reason(case);
    let mut verdict = BytesStart::new(element);
    verdict.push_attribute(("message", xml_safe(&message(&reason)).as_ref()));
    verdict.push_attribute(("type", xml_safe(kind).as_ref()));
    xml.write_event(Event::Start(verdict))?;
    xml.write_event(Event::Text(BytesText::new(&xml_safe(&reason))))?;
    xml.write_event(Event::End(BytesEnd::new(element)))?;
    xml.write_event(Event::End(BytesEnd::new("testcase")))
}

/// Why a result did not pass: its detail, then each of its checks that did not pass with its
/// reason (a result with several checks).
fn reason(case: &CaseRow) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(detail) = case.detail.as_deref().filter(|d| !d.is_empty()) {
        lines.push(detail.to_owned());
    }
    for (i, check) in case.checks.iter().enumerate() {
        if check.outcome == Outcome::Passed {
            continue;
        }
        let why = check.reason.as_deref().unwrap_or("no reason given");
        lines.push(format!(
            "check {} ({}): {}: {why}",
            i + 1,
            check.method,
            check.outcome.as_str()
        ));
    }
    if lines.is_empty() {
        lines.push(match case.outcome {
            Outcome::Error => "error (no detail recorded)".to_owned(),
            _ => format!("failed its `{}` check", case.method),
        });
    }
    lines.join("\n")
}

/// The `message` attribute: the reason's first line, cut to [`MESSAGE_CHARS`].
fn message(reason: &str) -> String {
    let first = reason.lines().next().unwrap_or_default();
    match first.char_indices().nth(MESSAGE_CHARS) {
        Some((end, _)) => format!("{}…", &first[..end]),
        None => first.to_owned(),
    }
}

/// Seconds with at most three decimals, as the XSD's `SUREFIRE_TIME` wants them.
fn seconds_text(seconds: f64) -> String {
    format!("{:.3}", seconds.max(0.0))
}

/// `text` without the characters XML 1.0 cannot hold even escaped (control characters other
/// than tab, newline and carriage return; U+FFFE, U+FFFF): each is written `\u001b`.
fn xml_safe(text: &str) -> Cow<'_, str> {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
    };
    if text.chars().all(allowed) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| {
                if allowed(c) {
                    c.to_string()
                } else {
                    format!("\\u{:04x}", u32::from(c))
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::CheckRow;

    fn case(outcome: Outcome, detail: Option<&str>) -> CaseRow {
        CaseRow {
            model_ref: "openai:gpt-4o".into(),
            prompt_name: "q1".into(),
            template: None,
            repeat_index: 0,
            method: "exact".into(),
            outcome,
            detail: detail.map(str::to_owned),
            latency_ms: Some(1234.5),
            checks: Vec::new(),
        }
    }

    fn xml_of(case: &CaseRow, repeats: bool) -> String {
        let mut xml = Writer::new(Vec::new());
        write_case(case, repeats, &mut xml).unwrap();
        String::from_utf8(xml.into_inner()).unwrap()
    }

    #[test]
    fn a_passed_case_is_an_empty_testcase_with_its_time_in_seconds() {
        assert_eq!(
            xml_of(&case(Outcome::Passed, None), false),
            r#"<testcase classname="openai:gpt-4o" name="q1" time="1.234"/>"#
        );
        let mut templated = case(Outcome::Passed, None);
        templated.template = Some("terse".into());
        templated.repeat_index = 1;
        templated.latency_ms = None;
        assert_eq!(
            xml_of(&templated, true),
            r#"<testcase classname="openai:gpt-4o" name="q1 [terse] #2"/>"#
        );
    }

    #[test]
    fn a_failure_carries_its_reason_escaped_and_an_error_its_error() {
        let failed = case(
            Outcome::Failed,
            Some("expected `<4>` & \"four\", got 'x'\u{1b}[0m\nsecond line"),
        );
        assert_eq!(
            xml_of(&failed, false),
            "<testcase classname=\"openai:gpt-4o\" name=\"q1\" time=\"1.234\"><failure \
             message=\"expected `&lt;4&gt;` &amp; &quot;four&quot;, got &apos;x&apos;\\u001b[0m\" \
             type=\"exact\">expected `&lt;4&gt;` &amp; &quot;four&quot;, got &apos;x&apos;\\u001b[0m\nsecond \
             line</failure></testcase>"
        );
        let error = case(Outcome::Error, Some("HTTP 400: bad request"));
        assert_eq!(
            xml_of(&error, false),
            "<testcase classname=\"openai:gpt-4o\" name=\"q1\" time=\"1.234\"><error \
             message=\"HTTP 400: bad request\" type=\"error\">HTTP 400: bad request</error>\
             </testcase>"
        );
    }

    #[test]
    fn a_result_of_several_checks_lists_those_that_did_not_pass() {
        let mut failed = case(Outcome::Failed, Some("score 0.5 < 0.8"));
        failed.method = "checks".into();
        let check = |method: &str, outcome, reason: Option<&str>| CheckRow {
            method: method.into(),
            expected: None,
            outcome,
            score: None,
            weight: 1.0,
            reason: reason.map(str::to_owned),
        };
        failed.checks = vec![
            check("contains", Outcome::Passed, None),
            check("regex", Outcome::Failed, Some("no match for ^\\d+$")),
        ];
        assert_eq!(
            reason(&failed),
            "score 0.5 < 0.8\ncheck 2 (regex): failed: no match for ^\\d+$"
        );
        assert_eq!(
            reason(&case(Outcome::Failed, None)),
            "failed its `exact` check"
        );
        assert_eq!(message(&"x".repeat(300)).chars().count(), MESSAGE_CHARS + 1);
    }
}
