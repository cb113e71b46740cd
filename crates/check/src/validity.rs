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
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

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
    /// instance -> the values proposed for it so far.
    proposed: BTreeMap<u64, BTreeSet<u64>>,
}

impl Validity {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(Validity {
            clock: TrueClock::default(),
            proposed: BTreeMap::new(),
        })
    }
}

impl Checker for Validity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        match record.obs {
            Observation::Proposes { instance, value } => {
                self.proposed.entry(instance).or_default().insert(value);
                None
            }
            Observation::Decides { instance, value } => {
                let values = self.proposed.get(&instance);
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
}
