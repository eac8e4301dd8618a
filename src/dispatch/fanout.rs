//! Fan-out by key: calls of a stage with the same cache key are sent once. The first index
//! of a key gets what its call came to; the others get a cache hit of a fresh answer (they
//! paid nothing), or the same failure.

use std::collections::HashMap;

use super::CallOutcome;

/// The stage indices of each key, in the order they were added.
#[derive(Debug, Default)]
pub struct Fanout {
    indices: HashMap<String, Vec<usize>>,
}

impl Fanout {
    /// Adds `index` under `key`; true when the key is new (its call is the one to send).
    pub fn add(&mut self, key: &str, index: usize) -> bool {
        match self.indices.get_mut(key) {
            Some(indices) => {
                if !indices.contains(&index) {
                    indices.push(index);
                }
                false
            }
            None => {
                self.indices.insert(key.to_owned(), vec![index]);
                true
            }
        }
    }

    /// The indices of `key` (none when it was never added).
    pub fn indices(&self, key: &str) -> &[usize] {
        self.indices.get(key).map(Vec::as_slice).unwrap_or_default()
    }

    /// The outcome of every index of `key`: the first gets `outcome`, the others a hit of a
    /// fresh answer, or the same outcome otherwise.
    pub fn spread(&self, key: &str, outcome: CallOutcome) -> Vec<(usize, CallOutcome)> {
        let indices = self.indices(key);
        let mut spread = Vec::with_capacity(indices.len());
        for (n, &index) in indices.iter().enumerate() {
            let outcome = match (&outcome, n) {
                (CallOutcome::Fresh(call), 1..) => CallOutcome::Hit(call.clone()),
                _ => outcome.clone(),
            };
            spread.push((index, outcome));
        }
        spread
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::StoredCall;

    /// A stored answer `4` (call 7), for the dispatcher's tests.
    pub(in crate::dispatch) fn answer() -> StoredCall {
        StoredCall {
            id: 7,
            text: "4".into(),
            finish_reason: None,
            input_tokens: 3,
            output_tokens: 1,
            tokens_estimated: false,
            latency_ms: 12.0,
            attempts: 1,
            cost_usd: Some(0.5),
            created_at: "2026-11-27T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn the_first_index_of_a_key_pays_and_the_others_are_hits_of_its_answer() {
        let mut fanout = Fanout::default();
        assert!(fanout.add("k", 3));
        assert!(!fanout.add("k", 5));
        assert!(!fanout.add("k", 3), "an index added twice is kept once");
        assert!(fanout.add("other", 4));
        let spread = fanout.spread("k", CallOutcome::Fresh(Box::new(answer())));
        assert_eq!(spread.len(), 2);
        assert_eq!(spread[0], (3, CallOutcome::Fresh(Box::new(answer()))));
        assert_eq!(spread[1], (5, CallOutcome::Hit(Box::new(answer()))));
    }

    #[test]
    fn a_failure_goes_to_every_index_of_its_key_and_an_unknown_key_to_none() {
        let mut fanout = Fanout::default();
        fanout.add("k", 0);
        fanout.add("k", 1);
        let failed = CallOutcome::Failed {
            call_id: Some(9),
            error: "HTTP 500".into(),
            attempts: 6,
        };
        let spread = fanout.spread("k", failed.clone());
        assert_eq!(spread, vec![(0, failed.clone()), (1, failed.clone())]);
        assert!(fanout.spread("unknown", failed).is_empty());
    }
}
