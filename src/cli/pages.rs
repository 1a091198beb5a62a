//! Shell completions and man pages, made from the clap definitions.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::{Cli, Usage};

/// Writes the completion script for `shell` (made in memory first: the
/// generator panics on a write error, and `| head` closes the pipe).
pub fn write_completions(shell: clap_complete::Shell, out: &mut dyn Write) -> std::io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "vramwatch", &mut script);
    out.write_all(&script)?;
    out.flush()
}

/// Writes vramwatch(1), or `sub`'s page (vramwatch-snapshot(1), ...).
pub fn write_man(sub: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    let cmd = man_command();
    let page = match sub {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(s) if !s.is_hide_set() => s.clone(),
            _ => {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                return Err(Usage(format!(
                    "`{name}` is not a subcommand with a man page; choose one of {}",
                    names.join(", ")
                ))
                .into());
            }
        },
    };
    clap_mangen::Man::new(page).render(out)?;
    out.flush()?;
    Ok(())
}

/// Writes every man page into `dir` (created if needed); returns the files.
pub fn write_man_pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cmd = man_command();
    let mut written = Vec::new();
    let pages = std::iter::once(cmd.clone()).chain(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .cloned()
            .collect::<Vec<_>>(),
    );
    for page in pages {
        let path = clap_mangen::Man::new(page)
            .generate_to(dir)
            .with_context(|| format!("writing a man page into {}", dir.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// The command as man pages show it: built (so subcommands are named
/// `vramwatch-snapshot`), without the `help` subcommand.
fn man_command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}
