//! The Observation vocabulary and the History of a run.
//!
//! An observation records what a node *believes* (it leads, it holds a lock) or *did*
//! (a resource accepted a write, a payment took effect). Checkers judge observations
//! only, never a protocol's internals, so a checker cannot share the bug it looks for.

use crate::{Cluster, LocalTime, NodeId, SimTime};
use serde::{Deserialize, Serialize};

/// What a node believes or did. Lifecycle entries (`Started`, `Crashed`) are made by
/// the host, not the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Observation {
    /// The host started (or restarted) the node's process.
    Started,
    /// The host crashed the node: every belief it held is gone.
    Crashed,

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

    // --- locks ---
    /// A client starts waiting for `resource`.
    Waiting { resource: String },
    /// A client believes it holds `resource`, with fencing `token` (0 when the lock
    /// service issues none).
    Holds { resource: String, token: u64 },
    /// A client believes it no longer holds `resource`.
    Releases { resource: String },
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
    /// not. `value` is the value written.
    Write {
        resource: String,
        client: NodeId,
        token: Option<u64>,
        accepted: bool,
        value: i64,
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

    /// A free-form note for people reading the trace; no checker reads it.
    Note { text: String },
    /// A user-defined observation for a user-defined checker.
    Custom { name: String, value: i64 },
}

impl Observation {
    /// The short name used in traces and narratives.
    pub fn kind(&self) -> &'static str {
        match self {
            Observation::Started => "started",
            Observation::Crashed => "crashed",
            Observation::Leader { .. } => "leader",
            Observation::Follower { .. } => "follower",
            Observation::Candidate { .. } => "candidate",
            Observation::LeaseStart { .. } => "lease-start",
            Observation::LeaseEnd { .. } => "lease-end",
            Observation::Waiting { .. } => "waiting",
            Observation::Holds { .. } => "holds",
            Observation::Releases { .. } => "releases",
            Observation::GivesUp { .. } => "gives-up",
            Observation::Done => "done",
            Observation::Owns { .. } => "owns",
            Observation::Disowns { .. } => "disowns",
            Observation::Write { .. } => "write",
            Observation::Acked { .. } => "acked",
            Observation::Requested { .. } => "requested",
            Observation::Applied { .. } => "applied",
            Observation::Completed { .. } => "completed",
            Observation::Note { .. } => "note",
            Observation::Custom { .. } => "custom",
        }
    }
}

/// One observation, stamped by the host with true time and the node's clock readings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    /// True time (the simulator's), which the node itself never sees.
    pub time: SimTime,
    pub node: NodeId,
    /// The node's monotonic and wall clock readings at that instant.
    pub mono: LocalTime,
    pub wall: LocalTime,
    pub obs: Observation,
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
