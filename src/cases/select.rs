//! Which rows a benchmark takes: all, the first N (`limit:`), or a sample (`sample: {n,
//! seed}`): the n rows whose sha256 of (seed, id) is smallest, kept in file order. A row's
//! place in the sample depends only on its own id, so inserting a row moves at most one other
//! row out of the sample (the one it displaces), and removing a row outside it changes nothing.

use sha2::{Digest, Sha256};

/// The key a row is sampled by: sha256 of `seed`, a newline and its id.
pub(crate) fn sample_key(seed: u64, id: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_string().as_bytes());
    hasher.update(b"\n");
    hasher.update(id.as_bytes());
    hasher.finalize().into()
}

/// The indices (ascending: file order) of the `n` ids of smallest [`sample_key`]; all of them
/// when there are at most `n`. Ids are unique, so there are no ties to break.
pub(crate) fn sample(ids: &[&str], n: usize, seed: u64) -> Vec<usize> {
    if ids.len() <= n {
        return (0..ids.len()).collect();
    }
    let mut keyed: Vec<([u8; 32], usize)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (sample_key(seed, id), i))
        .collect();
    keyed.select_nth_unstable(n - 1);
    let mut chosen: Vec<usize> = keyed[..n].iter().map(|(_, i)| *i).collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("row-{i}")).collect()
    }

    fn chosen(ids: &[String], n: usize, seed: u64) -> BTreeSet<String> {
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        sample(&refs, n, seed)
            .into_iter()
            .map(|i| ids[i].clone())
            .collect()
    }

    #[test]
    fn a_sample_is_n_rows_in_file_order_and_depends_on_the_seed() {
        let all = ids(100);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let picked = sample(&refs, 10, 1);
        assert_eq!(picked.len(), 10);
        assert!(picked.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(picked, sample(&refs, 10, 1));
        assert_ne!(picked, sample(&refs, 10, 2));
        assert_eq!(sample(&refs[..5], 10, 1), [0, 1, 2, 3, 4]);
        // The rows of smallest keys: no row outside has a smaller key than one inside.
        let inside: Vec<[u8; 32]> = picked.iter().map(|&i| sample_key(1, refs[i])).collect();
        let largest = inside.iter().max().unwrap();
        for (i, id) in refs.iter().enumerate() {
            if !picked.contains(&i) {
                assert!(sample_key(1, id) > *largest);
            }
        }
    }

    #[test]
    fn inserting_a_row_moves_at_most_one_other_row_out_of_the_sample() {
        for seed in 0..20 {
            let before = ids(60);
            let old = chosen(&before, 15, seed);
            for at in [0, 17, 60] {
                let mut after = before.clone();
                after.insert(at, format!("new-{seed}-{at}"));
                let new = chosen(&after, 15, seed);
                let left: Vec<&String> = old.difference(&new).collect();
                let came: Vec<&String> = new.difference(&old).collect();
                assert!(left.len() <= 1, "seed {seed}: {left:?} left");
                // Whatever came in is the new row, and only when one left for it.
                assert_eq!(left.len(), came.len());
                assert!(came.iter().all(|id| id.starts_with("new-")));
            }
        }
    }
}
