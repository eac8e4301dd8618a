//! The pacer's state: each rate-limit bucket's limit and level, and how long a scope is held
//! after a refusal. Read and written in one IMMEDIATE transaction, so processes sharing the
//! database take from the same buckets.
//!
//! Plain numbers only: the bucket arithmetic is the pacer's (`llm::pacer`).

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{Result, Store};

/// One bucket of a scope, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct BucketRow {
    /// `requests`, `tokens`, `input_tokens` or `output_tokens`.
    pub dimension: String,
    pub limit_per_min: f64,
    pub level: f64,
    /// Unix seconds at which `level` was true.
    pub updated_at: f64,
}

/// A scope's whole pacing state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PacingRow {
    pub buckets: Vec<BucketRow>,
    /// Unix seconds before which nothing is sent (0: not held).
    pub blocked_until: f64,
}

impl Store {
    /// Reads `scope`'s pacing state, lets `change` work on it, and writes it back, all in one
    /// IMMEDIATE transaction: no other process takes from the buckets in between.
    pub(crate) fn update_pacing<R>(
        &mut self,
        scope: &str,
        change: impl FnOnce(&mut PacingRow) -> R,
    ) -> Result<R> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = PacingRow {
            buckets: tx
                .prepare_cached(
                    "SELECT dimension, limit_per_min, level, updated_at FROM pacing_buckets
                     WHERE scope = ?1 ORDER BY dimension",
                )?
                .query_map([scope], |r| {
                    Ok(BucketRow {
                        dimension: r.get(0)?,
                        limit_per_min: r.get(1)?,
                        level: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?,
            blocked_until: tx
                .prepare_cached("SELECT blocked_until FROM pacing_scopes WHERE scope = ?1")?
                .query_row([scope], |r| r.get(0))
                .optional()?
                .unwrap_or(0.0),
        };
        let before = row.clone();
        let result = change(&mut row);
        if row != before {
            tx.prepare_cached("DELETE FROM pacing_buckets WHERE scope = ?1")?
                .execute([scope])?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO pacing_buckets (scope, dimension, limit_per_min, level, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for b in &row.buckets {
                insert.execute(params![
                    scope,
                    b.dimension,
                    b.limit_per_min,
                    b.level,
                    b.updated_at
                ])?;
            }
            drop(insert);
            tx.prepare_cached(
                "INSERT INTO pacing_scopes (scope, blocked_until) VALUES (?1, ?2)
                 ON CONFLICT (scope) DO UPDATE SET blocked_until = ?2",
            )?
            .execute(params![scope, row.blocked_until])?;
        }
        tx.commit()?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_is_read_changed_and_written_back() {
        let mut store = Store::open_in_memory().unwrap();
        let empty = store.update_pacing("s", |row| row.clone()).unwrap();
        assert_eq!(empty, PacingRow::default());
        store
            .update_pacing("s", |row| {
                row.buckets.push(BucketRow {
                    dimension: "requests".into(),
                    limit_per_min: 600.0,
                    level: 9.5,
                    updated_at: 100.0,
                });
                row.blocked_until = 101.0;
            })
            .unwrap();
        let read = store.update_pacing("s", |row| row.clone()).unwrap();
        assert_eq!(read.buckets.len(), 1);
        assert_eq!(read.buckets[0].level, 9.5);
        assert_eq!(read.blocked_until, 101.0);
        assert!(
            store
                .update_pacing("other", |row| row.buckets.is_empty())
                .unwrap()
        );
    }
}
