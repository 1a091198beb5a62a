//! Judging line 1: the header of a recording this vramwatch reads, or a
//! precise reason why it is not one — and, where it can tell, what the
//! file is instead (a workload truth file, another JSON document, a line
//! of a recording that is not its header, a compressed or binary format).

use super::check::BROKEN;
use crate::record::format::{Header, LineError};
use crate::record::reader::text::{Lines, MAX_LINE, Step, stopped};
use crate::record::{FORMAT, OLDEST_VERSION, RecordError, VERSION};

/// Reads line 1 and checks it is a header this vramwatch reads.
pub(crate) fn read_header(lines: &mut Lines, name: &str, len: u64) -> Result<Header, RecordError> {
    let not = |why: String| RecordError::NotARecording {
        path: name.to_owned(),
        why,
    };
    if len == 0 {
        return Err(not("the file is empty".into()));
    }
    loop {
        match lines.next().map_err(|e| stopped(name, e))? {
            Step::Line { .. } => {
                let text = lines.line();
                if binary_kind(text).is_none()
                    && serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err()
                {
                    // `{` alone, as pretty-printed JSON starts: a document
                    // over several lines says what it is.
                    let first = text.to_vec();
                    if let Some(why) = json_document(lines, &first) {
                        return Err(not(why));
                    }
                    return header(name, &first);
                }
                return header(name, text);
            }
            Step::Overlong { .. } => {
                return Err(not(format!(
                    "line 1 is longer than {} MiB, so it is no header",
                    MAX_LINE >> 20
                )));
            }
            Step::Gap { gap, .. } if gap.from == 0 => {
                return Err(not(format!(
                    "it starts like zstd data, but the frame at byte 0 cannot be decompressed: {}",
                    gap.why
                )));
            }
            Step::Gap { gap, .. } => {
                return Err(not(format!(
                    "its first line cannot be read: bytes {}–{} cannot be decompressed: {}",
                    gap.from, gap.to, gap.why
                )));
            }
            Step::Notice(_) => {}
            Step::Broken { .. } => {
                return Err(not(format!("line 1 (the header) cannot be read: {BROKEN}")));
            }
            Step::Cut { zeros: true, .. } => {
                return Err(not("it holds only zero bytes".into()));
            }
            Step::Cut { .. } => {
                if let Some(kind) = binary_kind(lines.line()) {
                    return Err(not(format!("it is {kind}")));
                }
                return Err(not(
                    "line 1 (the header) is incomplete: the file ends before its newline".into(),
                ));
            }
            Step::End => return Err(not("it holds no text".into())),
        }
    }
}

/// Text read to tell what a file whose line 1 is not JSON is, at most.
const DOCUMENT_MAX: usize = 1 << 20;

/// What a file is whose line 1, `first`, is not JSON but whose text, line
/// 1 and the lines after it, is one JSON document (up to
/// [`DOCUMENT_MAX`]); `None` when it is not one. `lines` is left where it
/// stopped.
fn json_document(lines: &mut Lines, first: &[u8]) -> Option<String> {
    let mut text = first.to_vec();
    loop {
        match lines.next() {
            // The last line may have no newline (`json.dump` writes none).
            Ok(Step::Line { .. } | Step::Cut { .. }) => {
                if text.len() + lines.line().len() >= DOCUMENT_MAX {
                    return None;
                }
                text.push(b'\n');
                text.extend_from_slice(lines.line());
            }
            Ok(Step::End) => break,
            Ok(Step::Notice(_)) => {}
            _ => return None,
        }
    }
    serde_json::from_slice::<serde_json::Value>(&text)
        .ok()
        .map(|v| not_a_header(&v, true))
}

/// Why a JSON value (line 1, or the whole file when `document`) is not a
/// recording's header.
fn not_a_header(v: &serde_json::Value, document: bool) -> String {
    let object = v.as_object();
    let has = |k: &str| object.is_some_and(|o| o.contains_key(k));
    if has("workload") || has("expect") {
        return "it is a workload truth file (ground truth for `vramwatch score --truth`)".into();
    }
    let expected = format!("{{\"type\":\"header\",\"format\":\"{FORMAT}\",...}}");
    if document {
        return format!(
            "it is one JSON document over several lines; a recording is JSON Lines, its line 1 the header ({expected})"
        );
    }
    match v.get("type").and_then(|t| t.as_str()) {
        Some("header") => format!("line 1 is not a header with \"format\": \"{FORMAT}\""),
        Some(t @ ("snapshot" | "process" | "event" | "index")) => format!(
            "line 1 is a \"{t}\" line of a recording, not its header ({expected}): the start of the recording is missing"
        ),
        _ => format!("line 1 is JSON but not a vramwatch recording header (expected {expected})"),
    }
}

/// Well-known binary formats, to say what a file is instead.
fn binary_kind(text: &[u8]) -> Option<&'static str> {
    [
        (&[0x1F, 0x8B][..], "gzip-compressed"),
        (&[0xFD, b'7', b'z', b'X', b'Z', 0x00], "xz-compressed"),
        (b"BZh", "bzip2-compressed"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x7FELF", "an executable (ELF)"),
    ]
    .iter()
    .find(|(m, _)| text.starts_with(m))
    .map(|(_, k)| *k)
}

/// The raw text of a top-level `"version"` value in a header line.
fn raw_version(text: &[u8]) -> Option<String> {
    let i = memchr::memmem::find(text, b"\"version\"")?;
    let rest = &text[i + 9..];
    let rest = &rest[rest.iter().position(|&b| b == b':')? + 1..];
    let rest = rest.trim_ascii_start();
    let end = rest
        .iter()
        .position(|&b| b == b',' || b == b'}')
        .unwrap_or(rest.len());
    let v = String::from_utf8_lossy(&rest[..end.min(40)]);
    Some(crate::sanitize::clean(v.trim()))
}

/// Checks line 1.
fn header(name: &str, text: &[u8]) -> Result<Header, RecordError> {
    let not = |why: String| RecordError::NotARecording {
        path: name.to_owned(),
        why,
    };
    if let Some(kind) = binary_kind(text) {
        return Err(not(format!("it is {kind}")));
    }
    let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
        not(format!(
            "line 1 is not JSON ({})",
            LineError::Json(e)
                .to_string()
                .trim_start_matches("not valid JSON: ")
        ))
    })?;
    if v.get("type").and_then(|t| t.as_str()) != Some("header")
        || v.get("format").and_then(|t| t.as_str()) != Some(FORMAT)
    {
        return Err(not(not_a_header(&v, false)));
    }
    let raw = || raw_version(text).unwrap_or_else(|| "?".into());
    let found = match v.get("version") {
        None => return Err(not("the header has no \"version\"".into())),
        Some(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(x) => x,
            None if n.as_i64().is_some() => {
                return Err(not(format!(
                    "the header's \"version\" is {}: format versions are whole numbers from 1",
                    raw()
                )));
            }
            None => {
                return Err(not(format!(
                    "the header's \"version\" is {}, which is not a format version (a whole number from 1)",
                    raw()
                )));
            }
        },
        Some(serde_json::Value::String(s)) => {
            return Err(not(format!(
                "the header's \"version\" is the string \"{}\", not a number (vramwatch writes \"version\": {VERSION})",
                crate::sanitize::clean_capped(s, 40)
            )));
        }
        Some(other) => {
            let what = match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "true or false",
                serde_json::Value::Array(_) => "a list",
                _ => "an object",
            };
            return Err(not(format!(
                "the header's \"version\" is {what}, not a format version number"
            )));
        }
    };
    if !(u64::from(OLDEST_VERSION)..=u64::from(VERSION)).contains(&found) {
        return Err(RecordError::Version {
            path: name.to_owned(),
            found,
            writer: crate::sanitize::clean_capped(
                v.get("vramwatch_version")
                    .and_then(|x| x.as_str())
                    .unwrap_or("?"),
                40,
            ),
            ours: env!("CARGO_PKG_VERSION"),
            advice: if found > u64::from(VERSION) {
                "it is newer: upgrade vramwatch to read it"
            } else {
                "it is older: read it with the vramwatch that wrote it"
            },
        });
    }
    let mut h: Header = serde_json::from_value(v).map_err(|e| RecordError::Line {
        path: name.to_owned(),
        line: 1,
        error: LineError::Json(e),
    })?;
    h.sanitize();
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(line: &str) -> String {
        header("h.jsonl", line.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn versions_that_are_not_numbers_are_named() {
        let h = |v: &str| {
            format!(
                r#"{{"type":"header","format":"vramwatch-recording","version":{v},"vramwatch_version":"9"}}"#
            )
        };
        assert!(
            why(&h("\"1\"")).contains("the string \"1\""),
            "{}",
            why(&h("\"1\""))
        );
        assert!(why(&h("-1")).contains("is -1: format versions are whole numbers"));
        let big = why(&h("18446744073709551616"));
        assert!(
            big.contains("18446744073709551616, which is not a format version"),
            "{big}"
        );
        assert!(why(&h("1.5")).contains("is 1.5"));
        assert!(why(&h("null")).contains("is null"));
        assert!(why(&h("3")).contains("version 3"));
        assert!(why(&h("0")).contains("version 0"));
        let gz = header("h.jsonl", b"\x1f\x8b\x08\x00")
            .unwrap_err()
            .to_string();
        assert!(gz.contains("gzip"), "{gz}");
    }
}
