//! Run budgets (`--budget USD`, `budget:` in experiment files), as a user meets them: a bad
//! amount is refused in one line naming the setting and the fix; a dry run says whether the
//! plan's bound fits the budget; the budget is recorded with the run and `track runs` shows it
//! next to what was paid. (A budget stopping a run is tested against the mock's billing.)

use crate::support::mock::MockProvider;
use crate::support::{Sandbox, bench_yaml, text};

/// A benchmark of one model and two prompts, with `extra` lines before it.
fn bench(s: &Sandbox, name: &str, extra: &str) {
    let yaml = bench_yaml(
        &["openai:gpt-4o"],
        &[
            ("p1", "first question", "mock", "contains"),
            ("p2", "second question", "mock", "contains"),
        ],
    );
    s.write(name, &format!("{extra}{yaml}"));
}

#[test]
fn a_bad_budget_on_the_command_line_is_one_line_naming_the_option_and_the_fix() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", "");
    let commands: [&[&str]; 4] = [
        &["run", "bench.yaml"],
        &["generate-datasheets", "--model", "openai:gpt-4o"],
        &["review-datasheets", "--reviewer", "openai:gpt-4o"],
        &[
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "x/*.png",
            "--ground-truth",
            "x.json",
        ],
    ];
    for command in commands {
        for bad in ["-1", "0", "abc"] {
            let out = s
                .track()
                .args(command)
                .args(["--budget", bad])
                .output()
                .unwrap();
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?} {bad}: {stderr}");
            let first = stderr.lines().next().unwrap_or_default();
            assert!(
                first.starts_with(&format!(
                    "error: invalid value '{bad}' for '--budget <USD>': "
                )),
                "{command:?} {bad}: {stderr}"
            );
            assert!(
                first.contains("give the most the run may spend in US dollars, e.g. 5 or 0.25"),
                "{command:?} {bad}: {stderr}"
            );
        }
    }
    assert!(
        !s.db_path().exists(),
        "a refused option touches no database"
    );
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn a_bad_budget_in_a_file_of_any_kind_is_one_line_naming_the_file_and_the_setting() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", "budget: abc\n");
    s.write(
        "review.yaml",
        "kind: review\nreviewers: [openai:gpt-4o]\nbudget: -1\n",
    );
    s.write(
        "relevance.yaml",
        "kind: relevance\nmodel: openai:gpt-4o\nimages: \"x/*.png\"\nground_truth: x.json\nbudget: 0\n",
    );
    for (file, want) in [
        (
            "bench.yaml",
            "bench.yaml:1:9: `budget:` `abc` is not an amount: give the most the run may spend",
        ),
        (
            "review.yaml",
            "review.yaml:3:9: `budget:` a budget must be more than $0 (got `-1`)",
        ),
        (
            "relevance.yaml",
            "relevance.yaml:5:9: `budget:` a budget must be more than $0 (got `0`)",
        ),
    ] {
        let out = s.track().args(["run", file, "--dry-run"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{file}: {stderr}");
        assert!(stderr.contains(want), "{file}: {stderr}");
        assert!(
            stderr.contains("US dollars, e.g. 5 or 0.25"),
            "{file}: {stderr}"
        );
    }
    assert_eq!(s.mock.request_count(), 0);
}

/// The line of a dry run's stdout about the budget.
fn budget_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("budget $"))
        .unwrap_or_else(|| panic!("no budget line in {stdout}"))
}

#[test]
fn a_dry_run_says_whether_the_plans_bound_fits_the_budget() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", "");
    bench(&s, "capped.yaml", "budget: 1000\n");
    let dry = |args: &[&str]| {
        let out = s.track().args(args).arg("--dry-run").output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let fits = dry(&["run", "bench.yaml", "--budget", "1000"]);
    let line = budget_line(&fits);
    assert!(
        line.starts_with("budget $1000: the plan's bound $") && line.ends_with(" fits"),
        "{line}"
    );
    let tight = dry(&["run", "bench.yaml", "--budget", "$0.000001"]);
    let line = budget_line(&tight);
    assert!(
        line.starts_with("budget $0.000001: the plan's bound $")
            && line.ends_with(
                " does not fit; the run would stop at its budget, having sent only what fits"
            ),
        "{line}"
    );
    // The file's budget, unless the command line gives one.
    assert!(budget_line(&dry(&["run", "capped.yaml"])).ends_with(" fits"));
    assert!(
        budget_line(&dry(&["run", "capped.yaml", "--budget", "0.000001"])).contains("does not fit")
    );
    // Without a budget, no budget line.
    assert!(!dry(&["run", "bench.yaml"]).contains("budget $"));
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn track_runs_shows_each_runs_budget_next_to_paid() {
    let s = Sandbox::with_mock(MockProvider::start());
    bench(&s, "bench.yaml", "");
    bench(&s, "capped.yaml", "budget: \"$3\"\n");
    let run = |args: &[&str]| {
        let out = s.track().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stderr)
    };
    let tally = run(&["run", "bench.yaml", "--budget", "5"]);
    assert!(tally.contains(" of a $5 budget; took "), "{tally}");
    run(&["run", "bench.yaml"]);
    run(&["run", "capped.yaml"]);
    run(&["run", "capped.yaml", "--budget", "0.5"]);
    let csv = text(
        &s.track()
            .args(["runs", "--format", "csv"])
            .output()
            .unwrap()
            .stdout,
    );
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let budget = header
        .iter()
        .position(|c| *c == "budget_usd")
        .expect("budget_usd");
    let paid = header
        .iter()
        .position(|c| *c == "paid_usd")
        .expect("paid_usd");
    assert_eq!(budget, paid + 1, "budget next to paid: {header:?}");
    // Newest first: the command line's budget wins over the file's.
    let budgets: Vec<Option<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(budget).unwrap().parse().ok())
        .collect();
    assert_eq!(budgets, [Some(0.5), Some(3.0), None, Some(5.0)], "{csv}");
    assert_eq!(
        s.count("SELECT count(*) FROM runs WHERE json_extract(options_json, '$.budget_usd') = 0.5"),
        1
    );
    let json = text(
        &s.track()
            .args(["runs", "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(json.contains("\"budget_usd\""), "{json}");
    let table = text(&s.track().args(["runs"]).output().unwrap().stdout);
    assert!(table.contains("budget $"), "{table}");
    let wide = text(&s.track().args(["runs", "--wide"]).output().unwrap().stdout);
    assert!(
        wide.contains("budget ($)") && wide.contains("paid ($)"),
        "{wide}"
    );
}

#[test]
fn a_dry_run_footer_counts_in_words_and_never_says_minus_zero() {
    let s = Sandbox::with_mock(MockProvider::start());
    // A model the catalog does not list has no price: no call's bound is known.
    let yaml = bench_yaml(
        &["openai:gpt-unpriced-for-tests"],
        &[("p1", "first question", "mock", "contains")],
    );
    s.write("bench.yaml", &yaml);
    let out = s
        .track()
        .args(["run", "bench.yaml", "--dry-run"])
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "dry run of bench.yaml: 1 call planned, 0 cached, 1 to call, at most $0.000000 plus \
             the unknown cost"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("$-"), "{stdout}");
    assert_eq!(s.mock.request_count(), 0);
}
