//! The writer: a thread that owns the executor's writes (claims, stored calls) and the reads
//! they depend on, fed by a channel and committing whatever is waiting in one transaction.
//! The async workers send it work and await the answer, so they never block on SQLite; an
//! answer counts as stored only once its transaction has committed.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::{Result, Store, StoreError, lock};

/// Most pieces of work committed in one transaction.
const BATCH: usize = 256;

/// What the writer runs for a caller: the work on the store, giving back the function that
/// answers the caller once the transaction has ended (with its commit error, if any).
type Work = Box<dyn FnOnce(&mut Store) -> Answer + Send>;
type Answer = Box<dyn FnOnce(Option<&StoreError>) + Send>;

/// A handle on the writer thread; the thread ends when every handle is dropped.
#[derive(Clone)]
pub struct Writer {
    work: mpsc::Sender<Work>,
}

impl Writer {
    /// Starts the writer thread over `store` (a connection of its own, or one shared with
    /// readers behind the mutex).
    pub(crate) fn start(store: Arc<Mutex<Store>>) -> std::io::Result<Self> {
        let (work, queue) = mpsc::channel::<Work>();
        std::thread::Builder::new()
            .name("track-writer".into())
            .spawn(move || {
                while let Ok(first) = queue.recv() {
                    let mut batch = vec![first];
                    batch.extend(queue.try_iter().take(BATCH - 1));
                    let mut store = lock(&store);
                    let (answers, ended) = store.in_one_transaction(batch);
                    drop(store);
                    for answer in answers {
                        answer(ended.as_ref().err());
                    }
                }
            })?;
        Ok(Self { work })
    }

    /// Runs `work` on the store in the writer's next transaction and returns its result once
    /// that transaction has committed.
    pub(crate) async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Store) -> Result<R> + Send + 'static,
    ) -> Result<R> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Work = Box::new(move |store| {
            let result = work(store);
            Box::new(move |ended: Option<&StoreError>| {
                let result = match ended {
                    Some(e) => Err(StoreError::Commit(e.to_string())),
                    None => result,
                };
                let _ = reply.send(result);
            })
        });
        self.work.send(job).map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }
}

impl Store {
    /// Runs `batch` in one IMMEDIATE transaction (a piece that fails leaves the others).
    /// Returns the answers and how the transaction ended.
    fn in_one_transaction(&mut self, batch: Vec<Work>) -> (Vec<Answer>, Result<()>) {
        let begin = self
            .conn
            .prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut s| s.execute([]));
        if let Err(e) = begin {
            let e = StoreError::from(e);
            let answers = batch.into_iter().map(|work| work(self)).collect();
            // Each piece ran on its own (autocommit); the failed BEGIN is reported to none.
            tracing::debug!("the writer ran a batch without a transaction: {e}");
            return (answers, Ok(()));
        }
        let answers = batch.into_iter().map(|work| work(self)).collect();
        let ended = self
            .conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]))
            .map(drop)
            .map_err(StoreError::from);
        if ended.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        (answers, ended)
    }

    /// Runs `f` atomically: in an IMMEDIATE transaction of its own, or in a savepoint of the
    /// transaction in progress (the writer's batch, which commits it with the others): a piece
    /// that fails midway leaves nothing of what it wrote.
    pub(super) fn atomically<R>(
        &mut self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<R>,
    ) -> Result<R> {
        if self.conn.is_autocommit() {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let result = f(&tx)?;
            tx.commit()?;
            Ok(result)
        } else {
            let savepoint = self.conn.savepoint()?;
            let result = f(&savepoint)?;
            savepoint.commit()?;
            Ok(result)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewCall;

    fn call(key: &str) -> NewCall<'_> {
        NewCall::answered(key, "answer")
    }

    #[tokio::test]
    async fn work_sent_together_is_committed_together_and_answered_after() {
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let writer = Writer::start(store.clone()).unwrap();
        let inserts: Vec<_> = (0..50)
            .map(|i| {
                let writer = writer.clone();
                tokio::spawn(async move {
                    let key = format!("k{i}");
                    writer.run(move |s| s.insert_call(&call(&key))).await
                })
            })
            .collect();
        for insert in inserts {
            insert.await.unwrap().unwrap();
        }
        let found = lock(&store)
            .cached_calls(
                (0..50)
                    .map(|i| format!("k{i}"))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str),
            )
            .unwrap();
        assert_eq!(found.len(), 50);
        // A piece that fails does not undo the others.
        let bad = writer
            .run(|s| {
                s.conn
                    .execute_batch("INSERT INTO no_such_table VALUES (1)")
                    .map_err(StoreError::from)
            })
            .await;
        assert!(bad.is_err());
        assert!(writer.run(|s| s.insert_call(&call("after"))).await.is_ok());
    }

    #[tokio::test]
    async fn a_piece_that_fails_midway_leaves_nothing_of_what_it_wrote() {
        let store = Arc::new(Mutex::new(Store::open_in_memory().unwrap()));
        let writer = Writer::start(store.clone()).unwrap();
        let blobs = |store: &Arc<Mutex<Store>>| -> i64 {
            lock(store)
                .conn
                .query_row("SELECT count(*) FROM blobs", [], |r| r.get(0))
                .unwrap()
        };
        let before = blobs(&store);
        let half_done = writer
            .run(|s| {
                s.atomically(|tx| {
                    tx.execute(
                        "INSERT INTO blobs (sha256, media_type, size, content)
                         VALUES ('ab', 'text/plain', 1, x'61')",
                        [],
                    )?;
                    tx.execute("INSERT INTO no_such_table VALUES (1)", [])?;
                    Ok(())
                })
            })
            .await;
        assert!(half_done.is_err());
        let good = writer.run(|s| s.insert_call(&call("beside"))).await;
        assert!(good.is_ok(), "the pieces beside it are committed");
        assert_eq!(
            blobs(&store),
            before + 2,
            "the good piece's request and answer, not the failed piece's blob"
        );
    }
}
