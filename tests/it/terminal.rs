//! The terminal: a closed pipe is not an error, a database is found the way git finds its
//! repository, and counts read as English.

use std::io::{BufRead as _, BufReader};

use crate::support::{Sandbox, bench_yaml, text};

fn many_prompts(s: &Sandbox, n: usize) {
    let prompts: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("a_rather_long_prompt_name_that_widens_every_row_{i:04}"),
                format!("question {i}"),
            )
        })
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str(), "mock", "contains"))
        .collect();
    s.write("bench.yaml", &bench_yaml(&["openai:gpt-4o"], &prompts));
}

#[test]
fn a_closed_pipe_ends_a_run_report_quietly() {
    let s = Sandbox::new();
    many_prompts(&s, 250);
    let mut child = s
        .track_process()
        .args(["run", "bench.yaml"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then close the pipe.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
    // 250 cases: their table is named, not printed, and the summaries follow.
    assert!(first.starts_with("Per case: 250 cases"), "{first}");
    assert_eq!(
        s.count("SELECT count(*) FROM bench_results"),
        250,
        "the run itself is recorded whole"
    );
}

#[test]
fn the_database_is_found_from_a_subfolder_and_a_new_one_is_announced() {
    let s = Sandbox::new();
    many_prompts(&s, 3);
    std::fs::create_dir_all(s.path("sub/deeper")).unwrap();
    let run = |dir: &str, file: &str| {
        s.track_process()
            .env_remove("TRACK_DB")
            .current_dir(s.path(dir))
            .args(["run", file, "-q"])
            .output()
            .unwrap()
    };
    let first = run(".", "bench.yaml");
    let stderr = text(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    let created = s.path("track.db");
    assert!(
        stderr.contains(&format!("created a new database at {}", created.display())),
        "{stderr}"
    );
    let again = run("sub/deeper", "../../bench.yaml");
    let stderr = text(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(!stderr.contains("created a new database"), "{stderr}");
    assert!(!s.path("sub/deeper/track.db").exists());
    assert_eq!(
        s.mock.request_count(),
        3,
        "the second run was served from the parent's cache"
    );
}

#[test]
fn one_error_is_one_error() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[("a", "forbidden words", "x", "contains")],
        ),
    );
    s.mock
        .add_rule(crate::support::mock::Rule::fail("forbidden", 400, 10));
    let out = s.track().args(["run", "bench.yaml"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 call, 0 cache hits, 1 error;"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing could run (1 error)"), "{stderr}");
}

#[test]
fn tables_fit_80_and_120_columns_without_splitting_a_cell() {
    let s = Sandbox::new();
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o", "anthropic:haiku 3.5"],
            &[
                ("capital", "capital question", "mock", "contains"),
                ("other", "other question", "nope", "contains"),
            ],
        ),
    );
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    // The values every table must show whole, from the CSV of the same summary.
    let csv = s
        .track()
        .args(["query", "--by", "model", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&csv.stdout);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let total_time: f64 = row[header.iter().position(|h| *h == "total_time_s").unwrap()]
        .parse()
        .unwrap();
    for (width, wide) in [(80usize, false), (120, false), (80, true), (120, true)] {
        for args in [
            vec!["query", "--by", "model"],
            vec!["query", "--by", "prompt"],
            vec!["runs"],
            vec!["run", "bench.yaml"],
        ] {
            let mut args = args;
            if wide {
                args.push("--wide");
            }
            let out = s
                .track()
                .args(&args)
                .env("COLUMNS", width.to_string())
                .output()
                .unwrap();
            let stdout = text(&out.stdout);
            let widest = stdout.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(
                widest <= width,
                "{args:?} at {width}: {widest} wide\n{stdout}"
            );
            if args[0] == "query" && args[2] == "model" {
                // Compact tables show the main columns under short headers; --wide, all of
                // them under full headers (in parts at 80 columns).
                let headers: &[&str] = if wide {
                    &[
                        "total cost ($)",
                        "energy max (Wh)",
                        "paid ($)",
                        "output tokens",
                    ]
                } else {
                    &["cost $", "pass %"]
                };
                for whole in [
                    "openai:gpt-4o",
                    "anthropic:haiku 3.5",
                    "50.0",
                    &format!("{total_time:.2}"),
                ]
                .iter()
                .chain(headers)
                {
                    assert!(
                        stdout.contains(whole),
                        "`{whole}` split at {width}:\n{stdout}"
                    );
                }
                assert_eq!(
                    stdout.contains("paid"),
                    wide,
                    "paid only in wide tables:\n{stdout}"
                );
            }
            if args[0] == "runs" {
                let started = stdout
                    .lines()
                    .filter(|l| l.contains("T") && (l.contains("Z ") || l.ends_with('Z')))
                    .count();
                assert!(started >= 1, "timestamps whole at {width}:\n{stdout}");
            }
        }
    }
}

#[test]
fn a_summary_of_reviews_without_scores_says_why() {
    let s = Sandbox::new();
    s.write(
        "data/sensors.csv",
        "Brand,Sensor\nBosch,BME280\nTI,HDC1080\n",
    );
    s.write("datasheet/Bosch_BME280.md", "# BME280 official\n");
    s.write("datasheet/TI_HDC1080.md", "# HDC1080 official\n");
    for path in [
        "results/Bosch/BME280/openai_gpt-4o_20250504_030759.md",
        "results/TI/HDC1080/openai_gpt-4o_20250504_030801.md",
    ] {
        s.write(path, "A datasheet.");
    }
    // Without structured output the mock's default answer is prose: no review can be read.
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o",
            "-q",
            "--structured",
            "off",
        ])
        .assert()
        .success();
    for by in ["criterion", "reviewer"] {
        let out = s.track().args(["query", "--by", by]).output().unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("no review has a score to summarise: 2 reviews in the selected runs, 2 unparsable, 0 failed calls, 0 without an official datasheet"),
            "{by}: {stderr}"
        );
    }
    // The run of a command is named by its command line, with the models it called.
    let out = s
        .track()
        .args(["runs", "--format", "json"])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        runs[0]["file"], "review-datasheets --reviewer openai:gpt-4o --structured off",
        "{runs}"
    );
    assert_eq!(runs[0]["models"], "openai:gpt-4o", "{runs}");
    assert_eq!(runs[0]["kind"], "review", "{runs}");
}

#[test]
fn runs_can_be_limited_to_the_newest() {
    let s = Sandbox::new();
    many_prompts(&s, 1);
    for _ in 0..3 {
        s.track()
            .args(["run", "bench.yaml", "-q"])
            .assert()
            .success();
    }
    let out = s
        .track()
        .args(["runs", "--limit", "2", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(ids, ["3", "2"], "{csv}");
}

#[test]
fn errors_are_summarised_per_model_and_cause() {
    let s = Sandbox::new();
    // Many 500s from one model must not hide that the other has no key.
    let prompts: Vec<(String, String)> = (0..7)
        .map(|i| (format!("p{i}"), format!("broken question {i}")))
        .collect();
    let prompts: Vec<(&str, &str, &str, &str)> = prompts
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_str(), "x", "contains"))
        .collect();
    s.write(
        "bench.yaml",
        &bench_yaml(&["openai:gpt-4o", "anthropic:claude-3-5-haiku"], &prompts),
    );
    s.mock
        .add_rule(crate::support::mock::Rule::fail("broken", 400, 100));
    let out = s
        .track()
        .env_remove("ANTHROPIC_API_KEY")
        .args(["run", "bench.yaml"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("14 errors (2 causes):"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let line_of = |model: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("  {model}")) && l.contains(": 7 errors: "))
            .unwrap_or_else(|| panic!("no line for {model}: {stderr}"))
            .to_string()
    };
    assert!(line_of("openai:gpt-4o").contains("HTTP 400"), "{stderr}");
    assert!(
        line_of("anthropic:").contains("ANTHROPIC_API_KEY"),
        "{stderr}"
    );
    assert!(stderr.contains("track runs --errors 1"), "{stderr}");
}

#[test]
fn options_of_every_command_are_listed_once_at_the_top() {
    let s = Sandbox::new();
    let top = s.track().arg("--help").output().unwrap();
    let top = text(&top.stdout);
    assert!(
        top.contains("--db <PATH>") && top.contains("--quiet"),
        "{top}"
    );
    for sub in [vec!["run"], vec!["query"], vec!["export", "csv"]] {
        let mut args = sub.clone();
        args.push("--help");
        let help = s.track().args(&args).output().unwrap();
        let help = text(&help.stdout);
        let (own, pointer) = help
            .split_once("Options of every command")
            .unwrap_or_else(|| panic!("{sub:?}: no pointer to the top level: {help}"));
        assert!(!own.contains("--db"), "{sub:?}: {help}");
        assert!(!own.contains("--verbose"), "{sub:?}: {help}");
        assert!(pointer.contains("track --help"), "{sub:?}: {help}");
    }
    // They still work after the subcommand.
    many_prompts(&s, 1);
    let elsewhere = s.path("elsewhere.db");
    s.track()
        .args(["run", "bench.yaml", "-q", "--db"])
        .arg(&elsewhere)
        .assert()
        .success();
    assert!(elsewhere.exists());
    let out = s
        .track()
        .args(["runs", "--format", "csv", "--db"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout).lines().count(),
        2,
        "one run in elsewhere.db"
    );
}

/// Each text of a JSON output (`--format json`), in the pieces a table may break it into
/// (at spaces and after commas), but for the fields `hidden`: what a table must still show,
/// whole, when it wraps.
fn json_words(json: &str, hidden: &[&str]) -> Vec<String> {
    fn walk(v: &serde_json::Value, hidden: &[&str], out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.extend(
                s.split(|c: char| c.is_whitespace() || c == ',')
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            ),
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, hidden, out)),
            serde_json::Value::Object(o) => o
                .iter()
                .filter(|(k, _)| !hidden.contains(&k.as_str()))
                .for_each(|(_, v)| walk(v, hidden, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::from_str(json).unwrap(), hidden, &mut out);
    out
}

#[test]
fn long_cells_wrap_and_one_row_summaries_list_at_80_columns() {
    use crate::support::mock::{Action, Rule};
    let s = Sandbox::new();
    crate::review::add_review_files(&s);
    s.mock.add_rule(Rule::reply(
        "Write a complete technical datasheet",
        "# Generated\nA datasheet.",
    ));
    s.mock.add_rule(Rule::new(
        "other question",
        Action::Status {
            code: 400,
            retry_after: None,
            body: String::new(),
        },
    ));
    // A run named by its command line, longer than 80 columns.
    let generate = [
        "generate-datasheets",
        "--model",
        "openai:gpt-4o",
        "--sensor",
        "HDC1080",
        "--max-tokens",
        "1000",
        "--no-cache",
        "-q",
    ];
    s.track().args(generate).assert().success();
    // A benchmark of one model, twice: its summary and its diff are one row each; its errors
    // are long sentences.
    s.write(
        "bench.yaml",
        &bench_yaml(
            &["openai:gpt-4o"],
            &[
                ("capital", "capital question", "mock", "contains"),
                ("other", "other question", "nope", "contains"),
            ],
        ),
    );
    for _ in 0..2 {
        s.track()
            .args(["run", "bench.yaml", "-q"])
            .output()
            .unwrap();
    }
    // A dry run whose second model has no key: its note is a sentence.
    s.write(
        "haiku.yaml",
        &bench_yaml(
            &["openai:gpt-4o", "anthropic:haiku 3.5"],
            &[("capital", "capital question", "mock", "contains")],
        ),
    );
    // Each command, with a key a one-row summary lists.
    let cases: [(&[&str], Option<&str>); 7] = [
        (&["runs"], None),
        (&["runs", "--wide"], None),
        (&["runs", "--errors", "2"], None),
        (&["models", "--wide"], None),
        (&["query", "--by", "model"], Some("status:")),
        (&["diff", "2", "3"], Some("p value:")),
        (&["run", "haiku.yaml", "--dry-run"], None),
    ];
    for (args, one_row) in cases {
        let out = s
            .track()
            .args(args)
            .env("COLUMNS", "80")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let too_wide: Vec<&str> = stdout.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(too_wide.is_empty(), "{args:?}: {too_wide:#?}\n{stdout}");
        assert!(!stdout.contains('…'), "{args:?}: nothing cut\n{stdout}");
        if let Some(key) = one_row {
            // A list of `key: value` lines, not a table in parts.
            assert!(
                !stdout.contains("(part") && stdout.contains(key),
                "{args:?}:\n{stdout}"
            );
        }
        // Every word of every text the JSON holds is in the table, whole.
        let json = if args[0] == "run" {
            // The plan has no JSON: its note, word by word.
            let note = "no API key for anthropic: set ANTHROPIC_API_KEY or ANTHROPIC_KEY in the \
                        environment or in .env";
            serde_json::json!([note]).to_string()
        } else {
            let out = s
                .track()
                .args(args)
                .args(["--format", "json"])
                .output()
                .unwrap();
            text(&out.stdout)
        };
        // A compact table leaves the command line of a run with a file to --wide.
        let hidden: &[&str] = if args == ["runs"] { &["command"] } else { &[] };
        for word in json_words(&json, hidden) {
            assert!(
                stdout.contains(&word),
                "{args:?}: `{word}` missing or split\n{stdout}"
            );
        }
    }
}

#[test]
fn runs_errors_says_a_run_has_none_and_refuses_a_run_that_does_not_exist() {
    let s = Sandbox::new();
    many_prompts(&s, 2);
    s.track()
        .args(["run", "bench.yaml", "-q"])
        .assert()
        .success();
    let out = s.track().args(["runs", "--errors", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "run 1 recorded no errors");
    // Machines still get a header, or an empty list.
    let csv = s
        .track()
        .args(["runs", "--errors", "1", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(text(&csv.stdout).trim(), "[]");
    let out = s.track().args(["runs", "--errors", "99"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "bad input: {stderr}");
    assert!(
        stderr.contains("no run 99 in this database") && stderr.contains("track runs"),
        "{stderr}"
    );
    assert_eq!(text(&out.stdout), "", "no empty table");
}

/// `data/math.yaml` as a newcomer first runs it, against the mock: the same two templates and
/// checks, on 30 cases (`m01`…`m30`, `a` × `b`, the answer `a` × `b` + 1000 so that no echo of
/// the question holds it). The mock answers the terse template of `m03` right (`1012`) and
/// echoes every other prompt: 59 of the 60 results fail.
fn newcomer_math(s: &Sandbox) {
    let math = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/math.yaml"),
    )
    .unwrap();
    assert!(math.contains("local:smollm2"), "{math}");
    s.write(
        "data/math.yaml",
        &math.replace("local:smollm2", "openai:gpt-4o"),
    );
    let cases: String = (1..=30)
        .map(|i| {
            format!(
                "{{\"qid\": \"m{i:02}\", \"a\": {i}, \"b\": {}, \"answer\": \"{}\"}}\n",
                i + 1,
                i * (i + 1) + 1000
            )
        })
        .collect();
    s.write("data/math.jsonl", &cases);
    s.mock
        .add_rule(crate::support::mock::Rule::reply("What is 3 * 4?", "1012"));
}

/// Issue 45: the run's point was buried: at 80 columns, 217 lines whose per-template table
/// scrolled off above a per-case table of 30 rows, with no answer and no reason anywhere. Now
/// it ends with the summaries, after the first failures with their answers and reasons.
#[test]
fn a_newcomers_first_run_ends_with_its_summaries_and_first_failures_in_view_at_80_columns() {
    let s = Sandbox::new();
    newcomer_math(&s);
    let out = s
        .track()
        .args(["run", "data/math.yaml"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.iter().all(|l| l.chars().count() <= 80),
        "wider than 80:\n{stdout}"
    );
    // A screenful: the report and the tally under it.
    assert!(
        lines.len() + stderr.lines().count() <= 45,
        "{} lines:\n{stdout}{stderr}",
        lines.len()
    );
    // The per-template table last, the per-model one before it.
    let template = lines
        .iter()
        .position(|l| l.starts_with("Per template and model"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let tail = lines[template..].join("\n");
    assert!(
        tail.contains("terse") && tail.contains("worded") && tail.contains("3.3 %"),
        "{tail}"
    );
    assert!(lines.last().unwrap().starts_with('└'), "{stdout}");
    let model = lines
        .iter()
        .position(|l| l.starts_with("Per model"))
        .unwrap();
    // The first failures, before the summaries: whose, why, and what the model answered.
    let failures = lines
        .iter()
        .position(|l| l.starts_with("Failures: the first 5 of 59 (each result: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(failures < model && model < template, "{stdout}");
    let listed = lines[failures + 1..model].join("\n");
    // Why: the failing check's reason (the file's check wants 1002, the product plus 1000,
    // as the answer's last number).
    let first: Vec<&str> = listed
        .lines()
        .skip_while(|l| *l != "  failed openai:gpt-4o · terse · m01")
        .take(3)
        .collect();
    assert_eq!(first.len(), 3, "{listed}");
    assert!(
        first[1].starts_with("    why: ")
            && first[1].contains("expected to match")
            && first[1].contains("1002"),
        "{listed}"
    );
    assert_eq!(first[2], "    answer: mock reply to: What is 1 * 2?");
    // The 30 cases are named with the commands that list them, not printed.
    assert!(
        stdout.contains("Per case: 30 cases, not shown: track query --by case"),
        "{stdout}"
    );
    assert!(!stdout.contains("│ m30"), "{stdout}");
    // `--detail` prints every table; `--no-detail` the summaries only.
    let detail = s
        .track()
        .args(["run", "data/math.yaml", "--detail"])
        .output()
        .unwrap();
    let detail = text(&detail.stdout);
    assert!(
        detail.contains("Results") && detail.contains("│ m30") && detail.contains("Failures"),
        "{detail}"
    );
    let summaries = s
        .track()
        .args(["run", "data/math.yaml", "--no-detail"])
        .output()
        .unwrap();
    let summaries = text(&summaries.stdout);
    assert!(summaries.starts_with("Per model"), "{summaries}");
    assert!(!summaries.contains("Failures"), "{summaries}");
}

/// Issue 45: the answer and the reason of each result, in `track query --by result`.
#[test]
fn query_by_result_shows_each_answers_start_and_why_it_failed() {
    let s = Sandbox::new();
    newcomer_math(&s);
    s.track()
        .args(["run", "data/math.yaml", "-q"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["query", "--by", "result", "--format", "csv"])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name}: {headers:?}"))
    };
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let row = |template: &str, case: &str| {
        rows.iter()
            .find(|r| r[at("template")] == *template && r.iter().any(|c| c == case))
            .unwrap_or_else(|| panic!("no {template} {case}: {csv}"))
    };
    let passed = row("terse", "m03");
    assert_eq!(&passed[at("answer_start")], "1012");
    assert_eq!(&passed[at("reason")], "");
    let failed = row("worded", "m02");
    assert_eq!(
        &failed[at("answer_start")],
        "mock reply to: Multiply 2 by 3. Reply with just the result."
    );
    assert!(
        failed[at("reason")].contains("expected to match") && failed[at("reason")].contains("1006"),
        "{csv}"
    );
    // On a terminal of 80 columns, in parts: each part names the result it continues.
    let table = s
        .track()
        .args(["query", "--by", "result"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let table = text(&table.stdout);
    assert!(table.contains("(part 2 of"), "{table}");
    assert!(
        table.contains("answer start") && table.contains("mock reply to:"),
        "{table}"
    );
    for part in table.split("(part ").skip(1) {
        let header = part.lines().nth(2).unwrap_or_default();
        for key in ["model", "template", "case", "repeat"] {
            assert!(header.contains(key), "a part without {key}: {part}");
        }
        assert!(part.contains("m02"), "a part without the case: {part}");
    }
    assert!(
        table.lines().all(|l| l.chars().count() <= 80),
        "wider than 80:\n{table}"
    );
}

/// Issue 45: `--fail-under` of `query --by template` held each model to the bar; it holds
/// the rows asked for, each template and model. terse passes 2 of 3, worded none: the model
/// (2 of 6) is under 30 and over 20, each template apart is not.
#[test]
fn the_bar_of_query_by_template_holds_each_template() {
    let s = Sandbox::new();
    s.write(
        "data/math.yaml",
        "models: [openai:gpt-4o]\n\
         templates:\n  - {name: terse, prompt: \"T {{q}}\"}\n  - {name: worded, prompt: \"W {{q}}\"}\n\
         cases: {from: cases.jsonl, id: qid}\n\
         checks:\n  - {method: contains, value: \"yes\"}\n",
    );
    s.write(
        "data/cases.jsonl",
        "{\"qid\": \"a\", \"q\": \"one\"}\n{\"qid\": \"b\", \"q\": \"two\"}\n{\"qid\": \"c\", \"q\": \"six\"}\n",
    );
    s.mock
        .add_rule(crate::support::mock::Rule::reply("T one", "yes"));
    s.mock
        .add_rule(crate::support::mock::Rule::reply("T two", "yes"));
    s.track()
        .args(["run", "data/math.yaml", "-q"])
        .assert()
        .success();
    let bar = |by: &str, pct: &str| {
        s.track()
            .args(["query", "--by", by, "--fail-under", pct])
            .output()
            .unwrap()
    };
    // Per model, 33.3 %: over 30.
    assert_eq!(bar("model", "30").status.code(), Some(0));
    let out = bar("template", "30");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("openai:gpt-4o · worded: pass rate 0.0 % (0 of 3)"),
        "{stderr}"
    );
    assert!(!stderr.contains("· terse:"), "{stderr}");
    // Under a bar of 50: worded misses it, terse (66.7 %) does not.
    let out = bar("template", "50");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("· terse:"), "{stderr}");
    // Overall, all the rows together: 2 of 6.
    assert_eq!(bar("template", "overall:30").status.code(), Some(0));
}

/// Issue 45: `-q` still printed notes (what was loaded); quiet is quiet but for errors. And a
/// dry run on a terminal said `loaded …` twice: on stderr and in its plan.
#[test]
fn quiet_prints_no_notes_and_a_dry_run_says_what_it_loaded_once() {
    let s = Sandbox::new();
    newcomer_math(&s);
    // The first run creates the database, which is said even with -q.
    s.track().args(["run", "data/math.yaml"]).assert().success();
    let out = s
        .track()
        .args(["run", "data/math.yaml", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "", "-q: errors only");
    let dry = s
        .track()
        .args(["run", "data/math.yaml", "--dry-run"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&dry.stdout), text(&dry.stderr));
    assert!(dry.status.success(), "{stderr}");
    let said = format!("{stdout}{stderr}");
    assert_eq!(
        said.matches("loaded 30 cases from").count(),
        1,
        "{stdout}\n---\n{stderr}"
    );
    assert!(stdout.contains("loaded 30 cases from"), "{stdout}");
}

/// Issue 45: `track report --out - | head` ended with status 2 and "Broken pipe"; every
/// command that writes to stdout ends quietly with 0 when its reader is gone.
#[test]
fn every_command_writing_to_a_closed_pipe_ends_quietly_with_status_0() {
    let s = Sandbox::new();
    newcomer_math(&s);
    for _ in 0..2 {
        s.track()
            .args(["run", "data/math.yaml", "-q"])
            .assert()
            .success();
    }
    let commands: &[&[&str]] = &[
        &["report", "--out", "-"],
        &["query", "--by", "result"],
        &["query", "--by", "case", "--format", "csv"],
        &["query", "--by", "template", "--format", "json"],
        &["runs"],
        &["runs", "--errors", "1"],
        &["models"],
        &["diff", "1", "2"],
        &["export", "junit", "--out", "-"],
        &["run", "data/math.yaml"],
        &["run", "data/math.yaml", "--dry-run"],
        &["--help"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = s
            .track_process()
            .args(*args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}
