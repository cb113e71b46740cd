//! # single-leader-per-term
//!
//! **Property (Election Safety):** at most one node is elected leader in a given term.
//! Precisely: no two distinct nodes observe `Leader { term }` for the same `term`, at any
//! times (a node observing it twice, or again after a restart, is fine).
//!
//! **How it fails:** two nodes both win a term, e.g. a node that forgets its vote on a
//! restart (votedFor not persisted) and votes twice, or a candidate that counts votes
//! from an older term.
//!
//! **Source:** Ongaro & Ousterhout, "In Search of an Understandable Consensus Algorithm"
//! (Raft, USENIX ATC 2014), §5.2 and Figure 3, "Election Safety".
//!
//! Online and exact: the violation is reported at the second node's `Leader` record.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "single-leader-per-term";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes lead the same term",
    property: "no two distinct nodes observe Leader{term} for the same term",
    source: "Raft (Ongaro & Ousterhout 2014), §5.2 and Figure 3: Election Safety",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Two nodes led the same term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoLeadersInTerm {
    pub term: u64,
    pub first: NodeId,
    pub first_time: SimTime,
    pub first_index: usize,
    pub second: NodeId,
    pub second_time: SimTime,
    pub second_index: usize,
}

impl fmt::Display for TwoLeadersInTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both believed they led term {} ({} from {}, {} from {})",
            self.first,
            self.second,
            self.term,
            self.first,
            self.first_time,
            self.second,
            self.second_time
        )
    }
}

impl From<TwoLeadersInTerm> for Violation {
    fn from(v: TwoLeadersInTerm) -> Violation {
        Violation {
            checker: NAME,
            time: v.second_time,
            nodes: vec![v.first, v.second],
            message: v.to_string(),
            records: vec![v.first_index, v.second_index],
        }
    }
}

pub struct SingleLeaderPerTerm {
    clock: TrueClock,
    /// term -> the first node that led it, when, and its record.
    leaders: BTreeMap<u64, (NodeId, SimTime, usize)>,
}

impl SingleLeaderPerTerm {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(SingleLeaderPerTerm {
            clock: TrueClock::default(),
            leaders: BTreeMap::new(),
        })
    }
}

impl Checker for SingleLeaderPerTerm {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let Observation::Leader { term } = record.obs else {
            return None;
        };
        let &mut (first, first_time, first_index) =
            self.leaders
                .entry(term)
                .or_insert((record.node, record.time, index));
        if first == record.node {
            return None;
        }
        Some(
            TwoLeadersInTerm {
                term,
                first,
                first_time,
                first_index,
                second: record.node,
                second_time: record.time,
                second_index: index,
            }
            .into(),
        )
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;

    #[test]
    fn one_leader_per_term_passes_even_across_restarts() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(20)
            .node(0)
            .crash()
            .at_ms(30)
            .node(0)
            .started()
            .node(0)
            .leader(1)
            .at_ms(40)
            .node(1)
            .leader(2)
            .node(2)
            .follower(2, Some(1))
            .history();
        assert_eq!(judge_with("single-leader-per-term", Value::Null, &h), None);
    }

    #[test]
    fn two_leaders_of_one_term_are_caught_at_the_second() {
        let h = H::nodes(5)
            .at(tenure_core::SimTime(1_203_000_000))
            .node(1)
            .leader(4)
            .node(2)
            .follower(4, Some(1))
            .at(tenure_core::SimTime(1_450_112_000))
            .node(3)
            .leader(4)
            .at_ms(2000)
            .node(4)
            .leader(4)
            .history();
        let (at, v) = judge_with("single-leader-per-term", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "n1 and n3 both believed they led term 4 (n1 from 1.203_000s, n3 from 1.450_112s)"
        );
        assert_eq!(v.records, vec![0, 2]);
        assert_eq!(
            v.nodes,
            vec![tenure_core::NodeId(1), tenure_core::NodeId(3)]
        );
        assert_eq!(v.time, tenure_core::SimTime(1_450_112_000));
    }

    #[test]
    fn leaders_of_different_terms_at_once_are_not_this_checkers_business() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(20)
            .node(1)
            .leader(2)
            .end_ms(100)
            .history();
        assert_eq!(judge_with("single-leader-per-term", Value::Null, &h), None);
    }
}
