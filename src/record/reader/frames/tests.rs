//! `ZstText` on files of frames: cut, corrupt, bombs, junk.

use std::fs::File;
use std::sync::Arc;

use super::*;
use crate::record::zst::{FRAME_END, LineCompressor, index_frame, index_frame_len, index_payload};

/// Everything a file of frames reads as: its text, its gaps, whether
/// it was cut off.
fn read(bytes: &[u8]) -> (Vec<u8>, Vec<Gap>, Vec<String>, bool) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f.zst");
    std::fs::write(&p, bytes).unwrap();
    let f = Arc::new(File::open(&p).unwrap());
    let mut z = ZstText::new(f, 0, bytes.len() as u64, 4096).unwrap();
    let (mut text, mut gaps, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        match z.next().unwrap() {
            Piece::Text { at, len, .. } => {
                assert_eq!(at, text.len() as u64);
                text.extend_from_slice(&z.text()[..len]);
            }
            Piece::Gap(g) => gaps.push(g),
            Piece::Notice(n) => notes.push(n),
            Piece::End { cut } => return (text, gaps, notes, cut),
        }
    }
}

fn frame(text: &[u8]) -> Vec<u8> {
    let mut c = LineCompressor::new(3).unwrap();
    let mut f = c.push(text).unwrap();
    f.extend(c.end().unwrap());
    f
}

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
    for cut in [5, ends[0], ends[0] + 1, ends[10] - 1, ends[10], ends[49]] {
        let (text, gaps, _, was_cut) = read(&file[..cut]);
        assert!(gaps.is_empty(), "{gaps:?}");
        assert!(was_cut);
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), whole);
        assert!(text.is_empty() || text.ends_with(b"\n"));
    }
    file.extend(c.end().unwrap());
    let (text, gaps, _, cut) = read(&file);
    assert!(!cut && gaps.is_empty());
    assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), 50);
}

/// Whether a file of frames cut at `bytes`' end is cut short.
fn cut_short(bytes: &[u8]) -> bool {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f.zst");
    std::fs::write(&p, bytes).unwrap();
    let f = Arc::new(File::open(&p).unwrap());
    let mut z = ZstText::new(f, 0, bytes.len() as u64, 4096).unwrap();
    while !matches!(z.next().unwrap(), Piece::End { .. }) {}
    z.cut_short
}

#[test]
fn a_cut_inside_a_block_is_told_from_one_where_a_flush_ended() {
    let mut c = LineCompressor::new(3).unwrap();
    let mut file = Vec::new();
    let mut ends = Vec::new();
    for i in 0..20 {
        let line = format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "x".repeat(i * 7));
        file.extend(c.push(line.as_bytes()).unwrap());
        ends.push(file.len());
    }
    // The frame's header is at most 18 bytes; the first flush's block
    // starts after it.
    for cut in 1..=file.len() {
        let at_flush = ends.contains(&cut);
        // A cut within a block's 3-byte header loses no text either.
        let in_header = ends.iter().any(|&e| cut > e && cut < e + BLOCK_HEADER);
        let in_magic = cut < 4;
        let short = cut_short(&file[..cut]);
        if at_flush || in_header || in_magic {
            assert!(!short, "cut at {cut}");
        } else if cut > ends[0] {
            assert!(short, "cut at {cut}");
        }
    }
    file.extend(c.end().unwrap());
    assert!(!cut_short(&file));
}

#[test]
fn a_frame_ended_by_hand_is_valid_and_index_frames_are_skipped() {
    let mut c = LineCompressor::new(3).unwrap();
    let mut file = c.push(b"a\n").unwrap();
    file.extend(FRAME_END);
    file.extend(index_frame(br#"{"type":"index"}"#).unwrap());
    file.extend(frame(b"b\n"));
    let (text, gaps, notes, cut) = read(&file);
    assert_eq!(text, b"a\nb\n");
    assert!(gaps.is_empty() && notes.is_empty() && !cut);
    let at = file.windows(4).position(|w| w == INDEX_MAGIC).unwrap();
    let n = index_frame_len(&file[at..]).unwrap() as usize;
    let json = index_payload(&file[at + 8..at + 8 + n]).unwrap();
    assert_eq!(json, br#"{"type":"index"}"#);
}

#[test]
fn a_corrupt_frame_is_skipped_to_the_next() {
    // Two flushed groups: two blocks in the frame.
    let mut c = LineCompressor::new(3).unwrap();
    let mut a = c.push(b"first\n").unwrap();
    a.extend(c.push(b"more\n").unwrap());
    a.extend(c.end().unwrap());
    // Frame header: magic, descriptor, window: 6 bytes; then block 1.
    let size1 = (u32::from_le_bytes([a[6], a[7], a[8], 0]) >> 3) as usize;
    let block2 = 6 + 3 + size1;
    let b = frame(b"second\n");
    for (what, at) in [("first block", 6), ("second block", block2)] {
        let mut file = a.clone();
        // Block type 3 is reserved: "Corrupted block detected".
        file[at] |= 0b110;
        file.extend(index_frame(b"{}").unwrap());
        let b_at = file.len() as u64;
        file.extend(&b);
        let (text, gaps, _, cut) = read(&file);
        assert!(!cut, "{what}");
        assert_eq!(gaps.len(), 1, "{what}: {gaps:?}");
        assert_eq!(gaps[0].from, 0, "{what}");
        assert!(gaps[0].to <= b_at, "{what}: {gaps:?}");
        assert!(gaps[0].why.contains("corrupt"), "{what}: {gaps:?}");
        if at == 6 {
            assert_eq!(text, b"second\n");
            assert_eq!(gaps[0].decoded, 0);
        } else {
            assert_eq!(text, b"first\nsecond\n");
            assert_eq!(gaps[0].decoded, 6);
        }
    }
}

#[test]
fn a_damaged_index_length_is_repaired_and_garbage_skipped() {
    let mut file = frame(b"one\n");
    let idx = file.len();
    file.extend(index_frame(br#"{"type":"index","x":1}"#).unwrap());
    file.extend(frame(b"two\n"));
    file[idx + 4] ^= 0x40;
    let (text, gaps, notes, _) = read(&file);
    assert_eq!(text, b"one\ntwo\n");
    assert!(gaps.is_empty(), "{gaps:?}");
    assert!(notes[0].contains("index frame"), "{notes:?}");
    // Bytes that are no frame between two frames: one gap.
    let mut file = frame(b"one\n");
    let junk = file.len() as u64;
    file.extend([7u8; 1000]);
    file.extend(frame(b"two\n"));
    let (text, gaps, _, _) = read(&file);
    assert_eq!(text, b"one\ntwo\n");
    assert_eq!(gaps.len(), 1);
    assert_eq!((gaps[0].from, gaps[0].to), (junk, junk + 1000));
    // Zeros at the end are what a power cut leaves: ignored.
    let mut file = frame(b"one\n");
    file.extend([0u8; 100]);
    let (text, gaps, _, cut) = read(&file);
    assert_eq!(text, b"one\n");
    assert!(gaps.is_empty() && !cut);
}

#[test]
fn a_bomb_stops_at_the_guard() {
    let text = vec![b'x'; 8 << 20];
    let file = zstd::bulk::compress(&text, 3).unwrap();
    assert!(file.len() < 2000);
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("b.zst");
    std::fs::write(&p, &file).unwrap();
    let f = Arc::new(File::open(&p).unwrap());
    let mut z = ZstText::new(f, 0, file.len() as u64, 1 << 17)
        .unwrap()
        .with_floor(1 << 20);
    let stopped = loop {
        match z.next() {
            Ok(Piece::End { .. }) => break None,
            Ok(_) => {}
            Err(e) => break Some(e),
        }
    };
    assert!(
        matches!(stopped, Some(Stop::TooLarge { .. })),
        "{stopped:?}"
    );
    assert!(z.counts().1 <= (1 << 20) + MAX_RATIO * file.len() as u64 + (1 << 17));
}

#[test]
fn many_bad_candidates_cost_linear_time() {
    // A header frame, then 1 MiB of skippable-frame headers that claim
    // more than the file holds, each followed by a frame magic.
    let mut file = frame(b"head\n");
    for _ in 0..(1 << 20) / 12 {
        file.extend(INDEX_MAGIC);
        file.extend(0xFFFF_FFF0u32.to_le_bytes());
        file.extend(FRAME_MAGIC);
    }
    let t = std::time::Instant::now();
    let (text, gaps, _, _) = read(&file);
    assert_eq!(text, b"head\n");
    assert!(!gaps.is_empty());
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
}
