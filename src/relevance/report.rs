//! The specification's outputs of a comparison: the console block (WITH, WITHOUT, Delta) and
//! `comparison_summary.csv` with exactly `variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples`.

use std::fmt::Write as _;
use std::path::Path;

use super::metrics::{ClassMetrics, VariantMetrics, delta};
use super::parse::Variant;

const RULE: &str = "=============================================================";

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.4}"))
}

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:+.4}"))
}

fn class_block(out: &mut String, title: &str, c: &ClassMetrics) {
    let _ = writeln!(out, "{title}:");
    let _ = writeln!(
        out,
        "  Precision: {}, Recall: {}, F1: {}",
        number(c.precision),
        number(c.recall),
        number(c.f1)
    );
    let _ = writeln!(
        out,
        "  TP: {}, FP: {}, TN: {}, FN: {}",
        c.tp, c.fp, c.tn, c.fn_
    );
}

/// The console block in the specification's layout, followed by coverage and calibration.
pub fn console_block(with: &VariantMetrics, without: &VariantMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{RULE}\nMetrics Comparison: Overall Results\n{RULE}\n");
    for (title, m) in [
        ("--- WITH Uncertain Option (allows '1') ---", with),
        (
            "--- WITHOUT Uncertain Option (only '0' or '2') ---",
            without,
        ),
    ] {
        let _ = writeln!(out, "{title}");
        class_block(&mut out, "Positive Class", &m.positive);
        out.push('\n');
        class_block(&mut out, "Negative Class", &m.negative);
        out.push('\n');
    }
    let _ = writeln!(out, "--- Delta (WITH - WITHOUT) ---");
    for (title, a, b) in [
        ("Positive Class", &with.positive, &without.positive),
        ("Negative Class", &with.negative, &without.negative),
    ] {
        let _ = writeln!(out, "{title}:");
        let _ = writeln!(
            out,
            "  Precision: {}",
            signed(delta(a.precision, b.precision))
        );
        let _ = writeln!(out, "  Recall:    {}", signed(delta(a.recall, b.recall)));
        let _ = writeln!(out, "  F1:        {}", signed(delta(a.f1, b.f1)));
        if title == "Positive Class" {
            out.push('\n');
        }
    }
    let _ = writeln!(out, "{RULE}");
    let _ = writeln!(
        out,
        "Coverage (certain / answered): WITH {} of {} = {}, WITHOUT {} of {} = {}",
        with.positive.total_samples,
        with.answered,
        number(with.coverage),
        without.positive.total_samples,
        without.answered,
        number(without.coverage)
    );
    let _ = writeln!(
        out,
        "Recall counting abstentions as misses: positive WITH {} vs WITHOUT {}; negative WITH {} vs WITHOUT {}",
        number(with.positive_recall_with_abstentions),
        number(without.positive_recall_with_abstentions),
        number(with.negative_recall_with_abstentions),
        number(without.negative_recall_with_abstentions)
    );
    let _ = writeln!(
        out,
        "Calibration: {} of WITH's answers were 1 (uncertain); true share among them: {}",
        with.uncertain,
        number(with.uncertain_true_share)
    );
    out
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
pub fn write_summary_csv(
    dir: &Path,
    with: &VariantMetrics,
    without: &VariantMetrics,
) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("comparison_summary.csv");
    let mut writer = csv::Writer::from_path(&path).map_err(std::io::Error::other)?;
    writer
        .write_record([
            "variant",
            "class",
            "precision",
            "recall",
            "f1",
            "tp",
            "fp",
            "tn",
            "fn",
            "total_samples",
        ])
        .map_err(std::io::Error::other)?;
    for (variant, m) in [("with_uncertain", with), ("without_uncertain", without)] {
        for (class, c) in [("positive", &m.positive), ("negative", &m.negative)] {
            let mut record = vec![variant.to_owned(), class.to_owned()];
            record.extend(class_fields(c));
            writer.write_record(record).map_err(std::io::Error::other)?;
        }
    }
    writer.flush()?;
    Ok(path)
}

/// The statistics lines printed after the console block.
pub fn statistics_block(rows: &[crate::store::PredictionRow]) -> String {
    use super::stats::{bootstrap_deltas, mcnemar};
    use crate::analysis::stats::BOOTSTRAP;
    let mut out = String::new();
    let m = mcnemar(rows);
    let p = m
        .p_value()
        .map_or_else(|| "n/a".to_owned(), |p| format!("{p:.4}"));
    let which = if m.b + m.c < 25 {
        "exact binomial"
    } else {
        "chi-square"
    };
    let _ = writeln!(
        out,
        "McNemar on items both variants answered with certainty: WITH-only right {}, WITHOUT-only right {}, p = {p} ({which})",
        m.b, m.c
    );
    let _ = writeln!(
        out,
        "Paired bootstrap 95 % intervals of the deltas ({} resamples of whole images):",
        BOOTSTRAP.resamples
    );
    for d in bootstrap_deltas(rows) {
        let interval = d.interval.map_or_else(
            || "undefined".to_owned(),
            |i| {
                let dropped = if i.dropped > 0 {
                    format!(", {} resamples undefined", i.dropped)
                } else {
                    String::new()
                };
                format!("[{:+.4}, {:+.4}]{dropped}", i.low, i.high)
            },
        );
        let _ = writeln!(
            out,
            "  {} {}: {} {interval}",
            d.class,
            d.metric,
            signed(d.delta)
        );
    }
    out
}

/// Writes `comparison_by_predicate.csv` (metrics per predicate type),
/// `comparison_statistics.csv` (deltas with intervals, McNemar, spread across trials) and
/// `comparison_thresholds.csv` (score 1 read four ways).
pub fn write_statistics_csv(
    dir: &Path,
    rows: &[crate::store::PredictionRow],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let by_predicate = dir.join("comparison_by_predicate.csv");
    write_by_predicate(&by_predicate, rows)?;
    let statistics = dir.join("comparison_statistics.csv");
    write_statistics(&statistics, rows)?;
    let thresholds = dir.join("comparison_thresholds.csv");
    let frame =
        crate::analysis::relevance::threshold_summary(rows).map_err(std::io::Error::other)?;
    crate::output::write_csv_file(&frame, &thresholds)?;
    Ok(vec![by_predicate, statistics, thresholds])
}

/// The console's threshold block: how each reading of score 1 scores, per variant.
pub fn thresholds_block(rows: &[crate::store::PredictionRow]) -> String {
    match crate::analysis::relevance::threshold_summary(rows) {
        Ok(frame) => format!(
            "\n--- Score 1 read four ways (threshold tuning; positive class) ---\n{}\n",
            crate::output::render(&frame, crate::output::Columns::Compact)
        ),
        Err(e) => format!("\nthreshold tuning: cannot compute: {e}\n"),
    }
}

/// `comparison_by_predicate.csv`: both variants' metrics per predicate type.
fn write_by_predicate(path: &Path, rows: &[crate::store::PredictionRow]) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(path).map_err(std::io::Error::other)?;
    w.write_record([
        "predicate_type",
        "variant",
        "class",
        "precision",
        "recall",
        "f1",
        "tp",
        "fp",
        "tn",
        "fn",
        "total_samples",
        "coverage",
    ])
    .map_err(std::io::Error::other)?;
    for (kind, (with, without)) in super::stats::by_kind(rows) {
        for (variant, m) in [("with_uncertain", &with), ("without_uncertain", &without)] {
            for (class, c) in [("positive", &m.positive), ("negative", &m.negative)] {
                let mut record = vec![kind.clone(), variant.to_owned(), class.to_owned()];
                record.extend(class_fields(c));
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
            d.class,
            d.metric,
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
        let metric = format!(
            "{}_{}",
            Variant::from_stored(t.variant).spec_name(),
            t.metric
        );
        let spread =
            t.sd.map_or_else(|| "one trial".to_owned(), |sd| format!("sd {sd:.4}"));
        let (mean, trials) = (cell(t.mean), t.trials.to_string());
        record([
            "trial_mean",
            "positive",
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

/// The report of a comparison run, from its stored predictions: the console block and the
/// statistics (stdout), the CSV files written into `dir`, and the invalid answers (stderr).
pub fn print_run(
    store: &crate::store::Store,
    summary: &crate::experiment::RunSummary,
    dir: &Path,
    options: &crate::experiment::ReportOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), super::RelevanceError> {
    let rows = store.predictions(&[summary.run_id])?;
    let (with, without, invalid) = super::run::measure_rows(&rows);
    write!(out, "{}", console_block(&with, &without))?;
    write!(out, "{}", statistics_block(&rows))?;
    write!(out, "{}", thresholds_block(&rows))?;
    let write_error = |source| super::RelevanceError::Write {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = vec![write_summary_csv(dir, &with, &without).map_err(write_error)?];
    paths.extend(write_statistics_csv(dir, &rows).map_err(write_error)?);
    for path in &paths {
        writeln!(out, "{}", path.display())?;
    }
    options.note(format!(
        "invalid predictions WITH {} / WITHOUT {}",
        invalid[0], invalid[1]
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relevance::metrics::Scored;

    #[test]
    fn console_block_and_csv_follow_the_specification() {
        let with = VariantMetrics::measure(
            [(2, true), (0, false), (1, true)].map(|(score, truth)| Scored { score, truth }),
        );
        let without = VariantMetrics::measure(
            [(2, true), (2, false), (0, false)].map(|(score, truth)| Scored { score, truth }),
        );
        let block = console_block(&with, &without);
        assert!(block.contains("--- WITH Uncertain Option (allows '1') ---\nPositive Class:\n  Precision: 1.0000, Recall: 1.0000, F1: 1.0000\n  TP: 1, FP: 0, TN: 1, FN: 0"), "{block}");
        assert!(
            block.contains(
                "--- Delta (WITH - WITHOUT) ---\nPositive Class:\n  Precision: +0.5000\n"
            ),
            "{block}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = write_summary_csv(dir.path(), &with, &without).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples"
        );
        assert_eq!(lines[1], "with_uncertain,positive,1.0,1.0,1.0,1,0,1,0,2");
        assert_eq!(
            lines[3],
            "without_uncertain,positive,0.5,1.0,0.666666666666667,1,1,1,0,3"
        );
    }
}
