//! Shape errors: what serde reports (an unknown key, a wrong TOML type) is
//! traced back, through the error's span, to the key it is about, and said
//! in the words of a config file, with the closest valid key when there is
//! one.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::load::echo;
use super::raw;

/// One step of the path to a key: its name, the key's span and the value's.
struct Step {
    name: String,
    key: Range<usize>,
    value: Range<usize>,
    kind: &'static str,
    is_table: bool,
}

/// The keys from the top down to the deepest one whose key or value
/// contains `pos`. (A `[section]` table's span is its header only, so
/// tables are searched whatever their span.)
fn locate(table: &DeTable<'_>, pos: usize) -> Vec<Step> {
    for (k, v) in table.iter() {
        let (ks, vs) = (k.span(), v.span());
        let step = || Step {
            name: k.get_ref().to_string(),
            key: ks.clone(),
            value: vs.clone(),
            kind: v.get_ref().type_str(),
            is_table: v.get_ref().is_table(),
        };
        if ks.contains(&pos) {
            return vec![step()];
        }
        if let DeValue::Table(t) = v.get_ref() {
            let mut below = locate(t, pos);
            if !below.is_empty() || vs.contains(&pos) {
                below.insert(0, step());
                return below;
            }
        } else if vs.contains(&pos) {
            return vec![step()];
        }
    }
    Vec::new()
}

fn a_or_an(kind: &str) -> String {
    match kind {
        "integer" | "array" | "inline table" => format!("an {kind}"),
        k => format!("a {k}"),
    }
}

/// Serde's names for types, in the words of a config file.
fn plain_expected(e: &str) -> &str {
    match e {
        "a boolean" => "true or false",
        "f64" | "f32" => "a number",
        "i64" | "i32" | "u64" | "u32" | "u8" | "u16" | "i8" | "i16" => "an integer",
        "a string" => "a string (in quotes)",
        "a sequence" => "an array",
        "a map" => "a table",
        other => other,
    }
}

/// What a serde error means, where (byte offset), and the path of the key
/// it is about (empty when none was found).
pub(super) fn problem(
    text: &str,
    tree: &DeTable<'_>,
    e: &toml::de::Error,
) -> (Option<usize>, String, Vec<String>) {
    let Some(span) = e.span() else {
        return (None, e.message().to_owned(), Vec::new());
    };
    let path = locate(tree, span.start);
    let names: Vec<String> = path.iter().map(|s| s.name.clone()).collect();
    let msg = e.message();
    let (at, message) = match path.last() {
        Some(last) if msg.starts_with("unknown field") => {
            let section = if path.len() >= 2 {
                path[0].name.as_str()
            } else {
                ""
            };
            (
                last.key.start,
                unknown_key(section, &last.name, last.is_table),
            )
        }
        Some(last) => {
            let key = label(&names);
            let message = match msg
                .strip_prefix("invalid type: ")
                .and_then(|m| m.split_once(", expected "))
            {
                Some((_, expected)) => format!(
                    "expected {}, found {}",
                    plain_expected(expected),
                    a_or_an(found_kind(text, &span, last))
                ),
                None => msg.to_owned(),
            };
            let echo = echo(text.get(last.value.clone()).unwrap_or_default());
            (span.start, format!("{key} = {echo}: {message}"))
        }
        None => (span.start, msg.to_owned()),
    };
    (Some(at), message, names)
}

/// The TOML type at `span`: the value's own, or an array element's.
fn found_kind(text: &str, span: &Range<usize>, step: &Step) -> &'static str {
    if *span == step.value {
        return step.kind;
    }
    match DeValue::parse(text.get(span.clone()).unwrap_or_default()) {
        Ok(v) => v.get_ref().type_str(),
        Err(_) => step.kind,
    }
}

/// The closest of `candidates` to `word`, if it is close enough to be a typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn unknown_key(section: &str, name: &str, is_table: bool) -> String {
    let valid = raw::section_keys(section);
    if section.is_empty() {
        // A top-level key: a misspelt section, or a key outside its section.
        if let Some(home) = raw::SECTIONS
            .iter()
            .find(|s| raw::section_keys(s).contains(&name))
        {
            return format!("{name}: unknown top-level key; `{name}` belongs in [{home}]");
        }
        let sections = || {
            let names: Vec<String> = valid
                .iter()
                .filter(|k| **k != "version")
                .map(|s| format!("[{s}]"))
                .collect();
            names.join(", ")
        };
        return match closest(name, valid.iter().copied()) {
            Some(c) if is_table => format!("[{name}]: unknown section; did you mean [{c}]?"),
            Some(c) => format!("{name}: unknown top-level key; did you mean `{c}`?"),
            None if is_table => {
                format!("[{name}]: unknown section; valid sections: {}", sections())
            }
            None => format!(
                "{name}: unknown top-level key; valid: version, {}",
                sections()
            ),
        };
    }
    if is_table {
        return format!(
            "[{section}.{name}]: unknown table; [{section}] has no sub-tables, its keys are {}",
            valid.join(", ")
        );
    }
    if let Some(c) = closest(name, valid.iter().copied()) {
        return format!("[{section}] {name}: unknown key; did you mean `{c}`?");
    }
    if let Some(home) = raw::SECTIONS
        .iter()
        .find(|s| raw::section_keys(s).contains(&name))
    {
        return format!("[{section}] {name}: unknown key; `{name}` belongs in [{home}]");
    }
    format!(
        "[{section}] {name}: unknown key; valid keys: {}",
        valid.join(", ")
    )
}

/// `[section] key` (or a top-level `key`) for a path of names.
pub(super) fn label(path: &[String]) -> String {
    match path {
        [] => String::new(),
        [top] => top.clone(),
        [section, rest @ ..] => format!("[{section}] {}", rest.join(".")),
    }
}
