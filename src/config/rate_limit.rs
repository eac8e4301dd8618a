//! The rate limits config.yaml sets for a provider or a model: what the pacer
//! ([`crate::dispatch::pacer`]) holds calls to when a server sends no headers, or when a key
//! is shared.

use serde::Deserialize;

use crate::llm::ratelimit::Dimension;

/// Limits set in config.yaml (`rate_limit:` of a provider or a model), per minute: for
/// servers that send no headers, or tighter than the headers say (a key shared with a team).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Requests a minute.
    pub rpm: Option<f64>,
    /// Tokens a minute (OpenAI-style: prompt estimate plus `max_tokens`).
    pub tpm: Option<f64>,
    /// Input tokens a minute (Anthropic-style).
    pub itpm: Option<f64>,
    /// Output tokens a minute (Anthropic-style).
    pub otpm: Option<f64>,
}

impl RateLimit {
    /// The limit set for `dimension`, if any.
    pub(crate) fn get(&self, dimension: Dimension) -> Option<f64> {
        match dimension {
            Dimension::Requests => self.rpm,
            Dimension::Tokens => self.tpm,
            Dimension::InputTokens => self.itpm,
            Dimension::OutputTokens => self.otpm,
        }
    }

    /// These limits times `share` (a shard's part of a key's limits).
    pub(crate) fn scaled(self, share: f64) -> Self {
        let part = |limit: Option<f64>| limit.map(|l| l * share);
        Self {
            rpm: part(self.rpm),
            tpm: part(self.tpm),
            itpm: part(self.itpm),
            otpm: part(self.otpm),
        }
    }

    /// These limits, with `base`'s for the dimensions these leave out (a model's over its
    /// provider's).
    pub(crate) fn over(self, base: RateLimit) -> RateLimit {
        RateLimit {
            rpm: self.rpm.or(base.rpm),
            tpm: self.tpm.or(base.tpm),
            itpm: self.itpm.or(base.itpm),
            otpm: self.otpm.or(base.otpm),
        }
    }

    /// Whether no limit is set.
    pub(crate) fn is_empty(&self) -> bool {
        Dimension::ALL.iter().all(|d| self.get(*d).is_none())
    }

    /// Refuses a limit that is not a positive number, naming it and the fix.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, value) in [
            ("rpm", self.rpm),
            ("tpm", self.tpm),
            ("itpm", self.itpm),
            ("otpm", self.otpm),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                return Err(format!(
                    "`rate_limit: {name}: {v}` must be a positive number a minute; remove it \
                     to have no limit"
                ));
            }
        }
        Ok(())
    }
}
