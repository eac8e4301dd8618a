//! Pairwise verdicts: one row per judge x item x pair x repeat x order of a run, and the two
//! enums they store (the order shown, the winner); and the candidates' answers the verdicts
//! judge: one row per candidate model x item. It imports nothing from the kind.

use std::collections::BTreeMap;

use rusqlite::params;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use super::{Result, Store};

/// The order a pair was shown in: `ab` showed `candidate_a` as answer A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Shown {
    /// `candidate_a` first (as A), `candidate_b` second.
    Ab,
    /// `candidate_b` first (as A), `candidate_a` second.
    Ba,
}

impl Shown {
    /// Both orders, in the order they are asked.
    pub const ALL: [Self; 2] = [Self::Ab, Self::Ba];

    /// As stored and exported: `ab`, `ba`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Ab => "ab",
            Self::Ba => "ba",
        }
    }
}

/// Who won a verdict, in the pair's own frame (`A` is `candidate_a` whatever the order shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Winner {
    /// `candidate_a`.
    A,
    /// `candidate_b`.
    B,
    /// Neither: the judge said they are as good.
    Tie,
    /// The judge's answer could not be read.
    Invalid,
}

impl Winner {
    /// Every winner.
    pub const ALL: [Self; 4] = [Self::A, Self::B, Self::Tie, Self::Invalid];

    /// As stored: `A`, `B`, `tie`, `invalid`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::A => "A",
            Self::B => "B",
            Self::Tie => "tie",
            Self::Invalid => "invalid",
        }
    }
}

/// A stored value that is no order or winner, named in the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown pairwise value {0:?} (expected ab, ba, A, B, tie or invalid)")]
pub struct UnknownPairwise(pub String);

impl ToSql for Shown {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for Shown {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| FromSqlError::Other(Box::new(UnknownPairwise(text.to_owned()))))
    }
}

impl ToSql for Winner {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl FromSql for Winner {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        Self::ALL
            .into_iter()
            .find(|w| w.as_str() == text)
            .ok_or_else(|| FromSqlError::Other(Box::new(UnknownPairwise(text.to_owned()))))
    }
}

/// One verdict of a pairwise run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictRow {
    pub run_id: i64,
    /// The judge's `provider:alias`.
    pub judge: String,
    /// The prompt's name, or the sensor (`Bosch BME280`).
    pub item: String,
    pub candidate_a: String,
    pub candidate_b: String,
    pub repeat_index: u32,
    pub shown: Shown,
    pub winner: Winner,
    pub justification: Option<String>,
    /// Why the answer could not be read, when `winner` is `Invalid`.
    pub invalid_reason: Option<String>,
    pub call_id: Option<i64>,
    pub cache_hit: bool,
}

#[cfg(test)]
impl VerdictRow {
    /// A verdict of run 1, judge `judge`, on `item` with `a` shown as A in `shown` order, for
    /// tests of what is computed from verdicts.
    pub(crate) fn for_test(
        judge: &str,
        item: &str,
        (a, b): (&str, &str),
        shown: Shown,
        winner: Winner,
    ) -> Self {
        Self {
            run_id: 1,
            judge: judge.into(),
            item: item.into(),
            candidate_a: a.into(),
            candidate_b: b.into(),
            repeat_index: 0,
            shown,
            winner,
            justification: None,
            invalid_reason: None,
            call_id: None,
            cache_hit: false,
        }
    }
}

/// Each answer of a run's candidates, by (candidate, item): the cache key of its request and
/// the sha256 of the answer (or its error): what tells whether a candidate changed.
pub type AnswerPrints = BTreeMap<(String, String), (Option<String>, Option<String>)>;

/// One candidate model's answer to one item (a prompt) of a pairwise run: the call that
/// answered, or why none did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerRow {
    pub run_id: i64,
    /// The candidate, named as the verdicts name it (its `name:`, else its `provider:alias`).
    pub candidate: String,
    /// The prompt's name, as the verdicts name items.
    pub item: String,
    /// The stored call: the answer when `error` is `None`, the failed request otherwise (`None`
    /// when no request was stored).
    pub call_id: Option<i64>,
    pub cache_hit: bool,
    /// Why the candidate did not answer; `None` when it did.
    pub error: Option<String>,
}

impl Store {
    /// Writes candidates' answers in one transaction (a repeated one replaces the earlier).
    pub(crate) fn insert_pairwise_answers(&mut self, rows: &[AnswerRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO pairwise_answers (run_id, candidate, item, call_id,
                    cache_hit, error, uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for r in rows {
                let uid = super::uid(&[
                    "answer".into(),
                    super::ids::run_uid(&tx, r.run_id)?.as_ref().into(),
                    (&r.candidate).into(),
                    (&r.item).into(),
                ]);
                stmt.execute(params![
                    r.run_id,
                    r.candidate,
                    r.item,
                    r.call_id,
                    r.cache_hit,
                    r.error,
                    uid,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The candidates' answers of `run_ids`, run by run, each run's by candidate and item (not
    /// the order they were stored in, which concurrency decides).
    pub(crate) fn pairwise_answers(&self, run_ids: &[i64]) -> Result<Vec<AnswerRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT run_id, candidate, item, call_id, cache_hit, error
             FROM pairwise_answers WHERE run_id = ?1 ORDER BY candidate, item",
        )?;
        let mut out = Vec::new();
        for run_id in run_ids {
            let rows = stmt.query_map([run_id], |r| {
                Ok(AnswerRow {
                    run_id: r.get(0)?,
                    candidate: r.get(1)?,
                    item: r.get(2)?,
                    call_id: r.get(3)?,
                    cache_hit: r.get(4)?,
                    error: r.get(5)?,
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// What tells whether a candidate of run `run_id` changed in another run: for each of its
    /// answers, by (candidate, item), the cache key of the request it sent (which holds its
    /// model, system prompt and parameters) and the sha256 of the answer (or its error).
    pub(crate) fn pairwise_answer_prints(&self, run_id: i64) -> Result<AnswerPrints> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.candidate, a.item, c.cache_key,
                    CASE WHEN a.error IS NULL THEN c.response_sha256
                         ELSE 'error: ' || a.error END
             FROM pairwise_answers a LEFT JOIN calls c ON c.id = a.call_id
             WHERE a.run_id = ?1",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Writes verdicts in one transaction (a repeated one replaces the earlier).
    pub(crate) fn insert_pairwise_verdicts(&mut self, rows: &[VerdictRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO pairwise_verdicts (run_id, judge, item, candidate_a,
                    candidate_b, repeat_index, shown_order, winner, justification, invalid_reason,
                    call_id, cache_hit, uid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?;
            for r in rows {
                let uid = super::uid(&[
                    "verdict".into(),
                    super::ids::run_uid(&tx, r.run_id)?.as_ref().into(),
                    (&r.judge).into(),
                    (&r.item).into(),
                    (&r.candidate_a).into(),
                    (&r.candidate_b).into(),
                    i64::from(r.repeat_index).into(),
                    r.shown.as_str().into(),
                ]);
                stmt.execute(params![
                    r.run_id,
                    r.judge,
                    r.item,
                    r.candidate_a,
                    r.candidate_b,
                    r.repeat_index,
                    r.shown,
                    r.winner,
                    r.justification,
                    r.invalid_reason,
                    r.call_id,
                    r.cache_hit,
                    uid,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The verdicts of `run_ids`, run by run, each run's by judge, item, pair, repeat and order
    /// (not the order they were stored in, which concurrency decides).
    pub(crate) fn pairwise_verdicts(&self, run_ids: &[i64]) -> Result<Vec<VerdictRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT run_id, judge, item, candidate_a, candidate_b, repeat_index, shown_order,
                    winner, justification, invalid_reason, call_id, cache_hit
             FROM pairwise_verdicts WHERE run_id = ?1
             ORDER BY judge, item, candidate_a, candidate_b, repeat_index, shown_order",
        )?;
        let mut out = Vec::new();
        for run_id in run_ids {
            let rows = stmt.query_map([run_id], |r| {
                Ok(VerdictRow {
                    run_id: r.get(0)?,
                    judge: r.get(1)?,
                    item: r.get(2)?,
                    candidate_a: r.get(3)?,
                    candidate_b: r.get(4)?,
                    repeat_index: r.get(5)?,
                    shown: r.get(6)?,
                    winner: r.get(7)?,
                    justification: r.get(8)?,
                    invalid_reason: r.get(9)?,
                    call_id: r.get(10)?,
                    cache_hit: r.get(11)?,
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_with_their_enums() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Pairwise, None, None, "{}")
            .unwrap();
        let row = VerdictRow {
            run_id: run,
            judge: "openai:gpt-4o-mini".into(),
            item: "p1".into(),
            candidate_a: "a".into(),
            candidate_b: "b".into(),
            repeat_index: 0,
            shown: Shown::Ba,
            winner: Winner::Tie,
            justification: Some("same".into()),
            invalid_reason: None,
            call_id: None,
            cache_hit: false,
        };
        let invalid = VerdictRow {
            shown: Shown::Ab,
            winner: Winner::Invalid,
            invalid_reason: Some("no JSON".into()),
            ..row.clone()
        };
        store
            .insert_pairwise_verdicts(&[row.clone(), invalid.clone()])
            .unwrap();
        assert_eq!(
            store.pairwise_verdicts(&[run]).unwrap(),
            [invalid, row],
            "by order shown, not as stored"
        );
    }

    #[test]
    fn answers_round_trip_and_a_repeated_one_replaces_the_earlier() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Pairwise, None, None, "{}")
            .unwrap();
        let other = store
            .create_run(crate::kind::ExperimentKind::Pairwise, None, None, "{}")
            .unwrap();
        let failed = AnswerRow {
            run_id: run,
            candidate: "openai:gpt-4o".into(),
            item: "q2".into(),
            call_id: None,
            cache_hit: false,
            error: Some("HTTP 500".into()),
        };
        let answered = AnswerRow {
            item: "q1".into(),
            error: None,
            cache_hit: true,
            ..failed.clone()
        };
        let elsewhere = AnswerRow {
            run_id: other,
            ..answered.clone()
        };
        store
            .insert_pairwise_answers(&[failed.clone(), answered.clone(), elsewhere.clone()])
            .unwrap();
        assert_eq!(
            store.pairwise_answers(&[run]).unwrap(),
            [answered.clone(), failed.clone()],
            "by candidate and item, not as stored"
        );
        // Asked again, the failed answer now answered: one row, the later.
        let retried = AnswerRow {
            error: None,
            ..failed.clone()
        };
        store
            .insert_pairwise_answers(std::slice::from_ref(&retried))
            .unwrap();
        assert_eq!(
            store.pairwise_answers(&[run, other]).unwrap(),
            [answered, retried, elsewhere]
        );
    }

    #[test]
    fn an_answers_uid_is_its_runs_uid_candidate_and_item_as_track_sha256_makes_it() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(crate::kind::ExperimentKind::Pairwise, None, None, "{}")
            .unwrap();
        let other = store
            .create_run(crate::kind::ExperimentKind::Pairwise, None, None, "{}")
            .unwrap();
        let row = AnswerRow {
            run_id: run,
            candidate: "ollama:llama3.2".into(),
            item: "q1".into(),
            call_id: None,
            cache_hit: false,
            error: None,
        };
        let in_other = AnswerRow {
            run_id: other,
            ..row.clone()
        };
        store.insert_pairwise_answers(&[row, in_other]).unwrap();
        let mut stmt = store
            .conn
            .prepare(
                "SELECT a.uid, track_sha256('answer', r.uid, a.candidate, a.item)
                 FROM pairwise_answers a JOIN runs r ON r.id = a.run_id ORDER BY a.run_id",
            )
            .unwrap();
        let uids: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(uids.len(), 2);
        for (stored, computed) in &uids {
            assert_eq!(stored, computed, "the insert's uid is the SQL function's");
        }
        assert_ne!(uids[0].0, uids[1].0, "two runs, two uids");
    }
}
