//! A benchmark as an experiment of the runtime: stage 0 asks every prompt of every model
//! (model-major: one group per model), stage 1 has the answers of `method: judge` tests
//! judged. Each outcome becomes a result row; a judged answer's row waits for its verdict.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::conversation::{PendingTurn, Spent, TurnState, Turns, input_bound};
use super::judge::{self, JUDGE_MAX_TOKENS};
use super::{BenchError, BenchSpec};
use crate::checks::{
    CallFacts, CheckOutcome, CheckStatus, Evaluation, PassRule, ScriptInput, ScriptJob,
};
use crate::config::{Catalog, Config};
use crate::dispatch::CallOutcome;
use crate::energy::EnergyMethod;
use crate::experiment::{
    Answers, Experiment, ExperimentError, ExperimentKind, Overrides, PendingCall, PlannedCall,
    ReportOptions, RunHeader, RunSummary, Stage, StageData, Target, check_size,
};
use crate::llm::tools::{ToolCall, ToolResult, ToolStep, read_answer};
use crate::llm::{ChatRequest, tokens_bound};
use crate::prompt::Template;
use crate::store::{
    BenchResultRow, CheckRow, Outcome, RunErrorRow, Store, StoreError, StoredCall, ToolCallRow,
};

/// The scale of a judge's score.
const JUDGE_SCALE: (i64, i64) = (1, 5);

/// The stages' names, as `track runs --errors` lists them.
const ANSWERS: &str = "answers";
const JUDGES: &str = "judges";
/// What `track runs --errors` names the stage of a result whose calls answered but whose
/// checks (or tool loop) made an error.
const RESULTS: &str = "results";
/// A stage of conversations' later turns.
const TURNS: &str = "turns";
const TURNS_AND_JUDGES: &str = "turns and judges";
/// A stage of tool loops' later steps.
const STEPS: &str = "tool steps";
const STEPS_AND_JUDGES: &str = "tool steps and judges";

/// Loads a benchmark file for `track run`.
pub fn from_file(
    path: &Path,
    text: &str,
    config: &Config,
    overrides: &Overrides,
) -> Result<Box<dyn Experiment>, ExperimentError> {
    // A target (the user's application) is sent each case's values: they are kept then.
    let options = crate::cases::LoadOptions {
        keep_values: config.catalog.has_targets(),
        ..overrides.cases.clone()
    };
    let spec = BenchSpec::load(path, text, &options).map_err(ExperimentError::kind)?;
    // Notes (what was loaded, unused columns): not with --quiet; what was loaded not in a
    // dry run either, whose plan says it on stdout.
    for note in &spec.notes {
        if !(overrides.dry_run && spec.loaded.as_ref() == Some(note)) {
            crate::output::note(note);
        }
    }
    let energy = overrides.energy.unwrap_or(config.settings.energy_method);
    Ok(Box::new(BenchExperiment::new(
        spec,
        &config.catalog,
        overrides,
        energy,
    )?))
}

/// A resolved benchmark: its models (then its judges) and how many samples of each call.
#[derive(Debug, Clone)]
pub struct BenchExperiment {
    spec: BenchSpec,
    /// The models under evaluation, then the judges of `method: judge` tests.
    targets: Vec<Target>,
    /// How many of `targets` are models under evaluation.
    models: usize,
    /// Each prompt's judge, as an index into `targets`.
    prompt_judge: Vec<Option<usize>>,
    repeats: u32,
    energy: EnergyMethod,
    judge_template: Template,
    /// Per judge (target index): verdicts received in this run, and those not readable.
    verdicts: std::collections::BTreeMap<usize, (u64, u64)>,
    /// The run's stop flag: script checks stop when it is set.
    stop: Arc<AtomicBool>,
    /// The results of the tools the answers recorded last asked for, by item: the next
    /// stage sends them back.
    tool_results: Arc<std::sync::Mutex<std::collections::HashMap<usize, Vec<ToolResult>>>>,
    /// The tool calls of the rows graded last, stored with them.
    tool_rows: Vec<ToolCallRow>,
}

/// Indices of one evaluation: model, template, prompt (test or case), repeat.
#[derive(Debug, Clone, Copy)]
struct Eval {
    model: usize,
    template: usize,
    prompt: usize,
    repeat: u32,
}

/// A result row whose checks are graded but for its scripts, which run in a batch.
struct Draft {
    row: BenchResultRow,
    /// The answer graded (`None`: the call failed, nothing to grade).
    answer: Option<String>,
    /// A conversation's answers to the turns before the last (for `turn: N` checks).
    earlier: Vec<String>,
    /// Each check's outcome, `None` for a script not run yet.
    outcomes: Vec<Option<CheckOutcome>>,
    /// A tool loop's calls, with their results (none for calls left unanswered), stored
    /// with the row.
    tool_calls: Vec<ToolCallRow>,
    /// Whether a call of the row failed (its answer's or its judge's): an error the runtime
    /// counts with the failed calls. Any other error row is a problem found in an answer.
    failed_call: bool,
}

/// Each test's judge, as an index into `targets`: the models under test come first, then each
/// judge once (a judge that is also a model under test is called again in its role).
fn resolve_judges(
    spec: &BenchSpec,
    catalog: &Catalog,
    targets: &mut Vec<Target>,
    file: &str,
) -> Result<Vec<Option<usize>>, ExperimentError> {
    let models = targets.len();
    let mut prompt_judge = Vec::with_capacity(spec.prompts.len());
    // Judges are few: resolved once each, whatever the number of tests naming them.
    let mut resolved: std::collections::HashMap<String, usize> = Default::default();
    for (p, test) in spec.prompts.iter().enumerate() {
        let Some(judged) = test.judge() else {
            prompt_judge.push(None);
            continue;
        };
        let index = match resolved.get(&judged.judge) {
            Some(&index) => index,
            None => {
                let judge = Target::resolve(catalog, &judged.judge)
                    .map_err(|e| {
                        ExperimentError::kind(BenchError::Model {
                            path: file.to_owned(),
                            line: spec.prompt_line(p),
                            source: Box::new(e),
                        })
                    })?
                    .with_role("judge");
                let index = match targets[models..]
                    .iter()
                    .position(|t| t.reference == judge.reference)
                {
                    Some(i) => models + i,
                    None => {
                        targets.push(judge);
                        targets.len() - 1
                    }
                };
                resolved.insert(judged.judge.clone(), index);
                index
            }
        };
        prompt_judge.push(Some(index));
    }
    Ok(prompt_judge)
}

impl BenchExperiment {
    /// Resolves the spec's models (or `--models`) and judges against the catalog.
    pub fn new(
        spec: BenchSpec,
        catalog: &Catalog,
        overrides: &Overrides,
        energy: EnergyMethod,
    ) -> Result<Self, ExperimentError> {
        let from_file = overrides.models.is_none();
        let references = overrides.models_or(&spec.models);
        let model_error = |path: String, line: Option<u64>, source| {
            ExperimentError::kind(BenchError::Model {
                path,
                line,
                source: Box::new(source),
            })
        };
        let file = spec.path.display().to_string();
        let mut targets = Vec::new();
        for (i, reference) in references.iter().enumerate() {
            // Name where the reference came from: the file's line, or the command line. The
            // line is looked up only for a message: it parses the whole file again.
            let target = Target::resolve(catalog, reference).map_err(|e| {
                if from_file {
                    model_error(file.clone(), spec.model_line(i), e)
                } else {
                    model_error("--models".to_owned(), None, e)
                }
            })?;
            targets.push(target);
        }
        let models = targets.len();
        let prompt_judge = resolve_judges(&spec, catalog, &mut targets, &file)?;
        let repeats = overrides.repeat_or(spec.repeat)?;
        let judged = prompt_judge.iter().flatten().count() as u64;
        let templates = spec.templates.len().max(1) as u64;
        // A conversation makes a call a turn.
        let turns: u64 = spec
            .prompts
            .iter()
            .map(|t| t.requests.first().map_or(1, |r| r.turns()) as u64)
            .sum();
        check_size((models as u64) * templates * (turns + judged) * u64::from(repeats))?;
        let judge_template = Template::load(None, judge::JUDGE_PROMPT, &["answer", "rubric"])
            .map_err(|e| ExperimentError::kind(BenchError::Judge(e.to_string())))?;
        Ok(Self {
            spec,
            targets,
            models,
            prompt_judge,
            repeats,
            energy,
            judge_template,
            verdicts: std::collections::BTreeMap::new(),
            stop: Arc::default(),
            tool_results: Arc::default(),
            tool_rows: Vec::new(),
        })
    }

    /// The spec it runs.
    pub fn spec(&self) -> &BenchSpec {
        &self.spec
    }

    /// How many templates each test runs with (1 without `templates:`).
    fn templates(&self) -> usize {
        self.spec.templates.len().max(1)
    }

    fn eval(&self, item: usize) -> Eval {
        let repeats = self.repeats as usize;
        let prompts = self.spec.prompts.len();
        let templates = self.templates();
        let cell = item / (prompts * repeats);
        Eval {
            model: cell / templates,
            template: cell % templates,
            prompt: (item / repeats) % prompts,
            repeat: (item % repeats) as u32,
        }
    }

    /// The item of an evaluation: model, then template, then prompt, then repeat.
    fn item(&self, model: usize, template: usize, prompt: usize, repeat: u32) -> usize {
        ((model * self.templates() + template) * self.spec.prompts.len() + prompt)
            * self.repeats as usize
            + repeat as usize
    }

    /// The name of template `index`, when the benchmark has templates.
    fn template_name(&self, index: usize) -> Option<&str> {
        self.spec.templates.get(index).map(|t| t.name.as_str())
    }

    /// Stage 0: every prompt of every model, with every template, `repeats` times.
    fn answers_stage(&self) -> Stage {
        let repeats = self.repeats as usize;
        let templates = self.templates();
        let mut calls =
            Vec::with_capacity(self.models * templates * self.spec.prompts.len() * repeats);
        for (m, model) in self.targets[..self.models].iter().enumerate() {
            // One model id for all its calls.
            let model_id: std::sync::Arc<str> = model.spec.model.as_str().into();
            for t in 0..templates {
                for (p, test) in self.spec.prompts.iter().enumerate() {
                    // A case that brings its own messages has one request, whatever the
                    // templates (there are none then).
                    let sent = &test.requests[t.min(test.requests.len() - 1)];
                    let request = ChatRequest {
                        tools: self.spec.tools.as_ref().map(|t| t.usage(Vec::new())),
                        model: model_id.clone(),
                        schema: None,
                        system: sent.system.clone(),
                        messages: sent.turn_messages(0, &[]),
                        params: test.params.clone(),
                    };
                    // A conversation's next turn, a tool loop's next step, or a judge, needs
                    // the answer.
                    let follow_up = sent.turns() > 1
                        || self.spec.tools.is_some()
                        || self.prompt_judge[p].is_some();
                    for repeat in 0..self.repeats {
                        calls.push(PlannedCall {
                            target: m,
                            job: model.case_job(request.clone(), test.values.clone(), repeat),
                            item: self.item(m, t, p, repeat),
                            group: m as u32,
                            follow_up,
                            after: None,
                        });
                    }
                }
            }
        }
        Stage {
            name: ANSWERS,
            calls,
            ..Stage::default()
        }
    }

    /// The stage after `previous`: the next turn of each conversation going on (its history
    /// with the answers so far), and a judge call for each last answer of a test with a judge
    /// check. An answer not known yet (a plan) makes its next call pending, bounded as the
    /// largest its test allows.
    fn next_stage(&self, previous: &Stage, outcomes: &Answers) -> Option<Stage> {
        let before = previous.data.as_ref().and_then(|d| d.get::<Turns>());
        let mut stage = Stage::default();
        let mut next = Turns::default();
        let (mut turns, mut judges, mut steps) = (false, false, false);
        for (i, call) in previous.calls.iter().enumerate() {
            if !call.follow_up || call.after.is_some() {
                continue;
            }
            let eval = self.eval(call.item);
            let request = self.request_of(eval);
            let state = before
                .and_then(|t| t.states.get(&call.item))
                .cloned()
                .unwrap_or_default();
            let outcome = outcomes.get(i).and_then(Option::as_ref);
            if let Some(went_on) =
                self.next_step((call, eval, &state), outcome, &mut stage, &mut next)
            {
                steps |= went_on;
                continue;
            }
            if state.turn + 1 < request.turns() {
                turns = true;
                self.next_turn((call, eval, state), outcome, &mut stage, &mut next);
                continue;
            }
            let Some(judge) = self.prompt_judge[eval.prompt] else {
                continue;
            };
            judges = true;
            match outcome {
                Some(outcome @ (CallOutcome::Hit(answer) | CallOutcome::Fresh(answer))) => {
                    stage.calls.push(PlannedCall {
                        target: judge,
                        job: self.judge_job(judge, eval, &answer.text),
                        item: call.item,
                        group: 0,
                        follow_up: false,
                        after: Some(Box::new(outcome.clone())),
                    });
                    // One turn and no tool step: nothing to carry.
                    if state.turn > 0 || !state.steps.is_empty() {
                        next.states.insert(call.item, state);
                    }
                }
                Some(CallOutcome::Failed { .. }) => {}
                None => stage.pending.push(self.pending_judge(judge, eval)),
            }
        }
        let (more_turns, more_judges) =
            self.pending_go_on(before.map(|t| t.pending.as_slice()), &mut stage, &mut next);
        turns |= more_turns;
        judges |= more_judges;
        stage.name = stage_name(turns, judges, steps);
        // A judge of a conversation grades its rows with its earlier answers too.
        if turns || steps || !next.states.is_empty() {
            stage.data = Some(StageData::new(next));
        }
        (!stage.calls.is_empty() || !stage.pending.is_empty()).then_some(stage)
    }

    /// A plan's conversations whose calls are not known (`pending`, of the stage before) go
    /// on in `stage`, bounded: their next turns, or their judges. Whether there were any of
    /// each.
    fn pending_go_on(
        &self,
        pending: Option<&[PendingTurn]>,
        stage: &mut Stage,
        next: &mut Turns,
    ) -> (bool, bool) {
        let (mut turns, mut judges) = (false, false);
        for pending in pending.unwrap_or_default() {
            let eval = self.eval(pending.item);
            if pending.turn + 1 < self.calls_of(eval) {
                turns = true;
                let pending = PendingTurn {
                    turn: pending.turn + 1,
                    ..*pending
                };
                stage.pending.push(self.pending_turn(next, pending));
            } else if let Some(judge) = self.prompt_judge[eval.prompt] {
                judges = true;
                stage.pending.push(self.pending_judge(judge, eval));
            }
        }
        (turns, judges)
    }

    /// How many calls evaluation `eval` makes at most: a conversation's turns, or a tool
    /// loop's `max_steps`.
    fn calls_of(&self, eval: Eval) -> usize {
        match &self.spec.tools {
            Some(tools) => tools.max_steps as usize,
            None => self.request_of(eval).turns(),
        }
    }

    /// The next turn of a conversation whose turn `state.turn` was answered by `outcome` (or
    /// is pending, in a plan), added to `stage`; its state goes to `next`.
    fn next_turn(
        &self,
        (call, eval, state): (&PlannedCall, Eval, TurnState),
        outcome: Option<&CallOutcome>,
        stage: &mut Stage,
        next: &mut Turns,
    ) {
        match outcome {
            Some(outcome @ (CallOutcome::Hit(answer) | CallOutcome::Fresh(answer))) => {
                let cached = matches!(outcome, CallOutcome::Hit(_));
                let state = TurnState {
                    turn: state.turn + 1,
                    answers: [state.answers, vec![answer.text.clone()]].concat(),
                    spent: state.spent.plus(answer, cached),
                    steps: Vec::new(),
                };
                stage.calls.push(self.turn_call(call, eval, &state));
                next.states.insert(call.item, state);
            }
            Some(CallOutcome::Failed { .. }) => {}
            None => {
                let sent = &call.job.request;
                let pending = PendingTurn {
                    item: call.item,
                    turn: state.turn + 1,
                    input_tokens: input_bound(sent.system.as_deref(), &sent.messages),
                };
                stage.pending.push(self.pending_turn(next, pending));
            }
        }
    }

    /// What follows call `call` of a tool loop (`state`: its steps before), answered with
    /// `outcome` (`None`: not known, in a plan): its next step, with the results its tools
    /// gave (run when its row was graded), put in `stage` (`Some(true)`), or nothing more
    /// (`Some(false)`: the call failed, its tools could not answer, or `max_steps` was
    /// reached, its row stored). `None`: no tool loop, or the model answered in text (a judge
    /// may follow).
    fn next_step(
        &self,
        (call, eval, state): (&PlannedCall, Eval, &TurnState),
        outcome: Option<&CallOutcome>,
        stage: &mut Stage,
        next: &mut Turns,
    ) -> Option<bool> {
        let tools = self.spec.tools.as_ref()?;
        let answer = match outcome {
            Some(CallOutcome::Hit(answer) | CallOutcome::Fresh(answer)) => answer,
            Some(CallOutcome::Failed { .. }) => return Some(false),
            None if state.steps.len() + 1 < tools.max_steps as usize => {
                let sent = &call.job.request;
                let pending = PendingTurn {
                    item: call.item,
                    turn: state.steps.len() + 1,
                    input_tokens: input_bound(sent.system.as_deref(), &sent.messages)
                        + sent.tools_bound(),
                };
                stage.pending.push(self.pending_turn(next, pending));
                return Some(true);
            }
            // The last step of a plan: a judge may follow.
            None => return None,
        };
        let (text, calls) = read_answer(&answer.text);
        if calls.is_empty() {
            return None;
        }
        let results = self
            .tool_results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&call.item);
        let Some(results) = results else {
            return Some(false);
        };
        let cached = matches!(outcome, Some(CallOutcome::Hit(_)));
        let state = TurnState {
            turn: 0,
            answers: Vec::new(),
            spent: state.spent.plus(answer, cached),
            steps: [
                state.steps.clone(),
                vec![ToolStep {
                    text,
                    calls,
                    results,
                }],
            ]
            .concat(),
        };
        let sent = self.request_of(eval);
        let test = &self.spec.prompts[eval.prompt];
        let request = ChatRequest {
            tools: Some(tools.usage(state.steps.clone())),
            model: call.job.request.model.clone(),
            schema: None,
            system: sent.system.clone(),
            messages: sent.turn_messages(0, &[]),
            params: test.params.clone(),
        };
        let step = PlannedCall {
            target: call.target,
            job: self.targets[call.target].case_job(request, test.values.clone(), eval.repeat),
            item: call.item,
            group: call.group,
            follow_up: true,
            after: None,
        };
        next.states.insert(call.item, state);
        stage.calls.push(step);
        Some(true)
    }

    /// For an answer of a tool loop asking for tools: runs them and keeps their results for
    /// the next step; or, when the loop may not go on (`max_steps` reached, a tool that
    /// failed), the draft of its row. `Ok(None)`: the loop goes on; `Err(())`: a signal
    /// stopped a tool (no row: running the command again goes on from the cache).
    fn tool_step(
        &self,
        run_id: i64,
        (eval, state): (Eval, &TurnState),
        outcome: &CallOutcome,
        calls: &[ToolCall],
    ) -> Result<Option<Draft>, ()> {
        let Some(tools) = &self.spec.tools else {
            return Ok(None);
        };
        let step = state.steps.len() + 1;
        let error = if step >= tools.max_steps as usize {
            format!(
                "max_steps ({}) reached: the model still asked for {} after {}",
                tools.max_steps,
                calls
                    .iter()
                    .map(|c| format!("`{}`", c.name))
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::output::count(step as u64, "call")
            )
        } else {
            let test = &self.spec.prompts[eval.prompt];
            match tools.answer(calls, test.values.as_deref(), &self.stop) {
                Ok(Some(results)) => {
                    let item = self.item(eval.model, eval.template, eval.prompt, eval.repeat);
                    self.tool_results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(item, results);
                    return Ok(None);
                }
                Ok(None) => return Err(()),
                Err(e) => format!("step {step}: {e}"),
            }
        };
        let mut draft = self.draft(run_id, (eval, state), outcome, None);
        draft.row.outcome = Outcome::Error;
        draft.row.detail = Some(error);
        draft.answer = None;
        draft.outcomes.clear();
        draft.tool_calls = self.tool_rows_of(run_id, eval, &state.steps, calls);
        Ok(Some(draft))
    }

    /// The answer's text of `call`, the last of evaluation `eval`, and, in a tool loop, its
    /// trace for the checks and its calls to store.
    fn tool_loop_of(
        &self,
        run_id: i64,
        (eval, state): (Eval, &TurnState),
        call: &StoredCall,
    ) -> (
        String,
        Option<Arc<crate::checks::ToolTrace>>,
        Vec<ToolCallRow>,
    ) {
        if self.spec.tools.is_none() {
            return (call.text.clone(), None, Vec::new());
        }
        let (text, last) = read_answer(&call.text);
        let trace = Arc::new(super::tools::trace(&state.steps, &last));
        let rows = self.tool_rows_of(run_id, eval, &state.steps, &last);
        (text, Some(trace), rows)
    }

    /// The rows of a tool loop's calls: each step's, with their results, then those of the
    /// last answer (`last`, unanswered).
    fn tool_rows_of(
        &self,
        run_id: i64,
        eval: Eval,
        steps: &[ToolStep],
        last: &[ToolCall],
    ) -> Vec<ToolCallRow> {
        let answered = steps.iter().enumerate().flat_map(|(s, step)| {
            step.calls.iter().enumerate().map(move |(c, call)| {
                let result = step.results.get(c).map(|r| r.content.clone());
                (s + 1, c, call, result)
            })
        });
        let unanswered = last
            .iter()
            .enumerate()
            .map(|(c, call)| (steps.len() + 1, c, call, None));
        answered
            .chain(unanswered)
            .map(|(step, index, call, result)| ToolCallRow {
                run_id,
                model_index: eval.model as u32,
                template_index: eval.template as u32,
                prompt_index: eval.prompt as u32,
                repeat_index: eval.repeat,
                step: step as u32,
                call_index: index as u32,
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
                result,
            })
            .collect()
    }

    /// The call of a conversation's turn `state.turn`, after the call `previous` answered
    /// the turn before.
    fn turn_call(&self, previous: &PlannedCall, eval: Eval, state: &TurnState) -> PlannedCall {
        let sent = self.request_of(eval);
        let test = &self.spec.prompts[eval.prompt];
        let request = ChatRequest {
            tools: None,
            model: previous.job.request.model.clone(),
            schema: None,
            system: sent.system.clone(),
            messages: sent.turn_messages(state.turn, &state.answers),
            params: test.params.clone(),
        };
        PlannedCall {
            target: previous.target,
            job: self.targets[previous.target].case_job(request, test.values.clone(), eval.repeat),
            item: previous.item,
            group: previous.group,
            follow_up: state.turn + 1 < sent.turns() || self.prompt_judge[eval.prompt].is_some(),
            after: None,
        }
    }

    /// The bound of a conversation's call not known yet (`pending`: the bound of the call
    /// before it), kept in `next` for the stage after.
    fn pending_turn(&self, next: &mut Turns, pending: PendingTurn) -> PendingCall {
        let eval = self.eval(pending.item);
        let max_answer = u64::from(self.max_answer(eval));
        let input_tokens = pending.input_tokens
            + max_answer
            + crate::llm::MESSAGE_TOKENS_BOUND * 2
            + tokens_bound(&self.request_of(eval).turn_text(pending.turn));
        next.pending.push(PendingTurn {
            input_tokens,
            ..pending
        });
        PendingCall {
            target: eval.model,
            input_tokens,
            output_tokens: max_answer,
        }
    }

    /// The most output tokens an answer of evaluation `eval` may have.
    fn max_answer(&self, eval: Eval) -> u32 {
        self.spec.prompts[eval.prompt]
            .params
            .max_tokens
            .unwrap_or(crate::dispatch::budget::ASSUMED_MAX_OUTPUT_TOKENS)
    }

    /// The bound of a judge's call of an answer not known yet.
    fn pending_judge(&self, judge: usize, eval: Eval) -> PendingCall {
        let test = &self.spec.prompts[eval.prompt];
        let rubric = test.judge().map_or("", |j| j.rubric.as_str());
        PendingCall {
            target: judge,
            input_tokens: tokens_bound(&self.judge_template.text)
                + tokens_bound(&self.request_of(eval).prompt_text())
                + tokens_bound(rubric)
                + u64::from(self.max_answer(eval)),
            output_tokens: u64::from(JUDGE_MAX_TOKENS),
        }
    }

    /// What evaluation `eval` sent.
    fn request_of(&self, eval: Eval) -> &super::spec::TestRequest {
        let test = &self.spec.prompts[eval.prompt];
        &test.requests[eval.template.min(test.requests.len() - 1)]
    }

    /// The judge's call for `answer` of evaluation `eval`.
    fn judge_job(&self, judge: usize, eval: Eval, answer: &str) -> crate::dispatch::CallJob {
        let test = &self.spec.prompts[eval.prompt];
        let rubric = test.judge().map_or("", |j| j.rubric.as_str());
        let prompt = self.request_of(eval).prompt_text();
        let text = self.judge_template.render(&[
            ("prompt", prompt.as_str()),
            ("answer", answer),
            ("rubric", rubric),
        ]);
        let target = &self.targets[judge];
        target.shaped_job(
            judge::judge_request(&target.spec.model, text),
            judge::judge_schema(JUDGE_SCALE.0, JUDGE_SCALE.1),
            0,
        )
    }

    /// The row of evaluation `eval` before its call fills it: its keys and names, an error
    /// until graded.
    fn empty_row(&self, run_id: i64, eval: Eval, cache_hit: bool) -> BenchResultRow {
        let model = &self.targets[eval.model];
        let test = &self.spec.prompts[eval.prompt];
        BenchResultRow {
            run_id,
            model_index: eval.model as u32,
            prompt_index: eval.prompt as u32,
            repeat_index: eval.repeat,
            model_ref: model.reference.clone(),
            provider: model.spec.provider.clone(),
            model_id: model.spec.model.clone(),
            prompt_name: test.name.clone(),
            method: test.method_name().to_owned(),
            call_id: None,
            cache_hit,
            outcome: Outcome::Error,
            detail: None,
            latency_ms: None,
            input_tokens: None,
            output_tokens: None,
            tokens_estimated: false,
            cost_usd: None,
            paid_usd: None,
            energy_wh: None,
            energy_wh_min: None,
            energy_wh_max: None,
            energy_method: None,
            judge_call_id: None,
            judge_score: None,
            judge_cost_usd: None,
            expected: Some(test.expected().to_owned()),
            template_index: eval.template as u32,
            template_name: self.template_name(eval.template).map(str::to_owned),
            score: None,
            checks: Vec::new(),
        }
    }

    /// The draft of one evaluation's row; a test with a judge check gets its judge's verdict
    /// in `judged` (else the judge check is an error: the row waits for it).
    fn draft(
        &self,
        run_id: i64,
        (eval, state): (Eval, &TurnState),
        outcome: &CallOutcome,
        judged: Option<CheckOutcome>,
    ) -> Draft {
        let model = &self.targets[eval.model];
        let test = &self.spec.prompts[eval.prompt];
        let mut row = self.empty_row(run_id, eval, matches!(outcome, CallOutcome::Hit(_)));
        let call = match outcome {
            CallOutcome::Failed { call_id, error, .. } => {
                row.call_id = *call_id;
                row.detail = Some(self.failure(eval, state, error));
                return Draft {
                    row,
                    answer: None,
                    earlier: Vec::new(),
                    outcomes: Vec::new(),
                    tool_calls: self.tool_rows_of(run_id, eval, &state.steps, &[]),
                    failed_call: true,
                };
            }
            CallOutcome::Hit(call) | CallOutcome::Fresh(call) => call,
        };
        self.fill_from_call(&mut row, call, model, &state.spent);
        // A conversation's measures are its turns' sums.
        let (text, trace, tool_calls) = self.tool_loop_of(run_id, (eval, state), call);
        let facts = CallFacts {
            latency_ms: row.latency_ms,
            cost_usd: row.cost_usd,
            output_tokens: row.output_tokens,
            tools: trace,
        };
        let mut judged = judged;
        let outcomes = test
            .checks
            .iter()
            .map(
                |check| match check.evaluate(turn_answer(check, state, &text), &facts) {
                    Evaluation::Graded(outcome) => Some(outcome),
                    Evaluation::Judge(_) => Some(
                        judged
                            .take()
                            .unwrap_or_else(|| CheckOutcome::error("the judge has not answered")),
                    ),
                    Evaluation::Script(_) => None,
                },
            )
            .collect();
        Draft {
            row,
            answer: Some(text),
            earlier: state.answers.clone(),
            outcomes,
            tool_calls,
            failed_call: false,
        }
    }

    /// What a failed call of evaluation `eval` says: its error, after the turn of a
    /// conversation.
    fn failure(&self, eval: Eval, state: &TurnState, error: &str) -> String {
        if !state.steps.is_empty() {
            return format!("step {} of the tool loop: {error}", state.steps.len() + 1);
        }
        match self.request_of(eval).turns() {
            1 => error.to_owned(),
            turns => format!("turn {} of {turns}: {error}", state.turn + 1),
        }
    }

    /// Runs the scripts `drafts` wait for, at most [`script_concurrency`] at once, and
    /// fills their outcomes in.
    fn run_scripts(&self, drafts: &mut [Draft]) {
        let mut jobs = Vec::new();
        let mut slots = Vec::new();
        for (d, draft) in drafts.iter().enumerate() {
            let Some(answer) = &draft.answer else {
                continue;
            };
            let test = &self.spec.prompts[draft.row.prompt_index as usize];
            for (c, outcome) in draft.outcomes.iter().enumerate() {
                if outcome.is_some() {
                    continue;
                }
                let answer = test.checks[c]
                    .turn
                    .and_then(|n| draft.earlier.get(n - 1))
                    .unwrap_or(answer);
                let input = ScriptInput {
                    answer: answer.clone(),
                    values: test.values.as_deref().cloned().unwrap_or_default(),
                    template: draft
                        .row
                        .template_name
                        .clone()
                        .unwrap_or_else(|| test.name.clone()),
                    model: draft.row.model_ref.clone(),
                    expected: None,
                };
                if let Some(job) = ScriptJob::for_check(&test.checks[c], input) {
                    jobs.push(job);
                    slots.push((d, c));
                }
            }
        }
        if jobs.is_empty() {
            return;
        }
        let outcomes = crate::checks::run_scripts(jobs, script_concurrency(), &self.stop);
        for ((d, c), outcome) in slots.into_iter().zip(outcomes) {
            drafts[d].outcomes[c] = outcome;
        }
    }

    /// The row of a draft whose checks are all graded: an error if any check could not be
    /// made; else passed when every check passed, or when the weighted score reaches the
    /// threshold of `pass:`. A test with several checks keeps each one's outcome as a row.
    /// The rows of `outcomes` of `stage`, graded (scripts run), and the problems found in
    /// answers. A result whose scripts a signal stopped is left out, so running the command
    /// again grades it, from the cache.
    fn grade(
        &mut self,
        run_id: i64,
        stage: &Stage,
        outcomes: &[(usize, &CallOutcome)],
    ) -> (Vec<BenchResultRow>, Vec<String>) {
        let mut drafts = Vec::with_capacity(outcomes.len());
        let mut stopped = 0;
        // A later stage's conversations; the first stage answers every first turn.
        let turns = stage.data.as_ref().and_then(|d| d.get::<Turns>());
        let first = TurnState::default();
        for &(i, outcome) in outcomes {
            let call = &stage.calls[i];
            let eval = self.eval(call.item);
            let state = turns
                .and_then(|t| t.states.get(&call.item))
                .unwrap_or(&first);
            match &call.after {
                // A judge's verdict completes the row of the answer it judged.
                Some(answer) => {
                    let draft = self.judged_draft(run_id, (eval, state), answer, outcome);
                    if outcome.call().is_some() {
                        let tally = self.verdicts.entry(call.target).or_default();
                        tally.0 += 1;
                        tally.1 += u64::from(draft.row.judge_score.is_none());
                    }
                    drafts.push(draft);
                }
                // A tool loop's answer asking for tools: its tools run for the next step,
                // or its row says why the loop stops there.
                None if self.spec.tools.is_some()
                    && let Some(answer) = outcome.call()
                    && let (_, calls) = read_answer(&answer.text)
                    && !calls.is_empty() =>
                {
                    match self.tool_step(run_id, (eval, state), outcome, &calls) {
                        Ok(Some(draft)) => drafts.push(draft),
                        Ok(None) => {}
                        Err(()) => stopped += 1,
                    }
                }
                // An answer of a judge test waits for its verdict; a conversation's answer
                // before its last turn, for the turns after it.
                None if call.follow_up
                    && outcome.call().is_some()
                    && (state.turn + 1 < self.request_of(eval).turns()
                        || self.prompt_judge[eval.prompt].is_some()) => {}
                None => drafts.push(self.draft(run_id, (eval, state), outcome, None)),
            }
        }
        self.run_scripts(&mut drafts);
        let graded = drafts.len();
        drafts.retain(|d| d.answer.is_none() || d.outcomes.iter().all(Option::is_some));
        if drafts.len() < graded || stopped > 0 {
            tracing::info!(
                ungraded = graded - drafts.len() + stopped,
                "stopped before their script checks ended: results not stored"
            );
        }
        for draft in &mut drafts {
            self.tool_rows.append(&mut draft.tool_calls);
        }
        let (rows, problems) = self.finish_all(drafts);
        tracing::debug!(rows = rows.len(), "results graded");
        (rows, problems)
    }

    /// The rows of graded drafts, and the problems found in their answers. Every error row is
    /// counted once: with the failed calls when a call of it failed, else here, as a problem
    /// found in the answer (a script check that crashed, `max_steps` reached, a tool that
    /// failed, a judge's garbage): so the tally, `track runs`, `runs --errors` and
    /// `--fail-on-errors` count the same rows.
    fn finish_all(&self, drafts: Vec<Draft>) -> (Vec<BenchResultRow>, Vec<String>) {
        let mut problems = Vec::new();
        let rows: Vec<BenchResultRow> = drafts
            .into_iter()
            .map(|d| {
                let failed_call = d.failed_call;
                let row = self.finish(d);
                if row.outcome == Outcome::Error && !failed_call {
                    problems.push(format!(
                        "{}: {}",
                        eval_label(
                            &row.model_ref,
                            &row.prompt_name,
                            (self.repeats > 1).then_some(row.repeat_index)
                        ),
                        row.detail.as_deref().unwrap_or("an error")
                    ));
                }
                row
            })
            .collect();
        (rows, problems)
    }

    fn finish(&self, draft: Draft) -> BenchResultRow {
        let Draft {
            mut row,
            answer,
            outcomes,
            ..
        } = draft;
        if answer.is_none() {
            return row;
        }
        let test = &self.spec.prompts[row.prompt_index as usize];
        let outcomes: Vec<CheckOutcome> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| CheckOutcome::error("the script was not run")))
            .collect();
        let verdict = crate::checks::combine(self.spec.pass, test.checks.iter().zip(&outcomes));
        row.outcome = outcome_of(verdict.status);
        if matches!(self.spec.pass, PassRule::Threshold(_)) {
            row.score = Some(verdict.score);
        }
        row.detail = match (test.checks.len(), verdict.reason) {
            // One check: its own words, as before several checks were possible.
            (1, _) => outcomes[0].reason.clone(),
            (_, reason) => reason,
        };
        // The reason of several checks says the score already (`combine`); that of one
        // check is the check's own.
        if let PassRule::Threshold(t) = self.spec.pass
            && row.outcome == Outcome::Failed
            && test.checks.len() == 1
        {
            row.detail = Some(format!(
                "weighted score {:.2} is below {t}{}",
                verdict.score,
                row.detail
                    .as_ref()
                    .map(|d| format!("; {d}"))
                    .unwrap_or_default()
            ));
        }
        if test.checks.len() > 1 {
            row.checks = test
                .checks
                .iter()
                .zip(outcomes)
                .map(|(check, outcome)| CheckRow {
                    method: check.method.name().to_owned(),
                    expected: check.expected.clone(),
                    outcome: outcome_of(outcome.status),
                    score: outcome.score,
                    weight: check.weight,
                    reason: outcome.reason,
                })
                .collect();
        }
        row
    }

    /// Fills `row` from its call, with what the earlier turns of its conversation `spent`
    /// added (nothing for one turn).
    fn fill_from_call(
        &self,
        row: &mut BenchResultRow,
        call: &StoredCall,
        model: &Target,
        spent: &Spent,
    ) {
        let total = spent.plus(call, row.cache_hit);
        let energy = self.energy.estimate(
            &model.spec.energy,
            total.output_tokens,
            total.latency_ms / 1000.0,
        );
        row.call_id = Some(call.id);
        row.latency_ms = Some(total.latency_ms);
        row.input_tokens = Some(total.input_tokens);
        row.output_tokens = Some(total.output_tokens);
        row.tokens_estimated = total.tokens_estimated;
        // A model without a price has an unknown cost (NULL), and so is what a fresh answer of
        // it paid; a cached one paid nothing.
        row.cost_usd = total.cost_usd;
        row.paid_usd = total.paid_usd;
        // A model without a parameter count has no estimate: the energy stays NULL (unknown),
        // and so does the method, as no method estimated it.
        if let Some(energy) = energy {
            row.energy_wh = Some(energy.wh);
            row.energy_wh_min = Some(energy.min_wh);
            row.energy_wh_max = Some(energy.max_wh);
            row.energy_method = Some(self.energy.name().to_owned());
        }
    }

    /// The note of a run some of whose models have no parameter count, or `None`.
    fn energy_unknown_note(&self) -> Option<String> {
        let unknown: Vec<String> = self.targets[..self.models]
            .iter()
            // An application's energy is unknown too, but no `parameters:` would tell it.
            .filter(|t| t.spec.energy.parameters.is_none() && t.app.is_none())
            .map(|t| format!("`{}`", t.reference))
            .collect();
        (!unknown.is_empty()).then(|| {
            format!(
                "track: note: energy unknown for {}: config.yaml gives no `parameters:` \
                 (billions, a number or [min, max]); add it to estimate energy",
                unknown.join(", ")
            )
        })
    }

    /// The draft of a judged answer (`answer`, the judge's call `outcome`): the verdict from
    /// the judge's score with the test's other checks, or an error when the judge failed or
    /// answered garbage (never a failed test).
    fn judged_draft(
        &self,
        run_id: i64,
        (eval, state): (Eval, &TurnState),
        answer: &CallOutcome,
        outcome: &CallOutcome,
    ) -> Draft {
        let test = &self.spec.prompts[eval.prompt];
        let Some(judged) = test.judge() else {
            return self.draft(run_id, (eval, state), answer, None);
        };
        let call = match outcome {
            CallOutcome::Failed { call_id, error, .. } => {
                let verdict = CheckOutcome::error(format!("the judge call failed: {error}"));
                let mut draft = self.draft(run_id, (eval, state), answer, Some(verdict));
                draft.row.judge_call_id = *call_id;
                draft.failed_call = true;
                return draft;
            }
            CallOutcome::Hit(call) | CallOutcome::Fresh(call) => call,
        };
        let parsed = judge::parse_judge(&call.text, JUDGE_SCALE.0, JUDGE_SCALE.1);
        let verdict = match &parsed {
            Ok((score, why)) => {
                let reason = format!(
                    "judge {} scored {score}/5 (passes at {}){}",
                    judged.judge,
                    judged.threshold,
                    why.as_ref().map(|w| format!(": {w}")).unwrap_or_default()
                );
                let scaled =
                    (score - JUDGE_SCALE.0) as f64 / (JUDGE_SCALE.1 - JUDGE_SCALE.0) as f64;
                let verdict = if *score >= judged.threshold {
                    CheckOutcome::pass()
                } else {
                    CheckOutcome::fail(String::new())
                };
                CheckOutcome {
                    reason: Some(reason),
                    ..verdict.with_score(scaled)
                }
            }
            Err(reason) => {
                CheckOutcome::error(format!("the judge's answer could not be used: {reason}"))
            }
        };
        let mut draft = self.draft(run_id, (eval, state), answer, Some(verdict));
        let row = &mut draft.row;
        row.judge_call_id = Some(call.id);
        row.judge_cost_usd = call.cost_usd;
        // Unknown when either the answer's or the judge's is.
        let plus = |sum: Option<f64>| sum.zip(call.cost_usd).map(|(a, b)| a + b);
        row.cost_usd = plus(row.cost_usd);
        if matches!(outcome, CallOutcome::Fresh(_)) {
            row.paid_usd = plus(row.paid_usd);
        }
        row.judge_score = parsed.as_ref().ok().map(|(score, _)| *score);
        draft
    }
}

/// The answer `check` grades: that of its `turn:` in a conversation, else `last` (the answer
/// to the turn `state` was for).
fn turn_answer<'a>(check: &crate::checks::Check, state: &'a TurnState, last: &'a str) -> &'a str {
    check
        .turn
        .and_then(|n| state.answers.get(n - 1))
        .map_or(last, String::as_str)
}

/// The name of a stage after the first, by what it holds: later turns, judges, tool steps.
fn stage_name(turns: bool, judges: bool, steps: bool) -> &'static str {
    match (turns, judges, steps) {
        (_, true, true) => STEPS_AND_JUDGES,
        (_, false, true) => STEPS,
        (true, true, _) => TURNS_AND_JUDGES,
        (true, false, _) => TURNS,
        _ => JUDGES,
    }
}

/// The outcome stored for a check's (or a case's) status.
fn outcome_of(status: CheckStatus) -> Outcome {
    match status {
        CheckStatus::Passed => Outcome::Passed,
        CheckStatus::Failed => Outcome::Failed,
        CheckStatus::Error => Outcome::Error,
    }
}

/// How many scripts run at once: one per core, at least 2.
fn script_concurrency() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// An evaluation as its calls are labelled: `openai:gpt-4o on capital`, with ` #2` (the repeat,
/// from 1) when the run repeats its evaluations.
fn eval_label(model: &str, prompt: &str, repeat: Option<u32>) -> String {
    match repeat {
        Some(repeat) => format!("{model} on {prompt} #{}", repeat + 1),
        None => format!("{model} on {prompt}"),
    }
}

/// A judge's call as it is labelled: `judge openai:gpt-4o-mini of <the evaluation's label>`.
fn judge_label(judge: &str, eval: &str) -> String {
    format!("judge {judge} of {eval}")
}

/// The errors found in the answers of run `run_id` (`track runs --errors`): the judges'
/// verdicts that could not be used, each labelled as its call is, then the results their
/// checks or tool loop made errors of (a script that crashed, `max_steps` reached), labelled
/// as their evaluation. (A call that got no answer is listed by the runtime, with the other
/// failed calls.) One entry per error row, as the tally and `--fail-on-errors` count them.
pub fn answer_errors(store: &Store, run_id: i64) -> Result<Vec<RunErrorRow>, StoreError> {
    let mut errors: Vec<RunErrorRow> = store
        .unusable_verdicts(run_id)?
        .into_iter()
        .map(|v| {
            let eval = eval_label(
                &v.model_ref,
                &v.prompt_name,
                v.repeated.then_some(v.repeat_index),
            );
            RunErrorRow {
                stage: JUDGES.to_owned(),
                item: judge_label(&v.judge, &eval),
                model_ref: v.judge,
                error: v
                    .detail
                    .unwrap_or_else(|| "the judge's answer could not be used".to_owned()),
                call_id: Some(v.call_id),
                attempts: v.attempts,
            }
        })
        .collect();
    errors.extend(store.result_errors(run_id)?.into_iter().map(|r| {
        RunErrorRow {
            stage: RESULTS.to_owned(),
            item: eval_label(
                &r.model_ref,
                &r.prompt_name,
                r.repeated.then_some(r.repeat_index),
            ),
            model_ref: r.model_ref,
            error: r
                .detail
                .unwrap_or_else(|| "its checks could not be made".to_owned()),
            call_id: Some(r.call_id),
            attempts: r.attempts,
        }
    }));
    Ok(errors)
}

impl Experiment for BenchExperiment {
    fn kind(&self) -> ExperimentKind {
        ExperimentKind::Bench
    }

    fn header(&self) -> RunHeader {
        let mut options = serde_json::json!({
            "repeat": self.repeats,
            "models": self.targets[..self.models].iter().map(|t| &t.reference).collect::<Vec<_>>(),
            "energy_method": self.energy.name(),
        });
        // Only benchmarks that read files record them: the options (and so the plan's hash)
        // of one written inline are what they were before.
        if !self.spec.inputs.is_empty() {
            options["inputs"] = serde_json::json!(self.spec.inputs);
        }
        RunHeader {
            file: Some(self.spec.path.display().to_string()),
            spec_sha256: Some(self.spec.sha256.clone()),
            options,
        }
    }

    fn targets(&self) -> &[Target] {
        &self.targets
    }

    fn budget_usd(&self) -> Option<f64> {
        self.spec.budget_usd
    }

    fn batch(&self) -> bool {
        self.spec.batch
    }

    fn gate(&self) -> crate::gate::Gate {
        self.spec.gate
    }

    fn stage(
        &self,
        index: usize,
        previous: Option<(&Stage, &Answers)>,
    ) -> Result<Option<Stage>, ExperimentError> {
        Ok(match (index, previous) {
            (0, _) => Some(self.answers_stage()),
            (_, Some((previous, outcomes))) => self.next_stage(previous, outcomes),
            _ => None,
        })
    }

    fn record(
        &mut self,
        store: &mut Store,
        run_id: i64,
        stage: &Stage,
        outcomes: &[(usize, &CallOutcome)],
    ) -> Result<Vec<String>, ExperimentError> {
        /// Outcomes graded at once while the part before is written, when there are more:
        /// a cached run's slices of 32,768, graded on this thread and written on another.
        const PART: usize = 4096;
        if outcomes.len() <= PART {
            let (rows, problems) = self.grade(run_id, stage, outcomes);
            store.insert_bench_results(&rows)?;
            store.insert_tool_calls(&std::mem::take(&mut self.tool_rows))?;
            tracing::debug!(rows = rows.len(), "results stored");
            return Ok(problems);
        }
        let mut problems = Vec::new();
        let writing = &mut *store;
        std::thread::scope(|scope| {
            let (parts, graded) = std::sync::mpsc::sync_channel::<Vec<BenchResultRow>>(1);
            let writer = scope.spawn(move || {
                writing.insert_bench_results_in_parts(
                    outcomes.len(),
                    graded.into_iter().map(std::borrow::Cow::Owned),
                )
            });
            for part in outcomes.chunks(PART) {
                let (rows, found) = self.grade(run_id, stage, part);
                problems.extend(found);
                // The writer failed: its error says why.
                if parts.send(rows).is_err() {
                    break;
                }
            }
            drop(parts);
            writer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        store.insert_tool_calls(&std::mem::take(&mut self.tool_rows))?;
        tracing::debug!(rows = outcomes.len(), "results stored");
        Ok(problems)
    }

    fn loaded(&self) -> Option<String> {
        self.spec.loaded.clone()
    }

    fn watch_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    fn label(&self, stage: &Stage, index: usize) -> String {
        let call = &stage.calls[index];
        let eval = self.eval(call.item);
        let prompt = &self.spec.prompts[eval.prompt].name;
        let prompt = match self.template_name(eval.template) {
            Some(template) => format!("{prompt} ({template})"),
            None => prompt.clone(),
        };
        let label = eval_label(
            &self.targets[eval.model].reference,
            &prompt,
            (self.repeats > 1).then_some(eval.repeat),
        );
        let (turn, step) = stage
            .data
            .as_ref()
            .and_then(|d| d.get::<Turns>())
            .and_then(|t| t.states.get(&call.item))
            .map_or((0, 0), |state| (state.turn, state.steps.len()));
        match call.after {
            Some(_) => judge_label(&self.targets[call.target].reference, &label),
            None if step > 0 => format!("{label}, step {}", step + 1),
            None if turn > 0 => format!("{label}, turn {}", turn + 1),
            None => label,
        }
    }

    fn shard_key(&self, stage: &Stage, index: usize) -> String {
        // A test: its answer and its judge's verdict go together. A case is known by its id,
        // so inserting a row into a data file moves no other case to another shard.
        let eval = self.eval(stage.calls[index].item);
        let key = format!(
            "{}\x1f{}\x1f{}",
            self.targets[eval.model].reference, self.spec.prompts[eval.prompt].name, eval.repeat
        );
        match self.template_name(eval.template) {
            Some(template) => format!("{key}\x1f{template}"),
            None => key,
        }
    }

    fn report(
        &self,
        store: &Store,
        summary: &RunSummary,
        options: &ReportOptions,
        out: &mut dyn std::io::Write,
    ) -> Result<(), ExperimentError> {
        super::console::print(store, summary, options, out).map_err(ExperimentError::kind)?;
        if let Some(note) = self.energy_unknown_note() {
            options.note(note);
        }
        // Every answer came from the cache: the checks, whatever they are now, graded them.
        let counts = &summary.tally.counts;
        if counts.calls > 0 && counts.cache_hits == counts.calls {
            options.note(format!(
                "track: note: no request sent: {} from the cache graded anew with the file's \
                 checks",
                crate::output::count(counts.calls, "stored answer")
            ));
        }
        // The parse-failure rate of each judge, next to the tally.
        for (&judge, &(verdicts, unreadable)) in &self.verdicts {
            options.note(format!(
                "judge {}: {}, {unreadable} unreadable ({:.0} %)",
                self.targets[judge].reference,
                crate::output::count(verdicts, "verdict"),
                unreadable as f64 * 100.0 / verdicts.max(1) as f64
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Outcome;

    const FILE: &str = "\
temperature: 0
repeat: 2
judge: openai:gpt-4o-mini
models:
  - openai:gpt-4o
  - anthropic:sonnet 3.5
prompts:
  - arithmetic:
    prompt: \"What is 2 + 2? Answer with the number only.\"
    output: \"4\"
    method: exact
  - recursion:
    prompt: \"Explain recursion.\"
    method: judge
    rubric: \"Accurate and short.\"
    threshold: 4
";

    fn experiment() -> BenchExperiment {
        let spec = BenchSpec::parse(Path::new("bench.yaml"), FILE).unwrap();
        BenchExperiment::new(
            spec,
            &Catalog::builtin(),
            &Overrides::default(),
            EnergyMethod::default(),
        )
        .unwrap()
    }

    fn answer(id: i64, text: &str) -> CallOutcome {
        CallOutcome::Fresh(Box::new(StoredCall {
            id,
            text: text.into(),
            finish_reason: Some("stop".into()),
            input_tokens: 10,
            output_tokens: 2,
            tokens_estimated: false,
            latency_ms: 250.0,
            attempts: 1,
            cost_usd: Some(0.01),
            created_at: "2026-11-24T00:00:00Z".into(),
        }))
    }

    /// A store holding calls 1 to `n` (result rows point at their calls), and a run.
    fn store_with_calls(n: i64) -> (Store, i64) {
        let mut store = Store::open_in_memory().unwrap();
        for id in 1..=n {
            let key = format!("key{id}");
            let stored = store
                .insert_call(&crate::store::NewCall {
                    cache_key: &key,
                    canonical_request: "{}".into(),
                    provider: "openai",
                    model: "m",
                    outcome: Ok("an answer"),
                    finish_reason: None,
                    input_tokens: Some(10),
                    output_tokens: Some(2),
                    tokens_estimated: false,
                    latency_ms: 250.0,
                    attempts: 1,
                    input_price_per_mtok: Some(0.0),
                    output_price_per_mtok: Some(0.0),
                    cost_usd: Some(0.01),
                    http_status: None,
                })
                .unwrap();
            assert_eq!(stored, id);
        }
        let run = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        (store, run)
    }

    const DATA: &str = r#"
models: [openai:gpt-4o, openai:gpt-4o-mini]
templates:
  - {name: terse, prompt: "{{a}} * {{b}}? Number only."}
  - {name: steps, prompt: "Think, then answer: {{a}} * {{b}}"}
cases:
  - {id: q1, a: 2, b: 21, answer: "42"}
  - {id: q2, a: 3, b: 3, answer: "9"}
checks:
  - {method: contains, value: "{{answer}}"}
  - {method: icontains, value: "sorry", weight: 3}
pass: {threshold: 0.25}
"#;

    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "a test reads as one scenario (or table), top to bottom"
    )]
    fn every_template_runs_on_every_case_and_each_result_keeps_its_checks() {
        let spec = BenchSpec::parse(Path::new("bench.yaml"), DATA).unwrap();
        let mut bench = BenchExperiment::new(
            spec,
            &Catalog::builtin(),
            &Overrides::default(),
            EnergyMethod::default(),
        )
        .unwrap();
        let answers = bench.stage(0, None).unwrap().unwrap();
        // 2 models x 2 templates x 2 cases, model by model, then template by template.
        let prompts: Vec<(usize, String)> = answers
            .calls
            .iter()
            .map(|c| (c.target, c.job.request.messages[0].text()))
            .collect();
        assert_eq!(
            prompts,
            [
                (0, "2 * 21? Number only.".to_owned()),
                (0, "3 * 3? Number only.".to_owned()),
                (0, "Think, then answer: 2 * 21".to_owned()),
                (0, "Think, then answer: 3 * 3".to_owned()),
                (1, "2 * 21? Number only.".to_owned()),
                (1, "3 * 3? Number only.".to_owned()),
                (1, "Think, then answer: 2 * 21".to_owned()),
                (1, "Think, then answer: 3 * 3".to_owned()),
            ]
        );
        assert_eq!(
            bench.label(&answers, 2),
            "openai:gpt-4o on q1 (steps)",
            "a label names the template"
        );
        let (mut store, run) = store_with_calls(8);
        let texts = ["42", "8", "It is 42", "sorry, 10", "42", "9", "42", "9"];
        let outcomes: Vec<CallOutcome> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| answer(i as i64 + 1, t))
            .collect();
        let recorded: Vec<(usize, &CallOutcome)> = outcomes.iter().enumerate().collect();
        bench.record(&mut store, run, &answers, &recorded).unwrap();
        let outcomes: Vec<(String, Option<f64>)> = store
            .conn()
            .prepare(
                "SELECT status, score FROM bench_results
                 ORDER BY model_index, template_index, prompt_index",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(outcomes.len(), 8, "one row per model, template and case");
        // Weights 1 and 3: `42` passes contains only (0.25, at the threshold); `8` none; the
        // answer with "sorry" passes only the second (0.75).
        assert_eq!(
            outcomes[..4],
            [
                ("passed".to_owned(), Some(0.25)),
                ("failed".to_owned(), Some(0.0)),
                ("passed".to_owned(), Some(0.25)),
                ("passed".to_owned(), Some(0.75))
            ]
        );
        let checks: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM bench_checks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(checks, 16, "two checks for each of the 8 results");
        let failed: (String, String) = store
            .conn()
            .query_row(
                "SELECT c.method, c.reason FROM bench_checks c
                 JOIN bench_results r USING (run_id, model_index, template_index, prompt_index,
                      repeat_index)
                 WHERE r.model_index = 0 AND r.template_index = 0 AND r.prompt_index = 1
                   AND c.status = 'failed' ORDER BY c.check_index LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(failed.0, "contains");
        assert!(failed.1.contains("expected to contain `9`"), "{}", failed.1);
    }

    const CHAT: &str = r#"
models: [openai:gpt-4o]
judge: openai:gpt-4o-mini
prompts:
  - chat:
    turns: ["Hi", "Why?", "Thanks"]
    checks:
      - {method: contains, value: "hello", turn: 1}
      - {method: judge, rubric: "Polite."}
  - once:
    prompt: "2+2?"
    method: contains
    output: "4"
"#;

    #[test]
    fn a_conversation_is_a_stage_a_turn_its_history_growing_then_judged() {
        let spec = BenchSpec::parse(Path::new("bench.yaml"), CHAT).unwrap();
        let mut bench = BenchExperiment::new(
            spec,
            &Catalog::builtin(),
            &Overrides::default(),
            EnergyMethod::default(),
        )
        .unwrap();
        let first = bench.stage(0, None).unwrap().unwrap();
        let follow: Vec<bool> = first.calls.iter().map(|c| c.follow_up).collect();
        assert_eq!(follow, [true, false], "only the conversation goes on");
        let answers = vec![Some(answer(1, "hello there")), None];
        let second = bench.stage(1, Some((&first, &answers))).unwrap().unwrap();
        assert_eq!(second.name, "turns");
        let sent: Vec<String> = second.calls[0]
            .job
            .request
            .messages
            .iter()
            .map(crate::llm::Message::text)
            .collect();
        assert_eq!(sent, ["Hi", "hello there", "Why?"]);
        assert_eq!(bench.label(&second, 0), "openai:gpt-4o on chat, turn 2");
        let third = bench
            .stage(2, Some((&second, &[Some(answer(2, "because")), None])))
            .unwrap()
            .unwrap();
        assert_eq!(third.calls[0].job.request.messages.len(), 5);
        // The last answer is judged; a result row then holds the conversation.
        let judges = bench
            .stage(3, Some((&third, &[Some(answer(3, "bye"))])))
            .unwrap()
            .unwrap();
        assert_eq!(judges.name, "judges");
        assert!(bench.stage(4, Some((&judges, &[None]))).unwrap().is_none());
        let (mut store, run) = store_with_calls(4);
        let verdict = answer(4, r#"{"score": 5, "reason": "kind"}"#);
        bench
            .record(&mut store, run, &judges, &[(0, &verdict)])
            .unwrap();
        let cols = store.bench_columns(&[run], true).unwrap();
        assert_eq!(
            cols.outcome,
            [Outcome::Passed],
            "turn 1's answer says hello"
        );
        // Three turns and the judge, 0.01 each.
        assert_eq!(cols.cost_usd[0].map(|c| (c * 100.0).round()), Some(4.0));

        // A plan with nothing cached bounds every later turn and the judge.
        let unknown = vec![None, None];
        let mut stage = bench.stage(1, Some((&first, &unknown))).unwrap().unwrap();
        let mut pending = vec![stage.pending.len()];
        for index in 2.. {
            match bench.stage(index, Some((&stage, &[]))).unwrap() {
                Some(next) => {
                    pending.push(next.pending.len());
                    stage = next;
                }
                None => break,
            }
        }
        assert_eq!(pending, [1, 1, 1], "turn 2, turn 3, then the judge");
    }

    #[test]
    fn answers_are_planned_model_major_with_judges_as_a_follow_up() {
        let bench = experiment();
        let targets: Vec<&str> = bench
            .targets()
            .iter()
            .map(|t| t.reference.as_str())
            .collect();
        assert_eq!(
            targets,
            [
                "openai:gpt-4o",
                "anthropic:sonnet 3.5",
                "openai:gpt-4o-mini"
            ],
            "the models in file order, then the judge"
        );
        let answers = bench.stage(0, None).unwrap().unwrap();
        assert_eq!(answers.name, "answers");
        // 2 models x 2 prompts x 2 repeats, model by model, prompt by prompt, repeat by repeat.
        let order: Vec<(usize, u32, usize, bool)> = answers
            .calls
            .iter()
            .map(|c| (c.target, c.group, c.item, c.follow_up))
            .collect();
        assert_eq!(
            order,
            [
                (0, 0, 0, false),
                (0, 0, 1, false),
                (0, 0, 2, true),
                (0, 0, 3, true),
                (1, 1, 4, false),
                (1, 1, 5, false),
                (1, 1, 6, true),
                (1, 1, 7, true),
            ]
        );
        // Judges: one per answer of the judge test, after it; a failed answer is not judged.
        let mut outcomes: Vec<Option<CallOutcome>> =
            (0..8).map(|i| Some(answer(i + 1, "an answer"))).collect();
        outcomes[3] = Some(CallOutcome::Failed {
            call_id: None,
            error: "HTTP 500".into(),
            attempts: 1,
        });
        let judges = bench
            .stage(1, Some((&answers, &outcomes)))
            .unwrap()
            .unwrap();
        assert_eq!(judges.name, "judges");
        let judged: Vec<(usize, usize)> = judges.calls.iter().map(|c| (c.target, c.item)).collect();
        assert_eq!(judged, [(2, 2), (2, 6), (2, 7)]);
        assert!(judges.calls.iter().all(|c| c.after.is_some()));
        // Answers not known yet (a plan): each judge call is pending, bounded.
        let unknown: Vec<Option<CallOutcome>> = vec![None; 8];
        let plan = bench.stage(1, Some((&answers, &unknown))).unwrap().unwrap();
        assert!(plan.calls.is_empty());
        assert_eq!(plan.pending.len(), 4);
        assert!(bench.stage(2, Some((&plan, &[]))).unwrap().is_none());
    }

    #[test]
    fn record_stores_outcomes_and_expected_outputs_and_judged_rows_wait() {
        let mut bench = experiment();
        let (mut store, run) = store_with_calls(9);
        let answers = bench.stage(0, None).unwrap().unwrap();
        let outcomes = [
            answer(1, "4"),
            answer(2, "five"),
            answer(3, "recursion is…"),
            CallOutcome::Failed {
                call_id: None,
                error: "HTTP 500".into(),
                attempts: 1,
            },
        ];
        let recorded: Vec<(usize, &CallOutcome)> = outcomes.iter().enumerate().collect();
        let problems = bench.record(&mut store, run, &answers, &recorded).unwrap();
        assert!(problems.is_empty());
        let failures = store.bench_failures(&[run], 10, 100).unwrap();
        let seen: Vec<(&str, u32, Outcome, Option<&str>)> = failures
            .iter()
            .map(|f| {
                (
                    f.prompt_name.as_str(),
                    f.repeat_index,
                    f.status,
                    f.expected.as_deref(),
                )
            })
            .collect();
        // Item 2 (the judge test's answer) waits for its verdict: no row yet.
        assert_eq!(
            seen,
            [
                ("arithmetic", 1, Outcome::Failed, Some("4")),
                ("recursion", 1, Outcome::Error, Some("Accurate and short.")),
            ]
        );
        let cols = store.bench_columns(&[run], true).unwrap();
        assert_eq!(
            cols.outcome,
            [Outcome::Passed, Outcome::Failed, Outcome::Error]
        );
        assert_eq!(cols.cost_usd[0], Some(0.01));
        assert_eq!(cols.paid_usd[0], Some(0.01), "a fresh answer is paid");

        // The judge's verdict completes the waiting row: a score of 5 passes at 4.
        let all: Vec<Option<CallOutcome>> = outcomes.iter().cloned().map(Some).collect();
        let mut padded = all.clone();
        padded.extend((5..=8).map(|i| Some(answer(i, "x"))));
        let judges = bench.stage(1, Some((&answers, &padded))).unwrap().unwrap();
        let verdict = answer(9, r#"{"score": 5, "reason": "clear"}"#);
        let problems = bench
            .record(&mut store, run, &judges, &[(0, &verdict)])
            .unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let cols = store.bench_columns(&[run], true).unwrap();
        assert_eq!(cols.len(), 4);
        let judged = cols
            .prompt_name
            .iter()
            .position(|p| p == "recursion")
            .unwrap();
        assert_eq!(cols.outcome[judged], Outcome::Passed);
        assert_eq!(cols.judge_score[judged], Some(5));
        assert_eq!(
            cols.cost_usd[judged],
            Some(0.02),
            "the judge's cost is added"
        );
    }

    #[test]
    fn results_graded_while_the_part_before_is_written_are_those_recorded_piece_by_piece() {
        // 1,100 cases x 2 templates x 2 models: 4,400 outcomes, more than a part.
        let cases: String = (0..1100)
            .map(|i| format!("  - {{id: q{i}, a: {i}, b: 2, answer: \"{}\"}}\n", i * 2))
            .collect();
        let file = DATA.replace(
            "  - {id: q1, a: 2, b: 21, answer: \"42\"}\n  - {id: q2, a: 3, b: 3, answer: \"9\"}\n",
            &cases,
        );
        let spec = BenchSpec::parse(Path::new("bench.yaml"), &file).unwrap();
        let mut bench = BenchExperiment::new(
            spec,
            &Catalog::builtin(),
            &Overrides::default(),
            EnergyMethod::default(),
        )
        .unwrap();
        let answers = bench.stage(0, None).unwrap().unwrap();
        assert_eq!(answers.calls.len(), 4400);
        let outcomes: Vec<CallOutcome> = (0..4400)
            .map(|i| {
                let case = i % 1100;
                let text = match i % 3 {
                    0 => format!("{}", case * 2),
                    1 => format!("sorry, {}", case * 2),
                    _ => "no idea".to_owned(),
                };
                answer(1, &text)
            })
            .collect();
        let recorded: Vec<(usize, &CallOutcome)> = outcomes.iter().enumerate().collect();
        let (mut store, at_once) = store_with_calls(1);
        bench
            .record(&mut store, at_once, &answers, &recorded)
            .unwrap();
        let in_pieces = store
            .create_run(crate::experiment::ExperimentKind::Bench, None, None, "{}")
            .unwrap();
        for piece in recorded.chunks(1000) {
            bench
                .record(&mut store, in_pieces, &answers, piece)
                .unwrap();
        }
        let columns = |run| store.bench_columns(&[run], true).unwrap();
        let (a, b) = (columns(at_once), columns(in_pieces));
        assert_eq!(a.len(), 4400);
        assert_eq!(a.outcome, b.outcome);
        assert_eq!(a.score, b.score);
        assert_eq!(a.detail, b.detail);
        assert_eq!(a.prompt_name, b.prompt_name);
        assert_eq!(a.template, b.template);
        let passed = a.outcome.iter().filter(|o| **o == Outcome::Passed).count();
        assert!((1000..4400).contains(&passed), "{passed} passed");
        let checks = |run| -> Vec<_> {
            let rows = store.bench_check_rows(&[run]).unwrap();
            rows.into_iter()
                .map(|r| (r.model_ref, r.prompt_name, r.check_index, r.check))
                .collect()
        };
        let checks_at_once = checks(at_once);
        assert_eq!(checks_at_once.len(), 8800);
        assert_eq!(checks_at_once, checks(in_pieces));
    }
}
