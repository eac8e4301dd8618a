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

impl Price {
    /// USD for `input_tokens` and `output_tokens` at this price.
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> f64 {
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
    }
}
