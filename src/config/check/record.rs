//! `[record]`: where recordings go (`~/` expanded), their size and syncing.

use std::path::PathBuf;

use super::{HOUR, MS, Validator, between_text};
use crate::config::Record;
use crate::config::raw::{self, Scalar};
use crate::config::units::{Unreadable, format_size, parse_size};

impl Validator<'_> {
    pub(super) fn record(&mut self, r: raw::RawRecord) -> Record {
        let d = Record::default();
        let dir = match &r.dir {
            None => d.dir.clone(),
            Some(f) => {
                let echo = self.echo(&f.span());
                match expand_dir(f.get_ref()) {
                    Ok(p) => Some(p),
                    Err(why) => {
                        self.bad(Some(f.span()), format!("[record] dir = {echo}: {why}"));
                        d.dir.clone()
                    }
                }
            }
        };
        let max_size = match &r.max_size {
            None => d.max_size,
            Some(f) => {
                let parsed = match &f.get_ref().value {
                    Scalar::Str(s) => parse_size(s),
                    Scalar::Num(n) if *n >= 0.0 && n.fract() == 0.0 => Ok(*n as u64),
                    Scalar::Num(_) => Err(Unreadable::Why(
                        "a number of bytes is a whole number".to_owned(),
                    )),
                };
                let range = 1u64 << 20..=1u64 << 40;
                let text = between_text(&range, format_size);
                self.in_range("[record] max_size", f.span(), parsed, &range, text, "")
                    .unwrap_or(d.max_size)
            }
        };
        let sync_every = self.duration(
            "[record] sync_every",
            &r.sync_every,
            d.sync_every,
            100 * MS..=HOUR,
        );
        Record {
            dir,
            max_size,
            compress: Self::boolean(&r.compress, d.compress),
            sync_every: sync_every.value,
        }
    }
}

/// `~/x` → the home directory's `x`; the result must be absolute.
fn expand_dir(s: &str) -> Result<PathBuf, String> {
    if s.trim().is_empty() {
        return Err("is empty; leave it out to use the default".into());
    }
    let p = if s == "~" || s.starts_with("~/") {
        let home = directories::BaseDirs::new()
            .map(|b| b.home_dir().to_path_buf())
            .ok_or("`~` cannot be expanded: no home directory is known")?;
        home.join(s.trim_start_matches('~').trim_start_matches('/'))
    } else {
        PathBuf::from(s)
    };
    if p.is_absolute() {
        Ok(p)
    } else {
        Err("must be an absolute path (or start with ~/)".into())
    }
}
