//! `track export csv --kind review`: every stored review (failed calls aside) into the
//! specification's CSV files, `<out>/<ReviewerProvider>_<ReviewerModel>/<Brand>_<Sensor>.csv`;
//! rows already in a file are not written again (`spec_csv`).

use super::criteria::Criteria;
use super::spec_csv::{self, csv_row};
use crate::kinds::{ExportOptions, ExportRuns};
use crate::store::{ParseStatus, Store};

/// Writes the reviews of `runs` into `options.out` (`--out`, default `results/reviews/`: the
/// registry entry's), with the criteria
/// of `--criteria` (default the built-in ones); the files written on stdout, the counts on
/// stderr. The specification's CSV has a fixed header: the runs' status is not in it.
pub fn write_csv(
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
    for review in store.review_rows(runs.ids)? {
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
    options.note(format!("{written} new rows written"));
    if skipped > 0 {
        options.note(format!(
            "{skipped} reviews were made with other criteria; export them with --criteria FILE"
        ));
    }
    Ok(())
}
