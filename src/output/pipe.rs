//! A closed pipe (`track … | head`): success, not a failure; and `--quiet`, which keeps stderr
//! to errors (and the misses of a bar, which say why the exit status is 3).

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `--quiet` was given: notes are then not printed.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Sets `--quiet` for the process: [`note`] prints nothing from then on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Prints a note on stderr (what was loaded, a warning about the input, how calls are
/// routed), unless `--quiet`: quiet means errors only.
pub fn note(line: impl std::fmt::Display) {
    if !is_quiet() {
        tell(line);
    }
}

/// Whether `error` is a closed pipe (`track … | head`): not a failure, the reader has what it
/// wanted.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Prints `line` on stdout for a command whose work is files (exports, merges): a closed pipe
/// (`track export csv | head -1`) or a stdout that cannot be written never stops that work, so
/// the line is then dropped, not a panic as `println!` would make it.
pub fn say(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}

/// Prints `line` on stderr (notes, warnings, errors): a closed pipe (`track run … 2>&1 | head`)
/// or a stderr that cannot be written drops the line instead of a panic as `eprintln!` would
/// make it, so a run still records and ends as it would have.
pub fn tell(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
