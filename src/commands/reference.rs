//! The command line as documents show it: `docs/src/reference.md` (every command's `--help`,
//! in Markdown, made by this module's test) and the man pages (`track man`) are made from it, so they cannot drift from the
//! flags. Nothing of the machine that makes them shows: a fixed width, no colour, and no value
//! of an environment variable an option reads (`[env: TRACK_DB=]`, never the caller's path).

/// The width the documents' help text is wrapped at, whatever the terminal.
const WIDTH: usize = 100;

/// The path of the committed reference, from the crate's root.
#[cfg(test)]
const REFERENCE_PATH: &str = "docs/src/reference.md";

/// The command line as parsed ([`super::Cli::command_with_global_options`]), set up for a
/// document (see the module's comment) and built: subcommands know their full names.
#[cfg(test)]
fn documented_command() -> clap::Command {
    let mut command = for_documents(super::Cli::command_with_global_options());
    command.build();
    command
}

/// `command` and its subcommands at every depth wrapped at [`WIDTH`], with environment
/// variables named but their values hidden.
pub(crate) fn for_documents(command: clap::Command) -> clap::Command {
    command
        .term_width(WIDTH)
        .mut_args(|arg| arg.hide_env_values(true))
        .mut_subcommands(for_documents)
}

/// The Markdown reference: a `##` section per command and subcommand, in the order
/// `track --help` lists them, each holding that command's `--help`. Made (and checked against
/// the committed file) by this module's test.
#[cfg(test)]
fn markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from the command line's definition (src/commands/): do not edit.\n     \
         Regenerate with: TRACK_BLESS=1 cargo test --locked --lib commands::reference\n     \
         (a test fails when this file differs from what the flags produce). -->\n\n\
         # Command reference\n\n\
         Every command's `--help`, as `track COMMAND --help` prints it. The options of every\n\
         command (`--db`, `--config`, `-q`, `-v`) and the exit statuses are under\n\
         [`track`](#track).\n",
    );
    let mut command = documented_command();
    push_sections(&mut out, &mut command);
    out
}

/// Appends the section of `command`, then those of its visible subcommands.
#[cfg(test)]
fn push_sections(out: &mut String, command: &mut clap::Command) {
    let name = command
        .get_bin_name()
        .unwrap_or_else(|| command.get_name())
        .to_owned();
    let help = command.render_long_help().to_string();
    out.push_str(&format!("\n## {name}\n\n```text\n"));
    for line in help.trim_end().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    for sub in command.get_subcommands_mut() {
        if !sub.is_hide_set() && sub.get_name() != "help" {
            push_sections(out, sub);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed `docs/src/reference.md` is what the flags produce; with TRACK_BLESS=1 set
    /// the test writes it instead.
    #[test]
    fn the_committed_reference_is_what_the_flags_produce() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(REFERENCE_PATH);
        let made = markdown();
        if std::env::var_os("TRACK_BLESS").is_some_and(|v| !v.is_empty()) {
            std::fs::write(&path, &made).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != made {
            let first = committed
                .lines()
                .zip(made.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(made.lines().count()));
            panic!(
                "{REFERENCE_PATH} differs from what the flags produce (first at line {}): \
                 regenerate it with `TRACK_BLESS=1 cargo test --locked --lib \
                 commands::reference` and commit it",
                first + 1
            );
        }
    }

    #[test]
    fn every_command_has_a_section_holding_its_help() {
        let made = markdown();
        let command = documented_command();
        let mut names = vec!["track".to_owned()];
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() == "help" {
                continue;
            }
            names.push(format!("track {}", sub.get_name()));
            for nested in sub.get_subcommands().filter(|s| !s.is_hide_set()) {
                if nested.get_name() != "help" {
                    names.push(format!("track {} {}", sub.get_name(), nested.get_name()));
                }
            }
        }
        assert!(names.contains(&"track run".to_owned()), "{names:?}");
        for name in &names {
            let heading = format!("\n## {name}\n\n```text\n");
            let at = made
                .find(&heading)
                .unwrap_or_else(|| panic!("no section {name}"));
            let usage = format!("Usage: {name}");
            let section = &made[at + heading.len()..];
            let section = &section[..section.find("```").unwrap()];
            assert!(section.contains(&usage), "{name}'s section: {section}");
        }
        // `track man` is listed: it is how a user gets the pages.
        assert!(made.contains("## track man\n"), "{made}");
    }

    #[test]
    fn no_environment_value_shows_and_lines_fit_the_width() {
        fn check(command: &clap::Command) {
            for arg in command.get_arguments() {
                if arg.get_env().is_some() {
                    assert!(arg.is_hide_env_values_set(), "{}", arg.get_id());
                }
            }
            command.get_subcommands().for_each(check);
        }
        check(&documented_command());
        let made = markdown();
        assert!(made.contains("[env: TRACK_DB]"), "the variable is named");
        // Wrapped at WIDTH, not at a terminal's 80 columns or the caller's COLUMNS.
        let widest = made.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            (81..=WIDTH).contains(&widest),
            "help lines wrap at {WIDTH}: {widest}"
        );
    }
}
