//! The exit statuses of `track`, in one place: what each command returns, and the list that
//! `track --help` prints under its options ([`help`]), written from the same constants.
//!
//! A CI job reads them apart: 0 passed, [`BELOW_BAR`] ran but missed a bar it was given
//! (`--fail-under`, `--fail-on-errors`, `diff --fail-on-regression`), [`ERROR`] a run that could
//! not do its work, [`BAD_INPUT`] a command that could not start, 128 + n a signal.

/// Done: a run with failed tests or errored calls is done (they are its results).
pub const SUCCESS: u8 = 0;

/// A run that could not do its work: nothing could run, `--offline` met calls not in the
/// cache, or its budget stopped it.
pub const ERROR: u8 = 1;

/// Bad input or trouble, for every command: a usage error (clap's own status), or a file,
/// option, run id or database that cannot be used, and any other error that stops a command
/// (diff(1)'s "trouble").
pub const BAD_INPUT: u8 = 2;

/// Ran, but below the bar the command was given: a pass rate under `--fail-under`, an error
/// row with `--fail-on-errors`, a significant regression with `track diff
/// --fail-on-regression`. The results are recorded and printed as with 0.
pub const BELOW_BAR: u8 = 3;

/// A run stopped by SIGHUP (128 + 1, as shells report it).
pub const SIGHUP: u8 = 129;

/// A run stopped by SIGINT, Ctrl-C (128 + 2).
pub const SIGINT: u8 = 130;

/// A run stopped by SIGTERM (128 + 15).
pub const SIGTERM: u8 = 143;

/// Each status (or group of statuses) with what it means, in one sentence: `track --help`
/// lists them after its options ([`help`]) and every man page in its EXIT STATUS section.
pub fn statuses() -> [(String, &'static str); 5] {
    [
        (
            SUCCESS.to_string(),
            "done: a run with failed tests or errored calls is done (they are its results)",
        ),
        (
            ERROR.to_string(),
            "a run that could not do its work (nothing could run, --offline met calls not in \
             the cache, its budget stopped it)",
        ),
        (
            BAD_INPUT.to_string(),
            "bad input or trouble: a usage error, or a file, option, run id or database that \
             cannot be used; one line (`track: …` or `error: …`) names it and the fix",
        ),
        (
            BELOW_BAR.to_string(),
            "ran, but below the bar: a pass rate under --fail-under, an error row with \
             --fail-on-errors (track run, track query), a significant regression (track diff \
             --fail-on-regression); stderr names what missed it",
        ),
        (
            format!("{SIGHUP}, {SIGINT}, {SIGTERM}"),
            "a signal (SIGHUP, SIGINT, SIGTERM) interrupted it (the same command finishes a run)",
        ),
    ]
}

/// The statuses as `track --help` lists them, after its options: each meaning wrapped to 80
/// columns, under a column of codes (a group of codes that does not fit gets its own line).
pub fn help() -> String {
    const INDENT: usize = 11;
    let mut text = String::from("Exit status:");
    for (codes, meaning) in statuses() {
        let mut lines = wrap(meaning, 80 - INDENT).into_iter();
        let first = lines.next().unwrap_or_default();
        if codes.len() + 2 < INDENT - 1 {
            text.push_str(&format!("\n  {codes:<width$}{first}", width = INDENT - 2));
        } else {
            text.push_str(&format!("\n  {codes}\n{:INDENT$}{first}", ""));
        }
        for line in lines {
            text.push_str(&format!("\n{:INDENT$}{line}", ""));
        }
    }
    text
}

/// `text`'s words in lines of at most `width` characters (a longer word alone on its line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_distinct_and_listed_in_the_help() {
        let all = [
            SUCCESS, ERROR, BAD_INPUT, BELOW_BAR, SIGHUP, SIGINT, SIGTERM,
        ];
        let mut sorted = all.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "{all:?}");
        let help = help();
        assert!(help.lines().all(|l| l.chars().count() <= 80), "{help}");
        for code in all {
            assert!(
                help.lines().any(|l| {
                    l.trim_start()
                        .split([' ', ','])
                        .next()
                        .is_some_and(|first| first == code.to_string())
                        || l.trim_start()
                            .split(", ")
                            .any(|part| part == code.to_string())
                }),
                "{code} is not listed: {help}"
            );
        }
    }
}
