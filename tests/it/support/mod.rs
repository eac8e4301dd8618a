//! Test harness: a temp directory with a database and config, the real `track` binary, and
//! the mock provider on 127.0.0.1 wired in through the SDK environment variables.

pub mod app;
pub mod hf;
pub mod mock;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use mock::{MockProvider, WAIT_LIMIT};

/// Keys the sandbox gives the binary: canaries that must never be stored or printed.
pub const OPENAI_KEY: &str = "sk-test-openai-CANARY-0001";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-CANARY-0002";

/// The caller's variables a test's `track` may see: what a process needs to start and to write
/// coverage or a backtrace. Nothing else of the developer's environment (COLUMNS, NO_COLOR,
/// TRACK_*, keys, base URLs, HF_*...) reaches the binary: a test sets what it depends on.
pub const PASSED_ENV: [&str; 10] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TZ",
    "LANG",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "LLVM_PROFILE_FILE",
];

/// Whether the caller's variable `name` is passed to a test's `track` ([`PASSED_ENV`], the
/// locale's `LC_*`, and cargo-llvm-cov's own).
fn passed(name: &str) -> bool {
    PASSED_ENV.contains(&name) || name.starts_with("LC_") || name.starts_with("CARGO_LLVM_COV")
}

/// Removes from `cmd` every variable of `caller` (the test process's environment) that is not
/// [`passed`]. Each is removed by name rather than by `env_clear`, so a command built from this
/// one's `get_envs` (a job script, `setpriv`) drops them too.
pub fn scrub_env<K: AsRef<std::ffi::OsStr>>(
    cmd: &mut std::process::Command,
    caller: impl IntoIterator<Item = K>,
) {
    for name in caller {
        let name = name.as_ref();
        if !name.to_str().is_some_and(passed) {
            cmd.env_remove(name);
        }
    }
}

/// Gives `cmd` the environment every test's `track` starts from: the caller's scrubbed
/// ([`scrub_env`]), the database in `work`, and the test keys. Base URLs are the caller's to
/// set (the mock's, or nowhere).
pub fn hermetic(cmd: &mut std::process::Command, work: &Path) {
    scrub_env(cmd, std::env::vars_os().map(|(name, _)| name));
    cmd.env("TRACK_DB", work.join("track.db"))
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY);
}

/// A temp directory holding `track.db` and a `config.yaml` with fast retries, plus a mock.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub mock: MockProvider,
}

impl Sandbox {
    pub fn new() -> Self {
        Self::with_mock(MockProvider::start())
    }

    pub fn with_mock(mock: MockProvider) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let sandbox = Self { dir, mock };
        sandbox.write(
            "config.yaml",
            "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 10\n",
        );
        sandbox
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn db_path(&self) -> PathBuf {
        self.path("track.db")
    }

    /// Writes a file in the sandbox and returns its path.
    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    /// The `track` binary in the sandbox, pointed at the mock, with test keys and nothing of
    /// the caller's environment ([`hermetic`]): no `COLUMNS` (stdout is a pipe, so tables are
    /// not split unless a test sets it), no `NO_COLOR`, no `TRACK_*`.
    pub fn track(&self) -> Command {
        Command::from_std(self.track_process())
    }

    /// The same as a std `Command` (to spawn and kill).
    pub fn track_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(track_bin());
        cmd.current_dir(self.dir.path());
        hermetic(&mut cmd, self.dir.path());
        cmd.env("OPENAI_BASE_URL", self.mock.openai_base_url())
            .env("ANTHROPIC_BASE_URL", self.mock.anthropic_base_url())
            .env("OLLAMA_HOST", self.mock.ollama_host());
        cmd
    }

    /// A read-only connection to the sandbox database.
    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(
            self.db_path(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open test database")
    }

    /// One integer from a query on the sandbox database.
    pub fn count(&self, sql: &str) -> i64 {
        self.db().query_row(sql, [], |r| r.get(0)).expect(sql)
    }

    /// One integer from a query, or `None` while the database (or its table) is not there.
    pub fn try_count(&self, sql: &str) -> Option<i64> {
        if !self.db_path().exists() {
            return None;
        }
        rusqlite::Connection::open_with_flags(
            self.db_path(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .and_then(|db| db.query_row(sql, [], |r| r.get(0)))
        .ok()
    }

    /// Gives a held request all the time it needs: `track` times a call out after
    /// `timeout_secs`, and a test holding requests must not race that clock.
    pub fn patient(self) -> Self {
        self.write(
            "config.yaml",
            "retry:\n  max_attempts: 4\n  base_delay: 10\n  max_delay: 200\ntimeout_secs: 600\n",
        );
        self
    }

    /// Starts `track` with `args` in the background, its stderr read as it comes.
    pub fn start(&self, args: &[&str]) -> Running {
        let mut cmd = self.track_process();
        cmd.args(args);
        Running::start(cmd)
    }
}

/// Blocks until `done` holds, checking every few milliseconds; fails the test, saying
/// `what` it waited for, after [`WAIT_LIMIT`]. The limit only turns a hang into a failure.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "waited {WAIT_LIMIT:?} for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A `track` process running in the background, its stderr collected as it comes. Dropped
/// while running, it is killed.
pub struct Running {
    child: std::process::Child,
    stderr: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Spawns `cmd` with stdout discarded and stderr piped.
    pub fn start(mut cmd: std::process::Command) -> Self {
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn track");
        let mut pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = String::from_utf8_lossy(&buf[..n]).into_owned();
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_str(&chunk);
            }
        });
        Self {
            child,
            stderr,
            reader: Some(reader),
        }
    }

    /// The stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sends the signal `name` (`INT`, `TERM`, `HUP`...).
    pub fn signal(&self, name: &str) {
        let sent = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Blocks until stderr contains `needle` (failing the test after [`WAIT_LIMIT`]).
    pub fn wait_for_stderr(&self, needle: &str) {
        wait_for(&format!("`{needle}` on stderr"), || {
            self.stderr().contains(needle)
        });
    }

    /// SIGKILL: no chance to clean up.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Waits for the end; returns the exit code (none when killed by a signal) and stderr.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), self.stderr())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The path of the binary under test.
pub fn track_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_track"))
}

/// A benchmark file with `models` and prompts given as (name, prompt, output, method).
pub fn bench_yaml(models: &[&str], prompts: &[(&str, &str, &str, &str)]) -> String {
    let mut yaml = String::from("temperature: 0\nmodels:\n");
    for m in models {
        yaml.push_str(&format!("  - {m}\n"));
    }
    yaml.push_str("prompts:\n");
    for (name, prompt, output, method) in prompts {
        yaml.push_str(&format!(
            "  - {name}:\n    prompt: {}\n    output: {}\n    method: {method}\n",
            serde_json::to_string(prompt).unwrap(),
            serde_json::to_string(output).unwrap()
        ));
    }
    yaml
}

/// The text of stdout or stderr of an assert_cmd output.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file under `dir`, by path relative to it (with `/`), in order.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                let name = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Whether any file under `dir` contains `needle` (for secrets).
pub fn any_file_contains(dir: &Path, needle: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if let Some(found) = any_file_contains(&path, needle) {
                return Some(found);
            }
        } else if std::fs::read(&path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
        {
            return Some(path);
        }
    }
    None
}

/// Writes `states` synthetic blocks-world images of red and blue blocks, with their ground
/// truth, into `out` in the sandbox (`track relevance synth`).
pub fn synth_blocks(s: &Sandbox, states: usize, out: &str) {
    s.track()
        .args([
            "relevance",
            "synth",
            "--blocks",
            "red,blue,green",
            "--states",
        ])
        .arg(states.to_string())
        .args(["--out", out])
        .assert()
        .success();
}

/// The sha256 (hex) of a file's bytes.
pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest as _;
    let bytes = std::fs::read(path).unwrap();
    sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_tests_track_sees_none_of_the_callers_environment_but_what_it_needs() {
    let s = Sandbox::new();
    let template = s.track_process();
    // `env` started as a job script is (inheriting this process's environment, then the
    // sandbox's changes): cargo's own CARGO_* variables are always there to leak.
    let mut env = std::process::Command::new("env");
    env.arg("-0");
    let mut set = Vec::new();
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => {
                env.env(key, value);
                set.push(key.to_string_lossy().into_owned());
            }
            None => {
                env.env_remove(key);
            }
        }
    }
    let out = env.output().expect("run env");
    let seen: Vec<String> = text(&out.stdout)
        .split('\0')
        .filter_map(|pair| pair.split_once('=').map(|(name, _)| name.to_owned()))
        .collect();
    assert!(seen.iter().any(|name| name == "TRACK_DB"), "{seen:?}");
    let leaked: Vec<&String> = seen
        .iter()
        .filter(|name| !passed(name) && !set.contains(name))
        .collect();
    assert!(leaked.is_empty(), "the caller's {leaked:?} reach track");
}

#[test]
fn the_callers_terminal_width_colour_and_track_settings_are_removed() {
    let caller = [
        "COLUMNS",
        "NO_COLOR",
        "TRACK_LOG",
        "TRACK_BATCH_POLL_MS",
        "GEMINI_BASE_URL",
        "OPENROUTER_API_KEY",
        "HF_TOKEN",
        "PATH",
        "LC_ALL",
    ];
    let mut cmd = std::process::Command::new("true");
    scrub_env(&mut cmd, caller);
    let mut removed: Vec<String> = cmd
        .get_envs()
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| key.to_string_lossy().into_owned())
        .collect();
    removed.sort();
    assert_eq!(
        removed,
        [
            "COLUMNS",
            "GEMINI_BASE_URL",
            "HF_TOKEN",
            "NO_COLOR",
            "OPENROUTER_API_KEY",
            "TRACK_BATCH_POLL_MS",
            "TRACK_LOG",
        ]
    );
}
