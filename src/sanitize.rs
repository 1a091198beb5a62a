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
