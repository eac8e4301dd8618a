//! A pairwise comparison as an experiment of the runtime. With candidate models, stage 0 has
//! every model answer every prompt (cached like any call), and stage 1 has every judge compare
//! every pair of answers to a prompt in both orders, `repeat` times; with generated
//! datasheets, the comparisons are stage 0. Each answer and each verdict becomes a stored row.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::spec::{CandidateModel, Candidates, PairwiseSpec};
use super::verdict;
use crate::config::{Catalog, Config};
use crate::dispatch::budget::ASSUMED_MAX_OUTPUT_TOKENS;
use crate::dispatch::{CallJob, CallOutcome};
use crate::experiment::{
    Answers, Experiment, ExperimentError, ExperimentKind, Override, Overrides, PendingCall,
    PlannedCall, ReportOptions, RunHeader, RunSummary, Stage, StageData, Target, check_size,
};
use crate::llm::{ChatRequest, Message, tokens_bound};
use crate::prompt::Template;
use crate::store::{AnswerRow, Shown, Store, VerdictRow, Winner};

/// The stages' names, as messages and `track runs --errors` show them.
const ANSWERS: &str = "answers";
const VERDICTS: &str = "verdicts";

/// Loads a pairwise experiment file for `track run`; `--models` replaces candidate models.
pub fn from_file(
    path: &Path,
    text: &str,
    config: &Config,
    overrides: &Overrides,
) -> Result<Box<dyn Experiment>, ExperimentError> {
    overrides.refuse(
        ExperimentKind::Pairwise,
        &[(Override::Energy, "pairwise comparisons record no energy")],
    )?;
    let mut spec = PairwiseSpec::parse(path, text).map_err(ExperimentError::kind)?;
    if overrides.models.is_some() {
        match &mut spec.candidates {
            Candidates::Models(models) => {
                let references: Vec<String> = models.iter().map(|m| m.model.clone()).collect();
                *models = overrides
                    .models_or(&references)
                    .iter()
                    .map(|r| CandidateModel::plain(r))
                    .collect();
            }
            Candidates::Datasheets { .. } => {
                return Err(ExperimentError::Unsupported {
                    kind: ExperimentKind::Pairwise,
                    option: "--models",
                    why: "its candidates are the generated datasheets under results/",
                });
            }
        }
    }
    Ok(Box::new(PairwiseExperiment::new(
        spec,
        &config.catalog,
        overrides,
    )?))
}

/// One comparison: a judge, a task, a pair (a before b), a repeat and the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    pub judge: usize,
    pub task: usize,
    pub a: usize,
    pub b: usize,
    pub repeat: u32,
    pub shown: Shown,
}

/// A resolved pairwise experiment.
#[derive(Debug, Clone)]
pub struct PairwiseExperiment {
    spec: PairwiseSpec,
    /// Candidate models (form 1), then the judges.
    targets: Vec<Target>,
    /// The candidates' names, in file order.
    names: Vec<String>,
    /// Target indices of the judges.
    judges: Vec<usize>,
    template: Template,
    repeats: u32,
    /// Per judge (target index): verdicts read in this run, and those invalid.
    tally: BTreeMap<usize, (u64, u64)>,
}

impl PairwiseExperiment {
    /// Resolves candidates and judges against the catalog and loads the judge prompt.
    pub(crate) fn new(
        spec: PairwiseSpec,
        catalog: &Catalog,
        overrides: &Overrides,
    ) -> Result<Self, ExperimentError> {
        let resolve = |reference: &str, what: &str| {
            Target::resolve(catalog, reference).map_err(|e| {
                ExperimentError::kind(super::PairwiseError::Invalid {
                    path: spec.path.clone(),
                    line: None,
                    message: format!("{what} `{reference}`: {e}"),
                })
            })
        };
        let mut targets = Vec::new();
        let names = match &spec.candidates {
            Candidates::Models(models) => {
                for m in models {
                    targets.push(resolve(&m.model, "candidate")?);
                }
                models
                    .iter()
                    .zip(&targets)
                    .map(|(m, t)| m.name.clone().unwrap_or_else(|| t.reference.clone()))
                    .collect()
            }
            Candidates::Datasheets { names, .. } => names.clone(),
        };
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        if unique.len() < 2 {
            return Err(ExperimentError::kind(super::PairwiseError::Invalid {
                path: spec.path.clone(),
                line: None,
                message: format!(
                    "{} distinct candidate(s); a comparison needs at least 2: list two or more \
                     under `candidates:`",
                    unique.len()
                ),
            }));
        }
        let mut judges = Vec::new();
        for j in &spec.judges {
            let judge = resolve(j, "judge")?.with_role("judge");
            judges.push(targets.len());
            targets.push(judge);
        }
        let repeats = overrides.repeat_or(spec.repeat)?;
        let builtin = if spec.datasheets() {
            verdict::DATASHEETS_PROMPT
        } else {
            verdict::ANSWERS_PROMPT
        };
        let template = Template::load(spec.prompt.as_deref(), builtin, &verdict::PLACEHOLDERS)
            .map_err(|e| ExperimentError::kind(super::PairwiseError::Prompt(e)))?;
        let k = names.len() as u64;
        let tasks = spec.tasks.len() as u64;
        let answers = if spec.datasheets() { 0 } else { k * tasks };
        check_size(answers + tasks * k * (k - 1) * judges.len() as u64 * u64::from(repeats))?;
        Ok(Self {
            spec,
            targets,
            names,
            judges,
            template,
            repeats,
            tally: BTreeMap::new(),
        })
    }

    /// Stage 0 of candidate models: each answers each task once.
    fn answers_stage(&self) -> Stage {
        let tasks = self.spec.tasks.len();
        let Candidates::Models(settings) = &self.spec.candidates else {
            return Stage::default();
        };
        let mut calls = Vec::new();
        for (c, (model, own)) in self.targets.iter().zip(settings).enumerate() {
            for (t, task) in self.spec.tasks.iter().enumerate() {
                let mut params = task.params.clone();
                params.temperature = own.temperature.or(params.temperature);
                let request = ChatRequest {
                    tools: None,
                    model: model.spec.model.as_str().into(),
                    schema: None,
                    system: own
                        .system
                        .clone()
                        .or_else(|| task.system.clone())
                        .map(Into::into),
                    messages: vec![Message::user(task.text.clone())].into(),
                    params: params.into(),
                };
                calls.push(PlannedCall {
                    target: c,
                    job: model.job(request, 0),
                    item: c * tasks + t,
                    group: c as u32,
                    follow_up: true,
                    after: None,
                });
            }
        }
        Stage {
            name: ANSWERS,
            calls,
            ..Stage::default()
        }
    }

    /// The comparisons of every pair of `task` whose texts are known, and pending ones
    /// (bounded) for pairs with a text not known yet; `text(candidate)`: `Some(Some(text))`
    /// known, `Some(None)` not known yet, `None` failed or missing.
    fn compare_task(
        &self,
        task: usize,
        text: &dyn Fn(usize) -> Option<Option<String>>,
        stage: &mut Stage,
        comparisons: &mut Vec<Comparison>,
    ) {
        let k = self.names.len();
        for a in 0..k {
            for b in a + 1..k {
                let (Some(ta), Some(tb)) = (text(a), text(b)) else {
                    continue;
                };
                for &judge in &self.judges {
                    for repeat in 0..self.repeats {
                        for shown in Shown::ALL {
                            let comparison = Comparison {
                                judge,
                                task,
                                a,
                                b,
                                repeat,
                                shown,
                            };
                            match (&ta, &tb) {
                                (Some(ta), Some(tb)) => {
                                    stage.calls.push(PlannedCall {
                                        target: judge,
                                        job: self.judge_job(&comparison, ta, tb),
                                        item: comparisons.len(),
                                        group: 0,
                                        follow_up: false,
                                        after: None,
                                    });
                                    comparisons.push(comparison);
                                }
                                _ => stage.pending.push(self.pending(&comparison, &ta, &tb)),
                            }
                        }
                    }
                }
            }
        }
    }

    /// A comparison whose texts are not all known yet, bounded.
    fn pending(&self, c: &Comparison, a: &Option<String>, b: &Option<String>) -> PendingCall {
        let task = &self.spec.tasks[c.task];
        let bound = |t: &Option<String>| match t {
            Some(t) => tokens_bound(t),
            None => u64::from(task.params.max_tokens.unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS)),
        };
        PendingCall {
            target: c.judge,
            input_tokens: tokens_bound(&self.template.text)
                + tokens_bound(&task.text)
                + tokens_bound(&task.reference)
                + bound(a)
                + bound(b),
            output_tokens: u64::from(self.spec.max_tokens),
        }
    }

    /// The judge's call of comparison `c` with the candidates' texts.
    fn judge_job(&self, c: &Comparison, a: &str, b: &str) -> CallJob {
        let task = &self.spec.tasks[c.task];
        let (first, second) = match c.shown {
            Shown::Ab => (a, b),
            Shown::Ba => (b, a),
        };
        let text = self.template.render(&[
            ("task", task.text.as_str()),
            ("reference", task.reference.as_str()),
            ("a", first),
            ("b", second),
        ]);
        let target = &self.targets[c.judge];
        target.shaped_job(
            verdict::request(&target.spec.model, text, self.spec.max_tokens),
            verdict::schema(),
            c.repeat,
        )
    }

    /// The comparisons stage, given each (candidate, task)'s text as `text` finds it.
    fn verdicts_stage(
        &self,
        text: &dyn Fn(usize, usize) -> Option<Option<String>>,
    ) -> Option<Stage> {
        let mut stage = Stage {
            name: VERDICTS,
            ..Stage::default()
        };
        let mut comparisons = Vec::new();
        for task in 0..self.spec.tasks.len() {
            self.compare_task(task, &|c| text(c, task), &mut stage, &mut comparisons);
        }
        stage.data = Some(StageData::new(comparisons));
        (!stage.calls.is_empty() || !stage.pending.is_empty()).then_some(stage)
    }

    /// The row of one candidate's answer to one task; `item` is the answers stage's
    /// (candidate x tasks + task).
    fn answer_row(&self, run_id: i64, item: usize, outcome: &CallOutcome) -> AnswerRow {
        let tasks = self.spec.tasks.len();
        let (call_id, error) = match outcome {
            CallOutcome::Hit(call) | CallOutcome::Fresh(call) => (Some(call.id), None),
            CallOutcome::Failed { call_id, error, .. } => (*call_id, Some(error.clone())),
        };
        AnswerRow {
            run_id,
            candidate: self.names[item / tasks].clone(),
            item: self.spec.tasks[item % tasks].name.clone(),
            call_id,
            cache_hit: matches!(outcome, CallOutcome::Hit(_)),
            error,
        }
    }

    /// The row of one verdict, its winner read back into the pair's frame.
    fn verdict_row(
        &self,
        run_id: i64,
        c: &Comparison,
        outcome: &CallOutcome,
    ) -> Option<VerdictRow> {
        let call = outcome.call()?;
        let (winner, justification, invalid_reason) = match verdict::parse(&call.text) {
            Ok((shown_winner, why)) => (in_pair_frame(shown_winner, c.shown), why, None),
            Err(reason) => (Winner::Invalid, None, Some(reason)),
        };
        Some(VerdictRow {
            run_id,
            judge: self.targets[c.judge].reference.clone(),
            item: self.spec.tasks[c.task].name.clone(),
            candidate_a: self.names[c.a].clone(),
            candidate_b: self.names[c.b].clone(),
            repeat_index: c.repeat,
            shown: c.shown,
            winner,
            justification,
            invalid_reason,
            call_id: Some(call.id),
            cache_hit: matches!(outcome, CallOutcome::Hit(_)),
        })
    }
}

/// A winner as shown (A: the first answer shown) in the pair's own frame (A: candidate_a).
pub(crate) fn in_pair_frame(shown_winner: Winner, shown: Shown) -> Winner {
    match (shown, shown_winner) {
        (Shown::Ab, w) => w,
        (Shown::Ba, Winner::A) => Winner::B,
        (Shown::Ba, Winner::B) => Winner::A,
        (Shown::Ba, w @ (Winner::Tie | Winner::Invalid)) => w,
    }
}

impl Experiment for PairwiseExperiment {
    fn kind(&self) -> ExperimentKind {
        ExperimentKind::Pairwise
    }

    fn header(&self) -> RunHeader {
        RunHeader {
            file: Some(self.spec.path.display().to_string()),
            spec_sha256: Some(self.spec.sha256.clone()),
            options: serde_json::json!({
                "repeat": self.repeats,
                "candidates": self.names,
                "judges": self.judges.iter().map(|&j| &self.targets[j].reference).collect::<Vec<_>>(),
                "prompt_sha256": self.template.sha256,
            }),
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

    fn stage(
        &self,
        index: usize,
        previous: Option<(&Stage, &Answers)>,
    ) -> Result<Option<Stage>, ExperimentError> {
        let tasks = self.spec.tasks.len();
        Ok(match (&self.spec.candidates, index, previous) {
            (Candidates::Models(_), 0, _) => Some(self.answers_stage()),
            (Candidates::Models(_), 1, Some((answers, outcomes))) => {
                // By item, not position: a shard's stage holds some items only; the others'
                // verdicts are other shards' (`--shard`).
                let by_item: HashMap<usize, &Option<CallOutcome>> = answers
                    .calls
                    .iter()
                    .zip(outcomes)
                    .map(|(call, outcome)| (call.item, outcome))
                    .collect();
                self.verdicts_stage(&|c, t| match by_item.get(&(c * tasks + t)) {
                    Some(Some(outcome)) => outcome.call().map(|call| Some(call.text.clone())),
                    Some(None) => Some(None),
                    None => None,
                })
            }
            (Candidates::Datasheets { texts, .. }, 0, _) => {
                self.verdicts_stage(&|c, t| texts[t][c].clone().map(Some))
            }
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
        let Some(comparisons) = stage.data.as_ref().and_then(|d| d.get::<Vec<Comparison>>()) else {
            // The answers stage: a row per candidate's answer, or why it gave none.
            let rows: Vec<AnswerRow> = outcomes
                .iter()
                .map(|&(i, outcome)| self.answer_row(run_id, stage.calls[i].item, outcome))
                .collect();
            store.insert_pairwise_answers(&rows)?;
            return Ok(Vec::new());
        };
        let mut rows = Vec::with_capacity(outcomes.len());
        for &(i, outcome) in outcomes {
            let c = &comparisons[stage.calls[i].item];
            if let Some(row) = self.verdict_row(run_id, c, outcome) {
                let tally = self.tally.entry(c.judge).or_default();
                tally.0 += 1;
                tally.1 += u64::from(row.winner == Winner::Invalid);
                rows.push(row);
            }
        }
        store.insert_pairwise_verdicts(&rows)?;
        // An unreadable verdict is `invalid`, counted apart, not an error of the run.
        Ok(Vec::new())
    }

    fn shard_key(&self, stage: &Stage, index: usize) -> String {
        // An item: its candidates' answers and every verdict on them (both orders, every
        // judge) go together.
        let call = &stage.calls[index];
        let task = match stage.data.as_ref().and_then(|d| d.get::<Vec<Comparison>>()) {
            Some(comparisons) => comparisons[call.item].task,
            None => call.item % self.spec.tasks.len(),
        };
        self.spec.tasks[task].name.clone()
    }

    fn label(&self, stage: &Stage, index: usize) -> String {
        let call = &stage.calls[index];
        match stage.data.as_ref().and_then(|d| d.get::<Vec<Comparison>>()) {
            Some(comparisons) => {
                let c = &comparisons[call.item];
                let repeat = if self.repeats > 1 {
                    format!(" #{}", c.repeat + 1)
                } else {
                    String::new()
                };
                format!(
                    "judge {} of {} vs {} on {} ({}){repeat}",
                    self.targets[c.judge].reference,
                    self.names[c.a],
                    self.names[c.b],
                    self.spec.tasks[c.task].name,
                    c.shown.as_str()
                )
            }
            None => {
                let tasks = self.spec.tasks.len();
                format!(
                    "{} on {}",
                    self.names[call.item / tasks],
                    self.spec.tasks[call.item % tasks].name
                )
            }
        }
    }

    fn report(
        &self,
        store: &Store,
        summary: &RunSummary,
        options: &ReportOptions,
        out: &mut dyn std::io::Write,
    ) -> Result<(), ExperimentError> {
        super::console::print(store, summary.run_id, options, out)
            .map_err(ExperimentError::kind)?;
        for (&judge, &(verdicts, invalid)) in &self.tally {
            options.note(format!(
                "judge {}: {}, {invalid} invalid ({:.0} %)",
                self.targets[judge].reference,
                crate::output::count(verdicts, "verdict"),
                invalid as f64 * 100.0 / verdicts.max(1) as f64
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
kind: pairwise
candidates: [openai:gpt-4o, anthropic:haiku 3.5, ollama:llama3.2]
judges: [openai:gpt-4o-mini]
repeat: 2
prompts:
  - capital:
    prompt: Capital of France?
    output: Paris
  - sum:
    prompt: 2 + 2?
";

    fn experiment() -> PairwiseExperiment {
        let spec = PairwiseSpec::parse(Path::new("p.yaml"), FILE).unwrap();
        PairwiseExperiment::new(spec, &Catalog::builtin(), &Overrides::default()).unwrap()
    }

    #[test]
    fn every_pair_is_judged_in_both_orders_per_judge_and_repeat() {
        let p = experiment();
        let answers = p.stage(0, None).unwrap().unwrap();
        assert_eq!(answers.calls.len(), 6);
        let unknown: Vec<Option<CallOutcome>> = vec![None; 6];
        let plan = p.stage(1, Some((&answers, &unknown))).unwrap().unwrap();
        // 2 prompts x 3 pairs x 1 judge x 2 repeats x 2 orders.
        assert_eq!((plan.calls.len(), plan.pending.len()), (0, 24));
        let known: Vec<Option<CallOutcome>> = (0..6)
            .map(|i| {
                Some(CallOutcome::Fresh(Box::new(crate::store::StoredCall {
                    id: i,
                    text: format!("answer {i}"),
                    finish_reason: None,
                    input_tokens: 1,
                    output_tokens: 1,
                    tokens_estimated: false,
                    latency_ms: 1.0,
                    attempts: 1,
                    cost_usd: Some(0.0),
                    created_at: String::new(),
                })))
            })
            .collect();
        let verdicts = p.stage(1, Some((&answers, &known))).unwrap().unwrap();
        assert_eq!(verdicts.calls.len(), 24);
        let orders = verdicts
            .calls
            .iter()
            .filter(|c| c.job.request.messages[0].text().contains("A:\nanswer 0"))
            .count();
        assert_eq!(orders, 4, "candidate 0 shown first: 2 pairs x 2 repeats");
        assert!(p.stage(2, Some((&verdicts, &[]))).unwrap().is_none());
    }

    /// An answer stored as a call, as the executor would have.
    fn answered(store: &mut Store, key: &str, text: &str) -> crate::store::StoredCall {
        store.insert_answered(key, text)
    }

    #[test]
    fn record_stores_a_row_per_candidates_answer_and_the_verdicts_none() {
        let mut p = experiment();
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .create_run(
                crate::experiment::ExperimentKind::Pairwise,
                None,
                None,
                "{}",
            )
            .unwrap();
        let answers = p.stage(0, None).unwrap().unwrap();
        // Items are candidate x 2 tasks + task: 1 is gpt-4o on `sum`, 2 haiku on `capital`,
        // 5 llama on `sum`.
        let fresh = CallOutcome::Fresh(Box::new(answered(&mut store, "k1", "4")));
        let hit = CallOutcome::Hit(Box::new(answered(&mut store, "k2", "Paris")));
        let failed = CallOutcome::Failed {
            call_id: None,
            error: "HTTP 500".into(),
            attempts: 3,
        };
        let position = |item: usize| answers.calls.iter().position(|c| c.item == item).unwrap();
        let problems = p
            .record(
                &mut store,
                run,
                &answers,
                &[
                    (position(1), &fresh),
                    (position(2), &hit),
                    (position(5), &failed),
                ],
            )
            .unwrap();
        assert!(problems.is_empty());
        let row =
            |candidate: &str, item: &str, call_id, cache_hit, error: Option<&str>| AnswerRow {
                run_id: run,
                candidate: candidate.into(),
                item: item.into(),
                call_id,
                cache_hit,
                error: error.map(str::to_owned),
            };
        assert_eq!(
            store.pairwise_answers(&[run]).unwrap(),
            [
                row(
                    "anthropic:haiku 3.5",
                    "capital",
                    hit.call().map(|c| c.id),
                    true,
                    None
                ),
                row("ollama:llama3.2", "sum", None, false, Some("HTTP 500")),
                row(
                    "openai:gpt-4o",
                    "sum",
                    fresh.call().map(|c| c.id),
                    false,
                    None
                ),
            ]
        );
        // The verdicts stage records verdicts, not answers.
        let known: Vec<Option<CallOutcome>> = vec![Some(fresh.clone()); answers.calls.len()];
        let verdicts = p.stage(1, Some((&answers, &known))).unwrap().unwrap();
        let verdict =
            CallOutcome::Fresh(Box::new(answered(&mut store, "k3", r#"{"winner": "A"}"#)));
        p.record(&mut store, run, &verdicts, &[(0, &verdict)])
            .unwrap();
        assert_eq!(store.pairwise_answers(&[run]).unwrap().len(), 3);
        assert_eq!(store.pairwise_verdicts(&[run]).unwrap().len(), 1);
    }

    #[test]
    fn winners_shown_reversed_are_read_back_into_the_pair() {
        assert_eq!(in_pair_frame(Winner::A, Shown::Ba), Winner::B);
        assert_eq!(in_pair_frame(Winner::A, Shown::Ab), Winner::A);
        assert_eq!(in_pair_frame(Winner::Tie, Shown::Ba), Winner::Tie);
    }

    #[test]
    fn fewer_than_two_candidates_is_refused_naming_the_fix() {
        let text = FILE.replace(
            "[openai:gpt-4o, anthropic:haiku 3.5, ollama:llama3.2]",
            "[openai:gpt-4o]",
        );
        let spec = PairwiseSpec::parse(Path::new("p.yaml"), &text).unwrap();
        let e = PairwiseExperiment::new(spec, &Catalog::builtin(), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs at least 2"), "{e}");
    }
}
