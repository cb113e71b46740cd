//! # single-leader-at-a-time
//!
//! **Property:** no two distinct nodes ACT as leader with interleaving actions in true
//! time: no node serves a read or issues a command as leader (`Serves`) strictly
//! between two actions another node made under one leadership; interleavings whose
//! common span is at most `max_overlap` are tolerated.
//!
//! A node's *section* runs from its first to its last `Serves` under one leadership
//! belief: it ends when the node begins a new leadership (a `Leader` while not leading),
//! crashes or restarts, NOT when it steps down: a node that acts after stepping down
//! acts on the strength of its old leadership. A deposed or paused leader that keeps
//! *believing* but does not act passes; `single-leader-at-a-time-belief` is the
//! teaching check that flags the belief. This check needs no terms, so it fits
//! protocols without them (bully).
//!
//! **How it fails:** two nodes each believe the other dead and both act as coordinator
//! (bully under a partition); a leader resumes from a pause and acts before learning
//! that another leads; a leader never steps down and keeps acting alongside the new one.
//!
//! **Source:** Ongaro, "Consensus: Bridging Theory and Practice" (PhD thesis, 2014),
//! §6.2 (a deposed leader may not know it) and §9.6 (CheckQuorum); Garcia-Molina,
//! "Elections in a Distributed Computing System" (1982) on the bully algorithm's
//! assumptions; Kleppmann, "How to do distributed locking" (2016) on process pauses.
//!
//! Online: an interleaving is reported once both sections have ended (or at the end of
//! the run), with its true common span.

use crate::actions::{Interleaving, Sections};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "single-leader-at-a-time";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes ACT as leader (serve reads, issue commands) with interleaving \
              actions",
    property: "no node acts as leader (Serves) strictly between two Serves of another node \
               under one leadership (a leadership's actions run from its first to its last \
               Serves, across a step-down, until a new leadership, crash or restart); \
               interleavings whose common span is at most max_overlap are tolerated",
    source: "Ongaro 2014 (Raft thesis) §6.2 and §9.6 (CheckQuorum); Garcia-Molina 1982; \
             Kleppmann 2016, \"How to do distributed locking\" (process pauses)",
    params: "max_overlap (duration, default \"0s\"): interleavings with a common span up \
             to this long are tolerated (0s: none); bound (string, optional): how \
             max_overlap was derived, stated in the report",
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Interleavings with a common span up to this long are tolerated.
    #[serde(default)]
    pub max_overlap: HumanDuration,
    /// How `max_overlap` was derived from the protocol's parameters (a promise's
    /// derivation, stated in the report).
    #[serde(default)]
    pub bound: Option<String>,
}

/// Two nodes acted as leader with interleaving actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterleavedLeaders {
    pub first: NodeId,
    pub first_term: u64,
    pub first_from: SimTime,
    pub first_to: SimTime,
    pub second: NodeId,
    pub second_term: u64,
    pub second_from: SimTime,
    pub second_to: SimTime,
    /// The length of the common span of the two sections.
    pub common: Duration,
    pub max_overlap: Duration,
    /// How `max_overlap` was derived, if the protocol declared it.
    pub bound: Option<String>,
    pub records: Vec<usize>,
}

impl InterleavedLeaders {
    fn new(i: Interleaving, max_overlap: Duration, bound: Option<String>) -> InterleavedLeaders {
        InterleavedLeaders {
            bound,
            common: i.common(),
            records: i.records(),
            first: i.earlier.node,
            first_term: i.earlier.detail,
            first_from: i.earlier.first,
            first_to: i.earlier.last,
            second: i.later.node,
            second_term: i.later.detail,
            second_from: i.later.first,
            second_to: i.later.last,
            max_overlap,
        }
    }
}

impl fmt::Display for InterleavedLeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both acted as leader: {} in term {} from {} to {}, {} in term {} \
             from {} to {}; their actions interleaved over {} (tolerated overlap {})",
            self.first,
            self.second,
            self.first,
            self.first_term,
            self.first_from,
            self.first_to,
            self.second,
            self.second_term,
            self.second_from,
            self.second_to,
            show(self.common),
            format_duration(self.max_overlap)
        )?;
        if let Some(bound) = &self.bound {
            write!(
                f,
                " [bound {} = {bound}]",
                format_duration(self.max_overlap)
            )?;
        }
        Ok(())
    }
}

impl From<InterleavedLeaders> for Violation {
    fn from(v: InterleavedLeaders) -> Violation {
        Violation {
            checker: NAME,
            time: v.second_from,
            nodes: vec![v.first, v.second],
            message: v.to_string(),
            records: v.records,
        }
    }
}

pub struct SingleLeaderAtATime {
    max_overlap: Duration,
    bound: Option<String>,
    clock: TrueClock,
    sections: Sections,
    /// Nodes that believe they lead.
    leading: BTreeSet<NodeId>,
}

impl SingleLeaderAtATime {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(SingleLeaderAtATime {
            max_overlap: params.max_overlap.0,
            bound: params.bound,
            clock: TrueClock::default(),
            sections: Sections::new(params.max_overlap.0),
            leading: BTreeSet::new(),
        })
    }
}

impl Checker for SingleLeaderAtATime {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let node = record.node;
        match record.obs {
            Observation::Serves { term } => self.sections.act("", node, record.time, index, term),
            Observation::Leader { .. } => {
                // Leading while not leading begins a new section.
                let new_belief = self.leading.insert(node);
                if new_belief {
                    self.sections.end(None, node);
                }
            }
            Observation::Follower { .. } | Observation::Candidate { .. } => {
                self.leading.remove(&node);
            }
            Observation::Crashed | Observation::Started => {
                self.leading.remove(&node);
                self.sections.end(None, node);
            }
            _ => {}
        }
        self.sections
            .take_done()
            .map(|i| InterleavedLeaders::new(i, self.max_overlap, self.bound.clone()).into())
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        self.sections
            .finish()
            .map(|i| InterleavedLeaders::new(i, self.max_overlap, self.bound.clone()).into())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::{json, Value};
    use tenure_core::NodeId;

    #[test]
    fn a_handover_passes_even_when_the_old_leader_believes_a_while_longer() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(0)
            .serves(0)
            .at_ms(90)
            .serves(0)
            .note("partitioned")
            .at_ms(100)
            .node(1)
            .leader(0)
            .serves(0)
            .at_ms(500)
            .serves(0)
            .at_ms(600)
            .node(0)
            .follower(0, Some(1))
            .end_ms(1000)
            .history();
        assert_eq!(judge_with("single-leader-at-a-time", Value::Null, &h), None);
        let (at, v) = judge_with("single-leader-at-a-time-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(7));
        assert!(
            v.message
                .starts_with("n0 and n1 both believed they led from 0.100_000s for 0.500_000s"),
            "{}",
            v.message
        );
    }

    #[test]
    fn two_coordinators_acting_at_once_fail_without_terms() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(2)
            .leader(0)
            .serves(0)
            .at_ms(100)
            .node(1)
            .leader(0)
            .serves(0)
            .at_ms(200)
            .node(2)
            .serves(0)
            .at_ms(300)
            .node(1)
            .serves(0)
            .end_ms(1000)
            .history();
        let (at, v) = judge_with("single-leader-at-a-time", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(v.nodes, vec![NodeId(2), NodeId(1)]);
        assert_eq!(
            v.message,
            "n2 and n1 both acted as leader: n2 in term 0 from 0.010_000s to 0.200_000s, n1 \
             in term 0 from 0.100_000s to 0.300_000s; their actions interleaved over \
             0.100_000s (tolerated overlap 0s)"
        );
        assert_eq!(
            judge_with(
                "single-leader-at-a-time",
                json!({"max_overlap": "100ms"}),
                &h
            ),
            None
        );
    }

    #[test]
    fn leading_again_later_starts_a_new_section() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .leader(0)
            .serves(0)
            .at_ms(10)
            .follower(0, Some(1))
            .node(1)
            .leader(0)
            .serves(0)
            .at_ms(20)
            .follower(0, Some(0))
            .node(0)
            .leader(0)
            .serves(0)
            .end_ms(100)
            .history();
        assert_eq!(judge_with("single-leader-at-a-time", Value::Null, &h), None);
    }
}
