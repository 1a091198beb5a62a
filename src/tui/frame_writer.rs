//! What ratatui's crossterm backend writes for a frame, less two things it
//! repeats every frame: `ESC[?25l` (hide the cursor) while the cursor is
//! already hidden, and its closing `ESC[39m ESC[49m ESC[59m ESC[0m`, for
//! which `ESC[0m` alone does the same (SGR 0 resets the colours, the
//! underline colour and every attribute). On a dashboard whose figures
//! change a few digits a second these were 25 of ~225 bytes a frame.
//!
//! A frame is buffered until `flush` (ratatui flushes once per draw), so a
//! sequence split over two writes is still seen whole; the buffer is
//! written out, rewritten, when it grows past [`SPILL`] without a flush.
//! The cursor's state is forgotten at a clear screen (`ESC[2J`: a resize, a
//! return from Ctrl-Z) and every [`HEAL_EVERY`] frames, so a cursor shown
//! behind our back (a terminal reset) is hidden again soon.

use std::io::{self, Write};

/// Buffered bytes that are written out even without a flush.
const SPILL: usize = 256 * 1024;

/// Flushes after which a hide goes out even when the cursor is hidden.
const HEAL_EVERY: u32 = 64;

const HIDE: &[u8] = b"\x1b[?25l";
const SHOW: &[u8] = b"\x1b[?25h";
const RESETS: &[u8] = b"\x1b[39m\x1b[49m\x1b[59m\x1b[0m";
const RESET: &[u8] = b"\x1b[0m";
const CLEAR: &[u8] = b"\x1b[2J";

/// A writer for the dashboard's terminal; see the module's documentation.
pub struct FrameWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
    /// Whether the terminal's cursor is hidden (as far as what went
    /// through here, and what [`FrameWriter::new`] was told, says).
    hidden: bool,
    /// Flushes since the cursor's state was last forgotten.
    flushes: u32,
}

impl<W: Write> FrameWriter<W> {
    /// `hidden`: whether the cursor is hidden already.
    pub fn new(inner: W, hidden: bool) -> FrameWriter<W> {
        FrameWriter {
            inner,
            buf: Vec::with_capacity(16 * 1024),
            hidden,
            flushes: 0,
        }
    }

    /// The buffer, rewritten, written to the inner writer; but for a flush
    /// (`all`) the bytes from its last escape on stay, so a sequence that
    /// the next write completes is still seen whole.
    fn spill(&mut self, all: bool) -> io::Result<()> {
        let keep_from = if all {
            self.buf.len()
        } else {
            match self.buf.iter().rposition(|&b| b == 0x1b) {
                Some(p) if self.buf.len() - p < 32 => p,
                _ => self.buf.len(),
            }
        };
        let mut hidden = self.hidden;
        let out = rewrite(&self.buf[..keep_from], &mut hidden);
        self.buf.drain(..keep_from);
        // What the terminal got decides the cursor's state: after a failed
        // write, the next hide goes out.
        let wrote = self.inner.write_all(&out);
        self.hidden = hidden && wrote.is_ok();
        wrote
    }
}

/// `frame` without the hide sequences that change nothing and with each
/// run of the backend's four resets as one; `hidden` follows the cursor.
fn rewrite(frame: &[u8], hidden: &mut bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len());
    let mut i = 0;
    while i < frame.len() {
        let rest = &frame[i..];
        if rest.starts_with(HIDE) {
            if !*hidden {
                out.extend_from_slice(HIDE);
                *hidden = true;
            }
            i += HIDE.len();
        } else if rest.starts_with(SHOW) {
            out.extend_from_slice(SHOW);
            *hidden = false;
            i += SHOW.len();
        } else if rest.starts_with(CLEAR) {
            out.extend_from_slice(CLEAR);
            *hidden = false;
            i += CLEAR.len();
        } else if rest.starts_with(RESETS) {
            out.extend_from_slice(RESET);
            i += RESETS.len();
        } else {
            // Up to the next escape, or one byte when it is one that is
            // not ours.
            let next = rest[1..]
                .iter()
                .position(|&b| b == 0x1b)
                .map_or(rest.len(), |p| p + 1);
            out.extend_from_slice(&rest[..next]);
            i += next;
        }
    }
    out
}

impl<W: Write> Write for FrameWriter<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() > SPILL {
            self.spill(false)?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        if self.flushes >= HEAL_EVERY {
            self.flushes = 0;
            self.hidden = false;
        }
        self.spill(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for FrameWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(hidden: bool, writes: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = FrameWriter::new(&mut out, hidden);
            for b in writes {
                w.write_all(b).unwrap();
            }
            w.flush().unwrap();
        }
        out
    }

    #[test]
    fn a_hidden_cursor_is_not_hidden_again_and_the_resets_are_one() {
        let frame: &[u8] = b"\x1b[?25l\x1b[1;53H4\x1b[3;60H6\x1b[39m\x1b[49m\x1b[59m\x1b[0m";
        assert_eq!(through(true, &[frame]), b"\x1b[1;53H4\x1b[3;60H6\x1b[0m");
        // Not hidden yet: the first hide goes through, the next does not.
        assert_eq!(
            through(false, &[frame, frame]),
            b"\x1b[?25l\x1b[1;53H4\x1b[3;60H6\x1b[0m\x1b[1;53H4\x1b[3;60H6\x1b[0m"
        );
    }

    #[test]
    fn showing_the_cursor_makes_the_next_hide_count() {
        let out = through(true, &[b"\x1b[?25h\x1b[5;5H", b"x\x1b[?25l\x1b[?25l"]);
        assert_eq!(out, b"\x1b[?25h\x1b[5;5Hx\x1b[?25l");
    }

    #[test]
    fn a_clear_screen_and_every_64th_frame_hide_the_cursor_again() {
        let out = through(true, &[b"\x1b[?25l\x1b[2J\x1b[?25lx\x1b[?25l"]);
        assert_eq!(out, b"\x1b[2J\x1b[?25lx");
        let mut out = Vec::new();
        {
            let mut w = FrameWriter::new(&mut out, true);
            for _ in 0..2 * HEAL_EVERY {
                w.write_all(b"\x1b[?25lx").unwrap();
                w.flush().unwrap();
            }
        }
        let hides = out.windows(HIDE.len()).filter(|w| *w == HIDE).count();
        assert_eq!(hides, 2, "once every {HEAL_EVERY} frames");
        assert_eq!(out.iter().filter(|&&b| b == b'x').count(), 128);
    }

    #[test]
    fn after_a_failed_write_the_next_hide_goes_out() {
        struct Fails(bool, Vec<u8>);
        impl Write for Fails {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if std::mem::take(&mut self.0) {
                    return Err(io::Error::other("full"));
                }
                self.1.extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = FrameWriter::new(Fails(true, Vec::new()), false);
        w.write_all(b"\x1b[?25l").unwrap();
        assert!(w.flush().is_err());
        w.write_all(b"\x1b[?25l").unwrap();
        w.flush().unwrap();
        assert_eq!(w.inner.1, HIDE);
    }

    #[test]
    fn sequences_split_over_writes_are_seen_whole() {
        let out = through(
            true,
            &[b"a\x1b[?2", b"5l\x1b[39m\x1b[4", b"9m\x1b[59m\x1b[0", b"m"],
        );
        assert_eq!(out, b"a\x1b[0m");
    }

    #[test]
    fn everything_else_passes_unchanged() {
        // Other SGRs, a lone reset, text with UTF-8, a bare ESC at the end.
        let frame: &[u8] =
            "\x1b[38;5;243;49m█░ 36.9G\x1b[0m\x1b[39m\x1b[49mé\x1b[?1049l\x1b".as_bytes();
        assert_eq!(through(true, &[frame]), frame);
        assert_eq!(through(false, &[b""]), b"");
    }

    #[test]
    fn a_long_frame_is_written_out_before_its_flush() {
        let mut out = Vec::new();
        let mut w = FrameWriter::new(&mut out, true);
        let chunk = vec![b'x'; SPILL / 2 + 1];
        w.write_all(&chunk).unwrap();
        w.write_all(&chunk).unwrap();
        assert!(w.buf.is_empty(), "spilled past {SPILL} bytes");
        // A spill keeps a sequence that is not complete yet: the show
        // below is seen, so the hide after it goes out.
        let mut long = vec![b'x'; SPILL];
        long.extend_from_slice(b"\x1b[?25");
        w.write_all(&long).unwrap();
        assert_eq!(w.buf, b"\x1b[?25");
        w.write_all(b"h\x1b[?25l").unwrap();
        drop(w);
        let mut want = vec![b'x'; 2 * chunk.len() + SPILL];
        want.extend_from_slice(b"\x1b[?25h\x1b[?25l");
        assert_eq!(out, want);
    }
}
