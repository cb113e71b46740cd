//! # agreement
//!
//! **Property (Agreement, consensus safety):** only a single value is chosen for a
//! decision, so no two learners learn different values. Precisely: all
//! `Decides { instance, value }` records with the same `instance` carry the same
//! `value`, whatever the node and the time (a learner that restarts and learns again
//! must learn the same value, and a learner that learns twice must learn the same value
//! twice).
//!
//! **How it fails:** two proposers each assemble a majority for different values: an
//! acceptor that forgets its promise across a restart and then accepts a lower ballot,
//! a proposer that ignores the values accepted before its ballot, or two proposers
//! using the same ballot number.
//!
//! **Source:** Lamport, "Paxos Made Simple" (2001), §2.1, the safety requirements
//! ("Only a single value is chosen"; "a process never learns that a value has been
//! chosen unless it actually has been"), and §2.3 (learning a chosen value).
//!
//! Honest nodes only: a node's `Decides` after its `Byzantine` record (the host's mark
//! that a fault turned it into a liar) are not judged; what it decided before is.
//!
//! Online and exact: the violation is reported at the second, differing `Decides`.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "agreement";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes decide different values for one instance",
    property: "all Decides records of one instance carry the same value",
    source: "Lamport, \"Paxos Made Simple\" (2001), §2.1 safety requirements and §2.3",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Two different values decided for one instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DifferentValuesDecided {
    pub instance: u64,
    /// The first decision of the instance, and the one that differs from it.
    pub first: Decision,
    pub second: Decision,
}

/// One decision: who learned which value, when, and at which record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub node: NodeId,
    pub value: u64,
    pub time: SimTime,
    pub record: usize,
}

impl fmt::Display for DifferentValuesDecided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (&self.first, &self.second);
        let who = if a.node == b.node {
            format!("{} itself", b.node)
        } else {
            b.node.to_string()
        };
        write!(
            f,
            "{} decided value {} for instance {} at {}, and {who} decided a different \
             value, {}, for the same instance at {}",
            a.node, a.value, self.instance, a.time, b.value, b.time
        )
    }
}

impl From<DifferentValuesDecided> for Violation {
    fn from(v: DifferentValuesDecided) -> Violation {
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

pub struct Agreement {
    clock: TrueClock,
    /// instance -> its first decision.
    decided: BTreeMap<u64, Decision>,
    /// Nodes turned Byzantine so far: their decisions are not judged.
    byzantine: std::collections::BTreeSet<NodeId>,
}

impl Agreement {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(Agreement {
            clock: TrueClock::default(),
            decided: BTreeMap::new(),
            byzantine: std::collections::BTreeSet::new(),
        })
    }
}

impl Checker for Agreement {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if let Observation::Byzantine { .. } = record.obs {
            self.byzantine.insert(record.node);
        }
        let Observation::Decides { instance, value } = record.obs else {
            return None;
        };
        if self.byzantine.contains(&record.node) {
            return None;
        }
        let this = Decision {
            node: record.node,
            value,
            time: record.time,
            record: index,
        };
        let first = *self.decided.entry(instance).or_insert(this);
        if first.value == value {
            return None;
        }
        Some(
            DifferentValuesDecided {
                instance,
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
    fn every_learner_deciding_the_same_value_per_instance_passes() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .decides(1, 101)
            .node(1)
            .decides(1, 101)
            .at_ms(20)
            .node(2)
            .decides(2, 202)
            .node(1)
            .crash()
            .at_ms(30)
            .node(1)
            .started()
            .decides(1, 101)
            .decides(2, 202)
            .end_ms(40)
            .history();
        assert_eq!(judge_with("agreement", Value::Null, &h), None);
    }

    #[test]
    fn two_learners_deciding_different_values_for_one_instance_fail_at_once() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .decides(1, 101)
            .node(0)
            .decides(2, 201)
            .at_ms(25)
            .node(2)
            .decides(1, 101)
            .node(2)
            .decides(2, 202)
            .at_ms(30)
            .node(1)
            .decides(2, 203)
            .history();
        let (at, v) = judge_with("agreement", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(3));
        assert_eq!(
            v.message,
            "n0 decided value 201 for instance 2 at 0.010_000s, and n2 decided a different \
             value, 202, for the same instance at 0.025_000s"
        );
        assert_eq!(v.records, vec![1, 3]);
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2)]);
    }

    #[test]
    fn a_learner_that_learns_a_second_value_disagrees_with_itself() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(1)
            .decides(1, 7)
            .at_ms(20)
            .decides(1, 8)
            .history();
        let (_, v) = judge_with("agreement", Value::Null, &h).unwrap();
        assert_eq!(v.nodes, vec![NodeId(1)]);
        assert!(v.message.contains("n1 itself decided"), "{}", v.message);
    }

    /// What "could not fail" means here: one decision per instance cannot disagree.
    #[test]
    fn one_decision_per_instance_could_not_fail_and_none_is_vacuous() {
        let cluster = tenure_core::Cluster::uniform("node", 3);
        let verdict = |h: &tenure_core::History| {
            let mut c = crate::build("agreement", &Value::Null, &cluster).unwrap();
            for (i, r) in h.records.iter().enumerate() {
                assert!(c.on_record(i, r).is_none());
            }
            assert!(c.finish(&h.info).is_none());
            c.not_judged()
        };
        let none = H::nodes(3)
            .at_ms(5)
            .node(0)
            .proposes(1, 1)
            .end_ms(50)
            .history();
        let why = verdict(&none).expect("vacuous");
        assert_eq!(why.reason, crate::Reason::Vacuous);
        let once = H::nodes(3)
            .at_ms(5)
            .node(0)
            .decides(1, 1)
            .node(1)
            .decides(2, 2)
            .end_ms(50)
            .history();
        let why = verdict(&once).expect("could not fail");
        assert_eq!(why.reason, crate::Reason::CouldNotFail);
        assert_eq!(
            why.why,
            "no instance was decided twice (2 instances, each decided once): decisions \
             disagree only when one instance is decided twice"
        );
        let twice = H::nodes(3)
            .at_ms(5)
            .node(0)
            .decides(1, 1)
            .node(1)
            .decides(1, 1)
            .end_ms(50)
            .history();
        assert_eq!(verdict(&twice), None);
    }

    /// Issue 35: a node's decisions after the host marked it Byzantine are not judged;
    /// the same history without the mark fails (the negative control).
    #[test]
    fn a_byzantine_nodes_decisions_are_not_judged_but_an_honest_ones_are() {
        let h = |marked: bool| {
            let h = H::nodes(3).at_ms(10).node(0).decides(1, 101);
            let h = if marked {
                h.node(2).obs(tenure_core::Observation::Byzantine {
                    behaviour: tenure_core::Byzantine::Equivocate,
                })
            } else {
                h
            };
            h.at_ms(20).node(2).decides(1, 999).end_ms(30).history()
        };
        assert_eq!(judge_with("agreement", Value::Null, &h(true)), None);
        let (_, v) = judge_with("agreement", Value::Null, &h(false)).unwrap();
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2)]);
    }
}
