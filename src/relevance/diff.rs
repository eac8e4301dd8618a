//! Relevance diffs (`track diff`): predictions paired by (image, predicate, trial, variant); per variant the
//! change of precision, recall and F1 of both classes on the shared predictions, with paired
//! bootstrap intervals that resample whole images (so an image's predicates and trials stay
//! together, as in `relevance::stats`).

use std::collections::HashMap;

use polars::prelude::*;

use super::columns as cols;
use super::metrics::{Class, ClassMetrics, Metric};
use crate::analysis::diff::{
    BASE_CALL_ID, DiffCounts, DiffError, KindDiff, Layout, MIN_BOOTSTRAP_UNITS, NEW_CALL_ID,
    Pairing, UNCHANGED, difference, either, only_in, pair_by_key, sides,
};
use crate::analysis::stats::{BOOTSTRAP, BootstrapInterval, paired_bootstrap};
use crate::output::count;
use crate::store::{PredictionRow, Store, Variant};

/// How a relevance diff reads.
pub const LAYOUT: Layout = Layout {
    keys: &[cols::IMAGE, cols::PREDICATE, cols::TRIAL, cols::VARIANT],
    change_columns: &[
        cols::IMAGE,
        cols::PREDICATE,
        cols::TRIAL,
        cols::VARIANT,
        cols::CHANGE,
        cols::TRUTH,
        cols::BASE_SCORE,
        cols::NEW_SCORE,
    ],
    change_order: &[
        Change::Regression.name(),
        Change::NewInvalid.name(),
        Change::Fix.name(),
        Change::InvalidResolved.name(),
        Change::Changed.name(),
    ],
    item_noun: "prediction",
    summary_title: "Per variant, class and metric",
    significant: "a metric (precision, recall or F1 of either class, of either variant) \
                  whose change has a 95 % paired bootstrap interval (whole images \
                  resampled) entirely below 0",
    changes,
};

/// The headline's changes: `2 regressions (right → not right), 1 fix, 0 newly invalid`.
fn changes(c: &DiffCounts) -> String {
    format!(
        "{} (right → not right), {}, {} newly invalid",
        count(c.regressions, "regression"),
        count(c.fixes, "fix"),
        c.new_errors
    )
}

/// What a prediction was, against the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// 2 for a true predicate, 0 for a false one.
    Right,
    Wrong,
    /// 1: the model abstained.
    Uncertain,
    /// The answer gave no valid score.
    Invalid,
}

fn outcome(p: &PredictionRow) -> Outcome {
    match (p.score, p.truth) {
        (None, _) => Outcome::Invalid,
        (Some(1), _) => Outcome::Uncertain,
        (Some(2), true) | (Some(0), false) => Outcome::Right,
        _ => Outcome::Wrong,
    }
}

/// How a shared prediction changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Right before, not now.
    Regression,
    /// Valid before, invalid now.
    NewInvalid,
    /// Right now, not before.
    Fix,
    /// Invalid before, valid now.
    InvalidResolved,
    /// Another score, neither right before nor now.
    Changed,
    Unchanged,
}

impl Change {
    /// The name in the items' `change` column.
    const fn name(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::NewInvalid => "new_invalid",
            Self::Fix => "fix",
            Self::InvalidResolved => "invalid_resolved",
            Self::Changed => "changed",
            Self::Unchanged => UNCHANGED,
        }
    }
}

/// How a shared prediction changed.
fn change(base: &PredictionRow, new: &PredictionRow) -> Change {
    use Outcome::{Invalid, Right};
    match (outcome(base), outcome(new)) {
        (Invalid, Invalid) => Change::Unchanged,
        (_, Invalid) => Change::NewInvalid,
        (Invalid, _) => Change::InvalidResolved,
        (Right, n) if n != Right => Change::Regression,
        (b, Right) if b != Right => Change::Fix,
        _ if base.score != new.score => Change::Changed,
        _ => Change::Unchanged,
    }
}

/// TP, FP, TN, FN of the positive class (score 2 against true).
type Confusion = [u64; 4];

fn add(confusion: &mut Confusion, p: &PredictionRow) {
    let cell = match (p.score, p.truth) {
        (Some(2), true) => 0,
        (Some(2), false) => 1,
        (Some(0), false) => 2,
        (Some(0), true) => 3,
        _ => return,
    };
    confusion[cell] += 1;
}

fn metric(c: &Confusion, class: Class, name: Metric) -> Option<f64> {
    name.of(&class.metrics_from_positive(ClassMetrics::from_counts(c[0], c[1], c[2], c[3])))
}

fn variant_index(p: &PredictionRow) -> usize {
    usize::from(p.variant != Variant::With)
}

/// The shared predictions' confusion counts per image (the bootstrap's unit): indexed
/// `[variant][side]`, side 0 the base run.
struct ImageCounts {
    images: Vec<[[Confusion; 2]; 2]>,
    /// Shared predictions per variant.
    shared: [u64; 2],
}

impl ImageCounts {
    fn of(paired: &[Pairing<PredictionRow>]) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut images: Vec<[[Confusion; 2]; 2]> = Vec::new();
        let mut shared = [0; 2];
        for pairing in paired {
            let Pairing::Both(base, new) = pairing else {
                continue;
            };
            let at = *index.entry(&base.image).or_insert_with(|| {
                images.push(Default::default());
                images.len() - 1
            });
            let v = variant_index(base);
            shared[v] += 1;
            add(&mut images[at][v][0], base);
            add(&mut images[at][v][1], new);
        }
        Self { images, shared }
    }

    /// The counts of the images `sample` (indices, repeats allowed) for `variant` and `side`.
    fn total(&self, sample: impl Iterator<Item = usize>, variant: usize, side: usize) -> Confusion {
        let mut sum = [0; 4];
        for i in sample {
            for (s, c) in sum.iter_mut().zip(self.images[i][variant][side]) {
                *s += c;
            }
        }
        sum
    }

    /// `new - base` of a metric over the images `sample`.
    fn delta(&self, sample: &[usize], variant: usize, class: Class, name: Metric) -> Option<f64> {
        let base = self.total(sample.iter().copied(), variant, 0);
        let new = self.total(sample.iter().copied(), variant, 1);
        difference(metric(&base, class, name), metric(&new, class, name))
    }
}

/// One summary row: a metric of one class of one variant.
struct MetricRow {
    variant: &'static str,
    class: Class,
    metric: Metric,
    shared: u64,
    base: Option<f64>,
    new: Option<f64>,
    interval: Option<BootstrapInterval>,
}

impl MetricRow {
    fn significant_regression(&self) -> bool {
        self.interval.is_some_and(|i| i.high < 0.0)
    }

    fn describe(&self, images: usize) -> String {
        let three = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.3}"));
        let (low, high) = self.interval.map_or((0.0, 0.0), |i| (i.low, i.high));
        format!(
            "{} {} {}: {} → {} on {} shared predictions of {images} images, 95 % interval of \
             the change {low:+.3} to {high:+.3}",
            self.variant,
            self.class,
            self.metric,
            three(self.base),
            three(self.new),
            self.shared,
        )
    }
}

fn metric_rows(counts: &ImageCounts) -> Vec<MetricRow> {
    let units = counts.images.len();
    let mut rows = Vec::new();
    for (v, variant) in Variant::ALL.iter().enumerate() {
        if counts.shared[v] == 0 {
            continue;
        }
        let all_base = counts.total(0..units, v, 0);
        let all_new = counts.total(0..units, v, 1);
        for class in Class::ALL {
            for name in Metric::ALL {
                let interval = (units >= MIN_BOOTSTRAP_UNITS)
                    .then(|| {
                        paired_bootstrap(units, &BOOTSTRAP, |sample| {
                            counts.delta(sample, v, class, name)
                        })
                    })
                    .flatten();
                rows.push(MetricRow {
                    variant: variant.spec_name(),
                    class,
                    metric: name,
                    shared: counts.shared[v],
                    base: metric(&all_base, class, name),
                    new: metric(&all_new, class, name),
                    interval,
                });
            }
        }
    }
    rows
}

/// Compares relevance run `new` with run `base`, both read from `store` (`track diff`).
pub(crate) fn compare(store: &Store, base: i64, new: i64) -> Result<KindDiff, DiffError> {
    Ok(diff(
        store.predictions(&[base])?,
        store.predictions(&[new])?,
    )?)
}

/// Compares the predictions of two relevance runs.
pub(crate) fn diff(base: Vec<PredictionRow>, new: Vec<PredictionRow>) -> PolarsResult<KindDiff> {
    let paired = pair_by_key(base, new, |p| {
        (p.image.clone(), p.predicate.clone(), p.trial, p.variant)
    });
    let mut counts = DiffCounts::default();
    for pairing in &paired {
        match pairing {
            Pairing::Both(b, n) => {
                counts.shared += 1;
                match change(b, n) {
                    Change::Regression => counts.regressions += 1,
                    Change::Fix => counts.fixes += 1,
                    Change::NewInvalid => counts.new_errors += 1,
                    Change::InvalidResolved | Change::Changed | Change::Unchanged => {}
                }
            }
            Pairing::OnlyBase(_) => counts.only_in_base += 1,
            Pairing::OnlyNew(_) => counts.only_in_new += 1,
        }
    }
    let image_counts = ImageCounts::of(&paired);
    let rows = metric_rows(&image_counts);
    let significant: Vec<String> = rows
        .iter()
        .filter(|r| r.significant_regression())
        .map(|r| r.describe(image_counts.images.len()))
        .collect();
    counts.significant_regressions = significant.len() as u64;
    Ok(KindDiff {
        counts,
        summary: summary_frame(&rows, image_counts.images.len())?,
        items: items_frame(&paired)?,
        significant,
        improvements: Vec::new(),
    })
}

/// One row per variant, class and metric.
fn summary_frame(rows: &[MetricRow], images: usize) -> PolarsResult<DataFrame> {
    let text = |f: fn(&MetricRow) -> &'static str| rows.iter().map(f).collect::<Vec<_>>();
    let floats = |f: &dyn Fn(&MetricRow) -> Option<f64>| rows.iter().map(f).collect::<Vec<_>>();
    DataFrame::new_infer_height(vec![
        Column::new(cols::VARIANT.into(), text(|r| r.variant)),
        Column::new(cols::CLASS.into(), text(|r| r.class.name())),
        Column::new(cols::METRIC.into(), text(|r| r.metric.name())),
        Column::new(
            cols::SHARED.into(),
            rows.iter().map(|r| r.shared).collect::<Vec<_>>(),
        ),
        Column::new(cols::IMAGES.into(), vec![images as u64; rows.len()]),
        Column::new(cols::BASE.into(), floats(&|r| r.base)),
        Column::new(cols::NEW.into(), floats(&|r| r.new)),
        Column::new("delta".into(), floats(&|r| difference(r.base, r.new))),
        Column::new(
            cols::DELTA_LOW.into(),
            floats(&|r| r.interval.map(|i| i.low)),
        ),
        Column::new(
            cols::DELTA_HIGH.into(),
            floats(&|r| r.interval.map(|i| i.high)),
        ),
        Column::new(
            cols::SIGNIFICANT_REGRESSION.into(),
            rows.iter()
                .map(MetricRow::significant_regression)
                .collect::<Vec<_>>(),
        ),
    ])
}

/// One row per prediction of either run.
fn items_frame(paired: &[Pairing<PredictionRow>]) -> PolarsResult<DataFrame> {
    let first: Vec<&PredictionRow> = paired.iter().map(either).collect();
    let score = |side: usize| -> Vec<Option<u32>> {
        paired
            .iter()
            .map(|p| {
                let (b, n) = sides(p);
                if side == 0 { b } else { n }.and_then(|r| r.score.map(u32::from))
            })
            .collect()
    };
    // The call that answered (one answer holds every predicate of an image).
    let call = |side: usize| -> Vec<Option<i64>> {
        paired
            .iter()
            .map(|p| {
                let (b, n) = sides(p);
                if side == 0 { b } else { n }.and_then(|r| r.call_id)
            })
            .collect()
    };
    DataFrame::new_infer_height(vec![
        Column::new(
            cols::IMAGE.into(),
            first.iter().map(|r| r.image.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::PREDICATE.into(),
            first
                .iter()
                .map(|r| r.predicate.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::TRIAL.into(),
            first.iter().map(|r| r.trial).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::VARIANT.into(),
            first
                .iter()
                .map(|r| r.variant.spec_name())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::CHANGE.into(),
            paired
                .iter()
                .map(|p| match p {
                    Pairing::Both(b, n) => Some(change(b, n).name()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::ONLY_IN.into(),
            paired.iter().map(only_in).collect::<Vec<_>>(),
        ),
        Column::new(
            cols::TRUTH.into(),
            first.iter().map(|r| r.truth).collect::<Vec<_>>(),
        ),
        Column::new(cols::BASE_SCORE.into(), score(0)),
        Column::new(cols::NEW_SCORE.into(), score(1)),
        Column::new(BASE_CALL_ID.into(), call(0)),
        Column::new(NEW_CALL_ID.into(), call(1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(
        image: &str,
        predicate: &str,
        variant: &str,
        score: Option<u8>,
        truth: bool,
    ) -> PredictionRow {
        PredictionRow {
            run_id: 1,
            model_ref: "m".into(),
            image: image.into(),
            image_sha256: "x".into(),
            predicate: predicate.into(),
            predicate_kind: "clear".into(),
            variant: variant.parse().unwrap(),
            trial: 0,
            score,
            invalid_reason: None,
            truth,
            call_id: None,
            cache_hit: false,
            prompt_sha256: None,
        }
    }

    /// Six images x two predicates (one true, one false), WITH variant; `right` says whether
    /// each answer is right.
    fn run(right: impl Fn(usize) -> bool) -> Vec<PredictionRow> {
        (0..6)
            .flat_map(|i| {
                let image = format!("state_{i}");
                let ok = right(i);
                [
                    prediction(
                        &image,
                        "clear(a)",
                        "WITH",
                        Some(if ok { 2 } else { 0 }),
                        true,
                    ),
                    prediction(
                        &image,
                        "clear(b)",
                        "WITH",
                        Some(if ok { 0 } else { 2 }),
                        false,
                    ),
                ]
            })
            .collect()
    }

    fn value(df: &DataFrame, name: &str, row: usize) -> Option<f64> {
        df.column(name).unwrap().f64().unwrap().get(row)
    }

    #[test]
    fn changes_of_predictions_are_classified() {
        let p = |score| prediction("i", "p", "WITH", score, true);
        assert_eq!(change(&p(Some(2)), &p(Some(0))).name(), "regression");
        assert_eq!(change(&p(Some(2)), &p(Some(1))).name(), "regression");
        assert_eq!(change(&p(Some(1)), &p(Some(2))).name(), "fix");
        assert_eq!(change(&p(Some(1)), &p(Some(0))).name(), "changed");
        assert_eq!(change(&p(Some(2)), &p(None)).name(), "new_invalid");
        assert_eq!(change(&p(None), &p(Some(2))).name(), "invalid_resolved");
        assert_eq!(change(&p(Some(0)), &p(Some(0))).name(), "unchanged");
    }

    #[test]
    fn metrics_drop_with_a_significant_interval() {
        // Base: every answer right. New: images 0-3 all wrong.
        let d = diff(run(|_| true), run(|i| i >= 4)).unwrap();
        assert_eq!(
            (d.counts.shared, d.counts.regressions, d.counts.fixes),
            (12, 8, 0)
        );
        let s = &d.summary;
        assert_eq!(s.height(), 6, "one variant x two classes x three metrics");
        // Positive precision: base 6/6; new TP 2, FP 4: 1/3.
        assert_eq!(value(s, "base", 0), Some(1.0));
        assert!((value(s, "new", 0).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert!(value(s, "delta_high", 0).unwrap() < 0.0);
        assert_eq!(d.counts.significant_regressions, 6, "{:?}", d.significant);
        assert!(d.significant[0].starts_with("with_uncertain positive precision: 1.000 → 0.333"));
        let better = diff(run(|i| i >= 4), run(|_| true)).unwrap();
        assert_eq!(better.counts.significant_regressions, 0);
        assert_eq!(better.counts.fixes, 8);
    }

    #[test]
    fn unpaired_predictions_are_listed_and_few_images_get_no_interval() {
        let mut base = run(|_| true);
        base.truncate(4);
        let mut new = run(|_| true);
        new.truncate(2);
        new.push(prediction("state_9", "clear(a)", "WITHOUT", Some(2), true));
        let d = diff(base, new).unwrap();
        assert_eq!(
            (d.counts.shared, d.counts.only_in_base, d.counts.only_in_new),
            (2, 2, 1)
        );
        assert_eq!(
            value(&d.summary, "delta_low", 0),
            None,
            "one image: no interval"
        );
        assert_eq!(value(&d.summary, "delta", 0), Some(0.0));
        let only = d.items.column("only_in").unwrap().str().unwrap().clone();
        assert_eq!(
            only.iter().collect::<Vec<_>>(),
            [None, None, Some("base"), Some("base"), Some("new")]
        );
    }
}
