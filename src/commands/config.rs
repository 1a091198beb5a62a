//! `vramwatch config` (being written).
