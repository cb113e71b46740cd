//! # fencing-safety
//!
//! **Property:** for each resource, the resource never accepts a write whose fencing
//! token is lower than a token it has already accepted. Precisely: for every
//! `Write { resource, token: Some(t), accepted: true }` there is no earlier
//! `Write { resource, token: Some(u), accepted: true }` with `u > t`, nor one with
//! `u = t` from a different client: a token names one holder, so the same token
//! accepted from two clients means two clients wrote as that one holder (a lock service
//! that hands one token to two clients, a client that lends its token). The same client
//! writing twice with its token is fine. Writes without a token are not judged here.
//!
//! **How it fails:** the resource does not check tokens at all, compares them against
//! the last *write* instead of the highest accepted token, or the lock service issues
//! tokens that are not monotonic (e.g. reset on restart because the counter was not
//! persisted). This is the property that keeps a resource safe when mutual exclusion of
//! belief is lost to a process pause.
//!
//! **Source:** Kleppmann, "How to do distributed locking" (2016), "Making the lock safe
//! with fencing": the storage server rejects token 33 after it has processed token 34.
//!
//! Online and exact: the violation is reported at the offending write.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "fencing-safety";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "a resource never accepts a fencing token lower than one it accepted",
    property: "per resource, no accepted Write carries a token lower than the token of an \
               earlier accepted Write, nor the same token as an earlier accepted Write of \
               another client (writes without a token are ignored)",
    source: "Kleppmann 2016, \"How to do distributed locking\": making the lock safe with \
             fencing",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// A resource accepted a stale token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleTokenAccepted {
    pub resource: String,
    /// The node that recorded the writes (the resource's server).
    pub server: NodeId,
    pub stale_client: NodeId,
    pub stale_token: u64,
    pub stale_time: SimTime,
    pub stale_index: usize,
    pub newer_client: NodeId,
    pub newer_token: u64,
    pub newer_time: SimTime,
    pub newer_index: usize,
}

impl fmt::Display for StaleTokenAccepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` on {} accepted token {} from {} at {} after it had accepted token {} \
             from {} at {}",
            self.resource,
            self.server,
            self.stale_token,
            self.stale_client,
            self.stale_time,
            self.newer_token,
            self.newer_client,
            self.newer_time
        )
    }
}

impl From<StaleTokenAccepted> for Violation {
    fn from(v: StaleTokenAccepted) -> Violation {
        let mut nodes = vec![v.server, v.stale_client];
        if !nodes.contains(&v.newer_client) {
            nodes.push(v.newer_client);
        }
        Violation {
            checker: NAME,
            time: v.stale_time,
            nodes,
            message: v.to_string(),
            records: vec![v.newer_index, v.stale_index],
        }
    }
}

/// A resource accepted one token from two different clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSharedByTwoClients {
    pub resource: String,
    /// The node that recorded the writes (the resource's server).
    pub server: NodeId,
    pub token: u64,
    pub first_client: NodeId,
    pub first_time: SimTime,
    pub first_index: usize,
    pub second_client: NodeId,
    pub second_time: SimTime,
    pub second_index: usize,
}

impl fmt::Display for TokenSharedByTwoClients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` on {} accepted token {} from {} at {} after it had accepted the same \
             token from {} at {}: one token, two holders",
            self.resource,
            self.server,
            self.token,
            self.second_client,
            self.second_time,
            self.first_client,
            self.first_time
        )
    }
}

impl From<TokenSharedByTwoClients> for Violation {
    fn from(v: TokenSharedByTwoClients) -> Violation {
        Violation {
            checker: NAME,
            time: v.second_time,
            nodes: vec![v.server, v.second_client, v.first_client],
            message: v.to_string(),
            records: vec![v.first_index, v.second_index],
        }
    }
}

/// The highest token a resource has accepted, and the first write that carried it.
#[derive(Clone, Debug)]
struct Highest {
    token: u64,
    client: NodeId,
    time: SimTime,
    index: usize,
}

pub struct FencingSafety {
    clock: TrueClock,
    highest: BTreeMap<String, Highest>,
}

impl FencingSafety {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(FencingSafety {
            clock: TrueClock::default(),
            highest: BTreeMap::new(),
        })
    }
}

impl Checker for FencingSafety {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let Observation::Write {
            resource,
            client,
            token: Some(token),
            accepted: true,
            ..
        } = &record.obs
        else {
            return None;
        };
        let now = Highest {
            token: *token,
            client: *client,
            time: record.time,
            index,
        };
        match self.highest.get_mut(resource) {
            None => {
                self.highest.insert(resource.clone(), now);
                None
            }
            Some(high) if *token > high.token => {
                *high = now;
                None
            }
            Some(high) if *token == high.token && *client == high.client => None,
            Some(high) if *token == high.token => Some(
                TokenSharedByTwoClients {
                    resource: resource.clone(),
                    server: record.node,
                    token: *token,
                    first_client: high.client,
                    first_time: high.time,
                    first_index: high.index,
                    second_client: *client,
                    second_time: record.time,
                    second_index: index,
                }
                .into(),
            ),
            Some(high) => Some(
                StaleTokenAccepted {
                    resource: resource.clone(),
                    server: record.node,
                    stale_client: *client,
                    stale_token: *token,
                    stale_time: record.time,
                    stale_index: index,
                    newer_client: high.client,
                    newer_token: high.token,
                    newer_time: high.time,
                    newer_index: high.index,
                }
                .into(),
            ),
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
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn increasing_and_equal_tokens_pass_and_rejected_or_untokened_writes_are_ignored() {
        let h = H::nodes(3)
            .node(0)
            .at_ms(10)
            .write("file", 1, Some(33), true, 1)
            .at_ms(20)
            .write("file", 1, Some(33), true, 2)
            .at_ms(30)
            .write("file", 2, Some(34), true, 3)
            .at_ms(40)
            .write("file", 1, Some(33), false, 4)
            .at_ms(50)
            .write("file", 1, None, true, 5)
            .write("other", 1, Some(1), true, 5)
            .history();
        assert_eq!(judge_with("fencing-safety", Value::Null, &h), None);
    }

    #[test]
    fn accepting_token_33_after_34_is_caught_at_that_write() {
        let h = H::nodes(3)
            .node(0)
            .at_ms(10)
            .write("file", 1, Some(33), true, 1)
            .at_ms(20)
            .write("file", 2, Some(34), true, 2)
            .at_ms(30)
            .write("file", 1, Some(33), true, 3)
            .history();
        let (at, v) = judge_with("fencing-safety", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "`file` on n0 accepted token 33 from n1 at 0.030_000s after it had accepted \
             token 34 from n2 at 0.020_000s"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![1, 2]);
        assert_eq!(v.time, SimTime(30_000_000));
    }

    #[test]
    fn one_token_accepted_from_two_clients_is_caught_at_the_second() {
        let h = H::nodes(3)
            .node(0)
            .at_ms(10)
            .write("file", 1, Some(33), true, 1)
            .at_ms(20)
            .write("file", 1, Some(33), true, 2)
            .at_ms(30)
            .write("file", 2, Some(33), true, 3)
            .history();
        let (at, v) = judge_with("fencing-safety", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "`file` on n0 accepted token 33 from n2 at 0.030_000s after it had accepted the \
             same token from n1 at 0.010_000s: one token, two holders"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2), NodeId(1)]);
        assert_eq!(v.records, vec![0, 2]);
        // A rejected write with the shared token is the resource doing its job.
        let rejected = H::nodes(3)
            .node(0)
            .at_ms(10)
            .write("file", 1, Some(33), true, 1)
            .at_ms(30)
            .write("file", 2, Some(33), false, 3)
            .history();
        assert_eq!(judge_with("fencing-safety", Value::Null, &rejected), None);
    }
}
