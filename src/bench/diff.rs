//! Benchmark diffs (`track diff`): evaluations paired by (model, template, prompt, repeat); per
//! model the paired change in success rate with McNemar's test, and the changes in cost,
//! latency and tokens. Two templates of one run compare the same way, their evaluations paired
//! by (model, prompt, repeat) (`track diff RUN --templates A B`).

use super::columns as c;
use polars::prelude::*;

use crate::analysis::diff::{
    BASE_CALL_ID, DiffCounts, DiffError, KindDiff, Layout, NEW_CALL_ID, Pairing, SIGNIFICANCE,
    UNCHANGED, difference, either, only_in, pair_by_key, sides,
};
use crate::analysis::stats::McNemar;
use crate::output::count;
use crate::store::{BenchColumns, Outcome, Store};

/// How a benchmark diff reads.
pub const LAYOUT: Layout = Layout {
    keys: &[c::MODEL, c::TEMPLATE, c::PROMPT, c::REPEAT],
    change_columns: &[
        c::MODEL,
        c::TEMPLATE,
        c::PROMPT,
        c::REPEAT,
        c::CHANGE,
        c::BASE_STATUS,
        c::NEW_STATUS,
        c::DELTA_LATENCY_MS,
        c::DELTA_COST_USD,
        c::DELTA_TOKENS,
    ],
    change_order: &["regression", "new_error", "fix", "error_resolved"],
    item_noun: "item",
    summary_title: "Per model",
    changes,
    significant: "a model whose success rate on the evaluations answered in both runs \
                  dropped, with McNemar's p < 0.05 (exact binomial below 25 flips, else \
                  chi-square)",
};

/// The headline's changes: `2 regressions, 1 fix, 0 new errors`.
fn changes(c: &DiffCounts) -> String {
    format!(
        "{}, {}, {}",
        count(c.regressions, "regression"),
        count(c.fixes, "fix"),
        count(c.new_errors, "new error")
    )
}

/// One evaluation of a run: what the diff reads of it.
#[derive(Debug, Clone, PartialEq)]
struct Evaluation {
    model: String,
    /// `None`: no templates, or the template compared (`--templates`).
    template: Option<String>,
    prompt: String,
    repeat: u32,
    outcome: Outcome,
    latency_ms: Option<f64>,
    /// Input plus output tokens.
    tokens: Option<i64>,
    cost_usd: Option<f64>,
    /// The call that answered (its answer is read for `track diff --items`).
    call_id: Option<i64>,
}

/// How an evaluation changed from the base run to the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Passed, then failed.
    Regression,
    /// Failed, then passed.
    Fix,
    /// An answer, then an error.
    NewError,
    /// An error, then an answer.
    ErrorResolved,
    Unchanged,
}

impl Change {
    fn of(base: Outcome, new: Outcome) -> Self {
        use Outcome::{Error, Failed, Passed};
        match (base, new) {
            (Passed, Failed) => Self::Regression,
            (Failed, Passed) => Self::Fix,
            (Passed | Failed, Error) => Self::NewError,
            (Error, Passed | Failed) => Self::ErrorResolved,
            (Passed, Passed) | (Failed, Failed) | (Error, Error) => Self::Unchanged,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Fix => "fix",
            Self::NewError => "new_error",
            Self::ErrorResolved => "error_resolved",
            Self::Unchanged => UNCHANGED,
        }
    }
}

/// The evaluations of loaded columns, in their order.
fn evaluations(cols: BenchColumns) -> Vec<Evaluation> {
    let n = cols.len();
    // Columns built by hand may lack templates and calls: none.
    let templates = if cols.template.len() == n {
        cols.template
    } else {
        vec![None; n]
    };
    let call_ids = if cols.call_id.len() == n {
        cols.call_id
    } else {
        vec![None; n]
    };
    let tokens = cols
        .input_tokens
        .iter()
        .zip(&cols.output_tokens)
        .map(|(i, o)| match (i, o) {
            (None, None) => None,
            _ => Some(i.unwrap_or(0) as i64 + o.unwrap_or(0) as i64),
        });
    cols.model_ref
        .into_iter()
        .zip(templates)
        .zip(cols.prompt_name)
        .zip(cols.repeat_index)
        .zip(cols.outcome)
        .zip(cols.latency_ms)
        .zip(cols.cost_usd)
        .zip(tokens)
        .zip(call_ids)
        .map(
            |(
                (
                    ((((((model, template), prompt), repeat), outcome), latency_ms), cost_usd),
                    tokens,
                ),
                call_id,
            )| Evaluation {
                model,
                template,
                prompt,
                repeat,
                outcome,
                latency_ms,
                tokens,
                cost_usd,
                call_id,
            },
        )
        .collect()
}

/// Sums of a measure over the shared evaluations where both runs have it.
#[derive(Debug, Clone, Copy, Default)]
struct PairedSum {
    base: f64,
    new: f64,
    n: u64,
    /// A pair answered with this measure unknown on a side (the cost of a model without a
    /// price): the delta is unknown, not that of the other pairs.
    unknown: bool,
}

impl PairedSum {
    fn add(&mut self, base: Option<f64>, new: Option<f64>) {
        if let (Some(base), Some(new)) = (base, new) {
            self.base += base;
            self.new += new;
            self.n += 1;
        }
    }

    fn delta(&self) -> Option<f64> {
        (self.n > 0 && !self.unknown).then_some(self.new - self.base)
    }

    fn delta_of_means(&self) -> Option<f64> {
        self.delta().map(|d| d / self.n as f64)
    }
}

/// What one model's evaluations add up to.
#[derive(Debug, Clone, Default)]
struct ModelTally {
    model: String,
    shared: u64,
    /// Shared evaluations with an answer in both runs (passed or failed), and how many of
    /// them passed in each.
    paired: u64,
    base_passed: u64,
    new_passed: u64,
    regressions: u64,
    fixes: u64,
    new_errors: u64,
    only_in_base: u64,
    only_in_new: u64,
    cost: PairedSum,
    latency: PairedSum,
    tokens: PairedSum,
}

impl ModelTally {
    fn add(&mut self, pairing: &Pairing<Evaluation>) {
        let (base, new) = match pairing {
            Pairing::Both(base, new) => (base, new),
            Pairing::OnlyBase(_) => return self.only_in_base += 1,
            Pairing::OnlyNew(_) => return self.only_in_new += 1,
        };
        self.shared += 1;
        if let (Some(b), Some(n)) = (base.outcome.passed(), new.outcome.passed()) {
            self.paired += 1;
            self.base_passed += u64::from(b);
            self.new_passed += u64::from(n);
        }
        match Change::of(base.outcome, new.outcome) {
            Change::Regression => self.regressions += 1,
            Change::Fix => self.fixes += 1,
            Change::NewError => self.new_errors += 1,
            Change::ErrorResolved | Change::Unchanged => {}
        }
        self.cost.add(base.cost_usd, new.cost_usd);
        let cost_unknown = |e: &Evaluation| e.tokens.is_some() && e.cost_usd.is_none();
        self.cost.unknown |= cost_unknown(base) || cost_unknown(new);
        self.latency.add(base.latency_ms, new.latency_ms);
        self.tokens
            .add(base.tokens.map(|t| t as f64), new.tokens.map(|t| t as f64));
    }

    fn success_pct(&self, passed: u64) -> Option<f64> {
        (self.paired > 0).then(|| passed as f64 * 100.0 / self.paired as f64)
    }

    /// McNemar's test: `b` the regressions (only the base run passed), `c` the fixes.
    fn mcnemar(&self) -> McNemar {
        McNemar::new(self.regressions, self.fixes)
    }

    /// McNemar's p-value; none without a paired evaluation (nothing was compared: `–`, not a
    /// p of 1).
    fn p_value(&self) -> Option<f64> {
        if self.paired == 0 {
            return None;
        }
        self.mcnemar().p_value()
    }

    /// Whether the success rate dropped with McNemar p < 0.05.
    fn significant_regression(&self) -> bool {
        self.regressions > self.fixes && self.p_value().is_some_and(|p| p < SIGNIFICANCE)
    }

    fn describe(&self) -> String {
        let pct = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.1} %"));
        format!(
            "{}: success {} → {} on {} paired evaluations ({} regressions, {} fixes), \
             McNemar p = {:.4}",
            self.model,
            pct(self.success_pct(self.base_passed)),
            pct(self.success_pct(self.new_passed)),
            self.paired,
            self.regressions,
            self.fixes,
            self.p_value().unwrap_or(1.0),
        )
    }
}

/// Compares benchmark run `new` with run `base`, both read from `store` (`track diff`).
pub(crate) fn compare(store: &Store, base: i64, new: i64) -> Result<KindDiff, DiffError> {
    Ok(diff(
        store.bench_columns(&[base], false)?,
        store.bench_columns(&[new], false)?,
    )?)
}

/// Why two templates of a run cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum TemplateDiffError {
    #[error(
        "run {run} has no template `{name}`: {}",
        if known.is_empty() {
            "it has no templates (its benchmark file has no `templates:`)".to_owned()
        } else {
            format!("its templates are {}", known.join(", "))
        }
    )]
    NoSuchTemplate {
        run: i64,
        name: String,
        known: Vec<String>,
    },
    #[error(transparent)]
    Diff(#[from] DiffError),
}

/// Compares template `new` of benchmark run `run` with its template `base` (`track diff RUN
/// --templates BASE NEW`): the evaluations of one paired with those of the other by model,
/// prompt (case) and repeat.
pub(crate) fn compare_templates(
    store: &Store,
    run: i64,
    (base, new): (&str, &str),
) -> Result<KindDiff, TemplateDiffError> {
    let known = store.bench_template_names(run).map_err(DiffError::from)?;
    for name in [base, new] {
        if !known.iter().any(|k| k == name) {
            return Err(TemplateDiffError::NoSuchTemplate {
                run,
                name: name.to_owned(),
                known,
            });
        }
    }
    let all = evaluations(
        store
            .bench_columns(&[run], false)
            .map_err(DiffError::from)?,
    );
    let of = |name: &str| -> Vec<Evaluation> {
        all.iter()
            .filter(|e| e.template.as_deref() == Some(name))
            .map(|e| Evaluation {
                template: None,
                ..e.clone()
            })
            .collect()
    };
    Ok(diff_evaluations(of(base), of(new)).map_err(DiffError::from)?)
}

/// Compares the evaluations of two benchmark runs.
pub(crate) fn diff(base: BenchColumns, new: BenchColumns) -> PolarsResult<KindDiff> {
    diff_evaluations(evaluations(base), evaluations(new))
}

/// Compares two sets of evaluations, paired by model, template, prompt and repeat.
fn diff_evaluations(base: Vec<Evaluation>, new: Vec<Evaluation>) -> PolarsResult<KindDiff> {
    let paired = pair_by_key(base, new, |e| {
        (
            e.model.clone(),
            e.template.clone(),
            e.prompt.clone(),
            e.repeat,
        )
    });
    let mut tallies: Vec<ModelTally> = Vec::new();
    for pairing in &paired {
        let model = either(pairing).model.as_str();
        let position = match tallies.iter().position(|t| t.model == model) {
            Some(position) => position,
            None => {
                tallies.push(ModelTally {
                    model: model.to_owned(),
                    ..ModelTally::default()
                });
                tallies.len() - 1
            }
        };
        tallies[position].add(pairing);
    }
    let significant: Vec<String> = tallies
        .iter()
        .filter(|t| t.significant_regression())
        .map(ModelTally::describe)
        .collect();
    let counts = DiffCounts {
        shared: tallies.iter().map(|t| t.shared).sum(),
        only_in_base: tallies.iter().map(|t| t.only_in_base).sum(),
        only_in_new: tallies.iter().map(|t| t.only_in_new).sum(),
        regressions: tallies.iter().map(|t| t.regressions).sum(),
        fixes: tallies.iter().map(|t| t.fixes).sum(),
        new_errors: tallies.iter().map(|t| t.new_errors).sum(),
        significant_regressions: significant.len() as u64,
    };
    Ok(KindDiff {
        counts,
        summary: summary_frame(&tallies)?,
        items: items_frame(&paired)?,
        significant,
        improvements: Vec::new(),
    })
}

/// One row per model, in the order models first appear.
fn summary_frame(tallies: &[ModelTally]) -> PolarsResult<DataFrame> {
    let column = |name: &str, values: Vec<u64>| Column::new(name.into(), values);
    let of = |f: fn(&ModelTally) -> u64| tallies.iter().map(f).collect::<Vec<_>>();
    let floats = |f: &dyn Fn(&ModelTally) -> Option<f64>| {
        tallies.iter().map(f).collect::<Vec<Option<f64>>>()
    };
    let base_pct = floats(&|t| t.success_pct(t.base_passed));
    let new_pct = floats(&|t| t.success_pct(t.new_passed));
    let delta_pct: Vec<Option<f64>> = base_pct
        .iter()
        .zip(&new_pct)
        .map(|(b, n)| difference(*b, *n))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            c::MODEL.into(),
            tallies.iter().map(|t| t.model.as_str()).collect::<Vec<_>>(),
        ),
        column(c::SHARED, of(|t| t.shared)),
        column(c::PAIRED, of(|t| t.paired)),
        Column::new(c::BASE_SUCCESS_PCT.into(), base_pct),
        Column::new(c::NEW_SUCCESS_PCT.into(), new_pct),
        Column::new(c::DELTA_SUCCESS_PCT.into(), delta_pct),
        column(c::REGRESSIONS, of(|t| t.regressions)),
        column(c::FIXES, of(|t| t.fixes)),
        column(c::NEW_ERRORS, of(|t| t.new_errors)),
        Column::new(c::P_VALUE.into(), floats(&|t| t.p_value())),
        Column::new(
            c::SIGNIFICANT_REGRESSION.into(),
            tallies
                .iter()
                .map(ModelTally::significant_regression)
                .collect::<Vec<_>>(),
        ),
        column(c::ONLY_IN_BASE, of(|t| t.only_in_base)),
        column(c::ONLY_IN_NEW, of(|t| t.only_in_new)),
        Column::new(c::DELTA_COST_USD.into(), floats(&|t| t.cost.delta())),
        Column::new(
            c::DELTA_MEAN_LATENCY_MS.into(),
            floats(&|t| t.latency.delta_of_means()),
        ),
        Column::new(
            c::DELTA_TOKENS.into(),
            tallies
                .iter()
                .map(|t| t.tokens.delta().map(|d| d as i64))
                .collect::<Vec<_>>(),
        ),
    ])
}

/// One row per evaluation of either run.
fn items_frame(paired: &[Pairing<Evaluation>]) -> PolarsResult<DataFrame> {
    let pick = |f: &dyn Fn(&Evaluation) -> Option<f64>| -> [Vec<Option<f64>>; 3] {
        let mut out: [Vec<Option<f64>>; 3] = Default::default();
        for pairing in paired {
            let (b, n) = sides(pairing);
            let (b, n) = (b.and_then(f), n.and_then(f));
            out[0].push(b);
            out[1].push(n);
            out[2].push(difference(b, n));
        }
        out
    };
    let [base_latency, new_latency, delta_latency] = pick(&|e| e.latency_ms);
    let [base_cost, new_cost, delta_cost] = pick(&|e| e.cost_usd);
    let [base_tokens, new_tokens, delta_tokens] = pick(&|e| e.tokens.map(|t| t as f64));
    let as_int = |v: Vec<Option<f64>>| v.into_iter().map(|t| t.map(|t| t as i64)).collect();
    let key =
        |f: fn(&Evaluation) -> &str| -> Vec<&str> { paired.iter().map(|p| f(either(p))).collect() };
    let status_of = |side: usize| -> Vec<Option<&str>> {
        paired
            .iter()
            .map(|p| {
                let both = sides(p);
                let e = if side == 0 { both.0 } else { both.1 };
                e.map(|e| e.outcome.as_str())
            })
            .collect()
    };
    let call_of = |side: usize| -> Vec<Option<i64>> {
        paired
            .iter()
            .map(|p| {
                let both = sides(p);
                let e = if side == 0 { both.0 } else { both.1 };
                e.and_then(|e| e.call_id)
            })
            .collect()
    };
    let change: Vec<Option<&str>> = paired
        .iter()
        .map(|p| match p {
            Pairing::Both(b, n) => Some(Change::of(b.outcome, n.outcome).label()),
            _ => None,
        })
        .collect();
    let repeat: Vec<u32> = paired.iter().map(|p| either(p).repeat).collect();
    let template: Vec<Option<&str>> = paired
        .iter()
        .map(|p| either(p).template.as_deref())
        .collect();
    let int_column = |name: &str, values: Vec<Option<i64>>| Column::new(name.into(), values);
    DataFrame::new_infer_height(vec![
        Column::new(c::MODEL.into(), key(|e| &e.model)),
        Column::new(c::TEMPLATE.into(), template),
        Column::new(c::PROMPT.into(), key(|e| &e.prompt)),
        Column::new(c::REPEAT.into(), repeat),
        Column::new(c::CHANGE.into(), change),
        Column::new(
            c::ONLY_IN.into(),
            paired.iter().map(only_in).collect::<Vec<_>>(),
        ),
        Column::new(c::BASE_STATUS.into(), status_of(0)),
        Column::new(c::NEW_STATUS.into(), status_of(1)),
        Column::new(c::BASE_LATENCY_MS.into(), base_latency),
        Column::new(c::NEW_LATENCY_MS.into(), new_latency),
        Column::new(c::DELTA_LATENCY_MS.into(), delta_latency),
        Column::new(c::BASE_COST_USD.into(), base_cost),
        Column::new(c::NEW_COST_USD.into(), new_cost),
        Column::new(c::DELTA_COST_USD.into(), delta_cost),
        int_column(c::BASE_TOKENS, as_int(base_tokens)),
        int_column(c::NEW_TOKENS, as_int(new_tokens)),
        int_column(c::DELTA_TOKENS, as_int(delta_tokens)),
        int_column(BASE_CALL_ID, call_of(0)),
        int_column(NEW_CALL_ID, call_of(1)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One evaluation: (model, prompt, repeat, passed, latency, cost).
    type Row<'a> = (&'a str, &'a str, u32, Option<bool>, f64, f64);

    /// Columns of one run.
    fn columns(rows: &[Row<'_>]) -> BenchColumns {
        let mut c = BenchColumns::default();
        for &(model, prompt, repeat, passed, latency, cost) in rows {
            c.run_id.push(1);
            c.model_ref.push(model.into());
            c.prompt_name.push(prompt.into());
            c.repeat_index.push(repeat);
            c.outcome
                .push(passed.map_or(Outcome::Error, Outcome::of_test));
            let answered = passed.is_some();
            c.latency_ms.push(answered.then_some(latency));
            c.cost_usd.push(answered.then_some(cost));
            c.input_tokens.push(answered.then_some(10));
            c.output_tokens.push(answered.then_some(5));
        }
        c
    }

    fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name)
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect()
    }

    fn u64s(df: &DataFrame, name: &str) -> Vec<u64> {
        df.column(name)
            .unwrap()
            .u64()
            .unwrap()
            .iter()
            .flatten()
            .collect()
    }

    #[test]
    fn two_templates_of_a_case_pair_with_themselves_across_runs() {
        let with_templates = |rows: &[Row<'_>], templates: &[&str]| {
            let mut c = columns(rows);
            c.template = templates.iter().map(|t| Some((*t).to_owned())).collect();
            c
        };
        // steps fails p1 in the base run and passes in the new one; terse passes in both.
        let base = with_templates(
            &[
                ("a", "p1", 0, Some(true), 100.0, 0.01),
                ("a", "p1", 0, Some(false), 100.0, 0.01),
            ],
            &["terse", "steps"],
        );
        let new = with_templates(
            &[
                ("a", "p1", 0, Some(true), 100.0, 0.01),
                ("a", "p1", 0, Some(true), 100.0, 0.01),
            ],
            &["steps", "terse"],
        );
        let d = diff(base, new).unwrap();
        assert_eq!((d.counts.shared, d.counts.fixes), (2, 1));
        assert_eq!(d.counts.regressions, 0);
        assert_eq!(
            strings(&d.items, "template"),
            [Some("terse".to_owned()), Some("steps".to_owned())]
        );
        assert_eq!(
            strings(&d.items, "change"),
            [Some("unchanged".to_owned()), Some("fix".to_owned())]
        );
    }

    #[test]
    fn regressions_fixes_errors_and_unpaired_items_are_counted() {
        let base = columns(&[
            ("a", "p1", 0, Some(true), 100.0, 0.01),
            ("a", "p2", 0, Some(false), 100.0, 0.01),
            ("a", "p3", 0, Some(true), 100.0, 0.01),
            ("a", "p4", 0, None, 0.0, 0.0),
            ("a", "p5", 0, Some(true), 100.0, 0.01),
            ("b", "p1", 0, Some(true), 100.0, 0.01),
        ]);
        let new = columns(&[
            ("a", "p1", 0, Some(false), 300.0, 0.02),
            ("a", "p2", 0, Some(true), 100.0, 0.01),
            ("a", "p3", 0, None, 0.0, 0.0),
            ("a", "p4", 0, Some(true), 100.0, 0.01),
            ("a", "p1", 1, Some(true), 100.0, 0.01),
            ("b", "p1", 0, Some(true), 50.0, 0.01),
        ]);
        let d = diff(base, new).unwrap();
        assert_eq!(
            d.counts,
            DiffCounts {
                shared: 5,
                only_in_base: 1,
                only_in_new: 1,
                regressions: 1,
                fixes: 1,
                new_errors: 1,
                significant_regressions: 0,
            }
        );
        assert_eq!(
            strings(&d.items, "change"),
            [
                Some("regression"),
                Some("fix"),
                Some("new_error"),
                Some("error_resolved"),
                None,
                Some("unchanged"),
                None
            ]
            .map(|s| s.map(str::to_owned))
        );
        assert_eq!(
            strings(&d.items, "only_in")[4..],
            [Some("base".to_owned()), None, Some("new".to_owned())]
        );
        let s = &d.summary;
        assert_eq!(strings(s, "model"), [Some("a".into()), Some("b".into())]);
        assert_eq!(u64s(s, "paired"), [2, 1], "errors are not paired outcomes");
        assert_eq!(u64s(s, "only_in_base"), [1, 0]);
        let f = |name: &str| s.column(name).unwrap().f64().unwrap().get(0);
        assert_eq!(
            (f("base_success_pct"), f("new_success_pct")),
            (Some(50.0), Some(50.0))
        );
        assert_eq!(f("p_value"), Some(1.0));
        // Latency over the evaluations answered in both runs: p1 (+200 ms) and p2 (0).
        assert_eq!(f("delta_mean_latency_ms"), Some(100.0));
        assert!((f("delta_cost_usd").unwrap() - 0.01).abs() < 1e-12);
    }

    #[test]
    fn a_model_with_no_paired_evaluation_has_no_p_value() {
        let base: Vec<Row<'_>> = vec![
            ("kept", "p1", 0, Some(true), 1.0, 0.0),
            ("gone", "p1", 0, Some(true), 1.0, 0.0),
            ("erred", "p1", 0, None, 1.0, 0.0),
        ];
        let new: Vec<Row<'_>> = vec![
            ("kept", "p1", 0, Some(true), 1.0, 0.0),
            ("erred", "p1", 0, None, 1.0, 0.0),
            ("came", "p1", 0, Some(false), 1.0, 0.0),
        ];
        let d = diff(columns(&base), columns(&new)).unwrap();
        let s = &d.summary;
        assert_eq!(
            strings(s, "model"),
            ["kept", "gone", "erred", "came"].map(|m| Some(m.to_owned()))
        );
        let p: Vec<Option<f64>> = s.column("p_value").unwrap().f64().unwrap().iter().collect();
        // Only `kept` was compared (no discordant pair: p = 1); the others share no paired
        // evaluation (`erred` shares one, an error both times).
        assert_eq!(p, [Some(1.0), None, None, None]);
    }

    #[test]
    fn mcnemar_decides_significance() {
        // 12 prompts all flip passed → failed: b = 12, c = 0, exact p = 2 / 2^12.
        let prompts: Vec<String> = (0..12).map(|i| format!("p{i}")).collect();
        let rows = |passed: bool| -> Vec<Row<'_>> {
            prompts
                .iter()
                .map(|p| ("m", p.as_str(), 0, Some(passed), 1.0, 0.0))
                .collect()
        };
        let d = diff(columns(&rows(true)), columns(&rows(false))).unwrap();
        assert_eq!(d.counts.regressions, 12);
        assert_eq!(d.counts.significant_regressions, 1);
        let p = d.summary.column("p_value").unwrap().f64().unwrap().get(0);
        assert!((p.unwrap() - 2.0 / 4096.0).abs() < 1e-12, "{p:?}");
        assert!(
            d.significant[0].starts_with("m: success 100.0 % → 0.0 %"),
            "{:?}",
            d.significant
        );
        // The same flips the other way are fixes, never a regression.
        let better = diff(columns(&rows(false)), columns(&rows(true))).unwrap();
        assert_eq!(
            (better.counts.fixes, better.counts.significant_regressions),
            (12, 0)
        );
        // One flip among twelve is noise: p = 1.
        let mut one = rows(true);
        one[0].3 = Some(false);
        let d = diff(columns(&rows(true)), columns(&one)).unwrap();
        assert_eq!(
            (d.counts.regressions, d.counts.significant_regressions),
            (1, 0)
        );
    }
}
