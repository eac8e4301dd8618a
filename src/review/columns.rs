//! The names of the review kind's frame columns, as its summaries, diffs, report section,
//! console output and exports read and write them: one constant each, so a misspelt
//! column does not compile. The names are the stable schema of `--format csv|json`: never
//! renamed.

/// `alpha_ordinal`.
pub const ALPHA_ORDINAL: &str = "alpha_ordinal";
/// `average_score`.
pub const AVERAGE_SCORE: &str = "average_score";
/// `base_mean_score`.
pub const BASE_MEAN_SCORE: &str = "base_mean_score";
/// `base_score`.
pub const BASE_SCORE: &str = "base_score";
/// `cache_hit`.
pub const CACHE_HIT: &str = "cache_hit";
/// `change`.
pub const CHANGE: &str = crate::analysis::diff::CHANGE;
/// `complete`.
pub const COMPLETE: &str = "complete";
/// `cost_usd`.
pub const COST_USD: &str = crate::output::columns::COST_USD.name;
/// `criterion`.
pub const CRITERION: &str = "criterion";
/// `datasheets_compared`.
pub const DATASHEETS_COMPARED: &str = "datasheets_compared";
/// `delta_high`.
pub const DELTA_HIGH: &str = "delta_high";
/// `delta_low`.
pub const DELTA_LOW: &str = "delta_low";
/// `delta_mean_score`.
pub const DELTA_MEAN_SCORE: &str = "delta_mean_score";
/// `delta_score`.
pub const DELTA_SCORE: &str = "delta_score";
/// `errors`.
pub const ERRORS: &str = crate::output::columns::ERRORS.name;
/// `generator`.
pub const GENERATOR: &str = "generator";
/// `higher`.
pub const HIGHER: &str = "higher";
/// `kappa_quadratic`.
pub const KAPPA_QUADRATIC: &str = "kappa_quadratic";
/// `lower`.
pub const LOWER: &str = "lower";
/// `mean_average_pn`.
pub const MEAN_AVERAGE_PN: &str = crate::output::columns::MEAN_AVERAGE_PN.name;
/// `mean_high`.
pub const MEAN_HIGH: &str = "mean_high";
/// `mean_low`.
pub const MEAN_LOW: &str = "mean_low";
/// `mean_overall`.
pub const MEAN_OVERALL: &str = crate::output::columns::MEAN_OVERALL.name;
/// `mean_score`.
pub const MEAN_SCORE: &str = "mean_score";
/// `na`.
pub const NA: &str = "na";
/// `na_scores`.
pub const NA_SCORES: &str = crate::output::columns::NA_SCORES.name;
/// `new_mean_score`.
pub const NEW_MEAN_SCORE: &str = "new_mean_score";
/// `new_score`.
pub const NEW_SCORE: &str = "new_score";
/// `no_official`.
pub const NO_OFFICIAL: &str = crate::output::columns::NO_OFFICIAL.name;
/// `now_na`.
pub const NOW_NA: &str = "now_na";
/// `official_status`.
pub const OFFICIAL_STATUS: &str = "official_status";
/// `only_in`.
pub const ONLY_IN: &str = crate::analysis::diff::ONLY_IN;
/// `only_in_base`.
pub const ONLY_IN_BASE: &str = "only_in_base";
/// `only_in_new`.
pub const ONLY_IN_NEW: &str = "only_in_new";
/// `overall_score`.
pub const OVERALL_SCORE: &str = "overall_score";
/// `paid_usd`.
pub const PAID_USD: &str = crate::output::columns::PAID_USD.name;
/// `paired`.
pub const PAIRED: &str = "paired";
/// `parse_failure_pct`.
pub const PARSE_FAILURE_PCT: &str = crate::output::columns::PARSE_FAILURE_PCT.name;
/// `parse_failures`.
pub const PARSE_FAILURES: &str = crate::output::columns::PARSE_FAILURES.name;
/// `parse_status`.
pub const PARSE_STATUS: &str = "parse_status";
/// `position`.
pub const POSITION: &str = "position";
/// `review_id`.
pub const REVIEW_ID: &str = "review_id";
/// `reviewer`.
pub const REVIEWER: &str = "reviewer";
/// `reviewers`.
pub const REVIEWERS: &str = "reviewers";
/// `reviews`.
pub const REVIEWS: &str = "reviews";
/// `run_id`.
pub const RUN_ID: &str = "run_id";
/// `score`.
pub const SCORE: &str = "score";
/// `scored`.
pub const SCORED: &str = "scored";
/// `sd`.
pub const SD: &str = "sd";
/// `sensor`.
pub const SENSOR: &str = "sensor";
/// `shared`.
pub const SHARED: &str = "shared";
/// `significant_regression`.
pub const SIGNIFICANT_REGRESSION: &str = "significant_regression";
/// `target`.
pub const TARGET: &str = "target";
/// `with_na`.
pub const WITH_NA: &str = crate::output::columns::WITH_NA.name;
