//! The calls a merge in bulk copies (OUT's indexes of calls set aside, see `SetAside`):
//! found in OUT by a key of their uid held in memory ([`CallKeys`]), numbered after OUT's last
//! call in the input's order, and copied. The rows that name a call then find its id in OUT
//! through [`CallIds`]: most often a shift (every call of the input new, its ids without a
//! gap, as a shard's are), with no table of ids at all.
//!
//! Before, each step was a statement over temporary tables (the keys of OUT's calls, the new
//! calls, the map of ids) and a subquery per row for each call a row names: 2.4 s of the 8 s
//! of copying 8 shards of 125,000 results, against 0.2 s to read the inputs' uids here.

use rusqlite::{Connection, OptionalExtension};

use super::copy_sql;

/// OUT's calls by a key of their uid (see [`key_of`]), each entry `key << 32 | id`, sorted:
/// 8 bytes a call (8 MB for 1,000,000 calls), against a temporary table of 18 MB read and
/// written again for each input. A key found is checked against the uid whole (two uids of
/// one key are two calls). Ids fit in 32 bits, which [`CallKeys::fits`] checks first.
pub(super) struct CallKeys {
    entries: Vec<u64>,
}

impl CallKeys {
    /// Whether OUT's calls and `coming` more keep their ids within 32 bits (none negative).
    pub(super) fn fits(conn: &Connection, coming: u64) -> rusqlite::Result<bool> {
        let (first, last): (i64, i64) = conn.query_row(
            "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM main.calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let below = |last: u64| last.saturating_add(coming) <= u64::from(u32::MAX);
        Ok(first >= 0 && u64::try_from(last).is_ok_and(below))
    }

    /// OUT's calls that have a uid, with room for `coming` more.
    pub(super) fn load(conn: &Connection, coming: u64) -> rusqlite::Result<Self> {
        let mut entries = Vec::new();
        let mut stmt = conn.prepare("SELECT id, uid FROM main.calls WHERE uid IS NOT NULL")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let uid: String = row.get(1)?;
            entries.push(entry(key_of(&uid), id));
        }
        entries.sort_unstable();
        entries.reserve_exact(usize::try_from(coming).unwrap_or(0));
        Ok(Self { entries })
    }

    /// The ids of the calls whose uid has `key`.
    fn candidates(&self, key: u32) -> impl Iterator<Item = i64> + '_ {
        let first = self.entries.partition_point(|&e| e >> 32 < u64::from(key));
        self.entries[first..]
            .iter()
            .take_while(move |&&e| e >> 32 == u64::from(key))
            .map(|&e| i64::from(e as u32))
    }

    /// Adds `added` (entries in any order).
    fn add(&mut self, added: Vec<u64>) {
        merge_sorted(&mut self.entries, added);
    }
}

/// Adds `added` (in any order) to `held` (sorted), merged in place from the back: no second
/// copy of `held`.
pub(super) fn merge_sorted<T: Ord + Copy + Default>(held: &mut Vec<T>, mut added: Vec<T>) {
    added.sort_unstable();
    let old = held.len();
    held.resize(old + added.len(), T::default());
    let (mut from_old, mut from_added) = (old, added.len());
    for slot in (0..held.len()).rev() {
        if from_added == 0 {
            break;
        }
        if from_old > 0 && held[from_old - 1] > added[from_added - 1] {
            held[slot] = held[from_old - 1];
            from_old -= 1;
        } else {
            held[slot] = added[from_added - 1];
            from_added -= 1;
        }
    }
}

/// The entry of a call of id `id` (within 32 bits, see [`CallKeys::fits`]) whose uid has `key`.
fn entry(key: u32, id: i64) -> u64 {
    u64::from(key) << 32 | (id as u64 & u64::from(u32::MAX))
}

/// The key of a uid or a hash: its first 8 hex digits (a sha256 in hex), or, for one not
/// written so, a hash of it whole.
pub(super) fn key_of(uid: &str) -> u32 {
    uid.get(..8)
        .and_then(|head| u32::from_str_radix(head, 16).ok())
        .unwrap_or_else(|| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            uid.hash(&mut hasher);
            hasher.finish() as u32
        })
}

/// Where an input's calls are in OUT, for the rows that name them.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CallIds {
    /// Every call of the input is new and has a uid, its ids `low..=high` without a gap: each
    /// is in OUT under its id plus `shift`.
    Shifted { low: i64, high: i64, shift: i64 },
    /// In `temp.call_map` (src, dst); a call missing from it (one without a uid) is unnamed.
    Mapped,
}

impl CallIds {
    /// The SQL expression of OUT's id of the call that `column` of a source row `s` names,
    /// NULL for none.
    pub(super) fn of(&self, column: &str) -> String {
        match self {
            CallIds::Shifted { low, high, shift } => {
                format!(
                    "CASE WHEN s.{column} BETWEEN {low} AND {high} THEN s.{column} + {shift} END"
                )
            }
            CallIds::Mapped => format!("(SELECT dst FROM temp.call_map WHERE src = s.{column})"),
        }
    }

    /// As [`CallIds::of`] for a statement over many rows: a join to add after `FROM … s`
    /// (`alias` names it) and the expression, not a subquery run for each row.
    pub(super) fn joined(&self, column: &str, alias: &str) -> (String, String) {
        match self {
            CallIds::Shifted { .. } => (String::new(), self.of(column)),
            CallIds::Mapped => (
                format!(" LEFT JOIN temp.call_map {alias} ON {alias}.src = s.{column}"),
                format!("{alias}.dst"),
            ),
        }
    }
}

/// An input's calls, copied in bulk.
pub(super) struct Copied {
    /// Where they are in OUT.
    pub(super) ids: CallIds,
    /// The new ones, each with its id in the input and in OUT, in the order of both.
    pub(super) new: Vec<(i64, i64)>,
}

/// What reading the input's calls found: those OUT holds and the new ones.
#[derive(Default)]
struct Sorted {
    /// Each call OUT holds: its id in the input and in OUT.
    held: Vec<(i64, i64)>,
    /// Each new call: its id in the input and in OUT, and whether it has a uid (one without
    /// is copied, not mapped, as OUT's index of uids found none).
    new: Vec<(i64, i64, bool)>,
    /// The entries of the new calls for [`CallKeys`].
    keys: Vec<u64>,
}

/// Reads the attached input's calls in the order of their ids and finds each in OUT by its
/// uid, numbering the new ones after `before`, OUT's last id.
fn sort_calls(tx: &Connection, before: i64, keys: &CallKeys) -> rusqlite::Result<Sorted> {
    let mut theirs = tx.prepare("SELECT uid FROM main.calls WHERE id = ?1")?;
    let mut stmt = tx.prepare("SELECT id, uid FROM src.calls ORDER BY id")?;
    let mut rows = stmt.query([])?;
    let mut sorted = Sorted::default();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let dst = before + sorted.new.len() as i64 + 1;
        let Some(uid) = row.get::<_, Option<String>>(1)? else {
            sorted.new.push((id, dst, false));
            continue;
        };
        let key = key_of(&uid);
        let mut held = None;
        for candidate in keys.candidates(key) {
            let same = theirs
                .query_row([candidate], |r| r.get::<_, Option<String>>(0))
                .optional()?
                .flatten()
                .is_some_and(|theirs| theirs == uid);
            if same {
                held = Some(candidate);
                break;
            }
        }
        match held {
            Some(held) => sorted.held.push((id, held)),
            None => {
                sorted.new.push((id, dst, true));
                sorted.keys.push(entry(key, dst));
            }
        }
    }
    Ok(sorted)
}

/// Copies the attached input's new calls into OUT under ids after `before` (OUT's last),
/// `batch` the expression of their batch, and says where every call of the input is.
pub(super) fn copy_in_bulk(
    tx: &Connection,
    before: i64,
    batch: (&str, String),
    keys: &mut CallKeys,
) -> rusqlite::Result<Copied> {
    let Sorted {
        held,
        new,
        keys: added,
    } = sort_calls(tx, before, keys)?;
    keys.add(added);
    let gapless = match (new.first(), new.last()) {
        (Some(first), Some(last)) => last.0 - first.0 + 1 == new.len() as i64,
        _ => false,
    };
    let ids = match held.is_empty() && gapless && new.iter().all(|n| n.2) {
        true => CallIds::Shifted {
            low: new[0].0,
            high: new[new.len() - 1].0,
            shift: new[0].1 - new[0].0,
        },
        false => CallIds::Mapped,
    };
    match &ids {
        CallIds::Shifted { shift, .. } => {
            let id = ("id", format!("s.id + {shift}"));
            tx.execute(&copy_sql(tx, "calls", &[id, batch], "ORDER BY s.id")?, [])?;
        }
        CallIds::Mapped => {
            tx.execute_batch("DELETE FROM temp.new_calls")?;
            let mut numbered =
                tx.prepare("INSERT INTO temp.new_calls (id, dst) VALUES (?1, ?2)")?;
            let mut mapped = tx.prepare("INSERT INTO temp.call_map (src, dst) VALUES (?1, ?2)")?;
            for &(src, dst, keyed) in &new {
                numbered.execute([src, dst])?;
                if keyed {
                    mapped.execute([src, dst])?;
                }
            }
            for &(src, dst) in &held {
                mapped.execute([src, dst])?;
            }
            let id = ("id", "n.dst".to_owned());
            tx.execute(
                &copy_sql(
                    tx,
                    "calls",
                    &[id, batch],
                    "CROSS JOIN temp.new_calls n ON n.id = s.id ORDER BY s.id",
                )?,
                [],
            )?;
        }
    }
    Ok(Copied {
        ids,
        new: new.into_iter().map(|(src, dst, _)| (src, dst)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(entries: &[u64]) -> CallKeys {
        let mut entries = entries.to_vec();
        entries.sort_unstable();
        CallKeys { entries }
    }

    #[test]
    fn entries_added_are_merged_in_order_with_those_held() {
        let mut held = keys(&[entry(5, 1), entry(9, 2), entry(1, 3)]);
        held.add(vec![entry(7, 4), entry(0, 5), entry(9, 6), entry(12, 7)]);
        let mut expected = vec![
            entry(5, 1),
            entry(9, 2),
            entry(1, 3),
            entry(7, 4),
            entry(0, 5),
            entry(9, 6),
            entry(12, 7),
        ];
        expected.sort_unstable();
        assert_eq!(held.entries, expected);
        assert_eq!(held.candidates(9).collect::<Vec<_>>(), vec![2, 6]);
        assert_eq!(held.candidates(8).count(), 0);
        assert_eq!(held.candidates(12).collect::<Vec<_>>(), vec![7]);
        let mut empty = keys(&[]);
        empty.add(vec![entry(3, 1)]);
        assert_eq!(empty.candidates(3).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn a_key_is_the_head_of_a_hex_uid_or_a_hash_of_any_other() {
        let hex = "00c0ffee".to_owned() + &"a".repeat(56);
        assert_eq!(key_of(&hex), 0x00c0_ffee);
        assert_eq!(key_of("FFFFFFFF"), u32::MAX);
        // Not hex, or too short: a hash, the same each time, different for different uids.
        assert_eq!(key_of("e45c1d2g-x"), key_of("e45c1d2g-x"));
        assert_ne!(key_of("e45c1d2g-x"), key_of("e45c1d2g-y"));
        assert_eq!(key_of("abc"), key_of("abc"));
        assert_eq!(key_of("é45c1d24"), key_of("é45c1d24"));
    }

    #[test]
    fn ids_fit_when_none_is_negative_and_the_last_with_those_coming_is_within_32_bits() {
        let conn = Connection::open_in_memory().expect("db");
        conn.execute_batch("CREATE TABLE calls (id INTEGER PRIMARY KEY, uid TEXT)")
            .expect("table");
        assert!(CallKeys::fits(&conn, u64::from(u32::MAX)).expect("fits"));
        assert!(!CallKeys::fits(&conn, u64::from(u32::MAX) + 1).expect("fits"));
        let last = i64::from(u32::MAX) - 5;
        conn.execute("INSERT INTO calls (id) VALUES (?1)", [last])
            .expect("call");
        assert!(CallKeys::fits(&conn, 5).expect("fits"));
        assert!(!CallKeys::fits(&conn, 6).expect("fits"));
        conn.execute_batch("DELETE FROM calls; INSERT INTO calls (id) VALUES (-1), (7)")
            .expect("calls");
        assert!(!CallKeys::fits(&conn, 0).expect("fits"));
    }

    #[test]
    fn an_entry_keeps_its_key_and_id_apart() {
        let e = entry(0xdead_beef, i64::from(u32::MAX));
        assert_eq!(e >> 32, 0xdead_beef);
        assert_eq!(e as u32, u32::MAX);
        assert!(entry(1, 7) > entry(0, i64::from(u32::MAX)));
    }

    #[test]
    fn calls_shifted_are_named_by_their_id_plus_the_shift_within_their_range() {
        let ids = CallIds::Shifted {
            low: 3,
            high: 9,
            shift: 100,
        };
        let conn = Connection::open_in_memory().expect("db");
        let of = |id: Option<i64>| -> Option<i64> {
            conn.query_row(
                &format!("SELECT {} FROM (SELECT ?1 AS call_id) s", ids.of("call_id")),
                [id],
                |r| r.get(0),
            )
            .expect("query")
        };
        assert_eq!(of(Some(3)), Some(103));
        assert_eq!(of(Some(9)), Some(109));
        assert_eq!(of(Some(2)), None);
        assert_eq!(of(Some(10)), None);
        assert_eq!(of(None), None);
    }
}
