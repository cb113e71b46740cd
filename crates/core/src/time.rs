//! Time types. [`SimTime`] is true time, which only the simulator knows; a node only
//! ever sees [`LocalTime`] readings of its own (possibly skewed, drifting, jumping) clock.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// True time since the start of a run, in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn from_duration(d: Duration) -> SimTime {
        SimTime(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn saturating_sub(self, other: SimTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(other.0))
    }
}

impl Add<Duration> for SimTime {
    type Output = SimTime;
    fn add(self, d: Duration) -> SimTime {
        SimTime(
            self.0
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SimTime {
    /// Seconds with millisecond precision and microseconds after an underscore:
    /// `12.345_678s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0 / 1_000;
        write!(
            f,
            "{}.{:03}_{:03}s",
            us / 1_000_000,
            (us / 1_000) % 1_000,
            us % 1_000
        )
    }
}

/// A reading of a node's own clock, in nanoseconds since that clock's epoch. Monotonic
/// readings never go back; wall readings can (a clock step, NTP correction).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LocalTime(pub i64);

impl LocalTime {
    pub fn as_nanos(self) -> i64 {
        self.0
    }
    /// How far `later` is after `self`; zero if it is not after.
    pub fn until(self, later: LocalTime) -> Duration {
        Duration::from_nanos(later.0.saturating_sub(self.0).max(0) as u64)
    }
}

impl Add<Duration> for LocalTime {
    type Output = LocalTime;
    fn add(self, d: Duration) -> LocalTime {
        LocalTime(
            self.0
                .saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
        )
    }
}

impl Sub<Duration> for LocalTime {
    type Output = LocalTime;
    fn sub(self, d: Duration) -> LocalTime {
        LocalTime(
            self.0
                .saturating_sub(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
        )
    }
}

impl fmt::Debug for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let us = self.0.unsigned_abs() / 1_000;
        write!(f, "{sign}{}.{:06}s", us / 1_000_000, us % 1_000_000)
    }
}

/// Parses a human duration: `"150ms"`, `"2s"`, `"1.5s"`, `"1m"`, `"250us"`, `"10ns"`,
/// `"1h"`, `"0"`. Negative durations are an error.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.starts_with('-') {
        return Err(format!(
            "`{text}` is negative; durations must be zero or more"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .ok_or_else(|| format!("`{text}` has no unit; write e.g. \"150ms\" or \"2s\""))?;
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number; write e.g. \"150ms\""))?;
    let scale = match unit.trim() {
        "ns" => 1e0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(format!(
                "`{text}` has unknown unit `{other}`; use ns, us, ms, s, m or h"
            ))
        }
    };
    let nanos = (value * scale).round();
    if !nanos.is_finite() || nanos > 1e18 {
        return Err(format!("`{text}` is too long"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// Formats a duration the way [`parse_duration`] reads it, as short as is exact.
pub fn format_duration(d: Duration) -> String {
    let n = d.as_nanos();
    if n == 0 {
        return "0s".to_string();
    }
    for (unit, scale) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if n.is_multiple_of(scale) {
            return format!("{}{unit}", n / scale);
        }
    }
    format!("{n}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        assert_eq!(parse_duration("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("-5s").unwrap_err().contains("negative"));
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_duration("5 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        for d in ["150ms", "2s", "1m", "250us", "7ns", "1h", "1500ms"] {
            let parsed = parse_duration(d).unwrap();
            assert_eq!(parse_duration(&format_duration(parsed)), Ok(parsed));
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn sim_time_displays_seconds() {
        assert_eq!(SimTime(12_345_678_000).to_string(), "12.345_678s");
        assert_eq!(LocalTime(-1_500_000_000).0, -1_500_000_000);
        assert_eq!(format!("{:?}", LocalTime(-1_500_000_000)), "-1.500000s");
    }
}

/// A duration written as a human string in scenario files and parameters (`"150ms"`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct HumanDuration(pub Duration);

impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text)
            .map(HumanDuration)
            .map_err(serde::de::Error::custom)
    }
}

/// A signed duration in nanoseconds (clock offsets and jumps): `"-3s"`, `"+250ms"`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SignedDuration(pub i64);

/// As written in files (`-20.855s`), so a derived `Debug` that holds one (a message in
/// a trace or a narrative) shows a duration, not nanoseconds.
impl fmt::Debug for SignedDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl SignedDuration {
    pub fn parse(text: &str) -> Result<SignedDuration, String> {
        let t = text.trim();
        let (neg, rest) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let d = parse_duration(rest)?;
        let n = i64::try_from(d.as_nanos()).map_err(|_| format!("`{text}` is too long"))?;
        Ok(SignedDuration(if neg { -n } else { n }))
    }
}

impl fmt::Display for SignedDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        write!(
            f,
            "{sign}{}",
            format_duration(Duration::from_nanos(self.0.unsigned_abs()))
        )
    }
}

impl Serialize for SignedDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for SignedDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SignedDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod human_tests {
    use super::*;

    #[test]
    fn human_and_signed_durations_round_trip_through_serde() {
        let h: HumanDuration = serde_json::from_str("\"150ms\"").unwrap();
        assert_eq!(h.0, Duration::from_millis(150));
        assert_eq!(serde_json::to_string(&h).unwrap(), "\"150ms\"");
        let s: SignedDuration = serde_json::from_str("\"-3s\"").unwrap();
        assert_eq!(s.0, -3_000_000_000);
        assert_eq!(s.to_string(), "-3s");
        assert!(serde_json::from_str::<HumanDuration>("\"-3s\"").is_err());
    }
}
