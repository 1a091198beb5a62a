//! `vramwatch config init | check | path`: write the documented default
//! config, validate a config file, say where the config file is looked for.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::{ConfigAction, Usage};
use crate::config::{self, DEFAULT_TOML};

/// Runs one `config` subcommand. `global` is the `--config PATH` flag,
/// used when the subcommand is given no PATH of its own.
pub fn run(action: &ConfigAction, global: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match action {
        ConfigAction::Init { path, force } => {
            let path = target(path.as_deref().or(global))?;
            init(&path, *force)?;
            writeln!(out, "wrote {}", path.display())?;
        }
        ConfigAction::Check { path } => match path.as_deref().or(global) {
            Some(p) => {
                config::load_file(p)?;
                writeln!(out, "{}: ok", p.display())?;
            }
            None => {
                let default = target(None)?;
                if default.is_file() {
                    config::load_file(&default)?;
                    writeln!(out, "{}: ok", default.display())?;
                } else {
                    writeln!(
                        out,
                        "{}: not found; the built-in defaults are in use (`vramwatch config init` writes them there)",
                        default.display()
                    )?;
                }
            }
        },
        ConfigAction::Path => {
            let path = target(global)?;
            writeln!(out, "{}", path.display())?;
            if !path.exists() {
                crate::tell!("(it does not exist yet; `vramwatch config init` writes it)");
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The given path, or the platform config file.
fn target(path: Option<&Path>) -> Result<PathBuf> {
    match path {
        Some(p) => Ok(p.to_path_buf()),
        None => config::default_path().ok_or_else(|| {
            Usage("no platform config directory is known (is HOME set?); give a PATH".into()).into()
        }),
    }
}

/// Writes the default config to `path`, creating its directory; an existing
/// file is only replaced with `force`.
fn init(path: &Path, force: bool) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            return Err(Usage(format!(
                "{} already exists; `--force` overwrites it (`vramwatch config check {}` validates it)",
                path.display(),
                path.display()
            ))
            .into());
        }
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    };
    file.write_all(DEFAULT_TOML.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}
