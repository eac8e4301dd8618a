//! The programs track runs (script checks, exec targets, `run:` tools), end to end, as users
//! write them: chatty (megabytes of debug lines before the verdict or the answer, and on
//! stderr before the error), and starting children that outlive them. The verdict, the
//! answer and the last line of stderr are read whatever came before; a tool result too long
//! to send says so; what a program started is ended with it, when it exits and on Ctrl-C.

use crate::support::mock::{Action, Rule};
use crate::support::{Sandbox, text, wait_for};

/// Python that prints `mb` MB of numbered debug lines to stdout and to stderr.
fn chatter(mb: usize) -> String {
    format!(
        "for i in range({mb} * 10000):\n    print(f'debug {{i:07d}} ' + 'x' * 86)\n\
         for i in range({mb} * 10000):\n    sys.stderr.write(f'log {{i:07d}} ' + 'y' * 88 + '\\n')\n"
    )
}

/// A benchmark of `model` over the cases of `data/s.jsonl` (`qid`, `q`) with `checks`.
fn bench(model: &str, checks: &str) -> String {
    format!(
        "models: [{model}]\ntemplates: [\"Spell {{{{q}}}} as a digit.\"]\n\
         cases: {{from: data/s.jsonl, id: qid}}\nchecks: [{checks}]\n"
    )
}

/// `(status, detail)` of the last run's result of case `case`.
fn result(s: &Sandbox, case: &str) -> (String, Option<String>) {
    s.db()
        .query_row(
            "SELECT status, detail FROM bench_results WHERE prompt_name = ?1
             AND run_id = (SELECT max(id) FROM runs)",
            [case],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

/// Whether process `pid` is gone (or a zombie left for its reaper).
fn gone(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    })
}

/// The pids written in files named `<prefix>…` in the sandbox.
fn pids(s: &Sandbox, prefix: &str) -> Vec<String> {
    std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect()
}

#[test]
fn a_script_checks_verdict_and_last_stderr_line_are_read_after_3_mb_of_debug_lines() {
    let s = Sandbox::new();
    s.write(
        "grade.py",
        &format!(
            "import json, sys\njob = json.load(sys.stdin)\ncase = job['values']['qid']\n{}\
             if case == 'crash':\n    sys.stderr.write('grader: no rubric for crash\\n')\n    \
             sys.exit(2)\n\
             ok = job['answer'].strip() == '1'\n\
             print(json.dumps({{'pass': ok, 'reason': 'graded ' + case + ' after 3 MB'}}))\n",
            chatter(3)
        ),
    );
    s.write(
        "data/s.jsonl",
        "{\"qid\": \"good\", \"q\": \"one\"}\n{\"qid\": \"bad\", \"q\": \"two\"}\n\
         {\"qid\": \"crash\", \"q\": \"three\"}\n",
    );
    s.write(
        "s.yaml",
        &bench(
            "openai:gpt-4o-mini",
            "{method: script, run: python3 grade.py, timeout_secs: 120}",
        ),
    );
    s.mock.add_rule(Rule::reply("Spell one ", "1"));
    let out = s.track().args(["run", "s.yaml", "-q"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        result(&s, "good"),
        ("passed".into(), Some("graded good after 3 MB".into())),
        "{stderr}"
    );
    assert_eq!(
        result(&s, "bad"),
        ("failed".into(), Some("graded bad after 3 MB".into()))
    );
    let (status, detail) = result(&s, "crash");
    assert_eq!(status, "error");
    assert_eq!(
        detail.as_deref(),
        Some("script `python3 grade.py` exited with status 2; stderr: grader: no rubric for crash")
    );
}

#[test]
fn an_exec_targets_answer_and_last_stderr_line_are_read_after_2_mb_of_output() {
    let s = Sandbox::new();
    s.write(
        "config.yaml",
        "providers:\n  my-app:\n    kind: exec\n    run: python3 app.py\n    timeout_secs: 120\n",
    );
    s.write(
        "app.py",
        &format!(
            "import json, sys\nrequest = json.load(sys.stdin)\n{}\
             if 'three' in request['prompt']:\n    \
             sys.stderr.write('fatal: the index is missing\\n')\n    sys.exit(1)\n\
             print(json.dumps({{'answer': '1' if 'one' in request['prompt'] else '7'}}))\n",
            chatter(2)
        ),
    );
    s.write(
        "data/s.jsonl",
        "{\"qid\": \"good\", \"q\": \"one\"}\n{\"qid\": \"bad\", \"q\": \"two\"}\n\
         {\"qid\": \"crash\", \"q\": \"three\"}\n",
    );
    s.write(
        "s.yaml",
        &bench("my-app:default", "{method: equals, value: \"1\"}"),
    );
    let out = s.track().args(["run", "s.yaml", "-q"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(result(&s, "good").0, "passed", "{stderr}");
    assert_eq!(result(&s, "bad").0, "failed", "{stderr}");
    assert_eq!(result(&s, "crash").0, "error", "{stderr}");
    let answers: Vec<String> = s
        .db()
        .prepare(
            "SELECT CAST(b.content AS TEXT) FROM calls c JOIN blobs b
             ON b.sha256 = c.response_sha256 WHERE c.status = 'ok' ORDER BY c.id",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers.iter().all(|a| a.len() < 1000),
        "only the answer is stored, not the debug lines: {} bytes",
        answers.iter().map(String::len).sum::<usize>()
    );
    let error: String = s
        .db()
        .query_row("SELECT error FROM calls WHERE status = 'error'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        error
            .contains("`python3 app.py` exited with status 1; stderr: fatal: the index is missing"),
        "{error}"
    );
}

#[test]
fn a_program_that_exits_while_its_child_holds_stdout_is_read_and_the_child_ended() {
    let s = Sandbox::new();
    // Each starts `sleep 60`, which inherits its stdout and stderr, writes the sleeper's pid
    // in `sleeper-<name>`, prints its verdict or answer and exits 0.
    let sleeper = |name: &str| {
        format!(
            "import json, subprocess, sys\nrequest = json.load(sys.stdin)\n\
             child = subprocess.Popen(['sleep', '60'])\n\
             open(f'sleeper-{name}-{{child.pid}}', 'w').write(str(child.pid))\n"
        )
    };
    s.write(
        "grade.py",
        &(sleeper("grade") + "print(json.dumps({'pass': True, 'reason': 'read'}))\n"),
    );
    s.write(
        "app.py",
        &(sleeper("app") + "print(json.dumps({'answer': '1'}))\n"),
    );
    s.write(
        "config.yaml",
        "providers:\n  my-app:\n    kind: exec\n    run: python3 app.py\n    timeout_secs: 120\n",
    );
    s.write(
        "data/s.jsonl",
        "{\"qid\": \"c1\", \"q\": \"one\"}\n{\"qid\": \"c2\", \"q\": \"two\"}\n",
    );
    s.write(
        "s.yaml",
        &bench(
            "my-app:default",
            "{method: equals, value: \"1\"}, {method: script, run: python3 grade.py, \
             timeout_secs: 120}",
        ),
    );
    let began = std::time::Instant::now();
    let out = s.track().args(["run", "s.yaml", "-q"]).output().unwrap();
    let stderr = text(&out.stderr);
    // The answers and the verdicts were read: each passes both checks.
    for case in ["c1", "c2"] {
        assert_eq!(result(&s, case).0, "passed", "{case}: {stderr}");
    }
    // Not waited for: the sleepers would take a minute (a loose bound, only against a hang).
    assert!(
        began.elapsed() < std::time::Duration::from_secs(50),
        "{stderr}"
    );
    let sleepers = [pids(&s, "sleeper-app"), pids(&s, "sleeper-grade")].concat();
    assert_eq!(sleepers.len(), 4, "two calls and two scripts: {sleepers:?}");
    for pid in sleepers {
        wait_for(&format!("the sleeper {pid} to be ended"), || gone(&pid));
    }
}

#[test]
fn ctrl_c_during_a_script_check_ends_what_the_script_started() {
    let s = Sandbox::new().patient();
    s.write(
        "grade.py",
        "import json, subprocess, sys, time\njson.load(sys.stdin)\n\
         child = subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL)\n\
         open(f'sleeper-{child.pid}', 'w').write(str(child.pid))\ntime.sleep(60)\n",
    );
    s.write("data/s.jsonl", "{\"qid\": \"c1\", \"q\": \"one\"}\n");
    s.write(
        "s.yaml",
        &bench(
            "openai:gpt-4o-mini",
            "{method: script, run: python3 grade.py, timeout_secs: 300}",
        ),
    );
    let run = s.start(&["run", "s.yaml", "-q"]);
    wait_for("the script's child to start", || {
        !pids(&s, "sleeper-").is_empty()
    });
    run.signal("INT");
    let (code, stderr) = run.finish();
    assert_eq!(code, Some(130), "{stderr}");
    let pid = pids(&s, "sleeper-").remove(0);
    wait_for(&format!("the script's child {pid} to be ended"), || {
        gone(&pid)
    });
}

#[test]
fn a_tool_result_too_long_to_send_says_so_to_the_model_and_in_its_row() {
    let s = Sandbox::new();
    s.write(
        "dump.py",
        "import sys\nsys.stdin.read()\nprint('first line of the dump')\n\
         for i in range(30000):\n    print(f'row {i:07d} ' + 'z' * 88)\nprint('the end: 42')\n",
    );
    s.write(
        "bench.yaml",
        "models: [openai:gpt-4o]\ntools:\n  - name: dump\n    description: Dumps the table.\n    \
         parameters: {type: object, properties: {}}\n    run: python3 dump.py\n\
         templates: [\"{{question}}\"]\ncases:\n  - id: big\n    \
         question: \"What is at the end of the table?\"\n\
         checks: [{method: tool-called, value: dump}]\n",
    );
    s.mock.add_rule(
        Rule::new(
            "What is at the end",
            Action::ToolCalls(vec![("dump".into(), serde_json::json!({}))]),
        )
        .times(1),
    );
    let out = s
        .track()
        .args(["run", "bench.yaml", "-q"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(s.mock.request_count(), 2, "{stderr}");
    let sent = s.mock.requests()[1].body["messages"][2]["content"]
        .as_str()
        .expect("the tool message's text")
        .to_owned();
    // 23 bytes, 30,000 rows of 101, 12: all but the first and the last 512 KiB left out.
    let total: u64 = 23 + 30_000 * 101 + 12;
    let note = format!(
        "[track: this tool printed {} bytes, too many to send: the {} bytes between its start \
         and its end are left out here]",
        thousands(total),
        thousands(total - (1 << 20))
    );
    assert!(
        sent.starts_with("first line of the dump\nrow 0000000 "),
        "{}",
        &sent[..80]
    );
    assert!(
        sent.ends_with("\nthe end: 42"),
        "{}",
        &sent[sent.len() - 80..]
    );
    assert!(sent.contains(&note), "the model is told: {note}");
    assert!(sent.len() < (1 << 20) + note.len() + 4, "{}", sent.len());
    let stored: String = s
        .db()
        .query_row("SELECT result FROM tool_calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, sent, "the stored row is what the model was sent");
}

/// `3,030,035`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
