//! The zstd side of a `.jsonl.zst` recording: compressing line groups with
//! a flush after each (so a crash loses at most the group being written),
//! ending frames, the skippable frames that carry the index, and
//! decompressing a run of frames that may end in a cut-off one.

use std::io::{self, Write};

use zstd::stream::raw::{Decoder, Operation};

/// Magic of a zstd frame.
pub(super) const FRAME_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Magic of the skippable frames holding index records (0x184D2A56; any
/// zstd decoder skips 0x184D2A50..=0x184D2A5F).
pub(super) const INDEX_MAGIC: [u8; 4] = [0x56, 0x2A, 0x4D, 0x18];
/// An empty last raw block: ends a frame whose compressor was lost
/// (what zstd itself writes to end a flushed frame).
pub(super) const FRAME_END: [u8; 3] = [0x01, 0x00, 0x00];

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

/// The JSON of an index frame's payload.
pub(super) fn index_payload(payload: &[u8]) -> io::Result<Vec<u8>> {
    let (text, complete) = decompress(payload)?;
    if !complete {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "index frame is cut off",
        ));
    }
    Ok(text)
}

/// Decompresses the frames in `src` (skippable frames are skipped).
/// Returns the text and whether the input ended on a frame boundary; a
/// cut-off last frame yields everything up to its last complete block.
pub(super) fn decompress(src: &[u8]) -> io::Result<(Vec<u8>, bool)> {
    let mut dec = Decoder::new()?;
    let mut out = Vec::with_capacity(src.len().saturating_mul(6));
    let mut buf = vec![0u8; 1 << 17];
    let mut pos = 0;
    let mut complete = true;
    loop {
        let st = dec.run_on_buffers(&src[pos..], &mut buf)?;
        pos += st.bytes_read;
        out.extend_from_slice(&buf[..st.bytes_written]);
        if st.bytes_read > 0 || st.bytes_written > 0 {
            complete = st.remaining == 0;
        }
        let drained = st.bytes_written < buf.len();
        if pos >= src.len() && drained {
            break;
        }
        if st.bytes_read == 0 && st.bytes_written == 0 {
            break;
        }
    }
    Ok((out, complete && pos >= src.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushed_groups_decode_from_a_cut_off_frame() {
        let mut c = LineCompressor::new(3).unwrap();
        let mut file = Vec::new();
        let mut ends = Vec::new();
        for i in 0..50 {
            let line = format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i * 7));
            file.extend(c.push(line.as_bytes()).unwrap());
            ends.push(file.len());
        }
        // Cut anywhere: what decodes is whole lines, all that were flushed
        // before the cut.
        for cut in [0, 5, ends[0], ends[0] + 1, ends[10] - 1, ends[10], ends[49]] {
            let (text, complete) = decompress(&file[..cut]).unwrap();
            assert!(!complete || cut == 0);
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), whole);
            assert!(text.is_empty() || text.ends_with(b"\n"));
        }
        file.extend(c.end().unwrap());
        let (text, complete) = decompress(&file).unwrap();
        assert!(complete);
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 50);
    }

    #[test]
    fn a_frame_ended_by_hand_is_valid_and_index_frames_are_skipped() {
        let mut c = LineCompressor::new(3).unwrap();
        let mut file = c.push(b"a\n").unwrap();
        file.extend(FRAME_END);
        file.extend(index_frame(br#"{"type":"index"}"#).unwrap());
        let mut c = LineCompressor::new(3).unwrap();
        file.extend(c.push(b"b\n").unwrap());
        file.extend(c.end().unwrap());
        let (text, complete) = decompress(&file).unwrap();
        assert_eq!(text, b"a\nb\n");
        assert!(complete);
        let at = file.windows(4).position(|w| w == INDEX_MAGIC).unwrap();
        let n = index_frame_len(&file[at..]).unwrap() as usize;
        let json = index_payload(&file[at + 8..at + 8 + n]).unwrap();
        assert_eq!(json, br#"{"type":"index"}"#);
    }
}
