//! # no-lost-update
//!
//! **Property:** for each resource, two parts.
//!
//! 1. *The write chain, exactly.* Every accepted `Write` that says what it was computed
//!    from (`based_on: Some(b)`, a read-modify-write) read the value the previous
//!    accepted write produced (0 before the first): `b` equals the current value. A
//!    write computed from an older value overwrites every update since: a lost update,
//!    reported online at that write. A duplicate delivery of the previous accepted write
//!    (same client, same value, same `based_on`) changes nothing and is not judged;
//!    writes without `based_on` are not judged and restart the chain from their value.
//! 2. *The total.* At the end of the run the value of the last accepted `Write` (0 if it
//!    was never written) is at least the sum of the `Acked { amount }` increments
//!    acknowledged for it. "At least" rather than "equal": an increment done but not
//!    acknowledged (the client crashed or timed out before the ack) may be in the value.
//!
//! The chain catches a lost update even when it was never acknowledged (a client's
//! write overwrote another's and then timed out) and names the write that lost it; the
//! total catches acknowledged increments that never reached the resource at all.
//!
//! **How it fails:** two clients read-modify-write without mutual exclusion (or with a
//! lock they no longer hold and no fencing): both read 10, one adds 5 and writes 15, the
//! other adds 3 and writes 13; both are acknowledged, and the final 13 lost the 5.
//!
//! **Source:** seed article 002, "Distributed Lock" ("Read: 10, Add: 5, Write: 15 ...
//! Final value: 13 (wrong!)"); Kleppmann 2016, "How to do distributed locking" (the
//! lost write under a paused lock holder).

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "no-lost-update";

/// At most this many ack records are listed in a violation (a limit on everything).
const MAX_LISTED_ACKS: usize = 32;

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "every acknowledged increment is in the final value",
    property: "per resource, every accepted Write computed from a read (based_on) read the \
               value the previous accepted Write produced (0 before any), and at the end the \
               value of the last accepted Write (0 if none) is at least the sum of the \
               acknowledged amounts (Acked)",
    source: "seed article 002, \"Distributed Lock\" (read 10, add 5, write 15; final 13); \
             Kleppmann 2016, \"How to do distributed locking\"",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// The final value of a resource is missing acknowledged increments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostUpdate {
    pub resource: String,
    pub final_value: i64,
    /// The last accepted write (client, time, record), if any.
    pub last_write: Option<(NodeId, SimTime, usize)>,
    pub acked_sum: i128,
    pub acks: usize,
    /// The clients whose increments were acknowledged, in order of first ack.
    pub ackers: Vec<NodeId>,
    /// The first acknowledgement records (at most `MAX_LISTED_ACKS`).
    pub ack_indices: Vec<usize>,
    pub end: SimTime,
}

impl fmt::Display for LostUpdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.last_write {
            Some((client, time, _)) => write!(
                f,
                "`{}` ended at {} (last written by {} at {}) but the {} acknowledged \
                 increments sum to {}: an acknowledged update was lost",
                self.resource, self.final_value, client, time, self.acks, self.acked_sum
            ),
            None => write!(
                f,
                "`{}` was never written (0) but the {} acknowledged increments sum to {}: \
                 an acknowledged update was lost",
                self.resource, self.acks, self.acked_sum
            ),
        }
    }
}

impl From<LostUpdate> for Violation {
    fn from(v: LostUpdate) -> Violation {
        let mut records = v.ack_indices.clone();
        if let Some((_, _, index)) = v.last_write {
            records.push(index);
        }
        records.sort_unstable();
        Violation {
            checker: NAME,
            time: v.end,
            nodes: v.ackers.clone(),
            message: v.to_string(),
            records,
        }
    }
}

/// An accepted write was computed from a value that was no longer current.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleBase {
    pub resource: String,
    /// The node that recorded the writes (the resource's server).
    pub server: NodeId,
    pub client: NodeId,
    pub value: i64,
    pub based_on: i64,
    pub time: SimTime,
    pub index: usize,
    /// The value the previous accepted write produced, and that write.
    pub current: i64,
    pub previous: Option<(NodeId, SimTime, usize)>,
}

impl fmt::Display for StaleBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` on {} accepted {}'s write of {} at {}, computed from {}, but the value \
             was {}",
            self.resource,
            self.server,
            self.client,
            self.value,
            self.time,
            self.based_on,
            self.current
        )?;
        match self.previous {
            Some((writer, time, _)) => write!(f, " (written by {writer} at {time})")?,
            None => write!(f, " (never written)")?,
        }
        write!(f, ": the updates since {} were overwritten", self.based_on)
    }
}

impl From<StaleBase> for Violation {
    fn from(v: StaleBase) -> Violation {
        let mut nodes = vec![v.server, v.client];
        let mut records = vec![v.index];
        if let Some((writer, _, index)) = v.previous {
            if !nodes.contains(&writer) {
                nodes.push(writer);
            }
            records.insert(0, index);
        }
        Violation {
            checker: NAME,
            time: v.time,
            nodes,
            message: v.to_string(),
            records,
        }
    }
}

/// The last accepted write of a resource, as the chain needs it.
#[derive(Clone, Copy, Debug)]
struct LastWrite {
    client: NodeId,
    time: SimTime,
    index: usize,
    value: i64,
    based_on: Option<i64>,
}

#[derive(Clone, Debug, Default)]
struct Account {
    chain: Option<LastWrite>,
    final_value: i64,
    last_write: Option<(NodeId, SimTime, usize)>,
    acked_sum: i128,
    acks: usize,
    ackers: Vec<NodeId>,
    ack_indices: Vec<usize>,
}

pub struct NoLostUpdate {
    clock: TrueClock,
    accounts: BTreeMap<String, Account>,
}

impl NoLostUpdate {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(NoLostUpdate {
            clock: TrueClock::default(),
            accounts: BTreeMap::new(),
        })
    }
}

impl Checker for NoLostUpdate {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        match &record.obs {
            Observation::Write {
                resource,
                client,
                accepted: true,
                value,
                based_on,
                ..
            } => {
                let account = self.accounts.entry(resource.clone()).or_default();
                let current = account.chain.map_or(0, |w| w.value);
                let duplicate = account.chain.is_some_and(|w| {
                    w.client == *client && w.value == *value && w.based_on == *based_on
                });
                if let Some(b) = based_on.filter(|b| *b != current && !duplicate) {
                    return Some(
                        StaleBase {
                            resource: resource.clone(),
                            server: record.node,
                            client: *client,
                            value: *value,
                            based_on: b,
                            time: record.time,
                            index,
                            current,
                            previous: account.chain.map(|w| (w.client, w.time, w.index)),
                        }
                        .into(),
                    );
                }
                account.chain = Some(LastWrite {
                    client: *client,
                    time: record.time,
                    index,
                    value: *value,
                    based_on: *based_on,
                });
                account.final_value = *value;
                account.last_write = Some((*client, record.time, index));
            }
            Observation::Acked { resource, amount } => {
                let account = self.accounts.entry(resource.clone()).or_default();
                account.acked_sum += i128::from(*amount);
                account.acks += 1;
                if !account.ackers.contains(&record.node) {
                    account.ackers.push(record.node);
                }
                if account.ack_indices.len() < MAX_LISTED_ACKS {
                    account.ack_indices.push(index);
                }
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let (resource, account) = self
            .accounts
            .iter()
            .find(|(_, a)| i128::from(a.final_value) < a.acked_sum)?;
        Some(
            LostUpdate {
                resource: resource.clone(),
                final_value: account.final_value,
                last_write: account.last_write,
                acked_sum: account.acked_sum,
                acks: account.acks,
                ackers: account.ackers.clone(),
                ack_indices: account.ack_indices.clone(),
                end: info.end,
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
    fn serialised_increments_pass() {
        // A reads 10 (the initial value written by n0), adds 5, writes 15; then B adds 3.
        let h = H::nodes(3)
            .node(0)
            .at_ms(1)
            .write("counter", 0, None, true, 10)
            .node(1)
            .acked("counter", 10)
            .at_ms(10)
            .node(0)
            .write("counter", 1, Some(1), true, 15)
            .node(1)
            .acked("counter", 5)
            .at_ms(20)
            .node(0)
            .write("counter", 2, Some(2), true, 18)
            .write("counter", 1, Some(1), false, 13)
            .node(2)
            .acked("counter", 3)
            .end_ms(30)
            .history();
        assert_eq!(judge_with("no-lost-update", Value::Null, &h), None);
    }

    #[test]
    fn read_10_add_5_write_15_is_lost_by_the_concurrent_13() {
        let h = H::nodes(3)
            .node(0)
            .at_ms(1)
            .write("counter", 0, None, true, 10)
            .node(1)
            .acked("counter", 10)
            .at_ms(10)
            .node(0)
            .write("counter", 1, None, true, 15)
            .node(1)
            .acked("counter", 5)
            .at_ms(11)
            .node(0)
            .write("counter", 2, None, true, 13)
            .node(2)
            .acked("counter", 3)
            .end_ms(30)
            .history();
        let (at, v) = judge_with("no-lost-update", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "`counter` ended at 13 (last written by n2 at 0.011_000s) but the 3 acknowledged \
             increments sum to 18: an acknowledged update was lost"
        );
        assert_eq!(v.nodes, vec![NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![1, 3, 4, 5]);
        assert_eq!(v.time, SimTime(30_000_000));
    }

    #[test]
    fn an_acknowledged_increment_never_written_is_lost() {
        let h = H::nodes(2)
            .node(1)
            .at_ms(5)
            .acked("counter", 2)
            .end_ms(10)
            .history();
        let (_, v) = judge_with("no-lost-update", Value::Null, &h).unwrap();
        assert_eq!(
            v.message,
            "`counter` was never written (0) but the 1 acknowledged increments sum to 2: \
             an acknowledged update was lost"
        );
    }

    #[test]
    fn a_final_value_exactly_at_the_acknowledged_sum_passes() {
        let h = H::nodes(2)
            .node(0)
            .at_ms(5)
            .write("counter", 1, None, true, 7)
            .node(1)
            .acked("counter", 7)
            .end_ms(10)
            .history();
        assert_eq!(judge_with("no-lost-update", Value::Null, &h), None);
    }

    /// Writes with their read value, through the resource node n0.
    fn write(h: H, client: u32, accepted: bool, value: i64, based_on: i64) -> H {
        h.node(0).obs(tenure_core::Observation::Write {
            resource: "counter".into(),
            client: NodeId(client),
            token: None,
            accepted,
            value,
            based_on: Some(based_on),
        })
    }

    #[test]
    fn a_chain_of_read_modify_writes_passes_with_rejections_and_duplicates() {
        let h = H::nodes(3).at_ms(1);
        let h = write(h, 1, true, 5, 0).at_ms(2);
        let h = write(h, 1, true, 5, 0).at_ms(3); // the network delivered it twice
        let h = write(h, 2, false, 3, 0).at_ms(4); // fenced off: not in the chain
        let h = write(h, 2, true, 8, 5).at_ms(5);
        let h = write(h, 1, true, 9, 8).end_ms(10).history();
        assert_eq!(judge_with("no-lost-update", Value::Null, &h), None);
    }

    /// The lost update that no ack shows: n2 overwrote n1's 15 with 13 computed from 10,
    /// and nobody acknowledged anything. The total alone passes this history.
    #[test]
    fn a_write_computed_from_an_old_value_is_caught_at_that_write() {
        let h = H::nodes(3).at_ms(1);
        let h = write(h, 1, true, 10, 0).at_ms(10);
        let h = write(h, 1, true, 15, 10).at_ms(11);
        let h = write(h, 2, true, 13, 10).at_ms(12);
        let h = write(h, 1, true, 14, 13).end_ms(30).history();
        let (at, v) = judge_with("no-lost-update", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "`counter` on n0 accepted n2's write of 13 at 0.011_000s, computed from 10, but \
             the value was 15 (written by n1 at 0.010_000s): the updates since 10 were \
             overwritten"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2), NodeId(1)]);
        assert_eq!(v.records, vec![1, 2]);
        assert_eq!(v.time, SimTime(11_000_000));
    }

    #[test]
    fn the_first_write_must_read_zero() {
        let h = write(H::nodes(2).at_ms(1), 1, true, 7, 4).history();
        let (_, v) = judge_with("no-lost-update", Value::Null, &h).unwrap();
        assert!(
            v.message.ends_with(
                "but the value was 0 (never written): the updates since 4 were overwritten"
            ),
            "{}",
            v.message
        );
    }
}
