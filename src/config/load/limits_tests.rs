//! What a file can make the loader do is bounded (its size, its numbers,
//! what is echoed of it, how many problems are listed), and every refusal
//! says where and what would be valid.

use super::*;

/// The one-line messages of a config that must fail.
fn errors(text: &str) -> Vec<String> {
    match parse(text, "c.toml") {
        Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn error(text: &str) -> String {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:?}");
    e.into_iter().next().unwrap_or_default()
}

fn load_bytes(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, bytes).unwrap();
    let e = load_file(&path).unwrap_err().to_string();
    e.replace(&path.display().to_string(), "c.toml")
}

#[test]
fn a_file_over_1_mib_is_refused_before_it_is_parsed() {
    let mut big = b"[alerts]\ncommand = [".to_vec();
    big.extend(std::iter::repeat_n(&b"\"x\","[..], 300_000).flatten());
    big.extend(b"\"x\"]\n");
    assert_eq!(
        load_bytes(&big),
        format!(
            "c.toml: the file is {} bytes; a config file is at most 1 MiB (1048576 bytes)",
            big.len()
        )
    );
    let text = String::from_utf8(big).unwrap();
    assert_eq!(
        error(&text),
        "c.toml: the file is 1200025 bytes; a config file is at most 1 MiB (1048576 bytes)"
    );
    // Just under the limit is read (and here refused for its meaning).
    let mut under = "[display]\ntheme = \"dark\"\n".to_owned();
    under.push_str(&"#".repeat(MAX_BYTES - under.len() - 1));
    under.push('\n');
    assert_eq!(under.len(), MAX_BYTES);
    assert!(parse(&under, "c.toml").is_ok());
}

#[test]
fn a_device_that_never_ends_is_refused_too() {
    let e = load_file(Path::new("/dev/zero")).unwrap_err().to_string();
    assert_eq!(
        e,
        "/dev/zero: the file is larger than 1 MiB; a config file is at most 1 MiB (1048576 bytes)"
    );
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    assert_eq!(
        load_bytes(b"version = 1\n[display]\ntheme = \"d\xffark\"\n"),
        "c.toml:3:11: not UTF-8 text: the byte at offset 32 (0xff) is not valid UTF-8; save the file as UTF-8"
    );
    // Columns count characters: "é" is one (two bytes).
    let mut bytes = "# \u{e9}t\u{e9}\n# x \u{e9}".as_bytes().to_vec();
    bytes.extend(b"\xc3(\n");
    assert_eq!(
        load_bytes(&bytes),
        "c.toml:2:6: not UTF-8 text: the byte at offset 14 (0xc3) is not valid UTF-8; save the file as UTF-8"
    );
}

#[test]
fn numbers_too_large_for_64_bits_are_out_of_range() {
    let huge = "99999999999999999999999";
    for (text, want) in [
        (
            format!("[thresholds]\nmemory_warn = {huge}\n"),
            format!("c.toml:2:15: [thresholds] memory_warn = {huge}: a number too large, must be between 0 and 100"),
        ),
        (
            format!("[thresholds]\nmemory_crit = -{huge}\n"),
            format!("c.toml:2:15: [thresholds] memory_crit = -{huge}: a number too small, must be between 0 and 100"),
        ),
        (
            "[thresholds]\npower_warn = 0xffff_ffff_ffff_ffff_ffff\n".to_owned(),
            "c.toml:2:14: [thresholds] power_warn = 0xffff_ffff_ffff_ffff_ffff: a number too large, must be between 0 and 200".to_owned(),
        ),
        (
            "[thresholds]\npower_warn = 1e999\n".to_owned(),
            "c.toml:2:14: [thresholds] power_warn = 1e999: a number too large, must be between 0 and 200".to_owned(),
        ),
        (
            format!("[record]\nmax_size = {huge}\n"),
            format!("c.toml:2:12: [record] max_size = {huge}: a number too large, must be between 1MiB and 1TiB"),
        ),
        (
            format!("version = {huge}\n"),
            format!("c.toml:1:11: version = {huge}: a number too large; this vramwatch reads version 1"),
        ),
        (
            "version = 18446744073709551615\n".to_owned(),
            "c.toml:1:11: version = 18446744073709551615: a number too large; this vramwatch reads version 1".to_owned(),
        ),
        (
            format!("[display]\ncolor = {huge}\n"),
            format!("c.toml:2:9: [display] color = {huge}: a number too large, must be \"auto\", 16, 256 or \"truecolor\""),
        ),
        (
            format!("[alerts]\nburst_level = {huge}\n"),
            format!("c.toml:2:15: [alerts] burst_level = {huge}: a number too large, must be a percentage between 1 and 100, or \"off\""),
        ),
        (
            format!("[display]\nmouse = {huge}\n"),
            format!("c.toml:2:9: [display] mouse = {huge}: expected true or false, found an integer"),
        ),
        (
            "[sampling]\ninterval = \"99999999999999999999h\"\n".to_owned(),
            "c.toml:2:12: [sampling] interval = \"99999999999999999999h\": a duration too large, must be between 100ms and 1m".to_owned(),
        ),
        (
            "[record]\nmax_size = \"99999999999TiB\"\n".to_owned(),
            "c.toml:2:12: [record] max_size = \"99999999999TiB\": a size too large, must be between 1MiB and 1TiB".to_owned(),
        ),
    ] {
        assert_eq!(error(&text), want, "{text}");
    }
    // The largest integers that fit are read as they are.
    assert_eq!(
        error("[thresholds]\nmemory_warn = 9223372036854775807\n"),
        "c.toml:2:15: [thresholds] memory_warn = 9223372036854775807: must be between 0 and 100"
    );
    assert_eq!(huge_number("1_000"), None);
    assert_eq!(huge_number("inf"), None);
    assert_eq!(huge_number("\"99999999999999999999999\""), None);
    assert_eq!(
        huge_number("-0b1111111111111111111111111111111111111111111111111111111111111111"),
        Some(false)
    );
}

#[test]
fn long_keys_and_values_are_cut_in_messages() {
    let long = "k".repeat(100_000);
    let cut = format!("{}\u{2026}", "k".repeat(63));
    assert_eq!(
        error(&format!("[display]\n{long} = 1\n")),
        format!(
            "c.toml:2:1: [display] {cut}: unknown key; valid keys: theme, color, columns, mouse, ascii, chart_rows, events"
        )
    );
    assert_eq!(
        error(&format!("[keys]\n{long} = \"x\"\n"))
            .split(';')
            .next()
            .unwrap_or_default(),
        format!("c.toml:2:1: [keys] {cut}: unknown action")
    );
    assert_eq!(
        error(&format!("[display]\ntheme = \"{long}\"\n")),
        format!(
            "c.toml:2:9: [display] theme = \"{}\u{2026}: must be \"dark\", \"light\" or \"mono\"",
            "k".repeat(62)
        )
    );
    assert_eq!(
        error(&format!("[display]\ncolumns = [\"{long}\"]\n"))
            .split(';')
            .next()
            .unwrap_or_default(),
        format!("c.toml:2:12: [display] columns: unknown column `{cut}`")
    );
    assert_eq!(
        error(&format!("[keys]\nquit = \"ctrl-{long}\"\n"))
            .split(':')
            .take(5)
            .collect::<Vec<_>>()
            .join(":"),
        format!(
            "c.toml:2:8: [keys] quit: `ctrl-{}\u{2026}` is not a key",
            "k".repeat(58)
        )
    );
    assert_eq!(
        error(&format!("[record]\nmax_size = \"1{long}\"\n")),
        format!(
            "c.toml:2:12: [record] max_size = \"1{}\u{2026}: not a size: `{cut}` is not a unit; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB; e.g. 512MiB, 1GiB",
            "k".repeat(61)
        )
    );
    // A key with spaces, quoted, is cut as well.
    let spaced = "ab ".repeat(1000);
    let e = error(&format!("[display]\n\"{spaced}\" = 1\n"));
    assert!(e.chars().count() < 200, "{e}");
    assert_eq!(cap("x"), "x");
    assert_eq!(cap(&"y".repeat(64)), "y".repeat(64));
    assert_eq!(cap(&"y".repeat(65)).chars().count(), 64);
}

#[test]
fn at_most_20_problems_are_reported() {
    let mut text = "[display]\n".to_owned();
    for i in 0..10_000 {
        text.push_str(&format!("k{i} = 1\n"));
    }
    let e = errors(&text);
    assert_eq!(e.len(), MAX_PROBLEMS + 1);
    assert_eq!(
        e[0],
        "c.toml:2:1: [display] k0: unknown key; valid keys: theme, color, columns, mouse, ascii, chart_rows, events"
    );
    assert_eq!(
        e[MAX_PROBLEMS],
        "c.toml: more problems than the 20 above (not listed); fix these and check again"
    );
    // Found by the value checks, too.
    let mut text = "[keys]\n".to_owned();
    for i in 0..100 {
        text.push_str(&format!("zz{i} = \"x\"\n"));
    }
    assert_eq!(errors(&text).len(), MAX_PROBLEMS + 1);
}
