//! Human ratings end to end (issue 30): `track rate` three results of a benchmark run against
//! the mock, then `track query --by result` and `--by human` (Cohen's kappa), `track export
//! csv` and the Parquet export carry them, and bad ratings are refused with a reason.

use crate::answers::{csv_rows, parquet_texts};
use crate::support::mock::Rule;
use crate::support::{Sandbox, bench_yaml, text};

/// A run of three results: `capital` and `sum` pass, `miss` fails.
fn three_results() -> Sandbox {
    let s = Sandbox::new();
    s.mock.add_rule(Rule::reply("Capital of France", "Paris"));
    s.mock.add_rule(Rule::reply("2+2", "4"));
    s.mock.add_rule(Rule::reply("wrong", "nope"));
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[
                ("capital", "Capital of France?", "Paris", "contains"),
                ("sum", "What is 2+2?", "4", "exact"),
                ("miss", "wrong answer please", "yes", "exact"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    s
}

/// The uid of each prompt's result, from `track query --by result`.
fn uids(s: &Sandbox) -> std::collections::HashMap<String, String> {
    let out = s
        .track()
        .args(["query", "--by", "result", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("results.csv", &text(&out.stdout));
    csv_rows(&s.path("results.csv"))
        .into_iter()
        .map(|r| (r["case"].clone(), r["uid"].clone()))
        .collect()
}

fn rate(s: &Sandbox, args: &[&str]) -> std::process::Output {
    s.track()
        .env("TRACK_RATER", "ann")
        .arg("rate")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn three_ratings_reach_the_query_the_exports_and_the_agreement() {
    let s = three_results();
    let uid = uids(&s);
    // A uid's first 10 characters are enough.
    for (prompt, args) in [
        ("capital", vec!["--pass"]),
        (
            "miss",
            vec!["--pass", "--comment", "the check is too strict"],
        ),
        ("sum", vec!["--fail", "--score", "2"]),
    ] {
        let mut all = vec!["1", &uid[prompt][..10]];
        all.extend(args);
        let out = rate(&s, &all);
        assert!(out.status.success(), "{prompt}: {}", text(&out.stderr));
    }
    assert_eq!(s.count("SELECT count(*) FROM ratings"), 3);
    // The results are as they were: a rating is a row of its own.
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results WHERE status = 'passed'"),
        2
    );

    // `--by result`: each result's outcome beside the person's verdict.
    uids(&s);
    let rows = csv_rows(&s.path("results.csv"));
    let of = |prompt: &str| rows.iter().find(|r| r["case"] == prompt).unwrap().clone();
    assert_eq!(
        (
            of("miss")["result"].as_str(),
            of("miss")["human_verdict"].as_str()
        ),
        ("failed", "pass")
    );
    assert_eq!(of("miss")["human_comment"], "the check is too strict");
    assert_eq!(of("sum")["human_score"], "2");
    assert_eq!(of("sum")["rater"], "ann");

    // `track export csv` carries them.
    s.track()
        .args(["export", "csv", "--out", "exports"])
        .assert()
        .success();
    let exported = csv_rows(&s.path("exports/bench_results.csv"));
    let verdicts: std::collections::BTreeMap<String, String> = exported
        .iter()
        .map(|r| (r["case"].clone(), r["human_verdict"].clone()))
        .collect();
    assert_eq!(
        verdicts.into_iter().collect::<Vec<_>>(),
        [
            ("capital".to_owned(), "pass".to_owned()),
            ("miss".to_owned(), "pass".to_owned()),
            ("sum".to_owned(), "fail".to_owned())
        ]
    );

    // And the Parquet export, beside the outcome.
    s.track()
        .args(["export", "parquet", "--out", "lake"])
        .assert()
        .success();
    let part = crate::support::files_under(&s.path("lake"))
        .into_keys()
        .find(|p| p.starts_with("bench_results/"))
        .unwrap();
    let mut parquet = parquet_texts(
        &s.path("lake").join(part),
        &["prompt_name", "human_verdict"],
    );
    parquet.sort();
    assert_eq!(
        parquet[2],
        [Some("sum".to_owned()), Some("fail".to_owned())]
    );

    // Agreement: the person agrees with the outcome on capital only. Person P P F, outcome
    // P F P: p_o = 1/3, p_e = (2/3)² + (1/3)² = 5/9, kappa = (1/3 - 5/9) / (4/9) = -0.5.
    let out = s
        .track()
        .args(["query", "--by", "human", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("human.csv", &text(&out.stdout));
    let human = csv_rows(&s.path("human.csv"));
    let outcome = human.iter().find(|r| r["check"] == "outcome").unwrap();
    assert_eq!(
        (outcome["rated"].as_str(), outcome["agree"].as_str()),
        ("3", "1")
    );
    let kappa: f64 = outcome["kappa"].parse().unwrap();
    assert!((kappa + 0.5).abs() < 1e-9, "{outcome:?}");
    // The table prints kappa too.
    let table = s
        .track()
        .env("COLUMNS", "80")
        .args(["query", "--by", "human"])
        .output()
        .unwrap();
    let table = text(&table.stdout);
    assert!(table.contains("kappa") && table.contains("-0.5"), "{table}");

    // The report: the agreement, the rated results, and the person beside a failure.
    let out = s
        .track()
        .args(["report", "--out", "r.html"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(s.path("r.html")).unwrap();
    let human = &html[html.find("id=\"bench-human\"").expect("the ratings")..];
    assert!(
        human.contains("bench-agreement") && human.contains("-0.5"),
        "{human}"
    );
    assert!(human.contains("too strict"), "{human}");
    assert!(
        html.contains("<dt>Person</dt><dd>pass · the check is too strict (ann)</dd>"),
        "the failure `miss` with the person's verdict"
    );
}

/// The current rating of result `uid` as `track query --by result` shows it: verdict, score,
/// comment and rater.
fn current(s: &Sandbox, prompt: &str) -> [String; 4] {
    uids(s);
    let rows = csv_rows(&s.path("results.csv"));
    let row = rows.iter().find(|r| r["case"] == prompt).unwrap();
    ["human_verdict", "human_score", "human_comment", "rater"].map(|c| row[c].clone())
}

/// Issue 45: a pass, then a score alone, then a comment alone: each keeps what came before
/// (the score and the comment used to erase the pass); `--clear` empties one field, `--clear
/// all` withdraws the rating.
#[test]
fn a_rating_in_three_steps_keeps_each_field_given_before() {
    let s = three_results();
    let uid = uids(&s)["miss"].clone();
    let step = |args: &[&str]| {
        let mut all = vec!["1", uid.as_str()];
        all.extend(args);
        let out = rate(&s, &all);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stderr)
    };
    step(&["--pass"]);
    step(&["--score", "3"]);
    let said = step(&["--comment", "right after all"]);
    assert!(
        said.contains("pass, score 3, comment \"right after all\""),
        "the note says the rating as it stands: {said}"
    );
    assert_eq!(current(&s, "miss"), ["pass", "3", "right after all", "ann"]);
    // The agreement counts the pass.
    let out = s
        .track()
        .args(["query", "--by", "human", "--format", "csv"])
        .output()
        .unwrap();
    s.write("human.csv", &text(&out.stdout));
    let human = csv_rows(&s.path("human.csv"));
    let outcome = human.iter().find(|r| r["check"] == "outcome").unwrap();
    assert_eq!(outcome["rated"], "1", "{human:?}");
    // One field emptied, the others kept; then the whole rating withdrawn.
    step(&["--clear", "score"]);
    assert_eq!(current(&s, "miss"), ["pass", "", "right after all", "ann"]);
    step(&["--fail", "--clear", "verdict,comment"]);
    assert_eq!(
        current(&s, "miss"),
        ["fail", "", "", "ann"],
        "given beats cleared"
    );
    let said = step(&["--clear", "all"]);
    assert!(said.contains("withdrawn"), "{said}");
    assert_eq!(current(&s, "miss"), ["", "", "", ""]);
    assert_eq!(
        s.count("SELECT count(*) FROM ratings"),
        6,
        "every step kept"
    );
}

#[test]
fn a_bad_rating_is_refused_with_what_to_do() {
    let s = three_results();
    let uid = uids(&s);
    for (args, expected) in [
        (
            vec!["1", "0123456789abcdef", "--pass"],
            "run 1 has no result",
        ),
        (vec!["1", uid["sum"].as_str()], "a rating gives a verdict"),
        (
            vec!["1", uid["sum"].as_str(), "--clear", "scores"],
            "`scores` is not a field",
        ),
        (vec!["9", uid["sum"].as_str(), "--pass"], "no run 9"),
        (
            vec!["1", uid["sum"].as_str(), "--score", "9"],
            "9 is not in 1..=5",
        ),
    ] {
        let out = rate(&s, &args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let out = s
        .track()
        .args(["rate", "1", uid["sum"].as_str(), "--pass"])
        .env_remove("USER")
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("give --rater NAME"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.count("SELECT count(*) FROM ratings"), 0);
}

#[test]
fn a_merge_copies_the_ratings_once() {
    let s = three_results();
    let uid = uids(&s);
    let out = rate(&s, &["1", &uid["miss"], "--pass", "--comment", "fine"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = s.db_path();
    let merged = s.path("merged.db");
    for _ in 0..2 {
        let out = s
            .track()
            .args(["merge", merged.to_str().unwrap(), db.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let conn = rusqlite::Connection::open(&merged).unwrap();
    let (n, verdict, comment): (i64, String, String) = conn
        .query_row(
            "SELECT count(*), max(verdict), max(comment) FROM ratings r
             JOIN bench_results b ON b.uid = r.result_uid AND b.run_id = r.run_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((n, verdict.as_str(), comment.as_str()), (1, "pass", "fine"));
}
