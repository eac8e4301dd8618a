//! The launch recipes of `tests/recipes/` (the guide's "Beyond one machine", docs/src/beyond-one-machine.md), run as their
//! schedulers run them: the Slurm array and its dependent merge on a real single-node Slurm
//! (`.ci/slurm.sh`); the Kubernetes Indexed Job and the GitHub Actions matrix by reading the
//! files and running here each pod's or matrix entry's command with the environment it would
//! get there. Each ends in its merge, and the merged database must answer `track query --by
//! model --format csv` as an unsharded run of the same file does, byte for byte on every column
//! not measured by the clock ([`CLOCKED`]). And the guide quotes every recipe file verbatim.
//!
//! Nothing here rewrites a recipe: the commands run are the files' own, with `track` on PATH.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text, track_bin};

/// The recipes' shard count (`--array=0-2`, `completions: 3`, `shard: [0, 1, 2]`).
const SHARDS: usize = 3;

const MODELS: [&str; 2] = ["openai:gpt-4o", "anthropic:sonnet 3.5"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn recipe(name: &str) -> String {
    let path = repo().join("tests/recipes").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A sandbox with a small benchmark (2 models × 6 prompts, half of the answers right), the
/// recipe files `names` copied in as a user copies them, and `bin/track` for the jobs' PATH.
fn sandbox(names: &[&str]) -> Sandbox {
    let s = Sandbox::new();
    let prompts: Vec<(String, String, String)> = (0..6)
        .map(|i| {
            (
                format!("q{i}"),
                format!("Question {i}?"),
                format!("answer {i}"),
            )
        })
        .collect();
    for (i, (_, prompt, output)) in prompts.iter().enumerate() {
        let reply = if i % 2 == 0 {
            output.clone()
        } else {
            "no idea".into()
        };
        s.mock.add_rule(Rule::reply(prompt, &reply));
    }
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p, o)| (n.as_str(), p.as_str(), o.as_str(), "exact"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&MODELS, &prompts));
    for name in names {
        s.write(name, &recipe(name));
    }
    let bin = s.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(track_bin(), bin.join("track")).unwrap();
    s
}

/// `program` in the sandbox with the environment a scheduler hands a job here: the sandbox's
/// (the mock's URLs, test keys) without `TRACK_DB` (the recipes name their databases), and
/// `bin` (holding `track`) first on `path`.
fn job(s: &Sandbox, program: &str, path: &str) -> Command {
    job_in(s, s.dir.path(), program, path)
}

/// [`job`] in the folder `dir`.
fn job_in(s: &Sandbox, dir: &Path, program: &str, path: &str) -> Command {
    let template = s.track_process();
    let mut cmd = Command::new(program);
    cmd.current_dir(dir);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.env_remove("TRACK_DB");
    cmd.env("PATH", format!("{}:{path}", s.path("bin").display()));
    cmd
}

/// The value the sandbox gives the variable `name` (a secret a recipe reads from its store).
fn sandbox_env(s: &Sandbox, name: &str) -> String {
    s.track_process()
        .get_envs()
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v)
        .unwrap_or_else(|| panic!("the sandbox sets no {name}"))
        .to_string_lossy()
        .into_owned()
}

fn host_path() -> String {
    std::env::var("PATH").unwrap_or_default()
}

fn assert_ran(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// What the recipes' merge left in `dir/results.db`: one run joining shards 0 to N-1 of N
/// (each shard saw its own index and the count), whose summary by model equals an unsharded
/// run's (but for [`CLOCKED`]), the shards having sent every call of the plan once among them.
fn assert_merged(s: &Sandbox, dir: &Path) {
    let results = dir.join("results.db");
    assert_eq!(
        s.mock.request_count(),
        MODELS.len() * 6,
        "calls sent by the shards"
    );
    let shards: Vec<(i64, i64)> = rusqlite::Connection::open_with_flags(
        &results,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("the merge wrote results.db")
    .prepare(
        "SELECT shard_index, shard_count FROM runs WHERE shard_index IS NOT NULL ORDER BY shard_index",
    )
    .unwrap()
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    let n = SHARDS as i64;
    assert_eq!(shards, (0..n).map(|k| (k, n)).collect::<Vec<_>>());
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q", "--db", "unsharded.db"])
        .output()
        .unwrap();
    assert_ran("the unsharded run", &out);
    let query = |db: &Path| {
        let out = s
            .track()
            .args(["query", "--by", "model", "--format", "csv", "--db"])
            .arg(db)
            .output()
            .unwrap();
        assert_ran(&format!("track query on {}", db.display()), &out);
        text(&out.stdout)
    };
    let (merged, unsharded) = (query(&results), query(&s.path("unsharded.db")));
    assert_eq!(merged.lines().count(), 1 + MODELS.len(), "{merged}");
    assert_eq!(
        unclocked(&merged),
        unclocked(&unsharded),
        "merged (left) and unsharded (right)"
    );
}

/// The columns measured by the clock: they differ between any two runs of the same calls,
/// unsharded ones included (two runs of this file against the mock: `total_time_s` 0.0232 and
/// 0.0269 for gpt-4o, and the energy estimated from it), so a merged database and an unsharded
/// run are compared on every other column.
const CLOCKED: [&str; 4] = [
    "total_time_s",
    "energy_wh",
    "energy_wh_min",
    "energy_wh_max",
];

/// `csv` without the [`CLOCKED`] columns, each of which must be there.
fn unclocked(csv: &str) -> String {
    assert!(!csv.contains('"'), "no quoted field to split: {csv}");
    let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
    let drop: Vec<usize> = CLOCKED
        .iter()
        .map(|name| {
            header
                .iter()
                .position(|h| h == name)
                .unwrap_or_else(|| panic!("no column {name} in {csv}"))
        })
        .collect();
    csv.lines()
        .map(|line| {
            let kept: Vec<&str> = line
                .split(',')
                .enumerate()
                .filter(|(i, _)| !drop.contains(i))
                .map(|(_, field)| field)
                .collect();
            kept.join(",") + "\n"
        })
        .collect()
}

// ---------------------------------------------------------------------------------- Slurm

/// The single-node Slurm of `.ci/slurm.sh`: its PATH, LD_LIBRARY_PATH and SLURM_CONF.
struct Slurm {
    env: BTreeMap<String, String>,
    /// Whether this test started it (then it stops it at the end).
    started: bool,
}

impl Slurm {
    /// Brings the cluster up (or finds it up). `None` when Debian's packages cannot be
    /// fetched (the script's exit code 4): the one case the test skips, saying so.
    fn up() -> Option<Self> {
        let script = repo().join(".ci/slurm.sh");
        let was_up = Command::new("bash")
            .arg(&script)
            .arg("status")
            .output()
            .unwrap()
            .status
            .success();
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .output()
            .unwrap();
        if out.status.code() == Some(4) {
            eprintln!(
                "skipped: Debian's Slurm packages cannot be fetched here:\n{}",
                text(&out.stderr)
            );
            return None;
        }
        assert_ran("bash .ci/slurm.sh start", &out);
        let out = Command::new("bash")
            .arg(&script)
            .arg("env")
            .output()
            .unwrap();
        assert_ran("bash .ci/slurm.sh env", &out);
        let env = text(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect::<BTreeMap<_, _>>();
        for var in ["PATH", "LD_LIBRARY_PATH", "SLURM_CONF"] {
            assert!(env.contains_key(var), "slurm.sh env gave no {var}: {env:?}");
        }
        Some(Self {
            env,
            started: !was_up,
        })
    }

    /// `program` run as a job's submitter: the job environment plus Slurm's.
    fn command(&self, s: &Sandbox, program: &str) -> Command {
        let mut cmd = job(s, program, &self.env["PATH"]);
        cmd.env("LD_LIBRARY_PATH", &self.env["LD_LIBRARY_PATH"])
            .env("SLURM_CONF", &self.env["SLURM_CONF"]);
        cmd
    }

    /// `scontrol show job ID`: one (JobState, Reason) per job (per array task).
    fn states(&self, s: &Sandbox, id: &str) -> Vec<(String, String)> {
        let out = self
            .command(s, "scontrol")
            .args(["show", "job", id])
            .output()
            .unwrap();
        assert_ran(&format!("scontrol show job {id}"), &out);
        let field = |record: &str, name: &str| {
            record
                .split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or_default()
                .to_owned()
        };
        text(&out.stdout)
            .split("\n\n")
            .filter(|r| r.contains("JobState="))
            .map(|r| (field(r, "JobState="), field(r, "Reason=")))
            .collect()
    }

    /// Waits until job `merge` ends; fails the test, with the jobs' logs, unless it and every
    /// task of `shards` completed.
    fn wait(&self, s: &Sandbox, shards: &str, merge: &str) {
        let started = Instant::now();
        let logs = || {
            let mut all = String::new();
            for k in 0..SHARDS {
                let log = s.path(&format!("shard-{k}.log"));
                all += &format!(
                    "--- shard-{k}.log\n{}\n",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            all += &format!(
                "--- merge.log\n{}\n--- shards: {:?}",
                std::fs::read_to_string(s.path("merge.log")).unwrap_or_default(),
                self.states(s, shards)
            );
            all
        };
        loop {
            let states = self.states(s, merge);
            let (state, reason) = states.first().cloned().unwrap_or_default();
            match state.as_str() {
                "COMPLETED" => break,
                "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" => {}
                _ => panic!("the merge job ended {state} ({reason})\n{}", logs()),
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "the merge job is still {state} ({reason}) after 300 s\n{}",
                logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        let shard_states = self.states(s, shards);
        assert_eq!(shard_states.len(), SHARDS, "{shard_states:?}");
        assert!(
            shard_states.iter().all(|(state, _)| state == "COMPLETED"),
            "{shard_states:?}\n{}",
            logs()
        );
        eprintln!(
            "slurm: shards and merge completed in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        if self.started {
            let _ = Command::new("bash")
                .arg(repo().join(".ci/slurm.sh"))
                .arg("stop")
                .output();
        }
    }
}

#[test]
#[ignore = "needs a single-node Slurm: bash .ci/slurm.sh install (the README's test command runs it)"]
fn the_slurm_array_and_its_dependent_merge_equal_an_unsharded_run() {
    let Some(slurm) = Slurm::up() else {
        return;
    };
    let s = sandbox(&[
        "slurm-array.sbatch",
        "slurm-merge.sbatch",
        "slurm-submit.sh",
    ]);
    let out = slurm
        .command(&s, "sh")
        .arg("slurm-submit.sh")
        .output()
        .unwrap();
    assert_ran("sh slurm-submit.sh", &out);
    let said = text(&out.stdout);
    let ids: Vec<&str> = said
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .collect();
    let [shards, merge] = ids[..] else {
        panic!("slurm-submit.sh said {said:?}, not two job ids");
    };
    slurm.wait(&s, shards, merge);
    assert_merged(&s, s.dir.path());
}

// ----------------------------------------------------------------------------- Kubernetes

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sJob {
    kind: String,
    spec: K8sJobSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sJobSpec {
    completion_mode: Option<String>,
    completions: Option<usize>,
    parallelism: Option<usize>,
    template: K8sPodTemplate,
}

#[derive(Deserialize)]
struct K8sPodTemplate {
    spec: K8sPodSpec,
}

#[derive(Deserialize)]
struct K8sPodSpec {
    containers: Vec<K8sContainer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sContainer {
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    working_dir: Option<String>,
    #[serde(default)]
    env: Vec<K8sEnv>,
    #[serde(default)]
    volume_mounts: Vec<K8sMount>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sEnv {
    name: String,
    value: Option<String>,
    value_from: Option<K8sValueFrom>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sValueFrom {
    secret_key_ref: K8sKeyRef,
}

#[derive(Deserialize)]
struct K8sKeyRef {
    key: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct K8sMount {
    mount_path: String,
}

impl K8sJob {
    fn read(name: &str) -> Self {
        let job: Self =
            serde_saphyr::from_str(&recipe(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(job.kind, "Job", "{name}");
        assert_eq!(job.spec.template.spec.containers.len(), 1, "{name}");
        job
    }

    fn container(&self) -> &K8sContainer {
        &self.spec.template.spec.containers[0]
    }

    /// The pod's process, run here: its working directory (a shared volume) is the sandbox,
    /// its environment the manifest's (a secret's value from the sandbox's variable of the
    /// secret's key) plus `extra`.
    fn pod(&self, s: &Sandbox, extra: &[(&str, String)]) -> Command {
        let c = self.container();
        let dir = c.working_dir.as_deref().expect("a workingDir");
        assert!(
            c.volume_mounts.iter().any(|m| m.mount_path == dir),
            "the workingDir {dir} is a mounted volume"
        );
        let mut cmd = job(s, &c.command[0], &host_path());
        cmd.args(&c.command[1..]).args(&c.args);
        for var in &c.env {
            let value = match (&var.value, &var.value_from) {
                (Some(value), None) => value.clone(),
                (None, Some(from)) => sandbox_env(s, &from.secret_key_ref.key),
                _ => panic!("env {}: a value or a secretKeyRef", var.name),
            };
            cmd.env(&var.name, value);
        }
        for (name, value) in extra {
            cmd.env(name, value);
        }
        cmd
    }
}

#[test]
fn the_kubernetes_indexed_job_and_its_merge_equal_an_unsharded_run() {
    let s = sandbox(&[]);
    let shards = K8sJob::read("k8s-indexed-job.yaml");
    assert_eq!(shards.spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(shards.spec.completions, Some(SHARDS));
    assert_eq!(shards.spec.parallelism, Some(SHARDS));
    let completions = shards
        .container()
        .env
        .iter()
        .find(|e| e.name == "JOB_COMPLETIONS")
        .and_then(|e| e.value.clone());
    assert_eq!(
        completions,
        Some(SHARDS.to_string()),
        "JOB_COMPLETIONS equals completions"
    );
    // The pods run at once (parallelism = completions), each with its index.
    let pods: Vec<_> = (0..SHARDS)
        .map(|k| {
            shards
                .pod(&s, &[("JOB_COMPLETION_INDEX", k.to_string())])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (k, pod) in pods.into_iter().enumerate() {
        assert_ran(&format!("pod {k}"), &pod.wait_with_output().unwrap());
    }
    let merge = K8sJob::read("k8s-merge-job.yaml");
    assert_eq!(merge.spec.completion_mode, None);
    assert_ran("the merge pod", &merge.pod(&s, &[]).output().unwrap());
    assert_merged(&s, s.dir.path());
}

// ------------------------------------------------------------------------- GitHub Actions

#[derive(Deserialize)]
struct Workflow {
    #[serde(default)]
    env: BTreeMap<String, String>,
    jobs: BTreeMap<String, GhJob>,
}

#[derive(Deserialize)]
struct GhJob {
    needs: Option<String>,
    strategy: Option<GhStrategy>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    steps: Vec<GhStep>,
}

#[derive(Deserialize)]
struct GhStrategy {
    matrix: BTreeMap<String, Vec<serde_json::Value>>,
}

#[derive(Deserialize)]
struct GhStep {
    id: Option<String>,
    uses: Option<String>,
    run: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    with: BTreeMap<String, serde_json::Value>,
}

/// Where a job of the workflow runs: its runner's own workspace, and the artifact store that
/// all the runs of the workflow share.
struct Runner<'a> {
    s: &'a Sandbox,
    workspace: PathBuf,
    artifacts: PathBuf,
}

impl Runner<'_> {
    /// One job as a runner would run it, here: `${{ … }}` expanded from the matrix entry, the
    /// strategy and the secrets (the sandbox's variables of those names); the `run` steps in
    /// order under GitHub's bash; checkout copies the repository's files (the benchmark and
    /// its config) into the workspace; upload-artifact and download-artifact move files
    /// through the shared store, as GitHub's do, so a shard's database reaches the merge
    /// alone, without anything else its run left beside it. The step `id: install` is this
    /// test's `bin/track`.
    fn run(&self, wf: &Workflow, job: &GhJob, entry: Option<(&str, &str, usize)>) {
        let s = self.s;
        std::fs::create_dir_all(&self.workspace).unwrap();
        let expand = |value: &str| {
            let mut out = String::new();
            let mut rest = value;
            while let Some(start) = rest.find("${{") {
                out += &rest[..start];
                let end = rest[start..].find("}}").expect("a closed ${{ }}") + start;
                let expr = rest[start + 3..end].trim();
                out += &match (expr, entry) {
                    ("strategy.job-total", _) => SHARDS.to_string(),
                    ("strategy.job-index", Some((_, _, i))) => i.to_string(),
                    (e, Some((key, value, _))) if e.strip_prefix("matrix.") == Some(key) => {
                        value.to_owned()
                    }
                    (e, _) if e.starts_with("secrets.") => sandbox_env(s, &e["secrets.".len()..]),
                    (e, _) => panic!("the test does not know the expression {e}"),
                };
                rest = &rest[end + 2..];
            }
            out + rest
        };
        let with = |step: &GhStep, key: &str| -> Option<String> {
            step.with.get(key).map(|v| match v {
                serde_json::Value::String(text) => expand(text),
                other => other.to_string(),
            })
        };
        let mut ran = 0;
        for step in &job.steps {
            if let Some(action) = &step.uses {
                let action = action.split('@').next().unwrap_or_default();
                match action {
                    "actions/checkout" => {
                        for name in ["bench.yaml", "config.yaml"] {
                            std::fs::copy(s.path(name), self.workspace.join(name)).unwrap();
                        }
                    }
                    "actions/upload-artifact" => {
                        let name = with(step, "name").expect("an artifact name");
                        let path = with(step, "path").expect("an artifact path");
                        let into = self.artifacts.join(&name);
                        std::fs::create_dir_all(&into).unwrap();
                        std::fs::copy(self.workspace.join(&path), into.join(&path))
                            .unwrap_or_else(|e| panic!("upload-artifact {name}: {path}: {e}"));
                    }
                    "actions/download-artifact" => {
                        let pattern = with(step, "pattern").expect("a pattern");
                        let prefix = pattern.strip_suffix('*').expect("a pattern `prefix*`");
                        assert_eq!(with(step, "merge-multiple").as_deref(), Some("true"));
                        let mut found = 0;
                        for artifact in std::fs::read_dir(&self.artifacts).unwrap() {
                            let artifact = artifact.unwrap();
                            if !artifact.file_name().to_string_lossy().starts_with(prefix) {
                                continue;
                            }
                            for file in std::fs::read_dir(artifact.path()).unwrap() {
                                let file = file.unwrap();
                                std::fs::copy(file.path(), self.workspace.join(file.file_name()))
                                    .unwrap();
                                found += 1;
                            }
                        }
                        assert!(found > 0, "no artifact matches {pattern}");
                    }
                    other => panic!("the test does not know the action {other}"),
                }
                continue;
            }
            let script = step.run.as_deref().expect("a step runs or uses");
            if step.id.as_deref() == Some("install") {
                continue;
            }
            let mut cmd = job_in(s, &self.workspace, "bash", &host_path());
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
                .arg(expand(script));
            for (k, v) in wf.env.iter().chain(&job.env).chain(&step.env) {
                cmd.env(k, expand(v));
            }
            assert_ran(
                &format!("step `{script}` of {entry:?}"),
                &cmd.output().unwrap(),
            );
            ran += 1;
        }
        assert_eq!(ran, 1, "one track command per job");
    }
}

#[test]
fn the_github_actions_matrix_and_its_merge_equal_an_unsharded_run() {
    let s = sandbox(&[]);
    let wf: Workflow = serde_saphyr::from_str(&recipe("github-actions-matrix.yml"))
        .unwrap_or_else(|e| panic!("github-actions-matrix.yml: {e}"));
    let shard = &wf.jobs["shard"];
    let matrix = &shard.strategy.as_ref().expect("a matrix").matrix;
    let (key, values) = matrix.iter().next().expect("one matrix variable");
    assert_eq!(matrix.len(), 1);
    let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    assert_eq!(values, ["0", "1", "2"]);
    let runner = |name: &str| Runner {
        s: &s,
        workspace: s.path(&format!("runners/{name}")),
        artifacts: s.path("artifacts"),
    };
    // The matrix entries run at once, each on its own runner.
    std::thread::scope(|scope| {
        for (i, value) in values.iter().enumerate() {
            let (runner, wf) = (runner(&format!("shard-{i}")), &wf);
            scope.spawn(move || runner.run(wf, shard, Some((key.as_str(), value.as_str(), i))));
        }
    });
    let merge = &wf.jobs["merge"];
    assert_eq!(merge.needs.as_deref(), Some("shard"));
    let merger = runner("merge");
    merger.run(&wf, merge, None);
    assert_merged(&s, &merger.workspace);
}

// ---------------------------------------------------------------------------------- guide

#[test]
fn the_guide_quotes_every_recipe_verbatim() {
    let readme = std::fs::read_to_string(repo().join("docs/src/beyond-one-machine.md")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/recipes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 6, "{names:?}");
    let mut missing = Vec::new();
    for name in &names {
        let lang = match Path::new(name).extension().and_then(|e| e.to_str()) {
            Some("sbatch" | "sh") => "sh",
            Some("yaml" | "yml") => "yaml",
            other => panic!("{name}: no language for {other:?}"),
        };
        if !readme.contains(&format!("```{lang}\n{}```\n", recipe(name))) {
            missing.push(name.as_str());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/beyond-one-machine.md does not quote these files of tests/recipes/ verbatim (a ```sh or ```yaml block with the file's exact text): {missing:?}"
    );
}
