//! `vramwatch record` (being written).
