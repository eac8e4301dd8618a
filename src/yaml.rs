//! YAML errors as people read them: `file:line:col: message`, on one line, without the
//! parser's source excerpt (the file is open in the user's editor). An unknown key is named
//! with the valid ones and the closest (`did you mean `prompts`?`); a tab that indents a line
//! is pointed at where it is. [`line_at`] finds the line of a key for a kind's own checks.
//!
//! Values a kind reads itself (tests, cases, checks, templates) are read through [`Written`]
//! (or [`as_written`]), which keeps every scalar as the file writes it: YAML would read
//! `yes` as true, `1.10` as 1.1, `0x1F` as 31 and `001` as 1; these stay the texts `yes`,
//! `1.10`, `0x1F` and `001`, and only `true`, `false`, and numbers written as JSON writes them
//! (`3`, `0.5`) are booleans and numbers.

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use serde_saphyr::Spanned;

/// `path:line:col: message` for an error of serde-saphyr reading `text` (`path: message`
/// when it knows no position).
pub(crate) fn describe(path: &Path, text: &str, error: &serde_saphyr::Error) -> String {
    let position = error.location().map(|at| (at.line(), at.column()));
    if let serde_saphyr::Error::SerdeUnknownField {
        field, expected, ..
    } = error.without_snippet()
    {
        return located(path, position, &unknown_key(field, expected));
    }
    if let serde_saphyr::Error::NonFiniteFloat { value, .. } = error.without_snippet() {
        return located(
            path,
            position,
            &format!(
                "`{value}` reads as a number that is not finite: quote it to keep it as text \
                 (`\"{value}\"`), or write a finite number"
            ),
        );
    }
    let rendered = error.without_snippet().to_string();
    let first = rendered.lines().next().unwrap_or_default().trim();
    let message = strip_position(first.trim_start_matches("error:").trim());
    // Some messages repeat the position at their end.
    let message = match message.rfind(" at line ") {
        Some(at) if message[at..].contains("column") => &message[..at],
        _ => message,
    };
    // The parser's own advice (`set DuplicateKeyPolicy in Options`) is for programmers.
    if let Some(key) = message.strip_prefix("duplicate mapping key: ") {
        let key = key.split(',').next().unwrap_or(key).trim();
        return located(
            path,
            position,
            &format!("key `{key}` is given twice in one mapping: keep one"),
        );
    }
    if message.contains("tab")
        && let Some(tab) = indenting_tab(text, position.map_or(1, |(line, _)| line))
    {
        return located(
            path,
            Some(tab),
            "a tab indents this line: indent with spaces (YAML allows no tabs in indentation)",
        );
    }
    located(path, position, message)
}

/// `path:line:col: message`, or `path: message` without a position.
fn located(path: &Path, position: Option<(u64, u64)>, message: &str) -> String {
    match position.filter(|(line, _)| *line > 0) {
        Some((line, column)) => format!("{}:{line}:{column}: {message}", path.display()),
        None => format!("{}: {message}", path.display()),
    }
}

/// ``unknown key `promts`; did you mean `prompts`? valid keys: kind, models, prompts``: a key
/// that is not one of `valid`, with the closest when it is a slip of a letter or two.
pub(crate) fn unknown_key(key: &str, valid: &[&str]) -> String {
    let suggestion = closest(key, valid)
        .map(|k| format!(" did you mean `{k}`?"))
        .unwrap_or_default();
    format!(
        "unknown key `{key}`;{suggestion} valid keys: {}",
        valid.join(", ")
    )
}

/// The key of `valid` closest to `typed` when it is a slip: within one edit in three letters
/// (at least one; Damerau-Levenshtein, case ignored), the first of equals in `valid`'s order.
pub(crate) fn closest<'a>(typed: &str, valid: &[&'a str]) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    let limit = (typed.chars().count() / 3).max(1);
    valid
        .iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&typed, &k.to_ascii_lowercase()),
                *k,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// The line and column (from 1) of the first tab in the indentation of a line, searched from
/// line `from` on (a parser reports a tab where the scalar before it ends), else from the top.
fn indenting_tab(text: &str, from: u64) -> Option<(u64, u64)> {
    let tabs: Vec<(u64, u64)> = text
        .lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let indent = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
            let column = indent.find('\t')?;
            Some((index as u64 + 1, column as u64 + 1))
        })
        .collect();
    tabs.iter()
        .find(|(line, _)| *line >= from)
        .or_else(|| tabs.first())
        .copied()
}

/// Parser options for files that may be large: benchmarks with hundreds of thousands of tests
/// are legitimate, so the parser's default node budget (250,000) is lifted; its other
/// protections stay.
pub(crate) fn large_file_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::budget::Budget::default();
    budget.max_nodes = 100_000_000;
    budget.max_events = 200_000_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

thread_local! {
    /// The text [`from_str`] is parsing, for [`Written`] to read scalars as written.
    static SOURCE: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Parses `text` with `options`, the [`Written`] values in `T` keeping their scalars as the
/// text writes them.
pub(crate) fn from_str<T: DeserializeOwned>(
    text: &str,
    options: serde_saphyr::Options,
) -> Result<T, serde_saphyr::Error> {
    let previous = SOURCE.with(|s| s.replace(Some(Arc::from(text))));
    let parsed = serde_saphyr::from_str_with_options(text, options);
    SOURCE.with(|s| *s.borrow_mut() = previous);
    parsed
}

/// A YAML value as JSON, its scalars as written: a plain scalar YAML would read as a boolean
/// or a number stays a boolean or a number only when JSON writes it the same way (`true`,
/// `3`, `0.5`); else it is the text written (`yes`, `1.10`, `0x1F`, `001`, `1e3`, `True`), so
/// a field that is text gets what the file says, and a field that is a number still parses
/// it. A null is null. What is JSON rather than text keeps YAML's types: a `json-equals` or
/// `json-schema` check's value, `arguments:` and a tool's `parameters:`; so do the settings
/// that are numbers (`temperature: 0.70` is 0.7; `JSON_KEYS`). Read outside
/// [`from_str`] (from JSON), it is the value as it comes.
#[derive(Debug, Clone, PartialEq)]
pub struct Written(pub Value);

/// `deserialize_with` for a field read through [`Written`]: its value as written, then as `T`.
pub(crate) fn as_written<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<T, D::Error> {
    let Written(value) = Written::deserialize(deserializer)?;
    T::deserialize(value).map_err(de::Error::custom)
}

impl<'de> Deserialize<'de> for Written {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if SOURCE.with(|s| s.borrow().is_none()) {
            return Value::deserialize(deserializer).map(Written);
        }
        Tree::deserialize(deserializer).map(|tree| Written(tree.into_value(false)))
    }
}

/// Keys whose value is JSON, not text, or a number setting (`temperature: 0.70` is 0.7): it
/// keeps YAML's types.
const JSON_KEYS: [&str; 11] = [
    "arguments",
    "parameters",
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "timeout_secs",
    "weight",
    "threshold",
    "turn",
    "max_steps",
];
/// Methods whose value is JSON.
const JSON_METHODS: [&str; 2] = ["json-equals", "json-schema"];

/// A YAML document as parsed, each scalar YAML types as a boolean or a number with its text.
enum Tree {
    Typed { typed: Value, raw: Option<String> },
    Text(String),
    Null,
    Seq(Vec<Tree>),
    Map(Vec<(String, Tree)>),
}

impl Tree {
    /// The value, its typed scalars as written unless `typed` (JSON).
    fn into_value(self, typed: bool) -> Value {
        match self {
            Tree::Typed { typed: value, .. } if typed => value,
            Tree::Typed { typed: value, raw } => {
                let canonical = value.to_string();
                match raw {
                    Some(raw) if raw != canonical => Value::String(raw),
                    _ => value,
                }
            }
            Tree::Text(text) => Value::String(text),
            Tree::Null => Value::Null,
            Tree::Seq(items) => {
                Value::Array(items.into_iter().map(|i| i.into_value(typed)).collect())
            }
            Tree::Map(entries) => {
                let json_method = entries.iter().any(|(key, value)| {
                    key == "method"
                        && matches!(value, Tree::Text(m) if JSON_METHODS.contains(&m.as_str()))
                });
                let json = |key: &str| {
                    typed
                        || JSON_KEYS.contains(&key)
                        || (json_method && ["value", "expected", "output"].contains(&key))
                };
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(key, value)| {
                            let value = value.into_value(json(&key));
                            (key, value)
                        })
                        .collect(),
                )
            }
        }
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let node = Spanned::<Parsed>::deserialize(deserializer)?;
        Ok(match node.value.0 {
            Tree::Typed { typed, .. } => {
                let span = node.defined.span();
                let raw = SOURCE.with(|source| {
                    let source = source.borrow();
                    let (at, len) = (span.byte_offset()?, span.byte_len()?);
                    let text = source.as_ref()?.get(at as usize..(at + len) as usize)?;
                    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
                });
                Tree::Typed { typed, raw }
            }
            other => other,
        })
    }
}

/// A node as the parser gives it, a typed scalar without its text yet.
struct Parsed(Tree);

impl<'de> Deserialize<'de> for Parsed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParsedVisitor)
    }
}

struct ParsedVisitor;

impl ParsedVisitor {
    fn typed(value: Value) -> Parsed {
        Parsed(Tree::Typed {
            typed: value,
            raw: None,
        })
    }
}

impl<'de> Visitor<'de> for ParsedVisitor {
    type Value = Parsed;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Parsed, E> {
        Ok(Self::typed(Value::Bool(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Parsed, E> {
        Ok(Self::typed(Value::Number(v.into())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Parsed, E> {
        Ok(Self::typed(Value::Number(v.into())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Parsed, E> {
        // A non-finite number has no JSON form: its text.
        Ok(match Number::from_f64(v) {
            Some(number) => Self::typed(Value::Number(number)),
            None => Parsed(Tree::Text(v.to_string())),
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Parsed, E> {
        Ok(Parsed(Tree::Text(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Parsed, E> {
        Ok(Parsed(Tree::Text(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Parsed, E> {
        Ok(Parsed(Tree::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<Parsed, E> {
        Ok(Parsed(Tree::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        Tree::deserialize(d).map(Parsed)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Tree>()? {
            items.push(item);
        }
        Ok(Parsed(Tree::Seq(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parsed, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value::<Tree>()?));
        }
        Ok(Parsed(Tree::Map(entries)))
    }
}

/// One step of a path into a YAML document: a mapping's key, or a list's item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Item(usize),
}

/// The line of what `path` leads to in `text` (the key's line, or the item's), or `None` when
/// the text does not parse or holds no such key. The text is parsed again with positions, so
/// this is for messages only.
pub(crate) fn line_at(text: &str, path: &[Step<'_>]) -> Option<u64> {
    walk(text, path).and_then(|(line, _)| line)
}

/// The line of each item of the list `path` leads to in `text` (`None` for an item whose
/// line is not known), parsing the text once: a line for each of a thousand cases, each
/// found with [`line_at`], parsed the file a thousand times (30 s for 1,100 cases).
pub(crate) fn item_lines(text: &str, path: &[Step<'_>]) -> Vec<Option<u64>> {
    match walk(text, path) {
        Some((_, Node::Seq(items))) => items
            .iter()
            .map(|item| Some(item.referenced.line()).filter(|l| *l > 0))
            .collect(),
        _ => Vec::new(),
    }
}

/// The line of what `path` leads to in `text`, and what it leads to.
fn walk(text: &str, path: &[Step<'_>]) -> Option<(Option<u64>, Node)> {
    let mut node: Node = serde_saphyr::from_str_with_options(text, large_file_options()).ok()?;
    let mut line = None;
    for step in path {
        let (at, next) = match (step, node) {
            (Step::Key(key), Node::Map(entries)) => entries
                .into_iter()
                .find(|(k, _)| k.value.0 == *key)
                .map(|(k, value)| (k.referenced, value))?,
            (Step::Item(index), Node::Seq(items)) => items
                .into_iter()
                .nth(*index)
                .map(|item| (item.referenced, item.value))?,
            _ => return None,
        };
        line = Some(at.line()).filter(|l| *l > 0);
        node = next;
    }
    Some((line, node))
}

/// A document's shape, with where each key and item is.
enum Node {
    Map(Vec<(Spanned<Key>, Node)>),
    Seq(Vec<Spanned<Node>>),
    Scalar,
}

/// A mapping's key as text, whatever its scalar type (`1:` is the key `1`).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_owned()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
                Ok(Key(String::new()))
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<Key>>()? {
                    entries.push((key, map.next_value::<Node>()?));
                }
                Ok(Node::Map(entries))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Spanned<Node>>()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
                Node::deserialize(d)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
        }
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// `line 5 column 5: invalid indentation` without its `line 5 column 5: ` prefix.
fn strip_position(message: &str) -> &str {
    let Some(rest) = message.strip_prefix("line ") else {
        return message;
    };
    match rest.split_once(": ") {
        Some((position, text)) if position.contains("column") => text,
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_values_keep_scalars_as_the_file_writes_them() {
        let text = "a: [yes, no, on, off, y, n, True, 1.10, 0x1F, 0o17, 001, 1e3, +1, 1_000]\n\
                    b: [true, false, 3, -4, 0.5, 1.0, '001', \"yes\", ~, null]\n\
                    c: {id: 001, nested: [{answer: 1.50}]}\n\
                    d: &x 007\n\
                    e: *x\n\
                    f: 12 # a comment\n\
                    g: |\n  yes\n";
        let Written(value) = from_str(text, serde_saphyr::Options::default()).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "a": ["yes", "no", "on", "off", "y", "n", "True", "1.10", "0x1F", "0o17", "001",
                      "1e3", "+1", "1_000"],
                "b": [true, false, 3, -4, 0.5, 1.0, "001", "yes", null, null],
                "c": {"id": "001", "nested": [{"answer": "1.50"}]},
                "d": "007",
                "e": "007",
                "f": 12,
                "g": "yes\n",
            })
        );
        // JSON keeps YAML's types: a json-equals or json-schema value, a tool's parameters,
        // a call's arguments; so do number settings; a text beside them does not.
        let text = "- {method: json-equals, value: {score: 0.50, ok: yes}}\n\
                    - {expected: {minimum: 1e3}, method: json-schema}\n\
                    - {method: exact, value: 0.50}\n\
                    - {name: w, parameters: {minimum: 0.50}, result: 1.10}\n\
                    - {method: tool-called, value: w, arguments: {t: 2.50}}\n\
                    - {model: a:b, name: 1.10, temperature: 0.70, timeout_secs: 1e1}\n";
        let Written(value) = from_str(text, serde_saphyr::Options::default()).unwrap();
        assert_eq!(
            value,
            serde_json::json!([
                {"method": "json-equals", "value": {"score": 0.5, "ok": true}},
                {"expected": {"minimum": 1000.0}, "method": "json-schema"},
                {"method": "exact", "value": "0.50"},
                {"name": "w", "parameters": {"minimum": 0.5}, "result": "1.10"},
                {"method": "tool-called", "value": "w", "arguments": {"t": 2.5}},
                {"model": "a:b", "name": "1.10", "temperature": 0.7, "timeout_secs": 10.0},
            ])
        );
        // Outside `from_str` (a JSON value), it is the value as it comes.
        let Written(json) = serde_json::from_str(r#"{"a": 1.5, "b": true}"#).unwrap();
        assert_eq!(json, serde_json::json!({"a": 1.5, "b": true}));
    }

    #[test]
    fn a_scalar_that_cannot_be_kept_is_refused_naming_its_line_and_the_fix() {
        let text = "a: 1\noutput: .inf\n";
        let error = from_str::<Written>(text, serde_saphyr::Options::default()).unwrap_err();
        assert_eq!(
            describe(Path::new("b.yaml"), text, &error),
            "b.yaml:2:9: `.inf` reads as a number that is not finite: quote it to keep it as \
             text (`\".inf\"`), or write a finite number"
        );
    }

    #[test]
    fn a_field_read_as_written_is_its_type_from_the_written_value() {
        #[derive(Debug, serde::Deserialize)]
        struct File {
            #[serde(default, deserialize_with = "as_written")]
            tests: Option<Vec<serde_json::Map<String, Value>>>,
            #[serde(default)]
            temperature: Option<f64>,
        }
        let file: File = from_str(
            "temperature: 0.5\ntests:\n  - {output: yes, n: 2}\n",
            serde_saphyr::Options::default(),
        )
        .unwrap();
        assert_eq!(file.temperature, Some(0.5));
        let tests = file.tests.unwrap();
        assert_eq!(tests[0]["output"], "yes");
        assert_eq!(tests[0]["n"], 2);
        let file: File = from_str("tests: ~\n", serde_saphyr::Options::default()).unwrap();
        assert!(file.tests.is_none());
        // A field typed as text (every kind's names, models, paths) is the text written.
        #[derive(Debug, serde::Deserialize)]
        struct Texts {
            names: Vec<String>,
            brand: Option<String>,
        }
        let texts: Texts =
            serde_saphyr::from_str("names: [yes, 1.10, 0x1F, 001, 1e3, True, +1]\nbrand: on\n")
                .unwrap();
        assert_eq!(
            texts.names,
            ["yes", "1.10", "0x1F", "001", "1e3", "True", "+1"]
        );
        assert_eq!(texts.brand.as_deref(), Some("on"));
    }

    #[test]
    fn a_key_given_twice_is_named_with_the_fix() {
        let text = "kind: review\nmax_tokens: 10\nmax_tokens: 20\n";
        let error = serde_saphyr::from_str::<serde_json::Value>(text).unwrap_err();
        let line = describe(Path::new("r.yaml"), text, &error);
        assert!(
            line.starts_with("r.yaml:3:")
                && line.ends_with("key `max_tokens` is given twice in one mapping: keep one"),
            "{line}"
        );
    }

    #[test]
    fn syntax_errors_are_one_line_with_file_line_and_column() {
        let text = "models: [openai:gpt-4o]\nprompts:\n  - a:\n    prompt: \"unterminated\n    output: x\n";
        let error = serde_saphyr::from_str::<serde_json::Value>(text).unwrap_err();
        let line = describe(Path::new("bad.yaml"), text, &error);
        assert!(line.starts_with("bad.yaml:5:5: "), "{line}");
        assert!(!line.contains("-->") && !line.contains('\n'), "{line}");
        assert!(!line.contains("at line"), "{line}");
    }

    #[test]
    fn an_unknown_key_is_named_with_the_closest_and_the_valid_keys() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[expect(dead_code, reason = "only the error is read")]
        struct File {
            models: Vec<String>,
            prompts: Option<Vec<String>>,
        }
        let text = "models: [a:b]\npromts: [x]\n";
        let error = serde_saphyr::from_str::<File>(text).unwrap_err();
        assert_eq!(
            describe(Path::new("b.yaml"), text, &error),
            "b.yaml:2:1: unknown key `promts`; did you mean `prompts`? valid keys: models, prompts"
        );
    }

    #[test]
    fn a_slip_suggests_the_closest_key_and_another_word_none() {
        let valid = ["kind", "models", "prompts", "system", "batch", "judge"];
        assert_eq!(closest("promts", &valid), Some("prompts"));
        assert_eq!(closest("Systm", &valid), Some("system"));
        assert_eq!(closest("batched", &valid), Some("batch"));
        assert_eq!(closest("vars", &valid), None);
        assert_eq!(closest("cases", &valid), None);
    }

    #[test]
    fn a_tab_in_the_indentation_is_pointed_at_where_it_is() {
        for (text, at) in [
            ("a:\n  - b:\n    c: x\n  \td: y\n", "t.yaml:4:3: "),
            ("a:\n\t- b\n", "t.yaml:2:1: "),
            ("a:\n  b: 1\n\t\tc: 2\n", "t.yaml:3:1: "),
        ] {
            let error = serde_saphyr::from_str::<serde_json::Value>(text).unwrap_err();
            let line = describe(Path::new("t.yaml"), text, &error);
            assert!(line.starts_with(at), "{text:?}: {line}");
            assert!(line.contains("indent with spaces"), "{line}");
        }
    }

    #[test]
    fn the_line_of_a_key_or_an_item_is_found_by_its_path() {
        let text = "models: [a:b]\nprompts:\n  - one:\n    prompt: x\n  - name: two\n    vars: {country: France}\n    prompt: y\n  - three:\n      prompt: z\n";
        let line = |path: &[Step<'_>]| line_at(text, path);
        assert_eq!(line(&[Step::Key("prompts")]), Some(2));
        assert_eq!(line(&[Step::Key("prompts"), Step::Item(1)]), Some(5));
        let vars = [Step::Key("prompts"), Step::Item(1), Step::Key("vars")];
        assert_eq!(line(&vars), Some(6));
        let nested = [
            Step::Key("prompts"),
            Step::Item(2),
            Step::Key("three"),
            Step::Key("prompt"),
        ];
        assert_eq!(line(&nested), Some(9));
        assert_eq!(line(&[Step::Key("prompts"), Step::Item(3)]), None);
        assert_eq!(line(&[Step::Key("nothing")]), None);
        assert_eq!(
            item_lines(text, &[Step::Key("prompts")]),
            [Some(3), Some(5), Some(8)],
            "each item's line, as line_at finds it"
        );
        assert!(item_lines(text, &[Step::Key("models"), Step::Item(0)]).is_empty());
        assert!(item_lines(text, &[Step::Key("nothing")]).is_empty());
    }
}
