//! # exactly-once
//!
//! **Property:** every idempotency key takes effect exactly once if its client was told
//! it succeeded, and at most once in any case. Precisely: (a) no key is `Applied` twice;
//! (b) at the end of the run, every key with a `Completed { key, ok: true }` was
//! `Applied` at least once.
//!
//! (a) is online and exact: the second `Applied` is the violation. (b) is judged at the
//! end (the effect may be recorded after the client hears of it); the earliest such
//! `Completed` is reported.
//!
//! **How it fails:** the client retries after a timeout and the service does not
//! deduplicate by key (double charge); the dedup table is kept in memory and lost on a
//! crash; the service answers "ok" from a cache before the effect is durable.
//!
//! **Source:** seed article 003, "Idempotency" ("using a unique transaction ID ensures
//! payment is processed only once").

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "exactly-once";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "each idempotency key takes effect once, and every success took effect",
    property: "no key is Applied twice; at the end, every key with Completed{ok: true} was \
               Applied at least once",
    source: "seed article 003, \"Idempotency\" (a unique transaction id per payment)",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Where and when something about a key happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub node: NodeId,
    pub time: SimTime,
    pub index: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExactlyOnceViolation {
    /// The effect of `key` happened twice.
    AppliedTwice {
        key: String,
        first: Seen,
        second: Seen,
    },
    /// The client was told `key` succeeded, but its effect never happened.
    NeverApplied { key: String, completed: Seen },
}

impl fmt::Display for ExactlyOnceViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExactlyOnceViolation::AppliedTwice { key, first, second } => write!(
                f,
                "`{key}` took effect twice: on {} at {} and again on {} at {}",
                first.node, first.time, second.node, second.time
            ),
            ExactlyOnceViolation::NeverApplied { key, completed } => write!(
                f,
                "{} was told at {} that `{key}` succeeded, but it never took effect",
                completed.node, completed.time
            ),
        }
    }
}

impl From<ExactlyOnceViolation> for Violation {
    fn from(v: ExactlyOnceViolation) -> Violation {
        let message = v.to_string();
        let (time, nodes, records) = match v {
            ExactlyOnceViolation::AppliedTwice { first, second, .. } => {
                let mut nodes = vec![first.node];
                if second.node != first.node {
                    nodes.push(second.node);
                }
                (second.time, nodes, vec![first.index, second.index])
            }
            ExactlyOnceViolation::NeverApplied { completed, .. } => {
                (completed.time, vec![completed.node], vec![completed.index])
            }
        };
        Violation {
            checker: NAME,
            time,
            nodes,
            message,
            records,
        }
    }
}

pub struct ExactlyOnce {
    clock: TrueClock,
    applied: BTreeMap<String, Seen>,
    /// Keys reported successful and not (yet) applied: the first such report.
    unapplied_successes: BTreeMap<String, Seen>,
}

impl ExactlyOnce {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(ExactlyOnce {
            clock: TrueClock::default(),
            applied: BTreeMap::new(),
            unapplied_successes: BTreeMap::new(),
        })
    }
}

impl Checker for ExactlyOnce {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let seen = Seen {
            node: record.node,
            time: record.time,
            index,
        };
        match &record.obs {
            Observation::Applied { key } => {
                if let Some(first) = self.applied.get(key) {
                    return Some(
                        ExactlyOnceViolation::AppliedTwice {
                            key: key.clone(),
                            first: *first,
                            second: seen,
                        }
                        .into(),
                    );
                }
                self.applied.insert(key.clone(), seen);
                self.unapplied_successes.remove(key);
            }
            Observation::Completed { key, ok: true } if !self.applied.contains_key(key) => {
                self.unapplied_successes.entry(key.clone()).or_insert(seen);
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        let (key, completed) = self
            .unapplied_successes
            .iter()
            .min_by_key(|(_, seen)| seen.index)?;
        Some(
            ExactlyOnceViolation::NeverApplied {
                key: key.clone(),
                completed: *completed,
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn a_retried_payment_applied_once_passes() {
        let h = H::nodes(2)
            .at_ms(1)
            .node(1)
            .requested("tx-7")
            .at_ms(5)
            .node(0)
            .applied("tx-7")
            .at_ms(20)
            .node(1)
            .requested("tx-7") // retry after a timeout
            .at_ms(25)
            .node(1)
            .completed("tx-7", true)
            .completed("tx-8", false) // failures need not take effect
            .end_ms(50)
            .history();
        assert_eq!(judge_with("exactly-once", Value::Null, &h), None);
    }

    #[test]
    fn a_double_charge_is_caught_at_the_second_apply() {
        let h = H::nodes(3)
            .at_ms(5)
            .node(0)
            .applied("tx-7")
            .at_ms(20)
            .node(2)
            .requested("tx-7")
            .at_ms(23)
            .node(1)
            .applied("tx-7")
            .end_ms(50)
            .history();
        let (at, v) = judge_with("exactly-once", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "`tx-7` took effect twice: on n0 at 0.005_000s and again on n1 at 0.023_000s"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1)]);
        assert_eq!(v.records, vec![0, 2]);
        assert_eq!(v.time, SimTime(23_000_000));
    }

    #[test]
    fn a_success_that_never_took_effect_is_caught_at_the_end() {
        let h = H::nodes(3)
            .at_ms(5)
            .node(2)
            .completed("tx-9", true)
            .at_ms(6)
            .node(1)
            .completed("tx-1", true)
            .at_ms(7)
            .node(0)
            .applied("tx-1")
            .end_ms(50)
            .history();
        let (at, v) = judge_with("exactly-once", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n2 was told at 0.005_000s that `tx-9` succeeded, but it never took effect"
        );
        assert_eq!(v.records, vec![0]);
    }
}
