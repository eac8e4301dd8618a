//! The names of the relevance kind's frame columns, as its summaries, diffs, report section,
//! console output and exports read and write them: one constant each, so a misspelt
//! column does not compile. The names are the stable schema of `--format csv|json`: never
//! renamed.

/// `base`.
pub const BASE: &str = "base";
/// `base_score`.
pub const BASE_SCORE: &str = "base_score";
/// `brier`.
pub const BRIER: &str = "brier";
/// `cache_hit`.
pub const CACHE_HIT: &str = "cache_hit";
/// `call_id`.
pub const CALL_ID: &str = "call_id";
/// `change`.
pub const CHANGE: &str = crate::analysis::diff::CHANGE;
/// `class`.
pub const CLASS: &str = "class";
/// `class_order`.
pub const CLASS_ORDER: &str = "class_order";
/// `coverage`.
pub const COVERAGE: &str = "coverage";
/// `delta_high`.
pub const DELTA_HIGH: &str = "delta_high";
/// `delta_low`.
pub const DELTA_LOW: &str = "delta_low";
/// `f1`.
pub const F1: &str = "f1";
/// `fn`.
pub const FN: &str = "fn";
/// `fp`.
pub const FP: &str = "fp";
/// `image`.
pub const IMAGE: &str = "image";
/// `image_sha256`.
pub const IMAGE_SHA256: &str = "image_sha256";
/// `images`.
pub const IMAGES: &str = "images";
/// `invalid`.
pub const INVALID: &str = "invalid";
/// `invalid_reason`.
pub const INVALID_REASON: &str = "invalid_reason";
/// `log_loss`.
pub const LOG_LOSS: &str = "log_loss";
/// `metric`.
pub const METRIC: &str = "metric";
/// `model`.
pub const MODEL: &str = "model";
/// `new`.
pub const NEW: &str = "new";
/// `new_score`.
pub const NEW_SCORE: &str = "new_score";
/// `only_in`.
pub const ONLY_IN: &str = crate::analysis::diff::ONLY_IN;
/// `policy`.
pub const POLICY: &str = "policy";
/// `policy_order`.
pub const POLICY_ORDER: &str = "policy_order";
/// `precision`.
pub const PRECISION: &str = "precision";
/// `predicate`.
pub const PREDICATE: &str = "predicate";
/// `predicate_type`.
pub const PREDICATE_TYPE: &str = "predicate_type";
/// `predictions`.
pub const PREDICTIONS: &str = "predictions";
/// `prompt_sha256`.
pub const PROMPT_SHA256: &str = "prompt_sha256";
/// `recall`.
pub const RECALL: &str = "recall";
/// `run_id`.
pub const RUN_ID: &str = "run_id";
/// `run_status`.
pub const RUN_STATUS: &str = "run_status";
/// `score`.
pub const SCORE: &str = "score";
/// `shared`.
pub const SHARED: &str = "shared";
/// `significant_regression`.
pub const SIGNIFICANT_REGRESSION: &str = "significant_regression";
/// `tn`.
pub const TN: &str = "tn";
/// `total_samples`.
pub const TOTAL_SAMPLES: &str = "total_samples";
/// `tp`.
pub const TP: &str = "tp";
/// `trial`.
pub const TRIAL: &str = "trial";
/// `truth`.
pub const TRUTH: &str = "truth";
/// `uncertain`.
pub const UNCERTAIN: &str = "uncertain";
/// `variant`.
pub const VARIANT: &str = "variant";
/// `variant_order`.
pub const VARIANT_ORDER: &str = "variant_order";
