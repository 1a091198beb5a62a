//! A writer that only counts the bytes written, into a shared cell: the
//! render bench and `tools/dev/frame_diff_rec.rs` hand it to ratatui's
//! `CrosstermBackend` to measure what a terminal (or SSH) would receive.

use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

#[derive(Clone, Default)]
pub(crate) struct CountingWriter(pub Rc<Cell<usize>>);

impl Write for CountingWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + b.len());
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
