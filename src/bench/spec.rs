//! The benchmark file: models and prompt tests, loaded exactly as the specification writes
//! them (`- test_1:` whose value is empty names the test) and validated into a [`BenchSpec`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use super::item::{ItemError, take_name};
use super::methods::{MethodName, TestMethod};
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
    pub prompts: Vec<PromptTest>,
    /// Samples per model and prompt (`repeat:` in the file; `--repeat` overrides).
    pub repeat: u32,
    /// The most a run may spend, in USD (`budget:` in the file; `--budget` overrides).
    pub budget_usd: Option<f64>,
    /// Whether its calls go through batch APIs (`batch: true`; `--batch` asks the same).
    pub batch: bool,
    /// The file's text, read again for line numbers only when a message needs one.
    text: Arc<str>,
}

/// One prompt test.
#[derive(Debug, Clone)]
pub struct PromptTest {
    pub name: String,
    pub prompt: String,
    /// The expected output or the elements needed to evaluate the answer.
    pub expected: String,
    pub method: TestMethod,
    pub system: Option<String>,
    pub params: SamplingParams,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBench {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    description: Option<String>,
    models: Vec<String>,
    prompts: Vec<Map<String, Value>>,
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
    /// Default judge model of `method: judge` tests.
    #[serde(default)]
    judge: Option<String>,
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
const PROMPT_FIELDS: [&str; 12] = [
    "name",
    "prompt",
    "output",
    "expected",
    "method",
    "system",
    "temperature",
    "top_p",
    "max_tokens",
    "rubric",
    "threshold",
    "judge",
];

impl BenchSpec {
    /// Validates benchmark YAML; `path` only names the file in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Self, SpecError> {
        let invalid = |line: Option<u64>, message: String| SpecError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let raw: RawBench =
            serde_saphyr::from_str_with_options(text, parse_options()).map_err(|e| {
                SpecError::Yaml(
                    prompts_from_a_file(path, text)
                        .unwrap_or_else(|| crate::yaml::describe(path, text, &e)),
                )
            })?;
        let _ = (&raw.description, &raw.kind);
        if let Some(kind) = raw.kind.as_deref().filter(|k| {
            k.parse::<crate::experiment::ExperimentKind>()
                != Ok(crate::experiment::ExperimentKind::Bench)
        }) {
            return Err(invalid(
                None,
                format!("`kind: {kind}` is not a benchmark (use kind: bench)"),
            ));
        }
        if raw.models.is_empty() {
            return Err(invalid(
                None,
                "`models:` is empty; list at least one <provider>:<name>".into(),
            ));
        }
        if raw.prompts.is_empty() {
            return Err(invalid(
                None,
                "`prompts:` is empty; add at least one test".into(),
            ));
        }
        let defaults = SamplingParams {
            temperature: raw.temperature,
            top_p: raw.top_p,
            max_tokens: raw.max_tokens,
            seed: raw.seed,
        };
        let mut prompts = Vec::new();
        let mut names = HashSet::new();
        for (index, item) in raw.prompts.into_iter().enumerate() {
            let line = || line_of(text, Item::Prompt(index));
            let test = prompt_test(index, item, &raw.system, &defaults, raw.judge.as_deref())
                .map_err(|e| invalid(e.line(text, "prompts", index), e.message))?;
            if !names.insert(test.name.clone()) {
                return Err(invalid(
                    line(),
                    format!(
                        "two prompts are named `{}`; names must be unique",
                        test.name
                    ),
                ));
            }
            prompts.push(test);
        }
        Ok(Self {
            path: path.to_path_buf(),
            sha256: crate::hash::sha256_hex(text.as_bytes()),
            models: raw
                .models
                .into_iter()
                .map(|m| m.trim().to_owned())
                .collect(),
            prompts,
            repeat: raw.repeat.unwrap_or(1).max(1),
            budget_usd: raw.budget.map(|b| b.0),
            batch: raw.batch,
            text: Arc::from(text),
        })
    }

    /// The line of the `index`th model reference, for messages.
    pub fn model_line(&self, index: usize) -> Option<u64> {
        line_of(&self.text, Item::Model(index))
    }

    /// The line of the `index`th prompt test, for messages.
    pub fn prompt_line(&self, index: usize) -> Option<u64> {
        line_of(&self.text, Item::Prompt(index))
    }
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

/// Builds one test from its YAML mapping.
fn prompt_test(
    index: usize,
    mut fields: Map<String, Value>,
    system: &Option<String>,
    defaults: &SamplingParams,
    default_judge: Option<&str>,
) -> Result<PromptTest, ItemError> {
    let name = take_name("prompt", index + 1, &mut fields, &PROMPT_FIELDS)?;
    let unnamed = format!("prompt {}", index + 1);
    let name = match take_text(&unnamed, &mut fields, "name")? {
        Some(explicit) => explicit,
        None => name.unwrap_or_else(|| format!("prompt_{}", index + 1)),
    };
    let label = format!("prompt `{name}`");
    let mut text = |key: &str| take_text(&label, &mut fields, key);
    let prompt = text("prompt")?.ok_or_else(|| format!("{label} has no `prompt:`"))?;
    let expected = text("output")?.or(text("expected")?);
    let method_name: MethodName = text("method")?
        .ok_or_else(|| {
            format!(
                "{label} has no `method:`; valid methods: {}",
                super::methods::METHOD_NAMES.join(", ")
            )
        })?
        .parse()
        .map_err(|e| format!("{label}: {e}"))?;
    let judging = JudgeFields {
        rubric: text("rubric")?,
        threshold: text("threshold")?,
        judge: text("judge")?,
    };
    let own_system = text("system")?;
    let method = test_method(
        &label,
        method_name,
        expected.as_deref(),
        judging,
        default_judge,
    )?;
    let params = take_params(&label, &mut fields, defaults)?;
    Ok(PromptTest {
        system: own_system.or_else(|| system.clone()),
        name,
        prompt,
        expected: expected.unwrap_or_default(),
        method,
        params,
    })
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

/// The fields of `method: judge`, as written.
struct JudgeFields {
    rubric: Option<String>,
    threshold: Option<String>,
    judge: Option<String>,
}

/// The test method, checked against its fields: a judge needs a rubric and a judge model;
/// other methods need an expected output (but `json-valid`) and no judge fields.
fn test_method(
    label: &str,
    method_name: MethodName,
    expected: Option<&str>,
    judging: JudgeFields,
    default_judge: Option<&str>,
) -> Result<TestMethod, String> {
    let JudgeFields {
        rubric,
        threshold,
        judge,
    } = judging;
    if method_name != MethodName::Judge {
        if rubric.is_some() || threshold.is_some() || judge.is_some() {
            return Err(format!(
                "{label}: `rubric`, `threshold` and `judge` go with `method: judge`"
            ));
        }
        let expected = match (expected, method_name) {
            (Some(e), _) => e,
            (None, MethodName::JsonValid) => "",
            (None, _) => return Err(format!("{label} has no `output:` (the expected output)")),
        };
        return TestMethod::prepare(method_name, expected).map_err(|e| format!("{label}: {e}"));
    }
    let rubric = rubric.or(expected.map(str::to_owned)).ok_or_else(|| {
        format!("{label} uses method judge but has no `rubric:` (or `output:`) to grade against")
    })?;
    let threshold = match threshold {
        None => 4,
        Some(t) => t
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|t| (1..=5).contains(t))
            .ok_or_else(|| format!("{label}: `threshold` must be a whole score from 1 to 5"))?,
    };
    let judge = judge.or(default_judge.map(str::to_owned)).ok_or_else(|| {
        format!("{label} uses method judge but names no judge model: add `judge: <provider>:<name>` to it or at the top of the file")
    })?;
    Ok(TestMethod::Judge(super::methods::JudgeTest {
        rubric,
        threshold,
        judge: judge.trim().to_owned(),
    }))
}

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
        assert_eq!(spec.prompts[0].expected, "the expected output here");
        assert_eq!(spec.prompts[1].name, "another_test");
        assert_eq!(spec.prompts[1].method.name(), "contains");
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
        assert_eq!(capital.system.as_deref(), Some("be terse"));
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
