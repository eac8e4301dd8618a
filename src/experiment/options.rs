//! The options of a run, with one meaning for every kind of experiment.

use super::{ExperimentError, ExperimentKind, Shard};
use crate::dispatch::CacheMode;
use crate::dispatch::budget::parse_budget;
use crate::energy::EnergyMethod;

/// How to run an experiment: what every kind shares.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How the call cache is used (`--no-cache`, `--offline`).
    pub cache: CacheMode,
    /// Print the plan and its cost bound; send nothing, record nothing.
    pub dry_run: bool,
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Draw a progress bar on stderr (it hides itself when stderr is not a terminal).
    pub show_progress: bool,
    /// The command line that started the run, after `track` (recorded with it).
    pub command: Option<String>,
    /// The most the run may spend, in USD (`--budget`); it wins over the file's `budget:`.
    pub budget_usd: Option<f64>,
    /// Send the uncached calls of models with a batch API through it, at half price
    /// (`--batch`); the file's `batch: true` asks the same ([`Experiment::batch`]).
    ///
    /// [`Experiment::batch`]: super::Experiment::batch
    pub batch: bool,
    /// Submit the batches, then leave the run `waiting` without polling them (`--detach`);
    /// the same command later collects them. Needs batch mode ([`RunOptions::check_batch`]).
    pub detach: bool,
    /// The part of the plan this process runs (`--shard k/N`); [`Shard::WHOLE`] by default.
    pub shard: Shard,
    /// How a shard paces against its key's rate limits (`--shard-pace`).
    pub shard_pace: ShardPace,
}

/// How the shards of a plan share their keys' rate limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ShardPace {
    /// Each of N shards paces at 1/N of every limit: the shards share one key, each with a
    /// database of its own.
    #[default]
    Split,
    /// Each shard paces at the whole limit: each has a key of its own, or the shards share
    /// one database, whose buckets pace them together.
    Whole,
}

impl RunOptions {
    /// The most this run may spend, in USD: `--budget`, else the file's `budget:`; a budget is
    /// the plan's, so shard k/N may spend 1/N of it (N shards together never more).
    pub(crate) fn budget(&self, file_budget: Option<f64>) -> Option<f64> {
        self.budget_usd
            .or(file_budget)
            .map(|usd| usd / f64::from(self.shard.count.max(1)))
    }

    /// The part of every rate limit this run may use: 1/N for shard k/N pacing `split`.
    pub(crate) fn pace_share(&self) -> f64 {
        match self.shard_pace {
            ShardPace::Split => 1.0 / f64::from(self.shard.count.max(1)),
            ShardPace::Whole => 1.0,
        }
    }
}

impl RunOptions {
    /// Refuses options that contradict batch mode, before anything is sent: `--batch` with
    /// `--offline`, and `--detach` when neither `--batch` nor the file (`file_batch`, the
    /// experiment's `batch: true`) asks for batches.
    pub(crate) fn check_batch(&self, file_batch: bool) -> Result<(), ExperimentError> {
        if self.batch && self.cache == CacheMode::Offline {
            return Err(ExperimentError::Conflict(
                "--batch sends calls to a provider's batch API; --offline forbids calls: drop one",
            ));
        }
        if self.detach && !(self.batch || file_batch) {
            return Err(ExperimentError::Conflict(
                "--detach leaves a run waiting for its batches, and this run sends none: add \
                 --batch (or `batch: true` in the experiment file), or drop --detach",
            ));
        }
        Ok(())
    }

    /// Whether the run sends through batch APIs: `--batch` or the file's `batch: true`.
    pub(crate) fn batch_on(&self, file_batch: bool) -> bool {
        self.batch || file_batch
    }
}

/// A budget as an experiment file writes it (`budget: 5`, `budget: 0.25`, `budget: "$5"`):
/// a positive amount in USD, checked as `--budget` is ([`parse_budget`]) while the file is
/// read, so a bad one is refused with the file's line and the fix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileBudget(pub f64);

impl<'de> serde::Deserialize<'de> for FileBudget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Amount;

        impl serde::de::Visitor<'_> for Amount {
            type Value = FileBudget;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`budget:` as an amount in US dollars, e.g. 5 or 0.25")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<FileBudget, E> {
                parse_budget(text)
                    .map(FileBudget)
                    .map_err(|why| E::custom(format!("`budget:` {why}")))
            }

            fn visit_f64<E: serde::de::Error>(self, usd: f64) -> Result<FileBudget, E> {
                self.visit_str(&usd.to_string())
            }

            fn visit_i64<E: serde::de::Error>(self, usd: i64) -> Result<FileBudget, E> {
                self.visit_str(&usd.to_string())
            }

            fn visit_u64<E: serde::de::Error>(self, usd: u64) -> Result<FileBudget, E> {
                self.visit_str(&usd.to_string())
            }
        }

        deserializer.deserialize_any(Amount)
    }
}

/// Reads an experiment file's `batch:`: `true` or `false`, refused otherwise with the
/// setting named (serde's own message is only "invalid boolean").
pub(crate) fn batch_flag<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<bool, D::Error> {
    struct Flag;

    impl serde::de::Visitor<'_> for Flag {
        type Value = bool;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("`batch:` as true or false")
        }

        fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<bool, E> {
            Ok(value)
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<bool, E> {
            match text {
                "true" => Ok(true),
                "false" => Ok(false),
                other => Err(E::custom(format!(
                    "`batch: {other}` must be true (send the calls through batch APIs, at half \
                     price) or false"
                ))),
            }
        }
    }

    deserializer.deserialize_any(Flag)
}

/// The most samples per call a user may ask for: beyond it, a typo is likelier than intent.
pub const MAX_REPEAT: u32 = 10_000;

/// Options that change what an experiment asks. Each kind takes those that make sense for it
/// and refuses the others by name ([`Overrides::refuse`]), never ignoring one silently.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Samples per call, each a distinct cache entry (`--repeat`).
    pub repeat: Option<u32>,
    /// The models under evaluation, replacing the file's (`--models`, `--model`).
    pub models: Option<Vec<String>>,
    /// How energy is estimated (`--energy`).
    pub energy: Option<EnergyMethod>,
    /// How a benchmark's cases may be read (`--offline`; the database keeping `hf://` files).
    pub cases: crate::cases::LoadOptions,
    /// `--dry-run`: what was loaded is then said once, in the plan on stdout, not also as a
    /// note on stderr (a terminal showed both).
    pub dry_run: bool,
}

/// One of the [`Overrides`], for [`Overrides::refuse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    Repeat,
    Models,
    Energy,
}

impl Overrides {
    /// An error naming the first of `unsupported` that is set, with why it makes no sense
    /// for `kind`.
    pub(crate) fn refuse(
        &self,
        kind: ExperimentKind,
        unsupported: &[(Override, &'static str)],
    ) -> Result<(), ExperimentError> {
        for &(option, why) in unsupported {
            let (set, name) = match option {
                Override::Repeat => (self.repeat.is_some(), "--repeat"),
                Override::Models => (self.models.is_some(), "--models"),
                Override::Energy => (self.energy.is_some(), "--energy"),
            };
            if set {
                return Err(ExperimentError::Unsupported {
                    kind,
                    option: name,
                    why,
                });
            }
        }
        Ok(())
    }

    /// The repeat in force: the command line's, else `from_file`, checked against
    /// [`MAX_REPEAT`] (0 means 1).
    pub(crate) fn repeat_or(&self, from_file: u32) -> Result<u32, ExperimentError> {
        let repeat = self.repeat.unwrap_or(from_file).max(1);
        if repeat > MAX_REPEAT {
            return Err(ExperimentError::TooManyRepeats {
                repeat,
                limit: MAX_REPEAT,
            });
        }
        Ok(repeat)
    }

    /// The model references in force: the command line's (trimmed, empty ones dropped),
    /// else `from_file`.
    pub(crate) fn models_or(&self, from_file: &[String]) -> Vec<String> {
        match &self.models {
            Some(list) => list
                .iter()
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect(),
            None => from_file.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_options_are_named_with_the_kind() {
        let overrides = Overrides {
            energy: Some(EnergyMethod::SeedLinear),
            ..Overrides::default()
        };
        let e = overrides
            .refuse(
                ExperimentKind::Review,
                &[
                    (Override::Repeat, "-"),
                    (Override::Energy, "reviews record no energy"),
                ],
            )
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--energy does not apply to review experiments: reviews record no energy"
        );
        assert!(
            Overrides::default()
                .refuse(ExperimentKind::Review, &[(Override::Energy, "-")])
                .is_ok()
        );
    }

    #[test]
    fn a_file_budget_is_a_positive_amount_named_with_its_setting() {
        #[derive(Debug, serde::Deserialize)]
        struct File {
            budget: FileBudget,
        }
        let read = |yaml: &str| serde_saphyr::from_str::<File>(yaml).map(|f| f.budget.0);
        assert_eq!(read("budget: 5").unwrap(), 5.0);
        assert_eq!(read("budget: 0.25").unwrap(), 0.25);
        assert_eq!(read("budget: \"$5\"").unwrap(), 5.0);
        assert_eq!(read("budget: $0.5").unwrap(), 0.5);
        for bad in ["budget: abc", "budget: 0", "budget: -1", "budget: [1]"] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("`budget:`") && e.contains("US dollars"),
                "{bad}: {e}"
            );
        }
        assert!(read("budget: .inf").is_err());
    }

    fn options(cache: CacheMode, batch: bool, detach: bool) -> RunOptions {
        RunOptions {
            cache,
            dry_run: false,
            concurrency: 1,
            show_progress: false,
            command: None,
            budget_usd: None,
            batch,
            detach,
            shard: Shard::WHOLE,
            shard_pace: ShardPace::Split,
        }
    }

    #[test]
    fn a_shard_may_spend_and_pace_at_its_part_of_the_plan() {
        let mut o = options(CacheMode::Use, false, false);
        assert_eq!(o.budget(Some(8.0)), Some(8.0));
        o.shard = Shard::new(1, 4).unwrap();
        assert_eq!(
            o.budget(Some(8.0)),
            Some(2.0),
            "the file's budget is the plan's"
        );
        o.budget_usd = Some(4.0);
        assert_eq!(
            o.budget(Some(8.0)),
            Some(1.0),
            "--budget wins, and is the plan's too"
        );
        assert_eq!(o.budget(None), Some(1.0));
        assert_eq!(o.pace_share(), 0.25);
        o.shard_pace = ShardPace::Whole;
        assert_eq!(o.pace_share(), 1.0);
    }

    #[test]
    fn batch_options_that_contradict_each_other_are_refused() {
        let e = options(CacheMode::Offline, true, false)
            .check_batch(false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--batch sends calls to a provider's batch API; --offline forbids calls: drop one"
        );
        let e = options(CacheMode::Use, false, true)
            .check_batch(false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--detach ") && e.contains("--batch"), "{e}");
        assert_eq!(e.lines().count(), 1);
        // The file's `batch: true` is batch mode too.
        assert!(
            options(CacheMode::Use, false, true)
                .check_batch(true)
                .is_ok()
        );
        assert!(
            options(CacheMode::Use, true, true)
                .check_batch(false)
                .is_ok()
        );
        assert!(
            options(CacheMode::Offline, false, false)
                .check_batch(true)
                .is_ok()
        );
        assert!(
            options(CacheMode::Refresh, true, false)
                .check_batch(false)
                .is_ok()
        );
        assert!(options(CacheMode::Use, false, false).batch_on(true));
        assert!(!options(CacheMode::Use, false, false).batch_on(false));
    }

    #[test]
    fn repeat_is_bounded() {
        let o = Overrides {
            repeat: Some(4_294_967_295),
            ..Overrides::default()
        };
        assert!(o.repeat_or(1).is_err());
        assert_eq!(Overrides::default().repeat_or(0).unwrap(), 1);
        assert_eq!(Overrides::default().repeat_or(3).unwrap(), 3);
    }
}
