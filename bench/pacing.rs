//! The pacing benchmark (run with `cargo bench --profile dev --bench pacing`: it measures
//! admissions in wall-clock time, not CPU, so the debug build does; not a test): `track run` at
//! `--concurrency 64` against a mock provider that enforces a rate limit over one-second
//! buckets and sends the provider's headers on every answer, as issue 15 tried it:
//!
//! 1. OpenAI, 600 requests a minute, 300 short prompts;
//! 2. OpenAI, 126,000 tokens a minute, `max_tokens: 200`, 300 prompts;
//! 3. the same limit, 120 prompts of 10 to 3,200 characters (issue 31);
//! 4. the second case with 4 tokens a message of framing charged besides the characters, as
//!    OpenAI's cookbook counts them (issue 31: track's estimate follows the guide's reading);
//! 5. Anthropic, 480 requests a minute, 240 prompts;
//! 6. Anthropic, 8,000 output tokens a minute reserved from `max_tokens: 4096` at admission and
//!    given back when the answer ends (issue 26), 40 prompts answered at once;
//! 7. the same limit counting only the tokens generated, with answers taking a second.
//!
//! For each: every answer arrived or not, the share of requests refused, and the admitted
//! work in steady state (from the first admission after the first second's burst to the last)
//! as a share of what the limit allows (target: at least 95 %, under 1 % refused); for the
//! last two, whose answers use a few of the tokens reserved, the run's wall time and its
//! longest gap between two admissions (target for the sixth: under 12 s, under 1 % refused;
//! the seventh, sent one at a time, would take 40 s).
//!
//! On 2026-11-27 (issue 31), before and after OpenAI's token charge lost the 4 tokens a
//! message of framing its rate limiter does not count: case 2 95.2 % then 97.0 %, case 3
//! 96.4 % then 97.0 %, none refused; the other 3 % is the pacer's margin (it aims at 97 %).
//! Where the framing is charged (case 4) the estimate now falls 2 % short, within that
//! margin: 97.0 % then 98.9 % of the limit, none refused.
//!
//! Numbers after `--` run those cases only: `cargo bench --profile dev --bench pacing -- 2 3`;
//! `TRACK_BENCH_BIN=PATH` runs that `track` binary instead of the one cargo built.

#[path = "../tests/it/support/mock.rs"]
mod mock;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mock::{MockConfig, MockLimits, MockProvider, RetryAfterHeader};

/// One case: a limit, the prompts and the model that meets it.
struct Case {
    name: &'static str,
    model: &'static str,
    limits: MockLimits,
    prompts: usize,
    /// Whether the prompts vary in length (10 to 3,200 characters) rather than all being short.
    varied: bool,
    max_tokens: u32,
    /// How long an answer takes.
    delay: Duration,
    /// Which admitted work the limit counts, and the limit per minute.
    measure: Measure,
}

#[derive(Clone, Copy)]
enum Measure {
    Requests(f64),
    Tokens(f64),
    /// The run's wall time and its longest wait between two admissions.
    Wall,
}

#[allow(
    clippy::too_many_lines,
    reason = "a benchmark reads as one scenario, top to bottom"
)]
fn main() {
    let window = Duration::from_secs(1);
    let cases = [
        Case {
            name: "OpenAI, 600 RPM in 1 s buckets, 300 prompts",
            model: "openai:gpt-4o",
            limits: MockLimits {
                rpm: Some(600),
                window,
                headers: true,
                retry_after: RetryAfterHeader::Millis,
                ..MockLimits::default()
            },
            prompts: 300,
            varied: false,
            max_tokens: 50,
            delay: Duration::ZERO,
            measure: Measure::Requests(600.0),
        },
        Case {
            name: "OpenAI, 126,000 TPM in 1 s buckets, max_tokens 200, 300 prompts",
            model: "openai:gpt-4o",
            limits: MockLimits {
                tpm: Some(126_000),
                window,
                headers: true,
                retry_after: RetryAfterHeader::Millis,
                ..MockLimits::default()
            },
            prompts: 300,
            varied: false,
            max_tokens: 200,
            delay: Duration::ZERO,
            measure: Measure::Tokens(126_000.0),
        },
        Case {
            name: "OpenAI, 126,000 TPM in 1 s buckets, max_tokens 200, 120 prompts of 10 to \
                   3,200 characters",
            model: "openai:gpt-4o",
            limits: MockLimits {
                tpm: Some(126_000),
                window,
                headers: true,
                retry_after: RetryAfterHeader::Millis,
                ..MockLimits::default()
            },
            prompts: 120,
            varied: true,
            max_tokens: 200,
            delay: Duration::ZERO,
            measure: Measure::Tokens(126_000.0),
        },
        Case {
            name: "OpenAI, 126,000 TPM in 1 s buckets counting 4 tokens a message of framing, \
                   max_tokens 200, 300 prompts",
            model: "openai:gpt-4o",
            limits: MockLimits {
                tpm: Some(126_000),
                window,
                headers: true,
                retry_after: RetryAfterHeader::Millis,
                message_tokens: 4,
                ..MockLimits::default()
            },
            prompts: 300,
            varied: false,
            max_tokens: 200,
            delay: Duration::ZERO,
            measure: Measure::Tokens(126_000.0),
        },
        Case {
            name: "Anthropic, 480 RPM in 1 s buckets, 240 prompts",
            model: "anthropic:haiku 3.5",
            limits: MockLimits {
                rpm: Some(480),
                tpm: None,
                itpm: Some(4_000_000),
                otpm: Some(1_000_000),
                window,
                headers: true,
                retry_after: RetryAfterHeader::Seconds,
                reserve_output: false,
                message_tokens: 0,
            },
            prompts: 240,
            varied: false,
            max_tokens: 100,
            delay: Duration::ZERO,
            measure: Measure::Requests(480.0),
        },
        Case {
            name: "Anthropic, 8,000 OTPM reserved from max_tokens 4096, 40 prompts",
            model: "anthropic:haiku 3.5",
            limits: MockLimits {
                rpm: Some(4_000),
                otpm: Some(8_000),
                window,
                reserve_output: true,
                ..MockLimits::default()
            },
            prompts: 40,
            varied: false,
            max_tokens: 4096,
            delay: Duration::ZERO,
            measure: Measure::Wall,
        },
        Case {
            name: "Anthropic, 8,000 OTPM counting generated tokens, max_tokens 4096, answers \
                   in 1 s, 40 prompts",
            model: "anthropic:haiku 3.5",
            limits: MockLimits {
                rpm: Some(4_000),
                otpm: Some(8_000),
                window,
                reserve_output: false,
                ..MockLimits::default()
            },
            prompts: 40,
            varied: false,
            max_tokens: 4096,
            delay: Duration::from_secs(1),
            measure: Measure::Wall,
        },
    ];
    println!(
        "track pacing benchmark ({} cores), --concurrency 64",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // `cargo bench --bench pacing -- 2 3` runs cases 2 and 3 (cargo adds `--bench`).
    let chosen: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    // TRACK_BENCH_BIN runs another build of track (to compare two builds in the same minutes).
    let binary =
        std::env::var_os("TRACK_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_track").into());
    for (n, case) in cases.into_iter().enumerate() {
        if !chosen.is_empty() && !chosen.contains(&(n + 1)) {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let mock = MockProvider::start_with(MockConfig {
            limits: Some(case.limits.clone()),
            delay: case.delay,
            record_bodies: false,
            ..MockConfig::default()
        });
        let file = write_bench(
            dir.path(),
            case.model,
            case.prompts,
            case.varied,
            case.max_tokens,
        );
        let started = std::time::Instant::now();
        let status = Command::new(&binary)
            .args([
                "run",
                path(&file),
                "-q",
                "--no-detail",
                "--concurrency",
                "64",
            ])
            .env("TRACK_DB", dir.path().join("pacing.db"))
            .env("OPENAI_BASE_URL", mock.openai_base_url())
            .env("ANTHROPIC_BASE_URL", mock.anthropic_base_url())
            .env("OPENAI_API_KEY", "sk-bench")
            .env("ANTHROPIC_API_KEY", "sk-ant-bench")
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("start track");
        let wall = started.elapsed();
        let admissions = mock.admissions();
        // In the order the limiter admitted them: the log is in the order the answers ended.
        let mut admitted: Vec<_> = admissions.iter().filter(|a| a.requests == 1).collect();
        admitted.sort_by_key(|a| a.at);
        let refused = mock.refused();
        let sent = admitted.len() + refused;
        // Steady state: from the first admission after the first window to the last, with the
        // work admitted after the former. A paced call goes when the bucket holds its cost, so
        // the bucket is about empty after each admission: the work between two admissions is
        // what the limit refilled between them. Counted from the end of the window instead,
        // the span would start with part of a call's cost already refilled.
        let first = admitted.first().map_or(0.0, |a| a.at.as_secs_f64());
        let last = admitted.last().map_or(0.0, |a| a.at.as_secs_f64());
        let start = first + window.as_secs_f64();
        let after: Vec<_> = admitted
            .iter()
            .filter(|a| a.at.as_secs_f64() > start)
            .collect();
        let from = after.first().map_or(last, |a| a.at.as_secs_f64());
        let steady = after.get(1..).unwrap_or_default();
        let span = (last - from).max(1e-9);
        let (work, limit, unit) = match case.measure {
            Measure::Requests(rpm) => (steady.len() as f64, rpm, "requests"),
            Measure::Tokens(tpm) => (
                steady.iter().map(|a| a.tokens as f64).sum::<f64>(),
                tpm,
                "tokens",
            ),
            Measure::Wall => {
                // The mock admits an unstreamed answer once its delay is over: gaps between
                // admissions are waits only when answers come at once.
                let longest = admitted
                    .windows(2)
                    .map(|w| w[1].at.saturating_sub(w[0].at))
                    .max()
                    .unwrap_or_default();
                let gap = match case.delay.is_zero() {
                    true => format!(
                        ", longest gap between admissions {:.3} s",
                        longest.as_secs_f64()
                    ),
                    false => String::new(),
                };
                println!(
                    "{}. {}: {} of {} answers (exit {}), {refused} of {sent} requests refused \
                     ({:.2} %), run {:.2} s{gap}",
                    n + 1,
                    case.name,
                    admitted.len(),
                    case.prompts,
                    status.code().unwrap_or(-1),
                    refused as f64 / sent.max(1) as f64 * 100.0,
                    wall.as_secs_f64(),
                );
                continue;
            }
        };
        let share = work / (limit / 60.0 * span) * 100.0;
        println!(
            "{}. {}: {} of {} answers (exit {}), {refused} of {sent} requests refused ({:.2} %), \
             steady state {:.1} % of the {unit} the limit allows ({:.1} s)",
            n + 1,
            case.name,
            admitted.len(),
            case.prompts,
            status.code().unwrap_or(-1),
            refused as f64 / sent.max(1) as f64 * 100.0,
            share,
            last - first
        );
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A benchmark of `n` distinct prompts on `model`: short ones, or when `varied` of 10 to
/// 3,200 characters, their lengths spread evenly over that range in a shuffled order.
fn write_bench(
    dir: &Path,
    model: &str,
    n: usize,
    varied: bool,
    max_tokens: u32,
) -> std::path::PathBuf {
    let mut yaml = format!("max_tokens: {max_tokens}\nmodels:\n  - {model}\nprompts:\n");
    for i in 0..n {
        let mut prompt = format!("benchmark question {i}");
        if varied {
            // i * 47 mod n visits every step once (47 is prime to the counts used here).
            let step = (i * 47) % n;
            let chars = 10 + step * (3_200 - 10) / (n - 1).max(1);
            prompt = format!("q{i} ");
            while prompt.len() < chars {
                prompt.push_str("word ");
            }
            prompt.truncate(chars);
            prompt = prompt.trim_end().to_owned();
        }
        yaml.push_str(&format!(
            "  - p{i}:\n    prompt: \"{prompt}\"\n    output: \"mock\"\n    method: contains\n"
        ));
    }
    let file = dir.join("pacing.yaml");
    std::fs::write(&file, yaml).expect("write benchmark");
    file
}
