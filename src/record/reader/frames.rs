//! Reading a file of zstd frames back ([`ZstText`]) in bounded memory,
//! whatever it holds: data frames are decoded a piece at a time, skippable
//! frames skipped (an index frame whose length is damaged by its record's
//! own size), a corrupt frame skipped to the next place a frame starts
//! (its good text kept), a cut-off last frame decoded up to its last
//! complete block, and text that decompresses far beyond its size (a zstd
//! bomb) stops the reading.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::sync::Arc;

use zstd::stream::raw::{Decoder, Operation};

use super::text::Input;
use crate::record::zst::{
    FRAME_MAGIC, GUARD_FLOOR, INDEX_MAGIC, MAX_INDEX_FRAME, MAX_RATIO, READ_CHUNK, decoder,
    is_skippable, read_full_at, zstd_words,
};

/// Where a piece of text came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Origin {
    /// Compressed offset of the frame holding the piece (0 for plain files).
    pub(super) frame: u64,
    /// Text offset of that frame's first byte.
    pub(super) frame_text: u64,
}

/// Bytes that could not be read as zstd data, skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Gap {
    /// Where the bad bytes start (a frame that failed, or bytes that are
    /// no frame) and where the next frame starts.
    pub(super) from: u64,
    pub(super) to: u64,
    /// Text the bad frame gave before it failed.
    pub(super) decoded: u64,
    pub(super) why: String,
}

/// What [`ZstText::next`] gives.
pub(super) enum Piece {
    /// `len` bytes of text at the start of [`ZstText::text`], at text
    /// offset `at`.
    Text {
        at: u64,
        origin: Origin,
        len: usize,
    },
    Gap(Gap),
    /// Something irregular that lost no text (an index frame whose length
    /// is damaged).
    Notice(String),
    /// The end; `cut`: inside a frame (the file was cut off there).
    End {
        cut: bool,
    },
}

/// Why reading stopped before the end.
#[derive(Debug)]
pub(super) enum Stop {
    Io(io::Error),
    /// The text passed [`GUARD_FLOOR`] + [`MAX_RATIO`] × the compressed
    /// bytes read up to offset `at`.
    TooLarge {
        at: u64,
        text: u64,
    },
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

enum State {
    /// At a frame boundary (or what should be one).
    Between(u64),
    /// Decoding the frame at `at`, whose text starts at text offset `text`.
    Frame {
        at: u64,
        text: u64,
        made: u64,
    },
    Done,
}

/// A zstd block header's size: what the decoder asks for at a boundary.
const BLOCK_HEADER: usize = 3;

/// The size of an index payload's frame.
enum Payload {
    /// A complete frame of this size, followed by a frame boundary.
    Ends(u64),
    /// A frame cut off by the end of the file.
    CutOff,
    No,
}

/// The text of a run of zstd frames, read in pieces of at most the output
/// buffer's size: data frames are decoded, skippable frames skipped,
/// anything else (a frame that fails, bytes that are no frame) becomes a
/// [`Gap`] up to the next place a frame starts. Linear in the input: the
/// search for the next frame after a failure restarts just after the bad
/// frame's start until the work spent in failed frames passes twice the
/// input, then from the furthest byte read.
pub(super) struct ZstText {
    input: Input,
    dec: Decoder<'static>,
    state: State,
    out: Vec<u8>,
    /// Text offset of the next byte made.
    text: u64,
    /// Where this reader started (the guard counts from here).
    base: u64,
    gap: Option<Gap>,
    queue: VecDeque<Piece>,
    /// Compressed bytes spent on frames that failed, and the limit.
    failed: u64,
    budget: u64,
    cut: bool,
    /// Cut inside a block or frame header, not where a flush left it: its
    /// text is lost (`head -c`, a copy stopped part way; `Lines::cut_short`).
    pub(super) cut_short: bool,
    /// Text allowed before the ratio counts ([`GUARD_FLOOR`]).
    floor: u64,
}

impl ZstText {
    /// Reads the frames in `[at, stop)` of `file`, `out` bytes of text at
    /// a time.
    pub(super) fn new(file: Arc<File>, at: u64, stop: u64, out: usize) -> io::Result<ZstText> {
        Ok(ZstText {
            input: Input::new(file, at, stop),
            dec: decoder()?,
            state: State::Between(at),
            out: vec![0; out.max(1024)],
            text: 0,
            base: at,
            gap: None,
            queue: VecDeque::new(),
            failed: 0,
            budget: 2 * stop.saturating_sub(at) + (16 << 20),
            cut: false,
            cut_short: false,
            floor: GUARD_FLOOR,
        })
    }

    #[cfg(test)]
    fn with_floor(mut self, floor: u64) -> ZstText {
        self.floor = floor;
        self
    }

    /// The text of the last [`Piece::Text`].
    pub(super) fn text(&self) -> &[u8] {
        &self.out
    }

    /// Bytes read from the file and text made so far.
    pub(super) fn counts(&self) -> (u64, u64) {
        (self.input.read, self.text)
    }

    pub(super) fn next(&mut self) -> Result<Piece, Stop> {
        loop {
            if let Some(p) = self.queue.pop_front() {
                return Ok(p);
            }
            match self.state {
                State::Done => {
                    if let Some(g) = self.gap.take() {
                        return Ok(Piece::Gap(g));
                    }
                    return Ok(Piece::End { cut: self.cut });
                }
                State::Between(p) => self.between(p)?,
                State::Frame { at, text, made } => self.frame(at, text, made)?,
            }
        }
    }

    /// Queues `p`, after the gap before it.
    fn emit(&mut self, p: Piece) {
        if let Some(g) = self.gap.take() {
            self.queue.push_back(Piece::Gap(g));
        }
        self.queue.push_back(p);
    }

    fn go_on_at(&mut self, q: u64) {
        self.state = if q >= self.input.stop() {
            State::Done
        } else {
            State::Between(q)
        };
    }

    /// Bytes from `from` are bad: they run up to the next frame found from
    /// `search` (joined to the gap before when they follow it).
    fn bad(&mut self, from: u64, search: u64, decoded: u64, why: String) -> io::Result<()> {
        let to = self.find_frame(search)?;
        match &mut self.gap {
            Some(g) if g.to == from => g.to = to,
            _ => {
                if let Some(g) = self.gap.take() {
                    self.queue.push_back(Piece::Gap(g));
                }
                self.gap = Some(Gap {
                    from,
                    to,
                    decoded,
                    why,
                });
            }
        }
        self.go_on_at(to);
        Ok(())
    }

    fn between(&mut self, p: u64) -> Result<(), Stop> {
        let stop = self.input.stop();
        if p >= stop {
            self.state = State::Done;
            return Ok(());
        }
        let mut head = [0u8; 8];
        let n = self.input.peek(p, &mut head)?;
        let head = &head[..n];
        if head.starts_with(&FRAME_MAGIC) {
            self.dec.reinit()?;
            self.input.seek(p);
            self.state = State::Frame {
                at: p,
                text: self.text,
                made: 0,
            };
            return Ok(());
        }
        if is_skippable(head) {
            return self.skippable(p, head);
        }
        if n < 4
            && p + n as u64 >= stop
            && (FRAME_MAGIC.starts_with(head) || INDEX_MAGIC.starts_with(head))
        {
            // The start of a frame, cut off by the end of the file.
            self.cut = true;
            self.state = State::Done;
            return Ok(());
        }
        if head.iter().all(|&b| b == 0) && self.zeros_to(p)? >= stop {
            // What a filesystem leaves at the end after a power cut.
            self.state = State::Done;
            return Ok(());
        }
        self.bad(p, p + 1, 0, "they are not zstd frames".into())?;
        Ok(())
    }

    fn skippable(&mut self, p: u64, head: &[u8]) -> Result<(), Stop> {
        let stop = self.input.stop();
        let ours = head.starts_with(&INDEX_MAGIC);
        if head.len() < 8 {
            if ours {
                // An index frame cut off by the end of the file.
                self.cut = true;
                self.state = State::Done;
            } else {
                self.bad(p, p + 1, 0, "a skippable frame is cut off".into())?;
            }
            return Ok(());
        }
        let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64;
        let next = p + 8 + n;
        // An index frame holds one zstd frame: its own size must be the
        // frame's (a damaged length could land on a magic by chance, or on
        // the payload itself).
        let fits = next <= stop
            && self.boundary(next)?
            && (!ours || n > MAX_INDEX_FRAME || self.payload_is(p + 8, n)?);
        if fits {
            self.go_on_at(next);
            return Ok(());
        }
        if ours {
            match self.payload(p + 8)? {
                Payload::Ends(m) => {
                    self.emit(Piece::Notice(format!(
                        "the index frame at byte {p} says it holds {n} bytes, but its record is {m} bytes long: skipped it by its record's length"
                    )));
                    self.go_on_at(p + 8 + m);
                    return Ok(());
                }
                Payload::CutOff if next > stop => {
                    self.cut = true;
                    self.state = State::Done;
                    return Ok(());
                }
                _ => {}
            }
        }
        let why = if next > stop {
            format!("a skippable frame there says it holds {n} bytes, past the end of the file")
        } else {
            format!("a skippable frame there says it holds {n} bytes, but no frame follows them")
        };
        self.bad(p, p + 1, 0, why)?;
        Ok(())
    }

    /// Whether a frame can start at `q`: the stop, a magic, or the zero
    /// bytes a power cut leaves.
    fn boundary(&mut self, q: u64) -> io::Result<bool> {
        let stop = self.input.stop();
        if q >= stop {
            return Ok(q == stop);
        }
        let mut m = [0u8; 4];
        let n = self.input.peek(q, &mut m)?;
        let m = &m[..n];
        // A magic cut off by the end of the file counts: a crash.
        let cut = n < 4 && (FRAME_MAGIC.starts_with(m) || INDEX_MAGIC.starts_with(m));
        Ok(cut || m.starts_with(&FRAME_MAGIC) || is_skippable(m) || m.iter().all(|&b| b == 0))
    }

    /// Whether the `n` bytes at `q` are one zstd frame, when a frame
    /// starts there (else they are another writer's payload: true).
    fn payload_is(&mut self, q: u64, n: u64) -> io::Result<bool> {
        let mut m = [0u8; 4];
        if self.input.peek(q, &mut m)? < 4 || m != FRAME_MAGIC {
            return Ok(true);
        }
        let mut buf = vec![0u8; n as usize];
        let got = read_full_at(self.input.file(), &mut buf, q)?;
        self.input.read += got as u64;
        Ok(got == buf.len()
            && zstd::zstd_safe::find_frame_compressed_size(&buf).is_ok_and(|m| m == got))
    }

    /// The zstd frame at `q`, read as an index record's payload.
    fn payload(&mut self, q: u64) -> io::Result<Payload> {
        let stop = self.input.stop();
        let mut m = [0u8; 4];
        let n = self.input.peek(q, &mut m)?;
        if n < 4 && q + n as u64 >= stop && FRAME_MAGIC.starts_with(&m[..n]) {
            return Ok(Payload::CutOff);
        }
        if n < 4 || m != FRAME_MAGIC {
            return Ok(Payload::No);
        }
        for cap in [64 << 10, MAX_INDEX_FRAME] {
            if self.failed > self.budget {
                return Ok(Payload::No);
            }
            let n = stop.saturating_sub(q).min(cap) as usize;
            let mut buf = vec![0u8; n];
            let got = read_full_at(self.input.file(), &mut buf, q)?;
            buf.truncate(got);
            self.input.read += got as u64;
            self.failed += got as u64;
            match zstd::zstd_safe::find_frame_compressed_size(&buf) {
                Ok(m) => {
                    let m = m as u64;
                    return Ok(if self.boundary(q + m)? {
                        Payload::Ends(m)
                    } else {
                        Payload::No
                    });
                }
                // Cut off by the end of the file (not damaged): a crash
                // while the record was written.
                Err(code)
                    if q + got as u64 >= stop
                        && zstd::zstd_safe::get_error_name(code) == "Src size is incorrect" =>
                {
                    return Ok(Payload::CutOff);
                }
                Err(_) if q + got as u64 >= stop => return Ok(Payload::No),
                Err(_) => {}
            }
        }
        Ok(Payload::No)
    }

    fn frame(&mut self, at: u64, ft: u64, made: u64) -> Result<(), Stop> {
        let chunk = self.input.fill()?;
        let eof = chunk.is_empty();
        match self.dec.run_on_buffers(chunk, &mut self.out) {
            Err(e) => {
                let reached = self.input.offset() + READ_CHUNK as u64;
                self.failed += reached.saturating_sub(at);
                let search = if self.failed > self.budget {
                    self.input.offset().max(at + 1)
                } else {
                    at + 1
                };
                // The failing call's good text is lost with it: decode
                // the frame again up to the bad block, to keep it.
                let extra = if self.failed > self.budget {
                    Vec::new()
                } else {
                    self.recover(at, made)?
                };
                let decoded = made + extra.len() as u64;
                if !extra.is_empty() {
                    let start = self.text;
                    self.text += extra.len() as u64;
                    let len = extra.len();
                    if self.out.len() < len {
                        self.out.resize(len, 0);
                    }
                    self.out[..len].copy_from_slice(&extra);
                    self.emit(Piece::Text {
                        at: start,
                        origin: Origin {
                            frame: at,
                            frame_text: ft,
                        },
                        len,
                    });
                }
                self.bad(at, search, decoded, zstd_words(&e))?;
            }
            Ok(st) => {
                self.input.consume(st.bytes_read);
                let done = st.remaining == 0;
                if st.bytes_written > 0 {
                    let start = self.text;
                    self.text += st.bytes_written as u64;
                    let read = self.input.offset().saturating_sub(self.base);
                    if self.text > self.floor.saturating_add(MAX_RATIO.saturating_mul(read)) {
                        return Err(Stop::TooLarge {
                            at: self.input.offset(),
                            text: self.text,
                        });
                    }
                    self.state = State::Frame {
                        at,
                        text: ft,
                        made: made + st.bytes_written as u64,
                    };
                    if done {
                        let q = self.input.offset();
                        self.go_on_at(q);
                    }
                    self.emit(Piece::Text {
                        at: start,
                        origin: Origin {
                            frame: at,
                            frame_text: ft,
                        },
                        len: st.bytes_written,
                    });
                } else if done {
                    let q = self.input.offset();
                    self.go_on_at(q);
                } else if eof {
                    // Cut off by the end of the file, as a crash leaves it;
                    // unless frames start inside it: then damaged sizes
                    // made it run on over them.
                    let from = at + 1;
                    if self.find_frame(from)? < self.input.stop() {
                        let why =
                            "its block sizes are damaged: it runs on over the frames after it";
                        self.bad(at, from, made, why.into())?;
                    } else {
                        // At a flush's end zstd asks for at most a block
                        // header; inside a block or frame header, more.
                        self.cut = true;
                        self.cut_short = st.remaining > BLOCK_HEADER;
                        self.state = State::Done;
                    }
                } else if st.bytes_read == 0 {
                    self.bad(at, at + 1, made, "zstd made no progress".into())?;
                }
            }
        }
        Ok(())
    }

    /// The text of the frame at `at` after its first `made` bytes, up to
    /// where it fails: a call that fails gives nothing, so the frame is
    /// decoded again, near the failure a compressed byte per call (a block
    /// is decoded only in the call that completes it, and that call only
    /// flushes what is left of the blocks before once it decoded: it has
    /// nothing good to lose).
    fn recover(&mut self, at: u64, made: u64) -> io::Result<Vec<u8>> {
        let mut dec = decoder()?;
        let mut input = Input::new(self.input.shared(), at, self.input.stop());
        let mut buf = vec![0u8; 64 << 10];
        let (mut produced, mut extra) = (0u64, Vec::new());
        // Up to well before the failing call (a zstd block makes at most
        // 128 KiB of text), at full speed.
        let fast = made.saturating_sub(256 << 10);
        while produced < fast {
            let room = (fast - produced).min(buf.len() as u64) as usize;
            let chunk = input.fill()?;
            let Ok(st) = dec.run_on_buffers(chunk, &mut buf[..room]) else {
                return Ok(extra);
            };
            input.consume(st.bytes_read);
            produced += st.bytes_written as u64;
            if st.remaining == 0 || (st.bytes_read == 0 && st.bytes_written == 0) {
                return Ok(extra);
            }
        }
        while extra.len() < (8 << 20) {
            let chunk = input.fill()?;
            let one = &chunk[..chunk.len().min(1)];
            let Ok(st) = dec.run_on_buffers(one, &mut buf) else {
                break;
            };
            input.consume(st.bytes_read);
            let n = st.bytes_written as u64;
            if produced + n > made {
                let from = made.saturating_sub(produced) as usize;
                extra.extend_from_slice(&buf[from..st.bytes_written]);
            }
            produced += n;
            if st.remaining == 0 || (st.bytes_read == 0 && st.bytes_written == 0) {
                break;
            }
        }
        self.input.read += input.read;
        self.failed += input.offset() - at;
        Ok(extra)
    }

    /// The offset of the first byte from `p` that is not zero.
    fn zeros_to(&mut self, p: u64) -> io::Result<u64> {
        self.input.seek(p);
        loop {
            let base = self.input.offset();
            let chunk = self.input.fill()?;
            if chunk.is_empty() {
                return Ok(self.input.stop());
            }
            if let Some(i) = chunk.iter().position(|&b| b != 0) {
                return Ok(base + i as u64);
            }
            let n = chunk.len();
            self.input.consume(n);
        }
    }

    /// Where the next frame (or skippable frame) starts at or after
    /// `from`; the stop if none does.
    fn find_frame(&mut self, from: u64) -> io::Result<u64> {
        let stop = self.input.stop();
        if from >= stop {
            return Ok(stop);
        }
        self.input.seek(from);
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let base = self.input.offset();
            let chunk = self.input.fill()?;
            if chunk.is_empty() {
                return Ok(stop);
            }
            if !tail.is_empty() {
                let mut seam = tail.clone();
                seam.extend_from_slice(&chunk[..chunk.len().min(3)]);
                if let Some(i) = first_magic(&seam).filter(|&i| i < tail.len()) {
                    return Ok(base - (tail.len() - i) as u64);
                }
            }
            if let Some(i) = first_magic(chunk) {
                return Ok(base + i as u64);
            }
            let n = chunk.len();
            tail = chunk[n - n.min(3)..].to_vec();
            self.input.consume(n);
        }
    }
}

/// The first place in `hay` where a frame's or a skippable frame's magic
/// starts (the search stops there: its cost is the distance).
fn first_magic(hay: &[u8]) -> Option<usize> {
    memchr::memchr2_iter(FRAME_MAGIC[0], 0x2A, hay).find_map(|i| {
        if hay[i..].starts_with(&FRAME_MAGIC) {
            Some(i)
        } else if i >= 1 && is_skippable(&hay[i - 1..]) {
            Some(i - 1)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests;
