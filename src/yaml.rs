//! YAML errors as people read them: `file:line:col: message`, on one line, without the
//! parser's source excerpt (the file is open in the user's editor). An unknown key is named
//! with the valid ones and the closest (`did you mean `prompts`?`); a tab that indents a line
//! is pointed at where it is. [`line_at`] finds the line of a key for a kind's own checks.

use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
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
