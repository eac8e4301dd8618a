//! Relevance summaries with polars from stored predictions: per variant (and predicate type),
//! both classes, in the columns of `comparison_summary.csv` plus coverage and invalid counts;
//! score 1 read four ways. Nothing here reads SQL or prints.

use polars::prelude::*;

use super::columns as cols;
use super::metrics::{self, Class, ClassMetrics};
use crate::store::{PredictionRow, Variant};

/// Predictions as a frame: variant, predicate type, score (null when invalid), truth.
pub(crate) fn predictions_frame(rows: &[PredictionRow]) -> PolarsResult<DataFrame> {
    DataFrame::new_infer_height(vec![
        Column::new(
            cols::VARIANT.into(),
            rows.iter()
                .map(|r| r.variant.spec_name())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::PREDICATE_TYPE.into(),
            rows.iter()
                .map(|r| r.predicate_kind.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::SCORE.into(),
            rows.iter()
                .map(|r| r.score.map(u32::from))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::TRUTH.into(),
            rows.iter().map(|r| r.truth).collect::<Vec<_>>(),
        ),
    ])
}

/// The counts of column `name` (null where absent).
fn counts(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<u64>>> {
    Ok(df
        .column(name)?
        .cast(&DataType::UInt64)?
        .u64()?
        .iter()
        .collect())
}

/// `df` with `precision`, `recall` and `f1` of the confusion counts in its columns `tp`, `fp`,
/// `fn` (and `tn` when it has one), computed by [`ClassMetrics::from_counts`], the one
/// implementation of these metrics; null in rows without counts.
fn with_class_metrics(mut df: DataFrame) -> PolarsResult<DataFrame> {
    let (tp, fp, fn_) = (
        counts(&df, cols::TP)?,
        counts(&df, cols::FP)?,
        counts(&df, cols::FN)?,
    );
    let tn = match df.get_column_index(cols::TN) {
        Some(_) => counts(&df, cols::TN)?,
        None => vec![Some(0); df.height()],
    };
    let metrics: Vec<Option<ClassMetrics>> = (0..df.height())
        .map(|i| Some(ClassMetrics::from_counts(tp[i]?, fp[i]?, tn[i]?, fn_[i]?)))
        .collect();
    let column = |name: &str, of: fn(&ClassMetrics) -> Option<f64>| {
        let values: Vec<Option<f64>> = metrics.iter().map(|m| m.as_ref().and_then(of)).collect();
        Column::new(name.into(), values)
    };
    let added = [
        column("precision", |m| m.precision),
        column("recall", |m| m.recall),
        column("f1", |m| m.f1),
    ];
    for c in added {
        df.with_column(c)?;
    }
    Ok(df)
}

/// Per variant (and per predicate type when `per_predicate`): a row per class with precision,
/// recall, F1, TP, FP, TN, FN, total samples, coverage and invalid answers. The negative
/// class mirrors the positive one. polars counts; the metrics are [`ClassMetrics`]'.
pub(crate) fn variant_summary(
    rows: &[PredictionRow],
    per_predicate: bool,
) -> PolarsResult<DataFrame> {
    let mut keys = vec![col(cols::VARIANT)];
    if per_predicate {
        keys.insert(0, col(cols::PREDICATE_TYPE));
    }
    let both = class_counts(predictions_frame(rows)?, &keys)?;
    // WITH before WITHOUT, positive before negative.
    let mut order: Vec<PlSmallStr> = Vec::new();
    if per_predicate {
        order.push("predicate_type".into());
    }
    order.extend([cols::VARIANT_ORDER.into(), cols::CLASS_ORDER.into()]);
    let both = both
        .with_columns([
            variant_order(),
            when(col(cols::CLASS).eq(lit(Class::Positive.name())))
                .then(lit(0))
                .otherwise(lit(1))
                .alias(cols::CLASS_ORDER),
        ])
        .sort(order, SortMultipleOptions::default())
        .collect()?;
    let mut both = with_class_metrics(both)?;
    let coverage: Vec<Option<f64>> = counts(&both, cols::TOTAL_SAMPLES)?
        .into_iter()
        .zip(counts(&both, cols::UNCERTAIN)?)
        .map(|(certain, uncertain)| metrics::coverage(certain?, uncertain?))
        .collect();
    both.with_column(Column::new(cols::COVERAGE.into(), coverage))?;
    let mut columns: Vec<&str> = Vec::new();
    if per_predicate {
        columns.push("predicate_type");
    }
    columns.extend([
        cols::VARIANT,
        cols::CLASS,
        cols::PRECISION,
        cols::RECALL,
        cols::F1,
        cols::TP,
        cols::FP,
        cols::TN,
        cols::FN,
        cols::TOTAL_SAMPLES,
        cols::COVERAGE,
        cols::INVALID,
    ]);
    both.select(columns)
}

/// 0 for WITH, 1 for WITHOUT: the order of every table.
fn variant_order() -> Expr {
    when(col(cols::VARIANT).eq(lit(Variant::With.spec_name())))
        .then(lit(0))
        .otherwise(lit(1))
        .alias(cols::VARIANT_ORDER)
}

/// The confusion counts per `keys`, a row per class (the negative class mirrors the positive
/// one), with the uncertain and invalid answers; unsorted.
fn class_counts(frame: DataFrame, keys: &[Expr]) -> PolarsResult<LazyFrame> {
    let score = || col(cols::SCORE);
    let counted = frame.lazy().group_by(keys).agg([
        score()
            .eq(lit(2))
            .and(col(cols::TRUTH))
            .sum()
            .alias(cols::TP),
        score()
            .eq(lit(2))
            .and(col(cols::TRUTH).not())
            .sum()
            .alias(cols::FP),
        score()
            .eq(lit(0))
            .and(col(cols::TRUTH).not())
            .sum()
            .alias(cols::TN),
        score()
            .eq(lit(0))
            .and(col(cols::TRUTH))
            .sum()
            .alias(cols::FN),
        score().eq(lit(1)).sum().alias(cols::UNCERTAIN),
        score().is_null().sum().alias(cols::INVALID),
    ]);
    let class = |class: Class| {
        let [tp, fp, tn, fn_] = match class {
            Class::Positive => ["tp", "fp", "tn", "fn"],
            Class::Negative => ["tn", "fn", "tp", "fp"],
        };
        let mut columns = keys.to_vec();
        columns.extend([
            lit(class.name()).alias(cols::CLASS),
            col(tp).cast(DataType::UInt64).alias(cols::TP),
            col(fp).cast(DataType::UInt64).alias(cols::FP),
            col(tn).cast(DataType::UInt64).alias(cols::TN),
            col(fn_).cast(DataType::UInt64).alias(cols::FN),
            (col(tp) + col(fp) + col(tn) + col(fn_))
                .cast(DataType::UInt64)
                .alias(cols::TOTAL_SAMPLES),
            col(cols::UNCERTAIN).cast(DataType::UInt64),
            col(cols::INVALID).cast(DataType::UInt64),
        ]);
        counted.clone().select(columns)
    };
    concat(Class::ALL.map(class), UnionArgs::default())
}

/// The probabilities log-loss clips to, so that a confident wrong answer costs a lot but not
/// infinity.
pub const LOG_LOSS_CLIP: f64 = 1e-6;

/// The readings of an "uncertain" answer (score 1) `threshold_summary` compares.
pub const THRESHOLD_POLICIES: [&str; 4] = [
    "uncertain_filtered",
    "uncertain_as_true",
    "uncertain_as_false",
    "uncertain_as_half",
];

/// Per variant, each reading of score 1 (threshold tuning): filtered out (the certain answers
/// only, as `comparison_summary.csv`), counted as true, counted as false, all with the positive
/// class's precision, recall and F1 ([`ClassMetrics`]' of polars' counts); and as probability
/// 0.5 (2 → 1, 0 → 0), with the Brier score and the log-loss (probabilities clipped to
/// [`LOG_LOSS_CLIP`], 1 - it). Invalid answers are left out. WITHOUT has no 1s: its rows agree
/// but for the probabilistic one.
pub(crate) fn threshold_summary(rows: &[PredictionRow]) -> PolarsResult<DataFrame> {
    let valid = predictions_frame(rows)?
        .lazy()
        .filter(col(cols::SCORE).is_not_null());
    let score = || col(cols::SCORE);
    let all = concat(
        [
            hard_reading(
                &valid,
                THRESHOLD_POLICIES[0],
                score().neq(lit(1)),
                score().eq(lit(2)),
            ),
            hard_reading(
                &valid,
                THRESHOLD_POLICIES[1],
                lit(true),
                score().gt_eq(lit(1)),
            ),
            hard_reading(&valid, THRESHOLD_POLICIES[2], lit(true), score().eq(lit(2))),
            half_reading(&valid),
        ],
        UnionArgs::default(),
    )?;
    let policy_order = THRESHOLD_POLICIES.iter().enumerate().fold(
        lit(THRESHOLD_POLICIES.len() as u32),
        |acc, (i, p)| {
            when(col(cols::POLICY).eq(lit(*p)))
                .then(lit(i as u32))
                .otherwise(acc)
        },
    );
    let all = all
        .with_columns([variant_order(), policy_order.alias(cols::POLICY_ORDER)])
        .sort(
            ["variant_order", "policy_order"],
            SortMultipleOptions::default(),
        )
        .collect()?;
    // The probabilistic reading has no counts: its precision, recall and F1 stay null.
    with_class_metrics(all)?.select([
        cols::VARIANT,
        cols::POLICY,
        cols::PREDICTIONS,
        cols::PRECISION,
        cols::RECALL,
        cols::F1,
        cols::BRIER,
        cols::LOG_LOSS,
    ])
}

/// A hard reading of score 1, per variant: the predictions `keep`s, `predicted` true or not,
/// as the positive class's counts.
fn hard_reading(valid: &LazyFrame, policy: &str, keep: Expr, predicted: Expr) -> LazyFrame {
    let truth = || col(cols::TRUTH);
    valid
        .clone()
        .filter(keep)
        .group_by([col(cols::VARIANT)])
        .agg([
            len().cast(DataType::UInt64).alias(cols::PREDICTIONS),
            predicted.clone().and(truth()).sum().alias(cols::TP),
            predicted.clone().and(truth().not()).sum().alias(cols::FP),
            predicted.not().and(truth()).sum().alias(cols::FN),
        ])
        .select([
            col(cols::VARIANT),
            lit(policy).alias(cols::POLICY),
            col(cols::PREDICTIONS),
            col(cols::TP).cast(DataType::UInt64),
            col(cols::FP).cast(DataType::UInt64),
            col(cols::FN).cast(DataType::UInt64),
            lit(NULL).cast(DataType::Float64).alias(cols::BRIER),
            lit(NULL).cast(DataType::Float64).alias(cols::LOG_LOSS),
        ])
}

/// Score 1 as probability 0.5 (2 → 1, 0 → 0), per variant: the Brier score and the log-loss.
fn half_reading(valid: &LazyFrame) -> LazyFrame {
    let (truth, score) = (|| col(cols::TRUTH), || col(cols::SCORE));
    // Scores are 0, 1 or 2: the loss of each, clipped, for a true and a false predicate.
    let loss = |p: f64| -p.clamp(LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP).ln();
    let loss_of = |score_of_truth: [f64; 3]| {
        when(score().eq(lit(0)))
            .then(lit(score_of_truth[0]))
            .when(score().eq(lit(1)))
            .then(lit(score_of_truth[1]))
            .otherwise(lit(score_of_truth[2]))
    };
    let log_loss = when(truth())
        .then(loss_of([loss(0.0), loss(0.5), loss(1.0)]))
        .otherwise(loss_of([loss(1.0), loss(0.5), loss(0.0)]));
    let t = truth().cast(DataType::Float64);
    valid
        .clone()
        .group_by([col(cols::VARIANT)])
        .agg([
            len().cast(DataType::UInt64).alias(cols::PREDICTIONS),
            ((score().cast(DataType::Float64) / lit(2.0) - t.clone())
                * (score().cast(DataType::Float64) / lit(2.0) - t))
                .mean()
                .alias(cols::BRIER),
            log_loss.mean().alias(cols::LOG_LOSS),
        ])
        .select([
            col(cols::VARIANT),
            lit(THRESHOLD_POLICIES[3]).alias(cols::POLICY),
            col(cols::PREDICTIONS),
            lit(NULL).cast(DataType::UInt64).alias(cols::TP),
            lit(NULL).cast(DataType::UInt64).alias(cols::FP),
            lit(NULL).cast(DataType::UInt64).alias(cols::FN),
            col(cols::BRIER),
            col(cols::LOG_LOSS),
        ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relevance::metrics::{Scored, VariantMetrics};

    fn row(variant: &str, kind: &str, score: Option<u8>, truth: bool) -> PredictionRow {
        PredictionRow {
            run_id: 1,
            model_ref: "m".into(),
            image: "i".into(),
            image_sha256: "s".into(),
            predicate: format!("{kind}(red:block)"),
            predicate_kind: kind.into(),
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

    #[test]
    fn summaries_count_with_polars_and_measure_as_the_metrics_module() {
        let data = [
            ("WITH", "clear", Some(2), true),
            ("WITH", "clear", Some(2), false),
            ("WITH", "on", Some(0), false),
            ("WITH", "on", Some(1), true),
            ("WITHOUT", "clear", Some(2), true),
            ("WITHOUT", "on", Some(0), true),
            ("WITHOUT", "on", None, true),
        ];
        let rows: Vec<PredictionRow> = data.iter().map(|&(v, k, s, t)| row(v, k, s, t)).collect();
        let summary = variant_summary(&rows, false).unwrap();
        assert_eq!(summary.height(), 4);
        let variant = summary.column("variant").unwrap().str().unwrap().clone();
        let class = summary.column("class").unwrap().str().unwrap().clone();
        assert_eq!(
            (variant.get(0), class.get(0)),
            (Some("with_uncertain"), Some("positive"))
        );
        assert_eq!(
            (variant.get(3), class.get(3)),
            (Some("without_uncertain"), Some("negative"))
        );
        let with = VariantMetrics::measure(
            data.iter()
                .filter(|d| d.0 == "WITH")
                .filter_map(|d| d.2.map(|score| Scored { score, truth: d.3 })),
        );
        let f = |name: &str, i: usize| summary.column(name).unwrap().f64().unwrap().get(i);
        // Bit for bit the metrics module's numbers: it computes them.
        for (row, class) in [(0, with.positive), (1, with.negative)] {
            assert_eq!(
                (f("precision", row), f("recall", row), f("f1", row)),
                (class.precision, class.recall, class.f1)
            );
        }
        assert_eq!(f("coverage", 0), with.coverage);
        assert_eq!(
            summary.column("invalid").unwrap().u64().unwrap().get(2),
            Some(1)
        );
        // WITHOUT positive: TP 1, FN 1, no FP: precision 1, recall 0.5.
        assert_eq!((f("precision", 2), f("recall", 2)), (Some(1.0), Some(0.5)));
        // WITHOUT negative: no TN predicted as 0 correctly: precision 0/1 = 0, recall 0/0 = null.
        assert_eq!(
            (f("precision", 3), f("recall", 3), f("f1", 3)),
            (Some(0.0), None, None)
        );
        let per = variant_summary(&rows, true).unwrap();
        assert_eq!(per.get_column_names()[0].as_str(), "predicate_type");
        assert_eq!(per.height(), 8);
    }

    #[test]
    fn thresholds_read_the_uncertain_answers_four_ways() {
        let w = |score, truth| row("WITH", "clear", Some(score), truth);
        let rows = vec![
            w(2, true),
            w(1, true),
            w(1, false),
            w(0, false),
            w(0, true),
            row("WITH", "clear", None, true),
            row("WITHOUT", "clear", Some(2), true),
            row("WITHOUT", "clear", Some(0), false),
        ];
        let df = threshold_summary(&rows).unwrap();
        let get = |name: &str, i: usize| df.column(name).unwrap().get(i).unwrap();
        let f = |name: &str, i: usize| match get(name, i) {
            AnyValue::Float64(v) => Some(v),
            _ => None,
        };
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert_eq!(df.height(), 8);
        assert_eq!(get("policy", 0), AnyValue::String("uncertain_filtered"));
        // Filtered: (2,T) (0,F) (0,T): tp 1, fp 0, fn 1.
        assert_eq!(get("predictions", 0), AnyValue::UInt64(3));
        assert!(close(f("precision", 0), 1.0) && close(f("recall", 0), 0.5));
        assert!(close(f("f1", 0), 2.0 / 3.0));
        // 1 as true: tp 2, fp 1, fn 1.
        assert!(close(f("precision", 1), 2.0 / 3.0) && close(f("recall", 1), 2.0 / 3.0));
        // 1 as false: tp 1, fp 0, fn 2.
        assert!(close(f("recall", 2), 1.0 / 3.0) && close(f("f1", 2), 0.5));
        // 1 as 0.5: squared errors 0, .25, .25, 0, 1; losses ~0, ln 2, ln 2, ~0, -ln 1e-6.
        assert_eq!(get("policy", 3), AnyValue::String("uncertain_as_half"));
        assert!(close(f("brier", 3), 0.3));
        let expected = (2.0 * -(1.0f64 - 1e-6).ln() + 2.0 * 2f64.ln() - 1e-6f64.ln()) / 5.0;
        assert!(close(f("log_loss", 3), expected), "{:?}", f("log_loss", 3));
        assert_eq!(f("precision", 3), None);
        // WITHOUT: no 1s, every reading alike; a perfect, certain variant loses ~nothing.
        assert_eq!(get("variant", 4), AnyValue::String("without_uncertain"));
        assert!(close(f("f1", 4), 1.0) && close(f("f1", 5), 1.0) && close(f("f1", 6), 1.0));
        assert!(close(f("brier", 7), 0.0));
        assert!(f("log_loss", 7).is_some_and(|l| l < 1e-5));
    }
}
