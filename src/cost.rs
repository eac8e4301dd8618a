//! Prices: what a call costs from its token counts and per-million-token prices.
//!
//! A leaf: it knows numbers, not calls or providers, and imports nothing from the rest of track.

/// What a model charges, in USD per million input and output tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Price {
    /// USD per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// USD per million output (completion) tokens.
    pub output_per_mtok: f64,
}

/// What batch APIs charge of the standard price: OpenAI's Batch API and Anthropic's Message
/// Batches both take 50 % off every token.
pub const BATCH_DISCOUNT: f64 = 0.5;

impl Price {
    /// The price of the same model through a batch API. Calls answered in a batch store these
    /// prices (and their batch), so their cost is what was billed.
    pub(crate) fn batch(self) -> Price {
        Price {
            input_per_mtok: self.input_per_mtok * BATCH_DISCOUNT,
            output_per_mtok: self.output_per_mtok * BATCH_DISCOUNT,
        }
    }

    /// USD for `input_tokens` and `output_tokens` at this price.
    pub(crate) fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok)
            / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_4o_prices() {
        let gpt_4o = Price {
            input_per_mtok: 2.5,
            output_per_mtok: 10.0,
        };
        // 1000 x 2.50/1M + 500 x 10.00/1M = 0.0025 + 0.005
        assert!((gpt_4o.cost_usd(1_000, 500) - 0.0075).abs() < 1e-15);
        assert_eq!(Price::default().cost_usd(1_000, 500), 0.0);
        // Through a batch: half of 0.0075.
        let batch = gpt_4o.batch();
        assert_eq!((batch.input_per_mtok, batch.output_per_mtok), (1.25, 5.0));
        assert!((batch.cost_usd(1_000, 500) - 0.00375).abs() < 1e-15);
    }
}
