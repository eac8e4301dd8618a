//! Benchmarks: every prompt against every model (model-major), each answer tested.
//!
//! The spec becomes a plan of calls (with cache keys); the executor serves them; each outcome
//! becomes a result row pointing at its call. No HTTP and no SQL here.

pub mod methods;
pub mod spec;

use std::sync::{Arc, Mutex};

use indicatif::ProgressBar;

pub use spec::{BenchSpec, PromptTest, SpecError};

use crate::config::{Catalog, ConfigError, ModelSpec, Target};
use crate::energy::EnergyMethod;
use crate::llm::{
    CacheMode, CallJob, CallOutcome, ChatRequest, Executor, Message, anthropic::DEFAULT_MAX_TOKENS,
    estimate_tokens,
};
use crate::store::{BenchResultRow, RunStatus, Store, StoreError, StoredCall, lock};
use methods::TestMethod;

/// What stops a benchmark from running at all.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{path}{}: {source}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Model {
        path: String,
        line: Option<u64>,
        #[source]
        source: ConfigError,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "interrupted: run {run_id} is kept as `interrupted`; run the same command again to finish it from the cache"
    )]
    Interrupted { run_id: i64 },
    #[error("the judge prompt: {0}")]
    Judge(String),
}

/// How to run a benchmark.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Prompts of one model in flight at once.
    pub concurrency: usize,
    /// Samples per model and prompt; overrides the file's `repeat:`.
    pub repeat: Option<u32>,
    /// Model references replacing the file's `models:`.
    pub models: Option<Vec<String>>,
    pub energy_method: EnergyMethod,
    /// Draw a progress bar on stderr (it hides itself when stderr is not a terminal).
    pub show_progress: bool,
}

/// One evaluation of the plan: model x prompt x repeat, with its call.
#[derive(Debug, Clone)]
pub struct PlannedEval {
    pub model: usize,
    pub prompt: usize,
    pub repeat: u32,
    pub job: CallJob,
}

/// A resolved benchmark: models, prompts and every call, in model-major order.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub spec: BenchSpec,
    pub models: Vec<Target>,
    pub evals: Vec<PlannedEval>,
    /// Judge models of `method: judge` tests, and each prompt's judge (an index into them).
    pub judges: Vec<Target>,
    pub prompt_judge: Vec<Option<usize>>,
}

/// The judge prompt (`prompts/judge_prompt.txt`).
pub const JUDGE_PROMPT: &str = include_str!("../../prompts/judge_prompt.txt");
/// Most tokens a judge's answer may use.
const JUDGE_MAX_TOKENS: u32 = 512;

/// A dry run's figures for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRunLine {
    pub model: String,
    pub calls: usize,
    pub cached: usize,
    pub to_call: usize,
    /// Upper bound of the cost of the calls to make, in USD.
    pub max_cost_usd: f64,
    pub blocked: Option<String>,
}

/// An answer of a judge test, waiting for its judge.
#[derive(Debug, Clone)]
struct Awaiting {
    row: BenchResultRow,
    answer: String,
    judge: usize,
}

/// Totals of a finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTotals {
    pub run_id: i64,
    pub results: usize,
    pub cache_hits: usize,
    pub errors: usize,
    pub cost_usd: f64,
    pub paid_usd: f64,
    /// The first error, for the one-line reason when nothing could run.
    pub first_error: Option<String>,
}

/// Output tokens assumed for the cost bound of a dry run when a test sets no `max_tokens`.
pub const ASSUMED_MAX_OUTPUT_TOKENS: u32 = DEFAULT_MAX_TOKENS;

impl BenchPlan {
    /// Resolves the spec's models against the catalog and lays out every call.
    pub fn new(
        spec: BenchSpec,
        catalog: &Catalog,
        options: &BenchOptions,
    ) -> Result<Self, BenchError> {
        let from_file = options.models.is_none();
        let references: Vec<String> = match &options.models {
            Some(list) => list.iter().map(|m| m.trim().to_owned()).collect(),
            None => spec.models.clone(),
        };
        let model_error = |line: Option<u64>, source| BenchError::Model {
            path: spec.path.display().to_string(),
            line,
            source,
        };
        let mut models = Vec::new();
        for (i, reference) in references.iter().enumerate() {
            let line = || if from_file { spec.model_line(i) } else { None };
            models.push(
                catalog
                    .target(reference)
                    .map_err(|e| model_error(line(), e))?,
            );
        }
        let mut judges: Vec<Target> = Vec::new();
        let mut prompt_judge = Vec::new();
        for (p, test) in spec.prompts.iter().enumerate() {
            let TestMethod::Judge(judged) = &test.method else {
                prompt_judge.push(None);
                continue;
            };
            let index = match judges.iter().position(|j| j.reference == judged.judge) {
                Some(index) => index,
                None => {
                    judges.push(
                        catalog
                            .target(&judged.judge)
                            .map_err(|e| model_error(spec.prompt_line(p), e))?,
                    );
                    judges.len() - 1
                }
            };
            prompt_judge.push(Some(index));
        }
        let repeats = options.repeat.unwrap_or(spec.repeat).max(1);
        let mut evals = Vec::with_capacity(models.len() * spec.prompts.len() * repeats as usize);
        for (m, model) in models.iter().enumerate() {
            for (p, test) in spec.prompts.iter().enumerate() {
                let request = ChatRequest {
                    model: model.spec.model.clone(),
                    system: test.system.clone(),
                    messages: vec![Message::user(test.prompt.clone())],
                    params: test.params.clone(),
                };
                for repeat in 0..repeats {
                    evals.push(PlannedEval {
                        model: m,
                        prompt: p,
                        repeat,
                        job: model.job(request.clone(), repeat),
                    });
                }
            }
        }
        Ok(Self {
            spec,
            models,
            evals,
            judges,
            prompt_judge,
        })
    }

    /// What a run would do: per model, calls, cached, to call, and the most they can cost.
    pub fn dry_run(&self, executor: &Executor) -> Result<Vec<DryRunLine>, StoreError> {
        let cached = executor.lookup(self.evals.iter().map(|e| e.job.canonical.key.as_str()))?;
        let mut lines: Vec<DryRunLine> = self
            .models
            .iter()
            .map(|m| DryRunLine {
                model: m.reference.clone(),
                calls: 0,
                cached: 0,
                to_call: 0,
                max_cost_usd: 0.0,
                blocked: m.blocked.clone(),
            })
            .collect();
        for eval in &self.evals {
            let line = &mut lines[eval.model];
            line.calls += 1;
            let max_answer = eval
                .job
                .request
                .params
                .max_tokens
                .unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS) as u64;
            if let (Some(judge), TestMethod::Judge(judged)) = (
                self.prompt_judge[eval.prompt],
                &self.spec.prompts[eval.prompt].method,
            ) {
                // Bounded as if no verdict were cached: the answer to judge is not known yet.
                let judge = &self.judges[judge].spec;
                let input = estimate_tokens(JUDGE_PROMPT)
                    + estimate_tokens(&self.spec.prompts[eval.prompt].prompt)
                    + estimate_tokens(&judged.rubric)
                    + max_answer;
                line.max_cost_usd += judge.price().cost_usd(input, u64::from(JUDGE_MAX_TOKENS));
            }
            if cached.contains_key(&eval.job.canonical.key) {
                line.cached += 1;
                continue;
            }
            line.to_call += 1;
            let request = &eval.job.request;
            let input = request.system.as_deref().map_or(0, estimate_tokens)
                + request
                    .messages
                    .iter()
                    .map(|m| estimate_tokens(&m.text()))
                    .sum::<u64>();
            let output = request
                .params
                .max_tokens
                .unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS) as u64;
            line.max_cost_usd += eval.job.price.cost_usd(input, output);
        }
        Ok(lines)
    }

    /// Runs the plan: cached answers first (written in one transaction), then each model's
    /// misses concurrently, every outcome stored as it arrives. Ctrl-C marks the run
    /// interrupted; what completed stays stored.
    pub async fn run(
        &self,
        store: &Arc<Mutex<Store>>,
        executor: &Executor,
        options: &BenchOptions,
        options_json: &str,
    ) -> Result<RunTotals, BenchError> {
        let run_id = lock(store).create_run(
            "bench",
            Some(&self.spec.path.display().to_string()),
            Some(&self.spec.sha256),
            options_json,
        )?;
        let progress = crate::output::progress_bar(self.evals.len(), options.show_progress);
        let mut totals = RunTotals {
            run_id,
            results: 0,
            cache_hits: 0,
            errors: 0,
            cost_usd: 0.0,
            paid_usd: 0.0,
            first_error: None,
        };
        let work = self.run_inner(store, executor, options, &progress, &mut totals);
        let outcome = tokio::select! {
            result = work => result,
            _ = tokio::signal::ctrl_c() => {
                progress.abandon();
                lock(store).finish_run(run_id, RunStatus::Interrupted)?;
                return Err(BenchError::Interrupted { run_id });
            }
        };
        progress.finish_and_clear();
        let status = if outcome.is_ok() {
            RunStatus::Completed
        } else {
            RunStatus::Failed
        };
        lock(store).finish_run(run_id, status)?;
        outcome.map(|()| totals)
    }

    async fn run_inner(
        &self,
        store: &Arc<Mutex<Store>>,
        executor: &Executor,
        options: &BenchOptions,
        progress: &ProgressBar,
        totals: &mut RunTotals,
    ) -> Result<(), BenchError> {
        let run_id = totals.run_id;
        let energy = options.energy_method;
        let cached = executor.lookup(self.evals.iter().map(|e| e.job.canonical.key.as_str()))?;
        tracing::debug!(cached = cached.len(), "cache looked up");
        // Answers of judge tests wait for their judge, per model.
        let mut awaiting: Vec<Vec<Awaiting>> = vec![Vec::new(); self.models.len()];
        let mut rows = Vec::new();
        for eval in &self.evals {
            if let Some(call) = cached.get(&eval.job.canonical.key) {
                let outcome = CallOutcome::Hit(call.clone());
                let row = self.result_row(run_id, eval, &outcome, energy);
                match self.needs_judge(eval, &outcome) {
                    Some(judge) => awaiting[eval.model].push(Awaiting {
                        row,
                        answer: call.text.clone(),
                        judge,
                    }),
                    None => {
                        totals.add(&row);
                        rows.push(row);
                    }
                }
            }
        }
        lock(store).insert_bench_results(&rows)?;
        tracing::debug!(rows = rows.len(), "cached results stored");
        progress.inc(rows.len() as u64);
        progress.set_message(totals.progress_message());

        for (m, model) in self.models.iter().enumerate() {
            let misses: Vec<&PlannedEval> = self
                .evals
                .iter()
                .filter(|e| e.model == m && !cached.contains_key(&e.job.canonical.key))
                .collect();
            if let Some(reason) = model.blocked.as_ref().filter(|_| !misses.is_empty()) {
                let error = if executor.mode() == CacheMode::Offline {
                    "not in the cache, and --offline forbids calls".to_owned()
                } else {
                    reason.clone()
                };
                let rows: Vec<BenchResultRow> = misses
                    .iter()
                    .map(|eval| {
                        let outcome = CallOutcome::Failed {
                            call_id: None,
                            error: error.clone(),
                            attempts: 0,
                        };
                        self.result_row(run_id, eval, &outcome, energy)
                    })
                    .collect();
                rows.iter().for_each(|r| totals.add(r));
                lock(store).insert_bench_results(&rows)?;
                progress.inc(rows.len() as u64);
            } else if !misses.is_empty() {
                let jobs: Vec<CallJob> = misses.iter().map(|e| e.job.clone()).collect();
                let mut store_error = None;
                let waiting = &mut awaiting[m];
                executor
                    .execute(jobs, |index, outcome| {
                        let row = self.result_row(run_id, misses[index], &outcome, energy);
                        if let Some(judge) = self.needs_judge(misses[index], &outcome) {
                            let answer = outcome.call().map(|c| c.text.clone()).unwrap_or_default();
                            waiting.push(Awaiting { row, answer, judge });
                            return;
                        }
                        totals.add(&row);
                        if let Err(e) = lock(store).insert_bench_results(std::slice::from_ref(&row))
                        {
                            store_error.get_or_insert(e);
                        }
                        progress.inc(1);
                        progress.set_message(totals.progress_message());
                    })
                    .await;
                if let Some(e) = store_error {
                    return Err(e.into());
                }
            }
            let waiting = std::mem::take(&mut awaiting[m]);
            self.judge(store, executor, progress, totals, waiting)
                .await?;
        }
        Ok(())
    }

    /// The judge of `eval`'s test, when it has one and there is an answer to judge.
    fn needs_judge(&self, eval: &PlannedEval, outcome: &CallOutcome) -> Option<usize> {
        outcome.call()?;
        self.prompt_judge[eval.prompt]
    }

    /// Has each waiting answer scored by its test's judge (cached like any call), completes its
    /// row (verdict, judge score, the judge's cost added to the row's) and stores it.
    async fn judge(
        &self,
        store: &Arc<Mutex<Store>>,
        executor: &Executor,
        progress: &ProgressBar,
        totals: &mut RunTotals,
        waiting: Vec<Awaiting>,
    ) -> Result<(), BenchError> {
        if waiting.is_empty() {
            return Ok(());
        }
        let template =
            crate::review::prompt::Template::load(None, JUDGE_PROMPT, &["answer", "rubric"])
                .map_err(|e| BenchError::Judge(e.to_string()))?;
        let jobs: Vec<CallJob> = waiting
            .iter()
            .map(|w| {
                let test = &self.spec.prompts[w.row.prompt_index as usize];
                let rubric = match &test.method {
                    TestMethod::Judge(j) => j.rubric.as_str(),
                    _ => "",
                };
                let text = template.render(&[
                    ("prompt", test.prompt.as_str()),
                    ("answer", w.answer.as_str()),
                    ("rubric", rubric),
                ]);
                let request = ChatRequest {
                    model: self.judges[w.judge].spec.model.clone(),
                    system: None,
                    messages: vec![Message::user(text)],
                    params: crate::llm::SamplingParams {
                        temperature: Some(0.0),
                        max_tokens: Some(JUDGE_MAX_TOKENS),
                        ..Default::default()
                    },
                };
                self.judges[w.judge].job(request, 0)
            })
            .collect();
        // A judge without its key can still serve cached verdicts.
        let blocked: Vec<Option<&String>> = waiting
            .iter()
            .map(|w| self.judges[w.judge].blocked.as_ref())
            .collect();
        let cached = executor.lookup(jobs.iter().map(|j| j.canonical.key.as_str()))?;
        let mut runnable = Vec::new();
        let mut runnable_index = Vec::new();
        let mut outcomes: Vec<Option<CallOutcome>> = vec![None; waiting.len()];
        for (i, job) in jobs.into_iter().enumerate() {
            match (blocked[i], cached.contains_key(&job.canonical.key)) {
                (Some(reason), false) => {
                    outcomes[i] = Some(CallOutcome::Failed {
                        call_id: None,
                        error: format!(
                            "judge {}: {reason}",
                            self.judges[waiting[i].judge].reference
                        ),
                        attempts: 0,
                    });
                }
                _ => {
                    runnable_index.push(i);
                    runnable.push(job);
                }
            }
        }
        let mut store_error = None;
        let mut finish = |i: usize, outcome: &CallOutcome, totals: &mut RunTotals| {
            let w = &waiting[i];
            let row = self.judged_row(w, outcome);
            totals.add(&row);
            if let Err(e) = lock(store).insert_bench_results(std::slice::from_ref(&row)) {
                store_error.get_or_insert(e);
            }
            progress.inc(1);
            progress.set_message(totals.progress_message());
        };
        for (i, outcome) in outcomes.iter().enumerate() {
            if let Some(outcome) = outcome {
                finish(i, outcome, totals);
            }
        }
        executor
            .run(runnable, |j, outcome| {
                finish(runnable_index[j], &outcome, totals)
            })
            .await?;
        match store_error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// The row of a judged answer: the verdict from the judge's score, or an error when the
    /// judge failed or answered garbage (never a failed test).
    fn judged_row(&self, waiting: &Awaiting, outcome: &CallOutcome) -> BenchResultRow {
        let mut row = waiting.row.clone();
        let test = &self.spec.prompts[row.prompt_index as usize];
        let TestMethod::Judge(judged) = &test.method else {
            return row;
        };
        match outcome {
            CallOutcome::Failed { call_id, error, .. } => {
                row.judge_call_id = *call_id;
                row.passed = None;
                row.detail = Some(format!("the judge call failed: {error}"));
            }
            CallOutcome::Hit(call) | CallOutcome::Fresh(call) => {
                row.judge_call_id = Some(call.id);
                row.judge_cost_usd = Some(call.cost_usd);
                row.cost_usd = Some(row.cost_usd.unwrap_or(0.0) + call.cost_usd);
                if matches!(outcome, CallOutcome::Fresh(_)) {
                    row.paid_usd = Some(row.paid_usd.unwrap_or(0.0) + call.cost_usd);
                }
                match crate::review::parse::parse_judge(&call.text, 1, 5) {
                    Ok((score, why)) => {
                        row.judge_score = Some(score);
                        row.passed = Some(score >= judged.threshold);
                        row.detail = Some(format!(
                            "judge {} scored {score}/5 (passes at {}){}",
                            judged.judge,
                            judged.threshold,
                            why.map(|w| format!(": {w}")).unwrap_or_default()
                        ));
                    }
                    Err(reason) => {
                        row.passed = None;
                        row.detail =
                            Some(format!("the judge's answer could not be used: {reason}"));
                    }
                }
            }
        }
        row
    }

    /// The result row of one evaluation.
    fn result_row(
        &self,
        run_id: i64,
        eval: &PlannedEval,
        outcome: &CallOutcome,
        energy: EnergyMethod,
    ) -> BenchResultRow {
        let model = &self.models[eval.model];
        let test = &self.spec.prompts[eval.prompt];
        let mut row = BenchResultRow {
            run_id,
            model_index: eval.model as u32,
            prompt_index: eval.prompt as u32,
            repeat_index: eval.repeat,
            model_ref: model.reference.clone(),
            provider: model.spec.provider.clone(),
            model_id: model.spec.model.clone(),
            prompt_name: test.name.clone(),
            method: test.method.name().to_owned(),
            call_id: None,
            cache_hit: matches!(outcome, CallOutcome::Hit(_)),
            passed: None,
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
        };
        match outcome {
            CallOutcome::Failed { call_id, error, .. } => {
                row.call_id = *call_id;
                row.detail = Some(error.clone());
            }
            CallOutcome::Hit(call) | CallOutcome::Fresh(call) => {
                fill_from_call(&mut row, call, &model.spec, energy);
                let verdict = test.method.check(&test.expected, &call.text);
                row.passed = Some(verdict.passed);
                row.detail = verdict.detail;
            }
        }
        row
    }
}

fn fill_from_call(
    row: &mut BenchResultRow,
    call: &StoredCall,
    model: &ModelSpec,
    method: EnergyMethod,
) {
    let energy = method.estimate(&model.energy, call.output_tokens, call.latency_ms / 1000.0);
    row.call_id = Some(call.id);
    row.latency_ms = Some(call.latency_ms);
    row.input_tokens = Some(call.input_tokens);
    row.output_tokens = Some(call.output_tokens);
    row.tokens_estimated = call.tokens_estimated;
    row.cost_usd = Some(call.cost_usd);
    row.paid_usd = Some(if row.cache_hit { 0.0 } else { call.cost_usd });
    row.energy_wh = Some(energy.wh);
    row.energy_wh_min = Some(energy.min_wh);
    row.energy_wh_max = Some(energy.max_wh);
    row.energy_method = Some(method.name().to_owned());
}

impl RunTotals {
    fn add(&mut self, row: &BenchResultRow) {
        self.results += 1;
        self.cache_hits += usize::from(row.cache_hit);
        self.cost_usd += row.cost_usd.unwrap_or(0.0);
        self.paid_usd += row.paid_usd.unwrap_or(0.0);
        if row.passed.is_none() {
            self.errors += 1;
            if self.first_error.is_none() {
                self.first_error = Some(format!(
                    "{} on {}: {}",
                    row.model_ref,
                    row.prompt_name,
                    row.detail.as_deref().unwrap_or("error")
                ));
            }
        }
    }

    fn progress_message(&self) -> String {
        format!(
            "{} cached · {} errors · cost ${:.4} · paid ${:.4}",
            self.cache_hits, self.errors, self.cost_usd, self.paid_usd
        )
    }
}
