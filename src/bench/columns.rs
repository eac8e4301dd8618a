//! The names of the benchmark frames' columns: the results frame, the per-model, per-prompt
//! and latency summaries, and the diff's items. Every file of the folder names columns through
//! these constants, so a rename is one edit and a typo does not compile. The names are the
//! stable schema of `--format csv|json` and the exports: changing one changes the outputs.
//! Reading a column the frame lacks is an error naming it, never an empty chart (the report's
//! readers, `crate::report::columns`).

// The results frame (one row per evaluation), and the measures the summaries read.
pub const RUN_ID: &str = "run_id";
pub const MODEL: &str = "model";
/// A result's case (a prompt test's name, or a case's id from data): `case` in every output
/// since issue 45, `prompt` before; `--by prompt` and `--by case` are the same summary.
pub const PROMPT: &str = "case";
/// The prompt template a result's request was rendered from (null without templates).
pub const TEMPLATE: &str = "template";
/// `track query --by case`: the per-case summary's first column ([`PROMPT`] itself).
pub const CASE: &str = PROMPT;
/// The weighted score of a result's checks, 0-1 (`pass: {threshold}`); in `bench_checks.csv`,
/// a check's own score.
pub const SCORE: &str = "score";

// `bench_checks.csv`: one row per check of a result that has several.
pub const CHECK_INDEX: &str = "check_index";
pub const EXPECTED: &str = "expected";
pub const WEIGHT: &str = "weight";
pub const REASON: &str = "reason";
/// `track query --by result`: the start of each result's answer, on one line.
pub const ANSWER_START: &str = "answer_start";
pub const REPEAT: &str = "repeat";
/// `passed`, `failed` or `error` ([`crate::store::Outcome`]).
pub const STATUS: &str = "status";
/// True passed, false failed, null an error: what the summaries count.
pub const PASSED: &str = crate::output::columns::PASSED.name;
pub const LATENCY_MS: &str = "latency_ms";
pub const INPUT_TOKENS: &str = crate::output::columns::INPUT_TOKENS.name;
pub const OUTPUT_TOKENS: &str = crate::output::columns::OUTPUT_TOKENS.name;
pub const COST_USD: &str = crate::output::columns::COST_USD.name;
pub const PAID_USD: &str = crate::output::columns::PAID_USD.name;
pub const ENERGY_WH: &str = crate::output::columns::ENERGY_WH.name;
pub const ENERGY_WH_MIN: &str = crate::output::columns::ENERGY_WH_MIN.name;
pub const ENERGY_WH_MAX: &str = crate::output::columns::ENERGY_WH_MAX.name;
pub const CACHE_HIT: &str = "cache_hit";
pub const PROVIDER: &str = crate::output::columns::PROVIDER.name;
pub const MODEL_ID: &str = crate::output::columns::MODEL_ID.name;
pub const METHOD: &str = "method";
pub const TOKENS_ESTIMATED: &str = "tokens_estimated";
pub const ENERGY_METHOD: &str = "energy_method";
pub const JUDGE_SCORE: &str = "judge_score";
pub const JUDGE_COST_USD: &str = "judge_cost_usd";
pub const DETAIL: &str = "detail";
/// The export's status of the run a result belongs to.
pub const RUN_STATUS: &str = "run_status";
/// The export's summaries: the status of the runs they summarise.
pub const RUNS_STATUS: &str = "status";

// The detail table a run prints when it ends (`console`): results' columns renamed.
pub const RESULT: &str = "result";
pub const TIME_S: &str = crate::output::columns::TIME_S.name;
pub const TOKENS_IN: &str = crate::output::columns::TOKENS_IN.name;
pub const TOKENS_OUT: &str = crate::output::columns::TOKENS_OUT.name;
pub const CACHED: &str = "cached";

// The per-model summary (`track query --by model`).
pub const RESULTS: &str = crate::output::columns::RESULTS.name;
pub const FAILED: &str = crate::output::columns::FAILED.name;
pub const ERRORS: &str = crate::output::columns::ERRORS.name;
pub const SUCCESS_PCT: &str = crate::output::columns::SUCCESS_PCT.name;
pub const SUCCESS_LOW_PCT: &str = "success_low_pct";
pub const SUCCESS_HIGH_PCT: &str = "success_high_pct";
pub const TOTAL_TIME_S: &str = crate::output::columns::TOTAL_TIME_S.name;
pub const TOTAL_COST_USD: &str = crate::output::columns::TOTAL_COST_USD.name;
pub const CACHE_HITS: &str = crate::output::columns::CACHE_HITS.name;
/// Per model while summing: results with an answer but no energy estimate.
pub const ENERGY_UNKNOWN: &str = "energy_unknown";
/// Per model while summing: results with an answer but no cost (no price for its model).
pub const COST_UNKNOWN: &str = "cost_unknown";
/// Per model while summing: fresh answers of unknown cost, so what was paid is unknown.
pub const PAID_UNKNOWN: &str = "paid_unknown";

// Working columns of the summaries, dropped before they are shown.
/// Per model: passed plus failed, the results with an answer.
pub const DECIDED: &str = "decided";
/// Per prompt: passed, and passed plus failed, across models.
pub const PASSED_ALL: &str = "passed_all";
pub const DECIDED_ALL: &str = "decided_all";
/// Per model and prompt: the success of the pair.
pub const PCT: &str = "pct";

// The per-prompt summary (`track query --by prompt`).
pub const SUCCESS_PCT_ALL: &str = crate::output::columns::SUCCESS_PCT_ALL.name;
pub const SUCCESS_ALL_LOW_PCT: &str = "success_all_low_pct";
pub const SUCCESS_ALL_HIGH_PCT: &str = "success_all_high_pct";
pub const AVG_INPUT_TOKENS: &str = crate::output::columns::AVG_INPUT_TOKENS.name;
pub const AVG_OUTPUT_TOKENS: &str = crate::output::columns::AVG_OUTPUT_TOKENS.name;
pub const AVG_COST_USD: &str = crate::output::columns::AVG_COST_USD.name;
pub const AVG_TIME_S: &str = crate::output::columns::AVG_TIME_S.name;
pub const AVG_ENERGY_WH: &str = crate::output::columns::AVG_ENERGY_WH.name;

// The latency summary (the report's box plots).
pub const TIMED: &str = "timed";
pub const MIN_TIME_S: &str = "min_time_s";
pub const Q1_TIME_S: &str = "q1_time_s";
pub const MEDIAN_TIME_S: &str = "median_time_s";
pub const Q3_TIME_S: &str = "q3_time_s";
pub const MAX_TIME_S: &str = "max_time_s";
pub const MEAN_TIME_S: &str = "mean_time_s";

// `track diff`: its items (one row per evaluation of either run) and its per-model summary.
pub const CHANGE: &str = crate::analysis::diff::CHANGE;
pub const ONLY_IN: &str = crate::analysis::diff::ONLY_IN;
pub const BASE_STATUS: &str = "base_status";
pub const NEW_STATUS: &str = "new_status";
pub const BASE_LATENCY_MS: &str = "base_latency_ms";
pub const NEW_LATENCY_MS: &str = "new_latency_ms";
pub const DELTA_LATENCY_MS: &str = "delta_latency_ms";
pub const BASE_COST_USD: &str = "base_cost_usd";
pub const NEW_COST_USD: &str = "new_cost_usd";
pub const DELTA_COST_USD: &str = "delta_cost_usd";
pub const BASE_TOKENS: &str = "base_tokens";
pub const NEW_TOKENS: &str = "new_tokens";
pub const DELTA_TOKENS: &str = "delta_tokens";
pub const SHARED: &str = "shared";
pub const PAIRED: &str = "paired";
pub const BASE_SUCCESS_PCT: &str = "base_success_pct";
pub const NEW_SUCCESS_PCT: &str = "new_success_pct";
pub const DELTA_SUCCESS_PCT: &str = "delta_success_pct";
pub const REGRESSIONS: &str = "regressions";
pub const FIXES: &str = "fixes";
pub const NEW_ERRORS: &str = "new_errors";
pub const P_VALUE: &str = "p_value";
pub const SIGNIFICANT_REGRESSION: &str = "significant_regression";
pub const ONLY_IN_BASE: &str = "only_in_base";
pub const ONLY_IN_NEW: &str = "only_in_new";
pub const DELTA_MEAN_LATENCY_MS: &str = "delta_mean_latency_ms";

/// The per-prompt summary's column of one model's success: `success_pct[openai:gpt-4o]`.
pub(crate) fn success_pct_of(model: &str) -> String {
    format!("{SUCCESS_PCT}[{model}]")
}

/// The per-prompt summary's column of one model's success with one template, when the results
/// come from several: `success_pct[openai:gpt-4o|terse]` (no comma: a CSV header needs no
/// quotes), and `success_pct[openai:gpt-4o]` for a run without templates among runs with some.
pub(crate) fn success_pct_of_pair(model: &str, template: Option<&str>) -> String {
    match template {
        Some(template) => format!("{SUCCESS_PCT}[{model}|{template}]"),
        None => success_pct_of(model),
    }
}
