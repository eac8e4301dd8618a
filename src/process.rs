//! Programs track runs with one JSON input on stdin and reads one JSON object from stdout: a
//! script check's grader and an exec target's application (and a `run:` tool's command, whose
//! stdout is its result). A command is split into words as a POSIX shell would and run
//! without one, in a given directory and in its own process group, so that what it started
//! ends with it: when it exits (its output is then used, whoever still held its pipes), runs
//! past its timeout or the run is stopped.
//!
//! Its stdout and stderr are read as they come, in bounded memory: the first and the last
//! 512 KiB of each are kept, and what came between is counted ([`Captured`]), so the last
//! line (a verdict, an answer, the last line of stderr) is read whatever came before it.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use wait_timeout::ChildExt;

/// The most of the start of a program's stdout or stderr kept.
const HEAD_LIMIT: usize = 512 << 10;
/// The most of the end of a program's stdout or stderr kept; what comes between the head and
/// the tail is read, counted and dropped.
const TAIL_LIMIT: usize = 512 << 10;
/// How long what a program started is given to end, once sent SIGTERM after the program
/// exited, before it is killed.
const TERM_GRACE: Duration = Duration::from_millis(200);
/// How long the pipes of a program that ended are read to their end, once its group was
/// ended (a process that left the group may still hold them): then what was read is used.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

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
    /// waits. `Ok(None)` when `stop` was set before it ended (it is killed then, with what it
    /// started); `Err` with why when it cannot be started or waited for. When it exits, what
    /// it started is ended too, and what it printed is used without waiting for the end of
    /// pipes that a process it started may still hold.
    pub(crate) fn run(
        &self,
        input: Vec<u8>,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Option<Ended>, String> {
        let mut child = self.spawn()?;
        let group = Group::of(&child);
        let stdout = Drain::start(child.stdout.take());
        let stderr = Drain::start(child.stderr.take());
        if let Some(mut stdin) = child.stdin.take() {
            // On its own thread: a program that does not read a large input must not block
            // us. One that exits without reading closes the pipe: not an error of ours.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        match wait(&mut child, timeout, stop) {
            Waited::Stopped => {
                group.kill(&mut child);
                Ok(None)
            }
            Waited::Exited(Ok(Some(status))) => {
                group.end(&[&stdout, &stderr]);
                let by = Instant::now() + DRAIN_GRACE;
                Ok(Some(Ended::Exited {
                    status,
                    stdout: stdout.collect(by),
                    stderr: stderr.collect(by),
                }))
            }
            Waited::Exited(Ok(None)) => {
                group.kill(&mut child);
                Ok(Some(Ended::TimedOut {
                    stderr: stderr.collect(Instant::now() + DRAIN_GRACE),
                }))
            }
            Waited::Exited(Err(e)) => {
                group.kill(&mut child);
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
        stdout: Captured,
        stderr: Captured,
    },
    /// It ran past its timeout and was killed.
    TimedOut { stderr: Captured },
}

impl Ended {
    /// What a program that exited successfully printed (stdout, stderr), or why it failed,
    /// naming it `name` (`` script `check.py` ``): it ran past `timeout`, or exited with a
    /// failure, with the last line of its stderr.
    pub(crate) fn output(
        self,
        name: &str,
        timeout: Duration,
    ) -> Result<(Captured, Captured), String> {
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

/// What a program printed on one pipe, in bounded memory: all of it when it is short, else
/// its first [`HEAD_LIMIT`] and its last [`TAIL_LIMIT`] bytes, with the count of those left
/// out between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes, up to [`HEAD_LIMIT`].
    head: Vec<u8>,
    /// The bytes after the head, of which the last [`TAIL_LIMIT`] are kept: its front is
    /// dropped once it holds twice that (so each byte is moved once at most).
    tail: Vec<u8>,
    /// How many bytes were printed in all.
    total: u64,
}

impl Captured {
    /// What a program printed, `bytes`, kept as a pipe's reader keeps it.
    pub fn of(bytes: &[u8]) -> Self {
        let mut captured = Self::default();
        captured.push(bytes);
        captured
    }

    /// Adds `bytes`, read from the pipe.
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = HEAD_LIMIT.saturating_sub(self.head.len()).min(bytes.len());
        let (head, rest) = bytes.split_at(room);
        self.head.extend_from_slice(head);
        self.tail.extend_from_slice(rest);
        if self.tail.len() > 2 * TAIL_LIMIT {
            self.tail.drain(..self.tail.len() - TAIL_LIMIT);
        }
    }

    /// The kept end: at most [`TAIL_LIMIT`] bytes after the head.
    fn kept_tail(&self) -> &[u8] {
        &self.tail[self.tail.len().saturating_sub(TAIL_LIMIT)..]
    }

    /// How many bytes were printed in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many bytes between the head and the tail were left out (0: all of it is kept).
    pub fn dropped(&self) -> u64 {
        self.total - (self.head.len() + self.kept_tail().len()) as u64
    }

    /// Whether nothing but white space was printed.
    pub fn is_blank(&self) -> bool {
        self.head
            .iter()
            .chain(self.kept_tail())
            .all(u8::is_ascii_whitespace)
    }

    /// The end of what was printed, in whole lines: all of it when nothing was left out, else
    /// the kept tail from its first whole line on (a line cut by the gap is not read).
    pub fn end(&self) -> Cow<'_, [u8]> {
        if self.dropped() == 0 {
            return if self.tail.is_empty() {
                Cow::Borrowed(&self.head)
            } else {
                Cow::Owned([self.head.as_slice(), &self.tail].concat())
            };
        }
        let tail = self.kept_tail();
        let from = tail
            .iter()
            .position(|&b| b == b'\n')
            .map_or(tail.len(), |i| i + 1);
        Cow::Borrowed(&tail[from..])
    }

    /// [`Self::end`] as text (invalid UTF-8 replaced).
    pub fn end_text(&self) -> String {
        String::from_utf8_lossy(&self.end()).into_owned()
    }

    /// All of it as text when nothing was left out; else its head, the line `gap` writes of
    /// the count of bytes left out, and its tail (each cut at a whole character).
    pub fn text(&self, gap: impl FnOnce(u64) -> String) -> String {
        let dropped = self.dropped();
        if dropped == 0 {
            return String::from_utf8_lossy(&self.end()).into_owned();
        }
        let head = whole_chars_before(&self.head);
        let tail = whole_chars_after(self.kept_tail());
        format!(
            "{}\n\n{}\n\n{}",
            String::from_utf8_lossy(head),
            gap(dropped),
            String::from_utf8_lossy(tail)
        )
    }

    /// The last non-empty line, as an excerpt.
    pub fn last_line(&self) -> Option<String> {
        last_line(&self.end())
    }
}

/// `bytes` without an incomplete UTF-8 character at its end.
fn whole_chars_before(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without the continuation bytes of a character cut at its start.
fn whole_chars_after(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
        .count();
    &bytes[skip..]
}

/// `printed nothing`, `` printed `<its start>` ``, or, when some was left out, `printed 3,145,728
/// bytes, the last line `<it>``: what a program printed, for messages; `excerpt` shortens a
/// text.
pub(crate) fn printed(out: &Captured, excerpt: impl Fn(&str) -> String) -> String {
    if out.is_blank() {
        return "printed nothing".to_owned();
    }
    if out.dropped() == 0 {
        return format!("printed `{}`", excerpt(&out.end_text()));
    }
    let bytes = crate::output::counted(out.total(), "byte");
    match out.last_line() {
        Some(line) => format!("printed {bytes}, the last line `{}`", excerpt(&line)),
        None => format!("printed {bytes}"),
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
    let started = Instant::now();
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

/// A pipe read to its end on a thread of its own, into a [`Captured`] that can be taken
/// before the end comes.
struct Drain {
    captured: Arc<Mutex<Captured>>,
    /// Disconnected when the pipe is read to its end (its sender is dropped then).
    done: mpsc::Receiver<()>,
}

impl Drain {
    /// Starts reading `pipe` (none: nothing to read).
    fn start<R: Read + Send + 'static>(pipe: Option<R>) -> Self {
        let captured = Arc::new(Mutex::new(Captured::default()));
        let (tx, done) = mpsc::channel::<()>();
        if let Some(mut pipe) = pipe {
            let into = Arc::clone(&captured);
            std::thread::spawn(move || {
                let _done = tx;
                let mut buf = vec![0u8; 64 << 10];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => into
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(&buf[..n]),
                    }
                }
            });
        }
        Self { captured, done }
    }

    /// Whether the pipe was read to its end, waiting for that until `deadline`.
    fn finished_by(&self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        !matches!(
            self.done.recv_timeout(left),
            Err(mpsc::RecvTimeoutError::Timeout)
        )
    }

    /// What was read, once the pipe was read to its end or `deadline` passed: a process that
    /// left the program's group may hold the pipe open.
    fn collect(self, deadline: Instant) -> Captured {
        self.finished_by(deadline);
        std::mem::take(&mut *self.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// A program's process group: the program and what it started (unless that left the group).
struct Group {
    #[cfg(unix)]
    id: nix::unistd::Pid,
}

impl Group {
    /// The group of `child`, spawned as its leader (`process_group(0)`).
    fn of(child: &Child) -> Self {
        #[cfg(unix)]
        {
            // A pid is a positive i32 where it comes from (pid_t).
            Self {
                id: nix::unistd::Pid::from_raw(child.id() as i32),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = child;
            Self {}
        }
    }

    /// Kills the program and its group at once (its timeout, or the run stopped), and reaps
    /// it. The program is not reaped before, so the group's id is still its own.
    fn kill(&self, child: &mut Child) {
        #[cfg(unix)]
        let _ = nix::sys::signal::killpg(self.id, nix::sys::signal::Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Ends what the program, which exited, left running in its group: SIGTERM, then up to
    /// [`TERM_GRACE`] for the group to be gone and `pipes` read to their end, then SIGKILL.
    /// (A group outlives its leader while any of it runs, and its id is not given to a new
    /// process meanwhile; once it is empty, signalling it finds no one.)
    fn end(&self, pipes: &[&Drain]) {
        #[cfg(unix)]
        {
            use nix::sys::signal::{Signal, killpg};
            if killpg(self.id, Signal::SIGTERM).is_err() {
                return; // no one left
            }
            let deadline = Instant::now() + TERM_GRACE;
            while Instant::now() < deadline {
                let read = pipes.iter().all(|p| p.finished_by(Instant::now()));
                if read && killpg(self.id, None).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = killpg(self.id, Signal::SIGKILL);
        }
        #[cfg(not(unix))]
        let _ = pipes;
    }
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
pub(crate) fn stderr_hint(stderr: &Captured) -> String {
    stderr
        .last_line()
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
    fn a_long_output_keeps_its_head_and_its_tail_and_counts_what_is_left_out() {
        let short = Captured::of(b"one\ntwo\n");
        assert_eq!((short.total(), short.dropped()), (8, 0));
        assert_eq!(&*short.end(), b"one\ntwo\n");
        assert_eq!(short.last_line().as_deref(), Some("two"));
        assert_eq!(short.text(|_| unreachable!()), "one\ntwo\n");
        assert!(Captured::of(b" \n\t").is_blank());

        // 3 MB of lines of 100 bytes, then the verdict, pushed as a pipe gives them.
        let mut long = Captured::default();
        for i in 0..30_000 {
            long.push(format!("line {i:05} {}\n", "x".repeat(88)).as_bytes());
            assert!(long.tail.len() <= 2 * TAIL_LIMIT, "bounded");
        }
        long.push(b"{\"pass\": true}\n");
        let total = 30_000 * 100 + 15;
        assert_eq!(long.total(), total);
        assert_eq!(long.dropped(), total - (HEAD_LIMIT + TAIL_LIMIT) as u64);
        assert_eq!(long.last_line().as_deref(), Some("{\"pass\": true}"));
        let end = long.end_text();
        assert!(
            end.starts_with("line ") && end.len() < TAIL_LIMIT,
            "whole lines"
        );
        assert_eq!(printed_object(&end).unwrap()["pass"], true);
        let text = long.text(|n| format!("[{n} left out]"));
        let gap = format!("\n\n[{} left out]\n\n", long.dropped());
        assert!(
            text.starts_with("line 00000 ") && text.contains(&gap),
            "{}",
            &text[..40]
        );
        assert!(text.ends_with("{\"pass\": true}\n"));
        assert_eq!(text.len(), HEAD_LIMIT + TAIL_LIMIT + gap.len());
    }

    #[test]
    fn a_cut_never_splits_a_character_and_one_long_line_has_no_last_line() {
        let mut cut = Captured::default();
        cut.push(&vec![b'a'; HEAD_LIMIT - 1]);
        // The head ends in the middle of an `é`, and the tail starts in the middle of one.
        cut.push(("é".repeat(TAIL_LIMIT) + "x").as_bytes());
        assert_eq!(cut.head.last(), Some(&0xc3));
        assert_eq!(cut.kept_tail().first(), Some(&0xa9));
        let text = cut.text(|_| "gap".to_owned());
        assert!(!text.contains('\u{fffd}'), "no replacement character");
        assert!(text.ends_with("éx"));
        // One line longer than the tail: no whole line is known at its end.
        assert_eq!(cut.end_text(), "");
        assert_eq!(cut.last_line(), None);
        assert!(printed(&cut, str::to_owned).starts_with("printed 1,572,864 bytes"));
        assert_eq!(
            printed(&Captured::of(b"hi\n"), str::to_owned),
            "printed `hi\n`"
        );
        assert_eq!(
            printed(&Captured::default(), str::to_owned),
            "printed nothing"
        );
    }

    /// Runs `sh -c <script>` in `dir` with 30 s to exit.
    #[cfg(unix)]
    fn sh(dir: &Path, script: &str) -> Ended {
        let program = Program::new(&format!("sh -c '{script}'"), dir, "x").unwrap();
        program
            .run(Vec::new(), Duration::from_secs(30), &AtomicBool::new(false))
            .unwrap()
            .expect("not stopped")
    }

    /// Whether process `pid` is gone (or a zombie), waiting up to 10 s for it.
    #[cfg(target_os = "linux")]
    fn ends(pid: &str) -> bool {
        ends_within(pid, Duration::from_secs(10))
    }

    /// Whether process `pid` is gone (or a zombie), waiting up to `limit` for it.
    #[cfg(target_os = "linux")]
    fn ends_within(pid: &str, limit: Duration) -> bool {
        let stat = format!("/proc/{}/stat", pid.trim());
        let dead = || {
            std::fs::read_to_string(&stat).map_or(true, |s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
        };
        let deadline = Instant::now() + limit;
        while !dead() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        dead()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn when_a_program_exits_its_group_is_ended_even_what_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        // A child that ignores SIGTERM and holds stdout; the program prints and exits 0.
        let ended = sh(
            dir.path(),
            r#"(trap "" TERM; touch ready; exec sleep 30) & echo $! > stubborn.pid;
               while [ ! -e ready ]; do sleep 0.01; done; echo done"#,
        );
        let Ended::Exited { status, stdout, .. } = ended else {
            panic!("exited")
        };
        assert!(status.success());
        assert_eq!(stdout.end_text(), "done\n");
        let pid = std::fs::read_to_string(dir.path().join("stubborn.pid")).unwrap();
        assert!(ends(&pid), "the child {} still runs", pid.trim());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_left_the_group_holding_stdout_does_not_keep_the_output_from_being_used() {
        let dir = tempfile::tempdir().unwrap();
        // A sleeper in a session of its own (set before `Popen` returns): out of reach of the
        // group's end, it holds stdout open after the program exited.
        let code = "import subprocess\n\
                    child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n\
                    open('away.pid', 'w').write(str(child.pid))\nprint('{\"pass\": true}')\n";
        std::fs::write(dir.path().join("away.py"), code).unwrap();
        let started = Instant::now();
        let ended = Program::new("python3 away.py", dir.path(), "x")
            .unwrap()
            .run(Vec::new(), Duration::from_secs(30), &AtomicBool::new(false))
            .unwrap()
            .expect("not stopped");
        let pid = std::fs::read_to_string(dir.path().join("away.pid")).unwrap();
        let out_of_reach = !ends_within(&pid, Duration::ZERO);
        let _ = Command::new("kill").arg(pid.trim()).status();
        assert!(out_of_reach, "the sleeper left the group");
        let Ended::Exited { stdout, .. } = ended else {
            panic!("exited")
        };
        assert_eq!(printed_object(&stdout.end_text()).unwrap()["pass"], true);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not waited for"
        );
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
