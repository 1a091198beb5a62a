//! `vramwatch export` (being written).
