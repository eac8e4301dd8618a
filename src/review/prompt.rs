//! Prompt templates: built in (the files of `prompts/`) or a user's file, with `{name}`
//! placeholders. The template's hash is stored with each review.

use std::path::Path;

use super::ReviewError;

/// The built-in review prompt (`prompts/review_criteria_prompt.txt`).
pub const REVIEW_PROMPT: &str = include_str!("../../prompts/review_criteria_prompt.txt");
/// The built-in generation prompt (`prompts/datasheet_generation_prompt.txt`).
pub const GENERATION_PROMPT: &str = include_str!("../../prompts/datasheet_generation_prompt.txt");

/// A prompt template and the hash of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub text: String,
    pub sha256: String,
}

impl Template {
    /// `path`'s template, or the built-in one; every `required` placeholder must appear.
    pub fn load(
        path: Option<&Path>,
        builtin: &str,
        required: &[&str],
    ) -> Result<Self, ReviewError> {
        let (origin, text) = match path {
            Some(path) => (
                path.display().to_string(),
                std::fs::read_to_string(path).map_err(|source| ReviewError::Read {
                    what: "prompt template",
                    path: path.to_path_buf(),
                    source,
                })?,
            ),
            None => ("built-in prompt".to_owned(), builtin.to_owned()),
        };
        let missing: Vec<String> = required
            .iter()
            .filter(|name| !text.contains(&format!("{{{name}}}")))
            .map(|name| format!("{{{name}}}"))
            .collect();
        if !missing.is_empty() {
            return Err(ReviewError::Invalid {
                origin,
                message: format!("the prompt template lacks {}", missing.join(", ")),
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
        let review = Template::load(
            None,
            REVIEW_PROMPT,
            &["official_datasheet", "generated_datasheet"],
        )
        .unwrap();
        assert!(review.text.contains("{criteria}"));
        Template::load(None, GENERATION_PROMPT, &["brand", "sensor"]).unwrap();
    }
}
