//! Benchmark frames and summaries: per evaluation, per model, per prompt.

use polars::prelude::*;

use crate::store::BenchColumns;

/// The three tables of a benchmark report.
#[derive(Debug, Clone)]
pub struct BenchFrames {
    pub results: DataFrame,
    pub by_model: DataFrame,
    pub by_prompt: DataFrame,
}

impl BenchFrames {
    /// Builds all three from loaded columns (loaded with detail).
    pub fn from_columns(cols: BenchColumns) -> PolarsResult<Self> {
        let results = results_frame(cols)?;
        Ok(Self {
            by_model: model_summary(&results)?,
            by_prompt: prompt_summary(&results)?,
            results,
        })
    }
}

/// One row per evaluation. Detail columns are present only when they were loaded.
pub fn results_frame(cols: BenchColumns) -> PolarsResult<DataFrame> {
    let with_detail = cols.method.len() == cols.len();
    let status: Vec<&str> = cols
        .passed
        .iter()
        .map(|p| match p {
            Some(true) => "passed",
            Some(false) => "failed",
            None => "error",
        })
        .collect();
    let mut columns = vec![
        Column::new("run_id".into(), cols.run_id),
        Column::new("model".into(), cols.model_ref),
        Column::new("prompt".into(), cols.prompt_name),
        Column::new("repeat".into(), cols.repeat_index),
        Column::new("status".into(), status),
        Column::new("passed".into(), cols.passed),
        Column::new("latency_ms".into(), cols.latency_ms),
        Column::new("input_tokens".into(), cols.input_tokens),
        Column::new("output_tokens".into(), cols.output_tokens),
        Column::new("cost_usd".into(), cols.cost_usd),
        Column::new("paid_usd".into(), cols.paid_usd),
        Column::new("energy_wh".into(), cols.energy_wh),
        Column::new("energy_wh_min".into(), cols.energy_wh_min),
        Column::new("energy_wh_max".into(), cols.energy_wh_max),
        Column::new("cache_hit".into(), cols.cache_hit),
    ];
    if with_detail {
        columns.extend([
            Column::new("provider".into(), cols.provider),
            Column::new("model_id".into(), cols.model_id),
            Column::new("method".into(), cols.method),
            Column::new("tokens_estimated".into(), cols.tokens_estimated),
            Column::new("energy_method".into(), cols.energy_method),
            Column::new("detail".into(), cols.detail),
        ]);
    }
    DataFrame::new_infer_height(columns)
}

/// Share of passed among passed and failed (errors excluded), in percent; null when none.
fn success_pct() -> Expr {
    col("passed").cast(DataType::Float64).mean() * lit(100.0)
}

/// Per model, in the order models were run: counts, % success, total time, cost, paid,
/// tokens and energy.
pub fn model_summary(results: &DataFrame) -> PolarsResult<DataFrame> {
    results
        .clone()
        .lazy()
        .group_by_stable([col("model")])
        .agg([
            len().cast(DataType::UInt64).alias("results"),
            col("passed").sum().cast(DataType::UInt64).alias("passed"),
            col("passed")
                .not()
                .sum()
                .cast(DataType::UInt64)
                .alias("failed"),
            col("passed")
                .is_null()
                .sum()
                .cast(DataType::UInt64)
                .alias("errors"),
            success_pct().alias("success_pct"),
            (col("latency_ms").sum() / lit(1000.0)).alias("total_time_s"),
            col("cost_usd").sum().alias("total_cost_usd"),
            col("paid_usd").sum().alias("paid_usd"),
            col("input_tokens").sum().alias("input_tokens"),
            col("output_tokens").sum().alias("output_tokens"),
            col("energy_wh").sum().alias("energy_wh"),
            col("energy_wh_min").sum().alias("energy_wh_min"),
            col("energy_wh_max").sum().alias("energy_wh_max"),
            col("cache_hit")
                .sum()
                .cast(DataType::UInt64)
                .alias("cache_hits"),
        ])
        .collect()
}

/// Per prompt, in file order: % success for each model and across all models, then averages
/// of input and output tokens, cost, time and energy.
pub fn prompt_summary(results: &DataFrame) -> PolarsResult<DataFrame> {
    let lazy = results.clone().lazy();
    let mut summary = lazy.clone().group_by_stable([col("prompt")]).agg([
        len().cast(DataType::UInt64).alias("results"),
        success_pct().alias("success_pct_all"),
        col("input_tokens")
            .cast(DataType::Float64)
            .mean()
            .alias("avg_input_tokens"),
        col("output_tokens")
            .cast(DataType::Float64)
            .mean()
            .alias("avg_output_tokens"),
        col("cost_usd").mean().alias("avg_cost_usd"),
        (col("latency_ms").mean() / lit(1000.0)).alias("avg_time_s"),
        col("energy_wh").mean().alias("avg_energy_wh"),
    ]);
    let per_pair = lazy
        .group_by_stable([col("model"), col("prompt")])
        .agg([success_pct().alias("pct")])
        .collect()?;
    let models = results
        .column("model")?
        .as_materialized_series()
        .unique_stable()?;
    for model in models.str()?.iter().flatten() {
        let column = format!("success_pct[{model}]");
        let for_model = per_pair
            .clone()
            .lazy()
            .filter(col("model").eq(lit(model)))
            .select([col("prompt"), col("pct").alias(column.as_str())]);
        let mut args = JoinArgs::new(JoinType::Left);
        args.maintain_order = MaintainOrderJoin::Left;
        summary = summary.join(for_model, [col("prompt")], [col("prompt")], args);
    }
    let mut summary = summary.collect()?;
    // Put the per-model columns right after the prompt, as the specification lists them.
    let names: Vec<String> = summary
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut order: Vec<String> = vec!["prompt".into()];
    order.extend(
        names
            .iter()
            .filter(|n| n.starts_with("success_pct["))
            .cloned(),
    );
    order.extend(
        names
            .iter()
            .filter(|n| *n != "prompt" && !n.starts_with("success_pct["))
            .cloned(),
    );
    summary = summary.select(order)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> BenchColumns {
        // Two models x two prompts; model b errors on p2.
        let mut c = BenchColumns::default();
        let rows = [
            ("a", "p1", Some(true), 1000.0, 10, 5, 0.01, 1.0, true),
            ("a", "p2", Some(false), 3000.0, 20, 15, 0.03, 3.0, false),
            ("b", "p1", Some(true), 2000.0, 10, 7, 0.02, 2.0, false),
            ("b", "p2", None, 0.0, 0, 0, 0.0, 0.0, false),
        ];
        for (i, (m, p, passed, ms, tin, tout, cost, wh, hit)) in rows.into_iter().enumerate() {
            c.run_id.push(1);
            c.model_index.push(u32::from(m == "b"));
            c.prompt_index.push(i as u32 % 2);
            c.repeat_index.push(0);
            c.model_ref.push(m.into());
            c.prompt_name.push(p.into());
            c.passed.push(passed);
            c.cache_hit.push(hit);
            let ok = passed.is_some();
            c.latency_ms.push(ok.then_some(ms));
            c.input_tokens.push(ok.then_some(tin));
            c.output_tokens.push(ok.then_some(tout));
            c.cost_usd.push(ok.then_some(cost));
            c.paid_usd.push(ok.then_some(if hit { 0.0 } else { cost }));
            c.energy_wh.push(ok.then_some(wh));
            c.energy_wh_min.push(ok.then_some(wh));
            c.energy_wh_max.push(ok.then_some(wh));
        }
        c
    }

    fn f64_at(df: &DataFrame, name: &str, row: usize) -> Option<f64> {
        df.column(name).unwrap().f64().unwrap().get(row)
    }

    #[test]
    fn per_model_totals() {
        let results = results_frame(columns()).unwrap();
        let m = model_summary(&results).unwrap();
        assert_eq!(m.height(), 2);
        assert_eq!(m.column("model").unwrap().str().unwrap().get(0), Some("a"));
        assert_eq!(f64_at(&m, "success_pct", 0), Some(50.0));
        assert_eq!(
            f64_at(&m, "success_pct", 1),
            Some(100.0),
            "errors are not failures"
        );
        assert_eq!(f64_at(&m, "total_time_s", 0), Some(4.0));
        assert!((f64_at(&m, "total_cost_usd", 0).unwrap() - 0.04).abs() < 1e-12);
        assert!((f64_at(&m, "paid_usd", 0).unwrap() - 0.03).abs() < 1e-12);
        assert_eq!(m.column("errors").unwrap().u64().unwrap().get(1), Some(1));
        assert_eq!(
            m.column("output_tokens").unwrap().u64().unwrap().get(0),
            Some(20)
        );
    }

    #[test]
    fn per_prompt_with_a_column_per_model() {
        let results = results_frame(columns()).unwrap();
        let p = prompt_summary(&results).unwrap();
        let names: Vec<String> = p.get_column_names().iter().map(|n| n.to_string()).collect();
        assert_eq!(
            &names[..4],
            ["prompt", "success_pct[a]", "success_pct[b]", "results"]
        );
        assert_eq!(f64_at(&p, "success_pct[a]", 0), Some(100.0));
        assert_eq!(
            f64_at(&p, "success_pct[b]", 1),
            None,
            "only an error: no rate"
        );
        assert_eq!(f64_at(&p, "success_pct_all", 0), Some(100.0));
        assert_eq!(f64_at(&p, "success_pct_all", 1), Some(0.0));
        assert_eq!(f64_at(&p, "avg_output_tokens", 0), Some(6.0));
        assert_eq!(f64_at(&p, "avg_time_s", 0), Some(1.5));
    }
}
