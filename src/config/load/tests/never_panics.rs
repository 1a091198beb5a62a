//! Property tests: whatever a file holds, loading returns a config or
//! positioned problems, never a panic.

use super::*;
use crate::config::raw::{SECTIONS, section_keys};

proptest::proptest! {
    /// Whatever the text, loading returns a config or a positioned error,
    /// never a panic.
    #[test]
    fn arbitrary_text_never_panics(text in "(\\[[a-z]{0,12}\\]|[a-z_]{1,16} = (\"[0-9a-zA-Z/:. -]{0,12}\"|-?[0-9.]{1,6}|\\[\"?[a-z]{0,5}\"?\\]|true)|\n|#.*){0,12}") {
        match parse(&text, "p.toml") {
            Ok(_) => {}
            Err(ConfigError::Invalid { problems, .. }) => {
                proptest::prop_assert!(!problems.is_empty());
                for p in problems {
                    let at = p.at.expect("every problem has a position");
                    proptest::prop_assert!(at.line >= 1 && at.line <= text.lines().count() + 1);
                }
            }
            Err(other) => proptest::prop_assert!(false, "{other}"),
        }
    }

    #[test]
    fn known_keys_with_junk_values_never_panic(
        section in proptest::sample::select(SECTIONS.to_vec()),
        idx in 0usize..8,
        value in "(\"[0-9a-zA-Z/:. -]{0,10}\"|-?[0-9]{1,12}(\\.[0-9]{1,3})?|\\[\\]|true|false|\\{\\})",
    ) {
        let keys = section_keys(section);
        let key = keys[idx % keys.len()];
        let text = format!("[{section}]\n{key} = {value}\n");
        if let Err(ConfigError::Invalid { problems, .. }) = parse(&text, "p.toml") {
            for p in problems {
                proptest::prop_assert!(p.at.is_some(), "{}", p.message);
                proptest::prop_assert!(
                    p.message.contains(key) || p.message.starts_with("TOML syntax error"),
                    "{}",
                    p.message
                );
            }
        }
    }
}
