//! `track completions SHELL`: the shell's completion script for every command and option,
//! generated from the command line's definition (clap_complete), so it cannot drift from it.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap_complete::Shell;

/// Print the completion script of a shell on stdout: subcommands, options and their values.
///
/// Save it where the shell looks for it:
///   bash  track completions bash > ~/.local/share/bash-completion/completions/track
///   zsh   track completions zsh > ~/.zfunc/_track   (and fpath+=~/.zfunc before compinit)
///   fish  track completions fish > ~/.config/fish/completions/track.fish
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let script = script(args.shell);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .context("writing the completion script to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// The completion script of `shell` for `track`. Made in memory: clap_complete panics on a
/// write error, and a closed stdout is not worth a panic.
pub(crate) fn script(shell: Shell) -> Vec<u8> {
    let mut command = super::Cli::command_with_global_options();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "track", &mut script);
    script
}
