//! Comparing two runs of the same kind on the items they share: what regressed, what was
//! fixed, what newly failed, and whether the change is more than noise.
//!
//! Each kind's `diff` (in its folder, reached through the registry's `diff` in `commands/`) reads
//! both runs through the store and returns frames (a summary per model, criterion or metric, and
//! one row per item of either run) with counts and its [`Layout`], so that a command can print them
//! and a report can show them as a section. This module holds what every kind's diff shares:
//! pairing items by key, counts, the changed and unpaired items, the headline. Items found in only
//! one run are counted and kept in the item frame (`only_in` = `base` or `new`), never dropped. It
//! names no kind.

use std::collections::HashMap;
use std::hash::Hash;

use polars::prelude::*;

use crate::experiment::ExperimentKind;
use crate::store::{RunInfo, Store, StoreError};

/// The significance level of McNemar's test. Bootstrap intervals are drawn as every other
/// interval track reports ([`BOOTSTRAP`](crate::analysis::stats::BOOTSTRAP)).
pub const SIGNIFICANCE: f64 = 0.05;
/// Fewer paired units than this (review items, relevance images) get no interval: a
/// bootstrap of two or three values says nothing, and nothing counts as significant then.
pub const MIN_BOOTSTRAP_UNITS: usize = 5;

/// The column of every kind's item frame that says how a shared item changed (one of its
/// [`Layout::change_order`] names, or [`UNCHANGED`]); null for an item of one run only.
/// Each kind's `columns.rs` names it by this constant.
pub const CHANGE: &str = "change";
/// The `change` of a shared item that did not change: left out of [`RunDiff::changes`].
pub const UNCHANGED: &str = "unchanged";
/// The column of every kind's item frame that names the only run an item is in (`base` or
/// `new`, see [`only_in`]); null for a shared item.
pub const ONLY_IN: &str = "only_in";
/// The columns of an item frame that name the call behind the item in each run (null where
/// the run has no such item, or no call): what `track diff --items` reads the answers by.
pub const BASE_CALL_ID: &str = crate::output::columns::BASE_CALL_ID.name;
/// As [`BASE_CALL_ID`], of the new run.
pub const NEW_CALL_ID: &str = crate::output::columns::NEW_CALL_ID.name;
/// The answers `track diff --items` adds to an item frame with call ids: each run's whole
/// answer to the item.
pub const BASE_ANSWER: &str = "base_answer";
/// As [`BASE_ANSWER`], of the new run.
pub const NEW_ANSWER: &str = "new_answer";
/// The most characters of an answer a terminal table of items shows (first line only).
pub const ANSWER_CHARS_SHOWN: usize = 40;

/// The answer column `track diff --items` adds for the call id column `name`: `X_answer` for
/// `X_call_id` where X names a run (`base`, `new`, or either with more: a pairwise item's
/// `base_ab_call_id` gives `base_ab_answer`); `None` for any other column.
pub(crate) fn answer_column_of(name: &str) -> Option<String> {
    let side = name.strip_suffix("_call_id")?;
    (side == "base" || side == "new" || side.starts_with("base_") || side.starts_with("new_"))
        .then(|| format!("{side}_answer"))
}

/// `items` with an answer column ([`BASE_ANSWER`], [`NEW_ANSWER`], see [`answer_column_of`])
/// after each of its call id columns' ids turned into answers by `answer` (whole; or, with
/// `shown`, the first line cut to that many characters), in the order of those columns. A
/// frame without call ids (a kind whose items have no call) is returned as is.
pub(crate) fn with_answers<E>(
    mut items: DataFrame,
    shown: Option<usize>,
    mut answer: impl FnMut(i64) -> Result<Option<String>, E>,
) -> Result<DataFrame, E>
where
    E: From<PolarsError>,
{
    let id_columns: Vec<(String, String)> = items
        .get_column_names()
        .iter()
        .filter_map(|n| answer_column_of(n).map(|a| (n.to_string(), a)))
        .collect();
    for (ids, name) in id_columns {
        let column = items.column(&ids)?;
        let ids: Vec<Option<i64>> = column.as_materialized_series().i64()?.iter().collect();
        let mut answers: Vec<Option<String>> = Vec::with_capacity(ids.len());
        for id in ids {
            let text = match id {
                Some(id) => answer(id)?,
                None => None,
            };
            answers.push(text.map(|t| match shown {
                Some(chars) => shortened(&t, chars),
                None => t,
            }));
        }
        items.with_column(Column::new(name.into(), answers))?;
    }
    Ok(items)
}

/// The first non-empty line of `text`, cut to `chars` characters with `…` (and `…` after it
/// when more lines follow): an answer as a table cell.
pub(crate) fn shortened(text: &str, chars: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let more = lines.next().is_some();
    let count = first.chars().count();
    if count > chars {
        let cut: String = first.chars().take(chars.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    } else if more {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// The rank [`RunDiff::changes`] sorts by, dropped before it returns.
const RANK: &str = "_rank";

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The runs are of different kinds.
    #[error(
        "run {base} is a {base_kind} run and run {new} a {new_kind} run: only runs of the same \
         kind can be compared"
    )]
    KindMismatch {
        base: i64,
        base_kind: ExperimentKind,
        new: i64,
        new_kind: ExperimentKind,
    },
    /// The runs are of a kind that has no items to compare (datasheet generation), or of one
    /// this track does not know; `comparable` names the kinds it compares (`benchmark, review
    /// and relevance`), from the registry.
    #[error("run {run} is a {kind} run: track diff compares {comparable} runs")]
    Unsupported {
        run: i64,
        kind: ExperimentKind,
        comparable: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot build the diff's tables: {0}")]
    Frame(#[from] PolarsError),
}

/// The counts of a diff, whatever its kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffCounts {
    /// Items found in both runs.
    pub shared: u64,
    pub only_in_base: u64,
    pub only_in_new: u64,
    /// Shared items that got worse: benchmarks passed → failed; reviews a lower score;
    /// relevance right → wrong or uncertain.
    pub regressions: u64,
    /// Shared items that got better: the reverse of a regression.
    pub fixes: u64,
    /// Shared items with an answer in the base run and none in the new one: benchmarks an
    /// error; reviews N/A or an unparsable review; relevance an invalid answer.
    pub new_errors: u64,
    /// Summary rows whose change is a significant regression (`significant_regression`).
    pub significant_regressions: u64,
}

/// Two runs compared: counts, a summary frame and an item frame.
#[derive(Debug, Clone)]
pub struct RunDiff {
    pub base_run: i64,
    pub new_run: i64,
    pub kind: ExperimentKind,
    pub counts: DiffCounts,
    /// How the kind's frames read.
    pub layout: &'static Layout,
    /// Benchmarks: one row per model; reviews: per criterion and generator; relevance: per
    /// variant, class and metric. Each has `significant_regression`.
    pub summary: DataFrame,
    /// One row per item of either run, base order first: its key columns, `change` (null
    /// when unpaired), `only_in` (`base`, `new`, or null when paired), then the values of
    /// both runs and their difference.
    pub items: DataFrame,
    /// One sentence per significant regression, naming it and its figures.
    pub significant: Vec<String>,
    /// One sentence per significant move that is an improvement, not a regression (a pairwise
    /// candidate that changed and gained ground); what `--fail-on-regression` lets pass.
    pub improvements: Vec<String>,
    /// The two parts of one run compared instead of two runs (`base_run` = `new_run`): the
    /// benchmark templates of `track diff RUN --templates BASE NEW`.
    pub templates: Option<(String, String)>,
}

/// What one kind's comparison returns; [`RunDiff`] adds the runs and kind.
pub struct KindDiff {
    /// As [`RunDiff::counts`].
    pub counts: DiffCounts,
    /// As [`RunDiff::summary`].
    pub summary: DataFrame,
    /// As [`RunDiff::items`].
    pub items: DataFrame,
    /// As [`RunDiff::significant`].
    pub significant: Vec<String>,
    /// As [`RunDiff::improvements`].
    pub improvements: Vec<String>,
}

/// How a kind's diff reads: its item frame's key columns, the columns worth showing for a
/// change, its `change` labels from the most to the least serious (`unchanged` left out), the
/// words of its headline and summary, and what makes a regression significant. `track diff
/// --help` is written from the layouts of the kinds.
#[derive(Debug)]
pub struct Layout {
    /// The key columns of an item (`model`, `prompt`, `repeat`).
    pub keys: &'static [&'static str],
    /// The columns that show how a changed item changed.
    pub change_columns: &'static [&'static str],
    /// The `change` labels, most serious first.
    pub change_order: &'static [&'static str],
    /// What an item is called in the headline (`item`, `prediction`).
    pub item_noun: &'static str,
    /// The title of the summary table on a terminal (`Per model`).
    pub summary_title: &'static str,
    /// The headline's changes: `2 regressions, 1 fix, 0 new errors`.
    pub changes: fn(&DiffCounts) -> String,
    /// What a significant regression is, for `--help`: `a model whose success rate … dropped,
    /// with McNemar's p < 0.05 …` (no final period).
    pub significant: &'static str,
}

impl RunDiff {
    /// The kind of runs `base_run` and `new_run`: both must exist and be of one kind. Whether
    /// that kind can be compared is the registry's to say.
    pub(crate) fn kind_of(
        store: &Store,
        base_run: i64,
        new_run: i64,
    ) -> Result<ExperimentKind, DiffError> {
        let base = find_run(store, base_run)?;
        let new = find_run(store, new_run)?;
        if base.kind != new.kind {
            return Err(DiffError::KindMismatch {
                base: base_run,
                base_kind: base.kind,
                new: new_run,
                new_kind: new.kind,
            });
        }
        Ok(base.kind)
    }

    /// Run `new_run` compared with run `base_run`, both of `kind`, by the kind's diff, whose
    /// frames read as `layout` says.
    pub(crate) fn new(
        base_run: i64,
        new_run: i64,
        kind: ExperimentKind,
        layout: &'static Layout,
        diff: KindDiff,
    ) -> Self {
        Self {
            base_run,
            new_run,
            kind,
            counts: diff.counts,
            layout,
            summary: diff.summary,
            items: diff.items,
            significant: diff.significant,
            improvements: diff.improvements,
            templates: None,
        }
    }

    /// Two templates of run `run`, `base` and `new`, compared by the benchmark diff.
    pub(crate) fn of_templates(
        run: i64,
        (base, new): (&str, &str),
        layout: &'static Layout,
        diff: KindDiff,
    ) -> Self {
        Self {
            templates: Some((base.to_owned(), new.to_owned())),
            ..Self::new(run, run, ExperimentKind::Bench, layout, diff)
        }
    }

    /// The words for the two sides: `run 3` and `run 5`, or `template terse` and `template
    /// steps`.
    pub(crate) fn sides(&self) -> (String, String) {
        match &self.templates {
            Some((base, new)) => (format!("template {base}"), format!("template {new}")),
            None => (
                format!("run {}", self.base_run),
                format!("run {}", self.new_run),
            ),
        }
    }

    /// The arguments of `track diff` that make this diff: `3 5`, or `3 --templates terse
    /// steps`.
    pub(crate) fn command_args(&self) -> String {
        match &self.templates {
            Some((base, new)) => format!("{} --templates {base} {new}", self.base_run),
            None => format!("{} {}", self.base_run, self.new_run),
        }
    }

    /// One line summing the diff up: `run 3 → run 5 (benchmark): 40 items shared,
    /// 2 regressions, 1 fix, 0 new errors; 3 only in run 3, 0 only in run 5`.
    pub(crate) fn headline(&self) -> String {
        let c = &self.counts;
        let changes = (self.layout.changes)(c);
        let (base, new) = self.sides();
        let compared = match &self.templates {
            Some(_) => format!("run {}, {base} → {new}", self.base_run),
            None => format!("{base} → {new}"),
        };
        format!(
            "{compared} ({}): {} shared, {changes}; {} only in {base}, {} only in {new}",
            self.kind.noun(),
            crate::output::count(c.shared, self.layout.item_noun),
            c.only_in_base,
            c.only_in_new,
        )
    }

    /// Whether any paired regression is significant (what `--fail-on-regression` checks).
    pub(crate) fn has_significant_regression(&self) -> bool {
        self.counts.significant_regressions > 0
    }

    /// The key columns of the items that hold something: a key with no value in any item
    /// (the template of benchmarks without templates, or of two templates compared) is left
    /// out of the tables.
    fn keys_shown(&self) -> Vec<&'static str> {
        self.layout
            .keys
            .iter()
            .copied()
            .filter(|key| {
                self.items
                    .column(key)
                    .map_or(true, |c| c.is_empty() || c.null_count() < c.len())
            })
            .collect()
    }

    /// The shared items that changed, most serious first (regressions, new errors, fixes,
    /// the rest), with the columns that show the change.
    pub(crate) fn changes(&self) -> PolarsResult<DataFrame> {
        let layout = self.layout;
        let mut rank = lit(layout.change_order.len() as u32);
        for (position, label) in layout.change_order.iter().enumerate().rev() {
            rank = when(col(CHANGE).eq(lit(*label)))
                .then(lit(position as u32))
                .otherwise(rank);
        }
        let shown = self.keys_shown();
        let columns: Vec<Expr> = layout
            .change_columns
            .iter()
            .filter(|c| !layout.keys.contains(c) || shown.contains(c))
            .map(|c| col(*c))
            .collect();
        self.items
            .clone()
            .lazy()
            .filter(
                col(CHANGE)
                    .is_not_null()
                    .and(col(CHANGE).neq(lit(UNCHANGED))),
            )
            .with_column(rank.alias(RANK))
            .sort(
                [RANK],
                SortMultipleOptions::default().with_maintain_order(true),
            )
            .select(columns)
            .collect()
    }

    /// The items found in one run only: their keys and `only_in`.
    pub(crate) fn unpaired(&self) -> PolarsResult<DataFrame> {
        let mut columns: Vec<Expr> = self.keys_shown().into_iter().map(col).collect();
        columns.push(col(ONLY_IN));
        self.items
            .clone()
            .lazy()
            .filter(col(ONLY_IN).is_not_null())
            .select(columns)
            .collect()
    }
}

/// The run with this id, or an error naming it and the latest runs.
fn find_run(store: &Store, id: i64) -> Result<RunInfo, DiffError> {
    Ok(store.existing_run(id)?)
}

/// An item of two runs: in both, or in one only.
#[derive(Debug, Clone, PartialEq)]
pub enum Pairing<T> {
    Both(T, T),
    OnlyBase(T),
    OnlyNew(T),
}

/// Pairs the items of two runs by `key`: the base run's items in their order (paired or
/// not), then the new run's unpaired ones in theirs. A key found twice on one side pairs
/// once; the other item is listed as unpaired, never dropped.
pub(crate) fn pair_by_key<T, K: Eq + Hash>(
    base: Vec<T>,
    new: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Vec<Pairing<T>> {
    let mut index: HashMap<K, usize> = HashMap::with_capacity(new.len());
    for (position, item) in new.iter().enumerate() {
        index.entry(key(item)).or_insert(position);
    }
    let mut new_slots: Vec<Option<T>> = new.into_iter().map(Some).collect();
    let mut paired = Vec::with_capacity(base.len().max(new_slots.len()));
    for item in base {
        match index.remove(&key(&item)).and_then(|i| new_slots[i].take()) {
            Some(partner) => paired.push(Pairing::Both(item, partner)),
            None => paired.push(Pairing::OnlyBase(item)),
        }
    }
    paired.extend(new_slots.into_iter().flatten().map(Pairing::OnlyNew));
    paired
}

/// `only_in` of a pairing: null when paired.
pub(crate) fn only_in<T>(pairing: &Pairing<T>) -> Option<&'static str> {
    match pairing {
        Pairing::Both(..) => None,
        Pairing::OnlyBase(_) => Some("base"),
        Pairing::OnlyNew(_) => Some("new"),
    }
}

/// The base and new sides of a pairing (one of them absent when unpaired).
pub(crate) fn sides<T>(pairing: &Pairing<T>) -> (Option<&T>, Option<&T>) {
    match pairing {
        Pairing::Both(base, new) => (Some(base), Some(new)),
        Pairing::OnlyBase(base) => (Some(base), None),
        Pairing::OnlyNew(new) => (None, Some(new)),
    }
}

/// The item that names a pairing: the base run's when paired.
pub(crate) fn either<T>(pairing: &Pairing<T>) -> &T {
    match pairing {
        Pairing::Both(base, _) | Pairing::OnlyBase(base) => base,
        Pairing::OnlyNew(new) => new,
    }
}

/// `new - base`, when both are known.
pub(crate) fn difference(base: Option<f64>, new: Option<f64>) -> Option<f64> {
    Some(new? - base?)
}

/// The mean of `values`, `None` when empty.
pub(crate) fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), v| (sum + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_in_a_table_is_its_first_line_cut_with_an_ellipsis() {
        assert_eq!(shortened("short", 10), "short");
        assert_eq!(shortened("\n  two\nlines", 10), "two …");
        assert_eq!(shortened("abcdefghijkl", 6), "abcde…");
        assert_eq!(shortened("", 6), "");
        // Characters, not bytes.
        assert_eq!(shortened("ééééé", 3), "éé…");
    }

    #[test]
    fn answers_are_added_after_the_call_ids_whole_or_cut() {
        let items = DataFrame::new_infer_height(vec![
            Column::new(BASE_CALL_ID.into(), [Some(1i64), None]),
            Column::new(NEW_CALL_ID.into(), [Some(2i64), Some(3)]),
        ])
        .unwrap();
        let answer = |id: i64| -> Result<Option<String>, PolarsError> {
            Ok((id != 3).then(|| format!("answer {id}\nmore")))
        };
        let whole = with_answers(items.clone(), None, answer).unwrap();
        let texts = |df: &DataFrame, name: &str| -> Vec<Option<String>> {
            df.column(name)
                .unwrap()
                .str()
                .unwrap()
                .iter()
                .map(|v| v.map(str::to_owned))
                .collect()
        };
        assert_eq!(
            texts(&whole, BASE_ANSWER),
            [Some("answer 1\nmore".to_owned()), None]
        );
        assert_eq!(
            texts(&whole, NEW_ANSWER),
            [Some("answer 2\nmore".to_owned()), None]
        );
        let cut = with_answers(items, Some(20), answer).unwrap();
        assert_eq!(texts(&cut, BASE_ANSWER)[0].as_deref(), Some("answer 1 …"));
        // Any run's call id column gives its answer column: a pairwise item's two orders.
        let orders = DataFrame::new_infer_height(vec![
            Column::new("base_ab_call_id".into(), [Some(1i64)]),
            Column::new("new_ba_call_id".into(), [Some(2i64)]),
            Column::new("judge_call_id".into(), [Some(2i64)]),
        ])
        .unwrap();
        let answered = with_answers(orders, None, answer).unwrap();
        assert_eq!(
            texts(&answered, "base_ab_answer"),
            [Some("answer 1\nmore".to_owned())]
        );
        assert_eq!(
            texts(&answered, "new_ba_answer"),
            [Some("answer 2\nmore".to_owned())]
        );
        assert!(answered.column("judge_answer").is_err(), "not a run's");
        assert_eq!(answer_column_of("newest_call_id"), None);
        assert_eq!(answer_column_of("new_call_id").as_deref(), Some(NEW_ANSWER));
        // A frame without call ids is left as it is.
        let none = DataFrame::new_infer_height(vec![Column::new("x".into(), [1i64])]).unwrap();
        assert_eq!(with_answers(none.clone(), None, answer).unwrap(), none);
    }

    #[test]
    fn pairing_keeps_order_and_lists_every_unpaired_item() {
        let base = vec![("a", 1), ("b", 2), ("c", 3), ("c", 4)];
        let new = vec![("d", 10), ("c", 30), ("a", 11), ("d", 12)];
        let paired = pair_by_key(base, new, |item| item.0);
        assert_eq!(
            paired,
            vec![
                Pairing::Both(("a", 1), ("a", 11)),
                Pairing::OnlyBase(("b", 2)),
                Pairing::Both(("c", 3), ("c", 30)),
                Pairing::OnlyBase(("c", 4)),
                Pairing::OnlyNew(("d", 10)),
                Pairing::OnlyNew(("d", 12)),
            ],
            "a duplicate key pairs once and the other copy stays listed"
        );
        assert_eq!(only_in(&paired[1]), Some("base"));
        assert_eq!(only_in(&paired[0]), None);
    }

    #[test]
    fn means_and_differences() {
        assert_eq!(mean([1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean([]), None);
        assert_eq!(difference(Some(1.0), Some(3.5)), Some(2.5));
        assert_eq!(difference(None, Some(3.5)), None);
    }
}
