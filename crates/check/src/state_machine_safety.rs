//! # state-machine-safety
//!
//! **Property (State Machine Safety):** if a node has applied a log entry at a given
//! index to its state machine, no other node ever applies a different entry at that
//! index. Precisely: all `LogApply { index, term, digest }` records with the same
//! `index` carry the same `term` and `digest`, whatever the node and the time (a node
//! that restarts and applies its log again must apply the same entries).
//!
//! **How it fails:** an entry is counted as committed on the strength of acknowledgements
//! that did not survive (a follower that acknowledged an append before its fsync and
//! then lost power), and a later leader without it overwrites that index; or two
//! leaders of one term (a vote forgotten by a power loss) each commit their own entry.
//!
//! **Source:** Ongaro & Ousterhout, "In Search of an Understandable Consensus Algorithm"
//! (Raft, USENIX ATC 2014), Figure 3 "State Machine Safety" and §5.4.3.
//!
//! Online and exact: the violation is reported at the second, differing `LogApply`.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "state-machine-safety";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes apply different entries at one log index",
    property: "all LogApply records of one index carry the same term and digest",
    source: "Raft (Ongaro & Ousterhout 2014), Figure 3: State Machine Safety, §5.4.3",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Two different entries applied at one index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DifferentEntriesApplied {
    pub index: u64,
    /// (node, term, digest, time, record) of the first application and of the differing one.
    pub first: Applied,
    pub second: Applied,
}

/// One application of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    pub node: NodeId,
    pub term: u64,
    pub digest: u64,
    pub time: SimTime,
    pub record: usize,
}

impl fmt::Display for DifferentEntriesApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (&self.first, &self.second);
        write!(
            f,
            "{} applied the entry of term {} (digest {:016x}) at index {} at {}, and {} applied \
             a different one, of term {} (digest {:016x}), at the same index at {}",
            a.node, a.term, a.digest, self.index, a.time, b.node, b.term, b.digest, b.time
        )
    }
}

impl From<DifferentEntriesApplied> for Violation {
    fn from(v: DifferentEntriesApplied) -> Violation {
        let mut nodes = vec![v.first.node];
        if v.second.node != v.first.node {
            nodes.push(v.second.node);
        }
        Violation {
            checker: NAME,
            time: v.second.time,
            nodes,
            message: v.to_string(),
            records: vec![v.first.record, v.second.record],
        }
    }
}

pub struct StateMachineSafety {
    clock: TrueClock,
    /// index -> the first application seen.
    applied: BTreeMap<u64, Applied>,
}

impl StateMachineSafety {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(StateMachineSafety {
            clock: TrueClock::default(),
            applied: BTreeMap::new(),
        })
    }
}

impl Checker for StateMachineSafety {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let Observation::LogApply {
            index: at,
            term,
            digest,
        } = record.obs
        else {
            return None;
        };
        let this = Applied {
            node: record.node,
            term,
            digest,
            time: record.time,
            record: index,
        };
        let first = *self.applied.entry(at).or_insert(this);
        if (first.term, first.digest) == (term, digest) {
            return None;
        }
        Some(
            DifferentEntriesApplied {
                index: at,
                first,
                second: this,
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
    use tenure_core::NodeId;

    #[test]
    fn the_same_entries_applied_everywhere_and_again_after_a_restart_pass() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .log_apply(1, 1, 0xa)
            .node(1)
            .log_apply(1, 1, 0xa)
            .at_ms(20)
            .node(0)
            .log_apply(2, 1, 0xb)
            .node(1)
            .crash()
            .at_ms(30)
            .node(1)
            .started()
            .node(1)
            .log_apply(1, 1, 0xa)
            .node(1)
            .log_apply(2, 1, 0xb)
            .node(2)
            .log_apply(1, 1, 0xa)
            .end_ms(40)
            .history();
        assert_eq!(judge_with("state-machine-safety", Value::Null, &h), None);
    }

    #[test]
    fn a_different_entry_applied_at_an_applied_index_is_caught_at_once() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .log_apply(1, 1, 0xa)
            .node(0)
            .log_apply(2, 1, 0xb)
            .at_ms(25)
            .node(2)
            .log_apply(1, 1, 0xa)
            .node(2)
            .log_apply(2, 2, 0xc)
            .history();
        let (at, v) = judge_with("state-machine-safety", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(3));
        assert_eq!(
            v.message,
            "n0 applied the entry of term 1 (digest 000000000000000b) at index 2 at 0.010_000s, \
             and n2 applied a different one, of term 2 (digest 000000000000000c), at the same \
             index at 0.025_000s"
        );
        assert_eq!(v.records, vec![1, 3]);
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2)]);
    }

    #[test]
    fn a_node_that_reapplies_a_different_entry_after_a_restart_is_caught_too() {
        let h = H::nodes(1)
            .at_ms(10)
            .node(0)
            .log_apply(1, 1, 0xa)
            .at_ms(20)
            .node(0)
            .log_apply(1, 1, 0xd)
            .history();
        let (_, v) = judge_with("state-machine-safety", Value::Null, &h).unwrap();
        assert_eq!(v.nodes, vec![NodeId(0)]);
    }
}
