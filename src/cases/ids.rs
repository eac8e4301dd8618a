//! Case ids: the `id:` column's value as text, or else a hash of the row's values, so a case
//! keeps its id when rows are inserted, removed or moved around it. Duplicate ids are refused
//! by the loader, naming both rows.

use serde_json::Value;

use super::template::Values;

/// Hex digits kept of a values hash: 64 bits, a collision between two rows of one data set is
/// out of reach (2^-32 at four billion rows).
pub const HASH_ID_LEN: usize = 16;

/// A case's id: the value of the column `column` names; without one, that of a column called
/// `id`; else the hash of its values. `None` when `column` names a column the case lacks.
pub(crate) fn case_id(values: &Values, column: Option<&str>) -> Option<String> {
    match column {
        Some(column) => id_text(values.get(column)),
        None => Some(id_text(values.get("id")).unwrap_or_else(|| hash_id(values))),
    }
}

/// The id a value of the `id:` column gives: a string as it is, a number or boolean as JSON
/// writes it. `None` for no value: missing, null, an empty text, a list or an object.
pub(crate) fn id_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The id of a row without an `id:` column: the first [`HASH_ID_LEN`] hex digits of the
/// sha256 of its values in canonical JSON (object keys sorted at every depth, no spaces), so
/// the order of columns does not change it.
pub(crate) fn hash_id(values: &Values) -> String {
    let mut text = String::with_capacity(128);
    write_canonical_object(values, &mut text);
    let mut hash = crate::hash::sha256_hex(text.as_bytes());
    hash.truncate(HASH_ID_LEN);
    hash
}

/// `value` as canonical JSON: objects' keys sorted, no white space.
#[cfg(test)]
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_canonical_object(map: &Values, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write_canonical(&map[key], out);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn values(v: Value) -> Values {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_id_column_gives_text_and_no_value_gives_none() {
        assert_eq!(id_text(Some(&json!("q1"))).as_deref(), Some("q1"));
        assert_eq!(id_text(Some(&json!(17))).as_deref(), Some("17"));
        assert_eq!(id_text(Some(&json!(true))).as_deref(), Some("true"));
        for none in [
            json!(null),
            json!(""),
            json!("  "),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert_eq!(id_text(Some(&none)), None, "{none}");
        }
        assert_eq!(id_text(None), None);
    }

    #[test]
    fn the_hash_id_ignores_the_order_of_keys_and_sees_every_value() {
        let a = hash_id(&values(json!({"q": "x", "n": {"b": 1, "a": [2, "é"]}})));
        let b = hash_id(&values(json!({"n": {"a": [2, "é"], "b": 1}, "q": "x"})));
        assert_eq!(a, b);
        assert_eq!(a.len(), HASH_ID_LEN);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            a,
            hash_id(&values(json!({"q": "x", "n": {"b": 1, "a": [2, "e"]}})))
        );
        assert_ne!(
            hash_id(&values(json!({"n": 1}))),
            hash_id(&values(json!({"n": "1"})))
        );
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": null, "c": "\""}], "a": true})),
            r#"{"a":true,"b":[1,{"c":"\"","d":null}]}"#
        );
        // The id is the hash of this canonical text, cut to 16 hex digits.
        let row = values(json!({"b": 2, "a": 1}));
        assert_eq!(
            hash_id(&row),
            crate::hash::sha256_hex(br#"{"a":1,"b":2}"#)[..16]
        );
    }
}
