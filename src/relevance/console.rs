//! What a comparison run prints on the console when it ends, from its stored predictions: the
//! specification's console block (WITH, WITHOUT, Delta), the statistics and the threshold
//! block; it writes the specification's CSV files through `export`.

use std::fmt::Write as _;
use std::path::Path;

use super::export::{write_statistics_csv, write_summary_csv};
use super::metrics::{ClassMetrics, VariantMetrics, delta};

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
pub(crate) fn console_block(with: &VariantMetrics, without: &VariantMetrics) -> String {
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

/// The statistics lines printed after the console block.
pub(crate) fn statistics_block(rows: &[crate::store::PredictionRow]) -> String {
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

/// The console's threshold block: how each reading of score 1 scores, per variant.
pub(crate) fn thresholds_block(rows: &[crate::store::PredictionRow]) -> String {
    match super::summary::threshold_summary(rows) {
        Ok(frame) => format!(
            "\n--- Score 1 read four ways (threshold tuning; positive class) ---\n{}\n",
            crate::output::render(&frame, crate::output::Columns::Compact)
        ),
        Err(e) => format!("\nthreshold tuning: cannot compute: {e}\n"),
    }
}

/// The report of a comparison run, from its stored predictions: the console block and the
/// statistics (stdout), the CSV files written into `dir`, and the invalid answers (stderr).
pub(crate) fn print_run(
    store: &crate::store::Store,
    summary: &crate::experiment::RunSummary,
    dir: &Path,
    options: &crate::experiment::ReportOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), super::RelevanceError> {
    let rows = store.predictions(&[summary.run_id])?;
    let (with, without, invalid) = super::stats::measure_rows(&rows);
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
