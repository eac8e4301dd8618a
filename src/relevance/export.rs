//! The specification's CSV files of a comparison, computed from stored predictions:
//! `comparison_summary.csv` with exactly `variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples`,
//! and beyond it `comparison_by_predicate.csv`, `comparison_statistics.csv` and
//! `comparison_thresholds.csv`. A run writes them when it ends (`console`); `track export csv
//! --kind relevance` writes them of any runs, with `relevance_predictions.csv` (each prediction
//! with the model's whole answer).

use std::path::Path;

use anyhow::Context as _;

use super::columns as cols;
use super::metrics::{Class, ClassMetrics, VariantMetrics};
use super::stats::measure_rows;
use crate::kinds::{ExportOptions, ExportRuns};
use crate::rating::{ANSWER, HUMAN_COLUMNS, human_fields};
use crate::store::{PredictionRow, Store, Variant};

/// Writes the relevance CSV files of `runs` into `options.out` (`--out`, default
/// `results/relevance/`: the registry entry's), computed from their stored predictions; the
/// files written on stdout.
pub(crate) fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let rows = store.predictions(runs.ids)?;
    let out = &options.out;
    let (with, without, _) = measure_rows(&rows);
    let mut paths = vec![
        write_summary_csv(out, &with, &without)
            .with_context(|| format!("writing into {}", out.display()))?,
    ];
    paths.extend(
        write_statistics_csv(out, &rows)
            .with_context(|| format!("writing into {}", out.display()))?,
    );
    let predictions = out.join("relevance_predictions.csv");
    write_predictions_csv(store, runs, &rows, &predictions)
        .with_context(|| format!("writing {}", predictions.display()))?;
    paths.push(predictions);
    for path in &paths {
        crate::output::say(path.display());
    }
    Ok(())
}

/// `relevance_predictions.csv` at `path`: each prediction of `rows` with its human rating and
/// the model's whole answer, read a row at a time.
fn write_predictions_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    rows: &[PredictionRow],
    path: &Path,
) -> anyhow::Result<()> {
    let ratings = store.current_ratings_by_key(
        runs.ids,
        "relevance_predictions",
        &["run_id", "image", "predicate", "variant", "trial"],
    )?;
    let mut writer = csv::Writer::from_path(path)?;
    writer.write_record([
        cols::RUN_ID,
        cols::MODEL,
        cols::IMAGE,
        cols::IMAGE_SHA256,
        cols::PREDICATE,
        cols::PREDICATE_TYPE,
        cols::VARIANT,
        cols::TRIAL,
        cols::SCORE,
        cols::INVALID_REASON,
        cols::TRUTH,
        cols::CALL_ID,
        cols::CACHE_HIT,
        cols::PROMPT_SHA256,
        cols::RUN_STATUS,
        HUMAN_COLUMNS[0],
        HUMAN_COLUMNS[1],
        HUMAN_COLUMNS[2],
        HUMAN_COLUMNS[3],
        ANSWER,
    ])?;
    for r in rows {
        let key = [
            r.run_id.to_string(),
            r.image.clone(),
            r.predicate.clone(),
            r.variant.name().to_owned(),
            r.trial.to_string(),
        ];
        let [verdict, score, comment, rater] = human_fields(ratings.get(&key[..]));
        writer.write_record([
            r.run_id.to_string(),
            r.model_ref.clone(),
            r.image.clone(),
            r.image_sha256.clone(),
            r.predicate.clone(),
            r.predicate_kind.clone(),
            r.variant.spec_name().to_owned(),
            r.trial.to_string(),
            r.score.map(|s| s.to_string()).unwrap_or_default(),
            r.invalid_reason.clone().unwrap_or_default(),
            u8::from(r.truth).to_string(),
            r.call_id.map(|c| c.to_string()).unwrap_or_default(),
            u8::from(r.cache_hit).to_string(),
            r.prompt_sha256.clone().unwrap_or_default(),
            runs.run_status
                .get(&r.run_id)
                .copied()
                .unwrap_or("")
                .to_owned(),
            verdict,
            score,
            comment,
            rater,
            // Read a row at a time: a run's answers are never all held.
            match r.call_id {
                Some(call) => store.answer_text(call)?.unwrap_or_default(),
                None => String::new(),
            },
        ])?;
    }
    writer.flush()?;
    Ok(())
}

/// A CSV cell of a rate: four decimals, empty when undefined.
/// A CSV number at full precision: the shortest text that reads back to the same value (the
/// console block keeps 4 decimals).
fn cell(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| {
        // `1.0`, not `1`: the column reads as numbers with decimals, as polars writes them.
        let v = crate::output::tidy_float(v);
        if v.fract() == 0.0 && v.is_finite() {
            format!("{v:.1}")
        } else {
            format!("{v}")
        }
    })
}

/// The CSV fields of one class: precision, recall, f1, tp, fp, tn, fn, total_samples.
fn class_fields(c: &ClassMetrics) -> [String; 8] {
    [
        cell(c.precision),
        cell(c.recall),
        cell(c.f1),
        c.tp.to_string(),
        c.fp.to_string(),
        c.tn.to_string(),
        c.fn_.to_string(),
        c.total_samples.to_string(),
    ]
}

/// Writes `comparison_summary.csv` into `dir`.
pub(crate) fn write_summary_csv(
    dir: &Path,
    with: &VariantMetrics,
    without: &VariantMetrics,
) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("comparison_summary.csv");
    let mut writer = csv::Writer::from_path(&path).map_err(std::io::Error::other)?;
    writer
        .write_record([
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
        ])
        .map_err(std::io::Error::other)?;
    for (variant, m) in [(Variant::With, with), (Variant::Without, without)] {
        for class in Class::ALL {
            let mut record = vec![variant.spec_name().to_owned(), class.name().to_owned()];
            record.extend(class_fields(class.of(m)));
            writer.write_record(record).map_err(std::io::Error::other)?;
        }
    }
    writer.flush()?;
    Ok(path)
}

/// Writes `comparison_by_predicate.csv` (metrics per predicate type),
/// `comparison_statistics.csv` (deltas with intervals, McNemar, spread across trials) and
/// `comparison_thresholds.csv` (score 1 read four ways).
pub(crate) fn write_statistics_csv(
    dir: &Path,
    rows: &[crate::store::PredictionRow],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let by_predicate = dir.join("comparison_by_predicate.csv");
    write_by_predicate(&by_predicate, rows)?;
    let statistics = dir.join("comparison_statistics.csv");
    write_statistics(&statistics, rows)?;
    let thresholds = dir.join("comparison_thresholds.csv");
    let frame = super::summary::threshold_summary(rows).map_err(std::io::Error::other)?;
    crate::output::write_csv_file(&frame, &thresholds)?;
    Ok(vec![by_predicate, statistics, thresholds])
}

/// `comparison_by_predicate.csv`: both variants' metrics per predicate type.
fn write_by_predicate(path: &Path, rows: &[crate::store::PredictionRow]) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(path).map_err(std::io::Error::other)?;
    w.write_record([
        cols::PREDICATE_TYPE,
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
    ])
    .map_err(std::io::Error::other)?;
    for (kind, (with, without)) in super::stats::by_kind(rows) {
        for (variant, m) in [(Variant::With, &with), (Variant::Without, &without)] {
            for class in Class::ALL {
                let mut record = vec![
                    kind.clone(),
                    variant.spec_name().to_owned(),
                    class.name().to_owned(),
                ];
                record.extend(class_fields(class.of(m)));
                record.push(cell(m.coverage));
                w.write_record(record).map_err(std::io::Error::other)?;
            }
        }
    }
    w.flush()
}

/// `comparison_statistics.csv`: the deltas with their bootstrap intervals, McNemar's test and
/// the spread across trials.
fn write_statistics(path: &Path, rows: &[crate::store::PredictionRow]) -> std::io::Result<()> {
    use super::stats::{bootstrap_deltas, mcnemar, trial_spread};
    let mut w = csv::Writer::from_path(path).map_err(std::io::Error::other)?;
    let mut record = |fields: [&str; 8]| w.write_record(fields).map_err(std::io::Error::other);
    record([
        "statistic",
        "class",
        "metric",
        "value",
        "low",
        "high",
        "n",
        "note",
    ])?;
    for d in bootstrap_deltas(rows) {
        let (low, high, n, note) = match d.interval {
            Some(i) => (
                Some(i.low),
                Some(i.high),
                i.replicates.to_string(),
                format!("{} undefined resamples dropped", i.dropped),
            ),
            None => (None, None, "0".to_owned(), "undefined".to_owned()),
        };
        let (value, low, high) = (cell(d.delta), cell(low), cell(high));
        record([
            "delta_with_minus_without",
            d.class.name(),
            d.metric.name(),
            &value,
            &low,
            &high,
            &n,
            &note,
        ])?;
    }
    let m = mcnemar(rows);
    let (n, note) = ((m.b + m.c).to_string(), format!("b={} c={}", m.b, m.c));
    for (metric, value) in [
        ("chi2", m.chi2),
        ("p_chi2", m.p_chi2),
        ("chi2_corrected", m.chi2_corrected),
        ("p_corrected", m.p_corrected),
        ("p_exact", Some(m.p_exact)),
        ("p_mid", Some(m.p_mid)),
    ] {
        record(["mcnemar", "", metric, &cell(value), "", "", &n, &note])?;
    }
    for t in trial_spread(rows) {
        let metric = format!("{}_{}", t.variant.spec_name(), t.metric);
        let spread =
            t.sd.map_or_else(|| "one trial".to_owned(), |sd| format!("sd {sd:.4}"));
        let (mean, trials) = (cell(t.mean), t.trials.to_string());
        record([
            "trial_mean",
            Class::Positive.name(),
            &metric,
            &mean,
            "",
            "",
            &trials,
            &spread,
        ])?;
    }
    w.flush()
}
