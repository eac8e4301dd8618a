//! Beyond the specification: per-predicate-type metrics, McNemar's test on the items both
//! variants answered with certainty, paired bootstrap intervals of the deltas (whole images
//! resampled, so repeated trials stay together), and the spread of metrics across trials.

use std::collections::BTreeMap;

use crate::analysis::stats::{BOOTSTRAP, BootstrapInterval, McNemar, paired_bootstrap};
use crate::store::{PredictionRow, Variant};

use super::metrics::{Class, Metric, Scored, VariantMetrics, delta};

fn is_with(row: &PredictionRow) -> bool {
    row.variant == Variant::With
}

fn measure<'a>(rows: impl Iterator<Item = &'a PredictionRow>) -> VariantMetrics {
    VariantMetrics::measure(rows.filter_map(|r| {
        r.score.map(|score| Scored {
            score,
            truth: r.truth,
        })
    }))
}

/// Metrics of WITH and WITHOUT, and their invalid counts, from stored predictions.
pub(crate) fn measure_rows(rows: &[PredictionRow]) -> (VariantMetrics, VariantMetrics, [u64; 2]) {
    let mut invalid = [0u64; 2];
    let mut scored: [Vec<Scored>; 2] = [Vec::new(), Vec::new()];
    for r in rows {
        let v = usize::from(r.variant != Variant::With);
        match r.score {
            Some(score) => scored[v].push(Scored {
                score,
                truth: r.truth,
            }),
            None => invalid[v] += 1,
        }
    }
    let [with, without] = scored;
    (
        VariantMetrics::measure(with),
        VariantMetrics::measure(without),
        invalid,
    )
}

/// WITH and WITHOUT metrics per predicate type (`clear`, `on`, ...).
pub(crate) fn by_kind(
    rows: &[PredictionRow],
) -> BTreeMap<String, (VariantMetrics, VariantMetrics)> {
    let mut kinds: BTreeMap<String, Vec<&PredictionRow>> = BTreeMap::new();
    for r in rows {
        kinds.entry(r.predicate_kind.clone()).or_default().push(r);
    }
    kinds
        .into_iter()
        .map(|(kind, rows)| {
            let with = measure(rows.iter().copied().filter(|r| is_with(r)));
            let without = measure(rows.iter().copied().filter(|r| !is_with(r)));
            (kind, (with, without))
        })
        .collect()
}

/// McNemar's test on the items (run, model, image, predicate, trial) both variants answered
/// with certainty: an answer is right when score 2 meets a true predicate or 0 a false one.
/// Abstentions and invalid answers leave the item out (the policy stated in docs/src/relevance.md).
/// Pairs never cross runs or models, so pooled runs add items instead of overwriting them.
pub(crate) fn mcnemar(rows: &[PredictionRow]) -> McNemar {
    type Item<'a> = (i64, &'a str, &'a str, &'a str, u32);
    let mut pairs: BTreeMap<Item<'_>, [Option<bool>; 2]> = BTreeMap::new();
    for r in rows {
        let right = match r.score {
            Some(2) => Some(r.truth),
            Some(0) => Some(!r.truth),
            _ => None,
        };
        let item = (r.run_id, &*r.model_ref, &*r.image, &*r.predicate, r.trial);
        pairs.entry(item).or_default()[usize::from(!is_with(r))] = right;
    }
    let (mut b, mut c) = (0, 0);
    for [with, without] in pairs.values() {
        match (with, without) {
            (Some(true), Some(false)) => b += 1,
            (Some(false), Some(true)) => c += 1,
            _ => {}
        }
    }
    McNemar::new(b, c)
}

/// A WITH - WITHOUT difference with its bootstrap interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaInterval {
    pub class: Class,
    pub metric: Metric,
    pub delta: Option<f64>,
    pub interval: Option<BootstrapInterval>,
}

/// Paired bootstrap intervals ([`BOOTSTRAP`]: 95 %) of the six deltas (precision, recall, F1 of both classes),
/// resampling whole images (an image of one run and model: pooled runs are separate units).
pub(crate) fn bootstrap_deltas(rows: &[PredictionRow]) -> Vec<DeltaInterval> {
    let mut images: BTreeMap<(i64, &str, &str), Vec<&PredictionRow>> = BTreeMap::new();
    for r in rows {
        images
            .entry((r.run_id, &r.model_ref, &r.image))
            .or_default()
            .push(r);
    }
    let images: Vec<Vec<&PredictionRow>> = images.into_values().collect();
    let metric = |m: &VariantMetrics, class: Class, name: Metric| name.of(class.of(m));
    let (with, without) = (
        measure(rows.iter().filter(|r| is_with(r))),
        measure(rows.iter().filter(|r| !is_with(r))),
    );
    let mut out = Vec::new();
    for class in Class::ALL {
        for name in Metric::ALL {
            let interval = paired_bootstrap(images.len(), &BOOTSTRAP, |sample| {
                let chosen = || sample.iter().flat_map(|&i| images[i].iter().copied());
                let w = measure(chosen().filter(|r| is_with(r)));
                let wo = measure(chosen().filter(|r| !is_with(r)));
                delta(metric(&w, class, name), metric(&wo, class, name))
            });
            out.push(DeltaInterval {
                class,
                metric: name,
                delta: delta(metric(&with, class, name), metric(&without, class, name)),
                interval,
            });
        }
    }
    out
}

/// Mean and sample standard deviation of a metric across trials (`None` with one trial).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialSpread {
    pub variant: Variant,
    pub metric: Metric,
    pub trials: usize,
    pub mean: Option<f64>,
    pub sd: Option<f64>,
}

/// Positive-class precision, recall and F1 of each variant, trial by trial.
pub(crate) fn trial_spread(rows: &[PredictionRow]) -> Vec<TrialSpread> {
    let trials: Vec<u32> = {
        let mut t: Vec<u32> = rows.iter().map(|r| r.trial).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let mut out = Vec::new();
    for variant in [Variant::With, Variant::Without] {
        let per_trial: Vec<VariantMetrics> = trials
            .iter()
            .map(|&t| measure(rows.iter().filter(|r| r.trial == t && r.variant == variant)))
            .collect();
        for name in Metric::ALL {
            let values: Vec<f64> = per_trial
                .iter()
                .filter_map(|m| name.of(&m.positive))
                .collect();
            let n = values.len();
            let mean = (n > 0).then(|| values.iter().sum::<f64>() / n as f64);
            let sd = mean.filter(|_| n > 1).map(|m| {
                (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
            });
            out.push(TrialSpread {
                variant,
                metric: name,
                trials: n,
                mean,
                sd,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        image: &str,
        predicate: &str,
        variant: Variant,
        trial: u32,
        score: Option<u8>,
        truth: bool,
    ) -> PredictionRow {
        PredictionRow {
            run_id: 1,
            model_ref: "openai:gpt-4o".into(),
            image: image.into(),
            image_sha256: "x".into(),
            predicate: predicate.into(),
            predicate_kind: predicate.split('(').next().unwrap().into(),
            variant,
            trial,
            score,
            invalid_reason: None,
            truth,
            call_id: None,
            cache_hit: false,
            prompt_sha256: None,
        }
    }

    #[test]
    fn pooled_runs_pair_answers_within_their_run_and_model() {
        use Variant::*;
        // The same image, predicate and trial in two runs: WITH right and WITHOUT wrong in
        // both. Paired across runs, the second would overwrite the first (b = 1).
        let mut rows = Vec::new();
        for run_id in [1, 2] {
            for (variant, score) in [(With, 2), (Without, 0)] {
                let mut r = row("s0", "clear(red:block)", variant, 0, Some(score), true);
                r.run_id = run_id;
                rows.push(r);
            }
        }
        let m = mcnemar(&rows);
        assert_eq!((m.b, m.c), (2, 0));
        let mut other_model = rows.clone();
        for r in &mut other_model {
            r.run_id = 1;
            r.model_ref = "anthropic:haiku 3.5".into();
        }
        rows.extend(other_model.into_iter().take(2));
        assert_eq!(mcnemar(&rows).b, 3);
    }

    #[test]
    fn mcnemar_pairs_only_items_both_variants_answered_with_certainty() {
        use Variant::*;
        let rows = vec![
            // WITH right, WITHOUT wrong: b
            row("a", "clear(red:block)", With, 0, Some(2), true),
            row("a", "clear(red:block)", Without, 0, Some(0), true),
            // WITHOUT right, WITH wrong: c
            row("a", "on(red:block,blue:block)", With, 0, Some(2), false),
            row("a", "on(red:block,blue:block)", Without, 0, Some(0), false),
            // WITH abstains: left out
            row("b", "clear(red:block)", With, 0, Some(1), true),
            row("b", "clear(red:block)", Without, 0, Some(0), true),
            // both right: concordant
            row("b", "holding(red:block)", With, 0, Some(0), false),
            row("b", "holding(red:block)", Without, 0, Some(0), false),
        ];
        let m = mcnemar(&rows);
        assert_eq!((m.b, m.c), (1, 1));
        let kinds = by_kind(&rows);
        assert_eq!(kinds.len(), 3);
        assert_eq!(kinds["clear"].0.uncertain, 1);
        let deltas = bootstrap_deltas(&rows);
        assert_eq!(deltas.len(), 6);
        let spread = trial_spread(&rows);
        assert_eq!(spread[0].trials, 1);
        assert_eq!(spread[0].sd, None);
    }

    #[test]
    fn trials_give_mean_and_spread() {
        use Variant::*;
        // Trial 0: WITH precision 1; trial 1: WITH precision 0.5.
        let rows = vec![
            row("a", "clear(red:block)", With, 0, Some(2), true),
            row("a", "clear(red:block)", With, 1, Some(2), true),
            row("a", "clear(blue:block)", With, 1, Some(2), false),
        ];
        let spread = trial_spread(&rows);
        let precision = &spread[0];
        assert_eq!((precision.trials, precision.mean), (2, Some(0.75)));
        assert!((precision.sd.unwrap() - (0.125f64).sqrt()).abs() < 1e-12);
    }
}
