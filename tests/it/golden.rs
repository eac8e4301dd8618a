//! Golden outputs: every output command (`runs`, `models`, `query`, `diff`, `export csv`,
//! `report`) in every format, run on a committed fixture database, must print and write
//! exactly the committed files under `tests/golden/expected/`. A regression guard for
//! refactors: see `tests/golden/README.md`.
//!
//! - `golden_outputs_match_the_committed_files` runs the commands on a temp copy of
//!   `tests/golden/fixture.db` (track migrates a database on open: the committed file is never
//!   opened) with no model server; `TRACK_GOLDEN_UPDATE=1` rewrites the expected files.
//!
//! The fixture itself is made by a command, not a test: `tests/golden/regenerate.rs`
//! (`cargo bench --profile dev --bench regenerate-golden`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{files_under, hermetic, text, track_bin};

/// `tests/golden/` in the source tree.
fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

// ---------------------------------------------------------------------------------------------
// The golden test
// ---------------------------------------------------------------------------------------------

/// One command of the golden set.
struct Case {
    /// Where its outputs go under `expected/`: `query/model.csv`, or a folder `export/bench`
    /// when it writes files (then `--out` is `out/<name>` and its stdout is `stdout.txt`).
    name: String,
    args: Vec<String>,
    /// `COLUMNS` for a terminal table; unset otherwise (a pipe gets whole tables).
    columns: Option<u16>,
    /// The exit status the command must end with.
    code: i32,
    writes: Writes,
}

/// What a case writes besides stdout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Writes {
    /// Nothing: stdout is the output, saved as `expected/<name>`.
    Stdout,
    /// Files into the folder `--out out/<name>`: each is `expected/<name>/<file>`.
    Folder,
    /// One HTML report at `--out out/<name>/report.html`.
    Report,
}

impl Case {
    fn new(name: impl Into<String>, args: &[&str]) -> Self {
        Self {
            name: name.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            columns: None,
            code: 0,
            writes: Writes::Stdout,
        }
    }

    fn columns(mut self, columns: u16) -> Self {
        self.columns = Some(columns);
        self
    }

    fn code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }

    fn writes(mut self, writes: Writes) -> Self {
        self.writes = writes;
        self
    }
}

/// The four ways a table command prints, with the end of their files' names: a table, a
/// `--wide` table, CSV and JSON.
const FORMATS: [(&str, &[&str]); 4] = [
    ("table.txt", &[]),
    ("wide.txt", &["--wide"]),
    ("csv", &["--format", "csv"]),
    ("json", &["--format", "json"]),
];

/// Cases in all four formats, named `<prefix>.table.txt`, `<prefix>.wide.txt`,
/// `<prefix>.csv` and `<prefix>.json`.
fn in_every_format(cases: &mut Vec<Case>, prefix: &str, args: &[&str]) {
    for (suffix, extra) in FORMATS {
        let mut all = args.to_vec();
        all.extend_from_slice(extra);
        cases.push(Case::new(format!("{prefix}.{suffix}"), &all));
    }
}

/// The fixture's runs, as the generator makes them (checked there).
const BENCH_RUNS: (&str, &str) = ("1", "4");
const REVIEW_RUNS: (&str, &str) = ("2", "5");
const RELEVANCE_RUNS: (&str, &str) = ("3", "6");
const PAIRWISE_RUNS: (&str, &str) = ("7", "8");

/// The run selections of a kind whose runs are `(first, second)`: the default, the first run
/// and `all` (or, for reviews, whose default is every run, each of the two).
fn selections(
    (first, second): (&'static str, &'static str),
) -> Vec<(&'static str, Option<&'static str>)> {
    let mut s = vec![("default", None), (first, Some(first))];
    if (first, second) == REVIEW_RUNS {
        s.push((second, Some(second)));
    } else {
        s.push(("all", Some("all")));
    }
    s
}

/// Every output command of `src/commands/` with every format and the run selections that
/// change what it reads.
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // track runs
    in_every_format(&mut cases, "runs/all", &["runs"]);
    cases.push(Case::new(
        "runs/limit-2.table.txt",
        &["runs", "--limit", "2"],
    ));
    cases.push(Case::new("runs/all.table-80-columns.txt", &["runs"]).columns(80));
    // Run 2's one error is an unparsable review: an answer, listed as its `errors` counts it.
    for run in [BENCH_RUNS.0, BENCH_RUNS.1, REVIEW_RUNS.0] {
        in_every_format(
            &mut cases,
            &format!("runs/errors-{run}"),
            &["runs", "--errors", run],
        );
    }

    cases.push(
        Case::new(
            "runs/errors-4.table-80-columns.txt",
            &["runs", "--errors", "4"],
        )
        .columns(80),
    );
    // Run 3 counts no error (a sentence says so); run 99 does not exist (bad input).
    cases.push(Case::new(
        "runs/errors-3.table.txt",
        &["runs", "--errors", "3"],
    ));
    cases.push(Case::new("runs/errors-99.table.txt", &["runs", "--errors", "99"]).code(2));

    // track models (the catalog: built-ins and the fixture's config.yaml)
    in_every_format(&mut cases, "models/catalog", &["models"]);
    cases.push(Case::new("models/catalog.wide-80-columns.txt", &["models", "--wide"]).columns(80));

    // track query: each --by with its run selections (the default, one run, all)
    let queries: [(&str, &[&str], (&str, &str)); 13] = [
        ("model", &["--by", "model"], BENCH_RUNS),
        ("prompt", &["--by", "prompt"], BENCH_RUNS),
        ("reviewer", &["--by", "reviewer"], REVIEW_RUNS),
        ("generator", &["--by", "generator"], REVIEW_RUNS),
        ("sensor", &["--by", "sensor"], REVIEW_RUNS),
        ("criterion", &["--by", "criterion"], REVIEW_RUNS),
        (
            "criterion-agreement",
            &["--by", "criterion", "--agreement"],
            REVIEW_RUNS,
        ),
        (
            "generator-one-reviewer",
            &["--by", "generator", "--reviewer", "anthropic:haiku 3.5"],
            REVIEW_RUNS,
        ),
        ("variant", &["--by", "variant"], RELEVANCE_RUNS),
        (
            "variant-per-predicate",
            &["--by", "variant", "--per-predicate"],
            RELEVANCE_RUNS,
        ),
        ("candidate", &["--by", "candidate"], PAIRWISE_RUNS),
        ("pair", &["--by", "pair"], PAIRWISE_RUNS),
        ("judge", &["--by", "judge"], PAIRWISE_RUNS),
    ];
    for (name, by, runs) in queries {
        for (selection, run) in selections(runs) {
            let mut args = vec!["query"];
            args.extend_from_slice(by);
            if let Some(run) = run {
                args.extend_from_slice(&["--run", run]);
            }
            in_every_format(&mut cases, &format!("query/{name}.run-{selection}"), &args);
        }
    }
    for by in ["model", "prompt"] {
        cases.push(
            Case::new(
                format!("query/{by}.run-default.table-80-columns.txt"),
                &["query", "--by", by],
            )
            .columns(80),
        );
    }

    // track diff: each kind's two runs, the summary and the items, in every format
    for (kind, (base, new)) in [
        ("bench", BENCH_RUNS),
        ("review", REVIEW_RUNS),
        ("relevance", RELEVANCE_RUNS),
        ("pairwise", PAIRWISE_RUNS),
    ] {
        in_every_format(
            &mut cases,
            &format!("diff/{kind}-{base}-{new}"),
            &["diff", base, new],
        );
        in_every_format(
            &mut cases,
            &format!("diff/{kind}-{base}-{new}.items"),
            &["diff", base, new, "--items"],
        );
        // Every kind's second run but pairwise has a significant regression: exit status 3
        // (below the bar). Pairwise: my-model, the one candidate that changed, moved ahead of
        // the two unchanged ones, an improvement (exit 0; it was called a regression, exit 3,
        // before issue 45).
        cases.push(
            Case::new(
                format!("diff/{kind}-{base}-{new}.fail-on-regression.csv"),
                &["diff", base, new, "--fail-on-regression", "--format", "csv"],
            )
            .code(if kind == "pairwise" { 0 } else { 3 }),
        );
    }
    cases.push(Case::new(
        "diff/bench-4-1.reversed.table.txt",
        &["diff", BENCH_RUNS.1, BENCH_RUNS.0],
    ));
    cases.push(Case::new(
        "diff/bench-1-latest.csv",
        &["diff", BENCH_RUNS.0, "latest", "--format", "csv"],
    ));
    cases.push(
        Case::new(
            "diff/bench-1-4.table-80-columns.txt",
            &["diff", BENCH_RUNS.0, BENCH_RUNS.1],
        )
        .columns(80),
    );

    // track export csv: each kind with its run selections
    for (kind, runs) in [
        ("bench", BENCH_RUNS),
        ("review", REVIEW_RUNS),
        ("relevance", RELEVANCE_RUNS),
        ("pairwise", PAIRWISE_RUNS),
    ] {
        for (selection, run) in selections(runs) {
            let mut args = vec!["export", "csv", "--kind", kind];
            if let Some(run) = run {
                args.extend_from_slice(&["--run", run]);
            }
            cases.push(
                Case::new(format!("export/{kind}.run-{selection}"), &args).writes(Writes::Folder),
            );
        }
    }

    // track report: the default selection, latest (one run of each kind), all, each
    // comparison, and run 1 alone (its expected outputs only)
    for (name, run) in [
        ("default", None),
        ("latest", Some("latest")),
        ("all", Some("all")),
        ("bench-1-4", Some("1,4")),
        ("review-2-5", Some("2,5")),
        ("relevance-3-6", Some("3,6")),
        ("pairwise-7-8", Some("7,8")),
        ("run-1", Some("1")),
    ] {
        let mut args = vec!["report"];
        if let Some(run) = run {
            args.extend_from_slice(&["--run", run]);
        }
        cases.push(Case::new(format!("report/{name}"), &args).writes(Writes::Report));
    }
    cases
}

/// A `track` process in `work` on its `track.db`, with no key but the test's, no provider
/// reachable and nothing of the developer's environment that changes an output.
fn track(work: &Path) -> Command {
    let mut cmd = Command::new(track_bin());
    cmd.current_dir(work);
    // `track models` shows whether a key is set: the test keys are, the others are not.
    hermetic(&mut cmd, work);
    // No model server: any call would go to a closed port and fail the case.
    let nowhere = "http://127.0.0.1:9";
    cmd.env("OPENAI_BASE_URL", format!("{nowhere}/v1"))
        .env("ANTHROPIC_BASE_URL", nowhere)
        .env("OLLAMA_HOST", nowhere)
        .env("LOCAL_MODEL_BASE_URL", format!("{nowhere}/v1"));
    cmd
}

/// Runs `case` in `work` and returns its outputs: path under `expected/` → bytes.
fn run_case(work: &Path, case: &Case) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut cmd = track(work);
    cmd.args(&case.args);
    let out_dir = format!("out/{}", case.name);
    match case.writes {
        Writes::Stdout => {}
        Writes::Folder => {
            cmd.args(["--out", &out_dir]);
        }
        Writes::Report => {
            cmd.args(["--out", &format!("{out_dir}/report.html")]);
            std::fs::create_dir_all(work.join(&out_dir)).unwrap();
        }
    }
    if let Some(columns) = case.columns {
        cmd.env("COLUMNS", columns.to_string());
    }
    let output = cmd.output().unwrap();
    let shown = format!("track {}", case.args.join(" "));
    if output.status.code() != Some(case.code) {
        return Err(format!(
            "{shown}: exit status {:?}, expected {}\nstderr:\n{}",
            output.status.code(),
            case.code,
            text(&output.stderr)
        ));
    }
    let stderr = text(&output.stderr);
    if stderr.contains("panicked") {
        return Err(format!("{shown} panicked:\n{stderr}"));
    }
    if case.writes == Writes::Stdout {
        return Ok(vec![(case.name.clone(), output.stdout)]);
    }
    let mut outputs = vec![(format!("{}/stdout.txt", case.name), output.stdout)];
    for (relative, bytes) in files_under(&work.join(&out_dir)) {
        let bytes = if case.writes == Writes::Report {
            normalise_report(&bytes, work)?
        } else {
            bytes
        };
        outputs.push((format!("{}/{relative}", case.name), bytes));
    }
    Ok(outputs)
}

/// The report's one token that changes with every invocation, and only that: the time the
/// report was written, in its footer (`Written by track 0.1.0 on 2026-05-13T10:00:00.123Z.`):
/// there is no option or variable to pin it, so the RFC 3339 time after `on` becomes
/// `$GENERATED_AT`. It must occur exactly once, so that nothing else is ever rewritten.
/// The temp folder the database is in must not occur at all: a report names its database by
/// its file name.
fn normalise_report(bytes: &[u8], work: &Path) -> Result<Vec<u8>, String> {
    let html = std::str::from_utf8(bytes).map_err(|e| format!("report not UTF-8: {e}"))?;
    let work = work.display().to_string();
    if html.contains(&work) {
        return Err(format!(
            "the report names the temp folder {work} {} times: it must name the database by \
             its file name",
            html.matches(&work).count()
        ));
    }
    let footer = regex::Regex::new(
        r"(Written by track [^ ]+ on )\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})\.",
    )
    .unwrap();
    let found = footer.find_iter(html).count();
    if found != 1 {
        return Err(format!(
            "the report's footer time was found {found} times, not once"
        ));
    }
    Ok(footer
        .replace(html, "${1}$$GENERATED_AT.")
        .into_owned()
        .into_bytes())
}

/// Copies the folder `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    for (relative, bytes) in files_under(from) {
        let path = to.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// A temp folder holding the fixture's inputs (where its runs ran) and a copy of its
/// database as `track.db`.
fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden_dir().join("inputs"), dir.path());
    std::fs::copy(golden_dir().join("fixture.db"), dir.path().join("track.db"))
        .expect("tests/golden/fixture.db: rebuild it as tests/golden/README.md says");
    fill_expected_outputs(&dir.path().join("track.db"));
    // The benchmark files are not at hand: the report reads expected outputs from the
    // database only (they are in inputs/ for the generator and for reading).
    for file in ["bench_v1.yaml", "bench_v2.yaml"] {
        std::fs::remove_file(dir.path().join(file)).unwrap();
    }
    // track reads the nearest `.env`, in this folder or a parent: an empty one here keeps one
    // in /tmp or / from setting a key or COLUMNS.
    std::fs::write(dir.path().join(".env"), "").unwrap();
    dir
}

/// A database made before expected outputs were stored with results (the fixture as it was
/// made, migrated, not filled): each failure's Expected shows –, one note names the runs, and
/// the benchmark files, though at hand and unchanged, are not read.
#[test]
fn results_recorded_before_stored_expected_outputs_show_a_dash_and_one_note() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&golden_dir().join("inputs"), dir.path());
    std::fs::copy(golden_dir().join("fixture.db"), dir.path().join("track.db")).unwrap();
    std::fs::write(dir.path().join(".env"), "").unwrap();
    let out = track(dir.path())
        .args(["report", "--run", "1,4", "--out", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert!(html.contains("<dt>Expected</dt><dd><pre>–</pre>"));
    assert!(
        !html.contains("<dt>Expected</dt><dd><pre>391</pre>"),
        "not from the file"
    );
    assert_eq!(
        html.matches("Runs 1, 4 predate expected outputs stored with the results")
            .count(),
        1,
        "one note"
    );
}

/// Migrates the fixture's copy `db` and stores the expected outputs its benchmark runs, made
/// before results kept them (migration V14), would store now: `tests/golden/fill_expected.sql`.
/// The report reads them from the database, never from the benchmark files.
fn fill_expected_outputs(db: &Path) {
    drop(track::store::Store::open(db).expect("migrating the fixture's copy"));
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(&std::fs::read_to_string(golden_dir().join("fill_expected.sql")).unwrap())
        .expect("tests/golden/fill_expected.sql");
    let missing: i64 = conn
        .query_row(
            "SELECT count(*) FROM bench_results WHERE expected IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        missing, 0,
        "fill_expected.sql misses a prompt of the fixture"
    );
}

#[test]
fn golden_outputs_match_the_committed_files() {
    let work = fixture_copy();
    let fixture_before = std::fs::read(golden_dir().join("fixture.db")).unwrap();
    let mut actual = BTreeMap::new();
    let mut failures = Vec::new();
    let cases = cases();
    for case in &cases {
        match run_case(work.path(), case) {
            Ok(outputs) => {
                for (name, bytes) in outputs {
                    assert!(
                        actual.insert(name.clone(), bytes).is_none(),
                        "two cases write {name}"
                    );
                }
            }
            Err(message) => failures.push(message),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // `track report --out -` prints the very file it writes.
    let out = track(work.path())
        .args(["report", "--out", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        normalise_report(&out.stdout, work.path()).unwrap(),
        actual["report/default/report.html"],
        "`track report --out -` differs from the file `track report` writes"
    );
    assert_eq!(
        std::fs::read(golden_dir().join("fixture.db")).unwrap(),
        fixture_before,
        "the committed fixture changed"
    );

    let expected_dir = golden_dir().join("expected");
    if std::env::var_os("TRACK_GOLDEN_UPDATE").is_some_and(|v| v != "0" && !v.is_empty()) {
        let changed = update_expected(&expected_dir, &actual);
        eprintln!(
            "TRACK_GOLDEN_UPDATE: {} of {} expected files written or removed under {}; review \
             them with `git diff tests/golden/expected`",
            changed.len(),
            actual.len(),
            expected_dir.display()
        );
        for name in changed {
            eprintln!("  {name}");
        }
        return;
    }
    let expected = files_under(&expected_dir);
    let mut differences = Vec::new();
    for (name, bytes) in &actual {
        match expected.get(name) {
            None => differences.push((name.clone(), "no expected file".to_owned())),
            Some(want) if want != bytes => {
                differences.push((name.clone(), first_difference(want, bytes)));
            }
            Some(_) => {}
        }
    }
    for name in expected.keys().filter(|n| !actual.contains_key(*n)) {
        differences.push((
            name.clone(),
            "an expected file that no case writes any more".to_owned(),
        ));
    }
    if !differences.is_empty() {
        let mut message = format!(
            "{} of {} golden outputs differ from tests/golden/expected/:\n",
            differences.len(),
            actual.len()
        );
        for (name, _) in &differences {
            message.push_str(&format!("  {name}\n"));
        }
        for (name, diff) in differences.iter().take(DETAILED) {
            message.push_str(&format!("\n=== {name}\n{diff}\n"));
        }
        if differences.len() > DETAILED {
            message.push_str(&format!("\n(the first {DETAILED} are shown)\n"));
        }
        message.push_str(
            "\nIf the change is intended: TRACK_GOLDEN_UPDATE=1 cargo test --test it golden, \
             then review `git diff tests/golden/expected`.",
        );
        panic!("{message}");
    }
}

/// Differing files whose first difference a failure shows.
const DETAILED: usize = 8;

/// Writes `actual` under `dir` and removes the files no case writes; returns the names of
/// the files changed.
fn update_expected(dir: &Path, actual: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut changed = Vec::new();
    let existing = files_under(dir);
    for name in existing.keys().filter(|n| !actual.contains_key(*n)) {
        let path = dir.join(name);
        std::fs::remove_file(&path).unwrap();
        // Folders left empty go too (a removed export or report).
        let mut folder = path.parent();
        while let Some(f) = folder.filter(|f| *f != dir) {
            if std::fs::remove_dir(f).is_err() {
                break;
            }
            folder = f.parent();
        }
        changed.push(format!("{name} (removed)"));
    }
    for (name, bytes) in actual {
        if existing.get(name) != Some(bytes) {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            changed.push(name.clone());
        }
    }
    changed
}

/// Lines of context before the first difference, and most lines shown of each side.
const CONTEXT: usize = 3;
const SHOWN: usize = 12;
/// Longer lines are shown as a window around their first differing character.
const LONG_LINE: usize = 240;

/// The first difference between `expected` and `actual`, unified-diff style: a few lines of
/// context, then the differing lines of each (`-` expected, `+` actual), long lines cut to
/// the neighbourhood of their first differing character.
fn first_difference(expected: &[u8], actual: &[u8]) -> String {
    let (Ok(want), Ok(got)) = (std::str::from_utf8(expected), std::str::from_utf8(actual)) else {
        let at = expected
            .iter()
            .zip(actual)
            .position(|(a, b)| a != b)
            .unwrap_or(expected.len().min(actual.len()));
        return format!(
            "binary contents differ from byte {at} ({} bytes expected, {} actual)",
            expected.len(),
            actual.len()
        );
    };
    let want: Vec<&str> = want.split_inclusive('\n').collect();
    let got: Vec<&str> = got.split_inclusive('\n').collect();
    let prefix = want.iter().zip(&got).take_while(|(a, b)| a == b).count();
    let suffix = want[prefix..]
        .iter()
        .rev()
        .zip(got[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &want[prefix..want.len() - suffix];
    let added = &got[prefix..got.len() - suffix];
    // The column of the first difference between the first two differing lines.
    let column = match (removed.first(), added.first()) {
        (Some(a), Some(b)) => a
            .char_indices()
            .zip(b.chars())
            .find(|((_, x), y)| x != y)
            .map_or(a.len().min(b.len()), |((i, _), _)| i),
        _ => 0,
    };
    let mut out = format!(
        "@@ -{},{} +{},{} @@ (expected {} lines, actual {})\n",
        prefix + 1,
        removed.len(),
        prefix + 1,
        added.len(),
        want.len(),
        got.len()
    );
    for line in &want[prefix.saturating_sub(CONTEXT)..prefix] {
        out.push_str(&format!(" {}\n", shown_line(line, 0)));
    }
    for (sign, lines) in [('-', removed), ('+', added)] {
        for line in lines.iter().take(SHOWN) {
            out.push_str(&format!("{sign}{}\n", shown_line(line, column)));
        }
        if lines.len() > SHOWN {
            out.push_str(&format!("{sign}… {} more lines\n", lines.len() - SHOWN));
        }
    }
    out
}

/// `line` without its end of line, cut to a window around byte `column` when long.
fn shown_line(line: &str, column: usize) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    if line.chars().count() <= LONG_LINE {
        return line.to_owned();
    }
    let floor = |mut i: usize| {
        i = i.min(line.len());
        while !line.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(column.saturating_sub(LONG_LINE / 2));
    let end = floor(start + LONG_LINE);
    format!(
        "{}{}{} [a line of {} bytes, shown from byte {start}]",
        if start > 0 { "…" } else { "" },
        &line[start..end],
        if end < line.len() { "…" } else { "" },
        line.len()
    )
}

#[test]
fn first_difference_shows_the_file_s_differing_lines() {
    let diff = first_difference(b"a\nb\nc\nd\ne\n", b"a\nb\nc\nD\ne\n");
    assert_eq!(
        diff,
        "@@ -4,1 +4,1 @@ (expected 5 lines, actual 5)\n a\n b\n c\n-d\n+D\n"
    );
    let long_a = format!("{}x{}\n", "=".repeat(500), "-".repeat(500));
    let long_b = format!("{}y{}\n", "=".repeat(500), "-".repeat(500));
    let diff = first_difference(long_a.as_bytes(), long_b.as_bytes());
    assert!(
        diff.contains("-…") && diff.contains("x") && diff.contains("+…") && diff.contains("y"),
        "{diff}"
    );
    assert!(diff.lines().all(|l| l.len() < 300), "{diff}");
    assert!(first_difference(b"a\n", b"a\nb\n").ends_with("+b\n"));
}
