//! A message delay distribution (`[network] latency`, a link's `latency`, a `network`
//! event's `latency`): uniform, as a `["1ms", "5ms"]` range (what every scenario wrote
//! before distributions existed, and still the default), or a table naming a `dist`:
//!
//! | `dist` | fields | a delay is |
//! |---|---|---|
//! | `uniform` | `min`, `max` | uniform in `min..=max` (the same as `[min, max]`) |
//! | `exponential` | `min = "0s"`, `mean`, `max` | `min` plus an exponential draw of mean `mean` |
//! | `log-normal` | `min = "0s"`, `median`, `sigma`, `max` | `min + median * e^(sigma * Z)`, `Z` standard normal |
//! | `pareto` | `scale`, `shape`, `max` | `scale / U^(1 / shape)`, `U` uniform in (0, 1]: at least `scale`, a power-law tail |
//! | `spikes` | `base`, `probability`, `spike` | a draw of `base` (a range or a table), plus, with chance `probability`, an extra delay uniform in the `spike` range |
//!
//! Every distribution but `spikes` is capped at `max` (a draw above it is `max`), so a
//! delay always has a bound ([`Delay::max`]): the bound a protocol's declared
//! `max_latency` is checked against. The sampler is [`Delay::sample`]
//! (the engine's `tenure_sim::net::sample` calls it); a uniform delay draws exactly what the range did before
//! (one `duration_between`), so no existing run changed.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{format_duration, HumanDuration, Rng};

use crate::model::Latency;

/// A message delay distribution. See the module docs for the fields.
#[derive(Clone, Debug, PartialEq)]
pub enum Delay {
    /// Uniform in `min..=max`: written `["1ms", "5ms"]`.
    Uniform(Latency),
    /// `min` plus an exponential draw of mean `mean`, capped at `max`.
    Exponential {
        min: Duration,
        mean: Duration,
        max: Duration,
    },
    /// `min + median * e^(sigma * Z)` with `Z` standard normal, capped at `max`.
    LogNormal {
        min: Duration,
        median: Duration,
        sigma: f64,
        max: Duration,
    },
    /// Pareto (type I): `scale / U^(1 / shape)`, capped at `max`. Its mean is
    /// `shape * scale / (shape - 1)` for `shape > 1` (before the cap); below that the
    /// tail is so heavy only the cap bounds it.
    Pareto {
        scale: Duration,
        shape: f64,
        max: Duration,
    },
    /// A draw of `base`, plus with chance `probability` an extra delay uniform in
    /// `spike` (a GC on a switch, a retransmission, a route flap).
    Spikes {
        base: Box<Delay>,
        probability: f64,
        spike: Latency,
    },
}

impl Default for Delay {
    fn default() -> Self {
        Delay::Uniform(Latency::default())
    }
}

impl From<Latency> for Delay {
    fn from(l: Latency) -> Delay {
        Delay::Uniform(l)
    }
}

impl Delay {
    /// Uniform in `min..=max`.
    pub fn uniform(min: Duration, max: Duration) -> Delay {
        Delay::Uniform(Latency::new(min, max))
    }

    /// One delay drawn from this distribution with `rng`.
    ///
    /// A uniform delay is one `duration_between` draw, exactly what a `[min, max]` range
    /// drew before distributions existed, so every existing run is unchanged. The others
    /// turn uniforms into their shape (`U` is uniform in `(0, 1]`, from 53 random bits):
    /// exponential `min - mean * ln U`; log-normal `min + median * e^(sigma * Z)` with `Z`
    /// from Box-Muller (two draws); Pareto `scale / U^(1 / shape)`; each capped at `max`.
    /// Spikes draw their base, then a `chance(probability)`, then (when it strikes) the
    /// spike's extra delay.
    pub fn sample(&self, rng: &mut dyn Rng) -> Duration {
        fn unit(rng: &mut dyn Rng) -> f64 {
            ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
        }
        fn capped(floor: Duration, extra_secs: f64, max: Duration) -> Duration {
            let extra = Duration::try_from_secs_f64(extra_secs.max(0.0)).unwrap_or(max);
            floor.saturating_add(extra).min(max)
        }
        match self {
            Delay::Uniform(l) => rng.duration_between(l.min, l.max),
            Delay::Exponential { min, mean, max } => {
                capped(*min, -unit(rng).ln() * mean.as_secs_f64(), *max)
            }
            Delay::LogNormal {
                min,
                median,
                sigma,
                max,
            } => {
                let (u1, u2) = (unit(rng), unit(rng));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                capped(*min, median.as_secs_f64() * (sigma * z).exp(), *max)
            }
            Delay::Pareto { scale, shape, max } => {
                let x = scale.as_secs_f64() / unit(rng).powf(1.0 / shape);
                capped(Duration::ZERO, x, *max).max(*scale)
            }
            Delay::Spikes {
                base,
                probability,
                spike,
            } => {
                let d = base.sample(rng);
                if rng.chance(*probability) {
                    d.saturating_add(rng.duration_between(spike.min, spike.max))
                } else {
                    d
                }
            }
        }
    }

    /// The longest delay it can draw.
    pub fn max(&self) -> Duration {
        match self {
            Delay::Uniform(l) => l.max,
            Delay::Exponential { max, .. }
            | Delay::LogNormal { max, .. }
            | Delay::Pareto { max, .. } => *max,
            Delay::Spikes { base, spike, .. } => base.max().saturating_add(spike.max),
        }
    }

    /// The uniform range, if this is one.
    pub fn as_uniform(&self) -> Option<Latency> {
        match self {
            Delay::Uniform(l) => Some(*l),
            _ => None,
        }
    }

    /// The `dist` name as written in files.
    pub fn name(&self) -> &'static str {
        match self {
            Delay::Uniform(_) => "uniform",
            Delay::Exponential { .. } => "exponential",
            Delay::LogNormal { .. } => "log-normal",
            Delay::Pareto { .. } => "pareto",
            Delay::Spikes { .. } => "spikes",
        }
    }

    /// What makes no sense in it (the messages of a file's errors).
    pub fn check(&self) -> Result<(), String> {
        let capped = |floor: Duration, what: &str, max: Duration| {
            if floor > max {
                Err(format!(
                    "`{what}` {} is above `max` {}",
                    format_duration(floor),
                    format_duration(max)
                ))
            } else {
                Ok(())
            }
        };
        match self {
            Delay::Uniform(l) => capped(l.min, "min", l.max),
            Delay::Exponential { min, mean, max } => {
                if mean.is_zero() {
                    return Err("`mean` must be above zero".into());
                }
                capped(*min, "min", *max)
            }
            Delay::LogNormal {
                min,
                median,
                sigma,
                max,
            } => {
                if median.is_zero() {
                    return Err("`median` must be above zero".into());
                }
                if !sigma.is_finite() || *sigma < 0.0 || *sigma > 10.0 {
                    return Err(format!(
                        "`sigma` {} is out of range; write a number from 0 to 10",
                        crate::serde_util::number(*sigma)
                    ));
                }
                capped(*min, "min", *max)
            }
            Delay::Pareto { scale, shape, max } => {
                if scale.is_zero() {
                    return Err("`scale` must be above zero (it is the shortest delay)".into());
                }
                if !shape.is_finite() || *shape <= 0.0 || *shape > 100.0 {
                    return Err(format!(
                        "`shape` {} is out of range; write a number above 0, at most 100 (1.5 is a heavy tail)",
                        crate::serde_util::number(*shape)
                    ));
                }
                capped(*scale, "scale", *max)
            }
            Delay::Spikes {
                base, probability, ..
            } => {
                if !(0.0..=1.0).contains(probability) {
                    return Err(format!(
                        "`probability` {} is not a probability; write a number from 0 to 1",
                        crate::serde_util::number(*probability)
                    ));
                }
                if matches!(**base, Delay::Spikes { .. }) {
                    return Err("a `spikes` base cannot itself be `spikes`".into());
                }
                base.check().map_err(|e| format!("in `base`: {e}"))
            }
        }
    }
}

/// The table form, as read and written.
#[derive(Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "kebab-case", deny_unknown_fields)]
enum Table {
    Uniform {
        min: HumanDuration,
        max: HumanDuration,
    },
    Exponential {
        #[serde(default = "zero")]
        min: HumanDuration,
        mean: HumanDuration,
        max: HumanDuration,
    },
    LogNormal {
        #[serde(default = "zero")]
        min: HumanDuration,
        median: HumanDuration,
        sigma: f64,
        max: HumanDuration,
    },
    Pareto {
        scale: HumanDuration,
        shape: f64,
        max: HumanDuration,
    },
    Spikes {
        base: Delay,
        probability: f64,
        spike: Latency,
    },
}

fn zero() -> HumanDuration {
    HumanDuration(Duration::ZERO)
}

impl Serialize for Delay {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = HumanDuration;
        match self.clone() {
            Delay::Uniform(l) => l.serialize(s),
            Delay::Exponential { min, mean, max } => Table::Exponential {
                min: h(min),
                mean: h(mean),
                max: h(max),
            }
            .serialize(s),
            Delay::LogNormal {
                min,
                median,
                sigma,
                max,
            } => Table::LogNormal {
                min: h(min),
                median: h(median),
                sigma,
                max: h(max),
            }
            .serialize(s),
            Delay::Pareto { scale, shape, max } => Table::Pareto {
                scale: h(scale),
                shape,
                max: h(max),
            }
            .serialize(s),
            Delay::Spikes {
                base,
                probability,
                spike,
            } => Table::Spikes {
                base: *base,
                probability,
                spike,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Delay {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Delay;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a latency: a range [\"1ms\", \"5ms\"] or a table with `dist` (uniform, exponential, log-normal, pareto, spikes)"
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Delay, A::Error> {
                Latency::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Delay::Uniform)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Delay, A::Error> {
                let t = Table::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                let delay = match t {
                    Table::Uniform { min, max } => {
                        if min.0 > max.0 {
                            return Err(serde::de::Error::custom(format!(
                                "the minimum `{}` is above the maximum `{}`",
                                format_duration(min.0),
                                format_duration(max.0)
                            )));
                        }
                        Delay::uniform(min.0, max.0)
                    }
                    Table::Exponential { min, mean, max } => Delay::Exponential {
                        min: min.0,
                        mean: mean.0,
                        max: max.0,
                    },
                    Table::LogNormal {
                        min,
                        median,
                        sigma,
                        max,
                    } => Delay::LogNormal {
                        min: min.0,
                        median: median.0,
                        sigma,
                        max: max.0,
                    },
                    Table::Pareto { scale, shape, max } => Delay::Pareto {
                        scale: scale.0,
                        shape,
                        max: max.0,
                    },
                    Table::Spikes {
                        base,
                        probability,
                        spike,
                    } => Delay::Spikes {
                        base: Box::new(base),
                        probability,
                        spike,
                    },
                };
                delay.check().map_err(serde::de::Error::custom)?;
                Ok(delay)
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_range_is_uniform_and_tables_name_their_distribution() {
        let d: Delay = serde_json::from_str(r#"["1ms","5ms"]"#).unwrap();
        assert_eq!(d, Delay::uniform(ms(1), ms(5)));
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"["1ms","5ms"]"#);
        let d: Delay =
            serde_json::from_str(r#"{"dist":"pareto","scale":"2ms","shape":1.5,"max":"2s"}"#)
                .unwrap();
        assert_eq!(
            d,
            Delay::Pareto {
                scale: ms(2),
                shape: 1.5,
                max: ms(2000)
            }
        );
        assert_eq!(d.max(), ms(2000));
        let d: Delay = serde_json::from_str(
            r#"{"dist":"spikes","base":{"dist":"exponential","mean":"3ms","max":"50ms"},"probability":0.01,"spike":["200ms","1s"]}"#,
        )
        .unwrap();
        assert_eq!(d.max(), ms(1050));
        let back: Delay = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        let d: Delay =
            serde_json::from_str(r#"{"dist":"log-normal","median":"4ms","sigma":0.8,"max":"1s"}"#)
                .unwrap();
        assert_eq!(
            serde_json::from_value::<Delay>(serde_json::to_value(&d).unwrap()).unwrap(),
            d
        );
    }

    #[test]
    fn nonsense_is_refused_with_its_reason() {
        let cases = [
            (
                r#"{"dist":"pareto","scale":"2ms","shape":-1,"max":"2s"}"#,
                "`shape` -1",
            ),
            (
                r#"{"dist":"pareto","scale":"0s","shape":1.5,"max":"2s"}"#,
                "`scale` must be above zero",
            ),
            (
                r#"{"dist":"pareto","scale":"-2ms","shape":1.5,"max":"2s"}"#,
                "negative",
            ),
            (
                r#"{"dist":"pareto","scale":"3s","shape":1.5,"max":"2s"}"#,
                "above `max`",
            ),
            (
                r#"{"dist":"pareto","scale":"2ms","shape":1.5}"#,
                "missing field `max`",
            ),
            (
                r#"{"dist":"exponential","mean":"0s","max":"2s"}"#,
                "`mean` must be above zero",
            ),
            (
                r#"{"dist":"log-normal","median":"1ms","sigma":-0.5,"max":"2s"}"#,
                "`sigma` -0.5",
            ),
            (
                r#"{"dist":"spikes","base":["1ms","2ms"],"probability":1.5,"spike":["1s","2s"]}"#,
                "not a probability",
            ),
            (r#"{"dist":"gauss","max":"2s"}"#, "unknown variant `gauss`"),
            (
                r#"{"dist":"uniform","min":"5ms","max":"1ms"}"#,
                "above the maximum",
            ),
            (
                r#"{"dist":"pareto","scale":"2ms","shape":1.5,"max":"2s","tail":3}"#,
                "unknown field `tail`",
            ),
        ];
        for (text, says) in cases {
            let err = serde_json::from_str::<Delay>(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
