//! Programs track runs with one JSON input on stdin and reads one JSON object from stdout: a
//! script check's grader and an exec target's application. A command is split into words as
//! a POSIX shell would and run without one, in a given directory and in its own process group,
//! so that a timeout or a stop kills what it started too. Its stdout and stderr are read as
//! they come (the first MiB of each is kept).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Map, Value};
use wait_timeout::ChildExt;

/// The most of a program's stdout or stderr kept; the rest is read and dropped.
const OUTPUT_LIMIT: usize = 1 << 20;
/// How long the output of a program that ended is waited for (a child it started may hold
/// its pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A command as written and split into words, with the directory it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The command as written (`python3 app.py`), for messages and cache keys.
    pub run: String,
    argv: Vec<String>,
    /// Where it runs.
    pub dir: PathBuf,
}

impl Program {
    /// `run` split into words as a POSIX shell would (quotes and backslashes), never run by
    /// one: no variables, globs or pipes. `what` names the program in the message of an
    /// empty command (`the command that grades, such as `python3 grade.py``).
    pub(crate) fn new(run: &str, dir: &Path, what: &str) -> Result<Self, String> {
        let argv = shell_words::split(run)
            .map_err(|e| format!("`run: {run}` cannot be split into words: {e}"))?;
        if argv.is_empty() {
            return Err(format!("`run` is empty; give {what}"));
        }
        Ok(Self {
            run: run.to_owned(),
            argv,
            dir: dir.to_owned(),
        })
    }

    /// The program: a relative path with a `/` (`./grade.sh`) is taken from the directory it
    /// runs in; a bare name is looked up on PATH.
    fn program(&self) -> PathBuf {
        let program = Path::new(&self.argv[0]);
        if program.is_relative() && self.argv[0].contains('/') {
            self.dir.join(program)
        } else {
            program.to_owned()
        }
    }

    /// Runs the program with `input` on stdin, for at most `timeout`, looking at `stop` as it
    /// waits. `Ok(None)` when `stop` was set before it ended (it is killed then); `Err` with
    /// why when it cannot be started or waited for.
    pub(crate) fn run(
        &self,
        input: Vec<u8>,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Option<Ended>, String> {
        let mut child = self.spawn()?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        if let Some(mut stdin) = child.stdin.take() {
            // On its own thread: a program that does not read a large input must not block
            // us. One that exits without reading closes the pipe: not an error of ours.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        match wait(&mut child, timeout, stop) {
            Waited::Stopped => {
                kill(&mut child);
                Ok(None)
            }
            Waited::Exited(Ok(Some(status))) => Ok(Some(Ended::Exited {
                status,
                stdout: collect(stdout),
                stderr: collect(stderr),
            })),
            Waited::Exited(Ok(None)) => {
                kill(&mut child);
                Ok(Some(Ended::TimedOut {
                    stderr: collect(stderr),
                }))
            }
            Waited::Exited(Err(e)) => {
                kill(&mut child);
                Err(format!("cannot wait for it: {e}"))
            }
        }
    }

    /// Starts the program with its pipes, in its own process group; why when it cannot.
    fn spawn(&self) -> Result<Child, String> {
        let mut command = Command::new(self.program());
        command
            .args(&self.argv[1..])
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command.spawn().map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound if self.argv[0].contains('/') => {
                    format!("no such file in {}", self.dir.display())
                }
                std::io::ErrorKind::NotFound => "not found on PATH".to_owned(),
                _ => e.to_string(),
            };
            format!("cannot run `{}`: {why}", self.argv[0])
        })
    }
}

/// How a program that was started ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (or was killed by a signal not ours).
    Exited {
        status: ExitStatus,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    /// It ran past its timeout and was killed.
    TimedOut { stderr: Vec<u8> },
}

impl Ended {
    /// What a program that exited successfully printed (stdout, stderr), or why it failed,
    /// naming it `name` (`` script `check.py` ``): it ran past `timeout`, or exited with a
    /// failure, with the last line of its stderr.
    pub(crate) fn output(
        self,
        name: &str,
        timeout: Duration,
    ) -> Result<(Vec<u8>, Vec<u8>), String> {
        match self {
            Self::TimedOut { stderr } => Err(format!(
                "{name} ran longer than its timeout of {} and was stopped{}",
                seconds(timeout),
                stderr_hint(&stderr)
            )),
            Self::Exited { status, stderr, .. } if !status.success() => {
                let hint = match stderr_hint(&stderr) {
                    hint if hint.is_empty() => "; its stderr is empty".to_owned(),
                    hint => hint,
                };
                Err(format!("{name} {}{hint}", exit_text(status)))
            }
            Self::Exited { stdout, stderr, .. } => Ok((stdout, stderr)),
        }
    }
}

/// How waiting for a program ended.
enum Waited {
    /// It exited (`Some`), ran past its timeout (`None`), or could not be waited for.
    Exited(std::io::Result<Option<ExitStatus>>),
    /// The stop flag was set first.
    Stopped,
}

/// Waits for `child` up to `timeout`, looking at `stop` every 50 ms.
fn wait(child: &mut Child, timeout: Duration, stop: &AtomicBool) -> Waited {
    const LOOK: Duration = Duration::from_millis(50);
    let started = std::time::Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Waited::Stopped;
        }
        let left = timeout.saturating_sub(started.elapsed());
        match child.wait_timeout(left.min(LOOK)) {
            Ok(None) if left > LOOK => continue,
            other => return Waited::Exited(other),
        }
    }
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

/// What a drained pipe held, waiting a little for it: a child the program started may hold
/// the pipe open after the program itself ended.
fn collect(rx: mpsc::Receiver<Vec<u8>>) -> Vec<u8> {
    rx.recv_timeout(DRAIN_GRACE).unwrap_or_default()
}

/// Kills a program and what it started (its process group), and reaps it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        // The group's id is the program's pid (process_group(0)); `kill` the command, as
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
pub(crate) fn exit_text(status: ExitStatus) -> String {
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
pub(crate) fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| match l.char_indices().nth(200) {
            Some((cut, _)) => format!("{}…", &l[..cut]),
            None => l.to_owned(),
        })
}

/// `; stderr: <its last line>`, or nothing when it is empty.
pub(crate) fn stderr_hint(stderr: &[u8]) -> String {
    last_line(stderr)
        .map(|l| format!("; stderr: {l}"))
        .unwrap_or_default()
}

/// The JSON object a program printed: the whole of `stdout` when it is one, else its last
/// non-empty line that is one (a program may print progress or debugging lines before it).
pub(crate) fn printed_object(stdout: &str) -> Option<Map<String, Value>> {
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
    match object {
        Some(Value::Object(fields)) => Some(fields),
        _ => None,
    }
}

/// `1 s`, `0.5 s`.
pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_object_is_the_whole_output_or_its_last_json_line() {
        let pretty = "{\n  \"a\": 1\n}\n";
        assert_eq!(printed_object(pretty).unwrap()["a"], 1);
        let chatty = "loading\n{\"a\": 1}\n{\"a\": 2}\n\n";
        assert_eq!(printed_object(chatty).unwrap()["a"], 2);
        assert!(printed_object("[1, 2]\nnot json\n").is_none());
        assert!(printed_object("").is_none());
    }

    #[test]
    fn an_empty_or_unsplittable_command_is_refused() {
        let dir = Path::new("/tmp");
        assert_eq!(
            Program::new("  ", dir, "the command, such as `python3 app.py`").unwrap_err(),
            "`run` is empty; give the command, such as `python3 app.py`"
        );
        assert!(
            Program::new("python3 'app.py", dir, "x")
                .unwrap_err()
                .contains("cannot be split into words")
        );
    }
}
