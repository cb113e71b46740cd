//! # deadlock
//!
//! **Property:** no cycle in the wait-for graph lasts longer than a bound derived from
//! the timeouts that should break it. The graph has an edge `a --r--> b` while node `a`
//! waits for resource `r` and node `b` (another node) believes it holds `r`. Precisely:
//! no wait-for edge stays on a cycle of the graph for longer than
//! `bound = min(acquire_timeout, lease) + slack` (whichever of the two timeouts are
//! given; with neither, `bound = slack`: nothing is meant to break a cycle).
//!
//! A node waits for `r` from its `Waiting { resource: r }` until its `Holds { r }`, its
//! `GivesUp { r }`, or its crash (`Crashed`, or a fresh `Started`). It holds `r` from
//! `Holds { r }` until `Releases { r }` or a crash, as in `mutual-exclusion`: beliefs,
//! not the lock service's table. A paused node keeps its waits and beliefs.
//!
//! **How it fails:** clients that each hold some locks and wait for another (hold and
//! wait) in no global order: `a` holds `r0` and waits for `r1`, `b` holds `r1` and waits
//! for `r0`. Without an acquire timeout or a lease that expires, they wait forever; the
//! checker names the cycle's nodes and resources. Acquiring in one global order makes a
//! cycle impossible (the Coffman conditions: breaking "circular wait"); an acquire
//! timeout with release-all-and-retry, or lease expiry, breaks a cycle within the bound
//! (the lease at a price: see `mutual-exclusion`).
//!
//! **Source:** Coffman, Elphick and Shoshani, "System Deadlocks" (Computing Surveys,
//! 1971), the four conditions and the wait-for graph; Holt, "Some Deadlock Properties of
//! Computer Systems" (1972); issue 13's source article on locks under contention
//! (consistent acquisition order; timeouts and lease expiry "loosen deadlock chains").
//!
//! Online: a cycle is reported at the first record after it has lasted longer than the
//! bound, or at the end of the run (a deadlock often makes no records at all).

use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "deadlock";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "no cycle of nodes waiting for each other's locks outlives the timeouts",
    property: "no edge of the wait-for graph (a Waiting node -> a node that Holds that \
               resource) stays on a cycle longer than min(acquire_timeout, lease) + slack",
    source: "Coffman, Elphick and Shoshani, \"System Deadlocks\" (1971); Holt (1972); \
             issue 13 (consistent acquisition order, timeouts and lease expiry)",
    params: "acquire_timeout (duration, optional): the clients' acquire timeout; \
             lease (duration, optional): the locks' time to live; \
             slack (duration, default \"1s\"): added to the smaller of the two",
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default)]
    pub acquire_timeout: Option<HumanDuration>,
    #[serde(default)]
    pub lease: Option<HumanDuration>,
    #[serde(default = "default_slack")]
    pub slack: HumanDuration,
}

fn default_slack() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            acquire_timeout: None,
            lease: None,
            slack: default_slack(),
        }
    }
}

/// How long a cycle may last, and why (for the message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    pub bound: Duration,
    /// E.g. "acquire_timeout 500ms + slack 1s".
    pub derivation: String,
}

impl Params {
    fn bound(&self) -> Bound {
        let timeouts = [
            ("acquire_timeout", self.acquire_timeout),
            ("lease", self.lease),
        ];
        let smallest = timeouts
            .iter()
            .filter_map(|(name, d)| d.map(|d| (d.0, *name)))
            .min();
        let slack = self.slack.0;
        match smallest {
            Some((d, name)) => Bound {
                bound: d + slack,
                derivation: format!(
                    "{name} {} + slack {}",
                    format_duration(d),
                    format_duration(slack)
                ),
            },
            None => Bound {
                bound: slack,
                derivation: format!(
                    "slack {}, no acquire timeout or lease to break a cycle",
                    format_duration(slack)
                ),
            },
        }
    }
}

/// One edge of a cycle: `waiter` waits for `resource`, which `holder` believes it holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaitEdge {
    pub waiter: NodeId,
    pub resource: String,
    pub holder: NodeId,
}

/// A cycle of the wait-for graph lasted longer than the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The cycle, starting with its oldest edge; each edge's holder is the next edge's
    /// waiter, and the last edge's holder is the first edge's waiter.
    pub cycle: Vec<WaitEdge>,
    /// Since when the first edge has been on a cycle.
    pub since: SimTime,
    pub at_least: Duration,
    pub bound: Bound,
    /// The `Waiting` and `Holds` records of the cycle's edges.
    pub records: Vec<usize>,
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wait-for cycle ")?;
        for e in &self.cycle {
            write!(f, "{} -[{}]-> ", e.waiter, e.resource)?;
        }
        write!(f, "{} (", self.cycle[0].waiter)?;
        for (i, e) in self.cycle.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(
                f,
                "{} waits for `{}` held by {}",
                e.waiter, e.resource, e.holder
            )?;
        }
        write!(
            f,
            ") since {} for at least {}, longer than the bound {} ({})",
            self.since,
            show(self.at_least),
            format_duration(self.bound.bound),
            self.bound.derivation
        )
    }
}

impl From<Deadlock> for Violation {
    fn from(v: Deadlock) -> Violation {
        Violation {
            checker: NAME,
            time: v.since + v.bound.bound,
            nodes: v.cycle.iter().map(|e| e.waiter).collect(),
            message: v.to_string(),
            records: v.records,
        }
    }
}

pub struct DeadlockChecker {
    bound: Bound,
    clock: TrueClock,
    /// node -> resource -> record of its `Waiting`.
    waits: BTreeMap<NodeId, BTreeMap<String, usize>>,
    /// resource -> node -> record of its `Holds`.
    holds: BTreeMap<String, BTreeMap<NodeId, usize>>,
    /// Edges now on a cycle -> since when they have been on one.
    on_cycle: BTreeMap<WaitEdge, SimTime>,
}

impl DeadlockChecker {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(DeadlockChecker {
            bound: params.bound(),
            clock: TrueClock::default(),
            waits: BTreeMap::new(),
            holds: BTreeMap::new(),
            on_cycle: BTreeMap::new(),
        })
    }

    /// Every edge of the wait-for graph now, in a stable order.
    fn edges(&self) -> Vec<WaitEdge> {
        let mut edges = Vec::new();
        for (waiter, resources) in &self.waits {
            for resource in resources.keys() {
                for holder in self.holds.get(resource).into_iter().flat_map(|h| h.keys()) {
                    if holder != waiter {
                        edges.push(WaitEdge {
                            waiter: *waiter,
                            resource: resource.clone(),
                            holder: *holder,
                        });
                    }
                }
            }
        }
        edges
    }

    /// The shortest path of edges from `from` to `to`, if any (breadth first).
    fn path(edges: &[WaitEdge], from: NodeId, to: NodeId) -> Option<Vec<WaitEdge>> {
        let mut parent: BTreeMap<NodeId, usize> = BTreeMap::new();
        let mut seen = BTreeSet::from([from]);
        let mut queue = VecDeque::from([from]);
        while let Some(node) = queue.pop_front() {
            if node == to {
                let mut path = Vec::new();
                let mut at = to;
                while at != from {
                    let e = parent[&at];
                    path.push(edges[e].clone());
                    at = edges[e].waiter;
                }
                path.reverse();
                return Some(path);
            }
            for (i, e) in edges.iter().enumerate() {
                if e.waiter == node && seen.insert(e.holder) {
                    parent.insert(e.holder, i);
                    queue.push_back(e.holder);
                }
            }
        }
        None
    }

    /// Recomputes which edges lie on a cycle (an edge `a -> b` does iff `b` reaches
    /// `a`), keeping the start time of those that already did.
    fn recompute(&mut self, now: SimTime) {
        let edges = self.edges();
        let mut on_cycle = BTreeMap::new();
        for e in &edges {
            if Self::path(&edges, e.holder, e.waiter).is_some() {
                let since = self.on_cycle.get(e).copied().unwrap_or(now);
                on_cycle.insert(e.clone(), since);
            }
        }
        self.on_cycle = on_cycle;
    }

    /// The oldest edge on a cycle for longer than the bound, with its cycle now.
    fn overlong(&self, now: SimTime) -> Option<Violation> {
        let (edge, since) = self
            .on_cycle
            .iter()
            .filter(|(_, since)| now.saturating_sub(**since) > self.bound.bound)
            .min_by_key(|(e, since)| (**since, (*e).clone()))?;
        let edges = self.edges();
        let rest = Self::path(&edges, edge.holder, edge.waiter)
            .expect("an edge kept in on_cycle lies on a cycle");
        let mut cycle = vec![edge.clone()];
        cycle.extend(rest);
        let mut records: Vec<usize> = cycle
            .iter()
            .flat_map(|e| {
                [
                    self.waits[&e.waiter][&e.resource],
                    self.holds[&e.resource][&e.holder],
                ]
            })
            .collect();
        records.sort_unstable();
        records.dedup();
        Some(
            Deadlock {
                cycle,
                since: *since,
                at_least: now.saturating_sub(*since),
                bound: self.bound.clone(),
                records,
            }
            .into(),
        )
    }

    fn stop_waiting(&mut self, node: NodeId, resource: &str) {
        if let Some(w) = self.waits.get_mut(&node) {
            w.remove(resource);
            if w.is_empty() {
                self.waits.remove(&node);
            }
        }
    }

    fn stop_holding(&mut self, node: NodeId, resource: &str) {
        if let Some(h) = self.holds.get_mut(resource) {
            h.remove(&node);
            if h.is_empty() {
                self.holds.remove(resource);
            }
        }
    }
}

impl Checker for DeadlockChecker {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if let Some(v) = self.overlong(record.time) {
            return Some(v);
        }
        let node = record.node;
        match &record.obs {
            Observation::Waiting { resource } => {
                self.waits
                    .entry(node)
                    .or_default()
                    .entry(resource.clone())
                    .or_insert(index);
            }
            Observation::Holds { resource, .. } => {
                self.stop_waiting(node, resource);
                self.holds
                    .entry(resource.clone())
                    .or_default()
                    .entry(node)
                    .or_insert(index);
            }
            Observation::GivesUp { resource } => self.stop_waiting(node, resource),
            Observation::Releases { resource } => self.stop_holding(node, resource),
            Observation::Crashed | Observation::Started => {
                self.waits.remove(&node);
                let held: Vec<String> = self.holds.keys().cloned().collect();
                for resource in held {
                    self.stop_holding(node, &resource);
                }
            }
            _ => return None,
        }
        self.recompute(record.time);
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        self.overlong(info.end.max(self.clock.now))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::json;
    use tenure_core::{NodeId, SimTime};

    /// n1 holds r0 and waits for r1; n2 holds r1 and waits for r0, from 30ms on.
    fn crossed(h: H) -> H {
        h.at_ms(10)
            .node(1)
            .waiting("r0")
            .holds("r0", 0)
            .node(2)
            .waiting("r1")
            .holds("r1", 0)
            .at_ms(20)
            .node(1)
            .waiting("r1")
            .at_ms(30)
            .node(2)
            .waiting("r0")
    }

    #[test]
    fn a_crossed_wait_that_never_breaks_is_named_at_the_end() {
        let h = crossed(H::nodes(3)).end_ms(5_000).history();
        let (at, v) = judge_with("deadlock", json!({"acquire_timeout": "1s"}), &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "wait-for cycle n1 -[r1]-> n2 -[r0]-> n1 (n1 waits for `r1` held by n2, \
             n2 waits for `r0` held by n1) since 0.030_000s for at least 4.970_000s, \
             longer than the bound 2s (acquire_timeout 1s + slack 1s)"
        );
        assert_eq!(v.nodes, vec![NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![1, 3, 4, 5]);
        assert_eq!(v.time, SimTime(2_030_000_000));
    }

    #[test]
    fn a_cycle_broken_by_a_timeout_within_the_bound_passes_and_one_ms_later_fails() {
        // n1 gives up r1 and releases r0 at `give_up_ms`; n2 then gets r0.
        let history = |give_up_ms: u64| {
            crossed(H::nodes(3))
                .at_ms(give_up_ms)
                .node(1)
                .gives_up("r1")
                .releases("r0")
                .node(2)
                .holds("r0", 0)
                .end_ms(10_000)
                .history()
        };
        let params = json!({"acquire_timeout": "500ms", "lease": "2s", "slack": "100ms"});
        // Bound 600ms from 30ms: a record at 630ms is not past it, one at 631ms is.
        assert_eq!(judge_with("deadlock", params.clone(), &history(630)), None);
        let (at, v) = judge_with("deadlock", params, &history(631)).unwrap();
        assert_eq!(at, At::Record(6));
        assert!(
            v.message
                .ends_with("longer than the bound 600ms (acquire_timeout 500ms + slack 100ms)"),
            "{}",
            v.message
        );
    }

    #[test]
    fn waits_without_a_cycle_pass_however_long() {
        // n1 and n2 both wait for r0, held by n3 who waits for nothing.
        let h = H::nodes(4)
            .at_ms(10)
            .node(3)
            .holds("r0", 0)
            .node(1)
            .holds("r1", 0)
            .waiting("r0")
            .node(2)
            .waiting("r1")
            .waiting("r0")
            .end_ms(60_000)
            .history();
        assert_eq!(judge_with("deadlock", json!({}), &h), None);
    }

    #[test]
    fn a_crash_breaks_the_cycle() {
        let h = crossed(H::nodes(3))
            .at_ms(500)
            .node(2)
            .crash()
            .end_ms(60_000)
            .history();
        assert_eq!(judge_with("deadlock", json!({}), &h), None);
    }

    #[test]
    fn a_three_node_cycle_is_named_from_its_oldest_edge() {
        let h = H::nodes(4)
            .at_ms(10)
            .node(1)
            .holds("a", 0)
            .node(2)
            .holds("b", 0)
            .node(3)
            .holds("c", 0)
            .at_ms(20)
            .node(2)
            .waiting("c")
            .node(3)
            .waiting("a")
            .at_ms(40)
            .node(1)
            .waiting("b")
            .end_ms(3_000)
            .history();
        let (_, v) = judge_with("deadlock", json!({}), &h).unwrap();
        assert!(
            v.message.starts_with(
                "wait-for cycle n1 -[b]-> n2 -[c]-> n3 -[a]-> n1 (n1 waits for `b` held by n2, \
                 n2 waits for `c` held by n3, n3 waits for `a` held by n1) since 0.040_000s"
            ),
            "{}",
            v.message
        );
        assert!(v.message.ends_with(
            "longer than the bound 1s (slack 1s, no acquire timeout or lease to break a cycle)"
        ));
    }
}
