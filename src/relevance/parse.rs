//! Reading a relevance answer: a JSON object mapping each predicate to its score. A missing
//! predicate, an unknown one, or a score outside the variant's allowed set is recorded as
//! invalid and counted, never guessed. A 1 from the WITHOUT variant is invalid.

use std::collections::BTreeMap;

use serde_json::Value;

use super::predicates::Predicate;
use crate::store::Variant;

/// An answer, read: a score or the reason it is invalid, for each predicate asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedAnswer {
    pub scores: BTreeMap<Predicate, Result<u8, String>>,
    /// Predicates in the answer that were not asked (counted, ignored).
    pub unknown: Vec<String>,
    /// Why no JSON object could be read, if so (then every score is invalid).
    pub failure: Option<String>,
}

/// The shape of an answer to `asked` under `variant` (structured output): each predicate,
/// as the prompt lists it, mapped to one of the scores the variant allows.
pub(crate) fn answer_schema(asked: &[Predicate], variant: Variant) -> crate::llm::AnswerSchema {
    let allowed: Vec<i64> = (0..=2).filter(|&s| variant.allows(s)).collect();
    let properties = asked
        .iter()
        .map(|p| {
            (
                p.to_string(),
                crate::answer::score_schema(allowed.iter().copied(), false),
            )
        })
        .collect();
    crate::llm::AnswerSchema {
        name: format!("predicate_scores_{}", variant.spec_name()),
        schema: crate::answer::object_schema(properties),
    }
}

/// Reads `answer` for the predicates `asked` under `variant`'s rules.
pub(crate) fn parse_answer(answer: &str, asked: &[Predicate], variant: Variant) -> ParsedAnswer {
    let object = match crate::answer::find_object(answer) {
        Ok(object) => object,
        Err(reason) => {
            return ParsedAnswer {
                scores: asked
                    .iter()
                    .map(|p| (p.clone(), Err(reason.clone())))
                    .collect(),
                unknown: Vec::new(),
                failure: Some(reason),
            };
        }
    };
    let mut given: BTreeMap<Predicate, &Value> = BTreeMap::new();
    let mut unknown = Vec::new();
    for (key, value) in &object {
        match key.parse::<Predicate>() {
            Ok(p) if asked.contains(&p) => {
                given.insert(p, value);
            }
            _ => unknown.push(key.clone()),
        }
    }
    let scores = asked
        .iter()
        .map(|p| {
            let score = match given.get(p) {
                None => Err("missing from the answer".to_owned()),
                Some(value) => read_score(value, variant),
            };
            (p.clone(), score)
        })
        .collect();
    ParsedAnswer {
        scores,
        unknown,
        failure: None,
    }
}

fn read_score(value: &Value, variant: Variant) -> Result<u8, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("`{value}` is not a score"))?;
    if number.fract() != 0.0 || !variant.allows(number as i64) {
        return Err(format!(
            "{number} is not allowed in the {} variant",
            variant.name()
        ));
    }
    Ok(number as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Vec<Predicate> {
        [
            "clear(red:block)",
            "on(red:block,blue:block)",
            "holding(blue:block)",
        ]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect()
    }

    #[test]
    fn reads_scores_and_marks_invalid_ones() {
        let answer = "Sure:\n```json\n{\"clear(red:block)\": 2, \"on(red:block, blue:block)\": \"1\", \"ontable(green:block)\": 0}\n```";
        let with = parse_answer(answer, &asked(), Variant::With);
        let p = asked();
        assert_eq!(with.scores[&p[0]], Ok(2));
        assert_eq!(with.scores[&p[1]], Ok(1));
        assert_eq!(with.scores[&p[2]], Err("missing from the answer".into()));
        assert_eq!(with.unknown, ["ontable(green:block)"]);
        let without = parse_answer(answer, &asked(), Variant::Without);
        assert_eq!(
            without.scores[&p[1]],
            Err("1 is not allowed in the WITHOUT variant".into())
        );
        let odd = parse_answer(
            r#"{"clear(red:block)": 3, "holding(blue:block)": "yes"}"#,
            &asked(),
            Variant::With,
        );
        assert_eq!(
            odd.scores[&p[0]],
            Err("3 is not allowed in the WITH variant".into())
        );
        assert_eq!(odd.scores[&p[2]], Err("`\"yes\"` is not a score".into()));
    }

    #[test]
    fn garbage_invalidates_everything() {
        let r = parse_answer("I see some blocks.", &asked(), Variant::With);
        assert!(r.failure.is_some());
        assert!(r.scores.values().all(Result::is_err));
    }
}
