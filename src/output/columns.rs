//! Which columns a terminal table shows (compact or `--wide`) and under which headers: the
//! short headers of compact tables and the readable header of a column name.

/// Which columns a terminal table shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Columns {
    /// The main columns under short headers: what a terminal has room for.
    #[default]
    Compact,
    /// Every column under its full header (`--wide`), as CSV and JSON always have.
    Wide,
}

impl Columns {
    /// `Wide` when `wide` is set.
    pub(crate) fn wide_if(wide: bool) -> Self {
        if wide { Self::Wide } else { Self::Compact }
    }

    /// Whether a compact table shows the column `name`: it leaves out confidence bounds,
    /// counts and totals that the columns it keeps imply (failed = n - passed - errors; paid
    /// <= cost), and breakdowns (tokens in and out, energy bounds).
    pub(super) fn shows(self, name: &str) -> bool {
        self == Self::Wide
            || !(name.ends_with("_low_pct")
                || name.ends_with("_high_pct")
                || rule(name).is_some_and(|c| c.wide_only))
    }

    /// The header of the column `name`.
    pub(super) fn header(self, name: &str) -> String {
        match self {
            Self::Wide => header(name),
            Self::Compact => short_header(name),
        }
    }
}

/// A column a terminal table shows in its own way: under a short header in compact tables, or
/// only in `--wide` ones (CSV and JSON always have every column, under its name). The frames
/// name such a column through its constant here (`SUCCESS_PCT.name`, or a kind's constant
/// defined as it), so renaming the column renames it with its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Column {
    /// The column's name: the stable schema of `--format csv|json` and the exports.
    pub name: &'static str,
    /// Its header in compact tables, when its full header is long.
    pub short: Option<&'static str>,
    /// Shown only by `--wide` tables: implied by the columns compact tables keep, or a
    /// breakdown.
    pub wide_only: bool,
}

impl Column {
    /// The column `name`, shown as any other until a rule is added.
    const fn named(name: &'static str) -> Self {
        Self {
            name,
            short: None,
            wide_only: false,
        }
    }

    /// Headed `short` in compact tables.
    const fn short(self, short: &'static str) -> Self {
        Self {
            short: Some(short),
            ..self
        }
    }

    /// Shown only by `--wide` tables.
    const fn wide(self) -> Self {
        Self {
            wide_only: true,
            ..self
        }
    }
}

/// Declares the columns with a display rule, each a [`Column`] constant, and [`RULED`], every
/// one of them: a rule cannot be declared and left out.
macro_rules! display_columns {
    ($($(#[$doc:meta])* $constant:ident = $name:literal $(.$rule:ident($($arg:literal)?))+;)*) => {
        $(
            $(#[$doc])*
            pub(crate) const $constant: Column = Column::named($name)$(.$rule($($arg)?))+;
        )*
        /// Every column with a display rule.
        pub(crate) const RULED: &[Column] = &[$($constant),*];
    };
}

display_columns! {
    // Benchmarks' results and summaries (`crate::bench::columns`), and their shares elsewhere.
    RESULTS = "results".short("n");
    /// Implied: failed = results - passed - errors.
    PASSED = "passed".short("pass").wide();
    FAILED = "failed".wide();
    ERRORS = "errors".short("err");
    SUCCESS_PCT = "success_pct".short("pass %");
    SUCCESS_PCT_ALL = "success_pct_all".short("all %");
    /// A model's latencies added up: calls overlap, so not the time the run took (`runs'`
    /// `time s`, the run's wall time).
    TOTAL_TIME_S = "total_time_s".short("latency sum s");
    TIME_S = "time_s".short("time s");
    TOTAL_COST_USD = "total_cost_usd".short("cost $");
    COST_USD = "cost_usd".short("cost $");
    /// Paid is at most cost.
    PAID_USD = "paid_usd".short("paid $").wide();
    ENERGY_WH = "energy_wh".short("Wh");
    CACHE_HITS = "cache_hits".short("hits");
    AVG_TIME_S = "avg_time_s".short("avg s");
    AVG_COST_USD = "avg_cost_usd".short("avg $");
    AVG_ENERGY_WH = "avg_energy_wh".short("avg Wh");
    // Breakdowns: tokens in and out, energy bounds.
    INPUT_TOKENS = "input_tokens".wide();
    OUTPUT_TOKENS = "output_tokens".wide();
    AVG_INPUT_TOKENS = "avg_input_tokens".wide();
    AVG_OUTPUT_TOKENS = "avg_output_tokens".wide();
    TOKENS_IN = "tokens_in".wide();
    TOKENS_OUT = "tokens_out".wide();
    ENERGY_WH_MIN = "energy_wh_min".wide();
    ENERGY_WH_MAX = "energy_wh_max".wide();
    PROVIDER = "provider".wide();
    MODEL_ID = "model_id".wide();

    // `track runs`.
    WALL_TIME_S = "wall_time_s".short("time s");
    /// Its compact table, where paid stays beside the budget.
    RUN_PAID_USD = "run_paid_usd".short("paid $");
    BUDGET_USD = "budget_usd".short("budget $");
    COMMAND = "command".wide();
    /// The data files and templates a run read, with their hashes.
    INPUTS = "inputs".wide();
    /// The models of a run without a price: its cost and paid are unknown.
    UNPRICED = "unpriced".wide();
    /// The run that resumed an unfinished one (its status says so in tables too).
    RESUMED_BY = "resumed_by".wide();

    // The dry run's plan (`track run --dry-run`).
    MAX_COST_USD = "max_cost_usd".short("max $");
    TO_CALL = "to_call".short("to call");

    // `track models`.
    INPUT_USD_PER_MTOK = "input_usd_per_mtok".short("in $/Mtok");
    OUTPUT_USD_PER_MTOK = "output_usd_per_mtok".short("out $/Mtok");
    PARAMETERS_B = "parameters_b".short("params B");
    ALIAS = "alias".wide();
    ACTIVE_B = "active_b".wide();
    TOTAL_B = "total_b".wide();
    PUE = "pue".wide();
    /// The batch API, for --wide, CSV and JSON.
    BATCH = "batch".wide();
    /// Tokens a call reads and writes, where published.
    CONTEXT_WINDOW = "context_window".wide();
    /// Where a model's prices come from (a price list at a commit, config.yaml).
    PRICE_SOURCE = "price_source".wide();

    // Reviews (`crate::review::columns`).
    PARSE_FAILURES = "parse_failures".short("unparsable");
    PARSE_FAILURE_PCT = "parse_failure_pct".short("unparsable %");
    NO_OFFICIAL = "no_official".short("no official");
    NA_SCORES = "na_scores".short("N/A");
    WITH_NA = "with_na".short("with N/A");
    MEAN_OVERALL = "mean_overall".short("overall");
    MEAN_AVERAGE_PN = "mean_average_pn".short("mean P");

    // Pairwise comparisons (`crate::pairwise::columns`).
    CANDIDATE_A = "candidate_a".short("A");
    CANDIDATE_B = "candidate_b".short("B");
    WINS_A = "wins_a".short("A wins");
    WINS_B = "wins_b".short("B wins");
    VERDICTS = "verdicts".short("n");
    INCONSISTENT = "inconsistent".short("incons.");
    INCONSISTENCY = "inconsistency".short("share");
    /// The intervals of win rates and strengths.
    WIN_RATE_LOW = "win_rate_low".wide();
    WIN_RATE_HIGH = "win_rate_high".wide();
    STRENGTH_LOW = "strength_low".wide();
    STRENGTH_HIGH = "strength_high".wide();
    /// Pairwise diffs: the verdicts that moved, and the pair's strength gap.
    TOWARD_A = "toward_a".short("→ A");
    TOWARD_B = "toward_b".short("→ B");
    BASE_STRENGTH_GAP = "base_strength_gap".short("base gap");
    NEW_STRENGTH_GAP = "new_strength_gap".short("new gap");
    /// Pairwise diffs: the changed candidate whose verdicts moved toward it, and the
    /// candidates of a pair that changed between the runs.
    GAINED_GROUND = "gained_ground".short("gained");
    CHANGED_CANDIDATES = "changed_candidates".wide();

    // `track diff --items`: the calls behind each run's answer (the answers are shown).
    BASE_CALL_ID = "base_call_id".wide();
    NEW_CALL_ID = "new_call_id".wide();
}

/// The rule of the column `name`, if it has one.
fn rule(name: &str) -> Option<&'static Column> {
    RULED.iter().find(|c| c.name == name)
}

/// Where the cells of a text column may be broken over lines when a table is wider than the
/// terminal: never (a name, a timestamp: cut with `…` only when it cannot fit even in a part of
/// its own), at spaces (prose: an error, a command line) or after commas (a list of names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wrap {
    Never,
    Spaces,
    Commas,
}

/// How the cells of the column `name` may be broken over lines ([`Wrap`]).
pub(super) fn wrap(name: &str) -> Wrap {
    match name {
        // `track runs` (a run without a file is named by its command line), `--errors`, the
        // dry run's plan, `track models`' key and price source.
        "file" | "command" | "error" | "item" | "note" | "key" | "detail" | "justification"
        | "invalid_reason" | "base_answer" | "new_answer" | "price_source" | "reason"
        | "answer_start" => Wrap::Spaces,
        // `track runs`' models, and those without a price.
        "models" | "unpriced" => Wrap::Commas,
        _ => Wrap::Never,
    }
}

/// Whether the column `name` names a table's row rather than measuring it (the run, model,
/// template, case, repeat of a result; a run's id; an error's stage and item; a review's
/// reviewer, sensor and criterion; a relevance item's image, predicate and variant): a table
/// printed in parts repeats the first columns that do in every part.
pub(super) fn identifies(name: &str) -> bool {
    matches!(
        name,
        "run_id"
            | "id"
            | "stage"
            | "model"
            | "template"
            | "prompt"
            | "case"
            | "repeat"
            | "item"
            | "reference"
            | "candidate_a"
            | "candidate_b"
            | "reviewer"
            | "generator"
            | "brand"
            | "sensor"
            | "criterion"
            | "image"
            | "predicate"
            | "predicate_type"
            | "trial"
            | "variant"
            | "class"
            | "policy"
            | "statistic"
            | "metric"
    )
}

/// The header of a compact table: a short form when there is one, else the full header.
fn short_header(name: &str) -> String {
    rule(name)
        .and_then(|c| c.short)
        .map_or_else(|| header(name), str::to_owned)
}

/// A header a person reads: `total_cost_usd` becomes `total cost ($)`, units last.
pub(crate) fn header(name: &str) -> String {
    // Pairwise comparisons' sides: a final `_b` is their B, not billions.
    match name {
        // Stable in CSV as `total_time_s`, read as what it is.
        "total_time_s" => return "latency sum (s)".to_owned(),
        "candidate_a" => return "candidate A".to_owned(),
        "candidate_b" => return "candidate B".to_owned(),
        "wins_a" => return "A wins".to_owned(),
        "wins_b" => return "B wins".to_owned(),
        "toward_a" => return "toward A".to_owned(),
        "toward_b" => return "toward B".to_owned(),
        _ => {}
    }
    if let Some((_, model)) = name.split_once('[') {
        // `success_pct[openai:gpt-4o]` -> `openai:gpt-4o %`
        return format!("{} %", model.trim_end_matches(']'));
    }
    let name = name.replace("_usd_per_mtok", "_perMtok");
    let mut words = Vec::new();
    let mut unit = "";
    for word in name.split('_') {
        match word {
            "usd" => unit = " ($)",
            "perMtok" => unit = " ($/Mtok)",
            "pct" => unit = " %",
            "wh" => unit = " (Wh)",
            "s" => unit = " (s)",
            "ms" => unit = " (ms)",
            "b" => unit = " (B)",
            other => words.push(other),
        }
    }
    format!("{}{unit}", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::{Columns, RULED, header};

    /// Every column with a rule is a real column: a frame names it through its constant (a
    /// rule no frame's column uses would be a rename that left its rule behind), and no two
    /// rules name one column (the first would win unseen).
    #[test]
    fn every_column_with_a_rule_is_a_real_column_named_through_its_constant() {
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut texts = Vec::new();
        let mut folders = vec![source.clone()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && path != source.join("output").join("columns.rs")
                {
                    texts.push(std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        let this = include_str!("columns.rs");
        let unused: Vec<&str> = RULED
            .iter()
            .filter_map(|c| {
                let constant = this
                    .lines()
                    .find_map(|l| {
                        let (constant, rest) = l.trim().split_once(" = ")?;
                        rest.starts_with(&format!("\"{}\".", c.name))
                            .then_some(constant)
                    })
                    .unwrap_or_else(|| panic!("no constant declares `{}`", c.name));
                let used = format!("columns::{constant}.name");
                (!texts.iter().any(|t| t.contains(&used))).then_some(c.name)
            })
            .collect();
        assert!(
            unused.is_empty(),
            "rules of columns no frame names through their constant: {unused:?}"
        );
        for (i, column) in RULED.iter().enumerate() {
            assert!(
                RULED[..i].iter().all(|other| other.name != column.name),
                "two rules for `{}`",
                column.name
            );
        }
    }

    #[test]
    fn compact_tables_use_the_rule_declared_beside_the_column() {
        for column in RULED {
            let compact = Columns::Compact.header(column.name);
            match column.short {
                Some(short) => assert_eq!(compact, short),
                None => assert_eq!(compact, header(column.name)),
            }
            assert_eq!(Columns::Compact.shows(column.name), !column.wide_only);
            assert!(Columns::Wide.shows(column.name));
            assert_eq!(Columns::Wide.header(column.name), header(column.name));
        }
    }

    #[test]
    fn a_final_b_is_billions_except_for_a_pairs_second_side() {
        assert_eq!(header("parameters_b"), "parameters (B)");
        assert_eq!(header("total_cost_usd"), "total cost ($)");
        assert_eq!(header("candidate_a"), "candidate A");
        assert_eq!(header("candidate_b"), "candidate B");
        assert_eq!(header("wins_b"), "B wins");
        assert_eq!(header("toward_b"), "toward B");
    }

    #[test]
    fn summed_latency_is_not_called_time() {
        assert_eq!(header("total_time_s"), "latency sum (s)");
        assert_eq!(super::short_header("total_time_s"), "latency sum s");
        assert_eq!(header("wall_time_s"), "wall time (s)");
        assert_eq!(super::short_header("wall_time_s"), "time s");
    }
}
