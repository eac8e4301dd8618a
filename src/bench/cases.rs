//! A benchmark whose tests come from data: its prompt templates (`templates:`), its cases
//! (`cases:`, inline or read from files by `crate::cases`) and the checks of every case
//! (`checks:`), made into one [`PromptTest`] per case with one request per template. Every
//! name a template or a check uses is checked against the cases' columns here, before any
//! call. No I/O but reading the `file://` texts a template names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::spec::{PromptTest, TestRequest};
use crate::cases::{Template, Values};
use crate::checks::{CheckSpec, ParseContext};
use crate::llm::{Message, Part, Role, SamplingParams};

/// A prompt template: a name and the messages it renders for a case.
#[derive(Debug, Clone)]
pub struct PromptTemplate {
    pub name: String,
    /// The system prompt, if any (a `system` message of a message list lands here too).
    pub system: Option<Template>,
    /// The system prompt's text when it names nothing: one text every case's calls share.
    pub shared_system: Option<Arc<str>>,
    /// The messages, in order: the last is the user's turn the model answers.
    pub messages: Vec<(Role, Template)>,
    /// The sha256 of what it renders from (its system and messages as written, file texts
    /// read), stored with the run.
    pub sha256: String,
    /// Its position under `templates:`, for messages.
    pub index: usize,
}

/// One case, whatever it was read from.
#[derive(Debug, Clone)]
pub struct CaseInput {
    /// Its id: an `id` column's value, or a hash of its values.
    pub id: String,
    pub values: Values,
    /// The whole input, when the case brings its messages (a `messages` column).
    pub messages: Option<Vec<Message>>,
    /// The checks the case brings besides the benchmark's (`checks:` of the case).
    pub checks: Vec<Value>,
    /// Where it was read: `data/math.jsonl:12`, or `bench.yaml:30`.
    pub origin: String,
}

/// Keys of a template given as a mapping.
const TEMPLATE_KEYS: [&str; 4] = ["name", "system", "prompt", "messages"];

/// Reads `templates:`: each a text (`file://` reads a file, relative to `base`), or a mapping
/// of `name`, `system` and either `prompt` or `messages` (a list of `{role, content}`).
/// Errors carry the template's index, for its line.
pub(crate) fn parse_templates(
    items: Vec<Value>,
    base: &Path,
) -> Result<Vec<PromptTemplate>, (usize, String)> {
    let mut templates: Vec<PromptTemplate> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let template = parse_template(index, item, base).map_err(|e| (index, e))?;
        if let Some(other) = templates.iter().find(|t| t.name == template.name) {
            return Err((
                index,
                format!(
                    "templates {} and {} are both named `{}`; names must be unique",
                    other.index + 1,
                    index + 1,
                    template.name
                ),
            ));
        }
        templates.push(template);
    }
    Ok(templates)
}

fn parse_template(index: usize, item: Value, base: &Path) -> Result<PromptTemplate, String> {
    let label = format!("template {}", index + 1);
    let (name, system, messages) = match item {
        Value::String(text) => {
            let name = file_name(&text).unwrap_or_else(|| format!("template_{}", index + 1));
            let prompt = text_or_file(&label, "prompt", &text, base)?;
            (name, None, vec![(Role::User, prompt)])
        }
        Value::Object(fields) => template_of_mapping(index, fields, &label, base)?,
        other => {
            return Err(format!(
                "{label} is `{other}`: write a prompt text, file://PATH, or a mapping with \
                 `name` and `prompt` or `messages`"
            ));
        }
    };
    // A system message in a list is the system prompt (Anthropic takes it apart).
    let (mut systems, messages): (Vec<_>, Vec<_>) = messages
        .into_iter()
        .partition(|(role, _)| *role == Role::System);
    let system = match (system, systems.len()) {
        (system, 0) => system,
        (None, 1) => systems.pop().map(|(_, t)| t),
        _ => {
            return Err(format!(
                "template `{name}` has more than one system prompt; keep one"
            ));
        }
    };
    if messages.last().is_none_or(|(role, _)| *role != Role::User) {
        return Err(format!(
            "template `{name}`: the last message must be the user's (the turn the model answers)"
        ));
    }
    let sha256 = crate::hash::sha256_hex(
        serde_json::json!({
            "system": system.as_ref().map(Template::text),
            "messages": messages.iter().map(|(r, t)| [r.as_str(), t.text()]).collect::<Vec<_>>(),
        })
        .to_string()
        .as_bytes(),
    );
    Ok(PromptTemplate {
        name,
        shared_system: None,
        system,
        messages,
        sha256,
        index,
    })
}

/// A template's name, system prompt and messages.
type TemplateParts = (String, Option<Template>, Vec<(Role, Template)>);

/// A template written as a mapping (`name`, `system`, `prompt` or `messages`): its name,
/// system prompt and messages, checked.
fn template_of_mapping(
    index: usize,
    mut fields: serde_json::Map<String, Value>,
    label: &str,
    base: &Path,
) -> Result<TemplateParts, String> {
    if let Some(key) = fields.keys().find(|k| !TEMPLATE_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "{label}: {}",
            crate::yaml::unknown_key(key, &TEMPLATE_KEYS)
        ));
    }
    let name = match fields.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        None | Some(Value::Null) => format!("template_{}", index + 1),
        Some(other) => return Err(format!("{label}: `name: {other}` is not a name")),
    };
    let label = format!("template `{name}`");
    let system = match fields.remove("system") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(text_or_file(&label, "system", &s, base)?),
        Some(_) => return Err(format!("{label}: `system` must be text")),
    };
    let messages = match (fields.remove("prompt"), fields.remove("messages")) {
        (Some(Value::String(p)), None) => {
            vec![(Role::User, text_or_file(&label, "prompt", &p, base)?)]
        }
        (None, Some(Value::Array(list))) => message_list(&label, list, base)?,
        (Some(_), Some(_)) => {
            return Err(format!(
                "{label} has both `prompt` and `messages`; give one"
            ));
        }
        (None, None) => {
            return Err(format!(
                "{label} has no `prompt:` (a text or file://PATH) or `messages:`"
            ));
        }
        (Some(_), None) => return Err(format!("{label}: `prompt` must be text")),
        (None, Some(_)) => {
            return Err(format!(
                "{label}: `messages` must be a list of {{role, content}}"
            ));
        }
    };
    Ok((name, system, messages))
}

/// A message list's `{role, content}` items.
fn message_list(
    label: &str,
    list: Vec<Value>,
    base: &Path,
) -> Result<Vec<(Role, Template)>, String> {
    list.into_iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{label}, message {}", i + 1);
            let Value::Object(fields) = item else {
                return Err(format!("{at} is not a mapping of `role` and `content`"));
            };
            if let Some(key) = fields
                .keys()
                .find(|k| !["role", "content"].contains(&k.as_str()))
            {
                return Err(format!(
                    "{at}: {}",
                    crate::yaml::unknown_key(key, &["role", "content"])
                ));
            }
            let role = match fields.get("role").and_then(Value::as_str) {
                Some(role) => parse_role(role).ok_or_else(|| {
                    format!("{at}: role `{role}` is none of system, user, assistant")
                })?,
                None => return Err(format!("{at} has no `role:`")),
            };
            let content = fields
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{at} has no `content:` text"))?;
            Ok((role, text_or_file(&at, "content", content, base)?))
        })
        .collect()
}

fn parse_role(role: &str) -> Option<Role> {
    match role.trim().to_ascii_lowercase().as_str() {
        "system" | "developer" => Some(Role::System),
        "user" | "human" => Some(Role::User),
        "assistant" | "ai" => Some(Role::Assistant),
        _ => None,
    }
}

/// `file://PATH`'s file name without its extension, as a template's default name.
fn file_name(text: &str) -> Option<String> {
    let path = text.trim().strip_prefix("file://")?;
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
}

/// A template from `text`, or from the file `file://PATH` names (relative to `base`).
fn text_or_file(label: &str, key: &str, text: &str, base: &Path) -> Result<Template, String> {
    match text.trim().strip_prefix("file://") {
        Some(path) => {
            let path = resolve(base, path);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("{label}: cannot read `{key}` file {}: {e}", path.display())
            })?;
            Ok(Template::parse(&text))
        }
        None => Ok(Template::parse(text)),
    }
}

/// `path` relative to `base` unless absolute.
pub(crate) fn resolve(base: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// Cases written in the benchmark file, under `cases:`: each a mapping of its values (an `id`
/// among them names it; `checks` are its own checks). `line` gives an item's line.
pub(crate) fn inline_cases(
    items: Vec<Value>,
    id_column: Option<&str>,
    file: &str,
    line: impl Fn(usize) -> Option<u64>,
) -> Result<Vec<CaseInput>, (usize, String)> {
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let origin = match line(index) {
                Some(l) => format!("{file}:{l}"),
                None => format!("{file}, case {}", index + 1),
            };
            let Value::Object(mut values) = item else {
                return Err((
                    index,
                    format!(
                        "case {} is not a mapping of its values (`- {{a: 2, b: 3}}`)",
                        index + 1
                    ),
                ));
            };
            let checks = match values.remove("checks") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list,
                Some(one @ Value::Object(_)) => vec![one],
                Some(_) => {
                    return Err((
                        index,
                        format!("case {}: `checks` must be a list of checks", index + 1),
                    ));
                }
            };
            let id = case_id(&values, id_column).map_err(|e| (index, e))?;
            let messages =
                case_messages(&values).map_err(|e| (index, format!("case `{id}`: {e}")))?;
            Ok(CaseInput {
                id,
                values,
                messages,
                checks,
                origin,
            })
        })
        .collect()
}

/// A case's id, as a data file's would be: its `id_column`'s value (or `id`'s, when the
/// file names no column), else the hash of its values.
pub(crate) fn case_id(values: &Values, id_column: Option<&str>) -> Result<String, String> {
    crate::cases::ids::case_id(values, id_column)
        .ok_or_else(|| format!("it has no `{}` (the id column)", id_column.unwrap_or("id")))
}

/// A `messages` value in OpenAI's chat format, if the case has one.
pub(crate) fn case_messages(values: &Values) -> Result<Option<Vec<Message>>, String> {
    let Some(value) = values.get("messages") else {
        return Ok(None);
    };
    let messages = crate::cases::case::parse_messages(value, "messages")?;
    Ok(Some(messages.into_iter().map(Message::from).collect()))
}

/// What every test of a data-driven benchmark shares.
pub struct Shared<'a> {
    pub templates: &'a [PromptTemplate],
    /// The benchmark's checks, for every case (each case renders them).
    pub checks: &'a [CheckSpec],
    /// Shared by every test: one allocation for 100,000 cases.
    pub params: Arc<SamplingParams>,
    /// The benchmark's `system:`, for cases that bring their `turns`.
    pub system: Option<Arc<str>>,
    /// How a case's own checks are read.
    pub context: ParseContext<'a>,
    /// Keep every case's values, not only those its scripts read (a target is sent them).
    pub keep_values: bool,
}

/// The tests of `cases`: one per case, with one request per template (or the case's own
/// messages when there are no templates) and the benchmark's checks, then the case's.
pub(crate) fn build_tests(
    cases: Vec<CaseInput>,
    shared: &Shared<'_>,
) -> Result<Vec<PromptTest>, String> {
    cases
        .into_iter()
        .map(|case| case_test(case, shared))
        .collect()
}

/// The test of one case; an error names the case and where it comes from.
fn case_test(case: CaseInput, shared: &Shared<'_>) -> Result<PromptTest, String> {
    let CaseInput {
        id,
        values,
        messages,
        checks,
        origin,
    } = case;
    let at = |e: String| format!("{origin}: case `{id}`: {e}");
    let requests = case_requests(&values, messages, shared).map_err(&at)?;
    let prepared = case_checks(&values, &checks, shared).map_err(&at)?;
    super::conversation::check_turns(&prepared, requests[0].turns()).map_err(&at)?;
    let scripted = prepared.iter().any(|c| c.script().is_some());
    Ok(PromptTest {
        name: id,
        requests,
        checks: prepared,
        params: shared.params.clone(),
        // Kept only for the scripts (and targets) that read them: a dataset's values are
        // the largest part of what a plan of 100,000 cases holds.
        values: (scripted || shared.keep_values).then(|| Arc::new(values)),
    })
}

/// A case's requests: its own conversation (`turns`), else one per template, else its own
/// `messages`.
fn case_requests(
    values: &Values,
    messages: Option<Vec<Message>>,
    shared: &Shared<'_>,
) -> Result<Vec<TestRequest>, String> {
    let turns = values
        .get("turns")
        .filter(|v| !v.is_null())
        .map(super::conversation::turns_messages)
        .transpose()?;
    if let Some(turns) = turns {
        if !shared.templates.is_empty() || messages.is_some() {
            return Err(format!(
                "it has `turns` (its own conversation) and {}; keep one",
                if messages.is_some() {
                    "`messages`"
                } else {
                    "the benchmark has `templates:`"
                }
            ));
        }
        return Ok(vec![super::conversation::request(
            shared.system.clone(),
            turns,
        )]);
    }
    if shared.templates.is_empty() {
        let messages = messages.ok_or_else(|| {
            "there is no `templates:` and the case has no `messages`: add `templates:` with a \
             prompt that names the case's columns ({{column}})"
                .to_owned()
        })?;
        return Ok(vec![request_of_messages(messages)]);
    }
    shared.templates.iter().map(|t| render(t, values)).collect()
}

/// A case's checks, prepared for its values: the benchmark's, then its own.
fn case_checks(
    values: &Values,
    checks: &[serde_json::Value],
    shared: &Shared<'_>,
) -> Result<Vec<crate::checks::Check>, String> {
    let mut prepared = Vec::with_capacity(shared.checks.len() + checks.len());
    for spec in shared.checks {
        prepared.push(spec.prepare(values)?);
    }
    for (i, check) in checks.iter().enumerate() {
        let check = CheckSpec::parse(check, &shared.context)
            .and_then(|spec| spec.prepare(values))
            .map_err(|e| format!("its check {}: {e}", i + 1))?;
        prepared.push(check);
    }
    if prepared.is_empty() {
        return Err(
            "it has no check: add `checks:` to the benchmark (for every case) or a `checks` \
             column or entry to the case"
                .into(),
        );
    }
    if prepared.iter().filter(|c| c.judge().is_some()).count() > 1 {
        return Err(
            "it has more than one `judge` check; a case has one judge (put every criterion in \
             its rubric)"
                .into(),
        );
    }
    Ok(prepared)
}

/// The request of a case's own messages: a system message becomes the system prompt.
fn request_of_messages(messages: Vec<Message>) -> TestRequest {
    let (system, messages): (Vec<Message>, Vec<Message>) =
        messages.into_iter().partition(|m| m.role == Role::System);
    let system = (!system.is_empty()).then(|| {
        system
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n")
            .into()
    });
    super::conversation::request(system, messages)
}

/// `template` rendered for one case's `values`; a system prompt that names nothing is the
/// template's one shared text.
fn render(template: &PromptTemplate, values: &Values) -> Result<TestRequest, String> {
    let fill = |t: &Template| {
        t.render(values)
            .map_err(|e| format!("template `{}`: {e}", template.name))
    };
    let system = match (&template.shared_system, &template.system) {
        (Some(shared), _) => Some(shared.clone()),
        (None, Some(system)) => Some(fill(system)?.into()),
        (None, None) => None,
    };
    let messages = template
        .messages
        .iter()
        .map(|(role, t)| {
            Ok(Message {
                role: *role,
                parts: vec![Part::Text(fill(t)?)],
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(TestRequest {
        system,
        messages: messages.into(),
        open: Arc::from([]),
    })
}

/// The columns no template and no check uses (but the id column, `messages` and `checks`),
/// for a warning.
pub(crate) fn unused_columns(
    columns: &[String],
    templates: &[PromptTemplate],
    checks: &[CheckSpec],
    id_column: Option<&str>,
) -> Vec<String> {
    let mut used: Vec<String> = Vec::new();
    for t in templates {
        for template in t.system.iter().chain(t.messages.iter().map(|(_, t)| t)) {
            used.extend(template.columns(columns).into_iter().map(str::to_owned));
        }
    }
    for check in checks {
        for template in check.templates() {
            used.extend(template.columns(columns).into_iter().map(str::to_owned));
        }
    }
    columns
        .iter()
        .filter(|c| {
            !used.contains(c)
                && Some(c.as_str()) != id_column
                && !["id", "messages", "turns", "checks"].contains(&c.as_str())
        })
        .cloned()
        .collect()
}

/// The names a template or check uses that no column has: `(who, name)`.
pub(crate) fn unknown_names(
    columns: &[String],
    templates: &[PromptTemplate],
    checks: &[CheckSpec],
) -> Vec<(String, String)> {
    let mut unknown = Vec::new();
    for t in templates {
        for template in t.system.iter().chain(t.messages.iter().map(|(_, t)| t)) {
            for name in template.unknown_names(columns) {
                unknown.push((format!("template `{}`", t.name), name.to_owned()));
            }
        }
    }
    for (i, check) in checks.iter().enumerate() {
        for template in check.templates() {
            for name in template.unknown_names(columns) {
                unknown.push((format!("check {}", i + 1), name.to_owned()));
            }
        }
    }
    unknown
}

#[cfg(test)]
mod tests {
    use super::super::spec::BenchSpec;
    use crate::checks::PassRule;
    use std::path::Path;

    const FILE: &str = r#"
models: [openai:gpt-4o-mini, ollama:llama3.2]
system: Be brief.
templates:
  - name: terse
    system: "Answer with the number only."
    prompt: "What is {{a}} * {{b}}?"
  - name: chat
    messages:
      - {role: user, content: "2 * 3?"}
      - {role: assistant, content: "6"}
      - {role: user, content: "{{a}} * {{b}}?"}
cases:
  - {qid: q1, a: 2, b: 21, answer: "42"}
  - {qid: q2, a: 3, b: 3, answer: "9", checks: [{method: contains, value: "nine"}]}
  - {a: 1, b: 1, answer: "1", note: unused}
checks:
  - {method: exact, expected: "{{answer}}"}
  - {method: icontains, value: "{{answer}}", weight: 2}
pass: {threshold: 0.6}
"#;

    fn parse(text: &str) -> Result<BenchSpec, String> {
        BenchSpec::parse(Path::new("bench.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn every_case_gets_a_request_per_template_and_the_checks_rendered_for_it() {
        let spec = parse(FILE).unwrap();
        assert_eq!(
            spec.templates
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["terse", "chat"]
        );
        assert_eq!(spec.pass, PassRule::Threshold(0.6));
        let q1 = &spec.prompts[0];
        // Inline cases without `id:` have no id column named: a hash of their values.
        assert_eq!(q1.name.len(), 16);
        assert_eq!(q1.requests.len(), 2);
        assert_eq!(
            q1.requests[0].system.as_deref(),
            Some("Answer with the number only.")
        );
        assert_eq!(q1.requests[0].prompt_text(), "What is 2 * 21?");
        // The file's `system:` fills a template that has none.
        assert_eq!(q1.requests[1].system.as_deref(), Some("Be brief."));
        let chat: Vec<(&str, String)> = q1.requests[1]
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.text()))
            .collect();
        assert_eq!(
            chat,
            [
                ("user", "2 * 3?".to_owned()),
                ("assistant", "6".to_owned()),
                ("user", "2 * 21?".to_owned())
            ]
        );
        assert_eq!(q1.checks.len(), 2);
        assert_eq!(q1.checks[0].expected.as_deref(), Some("42"));
        assert_eq!(q1.checks[1].weight, 2.0);
        // A case's own checks come after the benchmark's.
        assert_eq!(spec.prompts[1].checks.len(), 3);
        assert_eq!(spec.prompts[1].checks[2].expected.as_deref(), Some("nine"));
        // What the run records: each template's hash.
        let kinds: Vec<&str> = spec.inputs.iter().map(|i| i.kind).collect();
        assert_eq!(kinds, ["template", "template"]);
        assert!(
            spec.notes
                .iter()
                .any(|n| n.contains("column") && n.contains("note")),
            "{:?}",
            spec.notes
        );
    }

    #[test]
    fn an_inline_case_with_an_id_is_named_by_it_and_duplicates_are_refused() {
        let text = FILE.replace(
            "{a: 1, b: 1, answer: \"1\", note: unused}",
            "{id: q1, a: 1, b: 1, answer: \"1\"}",
        );
        let spec = parse(&text).unwrap();
        assert_eq!(spec.prompts[2].name, "q1");
        let text = FILE.replace("{qid: q1, a: 2", "{id: same, a: 2").replace(
            "{a: 1, b: 1, answer: \"1\", note: unused}",
            "{id: same, a: 1, b: 1, answer: \"1\"}",
        );
        let e = parse(&text).unwrap_err();
        assert!(
            e.contains("two cases have the id `same`: bench.yaml:14 and bench.yaml:16"),
            "{e}"
        );
    }

    #[test]
    fn names_without_a_column_and_cases_without_checks_are_refused_before_any_call() {
        let e = parse(&FILE.replace("{{b}}?\"\n  - name: chat", "{{c}}?\"\n  - name: chat"))
            .unwrap_err();
        assert!(
            e.starts_with(
                "bench.yaml:5: template `terse` uses `{{c}}`, but no case has a column `c`"
            ),
            "{e}"
        );
        assert!(
            e.contains("(bench.yaml's cases: columns qid, a, b, answer, note)"),
            "{e}"
        );
        let e = parse(&FILE.replace("expected: \"{{answer}}\"", "expected: \"{{answr}}\""))
            .unwrap_err();
        assert!(
            e.starts_with("bench.yaml:18: check 1 uses `{{answr}}`"),
            "{e}"
        );
        let no_checks = &FILE[..FILE.find("checks:\n").unwrap()];
        let e = parse(no_checks).unwrap_err();
        assert!(e.contains("has no check: add `checks:`"), "{e}");
        let e = parse(&FILE.replace("cases:", "prompts: []\ncases:")).unwrap_err();
        assert!(e.contains("both `prompts:`"), "{e}");
        let two_judges = FILE.replace(
            "pass: {threshold: 0.6}",
            "  - {method: judge, rubric: a, judge: openai:gpt-4o}\n  - {method: judge, rubric: b, judge: openai:gpt-4o}\n",
        );
        let e = parse(&two_judges).unwrap_err();
        assert!(e.contains("more than one `judge` check"), "{e}");
        let e = parse(&FILE.replace("pass: {threshold: 0.6}", "pass: {threshold: 6}")).unwrap_err();
        assert!(e.contains("must be a score above 0 and at most 1"), "{e}");
    }

    #[test]
    fn a_case_may_bring_its_own_messages_and_a_literal_pair_of_braces_stays() {
        let text = r#"
models: [openai:gpt-4o-mini]
cases:
  - id: c1
    messages: [{role: system, content: "Be kind."}, {role: user, content: "Say {{hi}}"}]
checks: [{method: contains, value: "hi"}]
"#;
        let spec = parse(text).unwrap();
        let request = &spec.prompts[0].requests[0];
        assert_eq!(request.system.as_deref(), Some("Be kind."));
        assert_eq!(request.prompt_text(), "Say {{hi}}");
        let e = parse(&text.replace("    messages:", "    msgs:")).unwrap_err();
        assert!(
            e.contains("no `templates:` and the case has no `messages`"),
            "{e}"
        );
    }
}
