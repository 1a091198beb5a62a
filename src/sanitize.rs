//! Strings that come from other processes (names, command lines, cgroup
//! paths) can carry terminal escape sequences. Everything such a string
//! reaches — the screen, a file, an HTTP response — gets it through here.

/// Longest command line we keep, in characters.
pub const MAX_COMMAND_CHARS: usize = 4096;

/// Removes ANSI escape sequences (CSI, OSC, ...) and every other control
/// character, maps tabs and newlines to spaces, and caps the length.
pub fn clean(raw: &str) -> String {
    clean_capped(raw, MAX_COMMAND_CHARS)
}

/// A path as it may be shown: [`clean`] of its display form (a file name
/// can carry escape sequences too).
pub fn path(p: &std::path::Path) -> String {
    clean(&p.display().to_string())
}

/// As [`clean`], keeping at most `max_chars` characters.
pub fn clean_capped(raw: &str, max_chars: usize) -> String {
    let fast = raw.chars().all(|c| !c.is_control());
    let stripped;
    let text = if fast {
        raw
    } else {
        // Whitespace controls become spaces first: the stripper drops them.
        let spaced: String = raw
            .chars()
            .map(|c| {
                if matches!(c, '\t' | '\n' | '\r') {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        stripped = strip_ansi_escapes::strip_str(spaced);
        &stripped
    };
    text.chars()
        .filter_map(|c| match c {
            '\t' | '\n' | '\r' => Some(' '),
            c if c.is_control() => None,
            // Bidirectional overrides can make a command read backwards.
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => None,
            c => Some(c),
        })
        .take(max_chars)
        .collect()
}

/// Longest line of a message to standard error, in characters.
const MAX_MESSAGE_LINE_CHARS: usize = 2000;

/// A message for standard error: each line as [`clean_capped`] makes it
/// (escape sequences and other controls gone, at most
/// [`MAX_MESSAGE_LINE_CHARS`] characters), the line breaks kept.
pub fn for_stderr(text: &str) -> String {
    text.split('\n')
        .map(|line| clean_capped(line, MAX_MESSAGE_LINE_CHARS))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An I/O error in plain words for a message that names the path itself
/// (`{path}: {io_words(e)}`): "no such file", "permission denied", "is a
/// directory" rather than "No such file or directory (os error 2)". An
/// error of another kind from the system loses its "(os error N)" and
/// starts lower case; one that is not from the system (a message of our
/// own, or a library's) is left as it is.
pub fn io_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    if e.raw_os_error().is_none() {
        return e.to_string();
    }
    let words = match e.kind() {
        K::NotFound => "no such file",
        K::PermissionDenied => "permission denied",
        K::IsADirectory => "is a directory",
        K::NotADirectory => "a part of the path is not a directory",
        K::AlreadyExists => "already exists",
        K::ReadOnlyFilesystem => "read-only file system",
        K::StorageFull => "no space left on device",
        K::QuotaExceeded => "disk quota exceeded",
        K::FileTooLarge => "file too large",
        K::InvalidFilename => "the file name is too long",
        K::ResourceBusy => "busy",
        K::Interrupted => "interrupted",
        K::WouldBlock => "would block",
        _ => {
            let text = e.to_string();
            let text = match text.rfind(" (os error ") {
                Some(i) if text.ends_with(')') => text[..i].to_owned(),
                _ => text,
            };
            let mut c = text.chars();
            return match (c.next(), c.next()) {
                (Some(a), Some(b)) if a.is_uppercase() && !b.is_uppercase() => a
                    .to_lowercase()
                    .chain(text[a.len_utf8()..].chars())
                    .collect(),
                _ => text,
            };
        }
    };
    words.to_owned()
}

/// `text` with every system error it quotes as std writes them ("No such
/// file or directory (os error 2)") in [`io_words`] ("no such file"): for
/// messages that carry an error as text only (a library's, or one error
/// quoting another).
pub fn os_errors_in_words(text: &str) -> String {
    const MARK: &str = " (os error ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let code = after[..digits].parse::<i32>().ok();
        let end = i + MARK.len() + digits + 1;
        match code.filter(|_| after[digits..].starts_with(')')) {
            Some(code) => {
                let e = std::io::Error::from_raw_os_error(code);
                let std_text = e.to_string();
                let head = &rest[..end];
                match head.strip_suffix(std_text.as_str()) {
                    Some(before) => {
                        out.push_str(before);
                        out.push_str(&io_words(&e));
                    }
                    None => out.push_str(head),
                }
                rest = &rest[end..];
            }
            None => {
                out.push_str(&rest[..i + MARK.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Joins argv the way `ps` shows it, cleaning each part.
pub fn command_line<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let joined = args
        .into_iter()
        .map(|a| a.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(" ");
    clean(joined.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_in_plain_words() {
        let os = |n| io_words(&std::io::Error::from_raw_os_error(n));
        assert_eq!(os(nix::libc::ENOENT), "no such file");
        assert_eq!(os(nix::libc::EACCES), "permission denied");
        assert_eq!(os(nix::libc::EISDIR), "is a directory");
        assert_eq!(
            os(nix::libc::ENOTDIR),
            "a part of the path is not a directory"
        );
        assert_eq!(os(nix::libc::ENOSPC), "no space left on device");
        // Another kind: the system's words, without "(os error N)".
        assert_eq!(os(nix::libc::EIO), "input/output error");
        assert_eq!(os(nix::libc::ELOOP), "too many levels of symbolic links");
        // Not from the system: as it is.
        let own = std::io::Error::other("Cut short");
        assert_eq!(io_words(&own), "Cut short");
    }

    #[test]
    fn os_errors_quoted_in_text_read_in_plain_words() {
        let enoent = std::io::Error::from_raw_os_error(nix::libc::ENOENT).to_string();
        let enospc = std::io::Error::from_raw_os_error(nix::libc::ENOSPC).to_string();
        assert_eq!(
            os_errors_in_words(&format!("drawing /dev/full: {enospc}")),
            "drawing /dev/full: no space left on device"
        );
        assert_eq!(
            os_errors_in_words(&format!("a: {enoent}; b: {enospc}.")),
            "a: no such file; b: no space left on device."
        );
        // Not std's words for that code, or no code: left alone.
        for text in [
            "x: Gone (os error 2)",
            "x (os error )",
            "x (os error 2",
            "plain",
        ] {
            assert_eq!(os_errors_in_words(text), text);
        }
    }

    #[test]
    fn a_message_keeps_its_lines_and_loses_escapes() {
        assert_eq!(
            for_stderr("a.jsonl:12: unknown variant `x\u{1b}[31m`\n\u{1b}]0;pwn\u{7}next\tline"),
            "a.jsonl:12: unknown variant `x`\nnext line"
        );
        assert_eq!(for_stderr(&"x".repeat(5000)).len(), MAX_MESSAGE_LINE_CHARS);
    }

    #[test]
    fn plain_text_passes_through() {
        assert_eq!(
            clean("python train.py --lr 3e-4"),
            "python train.py --lr 3e-4"
        );
        assert_eq!(clean("naïve 模型"), "naïve 模型");
    }

    #[test]
    fn escape_sequences_are_removed() {
        assert_eq!(clean("evil\x1b[2J\x1b[31mred\x1b[0m"), "evilred");
        // OSC title change terminated by BEL.
        assert_eq!(clean("a\x1b]0;pwned\x07b"), "ab");
        // ESC with one final byte is a sequence too; NUL and C1 CSI go.
        assert_eq!(clean("x\x1b7y\x00z\u{9b}w"), "xyzw");
        assert_eq!(clean("del\x7f"), "del");
    }

    #[test]
    fn whitespace_controls_become_spaces() {
        assert_eq!(clean("a\tb\nc"), "a b c");
    }

    #[test]
    fn bidi_overrides_are_removed() {
        assert_eq!(clean("abc\u{202E}fed"), "abcfed");
    }

    #[test]
    fn length_is_capped() {
        assert_eq!(clean_capped("abcdef", 3), "abc");
        assert_eq!(clean(&"x".repeat(10_000)).len(), MAX_COMMAND_CHARS);
    }

    #[test]
    fn argv_is_joined() {
        assert_eq!(
            command_line(["python", "-c", "print(1)\n"]),
            "python -c print(1)"
        );
    }
}
