//! Raft's parameters (as a scenario writes them), their validation, and the resolved
//! [`RaftConfig`] every node of a run shares.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, ParamError, ProtocolInfo, RoleInfo,
    VariantInfo,
};

/// Which Raft a run uses: the correct one or a known-broken one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RaftVariant {
    Correct,
    /// `votedFor` is kept in memory only: a node that restarts can vote twice in a term.
    ForgetVote,
    /// A leader ignores messages that carry a higher term.
    NoStepDown,
    /// Term and vote are written, the reply is sent, and only then synced: a power loss
    /// in between forgets a vote that was already given.
    ReplyBeforeSync,
    /// etcd's raft before PR #8334: a follower that times out and becomes a
    /// pre-candidate keeps the leader it knew, so with CheckQuorum it counts itself in
    /// that leader's lease and ignores the other pre-candidates.
    #[strum(serialize = "etcd-8334")]
    Etcd8334,
    /// hashicorp/raft before PR #609: granting a pre-vote resets the voter's election
    /// timer, so a node that keeps asking and never wins keeps everyone else quiet.
    #[strum(serialize = "hashicorp-609")]
    Hashicorp609,
}

pub(crate) static INFO: ProtocolInfo = ProtocolInfo::new(
    "raft",
    "Raft leader election: terms, one vote per term, the up-to-date rule, \
     randomized timeouts; optional PreVote and CheckQuorum",
    &[RoleInfo::new(
        "server",
        "a Raft server: follower, candidate or leader",
        5,
    )],
    &[
        VariantInfo::new("correct", "Raft election as in the paper (§5.2, §5.4.1)"),
        VariantInfo::new(
            "forget-vote",
            "votedFor is not persisted: a restarted node can vote twice in one term",
        )
        .with_breaks(&["single-leader-per-term"]),
        VariantInfo::new(
            "no-step-down",
            "a leader ignores higher terms, so a deposed leader keeps leading",
        )
        .with_breaks(&["leader-liveness", "single-leader-at-a-time"]),
        VariantInfo::new(
            "reply-before-sync",
            "sends its vote before syncing it: a power loss in the fsync window \
             lets a node vote twice in one term",
        )
        .with_breaks(&["single-leader-per-term"]),
        VariantInfo::new(
            "etcd-8334",
            "etcd raft before PR #8334 (2017; raft-rs before 0.3.1, PR #84; the \
             leaderless PreVote + CheckQuorum clusters of etcd #9586 and TiKV #3270): \
             a pre-candidate keeps its leader and restarts its lease, so timed-out \
             followers ignore each other's pre-votes (with vote_rules = \"etcd\")",
        )
        .with_breaks(&["leader-liveness"]),
        VariantInfo::new(
            "hashicorp-609",
            "hashicorp/raft main between PR #605 and PR #609 (August 2024; v1.7.1 \
             has both), with vote_rules = \"hashicorp\": granting a pre-vote resets \
             the voter's election timer (`setLastContact`), so a former leader that \
             keeps pre-voting and never wins keeps the others from electing",
        )
        .with_breaks(&["leader-liveness"]),
    ],
);

/// Raft's parameters as a scenario's `[protocol.params]` table writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaftParams {
    /// The range an election timeout is drawn from, each time it is reset.
    pub election_timeout: [HumanDuration; 2],
    /// How often a leader sends heartbeats (empty AppendEntries).
    pub heartbeat_interval: HumanDuration,
    /// Run a pre-vote round before each real election (Ongaro thesis §9.6).
    pub pre_vote: bool,
    /// A leader steps down when it has not heard from a majority within the minimum
    /// election timeout (Ongaro thesis §6.2).
    pub check_quorum: bool,
    /// Whose rules a voter follows for pre-votes and for ignoring votes while it hears
    /// from a leader: `"thesis"` (Ongaro's thesis), `"etcd"` (etcd's raft library) or
    /// `"hashicorp"` (hashicorp/raft's pre-vote).
    pub vote_rules: VoteRules,
    /// Node index (as a string) -> the terms of that node's initial log entries.
    /// Nodes not listed start with an empty log.
    pub logs: BTreeMap<String, Vec<u64>>,
    /// Node index (as a string) -> that node's own election timeout range.
    pub timeouts: BTreeMap<String, [HumanDuration; 2]>,
}

impl Default for RaftParams {
    fn default() -> Self {
        RaftParams {
            election_timeout: [
                HumanDuration(Duration::from_millis(150)),
                HumanDuration(Duration::from_millis(300)),
            ],
            heartbeat_interval: HumanDuration(Duration::from_millis(50)),
            pre_vote: false,
            check_quorum: false,
            vote_rules: VoteRules::Thesis,
            logs: BTreeMap::new(),
            timeouts: BTreeMap::new(),
        }
    }
}

/// The rules a voter follows for pre-votes and for votes that arrive while it hears from
/// a leader. They differ in what PreVote alone protects against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VoteRules {
    /// Ongaro's thesis: a pre-vote is refused while the voter has heard from a leader
    /// within the minimum election timeout (§9.6), and with PreVote or CheckQuorum a
    /// RequestVote in that window is refused without taking its term (§4.2.3).
    #[default]
    Thesis,
    /// etcd's raft library (etcd-io/raft `raft.go`, `Step`: the `inLease` check and
    /// `canVote`; the same in etcd 3.4–3.6's `raft/raft.go`): the leader-recency rule
    /// applies only with CheckQuorum, and then a vote or pre-vote in the lease is ignored
    /// (no reply). Without CheckQuorum a pre-vote for a later term is granted to any
    /// candidate whose log is up to date, even while a leader is healthy, so PreVote
    /// alone does not stop a node cut off from the leader from deposing it. A real vote
    /// in the current term goes only to a candidate when the voter has not voted and
    /// knows no leader.
    Etcd,
    /// hashicorp/raft's pre-vote (`requestPreVote`, v1.7.1): a pre-vote is refused while
    /// the voter knows a leader other than the candidate, and otherwise granted to a
    /// candidate for a later term whose log is up to date, however recently the voter
    /// heard from its leader (the candidate may be that leader, stepped down). Votes as
    /// under `"thesis"`.
    Hashicorp,
}

/// An election timeout range, `min <= max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeoutRange {
    pub min: Duration,
    pub max: Duration,
}

/// Everything a Raft node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RaftConfig {
    pub variant: RaftVariant,
    pub election_timeout: TimeoutRange,
    pub heartbeat_interval: Duration,
    pub pre_vote: bool,
    pub check_quorum: bool,
    pub vote_rules: VoteRules,
    /// Initial log (entry terms) per node; absent means empty.
    pub logs: BTreeMap<NodeId, Vec<u64>>,
    /// Per-node election timeout overrides.
    pub timeouts: BTreeMap<NodeId, TimeoutRange>,
}

impl RaftConfig {
    /// The default parameters with `variant`.
    pub fn new(variant: RaftVariant) -> RaftConfig {
        let p = RaftParams::default();
        RaftConfig {
            variant,
            election_timeout: TimeoutRange {
                min: p.election_timeout[0].0,
                max: p.election_timeout[1].0,
            },
            heartbeat_interval: p.heartbeat_interval.0,
            pre_vote: false,
            check_quorum: false,
            vote_rules: VoteRules::Thesis,
            logs: BTreeMap::new(),
            timeouts: BTreeMap::new(),
        }
    }

    /// The election timeout range `node` draws from.
    pub fn election_timeout_of(&self, node: NodeId) -> TimeoutRange {
        self.timeouts
            .get(&node)
            .copied()
            .unwrap_or(self.election_timeout)
    }

    /// The terms of `node`'s initial log entries.
    pub fn log_of(&self, node: NodeId) -> &[u64] {
        self.logs.get(&node).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Checks `params` against the cluster and resolves them.
pub fn configure(
    params: RaftParams,
    variant: RaftVariant,
    cluster: &Cluster,
) -> Result<RaftConfig, ParamError> {
    let heartbeat_interval = params.heartbeat_interval.0;
    if heartbeat_interval.is_zero() {
        return Err(ParamError::new("heartbeat_interval", "must be more than 0"));
    }
    let election_timeout = timeout_range(
        "election_timeout",
        params.election_timeout,
        heartbeat_interval,
    )?;
    let mut timeouts = BTreeMap::new();
    for (key, range) in &params.timeouts {
        let field = format!("timeouts.{key}");
        let node = node_key(&field, key, cluster)?;
        timeouts.insert(node, timeout_range(&field, *range, heartbeat_interval)?);
    }
    let mut logs = BTreeMap::new();
    for (key, terms) in params.logs {
        let field = format!("logs.{key}");
        let node = node_key(&field, &key, cluster)?;
        if terms.first() == Some(&0) {
            return Err(ParamError::new(&field, "log entry terms start at 1"));
        }
        if terms.windows(2).any(|w| w[0] > w[1]) {
            return Err(ParamError::new(
                &field,
                format!("log entry terms must not decrease, got {terms:?}"),
            ));
        }
        logs.insert(node, terms);
    }
    Ok(RaftConfig {
        variant,
        election_timeout,
        heartbeat_interval,
        pre_vote: params.pre_vote,
        check_quorum: params.check_quorum,
        vote_rules: params.vote_rules,
        logs,
        timeouts,
    })
}

fn timeout_range(
    field: &str,
    [min, max]: [HumanDuration; 2],
    heartbeat_interval: Duration,
) -> Result<TimeoutRange, ParamError> {
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
    if heartbeat_interval >= min {
        return Err(ParamError::new(
            field,
            format!(
                "the minimum {} must be above heartbeat_interval {}, \
                 or followers time out while the leader is healthy",
                format_duration(min),
                format_duration(heartbeat_interval)
            ),
        ));
    }
    Ok(TimeoutRange { min, max })
}

fn node_key(field: &str, key: &str, cluster: &Cluster) -> Result<NodeId, ParamError> {
    let index: u32 = key
        .parse()
        .map_err(|_| ParamError::new(field, format!("`{key}` is not a node index like \"2\"")))?;
    let node = NodeId(index);
    if !cluster.contains(node) {
        return Err(ParamError::new(
            field,
            format!(
                "node {index} is not in the cluster of {} nodes",
                cluster.size()
            ),
        ));
    }
    Ok(node)
}
