//! What a protocol declares about itself beyond its state machine: the environment it is
//! designed for ([`Assumptions`]) and the properties it promises, with bounds derived
//! from its own parameters ([`Promise`]).
//!
//! A correct variant that fails within its assumptions is a bug (in the protocol model or
//! in tenure), never a lesson. Fuzz profiles draw within the target's assumptions unless
//! asked to go beyond them, and a failure beyond them names the assumption it broke.

use crate::format_duration;
use std::fmt;
use std::time::Duration;

/// A declared limit and why it is the limit (in terms of the protocol's parameters).
/// Built with [`Limit::new`]; `#[non_exhaustive]`, so a field added later is not a
/// breaking change.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Limit<T> {
    pub value: T,
    /// E.g. "pauses must end before the lease's validity margin: ttl 2s x drift 1%".
    pub why: String,
}

impl<T> Limit<T> {
    pub fn new(value: T, why: impl Into<String>) -> Limit<T> {
        Limit {
            value,
            why: why.into(),
        }
    }
}

/// The environment a protocol is designed for. `None` means "any": the protocol's
/// promises do not depend on it.
///
/// Built with [`Assumptions::new`] (assumes nothing) and one builder per field; each
/// takes a [`Limit`] or an `Option<Limit>` (`None` leaves the field unset). The fields are
/// public for reading. `#[non_exhaustive]`: a field added later is not a breaking change.
///
/// ```
/// use std::time::Duration;
/// use tenure_core::{Assumptions, Limit};
///
/// let a = Assumptions::new()
///     .with_max_drift(Limit::new(0.01, "the lease's drift margin"))
///     .with_max_pause(Limit::new(Duration::from_secs(1), "half the validity margin"));
/// assert_eq!(a.max_drift.unwrap().value, 0.01);
/// assert_eq!(a.max_wall_jump, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Assumptions {
    /// The largest clock-rate error |drift| of any node (0.01 is 1% fast or slow).
    pub max_drift: Option<Limit<f64>>,
    /// The largest step of any node's wall clock, forward or back.
    pub max_wall_jump: Option<Limit<Duration>>,
    /// The longest process pause (GC, VM stall) under which its safety still holds.
    pub max_pause: Option<Limit<Duration>>,
    /// The shortest time a crashed server may stay down before it restarts (Redlock's
    /// "delayed restarts" for servers without persistence).
    pub min_restart_delay: Option<Limit<Duration>>,
    /// The largest one-way message delay under which its liveness promise holds (a
    /// timing requirement, as Raft's "broadcast time << election timeout", §5.6). Fuzz
    /// profiles draw slow links and slow networks within it.
    pub max_latency: Option<Limit<Duration>>,
    /// The slowest disk sync (fsync) under which its liveness promise holds: a member
    /// blocked in a sync handles nothing else, so a slow disk delays heartbeats and
    /// votes as a slow link does (etcd: "failed to send out heartbeat on time ...
    /// likely from slow disk"). Fuzz profiles draw every disk's slowest fsync within it.
    pub max_fsync: Option<Limit<Duration>>,
    /// A network that never partitions nor loses messages (a synchronous system, as the
    /// bully algorithm assumes); the reason.
    pub reliable_network: Option<String>,
    /// The most nodes that may be Byzantine at once (`byzantine` fault events; PBFT's
    /// `f`). Unlike the other fields, `None` means none: a protocol that does not declare
    /// it tolerates no Byzantine node at all (every crash-fault protocol).
    pub max_byzantine: Option<Limit<u32>>,
}

/// One assumption a drawn fault broke: which, by how much, and the declared limit.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Broken {
    /// `max-drift`, `max-wall-jump`, `max-latency`, `max-fsync`, `max-pause`,
    /// `min-restart-delay`, `reliable-network`, `max-byzantine`.
    pub assumption: &'static str,
    /// What was drawn, in words ("drift -0.42 on n2", "pause 5s of n1").
    pub drawn: String,
    /// The declared limit, in words ("0.10").
    pub limit: String,
    pub why: String,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let relation = match self.assumption {
            "min-restart-delay" => "is below",
            "reliable-network" => "breaks",
            _ => "exceeds",
        };
        write!(
            f,
            "beyond assumption {}: {} {relation} the declared {} ({})",
            self.assumption, self.drawn, self.limit, self.why
        )
    }
}

impl Assumptions {
    /// Assumes nothing: every field `None` (the same as `Assumptions::default()`).
    pub fn new() -> Assumptions {
        Assumptions::default()
    }

    /// With `max_drift` (a [`Limit`], or `None` to leave it unset).
    pub fn with_max_drift(mut self, max_drift: impl Into<Option<Limit<f64>>>) -> Assumptions {
        self.max_drift = max_drift.into();
        self
    }

    /// With `max_wall_jump` (a [`Limit`], or `None` to leave it unset).
    pub fn with_max_wall_jump(
        mut self,
        max_wall_jump: impl Into<Option<Limit<Duration>>>,
    ) -> Assumptions {
        self.max_wall_jump = max_wall_jump.into();
        self
    }

    /// With `max_pause` (a [`Limit`], or `None` to leave it unset).
    pub fn with_max_pause(mut self, max_pause: impl Into<Option<Limit<Duration>>>) -> Assumptions {
        self.max_pause = max_pause.into();
        self
    }

    /// With `min_restart_delay` (a [`Limit`], or `None` to leave it unset).
    pub fn with_min_restart_delay(
        mut self,
        min_restart_delay: impl Into<Option<Limit<Duration>>>,
    ) -> Assumptions {
        self.min_restart_delay = min_restart_delay.into();
        self
    }

    /// With `max_latency` (a [`Limit`], or `None` to leave it unset).
    pub fn with_max_latency(
        mut self,
        max_latency: impl Into<Option<Limit<Duration>>>,
    ) -> Assumptions {
        self.max_latency = max_latency.into();
        self
    }

    /// With `max_fsync` (a [`Limit`], or `None` to leave it unset).
    pub fn with_max_fsync(mut self, max_fsync: impl Into<Option<Limit<Duration>>>) -> Assumptions {
        self.max_fsync = max_fsync.into();
        self
    }

    /// With `reliable_network`: the protocol assumes a network that never partitions nor
    /// loses messages, for this reason.
    pub fn with_reliable_network(mut self, why: impl Into<String>) -> Assumptions {
        self.reliable_network = Some(why.into());
        self
    }

    /// With `max_byzantine` (a [`Limit`], or `None` to leave it unset: no Byzantine
    /// node tolerated).
    pub fn with_max_byzantine(
        mut self,
        max_byzantine: impl Into<Option<Limit<u32>>>,
    ) -> Assumptions {
        self.max_byzantine = max_byzantine.into();
        self
    }
    /// Whether a drift of `drift` stays within [`Assumptions::max_drift`].
    pub fn drift(&self, drift: f64, what: String) -> Option<Broken> {
        let limit = self.max_drift.as_ref()?;
        (drift.abs() > limit.value).then(|| Broken {
            assumption: "max-drift",
            drawn: what,
            limit: format!("{}", limit.value),
            why: limit.why.clone(),
        })
    }

    pub fn wall_jump(&self, by: Duration, what: String) -> Option<Broken> {
        let limit = self.max_wall_jump.as_ref()?;
        (by > limit.value).then(|| Broken {
            assumption: "max-wall-jump",
            drawn: what,
            limit: format_duration(limit.value),
            why: limit.why.clone(),
        })
    }

    pub fn pause(&self, duration: Duration, what: String) -> Option<Broken> {
        let limit = self.max_pause.as_ref()?;
        (duration > limit.value).then(|| Broken {
            assumption: "max-pause",
            drawn: what,
            limit: format_duration(limit.value),
            why: limit.why.clone(),
        })
    }

    pub fn restart_delay(&self, down_for: Duration, what: String) -> Option<Broken> {
        let limit = self.min_restart_delay.as_ref()?;
        (down_for < limit.value).then(|| Broken {
            assumption: "min-restart-delay",
            drawn: what,
            limit: format_duration(limit.value),
            why: limit.why.clone(),
        })
    }

    pub fn latency(&self, latency: Duration, what: String) -> Option<Broken> {
        let limit = self.max_latency.as_ref()?;
        (latency > limit.value).then(|| Broken {
            assumption: "max-latency",
            drawn: what,
            limit: format_duration(limit.value),
            why: limit.why.clone(),
        })
    }

    /// Whether a disk whose syncs take up to `latency` stays within
    /// [`Assumptions::max_fsync`].
    pub fn fsync(&self, latency: Duration, what: String) -> Option<Broken> {
        let limit = self.max_fsync.as_ref()?;
        (latency > limit.value).then(|| Broken {
            assumption: "max-fsync",
            drawn: what,
            limit: format_duration(limit.value),
            why: limit.why.clone(),
        })
    }

    /// Whether a partition or message loss stays within [`Assumptions::reliable_network`].
    pub fn network_fault(&self, what: String) -> Option<Broken> {
        let why = self.reliable_network.as_ref()?;
        Some(Broken {
            assumption: "reliable-network",
            drawn: what,
            limit: "no partitions and no loss".to_string(),
            why: why.clone(),
        })
    }

    /// Whether `count` Byzantine nodes stay within [`Assumptions::max_byzantine`] (none
    /// when it is not declared).
    pub fn byzantine(&self, count: u32, what: String) -> Option<Broken> {
        let (limit, why) = match &self.max_byzantine {
            Some(l) => (l.value, l.why.clone()),
            None => (
                0,
                "it declares no Byzantine tolerance: its nodes fail by crashing, never by lying"
                    .to_string(),
            ),
        };
        (count > limit).then(|| Broken {
            assumption: "max-byzantine",
            drawn: what,
            limit: limit.to_string(),
            why,
        })
    }

    /// The assumptions in words, one per line, for reports and `tenure list`.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(why) = &self.reliable_network {
            out.push(format!(
                "a network that never partitions nor loses messages ({why})"
            ));
        }
        if let Some(l) = &self.max_drift {
            out.push(format!("clock drift at most {} ({})", l.value, l.why));
        }
        if let Some(l) = &self.max_wall_jump {
            out.push(format!(
                "wall-clock steps at most {} ({})",
                format_duration(l.value),
                l.why
            ));
        }
        if let Some(l) = &self.max_latency {
            out.push(format!(
                "message delays at most {} ({})",
                format_duration(l.value),
                l.why
            ));
        }
        if let Some(l) = &self.max_fsync {
            out.push(format!(
                "disk syncs at most {} ({})",
                format_duration(l.value),
                l.why
            ));
        }
        if let Some(l) = &self.max_pause {
            out.push(format!(
                "process pauses at most {} ({})",
                format_duration(l.value),
                l.why
            ));
        }
        if let Some(l) = &self.max_byzantine {
            let nodes = if l.value == 1 { "node" } else { "nodes" };
            out.push(format!("at most {} Byzantine {nodes} ({})", l.value, l.why));
        }
        if let Some(l) = &self.min_restart_delay {
            out.push(format!(
                "crashed servers stay down at least {} ({})",
                format_duration(l.value),
                l.why
            ));
        }
        out
    }
}

/// A property a protocol promises: a checker and the parameters that make it mean what
/// the protocol promises (a liveness bound derived from its timeouts, a resource name).
/// A scenario's own `[check.NAME]` parameters override these, key by key.
///
/// Built with [`Promise::new`] and [`Promise::with`] / [`Promise::within`] /
/// [`Promise::overlap`]; `#[non_exhaustive]`, so a field added later is not a breaking
/// change.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Promise {
    pub check: &'static str,
    /// A JSON object of checker parameters (may be empty).
    pub params: serde_json::Value,
}

impl Promise {
    pub fn new(check: &'static str) -> Promise {
        Promise {
            check,
            params: serde_json::json!({}),
        }
    }

    /// With parameter `key` set to `value`.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Promise {
        if let Some(map) = self.params.as_object_mut() {
            map.insert(key.to_string(), value.into());
        }
        self
    }

    /// A liveness promise: `within` the bound, with its derivation stated in the report.
    pub fn within(self, bound: Duration, derivation: impl Into<String>) -> Promise {
        // Rounded up to a whole millisecond, so reports read "3.834s", not nanoseconds.
        let ms = bound.as_nanos().div_ceil(1_000_000);
        let bound = Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX));
        self.with("within", format_duration(bound))
            .with("bound", derivation.into())
    }

    /// A tolerated overlap (`max_overlap`) an overlap check needs, with its derivation
    /// from the protocol's own parameters, stated in the report.
    pub fn overlap(self, max: Duration, derivation: impl Into<String>) -> Promise {
        let ms = max.as_nanos().div_ceil(1_000_000);
        let max = Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX));
        self.with("max_overlap", format_duration(max))
            .with("bound", derivation.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_slower_than_the_declared_fsync_is_beyond_it_and_is_described() {
        let none = Assumptions::default();
        assert_eq!(none.fsync(Duration::from_secs(1), "n0".into()), None);
        let a = Assumptions {
            max_fsync: Some(Limit::new(
                Duration::from_millis(5),
                "a tenth of the heartbeat",
            )),
            ..Assumptions::default()
        };
        assert_eq!(
            a.fsync(Duration::from_millis(5), "at the limit".into()),
            None
        );
        let broken = a
            .fsync(Duration::from_millis(6), "syncs up to 6ms on n1".into())
            .unwrap();
        assert_eq!(broken.assumption, "max-fsync");
        assert_eq!(
            broken.to_string(),
            "beyond assumption max-fsync: syncs up to 6ms on n1 exceeds the declared 5ms (a tenth of the heartbeat)"
        );
        assert_eq!(
            a.describe(),
            vec!["disk syncs at most 5ms (a tenth of the heartbeat)".to_string()]
        );
    }
}
