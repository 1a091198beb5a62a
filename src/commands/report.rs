//! `vramwatch report` (being written).
