//! What is generated from the flags: shell completions (`track completions SHELL`), the man
//! pages (`track man --out DIR`, left in `target/man/` so `man ./target/man/track.1` works
//! after `cargo test`), and `track --version` with the commit it was built from.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{hermetic, text, track_bin};

/// `track` with `args`, in a temp folder, with nothing of the caller's environment.
fn track(args: &[&str]) -> std::process::Output {
    let work = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(track_bin());
    cmd.current_dir(work.path()).args(args);
    hermetic(&mut cmd, work.path());
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "track {args:?}: {}",
        text(&output.stderr)
    );
    output
}

/// The visible subcommands of `track`, and `(command, subcommand)` for those nested.
fn commands() -> (Vec<String>, Vec<(String, String)>) {
    let cli = track::commands::Cli::command_with_global_options();
    let visible = |c: &clap::Command| !c.is_hide_set() && c.get_name() != "help";
    let mut top = Vec::new();
    let mut nested = Vec::new();
    for sub in cli.get_subcommands().filter(|c| visible(c)) {
        top.push(sub.get_name().to_owned());
        for inner in sub.get_subcommands().filter(|c| visible(c)) {
            nested.push((sub.get_name().to_owned(), inner.get_name().to_owned()));
        }
    }
    assert!(top.len() > 10 && !nested.is_empty(), "{top:?} {nested:?}");
    (top, nested)
}

#[test]
fn completions_name_every_command_in_each_shell() {
    let (top, nested) = commands();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = text(&track(&["completions", shell]).stdout);
        assert!(script.len() > 1000, "{shell}: {script}");
        for name in top.iter().chain(nested.iter().map(|(_, inner)| inner)) {
            assert!(script.contains(name.as_str()), "{shell} misses {name}");
        }
        // fish names a long option `-l NAME`, the others `--NAME`.
        let concurrency = match shell {
            "fish" => "__fish_track_using_subcommand run\" -l concurrency",
            _ => "--concurrency",
        };
        assert!(script.contains(concurrency), "{shell}: run's options");
    }
}

/// Completes `line` (the words typed so far, the last being completed) with the bash script.
fn bash_complete(script: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}' && COMP_WORDS=({}) && COMP_CWORD={} && _track track '{}' '{}' && \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.join(" "),
        line.len() - 1,
        line[line.len() - 1],
        line[line.len() - 2],
    );
    let output = Command::new("bash")
        .args(["-c", &program])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn the_bash_script_parses_and_completes_commands_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("track.bash");
    std::fs::write(&script, track(&["completions", "bash"]).stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax.stderr));
    assert_eq!(bash_complete(&script, &["track", "ru"]), ["run", "runs"]);
    let exports = bash_complete(&script, &["track", "export", ""]);
    assert!(
        exports.contains(&"csv".to_owned()) && exports.contains(&"parquet".to_owned()),
        "{exports:?}"
    );
    assert_eq!(
        bash_complete(&script, &["track", "run", "--concu"]),
        ["--concurrency"]
    );
    assert_eq!(
        bash_complete(&script, &["track", "completions", "fi"]),
        ["fish"]
    );
}

/// The folder the man pages are left in: `target/man/` (beside `target/tmp/`, cargo's folder
/// for the tests' files).
fn man_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("man")
}

#[test]
fn man_pages_are_written_for_track_and_every_command() {
    let dir = man_dir();
    let said = text(&track(&["man", "--out", dir.to_str().unwrap()]).stdout);
    let (top, nested) = commands();
    let mut pages = vec!["track.1".to_owned()];
    pages.extend(top.iter().map(|name| format!("track-{name}.1")));
    pages.extend(nested.iter().map(|(a, b)| format!("track-{a}-{b}.1")));
    assert!(
        said.contains(&format!("wrote {} man pages", pages.len())),
        "{said}"
    );
    for page in &pages {
        let roff = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(
            roff.starts_with(".ie \\n(.g .ds Aq") || roff.contains(".TH "),
            "{page}"
        );
    }
    let main = rendered(&dir.join("track.1"));
    for expected in [
        "NAME",
        "track",
        "SYNOPSIS",
        "--db",
        "TRACK_DB",
        "track-run(1)",
    ] {
        assert!(main.contains(expected), "track.1 lacks {expected}: {main}");
    }
    let run = rendered(&dir.join("track-run.1"));
    assert!(run.contains("--concurrency"), "{run}");
    // Every page ends with the exit statuses, each code at the start of its own line, the
    // sentences filled to the reader's width (not `--help`'s columns run together).
    for page in [&main, &run] {
        let (_, statuses) = page
            .split_once("EXIT STATUS")
            .unwrap_or_else(|| panic!("no EXIT STATUS section: {page}"));
        for codes in ["0", "1", "2", "3", "129, 130, 143"] {
            assert!(
                statuses
                    .lines()
                    .any(|l| l.trim_start().split("  ").next() == Some(codes)),
                "{codes} does not start a line: {statuses}"
            );
        }
        assert!(!statuses.contains("Exit status:"), "{statuses}");
    }
    assert!(run.contains("SEE ALSO"), "{run}");
    let narrow = rendered_at(&dir.join("track.1"), 80);
    assert!(
        narrow.lines().all(|l| l.chars().count() <= 80),
        "a line over 80 columns: {narrow}"
    );
}

/// The page at `path` as `man -l` (or groff) shows it at 100 columns, as plain text.
fn rendered(path: &Path) -> String {
    rendered_at(path, 100)
}

/// The page at `path` as `man -l` (or groff) shows it at `width` columns, as plain text.
fn rendered_at(path: &Path, width: usize) -> String {
    let man = Command::new("man")
        .arg("-l")
        .arg(path)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", width.to_string())
        .env("MAN_KEEP_FORMATTING", "0")
        .output();
    let output = match man {
        Ok(out) if out.status.success() => out,
        _ => {
            let roff = std::fs::read(path).unwrap();
            let mut groff = Command::new("groff")
                .args(["-man", "-Tutf8", "-P-cbou"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("neither `man` nor `groff` to render a man page (apt install man-db)");
            std::io::Write::write_all(&mut groff.stdin.take().unwrap(), &roff).unwrap();
            groff.wait_with_output().unwrap()
        }
    };
    assert!(output.status.success(), "{}", text(&output.stderr));
    // Overstrikes (bold, underline) of a formatter that ignores the variables.
    let shown = text(&output.stdout);
    let mut plain = String::with_capacity(shown.len());
    for c in shown.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain.replace(['\u{2010}', '\u{2212}'], "-")
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    // cargo built the binary before this test started.
    let started = std::time::SystemTime::now();
    let shown = text(&track(&["--version"]).stdout);
    let shape = regex::Regex::new(
        r"^track (\d+\.\d+\.\d+)( \(([0-9a-f]{7,})(-dirty)? (\d{4}-\d{2}-\d{2})\))?\n$",
    )
    .unwrap();
    let parts = shape
        .captures(&shown)
        .unwrap_or_else(|| panic!("{shown:?}"));
    assert_eq!(&parts[1], env!("CARGO_PKG_VERSION"));
    let Some(head) = checkout_head() else {
        assert!(parts.get(2).is_none(), "no checkout, no commit: {shown}");
        return;
    };
    let built = parts.get(3).map_or("", |m| m.as_str());
    assert!(
        !built.is_empty(),
        "built from a checkout, yet no commit: {shown}"
    );
    if !head.hash.starts_with(built) {
        // HEAD may have moved while the tests run (a commit made meanwhile): the binary was
        // built before. One moved before they started is a stale build: build.rs's
        // rerun-if-changed missed it, and cargo did not make the binary again.
        assert!(
            head.moved > started,
            "track --version says {built}, but HEAD was {} before the tests started: build.rs \
             did not run again when HEAD moved",
            head.hash
        );
    }
}

/// HEAD of the checkout the crate is built from.
struct Head {
    /// `git rev-parse HEAD`.
    hash: String,
    /// When HEAD last moved: the newest of the files that say where it is.
    moved: std::time::SystemTime,
}

/// HEAD of the git checkout at the crate's root; None when it is not one (or git is missing).
fn checkout_head() -> Option<Head> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| text(&out.stdout).trim().to_owned())
    };
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != root.canonicalize().unwrap() {
        return None;
    }
    let hash = git(&["rev-parse", "HEAD"])?;
    let mut files = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    files.extend(
        git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])),
    );
    files.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    let moved = files
        .iter()
        .filter_map(|f| std::fs::metadata(root.join(f)).ok()?.modified().ok())
        .max()?;
    Some(Head { hash, moved })
}
