//! The benchmark file: models and prompt tests, loaded exactly as the specification writes
//! them (`- test_1:` whose value is empty names the test) and validated into a [`BenchSpec`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use super::cases::PromptTemplate;
use super::item::{ItemError, take_name};
use crate::checks::{Check, CheckSpec, ParseContext, PassRule};
use crate::llm::SamplingParams;

/// A benchmark file that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read the benchmark file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML of a benchmark: `file:line:col: message`.
    #[error("{0}")]
    Yaml(String),
    /// A case that cannot be used, the message naming where it was read (`data/x.jsonl:12`).
    #[error("{0}")]
    Case(String),
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
}

/// A validated benchmark: model references and prompt tests, in file order.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    pub path: PathBuf,
    /// sha256 of the file's bytes, stored with the run.
    pub sha256: String,
    /// Model references as written (`openai:gpt-4o`).
    pub models: Vec<String>,
    /// The prompt templates every case runs with (`templates:`); empty for tests written
    /// inline under `prompts:`, which are their own one request.
    pub templates: Vec<PromptTemplate>,
    /// The tests: one per inline test, or one per case.
    pub prompts: Vec<PromptTest>,
    /// Samples per model and prompt (`repeat:` in the file; `--repeat` overrides).
    pub repeat: u32,
    /// The most a run may spend, in USD (`budget:` in the file; `--budget` overrides).
    pub budget_usd: Option<f64>,
    /// Whether its calls go through batch APIs (`batch: true`; `--batch` asks the same).
    pub batch: bool,
    /// The bar a run must reach, or exit 3 (`fail_under:`, `fail_on_errors:`; `--fail-under`
    /// overrides, `--fail-on-errors` adds).
    pub gate: crate::gate::Gate,
    /// How a test's checks make its outcome (`pass:`).
    pub pass: PassRule,
    /// The tools its models may call (`tools:`, with `max_steps:`), if any.
    pub tools: Option<Arc<super::tools::ToolSet>>,
    /// The data files the cases were read from, with their hashes, stored with the run.
    pub inputs: Vec<Input>,
    /// What loading said, on stderr: `loaded 2,000 cases from …`, and warnings (unused
    /// columns).
    pub notes: Vec<String>,
    /// `loaded 2,000 cases from data/math.jsonl (columns: …)`, also in a dry run's plan.
    pub loaded: Option<String>,
    /// The file's text, read again for line numbers only when a message needs one.
    text: Arc<str>,
}

/// A file a benchmark read, as stored with its run (`options.inputs`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Input {
    /// `data` or `template`.
    pub kind: &'static str,
    /// The address as written, or the template's name.
    pub name: String,
    pub sha256: String,
    /// The commit an `hf://` revision resolved to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Rows read (data files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

/// One prompt test: an inline test, or a case of a data-driven benchmark.
#[derive(Debug, Clone)]
pub struct PromptTest {
    /// The test's name, or the case's id.
    pub name: String,
    /// The request of each template, in `BenchSpec::templates`' order (one for an inline
    /// test or a case that brings its own messages).
    pub requests: Vec<TestRequest>,
    /// Its checks: at least one.
    pub checks: Vec<Check>,
    pub params: std::sync::Arc<SamplingParams>,
    /// The case's values, for its script checks (`None`: a test written inline, or a case
    /// without a script).
    pub values: Option<Arc<crate::cases::Values>>,
}

/// What a test sends: a system prompt and messages.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRequest {
    /// Shared with every call that sends it (models, repeats).
    pub system: Option<Arc<str>>,
    pub messages: Arc<[crate::llm::Message]>,
    /// A conversation's turns: where in `messages` each answer of the model goes (an open
    /// assistant turn; the last at `messages.len()`, after them). Empty: one turn.
    pub open: Arc<[usize]>,
}

impl TestRequest {
    /// The text of the turn the model answers (the last user message), for judges.
    pub(crate) fn prompt_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == crate::llm::Role::User)
            .map(crate::llm::Message::text)
            .unwrap_or_default()
    }
}

impl PromptTest {
    /// The method stored with its results: the check's, or `checks` when it has several.
    pub(crate) fn method_name(&self) -> &'static str {
        match self.checks.as_slice() {
            [one] => one.method.name(),
            _ => "checks",
        }
    }

    /// The expected value stored with its results: the first check's.
    pub(crate) fn expected(&self) -> &str {
        self.checks
            .first()
            .and_then(|c| c.expected.as_deref())
            .unwrap_or("")
    }

    /// Its judge check, if any (a test has at most one).
    pub(crate) fn judge(&self) -> Option<&crate::checks::JudgeCheck> {
        self.checks.iter().find_map(Check::judge)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBench {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    description: Option<String>,
    models: Vec<String>,
    /// Tests written one by one (the seed's form).
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    prompts: Option<Vec<Map<String, Value>>>,
    /// Prompt templates every case runs with.
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    templates: Option<Vec<Value>>,
    /// Cases: a list of mappings, or `{from: FILE, ...}`.
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    cases: Option<Value>,
    /// Checks of every test or case.
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    checks: Option<Vec<Value>>,
    /// How checks make a test's outcome: `{threshold: 0.8}`.
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    pass: Option<Value>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default)]
    budget: Option<crate::experiment::FileBudget>,
    /// Send through batch APIs, at half price.
    #[serde(default, deserialize_with = "crate::experiment::batch_flag")]
    batch: bool,
    /// The pass rate each model (or `overall:PCT`, all together) must reach.
    #[serde(default)]
    fail_under: Option<crate::gate::Bar>,
    /// Whether an error row fails the run.
    #[serde(default, deserialize_with = "fail_on_errors_flag")]
    fail_on_errors: bool,
    /// Default judge model of `method: judge` tests.
    #[serde(default)]
    judge: Option<String>,
    /// Tools the models may call: `[{name, description, parameters, result | run}]`.
    #[serde(default, deserialize_with = "crate::yaml::as_written")]
    tools: Option<Value>,
    /// The most calls of a case's tool loop.
    #[serde(default)]
    max_steps: Option<u32>,
}

/// Reads `fail_on_errors:`: `true` or `false`, refused otherwise with the setting named.
fn fail_on_errors_flag<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<bool, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Bool(on) => Ok(on),
        other => Err(serde::de::Error::custom(format!(
            "`fail_on_errors: {}` must be true (an error row fails the run, exit status 3) or \
             false",
            other
        ))),
    }
}

/// Where the items of a benchmark file are: parsed only when a message needs a line, since
/// spans make parsing a large file much slower.
#[derive(Deserialize)]
struct RawLines {
    #[serde(default)]
    models: Vec<Spanned<serde::de::IgnoredAny>>,
    #[serde(default)]
    prompts: Vec<Spanned<serde::de::IgnoredAny>>,
}

/// Which item of the file a line is wanted for.
#[derive(Debug, Clone, Copy)]
enum Item {
    Model(usize),
    Prompt(usize),
}

/// The line of `item` in `text`, if it can be found.
fn line_of(text: &str, item: Item) -> Option<u64> {
    let lines: RawLines = serde_saphyr::from_str_with_options(text, parse_options()).ok()?;
    let location = match item {
        Item::Model(i) => &lines.models.get(i)?.referenced,
        Item::Prompt(i) => &lines.prompts.get(i)?.referenced,
    };
    Some(location.line()).filter(|l| *l > 0)
}

/// Parser options: a benchmark may hold hundreds of thousands of tests.
fn parse_options() -> serde_saphyr::Options {
    crate::yaml::large_file_options()
}

/// Fields a prompt test may have besides its name.
const PROMPT_FIELDS: [&str; 14] = [
    "name",
    "prompt",
    "output",
    "expected",
    "method",
    "checks",
    "system",
    "temperature",
    "top_p",
    "max_tokens",
    "rubric",
    "threshold",
    "judge",
    "turns",
];

impl BenchSpec {
    /// Validates benchmark YAML whose cases, if any, are written in it; `path` names the
    /// file in messages and is where `file://` paths are relative to.
    pub fn parse(path: &Path, text: &str) -> Result<Self, SpecError> {
        Self::load(path, text, &crate::cases::LoadOptions::default())
    }

    /// Validates benchmark YAML and reads the cases it names (`cases: {from: …}`) as
    /// `options` allow (offline: only what the database holds of `hf://` files).
    pub(crate) fn load(
        path: &Path,
        text: &str,
        options: &crate::cases::LoadOptions,
    ) -> Result<Self, SpecError> {
        let at = Where { path, text };
        let invalid = |line: Option<u64>, message: String| at.invalid(line, message);
        let raw: RawBench = crate::yaml::from_str(text, parse_options()).map_err(|e| {
            SpecError::Yaml(
                prompts_from_a_file(path, text)
                    .unwrap_or_else(|| crate::yaml::describe(path, text, &e)),
            )
        })?;
        let _ = &raw.description;
        check_kind_and_models(&at, &raw)?;
        let defaults = SamplingParams {
            temperature: raw.temperature,
            top_p: raw.top_p,
            max_tokens: raw.max_tokens,
            seed: raw.seed,
        };
        // `bench.yaml`'s parent is the empty path: the current folder.
        let base = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let context = ParseContext {
            base_dir: &base,
            default_judge: raw.judge.as_deref(),
            inline_test: false,
        };
        let checks = file_checks(&at, raw.checks.as_deref(), &context)?;
        let pass = PassRule::parse(raw.pass.as_ref())
            .map_err(|e| invalid(at.line(&[crate::yaml::Step::Key("pass")]), e))?;
        let tools = tools_of(&at, &raw, &base)?;
        // A tool's `result:` is filled from each case's values: they are kept then.
        let options = &crate::cases::LoadOptions {
            keep_values: options.keep_values || tools.is_some(),
            ..options.clone()
        };
        let written = Written {
            prompts: raw.prompts,
            cases: raw.cases,
            templates: raw.templates,
            system: raw.system,
        };
        let built = tests_of(&at, written, &base, options, &defaults, context, &checks)?;
        check_tool_use(&at, tools.is_some(), &built.tests)?;
        check_weights(&at, &built.tests)?;
        Ok(Self {
            path: path.to_path_buf(),
            sha256: crate::hash::sha256_hex(text.as_bytes()),
            models: raw
                .models
                .into_iter()
                .map(|m| m.trim().to_owned())
                .collect(),
            templates: built.templates,
            prompts: built.tests,
            repeat: raw.repeat.unwrap_or(1).max(1),
            budget_usd: raw.budget.map(|b| b.0),
            batch: raw.batch,
            gate: crate::gate::Gate {
                fail_under: raw.fail_under,
                fail_on_errors: raw.fail_on_errors,
                from_file: raw.fail_under.is_some(),
            },
            pass,
            tools,
            inputs: built.inputs,
            notes: built.notes,
            loaded: built.loaded,
            text: Arc::from(text),
        })
    }

    /// The line of the `index`th model reference, for messages.
    pub(crate) fn model_line(&self, index: usize) -> Option<u64> {
        line_of(&self.text, Item::Model(index))
    }

    /// The line of the `index`th prompt test, for messages.
    pub(crate) fn prompt_line(&self, index: usize) -> Option<u64> {
        line_of(&self.text, Item::Prompt(index))
    }
}

/// The file's `tools:` and `max_steps:`, checked.
fn tools_of(
    at: &Where<'_>,
    raw: &RawBench,
    base: &Path,
) -> Result<Option<Arc<super::tools::ToolSet>>, SpecError> {
    use crate::yaml::Step;
    match (&raw.tools, raw.max_steps) {
        (Some(tools), max_steps) => Ok(Some(Arc::new(
            super::tools::ToolSet::parse(tools, max_steps, base)
                .map_err(|e| at.invalid(at.line(&[Step::Key("tools")]), e))?,
        ))),
        (None, Some(_)) => Err(at.invalid(
            at.line(&[Step::Key("max_steps")]),
            "`max_steps` bounds a tool loop, but the file declares no `tools:`; declare the \
             tools, or remove `max_steps`"
                .to_owned(),
        )),
        (None, None) => Ok(None),
    }
}

/// Refuses tool checks in a file without `tools:`, and conversations in one with them.
fn check_tool_use(at: &Where<'_>, tools: bool, tests: &[PromptTest]) -> Result<(), SpecError> {
    use crate::yaml::Step;
    let at_test = |i: usize, message: String| {
        at.invalid(at.line(&[Step::Key("prompts"), Step::Item(i)]), message)
    };
    for (i, test) in tests.iter().enumerate() {
        if tools && test.requests.iter().any(|r| r.turns() > 1) {
            return Err(at_test(
                i,
                format!(
                    "`{}` is a conversation, and the file declares `tools:`; a tool loop \
                     answers one request: give it one `prompt`, or run conversations and tool \
                     loops from two files",
                    test.name
                ),
            ));
        }
        if !tools && let Some(check) = test.checks.iter().find(|c| c.method.grades_tools()) {
            return Err(at_test(
                i,
                format!(
                    "`{}` has a `{}` check, but the file declares no `tools:`; declare the \
                     tools the models may call (`tools: [{{name: weather, parameters: …, \
                     result: …}}]`), or remove the check",
                    test.name, check.method
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a test whose checks' weights add up to more than a number holds (two of
/// `weight: 1e308`): its weighted score would be no number, and would fail it whatever the
/// answer.
fn check_weights(at: &Where<'_>, tests: &[PromptTest]) -> Result<(), SpecError> {
    use crate::yaml::Step;
    for (i, test) in tests.iter().enumerate() {
        let total: f64 = test.checks.iter().map(|c| c.weight).sum();
        if !total.is_finite() {
            // `1e308`, not its 309 digits.
            let weights: Vec<String> = test
                .checks
                .iter()
                .map(|c| match c.weight {
                    w if w.abs() >= 1e15 => format!("{w:e}"),
                    w => w.to_string(),
                })
                .collect();
            return Err(at.invalid(
                at.line(&[Step::Key("prompts"), Step::Item(i)]),
                format!(
                    "`{}`: the weights of its checks ({}) add up to more than a number holds, \
                     so no weighted score can be computed; give weights of a usual scale, such \
                     as 1 to 100 (only their ratios matter)",
                    test.name,
                    weights.join(" + ")
                ),
            ));
        }
    }
    Ok(())
}

/// `bench.yaml:2: …` when `prompts:` names a file (`prompts: cases.csv`) instead of listing the
/// tests: cases read from a file go under `cases:`.
pub(crate) fn prompts_from_a_file(path: &Path, text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Prompts {
        prompts: Option<Value>,
    }
    let file: Prompts = serde_saphyr::from_str_with_options(text, parse_options()).ok()?;
    let Some(Value::String(named)) = file.prompts else {
        return None;
    };
    let line = crate::yaml::line_at(text, &[crate::yaml::Step::Key("prompts")])
        .map(|l| format!(":{l}"))
        .unwrap_or_default();
    Some(format!(
        "{}{line}: `prompts: {named}` is not a list of tests: cases read from a file go under \
         `cases:` (`cases: {{from: {named}}}`), which this version of track does not read yet; \
         for now write the tests under `prompts:`, one `- my_test:` each",
        path.display()
    ))
}

/// Builds one test from its YAML mapping: its `method` and `output` are one check, its
/// `checks` more, and the benchmark's `checks` apply to it too.
fn prompt_test(
    index: usize,
    mut fields: Map<String, Value>,
    system: &Option<String>,
    defaults: &SamplingParams,
    context: &ParseContext<'_>,
    shared_checks: &[CheckSpec],
) -> Result<PromptTest, ItemError> {
    let name = take_name("prompt", index + 1, &mut fields, &PROMPT_FIELDS)?;
    let unnamed = format!("prompt {}", index + 1);
    let name = match take_text(&unnamed, &mut fields, "name")? {
        Some(explicit) => explicit,
        None => name.unwrap_or_else(|| format!("prompt_{}", index + 1)),
    };
    let label = format!("prompt `{name}`");
    let own_checks = match fields.remove("checks") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(ItemError {
                message: format!("{label}: `checks` must be a list of checks"),
                keys: vec!["checks".into()],
            });
        }
    };
    let seed = inline_check(&label, &mut fields)?;
    let mut text = |key: &str| take_text(&label, &mut fields, key);
    let prompt = text("prompt")?;
    let own_system = text("system")?;
    let turns = prompt_or_turns(&label, prompt, fields.remove("turns"))?;
    let checks = test_checks(&label, seed, &own_checks, context, shared_checks)?;
    let params = take_params(&label, &mut fields, defaults)?;
    let system = own_system.or_else(|| system.clone()).map(Into::into);
    let request = super::conversation::request(system, turns);
    super::conversation::check_turns(&checks, request.turns())
        .map_err(|e| format!("{label}: {e}"))?;
    Ok(PromptTest {
        name,
        requests: vec![request],
        checks,
        params: Arc::new(params),
        values: None,
    })
}

/// A test's checks: its inline `method` (`seed`), its own `checks`, then the benchmark's.
fn test_checks(
    label: &str,
    seed: Map<String, Value>,
    own_checks: &[Value],
    context: &ParseContext<'_>,
    shared_checks: &[CheckSpec],
) -> Result<Vec<crate::checks::Check>, ItemError> {
    let no_values = crate::cases::Values::new();
    let mut checks = Vec::new();
    if seed.contains_key("method") {
        let inline = ParseContext {
            inline_test: true,
            ..*context
        };
        let check = CheckSpec::parse(&Value::Object(seed), &inline)
            .and_then(|spec| spec.prepare(&no_values))
            .map_err(|e| format!("{label}: {e}"))?;
        checks.push(check);
    } else if own_checks.is_empty() && shared_checks.is_empty() {
        return Err(format!(
            "{label} has no `method:`; valid methods: {}",
            crate::checks::method_names()
        )
        .into());
    } else if let Some(key) = seed.keys().next() {
        return Err(ItemError {
            message: format!("{label} has `{key}:` but no `method:`"),
            keys: vec![key.clone()],
        });
    }
    for (i, check) in own_checks.iter().enumerate() {
        let check = CheckSpec::parse(check, context)
            .and_then(|spec| spec.prepare(&no_values))
            .map_err(|e| ItemError {
                message: format!("{label}: check {}: {e}", i + 1),
                keys: vec!["checks".into()],
            })?;
        checks.push(check);
    }
    for spec in shared_checks {
        checks.push(
            spec.prepare(&no_values)
                .map_err(|e| format!("{label}: {e}"))?,
        );
    }
    if checks.iter().filter(|c| c.judge().is_some()).count() > 1 {
        return Err(format!(
            "{label} has more than one `judge` check; a test has one judge (put every \
             criterion in its rubric)"
        )
        .into());
    }
    Ok(checks)
}

/// The messages of a test: its `prompt`, or its conversation (`turns`); not both.
fn prompt_or_turns(
    label: &str,
    prompt: Option<String>,
    turns: Option<Value>,
) -> Result<Vec<crate::llm::Message>, ItemError> {
    match (prompt, turns.filter(|v| !v.is_null())) {
        (Some(_), Some(_)) => Err(ItemError {
            message: format!("{label} has both `prompt:` and `turns:`; keep one"),
            keys: vec!["turns".into()],
        }),
        (None, None) => Err(format!("{label} has no `prompt:` (or `turns:`)").into()),
        (Some(prompt), None) => Ok(vec![crate::llm::Message::user(prompt)]),
        (None, Some(turns)) => super::conversation::turns_messages(&turns).map_err(|e| ItemError {
            message: format!("{label}: {e}"),
            keys: vec!["turns".into()],
        }),
    }
}

/// The fields of a test's one inline check, taken from `fields`: `method` with `output` (or
/// `expected`), and a judge's fields; each must be text.
fn inline_check(
    label: &str,
    fields: &mut Map<String, Value>,
) -> Result<Map<String, Value>, ItemError> {
    let mut seed = Map::new();
    for key in crate::checks::INLINE_KEYS {
        if let Some(value) = fields.remove(key).filter(|v| !v.is_null()) {
            if matches!(value, Value::Array(_) | Value::Object(_)) {
                return Err(ItemError {
                    message: format!(
                        "{label}: `{key}` is a {}; write it as text",
                        if value.is_array() { "list" } else { "mapping" }
                    ),
                    keys: vec![key.into()],
                });
            }
            seed.insert(key.to_owned(), value);
        }
    }
    Ok(seed)
}

/// The cases of `cases:`: written in the file (a list), or read from files (`{from: …}`).
fn load_cases(
    path: &Path,
    text: &str,
    base: &Path,
    cases: Value,
    options: &crate::cases::LoadOptions,
) -> Result<LoadedCases, SpecError> {
    let invalid = |line: Option<u64>, message: String| SpecError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    use crate::yaml::Step;
    match cases {
        Value::Array(items) => {
            let file = path.display().to_string();
            let lines = crate::yaml::item_lines(text, &[Step::Key("cases")]);
            let line = |i: usize| lines.get(i).copied().flatten();
            let cases = super::cases::inline_cases(items, None, &file, line)
                .map_err(|(i, e)| invalid(line(i), e))?;
            check_unique(&cases).map_err(|e| invalid(None, e))?;
            let mut columns: Vec<String> = Vec::new();
            for case in &cases {
                for key in case.values.keys() {
                    if !columns.contains(key) {
                        columns.push(key.clone());
                    }
                }
            }
            Ok(LoadedCases {
                from: format!("{file}'s cases"),
                columns,
                id_column: None,
                metadata: Vec::new(),
                summary: None,
                inputs: Vec::new(),
                cases,
            })
        }
        Value::Object(_) => {
            let at = crate::yaml::line_at(text, &[Step::Key("cases")]);
            let spec = crate::cases::CasesSpec::from_value(cases).map_err(|e| invalid(at, e))?;
            load_case_files(&spec, base, options).map_err(SpecError::Case)
        }
        other => Err(invalid(
            crate::yaml::line_at(text, &[Step::Key("cases")]),
            format!("`cases: {other}` is neither a list of cases nor `{{from: FILE}}`"),
        )),
    }
}

/// Cases read from the files `cases: {from: …}` names.
fn load_case_files(
    spec: &crate::cases::CasesSpec,
    base: &Path,
    options: &crate::cases::LoadOptions,
) -> Result<LoadedCases, String> {
    let mut loaded = crate::cases::load(spec, base, options).map_err(|e| e.to_string())?;
    let summary = loaded.summary();
    let inputs = loaded
        .sources
        .iter()
        .map(|source| Input {
            kind: "data",
            name: source.address.clone(),
            sha256: source.sha256.clone(),
            revision: match &source.resolved {
                crate::cases::Resolved::Hf { commit, .. } => Some(commit.clone()),
                crate::cases::Resolved::File(_) => None,
            },
            rows: Some(source.rows as u64),
        })
        .collect();
    let from = loaded.from.join(", ");
    // The cases are moved, not copied: a dataset's values are most of what a run holds.
    let taken = std::mem::take(&mut loaded.cases);
    let cases = taken
        .into_iter()
        .map(|case| super::cases::CaseInput {
            origin: loaded.place(case.origin),
            id: case.id,
            values: case.values,
            messages: case
                .messages
                .map(|m| m.into_iter().map(crate::llm::Message::from).collect()),
            checks: case.checks,
        })
        .collect();
    Ok(LoadedCases {
        cases,
        columns: loaded.columns,
        id_column: spec.id.clone(),
        metadata: loaded.metadata,
        from,
        summary: Some(summary),
        inputs,
    })
}

/// Refuses two cases with one id, naming both.
pub(crate) fn check_unique(cases: &[super::cases::CaseInput]) -> Result<(), String> {
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for case in cases {
        if let Some(first) = seen.insert(&case.id, &case.origin) {
            return Err(format!(
                "two cases have the id `{}`: {first} and {}; ids must be unique (give each \
                 case its own, or name another column with `id:`)",
                case.id, case.origin
            ));
        }
    }
    Ok(())
}

/// Cases read, whatever from, with what the run records of them.
#[derive(Debug)]
pub struct LoadedCases {
    pub cases: Vec<super::cases::CaseInput>,
    /// Every column, in the order first seen.
    pub columns: Vec<String>,
    /// The column ids come from, if one is named.
    pub id_column: Option<String>,
    /// The columns that describe a case (promptfoo's description and metadata), not warned
    /// unused.
    pub metadata: Vec<String>,
    /// Where they came from, for messages: `data/math.jsonl`.
    pub from: String,
    /// `loaded 2,000 cases from data/math.jsonl (columns: …)`, said on stderr.
    pub summary: Option<String>,
    /// The files read, with their hashes.
    pub inputs: Vec<Input>,
}

/// A field as text (numbers and booleans as written), removed from `fields`; a list or a
/// mapping is refused, not turned into its JSON text.
fn take_text(
    label: &str,
    fields: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<String>, String> {
    match fields.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(b.to_string())),
        Some(Value::Array(_)) => Err(format!(
            "{label}: `{key}` is a list; write it as text (quote it if it starts with `[`)"
        )),
        Some(Value::Object(_)) => Err(format!(
            "{label}: `{key}` is a mapping; write it as text (quote it if it holds `: `)"
        )),
    }
}

/// The most output tokens a test may ask for.
const MAX_TOKENS_LIMIT: f64 = 1_000_000.0;

/// A test's sampling parameters: its own, else the file's.
fn take_params(
    label: &str,
    fields: &mut Map<String, Value>,
    defaults: &SamplingParams,
) -> Result<SamplingParams, String> {
    let mut number = |key: &str| -> Result<Option<f64>, String> {
        match fields.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .map(Some)
                .ok_or_else(|| format!("{label}: `{key}` must be a number")),
        }
    };
    let temperature = number("temperature")?;
    if let Some(t) = temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        return Err(format!("{label}: `temperature: {t}` must be from 0 to 2"));
    }
    let top_p = number("top_p")?;
    if let Some(p) = top_p.filter(|p| !(*p > 0.0 && *p <= 1.0)) {
        return Err(format!(
            "{label}: `top_p: {p}` must be above 0 and at most 1"
        ));
    }
    let max_tokens = match number("max_tokens")? {
        None => None,
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_TOKENS_LIMIT).contains(&n) => Some(n as u32),
        Some(n) => {
            return Err(format!(
                "{label}: `max_tokens: {n}` must be a whole number from 1 to {MAX_TOKENS_LIMIT}"
            ));
        }
    };
    Ok(SamplingParams {
        temperature: temperature.or(defaults.temperature),
        top_p: top_p.or(defaults.top_p),
        max_tokens: max_tokens.or(defaults.max_tokens),
        seed: defaults.seed,
    })
}

/// The parts of a benchmark file that say what its tests are: written one by one, or cases
/// read from data with templates.
struct Written {
    prompts: Option<Vec<Map<String, Value>>>,
    cases: Option<Value>,
    templates: Option<Vec<Value>>,
    system: Option<String>,
}

/// The tests of a benchmark file: those under `prompts:`, or one a case read from `cases:`;
/// refuses a file with both or neither.
fn tests_of(
    at: &Where<'_>,
    written: Written,
    base: &Path,
    options: &crate::cases::LoadOptions,
    defaults: &SamplingParams,
    context: ParseContext<'_>,
    checks: &[CheckSpec],
) -> Result<DataTests, SpecError> {
    use crate::yaml::Step;
    Ok(match (written.prompts, written.cases) {
        (Some(_), Some(_)) => {
            return Err(at.invalid(
                at.line(&[Step::Key("cases")]),
                "the file has both `prompts:` (tests written one by one) and `cases:`; \
                 keep one"
                    .into(),
            ));
        }
        (None, None) => {
            return Err(at.invalid(
                None,
                "the file has no tests: list them under `prompts:`, or read cases with \
                 `cases: {from: FILE}` and `templates:`"
                    .into(),
            ));
        }
        (Some(_), None) if written.templates.is_some() => {
            return Err(at.invalid(
                at.line(&[Step::Key("templates")]),
                "`templates:` go with `cases:`; tests under `prompts:` carry their own \
                 prompt"
                    .into(),
            ));
        }
        (Some(items), None) => DataTests {
            tests: inline_tests(at, items, &written.system, defaults, &context, checks)?,
            ..DataTests::default()
        },
        (None, Some(cases)) => {
            let parts = DataParts {
                cases,
                templates: written.templates.unwrap_or_default(),
                system: written.system.as_deref(),
                base,
                options,
            };
            data_tests(at, parts, defaults, context, checks)?
        }
    })
}

/// Refuses a file of another kind, or one with no models.
fn check_kind_and_models(at: &Where<'_>, raw: &RawBench) -> Result<(), SpecError> {
    if let Some(kind) = raw.kind.as_deref().filter(|k| {
        k.parse::<crate::experiment::ExperimentKind>()
            != Ok(crate::experiment::ExperimentKind::Bench)
    }) {
        return Err(at.invalid(
            None,
            format!("`kind: {kind}` is not a benchmark (use kind: bench)"),
        ));
    }
    if raw.models.is_empty() {
        return Err(at.invalid(
            None,
            "`models:` is empty; list at least one <provider>:<name>".into(),
        ));
    }
    Ok(())
}

/// Where a benchmark file's errors point: its path and text (for line numbers).
struct Where<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Where<'_> {
    fn invalid(&self, line: Option<u64>, message: String) -> SpecError {
        SpecError::Invalid {
            path: self.path.to_path_buf(),
            line,
            message,
        }
    }

    fn line(&self, steps: &[crate::yaml::Step<'_>]) -> Option<u64> {
        crate::yaml::line_at(self.text, steps)
    }
}

/// The tests written one by one under `prompts:`, their names unique.
fn inline_tests(
    at: &Where<'_>,
    items: Vec<Map<String, Value>>,
    system: &Option<String>,
    defaults: &SamplingParams,
    context: &ParseContext<'_>,
    checks: &[CheckSpec],
) -> Result<Vec<PromptTest>, SpecError> {
    if items.is_empty() {
        return Err(at.invalid(None, "`prompts:` is empty; add at least one test".into()));
    }
    let mut prompts = Vec::with_capacity(items.len());
    let mut names = HashSet::new();
    for (index, item) in items.into_iter().enumerate() {
        let test = prompt_test(index, item, system, defaults, context, checks)
            .map_err(|e| at.invalid(e.line(at.text, "prompts", index), e.message))?;
        if !names.insert(test.name.clone()) {
            return Err(at.invalid(
                line_of(at.text, Item::Prompt(index)),
                format!(
                    "two prompts are named `{}`; names must be unique",
                    test.name
                ),
            ));
        }
        prompts.push(test);
    }
    Ok(prompts)
}

/// What a benchmark of cases from data gives its tests: the `cases:` entry, the templates,
/// the file's system prompt, the folder paths are relative to, and how to load.
struct DataParts<'a> {
    cases: Value,
    templates: Vec<Value>,
    system: Option<&'a str>,
    base: &'a Path,
    options: &'a crate::cases::LoadOptions,
}

/// A benchmark's tests, built: with cases from data, also its templates, inputs, notes for
/// the terminal and the line saying what was loaded.
#[derive(Default)]
struct DataTests {
    tests: Vec<PromptTest>,
    templates: Vec<PromptTemplate>,
    inputs: Vec<Input>,
    notes: Vec<String>,
    loaded: Option<String>,
}

/// Reads the cases, checks every name the templates and checks use against their columns
/// (an unused column is a warning), and makes a test of each case.
fn data_tests(
    at: &Where<'_>,
    parts: DataParts<'_>,
    defaults: &SamplingParams,
    context: ParseContext<'_>,
    checks: &[CheckSpec],
) -> Result<DataTests, SpecError> {
    use crate::yaml::Step;
    let mut templates = super::cases::parse_templates(parts.templates, parts.base)
        .map_err(|(i, e)| at.invalid(at.line(&[Step::Key("templates"), Step::Item(i)]), e))?;
    for t in &mut templates {
        if let Some(system) = parts.system {
            t.system
                .get_or_insert_with(|| crate::cases::Template::parse(system));
        }
        t.shared_system = t
            .system
            .as_ref()
            .filter(|s| s.is_literal())
            .and_then(|s| s.render(&crate::cases::Values::new()).ok())
            .map(Arc::from);
    }
    let loaded = load_cases(at.path, at.text, parts.base, parts.cases, parts.options)?;
    // Every name a template or a check uses must be a column.
    let unknown = super::cases::unknown_names(&loaded.columns, &templates, checks);
    if let Some((who, name)) = unknown.first() {
        let line = match who.strip_prefix("check ") {
            Some(n) => at.line(&[
                Step::Key("checks"),
                Step::Item(n.parse::<usize>().unwrap_or(1) - 1),
            ]),
            None => templates
                .iter()
                .find(|t| *who == format!("template `{}`", t.name))
                .and_then(|t| at.line(&[Step::Key("templates"), Step::Item(t.index)])),
        };
        return Err(at.invalid(
            line,
            format!(
                "{who} uses `{{{{{name}}}}}`, but no case has a column `{}` ({}: columns {})",
                name.split('.').next().unwrap_or(name),
                loaded.from,
                loaded.columns.join(", ")
            ),
        ));
    }
    let mut notes = Vec::new();
    // A script sees every value, and so does a target: no column is unused then.
    let scripts = checks.iter().any(|c| c.script().is_some()) || parts.options.keep_values;
    if !templates.is_empty() && !scripts {
        notes.extend(unused_columns_warning(&loaded, &templates, checks));
    }
    notes.extend(loaded.summary.clone());
    let mut inputs = loaded.inputs;
    inputs.extend(templates.iter().map(|t| Input {
        kind: "template",
        name: t.name.clone(),
        sha256: t.sha256.clone(),
        revision: None,
        rows: None,
    }));
    let shared = super::cases::Shared {
        templates: &templates,
        checks,
        params: Arc::new(defaults.clone()),
        system: parts.system.map(Arc::from),
        context,
        keep_values: parts.options.keep_values,
    };
    let tests = super::cases::build_tests(loaded.cases, &shared).map_err(SpecError::Case)?;
    Ok(DataTests {
        tests,
        templates,
        inputs,
        notes,
        loaded: loaded.summary,
    })
}

/// The warning that columns of the cases are used by no template and no check, if any is.
fn unused_columns_warning(
    loaded: &LoadedCases,
    templates: &[PromptTemplate],
    checks: &[CheckSpec],
) -> Option<String> {
    let mut unused = super::cases::unused_columns(
        &loaded.columns,
        templates,
        checks,
        loaded.id_column.as_deref(),
    );
    unused.retain(|column| !loaded.metadata.contains(column));
    if unused.is_empty() {
        return None;
    }
    Some(format!(
        "track: warning: {}: {} {} used by no template and no check",
        loaded.from,
        if unused.len() == 1 {
            "column"
        } else {
            "columns"
        },
        unused
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ")
            + if unused.len() == 1 { " is" } else { " are" },
    ))
}

/// The checks the file gives every case (`checks:` at the top), parsed; an error names the
/// check's line.
fn file_checks(
    at: &Where<'_>,
    checks: Option<&[Value]>,
    context: &ParseContext<'_>,
) -> Result<Vec<CheckSpec>, SpecError> {
    use crate::yaml::Step;
    checks
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, check)| {
            CheckSpec::parse(check, context).map_err(|e| {
                at.invalid(
                    at.line(&[Step::Key("checks"), Step::Item(i)]),
                    format!("check {}: {e}", i + 1),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<BenchSpec, SpecError> {
        BenchSpec::parse(Path::new("bench.yaml"), yaml)
    }

    #[test]
    fn the_specification_example_loads_as_written() {
        let yaml = r#"
models:
  - openai:gpt-4o
  - anthropic:sonnet 3.5
  - ollama:qwen2.5-coder

prompts:
  - test_1:
    prompt: "the prompt to be tested here"
    output: "the expected output here"
    method: "exact"
  - another_test:
    prompt: "2+2?"
    output: "4"
    method: "contains"
"#;
        let spec = parse(yaml).unwrap();
        assert_eq!(spec.models.len(), 3);
        assert_eq!(spec.models[1], "anthropic:sonnet 3.5");
        assert_eq!(spec.model_line(1), Some(4));
        assert_eq!(spec.prompts[0].name, "test_1");
        assert_eq!(spec.prompts[0].expected(), "the expected output here");
        assert_eq!(spec.prompts[1].name, "another_test");
        assert_eq!(spec.prompts[1].method_name(), "contains");
        assert_eq!(spec.prompt_line(1), Some(12));
        assert_eq!(spec.repeat, 1);
    }

    #[test]
    fn explicit_names_nested_fields_and_defaults() {
        let yaml = "
models: [ollama:qwen2.5-coder]
temperature: 0
max_tokens: 50
system: be terse
repeat: 3
prompts:
  - name: capital
    prompt: Capital of France?
    output: paris
    method: icontains
    temperature: 0.7
  - nested:
      prompt: Give JSON
      method: json-valid
";
        let spec = parse(yaml).unwrap();
        let capital = &spec.prompts[0];
        assert_eq!(capital.name, "capital");
        assert_eq!(capital.params.temperature, Some(0.7));
        assert_eq!(capital.params.max_tokens, Some(50));
        assert_eq!(capital.requests[0].system.as_deref(), Some("be terse"));
        assert_eq!(spec.prompts[1].name, "nested");
        assert_eq!(spec.prompts[1].params.temperature, Some(0.0));
        assert_eq!(spec.repeat, 3);
        assert_eq!(spec.budget_usd, None);
    }

    #[test]
    fn batch_is_read_and_off_by_default() {
        let body = "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    method: exact\n";
        assert!(parse(&format!("batch: true\n{body}")).unwrap().batch);
        assert!(!parse(body).unwrap().batch);
        let e = parse(&format!("batch: sometimes\n{body}"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bench.yaml:1:"), "{e}");
        let e = parse(&format!("batches: true\n{body}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `batches`"), "{e}");
    }

    #[test]
    fn a_budget_is_read_and_a_bad_one_named_with_its_line() {
        let body = "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    method: exact\n";
        let spec = parse(&format!("budget: 0.5\n{body}")).unwrap();
        assert_eq!(spec.budget_usd, Some(0.5));
        let spec = parse(&format!("budget: \"$2\"\n{body}")).unwrap();
        assert_eq!(spec.budget_usd, Some(2.0));
        let e = parse(&format!("budget: abc\n{body}"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bench.yaml:1:"), "{e}");
        assert!(e.contains("`budget:` `abc` is not an amount"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn errors_name_the_file_line_and_choices() {
        let cases = [
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    method: fuzzy\n",
                "bench.yaml:3: prompt `t`: unknown method `fuzzy`; valid methods: exact, contains",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    method: judge\n",
                "uses method judge but has no `rubric:`",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    rubric: kind\n    method: judge\n",
                "names no judge model",
            ),
            (
                "models: [openai:gpt-4o]\njudge: openai:gpt-4o-mini\nprompts:\n  - t:\n    prompt: x\n    rubric: kind\n    threshold: 9\n    method: judge\n",
                "`threshold` must be a whole score from 1 to 5",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    rubric: kind\n    method: exact\n",
                "go with `method: judge`",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    output: y\n    method: exact\n",
                "bench.yaml:3: prompt `t` has no `prompt:`",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    method: exact\n",
                "has no `output:`",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: (\n    method: regex\n",
                "not a valid regex",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    method: exact\n    colour: red\n",
                "bench.yaml:7: prompt `t`: unknown key `colour`; valid keys: name, prompt, output",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n    prompt: x\n    output: y\n    method: exact\n  - t:\n    prompt: x\n    output: y\n    method: exact\n",
                "two prompts are named `t`",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - name: t\n    prompt: \"x {{country}}\"\n    vars: {country: France}\n    output: y\n    method: exact\n",
                "bench.yaml:5: prompt `t`: unknown key `vars`; valid keys: name, prompt, output",
            ),
            (
                "models: [openai:gpt-4o]\nprompts:\n  - t:\n      prompt: x\n      promt: y\n",
                "bench.yaml:5: prompt `t`: unknown key `promt`; did you mean `prompt`? valid keys",
            ),
            (
                "models: [openai:gpt-4o]\nprompts: cases.csv\n",
                "bench.yaml:2: `prompts: cases.csv` is not a list of tests: cases read from a file go under `cases:` (`cases: {from: cases.csv}`)",
            ),
            ("prompts: []\n", "bench.yaml"),
            ("models: [a\n", "bench.yaml:1:9: unclosed bracket"),
            ("models: []\nprompts: []\n", "`models:` is empty"),
        ];
        for (yaml, want) in cases {
            let e = parse(yaml).unwrap_err().to_string();
            assert!(e.contains(want), "{yaml}\n=> {e}");
        }
    }
}
