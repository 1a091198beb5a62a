//! `vramwatch serve` (being written).
