//! Content-addressed storage of large texts and images: each distinct content is stored once.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Result, Store};
use crate::hash::sha256_hex;

/// Inserts a blob under a hash the caller computed, on a connection or open transaction.
pub(super) fn insert_blob(
    conn: &Connection,
    sha: &str,
    media_type: &str,
    content: &[u8],
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO blobs (sha256, media_type, size, content) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (sha256) DO NOTHING",
    )?
    .execute(params![sha, media_type, content.len() as i64, content])?;
    Ok(())
}

impl Store {
    /// Stores `content` under its sha256 (computed here) unless already present; returns the hash.
    pub(crate) fn put_blob(&self, media_type: &str, content: &[u8]) -> Result<String> {
        let sha = sha256_hex(content);
        insert_blob(&self.conn, &sha, media_type, content)?;
        Ok(sha)
    }

    /// The bytes stored under `sha`, if any.
    pub(crate) fn blob(&self, sha: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .conn
            .prepare_cached("SELECT content FROM blobs WHERE sha256 = ?1")?
            .query_row([sha], |r| r.get(0))
            .optional()?)
    }

    /// The blob under `sha` as text (lossy for invalid UTF-8, which track never stores).
    #[cfg(test)]
    pub(crate) fn blob_text(&self, sha: &str) -> Result<Option<String>> {
        Ok(self
            .blob(sha)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_content_is_stored_once() {
        let store = Store::open_in_memory().unwrap();
        let a = store.put_blob("text/plain", b"hello").unwrap();
        let b = store.put_blob("text/plain", b"hello").unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM blobs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(store.blob_text(&a).unwrap().as_deref(), Some("hello"));
        assert_eq!(store.blob_text("missing").unwrap(), None);
    }
}
