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

    /// Reference values from scikit-learn 1.9.1's `sklearn.metrics.cohen_kappa_score`, computed
    /// with `python3 -m venv /tmp/skl && /tmp/skl/bin/pip install scikit-learn`, then for each
    /// pair of lists `cohen_kappa_score(person, check)` (and, for the 1-5 scores,
    /// `weights="quadratic"` too). The lists were drawn once with Python's `random` (seeds 30
    /// and 5) and are written out here.
    #[test]
    fn kappa_is_scikit_learns() {
        let binary: [(&[u8], &[u8], f64); 3] = [
            (
                &[0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0],
                &[0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1],
                0.333_333_333_333_333_37,
            ),
            (
                &[
                    1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0,
                ],
                &[
                    1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0,
                ],
                0.675_324_675_324_675_3,
            ),
            (
                &[
                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0,
                    1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0,
                ],
                &[
                    1, 1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1,
                    1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0,
                ],
                0.647_058_823_529_411_7,
            ),
        ];
        for (person, check, sklearn) in binary {
            let pairs: Vec<(bool, bool)> = person
                .iter()
                .zip(check)
                .map(|(&p, &c)| (p == 1, c == 1))
                .collect();
            let kappa = agreement(&pairs).kappa.unwrap();
            assert!((kappa - sklearn).abs() < 1e-12, "{kappa} != {sklearn}");
        }
        // Scores 1-5 of two raters: unweighted 0.625, quadratic 0.8522167487684729.
        let a = [5, 3, 3, 5, 1, 4, 2, 1, 2, 1, 3, 4, 2, 4, 5, 1, 5, 2, 1, 2];
        let b = [5, 3, 3, 5, 1, 3, 2, 3, 4, 2, 3, 4, 1, 3, 5, 1, 5, 2, 1, 2];
        let pairs: Vec<(i64, i64)> = a.into_iter().zip(b).collect();
        let unweighted = super::super::stats::cohen_kappa(&pairs, 1, 5).unwrap();
        assert!((unweighted - 0.625).abs() < 1e-12, "{unweighted}");
        let quadratic = super::super::stats::weighted_kappa(&pairs, 1, 5).unwrap();
        assert!(
            (quadratic - 0.852_216_748_768_472_9).abs() < 1e-12,
            "{quadratic}"
        );
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
