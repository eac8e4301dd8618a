//! Prompt templates: a built-in text or a user's file, with `{name}` placeholders, rendered in
//! one pass; the template's sha256 is stored with what it produced. It must not hold any
//! experiment's prompts: those stay with their experiment (review, relevance, the bench judge).

use std::path::{Path, PathBuf};

/// Why a template cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The user's template file could not be read.
    #[error("cannot read the prompt template {path}: {source}")]
    Read {
        /// The template file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The template lacks placeholders its experiment needs.
    #[error("{origin}: the prompt template lacks {}", braced(placeholders))]
    Missing {
        /// The file, or `built-in prompt`.
        origin: String,
        /// The names missing, without their braces.
        placeholders: Vec<String>,
    },
}

/// `{a}, {b}`: placeholder names as a template writes them.
fn braced(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("{{{name}}}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A prompt template and the hash of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The template as written, placeholders included.
    pub text: String,
    /// The sha256 of `text` (hex), stored with what the template produced.
    pub sha256: String,
}

impl Template {
    /// `path`'s template, or the built-in one; every `required` placeholder must appear.
    pub(crate) fn load(
        path: Option<&Path>,
        builtin: &str,
        required: &[&str],
    ) -> Result<Self, PromptError> {
        let (origin, text) = match path {
            Some(path) => (
                path.display().to_string(),
                std::fs::read_to_string(path).map_err(|source| PromptError::Read {
                    path: path.to_path_buf(),
                    source,
                })?,
            ),
            None => ("built-in prompt".to_owned(), builtin.to_owned()),
        };
        let missing: Vec<String> = required
            .iter()
            .filter(|name| !text.contains(&format!("{{{name}}}")))
            .map(|name| (*name).to_owned())
            .collect();
        if !missing.is_empty() {
            return Err(PromptError::Missing {
                origin,
                placeholders: missing,
            });
        }
        Ok(Self {
            sha256: crate::hash::sha256_hex(text.as_bytes()),
            text,
        })
    }

    /// The template with each `{name}` replaced by its value, in one pass: braces that name
    /// nothing are left alone, and values are never scanned again (a datasheet that contains
    /// `{rubric}` stays as it is).
    pub fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut rest = self.text.as_str();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let hit = values
                .iter()
                .find(|(name, _)| after.starts_with(name) && after[name.len()..].starts_with('}'));
            match hit {
                Some((name, value)) => {
                    out.push_str(value);
                    rest = &after[name.len() + 1..];
                }
                None => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_requires_placeholders() {
        let t = Template::load(None, "Hello {name}, {json}", &["name"]).unwrap();
        assert_eq!(t.render(&[("name", "Ada")]), "Hello Ada, {json}");
        let nested = Template::load(None, "{a} and {b}", &[]).unwrap();
        assert_eq!(
            nested.render(&[("a", "{b}"), ("b", "x")]),
            "{b} and x",
            "values are not rescanned"
        );
        let e = Template::load(None, "Hello", &["name", "sensor"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("lacks {name}, {sensor}"), "{e}");
    }
}
