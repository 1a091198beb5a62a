//! `config/default.toml`: it is the default config, and it lists and
//! documents every key, action and column.

use super::*;
use crate::config::Column;
use crate::config::keys::Action;
use crate::config::raw::{SECTIONS, section_keys};

#[test]
fn the_default_file_is_the_default_config() {
    assert_eq!(
        parse(DEFAULT_TOML, "default.toml").unwrap(),
        Config::default()
    );
}

#[test]
fn an_empty_file_is_the_default_config() {
    assert_eq!(parse("", "e.toml").unwrap(), Config::default());
    assert_eq!(
        parse("# nothing\n\n[sampling]\n", "e.toml").unwrap(),
        Config::default()
    );
}

#[test]
fn the_default_file_lists_every_action_and_column() {
    let doc: toml::Table = toml::from_str(DEFAULT_TOML).unwrap();
    let keys = doc["keys"].as_table().unwrap();
    for a in Action::ALL {
        let listed = keys.get(a.name()).and_then(|v| v.as_array());
        let listed: Vec<&str> = listed
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(listed, a.default_keys(), "{a:?}");
    }
    assert_eq!(keys.len(), Action::ALL.len());
    let columns: Vec<&str> = doc["display"]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(columns, Column::ALL.map(Column::name));
}

/// Every key the schema accepts appears in the default file (`dir` as a
/// commented-out example, since its default is "unset"), right after a
/// comment that documents it.
#[test]
fn the_default_file_documents_every_key() {
    let lines: Vec<&str> = DEFAULT_TOML.lines().collect();
    let mut keys: Vec<String> = section_keys("")
        .iter()
        .filter(|k| !SECTIONS.contains(k) && **k != "keys")
        .map(|k| k.to_string())
        .collect();
    for s in SECTIONS {
        keys.extend(section_keys(s).iter().map(|k| format!("[{s}] {k}")));
    }
    keys.extend(Action::ALL.map(|a| format!("[keys] {}", a.name())));
    let mut section = String::new();
    let mut documented = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if let Some(s) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = s.to_owned();
            continue;
        }
        let setting = t.strip_prefix("# ").unwrap_or(t);
        let Some((key, _)) = setting.split_once(" = ") else {
            continue;
        };
        if key.contains(' ') || setting.starts_with("action") {
            continue;
        }
        // A comment above it, or above the group of settings it is in.
        let above = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| l.starts_with('#') || !l.contains(" = "))
            .unwrap_or_default();
        assert!(
            above.starts_with('#'),
            "line {}: `{key}` has no comment above it",
            i + 1
        );
        documented.push(if section.is_empty() {
            key.to_owned()
        } else {
            format!("[{section}] {key}")
        });
    }
    for k in &keys {
        assert!(
            documented.contains(k),
            "{k} is not documented in config/default.toml"
        );
    }
    for d in &documented {
        assert!(
            keys.contains(d),
            "default.toml documents {d}, which the schema does not accept"
        );
    }
}
