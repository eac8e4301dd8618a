//! `track diff` of two pairwise runs: each candidate's Bradley–Terry strength in both, and
//! whether it moved beyond the base run's bootstrap interval (`weaker`: below it, a
//! regression; `stronger`: above it).

use polars::prelude::*;

use super::columns as c;
use super::stats::{Strength, Verdicts};
use crate::analysis::diff::{DiffCounts, DiffError, KindDiff, Layout, plural};
use crate::store::Store;

/// The change of a candidate found in both runs.
const WEAKER: &str = "weaker";
const STRONGER: &str = "stronger";
const UNCHANGED: &str = crate::analysis::diff::UNCHANGED;

/// How a pairwise diff reads.
pub static LAYOUT: Layout = Layout {
    keys: &[c::CANDIDATE],
    change_columns: &[
        c::CANDIDATE,
        c::CHANGE,
        c::BASE_STRENGTH,
        c::STRENGTH_LOW,
        c::STRENGTH_HIGH,
        c::NEW_STRENGTH,
        c::DELTA_STRENGTH,
    ],
    change_order: &[WEAKER, STRONGER],
    item_noun: "candidate",
    summary_title: "Per candidate",
    changes,
    significant: "a candidate whose new Bradley–Terry strength is below the 95 % bootstrap \
                  interval (items resampled) of its strength in the base run",
};

/// The headline's changes: `1 weaker, 0 stronger`.
fn changes(c: &DiffCounts) -> String {
    format!(
        "{} (below its interval), {} (above it)",
        plural(c.regressions, "weaker candidate"),
        plural(c.fixes, "stronger candidate")
    )
}

/// Compares runs `base` and `new`, read from the store.
pub fn compare(store: &Store, base: i64, new: i64) -> Result<KindDiff, DiffError> {
    let base = Verdicts::from_rows(&store.pairwise_verdicts(&[base])?);
    let new = Verdicts::from_rows(&store.pairwise_verdicts(&[new])?);
    Ok(diff(&base, &base.strengths(), &new, &new.strengths())?)
}

/// How `new` moved against `base`'s interval: `None` when either is undefined.
fn movement(base: &Strength, new: &Strength) -> Option<&'static str> {
    let value = new.value?;
    let (low, high) = (base.low?, base.high?);
    Some(if value < low {
        WEAKER
    } else if value > high {
        STRONGER
    } else {
        UNCHANGED
    })
}

/// The diff of two runs' strengths.
pub fn diff(
    base: &Verdicts,
    base_s: &[Strength],
    new: &Verdicts,
    new_s: &[Strength],
) -> PolarsResult<KindDiff> {
    let mut names: Vec<String> = base.candidates.clone();
    names.extend(
        new.candidates
            .iter()
            .filter(|n| !base.candidates.contains(n))
            .cloned(),
    );
    let find = |v: &Verdicts, s: &[Strength], name: &str| {
        v.candidates.iter().position(|n| n == name).map(|i| s[i])
    };
    let mut counts = DiffCounts::default();
    let (mut change, mut only_in, mut significant_rows) = (Vec::new(), Vec::new(), Vec::new());
    let (mut b_val, mut lows, mut highs, mut n_val) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut significant = Vec::new();
    for name in &names {
        let (b, n) = (find(base, base_s, name), find(new, new_s, name));
        let moved = match (b, n) {
            (Some(b), Some(n)) => {
                counts.shared += 1;
                movement(&b, &n)
            }
            (Some(_), None) => {
                counts.only_in_base += 1;
                None
            }
            _ => {
                counts.only_in_new += 1;
                None
            }
        };
        counts.regressions += u64::from(moved == Some(WEAKER));
        counts.fixes += u64::from(moved == Some(STRONGER));
        if moved == Some(WEAKER) {
            significant.push(format!(
                "{name}: strength {} is below the base run's interval [{}, {}]",
                fmt(n.and_then(|s| s.value)),
                fmt(b.and_then(|s| s.low)),
                fmt(b.and_then(|s| s.high))
            ));
        }
        change.push(moved.map(str::to_owned));
        only_in.push(match (b, n) {
            (Some(_), None) => Some("base"),
            (None, Some(_)) => Some("new"),
            _ => None,
        });
        significant_rows.push(moved == Some(WEAKER));
        b_val.push(b.and_then(|s| s.value));
        lows.push(b.and_then(|s| s.low));
        highs.push(b.and_then(|s| s.high));
        n_val.push(n.and_then(|s| s.value));
    }
    counts.significant_regressions = significant.len() as u64;
    let delta: Vec<Option<f64>> = b_val
        .iter()
        .zip(&n_val)
        .map(|(b, n)| Some((*n)? - (*b)?))
        .collect();
    let items = DataFrame::new_infer_height(vec![
        Column::new(c::CANDIDATE.into(), names),
        Column::new(c::CHANGE.into(), change),
        Column::new(c::ONLY_IN.into(), only_in),
        Column::new(c::BASE_STRENGTH.into(), b_val),
        Column::new(c::STRENGTH_LOW.into(), lows),
        Column::new(c::STRENGTH_HIGH.into(), highs),
        Column::new(c::NEW_STRENGTH.into(), n_val),
        Column::new(c::DELTA_STRENGTH.into(), delta),
        Column::new(c::SIGNIFICANT_REGRESSION.into(), significant_rows),
    ])?;
    let summary = items.drop(c::ONLY_IN)?;
    Ok(KindDiff {
        counts,
        summary,
        items,
        significant,
    })
}

fn fmt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"))
}
