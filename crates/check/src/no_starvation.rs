//! # no-starvation
//!
//! **Property:** every client that wants something makes progress. A client *wants* from
//! its first `Waiting` (for any resource) after its last `Done` (or after its process
//! started) until its next `Done`; giving up a wait (`GivesUp`) and retrying does not end
//! the want, only finished work does. A crash (`Crashed`, or a fresh `Started`) excuses
//! the want. Every want must end in `Done` by `max(want start, calm_from) + within`.
//! Wants whose deadline is after the end of the run are not judged.
//!
//! It is per client, unlike `lock-liveness` (per wait for one resource): a multi-lock
//! client that gets some of its locks, gives up and retries forever (a livelock) or
//! waits in a deadlock holds locks now and then but never finishes its work.
//!
//! **How it fails:** a deadlock (everyone in the cycle starves); a livelock of try-lock
//! clients retrying in lockstep without jitter; an unfair lock whose hot resource always
//! goes to the same fast clients.
//!
//! **Source:** issue 13 ("a `no-starvation` (progress) check per client"); the progress
//! condition of Dijkstra's mutual exclusion problem (1965) and Lamport's bakery
//! algorithm (1974): every process that tries eventually enters its critical section.
//!
//! Judged at the end only: `calm_from` is known when the run ends.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "no-starvation";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "every client that waits finishes a unit of work within a bound",
    property: "per client, from its first Waiting after its last Done (or start), a Done \
               follows by max(that time, calm_from) + within, unless it crashes; judged \
               when that deadline is at or before the end",
    source: "issue 13 (per-client progress); Dijkstra 1965 and Lamport 1974 (every process \
             that tries eventually enters its critical section)",
    params: "within (duration, default \"10s\"): how long a client may want without \
             finishing work after the calm",
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_within")]
    pub within: HumanDuration,
}

fn default_within() -> HumanDuration {
    HumanDuration(Duration::from_secs(10))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            within: default_within(),
        }
    }
}

/// How a long want ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WantEnd {
    Done { time: SimTime, index: usize },
    Crashed { time: SimTime, index: usize },
    StillWanting { end: SimTime },
}

impl WantEnd {
    fn time(self) -> SimTime {
        match self {
            WantEnd::Done { time, .. } | WantEnd::Crashed { time, .. } => time,
            WantEnd::StillWanting { end } => end,
        }
    }
}

/// A client wanted past its deadline without finishing work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Starved {
    pub node: NodeId,
    pub since: SimTime,
    pub since_index: usize,
    pub deadline: SimTime,
    pub calm_from: SimTime,
    pub within: Duration,
    pub ended: WantEnd,
    /// Units of work the client finished before this want (this process or earlier).
    pub done_before: u64,
}

impl fmt::Display for Starved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} started waiting at {} and finished no work by {} (within {} of ",
            self.node,
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
            WantEnd::Done { time, .. } => write!(f, "); it finished only at {time}")?,
            WantEnd::Crashed { time, .. } => write!(f, "); it crashed still waiting at {time}")?,
            WantEnd::StillWanting { end } => {
                write!(f, "); it was still waiting at the end, {end}")?
            }
        }
        write!(f, "; it had finished {} unit(s) before", self.done_before)
    }
}

impl From<Starved> for Violation {
    fn from(v: Starved) -> Violation {
        let mut records = vec![v.since_index];
        if let WantEnd::Done { index, .. } | WantEnd::Crashed { index, .. } = v.ended {
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

#[derive(Clone, Debug)]
struct LongWant {
    node: NodeId,
    since: SimTime,
    since_index: usize,
    ended: WantEnd,
    done_before: u64,
}

pub struct NoStarvation {
    within: Duration,
    clock: TrueClock,
    /// node -> (want start, its record).
    wanting: BTreeMap<NodeId, (SimTime, usize)>,
    done: BTreeMap<NodeId, u64>,
    long_wants: Vec<LongWant>,
}

impl NoStarvation {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(NoStarvation {
            within: params.within.0,
            clock: TrueClock::default(),
            wanting: BTreeMap::new(),
            done: BTreeMap::new(),
            long_wants: Vec::new(),
        })
    }

    fn end_want(&mut self, node: NodeId, ended: WantEnd) {
        let Some((since, since_index)) = self.wanting.remove(&node) else {
            return;
        };
        if ended.time().saturating_sub(since) > self.within {
            self.long_wants.push(LongWant {
                node,
                since,
                since_index,
                ended,
                done_before: self.done.get(&node).copied().unwrap_or(0),
            });
        }
    }
}

impl Checker for NoStarvation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let (node, time) = (record.node, record.time);
        match &record.obs {
            Observation::Waiting { .. } => {
                self.wanting.entry(node).or_insert((time, index));
            }
            Observation::Done => {
                self.end_want(node, WantEnd::Done { time, index });
                *self.done.entry(node).or_default() += 1;
            }
            Observation::Crashed | Observation::Started => {
                self.end_want(node, WantEnd::Crashed { time, index });
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        let open: Vec<NodeId> = self.wanting.keys().copied().collect();
        for node in open {
            self.end_want(node, WantEnd::StillWanting { end });
        }
        let (deadline, w) = self
            .long_wants
            .iter()
            .filter_map(|w| {
                let deadline = w.since.max(info.calm_from) + self.within;
                let missed = deadline <= end && w.ended.time() > deadline;
                missed.then_some((deadline, w))
            })
            .min_by_key(|(deadline, w)| (*deadline, w.since_index))?;
        Some(
            Starved {
                node: w.node,
                since: w.since,
                since_index: w.since_index,
                deadline,
                calm_from: info.calm_from,
                within: self.within,
                ended: w.ended,
                done_before: w.done_before,
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
    fn retrying_clients_that_finish_in_time_pass() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .waiting("a")
            .gives_up("a")
            .at_ms(40)
            .waiting("a")
            .holds("a", 0)
            .at_ms(50)
            .releases("a")
            .done()
            .node(2)
            .waiting("a")
            .at_ms(55)
            .holds("a", 0)
            .done()
            .end_ms(10_000)
            .history();
        assert_eq!(
            judge_with("no-starvation", json!({"within": "50ms"}), &h),
            None
        );
    }

    #[test]
    fn a_livelocked_client_holding_now_and_then_starves() {
        // n1 gets `a` again and again but never `b`, and never finishes.
        let mut h = H::nodes(2).at_ms(10).node(1).done();
        for i in 0..10 {
            h = h
                .at_ms(100 + i * 100)
                .waiting("a")
                .holds("a", 0)
                .waiting("b")
                .gives_up("b")
                .releases("a");
        }
        let h = h.end_ms(2_000).history();
        let (at, v) = judge_with("no-starvation", json!({"within": "500ms"}), &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n1 started waiting at 0.100_000s and finished no work by 0.600_000s \
             (within 500ms of its wait); it was still waiting at the end, 2.000_000s; \
             it had finished 1 unit(s) before"
        );
        assert_eq!(v.nodes, vec![NodeId(1)]);
        assert_eq!(v.records, vec![1]);
        assert_eq!(v.time, SimTime(600_000_000));
    }

    #[test]
    fn done_exactly_at_the_deadline_passes_one_ms_later_fails() {
        let history = |done_ms: u64| {
            H::nodes(2)
                .at_ms(10)
                .node(1)
                .waiting("r")
                .at_ms(done_ms)
                .done()
                .end_ms(1_000)
                .history()
        };
        let params = json!({"within": "50ms"});
        assert_eq!(
            judge_with("no-starvation", params.clone(), &history(60)),
            None
        );
        let (_, v) = judge_with("no-starvation", params, &history(61)).unwrap();
        assert!(
            v.message.contains("; it finished only at 0.061_000s"),
            "{}",
            v.message
        );
        assert_eq!(v.records, vec![0, 1]);
    }

    #[test]
    fn crashes_are_excused_and_the_deadline_counts_from_the_calm() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .waiting("r")
            .at_ms(900)
            .crash()
            .node(2)
            .waiting("r")
            .at_ms(1_400)
            .done()
            .calm_ms(1_000)
            .end_ms(5_000)
            .history();
        assert_eq!(
            judge_with("no-starvation", json!({"within": "500ms"}), &h),
            None
        );
        // A want whose deadline is after the end is not judged.
        let h = H::nodes(2)
            .at_ms(10)
            .node(1)
            .waiting("r")
            .end_ms(400)
            .history();
        assert_eq!(
            judge_with("no-starvation", json!({"within": "500ms"}), &h),
            None
        );
    }
}
