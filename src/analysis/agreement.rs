//! Agreement between people and an automatic verdict (a check, a judge, a result's outcome):
//! of the items both rated pass or fail, how many they agree on, that share, and Cohen's κ
//! (the agreement beyond chance). What an LLM-as-judge user needs before trusting a judge.

use super::stats::cohen_kappa;

/// How a person and an automatic verdict agree over the items both rated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    /// Items both rated.
    pub rated: u64,
    /// Items they agree on.
    pub agree: u64,
    /// `agree / rated`; `None` without items.
    pub share: Option<f64>,
    /// Cohen's κ, unweighted, on pass/fail; `None` without items or when it is undefined
    /// (both always said the same one thing: chance agreement is total).
    pub kappa: Option<f64>,
}

/// The agreement of `pairs`, each (the person said pass, the automatic verdict was pass).
pub(crate) fn agreement(pairs: &[(bool, bool)]) -> Agreement {
    let rated = pairs.len() as u64;
    let agree = pairs.iter().filter(|(a, b)| a == b).count() as u64;
    let coded: Vec<(i64, i64)> = pairs
        .iter()
        .map(|&(a, b)| (i64::from(a), i64::from(b)))
        .collect();
    Agreement {
        rated,
        agree,
        share: (rated > 0).then(|| agree as f64 / rated as f64),
        kappa: cohen_kappa(&coded, 0, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn kappa_of_pass_and_fail_by_hand() {
        // Person P P F F P F P P, check P F F F P P P P: they agree on 6 of 8 (p_o 0.75).
        // Each says pass 5 times in 8: p_e = (5/8)² + (3/8)² = 34/64. κ = (0.75 − 34/64) /
        // (1 − 34/64) = 14/30 = 7/15, as scikit-learn's cohen_kappa_score gives for
        // [1,1,0,0,1,0,1,1] and [1,0,0,0,1,1,1,1].
        let person = [true, true, false, false, true, false, true, true];
        let check = [true, false, false, false, true, true, true, true];
        let pairs: Vec<(bool, bool)> = person.into_iter().zip(check).collect();
        let a = agreement(&pairs);
        assert_eq!((a.rated, a.agree), (8, 6));
        assert!(close(a.share.unwrap(), 0.75));
        assert!(close(a.kappa.unwrap(), 7.0 / 15.0), "{:?}", a.kappa);
    }

    #[test]
    fn opposite_verdicts_and_edge_cases() {
        // Always opposite, both halves: κ = (0 − 0.5) / (1 − 0.5) = −1.
        let a = agreement(&[(true, false), (false, true)]);
        assert_eq!(a.share, Some(0.0));
        assert!(close(a.kappa.unwrap(), -1.0));
        // Full agreement with both kinds of verdict: κ = 1.
        assert_eq!(agreement(&[(true, true), (false, false)]).kappa, Some(1.0));
        // Both always pass: they agree, but κ is undefined (no chance to disagree).
        let same = agreement(&[(true, true), (true, true)]);
        assert_eq!((same.share, same.kappa), (Some(1.0), None));
        let none = agreement(&[]);
        assert_eq!((none.rated, none.share, none.kappa), (0, None, None));
    }
}
