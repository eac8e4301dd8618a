//! Benchmarks: every prompt against every model (model-major), each answer tested.
//!
//! The spec becomes a plan of calls (with cache keys); the executor serves them; each outcome
//! becomes a result row pointing at its call. No HTTP and no SQL here.

pub mod methods;
pub mod spec;

use std::sync::{Arc, Mutex};

use indicatif::ProgressBar;

pub use spec::{BenchSpec, PromptTest, SpecError};

use crate::config::{Catalog, ConfigError, ModelSpec};
use crate::energy::EnergyMethod;
use crate::llm::executor::lock;
use crate::llm::{
    CacheMode, CallJob, CallOutcome, CanonicalRequest, ChatRequest, Endpoint, Executor, Message,
    anthropic::DEFAULT_MAX_TOKENS, estimate_tokens,
};
use crate::store::{BenchResultRow, RunStatus, Store, StoreError, StoredCall};

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

/// A model of the plan with its endpoint.
#[derive(Debug, Clone)]
pub struct PlannedModel {
    pub reference: String,
    pub spec: ModelSpec,
    pub endpoint: Arc<Endpoint>,
    /// Why this model cannot be called (no key); cached answers are still served.
    pub blocked: Option<String>,
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
    pub models: Vec<PlannedModel>,
    pub evals: Vec<PlannedEval>,
}

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
        let references: Vec<(String, Option<u64>)> = match &options.models {
            Some(list) => list.iter().map(|m| (m.trim().to_owned(), None)).collect(),
            None => spec.models.clone(),
        };
        let mut models = Vec::new();
        for (reference, line) in references {
            let model = catalog
                .resolve(&reference)
                .map_err(|source| BenchError::Model {
                    path: spec.path.display().to_string(),
                    line,
                    source,
                })?;
            let provider = catalog.provider(model);
            let endpoint = provider.endpoint();
            let blocked = (provider.key_required && endpoint.api_key.is_none()).then(|| {
                format!(
                    "no API key for {}: set {} in the environment or in .env",
                    provider.name,
                    provider.key_vars_text()
                )
            });
            models.push(PlannedModel {
                reference,
                spec: model.clone(),
                endpoint: Arc::new(endpoint),
                blocked,
            });
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
                    let canonical = CanonicalRequest::new(
                        &model.endpoint.provider,
                        &model.endpoint.base_url,
                        &request,
                        repeat,
                    );
                    evals.push(PlannedEval {
                        model: m,
                        prompt: p,
                        repeat,
                        job: CallJob {
                            endpoint: model.endpoint.clone(),
                            request: request.clone(),
                            canonical,
                            input_price: model.spec.input_price,
                            output_price: model.spec.output_price,
                        },
                    });
                }
            }
        }
        Ok(Self {
            spec,
            models,
            evals,
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
                .unwrap_or(ASSUMED_MAX_OUTPUT_TOKENS) as f64;
            line.max_cost_usd +=
                (input as f64 * eval.job.input_price + output * eval.job.output_price) / 1e6;
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
        let cached = executor.lookup(self.evals.iter().map(|e| e.job.canonical.key.as_str()))?;
        let mut rows = Vec::new();
        for eval in self.evals.iter() {
            if let Some(call) = cached.get(&eval.job.canonical.key) {
                let row = self.result_row(
                    totals.run_id,
                    eval,
                    &CallOutcome::Hit(call.clone()),
                    options.energy_method,
                );
                totals.add(&row);
                rows.push(row);
            }
        }
        lock(store).insert_bench_results(&rows)?;
        progress.inc(rows.len() as u64);
        progress.set_message(totals.progress_message());

        for (m, model) in self.models.iter().enumerate() {
            let misses: Vec<&PlannedEval> = self
                .evals
                .iter()
                .filter(|e| e.model == m && !cached.contains_key(&e.job.canonical.key))
                .collect();
            if misses.is_empty() {
                continue;
            }
            if let Some(reason) = &model.blocked {
                let offline = executor.mode() == CacheMode::Offline;
                let rows: Vec<BenchResultRow> = misses
                    .iter()
                    .map(|eval| {
                        let error = if offline {
                            "not in the cache, and --offline forbids calls".to_owned()
                        } else {
                            reason.clone()
                        };
                        let outcome = CallOutcome::Failed {
                            call_id: None,
                            error,
                            attempts: 0,
                        };
                        self.result_row(totals.run_id, eval, &outcome, options.energy_method)
                    })
                    .collect();
                rows.iter().for_each(|r| totals.add(r));
                lock(store).insert_bench_results(&rows)?;
                progress.inc(rows.len() as u64);
                continue;
            }
            let jobs: Vec<CallJob> = misses.iter().map(|e| e.job.clone()).collect();
            let mut store_error = None;
            executor
                .execute(jobs, |index, outcome| {
                    let row = self.result_row(
                        totals.run_id,
                        misses[index],
                        &outcome,
                        options.energy_method,
                    );
                    totals.add(&row);
                    if let Err(e) = lock(store).insert_bench_results(std::slice::from_ref(&row)) {
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
        Ok(())
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
