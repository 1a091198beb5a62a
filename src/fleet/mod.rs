//! `vramwatch fleet`: every GPU of a cluster in one dashboard, read from
//! Prometheus (docs/fleet.md). A pipeline like the local dashboard's:
//! `client` (PromQL over HTTP) → `queries` (the PromQL, one place) →
//! `fetch` (one refresh; `assemble` turns its answers into the model) →
//! `model` (plain data) → `app` (state, `update(Event) -> Option<Action>`;
//! `table`: sorting, filtering, columns; `layout`: geometry) → `ui`
//! (drawing); the event loop is `commands::fleet`, the command line `args`.

pub mod app;
pub mod args;
pub mod assemble;
pub mod client;
pub mod fetch;
pub mod layout;
pub mod model;
pub mod queries;
pub mod table;
pub mod ui;
