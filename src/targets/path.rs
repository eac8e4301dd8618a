//! Where a value is in a JSON answer: a JSON Pointer (RFC 6901, `/choices/0/message/content`)
//! or a simple dot path (`choices.0.message.content`, `choices[0].message.content`, `answer`).

use std::fmt;

use serde_json::Value;

/// A path to one value of a JSON document, as written in config.yaml.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    /// As written, for messages.
    written: String,
    /// The same as a JSON Pointer.
    pointer: String,
}

impl JsonPath {
    /// Reads `written`: a JSON Pointer when it starts with `/` (or is empty: the whole
    /// document), else a dot path whose steps are keys or array indices (`a.0.b`, `a[0].b`).
    pub fn parse(written: &str) -> Result<Self, String> {
        let trimmed = written.trim();
        if trimmed.is_empty() || trimmed.starts_with('/') {
            return Ok(Self {
                written: trimmed.to_owned(),
                pointer: trimmed.to_owned(),
            });
        }
        let dotted = trimmed.replace('[', ".").replace(']', "");
        let mut pointer = String::with_capacity(dotted.len() + 1);
        for step in dotted.split('.') {
            if step.is_empty() {
                return Err(format!(
                    "`{written}` is not a path: write a dot path such as `choices.0.message.content` \
                     or a JSON Pointer such as `/choices/0/message/content`"
                ));
            }
            pointer.push('/');
            pointer.push_str(&step.replace('~', "~0").replace('/', "~1"));
        }
        Ok(Self {
            written: trimmed.to_owned(),
            pointer,
        })
    }

    /// The value at this path in `document`, if there is one (null counts as none).
    pub fn find<'a>(&self, document: &'a Value) -> Option<&'a Value> {
        document.pointer(&self.pointer).filter(|v| !v.is_null())
    }

    /// A whole number of tokens at this path, if there is one (a float is rounded, a numeric
    /// string read).
    pub fn find_count(&self, document: &Value) -> Option<u64> {
        let value = self.find(document)?;
        let number = match value {
            Value::String(s) => s.trim().parse::<f64>().ok()?,
            other => other.as_f64()?,
        };
        (number.is_finite() && number >= 0.0).then(|| number.round() as u64)
    }

    /// An amount in USD at this path, if there is one (a numeric string read).
    pub fn find_usd(&self, document: &Value) -> Option<f64> {
        let number = match self.find(document)? {
            Value::String(s) => s.trim().parse::<f64>().ok()?,
            other => other.as_f64()?,
        };
        (number.is_finite() && number >= 0.0).then_some(number)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// A value as answer text: a string as it is, other JSON as compact JSON.
pub fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(path: &str, document: &Value) -> Option<Value> {
        JsonPath::parse(path).unwrap().find(document).cloned()
    }

    #[test]
    fn pointers_and_dot_paths_find_the_same_values() {
        let doc = json!({
            "choices": [{"message": {"content": "Paris"}}],
            "a/b": {"~c": 1},
            "usage": {"in": 12.6, "out": "7", "cost": 0.002, "none": null},
        });
        for path in [
            "/choices/0/message/content",
            "choices.0.message.content",
            "choices[0].message.content",
        ] {
            assert_eq!(at(path, &doc), Some(json!("Paris")), "{path}");
        }
        // RFC 6901 escapes: `~1` is `/`, `~0` is `~`; a dot path escapes them itself.
        assert_eq!(at("/a~1b/~0c", &doc), Some(json!(1)));
        assert_eq!(at("a/b.~c", &doc), Some(json!(1)));
        assert_eq!(at("", &doc), Some(doc.clone()), "empty: the whole document");
        // Nothing there, or null: none.
        for path in ["choices.1.message", "/missing", "usage.none", "choices.x"] {
            assert_eq!(at(path, &doc), None, "{path}");
        }
        let count = |p: &str| JsonPath::parse(p).unwrap().find_count(&doc);
        assert_eq!((count("usage.in"), count("usage.out")), (Some(13), Some(7)));
        assert_eq!(count("choices"), None);
        assert_eq!(
            JsonPath::parse("usage.cost").unwrap().find_usd(&doc),
            Some(0.002)
        );
    }

    #[test]
    fn a_path_with_an_empty_step_is_refused_naming_both_forms() {
        for bad in ["a..b", "a.", ".a"] {
            let e = JsonPath::parse(bad).unwrap_err();
            assert!(e.contains("JSON Pointer"), "{bad}: {e}");
        }
        assert_eq!(as_text(&json!("x")), "x");
        assert_eq!(as_text(&json!({"k": [1]})), r#"{"k":[1]}"#);
    }
}
