//! `track export csv --kind review`: every stored review (failed calls aside) into the
//! specification's CSV files, `<out>/<ReviewerProvider>_<ReviewerModel>/<Brand>_<Sensor>.csv`;
//! rows already in a file are not written again (`spec_csv`); and `<out>/review_answers.csv`,
//! every review with the reviewer's whole answer.

use super::criteria::Criteria;
use super::spec_csv::{self, csv_row};
use crate::kinds::{ExportOptions, ExportRuns};
use std::path::Path;

use anyhow::Context as _;

use crate::rating::ANSWER;
use crate::store::{ParseStatus, ReviewRow, Store};

/// Writes the reviews of `runs` into `options.out` (`--out`, default `results/reviews/`: the
/// registry entry's), with the criteria
/// of `--criteria` (default the built-in ones); the files written on stdout, the counts on
/// stderr. The specification's CSV has a fixed header: the runs' status is not in it.
pub(crate) fn write_csv(
    store: &Store,
    runs: &ExportRuns<'_>,
    options: &ExportOptions,
) -> anyhow::Result<()> {
    let criteria = match &options.criteria {
        Some(path) => Criteria::load(path)?,
        None => Criteria::builtin(),
    };
    let out = &options.out;
    let mut files = std::collections::BTreeSet::new();
    let (mut written, mut skipped) = (0, 0);
    let reviews = store.review_rows(runs.ids)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let answers = out.join("review_answers.csv");
    write_answers(store, &answers, &reviews)
        .with_context(|| format!("writing {}", answers.display()))?;
    for review in reviews {
        if review.parse_status == ParseStatus::Error {
            continue;
        }
        if review.criteria_sha256 != criteria.sha256 {
            skipped += 1;
            continue;
        }
        let (path, new) = spec_csv::append(out, &criteria, &csv_row(&review))?;
        written += usize::from(new);
        files.insert(path);
    }
    for path in &files {
        crate::output::say(path.display());
    }
    crate::output::say(answers.display());
    options.note(format!("{written} new rows written"));
    if skipped > 0 {
        options.note(format!(
            "{skipped} reviews were made with other criteria; export them with --criteria FILE"
        ));
    }
    Ok(())
}

/// `review_answers.csv`: each review (failed calls too) with its keys, outcome and the
/// reviewer's whole answer, which the specification's CSV has no column for; the answers are
/// read a row at a time.
fn write_answers(store: &Store, path: &Path, reviews: &[ReviewRow]) -> anyhow::Result<()> {
    let mut writer = csv::Writer::from_path(path)?;
    writer.write_record([
        "run_id",
        "brand",
        "sensor",
        "generator_provider",
        "generator_model",
        "reviewer",
        "parse_status",
        "average_score",
        "overall_score",
        "call_id",
        ANSWER,
    ])?;
    for r in reviews {
        writer.write_record([
            r.run_id.to_string(),
            r.brand.clone(),
            r.sensor.clone(),
            r.generator_provider.clone(),
            r.generator_model.clone(),
            r.reviewer_ref.clone(),
            r.parse_status.as_str().to_owned(),
            r.average_score.map(|s| s.to_string()).unwrap_or_default(),
            r.overall_score.map(|s| s.to_string()).unwrap_or_default(),
            r.call_id.map(|c| c.to_string()).unwrap_or_default(),
            match r.call_id {
                Some(call) => store.answer_text(call)?.unwrap_or_default(),
                None => String::new(),
            },
        ])?;
    }
    writer.flush()?;
    Ok(())
}
