//! The statistics of pairwise verdicts, computed from stored rows: each pair's two orders
//! combined (a disagreement is a tie and inconsistent), wins, ties and losses, win rates with
//! Wilson intervals, Bradley–Terry strengths by maximum likelihood with bootstrap intervals
//! over items, a ranking, and the judges' agreement. Wilson, κ and the bootstrap are
//! `crate::analysis`'s; only the Bradley–Terry fit is this kind's own.

use std::collections::{BTreeMap, HashMap};

use crate::analysis::stats::{
    BOOTSTRAP, Bootstrap, Z_95, cohen_kappa, paired_bootstrap, wilson_interval_of_rate,
};
use crate::store::{Shown, VerdictRow, Winner};

/// The result of one pair judged in both orders by one judge, on one item and repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combined {
    /// Both orders gave the same winner (or both a tie).
    Agreed(Winner),
    /// The orders disagreed (a different winner, or a win against a tie): a tie.
    Inconsistent,
    /// At least one order's answer could not be read: not counted.
    Invalid,
}

impl Combined {
    /// Combines the verdicts of the two orders, each in the pair's own frame.
    pub(crate) fn of(ab: Winner, ba: Winner) -> Self {
        match (ab, ba) {
            (Winner::Invalid, _) | (_, Winner::Invalid) => Self::Invalid,
            (x, y) if x == y => Self::Agreed(x),
            _ => Self::Inconsistent,
        }
    }

    /// The winner it counts as: an inconsistent pair is a tie; `None` when invalid.
    pub fn counted(self) -> Option<Winner> {
        match self {
            Self::Agreed(w) => Some(w),
            Self::Inconsistent => Some(Winner::Tie),
            Self::Invalid => None,
        }
    }
}

/// One pair of candidates judged in both orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub run_id: i64,
    pub judge: String,
    pub item: String,
    pub repeat: u32,
    /// Candidate indices into [`Verdicts::candidates`], `a` before `b`.
    pub a: usize,
    pub b: usize,
    pub result: Combined,
    /// The judge's calls (its answers): `a` shown first, then `b` shown first.
    pub calls: [Option<i64>; 2],
}

/// Wins, ties and losses of one side, or of one pair (`wins` are the first's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    pub wins: u64,
    pub ties: u64,
    pub losses: u64,
}

impl Record {
    /// Comparisons counted.
    pub(crate) fn total(&self) -> u64 {
        self.wins + self.ties + self.losses
    }

    /// Wins over comparisons, a tie counting as half a win (as Bradley–Terry counts it: a
    /// candidate that ties every comparison wins half of them), with its Wilson interval;
    /// `None` without comparisons.
    pub(crate) fn win_rate(&self) -> Option<(f64, f64, f64)> {
        let n = self.total();
        if n == 0 {
            return None;
        }
        let rate = (self.wins as f64 + self.ties as f64 / 2.0) / n as f64;
        let (low, high) = wilson_interval_of_rate(rate, n, Z_95)?;
        Some((rate, low, high))
    }
}

/// What one judge did: its verdicts, pairs complete in both orders and how many disagreed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeRecord {
    pub judge: String,
    pub verdicts: u64,
    pub invalid_verdicts: u64,
    /// Pairs with both orders' verdicts.
    pub pairs: u64,
    /// Of those, pairs whose two orders disagreed.
    pub inconsistent: u64,
    /// Mean of its κ with each other judge; `None` alone or when undefined.
    pub kappa: Option<f64>,
}

impl JudgeRecord {
    /// The share of its readable pairs whose two orders disagreed.
    pub(crate) fn inconsistency(&self) -> Option<f64> {
        let readable = self.pairs;
        (readable > 0).then(|| self.inconsistent as f64 / readable as f64)
    }
}

/// A candidate's strength and rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strength {
    /// Natural-log Bradley–Terry strength, the candidates' mean 0; `None` when the
    /// maximum-likelihood fit does not exist (a candidate that never won or never lost).
    pub value: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Bootstrap resamples dropped because their fit had no maximum (a candidate that never
    /// won or never lost in that resample).
    pub dropped: usize,
}

/// The verdicts of some runs, combined and counted.
#[derive(Debug, Clone)]
pub struct Verdicts {
    /// Candidate names in the order they first appear.
    pub candidates: Vec<String>,
    /// Every pair judged in both orders.
    pub judged: Vec<Judged>,
    /// Per judge, in the order they first appear.
    pub judges: Vec<JudgeRecord>,
    /// Items in the order they first appear.
    pub items: Vec<String>,
}

/// The index of `name` in `names`, appended when new.
fn index_of(names: &mut Vec<String>, name: &str) -> usize {
    match names.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            names.push(name.to_owned());
            names.len() - 1
        }
    }
}

/// One judged pair, as judges' winners are matched: run, item, repeat, candidates.
type PairOf<'a> = (i64, &'a str, u32, usize, usize);

/// The key of one pair's two orders.
type PairKey = (i64, String, String, u32, String, String);

impl Verdicts {
    /// Combines `rows` (any runs) pair by pair.
    pub(crate) fn from_rows(rows: &[VerdictRow]) -> Self {
        let mut candidates = Vec::new();
        let mut items = Vec::new();
        let mut judge_names = Vec::new();
        let mut orders: BTreeMap<PairKey, [Option<Winner>; 2]> = BTreeMap::new();
        let mut calls: BTreeMap<PairKey, [Option<i64>; 2]> = BTreeMap::new();
        let mut first_seen: Vec<PairKey> = Vec::new();
        let mut judges: Vec<JudgeRecord> = Vec::new();
        for r in rows {
            index_of(&mut candidates, &r.candidate_a);
            index_of(&mut candidates, &r.candidate_b);
            index_of(&mut items, &r.item);
            let j = index_of(&mut judge_names, &r.judge);
            if j == judges.len() {
                judges.push(JudgeRecord {
                    judge: r.judge.clone(),
                    ..JudgeRecord::default()
                });
            }
            judges[j].verdicts += 1;
            judges[j].invalid_verdicts += u64::from(r.winner == Winner::Invalid);
            let key = (
                r.run_id,
                r.judge.clone(),
                r.item.clone(),
                r.repeat_index,
                r.candidate_a.clone(),
                r.candidate_b.clone(),
            );
            let call_key = key.clone();
            let slot = orders.entry(key.clone()).or_insert_with(|| {
                first_seen.push(key);
                [None, None]
            });
            slot[usize::from(r.shown == Shown::Ba)] = Some(r.winner);
            calls.entry(call_key).or_default()[usize::from(r.shown == Shown::Ba)] = r.call_id;
        }
        let mut judged = Vec::new();
        for key in first_seen {
            let Some([Some(ab), Some(ba)]) = orders.get(&key).copied() else {
                continue;
            };
            let calls = calls.get(&key).copied().unwrap_or_default();
            let (run_id, judge, item, repeat, a, b) = key;
            let result = Combined::of(ab, ba);
            let j = index_of(&mut judge_names, &judge);
            if result != Combined::Invalid {
                judges[j].pairs += 1;
                judges[j].inconsistent += u64::from(result == Combined::Inconsistent);
            }
            judged.push(Judged {
                run_id,
                a: index_of(&mut candidates, &a),
                b: index_of(&mut candidates, &b),
                judge,
                item,
                repeat,
                result,
                calls,
            });
        }
        let mut verdicts = Self {
            candidates,
            judged,
            judges,
            items,
        };
        verdicts.add_kappas();
        verdicts
    }

    /// Each judge's mean κ with the others, on the winners of the pairs both judged.
    fn add_kappas(&mut self) {
        let n = self.judges.len();
        let mut by_judge: Vec<HashMap<PairOf<'_>, i64>> = vec![HashMap::new(); n];
        for j in &self.judged {
            let Some(w) = j.result.counted() else {
                continue;
            };
            if let Some(k) = self.judges.iter().position(|r| r.judge == j.judge) {
                by_judge[k].insert(
                    (j.run_id, j.item.as_str(), j.repeat, j.a, j.b),
                    winner_scale(w),
                );
            }
        }
        let mut kappas = vec![Vec::new(); n];
        for x in 0..n {
            for y in x + 1..n {
                if let Some(k) = judges_kappa(&by_judge[x], &by_judge[y]) {
                    kappas[x].push(k);
                    kappas[y].push(k);
                }
            }
        }
        for (record, ks) in self.judges.iter_mut().zip(kappas) {
            record.kappa = (!ks.is_empty()).then(|| ks.iter().sum::<f64>() / ks.len() as f64);
        }
    }

    /// Wins, ties and losses of each pair of candidates `(a, b)` (a before b), from a's side.
    pub(crate) fn pair_records(&self) -> BTreeMap<(usize, usize), Record> {
        let mut pairs: BTreeMap<(usize, usize), Record> = BTreeMap::new();
        for j in &self.judged {
            let Some(w) = j.result.counted() else {
                continue;
            };
            let r = pairs.entry((j.a, j.b)).or_default();
            add(r, w);
        }
        pairs
    }

    /// Wins, ties and losses of each candidate against all others.
    pub(crate) fn candidate_records(&self) -> Vec<Record> {
        let mut records = vec![Record::default(); self.candidates.len()];
        for (&(a, b), r) in &self.pair_records() {
            records[a].wins += r.wins;
            records[a].ties += r.ties;
            records[a].losses += r.losses;
            records[b].wins += r.losses;
            records[b].ties += r.ties;
            records[b].losses += r.wins;
        }
        records
    }

    /// Per item, the wins matrix `w[i][j]` (i over j, a tie half a win to each).
    fn item_matrices(&self) -> Vec<Vec<Vec<f64>>> {
        let k = self.candidates.len();
        let mut matrices = vec![vec![vec![0.0; k]; k]; self.items.len()];
        for j in &self.judged {
            let (Some(w), Some(item)) = (
                j.result.counted(),
                self.items.iter().position(|i| *i == j.item),
            ) else {
                continue;
            };
            let m = &mut matrices[item];
            match w {
                Winner::A => m[j.a][j.b] += 1.0,
                Winner::B => m[j.b][j.a] += 1.0,
                Winner::Tie | Winner::Invalid => {
                    m[j.a][j.b] += 0.5;
                    m[j.b][j.a] += 0.5;
                }
            }
        }
        matrices
    }

    /// Each candidate's Bradley–Terry strength with its bootstrap interval (items resampled,
    /// the shared configuration).
    pub(crate) fn strengths(&self) -> Vec<Strength> {
        self.strengths_with(&BOOTSTRAP)
    }

    /// As [`Self::strengths`], with a bootstrap configuration of the caller's.
    pub(crate) fn strengths_with(&self, config: &Bootstrap) -> Vec<Strength> {
        let matrices = self.item_matrices();
        let k = self.candidates.len();
        let total = sum_matrices(
            &matrices,
            (0..matrices.len()).collect::<Vec<_>>().as_slice(),
            k,
        );
        let fit = bradley_terry(&total);
        let mut cache: HashMap<Vec<usize>, Option<Vec<f64>>> = HashMap::new();
        (0..k)
            .map(|c| {
                let interval = paired_bootstrap(matrices.len(), config, |sample| {
                    let mut key = sample.to_vec();
                    key.sort_unstable();
                    let fitted = cache
                        .entry(key)
                        .or_insert_with(|| bradley_terry(&sum_matrices(&matrices, sample, k)));
                    fitted.as_ref().map(|s| s[c])
                });
                Strength {
                    value: fit.as_ref().map(|s| s[c]),
                    low: interval.map(|i| i.low),
                    high: interval.map(|i| i.high),
                    dropped: interval.map_or(config.resamples, |i| i.dropped),
                }
            })
            .collect()
    }
}

/// Counts `w` into `r`, from candidate_a's side.
fn add(r: &mut Record, w: Winner) {
    match w {
        Winner::A => r.wins += 1,
        Winner::B => r.losses += 1,
        Winner::Tie | Winner::Invalid => r.ties += 1,
    }
}

/// A winner as the category κ counts: A 1, tie 2, B 3.
fn winner_scale(w: Winner) -> i64 {
    match w {
        Winner::A => 1,
        Winner::Tie | Winner::Invalid => 2,
        Winner::B => 3,
    }
}

/// Cohen's κ (unweighted: a winner is a category, not a score) of two judges over the pairs
/// both judged.
fn judges_kappa<K: std::hash::Hash + Eq>(x: &HashMap<K, i64>, y: &HashMap<K, i64>) -> Option<f64> {
    let pairs: Vec<(i64, i64)> = x
        .iter()
        .filter_map(|(key, &a)| y.get(key).map(|&b| (a, b)))
        .collect();
    cohen_kappa(&pairs, 1, 3)
}

/// The sum of the matrices of `items` (an item drawn twice counts twice).
fn sum_matrices(matrices: &[Vec<Vec<f64>>], items: &[usize], k: usize) -> Vec<Vec<f64>> {
    let mut total = vec![vec![0.0; k]; k];
    for &item in items {
        for (row, add) in total.iter_mut().zip(&matrices[item]) {
            for (t, a) in row.iter_mut().zip(add) {
                *t += a;
            }
        }
    }
    total
}

/// Whether every candidate beats (in part) some path to every other: the condition (Zermelo,
/// Ford) for the maximum-likelihood strengths to exist.
fn strongly_connected(wins: &[Vec<f64>]) -> bool {
    let k = wins.len();
    let reach = |forward: bool| {
        let mut seen = vec![false; k];
        let mut stack = vec![0];
        seen[0] = true;
        while let Some(i) = stack.pop() {
            for j in 0..k {
                let edge = if forward { wins[i][j] } else { wins[j][i] };
                if edge > 0.0 && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        seen.into_iter().all(|s| s)
    };
    k > 0 && reach(true) && reach(false)
}

/// Most iterations of the fit, and the change in log strength it stops below.
const MAX_ITERATIONS: usize = 10_000;
const TOLERANCE: f64 = 1e-12;

/// Bradley–Terry strengths by maximum likelihood from `wins[i][j]` (i over j; ties already
/// half to each), by the minorise–maximise iteration (Hunter 2004): natural-log strengths with
/// mean 0. `None` when the maximum does not exist (fewer than 2 candidates, or the wins do not
/// connect every candidate both ways).
pub(crate) fn bradley_terry(wins: &[Vec<f64>]) -> Option<Vec<f64>> {
    let k = wins.len();
    if k < 2 || !strongly_connected(wins) {
        return None;
    }
    let total_wins: Vec<f64> = wins.iter().map(|row| row.iter().sum()).collect();
    let mut p = vec![1.0; k];
    for _ in 0..MAX_ITERATIONS {
        let mut next = vec![0.0; k];
        for i in 0..k {
            let denominator: f64 = (0..k)
                .filter(|&j| j != i)
                .map(|j| (wins[i][j] + wins[j][i]) / (p[i] + p[j]))
                .sum();
            next[i] = total_wins[i] / denominator;
        }
        let log_mean = next.iter().map(|v: &f64| v.ln()).sum::<f64>() / k as f64;
        let scale = log_mean.exp();
        next.iter_mut().for_each(|v| *v /= scale);
        let change = p
            .iter()
            .zip(&next)
            .map(|(a, b)| (a.ln() - b.ln()).abs())
            .fold(0.0, f64::max);
        p = next;
        if change < TOLERANCE {
            break;
        }
    }
    Some(p.iter().map(|v| v.ln()).collect())
}

/// The rank of each strength, 1 the strongest, equal strengths sharing a rank; candidates
/// without a strength last, by order.
pub(crate) fn ranks(strengths: &[Strength]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..strengths.len()).collect();
    order.sort_by(|&x, &y| {
        let key = |i: usize| strengths[i].value.unwrap_or(f64::NEG_INFINITY);
        key(y).total_cmp(&key(x)).then(x.cmp(&y))
    });
    // Competition ranking: equal strengths share a rank (1, 1, 3).
    let mut ranks = vec![0; strengths.len()];
    for (position, &i) in order.iter().enumerate() {
        let same = position
            .checked_sub(1)
            .map(|p| order[p])
            .filter(|&prev| strengths[prev].value.is_some())
            .filter(|&prev| {
                let (a, b) = (strengths[prev].value, strengths[i].value);
                a.zip(b).is_some_and(|(a, b)| (a - b).abs() < 1e-9)
            });
        ranks[i] = match same {
            Some(prev) => ranks[prev],
            None => position as u32 + 1,
        };
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// The log-likelihood's gradient, solved by Newton's method on the log strengths (the
    /// first fixed at 0): a different algorithm from the fit's, for an independent reference.
    fn newton_reference(wins: &[Vec<f64>]) -> Vec<f64> {
        let k = wins.len();
        let mut theta: Vec<f64> = vec![0.0; k];
        for _ in 0..100 {
            // Gradient and Hessian of l(θ) = Σ w_ij (θ_i − log(e^θ_i + e^θ_j)) over θ_1..θ_k−1.
            let m = k - 1;
            let mut g = vec![0.0; m];
            let mut h = vec![vec![0.0; m]; m];
            for i in 0..k {
                for j in 0..k {
                    if i == j {
                        continue;
                    }
                    let n = wins[i][j] + wins[j][i];
                    let pij = 1.0 / (1.0 + (theta[j] - theta[i]).exp());
                    if i > 0 {
                        g[i - 1] += wins[i][j] - n * pij;
                        h[i - 1][i - 1] -= n * pij * (1.0 - pij);
                        if j > 0 {
                            h[i - 1][j - 1] += n * pij * (1.0 - pij);
                        }
                    }
                }
            }
            // Solve h · step = g by Gaussian elimination; θ −= step.
            let mut a: Vec<Vec<f64>> = h
                .iter()
                .zip(&g)
                .map(|(row, gi)| row.iter().copied().chain([*gi]).collect())
                .collect();
            for c in 0..m {
                let pivot = (c..m)
                    .max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))
                    .unwrap();
                a.swap(c, pivot);
                let pivot_row = a[c].clone();
                for (r, row) in a.iter_mut().enumerate() {
                    if r != c {
                        let f = row[c] / pivot_row[c];
                        for (x, p) in row.iter_mut().zip(&pivot_row).skip(c) {
                            *x -= f * p;
                        }
                    }
                }
            }
            for c in 0..m {
                theta[c + 1] -= a[c][m] / a[c][c];
            }
        }
        let mean = theta.iter().sum::<f64>() / k as f64;
        theta.iter().map(|t| t - mean).collect()
    }

    #[test]
    fn two_candidates_have_the_closed_form_log_odds() {
        // 7 wins of 0 over 1, 3 of 1 over 0: θ0 − θ1 = ln(7/3), mean 0.
        let s = bradley_terry(&[vec![0.0, 7.0], vec![3.0, 0.0]]).unwrap();
        let half = (7.0f64 / 3.0).ln() / 2.0;
        assert!(close(s[0], half, 1e-9) && close(s[1], -half, 1e-9), "{s:?}");
    }

    #[test]
    fn strengths_match_a_newton_fit_of_the_likelihood() {
        let wins = vec![
            vec![0.0, 6.5, 4.0, 9.0],
            vec![3.5, 0.0, 5.5, 2.0],
            vec![2.0, 4.5, 0.0, 7.0],
            vec![1.0, 3.0, 1.5, 0.0],
        ];
        let fit = bradley_terry(&wins).unwrap();
        let reference = newton_reference(&wins);
        for (f, r) in fit.iter().zip(&reference) {
            assert!(close(*f, *r, 1e-6), "{fit:?} vs {reference:?}");
        }
        assert!(close(fit.iter().sum::<f64>(), 0.0, 1e-12));
    }

    #[test]
    fn no_maximum_when_a_candidate_never_loses() {
        assert_eq!(bradley_terry(&[vec![0.0, 3.0], vec![0.0, 0.0]]), None);
        assert_eq!(bradley_terry(&[vec![0.0]]), None);
    }

    fn row(judge: &str, item: &str, shown: Shown, winner: Winner) -> VerdictRow {
        VerdictRow::for_test(judge, item, ("x", "y"), shown, winner)
    }

    #[test]
    fn orders_that_disagree_are_a_tie_and_inconsistent() {
        use Shown::{Ab, Ba};
        use Winner::{A, B, Invalid, Tie};
        let rows = [
            row("j1", "p1", Ab, A),
            row("j1", "p1", Ba, A),
            row("j1", "p2", Ab, A),
            row("j1", "p2", Ba, Tie),
            row("j1", "p3", Ab, B),
            row("j1", "p3", Ba, Invalid),
            row("j2", "p1", Ab, A),
            row("j2", "p1", Ba, A),
            row("j2", "p2", Ab, B),
            row("j2", "p2", Ba, A),
        ];
        let v = Verdicts::from_rows(&rows);
        let results: Vec<Combined> = v.judged.iter().map(|j| j.result).collect();
        assert_eq!(
            results,
            [
                Combined::Agreed(A),
                Combined::Inconsistent,
                Combined::Invalid,
                Combined::Agreed(A),
                Combined::Inconsistent
            ]
        );
        assert_eq!((v.judges[0].verdicts, v.judges[0].invalid_verdicts), (6, 1));
        assert_eq!((v.judges[0].pairs, v.judges[0].inconsistent), (2, 1));
        assert_eq!(v.judges[0].inconsistency(), Some(0.5));
        let pairs = v.pair_records();
        assert_eq!(
            pairs[&(0, 1)],
            Record {
                wins: 2,
                ties: 2,
                losses: 0
            }
        );
        let records = v.candidate_records();
        assert_eq!(records[1].losses, 2);
        // Both judges: (A, A) on p1 and (tie, tie) on p2: full agreement.
        assert_eq!(v.judges[0].kappa, Some(1.0));
    }

    #[test]
    fn win_rates_count_a_tie_as_half_a_win_with_wilson_intervals() {
        let r = Record {
            wins: 25,
            ties: 50,
            losses: 25,
        };
        let (rate, lo, hi) = r.win_rate().unwrap();
        assert!(close(rate, 0.5, 1e-12));
        assert!(
            close(lo, 0.403832, 5e-6) && close(hi, 0.596168, 5e-6),
            "{lo} {hi}"
        );
        // Every comparison a tie: half won, as the heatmap's 50 % and a strength of 0 say.
        let ties = Record {
            wins: 0,
            ties: 10,
            losses: 0,
        };
        let (rate, lo, hi) = ties.win_rate().unwrap();
        assert!(close(rate, 0.5, 1e-12));
        assert!(
            close(lo, 0.236593, 5e-6) && close(hi, 0.763407, 5e-6),
            "{lo} {hi}"
        );
        let no_win = Record {
            wins: 0,
            ties: 4,
            losses: 6,
        };
        let (rate, lo, hi) = no_win.win_rate().unwrap();
        assert!(close(rate, 0.2, 1e-12));
        assert!(
            close(lo, 0.056682, 5e-6) && close(hi, 0.509838, 5e-6),
            "{lo} {hi}"
        );
        let lost_all = Record {
            wins: 0,
            ties: 0,
            losses: 6,
        };
        assert_eq!(
            lost_all.win_rate().map(|(r, lo, _)| (r, lo)),
            Some((0.0, 0.0))
        );
        assert_eq!(Record::default().win_rate(), None);
    }

    #[test]
    fn kappa_on_winners_is_cohens_unweighted_kappa() {
        // Two of four agree (p_o 0.5); both judges' shares are 1/4, 1/4, 1/2 (p_e 0.375):
        // (0.5 - 0.375) / (1 - 0.375) = 0.2, as scikit-learn's cohen_kappa_score gives for
        // [0, 1, 2, 2] and [0, 2, 2, 1]. (Quadratic weights would give 0.636.)
        let x: HashMap<u8, i64> = [(0, 1), (1, 2), (2, 3), (3, 3)].into();
        let y: HashMap<u8, i64> = [(0, 1), (1, 3), (2, 3), (3, 2)].into();
        let k = judges_kappa(&x, &y).unwrap();
        assert!(close(k, 0.2, 1e-12), "{k}");
        let same: HashMap<u8, i64> = [(0, 1), (1, 2), (2, 3)].into();
        assert_eq!(judges_kappa(&same, &same), Some(1.0));
    }

    #[test]
    fn bootstrap_intervals_resample_items_and_hold_the_estimate() {
        use Shown::{Ab, Ba};
        let mut rows = Vec::new();
        for (i, w) in ["A", "A", "B", "A", "tie", "A", "B", "A"]
            .iter()
            .enumerate()
        {
            let winner = match *w {
                "A" => Winner::A,
                "B" => Winner::B,
                _ => Winner::Tie,
            };
            let item = format!("p{i}");
            rows.push(row("j", &item, Ab, winner));
            rows.push(row("j", &item, Ba, winner));
        }
        let v = Verdicts::from_rows(&rows);
        let config = Bootstrap {
            resamples: 200,
            ..BOOTSTRAP
        };
        let s = v.strengths_with(&config);
        // 5.5 wins to 2.5: θx − θy = ln(5.5/2.5).
        let half = (5.5f64 / 2.5).ln() / 2.0;
        assert!(close(s[0].value.unwrap(), half, 1e-9));
        assert!(s[0].low.unwrap() <= half && half <= s[0].high.unwrap());
        assert_eq!(ranks(&s), [1, 2]);
        let even = Strength {
            value: Some(0.0),
            low: None,
            high: None,
            dropped: 0,
        };
        let none = Strength {
            value: None,
            ..even
        };
        assert_eq!(ranks(&[even, none, even]), [1, 3, 1]);
    }
}
