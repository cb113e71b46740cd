//! # lock-liveness
//!
//! **Property:** once the faults are over, waiting clients get the lock within a bound.
//! What "waiting clients" means depends on what the lock promises: with
//! `per_waiter = true` (fairness: a FIFO queue, as etcd's and ZooKeeper's lock recipes
//! promise) *every* wait must end in time; with `per_waiter = false` (progress: Redis
//! `SET NX` and Redlock promise no order, a client may lose every race) a missed
//! deadline is a violation only if *no* client got the resource in the `within` before
//! it. Precisely: a node waits for a resource from its `Waiting { resource }` until its
//! `Holds { resource }` or until it crashes (`Crashed`, or a fresh `Started`); a crashed
//! waiter is excused. Every wait must end in `Holds` at or before its deadline
//! `max(wait start, calm_from) + within`, or end in a crash at or before that deadline.
//! Waits whose deadline is after the end of the run are not judged. A `Waiting` while
//! already waiting continues the same wait. With `resource` set, only that resource is
//! judged.
//!
//! **How it fails:** a lock that is never released because its holder crashed and the
//! lock has no expiry (the seed article's "deadlocks if locks aren't released"); a client
//! that misses the release notification (a lost watch) and never retries; starvation
//! under unfair retry with backoff.
//!
//! **Source:** seed article 003, "Pitfalls of Distributed Locks" (deadlocks if locks are
//! not released); seed article 001 (leases with expiration so resources are reclaimed
//! when a party disappears); the liveness phase of TigerBeetle's VOPR.
//!
//! Judged at the end only: `calm_from` is known when the run ends. Waits that got the
//! lock within `within` of their start are forgotten at once (they meet any deadline).

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "lock-liveness";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "after the faults, every waiting client gets the lock within a bound",
    property: "every Waiting node (not crashed) Holds the resource by max(its wait start, \
               calm_from) + within, judged when that deadline is at or before the end",
    source: "seed articles 001 and 003 (lock expiry, deadlocks if locks are not released); \
             TigerBeetle VOPR liveness phase",
    params: "within (duration, default \"5s\"): how long a waiter may wait after the calm; \
             per_waiter (bool, default true): every waiter (fairness) or some waiter \
             (progress); resource (string, optional): judge only this resource; bound \
             (string, optional): how `within` was derived, stated in the report",
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_within")]
    pub within: HumanDuration,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default = "yes")]
    pub per_waiter: bool,
    /// How `within` was derived from the protocol's parameters (for the report).
    #[serde(default)]
    pub bound: Option<String>,
}

fn default_within() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}

fn yes() -> bool {
    true
}

impl Default for Params {
    fn default() -> Self {
        Params {
            within: default_within(),
            resource: None,
            per_waiter: true,
            bound: None,
        }
    }
}

/// How a long wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEnd {
    Held {
        time: SimTime,
        index: usize,
    },
    Crashed {
        time: SimTime,
        index: usize,
    },
    /// Still waiting when the run ended.
    StillWaiting {
        end: SimTime,
    },
}

impl WaitEnd {
    fn time(self) -> SimTime {
        match self {
            WaitEnd::Held { time, .. } | WaitEnd::Crashed { time, .. } => time,
            WaitEnd::StillWaiting { end } => end,
        }
    }
}

/// A node waited past its deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StarvedWaiter {
    pub node: NodeId,
    pub resource: String,
    pub since: SimTime,
    pub since_index: usize,
    pub deadline: SimTime,
    pub calm_from: SimTime,
    pub within: Duration,
    pub ended: WaitEnd,
    /// With `per_waiter = false`: nobody got the resource in `(deadline - within, deadline]`.
    pub nobody_progressed: bool,
    pub bound: Option<String>,
}

impl fmt::Display for StarvedWaiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} waited for `{}` from {} and did not hold it by {} (within {} of ",
            self.node,
            self.resource,
            self.since,
            self.deadline,
            format_duration(self.within)
        )?;
        if self.since >= self.calm_from {
            write!(f, "its wait")?;
        } else {
            write!(f, "the calm at {}", self.calm_from)?;
        }
        match self.ended {
            WaitEnd::Held { time, .. } => write!(f, "); it got it only at {time}"),
            WaitEnd::Crashed { time, .. } => write!(f, "); it crashed still waiting at {time}"),
            WaitEnd::StillWaiting { end } => write!(f, "); it was still waiting at the end, {end}"),
        }?;
        if self.nobody_progressed {
            write!(f, ", and no client got `{}` in that time", self.resource)?;
        }
        if let Some(bound) = &self.bound {
            write!(f, " [bound {} = {bound}]", format_duration(self.within))?;
        }
        Ok(())
    }
}

impl From<StarvedWaiter> for Violation {
    fn from(v: StarvedWaiter) -> Violation {
        let mut records = vec![v.since_index];
        if let WaitEnd::Held { index, .. } | WaitEnd::Crashed { index, .. } = v.ended {
            records.push(index);
        }
        Violation {
            checker: NAME,
            time: v.deadline,
            nodes: vec![v.node],
            message: v.to_string(),
            records,
        }
    }
}

/// A wait that lasted longer than `within` (only those can miss a deadline).
#[derive(Clone, Debug)]
struct LongWait {
    node: NodeId,
    resource: String,
    since: SimTime,
    since_index: usize,
    ended: WaitEnd,
}

pub struct LockLiveness {
    within: Duration,
    only: Option<String>,
    per_waiter: bool,
    bound: Option<String>,
    /// Every acquisition, as (resource, time): for the progress form.
    acquired: Vec<(String, SimTime)>,
    clock: TrueClock,
    /// (node, resource) -> (wait start, record).
    waiting: BTreeMap<(NodeId, String), (SimTime, usize)>,
    long_waits: Vec<LongWait>,
    /// When the first wait began (its deadline is the earliest of all).
    first_wait: Option<SimTime>,
    /// Set by `finish` when no wait's deadline fell inside the run.
    not_judged: Option<crate::verdict::NotJudged>,
}

impl LockLiveness {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(LockLiveness {
            within: params.within.0,
            only: params.resource,
            per_waiter: params.per_waiter,
            bound: params.bound,
            acquired: Vec::new(),
            clock: TrueClock::default(),
            waiting: BTreeMap::new(),
            long_waits: Vec::new(),
            first_wait: None,
            not_judged: None,
        })
    }

    fn end_wait(&mut self, node: NodeId, resource: String, ended: WaitEnd) {
        let Some((since, since_index)) = self.waiting.remove(&(node, resource.clone())) else {
            return;
        };
        if ended.time().saturating_sub(since) > self.within {
            self.long_waits.push(LongWait {
                node,
                resource,
                since,
                since_index,
                ended,
            });
        }
    }
}

impl Checker for LockLiveness {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let judged = |r: &str| self.only.as_deref().is_none_or(|only| only == r);
        match &record.obs {
            Observation::Waiting { resource } if judged(resource) => {
                self.first_wait.get_or_insert(record.time);
                self.waiting
                    .entry((record.node, resource.clone()))
                    .or_insert((record.time, index));
            }
            Observation::Holds { resource, .. } if judged(resource) => {
                if !self.per_waiter {
                    self.acquired.push((resource.clone(), record.time));
                }
                let held = WaitEnd::Held {
                    time: record.time,
                    index,
                };
                self.end_wait(record.node, resource.clone(), held);
            }
            Observation::Crashed | Observation::Started => {
                let mine: Vec<String> = self
                    .waiting
                    .keys()
                    .filter(|(node, _)| *node == record.node)
                    .map(|(_, resource)| resource.clone())
                    .collect();
                for resource in mine {
                    let crashed = WaitEnd::Crashed {
                        time: record.time,
                        index,
                    };
                    self.end_wait(record.node, resource, crashed);
                }
            }
            _ => {}
        }
        None
    }

    fn not_judged(&self) -> Option<crate::verdict::NotJudged> {
        self.not_judged.clone()
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        // Liveness is owed only from a deadline on: a run in which no wait's deadline
        // came is too short to judge it (a wait served early met its deadline, but the
        // run never reached the time the property is about).
        use crate::verdict::{NotJudged, Reason};
        self.not_judged = match self.first_wait {
            None => Some(NotJudged::new(
                Reason::CouldNotFail,
                format!(
                    "no client waited for {}: lock liveness breaks only when a waiter is \
                     not served",
                    self.only
                        .as_deref()
                        .map_or("a lock".to_string(), |r| format!("`{r}`"))
                ),
            )),
            Some(first) => {
                let due = first.max(info.calm_from) + self.within;
                (due > end).then(|| {
                    NotJudged::new(
                        Reason::TooShort,
                        format!(
                            "no wait's deadline fell inside the run: the earliest, at {due} \
                             (max(first wait {first}, calm from {}) + within {}), is after \
                             the end at {end}",
                            info.calm_from,
                            format_duration(self.within)
                        ),
                    )
                })
            }
        };
        let open: Vec<(NodeId, String)> = self.waiting.keys().cloned().collect();
        for (node, resource) in open {
            self.end_wait(node, resource, WaitEnd::StillWaiting { end });
        }
        let starved = self
            .long_waits
            .iter()
            .filter_map(|w| {
                let deadline = w.since.max(info.calm_from) + self.within;
                let missed = deadline <= end && w.ended.time() > deadline;
                let progressed = !self.per_waiter
                    && self.acquired.iter().any(|(r, t)| {
                        *r == w.resource && *t + self.within > deadline && *t <= deadline
                    });
                (missed && !progressed).then_some((deadline, w))
            })
            .min_by_key(|(deadline, w)| (*deadline, w.since_index))?;
        let (deadline, w) = starved;
        Some(
            StarvedWaiter {
                node: w.node,
                resource: w.resource.clone(),
                since: w.since,
                since_index: w.since_index,
                deadline,
                calm_from: info.calm_from,
                within: self.within,
                ended: w.ended,
                nobody_progressed: !self.per_waiter,
                bound: self.bound.clone(),
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::json;
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn waiters_served_in_time_pass() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .waiting("r")
            .node(2)
            .waiting("r")
            .at_ms(20)
            .node(1)
            .holds("r", 1)
            .at_ms(60)
            .node(1)
            .releases("r")
            .node(2)
            .holds("r", 2)
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("lock-liveness", json!({"within": "50ms"}), &h),
            None
        );
    }

    #[test]
    fn getting_the_lock_exactly_at_the_deadline_passes_and_later_fails() {
        let history = |holds_ms: u64| {
            H::nodes(2)
                .at_ms(10)
                .node(1)
                .waiting("r")
                .at_ms(holds_ms)
                .node(1)
                .holds("r", 1)
                .end_ms(1000)
                .history()
        };
        let params = json!({"within": "50ms"});
        assert_eq!(
            judge_with("lock-liveness", params.clone(), &history(60)),
            None
        );
        let (at, v) = judge_with("lock-liveness", params, &history(61)).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n1 waited for `r` from 0.010_000s and did not hold it by 0.060_000s \
             (within 50ms of its wait); it got it only at 0.061_000s"
        );
        assert_eq!(v.nodes, vec![NodeId(1)]);
        assert_eq!(v.records, vec![0, 1]);
        assert_eq!(v.time, SimTime(60_000_000));
    }

    #[test]
    fn the_deadline_counts_from_the_calm_and_late_deadlines_are_not_judged() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(1)
            .waiting("r")
            .at_ms(400)
            .node(0)
            .note("heal")
            .calm_ms(300)
            .end_ms(500)
            .history();
        // Deadline 300 + 100 = 400 <= 500: still waiting at the end is a violation.
        let (_, v) = judge_with("lock-liveness", json!({"within": "100ms"}), &h).unwrap();
        assert_eq!(
            v.message,
            "n1 waited for `r` from 0.010_000s and did not hold it by 0.400_000s \
             (within 100ms of the calm at 0.300_000s); it was still waiting at the end, 0.500_000s"
        );
        // Deadline 300 + 250 = 550 > 500: not judged.
        assert_eq!(
            judge_with("lock-liveness", json!({"within": "250ms"}), &h),
            None
        );
    }

    #[test]
    fn a_crashed_waiter_is_excused_until_its_deadline() {
        let history = |crash_ms: u64| {
            H::nodes(2)
                .at_ms(10)
                .node(1)
                .waiting("r")
                .at_ms(crash_ms)
                .node(1)
                .crash()
                .end_ms(1000)
                .history()
        };
        let params = json!({"within": "50ms"});
        assert_eq!(
            judge_with("lock-liveness", params.clone(), &history(60)),
            None
        );
        let (_, v) = judge_with("lock-liveness", params, &history(70)).unwrap();
        assert!(
            v.message
                .ends_with("it crashed still waiting at 0.070_000s"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_paused_waiter_keeps_waiting_and_the_filter_skips_other_resources() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(1)
            .waiting("r")
            .note("paused")
            .at_ms(20)
            .node(0)
            .waiting("other")
            .at_ms(30)
            .node(0)
            .holds("other", 1)
            .end_ms(1000)
            .history();
        let (_, v) = judge_with("lock-liveness", json!({"within": "50ms"}), &h).unwrap();
        assert!(v.message.starts_with("n1 waited for `r`"), "{}", v.message);
        assert_eq!(
            judge_with(
                "lock-liveness",
                json!({"within": "50ms", "resource": "other"}),
                &h
            ),
            None
        );
    }
}
