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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::check::{Check, CheckOutcome};
use crate::cases::Values;
use crate::process::{Captured, Program, stderr_hint};

/// A script check's command, as written and split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCheck {
    /// The command as written (`python3 grade.py`), for messages.
    pub run: String,
    program: Program,
    /// How long it may run before it is killed.
    pub timeout: Duration,
    /// Where it runs: the benchmark file's directory.
    pub dir: PathBuf,
}

impl ScriptCheck {
    /// `run` split into words as a POSIX shell would (quotes and backslashes), but never run
    /// by one: no variables, globs, pipes or `{{name}}`s; data reaches a script on stdin.
    pub(crate) fn new(run: &str, timeout: Duration, dir: &Path) -> Result<Self, String> {
        let program = Program::new(
            run,
            dir,
            "the command that grades, such as `python3 grade.py`",
        )?;
        if run.contains("{{") {
            return Err(format!(
                "`run: {run}` names a value; a script reads the answer and the case's values as \
                 JSON on stdin, never in its command"
            ));
        }
        Ok(Self {
            run: run.to_owned(),
            program,
            timeout,
            dir: dir.to_owned(),
        })
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
    pub(crate) fn for_check(check: &Check, mut input: ScriptInput) -> Option<Self> {
        let script = check.script()?.clone();
        input.expected = check.expected.clone();
        Some(Self { script, input })
    }
}

/// Runs `jobs`, at most `concurrency` at once (at least 1), and returns their outcomes in
/// the jobs' order.
pub(crate) fn run_scripts(
    jobs: Vec<ScriptJob>,
    concurrency: usize,
    stop: &AtomicBool,
) -> Vec<Option<CheckOutcome>> {
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
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Some(outcome) = run_script(job, stop) else {
                        break;
                    };
                    if tx.send((i, outcome)).is_err() {
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
}

/// Runs one script on one answer and reads its verdict; `None` when `stop` was set before it
/// ended (it is killed then: a signal stops the run, and its verdict is not known).
pub(crate) fn run_script(job: &ScriptJob, stop: &AtomicBool) -> Option<CheckOutcome> {
    let error = |message: String| Some(CheckOutcome::error(message));
    let script = &job.script;
    let name = &script.run;
    let input = match serde_json::to_vec(&job.input) {
        Ok(bytes) => bytes,
        Err(e) => return error(format!("script `{name}`: cannot write its input: {e}")),
    };
    let ended = match script.program.run(input, script.timeout, stop) {
        Err(message) => return error(format!("script `{name}`: {message}")),
        Ok(None) => return None,
        Ok(Some(ended)) => ended,
    };
    let (out, err) = match ended.output(&format!("script `{name}`"), script.timeout) {
        Ok(output) => output,
        Err(message) => return error(message),
    };
    Some(verdict(name, &out, &err))
}

/// Reads the verdict from the end of a script's stdout (its last lines, whatever came
/// before them).
fn verdict(name: &str, stdout: &Captured, stderr: &Captured) -> CheckOutcome {
    let stderr_hint = stderr_hint(stderr);
    let Some(fields) = crate::process::printed_object(&stdout.end_text()) else {
        return CheckOutcome::error(format!(
            "script `{name}` printed no JSON verdict ({{\"pass\": true|false}}): it {}{stderr_hint}",
            crate::process::printed(stdout, super::excerpt)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A script's verdict, run with no signal.
    fn ran(job: &ScriptJob) -> CheckOutcome {
        run_script(job, &AtomicBool::new(false)).expect("not stopped")
    }
    use crate::checks::CheckStatus;
    use serde_json::json;

    /// A grader written into `dir`, and a job that runs it with `python3` on `answer`.
    fn job(dir: &Path, file: &str, code: &str, answer: &str, timeout: f64) -> ScriptJob {
        std::fs::write(dir.join(file), code).unwrap();
        ScriptJob {
            script: ScriptCheck::new(
                &format!("python3 {file}"),
                Duration::from_secs_f64(timeout),
                dir,
            )
            .unwrap(),
            input: ScriptInput {
                answer: answer.to_owned(),
                values: json!({"answer": "Paris", "n": 2})
                    .as_object()
                    .unwrap()
                    .clone(),
                template: "terse".to_owned(),
                model: "openai:gpt-4o-mini".to_owned(),
                expected: Some("Paris".to_owned()),
            },
        }
    }

    const GRADER: &str = r#"
import json, sys
data = json.load(sys.stdin)
print("debug: grading", data["template"], data["model"])
ok = data["answer"].strip() == data["expected"] and data["values"]["n"] == 2
print(json.dumps({"pass": ok, "score": 1.0 if ok else 0.25,
                  "reason": "matches" if ok else "wanted " + data["expected"]}))
"#;

    #[test]
    fn a_script_reads_json_on_stdin_and_its_verdict_is_its_last_json_line() {
        let dir = tempfile::tempdir().unwrap();
        let pass = ran(&job(dir.path(), "grade.py", GRADER, " Paris ", 10.0));
        assert_eq!(
            pass,
            CheckOutcome {
                status: CheckStatus::Passed,
                score: Some(1.0),
                reason: Some("matches".into()),
            }
        );
        let fail = ran(&job(dir.path(), "grade.py", GRADER, "Lyon", 10.0));
        assert_eq!(fail.status, CheckStatus::Failed);
        assert_eq!(fail.score, Some(0.25));
        assert_eq!(fail.reason.as_deref(), Some("wanted Paris"));
        // A multi-line JSON verdict is read whole; a failure without a reason names the script.
        let pretty = "import json\nprint(json.dumps({'pass': False}, indent=2))\n";
        let fail = ran(&job(dir.path(), "pretty.py", pretty, "x", 10.0));
        assert_eq!(fail.status, CheckStatus::Failed);
        assert_eq!(
            fail.reason.as_deref(),
            Some("script `python3 pretty.py` said it fails")
        );
    }

    #[test]
    fn a_verdict_after_megabytes_is_read_and_a_missing_one_quotes_the_last_line() {
        let debug: String = (0..100_000).map(|i| format!("debug {i:06}\n")).collect();
        let err = Captured::of(format!("{debug}the last of stderr\n").as_bytes());
        let out =
            Captured::of(format!("{debug}{{\"pass\": true, \"reason\": \"ok\"}}\n").as_bytes());
        assert!(out.dropped() > 0);
        let passed = verdict("python3 g.py", &out, &err);
        assert_eq!(passed.reason.as_deref(), Some("ok"));
        assert!(passed.passed());
        let none = Captured::of(format!("{debug}done grading\n").as_bytes());
        let bytes = crate::output::counted(none.total(), "byte");
        assert_eq!(
            verdict("python3 g.py", &none, &err).reason.unwrap(),
            format!(
                "script `python3 g.py` printed no JSON verdict ({{\"pass\": true|false}}): it \
                 printed {bytes}, the last line `done grading`; stderr: the last of stderr"
            )
        );
        assert_eq!(bytes, "1,300,013 bytes");
    }

    #[test]
    fn a_crash_garbage_or_a_bad_verdict_is_an_error_naming_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "crash.py",
                "import sys\nprint('{\"pass\": true}')\nraise ValueError('no answer key')\n",
                "script `python3 crash.py` exited with status 1; stderr: ValueError: no answer key",
            ),
            (
                "exit3.py",
                "import sys\nsys.exit(3)\n",
                "script `python3 exit3.py` exited with status 3; its stderr is empty",
            ),
            (
                "selfkill.py",
                "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                "script `python3 selfkill.py` was killed by signal 9; its stderr is empty",
            ),
            (
                "garbage.py",
                "print('PASS!')\n",
                "script `python3 garbage.py` printed no JSON verdict ({\"pass\": true|false}): it printed `PASS!`",
            ),
            (
                "silent.py",
                "import sys\nsys.stderr.write('thinking\\n')\n",
                "script `python3 silent.py` printed no JSON verdict ({\"pass\": true|false}): it printed nothing; stderr: thinking",
            ),
            (
                "nopass.py",
                "print('{\"ok\": true}')\n",
                "script `python3 nopass.py` printed `{\"ok\":true}`, with no `\"pass\": true|false`",
            ),
            (
                "badscore.py",
                "print('{\"pass\": true, \"score\": 7}')\n",
                "script `python3 badscore.py` printed `{\"pass\":true,\"score\":7}`: `score` must be a number from 0 to 1",
            ),
            (
                "strpass.py",
                "print('{\"pass\": \"yes\"}')\n",
                "with no `\"pass\": true|false`",
            ),
        ];
        for (file, code, want) in cases {
            let outcome = ran(&job(dir.path(), file, code, "x", 10.0));
            assert_eq!(outcome.status, CheckStatus::Error, "{file}: {outcome:?}");
            let reason = outcome.reason.unwrap();
            assert!(reason.contains(want), "{file}: {reason}");
        }
    }

    #[test]
    fn a_hang_is_killed_at_its_timeout_and_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let code = "import sys, time\nsys.stderr.write('waiting\\n'); sys.stderr.flush()\ntime.sleep(60)\n";
        let started = std::time::Instant::now();
        let outcome = ran(&job(dir.path(), "hang.py", code, "x", 1.0));
        assert_eq!(outcome.status, CheckStatus::Error);
        assert_eq!(
            outcome.reason.as_deref(),
            Some(
                "script `python3 hang.py` ran longer than its timeout of 1 s and was stopped; \
                 stderr: waiting"
            )
        );
        // Killed, not waited for (a loose bound: the script would sleep 60 s).
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_stop_kills_the_running_scripts_and_starts_no_more_leaving_their_verdicts_unknown() {
        let dir = tempfile::tempdir().unwrap();
        // Each script leaves a file named by its pid, then sleeps.
        let code = "import os, sys, time\nsys.stdin.read()\nopen(f'started-{os.getpid()}', 'w').close()\ntime.sleep(60)\n";
        let jobs: Vec<ScriptJob> = (0..6)
            .map(|_| job(dir.path(), "hang.py", code, "x", 120.0))
            .collect();
        let begun = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    name.to_string_lossy().starts_with("started-")
                })
                .count()
        };
        let stop = AtomicBool::new(false);
        let started = std::time::Instant::now();
        let outcomes = std::thread::scope(|scope| {
            let running = scope.spawn(|| run_scripts(jobs, 2, &stop));
            // Both workers have a script running: then the signal.
            while begun() < 2 {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "scripts did not start"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::SeqCst);
            running.join().unwrap()
        });
        // Killed at once (they would sleep 60 s, their timeout is 120 s), no other started,
        // and no verdict made up for any of them.
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(outcomes.len(), 6);
        assert!(outcomes.iter().all(Option::is_none), "{outcomes:?}");
        assert_eq!(begun(), 2);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_hang_in_a_child_of_the_script_is_killed_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = job(dir.path(), "grade.py", GRADER, "x", 10.0);
        // The shell starts `sleep`, which holds stdout open, and says its pid.
        j.script = ScriptCheck::new(
            "sh -c 'sleep 30 & echo $! > sleeper.pid; wait'",
            Duration::from_secs(1),
            dir.path(),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let outcome = ran(&j);
        assert_eq!(outcome.status, CheckStatus::Error);
        let reason = outcome.reason.unwrap();
        assert!(
            reason.contains("ran longer than its timeout of 1 s and was stopped"),
            "{reason}"
        );
        assert!(started.elapsed() < Duration::from_secs(20));
        // The sleeper is gone (or a zombie waiting for its reaper) within a few seconds.
        let pid = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        let dead = || match std::fs::read_to_string(&stat) {
            Err(_) => true,
            Ok(s) => s
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z')),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !dead() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(dead(), "the script's child {} still runs", pid.trim());
    }

    #[test]
    fn a_missing_program_or_script_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut missing = job(dir.path(), "grade.py", GRADER, "x", 10.0);
        missing.script =
            ScriptCheck::new("python4 grade.py", Duration::from_secs(5), dir.path()).unwrap();
        let outcome = ran(&missing);
        assert_eq!(outcome.status, CheckStatus::Error);
        assert_eq!(
            outcome.reason.as_deref(),
            Some("script `python4 grade.py`: cannot run `python4`: not found on PATH")
        );
        missing.script =
            ScriptCheck::new("./nowhere.sh", Duration::from_secs(5), dir.path()).unwrap();
        let reason = ran(&missing).reason.unwrap();
        assert!(
            reason.starts_with("script `./nowhere.sh`: cannot run `./nowhere.sh`: no such file in"),
            "{reason}"
        );
        // A grader file that is not there: python's own error, as the stderr's last line.
        missing.script =
            ScriptCheck::new("python3 absent.py", Duration::from_secs(5), dir.path()).unwrap();
        let reason = ran(&missing).reason.unwrap();
        assert!(
            reason.starts_with("script `python3 absent.py` exited with status 2; stderr:")
                && reason.contains("absent.py"),
            "{reason}"
        );
    }

    #[test]
    fn quoted_arguments_reach_the_script_without_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let code = "import json, sys\nprint(json.dumps({'pass': sys.argv[1:] == ['a b', '$HOME', '*']}))\n";
        std::fs::write(dir.path().join("args.py"), code).unwrap();
        let mut j = job(dir.path(), "grade.py", GRADER, "x", 10.0);
        j.script = ScriptCheck::new(
            r#"python3 args.py "a b" '$HOME' *"#,
            Duration::from_secs(10),
            dir.path(),
        )
        .unwrap();
        assert_eq!(ran(&j).status, CheckStatus::Passed);
    }

    #[test]
    fn scripts_run_in_parallel_up_to_the_bound_and_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let code = r#"
import json, sys, time
data = json.load(sys.stdin)
time.sleep(0.5)
print(json.dumps({"pass": data["answer"] != "bad", "reason": "answer " + data["answer"]}))
"#;
        let jobs: Vec<ScriptJob> = (0..8)
            .map(|i| {
                let answer = if i == 5 {
                    "bad".to_owned()
                } else {
                    format!("a{i}")
                };
                job(dir.path(), "slow.py", code, &answer, 20.0)
            })
            .collect();
        let started = std::time::Instant::now();
        let outcomes = run_scripts(jobs, 4, &AtomicBool::new(false));
        let took = started.elapsed();
        assert_eq!(outcomes.len(), 8);
        for (i, outcome) in outcomes.iter().enumerate() {
            let outcome = outcome.as_ref().expect("not stopped");
            let answer = if i == 5 {
                "bad".to_owned()
            } else {
                format!("a{i}")
            };
            assert_eq!(
                outcome.reason.as_deref(),
                Some(format!("answer {answer}").as_str())
            );
            assert_eq!(outcome.passed(), i != 5);
        }
        // One at a time would take 4 s of sleep alone; a loose bound under it.
        assert!(took < Duration::from_secs(4), "{took:?}");
        assert!(run_scripts(Vec::new(), 4, &AtomicBool::new(false)).is_empty());
    }

    #[test]
    fn a_script_jobs_expected_value_comes_from_its_check() {
        let spec = crate::checks::CheckSpec::parse(
            &json!({"method": "script", "run": "python3 g.py", "value": "{{answer}}", "timeout_secs": 5}),
            &crate::checks::ParseContext::new(Path::new("/tmp")),
        )
        .unwrap();
        let check = spec
            .prepare(json!({"answer": "Paris"}).as_object().unwrap())
            .unwrap();
        let input = ScriptInput {
            answer: "x".into(),
            values: Values::new(),
            template: "t".into(),
            model: "m:n".into(),
            expected: None,
        };
        let j = ScriptJob::for_check(&check, input).unwrap();
        assert_eq!(j.input.expected.as_deref(), Some("Paris"));
        assert_eq!(j.script.timeout, Duration::from_secs(5));
        assert_eq!(j.script.dir, Path::new("/tmp"));
        assert_eq!(
            serde_json::to_value(&j.input).unwrap(),
            json!({"answer": "x", "values": {}, "template": "t", "model": "m:n", "expected": "Paris"})
        );
    }
}
