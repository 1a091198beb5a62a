//! Reading a TOML file into a validated [`Config`]. (Being written: for now
//! only the defaults.)

use std::path::{Path, PathBuf};

use super::Config;

/// The documented default configuration, embedded.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// A config that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// The platform config file: `$XDG_CONFIG_HOME/vramwatch/config.toml` on Linux.
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "vramwatch").map(|d| d.config_dir().join("config.toml"))
}

/// Loads `path`, or the platform file when it exists, or the defaults.
pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
    match path {
        Some(p) => load_file(p),
        None => Ok(Config::default()),
    }
}

/// Loads and validates one file.
pub fn load_file(_path: &Path) -> Result<Config, ConfigError> {
    Ok(Config::default())
}
