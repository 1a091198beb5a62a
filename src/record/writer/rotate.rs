//! Starting a file (each part of a recording has its own header),
//! rotating at `max_size`, and replacing a file removed or moved away
//! while recording.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Instant;

use super::block::{Block, Mark, Out};
use super::{RecordWarning, Writer};
use crate::record::format;
use crate::record::rotated_path;
use crate::record::zst::LineCompressor;

impl Writer {
    /// Creates the file (failing if it exists unless `truncate`) and writes
    /// the header.
    pub(super) fn start_file(&mut self, truncate: bool) -> io::Result<Out> {
        let mut oo = OpenOptions::new();
        oo.write(true);
        if truncate {
            oo.create(true).truncate(true);
        } else {
            oo.create_new(true);
        }
        let file = oo.open(&self.path)?;
        let meta = file.metadata()?;
        let mut out = Out {
            file,
            size: 0,
            lines: 0,
            dev_ino: (meta.dev(), meta.ino()),
            compress: self.compress,
            enc: None,
            frame_open: false,
            ordinal: 0,
            block: Block {
                first_line: 1,
                ..Default::default()
            },
            prev_index: None,
            held: 0,
            flushed: Mark::default(),
            flushed_t: 0,
        };
        self.header.start_ms = crate::model::now_ms();
        let mut text = Vec::new();
        format::write_header(&mut text, &self.header);
        let bytes = if self.compress {
            let mut enc = LineCompressor::new(self.opts.level)?;
            let b = enc.push(&text)?;
            out.enc = Some(enc);
            out.frame_open = true;
            b
        } else {
            text
        };
        out.file.write_all(&bytes)?;
        out.size = bytes.len() as u64;
        out.lines = 1;
        out.block.lines = 1;
        out.mark();
        self.known.clear();
        self.tally(out.size);
        Ok(out)
    }

    /// Ends the current file and starts a new one at the same path,
    /// shifting the older ones. Returns where the old file went.
    pub(super) fn rotate(&mut self) -> io::Result<PathBuf> {
        let _ = self.close_block(0);
        if let Some(out) = self.out.take() {
            let _ = out.file.sync_all();
            self.ended(&out);
        }
        let keep = self.opts.keep.max(1);
        let _ = fs::remove_file(rotated_path(&self.path, keep));
        for n in (1..keep).rev() {
            let from = rotated_path(&self.path, n);
            if from.exists() {
                fs::rename(&from, rotated_path(&self.path, n + 1))?;
            }
        }
        let previous = rotated_path(&self.path, 1);
        fs::rename(&self.path, &previous)?;
        self.header.part += 1;
        let out = self.start_file(false)?;
        self.out = Some(out);
        self.stats.rotations += 1;
        self.last_sync = Instant::now();
        Ok(previous)
    }

    /// fsyncs, and notices a file removed or moved away (then ends it and
    /// starts a new one at the path).
    pub(super) fn sync_and_check(&mut self) -> Option<RecordWarning> {
        self.last_sync = Instant::now();
        let out = self.out.as_mut()?;
        let _ = out.file.sync_data();
        let here = fs::metadata(&self.path).ok().map(|m| (m.dev(), m.ino()));
        if here == Some(out.dev_ino) {
            return None;
        }
        let _ = self.close_block(0);
        if let Some(out) = self.out.take() {
            let _ = out.file.sync_all();
            self.ended(&out);
        }
        self.header.part += 1;
        let path = self.path.display().to_string();
        match self.start_file(false) {
            Ok(out) => {
                self.out = Some(out);
                self.stats.rotations += 1;
            }
            Err(_) => {
                // Retried at the next write.
            }
        }
        Some(RecordWarning::Removed { path })
    }
}
