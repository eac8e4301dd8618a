//! CI's lint gate (`.ci/lint.sh`, run first by `.ci/run`) against a stand-in `cargo`: it fails,
//! naming what is missing, when the toolchain lacks rustfmt or clippy, and checks both when
//! they are there.

use std::path::Path;
use std::process::{Command, Output};

/// Runs the gate with a stand-in `cargo` first on PATH that logs its arguments and answers
/// `fmt --version` / `clippy --version` as if the component were there or not.
fn gate(rustfmt: bool, clippy: bool) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{log}'\ncase \"$1 $2\" in\n  'fmt --version') exit {fmt};;\n  'clippy --version') exit {clippy};;\nesac\nexit 0\n",
        log = log.display(),
        fmt = if rustfmt { 0 } else { 101 },
        clippy = if clippy { 0 } else { 101 },
    );
    let cargo = dir.path().join("cargo");
    std::fs::write(&cargo, script).unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let lint = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/lint.sh");
    let output = Command::new("bash")
        .arg(lint)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .output()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    (output, calls)
}

#[test]
fn the_gate_fails_naming_rustfmt_or_clippy_when_the_toolchain_lacks_it() {
    for (rustfmt, clippy, named) in [
        (false, true, "rustfmt"),
        (true, false, "clippy"),
        (false, false, "rustfmt clippy"),
    ] {
        let (output, calls) = gate(rustfmt, clippy);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "passed without {named}: {stderr}");
        assert!(
            stderr.contains(&format!("{named} not installed"))
                && stderr.contains(&format!("rustup component add {named}")),
            "{stderr}"
        );
        assert!(
            !calls.contains("--check") && !calls.contains("-D warnings"),
            "nothing is checked half-way: {calls}"
        );
    }
}

#[test]
fn the_gate_checks_formatting_then_lints_when_both_are_installed() {
    let (output, calls) = gate(true, true);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let checks: Vec<&str> = calls
        .lines()
        .filter(|l| !l.ends_with("--version"))
        .collect();
    assert_eq!(
        checks,
        [
            "fmt --check",
            "clippy --locked --all-targets -- -D warnings"
        ]
    );
}
