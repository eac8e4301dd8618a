//! Judge reviews end to end: generation, reviews with fenced / broken / out-of-range / garbage
//! answers, missing official datasheets, the specification's CSV, caching and agreement.

use crate::support::mock::Rule;
use crate::support::{Sandbox, text};

const SPEC_HEADER: &str = "Sensor_Brand,Sensor_Type,Generated_Datasheet_LLM_Provider,Generated_Datasheet_LLM_Model,\
Reviewer_LLM_Provider,Reviewer_LLM_Model,Official_Datasheet_Status,P1_Disclaimer_Score,P2_Manufacturer_Info_Score,\
P3_General_Description_Score,P4_Theory_Of_Operation_Score,P5_Features_Score,P6_Potential_Applications_Score,\
P7_Pin_Configuration_Score,P8_Absolute_Maximum_Ratings_Score,P9_Electrical_Characteristics_Score,\
P10_Operating_Conditions_Score,P11_Sensor_Performance_Score,P12_Communication_Protocol_Score,P13_Register_Map_Score,\
P14_Package_Information_Score,P15_Basic_Usage_Score,P16_Compliance_Certifications_Score,Average_Pn_Score,\
Overall_Likert_Score,P1_Justification,P2_Justification,P3_Justification,P4_Justification,P5_Justification,\
P6_Justification,P7_Justification,P8_Justification,P9_Justification,P10_Justification,P11_Justification,\
P12_Justification,P13_Justification,P14_Justification,P15_Justification,P16_Justification,Overall_Justification,\
Review_Timestamp";

/// A reviewer's JSON answer giving `score` to every criterion except those in `skip`, whose
/// justifications contain awkward CSV text.
fn answer(score: &str, skip: &[usize], trailing_comma: bool) -> String {
    let mut parts = Vec::new();
    for i in 1..=16 {
        if !skip.contains(&i) {
            parts.push(format!("\"p{i}_score\": {score}"));
            parts.push(format!(
                "\"p{i}_justification\": \"P{i}: fine, \\\"mostly\\\"\\nsecond line\""
            ));
        }
    }
    parts.push(format!("\"overall_score\": {score}"));
    parts.push("\"overall_justification\": \"overall, ok\"".into());
    format!(
        "{{{}{}}}",
        parts.join(", "),
        if trailing_comma { "," } else { "" }
    )
}

fn review_sandbox() -> Sandbox {
    let s = Sandbox::new();
    add_review_files(&s);
    s
}

/// Writes the sensors list, official and generated datasheets into `s`, and teaches its mock
/// the reviewers' answers: one complete review, one with N/A scores, one unparsable, and a
/// sensor without an official datasheet.
pub(crate) fn add_review_files(s: &Sandbox) {
    s.write(
        "data/sensors.csv",
        "Brand,Sensor,Category\nBosch,BME280,environment\nTI,HDC1080,humidity\nHoneywell,HIH6130,humidity\n",
    );
    s.write(
        "datasheet/Bosch_BME280.md",
        "# Bosch BME280 official\nVDD 1.71-3.6 V\n",
    );
    s.write(
        "datasheet/TI_HDC1080.md",
        "# TI HDC1080 official\nI2C address 0x40\n",
    );
    // Generated datasheets as an earlier tool wrote them.
    s.write(
        "results/Bosch/BME280/openai_gpt-4o_20250504_030759.md",
        "BME280 text one",
    );
    s.write(
        "results/Bosch/BME280/anthropic_claude-3.5-haiku_20250504_030800.md",
        "BME280 text two",
    );
    s.write(
        "results/TI/HDC1080/openai_gpt-4o_20250504_030801.md",
        "HDC1080 text",
    );
    s.write(
        "results/Honeywell/HIH6130/openai_gpt-4o_20250504_030802.md",
        "HIH6130 text",
    );
    s.mock.add_rule(Rule::reply(
        "BME280 text one",
        &format!(
            "Here is my review.\n```json\n{}\n```\nLet me know!",
            answer("4", &[], false)
        ),
    ));
    s.mock.add_rule(Rule::reply(
        "BME280 text two",
        &answer("\"3/5\"", &[5], true).replace("\"p3_score\": \"3/5\"", "\"p3_score\": 7"),
    ));
    s.mock.add_rule(Rule::reply(
        "HDC1080 text",
        "Sorry, I cannot review this datasheet.",
    ));
}

fn read_csv(s: &Sandbox, path: &str) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(s.path(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

#[test]
fn reviews_land_in_the_database_and_the_specifications_csv() {
    let s = review_sandbox();
    let out = s
        .track()
        .args(["review-datasheets", "--reviewer", "openai:gpt-4o-mini"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("4 reviews: 1 complete, 1 with N/A scores, 1 unparsable (33 % of answers), 1 without an official datasheet"), "{stderr}");
    assert_eq!(
        s.mock.request_count(),
        3,
        "no call without an official datasheet"
    );
    let prompt = s
        .mock
        .requests()
        .iter()
        .map(|r| r.last_user_text())
        .find(|t| t.contains("BME280 text one"))
        .unwrap();
    assert!(
        prompt.contains("P16. Compliance and Certifications: Ensure placeholders"),
        "criteria in the prompt"
    );
    assert!(
        prompt.contains("# Bosch BME280 official") && prompt.contains("BME280 text"),
        "both texts in the prompt"
    );

    let bosch = read_csv(&s, "results/reviews/openai_gpt-4o-mini/Bosch_BME280.csv");
    assert_eq!(bosch[0].join(","), SPEC_HEADER);
    assert_eq!(bosch.len(), 3);
    let one = bosch.iter().find(|r| r[2] == "openai").unwrap();
    assert_eq!(
        one[..7],
        [
            "Bosch",
            "BME280",
            "openai",
            "gpt-4o",
            "openai",
            "gpt-4o-mini",
            "Found"
        ]
    );
    assert!(one[7..23].iter().all(|v| v == "4"));
    assert_eq!((one[23].as_str(), one[24].as_str()), ("4.00", "4"));
    assert_eq!(
        one[25], "P1: fine, \"mostly\"\nsecond line",
        "awkward text round-trips"
    );
    assert!(
        one[42].len() == 19 && one[42].as_bytes()[10] == b' ',
        "YYYY-MM-DD HH:MM:SS: {}",
        one[42]
    );
    let two = bosch.iter().find(|r| r[2] == "anthropic").unwrap();
    assert_eq!(two[3], "claude-3.5-haiku");
    assert_eq!(
        (two[9].as_str(), two[11].as_str(), two[10].as_str()),
        ("N/A", "N/A", "3"),
        "P3=7 and P5 missing are N/A"
    );
    assert_eq!(two[23], "3.00", "the average of the valid scores only");
    assert_eq!(two[27], "P3: fine, \"mostly\"\nsecond line");
    assert_eq!(two[29], "N/A: missing from the answer");

    let ti = read_csv(&s, "results/reviews/openai_gpt-4o-mini/TI_HDC1080.csv");
    assert!(
        ti[1][7..25].iter().all(|v| v == "N/A"),
        "a parse failure is never a score"
    );
    assert!(
        ti[1][41].starts_with("N/A: the reviewer's answer could not be parsed"),
        "{}",
        ti[1][41]
    );
    let honeywell = read_csv(
        &s,
        "results/reviews/openai_gpt-4o-mini/Honeywell_HIH6130.csv",
    );
    assert_eq!(honeywell[1][6], "Not Found");

    // Stored: every review with its scores, the parse failure's raw answer with its call.
    assert_eq!(s.count("SELECT count(*) FROM reviews"), 4);
    assert_eq!(s.count("SELECT count(*) FROM review_scores"), 64);
    assert_eq!(
        s.count(
            "SELECT count(*) FROM reviews WHERE parse_status = 'failed' AND call_id IS NOT NULL"
        ),
        1
    );
    assert_eq!(
        s.count("SELECT count(*) FROM review_scores WHERE score IS NULL AND na_reason = '7 is outside the 1-5 scale'"),
        1
    );

    // A second run: every answer from the cache, no request, no duplicate CSV row.
    let before =
        std::fs::read(s.path("results/reviews/openai_gpt-4o-mini/Bosch_BME280.csv")).unwrap();
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o-mini",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), 3);
    let after =
        std::fs::read(s.path("results/reviews/openai_gpt-4o-mini/Bosch_BME280.csv")).unwrap();
    assert_eq!(before, after);
    // Exporting again from the database adds nothing either.
    s.track()
        .args(["export", "csv", "--kind", "review"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(s.path("results/reviews/openai_gpt-4o-mini/Bosch_BME280.csv")).unwrap(),
        before
    );
    // Beside them, every review with the reviewer's whole answer (issue 30).
    let answers = crate::answers::csv_rows(&s.path("results/reviews/review_answers.csv"));
    assert_eq!(answers.len(), 8, "the 4 reviews of each of the 2 runs");
    for row in &answers {
        if row["call_id"].is_empty() {
            // Skipped (no official datasheet): no call, no answer.
            assert_eq!(row["answer"], "", "{row:?}");
            continue;
        }
        let stored: String = s
            .db()
            .query_row(
                "SELECT CAST(b.content AS TEXT) FROM calls c JOIN blobs b
                 ON b.sha256 = c.response_sha256 WHERE c.id = ?1",
                [row["call_id"].parse::<i64>().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(row["answer"], stored, "{row:?}");
    }
    let bosch = answers
        .iter()
        .find(|r| r["sensor"] == "BME280" && r["generator_provider"] == "openai")
        .unwrap();
    assert!(bosch["answer"].contains("mostly"), "{bosch:?}");
}

/// Regression: an unparsable review counted among its run's errors (`track runs`) but was
/// missing from `track runs --errors`, which listed only the calls that got no answer.
#[test]
fn runs_errors_lists_an_unparsable_review_with_its_item_and_why() {
    let s = review_sandbox();
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o-mini",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(s.count("SELECT errors FROM runs WHERE id = 1"), 1);
    let out = s
        .track()
        .args(["runs", "--errors", "1", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: Vec<Vec<String>> = csv::ReaderBuilder::new()
        .from_reader(&out.stdout[..])
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let [row] = &listed[..] else {
        panic!("the one error the run counts: {listed:?}");
    };
    assert_eq!(
        row[..4],
        [
            "reviews",
            "openai:gpt-4o-mini",
            "openai:gpt-4o-mini reviewing TI HDC1080 by openai:gpt-4o",
            "1"
        ]
    );
    assert!(
        row[4].starts_with("unparsable answer (")
            && row[4].contains("Sorry, I cannot review this datasheet."),
        "{row:?}"
    );
}

/// Regression: a review asked again (`--no-cache`) kept the first review's `reviewed_at`, so
/// the specification's CSV dated the new answer by the old one.
#[test]
fn a_review_asked_again_is_dated_by_its_new_answer() {
    let s = review_sandbox();
    let review = |extra: &[&str]| {
        s.track()
            .args([
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o-mini",
                "-q",
            ])
            .args(extra)
            .assert()
            .success();
    };
    review(&[]);
    // HDC1080's answer was unparsable; asked again, the reviewer now answers.
    s.mock.clear_rules();
    s.mock
        .add_rule(Rule::reply("HDC1080 text", &answer("5", &[], false)));
    add_review_files(&s);
    review(&["--no-cache"]);

    // Both reviews of HDC1080 with the run that recorded each: the re-asked one is dated
    // within its own run (by its new answer), not by the first review.
    let db = s.db();
    let mut stmt = db
        .prepare(
            "SELECT r.parse_status, r.call_id, r.reviewed_at, u.started_at, u.finished_at \
             FROM reviews r JOIN runs u ON u.id = r.run_id \
             WHERE r.sensor = 'HDC1080' ORDER BY r.id",
        )
        .unwrap();
    let reviews: Vec<(String, i64, String, String, String)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let [first, again] = &reviews[..] else {
        panic!("two reviews of HDC1080: {reviews:?}");
    };
    assert_eq!((first.0.as_str(), again.0.as_str()), ("failed", "ok"));
    assert_ne!(first.1, again.1, "asked again: a call of its own");
    let (at, started, finished) = (&again.2, &again.3, &again.4);
    assert!(
        started <= at && at <= finished,
        "dated by the new answer, during the run that asked it again: {reviews:?}"
    );
    // The CSV's new row carries that time (to the second, in UTC).
    let ti = read_csv(&s, "results/reviews/openai_gpt-4o-mini/TI_HDC1080.csv");
    let last = ti.last().unwrap();
    assert_eq!(last[24], "5");
    assert_eq!(last[42], at[..19].replace('T', " "));
}

#[test]
fn filters_summaries_and_agreement_between_two_reviewers() {
    let s = review_sandbox();
    // The scripted answers carry the slips of free text, which the tolerant parser reads.
    s.track()
        .args([
            "review-datasheets",
            "--structured",
            "off",
            "--reviewer",
            "openai:gpt-4o-mini,anthropic:haiku 3.5",
            "--sensor",
            "bme280",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), 4, "two datasheets, two reviewers");
    let out = s
        .track()
        .args(["query", "--by", "generator", "--format", "json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 4, "reviewer x generator");
    let first = rows
        .iter()
        .find(|r| r["reviewer"] == "openai:gpt-4o-mini" && r["generator"] == "openai:gpt-4o")
        .unwrap();
    assert_eq!(first["mean_overall"], 4.0);
    let haiku = rows
        .iter()
        .find(|r| r["generator"] == "anthropic:claude-3.5-haiku")
        .unwrap();
    assert_eq!(haiku["na_scores"], 2);

    // The mock answers both reviewers alike: perfect agreement where scores vary.
    let out = s
        .track()
        .args([
            "query",
            "--by",
            "criterion",
            "--agreement",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "criterion,reviewers,datasheets_compared,kappa_quadratic,alpha_ordinal,mean_score,status"
    );
    assert_eq!(lines[1], "P1,2,2,1.0,1.0,3.5,completed");
    assert!(
        lines[3].starts_with("P3,2,1,,,4.0"),
        "one datasheet only: undefined, not NaN: {}",
        lines[3]
    );
    assert!(
        lines.last().unwrap().starts_with("Overall,2,2,1.0,1.0,"),
        "{csv}"
    );

    let by_criterion = s
        .track()
        .args([
            "query",
            "--by",
            "criterion",
            "--reviewer",
            "anthropic:haiku 3.5",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let csv = text(&by_criterion.stdout);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("P1,anthropic:haiku 3.5,2,0,3.5"),
        "{csv}"
    );

    // --generator keeps one generator's datasheets.
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o",
            "--generator",
            "anthropic:haiku 3.5",
            "--sensor",
            "BME280",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(s.mock.request_count(), 5);
}

#[test]
fn generated_datasheets_are_saved_stored_and_cached() {
    let s = review_sandbox();
    s.mock.add_rule(Rule::reply(
        "Write a complete technical datasheet",
        "# Generated\nA datasheet.",
    ));
    let out = s
        .track()
        .args([
            "generate-datasheets",
            "--model",
            "openai:gpt-4o",
            "--sensor",
            "HDC1080",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = text(&out.stdout).trim().to_owned();
    let name = std::path::Path::new(&path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        path.starts_with("results/TI/HDC1080/openai_gpt-4o_")
            && name.len() == "openai_gpt-4o_20261122_003703.md".len(),
        "{path}"
    );
    assert_eq!(
        std::fs::read_to_string(s.path(&path)).unwrap(),
        "# Generated\nA datasheet."
    );
    assert!(s.mock.requests()[0].last_user_text().contains("TI HDC1080"));
    let again = s
        .track()
        .args([
            "generate-datasheets",
            "--model",
            "openai:gpt-4o",
            "--sensor",
            "HDC1080",
        ])
        .output()
        .unwrap();
    assert_eq!(
        text(&again.stdout).trim(),
        path,
        "a cached answer reuses its file"
    );
    assert_eq!(s.mock.request_count(), 1);
    assert_eq!(
        std::fs::read_dir(s.path("results/TI/HDC1080"))
            .unwrap()
            .count(),
        2
    );
    assert_eq!(s.count("SELECT count(*) FROM generated_datasheets"), 2);
    assert_eq!(
        s.count("SELECT count(*) FROM generated_datasheets WHERE cache_hit = 1"),
        1
    );
}

#[test]
fn bad_review_inputs_are_named() {
    let s = review_sandbox();
    for (args, want) in [
        (
            vec!["review-datasheets", "--reviewer", "acme:gpt-9"],
            "unknown provider `acme` in `acme:gpt-9`",
        ),
        (
            vec![
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o",
                "--sensor",
                "XYZ",
            ],
            "no sensor of data/sensors.csv matches --sensor XYZ",
        ),
        (
            vec![
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o",
                "--sensors",
                "nope.csv",
            ],
            "cannot read the sensors list nope.csv",
        ),
        (
            vec![
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o",
                "--criteria",
                "data/sensors.csv",
            ],
            "data/sensors.csv:",
        ),
        (
            vec![
                "review-datasheets",
                "--reviewer",
                "openai:gpt-4o",
                "--generator",
                "ollama:llama3.2",
            ],
            "no generated datasheets under results",
        ),
        (
            vec!["query", "--by", "model", "--agreement"],
            "--agreement goes with --by criterion",
        ),
    ] {
        let out = s.track().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(want) && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
    let out = s
        .track()
        .args(["review-datasheets", "--reviewer", "openai:gpt-4o"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(text(&out.stderr).contains("no API key for openai: set OPENAI_API_KEY or OPENAI_KEY"));
    assert_eq!(s.mock.request_count(), 0);
}

#[test]
fn a_review_experiment_file_generates_then_reviews() {
    let s = review_sandbox();
    s.mock.add_rule(Rule::reply(
        "Write a complete technical datasheet",
        "BME280 text one, again",
    ));
    s.write(
        "review.yaml",
        "kind: review\ngenerators: [ollama:qwen2.5-coder]\nreviewers: [anthropic:haiku 3.5]\nsensor: BME280\n",
    );
    let out = s.track().args(["run", "review.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.mock
            .requests_containing("Write a complete technical datasheet"),
        1
    );
    assert_eq!(
        s.count("SELECT count(*) FROM reviews"),
        3,
        "two earlier datasheets and the new one"
    );
    let kinds: Vec<String> = s
        .db()
        .prepare("SELECT kind FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["review"], "one run: generation, then reviews");
    assert_eq!(
        s.count("SELECT count(*) FROM generated_datasheets WHERE run_id = 1"),
        1
    );
    s.write("odd.yaml", "kind: survey\n");
    let out = s.track().args(["run", "odd.yaml"]).output().unwrap();
    assert!(text(&out.stderr).contains(
        "odd.yaml: unknown `kind: survey`; use bench (the default), review, relevance or pairwise"
    ));
}

#[test]
fn identical_generated_texts_of_two_sensors_stay_two_items() {
    let s = Sandbox::new();
    s.write(
        "data/sensors.csv",
        "Brand,Sensor\nBosch,BME280\nTI,HDC1080\n",
    );
    s.write("datasheet/Bosch_BME280.md", "# BME280 official\n");
    s.write("datasheet/TI_HDC1080.md", "# HDC1080 official\n");
    // The same refusal for both sensors: byte-identical files.
    for path in [
        "results/Bosch/BME280/openai_gpt-4o_20250504_030759.md",
        "results/TI/HDC1080/openai_gpt-4o_20250504_030801.md",
    ] {
        s.write(path, "I cannot write this datasheet.");
    }
    s.mock
        .add_rule(Rule::reply("BME280 official", &answer("4", &[], false)));
    s.mock
        .add_rule(Rule::reply("HDC1080 official", &answer("2", &[], false)));
    s.track()
        .args([
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o,anthropic:haiku 3.5",
            "-q",
        ])
        .assert()
        .success();
    let out = s
        .track()
        .args([
            "query",
            "--by",
            "criterion",
            "--agreement",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    let csv = text(&out.stdout);
    let p1 = csv.lines().find(|l| l.starts_with("P1,")).unwrap();
    assert!(
        p1.starts_with("P1,2,2,1.0,"),
        "two datasheets compared: {csv}"
    );
}

#[test]
fn a_review_run_prints_its_summaries_per_reviewer_and_sensor() {
    let s = review_sandbox();
    let out = s
        .track()
        .args(["review-datasheets", "--reviewer", "openai:gpt-4o-mini"])
        .env("COLUMNS", "250")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The files first, as before; then the summaries a benchmark's run prints too.
    assert!(stdout.lines().next().unwrap().ends_with(".csv"), "{stdout}");
    let (_, tables) = stdout
        .split_once("\nPer reviewer\n")
        .unwrap_or_else(|| panic!("no summary per reviewer:\n{stdout}"));
    let (by_reviewer, by_sensor) = tables
        .split_once("Per reviewer and sensor\n")
        .unwrap_or_else(|| panic!("no summary per sensor:\n{stdout}"));
    // Each row's overall and mean P scores, as `track query` gives them.
    for (by, table) in [("reviewer", by_reviewer), ("sensor", by_sensor)] {
        let csv = s
            .track()
            .args(["query", "--by", by, "--format", "csv"])
            .output()
            .unwrap();
        let csv = text(&csv.stdout);
        let mut rows = csv::Reader::from_reader(csv.as_bytes());
        let headers = rows.headers().unwrap().clone();
        let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
        let mut scored = 0;
        for row in rows.records() {
            let row = row.unwrap();
            let key = if by == "sensor" {
                &row[at("sensor")]
            } else {
                &row[at("reviewer")]
            };
            let line = table
                .lines()
                .find(|l| l.contains(&format!(" {key} ")))
                .unwrap_or_else(|| panic!("{key} missing:\n{table}"));
            for score in ["mean_overall", "mean_average_pn"] {
                if let Ok(value) = row[at(score)].parse::<f64>() {
                    scored += 1;
                    assert!(
                        line.contains(&format!(" {value:.3} ")),
                        "{by} {key} {score} {value}:\n{table}"
                    );
                }
            }
        }
        assert!(scored >= 2, "{by}: scores to compare:\n{csv}");
    }
}
