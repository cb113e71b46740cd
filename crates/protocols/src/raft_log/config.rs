//! raft-log's variants, roles, parameters (as a scenario writes them), their validation,
//! and the resolved [`RaftLogConfig`] every node of a run shares.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, ParamError, ProtocolInfo, RoleInfo, Roles,
    VariantInfo,
};

/// Which raft-log a run uses: a correct one or a known-broken one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RaftLogVariant {
    /// Figure 2 as written, ReadIndex reads (§6.4).
    Correct,
    /// Reads served under a leader lease (no round per read); safe only while clocks
    /// drift at most the declared bound.
    LeaseReads,
    /// Figure 8: a leader commits an entry of an earlier term by counting its replicas.
    CommitOldTerm,
    /// A follower appends without comparing the term of its entry at prevLogIndex.
    NoLogCheck,
    /// A follower keeps its own entries where the leader's conflict with them.
    NoTruncate,
    /// A leader answers reads from its own state without confirming it still leads.
    ReadWithoutReadindex,
    /// A server sends its vote or its acknowledgement of entries before the fsync of
    /// what it reports: a power loss inside that fsync forgets a vote or entries already
    /// counted.
    AckBeforeFsync,
    /// etcd-io/raft with its single-voter ReadIndex shortcut: the commit index is
    /// persisted after the entries are applied and answered, a leader acknowledges its
    /// own appends one step later, and a single voter answers a ReadIndex with its
    /// commit index at once: after a restart that lost the commit index, a stale one.
    SingleVoterReadIndex,
    /// The same, with etcd-io/raft PR #105: a single voter's read index is at least the
    /// index it has persisted (its own match), the "actually committed index".
    #[strum(serialize = "single-voter-read-index-105")]
    SingleVoterReadIndex105,
}

impl RaftLogVariant {
    /// The variants that model etcd-io/raft's single-voter ReadIndex (PR #105).
    pub fn is_single_voter_read_index(self) -> bool {
        matches!(
            self,
            RaftLogVariant::SingleVoterReadIndex | RaftLogVariant::SingleVoterReadIndex105
        )
    }
}

/// The two roles.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RaftLogRole {
    /// A Raft server with a log and a key-value state machine.
    Server,
    /// A client issuing puts and gets to the server it believes leads.
    Client,
}

pub(crate) static INFO: ProtocolInfo = ProtocolInfo::new(
    "raft-log",
    "Raft with a log: AppendEntries with the log check and truncation, commit of \
     current-term entries only (Figure 8), a key-value state machine with client \
     sessions, ReadIndex reads",
    &[
        RoleInfo::new(
            "server",
            "a Raft server: election, replicated log, key-value state machine",
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
            "Raft's log as in the paper's Figure 2; reads through ReadIndex (§6.4)",
        ),
        VariantInfo::new(
            "lease-reads",
            "correct, with reads served under a leader lease (no heartbeat round per \
             read); safe while clocks drift at most 5%",
        ),
        VariantInfo::new(
            "commit-old-term",
            "Figure 8: a leader commits an entry of an earlier term once a majority \
             holds it; a later leader can overwrite it",
        )
        .with_breaks(&[
            "state-machine-safety",
            "leader-completeness",
            "linearizability",
        ]),
        VariantInfo::new(
            "no-log-check",
            "a follower appends without comparing the term at prevLogIndex",
        )
        .with_breaks(&["log-matching", "state-machine-safety", "linearizability"]),
        VariantInfo::new(
            "no-truncate",
            "a follower keeps its conflicting entries and appends only past its end",
        )
        .with_breaks(&["log-matching", "state-machine-safety", "linearizability"]),
        VariantInfo::new(
            "read-without-readindex",
            "a leader answers reads from its own state without confirming it still \
             leads: a deposed leader serves stale reads (etcd #741, Jepsen on etcd \
             0.4.1, 2014; hashicorp/consul #54, Consul 0.1.0)",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "ack-before-fsync",
            "a server sends its vote or its acknowledgement of entries before the \
             fsync of what it reports (etcd #14140: a stale read with loss of \
             un-fsynced writes, Jepsen on etcd 3.5.3, closed without a root cause): a \
             power loss inside that fsync forgets a vote or a committed put, and a \
             leader without the put answers reads from before it",
        )
        .with_breaks(&[
            "single-leader-per-term",
            "state-machine-safety",
            "linearizability",
        ]),
        VariantInfo::new(
            "single-voter-read-index",
            "etcd-io/raft v3.6 (main, 2023) with etcd's apply loop: the commit index \
             is persisted after the put is applied and answered, a leader counts its \
             own appends a step later, and a single voter answers ReadIndex with its \
             commit index at once: after a crash that lost the commit index, a \
             stale read (etcd-io/raft PR #105, open)",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "single-voter-read-index-105",
            "single-voter-read-index with etcd-io/raft PR #105: a single voter's read \
             index is at least the index it has persisted (the actually committed one)",
        ),
    ],
);

/// raft-log's parameters as a scenario's `[protocol.params]` table writes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftLogParams {
    /// The range an election timeout is drawn from, each time it is reset.
    pub election_timeout: [HumanDuration; 2],
    /// How often a leader sends AppendEntries (with entries, or empty as heartbeats).
    pub heartbeat_interval: HumanDuration,
    /// The most entries one AppendEntries carries.
    pub max_entries: u32,
    /// How many registers the clients use (`k0`, `k1`, ...).
    pub keys: u8,
    /// How long (on the client's wall clock) clients use the same registers before
    /// moving to the next `keys` (Jepsen's independent keys).
    pub key_period: HumanDuration,
    /// The share of operations that are gets, in percent (the rest are puts).
    pub reads: u8,
    /// How long a client waits between one operation's end and the next one's start.
    pub think: HumanDuration,
    /// How long a client waits for an answer before trying the next server.
    pub request_timeout: HumanDuration,
    /// Attempts per operation, retries included.
    pub max_attempts: u32,
    /// The clock-rate error lease reads assume (`lease-reads` only).
    pub lease_drift: f64,
    /// Server index (as a string) -> that server's own election timeout range (to script
    /// who stands first, as the Figure 8 scenario does).
    pub timeouts: BTreeMap<String, [HumanDuration; 2]>,
    /// Whether leaders hand their leadership over (thesis §3.10, etcd's `MoveLeader`).
    pub transfer: bool,
    /// The range a leader draws, when elected (and again after a transfer it gave up), how
    /// long it leads before it transfers its leadership to a peer drawn at random.
    pub transfer_after: [HumanDuration; 2],
}

impl Default for RaftLogParams {
    fn default() -> Self {
        RaftLogParams {
            election_timeout: [
                HumanDuration(Duration::from_millis(150)),
                HumanDuration(Duration::from_millis(300)),
            ],
            heartbeat_interval: HumanDuration(Duration::from_millis(50)),
            max_entries: 1,
            keys: 2,
            key_period: HumanDuration(Duration::from_secs(1)),
            reads: 50,
            think: HumanDuration(Duration::from_millis(10)),
            request_timeout: HumanDuration(Duration::from_millis(60)),
            max_attempts: 4,
            lease_drift: 0.05,
            timeouts: BTreeMap::new(),
            transfer: true,
            transfer_after: [
                HumanDuration(Duration::from_secs(1)),
                HumanDuration(Duration::from_secs(2)),
            ],
        }
    }
}

/// The most attempts an operation may have.
pub const MAX_ATTEMPTS: u32 = 10;

/// Everything a node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Hash, Eq)]
pub struct RaftLogConfig {
    pub variant: RaftLogVariant,
    pub election_timeout: (Duration, Duration),
    pub heartbeat_interval: Duration,
    pub max_entries: usize,
    pub keys: u8,
    pub key_period: Duration,
    pub reads: u8,
    pub think: Duration,
    pub request_timeout: Duration,
    pub max_attempts: u32,
    /// The lease a leader takes from a heartbeat round a majority acknowledged,
    /// counted on its own clock from the round's sending (`lease-reads` only).
    pub lease: Duration,
    /// With leases, how long a follower refuses votes after hearing from a leader: the
    /// shortest minimum election timeout of any server.
    pub vote_guard: Duration,
    /// `lease_drift` in parts per million (a float is not `Hash`).
    pub lease_drift_ppm: u32,
    /// Per-server election timeout overrides.
    pub timeouts: BTreeMap<NodeId, (Duration, Duration)>,
    /// How long a leader leads before it transfers its leadership (thesis §3.10), drawn
    /// from this range; `None`: leaders never transfer.
    pub transfer_after: Option<(Duration, Duration)>,
    pub roles: Roles<RaftLogRole>,
}

impl RaftLogConfig {
    /// The servers of `cluster`, in order.
    pub fn servers(cluster: &Cluster) -> Vec<NodeId> {
        cluster.with_role("server").collect()
    }

    /// The election timeout range `node` draws from.
    pub fn election_timeout_of(&self, node: NodeId) -> (Duration, Duration) {
        self.timeouts
            .get(&node)
            .copied()
            .unwrap_or(self.election_timeout)
    }
}

/// Checks `params` against the cluster and resolves them.
pub fn configure(
    params: RaftLogParams,
    variant: RaftLogVariant,
    cluster: &Cluster,
) -> Result<RaftLogConfig, ParamError> {
    let heartbeat = params.heartbeat_interval.0;
    if heartbeat.is_zero() {
        return Err(ParamError::new("heartbeat_interval", "must be more than 0"));
    }
    let (min, max) = timeout_range("election_timeout", params.election_timeout, heartbeat)?;
    let roles = Roles::<RaftLogRole>::of(cluster)?;
    let mut timeouts = BTreeMap::new();
    for (key, range) in &params.timeouts {
        let field = format!("timeouts.{key}");
        let node = key
            .parse::<u32>()
            .ok()
            .map(NodeId)
            .filter(|&n| cluster.contains(n) && roles.get(n) == RaftLogRole::Server)
            .ok_or_else(|| ParamError::new(&field, format!("`{key}` is not a server's index")))?;
        let range = timeout_range(&field, *range, heartbeat)?;
        timeouts.insert(node, range);
    }
    let [after_min, after_max] = params.transfer_after;
    if after_min.0 > after_max.0 {
        return Err(ParamError::new(
            "transfer_after",
            format!(
                "the minimum {} is above the maximum {}",
                format_duration(after_min.0),
                format_duration(after_max.0)
            ),
        ));
    }
    if after_min.0.is_zero() {
        return Err(ParamError::new("transfer_after", "must be more than 0"));
    }
    let transfer_after = params.transfer.then_some((after_min.0, after_max.0));
    if !(1..=64).contains(&params.max_entries) {
        return Err(ParamError::new("max_entries", "must be from 1 to 64"));
    }
    check_client_params(
        params.keys,
        params.key_period.0,
        params.reads,
        params.think.0,
        params.request_timeout.0,
        params.max_attempts,
    )?;
    if !(0.0..0.5).contains(&params.lease_drift) {
        return Err(ParamError::new(
            "lease_drift",
            "must be at least 0 and below 0.5",
        ));
    }
    if cluster.count("server") == 0 {
        return Err(ParamError::new(
            "cluster",
            "raft-log needs at least one server",
        ));
    }
    // With leases a follower refuses votes for `vote_guard` (the shortest minimum
    // election timeout) of its own clock after it last heard from a leader: at least
    // vote_guard / (1 + drift) of true time. The leader's lease, counted on its own clock
    // from the round's sending, must end within that even if that clock runs slow:
    // lease / (1 - drift) <= vote_guard / (1 + drift).
    let vote_guard = timeouts
        .values()
        .map(|r: &(Duration, Duration)| r.0)
        .fold(min, Duration::min);
    let rho = params.lease_drift;
    let lease = vote_guard.mul_f64((1.0 - rho) / (1.0 + rho));
    Ok(RaftLogConfig {
        variant,
        election_timeout: (min, max),
        heartbeat_interval: heartbeat,
        max_entries: params.max_entries as usize,
        keys: params.keys,
        key_period: params.key_period.0,
        reads: params.reads,
        think: params.think.0,
        request_timeout: params.request_timeout.0,
        max_attempts: params.max_attempts,
        lease,
        vote_guard,
        lease_drift_ppm: (rho * 1e6).round() as u32,
        timeouts,
        transfer_after,
        roles,
    })
}

fn timeout_range(
    field: &str,
    [min, max]: [HumanDuration; 2],
    heartbeat: Duration,
) -> Result<(Duration, Duration), ParamError> {
    let (min, max) = (min.0, max.0);
    if min > max {
        return Err(ParamError::new(
            field,
            format!(
                "the minimum {} is above the maximum {}",
                format_duration(min),
                format_duration(max)
            ),
        ));
    }
    if heartbeat >= min {
        return Err(ParamError::new(
            field,
            format!(
                "the minimum {} must be above heartbeat_interval {}",
                format_duration(min),
                format_duration(heartbeat)
            ),
        ));
    }
    Ok((min, max))
}

/// The checks of the client parameters raft-log's client takes (it serves Multi-Paxos
/// too): the same fields, the same errors, in both protocols.
pub(crate) fn check_client_params(
    keys: u8,
    key_period: Duration,
    reads: u8,
    think: Duration,
    request_timeout: Duration,
    max_attempts: u32,
) -> Result<(), ParamError> {
    if !(1..=16).contains(&keys) {
        return Err(ParamError::new("keys", "must be from 1 to 16"));
    }
    if key_period < Duration::from_millis(1) {
        return Err(ParamError::new("key_period", "must be at least 1ms"));
    }
    if reads > 100 {
        return Err(ParamError::new("reads", "is a percentage: from 0 to 100"));
    }
    if think.is_zero() {
        return Err(ParamError::new("think", "must be more than 0"));
    }
    if request_timeout.is_zero() {
        return Err(ParamError::new("request_timeout", "must be more than 0"));
    }
    if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
        return Err(ParamError::new(
            "max_attempts",
            format!("must be from 1 to {MAX_ATTEMPTS}"),
        ));
    }
    Ok(())
}
