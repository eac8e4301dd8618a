//! Data files fetched from an address (`hf://`): the bytes in `blobs`, and in `dataset_files`
//! the address as written, the commit its revision resolved to and when it was fetched, so
//! re-runs, `--offline` and shards read the same bytes without the network. The store knows
//! nothing of addresses' syntax or of fetching.

use rusqlite::{OptionalExtension, params};

use super::blobs::insert_blob;
use super::{Result, Store, now_rfc3339};
use crate::hash::sha256_hex;

/// A fetched data file, as `dataset_files` keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetFile {
    /// The address as the benchmark file wrote it (`hf://datasets/OWNER/NAME@REVISION/PATH`).
    pub address: String,
    /// The commit the address's revision resolved to when it was fetched; a commit the
    /// address pins, as written.
    pub revision: String,
    /// The sha256 of the bytes: the blob that holds them.
    pub sha256: String,
    /// When it was fetched (RFC 3339, UTC).
    pub fetched_at: String,
}

impl Store {
    /// The file kept for `address`, if it was fetched before.
    pub(crate) fn dataset_file(&self, address: &str) -> Result<Option<DatasetFile>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT address, revision, sha256, fetched_at FROM dataset_files
                 WHERE address = ?1",
            )?
            .query_row([address], |r| {
                Ok(DatasetFile {
                    address: r.get(0)?,
                    revision: r.get(1)?,
                    sha256: r.get(2)?,
                    fetched_at: r.get(3)?,
                })
            })
            .optional()?)
    }

    /// Keeps the bytes fetched for `address` (a blob of `media_type`) and the commit
    /// `revision` resolved to, in one transaction; an earlier fetch of the address is
    /// replaced. Returns the row as stored.
    pub(crate) fn put_dataset_file(
        &self,
        address: &str,
        revision: &str,
        media_type: &str,
        content: &[u8],
    ) -> Result<DatasetFile> {
        let file = DatasetFile {
            address: address.to_owned(),
            revision: revision.to_owned(),
            sha256: sha256_hex(content),
            fetched_at: now_rfc3339(),
        };
        let tx = self.conn.unchecked_transaction()?;
        insert_blob(&tx, &file.sha256, media_type, content)?;
        tx.prepare_cached(
            "INSERT INTO dataset_files (address, revision, sha256, fetched_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (address) DO UPDATE SET
                 revision = excluded.revision, sha256 = excluded.sha256,
                 fetched_at = excluded.fetched_at",
        )?
        .execute(params![
            file.address,
            file.revision,
            file.sha256,
            file.fetched_at
        ])?;
        tx.commit()?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetched_file_is_kept_with_its_commit_and_a_refetch_replaces_it() {
        let store = Store::open_in_memory().unwrap();
        let address = "hf://datasets/o/n/data.jsonl";
        assert_eq!(store.dataset_file(address).unwrap(), None);
        let put = store
            .put_dataset_file(address, "abc123", "application/jsonl", b"{\"a\": 1}\n")
            .unwrap();
        let got = store.dataset_file(address).unwrap().unwrap();
        assert_eq!(got, put);
        assert_eq!(got.revision, "abc123");
        assert_eq!(
            store.blob(&got.sha256).unwrap().as_deref(),
            Some(&b"{\"a\": 1}\n"[..])
        );
        store
            .put_dataset_file(address, "def456", "application/jsonl", b"{\"a\": 2}\n")
            .unwrap();
        let got = store.dataset_file(address).unwrap().unwrap();
        assert_eq!(got.revision, "def456");
        assert_eq!(got.sha256, sha256_hex(b"{\"a\": 2}\n"));
        assert_eq!(
            store.dataset_file("hf://datasets/o/n/other.jsonl").unwrap(),
            None
        );
    }
}
