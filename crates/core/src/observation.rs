//! The Observation vocabulary and the History of a run.
//!
//! An observation records what a node *believes* (it leads, it holds a lock) or *did*
//! (it served a read as leaseholder, it acted on a resource as lock holder, a resource
//! accepted a write, a payment took effect). Checkers judge observations
//! only, never a protocol's internals, so a checker cannot share the bug it looks for.

use crate::{Cluster, LocalTime, NodeId, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a node believes or did. Lifecycle entries (`Started`, `Crashed`) are made by
/// the host, not the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Observation {
    /// The host started (or restarted) the node's process.
    Started,
    /// The host crashed the node: every belief it held is gone.
    Crashed,
    /// The host turned the node Byzantine (a `byzantine` fault event): from here on it
    /// lies as `behaviour` says. Checkers of agreement, validity and decisions ignore
    /// what a node records after this (a liar's observations prove nothing).
    Byzantine { behaviour: crate::Byzantine },

    // --- elections ---
    /// The node believes it is the leader of `term`.
    Leader { term: u64 },
    /// The node follows `leader` (if it knows one) in `term`.
    Follower { term: u64, leader: Option<NodeId> },
    /// The node stands for election in `term`.
    Candidate { term: u64 },

    // --- leases ---
    /// The node believes it holds a valid leader lease for `term` from now on and may
    /// act on it (serve lease reads, issue commands).
    LeaseStart { term: u64 },
    /// The node believes its lease for `term` is no longer valid.
    LeaseEnd { term: u64 },
    /// The node ACTS as the leader of `term`: it serves a read or issues a command on the
    /// strength of its leadership (and of its lease, if it holds one), having checked
    /// its clock just now. `lease-safety` and `single-leader-at-a-time` judge these.
    Serves { term: u64 },

    // --- client leases (a lease service's sessions: etcd's `LeaseGrant`) ---
    /// The lease service's primary (etcd's leader lessor) granted or renewed the client
    /// lease `lease` for `ttl_ms` milliseconds from now, on a client's request (a grant
    /// or a keep-alive; a leader change is not a renewal). `lease-expiry` judges these:
    /// once they stop, the lease is owed its end.
    LeaseRenewed { lease: u64, ttl_ms: u64 },
    /// The service ended the client lease `lease` (expired and revoked, or revoked on
    /// request): what was bound to it is gone.
    LeaseRevoked { lease: u64 },

    // --- locks ---
    /// A client starts waiting for `resource`.
    Waiting { resource: String },
    /// A client believes it holds `resource`, with fencing `token` (0 when the lock
    /// service issues none).
    Holds { resource: String, token: u64 },
    /// A client believes it no longer holds `resource`.
    Releases { resource: String },
    /// A client retries an attempt that failed (a lock it did not get, an election that
    /// did not end): `what` is the resource or `election`, `attempt` counts the retries
    /// of this operation from 1. Metrics count them; no checker reads them.
    Retry { what: String, attempt: u32 },
    /// A client ACTS on `resource` as its lock holder (sends it a read or a write), with
    /// fencing `token` (0 when the lock service issues none). `mutual-exclusion` judges
    /// these: what a client does, not what it believes.
    Acts { resource: String, token: u64 },
    /// A client stops waiting for `resource` without getting it (an acquire timeout, a
    /// refused try-lock); it may start waiting again later.
    GivesUp { resource: String },
    /// A coordinator of a sharded service starts acting as the owner of `resource`
    /// (granting and serving its lock) under membership `epoch`.
    Owns { resource: String, epoch: u64 },
    /// The coordinator stops acting as the owner of `resource` (it handed it over).
    Disowns { resource: String, epoch: u64 },
    /// A client finished one unit of work (a multi-lock client: it held every lock of one
    /// request, did its work and released them). `no-starvation` counts these.
    Done,

    // --- protected resources ---
    /// The resource got a write from `client` with `token` (if any) and accepted it or
    /// not. `value` is the value written; `based_on` the value the client read and
    /// computed it from, if the client said (`no-lost-update` checks the chain).
    Write {
        resource: String,
        client: NodeId,
        token: Option<u64>,
        accepted: bool,
        value: i64,
        #[serde(default)]
        based_on: Option<i64>,
    },
    /// A client's read-modify-write of `amount` was acknowledged as done.
    Acked { resource: String, amount: i64 },

    // --- idempotent operations ---
    /// A client issues the operation with idempotency `key` (first attempt).
    Requested { key: String },
    /// The service applied the effect of `key` (charged the card, sent the email).
    Applied { key: String },
    /// The client learned the outcome of `key`.
    Completed { key: String, ok: bool },

    // --- client operations (Jepsen histories) ---
    /// A client (the process is the node) invokes operation `f` (`read`, `write`,
    /// `cas`...) on `key` with `value` (Jepsen's `:invoke`). At most one operation per
    /// node is open at a time.
    Invoke {
        f: String,
        key: String,
        value: OpValue,
    },
    /// The node's open operation `f` on `key` ended: `ok` with what it returned, `fail`
    /// (it certainly took no effect), or `info` (no reply came in time: unknown). An
    /// operation still open when its node crashes or the run ends is unknown too.
    Complete {
        f: String,
        key: String,
        outcome: OpOutcome,
        value: OpValue,
    },

    // --- replicated logs ---
    /// The node wrote the entry of `term` whose content hashes to `digest` at `index` of
    /// its log: its log now holds that entry at `index` and nothing after it (a write at
    /// `index` replaces the entry there and every later one). After `Started`, a node
    /// reports the log it recovered, from index 1. `log-matching` judges these.
    LogAppend { index: u64, term: u64, digest: u64 },
    /// The node applied the committed entry at `index` (written in `term`, content
    /// hashed to `digest`) to its state machine. `state-machine-safety` judges these.
    LogApply { index: u64, term: u64, digest: u64 },
    // --- consensus ---
    /// The node puts `value` forward for decision `instance` as its own input (a Paxos
    /// proposer's own value; not a value it adopted from an earlier ballot).
    /// `validity` judges these.
    Proposes { instance: u64, value: u64 },
    /// The node learned that `value` was chosen for decision `instance` (a learner that
    /// saw a majority of acceptors accept it). `agreement` and `validity` judge these.
    Decides { instance: u64, value: u64 },

    /// Code under test panicked inside the node (the host or adapter caught it):
    /// `message` is the panic's, `input` what the node was handling. `no-panic` judges
    /// these; the node stops handling input until it restarts.
    Panicked { message: String, input: String },

    /// A free-form note for people reading the trace; no checker reads it.
    Note { text: String },
    /// A user-defined observation for a user-defined checker: one number.
    Custom { name: String, value: i64 },
    /// A user-defined observation with named, typed fields, for a user-defined checker
    /// (built with [`Observation::structured`]; read with [`Observation::field`]). In a
    /// trace: `{"kind":"structured","name":"grant","fields":{"client":3,"why":"queue"}}`.
    Structured {
        name: String,
        fields: BTreeMap<String, FieldValue>,
    },
}

/// One field of an [`Observation::Structured`]: a number, a text or a flag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl FieldValue {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            FieldValue::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn as_text(&self) -> Option<&str> {
        match self {
            FieldValue::Text(v) => Some(v),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            FieldValue::Bool(v) => Some(*v),
            _ => None,
        }
    }
}

impl From<i64> for FieldValue {
    fn from(v: i64) -> FieldValue {
        FieldValue::Int(v)
    }
}
impl From<u32> for FieldValue {
    fn from(v: u32) -> FieldValue {
        FieldValue::Int(i64::from(v))
    }
}
impl From<bool> for FieldValue {
    fn from(v: bool) -> FieldValue {
        FieldValue::Bool(v)
    }
}
impl From<&str> for FieldValue {
    fn from(v: &str) -> FieldValue {
        FieldValue::Text(v.to_string())
    }
}
impl From<String> for FieldValue {
    fn from(v: String) -> FieldValue {
        FieldValue::Text(v)
    }
}
impl From<NodeId> for FieldValue {
    fn from(v: NodeId) -> FieldValue {
        FieldValue::Int(i64::from(v.0))
    }
}

impl Observation {
    /// An empty [`Observation::Structured`] named `name`; add fields with
    /// [`with`](Self::with): `Observation::structured("grant").with("client", node)`.
    pub fn structured(name: impl Into<String>) -> Observation {
        Observation::Structured {
            name: name.into(),
            fields: BTreeMap::new(),
        }
    }

    /// This observation with one more field (only [`Observation::Structured`] has fields;
    /// on any other kind it is the observation unchanged).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<FieldValue>) -> Observation {
        if let Observation::Structured { fields, .. } = &mut self {
            fields.insert(key.into(), value.into());
        }
        self
    }

    /// A field of an [`Observation::Structured`].
    pub fn field(&self, key: &str) -> Option<&FieldValue> {
        match self {
            Observation::Structured { fields, .. } => fields.get(key),
            _ => None,
        }
    }

    /// The short name used in traces and narratives.
    pub fn kind(&self) -> &'static str {
        match self {
            Observation::Started => "started",
            Observation::Crashed => "crashed",
            Observation::Byzantine { .. } => "byzantine",
            Observation::Leader { .. } => "leader",
            Observation::Follower { .. } => "follower",
            Observation::Candidate { .. } => "candidate",
            Observation::LeaseStart { .. } => "lease-start",
            Observation::LeaseEnd { .. } => "lease-end",
            Observation::Serves { .. } => "serves",
            Observation::LeaseRenewed { .. } => "lease-renewed",
            Observation::LeaseRevoked { .. } => "lease-revoked",
            Observation::Waiting { .. } => "waiting",
            Observation::Holds { .. } => "holds",
            Observation::Releases { .. } => "releases",
            Observation::Retry { .. } => "retry",
            Observation::Acts { .. } => "acts",
            Observation::GivesUp { .. } => "gives-up",
            Observation::Done => "done",
            Observation::Owns { .. } => "owns",
            Observation::Disowns { .. } => "disowns",
            Observation::Write { .. } => "write",
            Observation::Acked { .. } => "acked",
            Observation::Requested { .. } => "requested",
            Observation::Applied { .. } => "applied",
            Observation::Completed { .. } => "completed",
            Observation::Invoke { .. } => "invoke",
            Observation::Complete { .. } => "complete",
            Observation::LogAppend { .. } => "log-append",
            Observation::LogApply { .. } => "log-apply",
            Observation::Proposes { .. } => "proposes",
            Observation::Decides { .. } => "decides",
            Observation::Panicked { .. } => "panicked",
            Observation::Note { .. } => "note",
            Observation::Structured { .. } => "structured",
            Observation::Custom { .. } => "custom",
        }
    }
}

/// The value of a client operation: nothing, a number, or a pair (a compare-and-set's
/// `[from to]`). Serialized as JSON `null`, `3`, `[1, 2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OpValue {
    Nil,
    Int(i64),
    Pair(i64, i64),
}

/// How a client operation ended (Jepsen's completion types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpOutcome {
    Ok,
    Fail,
    Info,
}

/// One observation, stamped by the host with true time and the node's clock readings.
/// Built with [`Record::new`] (a checker's tests build them); `#[non_exhaustive]`, so a
/// field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Record {
    /// True time (the simulator's), which the node itself never sees.
    pub time: SimTime,
    pub node: NodeId,
    /// The node's monotonic and wall clock readings at that instant.
    pub mono: LocalTime,
    pub wall: LocalTime,
    pub obs: Observation,
}

impl Record {
    /// `obs` by `node` at true time `time`, when its monotonic clock read `mono` and its
    /// wall clock `wall`.
    pub fn new(
        time: SimTime,
        node: NodeId,
        mono: LocalTime,
        wall: LocalTime,
        obs: Observation,
    ) -> Record {
        Record {
            time,
            node,
            mono,
            wall,
            obs,
        }
    }
}

/// What checkers need to know about the run besides the observations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    pub cluster: Cluster,
    pub seed: u64,
    /// When the run ended (true time).
    pub end: SimTime,
    /// When the last fault ended (the last heal, restart or resume): the liveness phase
    /// starts here. `SimTime::ZERO` if the run had no faults.
    pub calm_from: SimTime,
}

/// Every observation of a run, in true-time order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub info: RunInfo,
    pub records: Vec<Record>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structured_observation_keeps_its_typed_fields_through_a_trace() {
        let obs = Observation::structured("grant")
            .with("client", NodeId(3))
            .with("why", "queue")
            .with("fenced", true);
        assert_eq!(obs.kind(), "structured");
        assert_eq!(obs.field("client").and_then(FieldValue::as_int), Some(3));
        assert_eq!(
            obs.field("why").and_then(FieldValue::as_text),
            Some("queue")
        );
        assert_eq!(
            obs.field("fenced").and_then(FieldValue::as_bool),
            Some(true)
        );
        assert_eq!(obs.field("missing"), None);
        let json = serde_json::to_string(&obs).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"structured","name":"grant","fields":{"client":3,"fenced":true,"why":"queue"}}"#
        );
        assert_eq!(serde_json::from_str::<Observation>(&json).unwrap(), obs);
    }

    #[test]
    fn fields_belong_to_structured_observations_only() {
        let note = Observation::Note { text: "x".into() }.with("k", 1i64);
        assert_eq!(note, Observation::Note { text: "x".into() });
        assert_eq!(note.field("k"), None);
    }
}
