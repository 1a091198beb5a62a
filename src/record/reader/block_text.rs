//! A block's text read again from the file: all of the range an index
//! record describes, or the bytes a scan found there (going on from where
//! the last block's decoding stopped in the same zstd frame).

use super::check::gap_words;
use super::decode::Cache;
use super::frames::Piece;
use super::scan::PIECE;
use super::text::{Text, stopped};
use super::{Block, Miss, Recording};
use crate::record::RecordError;
use crate::record::zst::read_full_at;

/// The most text a block described by an index may hold.
const MAX_BLOCK_TEXT: u64 = 64 << 20;

/// Data of a block that could not be decoded: what and how many bytes.
pub(super) type Trouble = (String, u64);

pub(super) struct Cursor {
    generation: u64,
    start: u64,
    /// Text offset (from `start`) of the next byte.
    made: u64,
    text: Text,
    /// The piece being read: its text offset, position, length.
    piece: Option<(u64, usize, usize)>,
}

impl Recording {
    /// The text of a block an index record describes: all of `[start,
    /// stop)`, decoded; a gap inside ends it (and is said).
    pub(super) fn index_text(
        &self,
        blk: &Block,
        b: usize,
    ) -> Result<(Vec<u8>, Option<Trouble>), Miss> {
        let n = blk.stop - blk.start;
        let too_big = |n: u64| {
            Miss::Index(format!(
                "block {b} would hold {n} bytes of text, more than the {} MiB a block may",
                MAX_BLOCK_TEXT >> 20
            ))
        };
        if !self.zstd {
            if n > MAX_BLOCK_TEXT {
                return Err(too_big(n));
            }
            let mut buf = vec![0u8; n as usize];
            let got = read_full_at(&self.file, &mut buf, blk.start)
                .map_err(|e| RecordError::io(&self.path, e))?;
            if got < buf.len() {
                return Err(Miss::Fail(self.shorter()));
            }
            return Ok((buf, None));
        }
        let mut t = Text::new(self.file.clone(), blk.start, blk.stop, true, PIECE)
            .map_err(|e| RecordError::io(&self.path, e))?;
        let mut out = Vec::new();
        loop {
            match t.next().map_err(|e| stopped(&self.name, e))? {
                Piece::Text { len, .. } => {
                    out.extend_from_slice(&t.data()[..len]);
                    if out.len() as u64 > MAX_BLOCK_TEXT {
                        return Err(too_big(out.len() as u64));
                    }
                }
                Piece::Gap(g) => {
                    let words = gap_words(&self.name, &g, None, self.len);
                    return Ok((out, Some((words, g.to - g.from))));
                }
                Piece::Notice(_) => {}
                Piece::End { cut: true } => {
                    return Err(Miss::Index(format!(
                        "the data of block {b} does not end where its record starts, at byte {}",
                        blk.stop
                    )));
                }
                Piece::End { cut: false } => return Ok((out, None)),
            }
        }
    }

    fn shorter(&self) -> RecordError {
        RecordError::Corrupt {
            path: self.name.clone(),
            offset: self.len,
            why: "the file became shorter since it was opened".into(),
        }
    }

    /// `len` bytes of text from `skip` after `blk.start`: read again where
    /// a scan found them (going on from the last block's decoding when it
    /// stopped before them in the same frame).
    pub(super) fn range_text(
        &self,
        generation: u64,
        blk: &Block,
        len: u64,
        cache: &mut Cache,
    ) -> Result<Vec<u8>, Miss> {
        if !self.zstd {
            let mut buf = vec![0u8; len as usize];
            let got = read_full_at(&self.file, &mut buf, blk.start)
                .map_err(|e| RecordError::io(&self.path, e))?;
            if got < buf.len() {
                return Err(Miss::Fail(self.shorter()));
            }
            return Ok(buf);
        }
        let mut cur = match cache.cursor.take() {
            Some(c) if c.generation == generation && c.start == blk.start && c.made <= blk.skip => {
                c
            }
            _ => Cursor {
                generation,
                start: blk.start,
                made: 0,
                text: Text::new(self.file.clone(), blk.start, self.len, true, PIECE)
                    .map_err(|e| RecordError::io(&self.path, e))?,
                piece: None,
            },
        };
        let mut out = Vec::with_capacity(len as usize);
        while (out.len() as u64) < len {
            if let Some((at, pos, plen)) = cur.piece
                && pos < plen
            {
                let data = &cur.text.data()[pos..plen];
                let here = at + pos as u64;
                let take = if here < blk.skip {
                    (blk.skip - here).min(data.len() as u64) as usize
                } else {
                    let n = (len - out.len() as u64).min(data.len() as u64) as usize;
                    out.extend_from_slice(&data[..n]);
                    n
                };
                cur.piece = Some((at, pos + take, plen));
                continue;
            }
            match cur.text.next().map_err(|e| stopped(&self.name, e))? {
                Piece::Text { at, len, .. } => cur.piece = Some((at, 0, len)),
                Piece::Notice(_) => {}
                Piece::Gap(_) | Piece::End { .. } => {
                    return Err(Miss::Fail(RecordError::Corrupt {
                        path: self.name.clone(),
                        offset: blk.start,
                        why: format!(
                            "the text of the block from line {} cannot be read again: did the file change since it was opened?",
                            blk.first_line
                        ),
                    }));
                }
            }
        }
        cur.made = blk.skip + len;
        cache.cursor = Some(cur);
        Ok(out)
    }
}
