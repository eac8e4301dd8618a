//! Review diffs (`track diff`): criterion scores paired by item (sensor, generator, reviewer, criterion); per
//! criterion and generator the change in mean score with a paired bootstrap interval.

use std::collections::{BTreeMap, HashMap};

use polars::prelude::*;

use super::columns as cols;
use crate::analysis::diff::{
    BASE_CALL_ID, DiffCounts, DiffError, KindDiff, Layout, MIN_BOOTSTRAP_UNITS, NEW_CALL_ID,
    Pairing, UNCHANGED, difference, either, mean, only_in, pair_by_key, sides,
};
use crate::analysis::stats::{BOOTSTRAP, BootstrapInterval, paired_bootstrap};
use crate::store::{ParseStatus, ReviewColumns, ScoreColumns, Store};

/// How a review diff reads.
pub const LAYOUT: Layout = Layout {
    keys: &[
        cols::REVIEWER,
        cols::GENERATOR,
        cols::SENSOR,
        cols::CRITERION,
    ],
    change_columns: &[
        cols::REVIEWER,
        cols::GENERATOR,
        cols::SENSOR,
        cols::CRITERION,
        cols::CHANGE,
        cols::BASE_SCORE,
        cols::NEW_SCORE,
        cols::DELTA_SCORE,
    ],
    change_order: &[
        Change::Lower.name(),
        Change::NowNa.name(),
        Change::Higher.name(),
        Change::NoLongerNa.name(),
    ],
    item_noun: "score",
    summary_title: "Per criterion and generator",
    significant: "a (criterion, generator) whose mean-score change has a 95 % paired \
                  bootstrap interval (2,000 resamples of the items, fixed seed) entirely \
                  below 0",
    changes,
};

/// The headline's changes: `2 lower, 1 higher, 0 newly N/A or unparsable`.
fn changes(c: &DiffCounts) -> String {
    format!(
        "{} lower, {} higher, {} newly N/A or unparsable",
        c.regressions, c.fixes, c.new_errors
    )
}

/// The name of the overall score among the criteria, as `track query --by criterion` has it.
const OVERALL: &str = "Overall";

/// One criterion score of a run. Several reviews of the same sensor by the same generator
/// and reviewer in one run (several generated files) are one item: their mean score.
#[derive(Debug, Clone, PartialEq)]
struct ScoreItem {
    reviewer: String,
    generator: String,
    sensor: String,
    criterion: String,
    /// The criterion's place in the prompt (the overall score last).
    position: u32,
    /// `None` when N/A or when the review could not be read.
    score: Option<f64>,
    /// The reviewer's call (its answer) when the item is one review's; `None` for the mean
    /// of several (several generated files), or without a call.
    call_id: Option<i64>,
}

/// What pairs score items: reviewer, generator, sensor and criterion.
type ItemKey = (String, String, String, String);

impl ScoreItem {
    fn key(&self) -> ItemKey {
        (
            self.reviewer.clone(),
            self.generator.clone(),
            self.sensor.clone(),
            self.criterion.clone(),
        )
    }
}

/// How a score changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Lower,
    Higher,
    /// A score before, N/A now.
    NowNa,
    /// N/A before, a score now.
    NoLongerNa,
    Unchanged,
}

impl Change {
    /// The name in the items' `change` column.
    const fn name(self) -> &'static str {
        match self {
            Self::Lower => "lower",
            Self::Higher => "higher",
            Self::NowNa => "now_na",
            Self::NoLongerNa => "no_longer_na",
            Self::Unchanged => UNCHANGED,
        }
    }
}

/// How a score changed.
fn change(base: Option<f64>, new: Option<f64>) -> Change {
    match (base, new) {
        (Some(b), Some(n)) if n < b => Change::Lower,
        (Some(b), Some(n)) if n > b => Change::Higher,
        (Some(_), None) => Change::NowNa,
        (None, Some(_)) => Change::NoLongerNa,
        _ => Change::Unchanged,
    }
}

/// The score items of one run's reviews, review by review, criteria in order then overall.
/// Reviews skipped for want of an official datasheet reviewed nothing and give no item.
fn score_items(reviews: &ReviewColumns, scores: &ScoreColumns) -> Vec<ScoreItem> {
    let mut by_review: HashMap<i64, Vec<usize>> = HashMap::new();
    for (row, id) in scores.review_id.iter().enumerate() {
        by_review.entry(*id).or_default().push(row);
    }
    let mut items: Vec<ScoreItem> = Vec::new();
    // Per key: the item's place in `items` and the scores it stands for.
    let mut index: HashMap<ItemKey, (usize, Vec<f64>)> = HashMap::new();
    for (r, id) in reviews.review_id.iter().enumerate() {
        if reviews.parse_status[r] == ParseStatus::Skipped {
            continue;
        }
        let rows = by_review.get(id).map(Vec::as_slice).unwrap_or_default();
        let criteria = rows.iter().map(|&s| {
            (
                scores.criterion[s].clone(),
                scores.position[s],
                scores.score[s],
            )
        });
        let overall = (OVERALL.to_owned(), u32::MAX, reviews.overall_score[r]);
        for (criterion, position, score) in criteria.chain([overall]) {
            let item = ScoreItem {
                reviewer: reviews.reviewer[r].clone(),
                generator: reviews.generator[r].clone(),
                sensor: reviews.sensor[r].clone(),
                criterion,
                position,
                score: score.map(|s| s as f64),
                call_id: reviews.call_id.get(r).copied().flatten(),
            };
            let (at, values) = index
                .entry(item.key())
                .or_insert_with(|| (items.len(), Vec::new()));
            values.extend(item.score);
            if *at == items.len() {
                items.push(item);
            } else {
                items[*at].score = mean(values.iter().copied());
                // The mean of several reviews: no one answer.
                items[*at].call_id = None;
            }
        }
    }
    items
}

/// What one criterion of one generator adds up to.
#[derive(Debug, Clone, Default)]
struct Group {
    criterion: String,
    generator: String,
    shared: u64,
    /// Per item scored in both runs: (base, new).
    scored: Vec<(f64, f64)>,
    lower: u64,
    higher: u64,
    now_na: u64,
    only_in_base: u64,
    only_in_new: u64,
}

impl Group {
    fn add(&mut self, pairing: &Pairing<ScoreItem>) {
        let (base, new) = match pairing {
            Pairing::Both(base, new) => (base, new),
            Pairing::OnlyBase(_) => return self.only_in_base += 1,
            Pairing::OnlyNew(_) => return self.only_in_new += 1,
        };
        self.shared += 1;
        if let (Some(b), Some(n)) = (base.score, new.score) {
            self.scored.push((b, n));
        }
        match change(base.score, new.score) {
            Change::Lower => self.lower += 1,
            Change::Higher => self.higher += 1,
            Change::NowNa => self.now_na += 1,
            Change::NoLongerNa | Change::Unchanged => {}
        }
    }

    fn base_mean(&self) -> Option<f64> {
        mean(self.scored.iter().map(|s| s.0))
    }

    fn new_mean(&self) -> Option<f64> {
        mean(self.scored.iter().map(|s| s.1))
    }

    /// The paired bootstrap interval of the mean change, with enough items.
    fn interval(&self) -> Option<BootstrapInterval> {
        if self.scored.len() < MIN_BOOTSTRAP_UNITS {
            return None;
        }
        let deltas: Vec<f64> = self.scored.iter().map(|(b, n)| n - b).collect();
        paired_bootstrap(deltas.len(), &BOOTSTRAP, |sample| {
            mean(sample.iter().map(|&i| deltas[i]))
        })
    }

    fn describe(&self, interval: &BootstrapInterval) -> String {
        let two = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
        format!(
            "{} of {}: mean score {} → {} on {} paired items, 95 % interval of the change \
             {:+.2} to {:+.2}",
            self.criterion,
            self.generator,
            two(self.base_mean()),
            two(self.new_mean()),
            self.scored.len(),
            interval.low,
            interval.high,
        )
    }
}

/// Compares review run `new` with run `base`, both read from `store` (`track diff`).
pub(crate) fn compare(store: &Store, base: i64, new: i64) -> Result<KindDiff, DiffError> {
    Ok(diff(
        store.review_columns(&[base])?,
        store.review_columns(&[new])?,
    )?)
}

/// Compares the reviews of two runs (each as `Store::review_columns` loads one run).
pub(crate) fn diff(
    base: (ReviewColumns, ScoreColumns),
    new: (ReviewColumns, ScoreColumns),
) -> PolarsResult<KindDiff> {
    let paired = pair_by_key(
        score_items(&base.0, &base.1),
        score_items(&new.0, &new.1),
        ScoreItem::key,
    );
    // Criteria in prompt order, generators in the order they first appear.
    let mut generators: Vec<String> = Vec::new();
    let mut groups: BTreeMap<(u32, usize), Group> = BTreeMap::new();
    for pairing in &paired {
        let item = either(pairing);
        let generator = match generators.iter().position(|g| *g == item.generator) {
            Some(g) => g,
            None => {
                generators.push(item.generator.clone());
                generators.len() - 1
            }
        };
        groups
            .entry((item.position, generator))
            .or_insert_with(|| Group {
                criterion: item.criterion.clone(),
                generator: item.generator.clone(),
                ..Group::default()
            })
            .add(pairing);
    }
    let groups: Vec<Group> = groups.into_values().collect();
    let intervals: Vec<Option<BootstrapInterval>> = groups.iter().map(Group::interval).collect();
    let regressed = |i: &Option<BootstrapInterval>| i.is_some_and(|i| i.high < 0.0);
    let significant: Vec<String> = groups
        .iter()
        .zip(&intervals)
        .filter_map(|(g, i)| i.filter(|_| regressed(i)).map(|i| g.describe(&i)))
        .collect();
    let counts = DiffCounts {
        shared: groups.iter().map(|g| g.shared).sum(),
        only_in_base: groups.iter().map(|g| g.only_in_base).sum(),
        only_in_new: groups.iter().map(|g| g.only_in_new).sum(),
        regressions: groups.iter().map(|g| g.lower).sum(),
        fixes: groups.iter().map(|g| g.higher).sum(),
        new_errors: groups.iter().map(|g| g.now_na).sum(),
        significant_regressions: significant.len() as u64,
    };
    let significant_flags = intervals.iter().map(regressed).collect();
    Ok(KindDiff {
        counts,
        summary: summary_frame(&groups, &intervals, significant_flags)?,
        items: items_frame(&paired)?,
        significant,
        improvements: Vec::new(),
    })
}

/// One row per criterion and generator.
fn summary_frame(
    groups: &[Group],
    intervals: &[Option<BootstrapInterval>],
    significant: Vec<bool>,
) -> PolarsResult<DataFrame> {
    let text = |f: fn(&Group) -> &str| groups.iter().map(f).collect::<Vec<_>>();
    let counts = |f: fn(&Group) -> u64| groups.iter().map(f).collect::<Vec<_>>();
    let base_mean: Vec<Option<f64>> = groups.iter().map(Group::base_mean).collect();
    let new_mean: Vec<Option<f64>> = groups.iter().map(Group::new_mean).collect();
    let delta: Vec<Option<f64>> = base_mean
        .iter()
        .zip(&new_mean)
        .map(|(b, n)| difference(*b, *n))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(cols::CRITERION.into(), text(|g| &g.criterion)),
        Column::new(cols::GENERATOR.into(), text(|g| &g.generator)),
        Column::new(cols::SHARED.into(), counts(|g| g.shared)),
        Column::new(cols::PAIRED.into(), counts(|g| g.scored.len() as u64)),
        Column::new(cols::BASE_MEAN_SCORE.into(), base_mean),
        Column::new(cols::NEW_MEAN_SCORE.into(), new_mean),
        Column::new(cols::DELTA_MEAN_SCORE.into(), delta),
        Column::new(
            cols::DELTA_LOW.into(),
            intervals
                .iter()
                .map(|i| i.map(|i| i.low))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            cols::DELTA_HIGH.into(),
            intervals
                .iter()
                .map(|i| i.map(|i| i.high))
                .collect::<Vec<_>>(),
        ),
        Column::new(cols::SIGNIFICANT_REGRESSION.into(), significant),
        Column::new(cols::LOWER.into(), counts(|g| g.lower)),
        Column::new(cols::HIGHER.into(), counts(|g| g.higher)),
        Column::new(cols::NOW_NA.into(), counts(|g| g.now_na)),
        Column::new(cols::ONLY_IN_BASE.into(), counts(|g| g.only_in_base)),
        Column::new(cols::ONLY_IN_NEW.into(), counts(|g| g.only_in_new)),
    ])
}

/// One row per score item of either run.
fn items_frame(paired: &[Pairing<ScoreItem>]) -> PolarsResult<DataFrame> {
    let key =
        |f: fn(&ScoreItem) -> &str| -> Vec<&str> { paired.iter().map(|p| f(either(p))).collect() };
    let score = |side: usize| -> Vec<Option<f64>> {
        paired
            .iter()
            .map(|p| {
                let (b, n) = sides(p);
                if side == 0 { b } else { n }.and_then(|i| i.score)
            })
            .collect()
    };
    let call = |side: usize| -> Vec<Option<i64>> {
        paired
            .iter()
            .map(|p| {
                let (b, n) = sides(p);
                if side == 0 { b } else { n }.and_then(|i| i.call_id)
            })
            .collect()
    };
    let (base, new) = (score(0), score(1));
    let delta: Vec<Option<f64>> = base
        .iter()
        .zip(&new)
        .map(|(b, n)| difference(*b, *n))
        .collect();
    let changes: Vec<Option<&str>> = paired
        .iter()
        .map(|p| match p {
            Pairing::Both(b, n) => Some(change(b.score, n.score).name()),
            _ => None,
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(cols::REVIEWER.into(), key(|i| &i.reviewer)),
        Column::new(cols::GENERATOR.into(), key(|i| &i.generator)),
        Column::new(cols::SENSOR.into(), key(|i| &i.sensor)),
        Column::new(cols::CRITERION.into(), key(|i| &i.criterion)),
        Column::new(cols::CHANGE.into(), changes),
        Column::new(
            cols::ONLY_IN.into(),
            paired.iter().map(only_in).collect::<Vec<_>>(),
        ),
        Column::new(cols::BASE_SCORE.into(), base),
        Column::new(cols::NEW_SCORE.into(), new),
        Column::new(cols::DELTA_SCORE.into(), delta),
        Column::new(BASE_CALL_ID.into(), call(0)),
        Column::new(NEW_CALL_ID.into(), call(1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One review: (reviewer, generator, sensor, parse status, P1, overall).
    type Review<'a> = (&'a str, &'a str, &'a str, &'a str, Option<i64>, Option<i64>);

    /// One run's reviews.
    fn run(rows: &[Review<'_>]) -> (ReviewColumns, ScoreColumns) {
        let mut r = ReviewColumns::default();
        let mut s = ScoreColumns::default();
        for (id, &(reviewer, generator, sensor, status, p1, overall)) in rows.iter().enumerate() {
            let id = id as i64 + 1;
            r.review_id.push(id);
            r.run_id.push(1);
            r.reviewer.push(reviewer.into());
            r.generator.push(generator.into());
            r.sensor.push(sensor.into());
            r.target.push(format!("{sensor} | {generator}"));
            r.official_status.push("Found".into());
            r.parse_status.push(status.parse().unwrap());
            r.average_score.push(p1.map(|v| v as f64));
            r.overall_score.push(overall);
            r.cost_usd.push(None);
            r.paid_usd.push(None);
            r.cache_hit.push(false);
            s.review_id.push(id);
            s.position.push(0);
            s.criterion.push("P1".into());
            s.score.push(p1);
        }
        (r, s)
    }

    fn column<'a>(df: &'a DataFrame, name: &str) -> &'a Column {
        df.column(name).unwrap()
    }

    #[test]
    fn scores_pair_by_item_and_changes_are_counted() {
        let base = run(&[
            ("r", "g", "s1", "ok", Some(4), Some(4)),
            ("r", "g", "s2", "ok", Some(3), Some(3)),
            ("r", "g", "s3", "ok", Some(5), Some(5)),
            ("r", "g", "s4", "skipped", None, None),
        ]);
        let new = run(&[
            ("r", "g", "s1", "ok", Some(2), Some(4)),
            ("r", "g", "s2", "failed", None, None),
            ("r", "g", "s3", "ok", Some(5), Some(5)),
            ("r", "g", "s5", "ok", Some(1), Some(1)),
        ]);
        let d = diff(base, new).unwrap();
        assert_eq!(
            d.counts,
            DiffCounts {
                shared: 6,
                only_in_base: 0,
                only_in_new: 2,
                regressions: 1,
                fixes: 0,
                new_errors: 2,
                significant_regressions: 0,
            },
            "the skipped review gives no item; s5 is only in the new run"
        );
        let s = &d.summary;
        assert_eq!(s.height(), 2, "P1 and Overall of one generator");
        let criterion = column(s, "criterion").str().unwrap();
        assert_eq!(
            (criterion.get(0), criterion.get(1)),
            (Some("P1"), Some("Overall"))
        );
        let delta = column(s, "delta_mean_score").f64().unwrap();
        // P1 scored in both for s1 (4 → 2) and s3 (5 → 5): mean 4.5 → 3.5.
        assert_eq!(delta.get(0), Some(-1.0));
        assert_eq!(column(s, "paired").u64().unwrap().get(0), Some(2));
        assert_eq!(
            column(s, "delta_low").f64().unwrap().get(0),
            None,
            "too few items for an interval"
        );
        let changes = column(&d.items, "change").str().unwrap();
        assert_eq!(changes.get(0), Some("lower"));
        assert_eq!(changes.get(2), Some("now_na"));
    }

    #[test]
    fn a_consistent_drop_is_a_significant_regression() {
        let sensors: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
        let rows = |p1: i64| -> Vec<Review<'_>> {
            sensors
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (
                        "r",
                        "g",
                        s.as_str(),
                        "ok",
                        Some(p1 - (i % 2) as i64),
                        Some(4),
                    )
                })
                .collect()
        };
        let d = diff(run(&rows(5)), run(&rows(3))).unwrap();
        assert_eq!(d.counts.regressions, 8);
        assert_eq!(
            d.counts.significant_regressions, 1,
            "P1 only: overall did not move"
        );
        let high = column(&d.summary, "delta_high")
            .f64()
            .unwrap()
            .get(0)
            .unwrap();
        assert!(
            (high - -2.0).abs() < 1e-12,
            "every item dropped by 2: {high}"
        );
        assert!(
            d.significant[0].starts_with("P1 of g: mean score 4.50 → 2.50"),
            "{:?}",
            d.significant
        );
        let up = diff(run(&rows(3)), run(&rows(5))).unwrap();
        assert_eq!(
            up.counts.significant_regressions, 0,
            "a rise is never a regression"
        );
    }

    #[test]
    fn several_files_of_one_sensor_are_one_item_with_their_mean() {
        let (reviews, scores) = run(&[
            ("r", "g", "s", "ok", Some(2), Some(3)),
            ("r", "g", "s", "ok", Some(4), None),
        ]);
        let items = score_items(&reviews, &scores);
        assert_eq!(items.len(), 2);
        assert_eq!(
            (items[0].criterion.as_str(), items[0].score),
            ("P1", Some(3.0))
        );
        assert_eq!(
            (items[1].criterion.as_str(), items[1].score),
            ("Overall", Some(3.0))
        );
    }
}
