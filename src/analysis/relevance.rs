//! Relevance summaries with polars from stored predictions: per variant (and predicate type),
//! both classes, in the columns of `comparison_summary.csv` plus coverage and invalid counts.

use polars::prelude::*;

use crate::relevance::parse::Variant;
use crate::store::PredictionRow;

/// Predictions as a frame: variant, predicate type, score (null when invalid), truth.
pub fn predictions_frame(rows: &[PredictionRow]) -> PolarsResult<DataFrame> {
    DataFrame::new_infer_height(vec![
        Column::new(
            "variant".into(),
            rows.iter()
                .map(|r| Variant::from_stored(&r.variant).spec_name())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "predicate_type".into(),
            rows.iter()
                .map(|r| r.predicate_kind.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "score".into(),
            rows.iter()
                .map(|r| r.score.map(u32::from))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "truth".into(),
            rows.iter().map(|r| r.truth).collect::<Vec<_>>(),
        ),
    ])
}

fn ratio(num: Expr, den: Expr) -> Expr {
    when(den.clone().gt(lit(0)))
        .then(num.cast(DataType::Float64) / den.cast(DataType::Float64))
        .otherwise(lit(NULL))
}

fn f1(p: Expr, r: Expr) -> Expr {
    when(p.clone().is_not_null().and(r.clone().is_not_null()))
        .then(
            when((p.clone() + r.clone()).gt(lit(0.0)))
                .then(lit(2.0) * p.clone() * r.clone() / (p + r))
                .otherwise(lit(0.0)),
        )
        .otherwise(lit(NULL))
}

/// Per variant (and per predicate type when `per_predicate`): a row per class with precision,
/// recall, F1, TP, FP, TN, FN, total samples, coverage and invalid answers. The negative
/// class mirrors the positive one.
pub fn variant_summary(rows: &[PredictionRow], per_predicate: bool) -> PolarsResult<DataFrame> {
    let frame = predictions_frame(rows)?;
    let mut keys = vec![col("variant")];
    if per_predicate {
        keys.insert(0, col("predicate_type"));
    }
    let score = || col("score");
    let counts = frame.lazy().group_by(keys.clone()).agg([
        score().eq(lit(2)).and(col("truth")).sum().alias("tp"),
        score().eq(lit(2)).and(col("truth").not()).sum().alias("fp"),
        score().eq(lit(0)).and(col("truth").not()).sum().alias("tn"),
        score().eq(lit(0)).and(col("truth")).sum().alias("fn"),
        score().eq(lit(1)).sum().alias("uncertain"),
        score().is_null().sum().alias("invalid"),
    ]);
    let class = |name: &str, tp: &str, fp: &str, tn: &str, fn_: &str| {
        let mut columns = keys.clone();
        columns.extend([
            lit(name).alias("class"),
            ratio(col(tp), col(tp) + col(fp)).alias("precision"),
            ratio(col(tp), col(tp) + col(fn_)).alias("recall"),
            col(tp).cast(DataType::UInt64).alias("tp"),
            col(fp).cast(DataType::UInt64).alias("fp"),
            col(tn).cast(DataType::UInt64).alias("tn"),
            col(fn_).cast(DataType::UInt64).alias("fn"),
            (col(tp) + col(fp) + col(tn) + col(fn_))
                .cast(DataType::UInt64)
                .alias("total_samples"),
            ratio(
                col(tp) + col(fp) + col(tn) + col(fn_),
                col(tp) + col(fp) + col(tn) + col(fn_) + col("uncertain"),
            )
            .alias("coverage"),
            col("invalid").cast(DataType::UInt64),
        ]);
        counts.clone().select(columns)
    };
    let both = concat(
        [
            class("positive", "tp", "fp", "tn", "fn"),
            class("negative", "tn", "fn", "tp", "fp"),
        ],
        UnionArgs::default(),
    )?;
    // WITH before WITHOUT, positive before negative.
    let mut order: Vec<PlSmallStr> = Vec::new();
    if per_predicate {
        order.push("predicate_type".into());
    }
    order.extend(["variant_order".into(), "class_order".into()]);
    let both = both.with_columns([
        when(col("variant").eq(lit(Variant::With.spec_name())))
            .then(lit(0))
            .otherwise(lit(1))
            .alias("variant_order"),
        when(col("class").eq(lit("positive")))
            .then(lit(0))
            .otherwise(lit(1))
            .alias("class_order"),
    ]);
    let mut columns = keys;
    columns.extend([
        col("class"),
        col("precision"),
        col("recall"),
        f1(col("precision"), col("recall")).alias("f1"),
        col("tp"),
        col("fp"),
        col("tn"),
        col("fn"),
        col("total_samples"),
        col("coverage"),
        col("invalid"),
    ]);
    both.sort(order, SortMultipleOptions::default())
        .select(columns)
        .collect()
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
            variant: variant.into(),
            trial: 0,
            score,
            invalid_reason: None,
            truth,
            call_id: None,
            cache_hit: false,
        }
    }

    #[test]
    fn polars_matches_the_metrics_module() {
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
        assert_eq!(f("precision", 0), with.positive.precision);
        assert_eq!(f("recall", 1), with.negative.recall);
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
}
