//! The zstd side of a `.jsonl.zst` recording: compressing line groups with
//! a flush after each (so a crash loses at most the group being written),
//! ending frames, the skippable frames that carry the index, and the limits
//! and words the reading side (`reader::frames`) uses.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

use zstd::stream::raw::{DParameter, Decoder, Operation};

/// Magic of a zstd frame.
pub(super) const FRAME_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Magic of the skippable frames holding index records (0x184D2A56; any
/// zstd decoder skips 0x184D2A50..=0x184D2A5F).
pub(super) const INDEX_MAGIC: [u8; 4] = [0x56, 0x2A, 0x4D, 0x18];
/// An empty last raw block: ends a frame whose compressor was lost
/// (what zstd itself writes to end a flushed frame).
pub(super) const FRAME_END: [u8; 3] = [0x01, 0x00, 0x00];

/// Text allowed per compressed byte read, past [`GUARD_FLOOR`]: recordings
/// compress 10 to 50 times; a zstd bomb thousands of times.
pub const MAX_RATIO: u64 = 1000;
/// Text always allowed before [`MAX_RATIO`] counts.
pub const GUARD_FLOOR: u64 = 64 << 20;
/// Largest zstd window accepted: 2^27 bytes (128 MiB, zstd's own default
/// limit; vramwatch writes 4 MiB windows).
const WINDOW_LOG_MAX: u32 = 27;
/// Largest index frame payload read (vramwatch's are a few KiB).
pub(super) const MAX_INDEX_FRAME: u64 = 4 << 20;
/// Largest index record decompressed.
const MAX_INDEX_JSON: usize = 64 << 20;
/// Bytes read from the file at a time.
pub(super) const READ_CHUNK: usize = 128 << 10;

/// Compresses line groups into one frame, flushing after each group.
pub(super) struct LineCompressor {
    enc: zstd::stream::write::Encoder<'static, Vec<u8>>,
}

impl LineCompressor {
    pub(super) fn new(level: i32) -> io::Result<LineCompressor> {
        let mut raw = zstd::stream::raw::Encoder::new(level)?;
        // The frame is ended by hand after a failed write; a checksum would
        // then be wrong.
        raw.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(false))?;
        Ok(LineCompressor {
            enc: zstd::stream::write::Encoder::with_encoder(Vec::new(), raw),
        })
    }

    /// Compresses `text` and flushes: the bytes returned decode to all of
    /// `text` (the first call's bytes start the frame).
    pub(super) fn push(&mut self, text: &[u8]) -> io::Result<Vec<u8>> {
        self.enc.write_all(text)?;
        self.enc.flush()?;
        Ok(std::mem::take(self.enc.get_mut()))
    }

    /// Compresses `text` without flushing: the bytes returned (often none)
    /// hold only what the compressor let go of.
    pub(super) fn feed(&mut self, text: &[u8]) -> io::Result<Vec<u8>> {
        self.enc.write_all(text)?;
        Ok(std::mem::take(self.enc.get_mut()))
    }

    /// The bytes that end the frame.
    pub(super) fn end(self) -> io::Result<Vec<u8>> {
        self.enc.finish()
    }
}

/// A skippable frame holding `payload` (itself zstd-compressed JSON).
pub(super) fn index_frame(json: &[u8]) -> io::Result<Vec<u8>> {
    let payload = zstd::bulk::compress(json, 3)?;
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&INDEX_MAGIC);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// The payload length of the index frame that `head` (at least 8 bytes)
/// starts, if it is one.
pub(super) fn index_frame_len(head: &[u8]) -> Option<u64> {
    if head.len() < 8 || head[..4] != INDEX_MAGIC {
        return None;
    }
    let mut n = [0u8; 4];
    n.copy_from_slice(&head[4..8]);
    Some(u32::from_le_bytes(n) as u64)
}

/// Whether `m` starts with the magic of a skippable frame.
pub(super) fn is_skippable(m: &[u8]) -> bool {
    m.len() >= 4 && m[1..4] == [0x2A, 0x4D, 0x18] && (0x50..=0x5F).contains(&m[0])
}

pub(super) fn decoder() -> io::Result<Decoder<'static>> {
    let mut dec = Decoder::new()?;
    dec.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))?;
    Ok(dec)
}

/// The JSON of an index frame's payload: exactly one complete zstd frame,
/// decompressed to at most [`MAX_INDEX_JSON`] bytes.
pub(super) fn index_payload(payload: &[u8]) -> io::Result<Vec<u8>> {
    let mut dec = decoder()?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut pos = 0;
    loop {
        let st = dec.run_on_buffers(&payload[pos..], &mut buf)?;
        pos += st.bytes_read;
        out.extend_from_slice(&buf[..st.bytes_written]);
        if out.len() > MAX_INDEX_JSON {
            return Err(io::Error::other("the index record is too large"));
        }
        if st.remaining == 0 {
            break;
        }
        if st.bytes_read == 0 && st.bytes_written == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the index frame is cut off",
            ));
        }
    }
    if pos != payload.len() {
        return Err(io::Error::other("bytes follow the index record's frame"));
    }
    Ok(out)
}

/// What zstd's error means, in words, with zstd's own words after.
pub(super) fn zstd_words(e: &io::Error) -> String {
    let raw = e.to_string();
    let plain = match raw.as_str() {
        "Dictionary mismatch" => {
            "its header asks for a zstd dictionary, which vramwatch never uses"
        }
        "Unknown frame descriptor" => "its frame header is not valid",
        "Data corruption detected" | "Corrupted block detected" => "its data is corrupt",
        "Frame requires too much memory for decoding" => {
            "it asks for a window of more than 128 MiB to decode"
        }
        "Restored data doesn't match checksum" => "its checksum does not match its data",
        "Unsupported frame parameter" => "its header uses a zstd feature this build lacks",
        _ => return format!("zstd says \"{raw}\""),
    };
    format!("{plain} (zstd says \"{raw}\")")
}

/// Reads all of `buf` at `at` or up to the end of the file; returns how
/// many bytes were read.
pub(super) fn read_full_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
