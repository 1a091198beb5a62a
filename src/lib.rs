//! vramwatch: a terminal dashboard for NVIDIA GPUs that puts memory first.
//!
//! The pipeline (docs/ARCHITECTURE.md): a [`source`] is probed by the
//! [`sampler`] on a schedule of lanes; each round becomes a
//! [`model::Snapshot`] published to every consumer.

pub mod analysis;
pub mod app;
pub mod cli;
pub mod commands;
pub(crate) mod compare;
pub mod config;
pub mod export;
pub mod fleet;
pub mod history;
pub mod model;
pub mod pipeline;
pub mod record;
pub mod sampler;
pub mod sanitize;
pub mod source;
pub mod theme;
pub mod tui;
pub mod ui;
