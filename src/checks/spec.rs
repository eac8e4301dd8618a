//! A check as a file or a dataset writes it (`{method, value, weight, …}`), validated once,
//! then prepared for each case: its `{{name}}` values rendered, its regex compiled, its
//! JSON parsed. A check whose values name nothing is prepared once, when it is parsed, so a
//! dataset of 100,000 cases pays for one regex.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use super::check::{Check, CheckKind, JudgeCheck};
use super::method::{METHODS, Method};
use super::script::ScriptCheck;
use crate::cases::{Template, Values};

/// The keys of a check.
pub const CHECK_KEYS: [&str; 12] = [
    "method",
    "value",
    "expected",
    "weight",
    "ignore_case",
    "threshold",
    "rubric",
    "judge",
    "run",
    "timeout_secs",
    "turn",
    "arguments",
];

/// The keys of a check built from one of the seed's inline tests, which names its value
/// `output` (or `expected`).
pub const INLINE_KEYS: [&str; 6] = [
    "method",
    "output",
    "expected",
    "rubric",
    "threshold",
    "judge",
];

/// What parsing a check needs from where it is written.
#[derive(Debug, Clone, Copy)]
pub struct ParseContext<'a> {
    /// The benchmark file's directory: `file://` paths and a script's working directory are
    /// relative to it.
    pub base_dir: &'a Path,
    /// The file's `judge:`, for judge checks that name none.
    pub default_judge: Option<&'a str>,
    /// The check is one of the seed's inline tests (`method`, `output`, `rubric`, …): its
    /// value is `output` (or `expected`), and messages say so.
    pub inline_test: bool,
}

impl<'a> ParseContext<'a> {
    /// A context for checks written under `checks:` (or a dataset's `checks` column).
    #[cfg(test)]
    pub(crate) fn new(base_dir: &'a Path) -> Self {
        Self {
            base_dir,
            default_judge: None,
            inline_test: false,
        }
    }
}

/// A check as written and validated, ready to be prepared for each case.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    /// The method.
    pub method: Method,
    /// The weight in a weighted score (> 0; 1 by default).
    pub weight: f64,
    value: Option<ValueSpec>,
    /// The key the value is written under, for messages: `value`, `expected` or `output`.
    value_key: &'static str,
    ignore_case: bool,
    /// `similar`'s threshold (0-1).
    similarity: f64,
    judge: Option<JudgeSpec>,
    script: Option<ScriptCheck>,
    /// The turn of a conversation it checks (`turn: N`, from 1); `None`: the last.
    turn: Option<usize>,
    /// `tool-called`'s `arguments:`, a JSON subset of the call's arguments.
    arguments: Option<Arc<Value>>,
    /// The check prepared once, when none of its values names a column.
    ready: Option<Check>,
}

/// A check's value as written.
#[derive(Debug, Clone)]
enum ValueSpec {
    /// A text, itself a template.
    Text(Template),
    /// A list of texts (`contains-any` and the like); a single text is a list of one.
    List(Vec<Template>),
    /// JSON written as YAML or JSON (json-equals, json-schema), or a schema read from a
    /// `file://` path: never a template. `written` is what is stored as the expected value.
    Json { value: Arc<Value>, written: String },
}

#[derive(Debug, Clone)]
struct JudgeSpec {
    rubric: Template,
    threshold: i64,
    judge: String,
}

/// `similar`'s default threshold.
const DEFAULT_SIMILARITY: f64 = 0.8;
/// A judge's default lowest passing score.
const DEFAULT_JUDGE_THRESHOLD: i64 = 4;
/// A script's default timeout.
const DEFAULT_SCRIPT_TIMEOUT_SECS: f64 = 30.0;
/// The longest timeout a script may ask for.
const MAX_SCRIPT_TIMEOUT_SECS: f64 = 3600.0;

/// The check's `method`, named and known.
fn method_of(fields: &Map<String, Value>) -> Result<Method, String> {
    Ok(match fields.get("method") {
        None | Some(Value::Null) => {
            return Err(format!(
                "the check has no `method:`; valid methods: {}",
                super::method::method_names()
            ));
        }
        Some(Value::String(name)) => name.parse()?,
        Some(other) => {
            return Err(format!(
                "`method` must be a name such as `contains`, not `{other}`"
            ));
        }
    })
}

/// Whether `method` ignores case, as `ignore_case` (true, false, or their text) says or its
/// default; refused with a method that does not take it.
fn ignore_case_of(fields: &Map<String, Value>, method: Method) -> Result<bool, String> {
    let ignore_case = match fields.get("ignore_case") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Some(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Some(false),
        Some(other) => {
            return Err(format!(
                "`ignore_case` must be true or false, not `{other}`"
            ));
        }
    };
    Ok(match ignore_case {
        None => method.always_ignores_case(),
        Some(true) if method.takes_ignore_case() || method.always_ignores_case() => true,
        Some(false) if method.takes_ignore_case() => false,
        Some(false) if method.always_ignores_case() => {
            return Err(format!(
                "`{method}` always ignores case; for `ignore_case: false` use `{}`",
                method.name().replacen("icontains", "contains", 1)
            ));
        }
        Some(_) => {
            return Err(format!(
                "`ignore_case` goes with {}; not with `{method}`",
                names_of(|m| m.takes_ignore_case())
            ));
        }
    })
}

/// Refuses the keys of another method than `method` (a judge's, a script's, a threshold).
fn refuse_keys_of_other_methods(fields: &Map<String, Value>, method: Method) -> Result<(), String> {
    let has = |key: &str| fields.get(key).is_some_and(|v| !v.is_null());
    if method != Method::Judge && (has("rubric") || has("judge")) {
        return Err(if method == Method::Similar {
            "`rubric` and `judge` go with `method: judge`".to_owned()
        } else {
            "`rubric`, `threshold` and `judge` go with `method: judge`".to_owned()
        });
    }
    if has("threshold") && !matches!(method, Method::Judge | Method::Similar) {
        return Err(
            "`rubric`, `threshold` and `judge` go with `method: judge` (and `threshold` \
             with `method: similar`)"
                .to_owned(),
        );
    }
    if method != Method::Script && (has("run") || has("timeout_secs")) {
        return Err("`run` and `timeout_secs` go with `method: script`".to_owned());
    }
    if method != Method::ToolCalled && has("arguments") {
        return Err(
            "`arguments` goes with `method: tool-called` (the JSON the call's arguments must \
             hold)"
                .to_owned(),
        );
    }
    Ok(())
}

/// `tool-called`'s `arguments:`: a mapping the call's arguments must hold.
fn arguments_of(fields: &Map<String, Value>) -> Result<Option<Arc<Value>>, String> {
    match fields.get("arguments") {
        None | Some(Value::Null) => Ok(None),
        Some(object @ Value::Object(_)) => Ok(Some(Arc::new(object.clone()))),
        Some(other) => Err(format!(
            "`arguments` is a mapping of the arguments the call must hold, such as \
             `arguments: {{city: Paris}}`, not `{other}`"
        )),
    }
}

/// A script check's command (`run`) and `timeout_secs`, checked.
fn script_of(
    fields: &Map<String, Value>,
    context: &ParseContext<'_>,
) -> Result<ScriptCheck, String> {
    let run = match fields.get("run") {
        Some(Value::String(run)) => run,
        None | Some(Value::Null) => {
            return Err(
                "a script check needs `run:`, the command that grades (such as \
                 `run: \"python3 grade.py\"`)"
                    .to_owned(),
            );
        }
        Some(other) => {
            return Err(format!("`run` must be a command as text, not `{other}`"));
        }
    };
    let secs = match number(fields, "timeout_secs")? {
        None => DEFAULT_SCRIPT_TIMEOUT_SECS,
        Some(s) if s > 0.0 && s <= MAX_SCRIPT_TIMEOUT_SECS => s,
        Some(s) => {
            return Err(format!(
                "`timeout_secs: {s}` must be above 0 and at most {MAX_SCRIPT_TIMEOUT_SECS}"
            ));
        }
    };
    ScriptCheck::new(run, Duration::from_secs_f64(secs), context.base_dir)
}

impl CheckSpec {
    /// Parses a check from its mapping, as YAML or a dataset's `checks` column gives it.
    /// Refuses unknown keys (naming the valid ones), keys of another method, a missing or
    /// contradictory value, and values that cannot work (a bad regex, JSON or schema, a
    /// weight that is not above 0) with a message naming the key; the caller adds where.
    pub(crate) fn parse(check: &Value, context: &ParseContext<'_>) -> Result<Self, String> {
        let Value::Object(fields) = check else {
            return Err(format!(
                "a check is a mapping such as `{{method: contains, value: Paris}}`, not `{}`",
                super::excerpt(&check.to_string())
            ));
        };
        let valid: &[&str] = if context.inline_test {
            &INLINE_KEYS
        } else {
            &CHECK_KEYS
        };
        if let Some(key) = fields.keys().find(|k| !valid.contains(&k.as_str())) {
            return Err(crate::yaml::unknown_key(key, valid));
        }
        let method = method_of(fields)?;
        let (value_key, written) = value_field(fields, context.inline_test)?;
        let weight = match number(fields, "weight")? {
            None => 1.0,
            Some(w) if w > 0.0 && w.is_finite() => w,
            Some(w) => return Err(format!("`weight: {w}` must be a number above 0")),
        };
        let turn = turn_of(fields, method)?;
        let ignore_case = ignore_case_of(fields, method)?;
        refuse_keys_of_other_methods(fields, method)?;
        let similarity = match (method, number(fields, "threshold")?) {
            (Method::Similar, Some(t)) if (0.0..=1.0).contains(&t) => t,
            (Method::Similar, Some(t)) => {
                return Err(format!(
                    "`threshold: {t}` of `similar` must be a ratio from 0 to 1"
                ));
            }
            _ => DEFAULT_SIMILARITY,
        };
        let value = match written {
            None => None,
            Some(v) => value_spec(method, value_key, v, context.base_dir)?,
        };
        if value.is_none() && !method.value_optional() {
            return Err(no_value(fields, method, context.inline_test));
        }
        let judge = if method == Method::Judge {
            Some(judge_spec(fields, &value, context)?)
        } else {
            None
        };
        let script = if method == Method::Script {
            Some(script_of(fields, context)?)
        } else {
            None
        };
        let arguments = arguments_of(fields)?;
        let mut spec = Self {
            method,
            weight,
            value,
            value_key,
            ignore_case,
            similarity,
            judge,
            script,
            turn,
            arguments,
            ready: None,
        };
        if spec.templates().all(Template::is_literal) {
            spec.ready = Some(spec.build(&Values::new())?);
        }
        Ok(spec)
    }

    /// The check prepared for one case: its values rendered from `values`, then compiled,
    /// parsed and validated. A check that names nothing is returned as prepared at parsing.
    pub(crate) fn prepare(&self, values: &Values) -> Result<Check, String> {
        match &self.ready {
            Some(check) => Ok(check.clone()),
            None => self.build(values),
        }
    }

    /// The templates of the check (its value or values, a judge's rubric), to check their
    /// names against the columns before any call.
    pub(crate) fn templates(&self) -> impl Iterator<Item = &Template> {
        let value: Vec<&Template> = match &self.value {
            Some(ValueSpec::Text(t)) => vec![t],
            Some(ValueSpec::List(items)) => items.iter().collect(),
            Some(ValueSpec::Json { .. }) | None => Vec::new(),
        };
        value
            .into_iter()
            .chain(self.judge.as_ref().map(|j| &j.rubric))
    }

    /// The names its templates use, each once.
    #[cfg(test)]
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for name in self.templates().flat_map(Template::names) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// The script check, for a plan that says which scripts will run.
    pub(crate) fn script(&self) -> Option<&ScriptCheck> {
        self.script.as_ref()
    }

    /// Renders, compiles and validates the check for `values`.
    fn build(&self, values: &Values) -> Result<Check, String> {
        let value = Rendered { spec: self, values };
        let ic = self.ignore_case;
        let (expected, kind) = match self.method {
            Method::Exact => value.text_with(|want| CheckKind::Exact {
                want,
                ignore_case: ic,
            })?,
            Method::Contains | Method::IContains => {
                value.text_with(|want| CheckKind::Contains {
                    want,
                    ignore_case: ic,
                })?
            }
            Method::NotContains | Method::NotIContains => {
                value.text_with(|want| CheckKind::NotContains {
                    want,
                    ignore_case: ic,
                })?
            }
            Method::EndsWith => value.text_with(|want| CheckKind::EndsWith {
                want,
                ignore_case: ic,
            })?,
            Method::Similar => value.text_with(|want| CheckKind::Similar {
                want,
                threshold: self.similarity,
                ignore_case: ic,
            })?,
            Method::StartsWith => value.list_with(|any| CheckKind::StartsWith {
                any,
                ignore_case: ic,
            })?,
            Method::ContainsAny | Method::IContainsAny => {
                value.list_with(|items| CheckKind::ContainsAny {
                    items,
                    ignore_case: ic,
                })?
            }
            Method::ContainsAll | Method::IContainsAll => {
                value.list_with(|items| CheckKind::ContainsAll {
                    items,
                    ignore_case: ic,
                })?
            }
            Method::Regex | Method::NotRegex => self.regex(&value.text()?)?,
            Method::JsonValid => (value.optional_text()?, CheckKind::JsonValid),
            Method::JsonEquals => {
                let (value, written) = self.json_value(&value)?;
                (Some(written), CheckKind::JsonEquals(value))
            }
            Method::JsonSchema => self.json_schema(&value)?,
            Method::Latency => latency(self.value_key, value.text()?)?,
            Method::Cost => cost(self.value_key, value.text()?)?,
            Method::Tokens => tokens(self.value_key, value.text()?)?,
            Method::Judge => self.judge(&value)?,
            Method::Script => {
                let script = self.script.clone().ok_or("a script check needs `run:`")?;
                (value.optional_text()?, CheckKind::Script(script))
            }
            Method::ToolCalled | Method::ToolNotCalled | Method::ToolSequence | Method::Steps => {
                self.tool_check(&value)?
            }
        };
        let mut check = Check::new(self.method, self.weight, expected, kind);
        check.turn = self.turn;
        Ok(check)
    }

    /// A check of a tool loop (`tool-called`, `tool-not-called`, `tool-sequence`, `steps`).
    fn tool_check(&self, value: &Rendered<'_>) -> Result<(Option<String>, CheckKind), String> {
        Ok(match self.method {
            Method::ToolCalled => {
                let name = value.text()?;
                let expected = match &self.arguments {
                    Some(arguments) => format!("{name} {arguments}"),
                    None => name.clone(),
                };
                let kind = CheckKind::ToolCalled {
                    name,
                    arguments: self.arguments.clone(),
                };
                (Some(expected), kind)
            }
            Method::ToolNotCalled => value.text_with(CheckKind::ToolNotCalled)?,
            Method::ToolSequence => value.list_with(CheckKind::ToolSequence)?,
            Method::Steps => {
                let written = value.text()?;
                let max = written
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| {
                        format!(
                            "`{}: {written}` of `steps` must be a whole number of calls, 1 or \
                         more",
                            self.value_key
                        )
                    })?;
                (Some(written), CheckKind::Steps { max })
            }
            other => return Err(format!("`{other}` does not grade a tool loop")),
        })
    }

    /// A regex or not-regex check of `pattern`, compiled.
    fn regex(&self, pattern: &str) -> Result<(Option<String>, CheckKind), String> {
        let re = compile_regex(self.value_key, pattern)?;
        let kind = if self.method == Method::Regex {
            CheckKind::Regex(re)
        } else {
            CheckKind::NotRegex(re)
        };
        Ok((Some(pattern.to_owned()), kind))
    }

    /// A json-schema check: its schema, compiled into a validator.
    fn json_schema(&self, value: &Rendered<'_>) -> Result<(Option<String>, CheckKind), String> {
        let (schema, written) = self.json_value(value)?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            format!(
                "`{}` is not a usable JSON Schema: {}",
                self.value_key,
                crate::llm::client::truncate_chars(&e.to_string().replace('\n', " "), 200)
            )
        })?;
        Ok((Some(written), CheckKind::JsonSchema(Arc::new(validator))))
    }

    /// A judge check: its rubric rendered, its threshold and judge model.
    fn judge(&self, value: &Rendered<'_>) -> Result<(Option<String>, CheckKind), String> {
        let spec = self
            .judge
            .as_ref()
            .ok_or("a judge check needs a rubric and a judge model")?;
        let judge = JudgeCheck {
            rubric: value.render(&spec.rubric)?,
            threshold: spec.threshold,
            judge: spec.judge.clone(),
        };
        Ok((Some(judge.rubric.clone()), CheckKind::Judge(judge)))
    }

    /// JSON for json-equals and json-schema: written as JSON (YAML) or read from a file, or a
    /// text parsed as JSON.
    fn json_value(&self, rendered: &Rendered<'_>) -> Result<(Arc<Value>, String), String> {
        if let Some(ValueSpec::Json { value, written }) = &self.value {
            return Ok((Arc::clone(value), written.clone()));
        }
        let written = rendered.text()?;
        let value: Value = serde_json::from_str(written.trim()).map_err(|e| {
            format!(
                "`{}` is not valid JSON for {}: {e}",
                self.value_key, self.method
            )
        })?;
        Ok((Arc::new(value), written))
    }
}

/// A latency check: at most `written` milliseconds.
fn latency(key: &str, written: String) -> Result<(Option<String>, CheckKind), String> {
    let max_ms = limit(key, &written, "a number of milliseconds")?;
    Ok((Some(written), CheckKind::Latency { max_ms }))
}

/// A cost check: at most `written` USD (`$0.01` or `0.01`).
fn cost(key: &str, written: String) -> Result<(Option<String>, CheckKind), String> {
    let max_usd = limit(
        key,
        written.trim().trim_start_matches('$'),
        "an amount in USD",
    )?;
    Ok((Some(written), CheckKind::Cost { max_usd }))
}

/// A tokens check: at most `written` tokens, a whole number.
fn tokens(key: &str, written: String) -> Result<(Option<String>, CheckKind), String> {
    let max = limit(key, &written, "a whole number of tokens")?;
    if max.fract() != 0.0 || max > u64::MAX as f64 {
        return Err(format!(
            "`{key}: {written}` of `tokens` must be a whole number of tokens"
        ));
    }
    Ok((Some(written), CheckKind::Tokens { max: max as u64 }))
}

/// A check's value rendered for one case's values, as each method reads it: one text, or a
/// list of them.
struct Rendered<'a> {
    spec: &'a CheckSpec,
    values: &'a Values,
}

impl Rendered<'_> {
    /// `template` with the case's values.
    fn render(&self, template: &Template) -> Result<String, String> {
        template.render(self.values).map_err(|e| e.to_string())
    }

    /// The value as one text (a list of one is that one; JSON as written; none: empty).
    fn text(&self) -> Result<String, String> {
        match &self.spec.value {
            Some(ValueSpec::Text(t)) => self.render(t),
            Some(ValueSpec::List(items)) => match items.as_slice() {
                [one] => self.render(one),
                _ => Err(format!(
                    "`{}` is a list; `{}` takes one text",
                    self.spec.value_key, self.spec.method
                )),
            },
            Some(ValueSpec::Json { written, .. }) => Ok(written.clone()),
            None => Ok(String::new()),
        }
    }

    /// The text, when a value was given (json-valid and script take one or none).
    fn optional_text(&self) -> Result<Option<String>, String> {
        self.spec.value.as_ref().map(|_| self.text()).transpose()
    }

    /// The check `make` makes of the text, and the text as what was expected.
    fn text_with(
        &self,
        make: impl FnOnce(String) -> CheckKind,
    ) -> Result<(Option<String>, CheckKind), String> {
        let want = self.text()?;
        Ok((Some(want.clone()), make(want)))
    }

    /// The check `make` makes of the list (of one or more texts), and the list as what was
    /// expected.
    fn list_with(
        &self,
        make: impl FnOnce(Vec<String>) -> CheckKind,
    ) -> Result<(Option<String>, CheckKind), String> {
        let key = self.spec.value_key;
        let items = match &self.spec.value {
            Some(ValueSpec::List(items)) => items.iter().map(|t| self.render(t)).collect(),
            Some(ValueSpec::Text(t)) => Ok(vec![self.render(t)?]),
            _ => Err(format!("`{key}` must be a list of texts")),
        }?;
        let items = non_empty(items, key)?;
        Ok((Some(list_text(&items)), make(items)))
    }
}

/// The value and the key it is under; `value`, `expected` and (inline) `output` are one
/// thing, so two of them are refused.
fn value_field(
    fields: &Map<String, Value>,
    inline: bool,
) -> Result<(&'static str, Option<&Value>), String> {
    let keys: &[&'static str] = if inline {
        &["output", "expected"]
    } else {
        &["value", "expected"]
    };
    let given: Vec<&'static str> = keys
        .iter()
        .copied()
        .filter(|k| fields.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    match given.as_slice() {
        [] => Ok((keys[0], None)),
        [one] => Ok((one, fields.get(*one))),
        _ => Err(format!(
            "`{}` and `{}` are the same thing (what the answer is compared with); give one",
            given[0], given[1]
        )),
    }
}

/// The value as written, checked against what the method takes.
fn value_spec(
    method: Method,
    key: &str,
    value: &Value,
    base_dir: &Path,
) -> Result<Option<ValueSpec>, String> {
    let json_method = matches!(method, Method::JsonEquals | Method::JsonSchema);
    Ok(Some(match value {
        Value::Null => return Ok(None),
        Value::String(s) if method == Method::JsonSchema && s.trim().starts_with("file://") => {
            schema_file(key, s.trim(), base_dir)?
        }
        Value::Array(items) if method.takes_list() => ValueSpec::List(
            items
                .iter()
                .map(|item| match scalar_text(item) {
                    Some(text) => Ok(Template::parse(&text)),
                    None => Err(format!(
                        "`{key}` of `{method}` is a list of texts; `{item}` is not one"
                    )),
                })
                .collect::<Result<_, String>>()?,
        ),
        Value::Array(_) | Value::Object(_) if json_method => ValueSpec::Json {
            written: value.to_string(),
            value: Arc::new(value.clone()),
        },
        Value::Array(_) => {
            return Err(format!(
                "`{key}` is a list; only {} take a list (quote it if it is a text starting \
                 with `[`)",
                names_of(Method::takes_list)
            ));
        }
        Value::Object(_) => {
            return Err(format!(
                "`{key}` is a mapping; write it as text (quote it if it holds `: `)"
            ));
        }
        scalar => {
            let text = scalar_text(scalar).unwrap_or_default();
            let template = Template::parse(&text);
            if method.takes_list() {
                ValueSpec::List(vec![template])
            } else {
                ValueSpec::Text(template)
            }
        }
    }))
}

/// Why a check whose method needs a value has none: none written, or a null (`~`, `null`).
fn no_value(fields: &Map<String, Value>, method: Method, inline_test: bool) -> String {
    if let Some(key) = ["output", "value", "expected"]
        .into_iter()
        .find(|k| fields.get(*k).is_some_and(Value::is_null))
    {
        return format!(
            "`{key}` is null: YAML reads `~`, `null` and nothing as no value; to compare with \
             a text, quote it (`{key}: \"null\"`)"
        );
    }
    if inline_test {
        "the test has no `output:` (the expected output)".to_owned()
    } else {
        format!("the check has no `value:` (what the answer is compared with; `{method}`)")
    }
}

/// A schema read from `file://path` (relative to the benchmark's directory): JSON, or YAML
/// for a `.yaml`/`.yml` file.
fn schema_file(key: &str, written: &str, base_dir: &Path) -> Result<ValueSpec, String> {
    let relative = written.trim_start_matches("file://");
    let path = base_dir.join(relative);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("`{key}: {written}`: cannot read {}: {e}", path.display()))?;
    let yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    let value: Value = if yaml {
        serde_saphyr::from_str(&text).map_err(|e| e.to_string())
    } else {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }
    .map_err(|e| {
        format!(
            "`{key}: {written}`: {} is not a JSON Schema: {e}",
            path.display()
        )
    })?;
    Ok(ValueSpec::Json {
        value: Arc::new(value),
        written: written.to_owned(),
    })
}

/// The judge's rubric (`rubric`, else the value), threshold (1-5) and model (its own, else
/// the file's).
fn judge_spec(
    fields: &Map<String, Value>,
    value: &Option<ValueSpec>,
    context: &ParseContext<'_>,
) -> Result<JudgeSpec, String> {
    let rubric = match fields.get("rubric") {
        None | Some(Value::Null) => match value {
            Some(ValueSpec::Text(t)) => t.clone(),
            _ => {
                let key = if context.inline_test {
                    "output"
                } else {
                    "value"
                };
                return Err(format!(
                    "uses method judge but has no `rubric:` (or `{key}:`) to grade against"
                ));
            }
        },
        Some(v) => {
            Template::parse(&scalar_text(v).ok_or_else(|| "`rubric` must be text".to_owned())?)
        }
    };
    let threshold = match fields.get("threshold") {
        None | Some(Value::Null) => DEFAULT_JUDGE_THRESHOLD,
        Some(v) => scalar_text(v)
            .and_then(|t| t.trim().parse::<i64>().ok())
            .filter(|t| (1..=5).contains(t))
            .ok_or("`threshold` must be a whole score from 1 to 5")?,
    };
    let judge = match fields.get("judge") {
        Some(Value::String(j)) => j.trim().to_owned(),
        None | Some(Value::Null) => context.default_judge.map(str::to_owned).ok_or(
            "uses method judge but names no judge model: add `judge: <provider>:<name>` at the \
             top of the benchmark file (the judge of every judge check, those of a data file's \
             rows too), or to the check",
        )?,
        Some(other) => {
            return Err(format!(
                "`judge` must be a model such as `openai:gpt-4o`, not `{other}`"
            ));
        }
    };
    Ok(JudgeSpec {
        rubric,
        threshold,
        judge,
    })
}

/// A number field: a number, or a text holding one.
fn number(fields: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a number, not `{v}`")),
    }
}

/// The `turn: N` of a check (a whole number from 1): the turn of a conversation it checks. A
/// judge reads the last turn: `turn` is refused on it.
fn turn_of(fields: &Map<String, Value>, method: Method) -> Result<Option<usize>, String> {
    let Some(turn) = number(fields, "turn")? else {
        return Ok(None);
    };
    if method == Method::Judge {
        return Err(
            "`turn` does not apply to `judge`: a judge reads the conversation's last answer;              remove `turn`"
                .to_owned(),
        );
    }
    if turn < 1.0 || turn.fract() != 0.0 || turn > f64::from(u16::MAX) {
        return Err(format!(
            "`turn: {turn}` must be a whole number from 1 (the conversation's first turn)"
        ));
    }
    Ok(Some(turn as usize))
}

/// A scalar as text (numbers and booleans as written); `None` for a list or a mapping.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// A limit of latency, cost or tokens: a number at least 0.
fn limit(key: &str, written: &str, what: &str) -> Result<f64, String> {
    written
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x >= 0.0 && x.is_finite())
        .ok_or_else(|| format!("`{key}: {written}` must be {what}, at least 0"))
}

/// A list that is not empty.
fn non_empty(items: Vec<String>, key: &str) -> Result<Vec<String>, String> {
    if items.is_empty() {
        Err(format!("`{key}` is an empty list; give at least one text"))
    } else {
        Ok(items)
    }
}

/// A list as stored: compact JSON.
fn list_text(items: &[String]) -> String {
    Value::from(items.to_vec()).to_string()
}

/// Compiles `pattern`, naming it and what is wrong in one line.
fn compile_regex(key: &str, pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        // regex's own message draws a caret under the pattern on several lines; its last
        // line says what is wrong.
        let text = e.to_string();
        let why = text.lines().last().unwrap_or_default();
        let why = why.trim().trim_start_matches("error: ");
        format!("`{key}` `{pattern}` is not a valid regex: {why}")
    })
}

/// The names of the methods `which` holds for, for messages.
fn names_of(which: impl Fn(Method) -> bool) -> String {
    METHODS
        .into_iter()
        .filter(|m| which(*m))
        .map(Method::name)
        .collect::<Vec<_>>()
        .join(", ")
}
