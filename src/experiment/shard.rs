//! Shards: one part of a plan (`--shard k/N`), for runs spread over machines. An item (what
//! a kind's statistics pair: a benchmark test and its judge, an image's WITH and WITHOUT
//! calls, a datasheet's generation and reviews, a pairwise item's orders) goes to shard
//! `hash(item) mod N`, so the shards of a plan are disjoint and together cover it. The
//! runtime keeps a stage's calls of its shard; a kind that records rows without calls
//! ([`Experiment::begin`](super::Experiment::begin)) asks [`Shard::keeps`] itself.

use std::fmt;

use sha2::{Digest, Sha256};

use super::{Experiment, Stage};

/// Where `--shard auto` looks, in order: a Kubernetes Indexed Job, then a Slurm array.
pub const AUTO_SOURCES: &str = "JOB_COMPLETION_INDEX with JOB_COMPLETIONS (a Kubernetes Indexed Job), or \
     SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (a Slurm array)";

/// One part of a plan: shard `index` of `count`, from 0. `0/1` is the whole plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The most shards a plan may be split into.
pub const MAX_SHARDS: u32 = 100_000;

/// A `--shard` that cannot be read, with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard `{0}` is not a shard: write k/N (k from 0 to N-1, e.g. 0/4) or `auto`")]
    Syntax(String),
    #[error(
        "--shard {index}/{count}: k counts from 0, so the shards of {count} are 0/{count} to {last}/{count}",
        last = count - 1
    )]
    OutOfRange { index: u32, count: u32 },
    #[error("--shard: N must be from 1 to {MAX_SHARDS}, not {0}")]
    Count(u32),
    #[error(
        "--shard auto found no scheduler's shard: it reads {AUTO_SOURCES}; set them, or give --shard k/N"
    )]
    NoScheduler,
    #[error("--shard auto: {variable}={value} is not a number ({why})")]
    BadVariable {
        variable: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("--shard auto: {found} is set but {missing} is not; set it to the number of shards")]
    Missing {
        found: &'static str,
        missing: &'static str,
    },
    #[error(
        "--shard auto: SLURM_ARRAY_TASK_ID={task} is below SLURM_ARRAY_TASK_MIN={min}, the \
         array's lowest task id; give the task its own id, or --shard k/N"
    )]
    BelowMin { task: u32, min: u32 },
    #[error(
        "--shard auto: {index_var}={index_value} makes shard {index} of {count_var}={count}, but \
         the shards of {count} are 0 to {last}; set {count_var} to the number of shards{hint}",
        last = count.saturating_sub(1)
    )]
    AutoOutOfRange {
        index_var: &'static str,
        index_value: u32,
        index: u32,
        count_var: &'static str,
        count: u32,
        /// How the index was reckoned, when not plainly.
        hint: String,
    },
    #[error(
        "--shard auto: {variable}={value}: the number of shards must be from 1 to {MAX_SHARDS}"
    )]
    AutoCount { variable: &'static str, value: u32 },
    #[error(
        "--shard auto: a Kubernetes Indexed Job (JOB_COMPLETION_INDEX={k8s_index}, \
         JOB_COMPLETIONS={k8s_count}: shard {k8s}) and a Slurm array (SLURM_ARRAY_TASK_ID=\
         {slurm_task}, SLURM_ARRAY_TASK_COUNT={slurm_count}: shard {slurm}) give different \
         shards; unset the variables of the one that does not run this process, or give \
         --shard k/N"
    )]
    Conflict {
        k8s_index: u32,
        k8s_count: u32,
        k8s: Shard,
        slurm_task: u32,
        slurm_count: u32,
        slurm: Shard,
    },
}

impl Shard {
    /// The whole plan: one shard of one.
    pub const WHOLE: Self = Self { index: 0, count: 1 };

    /// Whether this is a part of a plan, not all of it.
    pub(crate) fn is_part(self) -> bool {
        self.count > 1
    }

    /// Reads `--shard`: `k/N`, or `auto` from the scheduler's variables (read by `var`).
    pub(crate) fn parse(
        text: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ShardError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Self::auto(var);
        }
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| ShardError::Syntax(text.to_owned()))?;
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| ShardError::Syntax(text.to_owned()))
        };
        Self::new(number(k)?, number(n)?)
    }

    /// Shard `index` of `count`, checked.
    pub(crate) fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Count(count));
        }
        if index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// The shard a scheduler gave this process: a Kubernetes Indexed Job's completion index
    /// (from 0) and completions, or a Slurm array's task id (from its lowest id, so
    /// `--array=1-8` gives shards 0 to 7) and task count.
    fn auto(var: impl Fn(&str) -> Option<String>) -> Result<Self, ShardError> {
        match (Self::of_k8s(&var)?, Self::of_slurm(&var)?) {
            (Some((k8s_index, k8s_count, k8s)), Some((slurm_task, slurm_count, slurm)))
                if k8s != slurm =>
            {
                Err(ShardError::Conflict {
                    k8s_index,
                    k8s_count,
                    k8s,
                    slurm_task,
                    slurm_count,
                    slurm,
                })
            }
            (Some((_, _, shard)), _) | (None, Some((_, _, shard))) => Ok(shard),
            (None, None) => Err(ShardError::NoScheduler),
        }
    }

    /// A Kubernetes Indexed Job's shard, with the index and count it was read from (`None`:
    /// not run by one).
    fn of_k8s(
        var: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<(u32, u32, Self)>, ShardError> {
        let Some(index) = scheduler_number(var, "JOB_COMPLETION_INDEX")? else {
            return Ok(None);
        };
        let count = scheduler_number(var, "JOB_COMPLETIONS")?.ok_or(ShardError::Missing {
            found: "JOB_COMPLETION_INDEX",
            missing: "JOB_COMPLETIONS",
        })?;
        let shard = Self::of_scheduler(
            ("JOB_COMPLETION_INDEX", index, index),
            ("JOB_COMPLETIONS", count),
            String::new(),
        )?;
        Ok(Some((index, count, shard)))
    }

    /// A Slurm array's shard, with the task id and count it was read from (`None`: not run
    /// by one).
    fn of_slurm(
        var: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<(u32, u32, Self)>, ShardError> {
        let Some(task) = scheduler_number(var, "SLURM_ARRAY_TASK_ID")? else {
            return Ok(None);
        };
        let count =
            scheduler_number(var, "SLURM_ARRAY_TASK_COUNT")?.ok_or(ShardError::Missing {
                found: "SLURM_ARRAY_TASK_ID",
                missing: "SLURM_ARRAY_TASK_COUNT",
            })?;
        let min = scheduler_number(var, "SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let step = scheduler_number(var, "SLURM_ARRAY_TASK_STEP")?
            .unwrap_or(1)
            .max(1);
        let index = task
            .checked_sub(min)
            .map(|d| d / step)
            .ok_or(ShardError::BelowMin { task, min })?;
        let hint = if min == 0 && step == 1 {
            String::new()
        } else {
            format!(
                " (the index counts from SLURM_ARRAY_TASK_MIN={min} in steps of \
                 SLURM_ARRAY_TASK_STEP={step})"
            )
        };
        let shard = Self::of_scheduler(
            ("SLURM_ARRAY_TASK_ID", task, index),
            ("SLURM_ARRAY_TASK_COUNT", count),
            hint,
        )?;
        Ok(Some((task, count, shard)))
    }

    /// Shard `index` of `count` as a scheduler's variables gave them (`index_var` holding
    /// `index_value`, `count_var`), checked; `hint` says how the index was counted.
    fn of_scheduler(
        (index_var, index_value, index): (&'static str, u32, u32),
        (count_var, count): (&'static str, u32),
        hint: String,
    ) -> Result<Self, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::AutoCount {
                variable: count_var,
                value: count,
            });
        }
        if index >= count {
            return Err(ShardError::AutoOutOfRange {
                index_var,
                index_value,
                index,
                count_var,
                count,
                hint,
            });
        }
        Ok(Self { index, count })
    }

    /// Whether the item named `key` belongs to this shard: `sha256(key) mod N`.
    pub(crate) fn keeps(self, key: &str) -> bool {
        if self.count <= 1 {
            return true;
        }
        let digest = Sha256::digest(key.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first) % u64::from(self.count) == u64::from(self.index)
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `stage` with only the calls of `shard` (all of them for the whole plan).
pub(crate) fn keep(experiment: &dyn Experiment, mut stage: Stage, shard: Shard) -> Stage {
    if !shard.is_part() {
        return stage;
    }
    let kept: Vec<bool> = (0..stage.calls.len())
        .map(|i| shard.keeps(&experiment.shard_key(&stage, i)))
        .collect();
    let mut kept = kept.into_iter();
    stage.calls.retain(|_| kept.next().unwrap_or(false));
    stage
}

/// The bytes of keys hashed at once by [`plan_sha256`].
const KEYS_BUFFER: usize = 64 * 1024;

/// The sha256 of a plan: its kind, experiment file text and options, and the cache keys of its
/// first stage, whatever is cached and whichever shard runs. Later stages depend on answers,
/// so they are not in it; what they ask follows from the rest.
pub(crate) fn plan_sha256(experiment: &dyn Experiment, first: Option<&Stage>) -> String {
    let header = experiment.header();
    let mut keys: Vec<&str> = first
        .map(|s| {
            s.calls
                .iter()
                .map(|c| c.job.canonical.key.as_str())
                .collect()
        })
        .unwrap_or_default();
    keys.sort_unstable();
    let mut hasher = Sha256::new();
    hasher.update(b"track plan v1\n");
    hasher.update(experiment.kind().as_str().as_bytes());
    hasher.update(b"\n");
    hasher.update(header.spec_sha256.unwrap_or_default().as_bytes());
    hasher.update(b"\n");
    hasher.update(header.options.to_string().as_bytes());
    hash_keys(&mut hasher, &keys);
    hex::encode(hasher.finalize())
}

/// Hashes each of `keys` after a newline, through a buffer in large pieces: updating the
/// hasher with each key's 65 bytes costs more than copying them.
fn hash_keys(hasher: &mut Sha256, keys: &[&str]) {
    let mut buffer: Vec<u8> = Vec::with_capacity(KEYS_BUFFER);
    for key in keys {
        if buffer.len() + key.len() + 1 > KEYS_BUFFER {
            hasher.update(&buffer);
            buffer.clear();
        }
        buffer.push(b'\n');
        buffer.extend_from_slice(key.as_bytes());
    }
    hasher.update(&buffer);
}

/// The whole number in the scheduler's variable `name` (`None`: unset or blank), read by `var`.
fn scheduler_number(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u32>, ShardError> {
    match var(name).filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(value) => value
            .trim()
            .parse::<u32>()
            .map(Some)
            .map_err(|_| ShardError::BadVariable {
                variable: name,
                value,
                why: "a whole number from 0 is expected",
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    /// Keys hashed through the buffer make the hash of the keys written one after the
    /// other, across many fills of the buffer and with a key longer than it: a stored plan's
    /// hash stays what it was.
    #[test]
    fn keys_hash_as_one_text_whatever_the_buffer() {
        let long = "k".repeat(KEYS_BUFFER + 7);
        let mut keys: Vec<String> = (0..3000).map(|i| format!("{i:064x}")).collect();
        keys.insert(1500, long);
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut buffered = Sha256::new();
        hash_keys(&mut buffered, &keys);
        let mut one_by_one = Sha256::new();
        for key in &keys {
            one_by_one.update(b"\n");
            one_by_one.update(key.as_bytes());
        }
        assert_eq!(buffered.finalize(), one_by_one.finalize());
    }

    #[test]
    fn shards_are_read_from_flags_and_schedulers() {
        let none = env(&[]);
        assert_eq!(Shard::parse("2/8", &none), Ok(Shard { index: 2, count: 8 }));
        assert_eq!(Shard::parse(" 0 / 1 ", &none), Ok(Shard::WHOLE));
        for bad in ["3", "a/b", "-1/4", "1/"] {
            assert_eq!(
                Shard::parse(bad, &none),
                Err(ShardError::Syntax(bad.trim().to_owned()))
            );
        }
        let e = Shard::parse("3/3", &none).unwrap_err().to_string();
        assert!(e.contains("0/3 to 2/3"), "{e}");
        assert_eq!(Shard::parse("0/0", &none), Err(ShardError::Count(0)));
        assert_eq!(Shard::parse("auto", &none), Err(ShardError::NoScheduler));
        let k8s = env(&[("JOB_COMPLETION_INDEX", "3"), ("JOB_COMPLETIONS", "4")]);
        assert_eq!(Shard::parse("auto", k8s), Ok(Shard { index: 3, count: 4 }));
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "8"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        assert_eq!(
            Shard::parse("AUTO", slurm),
            Ok(Shard { index: 7, count: 8 })
        );
        let half = env(&[("SLURM_ARRAY_TASK_ID", "2")]);
        let e = Shard::parse("auto", half).unwrap_err().to_string();
        assert!(e.contains("SLURM_ARRAY_TASK_COUNT is not"), "{e}");
        let garbage = env(&[("JOB_COMPLETION_INDEX", "x"), ("JOB_COMPLETIONS", "2")]);
        let e = Shard::parse("auto", garbage).unwrap_err().to_string();
        assert!(e.contains("JOB_COMPLETION_INDEX=x"), "{e}");
    }

    #[test]
    fn a_scheduler_shard_that_cannot_be_is_named_by_its_variables() {
        // A task below the array's lowest id is a number, just below.
        let below = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ]);
        let e = Shard::parse("auto", below).unwrap_err().to_string();
        assert!(!e.contains("not a number"), "{e}");
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=0 is below SLURM_ARRAY_TASK_MIN=1"),
            "{e}"
        );
        // An index past the count names the variables, not a --shard the user never wrote.
        for (index_var, count_var) in [
            ("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"),
            ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"),
        ] {
            let vars = [(index_var, "3"), (count_var, "3")];
            let e = Shard::parse("auto", env(&vars)).unwrap_err().to_string();
            assert!(!e.contains("3/3"), "{e}");
            assert!(e.contains(&format!("{index_var}=3")), "{e}");
            assert!(e.contains(&format!("{count_var}=3")), "{e}");
            assert!(e.contains("0 to 2"), "{e}");
        }
        let zero = env(&[("JOB_COMPLETION_INDEX", "0"), ("JOB_COMPLETIONS", "0")]);
        let e = Shard::parse("auto", zero).unwrap_err().to_string();
        assert!(e.contains("JOB_COMPLETIONS=0"), "{e}");
        // Both schedulers' variables, saying different shards: refused, naming both.
        let both = env(&[
            ("JOB_COMPLETION_INDEX", "1"),
            ("JOB_COMPLETIONS", "4"),
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        let e = Shard::parse("auto", both).unwrap_err().to_string();
        for needed in [
            "JOB_COMPLETION_INDEX=1",
            "SLURM_ARRAY_TASK_ID=2",
            "shard 1/4",
            "shard 2/4",
        ] {
            assert!(e.contains(needed), "{needed}: {e}");
        }
        // Saying the same shard, they agree.
        let agree = env(&[
            ("JOB_COMPLETION_INDEX", "2"),
            ("JOB_COMPLETIONS", "4"),
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(
            Shard::parse("auto", agree),
            Ok(Shard { index: 2, count: 4 })
        );
    }

    #[test]
    fn every_item_goes_to_exactly_one_shard_and_they_balance() {
        for count in [1u32, 2, 3, 8] {
            let shards: Vec<Shard> = (0..count).map(|k| Shard::new(k, count).unwrap()).collect();
            let mut sizes = vec![0u32; count as usize];
            for item in 0..4000 {
                let key = format!("item {item}");
                let owners: Vec<u32> = shards
                    .iter()
                    .filter(|s| s.keeps(&key))
                    .map(|s| s.index)
                    .collect();
                assert_eq!(owners.len(), 1, "{key} in {owners:?} of {count}");
                sizes[owners[0] as usize] += 1;
            }
            let expected = 4000 / count;
            for size in sizes {
                assert!(
                    size.abs_diff(expected) < expected / 5 + 10,
                    "{size} vs {expected}"
                );
            }
        }
    }
}
