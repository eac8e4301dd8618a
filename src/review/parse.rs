//! Reading a reviewer's answer: the JSON object `crate::answer` finds in prose or code fences,
//! the usual slips tolerated (scores as "4" or "4/5", nested objects), and anything invalid
//! turned into N/A with its reason. An unreadable answer is a parse failure, never a score.

use std::collections::HashMap;

use serde_json::Value;

use super::criteria::Criteria;
use crate::answer::{find_object, normalise_key, read_score};
use crate::store::ParseStatus;

/// A score that could be used, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreEntry {
    /// Criterion id (`P1`) or `overall`.
    pub id: String,
    pub score: Option<i64>,
    pub justification: Option<String>,
    /// Why `score` is N/A.
    pub na_reason: Option<String>,
}

/// A reviewer's answer, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedReview {
    pub status: ParseStatus,
    /// Why parsing failed, or which scores are N/A.
    pub detail: Option<String>,
    /// One entry per criterion, in the criteria's order.
    pub scores: Vec<ScoreEntry>,
    pub overall: ScoreEntry,
}

impl ParsedReview {
    /// Mean of the valid criterion scores; `None` when there are none.
    pub(crate) fn average(&self) -> Option<f64> {
        let valid: Vec<i64> = self.scores.iter().filter_map(|s| s.score).collect();
        (!valid.is_empty()).then(|| valid.iter().sum::<i64>() as f64 / valid.len() as f64)
    }
}

/// Reads `answer` against `criteria`.
pub(crate) fn parse_review(answer: &str, criteria: &Criteria) -> ParsedReview {
    let (min, max) = (criteria.scale.min, criteria.scale.max);
    let object = match find_object(answer) {
        Ok(object) => object,
        Err(reason) => {
            let na = |id: &str| ScoreEntry {
                id: id.to_owned(),
                score: None,
                justification: None,
                na_reason: Some("the answer could not be parsed".into()),
            };
            return ParsedReview {
                status: ParseStatus::Failed,
                detail: Some(reason),
                scores: criteria.items.iter().map(|c| na(&c.id)).collect(),
                overall: na("overall"),
            };
        }
    };
    let keys: HashMap<String, &Value> = object.iter().map(|(k, v)| (normalise_key(k), v)).collect();
    let entry = |id: &str| -> ScoreEntry {
        let key = id.to_ascii_lowercase();
        let nested = keys.get(&key).and_then(|v| v.as_object());
        let score_value = keys
            .get(&format!("{key}score"))
            .copied()
            .or_else(|| nested.and_then(|n| n.get("score")));
        let justification = keys
            .get(&format!("{key}justification"))
            .copied()
            .or_else(|| nested.and_then(|n| n.get("justification")))
            .and_then(|v| match v {
                Value::String(s) => Some(s.trim().to_owned()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
            .filter(|s| !s.is_empty());
        let (score, na_reason) = match score_value {
            None => (None, Some("missing from the answer".to_owned())),
            Some(v) => match read_score(v, min, max) {
                Ok(score) => (Some(score), None),
                Err(reason) => (None, Some(reason)),
            },
        };
        ScoreEntry {
            id: id.to_owned(),
            score,
            justification,
            na_reason,
        }
    };
    let scores: Vec<ScoreEntry> = criteria.items.iter().map(|c| entry(&c.id)).collect();
    let overall = entry("overall");
    let not_available: Vec<String> = scores
        .iter()
        .chain(std::iter::once(&overall))
        .filter(|s| s.score.is_none())
        .map(|s| format!("{}: {}", s.id, s.na_reason.as_deref().unwrap_or("N/A")))
        .collect();
    ParsedReview {
        status: if not_available.is_empty() {
            ParseStatus::Ok
        } else {
            ParseStatus::Partial
        },
        detail: (!not_available.is_empty())
            .then(|| format!("N/A scores: {}", not_available.join("; "))),
        scores,
        overall,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_its_stored_name_and_an_unknown_one_is_named() {
        for status in ParseStatus::ALL {
            assert_eq!(status.as_str().parse(), Ok(status));
            assert_eq!(status.to_string(), status.as_str());
        }
        let err = "okay".parse::<ParseStatus>().unwrap_err();
        assert!(err.to_string().contains("\"okay\""), "{err}");
    }

    fn full_answer(score: &str) -> String {
        let mut parts: Vec<String> = (1..=16)
            .map(|i| format!("\"p{i}_score\": {score}, \"p{i}_justification\": \"reason {i}, with \\\"quotes\\\"\""))
            .collect();
        parts.push(format!(
            "\"overall_score\": {score}, \"overall_justification\": \"fine\""
        ));
        format!("{{{}}}", parts.join(", "))
    }

    fn parse(answer: &str) -> ParsedReview {
        parse_review(answer, &Criteria::builtin())
    }

    #[test]
    fn a_clean_answer() {
        let r = parse(&full_answer("4"));
        assert_eq!(r.status, ParseStatus::Ok);
        assert_eq!(r.scores.len(), 16);
        assert!(r.scores.iter().all(|s| s.score == Some(4)));
        assert_eq!(
            r.scores[2].justification.as_deref(),
            Some("reason 3, with \"quotes\"")
        );
        assert_eq!(r.overall.score, Some(4));
        assert_eq!(r.average(), Some(4.0));
    }

    #[test]
    fn fences_prose_and_trailing_commas() {
        let fenced = format!(
            "Here is my review:\n```json\n{}\n```\nThanks!",
            full_answer("5")
        );
        assert_eq!(parse(&fenced).status, ParseStatus::Ok);
        let prose = format!("Sure. {} Hope that helps {{not json}}.", full_answer("3"));
        assert_eq!(parse(&prose).overall.score, Some(3));
        let trailing = full_answer("2").replace("\"fine\"}", "\"fine\",}");
        let r = parse(&trailing);
        assert_eq!(r.status, ParseStatus::Ok, "{:?}", r.detail);
    }

    #[test]
    fn scores_as_strings_and_nested_objects() {
        let r = parse(
            r#"{"P1_Score": "4", "p2_score": "3/5", "p3": {"score": 5, "justification": "good"}, "overall_score": "2 out of 5"}"#,
        );
        assert_eq!(r.scores[0].score, Some(4));
        assert_eq!(r.scores[1].score, Some(3));
        assert_eq!(r.scores[2].score, Some(5));
        assert_eq!(r.scores[2].justification.as_deref(), Some("good"));
        assert_eq!(r.overall.score, Some(2));
        assert_eq!(r.status, ParseStatus::Partial, "P4-P16 are missing");
        assert_eq!(
            r.scores[3].na_reason.as_deref(),
            Some("missing from the answer")
        );
        assert_eq!(r.average(), Some(4.0));
    }

    #[test]
    fn invalid_scores_become_na_with_their_reason() {
        let r = parse(
            r#"{"p1_score": 7, "p2_score": 0, "p3_score": 3.5, "p4_score": "N/A", "p5_score": "great", "p6_score": null, "p7_score": 4.0, "overall_score": 5}"#,
        );
        let reasons: Vec<Option<&str>> = r.scores[..7]
            .iter()
            .map(|s| s.na_reason.as_deref())
            .collect();
        assert_eq!(
            reasons,
            [
                Some("7 is outside the 1-5 scale"),
                Some("0 is outside the 1-5 scale"),
                Some("3.5 is not a whole score on the 1-5 scale"),
                Some("the reviewer gave no score (N/A)"),
                Some("`great` is not a score"),
                Some("the reviewer gave no score (null)"),
                None,
            ]
        );
        assert_eq!(r.scores[6].score, Some(4));
        assert_eq!(r.average(), Some(4.0), "only valid scores are averaged");
    }

    #[test]
    fn garbage_is_a_parse_failure_never_a_low_score() {
        for answer in [
            "",
            "I think it is quite good overall.",
            "{\"p1_score\": 4",
            "[1, 2, 3]",
        ] {
            let r = parse(answer);
            if answer.starts_with("{\"p1") {
                // A cut-off object is still read where it can be (JSON5 fails): failed.
                assert_eq!(r.status, ParseStatus::Failed, "{answer:?}");
            } else {
                assert_eq!(r.status, ParseStatus::Failed, "{answer:?}");
            }
            assert!(r.scores.iter().all(|s| s.score.is_none()));
            assert_eq!(r.overall.score, None);
            assert_eq!(r.average(), None);
            assert!(r.detail.is_some());
        }
    }
}
