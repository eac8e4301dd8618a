//! Relevance experiments end to end (so far: the synthetic dataset).

use crate::support::{Sandbox, text};

#[test]
fn synth_writes_images_and_exact_ground_truth() {
    let s = Sandbox::new();
    let out = s
        .track()
        .args([
            "relevance",
            "synth",
            "--blocks",
            "red,blue,green",
            "--states",
            "5",
            "--out",
            "blocks",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("blocks/ground_truth.json")).unwrap())
            .unwrap();
    let states = truth.as_object().unwrap();
    assert_eq!(states.len(), 5);
    for (stem, predicates) in states {
        assert!(s.path(&format!("blocks/{stem}.png")).exists());
        let p = predicates.as_object().unwrap();
        assert_eq!(p.len(), 3 * 3 + 6);
        // Every block is exactly one of: on the table, on another block, held.
        for block in ["red", "blue", "green"] {
            let placed = p[&format!("ontable({block}:block)")].as_u64().unwrap()
                + p[&format!("holding({block}:block)")].as_u64().unwrap()
                + ["red", "blue", "green"]
                    .iter()
                    .filter(|other| **other != block)
                    .map(|other| {
                        p[&format!("on({block}:block,{other}:block)")]
                            .as_u64()
                            .unwrap()
                    })
                    .sum::<u64>();
            assert_eq!(placed, 1, "{stem}: {block}");
        }
    }
    let bad = s
        .track()
        .args(["relevance", "synth", "--blocks", "red,mauve"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("unknown block colour `mauve`"));
}

const WITH_REPLY: &str = r#"{"clear(red:block)": 2, "clear(blue:block)": 1, "on(red:block,blue:block)": 2, "holding(red:block)": 0}"#;
const WITHOUT_REPLY: &str = r#"Here: {"clear(red:block)": 2, "clear(blue:block)": 2, "on(red:block,blue:block)": 2, "holding(red:block)": 1}"#;

fn compare_sandbox() -> Sandbox {
    let s = Sandbox::new();
    add_compare_files(&s);
    s
}

/// Writes two synthetic images with hand-made truth (`truth.json`) into `s` and teaches its
/// mock the WITH and WITHOUT answers, so the metrics can be worked out by hand.
pub(crate) fn add_compare_files(s: &Sandbox) {
    crate::support::synth_blocks(s, 2, "blocks");
    // Hand-made truth, so the metrics can be worked out by hand.
    s.write(
        "truth.json",
        r#"{"state_0000": {"clear(red:block)": 1, "clear(blue:block)": 0, "on(red:block,blue:block)": 1, "holding(red:block)": 0},
            "state_0001": {"clear(red:block)": 1, "clear(blue:block)": 1, "on(red:block,blue:block)": 0, "holding(red:block)": 0}}"#,
    );
    s.mock.add_rule(crate::support::mock::Rule::reply(
        "Use 1 whenever you are uncertain",
        WITH_REPLY,
    ));
    s.mock.add_rule(crate::support::mock::Rule::reply(
        "Do not use score 1",
        WITHOUT_REPLY,
    ));
}

#[test]
fn compare_scores_both_variants_and_writes_the_specifications_outputs() {
    let s = compare_sandbox();
    let args = [
        "relevance",
        "compare",
        "--model",
        "openai:gpt-4o",
        "--images",
        "blocks/state_*.png",
        "--ground-truth",
        "truth.json",
        "--out",
        "out",
    ];
    let out = s.track().args(args).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert_eq!(s.mock.request_count(), 4, "2 images x 2 variants");
    // WITH: TP 3, FP 1, TN 2, FN 0 (two abstentions); WITHOUT: TP 4, FP 2 (two invalid 1s).
    assert!(stdout.contains("--- WITH Uncertain Option (allows '1') ---\nPositive Class:\n  Precision: 0.7500, Recall: 1.0000, F1: 0.8571\n  TP: 3, FP: 1, TN: 2, FN: 0"), "{stdout}");
    assert!(
        stdout.contains("--- Delta (WITH - WITHOUT) ---\nPositive Class:\n  Precision: +0.0833"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Coverage (certain / answered): WITH 6 of 8 = 0.7500"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(s.path("out/comparison_summary.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples"
    );
    assert_eq!(
        lines[1],
        "with_uncertain,positive,0.75,1.0,0.857142857142857,3,1,2,0,6"
    );
    assert_eq!(
        lines[3],
        "without_uncertain,positive,0.666666666666667,1.0,0.8,4,2,0,0,6"
    );
    assert!(text(&out.stderr).contains("invalid predictions WITH 0 / WITHOUT 2"));
    // Paired items answered with certainty by both: s0 clear(red) both right, s0 on both right,
    // s1 clear(red) both right, s1 on both wrong: no discordant pair.
    assert!(
        stdout.contains("WITH-only right 0, WITHOUT-only right 0, p = 1.0000 (exact binomial)"),
        "{stdout}"
    );
    let by_predicate = std::fs::read_to_string(s.path("out/comparison_by_predicate.csv")).unwrap();
    assert!(
        by_predicate
            .contains("\non,with_uncertain,positive,0.5,1.0,0.666666666666667,1,1,0,0,2,1.0\n"),
        "{by_predicate}"
    );
    let statistics = std::fs::read_to_string(s.path("out/comparison_statistics.csv")).unwrap();
    assert!(statistics.starts_with("statistic,class,metric,value,low,high,n,note\ndelta_with_minus_without,positive,precision,0.0833333333333334,"), "{statistics}");
    // Score 1 read four ways: WITH's two 1s are (clear(blue), false) and (clear(blue), true).
    let thresholds = std::fs::read_to_string(s.path("out/comparison_thresholds.csv")).unwrap();
    let lines: Vec<&str> = thresholds.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "variant,policy,predictions,precision,recall,f1,brier,log_loss",
            "with_uncertain,uncertain_filtered,6,0.75,1.0,0.857142857142857,,",
            "with_uncertain,uncertain_as_true,8,0.666666666666667,1.0,0.8,,",
            "with_uncertain,uncertain_as_false,8,0.75,0.75,0.75,,",
        ],
        "{thresholds}"
    );
    assert!(
        lines[4].starts_with("with_uncertain,uncertain_as_half,8,,,,0.1875,"),
        "{thresholds}"
    );
    assert!(stdout.contains("--- Score 1 read four ways"), "{stdout}");
    // Every prediction is stored with its image, truth and call; the image once, by hash.
    assert_eq!(s.count("SELECT count(*) FROM relevance_predictions"), 16);
    assert_eq!(s.count("SELECT count(*) FROM relevance_predictions WHERE score IS NULL AND invalid_reason LIKE '1 is not allowed%'"), 2);
    assert_eq!(
        s.count("SELECT count(*) FROM blobs WHERE media_type = 'image/png'"),
        2
    );
    // The image reached the OpenAI wire format as a data URL.
    let body = &s.mock.requests()[0].body;
    let url = body["messages"][0]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
    // Again: all from the cache.
    s.track().args(args).assert().success();
    assert_eq!(s.mock.request_count(), 4);
    // The same numbers come back from the database, computed with polars.
    let query = s
        .track()
        .args(["query", "--by", "variant", "--format", "csv"])
        .output()
        .unwrap();
    let query = text(&query.stdout);
    assert!(
        query.starts_with(
            "variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples,coverage,invalid,status\n"
        ),
        "{query}"
    );
    assert!(
        query.contains("\nwith_uncertain,positive,0.75,1.0,0.857142857142857"),
        "{query}"
    );
    assert!(
        query.contains("\nwithout_uncertain,positive,0.666666666666667,"),
        "{query}"
    );
    let per = s
        .track()
        .args([
            "query",
            "--by",
            "variant",
            "--per-predicate",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let per: serde_json::Value = serde_json::from_slice(&per.stdout).unwrap();
    assert_eq!(
        per.as_array().unwrap().len(),
        3 * 2 * 2,
        "3 predicate types x 2 variants x 2 classes"
    );
    // A person rates one prediction (issue 30): the export shows it.
    let uid: String = s
        .db()
        .query_row(
            "SELECT uid FROM relevance_predictions WHERE run_id = 2 AND image = 'state_0000'
             AND predicate = 'clear(blue:block)' AND variant = 'WITH'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    s.track()
        .args(["rate", "2", &uid, "--pass", "--score", "5", "--rater", "bo"])
        .assert()
        .success();
    s.track()
        .args(["export", "csv", "--kind", "relevance", "--out", "exported"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(s.path("exported/comparison_summary.csv")).unwrap(),
        std::fs::read_to_string(s.path("out/comparison_summary.csv")).unwrap()
    );
    let rows = crate::answers::csv_rows(&s.path("exported/relevance_predictions.csv"));
    assert_eq!(rows.len(), 16);
    // Each prediction has the model's whole answer (issue 30).
    for row in &rows {
        let expected = if row["variant"] == "with_uncertain" {
            WITH_REPLY
        } else {
            WITHOUT_REPLY
        };
        assert_eq!(row["answer"], expected, "{row:?}");
        let rated = row["image"] == "state_0000"
            && row["predicate"] == "clear(blue:block)"
            && row["variant"] == "with_uncertain";
        let human = (row["human_verdict"].as_str(), row["human_score"].as_str());
        assert_eq!(
            human,
            if rated { ("pass", "5") } else { ("", "") },
            "{row:?}"
        );
    }
    let runs = s
        .track()
        .args(["runs", "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        // A run of a command is named by its command line.
        text(&runs.stdout).contains(",relevance,relevance compare "),
        "{}",
        text(&runs.stdout)
    );
}

#[test]
fn images_reach_the_anthropic_and_ollama_formats() {
    let s = compare_sandbox();
    for model in ["anthropic:haiku 3.5", "ollama:llava"] {
        s.track()
            .args([
                "relevance",
                "compare",
                "--model",
                model,
                "--images",
                "blocks/state_0000.png",
                "--ground-truth",
                "truth.json",
                "-q",
            ])
            .assert()
            .success();
    }
    let requests = s.mock.requests();
    let anthropic = requests.iter().find(|r| r.path == "/v1/messages").unwrap();
    let source = &anthropic.body["messages"][0]["content"][1]["source"];
    assert_eq!(
        (source["type"].as_str(), source["media_type"].as_str()),
        (Some("base64"), Some("image/png"))
    );
    assert!(source["data"].as_str().unwrap().starts_with("iVBOR"));
    let ollama = requests.iter().find(|r| r.path == "/api/chat").unwrap();
    assert!(
        ollama.body["messages"][0]["images"][0]
            .as_str()
            .unwrap()
            .starts_with("iVBOR")
    );
    // --blocks asks about every predicate over the colours; unlisted ones are false.
    s.track()
        .args([
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_0000.png",
            "--ground-truth",
            "truth.json",
            "--blocks",
            "red,blue",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE run_id = 3"),
        2 * (3 * 2 + 2)
    );
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE run_id = 3 AND predicate = 'ontable(red:block)' AND truth = 0"),
        2
    );

    let bad = s
        .track()
        .args([
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "nothing/*.png",
            "--ground-truth",
            "truth.json",
        ])
        .output()
        .unwrap();
    assert!(text(&bad.stderr).contains("no image matches --images `nothing/*.png`"));
}

#[test]
fn a_relevance_experiment_file_runs_through_track_run() {
    let s = compare_sandbox();
    s.write(
        "relevance.yaml",
        "kind: relevance\nmodel: openai:gpt-4o\nimages: \"blocks/state_*.png\"\nground_truth: truth.json\nrepeat: 2\nout: viafile\n",
    );
    let out = s.track().args(["run", "relevance.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        s.mock.request_count(),
        8,
        "2 images x 2 variants x 2 trials"
    );
    assert_eq!(
        s.count("SELECT count(DISTINCT trial) FROM relevance_predictions"),
        2
    );
    let statistics = std::fs::read_to_string(s.path("viafile/comparison_statistics.csv")).unwrap();
    assert!(
        statistics.contains("trial_mean,positive,with_uncertain_precision,0.75,,,2,sd 0.0000"),
        "{statistics}"
    );
    s.write("broken.yaml", "kind: relevance\nmodel: openai:gpt-4o\n");
    let out = s.track().args(["run", "broken.yaml"]).output().unwrap();
    assert!(
        text(&out.stderr).contains("broken.yaml:2:1: missing field `images`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_logistics_dataset_runs_end_to_end_with_its_own_prompts() {
    // The second domain shipped in data/: its scenes, its ground truth over `at` and `in`,
    // its prompt templates with `{domain}`.
    let s = Sandbox::new();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    for file in [
        "logistics.yaml",
        "logistics/prompt_with.txt",
        "logistics/prompt_without.txt",
    ] {
        s.write(
            &format!("data/{file}"),
            &std::fs::read_to_string(data.join(file)).unwrap(),
        );
    }
    s.track()
        .args([
            "relevance",
            "synth",
            "--domain",
            "logistics",
            "--states",
            "3",
        ])
        .args(["--out", "data/logistics"])
        .assert()
        .success();
    let out = s
        .track()
        .args(["run", "data/logistics.yaml", "--models", "openai:gpt-4o"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 6, "3 scenes x 2 variants");
    let prompt = requests[0].body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.starts_with("You are looking at an image of a logistics world: three places"),
        "{prompt}"
    );
    assert!(
        prompt.contains("- in(pkg_yellow:package,truck_red:truck)"),
        "{prompt}"
    );
    // The mock answers every asked predicate (the largest allowed score): all 21 of each scene.
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE score IS NOT NULL"),
        6 * 21
    );
    let summary =
        std::fs::read_to_string(s.path("results/logistics/comparison_summary.csv")).unwrap();
    assert!(
        summary.starts_with("variant,class,precision,recall,f1,tp,fp,tn,fn,total_samples\n"),
        "{summary}"
    );
    let by_type =
        std::fs::read_to_string(s.path("results/logistics/comparison_by_predicate.csv")).unwrap();
    let kinds: std::collections::BTreeSet<&str> = by_type
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(
        kinds,
        std::collections::BTreeSet::from(["at", "in"]),
        "{by_type}"
    );
    // Each prediction records the template it was asked with.
    let with_sha = crate::support::sha256_file(&s.path("data/logistics/prompt_with.txt"));
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) FROM relevance_predictions WHERE variant = 'WITH' AND prompt_sha256 = '{with_sha}'"
        )),
        3 * 21
    );
}

#[test]
fn a_predicate_list_is_asked_under_an_explicit_world() {
    let s = compare_sandbox();
    s.write(
        "asked.txt",
        "# what to ask every image\nclear(red:block)\nontable(red:block)   # no ground truth lists it\n",
    );
    let compare = |extra: &[&str]| {
        s.track()
            .args([
                "relevance",
                "compare",
                "--model",
                "openai:gpt-4o",
                "--images",
                "blocks/state_*.png",
                "--ground-truth",
                "truth.json",
                "--predicates",
                "asked.txt",
                "-q",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = compare(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a predicate list needs its world: --world closed"),
        "{}",
        text(&out.stderr)
    );
    let out = compare(&["--world", "closed"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Closed: both predicates asked of both images; ontable(red) is false where unlisted.
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE run_id = 1"),
        8
    );
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE run_id = 1 AND predicate = 'ontable(red:block)' AND truth = 0"),
        4
    );
    let out = compare(&["--world", "open"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Open: only what the ground truth lists is asked.
    assert_eq!(
        s.count("SELECT count(*) FROM relevance_predictions WHERE run_id = 2"),
        4
    );
    let prompt = s.mock.last_request().unwrap().body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.contains("- clear(red:block)\n") && !prompt.contains("ontable(red:block)\n"),
        "{prompt}"
    );
}
