//! `[keys]`: action names, key specs, and keys bound to two actions.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use super::Validator;
use crate::config::keys::{Action, Key, KeyMap, parse_key};
use crate::config::load::Position;
use crate::config::raw::KeyList;
use crate::config::shape::closest;

/// Where each key of an action was written: the key, the spec as written,
/// and its span.
type Written = BTreeMap<Action, Vec<(Key, String, Range<usize>)>>;

/// An action holding a key, and where the key was written (`None`: its
/// default keys).
type Binding = (Action, Option<(String, Range<usize>)>);

impl Validator<'_> {
    pub(super) fn keys(&mut self, table: BTreeMap<Spanned<String>, Spanned<KeyList>>) -> KeyMap {
        let mut map = KeyMap::default();
        // Where each action's keys were written, in file order.
        let mut written: Written = BTreeMap::new();
        let mut entries: Vec<_> = table.into_iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (name, list) in entries {
            let Some(action) = Action::from_name(name.get_ref()) else {
                let names = Action::ALL.map(Action::name);
                let hint = match closest(name.get_ref(), names) {
                    Some(c) => format!("did you mean `{c}`?"),
                    None => format!("valid actions: {}", names.join(", ")),
                };
                self.bad(
                    Some(name.span()),
                    format!("[keys] {}: unknown action; {hint}", name.get_ref()),
                );
                continue;
            };
            let label = format!("[keys] {}", action.name());
            let specs: Vec<(String, Range<usize>)> = match list.get_ref() {
                KeyList::One(s) => vec![(s.clone(), list.span())],
                KeyList::Many(v) => v.iter().map(|s| (s.get_ref().clone(), s.span())).collect(),
            };
            if specs.is_empty() && action == Action::Quit {
                self.bad(
                    Some(list.span()),
                    format!("{label} = []: quit needs at least one key"),
                );
                continue;
            }
            let mut keys = Vec::new();
            let mut bound = Vec::new();
            for (spec, span) in specs {
                match parse_key(&spec) {
                    Ok(k) => {
                        if !keys.contains(&k) {
                            keys.push(k);
                            bound.push((k, spec, span));
                        }
                    }
                    Err(e) => self.bad(Some(span), format!("{label}: {e}")),
                }
            }
            map.bind(action, keys);
            written.insert(action, bound);
        }
        self.conflicts(&map, &written);
        map
    }

    /// A key bound to two actions is an error naming both (and where).
    fn conflicts(&mut self, map: &KeyMap, written: &Written) {
        let mut owner: BTreeMap<Key, Binding> = BTreeMap::new();
        let mut reported = Vec::new();
        for action in Action::ALL {
            for key in map.keys(action) {
                let here = written
                    .get(&action)
                    .and_then(|b| b.iter().find(|(k, _, _)| k == key))
                    .map(|(_, spec, span)| (spec.clone(), span.clone()));
                match owner.get(key) {
                    None => {
                        owner.insert(*key, (action, here));
                    }
                    Some((other, there)) if *other != action && !reported.contains(key) => {
                        reported.push(*key);
                        let a = (action, here);
                        let b = (*other, there.clone());
                        // Name them in file order; a default binding comes last.
                        let (first, second) = match (&a.1, &b.1) {
                            (Some(x), Some(y)) if x.1.start > y.1.start => (b, a),
                            (None, Some(_)) => (b, a),
                            _ => (a, b),
                        };
                        let spec = first
                            .1
                            .as_ref()
                            .map_or_else(|| key.to_string(), |s| s.0.clone());
                        let describe =
                            |(act, at): &(Action, Option<(String, Range<usize>)>)| match at {
                                Some((_, span)) => {
                                    format!(
                                        "{} (line {})",
                                        act.name(),
                                        Position::of(self.text, span.start).line
                                    )
                                }
                                None => format!(
                                    "{} (its default; bind {} to other keys too)",
                                    act.name(),
                                    act.name()
                                ),
                            };
                        let msg = format!(
                            "[keys] `{spec}` is bound to both {} and {}",
                            describe(&first),
                            describe(&second)
                        );
                        let span = second.1.as_ref().or(first.1.as_ref()).map(|s| s.1.clone());
                        self.bad(span, msg);
                    }
                    Some(_) => {}
                }
            }
        }
    }
}
