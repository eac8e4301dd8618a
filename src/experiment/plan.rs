//! The plan: every call an experiment will make, stage by stage, with its cache key, how many
//! are cached, and the most the others can cost. `--dry-run` prints it and stops; a real run
//! starts from it.

use std::collections::HashMap;

use super::{Experiment, ExperimentError, Stage, Target};
use crate::llm::{
    CacheMode, CallJob, CallOutcome, Executor, MESSAGE_TOKENS_BOUND, Part, tokens_bound,
};
use crate::store::StoredCall;

/// Output tokens assumed for the cost bound of a call that sets no `max_tokens`.
pub const ASSUMED_MAX_OUTPUT_TOKENS: u32 = crate::llm::anthropic::DEFAULT_MAX_TOKENS;

/// Input tokens an image can count for, at most, in any wire format track speaks (OpenAI's
/// high-detail tiling of a 2048 x 768 image is 1,105; Anthropic's largest images are about
/// 1,600; patch-based models reach about 2,500).
pub const IMAGE_TOKENS_BOUND: u64 = 2_500;

/// The most calls one run may plan: beyond it, a typo (`repeat: 4294967295`) is likelier
/// than intent, and the plan alone would not fit in memory.
pub const MAX_PLANNED_CALLS: u64 = 1_000_000;

/// The plan's figures for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanLine {
    /// `provider:alias`, with its role when it is not the model under evaluation.
    pub model: String,
    pub calls: u64,
    pub cached: u64,
    pub to_call: u64,
    /// Upper bound of the cost of the calls to make, in USD.
    pub max_cost_usd: f64,
    /// Why calls of this model will fail (a missing key, `--offline`).
    pub note: Option<String>,
}

/// What a run would do, per model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub lines: Vec<PlanLine>,
    /// Names of the stages, in order.
    pub stages: Vec<&'static str>,
}

impl Plan {
    /// Every call planned.
    pub fn calls(&self) -> u64 {
        self.lines.iter().map(|l| l.calls).sum()
    }

    /// Calls served by the cache.
    pub fn cached(&self) -> u64 {
        self.lines.iter().map(|l| l.cached).sum()
    }

    /// Calls to send.
    pub fn to_call(&self) -> u64 {
        self.lines.iter().map(|l| l.to_call).sum()
    }

    /// The most the calls to send can cost.
    pub fn max_cost_usd(&self) -> f64 {
        self.lines.iter().map(|l| l.max_cost_usd).sum()
    }
}

/// The first stage of a plan with the cached answers of its calls, for the run to start from.
pub(crate) struct FirstStage {
    pub stage: Stage,
    pub cached: HashMap<String, StoredCall>,
}

/// Walks every stage of `experiment` with the cache's answers (a later stage's calls that
/// depend on an answer not cached are bounded, not known).
pub(crate) fn plan(
    experiment: &dyn Experiment,
    executor: &Executor,
) -> Result<(Plan, Option<FirstStage>), ExperimentError> {
    let targets = experiment.targets();
    let mut plan = Plan {
        lines: targets
            .iter()
            .map(|t| PlanLine {
                model: t.label(),
                calls: 0,
                cached: 0,
                to_call: 0,
                max_cost_usd: 0.0,
                note: None,
            })
            .collect(),
        stages: Vec::new(),
    };
    // Every stage is kept until the end: the run starts from the first one (and its lookups).
    let mut stages: Vec<(Stage, Vec<Option<CallOutcome>>)> = Vec::new();
    let mut first_cached = None;
    for index in 0.. {
        let previous = stages.last().map(|(s, a)| (s, a.as_slice()));
        let next = experiment.stage(index, previous)?;
        let Some(stage) = next else {
            break;
        };
        plan.stages.push(stage.name);
        let planned = plan.calls() + stage.calls.len() as u64 + stage.pending.len() as u64;
        check_size(planned)?;
        let cached = executor.lookup(stage.calls.iter().map(|c| c.job.canonical.key.as_str()))?;
        let answers = plan.count_stage(&stage, &cached, targets);
        if index == 0 {
            first_cached = Some(cached);
        }
        stages.push((stage, answers));
    }
    plan.note_refused(targets, executor.mode());
    let first = stages
        .into_iter()
        .next()
        .zip(first_cached)
        .map(|((stage, _), cached)| FirstStage { stage, cached });
    Ok((plan, first))
}

impl Plan {
    /// Counts the calls of `stage` line by line, cached or to send (with their worst cost),
    /// and returns the cached answers the next stage depends on.
    fn count_stage(
        &mut self,
        stage: &Stage,
        cached: &HashMap<String, StoredCall>,
        targets: &[Target],
    ) -> Vec<Option<CallOutcome>> {
        let mut answers = vec![None; stage.calls.len()];
        for (i, call) in stage.calls.iter().enumerate() {
            let line = &mut self.lines[call.target];
            line.calls += 1;
            match cached.get(&call.job.canonical.key) {
                Some(hit) => {
                    line.cached += 1;
                    if call.follow_up {
                        answers[i] = Some(CallOutcome::Hit(hit.clone()));
                    }
                }
                None => {
                    line.to_call += 1;
                    line.max_cost_usd += max_cost(&call.job);
                }
            }
        }
        for pending in &stage.pending {
            let line = &mut self.lines[pending.target];
            line.calls += 1;
            line.to_call += 1;
            line.max_cost_usd += targets[pending.target]
                .spec
                .price()
                .cost_usd(pending.input_tokens, pending.output_tokens);
        }
        answers
    }

    /// Says on each line with calls to send why they will not be sent, when they will not:
    /// `--offline`, or what blocks the target (no key).
    fn note_refused(&mut self, targets: &[Target], mode: CacheMode) {
        for (line, target) in self.lines.iter_mut().zip(targets) {
            if line.to_call == 0 {
                continue;
            }
            line.note = match (mode, &target.blocked) {
                (CacheMode::Offline, _) => Some("not cached: --offline refuses these calls".into()),
                (_, Some(reason)) => Some(reason.clone()),
                _ => None,
            };
        }
    }
}

/// Refuses plans beyond [`MAX_PLANNED_CALLS`].
pub fn check_size(calls: u64) -> Result<(), ExperimentError> {
    if calls > MAX_PLANNED_CALLS {
        return Err(ExperimentError::TooLarge {
            calls,
            limit: MAX_PLANNED_CALLS,
            fix: "lower `repeat`, or split the models or prompts over several runs",
        });
    }
    Ok(())
}

/// The most a call can cost: its input at a token a byte with each message's framing (images
/// at their bound), and an answer of its `max_tokens`. What a budget reserves before sending.
pub fn max_cost(job: &CallJob) -> f64 {
    let request = &job.request;
    let input = request
        .system
        .as_deref()
        .map_or(0, |s| tokens_bound(s) + MESSAGE_TOKENS_BOUND)
        + request
            .messages
            .iter()
            .map(|m| {
                MESSAGE_TOKENS_BOUND
                    + m.parts
                        .iter()
                        .map(|p| match p {
                            Part::Text(text) => tokens_bound(text),
                            Part::Image(_) => IMAGE_TOKENS_BOUND,
                        })
                        .sum::<u64>()
            })
            .sum::<u64>();
    let output = u64::from(
        request
            .params
            .max_tokens
            .unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS),
    );
    job.price.cost_usd(input, output)
}
