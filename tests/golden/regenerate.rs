//! Rebuilds the golden fixture (`tests/golden/fixture.db` and `tests/golden/inputs/`): writes
//! the inputs into a sandbox, makes the eight runs against the mock provider of the tests,
//! checks their ids and kinds, and replaces the fixture. A command, not a test: a test that
//! did nothing unless a variable was set counted as passed. Run it with
//!
//! ```sh
//! cargo bench --profile dev --bench regenerate-golden
//! ```
//!
//! then `TRACK_GOLDEN_UPDATE=1 cargo test --test it golden` and review the diff
//! (`tests/golden/README.md`). `cargo bench` alone never runs it (`bench = false`).

#[path = "../it/support/mod.rs"]
#[allow(
    dead_code,
    reason = "the generator uses the sandbox and the mock, not every helper of the tests"
)]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use support::mock::{Action, Rule};
use support::{Sandbox, files_under, text};

/// `tests/golden/` in the source tree.
fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

const GPT_4O: &str = "gpt-4o";
const GPT_4O_MINI: &str = "gpt-4o-mini";
const SONNET: &str = "claude-3-5-sonnet-20241022";
const HAIKU: &str = "claude-3-5-haiku-20241022";
const QWEN: &str = "qwen2.5-coder:7b";

const BENCH_HEADER: &str = "temperature: 0
max_tokens: 100
repeat: 2
judge: openai:gpt-4o-mini
models:
  - openai:gpt-4o
  - anthropic:sonnet 3.5
  - ollama:qwen2.5-coder
prompts:
";

const BENCH_V1: &str = r#"  - arithmetic:
    prompt: "What is 17 * 23? Answer with the number only."
    output: "391"
    method: exact
  - capital:
    prompt: "What is the capital of Australia? Answer in one word."
    output: "canberra"
    method: icontains
  - python_reverse:
    prompt: "Write a Python one-liner that reverses a string s. Reply with the code only."
    output: "[::-1]"
    method: contains
  - iso_date:
    prompt: "Write any date in ISO 8601 form. Reply with the date only."
    output: '^\s*\d{4}-\d{2}-\d{2}\s*$'
    method: regex
  - json_person:
    prompt: 'Return only a JSON object with the keys "name" (the string "Ada") and "born" (the number 1815).'
    output: '{"name": "Ada", "born": 1815}'
    method: json-equals
  - json_any:
    prompt: "Return any valid JSON value."
    method: json-valid
  - explain_recursion:
    prompt: "Explain recursion to a ten-year-old in three sentences."
    method: judge
    rubric: "Accurate, uses an everyday analogy, at most three sentences."
    threshold: 4
"#;

/// The second version: `arithmetic`, `capital`, `iso_date` and `json_person` asked anew,
/// `python_reverse` and `explain_recursion` unchanged (cached), `json_any` gone, `haiku` new.
const BENCH_V2: &str = r#"  - arithmetic:
    prompt: "What is 17 times 23? Answer with the number only."
    output: "391"
    method: exact
  - capital:
    prompt: "Name the capital city of Australia in one word."
    output: "canberra"
    method: icontains
  - python_reverse:
    prompt: "Write a Python one-liner that reverses a string s. Reply with the code only."
    output: "[::-1]"
    method: contains
  - iso_date:
    prompt: "Give any date in ISO 8601 form, with nothing else."
    output: '^\s*\d{4}-\d{2}-\d{2}\s*$'
    method: regex
  - json_person:
    prompt: 'Reply with only a JSON object: "name" is "Ada", "born" is 1815.'
    output: '{"name": "Ada", "born": 1815}'
    method: json-equals
  - explain_recursion:
    prompt: "Explain recursion to a ten-year-old in three sentences."
    method: judge
    rubric: "Accurate, uses an everyday analogy, at most three sentences."
    threshold: 4
  - haiku:
    prompt: "Write a haiku about a cache."
    output: "cache"
    method: icontains
"#;

fn status(code: u16) -> Action {
    Action::Status {
        code,
        retry_after: None,
        body: String::new(),
    }
}

/// The judge's verdicts (keyed by the answer, which only the judge's prompt holds), for both
/// benchmark runs; they come before the answers' rules, whose questions the judge sees too.
fn judge_rules(s: &Sandbox) {
    s.mock.add_rule(Rule::reply(
        "Russian dolls",
        r#"{"justification": "A clear everyday analogy, three sentences.", "score": 5}"#,
    ));
    s.mock.add_rule(Rule::reply(
        "calls itself, that is all",
        r#"{"justification": "Accurate, but no analogy.", "score": 2}"#,
    ));
    s.mock.add_rule(Rule::reply(
        "Recursion is recursion",
        "I would rather not grade this.",
    ));
    s.mock.add_rule(
        Rule::reply(
            "Explain recursion",
            "Recursion is like Russian dolls: each doll holds a smaller one. You open them one \
             by one. The smallest one ends it.",
        )
        .model(GPT_4O),
    );
    s.mock.add_rule(
        Rule::reply(
            "Explain recursion",
            "A function that calls itself, that is all.",
        )
        .model(SONNET),
    );
    s.mock
        .add_rule(Rule::reply("Explain recursion", "Recursion is recursion."));
}

/// Run 1's answers: gpt-4o gets one of its two sums wrong, Sonnet's code calls fail (400),
/// qwen misses the capital, the code and the JSON object; a judge's garbage is an error.
fn bench_v1_rules(s: &Sandbox) {
    judge_rules(s);
    let m = &s.mock;
    m.add_rule(Rule::reply("What is 17 * 23", "392").model(GPT_4O).times(1));
    m.add_rule(Rule::reply("What is 17 * 23", "It is 391.").model(SONNET));
    m.add_rule(Rule::reply("What is 17 * 23", "391"));
    m.add_rule(Rule::reply("capital of Australia", "Sydney").model(QWEN));
    m.add_rule(
        Rule::reply(
            "capital of Australia",
            "<b>Canberra</b> & \"friends\", not Sydney",
        )
        .model(SONNET),
    );
    m.add_rule(Rule::reply("capital of Australia", "Canberra."));
    m.add_rule(Rule::new("reverses a string", status(400)).model(SONNET));
    m.add_rule(Rule::reply("reverses a string", "''.join(reversed(s))").model(QWEN));
    m.add_rule(Rule::reply("reverses a string", "s[::-1]"));
    m.add_rule(Rule::reply("ISO 8601", "2024-05-01"));
    m.add_rule(
        Rule::reply(
            "keys \"name\"",
            "```json\n{\"born\": 1815.0, \"name\": \"Ada\"}\n```",
        )
        .model(SONNET),
    );
    m.add_rule(Rule::reply(
        "keys \"name\"",
        "{\"name\": \"Ada\", \"born\": 1815}",
    ));
    m.add_rule(Rule::reply("any valid JSON", "{ok: true}").model(SONNET));
    m.add_rule(Rule::reply("any valid JSON", "[1, 2, 3]").model(QWEN));
    m.add_rule(Rule::reply("any valid JSON", "{\"ok\": true}"));
}

/// Run 4's answers: qwen now fails the sums, the date and the JSON object (six significant
/// regressions), gpt-4o's capital calls fail (500: new errors), Sonnet's code calls succeed.
fn bench_v2_rules(s: &Sandbox) {
    s.mock.clear_rules();
    judge_rules(s);
    let m = &s.mock;
    m.add_rule(Rule::reply("17 times 23", "390").model(QWEN));
    m.add_rule(Rule::reply("17 times 23", "It is 391.").model(SONNET));
    m.add_rule(Rule::reply("17 times 23", "391"));
    m.add_rule(Rule::new("capital city of Australia", status(500)).model(GPT_4O));
    m.add_rule(Rule::reply("capital city of Australia", "Sydney").model(QWEN));
    m.add_rule(Rule::reply("capital city of Australia", "Canberra"));
    m.add_rule(Rule::reply("reverses a string", "''.join(reversed(s))").model(QWEN));
    m.add_rule(Rule::reply("reverses a string", "s[::-1]"));
    m.add_rule(Rule::reply("ISO 8601 form, with nothing", "May 1, 2024").model(QWEN));
    m.add_rule(Rule::reply("ISO 8601 form, with nothing", "2024-05-01"));
    m.add_rule(
        Rule::reply(
            "\"name\" is \"Ada\"",
            "{\"name\": \"Ada\", \"born\": \"1815\"}",
        )
        .model(QWEN),
    );
    m.add_rule(
        Rule::reply(
            "\"name\" is \"Ada\"",
            "```json\n{\"born\": 1815.0, \"name\": \"Ada\"}\n```",
        )
        .model(SONNET),
    );
    m.add_rule(Rule::reply(
        "\"name\" is \"Ada\"",
        "{\"name\": \"Ada\", \"born\": 1815}",
    ));
    m.add_rule(
        Rule::reply(
            "haiku about a cache",
            "Memory holds the past\nquiet keys in ordered rows\nanswers wait for you",
        )
        .model(SONNET),
    );
    m.add_rule(Rule::reply(
        "haiku about a cache",
        "A cache remembers\nwhat the model said before:\nno charge the next time",
    ));
}

/// Sensors: five with an official datasheet, Honeywell HIH6130 without one.
const SENSORS: [(&str, &str); 6] = [
    ("Bosch", "BME280"),
    ("Sensirion", "SHT31"),
    ("TI", "HDC1080"),
    ("InvenSense", "MPU-6050"),
    ("ams", "TSL2561"),
    ("Honeywell", "HIH6130"),
];

/// A reviewer's JSON answer: `score(i)` is criterion Pi's score as JSON text, `None` leaves
/// it out; justifications carry CSV's awkward characters when `awkward`.
fn review_answer(score: impl Fn(usize) -> Option<String>, overall: &str, awkward: bool) -> String {
    let mut parts = Vec::new();
    for i in 1..=16 {
        let justification = if awkward {
            format!("P{i}: right, \\\"mostly\\\"\\nsecond line")
        } else {
            format!("P{i}: as the official datasheet says")
        };
        parts.push(format!("\"p{i}_justification\": \"{justification}\""));
        if let Some(score) = score(i) {
            parts.push(format!("\"p{i}_score\": {score}"));
        }
    }
    parts.push("\"overall_justification\": \"Overall, fair.\"".to_owned());
    parts.push(format!("\"overall_score\": {overall}"));
    format!("{{{}}}", parts.join(", "))
}

/// Every criterion at `score`.
fn all(score: u8) -> impl Fn(usize) -> Option<String> {
    move |_| Some(score.to_string())
}

/// The reviewers' answers. Run 2 (`lowered` false) and run 5 (`lowered` true, every answer
/// asked anew): gpt-4o-mini then scores qwen's datasheets 2 lower (a significant regression),
/// reads HDC1080 at last and gives P1 of gpt-4o's BME280 as N/A.
fn review_rules(s: &Sandbox, lowered: bool) {
    let m = &s.mock;
    let down = |score: u8| if lowered { score - 2 } else { score };
    // gpt-4o's datasheets, written by an earlier tool (files in results/).
    let bme = if lowered {
        review_answer(
            |i| Some(if i == 1 { "\"N/A\"".into() } else { "4".into() }),
            "4",
            false,
        )
    } else {
        review_answer(all(4), "4", false)
    };
    m.add_rule(
        Rule::reply(
            "GEN-G-BME280",
            &format!("Here is my review.\n```json\n{bme}\n```\nLet me know!"),
        )
        .model(GPT_4O_MINI),
    );
    m.add_rule(Rule::reply(
        "GEN-G-BME280",
        &review_answer(|i| Some(if i == 5 { 3 } else { 4 }.to_string()), "4", false),
    ));
    m.add_rule(
        Rule::reply(
            "GEN-G-SHT31",
            &review_answer(
                |i| match i {
                    3 => Some("\"3/5\"".into()),
                    5 => None,
                    7 => Some("7".into()),
                    _ => Some("3".into()),
                },
                "3",
                false,
            ),
        )
        .model(GPT_4O_MINI),
    );
    m.add_rule(Rule::reply(
        "GEN-G-SHT31",
        &review_answer(all(3), "3", false),
    ));
    // qwen's datasheets, written in run 2.
    for (marker, mini, haiku) in [
        ("GEN-Q-BME280", 5, 4),
        ("GEN-Q-SHT31", 4, 3),
        ("GEN-Q-HDC1080", 4, 2),
        ("GEN-Q-MPU-6050", 4, 5),
        ("GEN-Q-TSL2561", 3, 2),
    ] {
        let mini_answer = if marker == "GEN-Q-HDC1080" && !lowered {
            "Sorry, I cannot review this datasheet.".to_owned()
        } else {
            review_answer(
                all(down(mini)),
                &down(mini).to_string(),
                marker == "GEN-Q-SHT31",
            )
        };
        m.add_rule(Rule::reply(marker, &mini_answer).model(GPT_4O_MINI));
        let haiku_answer = if marker == "GEN-Q-TSL2561" {
            review_answer(
                |i| {
                    Some(if i == 16 {
                        "\"N/A\"".into()
                    } else {
                        "2".into()
                    })
                },
                "2",
                false,
            )
        } else {
            review_answer(all(haiku), &haiku.to_string(), false)
        };
        m.add_rule(Rule::reply(marker, &haiku_answer).model(HAIKU));
    }
}

/// Writes the review experiment's files: the sensors list, official datasheets (none for
/// HIH6130), gpt-4o's generated datasheets of three sensors, and `review.yaml`.
fn write_review_inputs(s: &Sandbox) {
    let mut sensors = String::from("Brand,Sensor,Category\n");
    for (brand, sensor) in SENSORS {
        sensors.push_str(&format!("{brand},{sensor},test\n"));
        if sensor != "HIH6130" {
            s.write(
                &format!("datasheet/{brand}_{sensor}.md"),
                &format!("# {brand} {sensor} (official)\nSupply 1.8-3.6 V, I2C.\n"),
            );
        }
    }
    s.write("data/sensors.csv", &sensors);
    for (i, (brand, sensor)) in [
        ("Bosch", "BME280"),
        ("Sensirion", "SHT31"),
        ("Honeywell", "HIH6130"),
    ]
    .into_iter()
    .enumerate()
    {
        s.write(
            &format!("results/{brand}/{sensor}/openai_gpt-4o_20250504_03080{i}.md"),
            &format!("# {brand} {sensor}\nGEN-G-{sensor}: written by gpt-4o.\n"),
        );
    }
    s.write(
        "review.yaml",
        "# Golden fixture, run 2: qwen writes a datasheet of each sensor, then two reviewers\n\
         # score every generated datasheet (gpt-4o's, already in results/, and qwen's).\n\
         kind: review\n\
         generators: [ollama:qwen2.5-coder]\n\
         reviewers: [openai:gpt-4o-mini, anthropic:haiku 3.5]\n\
         generation_max_tokens: 300\n\
         max_tokens: 1000\n",
    );
    for (brand, sensor) in SENSORS {
        s.mock.add_rule(
            Rule::reply(
                &format!("for the {brand} {sensor} sensor"),
                &format!("# {brand} {sensor}\nGEN-Q-{sensor}: written by qwen.\n"),
            )
            .model(QWEN),
        );
    }
}

/// The predicates of every image, and each image's truth (hand-made, not drawn from the
/// images: the mock does not look at them).
const PREDICATES: [&str; 5] = [
    "clear(red:block)",
    "clear(blue:block)",
    "on(red:block,blue:block)",
    "ontable(blue:block)",
    "holding(green:block)",
];
const TRUTH: [[u8; 5]; 6] = [
    [1, 0, 1, 1, 0],
    [1, 1, 0, 1, 0],
    [0, 1, 0, 0, 1],
    [1, 0, 1, 1, 1],
    [1, 1, 0, 0, 0],
    [0, 0, 0, 1, 0],
];

/// A relevance answer giving `scores` to [`PREDICATES`] in order.
fn relevance_answer(scores: [u8; 5]) -> String {
    let parts: Vec<String> = PREDICATES
        .iter()
        .zip(scores)
        .map(|(p, s)| format!("\"{p}\": {s}"))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The relevance answers. Run 3: WITH abstains on clear(blue) and holding(green); WITHOUT
/// answers 1 (not allowed) for ontable(blue) and names a predicate not asked. Run 6
/// (`changed`): WITH denies clear(red) and is sure of holding(green); WITHOUT says red is on
/// blue everywhere.
fn relevance_rules(s: &Sandbox, changed: bool) {
    s.mock.clear_rules();
    let with = if changed {
        [0, 1, 2, 0, 2]
    } else {
        [2, 1, 2, 0, 1]
    };
    let without = relevance_answer(if changed {
        [2, 2, 2, 1, 0]
    } else {
        [2, 2, 0, 1, 0]
    })
    .replace('}', ", \"on(blue:block,red:block)\": 0}");
    s.mock.add_rule(Rule::reply(
        "Use 1 whenever you are uncertain",
        &relevance_answer(with),
    ));
    s.mock.add_rule(Rule::reply(
        "Do not use score 1",
        &format!("Here: {without}"),
    ));
}

/// Writes six synthetic images, their hand-made truth and `relevance.yaml`.
fn write_relevance_inputs(s: &Sandbox) {
    crate::support::synth_blocks(s, 6, "blocks");
    std::fs::remove_file(s.path("blocks/ground_truth.json")).unwrap();
    let images: Vec<String> = TRUTH
        .iter()
        .enumerate()
        .map(|(i, truth)| {
            let predicates: Vec<String> = PREDICATES
                .iter()
                .zip(truth)
                .map(|(p, t)| format!("\"{p}\": {t}"))
                .collect();
            format!("  \"state_{i:04}\": {{{}}}", predicates.join(", "))
        })
        .collect();
    s.write(
        "blocks/truth.json",
        &format!("{{\n{}\n}}\n", images.join(",\n")),
    );
    s.write(
        "relevance.yaml",
        "# Golden fixture, run 3: gpt-4o scores the predicates of six images WITH and WITHOUT\n\
         # the uncertain option.\n\
         kind: relevance\n\
         model: openai:gpt-4o\n\
         images: \"blocks/state_*.png\"\n\
         ground_truth: blocks/truth.json\n\
         temperature: 0.1\n\
         repeat: 1\n\
         max_tokens: 200\n\
         out: out/relevance-run\n",
    );
}

/// The pairwise comparison's candidates (run 7). Run 8 changes only `my-model`: the same
/// name, a system prompt of its own, and better answers. The judges see each pair in both
/// orders; haiku 3.5 always says "A" (position bias) and answers garbage on `limerick`.
const PAIRWISE_HEADER: &str = "kind: pairwise
judges: [openai:gpt-4o-mini, anthropic:haiku 3.5]
answer_max_tokens: 100
max_tokens: 200
temperature: 0
prompts:
  - capital:
    prompt: \"What is the capital of Australia? Answer in one word.\"
    output: \"Canberra\"
  - sorting:
    prompt: \"Explain in two sentences why merge sort is O(n log n).\"
  - limerick:
    prompt: \"Write a limerick about a cache.\"
  - advice:
    prompt: \"Give one tip for writing clear error messages.\"
  - prime:
    prompt: \"Name a prime number between 20 and 30.\"
    output: \"23 or 29\"
  - rename:
    prompt: \"Suggest a better name for a variable called tmp2.\"
candidates:
  - {model: openai:gpt-4o}
  - {model: anthropic:sonnet 3.5}
";

/// Run 8's changed candidate: its system prompt is new (so are its answers).
const MY_MODEL_V2: &str =
    "  - {model: ollama:qwen2.5-coder, name: my-model, system: \"Think step by step.\"}\n";

/// The candidates' answers: gpt-4o `ANS-GOOD`, Sonnet `ANS-MID`, qwen `ANS-BAD` (run 7) and
/// `ANS-BEST` under run 8's system prompt; each but the last names its prompt.
fn pairwise_rules(s: &Sandbox) {
    s.mock.clear_rules();
    let m = &s.mock;
    // The system prompt comes first in the text a rule is matched against.
    m.add_rule(Rule::reply("Think step by step.", "ANS-BEST, reasoned step by step").model(QWEN));
    for (prompt, word) in [
        ("capital of Australia", "capital"),
        ("merge sort", "sorting"),
        ("limerick about a cache", "limerick"),
        ("clear error messages", "advice"),
        ("prime number between", "prime"),
        ("variable called tmp2", "rename"),
    ] {
        m.add_rule(Rule::reply(prompt, &format!("ANS-BAD {word}")).model(QWEN));
        m.add_rule(Rule::reply(prompt, &format!("ANS-GOOD {word}")).model(GPT_4O));
        m.add_rule(Rule::reply(prompt, &format!("ANS-MID {word}")).model(SONNET));
    }
    // gpt-4o-mini ranks BEST > GOOD > MID > BAD in either order.
    for level in ["BEST", "GOOD", "MID"] {
        for (side, winner) in [("A", "A"), ("B", "B")] {
            m.add_rule(
                Rule::reply(
                    &format!("ANSWER {side}:\nANS-{level}"),
                    &format!(r#"{{"justification": "{level} is better.", "winner": "{winner}"}}"#),
                )
                .model(GPT_4O_MINI),
            );
        }
    }
    m.add_rule(
        Rule::reply("limerick about a cache", "Both are lovely, I cannot pick.").model(HAIKU),
    );
    m.add_rule(Rule::reply(
        "",
        r#"{"justification": "The first one reads better.", "winner": "A"}"#,
    ));
}

/// Writes the two pairwise files: run 7's and run 8's (my-model changed).
fn write_pairwise_inputs(s: &Sandbox) {
    s.write(
        "pairwise_v1.yaml",
        &format!(
            "# Golden fixture, run 7: three candidates judged in both orders by two judges.\n\
             {PAIRWISE_HEADER}  - {{model: ollama:qwen2.5-coder, name: my-model}}\n"
        ),
    );
    s.write(
        "pairwise_v2.yaml",
        &format!(
            "# Golden fixture, run 8: my-model, the same name, gets a system prompt and does \
             better.\n{PAIRWISE_HEADER}{MY_MODEL_V2}"
        ),
    );
}

/// Runs 7 and 8: the pairwise comparison, then its second version.
fn pairwise_runs(s: &Sandbox) {
    pairwise_rules(s);
    run_track(s, &["run", "pairwise_v1.yaml"]);
    run_track(s, &["run", "pairwise_v2.yaml"]);
}

/// Runs `track` in the sandbox; the run must succeed.
fn run_track(s: &Sandbox, args: &[&str]) {
    let out = s.track().args(args).arg("-q").output().unwrap();
    assert!(
        out.status.success(),
        "track {}: {:?}\n{}",
        args.join(" "),
        out.status.code(),
        text(&out.stderr)
    );
}

/// Makes the eight runs and replaces the fixture with them; with the argument
/// `append-pairwise`, only adds runs 7 and 8 to the committed fixture
/// ([`append_pairwise`]).
fn main() {
    if std::env::args().any(|a| a == "append-pairwise") {
        append_pairwise();
        return;
    }
    let s = Sandbox::new();
    s.write(
        "bench_v1.yaml",
        &format!("# Golden fixture, run 1: a benchmark.\n{BENCH_HEADER}{BENCH_V1}"),
    );
    s.write(
        "bench_v2.yaml",
        &format!(
            "# Golden fixture, run 4: the benchmark's second version.\n{BENCH_HEADER}{BENCH_V2}"
        ),
    );
    write_review_inputs(&s);
    write_relevance_inputs(&s);
    write_pairwise_inputs(&s);
    let inputs: BTreeMap<String, Vec<u8>> = files_under(s.dir.path())
        .into_iter()
        .filter(|(name, _)| !name.starts_with("track.db"))
        .collect();

    // 1: the benchmark.
    bench_v1_rules(&s);
    run_track(&s, &["run", "bench_v1.yaml"]);
    // 2: the review experiment (its generation rules are already in).
    review_rules(&s, false);
    run_track(&s, &["run", "review.yaml"]);
    // 3: the relevance experiment file.
    relevance_rules(&s, false);
    run_track(&s, &["run", "relevance.yaml"]);
    // 4: the benchmark's second version, partly from the cache.
    bench_v2_rules(&s);
    run_track(&s, &["run", "bench_v2.yaml"]);
    // 5: the reviews asked anew, a command without a file.
    s.mock.clear_rules();
    review_rules(&s, true);
    run_track(
        &s,
        &[
            "review-datasheets",
            "--reviewer",
            "openai:gpt-4o-mini,anthropic:haiku 3.5",
            "--max-tokens",
            "1000",
            "--no-cache",
        ],
    );
    // 6: the relevance comparison asked anew with two trials, a command without a file.
    relevance_rules(&s, true);
    run_track(
        &s,
        &[
            "relevance",
            "compare",
            "--model",
            "openai:gpt-4o",
            "--images",
            "blocks/state_*.png",
            "--ground-truth",
            "blocks/truth.json",
            "--temperature",
            "0.1",
            "--max-tokens",
            "200",
            "--repeat",
            "2",
            "--out",
            "out/relevance-compare",
            "--no-cache",
        ],
    );
    // 7 and 8: the pairwise comparison and its second version.
    pairwise_runs(&s);
    check_runs(&s);

    // The inputs: the files written above and the datasheets qwen wrote in run 2 (their
    // names hold the time).
    let golden = golden_dir();
    let inputs_dir = golden.join("inputs");
    if inputs_dir.exists() {
        std::fs::remove_dir_all(&inputs_dir).unwrap();
    }
    let generated = files_under(&s.path("results"));
    write_inputs(
        inputs.into_iter().chain(
            generated
                .into_iter()
                .filter(|(name, _)| !name.starts_with("reviews/"))
                .map(|(name, bytes)| (format!("results/{name}"), bytes)),
        ),
    );
    write_fixture(&s);
}

/// Adds runs 7 and 8 (the pairwise comparison) to the committed fixture, whose runs 1 to 6
/// stay as they are, so that their outputs do not move:
/// `cargo bench --profile dev --bench regenerate-golden -- append-pairwise`. How the
/// pairwise runs came into a fixture made before them.
fn append_pairwise() {
    let s = Sandbox::new();
    std::fs::copy(golden_dir().join("fixture.db"), s.db_path()).unwrap();
    write_pairwise_inputs(&s);
    let inputs: Vec<(String, Vec<u8>)> = ["pairwise_v1.yaml", "pairwise_v2.yaml"]
        .into_iter()
        .map(|name| (name.to_owned(), std::fs::read(s.path(name)).unwrap()))
        .collect();
    pairwise_runs(&s);
    check_runs(&s);
    write_inputs(inputs);
    write_fixture(&s);
}

/// The runs are the ones the golden cases name.
fn check_runs(s: &Sandbox) {
    let runs: Vec<(i64, String, String)> = s
        .db()
        .prepare("SELECT id, kind, status FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let kinds: Vec<(i64, &str, &str)> = runs
        .iter()
        .map(|(id, kind, status)| (*id, kind.as_str(), status.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, "bench", "completed"),
            (2, "review", "completed"),
            (3, "relevance", "completed"),
            (4, "bench", "completed"),
            (5, "review", "completed"),
            (6, "relevance", "completed"),
            (7, "pairwise", "completed"),
            (8, "pairwise", "completed"),
        ],
        "the golden cases name these runs"
    );
}

/// Writes `files` (name relative to `inputs/`, bytes) into `tests/golden/inputs/`.
fn write_inputs(files: impl IntoIterator<Item = (String, Vec<u8>)>) {
    let inputs_dir = golden_dir().join("inputs");
    for (name, bytes) in files {
        let path = inputs_dir.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Replaces `fixture.db` with the sandbox's database, whole in its main file (no -wal
/// beside it).
fn write_fixture(s: &Sandbox) {
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(db);
    let golden = golden_dir();
    std::fs::copy(s.db_path(), golden.join("fixture.db")).unwrap();
    eprintln!(
        "regenerate-golden: wrote {} and {}; now run \
         TRACK_GOLDEN_UPDATE=1 cargo test --test it golden and review the diff",
        golden.join("fixture.db").display(),
        golden.join("inputs").display()
    );
}
