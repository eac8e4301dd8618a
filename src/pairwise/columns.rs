//! The names of the pairwise frames' columns (summaries, exports, diff): one constant each, so
//! a misspelt column does not compile. They are the stable schema of `--format csv|json` and
//! of the exports: never renamed.

/// `run_id`.
pub const RUN_ID: &str = "run_id";
/// `judge`.
pub const JUDGE: &str = "judge";
/// `item`: the prompt, or the sensor.
pub const ITEM: &str = "item";
/// `candidate_a`.
pub const CANDIDATE_A: &str = crate::output::columns::CANDIDATE_A.name;
/// `candidate_b`.
pub const CANDIDATE_B: &str = crate::output::columns::CANDIDATE_B.name;
/// `repeat`.
pub const REPEAT: &str = "repeat";
/// `order`: `ab` showed candidate_a first.
pub const ORDER: &str = "order";
/// `winner`: a candidate's name, `tie` or `invalid`.
pub const WINNER: &str = "winner";
/// `justification`.
pub const JUSTIFICATION: &str = "justification";
/// `call_id`.
pub const CALL_ID: &str = "call_id";
/// `answer_a`: candidate_a's whole answer to the item (empty when the candidates are not
/// models, or it did not answer).
pub const ANSWER_A: &str = "answer_a";
/// `answer_b`.
pub const ANSWER_B: &str = "answer_b";
/// `candidate`.
pub const CANDIDATE: &str = "candidate";
/// `wins`.
pub const WINS: &str = "wins";
/// `ties`.
pub const TIES: &str = "ties";
/// `losses`.
pub const LOSSES: &str = "losses";
/// `win_rate`: wins over comparisons counted.
pub const WIN_RATE: &str = "win_rate";
/// `win_rate_low`.
pub const WIN_RATE_LOW: &str = crate::output::columns::WIN_RATE_LOW.name;
/// `win_rate_high`.
pub const WIN_RATE_HIGH: &str = crate::output::columns::WIN_RATE_HIGH.name;
/// `strength`: natural-log Bradley–Terry strength, mean 0.
pub const STRENGTH: &str = "strength";
/// `strength_low`.
pub const STRENGTH_LOW: &str = crate::output::columns::STRENGTH_LOW.name;
/// `strength_high`.
pub const STRENGTH_HIGH: &str = crate::output::columns::STRENGTH_HIGH.name;
/// `rank`.
pub const RANK: &str = "rank";
/// `wins_a`: candidate_a's wins over candidate_b.
pub const WINS_A: &str = crate::output::columns::WINS_A.name;
/// `wins_b`.
pub const WINS_B: &str = crate::output::columns::WINS_B.name;
/// `invalid`: pairs with an unreadable verdict, or unreadable verdicts.
pub const INVALID: &str = "invalid";
/// `inconsistent`: pairs whose two orders disagreed.
pub const INCONSISTENT: &str = crate::output::columns::INCONSISTENT.name;
/// `inconsistency`: the share of readable pairs whose orders disagreed.
pub const INCONSISTENCY: &str = crate::output::columns::INCONSISTENCY.name;
/// `verdicts`.
pub const VERDICTS: &str = crate::output::columns::VERDICTS.name;
/// `pairs`: pairs judged in both orders, readable.
pub const PAIRS: &str = "pairs";
/// `kappa`: Cohen's κ on winners (A, B, tie) with the other judges, their mean.
pub const KAPPA: &str = "kappa";
/// `base_strength`.
pub const BASE_STRENGTH: &str = "base_strength";
/// `new_strength`.
pub const NEW_STRENGTH: &str = "new_strength";
/// `delta_strength`.
pub const DELTA_STRENGTH: &str = "delta_strength";
/// `base_rank`.
pub const BASE_RANK: &str = "base_rank";
/// `new_rank`.
pub const NEW_RANK: &str = "new_rank";
/// `change`.
pub const CHANGE: &str = crate::analysis::diff::CHANGE;
/// `only_in`.
pub const ONLY_IN: &str = crate::analysis::diff::ONLY_IN;
/// `significant_regression`.
pub const SIGNIFICANT_REGRESSION: &str = "significant_regression";
/// `base_winner`.
pub const BASE_WINNER: &str = "base_winner";
/// `new_winner`.
pub const NEW_WINNER: &str = "new_winner";
/// The judge's call in each order of a verdict of the base run (`track diff --items`, which
/// adds its answer: `base_ab_answer`): `candidate_a` shown first...
pub const BASE_AB_CALL_ID: &str = "base_ab_call_id";
/// ...then `candidate_b` shown first.
pub const BASE_BA_CALL_ID: &str = "base_ba_call_id";
/// As [`BASE_AB_CALL_ID`], of the new run.
pub const NEW_AB_CALL_ID: &str = "new_ab_call_id";
/// As [`BASE_BA_CALL_ID`], of the new run.
pub const NEW_BA_CALL_ID: &str = "new_ba_call_id";
/// `track query --by human`: the pairs a person decided (one candidate's answer passed, the
/// other's failed) that a judge gave a readable verdict on...
pub const RATED: &str = "rated";
/// ...how many of them the judge's winner is the person's...
pub const AGREE: &str = "agree";
/// ...that share, in percent...
pub const AGREE_PCT: &str = "agree_pct";
/// ...the judge's verdicts a person rated themselves...
pub const VERDICTS_RATED: &str = "verdicts_rated";
/// ...and of those, the ones rated pass (the judge was right).
pub const VERDICTS_CONFIRMED: &str = "verdicts_confirmed";
