//! Review criteria (P1-P16 by default) and the Likert scale, built in or from a user's file.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::ReviewError;

/// The built-in criteria: the specification's P1-P16 with its descriptions and CSV columns.
pub const BUILTIN_CRITERIA: &str = include_str!("../../prompts/review_criteria.yaml");

/// One criterion a reviewer scores.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// `P1` ... `P16`; answer keys are `p1_score`, `p1_justification`.
    pub id: String,
    pub name: String,
    /// The CSV column of its score.
    pub column: String,
    pub description: String,
}

impl Criterion {
    /// The answer key prefix: `p1`.
    pub(crate) fn key(&self) -> String {
        self.id.to_ascii_lowercase()
    }
}

/// The Likert scale.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    pub min: i64,
    pub max: i64,
    #[serde(default)]
    pub labels: BTreeMap<i64, String>,
}

/// A set of criteria with its scale and the hash of its source, stored with each review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criteria {
    pub scale: Scale,
    pub items: Vec<Criterion>,
    pub sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriteriaFile {
    scale: Scale,
    criteria: Vec<Criterion>,
}

impl Criteria {
    /// The specification's P1-P16.
    pub(crate) fn builtin() -> Self {
        Self::parse("built-in criteria", BUILTIN_CRITERIA).expect("the built-in criteria are valid")
    }

    /// Criteria from a YAML file (same form as `prompts/review_criteria.yaml`).
    pub(crate) fn load(path: &Path) -> Result<Self, ReviewError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReviewError::Read {
            what: "criteria file",
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    fn parse(origin: &str, text: &str) -> Result<Self, ReviewError> {
        let invalid = |message: String| ReviewError::Invalid {
            origin: origin.to_owned(),
            message,
        };
        let file: CriteriaFile = serde_saphyr::from_str(text)
            .map_err(|e| ReviewError::Yaml(crate::yaml::describe(Path::new(origin), text, &e)))?;
        if file.criteria.is_empty() {
            return Err(invalid("`criteria:` is empty".into()));
        }
        if file.scale.max <= file.scale.min {
            return Err(invalid("the scale's `max` must be above its `min`".into()));
        }
        let mut ids = HashSet::new();
        let mut columns = HashSet::new();
        for c in &file.criteria {
            let valid_id = !c.id.is_empty() && c.id.chars().all(|ch| ch.is_ascii_alphanumeric());
            if !valid_id || c.id.eq_ignore_ascii_case("overall") {
                return Err(invalid(format!(
                    "criterion id `{}` must be letters and digits, like P1",
                    c.id
                )));
            }
            if !ids.insert(c.key()) {
                return Err(invalid(format!("criterion id `{}` appears twice", c.id)));
            }
            if !columns.insert(c.column.clone()) {
                return Err(invalid(format!("column `{}` appears twice", c.column)));
            }
        }
        Ok(Self {
            scale: file.scale,
            items: file.criteria,
            sha256: crate::hash::sha256_hex(text.as_bytes()),
        })
    }

    /// The scale as the prompt states it: `1 = Very Poor, ..., 5 = Excellent`.
    pub(crate) fn scale_text(&self) -> String {
        (self.scale.min..=self.scale.max)
            .map(|v| match self.scale.labels.get(&v) {
                Some(label) => format!("{v} = {label}"),
                None => v.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The criteria as the prompt lists them.
    pub(crate) fn criteria_text(&self) -> String {
        self.items
            .iter()
            .map(|c| format!("{}. {}: {}", c.id, c.name, c.description))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The answer's keys, one per line, as the prompt asks for them.
    /// The schema of a review (structured output): the keys [`Self::json_keys_text`] lists,
    /// each justification before its score, a score being on the scale or null (N/A).
    pub(crate) fn answer_schema(&self) -> crate::llm::AnswerSchema {
        let score = || crate::answer::score_schema(self.scale.min..=self.scale.max, true);
        let keys = self
            .items
            .iter()
            .map(|c| c.key())
            .chain(std::iter::once("overall".to_owned()));
        let properties = keys
            .flat_map(|key| {
                [
                    (
                        format!("{key}_justification"),
                        crate::answer::justification_schema(),
                    ),
                    (format!("{key}_score"), score()),
                ]
            })
            .collect();
        crate::llm::AnswerSchema {
            name: "datasheet_review".into(),
            schema: crate::answer::object_schema(properties),
        }
    }

    pub(crate) fn json_keys_text(&self) -> String {
        let range = format!("<integer {}-{}>", self.scale.min, self.scale.max);
        let mut lines: Vec<String> = self
            .items
            .iter()
            .flat_map(|c| {
                let key = c.key();
                [
                    format!("  \"{key}_score\": {range},"),
                    format!("  \"{key}_justification\": \"<text>\","),
                ]
            })
            .collect();
        lines.push(format!("  \"overall_score\": {range},"));
        lines.push("  \"overall_justification\": \"<text>\"".into());
        format!("{{\n{}\n}}", lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_criteria_are_the_specifications() {
        let c = Criteria::builtin();
        assert_eq!(c.items.len(), 16);
        assert_eq!(c.items[0].column, "P1_Disclaimer_Score");
        assert_eq!(c.items[3].column, "P4_Theory_Of_Operation_Score");
        assert_eq!(c.items[15].column, "P16_Compliance_Certifications_Score");
        assert!(
            c.items[8]
                .description
                .contains("Power Consumption Breakdown")
        );
        assert_eq!(
            c.scale_text(),
            "1 = Very Poor, 2 = Poor, 3 = Fair, 4 = Good, 5 = Excellent"
        );
        let keys = c.json_keys_text();
        assert!(
            keys.contains("\"p16_justification\"")
                && keys.contains("\"overall_score\": <integer 1-5>")
        );
    }

    #[test]
    fn custom_criteria_are_validated() {
        let ok = "scale: {min: 1, max: 3}\ncriteria:\n  - {id: A1, name: Accuracy, column: A1_Score, description: Is it right?}\n";
        let c = Criteria::parse("mine.yaml", ok).unwrap();
        assert_eq!(c.scale_text(), "1, 2, 3");
        for (bad, want) in [
            (
                "scale: {min: 1, max: 5}\ncriteria: []\n",
                "`criteria:` is empty",
            ),
            (
                "scale: {min: 5, max: 1}\ncriteria:\n  - {id: A, name: a, column: c, description: d}\n",
                "above its `min`",
            ),
            (
                "scale: {min: 1, max: 5}\ncriteria:\n  - {id: A, name: a, column: c, description: d}\n  - {id: a, name: b, column: e, description: d}\n",
                "appears twice",
            ),
            (
                "scale: {min: 1, max: 5}\ncriteria:\n  - {id: 'P 1', name: a, column: c, description: d}\n",
                "letters and digits",
            ),
            ("nonsense", "mine.yaml"),
        ] {
            let e = Criteria::parse("mine.yaml", bad).unwrap_err().to_string();
            assert!(e.contains(want) && e.starts_with("mine.yaml"), "{bad}: {e}");
        }
    }
}
