//! Serde helpers for scenario fields: human durations, probabilities, drift rates, and
//! conversions between TOML and the JSON that raw parameter tables are kept in.

use crate::limits::{MAX_DRIFT, MIN_DRIFT};
use serde::{Deserialize, Deserializer};

/// `std::time::Duration` written as a human string (`"150ms"`).
pub mod human {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::time::Duration;
    use tenure_core::HumanDuration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        HumanDuration(*d).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        HumanDuration::deserialize(d).map(|h| h.0)
    }
}

/// An optional `std::time::Duration` written as a human string (`"150ms"`).
pub mod opt_human {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::time::Duration;
    use tenure_core::HumanDuration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        d.map(HumanDuration).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        HumanDuration::deserialize(d).map(|h| Some(h.0))
    }
}

/// `v` as a person would write it: plain decimals for ordinary magnitudes, scientific
/// notation for huge or tiny ones (`{}` writes 1e300 as 301 digits).
pub(crate) fn number(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-6..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn check_probability<E: serde::de::Error>(p: f64) -> Result<f64, E> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(E::custom(format!(
            "{} is not a probability; write a number from 0 to 1",
            number(p)
        )))
    }
}

/// A probability, `0..=1`.
pub fn probability<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    check_probability(f64::deserialize(d)?)
}

/// An optional probability, `0..=1`.
pub fn opt_probability<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    check_probability(f64::deserialize(d)?).map(Some)
}

/// A clock drift rate from [`MIN_DRIFT`] to [`MAX_DRIFT`] (a clock that runs backwards
/// or stops is not a clock, and one a thousand times fast fires its timers in a loop).
pub fn drift<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if (MIN_DRIFT..=MAX_DRIFT).contains(&v) {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "drift {} is out of range; write a fraction from {MIN_DRIFT} to {MAX_DRIFT} (0.01 runs 1% fast)",
            number(v)
        )))
    }
}

/// The seed: a TOML integer, or a decimal string for seeds above `i64::MAX` (TOML
/// integers are signed 64-bit).
pub fn seed<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a seed: an integer from 0 up, or a decimal string")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("seed {v} is negative")))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
            v.parse()
                .map_err(|_| E::custom(format!("seed \"{v}\" is not a decimal u64")))
        }
    }
    d.deserialize_any(Visitor)
}

/// A TOML value as JSON. Datetimes become strings; non-finite floats are an error
/// (JSON cannot hold them), reported with the dotted path below the converted value.
pub fn toml_to_json(v: &toml::Value) -> Result<serde_json::Value, (String, String)> {
    use serde_json::Value as J;
    Ok(match v {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => J::from(*i),
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            None => {
                return Err((
                    String::new(),
                    format!("{f} is not a finite number; parameters must be finite"),
                ))
            }
        },
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(toml_to_json(item).map_err(|(p, m)| (format!("[{i}]{p}"), m))?);
            }
            J::Array(out)
        }
        toml::Value::Table(t) => table_to_json(t)?,
    })
}

/// A TOML table as a JSON object (see [`toml_to_json`]).
pub fn table_to_json(t: &toml::Table) -> Result<serde_json::Value, (String, String)> {
    let mut map = serde_json::Map::new();
    for (k, item) in t {
        let value = toml_to_json(item).map_err(|(p, m)| (format!(".{k}{p}"), m))?;
        map.insert(k.clone(), value);
    }
    Ok(serde_json::Value::Object(map))
}

/// A JSON value as an inline TOML value; `None` for `null`, which TOML cannot write
/// (so a null entry is left out).
pub fn json_to_toml(v: &serde_json::Value) -> Option<toml_edit::Value> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => return None,
        J::Bool(b) => (*b).into(),
        J::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            // u64 above i64::MAX, or a float: TOML only has i64 and f64.
            None => n.as_f64().unwrap_or(f64::NAN).into(),
        },
        J::String(s) => s.as_str().into(),
        J::Array(items) => {
            let mut a = toml_edit::Array::new();
            for item in items.iter().filter_map(json_to_toml) {
                a.push(item);
            }
            toml_edit::Value::Array(a)
        }
        J::Object(map) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, item) in map {
                if let Some(item) = json_to_toml(item) {
                    t.insert(k, item);
                }
            }
            toml_edit::Value::InlineTable(t)
        }
    })
}

/// A JSON object as a (non-inline) TOML table: nested objects become sub-tables.
/// Anything but an object gives an empty table.
pub fn json_to_table(v: &serde_json::Value) -> toml_edit::Table {
    let mut t = toml_edit::Table::new();
    if let serde_json::Value::Object(map) = v {
        for (k, item) in map {
            match item {
                serde_json::Value::Object(_) => {
                    let mut sub = json_to_table(item);
                    sub.set_implicit(false);
                    t.insert(k, toml_edit::Item::Table(sub));
                }
                other => {
                    if let Some(value) = json_to_toml(other) {
                        t.insert(k, toml_edit::Item::Value(value));
                    }
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_converts_to_json_and_back() {
        let t: toml::Table = toml::from_str(
            r#"a = 1
b = [1.5, "x", true]
c = { d = "e" }
when = 1979-05-27T07:32:00Z
"#,
        )
        .unwrap();
        let json = table_to_json(&t).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"a": 1, "b": [1.5, "x", true], "c": {"d": "e"},
                "when": "1979-05-27T07:32:00Z"})
        );
        let mut doc = toml_edit::DocumentMut::new();
        *doc.as_table_mut() = json_to_table(&json);
        let back: toml::Table = toml::from_str(&doc.to_string()).unwrap();
        let mut expected = t.clone();
        expected.insert("when".into(), "1979-05-27T07:32:00Z".into());
        assert_eq!(back, expected);
    }

    #[test]
    fn non_finite_floats_name_their_path() {
        let t: toml::Table = toml::from_str("x = [1.0, nan]").unwrap();
        let (path, message) = table_to_json(&t).unwrap_err();
        assert_eq!(path, ".x[1]");
        assert!(message.contains("finite"), "{message}");
    }

    #[test]
    fn probabilities_and_drift_are_range_checked() {
        #[derive(serde::Deserialize, Debug)]
        struct P {
            #[serde(deserialize_with = "probability")]
            p: f64,
            #[serde(deserialize_with = "drift")]
            d: f64,
            #[serde(deserialize_with = "seed")]
            s: u64,
        }
        let ok: P =
            serde_json::from_str(r#"{"p": 1, "d": -0.5, "s": "18446744073709551615"}"#).unwrap();
        assert_eq!((ok.p, ok.d, ok.s), (1.0, -0.5, u64::MAX));
        let err = serde_json::from_str::<P>(r#"{"p": 1.5, "d": 0, "s": 1}"#).unwrap_err();
        assert!(err.to_string().contains("not a probability"), "{err}");
        let err = serde_json::from_str::<P>(r#"{"p": 0, "d": -1, "s": 1}"#).unwrap_err();
        assert!(err.to_string().contains("drift -1"), "{err}");
        for d in ["1e300", "9223372036854775807", "-0.999", "101"] {
            let err =
                serde_json::from_str::<P>(&format!(r#"{{"p": 0, "d": {d}, "s": 1}}"#)).unwrap_err();
            assert!(err.to_string().contains("out of range"), "{d}: {err}");
        }
        let err = serde_json::from_str::<P>(r#"{"p": 0, "d": 0, "s": -1}"#).unwrap_err();
        assert!(err.to_string().contains("negative"), "{err}");
    }
}

#[cfg(test)]
mod number_tests {
    #[test]
    fn huge_and_tiny_numbers_are_written_short() {
        assert_eq!(super::number(1e300), "1e300");
        assert_eq!(super::number(-2.5e-9), "-2.5e-9");
        assert_eq!(super::number(0.25), "0.25");
        assert_eq!(super::number(7.0), "7");
        assert_eq!(super::number(0.0), "0");
    }
}
