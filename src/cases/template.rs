//! `{{name}}` templates: a prompt, a message or a check's value written once and filled from
//! each case's values. Parsed once into literal text and names, checked against the columns
//! before any call, then rendered per case in one pass. No logic and no filters: a value is
//! inserted as text and never scanned again, so a value holding `{{x}}` stays `{{x}}`.
//!
//! What counts as a name: `{{` then an identifier path (`question`, `item.question`,
//! `choices.0`, spaces around it allowed) then `}}`. Any other brace is text, so JSON in a
//! prompt just works. `\{{` writes a literal `{{` (the backslash is dropped), for the rare
//! prompt that must show `{{name}}` itself.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

/// The values of one case, by column.
pub type Values = Map<String, Value>;

/// A template parsed into its pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The text as written, for hashing and messages.
    text: String,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// A name: its path's steps (`item.question` → `item`, `question`), and the path as
    /// written, for a column whose own name holds a dot.
    Name {
        path: Vec<String>,
        written: String,
    },
}

/// A name a case has no value for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingValue {
    /// The name as the template writes it (`item.question`).
    pub name: String,
}

impl fmt::Display for MissingValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no value for `{{{{{}}}}}`", self.name)
    }
}

impl Template {
    /// Parses `text`; every text is a template (one without names renders as itself).
    pub(crate) fn parse(text: &str) -> Self {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            // `\{{`: a literal `{{`.
            if rest[..open].ends_with('\\') {
                literal.push_str(&rest[..open - 1]);
                literal.push_str("{{");
                rest = &rest[open + 2..];
                continue;
            }
            literal.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            match after.find("}}").and_then(|close| {
                let inner = after[..close].trim();
                is_name_path(inner).then_some((inner, close))
            }) {
                Some((inner, close)) => {
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(Piece::Name {
                        path: inner.split('.').map(str::to_owned).collect(),
                        written: inner.to_owned(),
                    });
                    rest = &after[close + 2..];
                }
                None => {
                    literal.push_str("{{");
                    rest = after;
                }
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Self {
            text: text.to_owned(),
            pieces,
        }
    }

    /// The text as written.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether the template names nothing: it renders the same for every case.
    pub(crate) fn is_literal(&self) -> bool {
        !self.pieces.iter().any(|p| matches!(p, Piece::Name { .. }))
    }

    /// The names as written (`item.question`), in order, each once.
    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Name { written, .. } = piece
                && !names.contains(&written.as_str())
            {
                names.push(written);
            }
        }
        names
    }

    /// The columns the template reads: each name's first step, or the whole name when a
    /// column is called that (`columns` holds a column named `a.b`).
    pub(crate) fn columns<'a>(&'a self, columns: &[String]) -> Vec<&'a str> {
        let mut used: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Name { path, written } = piece {
                let column = if columns.iter().any(|c| c == written) {
                    written.as_str()
                } else {
                    path[0].as_str()
                };
                if !used.contains(&column) {
                    used.push(column);
                }
            }
        }
        used
    }

    /// The names whose column is not among `columns` (a dot path needs only its first step).
    pub(crate) fn unknown_names(&self, columns: &[String]) -> Vec<&str> {
        self.names()
            .into_iter()
            .filter(|name| {
                let root = name.split('.').next().unwrap_or(name);
                !columns.iter().any(|c| c == name || c == root)
            })
            .collect()
    }

    /// The template filled from `values`: each name replaced by its value as text (a string
    /// as it is, other JSON as compact JSON, null as nothing).
    pub fn render(&self, values: &Values) -> Result<String, MissingValue> {
        // A template without names is its own text.
        if let [Piece::Text(text)] = self.pieces.as_slice() {
            return Ok(text.clone());
        }
        let mut out = String::with_capacity(self.text.len() + 64);
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Name { path, written } => {
                    let value = lookup(values, written, path).ok_or_else(|| MissingValue {
                        name: written.clone(),
                    })?;
                    out.push_str(&value_text(value));
                }
            }
        }
        Ok(out)
    }
}

impl Template {
    /// When the template is one name and nothing else (`{{messages}}`), the value it names in
    /// `values`, as it is: a JSON body puts an array or an object there, not its text. `None`
    /// when the template holds anything besides the name.
    pub(crate) fn lone_value<'v>(
        &self,
        values: &'v Values,
    ) -> Option<Result<&'v Value, MissingValue>> {
        match self.pieces.as_slice() {
            [Piece::Name { path, written }] => {
                Some(lookup(values, written, path).ok_or_else(|| MissingValue {
                    name: written.clone(),
                }))
            }
            _ => None,
        }
    }
}

/// A value as a template inserts it.
pub(crate) fn value_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

/// The value a name points at: a column called the whole name, else the path's steps through
/// objects (by key) and arrays (by index). A step into a null is null, as in SQL and jq: a
/// struct that is null in a row (Parquet) has null fields, not missing ones.
fn lookup<'a>(values: &'a Values, written: &str, path: &[String]) -> Option<&'a Value> {
    static NULL: Value = Value::Null;
    if let Some(value) = values.get(written) {
        return Some(value);
    }
    let (first, rest) = path.split_first()?;
    let mut value = values.get(first)?;
    for step in rest {
        value = match value {
            Value::Object(map) => map.get(step)?,
            Value::Array(items) => items.get(step.parse::<usize>().ok()?)?,
            Value::Null => return Some(&NULL),
            _ => return None,
        };
    }
    Some(value)
}

/// `question`, `item.question`, `choices.0`, `__expected`: steps of letters, digits, `_` and
/// `-`, the first not starting with a digit or `-`, joined by dots.
fn is_name_path(inner: &str) -> bool {
    let mut steps = inner.split('.');
    let Some(first) = steps.next() else {
        return false;
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    };
    word(first)
        && first
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        && steps.all(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> Values {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_are_filled_once_and_values_are_never_scanned_again() {
        let t = Template::parse("What is {{a}} * {{ b }}? {{a}}");
        assert_eq!(t.names(), ["a", "b"]);
        let v = values(json!({"a": "{{b}}", "b": 7}));
        assert_eq!(t.render(&v).unwrap(), "What is {{b}} * 7? {{b}}");
    }

    #[test]
    fn braces_that_are_not_names_are_text_and_a_backslash_writes_a_literal_pair() {
        let t = Template::parse(r#"Reply as {"answer": {{n}}} or {{ "x": 1 }} {{}} \{{n}} {{n"#);
        assert_eq!(t.names(), ["n"]);
        let v = values(json!({"n": 3}));
        assert_eq!(
            t.render(&v).unwrap(),
            r#"Reply as {"answer": 3} or {{ "x": 1 }} {{}} {{n}} {{n"#
        );
        assert!(Template::parse("plain {json}").is_literal());
    }

    #[test]
    fn dot_paths_reach_into_json_values_and_a_dotted_column_wins() {
        let t = Template::parse("{{item.question}} {{choices.1}} {{a.b}}");
        let v = values(json!({
            "item": {"question": "Why?"},
            "choices": ["x", "y"],
            "a.b": "dotted",
            "a": {"b": "nested"}
        }));
        assert_eq!(t.render(&v).unwrap(), "Why? y dotted");
        let columns: Vec<String> = v.keys().cloned().collect();
        assert_eq!(t.columns(&columns), ["item", "choices", "a.b"]);
        assert!(t.unknown_names(&columns).is_empty());
    }

    #[test]
    fn a_lone_name_gives_its_value_as_it_is_and_anything_more_gives_none() {
        let v = values(json!({"m": [{"role": "user"}], "item": {"q": "Why?"}}));
        let lone = |text: &str| Template::parse(text).lone_value(&v).map(|r| r.cloned());
        assert_eq!(lone("{{m}}"), Some(Ok(json!([{"role": "user"}]))));
        assert_eq!(lone("{{ item.q }}"), Some(Ok(json!("Why?"))));
        assert_eq!(lone("{{gone}}").unwrap().unwrap_err().name, "gone");
        assert_eq!(lone("say {{m}}"), None);
        assert_eq!(lone("{{m}}{{m}}"), None);
        assert_eq!(lone("plain"), None);
    }

    #[test]
    fn a_missing_value_is_named_and_values_render_as_text() {
        let t = Template::parse("{{q}} {{n}} {{flag}} {{none}} {{obj}}");
        let v = values(json!({"n": 1.5, "flag": true, "none": null, "obj": {"k": [1]}}));
        assert_eq!(
            t.render(&v).unwrap_err().to_string(),
            "no value for `{{q}}`"
        );
        let columns = vec!["n".to_owned()];
        assert_eq!(t.unknown_names(&columns), ["q", "flag", "none", "obj"]);
        let mut v = v;
        v.insert("q".into(), json!("Q"));
        assert_eq!(t.render(&v).unwrap(), r#"Q 1.5 true  {"k":[1]}"#);
    }

    #[test]
    fn a_path_into_a_null_is_null_and_into_a_missing_key_is_missing() {
        // A struct null in this row: its fields are null too.
        let t = Template::parse("k={{s.k}} first={{s.list.0}}");
        assert_eq!(t.render(&values(json!({"s": null}))).unwrap(), "k= first=");
        let v = values(json!({"s": {"k": 1, "list": [null]}}));
        assert_eq!(t.render(&v).unwrap(), "k=1 first=");
        // A key the object lacks, or a step into a string, is still missing.
        let e = Template::parse("{{s.kk}}").render(&v).unwrap_err();
        assert_eq!(e.name, "s.kk");
        let e = Template::parse("{{s.k.x}}").render(&v).unwrap_err();
        assert_eq!(e.name, "s.k.x");
    }
}
