//! `Content-Encoding: gzip` without compressing a page per request.
//!
//! A response is one gzip member (RFC 1952) whose deflate stream is made of
//! parts compressed on their own and joined at byte boundaries: every part
//! but the last ends with a sync flush (an empty stored block, so the next
//! part starts on a byte boundary, and a part refers back only within
//! itself), the last ends the stream. The part every scraper shares (the
//! snapshot's page) is compressed once per snapshot and cached; only the
//! part that depends on the scraper (its peaks) is compressed per request.
//! The trailer's CRC-32 and length are combined from the parts'.

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// gzip's header: deflate, no flags, no time, OS unknown.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The level: compressing the crowded node's page (~200 KB) at 6 takes a
/// few milliseconds once per snapshot; a tenth of the size.
const LEVEL: u32 = 6;

/// Part of a deflate stream and the CRC-32 and length of what it holds.
#[derive(Debug)]
pub(super) struct Part {
    deflated: Bytes,
    crc: Crc,
}

impl Part {
    /// Compresses `data`; `last` ends the stream. `None` only if the
    /// compressor fails (the caller sends the plain body).
    pub(super) fn new(data: &[u8], last: bool) -> Option<Part> {
        let flush = if last {
            FlushCompress::Finish
        } else {
            FlushCompress::Sync
        };
        let mut c = Compress::new(Compression::new(LEVEL), false);
        let mut out = Vec::with_capacity(data.len() / 4 + 64);
        loop {
            let done = c.total_in() as usize;
            let status = c
                .compress_vec(data.get(done..).unwrap_or_default(), &mut out, flush)
                .ok()?;
            let all_in = c.total_in() as usize >= data.len();
            // The flush is complete once the compressor leaves room unused.
            if status == Status::StreamEnd || (!last && all_in && out.len() < out.capacity()) {
                break;
            }
            out.reserve(out.capacity().max(256));
        }
        let mut crc = Crc::new();
        crc.update(data);
        Some(Part {
            deflated: out.into(),
            crc,
        })
    }

    pub(super) fn bytes(&self) -> Bytes {
        self.deflated.clone()
    }
}

/// The header, the parts and the trailer of one gzip member, to be sent in
/// this order; the last part must have been made with `last`.
pub(super) fn member(parts: &[&Part]) -> Vec<Bytes> {
    let mut crc = Crc::new();
    let mut out = Vec::with_capacity(parts.len() + 2);
    out.push(Bytes::from_static(&HEADER));
    for p in parts {
        crc.combine(&p.crc);
        out.push(p.bytes());
    }
    let mut trailer = Vec::with_capacity(8);
    trailer.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE: the length modulo 2^32.
    trailer.extend_from_slice(&crc.amount().to_le_bytes());
    out.push(trailer.into());
    out
}

/// One whole gzip member of `data`, for bodies that are all shared.
pub(super) fn whole(data: &[u8]) -> Option<Bytes> {
    let part = Part::new(data, true)?;
    Some(member(&[&part]).concat().into())
}

/// Whether a request's `Accept-Encoding` values accept gzip: a `gzip`
/// (or `x-gzip`, or `*`) token whose `q` is not 0.
pub(super) fn accepted<'a>(values: impl Iterator<Item = &'a [u8]>) -> bool {
    let mut gzip = None;
    let mut any = None;
    for v in values {
        let Ok(v) = std::str::from_utf8(v) else {
            continue;
        };
        for item in v.split(',') {
            let mut it = item.split(';');
            let name = it.next().unwrap_or("").trim().to_ascii_lowercase();
            let q_zero = it.any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            match name.as_str() {
                "gzip" | "x-gzip" => gzip = Some(!q_zero),
                "*" => any = Some(!q_zero),
                _ => {}
            }
        }
    }
    gzip.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(parts: &[Bytes]) -> Vec<u8> {
        let all = parts.concat();
        let mut d = flate2::read::GzDecoder::new(all.as_slice());
        let mut out = Vec::new();
        d.read_to_end(&mut out).unwrap();
        // A single member: nothing left after it.
        assert!(d.into_inner().is_empty());
        out
    }

    #[test]
    fn parts_compressed_apart_make_one_valid_member() {
        let page: Vec<u8> = (0..20_000)
            .map(|i| format!("metric{{gpu=\"{}\"}} {i}\n", i % 8))
            .collect::<String>()
            .into_bytes();
        let peaks = b"peak{gpu=\"0\"} 1\npeak{gpu=\"1\"} 2\n".repeat(300);
        let a = Part::new(&page, false).unwrap();
        let b = Part::new(&peaks, true).unwrap();
        let body = member(&[&a, &b]);
        let mut want = page.clone();
        want.extend_from_slice(&peaks);
        assert_eq!(gunzip(&body), want);
        assert!(body.iter().map(Bytes::len).sum::<usize>() < want.len() / 5);
        // Empty parts on either side.
        let e = Part::new(b"", false).unwrap();
        let z = Part::new(b"", true).unwrap();
        assert_eq!(gunzip(&member(&[&e, &b])), peaks);
        assert_eq!(gunzip(&member(&[&a, &z])), page);
        assert_eq!(gunzip(&[whole(b"ok\n").unwrap()]), b"ok\n");
    }

    #[test]
    fn accept_encoding_is_read_as_rfc_9110_says() {
        let yes = |v: &str| accepted([v.as_bytes()].into_iter());
        assert!(yes("gzip"));
        assert!(yes("deflate, gzip;q=1.0, *;q=0.5"));
        assert!(yes("GZIP"));
        assert!(yes("*"));
        assert!(yes("x-gzip"));
        assert!(!yes("identity"));
        assert!(!yes("gzip;q=0"));
        assert!(!yes("br, *;q=0"));
        assert!(!yes("gzip; q=0.000, *"));
        assert!(!yes(""));
        assert!(!accepted(std::iter::empty()));
        assert!(accepted([&b"br"[..], &b"gzip"[..]].into_iter()));
    }
}
