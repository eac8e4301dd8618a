//! Energy estimates per request, as named and versioned methods stored with each result.
//!
//! `ecologits-0.9` (default) follows EcoLogits 0.9's LLM inference methodology; `seed-linear`
//! is the first-approximation formula of the original benchmark specification (one GPU's
//! energy only). Both ignore input tokens, so long-input calls (judges) are underestimated.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A closed range of a quantity; `min == max` for a single value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    /// A single value.
    pub(crate) fn exact(value: f64) -> Self {
        Self {
            min: value,
            max: value,
        }
    }

    /// The midpoint, reported as the value of a range.
    pub(crate) fn mid(&self) -> f64 {
        (self.min + self.max) / 2.0
    }
}

/// What the energy methods need to know of a model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyProfile {
    /// The model's parameter counts; `None` when nobody gave them (a config.yaml model without
    /// `parameters:`): its energy is then unknown, never guessed.
    pub parameters: Option<Parameters>,
    /// Data-centre power usage effectiveness of the provider.
    pub pue: Range,
}

/// A model's parameter counts, in billions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parameters {
    /// As the specification lists them (used by `seed-linear`).
    pub spec: f64,
    /// Active parameters (a range for closed models).
    pub active: Range,
    /// Total parameters (differs from active for mixtures of experts).
    pub total: Range,
}

/// An energy estimate in Wh: a value with its min-max range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Energy {
    pub wh: f64,
    pub min_wh: f64,
    pub max_wh: f64,
}

/// A named, versioned way of estimating energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum EnergyMethod {
    /// EcoLogits 0.9 (November 2025): H100/vLLM fit, batch 64, GPUs from memory, PUE.
    #[default]
    #[serde(rename = "ecologits-0.9")]
    EcoLogits09,
    /// The specification's `tokens_out x (8.91e-5 x P + 1.43e-3)` Wh (EcoLogits <= 0.8.2's GPU term).
    #[serde(rename = "seed-linear")]
    SeedLinear,
}

impl EnergyMethod {
    /// Every method, for help texts and validation.
    pub const ALL: [EnergyMethod; 2] = [Self::EcoLogits09, Self::SeedLinear];

    /// The name stored with each result.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::EcoLogits09 => "ecologits-0.9",
            Self::SeedLinear => "seed-linear",
        }
    }

    /// Estimates one request that produced `output_tokens` in `latency_s` seconds; `None` when
    /// the model's parameter counts are unknown.
    pub(crate) fn estimate(
        self,
        profile: &EnergyProfile,
        output_tokens: u64,
        latency_s: f64,
    ) -> Option<Energy> {
        let parameters = profile.parameters?;
        Some(match self {
            Self::SeedLinear => {
                let wh = seed_linear_wh(output_tokens, parameters.spec);
                Energy {
                    wh,
                    min_wh: wh,
                    max_wh: wh,
                }
            }
            Self::EcoLogits09 => {
                let at = |active: f64, total: f64, pue: f64| {
                    ecologits_09_wh(output_tokens, active, total, pue, Some(latency_s))
                };
                let min_wh = at(parameters.active.min, parameters.total.min, profile.pue.min);
                let max_wh = at(parameters.active.max, parameters.total.max, profile.pue.max);
                Energy {
                    wh: (min_wh + max_wh) / 2.0,
                    min_wh,
                    max_wh,
                }
            }
        })
    }
}

impl fmt::Display for EnergyMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EnergyMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown energy method `{s}`; choose ecologits-0.9 or seed-linear")
            })
    }
}

/// The specification's formula: Wh = tokens_out x (8.91e-5 x P + 1.43e-3), P in billions.
pub(crate) fn seed_linear_wh(output_tokens: u64, parameters_b: f64) -> f64 {
    output_tokens as f64 * (8.91e-5 * parameters_b + 1.43e-3)
}

/// EcoLogits 0.9 batch size.
const BATCH: f64 = 64.0;
/// GPU memory (GB) and server power (W) of the reference H100 server.
const GPU_MEMORY_GB: f64 = 80.0;
const SERVER_POWER_W: f64 = 1200.0;
const GPUS_PER_SERVER: f64 = 8.0;

/// EcoLogits 0.9 energy of one request in Wh (formulas in docs/src/measurement.md and
/// `shared/reference/measurement.md`); `latency_s` caps the generation time when known.
pub(crate) fn ecologits_09_wh(
    output_tokens: u64,
    active_b: f64,
    total_b: f64,
    pue: f64,
    latency_s: Option<f64>,
) -> f64 {
    let tokens = output_tokens as f64;
    let f_e = 1.166_527_317_045_191_4e-6 * (-0.011_205_921_025_579_175 * BATCH).exp() * active_b
        + 4.052_928_146_734_005e-5;
    let e_gpu = tokens * f_e;
    let f_l = 6.785_088e-4 * active_b + 3.119_310e-4 * BATCH + 1.947_371_8e-2;
    let mut generation_s = tokens * f_l;
    if let Some(latency) = latency_s.filter(|l| *l > 0.0) {
        generation_s = generation_s.min(latency);
    }
    let memory_gb = 1.2 * total_b * 16.0 / 8.0;
    let gpus = (memory_gb / GPU_MEMORY_GB)
        .ceil()
        .max(1.0)
        .log2()
        .ceil()
        .exp2();
    let e_server = generation_s / 3600.0 * SERVER_POWER_W * gpus / GPUS_PER_SERVER / BATCH;
    pue * (e_server + gpus * e_gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ecologits_worked_values_per_1000_tokens() {
        // measurement.md: PUE 1.2, no latency cap.
        for (active, total, expected) in [
            (8.0, 8.0, 0.089),
            (70.0, 70.0, 0.658),
            (44.0, 440.0, 2.13),
            (132.0, 440.0, 3.83),
        ] {
            let wh = ecologits_09_wh(1000, active, total, 1.2, None);
            assert!(close(wh, expected, 0.006), "{active}/{total}: {wh}");
        }
    }

    #[test]
    fn seed_linear_is_the_spec_formula() {
        // 100 tokens x (8.91e-5 x 7 + 1.43e-3) = 0.20537
        assert!(close(seed_linear_wh(100, 7.0), 0.20537, 1e-12));
        assert_eq!(seed_linear_wh(0, 200.0), 0.0);
    }

    #[test]
    fn ranges_give_min_and_max() {
        let gpt4o = EnergyProfile {
            parameters: Some(Parameters {
                spec: 200.0,
                active: Range {
                    min: 44.0,
                    max: 132.0,
                },
                total: Range::exact(440.0),
            }),
            pue: Range::exact(1.2),
        };
        let e = EnergyMethod::EcoLogits09
            .estimate(&gpt4o, 1000, 1e9)
            .unwrap();
        assert!(
            close(e.min_wh, 2.13, 0.006) && close(e.max_wh, 3.83, 0.006),
            "{e:?}"
        );
        assert!(close(e.wh, (e.min_wh + e.max_wh) / 2.0, 1e-12));
        let s = EnergyMethod::SeedLinear
            .estimate(&gpt4o, 1000, 1.0)
            .unwrap();
        assert!(close(s.wh, 1000.0 * (8.91e-5 * 200.0 + 1.43e-3), 1e-9));
        assert_eq!("seed-linear".parse(), Ok(EnergyMethod::SeedLinear));
        assert!("joules".parse::<EnergyMethod>().is_err());
    }

    #[test]
    fn unknown_parameters_leave_energy_unknown_under_every_method() {
        let unsized_model = EnergyProfile {
            parameters: None,
            pue: Range::exact(1.2),
        };
        for method in EnergyMethod::ALL {
            assert_eq!(method.estimate(&unsized_model, 1000, 1.0), None, "{method}");
        }
    }

    #[test]
    fn latency_caps_the_server_term() {
        let slow = ecologits_09_wh(1000, 8.0, 8.0, 1.0, None);
        let fast = ecologits_09_wh(1000, 8.0, 8.0, 1.0, Some(0.5));
        assert!(fast < slow);
    }
}
