//! # validity
//!
//! **Property (Validity, consensus non-triviality):** only a value that has been
//! proposed may be chosen. Precisely: every `Decides { instance, value }` record is
//! preceded (in true-time order) by a `Proposes { instance, value }` record of some node:
//! the same value, for the same instance. A value proposed for another instance does
//! not count.
//!
//! **How it fails:** a proposer that puts forward a value nobody proposed (a default,
//! an uninitialised field), or an acceptor that reports what it accepted in another
//! decision as accepted in this one, so a proposer adopts it here.
//!
//! **Source:** Lamport, "Paxos Made Simple" (2001), §2.1, the safety requirements
//! ("Only a value that has been proposed may be chosen").
//!
//! With `by_value = true`, a value proposed for any instance counts (state machine
//! replication, where a client proposes a request and the primary picks its sequence
//! number: PBFT). Honest deciders only: a node's `Decides` after its `Byzantine` record
//! (the host's mark that a fault turned it into a liar) are not judged. Its `Proposes`
//! still count: a request a faulty client really sent is a proposal (Castro & Liskov
//! execute faulty clients' requests too); what a liar cannot do is make honest nodes
//! decide a value nobody put forward.
//!
//! Online and exact: the violation is reported at the `Decides` of an unproposed value.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "validity";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "a decided value was proposed for that instance before it was decided",
    property: "every Decides { instance, value } is preceded by a Proposes { instance, value } \
               of some node",
    source: "Lamport, \"Paxos Made Simple\" (2001), §2.1 safety requirements",
    params: "by_value (bool, default false): a value proposed for any instance counts \
             (a client proposes, a primary orders: PBFT)",
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// A value proposed for any instance counts.
    #[serde(default)]
    pub by_value: bool,
}

/// A value decided that nobody had proposed for that instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnproposedValueDecided {
    pub instance: u64,
    pub value: u64,
    pub node: NodeId,
    pub time: SimTime,
    pub record: usize,
    /// The values proposed for the instance by then, in increasing order.
    pub proposed: Vec<u64>,
}

impl fmt::Display for UnproposedValueDecided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proposed = match self.proposed.as_slice() {
            [] => "none had been proposed".to_string(),
            values => format!(
                "only {} had been proposed",
                values
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        write!(
            f,
            "{} decided value {} for instance {} at {}, a value nobody proposed for that \
             instance ({proposed})",
            self.node, self.value, self.instance, self.time
        )
    }
}

impl From<UnproposedValueDecided> for Violation {
    fn from(v: UnproposedValueDecided) -> Violation {
        Violation {
            checker: NAME,
            time: v.time,
            nodes: vec![v.node],
            message: v.to_string(),
            records: vec![v.record],
        }
    }
}

pub struct Validity {
    clock: TrueClock,
    /// instance -> the values proposed for it so far (`by_value`: all under 0).
    proposed: BTreeMap<u64, BTreeSet<u64>>,
    by_value: bool,
    /// Nodes turned Byzantine so far: their decisions are not judged.
    byzantine: BTreeSet<NodeId>,
}

impl Validity {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(Validity {
            clock: TrueClock::default(),
            proposed: BTreeMap::new(),
            by_value: params.by_value,
            byzantine: BTreeSet::new(),
        })
    }
}

impl Checker for Validity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if let Observation::Byzantine { .. } = record.obs {
            self.byzantine.insert(record.node);
        }
        let key = |instance: u64| if self.by_value { 0 } else { instance };
        match record.obs {
            Observation::Proposes { instance, value } => {
                self.proposed
                    .entry(key(instance))
                    .or_default()
                    .insert(value);
                None
            }
            Observation::Decides { .. } if self.byzantine.contains(&record.node) => None,
            Observation::Decides { instance, value } => {
                let values = self.proposed.get(&key(instance));
                if values.is_some_and(|v| v.contains(&value)) {
                    return None;
                }
                Some(
                    UnproposedValueDecided {
                        instance,
                        value,
                        node: record.node,
                        time: record.time,
                        record: index,
                        proposed: values
                            .map(|v| v.iter().copied().collect())
                            .unwrap_or_default(),
                    }
                    .into(),
                )
            }
            _ => None,
        }
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
    fn decisions_of_values_proposed_for_their_instance_pass() {
        let h = H::nodes(3)
            .at_ms(1)
            .node(0)
            .proposes(1, 101)
            .node(1)
            .proposes(1, 102)
            .at_ms(10)
            .node(2)
            .decides(1, 102)
            .node(0)
            .decides(1, 102)
            .at_ms(20)
            .proposes(2, 201)
            .node(2)
            .decides(2, 201)
            .end_ms(30)
            .history();
        assert_eq!(judge_with("validity", Value::Null, &h), None);
    }

    #[test]
    fn a_value_proposed_only_for_another_instance_is_not_valid_here() {
        let h = H::nodes(3)
            .at_ms(1)
            .node(0)
            .proposes(1, 101)
            .node(1)
            .proposes(2, 202)
            .at_ms(10)
            .node(2)
            .decides(1, 101)
            .at_ms(12)
            .decides(2, 101)
            .history();
        let (at, v) = judge_with("validity", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(3));
        assert_eq!(
            v.message,
            "n2 decided value 101 for instance 2 at 0.012_000s, a value nobody proposed for \
             that instance (only 202 had been proposed)"
        );
        assert_eq!(v.nodes, vec![NodeId(2)]);
        assert_eq!(v.records, vec![3]);
    }

    #[test]
    fn a_decision_before_its_proposal_is_caught() {
        let h = H::nodes(2)
            .at_ms(5)
            .node(1)
            .decides(1, 7)
            .at_ms(6)
            .node(0)
            .proposes(1, 7)
            .history();
        let (at, v) = judge_with("validity", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(0));
        assert!(
            v.message.ends_with("(none had been proposed)"),
            "{}",
            v.message
        );
    }

    /// Issue 35: `by_value` accepts a value proposed for another instance (a primary
    /// picks the sequence number); without it the same history fails.
    #[test]
    fn by_value_counts_a_value_proposed_for_any_instance() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .proposes(7, 5001)
            .at_ms(20)
            .node(1)
            .decides(1, 5001)
            .end_ms(30)
            .history();
        let by_value = serde_json::json!({"by_value": true});
        assert_eq!(judge_with("validity", by_value, &h), None);
        assert!(judge_with("validity", Value::Null, &h).is_some());
    }

    /// Issue 35: a Byzantine node's decisions are not judged (unmarked, the same node's
    /// unproposed decision fails); its proposals still count (a faulty client's request
    /// is a proposal).
    #[test]
    fn a_byzantine_nodes_decisions_are_not_judged_and_its_proposals_count() {
        let mark = tenure_core::Observation::Byzantine {
            behaviour: tenure_core::Byzantine::WrongDigest,
        };
        let liar_proposes = H::nodes(3)
            .at_ms(5)
            .node(2)
            .obs(mark.clone())
            .at_ms(10)
            .node(2)
            .proposes(1, 666)
            .at_ms(20)
            .node(0)
            .decides(1, 666)
            .end_ms(30)
            .history();
        assert_eq!(judge_with("validity", Value::Null, &liar_proposes), None);
        let liar_decides = |marked: bool| {
            let h = H::nodes(3).at_ms(5);
            let h = if marked {
                h.node(2).obs(mark.clone())
            } else {
                h
            };
            h.at_ms(20).node(2).decides(1, 666).end_ms(30).history()
        };
        assert_eq!(
            judge_with("validity", Value::Null, &liar_decides(true)),
            None
        );
        assert!(judge_with("validity", Value::Null, &liar_decides(false)).is_some());
    }
}
