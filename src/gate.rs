//! The bar a CI job sets a run (`--fail-under`, `--fail-on-errors`, or `fail_under:` and
//! `fail_on_errors:` in a benchmark file), and what of a run's outcomes misses it: each model
//! (or all of them together) whose pass rate is under the bar, each model with error rows.
//! A command that finds a miss exits with [`crate::exit::BELOW_BAR`]; nothing here prints.

use crate::store::ModelOutcomes;

/// A pass rate, in percent, that results must reach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bar {
    /// Every model's own pass rate (`--fail-under 80`).
    PerModel(f64),
    /// The pass rate of all the models' results together (`--fail-under overall:80`).
    Overall(f64),
}

impl Bar {
    /// Reads `PCT` or `overall:PCT` (a percentage from 0 to 100, `%` allowed), as `--fail-under`
    /// and `fail_under:` write it; the error says what is wrong and how to write it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (overall, pct) = match text.split_once(':') {
            Some((scope, pct)) if scope.trim() == "overall" => (true, pct),
            Some((scope, _)) => {
                return Err(format!(
                    "`{text}`: `{}` is not a scope: write PCT (each model's pass rate, e.g. 80) or \
                     overall:PCT (all models together, e.g. overall:80)",
                    scope.trim()
                ));
            }
            None => (false, text),
        };
        let number = pct.trim().trim_end_matches('%').trim();
        let pct = number
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                format!(
                    "`{text}` is not a pass rate: write a percentage from 0 to 100, e.g. 80 (each \
                     model) or overall:80 (all models together)"
                )
            })?;
        Ok(if overall {
            Self::Overall(pct)
        } else {
            Self::PerModel(pct)
        })
    }

    /// The percentage.
    pub fn pct(self) -> f64 {
        match self {
            Self::PerModel(pct) | Self::Overall(pct) => pct,
        }
    }
}

impl std::fmt::Display for Bar {
    /// As it is written: `80` or `overall:80`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PerModel(pct) => write!(f, "{pct}"),
            Self::Overall(pct) => write!(f, "overall:{pct}"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Bar {
    /// `fail_under: 80`, `fail_under: "overall:80"`: refused with the fix when it is neither.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pct;

        impl serde::de::Visitor<'_> for Pct {
            type Value = Bar;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`fail_under:` as a percentage (e.g. 80) or overall:PCT")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Bar, E> {
                Bar::parse(text).map_err(|why| E::custom(format!("`fail_under:` {why}")))
            }

            fn visit_f64<E: serde::de::Error>(self, pct: f64) -> Result<Bar, E> {
                self.visit_str(&pct.to_string())
            }

            fn visit_i64<E: serde::de::Error>(self, pct: i64) -> Result<Bar, E> {
                self.visit_str(&pct.to_string())
            }

            fn visit_u64<E: serde::de::Error>(self, pct: u64) -> Result<Bar, E> {
                self.visit_str(&pct.to_string())
            }
        }

        deserializer.deserialize_any(Pct)
    }
}

/// The bar of a run: what makes a command that ran exit [`crate::exit::BELOW_BAR`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gate {
    /// A pass rate results must reach.
    pub fail_under: Option<Bar>,
    /// Whether any error row misses the bar.
    pub fail_on_errors: bool,
    /// Whether `fail_under` is the experiment file's (`fail_under:`) rather than the command
    /// line's: the messages name where the bar was set.
    pub from_file: bool,
}

impl Gate {
    /// Whether there is a bar at all.
    pub fn is_set(&self) -> bool {
        self.fail_under.is_some() || self.fail_on_errors
    }

    /// This gate with `flags` (the command line's) over it: a `--fail-under` wins over the
    /// file's, and `--fail-on-errors` adds to it.
    pub fn overridden_by(self, flags: Self) -> Self {
        Self {
            fail_under: flags.fail_under.or(self.fail_under),
            fail_on_errors: flags.fail_on_errors || self.fail_on_errors,
            from_file: flags.fail_under.is_none() && self.from_file,
        }
    }

    /// What of `outcomes` (per model, in report order) misses the bar, one sentence each:
    /// each model under a per-model bar, or all of them under an overall one, then each model
    /// with error rows under `--fail-on-errors`. Empty: the bar is met.
    pub fn misses(&self, outcomes: &[ModelOutcomes]) -> Vec<String> {
        let mut misses = Vec::new();
        let set_by = |bar: Bar| {
            if self.from_file {
                format!("`fail_under: {bar}` in the benchmark file")
            } else {
                format!("--fail-under {bar}")
            }
        };
        match self.fail_under {
            Some(Bar::PerModel(pct)) => {
                for model in outcomes {
                    if below(model.passed, model.decided(), pct) {
                        misses.push(format!(
                            "{}: {}, under the bar of {pct} % ({})",
                            model.model,
                            rate(model.passed, model.decided(), model.errors),
                            set_by(Bar::PerModel(pct))
                        ));
                    }
                }
            }
            Some(Bar::Overall(pct)) => {
                let passed = outcomes.iter().map(|m| m.passed).sum();
                let decided = outcomes.iter().map(ModelOutcomes::decided).sum();
                let errors = outcomes.iter().map(|m| m.errors).sum();
                if below(passed, decided, pct) {
                    misses.push(format!(
                        "all models together: {}, under the bar of {pct} % ({})",
                        rate(passed, decided, errors),
                        set_by(Bar::Overall(pct))
                    ));
                }
            }
            None => {}
        }
        if self.fail_on_errors {
            for model in outcomes.iter().filter(|m| m.errors > 0) {
                misses.push(format!(
                    "{}: {} (--fail-on-errors)",
                    model.model,
                    crate::output::count(model.errors, "error row")
                ));
            }
        }
        misses
    }
}

/// Whether `passed` of `decided` is under `pct` percent. With nothing decided (every result
/// an error, or none), there is no rate: under any bar above 0.
fn below(passed: u64, decided: u64, pct: f64) -> bool {
    if decided == 0 {
        return pct > 0.0;
    }
    // Compared in counts: 4 of 5 is not under a bar of 80 by a rounding.
    (passed as f64) * 100.0 < pct * decided as f64
}

/// `pass rate 66.7 % (2 of 3)`, with the errors left out of the rate said; `no pass rate (no
/// result with an answer; 2 errors)` when there is none to rate.
fn rate(passed: u64, decided: u64, errors: u64) -> String {
    use crate::output::count;
    if decided == 0 {
        return match errors {
            0 => "no pass rate (no result)".to_owned(),
            n => format!(
                "no pass rate (no result with an answer; {})",
                count(n, "error")
            ),
        };
    }
    let left_out = match errors {
        0 => String::new(),
        n => format!("; {} left out of the rate", count(n, "error")),
    };
    format!(
        "pass rate {:.1} % ({passed} of {decided}{left_out})",
        passed as f64 * 100.0 / decided as f64
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str, passed: u64, failed: u64, errors: u64) -> ModelOutcomes {
        ModelOutcomes {
            model: name.to_owned(),
            passed,
            failed,
            errors,
        }
    }

    #[test]
    fn a_bar_is_a_percentage_of_each_model_or_of_all() {
        assert_eq!(Bar::parse("80"), Ok(Bar::PerModel(80.0)));
        assert_eq!(Bar::parse(" 75.5% "), Ok(Bar::PerModel(75.5)));
        assert_eq!(Bar::parse("overall:90"), Ok(Bar::Overall(90.0)));
        assert_eq!(Bar::parse("overall: 0"), Ok(Bar::Overall(0.0)));
        for bad in ["", "abc", "101", "-1", "NaN", "inf", "overall:"] {
            let e = Bar::parse(bad).unwrap_err();
            assert!(
                e.contains("from 0 to 100") && e.contains("overall:80"),
                "{bad}: {e}"
            );
        }
        let e = Bar::parse("model:80").unwrap_err();
        assert!(e.contains("`model` is not a scope"), "{e}");
        assert_eq!(Bar::Overall(80.0).to_string(), "overall:80");
    }

    #[test]
    fn the_file_s_bar_reads_numbers_and_text() {
        #[derive(serde::Deserialize)]
        struct File {
            fail_under: Bar,
        }
        let read = |yaml: &str| serde_saphyr::from_str::<File>(yaml).map(|f| f.fail_under);
        assert_eq!(read("fail_under: 80").unwrap(), Bar::PerModel(80.0));
        assert_eq!(read("fail_under: 62.5").unwrap(), Bar::PerModel(62.5));
        assert_eq!(read("fail_under: overall:80").unwrap(), Bar::Overall(80.0));
        let e = read("fail_under: lots").err().unwrap().to_string();
        assert!(e.contains("`fail_under:` `lots` is not a pass rate"), "{e}");
    }

    #[test]
    fn each_model_under_a_per_model_bar_is_named_with_its_rate() {
        let outcomes = [
            model("a", 4, 1, 0),
            model("b", 3, 2, 1),
            model("c", 0, 0, 2),
        ];
        let gate = Gate {
            fail_under: Some(Bar::PerModel(80.0)),
            fail_on_errors: false,
            from_file: false,
        };
        assert_eq!(
            gate.misses(&outcomes),
            [
                "b: pass rate 60.0 % (3 of 5; 1 error left out of the rate), under the bar of \
                 80 % (--fail-under 80)",
                "c: no pass rate (no result with an answer; 2 errors), under the bar of 80 % \
                 (--fail-under 80)",
            ]
        );
        // 4 of 5 is exactly 80 %: at the bar, not under it.
        let at = Gate {
            fail_under: Some(Bar::PerModel(80.0)),
            ..gate
        };
        assert!(at.misses(&outcomes[..1]).is_empty());
        let zero = Gate {
            fail_under: Some(Bar::PerModel(0.0)),
            ..gate
        };
        assert!(zero.misses(&outcomes).is_empty());
    }

    #[test]
    fn an_overall_bar_pools_the_models() {
        // 7 of 10 together: under 75, over 70, though model b alone is at 40 %.
        let outcomes = [model("a", 5, 0, 0), model("b", 2, 3, 0)];
        let under = Gate {
            fail_under: Some(Bar::Overall(75.0)),
            fail_on_errors: false,
            from_file: false,
        };
        assert_eq!(
            under.misses(&outcomes),
            [
                "all models together: pass rate 70.0 % (7 of 10), under the bar of 75 % \
              (--fail-under overall:75)"
            ]
        );
        let over = Gate {
            fail_under: Some(Bar::Overall(70.0)),
            fail_on_errors: false,
            from_file: false,
        };
        assert!(over.misses(&outcomes).is_empty());
    }

    #[test]
    fn error_rows_miss_the_bar_only_with_fail_on_errors() {
        let outcomes = [model("a", 5, 0, 0), model("b", 5, 0, 2)];
        assert!(Gate::default().misses(&outcomes).is_empty());
        let gate = Gate {
            fail_under: None,
            fail_on_errors: true,
            from_file: false,
        };
        assert_eq!(
            gate.misses(&outcomes),
            ["b: 2 error rows (--fail-on-errors)"]
        );
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let file = Gate {
            fail_under: Some(Bar::PerModel(50.0)),
            fail_on_errors: true,
            from_file: false,
        };
        let flags = Gate {
            fail_under: Some(Bar::Overall(90.0)),
            fail_on_errors: false,
            from_file: false,
        };
        assert_eq!(
            file.overridden_by(flags),
            Gate {
                fail_under: Some(Bar::Overall(90.0)),
                fail_on_errors: true,
                from_file: false,
            }
        );
        assert_eq!(file.overridden_by(Gate::default()), file);
        // The file's bar is named as the file's.
        let from_file = Gate {
            from_file: true,
            ..file
        };
        let outcomes = [model("a", 1, 3, 0)];
        assert_eq!(
            from_file.misses(&outcomes),
            [
                "a: pass rate 25.0 % (1 of 4), under the bar of 50 % (`fail_under: 50` in the \
              benchmark file)"
            ]
        );
        assert!(!from_file.overridden_by(flags).from_file);
    }
}
