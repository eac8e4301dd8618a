//! Claims on calls in flight, so that processes sharing a database pay each distinct call
//! once: before sending, a run claims the key; another run needing it waits for the answer.
//!
//! Batches are held to the same rule. A key reaches a provider only from the run that holds
//! it, live (a row of `call_claims`) or in a batch (a `pending` row of `batch_calls`), and it
//! is taken in one IMMEDIATE transaction that checks the cache, the batches and the other
//! runs' claims: a live claim is refused a key waiting in a batch ([`Claim::Batched`]: the
//! run follows that batch), and a batch claims its keys like a live run
//! ([`Store::claim_many`]) before it builds its payload, turning the claims into its
//! pending rows when its intent is stored (`Store::create_batch` refuses a key another run
//! claims).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};

use super::{Result, Store, StoredCall};

/// What a claim on a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The answer is stored already (another run got it meanwhile): serve it.
    Answered(StoredCall),
    /// The key is ours to send.
    Mine,
    /// Another owner is sending it; its name, to ask whether it is still alive.
    Busy(String),
    /// It waits in batch `id` (this run's or another's): follow that batch, never send it.
    Batched(i64),
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Store {
    /// Claims `key` for `owner` for `lease`, unless it is answered or claimed by another owner
    /// whose claim has not expired; `take_over` takes another owner's claim (it is known dead).
    pub(crate) fn claim(
        &mut self,
        key: &str,
        owner: &str,
        lease: Duration,
        take_over: bool,
    ) -> Result<Claim> {
        // IMMEDIATE: the check and the claim are one step for every process.
        self.atomically(|tx| claim_on(tx, key, owner, lease, take_over))
    }

    /// Claims each of `keys` for `owner` for `lease`, as [`Store::claim`] does one, in one
    /// transaction; another owner's claim is taken over when `dead` says its run is gone.
    pub(crate) fn claim_many(
        &mut self,
        keys: &[String],
        owner: &str,
        lease: Duration,
        dead: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<Claim>> {
        self.atomically(|tx| {
            let mut claims = Vec::with_capacity(keys.len());
            for key in keys {
                let claim = match claim_on(tx, key, owner, lease, false)? {
                    Claim::Busy(holder) if dead(&holder) => claim_on(tx, key, owner, lease, true)?,
                    claim => claim,
                };
                claims.push(claim);
            }
            Ok(claims)
        })
    }

    /// Lets go of `owner`'s claims on `keys`, in one transaction.
    pub(crate) fn release_claims(&mut self, keys: &[String], owner: &str) -> Result<()> {
        self.atomically(|tx| {
            let mut stmt =
                tx.prepare_cached("DELETE FROM call_claims WHERE cache_key = ?1 AND owner = ?2")?;
            for key in keys {
                stmt.execute(params![key, owner])?;
            }
            Ok(())
        })
    }

    /// Lets go of `owner`'s claim on `key` (answered, failed or stopped).
    pub(crate) fn release_claim(&self, key: &str, owner: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM call_claims WHERE cache_key = ?1 AND owner = ?2")?
            .execute(params![key, owner])?;
        Ok(())
    }
}

/// [`Store::claim`] on `tx`, which holds the write lock.
fn claim_on(
    tx: &rusqlite::Connection,
    key: &str,
    owner: &str,
    lease: Duration,
    take_over: bool,
) -> Result<Claim> {
    if let Some(call) = super::calls::cached_call(tx, key)? {
        return Ok(Claim::Answered(call));
    }
    let batched: Option<i64> = tx
        .prepare_cached(
            "SELECT batch FROM batch_calls WHERE cache_key = ?1 AND outcome = 'pending'",
        )?
        .query_row([key], |r| r.get(0))
        .optional()?;
    if let Some(batch) = batched {
        return Ok(Claim::Batched(batch));
    }
    let holder: Option<(String, f64)> = tx
        .prepare_cached("SELECT owner, expires_at FROM call_claims WHERE cache_key = ?1")?
        .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let now = now_secs();
    if let Some((holder, expires_at)) = holder
        && holder != owner
        && expires_at > now
        && !take_over
    {
        return Ok(Claim::Busy(holder));
    }
    tx.prepare_cached(
        "INSERT INTO call_claims (cache_key, owner, expires_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (cache_key) DO UPDATE SET owner = ?2, expires_at = ?3",
    )?
    .execute(params![key, owner, now + lease.as_secs_f64()])?;
    Ok(Claim::Mine)
}

/// The owner whose claim on `key` holds `tx`'s write lock now, when it is not `owner` and
/// has not expired: a batch's intent is refused such a key.
pub(super) fn claimed_by_other(
    tx: &rusqlite::Connection,
    key: &str,
    owner: &str,
) -> Result<Option<String>> {
    Ok(tx
        .prepare_cached(
            "SELECT owner FROM call_claims WHERE cache_key = ?1 AND owner != ?2 AND expires_at > ?3",
        )?
        .query_row(params![key, owner, now_secs()], |r| r.get(0))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_sent_by_one_owner_and_answered_for_the_others() {
        let mut store = Store::open_in_memory().unwrap();
        let lease = Duration::from_secs(60);
        assert_eq!(
            store.claim("k", "run 1", lease, false).unwrap(),
            Claim::Mine
        );
        assert_eq!(
            store.claim("k", "run 1", lease, false).unwrap(),
            Claim::Mine
        );
        assert_eq!(
            store.claim("k", "run 2", lease, false).unwrap(),
            Claim::Busy("run 1".into())
        );
        // Run 1 is dead: run 2 takes over.
        assert_eq!(store.claim("k", "run 2", lease, true).unwrap(), Claim::Mine);
        store.release_claim("k", "run 2").unwrap();
        // An expired claim is free.
        assert_eq!(
            store.claim("e", "run 3", Duration::ZERO, false).unwrap(),
            Claim::Mine
        );
        assert_eq!(
            store.claim("e", "run 4", lease, false).unwrap(),
            Claim::Mine
        );
    }
}
