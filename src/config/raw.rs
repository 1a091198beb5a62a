//! The config file as written: serde structs that mirror the TOML, every
//! key optional and spanned so the validator (`load.rs`) can point at it.
//! Serde checks the shape (unknown keys, TOML types); meaning and ranges
//! are checked in `load.rs`, where every problem can be collected.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use toml::Spanned;

pub(crate) type S<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of config sections")]
pub(crate) struct RawConfig {
    pub version: S<i64>,
    pub sampling: Option<RawSampling>,
    pub thresholds: Option<RawThresholds>,
    pub alerts: Option<RawAlerts>,
    pub display: Option<RawDisplay>,
    pub keys: Option<BTreeMap<Spanned<String>, Spanned<KeyList>>>,
    pub record: Option<RawRecord>,
    pub serve: Option<RawServe>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [sampling] table")]
pub(crate) struct RawSampling {
    pub interval: S<Text<DurationKind>>,
    pub fast_interval: S<Text<DurationOrOffKind>>,
    pub slow_interval: S<Text<DurationOrOffKind>>,
    pub pcie_interval: S<Text<DurationOrOffKind>>,
    pub energy_interval: S<Text<DurationOrOffKind>>,
    pub proc_util_interval: S<Text<DurationKind>>,
    pub proc_util_shown_interval: S<Text<DurationKind>>,
    pub history: S<Text<DurationKind>>,
    pub exited_keep: S<Text<DurationKind>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [thresholds] table")]
pub(crate) struct RawThresholds {
    pub memory_warn: S<f64>,
    pub memory_crit: S<f64>,
    pub temperature_warn: S<f64>,
    pub temperature_crit: S<f64>,
    pub power_warn: S<f64>,
    pub power_crit: S<f64>,
    pub utilization_warn: S<f64>,
    pub utilization_crit: S<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [alerts] table")]
pub(crate) struct RawAlerts {
    pub bell: S<bool>,
    pub command: S<Argv>,
    pub forecast_below: S<Text<DurationOrOffKind>>,
    pub leak_min_rate: S<Text<RateKind>>,
    pub leak_min_duration: S<Text<DurationKind>>,
    pub burst_level: S<Text<PercentOrOffKind>>,
    pub burst_interval: S<Text<DurationKind>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [display] table")]
pub(crate) struct RawDisplay {
    pub theme: S<Text<ThemeKind>>,
    pub color: S<Text<ColorKind>>,
    pub columns: S<Vec<Spanned<Text<ColumnKind>>>>,
    pub mouse: S<bool>,
    pub ascii: S<bool>,
    pub chart_rows: S<i64>,
    pub events: S<Text<EventsKind>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [record] table")]
pub(crate) struct RawRecord {
    pub dir: S<String>,
    pub max_size: S<Text<SizeKind>>,
    pub compress: S<bool>,
    pub sync_every: S<Text<DurationKind>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "the [serve] table")]
pub(crate) struct RawServe {
    pub listen: S<String>,
    pub hostname_label: S<String>,
    pub max_process_series: S<i64>,
}

/// A scalar as written, before its unit is read: a string, or a number
/// where the kind allows one (`max_size = 4096`, `color = 256`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Str(String),
    Num(f64),
}

/// What a [`Text`] accepts, for the "expected ..." of a wrong type.
pub(crate) trait Kind {
    const EXPECTING: &'static str;
    const NUMBERS: bool;
    const STRINGS: bool = true;
}

macro_rules! kinds {
    ($($name:ident: $expecting:literal, numbers = $num:literal $(, strings = $str:literal)?;)*) => {$(
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub(crate) struct $name;
        impl Kind for $name {
            const EXPECTING: &'static str = $expecting;
            const NUMBERS: bool = $num;
            $(const STRINGS: bool = $str;)?
        }
    )*};
}

kinds! {
    DurationKind: "a duration such as \"500ms\", \"1s\" or \"10m\"", numbers = false;
    DurationOrOffKind: "a duration such as \"500ms\", \"1s\" or \"10m\", or \"off\"", numbers = false;
    RateKind: "a rate such as \"4MiB/s\"", numbers = false;
    SizeKind: "a size such as \"512MiB\" or \"1GiB\", or a number of bytes", numbers = true;
    PercentOrOffKind: "a percentage such as 90, or \"off\"", numbers = true;
    ThemeKind: "\"dark\", \"light\" or \"mono\"", numbers = false;
    ColorKind: "\"auto\", 16, 256 or \"truecolor\"", numbers = true;
    EventsKind: "\"auto\", \"open\" or \"closed\"", numbers = false;
    ColumnKind: "a column name such as \"pid\"", numbers = false;
}

/// A string or number value of kind `K`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Text<K> {
    pub value: Scalar,
    kind: PhantomData<K>,
}

impl<'de, K: Kind> Deserialize<'de> for Text<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<K>(PhantomData<K>);
        impl<K: Kind> V<K> {
            fn num<E: de::Error>(v: f64, unexp: de::Unexpected<'_>) -> Result<Text<K>, E> {
                if K::NUMBERS {
                    Ok(Text {
                        value: Scalar::Num(v),
                        kind: PhantomData,
                    })
                } else {
                    Err(E::invalid_type(unexp, &K::EXPECTING))
                }
            }
        }
        impl<K: Kind> Visitor<'_> for V<K> {
            type Value = Text<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if K::STRINGS {
                    Ok(Text {
                        value: Scalar::Str(v.to_owned()),
                        kind: PhantomData,
                    })
                } else {
                    Err(E::invalid_type(de::Unexpected::Str(v), &K::EXPECTING))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Self::num(v as f64, de::Unexpected::Signed(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Self::num(v as f64, de::Unexpected::Unsigned(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Self::num(v, de::Unexpected::Float(v))
            }
        }
        d.deserialize_any(V::<K>(PhantomData))
    }
}

/// `command = ["notify-send", "GPU alert"]`: a program and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Argv(pub Vec<String>);

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Argv;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an array of strings, the program and its arguments, such as [\"notify-send\", \"GPU alert\"]",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(Argv(v))
            }
        }
        d.deserialize_seq(V)
    }
}

/// `quit = ["q", "ctrl-c"]` or `quit = "q"`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KeyList {
    One(String),
    Many(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for KeyList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key such as \"q\", or an array of keys such as [\"q\", \"ctrl-c\"]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyList, E> {
                Ok(KeyList::One(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyList, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<Spanned<String>>()? {
                    v.push(s);
                }
                Ok(KeyList::Many(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// The field names serde accepts for `T` (a struct), taken from its
/// derived `Deserialize`, so the list of valid keys has one source.
pub(crate) fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("probe")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// The keys each section accepts (`""` = the top level).
pub(crate) fn section_keys(section: &str) -> &'static [&'static str] {
    match section {
        "" => fields_of::<RawConfig>(),
        "sampling" => fields_of::<RawSampling>(),
        "thresholds" => fields_of::<RawThresholds>(),
        "alerts" => fields_of::<RawAlerts>(),
        "display" => fields_of::<RawDisplay>(),
        "record" => fields_of::<RawRecord>(),
        "serve" => fields_of::<RawServe>(),
        _ => &[],
    }
}

/// The sections that are tables of fixed keys (not `[keys]`).
pub(crate) const SECTIONS: [&str; 6] = [
    "sampling",
    "thresholds",
    "alerts",
    "display",
    "record",
    "serve",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_come_from_the_structs() {
        assert_eq!(
            section_keys(""),
            [
                "version",
                "sampling",
                "thresholds",
                "alerts",
                "display",
                "keys",
                "record",
                "serve"
            ]
        );
        assert_eq!(
            section_keys("serve"),
            ["listen", "hostname_label", "max_process_series"]
        );
        assert!(section_keys("sampling").contains(&"fast_interval"));
        for s in SECTIONS {
            assert!(!section_keys(s).is_empty(), "{s}");
            assert!(section_keys("").contains(&s), "{s}");
        }
    }
}
