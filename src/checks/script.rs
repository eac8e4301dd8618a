//! Checks in code: `{method: script, run: "python3 grade.py"}`. The command is split into
//! words and run without a shell, in the benchmark file's directory, with one JSON object on
//! stdin (the answer, the case's values, the template, the model, the expected value), and
//! must print its verdict as JSON on stdout:
//!
//! ```text
//! {"pass": true, "score": 0.9, "reason": "cites both sources"}
//! ```
//!
//! `score` (0 to 1) and `reason` may be left out. The verdict is the whole of stdout when it
//! is one JSON object, else its last non-empty line that is one, so a grader may print
//! progress or debugging lines before it.
//!
//! A script that exits with an error or a signal, runs past its timeout (it is killed) or
//! prints no verdict gives an *error*, naming the script and the last line of its stderr;
//! never a pass. Verdicts are never cached: a fixed grader re-grades stored answers.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use wait_timeout::ChildExt;

use super::check::{Check, CheckOutcome};
use crate::cases::Values;

/// The most of a script's stdout or stderr kept; the rest is read and dropped.
const OUTPUT_LIMIT: usize = 1 << 20;
/// How long the output of a script that ended is waited for (a child it started may hold
/// its pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A script check's command, as written and split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCheck {
    /// The command as written (`python3 grade.py`), for messages.
    pub run: String,
    argv: Vec<String>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
    /// Where it runs: the benchmark file's directory.
    pub dir: PathBuf,
}

impl ScriptCheck {
    /// `run` split into words as a POSIX shell would (quotes and backslashes), but never run
    /// by one: no variables, globs, pipes or `{{name}}`s; data reaches a script on stdin.
    pub fn new(run: &str, timeout: Duration, dir: &Path) -> Result<Self, String> {
        let argv = shell_words::split(run)
            .map_err(|e| format!("`run: {run}` cannot be split into words: {e}"))?;
        if argv.is_empty() {
            return Err(
                "`run` is empty; give the command that grades, such as `python3 grade.py`".into(),
            );
        }
        if run.contains("{{") {
            return Err(format!(
                "`run: {run}` names a value; a script reads the answer and the case's values as \
                 JSON on stdin, never in its command"
            ));
        }
        Ok(Self {
            run: run.to_owned(),
            argv,
            timeout,
            dir: dir.to_owned(),
        })
    }

    /// The program: a relative path with a `/` (`./grade.sh`) is taken from the directory the
    /// script runs in; a bare name is looked up on PATH.
    fn program(&self) -> PathBuf {
        let program = Path::new(&self.argv[0]);
        if program.is_relative() && self.argv[0].contains('/') {
            self.dir.join(program)
        } else {
            program.to_owned()
        }
    }
}

/// What a script reads on stdin.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScriptInput {
    /// The model's answer.
    pub answer: String,
    /// The case's values, by column.
    pub values: Values,
    /// The name of the prompt template the answer came from.
    pub template: String,
    /// The model (`provider:name`).
    pub model: String,
    /// The check's value rendered for the case, or null.
    pub expected: Option<String>,
}

/// One script to run on one answer.
#[derive(Debug, Clone)]
pub struct ScriptJob {
    pub script: ScriptCheck,
    pub input: ScriptInput,
}

impl ScriptJob {
    /// The job of `check` on `input`'s answer, if `check` is a script check; `input.expected`
    /// is set from the check.
    pub fn for_check(check: &Check, mut input: ScriptInput) -> Option<Self> {
        let script = check.script()?.clone();
        input.expected = check.expected.clone();
        Some(Self { script, input })
    }
}

/// Runs `jobs`, at most `concurrency` at once (at least 1), and returns their outcomes in
/// the jobs' order.
pub fn run_scripts(jobs: Vec<ScriptJob>, concurrency: usize) -> Vec<CheckOutcome> {
    let workers = concurrency.max(1).min(jobs.len());
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (jobs, next) = (&jobs, &next);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    if tx.send((i, run_script(job))).is_err() {
                        break;
                    }
                }
            });
        }
    });
    drop(tx);
    let mut outcomes: Vec<Option<CheckOutcome>> = vec![None; jobs.len()];
    for (i, outcome) in rx {
        outcomes[i] = Some(outcome);
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| CheckOutcome::error("the script was not run")))
        .collect()
}

/// Runs one script on one answer and reads its verdict.
pub fn run_script(job: &ScriptJob) -> CheckOutcome {
    let script = &job.script;
    let name = &script.run;
    let input = match serde_json::to_vec(&job.input) {
        Ok(bytes) => bytes,
        Err(e) => {
            return CheckOutcome::error(format!("script `{name}`: cannot write its input: {e}"));
        }
    };
    let mut command = Command::new(script.program());
    command
        .args(&script.argv[1..])
        .current_dir(&script.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a timeout kills what it started too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let where_ = if script.argv[0].contains('/') {
                format!("no such file in {}", script.dir.display())
            } else {
                "not found on PATH".to_owned()
            };
            return CheckOutcome::error(format!(
                "script `{name}`: cannot run `{}`: {where_}",
                script.argv[0]
            ));
        }
        Err(e) => {
            return CheckOutcome::error(format!(
                "script `{name}`: cannot run `{}`: {e}",
                script.argv[0]
            ));
        }
    };
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    if let Some(mut stdin) = child.stdin.take() {
        // On its own thread: a script that does not read a large input must not block us.
        // A script that exits without reading closes the pipe: not an error of ours.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let status = match child.wait_timeout(script.timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            kill(&mut child);
            let last = last_line(&collect(stderr));
            return CheckOutcome::error(format!(
                "script `{name}` ran longer than its timeout of {} and was stopped{}",
                seconds(script.timeout),
                last.map(|l| format!("; stderr: {l}")).unwrap_or_default()
            ));
        }
        Err(e) => {
            kill(&mut child);
            return CheckOutcome::error(format!("script `{name}`: cannot wait for it: {e}"));
        }
    };
    let out = collect(stdout);
    let err = collect(stderr);
    if !status.success() {
        return CheckOutcome::error(format!(
            "script `{name}` {}{}",
            exit_text(status),
            match last_line(&err) {
                Some(line) => format!("; stderr: {line}"),
                None => "; its stderr is empty".to_owned(),
            }
        ));
    }
    verdict(name, &String::from_utf8_lossy(&out), &err)
}

/// Reads the verdict from a script's stdout.
fn verdict(name: &str, stdout: &str, stderr: &[u8]) -> CheckOutcome {
    let stderr_hint = last_line(stderr)
        .map(|l| format!("; stderr: {l}"))
        .unwrap_or_default();
    let object = serde_json::from_str::<Value>(stdout.trim())
        .ok()
        .filter(Value::is_object)
        .or_else(|| {
            stdout
                .lines()
                .rev()
                .filter(|l| !l.trim().is_empty())
                .find_map(|l| {
                    serde_json::from_str::<Value>(l.trim())
                        .ok()
                        .filter(Value::is_object)
                })
        });
    let Some(Value::Object(fields)) = object else {
        let shown = if stdout.trim().is_empty() {
            "nothing".to_owned()
        } else {
            format!("`{}`", super::excerpt(stdout))
        };
        return CheckOutcome::error(format!(
            "script `{name}` printed no JSON verdict ({{\"pass\": true|false}}): it printed \
             {shown}{stderr_hint}"
        ));
    };
    let shown = || super::excerpt(&Value::Object(fields.clone()).to_string());
    let passed = match fields.get("pass") {
        Some(Value::Bool(b)) => *b,
        _ => {
            return CheckOutcome::error(format!(
                "script `{name}` printed `{}`, with no `\"pass\": true|false`",
                shown()
            ));
        }
    };
    let score = match fields.get("score") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64().filter(|s| (0.0..=1.0).contains(s)) {
            Some(s) => Some(s),
            None => {
                return CheckOutcome::error(format!(
                    "script `{name}` printed `{}`: `score` must be a number from 0 to 1",
                    shown()
                ));
            }
        },
    };
    let reason = match fields.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let mut outcome = if passed {
        CheckOutcome {
            reason,
            ..CheckOutcome::pass()
        }
    } else {
        CheckOutcome::fail(reason.unwrap_or_else(|| format!("script `{name}` said it fails")))
    };
    outcome.score = score;
    outcome
}

/// Reads a pipe to its end on a thread, keeping the first [`OUTPUT_LIMIT`] bytes.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
            let _ = tx.send(kept);
        });
    }
    rx
}

/// What a drained pipe held, waiting a little for it: a child the script started may hold
/// the pipe open after the script itself ended.
fn collect(rx: mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    rx.recv_timeout(DRAIN_GRACE).unwrap_or_default()
}

/// Kills a script and what it started (its process group), and reaps it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        // The group's id is the script's pid (process_group(0)); `kill` the command, as
        // track has no unsafe code to call kill(2) itself.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `exited with status 2` or `was killed by signal 9`.
fn exit_text(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    format!("ended: {status}")
}

/// The last non-empty line of `bytes`, as an excerpt.
fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| crate::llm::client::truncate_chars(l, 200))
}

/// `1 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}
