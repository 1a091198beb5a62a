//! What each subcommand does, one module each; `main.rs` only dispatches.

pub mod snapshot;
