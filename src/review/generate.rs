//! Datasheet generation: one model writes a datasheet for each sensor, each answer saved as a
//! file under `results/` and recorded in the store. It must not review or score anything: the
//! review run in `review/mod.rs` does that.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::sensors::{Sensor, safe_component};
use super::{CallSettings, Caller, Paths, ReviewError, Totals, finish_run};
use crate::config::Catalog;
use crate::llm::executor::lock;
use crate::llm::{CallJob, CallOutcome, Executor};
use crate::prompt::Template;
use crate::store::{NewGenerated, Store, StoredCall};

/// What to generate: a datasheet of each sensor by one model.
#[derive(Debug, Clone)]
pub struct GeneratePlan {
    /// The model that writes (`provider:name`).
    pub model: String,
    /// The sensors to write a datasheet for.
    pub sensors: Vec<Sensor>,
    /// Where the sensor list is and the datasheets go.
    pub paths: Paths,
    /// The generation prompt (`{brand}`, `{sensor}`).
    pub template: Template,
}

/// Writes a datasheet for each sensor with the plan's model, saved under `paths.results` and
/// stored. A cached answer reuses its file instead of writing a copy.
pub async fn generate(
    store: &Arc<Mutex<Store>>,
    executor: &Executor,
    catalog: &Catalog,
    plan: &GeneratePlan,
    settings: &CallSettings,
) -> Result<Totals, ReviewError> {
    let GeneratePlan {
        model: model_ref,
        sensors,
        paths,
        template,
    } = plan;
    let caller = Caller::new(catalog, model_ref)?;
    let jobs: Vec<CallJob> = sensors
        .iter()
        .map(|s| {
            caller.job(
                template.render(&[("brand", &s.brand), ("sensor", &s.sensor)]),
                &settings.params,
            )
        })
        .collect();
    caller.check_key(executor, &jobs)?;
    let options = serde_json::json!({"model": caller.reference, "prompt_sha256": template.sha256})
        .to_string();
    let run_id = lock(store).create_run(
        "generate",
        Some(&paths.sensors.display().to_string()),
        None,
        &options,
    )?;
    let mut totals = Totals {
        run_id,
        ..Totals::default()
    };
    let progress = crate::output::progress_bar(jobs.len(), settings.show_progress);
    let (provider, model) = caller.names();
    let mut failure = None;
    executor
        .run(jobs, |index, outcome| {
            progress.inc(1);
            totals.add_call(&outcome);
            let sensor = &sensors[index];
            let call = match &outcome {
                CallOutcome::Failed { error, .. } => {
                    totals
                        .errors
                        .push(format!("{} {}: {error}", sensor.brand, sensor.sensor));
                    return;
                }
                CallOutcome::Hit(call) | CallOutcome::Fresh(call) => call,
            };
            let result = save_generated(
                store,
                run_id,
                &caller,
                (&provider, &model),
                sensor,
                call,
                &outcome,
                paths,
            );
            match result {
                Ok(path) => {
                    totals.done += 1;
                    totals.files.insert(path);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        })
        .await?;
    finish_run(store, &progress, failure, totals)
}

/// Writes (or, for a cached answer already on disk, reuses) the file of a generated datasheet
/// and records it.
#[allow(clippy::too_many_arguments)]
fn save_generated(
    store: &Mutex<Store>,
    run_id: i64,
    caller: &Caller,
    (provider, model): (&str, &str),
    sensor: &Sensor,
    call: &StoredCall,
    outcome: &CallOutcome,
    paths: &Paths,
) -> Result<PathBuf, ReviewError> {
    let store = lock(store);
    let existing = store
        .generated_path_for_call(call.id)?
        .map(PathBuf::from)
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|text| text == call.text));
    let path = match existing {
        Some(path) => path,
        None => {
            let dir = paths
                .results
                .join(safe_component(&sensor.brand))
                .join(safe_component(&sensor.sensor));
            std::fs::create_dir_all(&dir).map_err(|source| ReviewError::Write {
                path: dir.clone(),
                source,
            })?;
            let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S").to_string();
            let base = format!(
                "{}_{}_{stamp}",
                safe_component(provider),
                safe_component(model)
            );
            let mut path = dir.join(format!("{base}.md"));
            let mut n = 2;
            while path.exists() {
                path = dir.join(format!("{base}-{n}.md"));
                n += 1;
            }
            std::fs::write(&path, &call.text).map_err(|source| ReviewError::Write {
                path: path.clone(),
                source,
            })?;
            path
        }
    };
    let hit = matches!(outcome, CallOutcome::Hit(_));
    store.insert_generated(&NewGenerated {
        run_id: Some(run_id),
        brand: &sensor.brand,
        sensor: &sensor.sensor,
        generator_provider: provider,
        generator_model: model,
        model_ref: Some(&caller.reference),
        call_id: Some(call.id),
        cache_hit: hit,
        cost_usd: Some(call.cost_usd),
        paid_usd: Some(if hit { 0.0 } else { call.cost_usd }),
        content: &call.text,
        path: &path.display().to_string(),
    })?;
    Ok(path)
}
