//! Conversations: a case whose input is several user turns (`turns:`, or a `messages` column
//! with `assistant` turns left open). The model's answer to turn 1 is added to the history
//! before turn 2 is sent, and so on: each turn is one call, cached by its whole history.
//!
//! A conversation is held as its messages, the open assistant turns among them empty, with
//! the places of those turns ([`TestRequest::open`]).

use std::sync::Arc;

use serde_json::Value;

use super::spec::TestRequest;
use crate::llm::{Message, Part, Role};

/// The fix named when `turns` is not a list of user messages.
const TURNS_FIX: &str = "write the user's messages in order, as texts: \
                         `turns: [\"Hello\", \"And then?\"]` (in a data file, the JSON text of \
                         such a list)";

/// The messages of a `turns` value: each text a user turn, an open assistant turn between
/// two. A data file's column may hold the JSON text of the list. The error says what is
/// wrong and how to write it, without the place.
pub(crate) fn turns_messages(value: &Value) -> Result<Vec<Message>, String> {
    let parsed;
    let value = match value {
        Value::String(text) if text.trim_start().starts_with('[') => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| format!("`turns` is not a JSON list ({e}); {TURNS_FIX}"))?;
            &parsed
        }
        other => other,
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "`turns` is {}, not a list of user messages; {TURNS_FIX}",
            crate::cases::read::kind_of(value)
        ));
    };
    if items.is_empty() {
        return Err(format!("`turns` is an empty list; {TURNS_FIX}"));
    }
    let mut messages = Vec::with_capacity(items.len() * 2);
    for (i, item) in items.iter().enumerate() {
        let Value::String(text) = item else {
            return Err(format!(
                "`turns`, item {}, is {}, not a text; {TURNS_FIX}",
                i + 1,
                crate::cases::read::kind_of(item)
            ));
        };
        if i > 0 {
            messages.push(open_turn());
        }
        messages.push(Message::user(text.clone()));
    }
    Ok(messages)
}

/// An assistant turn left open: the model answers there.
fn open_turn() -> Message {
    Message {
        role: Role::Assistant,
        parts: Vec::new(),
    }
}

/// Whether `message` is an assistant turn left open (no content, or empty text).
fn is_open(message: &Message) -> bool {
    message.role == Role::Assistant
        && message.parts.iter().all(|p| match p {
            Part::Text(t) => t.is_empty(),
            Part::Image(_) => false,
        })
}

/// The request of `messages` (no system message among them) with `system`: a conversation
/// when they leave assistant turns open before the last, else one request as they are (a
/// trailing open assistant turn dropped: the model answers there anyway).
pub(crate) fn request(system: Option<Arc<str>>, mut messages: Vec<Message>) -> TestRequest {
    if messages.last().is_some_and(is_open) {
        messages.pop();
    }
    let mut open: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| is_open(m))
        .map(|(i, _)| i)
        .collect();
    if !open.is_empty() {
        // The last answer comes after the last message.
        open.push(messages.len());
    }
    TestRequest {
        system,
        messages: messages.into(),
        open: open.into(),
    }
}

/// What a conversation carries from one turn's call to the next.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnState {
    /// The turn the call answers (0-based).
    pub turn: usize,
    /// The model's answers to the turns before it, in order.
    pub answers: Vec<String>,
    /// What the calls of those turns (or steps) cost and took.
    pub spent: Spent,
    /// A tool loop's steps so far: the tools each call asked for and their results.
    pub steps: Vec<crate::llm::tools::ToolStep>,
}

/// What the calls of a conversation's earlier turns cost and took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spent {
    /// `None`: unknown (a model without a price).
    pub cost_usd: Option<f64>,
    pub paid_usd: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: f64,
    pub tokens_estimated: bool,
}

impl Default for Spent {
    fn default() -> Self {
        Self {
            cost_usd: Some(0.0),
            paid_usd: Some(0.0),
            input_tokens: 0,
            output_tokens: 0,
            latency_ms: 0.0,
            tokens_estimated: false,
        }
    }
}

impl Spent {
    /// This and the call `call` answered with (`cached`: served by the cache, paid nothing).
    pub(crate) fn plus(self, call: &crate::store::StoredCall, cached: bool) -> Self {
        let add = |sum: Option<f64>, usd: Option<f64>| sum.zip(usd).map(|(a, b)| a + b);
        Self {
            cost_usd: add(self.cost_usd, call.cost_usd),
            paid_usd: add(
                self.paid_usd,
                if cached { Some(0.0) } else { call.cost_usd },
            ),
            input_tokens: self.input_tokens + call.input_tokens,
            output_tokens: self.output_tokens + call.output_tokens,
            latency_ms: self.latency_ms + call.latency_ms,
            tokens_estimated: self.tokens_estimated || call.tokens_estimated,
        }
    }
}

/// A benchmark's stage after the first: the conversations it goes on with, by item.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    /// Each call's conversation (for a judge's call, the judged last turn's), by item.
    pub states: std::collections::HashMap<usize, TurnState>,
    /// In a plan, the conversations whose call of this stage is not known (an answer before
    /// it is not cached).
    pub pending: Vec<PendingTurn>,
}

/// A conversation of a plan whose next call is not known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingTurn {
    pub item: usize,
    /// The turn the unknown call answers (0-based).
    pub turn: usize,
    /// The most input tokens that call can have.
    pub input_tokens: u64,
}

/// The most input tokens `messages` and `system` can be.
pub(crate) fn input_bound(system: Option<&str>, messages: &[Message]) -> u64 {
    use crate::llm::{MESSAGE_TOKENS_BOUND, tokens_bound};
    system.map_or(0, |s| tokens_bound(s) + MESSAGE_TOKENS_BOUND)
        + messages
            .iter()
            .map(|m| tokens_bound(&m.text()) + MESSAGE_TOKENS_BOUND)
            .sum::<u64>()
}

/// Refuses a check of a turn the conversation does not have (`turn: 4` of 3 turns).
pub(crate) fn check_turns(checks: &[crate::checks::Check], turns: usize) -> Result<(), String> {
    for (i, check) in checks.iter().enumerate() {
        if let Some(turn) = check.turn.filter(|&t| t > turns) {
            return Err(format!(
                "check {} has `turn: {turn}`, but the conversation has {}; give a turn from 1 to \
                 {turns}, or no `turn` (the last)",
                i + 1,
                crate::output::count(turns as u64, "turn")
            ));
        }
    }
    Ok(())
}

impl TestRequest {
    /// How many turns the model answers: 1, or the conversation's.
    pub(crate) fn turns(&self) -> usize {
        self.open.len().max(1)
    }

    /// The messages sent for turn `turn` (0-based) after the model answered `answers` to the
    /// turns before it (one a turn before `turn`), each in place of its open turn.
    pub(crate) fn turn_messages(&self, turn: usize, answers: &[String]) -> Arc<[Message]> {
        let Some(&end) = self.open.get(turn) else {
            return self.messages.clone();
        };
        let mut sent = Vec::with_capacity(end);
        let mut filled = 0;
        for (i, message) in self.messages[..end].iter().enumerate() {
            if filled < self.open.len() && self.open[filled] == i {
                let text = answers.get(filled).cloned().unwrap_or_default();
                sent.push(Message {
                    role: Role::Assistant,
                    parts: vec![Part::Text(text)],
                });
                filled += 1;
            } else {
                sent.push(message.clone());
            }
        }
        sent.into()
    }

    /// The text of turn `turn`'s user messages (between the open turn before it and its
    /// own), for bounds and labels.
    pub(crate) fn turn_text(&self, turn: usize) -> String {
        let start = match turn {
            0 => 0,
            _ => self.open.get(turn - 1).map_or(0, |&i| i + 1),
        };
        let end = self.open.get(turn).copied().unwrap_or(self.messages.len());
        self.messages[start.min(end)..end]
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(messages: &[Message]) -> Vec<(Role, String)> {
        messages.iter().map(|m| (m.role, m.text())).collect()
    }

    #[test]
    fn turns_become_user_messages_with_open_answers_between() {
        let messages = turns_messages(&json!(["Hi", "Why?", "Thanks"])).unwrap();
        let request = request(None, messages);
        assert_eq!(request.turns(), 3);
        assert_eq!(&*request.open, [1, 3, 5]);
        assert_eq!(
            texts(&request.turn_messages(0, &[])),
            [(Role::User, "Hi".into())]
        );
        assert_eq!(
            texts(&request.turn_messages(2, &["Hello".into(), "Because".into()])),
            [
                (Role::User, "Hi".into()),
                (Role::Assistant, "Hello".into()),
                (Role::User, "Why?".into()),
                (Role::Assistant, "Because".into()),
                (Role::User, "Thanks".into()),
            ]
        );
        assert_eq!(request.turn_text(1), "Why?");
        // A data file's column holds the JSON text of the list.
        let from_text = turns_messages(&json!(r#"["Hi", "Why?"]"#)).unwrap();
        assert_eq!(from_text.len(), 3);
    }

    #[test]
    fn a_messages_column_with_open_assistant_turns_is_a_conversation() {
        let messages = vec![
            Message::user("a"),
            open_turn(),
            Message::user("b"),
            Message {
                role: Role::Assistant,
                parts: vec![Part::Text(String::new())],
            },
        ];
        let request = request(None, messages);
        assert_eq!(
            request.turns(),
            2,
            "the trailing open turn is the last answer"
        );
        assert_eq!(&*request.open, [1, 3]);
        // A written assistant turn is history, not a turn to answer.
        let few_shot = vec![
            Message::user("2+2?"),
            Message {
                role: Role::Assistant,
                parts: vec![Part::Text("4".into())],
            },
            Message::user("3+3?"),
        ];
        let request = super::request(None, few_shot);
        assert_eq!(request.turns(), 1);
        assert_eq!(request.turn_messages(0, &[]).len(), 3);
    }

    #[test]
    fn malformed_turns_are_refused_saying_how_to_write_them() {
        for (value, says) in [
            (json!("just a text"), "`turns` is a string, not a list"),
            (json!([]), "an empty list"),
            (
                json!(["a", {"role": "user"}]),
                "item 2, is an object, not a text",
            ),
            (json!("[not json"), "not a JSON list"),
        ] {
            let e = turns_messages(&value).unwrap_err();
            assert!(e.contains(says), "{e}");
            assert!(e.contains("turns: [\"Hello\", \"And then?\"]"), "{e}");
        }
    }
}
