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
    pub fn wide_if(wide: bool) -> Self {
        if wide { Self::Wide } else { Self::Compact }
    }

    /// Whether a compact table shows the column `name`: it leaves out confidence bounds,
    /// counts and totals that the columns it keeps imply (failed = n - passed - errors; paid
    /// <= cost), and breakdowns (tokens in and out, energy bounds).
    pub(super) fn shows(self, name: &str) -> bool {
        self == Self::Wide
            || !(name.ends_with("_low_pct")
                || name.ends_with("_high_pct")
                || WIDE_ONLY.contains(&name))
    }

    /// The header of the column `name`.
    pub(super) fn header(self, name: &str) -> String {
        match self {
            Self::Wide => header(name),
            Self::Compact => short_header(name),
        }
    }
}

/// Columns only `--wide` tables show (CSV and JSON always have them).
const WIDE_ONLY: &[&str] = &[
    "passed",
    "failed",
    "paid_usd",
    "input_tokens",
    "output_tokens",
    "avg_input_tokens",
    "avg_output_tokens",
    "tokens_in",
    "tokens_out",
    "energy_wh_min",
    "energy_wh_max",
    "command",
    // `track runs`: the data files and templates a run read, with their hashes.
    "inputs",
    "provider",
    "alias",
    "model_id",
    "active_b",
    "total_b",
    "pue",
    // `track models`: the batch API, for --wide, CSV and JSON.
    "batch",
    // Pairwise comparisons: the intervals of win rates and strengths.
    "win_rate_low",
    "win_rate_high",
    "strength_low",
    "strength_high",
    // `track diff --items`: the calls behind each run's answer (the answers are shown).
    "base_call_id",
    "new_call_id",
];

/// Short headers of compact tables, for columns whose full header is long.
const SHORT_HEADERS: &[(&str, &str)] = &[
    ("results", "n"),
    ("passed", "pass"),
    ("errors", "err"),
    ("success_pct", "pass %"),
    ("success_pct_all", "all %"),
    // A model's latencies added up: calls overlap, so not the time the run took (`runs`'
    // `time s`, the run's wall time).
    ("total_time_s", "latency sum s"),
    ("wall_time_s", "time s"),
    ("time_s", "time s"),
    ("total_cost_usd", "cost $"),
    ("cost_usd", "cost $"),
    ("paid_usd", "paid $"),
    // `track runs`' compact table, where paid stays beside the budget.
    ("run_paid_usd", "paid $"),
    ("budget_usd", "budget $"),
    ("max_cost_usd", "max $"),
    ("energy_wh", "Wh"),
    ("cache_hits", "hits"),
    ("avg_time_s", "avg s"),
    ("avg_cost_usd", "avg $"),
    ("avg_energy_wh", "avg Wh"),
    ("to_call", "to call"),
    ("input_usd_per_mtok", "in $/Mtok"),
    ("output_usd_per_mtok", "out $/Mtok"),
    ("parameters_b", "params B"),
    ("parse_failures", "unparsable"),
    ("parse_failure_pct", "unparsable %"),
    ("no_official", "no official"),
    ("na_scores", "N/A"),
    ("with_na", "with N/A"),
    ("mean_overall", "overall"),
    ("mean_average_pn", "mean P"),
    // Pairwise comparisons.
    ("candidate_a", "A"),
    ("candidate_b", "B"),
    ("wins_a", "A wins"),
    ("wins_b", "B wins"),
    ("verdicts", "n"),
    ("inconsistent", "incons."),
    ("inconsistency", "share"),
    // Pairwise diffs: the verdicts that moved, and the pair's strength gap.
    ("toward_a", "→ A"),
    ("toward_b", "→ B"),
    ("base_strength_gap", "base gap"),
    ("new_strength_gap", "new gap"),
];

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
        // dry run's plan, `track models`' key.
        "file" | "command" | "error" | "item" | "note" | "key" | "detail" | "justification"
        | "invalid_reason" | "base_answer" | "new_answer" => Wrap::Spaces,
        "models" => Wrap::Commas,
        _ => Wrap::Never,
    }
}

/// The header of a compact table: a short form when there is one, else the full header.
fn short_header(name: &str) -> String {
    SHORT_HEADERS
        .iter()
        .find(|(column, _)| *column == name)
        .map_or_else(|| header(name), |(_, short)| (*short).to_owned())
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
    use super::header;

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
