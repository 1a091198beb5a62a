//! The text of a recording, line by line, in bounded memory: opening only
//! regular files, plain or zstd (told apart by the first bytes), lines of
//! at most [`MAX_LINE`] bytes (a longer one is skipped without being held),
//! and what could not be read said as it comes ([`Step`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use super::frames::{Gap, Origin, Piece, Stop, ZstText};
use crate::record::RecordError;
use crate::record::zst::{self, READ_CHUNK, read_full_at};

/// Longest line read, the header's included. A longer line is skipped (and
/// counted as damaged) without being held in memory.
pub const MAX_LINE: usize = 16 << 20;

/// The UTF-8 byte order mark.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Opens a recording: a regular file only (a FIFO would block, a device
/// never ends). The file is opened without blocking and checked after
/// opening, so a FIFO swapped in meanwhile cannot hang the open either.
pub(crate) fn open_file(path: &Path) -> Result<(Arc<File>, u64), RecordError> {
    if let Ok(meta) = std::fs::metadata(path) {
        not_regular(path, &meta)?;
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| RecordError::io(path, e))?;
    let meta = file.metadata().map_err(|e| RecordError::io(path, e))?;
    not_regular(path, &meta)?;
    Ok((Arc::new(file), meta.len()))
}

fn not_regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), RecordError> {
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(RecordError::NotARecording {
        path: crate::sanitize::path(path),
        why: format!(
            "it is {what}, not a regular file: vramwatch reads recordings from regular files only"
        ),
    })
}

/// Whether the file is zstd data: it starts with a frame or a skippable
/// frame.
pub(crate) fn sniff(file: &File, len: u64) -> Result<bool, io::Error> {
    let mut m = [0u8; 4];
    let n = read_full_at(file, &mut m, 0)?;
    Ok(len >= 4 && n == 4 && (m == zst::FRAME_MAGIC || zst::is_skippable(&m)))
}

/// Reads a file forward from an offset up to a stop, through a buffer of
/// [`READ_CHUNK`] bytes (positioned reads: the file may be shared).
pub(super) struct Input {
    file: Arc<File>,
    stop: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    at: u64,
    /// Bytes of `buf` consumed.
    pos: usize,
    /// Bytes read from the file so far.
    pub(super) read: u64,
}

impl Input {
    pub(super) fn new(file: Arc<File>, at: u64, stop: u64) -> Input {
        Input {
            file,
            stop,
            buf: Vec::new(),
            at,
            pos: 0,
            read: 0,
        }
    }

    pub(super) fn file(&self) -> &File {
        &self.file
    }

    pub(super) fn shared(&self) -> Arc<File> {
        self.file.clone()
    }

    pub(super) fn stop(&self) -> u64 {
        self.stop
    }

    /// The offset of the next byte.
    pub(super) fn offset(&self) -> u64 {
        self.at + self.pos as u64
    }

    pub(super) fn seek(&mut self, to: u64) {
        if to >= self.at && to <= self.at + self.buf.len() as u64 {
            self.pos = (to - self.at) as usize;
        } else {
            self.buf.clear();
            self.at = to;
            self.pos = 0;
        }
    }

    /// The bytes not consumed yet, reading more when there are none (empty:
    /// the stop is reached).
    pub(super) fn fill(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.buf.len() {
            let at = self.offset();
            let n = self.stop.saturating_sub(at).min(READ_CHUNK as u64) as usize;
            self.buf.resize(n, 0);
            let got = read_full_at(&self.file, &mut self.buf, at)?;
            self.buf.truncate(got);
            self.at = at;
            self.pos = 0;
            self.read += got as u64;
        }
        Ok(&self.buf[self.pos..])
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }

    /// The next bytes, consumed: (offset, range of [`Input::buffer`]).
    pub(super) fn chunk(&mut self) -> io::Result<(u64, Range<usize>)> {
        let at = self.offset();
        let n = self.fill()?.len();
        let start = self.pos;
        self.consume(n);
        Ok((at, start..start + n))
    }

    pub(super) fn buffer(&self) -> &[u8] {
        &self.buf
    }

    /// Up to `out.len()` bytes at `at` (fewer at the stop), not moving.
    pub(super) fn peek(&mut self, at: u64, out: &mut [u8]) -> io::Result<usize> {
        let n = self.stop.saturating_sub(at).min(out.len() as u64) as usize;
        let end = self.at + self.buf.len() as u64;
        if at >= self.at && at + n as u64 <= end {
            let s = (at - self.at) as usize;
            out[..n].copy_from_slice(&self.buf[s..s + n]);
            return Ok(n);
        }
        let got = read_full_at(&self.file, &mut out[..n], at)?;
        self.read += got as u64;
        Ok(got)
    }
}

/// A plain file's bytes, a chunk at a time.
pub(crate) struct PlainText {
    input: Input,
    last: Range<usize>,
}

/// The text of a file or part of one.
pub(crate) enum Text {
    Plain(PlainText),
    Zst(Box<ZstText>),
}

impl Text {
    /// The text of `[at, stop)` of the file: zstd frames from `at`, or
    /// plain bytes. `out`: text decoded at a time (`.zst`).
    pub(crate) fn new(
        file: Arc<File>,
        at: u64,
        stop: u64,
        zstd: bool,
        out: usize,
    ) -> io::Result<Text> {
        Ok(if zstd {
            Text::Zst(Box::new(ZstText::new(file, at, stop, out)?))
        } else {
            Text::Plain(PlainText {
                input: Input::new(file, at, stop),
                last: 0..0,
            })
        })
    }

    pub(crate) fn next(&mut self) -> Result<Piece, Stop> {
        match self {
            Text::Zst(z) => z.next(),
            Text::Plain(p) => {
                let (at, range) = p.input.chunk()?;
                p.last = range.clone();
                if range.is_empty() {
                    return Ok(Piece::End { cut: false });
                }
                Ok(Piece::Text {
                    at,
                    origin: Origin::default(),
                    len: range.len(),
                })
            }
        }
    }

    /// The text of the last [`Piece::Text`].
    pub(crate) fn data(&self) -> &[u8] {
        match self {
            Text::Zst(z) => z.text(),
            Text::Plain(p) => &p.input.buffer()[p.last.clone()],
        }
    }

    /// Bytes read from the file, text made.
    pub(crate) fn counts(&self) -> (u64, u64) {
        match self {
            Text::Zst(z) => z.counts(),
            Text::Plain(p) => (p.input.read, p.input.read),
        }
    }
}

/// One step through the text.
#[derive(Debug)]
pub(crate) enum Step {
    /// A complete line, in [`Lines::line`] (without its newline): its
    /// number, text offset, origin and the text offset after its newline.
    Line {
        no: u64,
        at: u64,
        origin: Origin,
        end: u64,
    },
    /// A line longer than [`MAX_LINE`], skipped.
    Overlong {
        no: u64,
    },
    /// A line that ends without a newline where a zstd frame ends, the
    /// next frame starting a line: what ended it was lost.
    Broken {
        no: u64,
    },
    /// Bytes that could not be decoded; `cut`: the number of a line they
    /// cut short (lost with them).
    Gap {
        gap: Gap,
        cut: Option<u64>,
    },
    /// Something irregular that lost nothing.
    Notice(String),
    /// The text ends inside line `no` (no newline); `zeros`: it holds only
    /// zero bytes (what a power cut leaves).
    Cut {
        no: u64,
        zeros: bool,
    },
    End,
}

/// Reading statistics: what bounded the memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes read from the file.
    pub file_bytes: u64,
    /// Text decompressed (the file's bytes for plain files).
    pub text_bytes: u64,
    /// The longest line held in memory (at most [`MAX_LINE`]).
    pub longest_line: usize,
}

/// The notice for a `.zst` file whose last frame is cut off after whole
/// lines.
const UNFINISHED: &str = "the recording was not closed (it is still being written, or the recorder was stopped before it finished): read up to its last whole snapshot";

/// The lines of a [`Text`].
pub(crate) struct Lines {
    src: Text,
    /// The piece being read: text offset, origin, position, length.
    piece: Option<(u64, Origin, usize, usize)>,
    line: Vec<u8>,
    /// Text offset and origin of the line being read.
    start: Option<(u64, Origin)>,
    overlong: bool,
    next_no: u64,
    /// Line 1 started with a byte order mark (removed).
    pub(crate) bom: bool,
    longest: usize,
    /// The notice that the last frame was cut off has been given.
    noted_cut: bool,
    /// The file ends inside compressed data: the last whole line read then
    /// ([`Lines::cut_short`]).
    cut_short: Option<u64>,
    /// The number of the last line that ended with its newline.
    ended: u64,
}

impl Lines {
    /// The lines of `src`, numbered from `first_no`.
    pub(crate) fn new(src: Text, first_no: u64) -> Lines {
        Lines {
            src,
            piece: None,
            line: Vec::new(),
            start: None,
            overlong: false,
            next_no: first_no,
            bom: false,
            longest: 0,
            noted_cut: false,
            cut_short: None,
            ended: first_no.saturating_sub(1),
        }
    }

    /// Once [`Step::End`] is given: whether a `.zst` file ends inside its
    /// compressed data (a block, a frame header) rather than where the
    /// writer's flushes leave it, and if so the number of the last whole
    /// line read. What the file held after it is lost: the file was cut
    /// short (a copy stopped part way, `head -c`, a power cut), not left
    /// by a recorder still writing or killed (its writes end after whole
    /// blocks, but for the rare case in docs/recording-format.md).
    pub(crate) fn cut_short(&self) -> Option<u64> {
        self.cut_short
    }

    /// The last line given by [`Step::Line`].
    pub(crate) fn line(&self) -> &[u8] {
        &self.line
    }

    pub(crate) fn stats(&self) -> ReadStats {
        let (file_bytes, text_bytes) = self.src.counts();
        ReadStats {
            file_bytes,
            text_bytes,
            longest_line: self.longest,
        }
    }

    pub(crate) fn next(&mut self) -> Result<Step, Stop> {
        loop {
            if let Some((at, origin, pos, len)) = self.piece
                && pos < len
            {
                if self.start.is_none() {
                    self.line.clear();
                    self.start = Some((at + pos as u64, origin));
                }
                let data = &self.src.data()[pos..len];
                let (take, newline) = match memchr::memchr(b'\n', data) {
                    Some(i) => (i, true),
                    None => (data.len(), false),
                };
                if !self.overlong {
                    if self.line.len() + take > MAX_LINE {
                        self.overlong = true;
                        self.line = Vec::new();
                    } else {
                        self.line.extend_from_slice(&data[..take]);
                        self.longest = self.longest.max(self.line.len());
                    }
                }
                let used = pos + take + usize::from(newline);
                self.piece = Some((at, origin, used, len));
                if !newline {
                    continue;
                }
                let (line_at, line_origin) = self.start.take().unwrap_or((at, origin));
                let no = self.next_no;
                self.next_no += 1;
                self.ended = no;
                let end = at + used as u64;
                if std::mem::take(&mut self.overlong) {
                    return Ok(Step::Overlong { no });
                }
                if no == 1 && line_at == 0 && self.line.starts_with(&BOM) {
                    self.line.drain(..BOM.len());
                    self.bom = true;
                }
                return Ok(Step::Line {
                    no,
                    at: line_at,
                    origin: line_origin,
                    end,
                });
            }
            self.piece = None;
            match self.src.next()? {
                Piece::Text { at, origin, len } => {
                    self.piece = Some((at, origin, 0, len));
                    // Frames end after whole lines; a line that runs on
                    // into a frame that starts with a line of its own was
                    // cut short by damage.
                    if let Some((_, from)) = self.start
                        && from.frame != origin.frame
                        && at == origin.frame_text
                        && self.src.data()[..len].starts_with(b"{\"type\":\"")
                    {
                        self.start = None;
                        self.overlong = false;
                        self.next_no += 1;
                        return Ok(Step::Broken {
                            no: self.next_no - 1,
                        });
                    }
                }
                Piece::Gap(gap) => {
                    let cut = self.start.take().map(|_| {
                        self.next_no += 1;
                        self.next_no - 1
                    });
                    self.overlong = false;
                    return Ok(Step::Gap { gap, cut });
                }
                Piece::Notice(s) => return Ok(Step::Notice(s)),
                Piece::End { cut } => {
                    // A `.zst` file's last frame ended whole, but not its
                    // line: frames end after whole lines, so it was damaged
                    // (a crash cuts the frame off).
                    let whole = !cut && matches!(self.src, Text::Zst(_));
                    if whole && self.start.take().is_some() {
                        self.overlong = false;
                        self.next_no += 1;
                        let no = self.next_no - 1;
                        if self.line.iter().all(|&b| b == 0) {
                            return Ok(Step::Cut { no, zeros: true });
                        }
                        return Ok(Step::Broken { no });
                    }
                    if self.start.take().is_some() {
                        let zeros = !std::mem::take(&mut self.overlong)
                            && self.line.iter().all(|&b| b == 0);
                        self.next_no += 1;
                        return Ok(Step::Cut {
                            no: self.next_no - 1,
                            zeros,
                        });
                    }
                    // Whole lines, but the frame around them cut off: what
                    // a recorder leaves while it writes, or when it was
                    // stopped before closing the file. Nothing read is lost.
                    // Cut inside a block, the block is lost: the readers
                    // say so as what could not be read, not as this.
                    if let Text::Zst(z) = &self.src
                        && cut
                        && !self.noted_cut
                    {
                        self.noted_cut = true;
                        if z.cut_short {
                            self.cut_short = Some(self.ended);
                        } else {
                            return Ok(Step::Notice(UNFINISHED.into()));
                        }
                    }
                    return Ok(Step::End);
                }
            }
        }
    }
}

/// A reading error as a [`RecordError`] naming the file.
pub(crate) fn stopped(name: &str, e: Stop) -> RecordError {
    match e {
        Stop::Io(error) => RecordError::Io {
            path: name.to_owned(),
            error,
        },
        Stop::TooLarge { at, text } => RecordError::TooLarge {
            path: name.to_owned(),
            at,
            text,
        },
    }
}
