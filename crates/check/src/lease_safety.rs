//! # lease-safety
//!
//! **Property:** no two distinct nodes ACT on a lease with interleaving actions in true
//! time: no node serves a read or issues a command as leaseholder (`Serves`) strictly
//! between two actions another node made under one lease. No overlap is tolerated: a
//! lease exists to exclude one.
//!
//! A node's *section* runs from its first to its last `Serves` under one lease belief:
//! it ends when the node begins a new lease (a `LeaseStart` while not holding one),
//! crashes or restarts, NOT at its `LeaseEnd`: a node that serves after its lease ended
//! serves on the strength of the old one. A paused leaseholder that, on waking, checks
//! its clock, sees its lease over and never serves on it again passes, though it kept
//! *believing* through the pause: `lease-safety-belief` is the teaching check that
//! flags the belief. `Serves` outside any lease are judged as well (they are actions).
//!
//! **How it fails:** the lease is measured on the wall clock, which jumps; the holder's
//! clock drifts slower than the bound the protocol assumed; a new leader does not wait
//! out the old leader's lease before starting its own; a holder resumes from a pause and
//! serves without checking its clock.
//!
//! **Source:** Gray & Cheriton, "Leases" (SOSP 1989); Ongaro 2014 (Raft thesis) §6.4.1,
//! leader leases for reads and their clock-drift bound; seed article 002, "Leader Lease
//! Pattern" (a lease "to prevent split-brain").
//!
//! Online: an interleaving is reported once both sections have ended (or at the end of
//! the run), with its true common span.

use crate::actions::{Interleaving, Sections};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "lease-safety";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes ACT on a lease (serve reads, issue commands) with interleaving \
              actions",
    property: "no node serves as leaseholder (Serves) strictly between two Serves of \
               another node under one lease (a lease's actions run from its first to its \
               last Serves, across its LeaseEnd, until a new lease, crash or restart)",
    source: "Gray & Cheriton 1989, \"Leases\"; Ongaro 2014 (Raft thesis) §6.4.1; \
             seed article 002, \"Leader Lease Pattern\"",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Two nodes served on their leases with interleaving actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterleavedLeases {
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
    pub records: Vec<usize>,
}

impl From<Interleaving> for InterleavedLeases {
    fn from(i: Interleaving) -> InterleavedLeases {
        InterleavedLeases {
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
        }
    }
}

impl fmt::Display for InterleavedLeases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both served as leaseholders: {} for term {} from {} to {}, {} for \
             term {} from {} to {}; their actions interleaved over {}",
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
            show(self.common)
        )
    }
}

impl From<InterleavedLeases> for Violation {
    fn from(v: InterleavedLeases) -> Violation {
        Violation {
            checker: NAME,
            time: v.second_from,
            nodes: vec![v.first, v.second],
            message: v.to_string(),
            records: v.records,
        }
    }
}

pub struct LeaseSafety {
    clock: TrueClock,
    sections: Sections,
    /// Nodes that believe they hold a lease.
    holding: BTreeSet<NodeId>,
}

impl LeaseSafety {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(LeaseSafety {
            clock: TrueClock::default(),
            sections: Sections::new(Duration::ZERO),
            holding: BTreeSet::new(),
        })
    }
}

impl Checker for LeaseSafety {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let node = record.node;
        match record.obs {
            Observation::Serves { term } => self.sections.act("", node, record.time, index, term),
            Observation::LeaseStart { .. } => {
                // A lease while holding none begins a new section.
                let new_belief = self.holding.insert(node);
                if new_belief {
                    self.sections.end(None, node);
                }
            }
            Observation::LeaseEnd { .. } => {
                self.holding.remove(&node);
            }
            Observation::Crashed | Observation::Started => {
                self.holding.remove(&node);
                self.sections.end(None, node);
            }
            _ => {}
        }
        self.sections
            .take_done()
            .map(|i| InterleavedLeases::from(i).into())
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        self.sections
            .finish()
            .map(|i| InterleavedLeases::from(i).into())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn leases_that_take_turns_pass() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .serves(1)
            .at_ms(100)
            .serves(1)
            .node(1)
            .lease_start(2)
            .serves(2)
            .node(0)
            .lease_end(1)
            .at_ms(200)
            .node(1)
            .serves(2)
            .end_ms(500)
            .history();
        assert_eq!(judge_with("lease-safety", Value::Null, &h), None);
    }

    /// A correct leaseholder paused past its lease: it keeps believing (the belief check
    /// fails) but checks its clock on waking and never serves on the old lease.
    #[test]
    fn a_paused_holder_that_checks_its_clock_passes_and_its_belief_overlaps() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .serves(1)
            .at_ms(50)
            .serves(1)
            .note("paused for 3s")
            .at_ms(2100)
            .node(1)
            .lease_start(2)
            .serves(2)
            .at_ms(2500)
            .serves(2)
            .at_ms(3050)
            .node(0)
            .lease_end(1)
            .at_ms(3500)
            .node(1)
            .serves(2)
            .end_ms(4000)
            .history();
        assert_eq!(judge_with("lease-safety", Value::Null, &h), None);
        let (at, v) = judge_with("lease-safety-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(7));
        assert_eq!(
            v.message,
            "n0 and n1 both believed they held a valid lease from 2.100_000s for 0.950_000s \
             (n0 for term 1 since 0.000_000s, n1 for term 2 since 2.100_000s)"
        );
    }

    /// The same pause, but the leader serves on waking before it looks at its clock.
    #[test]
    fn a_paused_holder_that_serves_on_waking_fails() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .serves(1)
            .note("paused for 3s")
            .at_ms(2100)
            .node(1)
            .lease_start(2)
            .serves(2)
            .at_ms(2500)
            .serves(2)
            .at_ms(3050)
            .node(0)
            .serves(1)
            .lease_end(1)
            .end_ms(4000)
            .history();
        let (at, v) = judge_with("lease-safety", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n0 and n1 both served as leaseholders: n0 for term 1 from 0.000_000s to \
             3.050_000s, n1 for term 2 from 2.100_000s to 2.500_000s; their actions \
             interleaved over 0.400_000s"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1)]);
        assert_eq!(v.time, SimTime(2_100_000_000));
    }

    #[test]
    fn a_crash_ends_the_section() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .serves(1)
            .at_ms(100)
            .crash()
            .node(1)
            .lease_start(2)
            .serves(2)
            .at_ms(200)
            .node(0)
            .started()
            .serves(1) // a bug of its own, but not an interleaving: a new section
            .end_ms(500)
            .history();
        assert_eq!(judge_with("lease-safety", Value::Null, &h), None);
    }
}
