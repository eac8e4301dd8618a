//! Pairwise comparisons end to end against the mock, in both forms: candidate models that
//! answer prompts, and generated datasheets under `results/`. Every pair is judged in both
//! orders by every judge; orders that disagree are counted as inconsistent ties; an
//! unreadable verdict is `invalid`; a re-run pays nothing.

use crate::support::mock::Rule;
use crate::support::{Sandbox, text};

/// A judge's verdict as the mock answers it.
fn verdict(winner: &str) -> String {
    format!(r#"{{"justification": "scripted", "winner": "{winner}"}}"#)
}

/// Three candidates (GOOD, MID, BAD answers), two prompts and two judges: gpt-4o-mini prefers
/// GOOD to MID to BAD whatever the order; haiku 3.5 always says "A" (position bias), and
/// answers garbage on the second prompt.
pub(crate) fn answers_sandbox() -> Sandbox {
    let s = Sandbox::new();
    for (model, answer) in [
        ("gpt-4o", "ANS-GOOD"),
        ("claude-3-5-sonnet-20241022", "ANS-MID"),
        ("llama3.2:3b", "ANS-BAD"),
    ] {
        s.mock
            .add_rule(Rule::reply("question", answer).model(model));
    }
    for (shown, winner) in [
        ("ANSWER A:\nANS-GOOD", "A"),
        ("ANSWER B:\nANS-GOOD", "B"),
        ("ANSWER A:\nANS-MID", "A"),
        ("ANSWER B:\nANS-MID", "B"),
    ] {
        s.mock
            .add_rule(Rule::reply(shown, &verdict(winner)).model("gpt-4o-mini"));
    }
    s.mock.add_rule(
        Rule::reply("question two", "I cannot decide, both are fine.")
            .model("claude-3-5-haiku-20241022"),
    );
    s.mock
        .add_rule(Rule::reply("", &verdict("A")).model("claude-3-5-haiku-20241022"));
    s.write(
        "pairwise.yaml",
        "kind: pairwise\n\
         candidates: [openai:gpt-4o, anthropic:sonnet 3.5, ollama:llama3.2]\n\
         judges: [openai:gpt-4o-mini, anthropic:haiku 3.5]\n\
         prompts:\n  - one:\n    prompt: question one\n    output: the reference\n\
         \x20 - two:\n    prompt: question two\n",
    );
    s
}

/// The rows of a CSV file, header first.
fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

#[test]
fn candidate_models_are_judged_in_both_orders_with_inconsistency_and_invalid_counted() {
    let s = answers_sandbox();
    let out = s.track().args(["run", "pairwise.yaml"]).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    // 3 candidates x 2 prompts answer; 3 pairs x 2 prompts x 2 judges x 2 orders.
    assert_eq!(s.mock.request_count(), 6 + 24);
    assert_eq!(s.count("SELECT count(*) FROM pairwise_verdicts"), 24);
    for judge in ["openai:gpt-4o-mini", "anthropic:haiku 3.5"] {
        assert_eq!(
            s.count(&format!(
                "SELECT count(*) FROM pairwise_verdicts WHERE judge = '{judge}'"
            )),
            2 * 3 * 2,
            "exactly twice the pairs, per judge"
        );
    }
    assert_eq!(
        s.count("SELECT count(*) FROM pairwise_verdicts WHERE winner = 'invalid'"),
        6,
        "haiku's garbage on prompt two is invalid, never a guess"
    );
    assert!(
        stdout.contains("Candidates") && stdout.contains("Judges"),
        "{stdout}"
    );
    assert!(
        stderr.contains("judge anthropic:haiku 3.5: 12 verdicts, 6 invalid (50 %)"),
        "{stderr}"
    );
    let judges = s
        .track()
        .args(["query", "--by", "judge", "--format", "csv"])
        .output()
        .unwrap();
    let judges = text(&judges.stdout);
    let lines: Vec<&str> = judges.lines().collect();
    assert!(
        lines[0].starts_with("judge,verdicts,invalid,pairs,inconsistent,inconsistency,kappa"),
        "{judges}"
    );
    // Judges in the order of their names.
    assert!(
        lines[2].starts_with("openai:gpt-4o-mini,12,0,6,0,0"),
        "{judges}"
    );
    assert!(
        lines[1].starts_with("anthropic:haiku 3.5,12,6,3,3,1"),
        "every readable pair of the position-biased judge is inconsistent: {judges}"
    );
    let by_candidate = s
        .track()
        .args(["query", "--by", "candidate", "--format", "csv"])
        .output()
        .unwrap();
    let by_candidate = text(&by_candidate.stdout);
    let first = by_candidate.lines().nth(1).unwrap();
    // gpt-4o: 4 wins (gpt-4o-mini), 2 ties (haiku's inconsistent pairs), no loss; rank 1.
    assert!(first.starts_with("openai:gpt-4o,4,2,0,"), "{by_candidate}");
    assert!(first.ends_with(",1,completed"), "{by_candidate}");
    let pairs = s
        .track()
        .args(["query", "--by", "pair", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(text(&pairs.stdout).lines().count(), 1 + 3);

    // A re-run pays nothing: every call is served from the cache.
    let again = s
        .track()
        .args(["run", "pairwise.yaml", "-q"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(s.mock.request_count(), 30);
    assert_eq!(s.count("SELECT cache_hits FROM runs WHERE id = 2"), 30);
    let dry = s
        .track()
        .args(["run", "pairwise.yaml", "--dry-run"])
        .output()
        .unwrap();
    assert!(
        text(&dry.stdout).contains("30 calls planned, 30 cached, 0 to call"),
        "{}",
        text(&dry.stdout)
    );

    // A person overrules one verdict (issue 30): the export shows it beside the judge's.
    let (uid, judge, shown): (String, String, String) = s
        .db()
        .query_row(
            "SELECT uid, judge, shown_order FROM pairwise_verdicts WHERE run_id = 1 ORDER BY id
             LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let rated = s
        .track()
        .args([
            "rate",
            "1",
            &uid,
            "--fail",
            "--comment",
            "wrong winner",
            "--rater",
            "ann",
        ])
        .output()
        .unwrap();
    assert!(rated.status.success(), "{}", text(&rated.stderr));
    // Exports: verdicts with the winner as a name, and the summary.
    let out = s
        .track()
        .args([
            "export", "csv", "--kind", "pairwise", "--run", "1", "--out", "exp",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let verdicts = csv_rows(&s.path("exp/pairwise_verdicts.csv"));
    assert_eq!(
        verdicts[0],
        [
            "run_id",
            "judge",
            "item",
            "candidate_a",
            "candidate_b",
            "repeat",
            "order",
            "winner",
            "justification",
            "call_id",
            "human_verdict",
            "human_score",
            "human_comment",
            "rater",
            "answer",
            "answer_a",
            "answer_b"
        ]
    );
    let overruled: Vec<&Vec<String>> = verdicts[1..].iter().filter(|v| v[10] == "fail").collect();
    assert_eq!(overruled.len(), 1, "one verdict rated");
    assert_eq!(
        (
            &overruled[0][1],
            &overruled[0][6],
            &overruled[0][12],
            &overruled[0][13]
        ),
        (
            &judge,
            &shown,
            &"wrong winner".to_owned(),
            &"ann".to_owned()
        )
    );
    assert_eq!(verdicts.len(), 1 + 24);
    // Each verdict has the judge's whole answer, and the two candidates' (issue 30).
    for v in &verdicts[1..] {
        let answer_of = |candidate: &str| match candidate {
            "openai:gpt-4o" => "ANS-GOOD",
            "anthropic:sonnet 3.5" => "ANS-MID",
            _ => "ANS-BAD",
        };
        assert_eq!(v[15], answer_of(&v[3]), "{v:?}");
        assert_eq!(v[16], answer_of(&v[4]), "{v:?}");
        if v[1] == "openai:gpt-4o-mini" {
            assert!(v[14].contains(r#""justification""#), "{v:?}");
        }
    }
    let winners: Vec<&str> = verdicts[1..].iter().map(|r| r[7].as_str()).collect();
    assert!(winners.contains(&"openai:gpt-4o") && winners.contains(&"invalid"));
    let summary = csv_rows(&s.path("exp/pairwise_summary.csv"));
    assert_eq!(
        summary[0].join(","),
        "candidate,wins,ties,losses,win_rate,win_rate_low,win_rate_high,strength,strength_low,\
         strength_high,rank"
    );
    assert_eq!(summary.len(), 1 + 3);

    // A diff of the two runs: the same verdicts, no pair moved.
    let diff = s.track().args(["diff", "1", "2"]).output().unwrap();
    assert!(diff.status.success(), "{}", text(&diff.stderr));
    assert!(
        text(&diff.stdout)
            .contains("12 verdicts shared, 0 verdicts toward candidate B, 0 toward candidate A"),
        "{}",
        text(&diff.stdout)
    );
    // The report has the section, its heatmap and its dot plot.
    let report = s
        .track()
        .args(["report", "--run", "1", "--out", "r.html"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    let html = std::fs::read_to_string(s.path("r.html")).unwrap();
    assert!(html.contains("pairwise-win-matrix") && html.contains("pairwise-strengths"));
    // And what each candidate answered (issue 30).
    let answers = &html[html.find("id=\"pairwise-answers\"").expect("the answers")..];
    for answer in ["ANS-GOOD", "ANS-MID", "ANS-BAD"] {
        assert_eq!(
            answers.matches(&format!("<pre>{answer}</pre>")).count(),
            2,
            "{answer} for each of the two prompts"
        );
    }
}

#[test]
fn generated_datasheets_are_compared_per_sensor_with_the_official_one_as_reference() {
    let s = Sandbox::new();
    s.write(
        "data/sensors.csv",
        "Brand,Sensor\nBosch,BME280\nTI,HDC1080\n",
    );
    s.write("datasheet/Bosch_BME280.md", "OFFICIAL BME280 sheet");
    for (file, body) in [
        ("openai_gpt-4o_20250101_000000.md", "SHEET-OLD"),
        ("openai_gpt-4o_20250202_000000.md", "SHEET-NEW"),
        ("anthropic_haiku_20250101_000000.md", "SHEET-HAIKU"),
    ] {
        s.write(&format!("results/Bosch/BME280/{file}"), body);
    }
    // One datasheet only: nothing to compare for this sensor.
    s.write(
        "results/TI/HDC1080/openai_gpt-4o_20250101_000000.md",
        "alone",
    );
    for (shown, winner) in [
        ("DATASHEET A:\nSHEET-NEW", "A"),
        ("DATASHEET B:\nSHEET-NEW", "B"),
        ("DATASHEET A:\nSHEET-HAIKU", "tie"),
        ("DATASHEET B:\nSHEET-HAIKU", "tie"),
    ] {
        s.mock.add_rule(Rule::reply(shown, &verdict(winner)));
    }
    s.write(
        "pairwise.yaml",
        "kind: pairwise\ncandidates: datasheets\njudges: [openai:gpt-4o-mini]\n",
    );
    let out = s.track().args(["run", "pairwise.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // 3 versions of one sensor: 3 pairs, each in both orders.
    assert_eq!(s.mock.request_count(), 6);
    assert!(
        s.mock
            .requests()
            .iter()
            .all(|r| r.last_user_text().contains("OFFICIAL BME280 sheet")),
        "the official datasheet is the reference"
    );
    let names = s.count(
        "SELECT count(*) FROM pairwise_verdicts WHERE candidate_a = 'openai:gpt-4o@20250101_000000' \
         OR candidate_b = 'openai:gpt-4o@20250101_000000'",
    );
    assert_eq!(
        names, 4,
        "one generator's two versions are told apart by their time"
    );
    assert_eq!(
        s.count("SELECT count(*) FROM pairwise_verdicts WHERE item = 'Bosch BME280'"),
        6
    );
    let again = s
        .track()
        .args(["run", "pairwise.yaml", "-q"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(s.mock.request_count(), 6, "a re-run pays nothing");
}

#[test]
fn bad_files_get_one_line_naming_the_thing_and_the_fix() {
    let s = Sandbox::new();
    for (file, want) in [
        (
            "kind: pairwise\ncandidates: [openai:gpt-4o]\njudges: [openai:gpt-4o-mini]\nprompts:\n  - a:\n    prompt: x\n",
            "needs at least 2",
        ),
        (
            "kind: pairwise\ncandidates: [openai:gpt-4o, nowhere:model]\njudges: [openai:gpt-4o-mini]\nprompts:\n  - a:\n    prompt: x\n",
            "candidate `nowhere:model`",
        ),
        (
            "kind: pairwise\ncandidates: datasheets\njudges: [openai:gpt-4o-mini]\n",
            "sensors",
        ),
        (
            "kind: pairwise\ncandidates: [openai:gpt-4o, openai:gpt-4o-mini]\njudges: [openai:gpt-4o-mini]\n",
            "need `prompts:`",
        ),
        (
            "kind: pairwise\ncandidates: [openai:gpt-4o, openai:gpt-4o-mini]\njudge: x\n",
            "pairwise.yaml",
        ),
    ] {
        s.write("pairwise.yaml", file);
        let out = s.track().args(["run", "pairwise.yaml"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{file}");
        assert!(stderr.contains(want), "{file}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    // Sensors listed, but no two datasheets of one sensor under results/.
    s.write("data/sensors.csv", "Brand,Sensor\nBosch,BME280\n");
    s.write(
        "pairwise.yaml",
        "kind: pairwise\ncandidates: datasheets\njudges: [openai:gpt-4o-mini]\n",
    );
    let out = s.track().args(["run", "pairwise.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("has two generated datasheets") && stderr.contains("generate-datasheets"),
        "{stderr}"
    );
    assert_eq!(s.mock.request_count(), 0);
}

/// `track run pairwise.yaml 2>&1 | head`: stdout and stderr closed before the report. The
/// report's notes on stderr (each judge's verdicts) ended the process with a panic (exit 101)
/// after the run was recorded; now the run ends as it would have.
#[test]
fn a_report_whose_stdout_and_stderr_are_a_closed_pipe_ends_as_usual() {
    let s = answers_sandbox();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = s
        .track_process()
        .args(["run", "pairwise.yaml"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(s.count("SELECT count(*) FROM pairwise_verdicts"), 24);
    assert_eq!(s.count("SELECT count(*) FROM pairwise_answers"), 6);
}

/// A pairwise diff compares the verdicts of the pairs both runs judged: a candidate whose
/// answers got worse loses ground to its opponent, significantly, and --fail-on-regression
/// says so; a run that swaps a candidate for another leaves the untouched pairs as they were,
/// and nothing is flagged.
#[test]
fn a_pairwise_diff_flags_the_pair_that_moved_and_never_an_untouched_one() {
    let s = Sandbox::new();
    s.mock
        .add_rule(Rule::reply("question", "ANS-GOOD").model("gpt-4o"));
    // Sonnet answers well in run 1 (six prompts), badly after.
    s.mock.add_rule(
        Rule::reply("question", "ANS-MID")
            .model("claude-3-5-sonnet-20241022")
            .times(6),
    );
    s.mock
        .add_rule(Rule::reply("question", "ANS-BAD").model("claude-3-5-sonnet-20241022"));
    s.mock
        .add_rule(Rule::reply("question", "ANS-BAD").model("llama3.2:3b"));
    s.mock
        .add_rule(Rule::reply("question", "ANS-MID").model("claude-3-5-haiku-20241022"));
    for (shown, winner) in [
        ("ANSWER A:\nANS-GOOD", "A"),
        ("ANSWER B:\nANS-GOOD", "B"),
        ("ANSWER A:\nANS-MID", "A"),
        ("ANSWER B:\nANS-MID", "B"),
        ("", "tie"),
    ] {
        s.mock
            .add_rule(Rule::reply(shown, &verdict(winner)).model("gpt-4o-mini"));
    }
    let prompts: String = (1..=6)
        .map(|i| format!("  - p{i}:\n    prompt: question {i}\n"))
        .collect();
    let file = |candidates: &str| {
        format!(
            "kind: pairwise\ncandidates: [{candidates}]\njudges: [openai:gpt-4o-mini]\nprompts:\n{prompts}"
        )
    };
    s.write(
        "pairwise.yaml",
        &file("openai:gpt-4o, anthropic:sonnet 3.5, ollama:llama3.2"),
    );
    s.write(
        "swapped.yaml",
        &file("openai:gpt-4o, anthropic:haiku 3.5, ollama:llama3.2"),
    );
    for args in [
        vec!["run", "pairwise.yaml", "-q"],
        vec!["run", "pairwise.yaml", "-q", "--no-cache"],
        vec!["run", "swapped.yaml", "-q"],
    ] {
        let out = s.track().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    // Run 2: sonnet's answers fell to llama's: its six verdicts against llama moved to ties.
    let out = s
        .track()
        .args(["diff", "1", "2", "--fail-on-regression"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "significant regression: anthropic:sonnet 3.5 lost ground to ollama:llama3.2: of 6 \
             verdicts both runs gave, 6 moved toward ollama:llama3.2 and 0 toward \
             anthropic:sonnet 3.5, McNemar p = 0.0312"
        ),
        "{stdout}"
    );
    // The pairs sonnet's change did not touch did not move.
    let csv = s
        .track()
        .args(["diff", "1", "2", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&csv.stdout);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(
        rows[0].starts_with("candidate_a,candidate_b,shared,base_score,new_score,delta_score,toward_a,toward_b,p_value,significant_regression,lost_ground"),
        "{csv}"
    );
    let flagged: Vec<&str> = rows[1..]
        .iter()
        .filter(|r| r.contains(",true,"))
        .copied()
        .collect();
    assert_eq!(flagged.len(), 1, "{csv}");
    assert!(
        flagged[0].starts_with("anthropic:sonnet 3.5,ollama:llama3.2,6,"),
        "{csv}"
    );
    // Run 3 swaps sonnet for haiku: the pair both runs share (gpt-4o against llama) is judged
    // alike, and nothing is flagged.
    let out = s
        .track()
        .args(["diff", "1", "3", "--fail-on-regression"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("6 verdicts shared, 0 verdicts toward candidate B, 0 toward candidate A")
            && stdout.contains("no significant regression"),
        "{stdout}"
    );
}

/// Issue 45: a candidate that keeps its name (`{model: …, name: my-model}`) while its model
/// changes, and gets better, used to be "anthropic:haiku 3.5 lost ground to my-model …
/// significant regression", exit 3. The diff knows my-model changed (its requests differ) and
/// haiku did not: a move toward my-model is its improvement (exit 0 with
/// --fail-on-regression); the same candidate made worse is a regression (exit 3).
#[test]
fn an_improved_candidate_that_kept_its_name_is_no_regression_and_a_worse_one_is() {
    let s = Sandbox::new();
    for (model, answer) in [
        ("gpt-4o", "ANS-GOOD"),
        ("claude-3-5-haiku-20241022", "ANS-MID"),
        ("llama3.2:3b", "ANS-BAD"),
    ] {
        s.mock
            .add_rule(Rule::reply("question", answer).model(model));
    }
    for (shown, winner) in [
        ("ANSWER A:\nANS-GOOD", "A"),
        ("ANSWER B:\nANS-GOOD", "B"),
        ("ANSWER A:\nANS-MID", "A"),
        ("ANSWER B:\nANS-MID", "B"),
        ("", "tie"),
    ] {
        s.mock
            .add_rule(Rule::reply(shown, &verdict(winner)).model("gpt-4o-mini"));
    }
    let prompts: String = (1..=6)
        .map(|i| format!("  - p{i}:\n    prompt: question {i}\n"))
        .collect();
    let file = |model: &str| {
        format!(
            "kind: pairwise\ncandidates:\n  - anthropic:haiku 3.5\n  - {{model: {model}, name: my-model}}\n\
             judges: [openai:gpt-4o-mini]\nprompts:\n{prompts}"
        )
    };
    s.write("before.yaml", &file("ollama:llama3.2"));
    s.write("after.yaml", &file("openai:gpt-4o"));
    for name in ["before.yaml", "after.yaml", "before.yaml"] {
        let out = s.track().args(["run", name, "-q"]).output().unwrap();
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
    }
    // Run 2: my-model (now gpt-4o) beats haiku on all six items it lost in run 1.
    let out = s
        .track()
        .args(["diff", "1", "2", "--fail-on-regression"])
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Long lines are folded to the terminal: read them whole.
    let stdout = stdout.replace('\n', " ");
    assert!(
        stdout.contains("no significant regression")
            && stdout.contains(
                "significant improvement: my-model gained ground on anthropic:haiku 3.5: of 6 \
                 verdicts both runs gave, 6 moved toward my-model and 0 toward anthropic:haiku \
                 3.5, McNemar p = 0.0312"
            )
            && stdout.contains("my-model changed: its requests differ"),
        "{stdout}"
    );
    assert!(!stdout.contains("significant regression:"), "{stdout}");
    let csv = s
        .track()
        .args(["diff", "1", "2", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&csv.stdout);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("significant_regression,lost_ground,gained_ground,changed_candidates"),
        "{csv}"
    );
    assert!(csv.contains(",false,,my-model,my-model,"), "{csv}");
    // Run 3 is run 1 again: my-model got worse against the same haiku, a regression.
    let out = s
        .track()
        .args(["diff", "2", "3", "--fail-on-regression"])
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "significant regression: my-model lost ground to anthropic:haiku 3.5: of 6 verdicts"
        ),
        "{stdout}"
    );
}

#[test]
fn query_by_human_gives_each_judge_s_agreement_with_people_s_ratings_of_the_answers() {
    let s = answers_sandbox();
    s.track()
        .args(["run", "pairwise.yaml", "-q"])
        .assert()
        .success();
    let uid = |table: &str, condition: &str| -> String {
        s.db()
            .query_row(
                &format!("SELECT uid FROM {table} WHERE {condition}"),
                [],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("{table} {condition}: {e}"))
    };
    // On item one, the person passes gpt-4o's answer (GOOD) and fails the others: they
    // prefer gpt-4o to each, and have no preference between sonnet and llama.
    for (candidate, verdict) in [
        ("openai:gpt-4o", "--pass"),
        ("anthropic:sonnet 3.5", "--fail"),
        ("ollama:llama3.2", "--fail"),
    ] {
        let answer = uid(
            "pairwise_answers",
            &format!("candidate = '{candidate}' AND item = 'one'"),
        );
        s.track()
            .args(["rate", "1", &answer, verdict, "--rater", "ada"])
            .assert()
            .success();
    }
    // And says one of gpt-4o-mini's verdicts is wrong.
    let verdict = uid(
        "pairwise_verdicts",
        "judge = 'openai:gpt-4o-mini' AND item = 'two' ORDER BY id LIMIT 1",
    );
    s.track()
        .args(["rate", "1", &verdict, "--fail", "--rater", "ada"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["query", "--by", "human", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    s.write("human.csv", &text(&out.stdout));
    let rows = csv_rows(&s.path("human.csv"));
    let header = &rows[0];
    let of = |judge: &str| -> std::collections::HashMap<&str, &str> {
        let row = rows
            .iter()
            .find(|r| r[0] == judge)
            .unwrap_or_else(|| panic!("no row of {judge} in {rows:?}"));
        header
            .iter()
            .map(String::as_str)
            .zip(row.iter().map(String::as_str))
            .collect()
    };
    // gpt-4o-mini prefers GOOD in both orders: it agrees on both pairs.
    let mini = of("openai:gpt-4o-mini");
    assert_eq!((mini["rated"], mini["agree"]), ("2", "2"), "{mini:?}");
    assert_eq!(mini["agree_pct"], "100.0");
    assert_eq!(
        (mini["verdicts_rated"], mini["verdicts_confirmed"]),
        ("1", "0")
    );
    // haiku 3.5 says A whatever it is shown: each pair a tie, never the person's winner.
    let haiku = of("anthropic:haiku 3.5");
    assert_eq!((haiku["rated"], haiku["agree"]), ("2", "0"), "{haiku:?}");
    assert_eq!(haiku["kappa"], "0.0");
}
