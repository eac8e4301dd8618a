//! `track man --out DIR`: the man pages, `track.1` and one per command
//! (`track-run.1`, `track-export-csv.1`…), generated from the command line's definition
//! (clap_mangen), so they cannot drift from it. The end-to-end tests write them to
//! `target/man/`, so `man ./target/man/track.1` works after `cargo test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

/// Write the man pages: track.1 and one per command (track-run.1…).
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The folder to write them in (created if missing), e.g. target/man or
    /// ~/.local/share/man/man1.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub(crate) fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let written = write_pages(&args.out)?;
    crate::output::say(format_args!(
        "track: wrote {} man pages to {}",
        written.len(),
        args.out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of every visible command (at every depth) into `dir`; returns their paths.
pub(crate) fn write_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the folder {} for the man pages", dir.display()))?;
    // No `help` subcommand: its page would say no more than this one's.
    fn without_help(command: clap::Command) -> clap::Command {
        command
            .disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut command = without_help(super::reference::for_documents(
        super::Cli::command_with_global_options(),
    ));
    command.build();
    let mut written = Vec::new();
    push_pages(&command, dir, &mut written)?;
    Ok(written)
}

/// The EXIT STATUS section (each status a tagged paragraph, filled to the reader's width)
/// and, below the top page, SEE ALSO pointing to it for the options of every command.
fn closing_sections(command: &clap::Command) -> clap_mangen::roff::Roff {
    use clap_mangen::roff::{Roff, bold, roman};
    let mut roff = Roff::default();
    roff.control("SH", ["EXIT STATUS"]);
    for (codes, meaning) in crate::exit::statuses() {
        roff.control("TP", [])
            .text([bold(codes)])
            .text([roman(meaning)]);
    }
    if command.get_name() != "track" {
        roff.control("SH", ["SEE ALSO"]).text([
            bold("track"),
            roman("(1), for the options every command takes (--db, --config, -q, -v)"),
        ]);
    }
    roff
}

/// Writes `command`'s page, then its visible subcommands'.
fn push_pages(
    command: &clap::Command,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    // The text after the options (`--help`'s exit statuses, or its pointer to them) is laid
    // out for a terminal; a man page has sections of its own for it.
    let page = clap_mangen::Man::new(command.clone().after_help(None::<&str>))
        .source(format!("track {}", env!("TRACK_VERSION")))
        .manual("track manual");
    let path = dir.join(page.get_filename());
    let mut roff = Vec::new();
    page.render(&mut roff)
        .and_then(|()| closing_sections(command).to_writer(&mut roff))
        .with_context(|| format!("rendering the man page of {}", command.get_name()))?;
    std::fs::write(&path, roff).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    for sub in command.get_subcommands() {
        if !sub.is_hide_set() {
            push_pages(sub, dir, written)?;
        }
    }
    Ok(())
}
