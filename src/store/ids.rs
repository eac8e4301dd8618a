//! Global identities: the SQL functions that make the `uid` of runs, calls and rows, the
//! same wherever they were made (migration V17), registered on every connection track opens.
//!
//! `track_sha256(tag, ...)`: lowercase hex sha256 of its arguments as text, NULL as `\0`,
//! joined by `\x1f`. `track_uuid7(started_at, ...)`: a UUIDv7 whose time is `started_at`
//! (RFC 3339) and whose other bits come from the sha256 of the rest, for runs recorded before
//! V17 (a new run's is random: [`new_run_uid`]).

use rusqlite::Connection;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

/// Separates arguments in what `track_sha256` hashes.
const SEPARATOR: u8 = 0x1f;

/// Registers `track_sha256` and `track_uuid7` on `conn`.
pub(super) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("track_sha256", -1, flags, |ctx| {
        Ok(hex::encode(digest(ctx, 0)?))
    })?;
    conn.create_scalar_function("track_uuid7", -1, flags, |ctx| {
        let started: String = ctx.get::<Option<String>>(0)?.unwrap_or_default();
        let millis = chrono::DateTime::parse_from_rfc3339(&started)
            .map(|t| t.timestamp_millis().max(0) as u64)
            .unwrap_or(0);
        let bits = digest(ctx, 1)?;
        Ok(uuid7(millis, &bits).to_string())
    })?;
    Ok(())
}

/// The sha256 of the function's arguments from `first` on.
fn digest(ctx: &Context<'_>, first: usize) -> rusqlite::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    for i in first..ctx.len() {
        if i > first {
            hasher.update([SEPARATOR]);
        }
        match ctx.get_raw(i) {
            ValueRef::Null => hasher.update([0u8]),
            ValueRef::Integer(n) => hasher.update(n.to_string().as_bytes()),
            ValueRef::Real(x) => hasher.update(x.to_string().as_bytes()),
            ValueRef::Text(t) | ValueRef::Blob(t) => hasher.update(t),
        }
    }
    Ok(hasher.finalize().into())
}

/// A UUIDv7 of `millis` (unix milliseconds) with its random bits taken from `bits`.
fn uuid7(millis: u64, bits: &[u8; 32]) -> uuid::Uuid {
    let mut random = [0u8; 10];
    random.copy_from_slice(&bits[..10]);
    uuid::Builder::from_unix_timestamp_millis(millis, &random).into_uuid()
}

/// The uid of a run starting now: a UUIDv7 (time-ordered, random).
pub(crate) fn new_run_uid() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The uid of the run merged from the shards of one plan: a UUIDv8 of the plan and the shard
/// count only, so every merge of those shards (all at once or a few at a time, in any order,
/// on any machine) makes the same run. Not a UUIDv7: no one time is the plan's.
pub(crate) fn merged_run_uid(plan_sha256: &str, shards: u32) -> String {
    let bits: [u8; 32] = Sha256::new()
        .chain_update(b"merged\x1f")
        .chain_update(plan_sha256.as_bytes())
        .chain_update([SEPARATOR])
        .chain_update(shards.to_string().as_bytes())
        .finalize()
        .into();
    let mut custom = [0u8; 16];
    custom.copy_from_slice(&bits[..16]);
    uuid::Builder::from_custom_bytes(custom)
        .into_uuid()
        .to_string()
}

/// The uid of run `run_id` (`None` for a run not in the database), for the uids of its rows.
pub(super) fn run_uid(conn: &Connection, run_id: i64) -> rusqlite::Result<Option<String>> {
    use rusqlite::OptionalExtension;
    conn.prepare_cached("SELECT uid FROM runs WHERE id = ?1")?
        .query_row([run_id], |r| r.get(0))
        .optional()
        .map(Option::flatten)
}

/// One argument of a uid, as `track_sha256` reads it.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    Text(&'a str),
    Int(i64),
    Null,
}

impl<'a> From<&'a str> for Part<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(text)
    }
}

impl<'a> From<&'a String> for Part<'a> {
    fn from(text: &'a String) -> Self {
        Self::Text(text)
    }
}

impl From<i64> for Part<'_> {
    fn from(n: i64) -> Self {
        Self::Int(n)
    }
}

impl<'a, T: Into<Part<'a>>> From<Option<T>> for Part<'a> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Into::into)
    }
}

/// What `track_sha256(parts...)` returns, computed here: the uid of a row made by track.
pub fn uid(parts: &[Part<'_>]) -> String {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update([SEPARATOR]);
        }
        hash_part(&mut hasher, part);
    }
    hex::encode(hasher.finalize())
}

/// Feeds one argument to a uid's hash as `track_sha256` reads it.
fn hash_part(hasher: &mut Sha256, part: &Part<'_>) {
    match part {
        Part::Text(t) => hasher.update(t.as_bytes()),
        Part::Int(n) => hash_int(hasher, *n),
        Part::Null => hasher.update([0u8]),
    }
}

/// Feeds an integer to a uid's hash as its decimal text, written on the stack.
fn hash_int(hasher: &mut Sha256, n: i64) {
    use std::io::Write as _;
    let mut text = [0u8; 20];
    let mut rest = &mut text[..];
    // An i64 has at most 20 characters: the write cannot fail.
    let _ = write!(rest, "{n}");
    let len = 20 - rest.len();
    hasher.update(&text[..len]);
}

/// The uids of many rows whose first arguments are the same (a run's results: a kind and the
/// run's uid), those hashed once: [`UidPrefix::with_ints`] is [`uid`] of them followed by a
/// row's integers, without allocating (a cached run computes 400,000 at once).
#[derive(Clone)]
pub(super) struct UidPrefix(Sha256);

/// A uid as lowercase hex, on the stack.
pub(super) type UidHex = [u8; 64];

impl UidPrefix {
    /// Hashes `first`, the arguments every uid of this prefix starts with.
    pub(super) fn new(first: &[Part<'_>]) -> Self {
        let mut hasher = Sha256::new();
        for part in first {
            hash_part(&mut hasher, part);
            hasher.update([SEPARATOR]);
        }
        Self(hasher)
    }

    /// The uid of the prefix's arguments followed by `ints` (at least one).
    pub(super) fn with_ints(&self, ints: &[i64]) -> UidHex {
        let mut hasher = self.0.clone();
        for (i, n) in ints.iter().enumerate() {
            if i > 0 {
                hasher.update([SEPARATOR]);
            }
            hash_int(&mut hasher, *n);
        }
        let mut hex = [0u8; 64];
        // 32 bytes are 64 hex digits: the slice is the right length.
        let _ = hex::encode_to_slice(hasher.finalize(), &mut hex);
        hex
    }
}

/// The text of a [`UidHex`].
pub(super) fn uid_text(hex: &UidHex) -> &str {
    std::str::from_utf8(hex).unwrap_or_default()
}

/// A random salt for the uid of a row that has no natural key within its run (a call, a
/// review, an error): two alike to the millisecond stay two.
pub(crate) fn salt() -> i64 {
    rand::random::<i64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_of_a_hashed_prefix_is_the_uid_of_all_its_arguments() {
        let prefix = UidPrefix::new(&["bench_result".into(), Some("run-uid").into()]);
        for ints in [&[0i64][..], &[3, -7, i64::MAX], &[i64::MIN, 0, 12, 1]] {
            let mut parts: Vec<Part<'_>> = vec!["bench_result".into(), Some("run-uid").into()];
            parts.extend(ints.iter().map(|&n| Part::from(n)));
            assert_eq!(uid_text(&prefix.with_ints(ints)), uid(&parts), "{ints:?}");
        }
        let without_run = UidPrefix::new(&["bench_result".into(), Part::Null]);
        assert_eq!(
            uid_text(&without_run.with_ints(&[1, 2])),
            uid(&["bench_result".into(), Part::Null, 1i64.into(), 2i64.into()])
        );
    }

    #[test]
    fn hashes_are_of_the_arguments_as_text() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let h: String = conn
            .query_row("SELECT track_sha256('a', 1, NULL, 'b')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(h, crate::hash::sha256_hex(b"a\x1f1\x1f\0\x1fb"));
        let same: String = conn
            .query_row("SELECT track_sha256('a', '1', NULL, 'b')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(h, same, "an integer hashes as its text");
        let rust = uid(&["a".into(), 1i64.into(), Part::Null, "b".into()]);
        assert_eq!(h, rust, "the store's uids are the migration's");
    }

    #[test]
    fn backfilled_run_uids_are_v7_at_their_start() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let uid: String = conn
            .query_row(
                "SELECT track_uuid7('2026-11-25T10:00:00.123Z', 'run', 1)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let parsed = uuid::Uuid::parse_str(&uid).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        let (secs, nanos) = parsed.get_timestamp().unwrap().to_unix();
        assert_eq!((secs, nanos / 1_000_000), (1_795_600_800, 123));
        let again: String = conn
            .query_row(
                "SELECT track_uuid7('2026-11-25T10:00:00.123Z', 'run', 1)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(uid, again, "two copies of one database backfill alike");
        assert_ne!(new_run_uid(), new_run_uid());
        let merged = merged_run_uid("abc", 3);
        assert_eq!(merged, merged_run_uid("abc", 3));
        assert_ne!(merged, merged_run_uid("abc", 4));
        assert_eq!(uuid::Uuid::parse_str(&merged).unwrap().get_version_num(), 8);
    }
}
