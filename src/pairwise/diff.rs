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

/// One candidate of either run: its strengths and how it moved.
struct Moved<'a> {
    name: &'a str,
    base: Option<Strength>,
    new: Option<Strength>,
    change: Option<&'static str>,
}

/// The diff of two runs' strengths.
pub fn diff(
    base: &Verdicts,
    base_s: &[Strength],
    new: &Verdicts,
    new_s: &[Strength],
) -> PolarsResult<KindDiff> {
    let mut names: Vec<&str> = base.candidates.iter().map(String::as_str).collect();
    names.extend(
        new.candidates
            .iter()
            .filter(|n| !base.candidates.contains(n))
            .map(String::as_str),
    );
    let find = |v: &Verdicts, s: &[Strength], name: &str| {
        v.candidates.iter().position(|n| n == name).map(|i| s[i])
    };
    let mut counts = DiffCounts::default();
    let mut rows = Vec::with_capacity(names.len());
    for name in names {
        let (b, n) = (find(base, base_s, name), find(new, new_s, name));
        let change = match (b, n) {
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
        counts.regressions += u64::from(change == Some(WEAKER));
        counts.fixes += u64::from(change == Some(STRONGER));
        rows.push(Moved {
            name,
            base: b,
            new: n,
            change,
        });
    }
    let significant: Vec<String> = rows
        .iter()
        .filter(|r| r.change == Some(WEAKER))
        .map(|r| {
            format!(
                "{}: strength {} is below the base run's interval [{}, {}]",
                r.name,
                fmt(r.new.and_then(|s| s.value)),
                fmt(r.base.and_then(|s| s.low)),
                fmt(r.base.and_then(|s| s.high))
            )
        })
        .collect();
    counts.significant_regressions = significant.len() as u64;
    let items = items_frame(&rows)?;
    Ok(KindDiff {
        counts,
        summary: items.drop(c::ONLY_IN)?,
        items,
        significant,
    })
}

/// The item frame: one row per candidate of either run.
fn items_frame(rows: &[Moved<'_>]) -> PolarsResult<DataFrame> {
    let base = |f: fn(&Strength) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| r.base.as_ref().and_then(f)).collect()
    };
    let new_value: Vec<Option<f64>> = rows.iter().map(|r| r.new.and_then(|s| s.value)).collect();
    let base_value = base(|s| s.value);
    let delta: Vec<Option<f64>> = base_value
        .iter()
        .zip(&new_value)
        .map(|(b, n)| Some((*n)? - (*b)?))
        .collect();
    let only_in: Vec<Option<&str>> = rows
        .iter()
        .map(|r| match (r.base, r.new) {
            (Some(_), None) => Some("base"),
            (None, Some(_)) => Some("new"),
            _ => None,
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::CANDIDATE.into(),
            rows.iter().map(|r| r.name).collect::<Vec<_>>(),
        ),
        Column::new(
            c::CHANGE.into(),
            rows.iter().map(|r| r.change).collect::<Vec<_>>(),
        ),
        Column::new(c::ONLY_IN.into(), only_in),
        Column::new(c::BASE_STRENGTH.into(), base_value),
        Column::new(c::STRENGTH_LOW.into(), base(|s| s.low)),
        Column::new(c::STRENGTH_HIGH.into(), base(|s| s.high)),
        Column::new(c::NEW_STRENGTH.into(), new_value),
        Column::new(c::DELTA_STRENGTH.into(), delta),
        Column::new(
            c::SIGNIFICANT_REGRESSION.into(),
            rows.iter()
                .map(|r| r.change == Some(WEAKER))
                .collect::<Vec<_>>(),
        ),
    ])
}

fn fmt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strength(value: f64, low: f64, high: f64) -> Strength {
        Strength {
            value: Some(value),
            low: Some(low),
            high: Some(high),
            dropped: 0,
        }
    }

    #[test]
    fn a_strength_below_the_base_interval_is_a_significant_regression() {
        let base = strength(0.5, 0.2, 0.8);
        assert_eq!(movement(&base, &strength(0.1, 0.0, 0.3)), Some(WEAKER));
        assert_eq!(movement(&base, &strength(0.9, 0.6, 1.2)), Some(STRONGER));
        assert_eq!(movement(&base, &strength(0.3, 0.0, 0.6)), Some(UNCHANGED));
        let undefined = Strength {
            value: None,
            low: None,
            high: None,
            dropped: 0,
        };
        assert_eq!(movement(&base, &undefined), None);
        let rows = [Moved {
            name: "x",
            base: Some(base),
            new: Some(strength(0.1, 0.0, 0.3)),
            change: Some(WEAKER),
        }];
        let items = items_frame(&rows).unwrap();
        assert_eq!(items.height(), 1);
        assert_eq!(
            items
                .column(c::DELTA_STRENGTH)
                .unwrap()
                .f64()
                .unwrap()
                .get(0),
            Some(0.1 - 0.5)
        );
    }
}
