//! A test as a benchmark (or a pairwise file's `prompts:`) writes it: a mapping of keys, named
//! in one of the specification's forms. Its name is found here and every key that is not one
//! of the kind's is refused, naming the key and the valid ones; the kind reads the values.

use serde_json::{Map, Value};

/// A test that cannot be read: the message, and the keys that lead from the test to what it
/// is about (empty: the test itself), for the line a message points at.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemError {
    pub message: String,
    pub keys: Vec<String>,
}

impl From<String> for ItemError {
    fn from(message: String) -> Self {
        Self {
            message,
            keys: Vec::new(),
        }
    }
}

impl ItemError {
    /// The line of what the error is about in the file's `text`, the test being the `index`th
    /// item of the top-level list `list` (`prompts`); the test's own line when the key's is
    /// not found.
    pub(crate) fn line(&self, text: &str, list: &str, index: usize) -> Option<u64> {
        use crate::yaml::{Step, line_at};
        let mut path = vec![Step::Key(list), Step::Item(index)];
        let item = line_at(text, &path);
        path.extend(self.keys.iter().map(|k| Step::Key(k)));
        line_at(text, &path).or(item)
    }
}

/// Takes the test's name out of `fields`, in one of the specification's forms:
/// - `- my_test:` with an empty value, the test's keys beside it;
/// - `- my_test:` with a mapping of the test's keys (merged into `fields`);
/// - `- name: my_test` (the name stays in `fields` for the caller).
///
/// `valid` are the keys a test may have (`name` among them); messages name the test as
/// `{noun} `its_name`` once its name is known, else `{noun} {number}` (`prompt 3`). Any other key is refused: a key whose value is text, a list, a
/// mapping of none of the test's keys (`vars: {country: France}`), a second name, or any
/// unknown key beside `name:`.
pub(crate) fn take_name(
    noun: &str,
    number: usize,
    fields: &mut Map<String, Value>,
    valid: &[&str],
) -> Result<Option<String>, ItemError> {
    let explicit = fields
        .get("name")
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !valid.contains(&k.as_str()))
        .cloned()
        .collect();
    let label = |name: Option<&String>| match name.or(explicit.as_ref()) {
        Some(name) => format!("{noun} `{name}`"),
        None => format!("{noun} {number}"),
    };
    let refuse = |name: Option<&String>, keys: Vec<String>| {
        let key = keys.last().cloned().unwrap_or_default();
        let label = label(name);
        ItemError {
            message: format!("{label}: {}", crate::yaml::unknown_key(&key, valid)),
            keys,
        }
    };
    let mut name: Option<String> = None;
    for key in unknown {
        let label = label(name.as_ref());
        let value = fields.remove(&key).unwrap_or(Value::Null);
        let names_the_test = match &value {
            Value::Null => true,
            Value::Object(inner) => inner.keys().any(|k| valid.contains(&k.as_str())),
            _ => false,
        };
        if !names_the_test {
            return Err(refuse(name.as_ref(), vec![key]));
        }
        if let Some(first) = name.as_ref().or(explicit.as_ref()) {
            return Err(ItemError {
                message: format!(
                    "{label} has two names, `{first}` and `{key}`: a test is named by its key \
                     (`- {first}:`) or by `name:`, once; if `{key}` is meant as a key of the \
                     test, {}",
                    crate::yaml::unknown_key(&key, valid)
                ),
                keys: vec![key],
            });
        }
        if let Value::Object(inner) = value {
            for (inner_key, inner_value) in inner {
                if inner_key == "name" || !valid.contains(&inner_key.as_str()) {
                    return Err(refuse(Some(&key.clone()), vec![key, inner_key]));
                }
                if fields.contains_key(&inner_key) {
                    return Err(ItemError {
                        message: format!(
                            "{label}: `{inner_key}` is given twice, under `{key}:` and beside \
                             it; keep one"
                        ),
                        keys: vec![key, inner_key],
                    });
                }
                fields.insert(inner_key, inner_value);
            }
        }
        name = Some(key);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: [&str; 4] = ["name", "prompt", "output", "method"];

    fn fields(yaml: &str) -> Map<String, Value> {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn take(yaml: &str) -> Result<(Option<String>, Map<String, Value>), ItemError> {
        let mut fields = fields(yaml);
        let name = take_name("prompt", 1, &mut fields, &VALID)?;
        Ok((name, fields))
    }

    #[test]
    fn the_three_forms_name_the_test() {
        let (name, rest) = take("t:\nprompt: x\noutput: y\n").unwrap();
        assert_eq!(name.as_deref(), Some("t"));
        assert_eq!(rest, fields("prompt: x\noutput: y\n"));
        let (name, rest) = take("t:\n  prompt: x\n  output: y\n").unwrap();
        assert_eq!(name.as_deref(), Some("t"));
        assert_eq!(rest, fields("prompt: x\noutput: y\n"));
        let (name, rest) = take("name: t\nprompt: x\n").unwrap();
        assert_eq!(name, None);
        assert_eq!(rest, fields("name: t\nprompt: x\n"));
    }

    #[test]
    fn a_mapping_of_no_test_key_beside_a_name_is_an_unknown_key() {
        for yaml in [
            "name: t\nprompt: x\nvars: {country: France}\n",
            "vars: {country: France}\nprompt: x\n",
            "t:\nprompt: x\nvars: {country: France}\n",
        ] {
            let e = take(yaml).unwrap_err();
            assert_eq!(e.keys, ["vars"], "{yaml}");
            assert!(
                e.message.contains("unknown key `vars`")
                    && e.message
                        .contains("valid keys: name, prompt, output, method"),
                "{yaml}: {}",
                e.message
            );
        }
    }

    #[test]
    fn unknown_keys_in_every_form_are_named_with_their_path() {
        for (yaml, keys) in [
            ("name: t\nprompt: x\npromt: y\n", vec!["promt"]),
            ("t:\nprompt: x\npromt: y\n", vec!["promt"]),
            ("t:\n  prompt: x\n  promt: y\n", vec!["t", "promt"]),
            ("t:\n  prompt: x\n  name: u\n", vec!["t", "name"]),
            ("name: t\nu:\nprompt: x\n", vec!["u"]),
            ("t:\nu:\nprompt: x\n", vec!["u"]),
        ] {
            let e = take(yaml).unwrap_err();
            assert_eq!(e.keys, keys, "{yaml}: {}", e.message);
        }
        let e = take("t:\nprompt: x\npromt: y\n").unwrap_err();
        assert!(
            e.message
                .starts_with("prompt `t`: unknown key `promt`; did you mean `prompt`?"),
            "{}",
            e.message
        );
        let e = take("name: t\nu:\nprompt: x\n").unwrap_err();
        assert!(
            e.message.contains("two names, `t` and `u`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_key_given_under_the_name_and_beside_it_is_refused() {
        let e = take("t:\n  prompt: x\nprompt: y\n").unwrap_err();
        assert_eq!(e.keys, ["t", "prompt"]);
        assert!(
            e.message.contains("`prompt` is given twice"),
            "{}",
            e.message
        );
    }
}
