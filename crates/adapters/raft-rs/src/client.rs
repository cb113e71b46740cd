//! The clients of the raft-rs key-value service, and the operations they send.
//!
//! Every node runs one client beside its raft-rs node (an application process on the
//! same machine). The client sends one operation at a time to the node it believes
//! leads: the node that last answered it or that a reply named, else the leader its own
//! raft-rs node knows of. Operations are reads, writes and compare-and-sets on `keys`
//! registers that start at 0, recorded with Jepsen's conventions (`Invoke`, then
//! `Complete` ok / fail / info) for the `linearizability` check (`cas-register` model,
//! one register per key). As with Jepsen's independent keys, the registers change every
//! `key_period` of the client's wall clock (`k0`, `k1` in the first period, `k2`, `k3`
//! in the next...), so each register's history stays short enough to check even when
//! a long outage leaves many operations of unknown outcome.
//!
//! * **Timeouts and retries.** An operation is recorded once (`Invoke`, then one
//!   `Complete`), however many attempts it takes. No answer within `request_timeout`:
//!   the client tries again on the node after the silent one; a reply "not the leader"
//!   that names the leader: at once, on it; one that names none (an election), or a
//!   proposal raft-rs dropped: on the next node when the attempt's timeout fires. Each attempt has a
//!   fresh id, and a read's ReadIndex context is its attempt id, so every read attempt
//!   has a fresh context, as raft-rs requires. A write keeps its [`Session`] number
//!   across attempts and the state machine applies it once (the Raft dissertation's
//!   client sessions, §6.3), so retrying a write that timed out is safe. An answer to
//!   any attempt answers the operation. After `max_attempts` the client gives up:
//!   `info` if an attempt went over the network (a datagram may arrive late, or twice,
//!   and be proposed by a node that refused an earlier copy: fuzzing found exactly that),
//!   `fail` only if every attempt was refused by the client's own node.
//! * **Writes and compare-and-sets** are proposed as log entries; the leader that
//!   proposed one replies once it has applied it (a compare-and-set whose expected value
//!   does not match takes no effect: `fail`).
//! * **Reads** go through raft-rs's ReadIndex (`RawNode::read_index`), `Safe` or
//!   `LeaseBased` as the variant says; the leader answers once it has applied up to the
//!   read's index.

use serde::{Deserialize, Serialize};
use std::fmt;
use tenure_core::{NodeId, OpOutcome, OpValue};

/// One client operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Op {
    Read { key: u32 },
    Write { key: u32, value: i64 },
    Cas { key: u32, from: i64, to: i64 },
}

impl Op {
    pub fn key(self) -> u32 {
        match self {
            Op::Read { key } | Op::Write { key, .. } | Op::Cas { key, .. } => key,
        }
    }

    /// Jepsen's name of the operation (`read`, `write`, `cas`).
    pub fn f(self) -> &'static str {
        match self {
            Op::Read { .. } => "read",
            Op::Write { .. } => "write",
            Op::Cas { .. } => "cas",
        }
    }

    /// The key as the history names it.
    pub fn key_name(self) -> String {
        format!("k{}", self.key())
    }

    /// The invocation's value: nothing for a read, the value written, `[from to]`.
    pub fn value(self) -> OpValue {
        match self {
            Op::Read { .. } => OpValue::Nil,
            Op::Write { value, .. } => OpValue::Int(value),
            Op::Cas { from, to, .. } => OpValue::Pair(from, to),
        }
    }

    /// The log entry of a write or compare-and-set: `<attempt> <client> <session>
    /// <seq> w <key> <value>` or `... cas <key> <from> <to>`.
    pub fn entry(self, attempt: u64, id: Session) -> Option<Vec<u8>> {
        let head = format!("{attempt} {} {} {}", id.client.0, id.session, id.seq);
        match self {
            Op::Read { .. } => None,
            Op::Write { key, value } => Some(format!("{head} w {key} {value}").into_bytes()),
            Op::Cas { key, from, to } => Some(format!("{head} cas {key} {from} {to}").into_bytes()),
        }
    }

    /// An entry's attempt, session and operation, if it is one of [`Op::entry`]'s.
    pub fn parse_entry(data: &[u8]) -> Option<(u64, Session, Op)> {
        let text = std::str::from_utf8(data).ok()?;
        let mut words = text.split(' ');
        let mut number = || -> Option<u64> { words.next()?.parse().ok() };
        let attempt = number()?;
        let id = Session {
            client: NodeId(u32::try_from(number()?).ok()?),
            session: number()?,
            seq: number()?,
        };
        let op = match (words.next()?, words.next()?.parse().ok()?) {
            ("w", key) => Op::Write {
                key,
                value: words.next()?.parse().ok()?,
            },
            ("cas", key) => Op::Cas {
                key,
                from: words.next()?.parse().ok()?,
                to: words.next()?.parse().ok()?,
            },
            _ => return None,
        };
        Some((attempt, id, op))
    }
}

/// Who wrote a write and which of its writes it is: the Raft dissertation's client
/// sessions (§6.3, "Implementing linearizable semantics"). The state machine applies
/// each `(client, session, seq)` once and answers a duplicate (a retry that was also
/// committed) with the first answer, so a client may retry a write that timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Session {
    pub client: NodeId,
    /// Drawn when the client's process starts (a restarted client is a new session).
    pub session: u64,
    /// The write's number in the session, from 1.
    pub seq: u64,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Read { key } => write!(f, "read k{key}"),
            Op::Write { key, value } => write!(f, "write k{key} {value}"),
            Op::Cas { key, from, to } => write!(f, "cas k{key} {from}->{to}"),
        }
    }
}

/// A client's request: one attempt at an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Request {
    /// Unique per attempt (a read's ReadIndex context).
    pub attempt: u64,
    /// The same for every attempt at one operation.
    pub id: Session,
    pub op: Op,
}

/// How the service answered an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Answer {
    /// Done: a read's value, a write's or a successful compare-and-set's value.
    Ok(i64),
    /// The compare-and-set was applied and found another value: no effect.
    CasFailed,
    /// The node does not lead (it names the leader it knows of, if any); nothing done.
    NotLeader(Option<NodeId>),
    /// raft-rs refused the proposal (`ProposalDropped`); nothing done.
    Dropped,
}

/// The answer to an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reply {
    pub attempt: u64,
    pub answer: Answer,
}

impl Answer {
    /// How the attempt ended, as the history records it, and the value it returned.
    pub fn outcome(self, op: Op) -> (OpOutcome, OpValue) {
        match self {
            Answer::Ok(v) => (
                OpOutcome::Ok,
                match op {
                    Op::Read { .. } => OpValue::Int(v),
                    _ => op.value(),
                },
            ),
            Answer::CasFailed | Answer::NotLeader(_) | Answer::Dropped => {
                (OpOutcome::Fail, op.value())
            }
        }
    }
}

/// The most attempts an operation may have (`max_attempts`' upper limit).
pub const MAX_ATTEMPTS: u32 = 10;

/// The operation a client has open.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Open {
    pub op: Op,
    pub id: Session,
    /// Every attempt's id so far (an answer to any of them answers the operation).
    pub attempts: Vec<u64>,
    /// The node the last attempt went to.
    pub to: NodeId,
    /// Whether some attempt may still take effect (it went over the network): then an
    /// operation given up ends `info`, else `fail`.
    pub unknown: bool,
}

/// One node's client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Client {
    pub open: Option<Open>,
    /// The node to try next: the one that last answered, the leader a reply named, or
    /// the node after one that did not answer. `None`: the leader the client's own
    /// raft-rs node knows of.
    pub guess: Option<NodeId>,
    /// The last value this client saw for each key (what its compare-and-sets expect).
    pub seen: std::collections::BTreeMap<u32, i64>,
    /// This process's session and its last write's number.
    pub session: u64,
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_as_the_operation_and_attempt_they_encode() {
        for op in [
            Op::Write { key: 1, value: -7 },
            Op::Cas {
                key: 0,
                from: 3,
                to: 12,
            },
        ] {
            let id = Session {
                client: NodeId(4),
                session: 77,
                seq: 3,
            };
            let data = op.entry(u64::MAX, id).unwrap();
            assert_eq!(Op::parse_entry(&data), Some((u64::MAX, id, op)));
        }
        let id = Session {
            client: NodeId(0),
            session: 1,
            seq: 1,
        };
        assert_eq!(Op::Read { key: 0 }.entry(1, id), None);
        assert_eq!(Op::parse_entry(b""), None);
        assert_eq!(Op::parse_entry(b"put k1 3"), None);
    }

    #[test]
    fn answers_become_jepsen_outcomes() {
        let cas = Op::Cas {
            key: 0,
            from: 1,
            to: 2,
        };
        assert_eq!(
            Answer::Ok(2).outcome(cas),
            (OpOutcome::Ok, OpValue::Pair(1, 2))
        );
        assert_eq!(
            Answer::CasFailed.outcome(cas),
            (OpOutcome::Fail, OpValue::Pair(1, 2))
        );
        assert_eq!(
            Answer::Ok(5).outcome(Op::Read { key: 0 }),
            (OpOutcome::Ok, OpValue::Int(5))
        );
    }
}
