//! Prices: what a call costs from its token counts and per-million-token prices.

use crate::llm::Usage;

/// USD for `usage` at `input_price` and `output_price` USD per million tokens.
pub fn cost_usd(usage: &Usage, input_price: f64, output_price: f64) -> f64 {
    (usage.input_tokens as f64 * input_price + usage.output_tokens as f64 * output_price) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_4o_prices() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 500,
            estimated: false,
        };
        // 1000 x 2.50/1M + 500 x 10.00/1M = 0.0025 + 0.005
        assert!((cost_usd(&usage, 2.5, 10.0) - 0.0075).abs() < 1e-15);
        assert_eq!(cost_usd(&usage, 0.0, 0.0), 0.0);
    }
}
