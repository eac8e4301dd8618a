//! Metrics of a relevance variant on its certain predictions (scores 0 and 2) against ground
//! truth: both classes, coverage, recall with abstentions counted as misses, calibration of
//! the uncertain answers, and WITH - WITHOUT deltas. A division by zero is `None`, never NaN.
//! The one implementation of these metrics: the polars summaries of `analysis::relevance`,
//! the bootstrap and the diffs all call it.

/// One answered prediction: the model's score (0, 1 or 2) and the ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scored {
    pub score: u8,
    pub truth: bool,
}

/// Precision, recall and F1 of one class, with its confusion counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassMetrics {
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub f1: Option<f64>,
    pub tp: u64,
    pub fp: u64,
    pub tn: u64,
    pub fn_: u64,
    /// Certain predictions counted (tp + fp + tn + fn).
    pub total_samples: u64,
}

impl ClassMetrics {
    /// The metrics of counts `tp`, `fp`, `tn`, `fn_`.
    pub(crate) fn from_counts(tp: u64, fp: u64, tn: u64, fn_: u64) -> Self {
        let precision = ratio(tp, tp + fp);
        let recall = ratio(tp, tp + fn_);
        let f1 = match (precision, recall) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        Self {
            precision,
            recall,
            f1,
            tp,
            fp,
            tn,
            fn_,
            total_samples: tp + fp + tn + fn_,
        }
    }

    /// The other class of the same predictions: its positives are this one's negatives.
    pub(crate) fn mirror(&self) -> Self {
        Self::from_counts(self.tn, self.fn_, self.tp, self.fp)
    }
}

/// An unknown name of a class or metric, named in the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown relevance {what} {name:?} (expected {expected})")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
    pub expected: &'static str,
}

/// The two classes measured: the positive one (score 2 against true) and its mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    Positive,
    Negative,
}

impl Class {
    /// Both classes, in the order of every table.
    pub const ALL: [Self; 2] = [Self::Positive, Self::Negative];

    /// The name in every table, CSV and chart: `positive`, `negative`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Positive => "positive",
            Self::Negative => "negative",
        }
    }

    /// This class's metrics of `m`.
    pub(crate) fn of(self, m: &VariantMetrics) -> &ClassMetrics {
        match self {
            Self::Positive => &m.positive,
            Self::Negative => &m.negative,
        }
    }

    /// This class's metrics of the positive class's counts `positive`.
    pub(crate) fn metrics_from_positive(self, positive: ClassMetrics) -> ClassMetrics {
        match self {
            Self::Positive => positive,
            Self::Negative => positive.mirror(),
        }
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Class {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| UnknownName {
                what: "class",
                name: name.to_owned(),
                expected: "positive or negative",
            })
    }
}

/// The three metrics of a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    Precision,
    Recall,
    F1,
}

impl Metric {
    /// The three metrics, in the order of every table.
    pub const ALL: [Self; 3] = [Self::Precision, Self::Recall, Self::F1];

    /// The name in every table, CSV and chart: `precision`, `recall`, `f1`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Precision => "precision",
            Self::Recall => "recall",
            Self::F1 => "f1",
        }
    }

    /// This metric of `c`.
    pub(crate) fn of(self, c: &ClassMetrics) -> Option<f64> {
        match self {
            Self::Precision => c.precision,
            Self::Recall => c.recall,
            Self::F1 => c.f1,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Metric {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| UnknownName {
                what: "metric",
                name: name.to_owned(),
                expected: "precision, recall or f1",
            })
    }
}

/// Everything measured of one variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VariantMetrics {
    /// Score 2 against true.
    pub positive: ClassMetrics,
    /// Score 0 against false (the mirror of `positive`).
    pub negative: ClassMetrics,
    /// Answered predictions, certain or not.
    pub answered: u64,
    /// Predictions scored 1 (abstentions).
    pub uncertain: u64,
    /// Share of answered predictions that were certain.
    pub coverage: Option<f64>,
    /// Recall when abstentions count as misses: TP / (all true items answered).
    pub positive_recall_with_abstentions: Option<f64>,
    pub negative_recall_with_abstentions: Option<f64>,
    /// Among score-1 answers, the share whose truth is true.
    pub uncertain_true_share: Option<f64>,
}

impl VariantMetrics {
    /// Measures `predictions` (valid answers only; invalid ones are counted elsewhere).
    pub(crate) fn measure(predictions: impl IntoIterator<Item = Scored>) -> Self {
        let (mut tp, mut fp, mut tn, mut fn_) = (0, 0, 0, 0);
        let (mut uncertain, mut uncertain_true, mut true_total, mut false_total) =
            (0u64, 0u64, 0u64, 0u64);
        for p in predictions {
            if p.truth {
                true_total += 1
            } else {
                false_total += 1
            }
            match (p.score, p.truth) {
                (2, true) => tp += 1,
                (2, false) => fp += 1,
                (0, false) => tn += 1,
                (0, true) => fn_ += 1,
                _ => {
                    uncertain += 1;
                    uncertain_true += u64::from(p.truth);
                }
            }
        }
        let positive = ClassMetrics::from_counts(tp, fp, tn, fn_);
        let answered = positive.total_samples + uncertain;
        Self {
            positive,
            negative: positive.mirror(),
            answered,
            uncertain,
            coverage: coverage(positive.total_samples, uncertain),
            positive_recall_with_abstentions: ratio(tp, true_total),
            negative_recall_with_abstentions: ratio(tn, false_total),
            uncertain_true_share: ratio(uncertain_true, uncertain),
        }
    }
}

/// `num / den`, `None` when `den` is 0.
fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// The share of answered predictions that were certain: `certain / (certain + uncertain)`.
pub(crate) fn coverage(certain: u64, uncertain: u64) -> Option<f64> {
    ratio(certain, certain + uncertain)
}

/// `with - without`, `None` when either side is undefined.
pub(crate) fn delta(with: Option<f64>, without: Option<f64>) -> Option<f64> {
    Some(with? - without?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_an_unknown_one_is_an_error_naming_it() {
        for c in Class::ALL {
            assert_eq!(c.name().parse(), Ok(c));
        }
        for m in Metric::ALL {
            assert_eq!(m.to_string().parse(), Ok(m));
        }
        for (err, name) in [
            ("neutral".parse::<Class>().unwrap_err(), "neutral"),
            ("f2".parse::<Metric>().unwrap_err(), "f2"),
        ] {
            assert!(err.to_string().contains(&format!("{name:?}")), "{err}");
        }
    }

    fn scored(list: &[(u8, bool)]) -> Vec<Scored> {
        list.iter()
            .map(|&(score, truth)| Scored { score, truth })
            .collect()
    }

    #[test]
    fn counts_precision_recall_f1_by_hand() {
        // 2/true x3, 2/false x1, 0/false x4, 0/true x2, 1/true x1, 1/false x1.
        let mut list = vec![(2, true); 3];
        list.push((2, false));
        list.extend([(0, false); 4]);
        list.extend([(0, true); 2]);
        list.extend([(1, true), (1, false)]);
        let m = VariantMetrics::measure(scored(&list));
        let p = m.positive;
        assert_eq!((p.tp, p.fp, p.tn, p.fn_, p.total_samples), (3, 1, 4, 2, 10));
        assert_eq!(p.precision, Some(0.75));
        assert_eq!(p.recall, Some(0.6));
        assert!((p.f1.unwrap() - 2.0 * 0.75 * 0.6 / 1.35).abs() < 1e-12);
        let n = m.negative;
        assert_eq!((n.tp, n.fp, n.tn, n.fn_), (4, 2, 3, 1), "the mirror");
        assert_eq!(n.precision, Some(4.0 / 6.0));
        assert_eq!(n.recall, Some(0.8));
        assert_eq!((m.answered, m.uncertain), (12, 2));
        assert_eq!(m.coverage, Some(10.0 / 12.0));
        assert_eq!(m.positive_recall_with_abstentions, Some(3.0 / 6.0));
        assert_eq!(m.negative_recall_with_abstentions, Some(4.0 / 6.0));
        assert_eq!(m.uncertain_true_share, Some(0.5));
    }

    #[test]
    fn edge_cases_are_empty_not_nan() {
        // No positives predicted or true.
        let m = VariantMetrics::measure(scored(&[(0, false), (0, false)]));
        assert_eq!(
            (m.positive.precision, m.positive.recall, m.positive.f1),
            (None, None, None)
        );
        assert_eq!(m.negative.precision, Some(1.0));
        // All uncertain: nothing certain at all.
        let m = VariantMetrics::measure(scored(&[(1, true), (1, false)]));
        assert_eq!(m.positive.total_samples, 0);
        assert_eq!(m.coverage, Some(0.0));
        assert_eq!(m.positive.precision, None);
        assert_eq!(m.positive_recall_with_abstentions, Some(0.0));
        // Nothing at all.
        let m = VariantMetrics::measure(Vec::new());
        assert_eq!((m.coverage, m.uncertain_true_share), (None, None));
        // Precision and recall both 0: F1 is 0, not NaN.
        let m = VariantMetrics::measure(scored(&[(2, false), (0, true)]));
        assert_eq!(m.positive.f1, Some(0.0));
        assert_eq!(
            delta(Some(0.9), Some(0.7)).map(|d| (d * 10.0).round()),
            Some(2.0)
        );
        assert_eq!(delta(None, Some(0.7)), None);
    }
}
