//! `kind: exec` targets: the user's application as a command (`run: "python3 app.py"`). Each
//! call runs it once, without a shell, in config.yaml's directory, with one JSON request on
//! stdin, and reads its answer from stdout:
//!
//! ```text
//! {"answer": "Paris", "input_tokens": 12, "output_tokens": 3, "cost_usd": 0.0001}
//! ```
//!
//! Only `answer` is needed. Like a script check's verdict, the answer is the whole of stdout
//! when it is one JSON object, else its last non-empty line that is one. A command that exits
//! with an error or a signal, runs past its timeout (it is killed, with what it started) or
//! prints no answer fails the call, naming the command and the last line of its stderr.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Map, Value};

use super::path::as_text;
use crate::process::{Captured, Program, printed, printed_object, stderr_hint};

/// An exec target as config.yaml describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecTarget {
    pub program: Program,
}

/// What the command printed: its answer, and what it reported of its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecAnswer {
    pub text: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

impl ExecTarget {
    /// Runs the command on `input` for at most `timeout`; `None` when `stop` was set first
    /// (it is killed: its answer is not known), else its answer or why there is none.
    pub fn call(
        &self,
        input: Vec<u8>,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Option<Result<ExecAnswer, String>> {
        let name = &self.program.run;
        let ended = match self.program.run(input, timeout, stop) {
            Err(message) => return Some(Err(message)),
            Ok(None) => return None,
            Ok(Some(ended)) => ended,
        };
        let (stdout, stderr) = match ended.output(&format!("`{name}`"), timeout) {
            Ok(output) => output,
            Err(message) => return Some(Err(message)),
        };
        Some(self.answer(&stdout, &stderr))
    }

    /// Reads the answer from the end of the command's stdout (its last lines, whatever came
    /// before them).
    fn answer(&self, stdout: &Captured, stderr: &Captured) -> Result<ExecAnswer, String> {
        let name = &self.program.run;
        let shown = |fields: &Map<String, Value>| {
            crate::llm::client::truncate_chars(&Value::Object(fields.clone()).to_string(), 200)
        };
        let Some(fields) = printed_object(&stdout.end_text()) else {
            let excerpt = |text: &str| {
                let flat = text.trim().replace('\n', "⏎");
                crate::llm::client::truncate_chars(&flat, 200)
            };
            return Err(format!(
                "`{name}` printed no JSON answer ({{\"answer\": …}}): it {}{}",
                printed(stdout, excerpt),
                stderr_hint(stderr)
            ));
        };
        let text = match fields.get("answer") {
            None | Some(Value::Null) => {
                return Err(format!(
                    "`{name}` printed `{}`, with no `\"answer\"`{}",
                    shown(&fields),
                    stderr_hint(stderr)
                ));
            }
            Some(answer) => as_text(answer),
        };
        let number = |field: &str| -> Result<Option<f64>, String> {
            match fields.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
                    Some(n) => Ok(Some(n)),
                    None => Err(format!(
                        "`{name}` printed `{}`: `{field}` must be a number, 0 or more",
                        shown(&fields)
                    )),
                },
            }
        };
        let count = |field: &str| number(field).map(|n| n.map(|n| n.round() as u64));
        Ok(ExecAnswer {
            text,
            input_tokens: count("input_tokens")?,
            output_tokens: count("output_tokens")?,
            cost_usd: number("cost_usd")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The target running `code` with python3 in `dir`.
    fn app(dir: &std::path::Path, code: &str) -> ExecTarget {
        std::fs::write(dir.join("app.py"), code).unwrap();
        ExecTarget {
            program: Program::new("python3 app.py", dir, "x").unwrap(),
        }
    }

    fn call(target: &ExecTarget, timeout: f64) -> Result<ExecAnswer, String> {
        target
            .call(
                br#"{"prompt": "Why?"}"#.to_vec(),
                Duration::from_secs_f64(timeout),
                &AtomicBool::new(false),
            )
            .expect("not stopped")
    }

    #[test]
    fn the_answer_and_usage_are_read_from_the_last_json_line() {
        let dir = tempfile::tempdir().unwrap();
        let code = "import json, sys\nreq = json.load(sys.stdin)\nprint('thinking')\n\
                    print(json.dumps({'answer': 're: ' + req['prompt'], 'input_tokens': 4, \
                    'output_tokens': 2.0, 'cost_usd': 0.5}))\n";
        assert_eq!(
            call(&app(dir.path(), code), 20.0).unwrap(),
            ExecAnswer {
                text: "re: Why?".into(),
                input_tokens: Some(4),
                output_tokens: Some(2),
                cost_usd: Some(0.5),
            }
        );
        let bare = call(&app(dir.path(), "print('{\"answer\": 42}')\n"), 20.0).unwrap();
        assert_eq!(
            (bare.text.as_str(), bare.input_tokens, bare.cost_usd),
            ("42", None, None)
        );
    }

    #[test]
    fn a_crash_a_hang_or_garbage_is_an_error_with_the_last_line_of_stderr() {
        let dir = tempfile::tempdir().unwrap();
        for (code, want) in [
            (
                "import sys\nsys.stderr.write('loading\\n')\nraise RuntimeError('index missing')\n",
                "`python3 app.py` exited with status 1; stderr: RuntimeError: index missing",
            ),
            (
                "import sys\nsys.stderr.write('no key\\n')\nprint('Paris')\n",
                "`python3 app.py` printed no JSON answer ({\"answer\": …}): it printed `Paris`; \
                 stderr: no key",
            ),
            (
                "print('{\"text\": \"Paris\"}')\n",
                "`python3 app.py` printed `{\"text\":\"Paris\"}`, with no `\"answer\"`",
            ),
            (
                "print('{\"answer\": \"Paris\", \"cost_usd\": \"cheap\"}')\n",
                "`cost_usd` must be a number, 0 or more",
            ),
        ] {
            let e = call(&app(dir.path(), code), 20.0).unwrap_err();
            assert!(e.contains(want), "{code}: {e}");
        }
        let hang = "import sys, time\nsys.stderr.write('waiting for the index\\n')\n\
                    sys.stderr.flush()\ntime.sleep(60)\n";
        let started = std::time::Instant::now();
        let e = call(&app(dir.path(), hang), 1.0).unwrap_err();
        assert_eq!(
            e,
            "`python3 app.py` ran longer than its timeout of 1 s and was stopped; stderr: \
             waiting for the index"
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
