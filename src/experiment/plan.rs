//! The plan: every call an experiment will make, stage by stage, with its cache key, how many
//! are cached, and the most the others can cost. `--dry-run` prints it and stops; a real run
//! starts from it.

use std::collections::HashMap;

use super::shard::{self, Shard};
use super::{Experiment, ExperimentError, Stage, Target};
use crate::dispatch::budget::unbounded;
use crate::dispatch::max_cost;
use crate::dispatch::{CacheMode, CallOutcome, Executor};
use crate::llm::batch::BatchApi;
use crate::store::StoredCall;

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
    /// Upper bound of the cost of the calls to make, in USD; `None`: unknown, as some of
    /// them are to a model without a price.
    pub max_cost_usd: Option<f64>,
    /// Why calls of this model will fail (a missing key, `--offline`).
    pub note: Option<String>,
    /// In batch mode, the batch API its calls to send go through (their bound at the batch
    /// price); `None`: they run live ([`Plan::batched`]).
    pub batch: Option<BatchApi>,
    /// Why a budget cannot hold its calls to send, when it cannot: a target that may report
    /// a cost, without `max_cost_usd:` ([`unbounded`]). Under a budget they are not sent.
    pub unbounded: Option<String>,
}

impl PlanLine {
    /// Adds the bound of a call to send to the line's; `None` (no price) makes it unknown.
    fn add_cost(&mut self, usd: Option<f64>) {
        self.max_cost_usd = self.max_cost_usd.zip(usd).map(|(sum, usd)| sum + usd);
    }
}

/// What a run would do, per model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub lines: Vec<PlanLine>,
    /// Names of the stages, in order.
    pub stages: Vec<&'static str>,
    /// The sha256 of the whole plan, the same for each of its shards
    /// ([`plan_sha256`](super::shard::plan_sha256)).
    pub sha256: String,
    /// The part of it this run makes (`--shard`).
    pub shard: Shard,
    /// How many calls the whole plan makes, whichever shard runs; `None` when a shard cannot
    /// know (a later stage follows from answers of other shards' calls).
    pub whole_calls: Option<u64>,
}

impl Plan {
    /// Every call planned.
    pub(crate) fn calls(&self) -> u64 {
        self.lines.iter().map(|l| l.calls).sum()
    }

    /// Calls served by the cache.
    pub(crate) fn cached(&self) -> u64 {
        self.lines.iter().map(|l| l.cached).sum()
    }

    /// Calls to send.
    pub(crate) fn to_call(&self) -> u64 {
        self.lines.iter().map(|l| l.to_call).sum()
    }

    /// The most the calls to send can cost, of those whose cost is known (a line's bound is
    /// `None` when its model has no price: see [`unpriced`](Self::unpriced)).
    pub(crate) fn priced_max_cost_usd(&self) -> f64 {
        // From +0: a sum of nothing is -0.0, printed `$-0.000000`.
        self.lines
            .iter()
            .filter_map(|l| l.max_cost_usd)
            .fold(0.0, |sum, usd| sum + usd)
    }

    /// Under a budget: the lines whose calls to send it refuses ([`PlanLine::unbounded`]),
    /// and the most the others can cost.
    pub(crate) fn under_budget(&self) -> (Vec<&PlanLine>, f64) {
        let (refused, held): (Vec<&PlanLine>, Vec<&PlanLine>) = self
            .lines
            .iter()
            .partition(|l| l.to_call > 0 && l.unbounded.is_some());
        let bound = held
            .iter()
            .filter_map(|l| l.max_cost_usd)
            .fold(0.0, |sum, usd| sum + usd);
        (refused, bound)
    }

    /// The models of `targets` (the experiment's, indexed as the lines) with calls to send
    /// whose cost is unknown, each once, with what to set: `` `openai:gpt-5.1` has no price:
    /// set `input_price:` and … ``.
    pub(crate) fn unpriced(&self, targets: &[Target]) -> Vec<String> {
        let mut said: Vec<String> = Vec::new();
        for (line, target) in self.lines.iter().zip(targets) {
            let sentence = format!(
                "`{}` has no price: set {}",
                target.reference,
                target.spec.price_to_set()
            );
            if line.max_cost_usd.is_none() && !said.contains(&sentence) {
                said.push(sentence);
            }
        }
        said
    }

    /// The plan in batch mode (`--batch`, `batch: true`): each line of a target with a batch
    /// API ([`Target::batch`]) names it, and the bound of its calls to send is at the batch
    /// price ([`Price::batch`](crate::cost::Price::batch)); the others run live at the
    /// standard price. Every bound is linear in its price, so the line's bound times
    /// [`BATCH_DISCOUNT`](crate::cost::BATCH_DISCOUNT) is the sum of its calls' bounds at the
    /// batch price ([`batch_max_cost`]). `targets` are the experiment's, indexed as the lines.
    pub(crate) fn batched(mut self, targets: &[Target]) -> Self {
        for (line, target) in self.lines.iter_mut().zip(targets) {
            line.batch = target.batch;
            if line.batch.is_some() {
                line.max_cost_usd = line
                    .max_cost_usd
                    .map(|usd| usd * crate::cost::BATCH_DISCOUNT);
            }
        }
        self
    }

    /// The references that go through each batch API, and those that run live, with calls
    /// to send, each once and in plan order: for the dry run's lines.
    pub(crate) fn batch_routes(&self) -> (Vec<(&str, BatchApi)>, Vec<&str>) {
        let mut batched: Vec<(&str, BatchApi)> = Vec::new();
        let mut live: Vec<&str> = Vec::new();
        for line in self.lines.iter().filter(|l| l.to_call > 0) {
            // `openai:gpt-4o (judge)` is the model `openai:gpt-4o`.
            let reference = line.model.split(" (").next().unwrap_or(&line.model);
            match line.batch {
                Some(api) if !batched.iter().any(|(r, _)| *r == reference) => {
                    batched.push((reference, api));
                }
                None if !live.contains(&reference) => live.push(reference),
                _ => {}
            }
        }
        (batched, live)
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
    part: Shard,
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
                max_cost_usd: Some(0.0),
                note: None,
                batch: None,
                unbounded: None,
            })
            .collect(),
        stages: Vec::new(),
        sha256: shard::plan_sha256(experiment, None),
        shard: part,
        whole_calls: Some(0),
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
        if index == 0 {
            plan.sha256 = shard::plan_sha256(experiment, Some(&stage));
        }
        // A later stage of a shard follows from the shard's answers only.
        plan.whole_calls = match plan.whole_calls {
            Some(n) if index == 0 || !part.is_part() => {
                Some(n + stage.calls.len() as u64 + stage.pending.len() as u64)
            }
            _ => None,
        };
        let stage = shard::keep(experiment, stage, part);
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
        // Only a stage some of whose calls a later stage follows needs its answers: a plan of
        // 400,000 calls with none would hold 19 MB of nothing.
        let followed = stage.calls.iter().any(|c| c.follow_up);
        let mut answers = if followed {
            vec![None; stage.calls.len()]
        } else {
            Vec::new()
        };
        for (i, call) in stage.calls.iter().enumerate() {
            let line = &mut self.lines[call.target];
            line.calls += 1;
            match cached.get(call.job.canonical.key.as_str()) {
                Some(hit) => {
                    line.cached += 1;
                    if call.follow_up {
                        answers[i] = Some(CallOutcome::Hit(Box::new(hit.clone())));
                    }
                }
                None => {
                    line.to_call += 1;
                    line.add_cost(call.job.price.map(|_| max_cost(&call.job)));
                    if line.unbounded.is_none() {
                        line.unbounded = unbounded(&call.job);
                    }
                }
            }
        }
        for pending in &stage.pending {
            let line = &mut self.lines[pending.target];
            line.calls += 1;
            line.to_call += 1;
            let price = targets[pending.target].spec.price();
            line.add_cost(price.map(|p| p.cost_usd(pending.input_tokens, pending.output_tokens)));
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
                _ if line.max_cost_usd.is_none() => Some("cost unknown: no price".into()),
                _ => None,
            };
        }
    }
}

/// Refuses plans beyond [`MAX_PLANNED_CALLS`].
pub(crate) fn check_size(calls: u64) -> Result<(), ExperimentError> {
    if calls > MAX_PLANNED_CALLS {
        return Err(ExperimentError::TooLarge {
            calls,
            limit: MAX_PLANNED_CALLS,
            fix: "lower `repeat`, or split the models or prompts over several runs",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Catalog;
    use crate::dispatch::batch_max_cost;
    use crate::llm::{ChatRequest, Message, SamplingParams};

    fn targets() -> Vec<Target> {
        let catalog = Catalog::builtin();
        [
            "openai:gpt-4o",
            "ollama:qwen2.5-coder",
            "anthropic:haiku 3.5",
        ]
        .into_iter()
        .map(|r| Target::resolve(&catalog, r).unwrap())
        .chain([Target::resolve(&catalog, "openai:gpt-4o")
            .unwrap()
            .with_role("judge")])
        .collect()
    }

    fn line(target: &Target, to_call: u64, max_cost_usd: f64) -> PlanLine {
        PlanLine {
            model: target.label(),
            calls: to_call + 1,
            cached: 1,
            to_call,
            max_cost_usd: Some(max_cost_usd),
            note: None,
            batch: None,
            unbounded: None,
        }
    }

    #[test]
    fn a_plan_of_unknown_costs_is_bounded_at_plus_zero_and_refused_lines_are_set_apart() {
        let targets = targets();
        let mut unknown = line(&targets[0], 1, 0.0);
        unknown.max_cost_usd = None;
        let plan = Plan {
            lines: vec![unknown],
            ..Plan::default()
        };
        let bound = plan.priced_max_cost_usd();
        assert!(bound == 0.0 && bound.is_sign_positive(), "{bound}");
        let mut app = line(&targets[1], 4, 0.0);
        app.unbounded = Some("no max_cost_usd".into());
        let plan = Plan {
            lines: vec![line(&targets[0], 2, 0.25), app],
            ..Plan::default()
        };
        let (refused, bound) = plan.under_budget();
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].model, targets[1].label());
        assert_eq!(bound, 0.25);
    }

    #[test]
    fn a_batch_call_is_bounded_at_the_batch_price() {
        let target = &targets()[0];
        let job = target.job(
            ChatRequest {
                tools: None,
                model: target.spec.model.as_str().into(),
                system: Some("be brief".into()),
                messages: vec![Message::user("what is 2 + 2?")].into(),
                params: SamplingParams {
                    max_tokens: Some(100),
                    ..SamplingParams::default()
                }
                .into(),
                schema: None,
            },
            1,
        );
        assert!(max_cost(&job) > 0.0);
        assert_eq!(
            batch_max_cost(&job),
            max_cost(&job) * crate::cost::BATCH_DISCOUNT
        );
    }

    #[test]
    fn in_batch_mode_lines_with_a_batch_api_are_bounded_at_half_and_the_rest_run_live() {
        let targets = targets();
        let plan = Plan {
            lines: vec![
                line(&targets[0], 4, 0.4),
                line(&targets[1], 4, 0.0),
                line(&targets[2], 0, 0.0),
                line(&targets[3], 2, 0.2),
            ],
            stages: vec!["answers", "judges"],
            ..Plan::default()
        };
        assert_eq!(plan.clone().batched(&[]), plan, "no targets, no change");
        let batched = plan.clone().batched(&targets);
        assert_eq!(
            batched.priced_max_cost_usd(),
            plan.priced_max_cost_usd() / 2.0
        );
        assert_eq!(batched.lines[0].batch, Some(BatchApi::Openai));
        assert_eq!(batched.lines[1].batch, None);
        let (through, live) = batched.batch_routes();
        // The judge is the same model: named once; a model with nothing to send is left out.
        assert_eq!(through, [("openai:gpt-4o", BatchApi::Openai)]);
        assert_eq!(live, ["ollama:qwen2.5-coder"]);
    }
}
