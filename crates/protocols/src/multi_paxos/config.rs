//! multi-paxos's variants, roles, parameters (as a scenario writes them), their
//! validation, and the resolved [`MultiPaxosConfig`] every node of a run shares.

use crate::raft_log::check_client_params;
use crate::raft_log::ClientConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, ParamError, ProtocolInfo, RoleInfo, Roles,
    VariantInfo,
};

/// Which Multi-Paxos a run uses: the correct one or a known-broken one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum MultiPaxosVariant {
    /// Phase 1 for every slot above the new leader's commit point, acceptors synced
    /// before they answer.
    Correct,
    /// A new leader adopts the values its promises report only for the slots it had
    /// seen itself; a slot it missed it takes as free.
    SkipPhase1,
    /// An acceptor sends its promise or its acceptance before the fsync of what it
    /// reports.
    NoSyncAccept,
}

/// The two roles.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum MultiPaxosRole {
    /// Proposer, acceptor and learner in one, with a key-value state machine.
    Server,
    /// A client issuing puts and gets to the server it believes leads (raft-log's).
    Client,
}

pub(crate) static INFO: ProtocolInfo = ProtocolInfo::new(
    "multi-paxos",
    "Multi-Paxos: a stable leader elected by its own phase 1 (once per leadership, \
     for every slot above its commit point), phase 2 per slot, a key-value state \
     machine with client sessions, reads confirmed by a heartbeat round",
    &[
        RoleInfo::new(
            "server",
            "proposer, acceptor and learner: elects itself by phase 1, accepts on \
             disk before it answers, applies chosen slots in order",
            5,
        ),
        RoleInfo::new(
            "client",
            "a client: puts and gets, one at a time, retried with its session",
            2,
        ),
    ],
    &[
        VariantInfo::new(
            "correct",
            "phase 1 once per leadership for every slot above the leader's commit \
             point (the highest-ballot value of each slot re-proposed, holes filled \
             with no-ops), phase 2 per slot, promises and acceptances synced before \
             the answer",
        ),
        VariantInfo::new(
            "skip-phase1",
            "a new leader takes the values its promises report only for slots it had \
             seen itself (accepted or learned): a slot it missed while down or cut \
             off it fills with a no-op, overwriting a value that may be chosen",
        )
        .with_breaks(&["state-machine-safety", "log-matching", "linearizability"]),
        VariantInfo::new(
            "no-sync-accept",
            "an acceptor acknowledges an accept (or sends a promise) before the fsync \
             of what it reports: a power loss inside that fsync forgets an \
             acceptance already counted, and a later leader's phase 1 does not see \
             the chosen value",
        )
        .with_breaks(&["state-machine-safety", "log-matching", "linearizability"]),
    ],
);

/// multi-paxos's parameters as a scenario's `[protocol.params]` table writes them (the
/// same names and defaults as raft-log's, so the two compare on equal terms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MultiPaxosParams {
    /// The range a follower's (or candidate's) timeout is drawn from, each time it is
    /// reset: no heartbeat from a leader within it starts phase 1 with a higher ballot.
    pub election_timeout: [HumanDuration; 2],
    /// How often a leader sends heartbeats (and re-sends accepts not yet acknowledged).
    pub heartbeat_interval: HumanDuration,
    /// The most chosen slots a leader sends a lagging server per heartbeat.
    pub catch_up: u32,
    /// How many registers the clients use (`k0`, `k1`, ...).
    pub keys: u8,
    /// How long clients use the same registers before moving to the next `keys`.
    pub key_period: HumanDuration,
    /// The share of operations that are gets, in percent.
    pub reads: u8,
    /// How long a client waits between one operation's end and the next one's start.
    pub think: HumanDuration,
    /// How long a client waits for an answer before trying the next server.
    pub request_timeout: HumanDuration,
    /// Attempts per operation, retries included.
    pub max_attempts: u32,
    /// A new leader proposes a no-op in the first slot after those it re-proposes, as a
    /// Raft leader appends one (Raft §8), so each leadership chooses a value of its own
    /// without clients. Off by default; the model checker's runs, which have no
    /// clients, turn it on.
    pub noop_on_lead: bool,
}

impl Default for MultiPaxosParams {
    fn default() -> Self {
        MultiPaxosParams {
            election_timeout: [
                HumanDuration(Duration::from_millis(150)),
                HumanDuration(Duration::from_millis(300)),
            ],
            heartbeat_interval: HumanDuration(Duration::from_millis(50)),
            catch_up: 32,
            keys: 2,
            key_period: HumanDuration(Duration::from_secs(1)),
            reads: 50,
            think: HumanDuration(Duration::from_millis(10)),
            request_timeout: HumanDuration(Duration::from_millis(60)),
            max_attempts: 4,
            noop_on_lead: false,
        }
    }
}

/// Everything a node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MultiPaxosConfig {
    pub variant: MultiPaxosVariant,
    pub election_timeout: (Duration, Duration),
    pub heartbeat_interval: Duration,
    pub catch_up: u64,
    /// See [`MultiPaxosParams::noop_on_lead`].
    pub noop_on_lead: bool,
    pub client: ClientConfig,
    pub servers: Vec<NodeId>,
    pub roles: Roles<MultiPaxosRole>,
}

/// Checks `params` against the cluster and resolves them.
pub fn configure(
    params: MultiPaxosParams,
    variant: MultiPaxosVariant,
    cluster: &Cluster,
) -> Result<MultiPaxosConfig, ParamError> {
    let heartbeat = params.heartbeat_interval.0;
    if heartbeat.is_zero() {
        return Err(ParamError::new("heartbeat_interval", "must be more than 0"));
    }
    let [min, max] = params.election_timeout;
    let (min, max) = (min.0, max.0);
    if min > max {
        return Err(ParamError::new(
            "election_timeout",
            format!(
                "the minimum {} is above the maximum {}",
                format_duration(min),
                format_duration(max)
            ),
        ));
    }
    if heartbeat >= min {
        return Err(ParamError::new(
            "election_timeout",
            format!(
                "the minimum {} must be above heartbeat_interval {}",
                format_duration(min),
                format_duration(heartbeat)
            ),
        ));
    }
    if !(1..=1024).contains(&params.catch_up) {
        return Err(ParamError::new("catch_up", "must be from 1 to 1024"));
    }
    check_client_params(
        params.keys,
        params.key_period.0,
        params.reads,
        params.think.0,
        params.request_timeout.0,
        params.max_attempts,
    )?;
    let roles = Roles::<MultiPaxosRole>::of(cluster)?;
    let servers: Vec<NodeId> = cluster.with_role("server").collect();
    if servers.is_empty() {
        return Err(ParamError::new(
            "cluster",
            "multi-paxos needs at least one server",
        ));
    }
    Ok(MultiPaxosConfig {
        variant,
        election_timeout: (min, max),
        heartbeat_interval: heartbeat,
        catch_up: u64::from(params.catch_up),
        noop_on_lead: params.noop_on_lead,
        client: ClientConfig {
            keys: params.keys,
            key_period: params.key_period.0,
            reads: params.reads,
            think: params.think.0,
            request_timeout: params.request_timeout.0,
            max_attempts: params.max_attempts,
            round_robin_gets: false,
        },
        servers,
        roles,
    })
}
