//! `[serve]`: the listen address, the host label and the process series.

use super::Validator;
use crate::config::raw;
use crate::config::units::parse_listen;
use crate::config::{MAX_PROCESS_SERIES, Serve, check_label_name};

impl Validator<'_> {
    pub(super) fn serve(&mut self, r: raw::RawServe) -> Serve {
        let d = Serve::default();
        let listen = match &r.listen {
            None => d.listen,
            Some(f) => match parse_listen(f.get_ref()) {
                Ok(addr) => addr.to_string(),
                Err(why) => {
                    let echo = self.echo(&f.span());
                    self.bad(Some(f.span()), format!("[serve] listen = {echo}: {why}"));
                    d.listen
                }
            },
        };
        let hostname_label = match &r.hostname_label {
            None => d.hostname_label,
            Some(f) => match check_label_name(f.get_ref()) {
                Ok(()) => f.get_ref().clone(),
                Err(why) => {
                    let echo = self.echo(&f.span());
                    self.bad(
                        Some(f.span()),
                        format!("[serve] hostname_label = {echo}: {why}"),
                    );
                    d.hostname_label
                }
            },
        };
        let max_process_series = self
            .whole(
                &r.max_process_series,
                "[serve] max_process_series",
                0..=MAX_PROCESS_SERIES as i64,
            )
            .map_or(d.max_process_series, |v| v as usize);
        Serve {
            listen,
            hostname_label,
            max_process_series,
        }
    }
}
