//! An etcd-like lease and lock service that fails over: 3 or 5 servers running Raft with
//! a log (the rules of [`crate::raft_log`]: the log check and truncation, commit of
//! current-term entries only, persistence before the messages that depend on it,
//! ReadIndex reads), an etcd state machine on that log (a global revision, keys with
//! their create revision and lease, leases), and the lock recipe of etcd's
//! `client/v3/concurrency` run by clients that follow the leader.
//!
//! **Leases as etcd has them** (`server/lease/lessor.go`, v3.5.x): `LeaseGrant` and
//! `LeaseRevoke` go through the log; keep-alives (`LeaseRenew`) do not: the leader's
//! lessor alone answers them and moves the lease's expiry to `now + TTL` on ITS OWN
//! monotonic clock. Expiry is timed by the leader only (the lessor is *primary* on the
//! leader, `Promote`/`Demote`): when a lease is past its expiry the leader proposes its
//! revoke, which deletes the lease's keys in one revision when applied. A new leader
//! `Promote`s when it applies the empty entry of its term (etcd's `applyEntryNormal`):
//! every lease gets `expiry = now + RemainingTTL()`, the full TTL unless a checkpoint
//! said less. Without checkpointing (etcd's default, `correct`) a leader change
//! restarts every TTL, and under churn a lease whose keep-alives stopped never expires
//! (etcd #9395, judged by `lease-expiry`).
//!
//! **Lease checkpointing** (`lease-checkpoint`, etcd #9924, `lessor.go` v3.5.17): the
//! primary schedules a checkpoint one `lease_checkpoint_interval` after a grant, a
//! promotion or an applied checkpoint, if the remaining TTL is longer than the interval;
//! when due (and the lease is neither expired nor just renewed) it proposes the
//! remaining TTL through the log (`Cmd::Checkpoint`); applying it sets the lease's
//! remaining TTL; a keep-alive of a checkpointed lease proposes a clearing checkpoint
//! (0). The checkpoints persist (#13508): a restarted member applies its log's again.
//! `checkpoint-unpersisted` (before #13508) skips, after a restart, the checkpoints of
//! the log it recovered.
//!
//! **The deposed leader's revoke** (`revoke-after-stall`, etcd #15247 and #12528). In
//! etcd the lessor runs in its own goroutine (`runLoop`, every 500 ms) next to the raft
//! loop: after a disk stall or CPU pause longer than the election timeout, the old
//! leader's lessor wakes still primary (the raft loop has not yet handled the new term,
//! so `Demote` has not run), finds the leases whose keep-alives went to the new leader
//! meanwhile "expired" by its own clock, and `revokeExpiredLeases` proposes their
//! revokes. By then raft has stepped down, and a follower FORWARDS proposals to the
//! leader: the new leader commits the revoke of a live lease, deletes the holder's key,
//! and the next waiter takes the lock while the holder, kept alive by the new leader,
//! still acts. Here the lessor runs at the start of every handler of a server (it is
//! scheduled first after a pause), and the proposals it makes are handed to the raft
//! half at the end of that handler, which forwards them if it is no longer the leader.
//! The fix (PR #16822, backported by #17425 to v3.5.13 and #17465 to v3.4.31,
//! `EtcdServer.ensureLeadership` in `revokeExpiredLeases`): before revoking, confirm
//! leadership with a linearizable read (a heartbeat round acknowledged by a majority, in
//! the same term) and revoke only if still the leader. The `correct` variant does that.
//!
//! **The lock** (`client/v3/concurrency/mutex.go`, v3.5.x, as [`crate::etcd_lock`]): a
//! key `<prefix>/<lease>` put if absent with the client's lease; the lowest create
//! revision holds, with it as the fencing token; a waiter watches the key with the next
//! lower create revision for deletion and, after waiting, checks that its own key still
//! exists (v3.5.0+). Reads (`Get`, the predecessor) are linearizable: ReadIndex at the
//! leader. Clients send everything to the server they believe leads; "not the leader"
//! names the leader they should try, and a request unanswered for `request_timeout`
//! goes to the next server.
//!
//! **The orphaned session (the workload).** The first client (the lowest-numbered
//! `client` node), once per incarnation, abandons its lease without revoking it, as
//! `concurrency.Session.Orphan()` does (`client/v3/concurrency/session.go`, v3.5.x:
//! it cancels the keep-alive goroutine's context, so keep-alives stop and the lease is
//! left to expire on the server; `Close()` would revoke it instead). It does so at a
//! drawn time in `[TTL, 2 x TTL]` after it starts: its lease has been granted and kept
//! alive (every TTL/3) by then, and the lease's deadline (TTL plus the promise's
//! `within` and per-leader allowance) falls early in the run, inside the liveness phase
//! of every fault profile. The client then learns by its own clock that its lease ran
//! out (what the session's `Done()` channel tells an application), loses the lock if it
//! held it, and grants itself a new lease. `lease-expiry` then judges a lease whose
//! keep-alives stopped in every run, not only in runs where a client crashed.
//!
//! **What it promises**: `fencing-safety` and `no-lost-update` (the revision fences
//! every write, across failover too); `mutual-exclusion` on actions is NOT promised (a
//! client paused past its TTL still acts: Kleppmann 2016), but `revoke-after-stall`
//! breaks it with no client fault at all.
//!
//! **Linearizable reads as etcd serves them** (the `kv-client` role, etcd #20418).
//! A kv-client's get reaches any member and waits for that member's read loop
//! (`linearizableReadLoop` / `requestCurrentIndex`, `server/etcdserver/v3_server.go`):
//! a turn takes the reads that came before it, sends ReadIndex with a request id (to its
//! own raft as leader, `MsgReadIndex` to the leader as a follower; dropped with no
//! leader), resends it every `read_index_retry` (etcd's `readIndexRetryTime`), waits
//! for the read state and for its application, and fails its reads on a leader change
//! (the `leaderChanged` channel, closed when raft reports a new leader) or after
//! `read_timeout`. The loop runs as a goroutine after what raft already has to handle
//! (`Timer::ReadLoop`), so a read state and a leader change can both be ready. The
//! leader keys pending requests by ctx as etcd-raft's `readOnly` does (`addRequest`
//! ignores a ctx already pending; `recvAck`; `advance` releases every request queued
//! up to the acknowledged one; heartbeats carry the last pending ctx; a leader holds
//! requests until its first commit of the term). `readindex-ctx-reused` (before PR
//! #21399) resends the same id; `read-across-leader-change` (before PR #21375) lets
//! Go's `select` take a read state though a leader change is ready too (drawn from the
//! node's rng); `stale-read-20418` has neither fix. What the model shows: the reused
//! ctx's own reads are never stale, but a retry re-queued at a deposed leader after its
//! first round was confirmed is confirmed again by an acknowledgement of that round
//! still in flight, and releases the deposed leader's own read queued before it
//! (etcd-io/raft PR #397); the leader-change race alone returns no stale index (a read
//! state for a fresh id was confirmed by a majority after its request). The
//! acknowledgement must outlive an election: the network holds it in
//! `scenarios/etcd-service/readindex-ctx-reused-stale-read.toml`; a pause of the leader
//! holds it when fuzzing `kv-read-loop.toml` under `pauses`, as in Antithesis's runs.
//! There a kv-client sends its gets to the members in turn (clientv3 dials with gRPC's
//! `round_robin` policy), an idle read loop takes a get at once, and the paused leader's pile is
//! raced connection by connection (`order_after_stall`), so its own get can queue
//! between the first round's acknowledgements and before the follower's retry. Client
//! puts carry raft-log's sessions (§6.3) so a duplicated put applies once (etcd has no
//! such table; gRPC does not duplicate).
//!
//! **Sources verified** (etcd-io/etcd, read at tags v3.5.12, v3.5.13, v3.5.17 (lease
//! checkpoints, `Promote` in `applyEntryNormal`) and v3.5.19):
//! `server/lease/lessor.go` (`Promote` refreshes every lease to `now + extend +
//! RemainingTTL()`, the full TTL unless checkpointed; `Demote`), `server/etcdserver/
//! server.go` (`revokeExpiredLeases`: in v3.5.12 it revokes at once; from v3.5.13 it
//! first calls `ensureLeadership`, which trusts a member whose raft loop ticked within
//! 3 ticks and otherwise does `linearizableReadNotify` and checks `raftStatus().Lead`;
//! the model always does the read: a stalled member has not ticked),
//! `client/v3/concurrency/mutex.go` (`Lock`, `waitDeletes`, the own-key `Get`); for
//! #20418, `server/etcdserver/v3_server.go` at v3.5.27 and v3.5.28 (PRs #21387 and
//! #21421, the v3.5 backports of #21375 and #21399), `server/etcdserver/raft.go` and
//! `server.go` (`leaderChanged`), `raft/raft.go` and `raft/read_only.go` at v3.5.27, and
//! etcd-io/raft PR #397 (`TestReadOnlyDuplicateRequest`).

mod client;
mod server;
#[cfg(test)]
mod tests;

pub use client::Client;
pub use server::{Cmd, Entry, Server, State};

use crate::raft_log::{ClientConfig, ClientTimer, ClientWire};
use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, WorkloadConfig, WorkloadTimer};
use crate::zookeeper::single_node;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, ParamError, Protocol, ProtocolInfo,
    RoleInfo, Roles, VariantInfo,
};

/// A lease's id: the log index of the entry that granted it (unique once committed).
pub type LeaseId = u64;

/// What a client asks the service.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Op {
    Grant {
        ttl: Duration,
    },
    KeepAlive {
        lease: LeaseId,
    },
    /// Put `key` with `lease` if absent; answered with the key's create revision.
    PutIfAbsent {
        key: String,
        lease: LeaseId,
    },
    /// The key under `prefix` with the highest create revision below `before`.
    GetPredecessor {
        prefix: String,
        before: u64,
    },
    Get {
        key: String,
    },
    /// Report the deletion of `key` (as it was at `revision`).
    WatchDelete {
        key: String,
        revision: u64,
    },
    /// Delete `key` if it still has `create_revision` (a late retry must not delete a
    /// later key of the same name).
    Delete {
        key: String,
        create_revision: u64,
    },
}

/// A server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Answer {
    Granted {
        lease: LeaseId,
        ttl: Duration,
    },
    /// `None`: the lease is gone.
    KeepAlive {
        ttl: Option<Duration>,
    },
    /// `None`: the lease is gone.
    Put {
        create_revision: Option<u64>,
    },
    Predecessor {
        key: Option<String>,
        revision: u64,
    },
    Get {
        create_revision: Option<u64>,
    },
    KeyDeleted,
    Deleted,
    /// Not the leader (naming the one it knows of); nothing done.
    NotLeader(Option<NodeId>),
}

/// Messages. Raft's carry the sender's term.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    RequestVote {
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
    },
    RequestVoteReply {
        term: u64,
        granted: bool,
    },
    AppendEntries {
        term: u64,
        prev_log_index: u64,
        prev_log_term: u64,
        entries: Vec<Entry>,
        leader_commit: u64,
        round: u64,
        /// etcd-raft's heartbeat context: the ReadIndex request ctx this round confirms
        /// (`bcastHeartbeatWithCtx`; a periodic heartbeat carries the last pending one).
        ctx: Option<u64>,
    },
    AppendEntriesReply {
        term: u64,
        success: bool,
        match_index: u64,
        last_index: u64,
        round: u64,
        /// The ctx of the AppendEntries answered, echoed (`MsgHeartbeatResp.Context`).
        ctx: Option<u64>,
    },
    /// etcd-raft `MsgReadIndex`: a member's read loop asks the leader to confirm a read
    /// index for its request id `ctx`. Raft forwards it as a local message: no term.
    ReadIndex {
        ctx: u64,
    },
    /// etcd-raft `MsgReadIndexResp`: the index the leader confirmed for `ctx`.
    ReadIndexResp {
        term: u64,
        ctx: u64,
        index: u64,
    },
    /// A kv-client's attempt (raft-log's client): a put through the log, or a
    /// linearizable get served by any member's read loop.
    KvRequest(crate::raft_log::Request),
    /// The answer to a kv-client's attempt.
    KvReply {
        attempt: u64,
        answer: crate::raft_log::Answer,
    },
    /// A proposal forwarded by a follower to the leader (etcd raft forwards `MsgProp`).
    Propose {
        cmd: Cmd,
    },
    Request {
        req: u64,
        op: Op,
    },
    Reply {
        req: u64,
        answer: Answer,
    },
    Resource(ResourceMsg),
}

impl Msg {
    pub fn term(&self) -> Option<u64> {
        match self {
            Msg::RequestVote { term, .. }
            | Msg::RequestVoteReply { term, .. }
            | Msg::AppendEntries { term, .. }
            | Msg::AppendEntriesReply { term, .. }
            | Msg::ReadIndexResp { term, .. } => Some(*term),
            _ => None,
        }
    }
}

impl From<ResourceMsg> for Msg {
    fn from(m: ResourceMsg) -> Msg {
        Msg::Resource(m)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// Server: no leader heard from for too long.
    Election,
    /// Server: the leader's next AppendEntries round (and its lessor's tick).
    Heartbeat,
    /// Server (`revoke-after-stall`): the lessor's revoke proposals reach raft.
    Revoke,
    /// Client: send a keep-alive; retry what went unanswered.
    KeepAlive,
    /// Client: its lease runs out by its own clock.
    LeaseCheck,
    /// Client (the first one): orphan the session (stop its keep-alives, no revoke).
    Orphan,
    /// Server: the read loop goroutine runs (after what raft already has to handle).
    ReadLoop,
    /// Server: no read state for the read loop's ReadIndex yet: send it again
    /// (`readIndexRetryTime`).
    ReadRetry,
    /// Server: the read loop gives up on its ReadIndex (`ReqTimeout()`).
    ReadError,
    /// Kv-client: its next operation.
    KvThink,
    /// Kv-client: no answer to an attempt in time.
    KvTimeout(u64),
    Workload(WorkloadTimer),
}

impl From<WorkloadTimer> for Timer {
    fn from(t: WorkloadTimer) -> Timer {
        Timer::Workload(t)
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum EtcdServiceVariant {
    /// etcd v3.5.13+ / v3.4.31+: a lessor confirms its leadership before revoking.
    Correct,
    /// etcd before PR #16822: a deposed leader's lessor revokes leases after a stall.
    RevokeAfterStall,
    /// `correct` with lease checkpointing on (etcd #9924, v3.4; persisted, #13508).
    LeaseCheckpoint,
    /// Lease checkpointing before #13508: remaining TTLs lost by a restart.
    CheckpointUnpersisted,
    /// etcd with PR #21375 but before PR #21399: the read loop retries its ReadIndex
    /// with the same request id.
    ReadindexCtxReused,
    /// etcd with PR #21399 but without PR #21375: the read loop may take a read state
    /// after a leader change it has also been told of.
    ReadAcrossLeaderChange,
    /// etcd v3.5.0 to v3.5.27 (v3.4 before v3.4.42, v3.6 before v3.6.9): neither fix.
    #[strum(serialize = "stale-read-20418")]
    StaleRead20418,
}

impl EtcdServiceVariant {
    /// The read loop's retries reuse the iteration's request id (before PR #21399).
    pub fn reuses_read_ctx(self) -> bool {
        matches!(
            self,
            EtcdServiceVariant::ReadindexCtxReused | EtcdServiceVariant::StaleRead20418
        )
    }
    /// The read loop may take a read state though the leader changed (before PR #21375).
    pub fn reads_across_leader_change(self) -> bool {
        matches!(
            self,
            EtcdServiceVariant::ReadAcrossLeaderChange | EtcdServiceVariant::StaleRead20418
        )
    }
}

/// A node's role: the lock service's, plus `kv-client`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum EtcdRole {
    /// An etcd member.
    Server,
    /// A lock client running the workload.
    Client,
    /// The protected resource.
    Storage,
    /// A client of puts and linearizable gets of a register (raft-log's client).
    KvClient,
}

/// etcd-service's messages and timers for raft-log's client (the `kv-client` role).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KvWire;

impl ClientWire for KvWire {
    type Msg = Msg;
    type Timer = Timer;
    fn request(req: crate::raft_log::Request) -> Msg {
        Msg::KvRequest(req)
    }
    fn timer(t: ClientTimer) -> Timer {
        match t {
            ClientTimer::Think => Timer::KvThink,
            ClientTimer::Timeout(a) => Timer::KvTimeout(a),
        }
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "etcd-service",
    "an etcd-like lease and lock service on Raft with a log: leases granted and \
     revoked through the log, expiry timed by the leader, the client/v3/concurrency \
     lock recipe with clients following the leader, the revision as fencing token",
    &[
        RoleInfo::new(
            "server",
            "an etcd member: Raft with a log, the KV store with revisions, the lessor",
            3,
        ),
        RoleInfo::new(
            "client",
            "lock clients: acquire, read-modify-write the storage, release",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
        RoleInfo::new("storage", "the protected resource, a counter", 1)
            .with_kind(tenure_core::RoleKind::Resource),
        RoleInfo::new(
            "kv-client",
            "puts of a register through the log and linearizable gets served by any \
             member's read loop (etcd's `linearizableReadLoop`), judged by \
             `linearizability`; none unless a scenario asks",
            0,
        ),
    ],
    &[
        VariantInfo::new(
            "correct",
            "etcd v3.5.13+ (PR #16822, backported by #17425; v3.4.31 by #17465): the \
             lessor confirms its leadership (a round acknowledged by a majority) \
             before it revokes; with etcd's defaults (no lease checkpointing) a new \
             leader restarts every lease's TTL, so under leader churn a lease whose \
             keep-alives stopped never expires (etcd #9395, every v3.x)",
        ),
        VariantInfo::new(
            "revoke-after-stall",
            "etcd #15247 / #12528, every v3.5 before v3.5.13 (and v3.4 before \
             v3.4.31): a leader stalled past the election timeout wakes with its \
             lessor still primary and revokes leases kept alive at the new leader; \
             the revoke is forwarded and committed, two holders act",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new(
            "lease-checkpoint",
            "`correct` with lease checkpointing (etcd #9924, v3.4.0+, \
             `--experimental-enable-lease-checkpoint`, persisted as \
             `--experimental-enable-lease-checkpoint-persist` does (#13508, v3.5; \
             always in v3.6)): the leader checkpoints each lease's remaining TTL \
             through the log every `lease_checkpoint_interval`, and a new leader \
             starts from it; the control for etcd #9395",
        ),
        VariantInfo::new(
            "checkpoint-unpersisted",
            "etcd PR #13491 / #13508: lease checkpointing (#9924) as v3.4.x and \
             v3.5.x run it without `--experimental-enable-lease-checkpoint-persist`: \
             the remaining TTL lives in memory only, so a member that restarts \
             (a cluster restart) forgets the checkpoints it had applied, and as \
             leader restarts every lease's TTL in full",
        )
        .with_breaks(&["lease-expiry"]),
        VariantInfo::new(
            "readindex-ctx-reused",
            "etcd #20418 with PR #21375 but not PR #21399 (etcd main of 2026-02-26): \
             the read loop resends its ReadIndex every `read_index_retry` with the \
             same request id; etcd-raft's leader keys pending reads by that ctx, so a \
             retry that reaches a deposed leader after the first was confirmed is \
             confirmed again by the in-flight acknowledgements of the first round, \
             and releases the stale reads queued before it (etcd-io/raft #397)",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "read-across-leader-change",
            "etcd #20418 with PR #21399 but not PR #21375: when a read state and a \
             leader change are both waiting, the read loop's `select` may take the \
             read state (Go picks at random); with a fresh request id per retry, a read \
             state is confirmed by a majority after its request, so the model finds \
             no stale read from this alone",
        ),
        VariantInfo::new(
            "stale-read-20418",
            "etcd #20418 as released: every v3.5 before v3.5.28 (v3.4 before v3.4.42, \
             v3.6 before v3.6.9), neither PR #21375 nor PR #21399: a reused ReadIndex \
             ctx confirmed by a deposed leader, taken even over a leader change",
        )
        .with_breaks(&["linearizability"]),
    ],
);

lock_client_params! {
    /// Scenario parameters (`[protocol.params]`): Raft's timing, the lease TTL, the
    /// storage's mode, then the workload's (see
    /// [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct EtcdServiceParams {
        /// The range a server's election timeout is drawn from.
        pub election_timeout: [HumanDuration; 2] = [
            HumanDuration(Duration::from_millis(150)),
            HumanDuration(Duration::from_millis(300)),
        ],
        /// How often a leader sends AppendEntries (and its lessor looks for expiries).
        pub heartbeat_interval: HumanDuration = HumanDuration(Duration::from_millis(50)),
        /// The lease's time to live, timed by the leader.
        pub ttl: HumanDuration = HumanDuration(Duration::from_millis(1_000)),
        /// `lease-checkpoint`: how often the leader checkpoints a lease's remaining TTL
        /// (etcd's `LeaseCheckpointInterval`, 5 minutes by default; a lease whose
        /// remaining TTL is not longer is never checkpointed).
        pub lease_checkpoint_interval: HumanDuration =
            HumanDuration(Duration::from_secs(300)),
        /// Whether the storage checks the tokens (create revisions).
        pub resource_mode: FencingMode = FencingMode::Fenced,
        /// At most this many acquire attempts per client process; absent: no limit.
        pub max_attempts: Option<u32> = None,
        /// Whether the first client orphans its session once per incarnation, at a drawn
        /// time in `[TTL, 2 x TTL]` after it starts (`Session.Orphan()`: keep-alives
        /// stop, no revoke; see the module docs).
        pub orphan_session: bool = true,
        /// The read loop resends its ReadIndex after this long without a read state
        /// (etcd's `readIndexRetryTime`, 500ms, half its default 1s election timeout:
        /// here half the default maximum election timeout).
        pub read_index_retry: HumanDuration = HumanDuration(Duration::from_millis(150)),
        /// `kv-client`: the percentage of operations that are gets.
        pub kv_reads: u8 = 50,
        /// `kv-client`: the pause between one operation's end and the next.
        pub kv_think: HumanDuration = HumanDuration(Duration::from_millis(20)),
        /// `kv-client`: an attempt unanswered this long is tried on the next server.
        pub kv_request_timeout: HumanDuration = HumanDuration(Duration::from_millis(200)),
        /// `kv-client`: attempts per operation before it is recorded as unknown.
        pub kv_max_attempts: u32 = 4,
    }
}

/// Everything a node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdServiceConfig {
    pub variant: EtcdServiceVariant,
    pub election_timeout: (Duration, Duration),
    pub heartbeat_interval: Duration,
    pub ttl: Duration,
    pub lease_checkpoint_interval: Duration,
    pub resource_mode: FencingMode,
    pub workload: WorkloadConfig,
    pub roles: Roles<EtcdRole>,
    /// Whether the first client orphans its session once per incarnation.
    pub orphan_session: bool,
    /// The read loop's retry period (`readIndexRetryTime`).
    pub read_index_retry: Duration,
    /// The read loop gives up on a ReadIndex after this long: etcd's `ReqTimeout()`
    /// (5s + 2 x election timeout, the 5s being 10 x `readIndexRetryTime`):
    /// 10 x `read_index_retry` + 2 x the maximum election timeout.
    pub read_timeout: Duration,
    /// The kv-clients' parameters (one register, `k0`, renamed every 1s).
    pub kv: ClientConfig,
}

impl EtcdServiceConfig {
    pub fn servers(cluster: &Cluster) -> Vec<NodeId> {
        cluster.with_role("server").collect()
    }
}

/// A node: a server, a lock client or the protected storage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EtcdService {
    Server(Box<Server>),
    Client(Box<Client>),
    Storage(Resource),
    KvClient(Box<KvClient>),
}

/// A kv-client: raft-log's client on etcd-service's wire.
pub type KvClient = crate::raft_log::Client<KvWire>;

impl EtcdService {
    pub fn server(&self) -> Option<&Server> {
        match self {
            EtcdService::Server(s) => Some(s),
            _ => None,
        }
    }
}

type E<'a> = dyn Env<Msg, Timer> + 'a;

impl Protocol for EtcdService {
    type Msg = Msg;
    type Timer = Timer;
    type Config = EtcdServiceConfig;

    fn new(config: &EtcdServiceConfig, me: NodeId, cluster: &Cluster) -> EtcdService {
        match config.roles.get(me) {
            EtcdRole::Server => EtcdService::Server(Box::new(Server::new(config, me, cluster))),
            EtcdRole::Client => EtcdService::Client(Box::new(Client::new(config, cluster))),
            EtcdRole::Storage => EtcdService::Storage(Resource::new(config.resource_mode)),
            EtcdRole::KvClient => EtcdService::KvClient(Box::new(KvClient::new(
                config.kv.clone(),
                me,
                EtcdServiceConfig::servers(cluster),
            ))),
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        match self {
            EtcdService::Server(s) => s.on_start(env),
            EtcdService::Client(c) => c.on_start(env),
            EtcdService::Storage(r) => r.on_start(env),
            EtcdService::KvClient(c) => c.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (EtcdService::Storage(r), Msg::Resource(m)) => r.on_message(env, from, m),
            (EtcdService::Storage(_), _) => {}
            (EtcdService::KvClient(c), Msg::KvReply { attempt, answer }) => {
                c.on_reply(env, from, attempt, answer)
            }
            (EtcdService::KvClient(_), _) => {}
            (EtcdService::Server(s), msg) => s.on_message(env, from, msg),
            (EtcdService::Client(c), msg) => c.on_message(env, from, msg),
        }
    }

    /// A scripted kv operation (a scenario's `request` to a kv-client): `get@S` reads
    /// register `k0` at server `S`, `put@S` writes `arg` to it there.
    fn on_request(&mut self, env: &mut E<'_>, request: &tenure_core::Request) {
        let EtcdService::KvClient(c) = self else {
            return;
        };
        let Some((f, server)) = request.name.split_once('@') else {
            return;
        };
        let Ok(server) = server.parse::<u32>() else {
            return;
        };
        let op = match f {
            "get" => crate::raft_log::Op::Get { key: 0 },
            "put" => crate::raft_log::Op::Put {
                key: 0,
                value: request.arg,
            },
            _ => return,
        };
        c.invoke(env, op, NodeId(server));
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        match self {
            EtcdService::Server(s) => s.on_timer(env, timer),
            EtcdService::Client(c) => c.on_timer(env, timer),
            EtcdService::Storage(_) => {}
            EtcdService::KvClient(c) => match timer {
                Timer::KvThink => c.on_timer(env, ClientTimer::Think),
                Timer::KvTimeout(a) => c.on_timer(env, ClientTimer::Timeout(a)),
                _ => {}
            },
        }
    }
}

/// `lease-expiry`: a lease whose keep-alives stopped is revoked within its TTL plus
/// `within` (a leader paused up to an election timeout before its lessor runs, then the
/// leadership round and the revoke's commit: a few heartbeats), plus, for each leader
/// elected since its last renewal, the part of the TTL that leader may restart: the
/// whole TTL without checkpointing (#9395), one checkpoint interval with it (#9924),
/// and the election. Timed by the leader's clock: scaled for the declared drift.
pub fn lease_expiry(config: &EtcdServiceConfig) -> tenure_core::Promise {
    let (_, e_max) = config.election_timeout;
    let beats = config.heartbeat_interval * 4;
    let (restart, restart_text) = match config.variant {
        EtcdServiceVariant::LeaseCheckpoint | EtcdServiceVariant::CheckpointUnpersisted
            if config.lease_checkpoint_interval < config.ttl =>
        {
            (
                config.lease_checkpoint_interval,
                format!(
                    "checkpoint interval {}",
                    tenure_core::format_duration(config.lease_checkpoint_interval)
                ),
            )
        }
        _ => (
            config.ttl,
            format!(
                "TTL {} (restarted by a new leader)",
                tenure_core::format_duration(config.ttl)
            ),
        ),
    };
    let drift = crate::promises::slow_clock(config.ttl + e_max + beats, MAX_DRIFT);
    let within = drift.0.saturating_sub(config.ttl);
    let (per_leader, _) = crate::promises::slow_clock(restart + e_max + beats, MAX_DRIFT);
    let fmt = tenure_core::format_duration;
    tenure_core::Promise::new("lease-expiry")
        .within(
            within,
            format!(
                "within: (TTL + election timeout max {} + 4 x heartbeat {}){} - TTL; per \
                 leader: ({restart_text} + election timeout max + 4 x heartbeat){}",
                fmt(e_max),
                fmt(config.heartbeat_interval),
                drift.1,
                drift.1
            ),
        )
        .with(
            "per_leader",
            fmt(Duration::from_millis(
                u64::try_from(per_leader.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
            )),
        )
        .with("role", "server")
}

/// The clock drift the service assumes (see `assumptions`).
const MAX_DRIFT: Option<f64> = Some(0.1);

impl Configurable for EtcdService {
    type Params = EtcdServiceParams;
    type Variant = EtcdServiceVariant;
    type Role = EtcdRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: EtcdServiceParams,
        variant: EtcdServiceVariant,
        cluster: &Cluster,
    ) -> Result<EtcdServiceConfig, ParamError> {
        let heartbeat = params.heartbeat_interval.0;
        if heartbeat.is_zero() {
            return Err(ParamError::new("heartbeat_interval", "must be more than 0"));
        }
        let [min, max] = params.election_timeout;
        let (min, max) = (min.0, max.0);
        if min > max || heartbeat >= min {
            return Err(ParamError::new(
                "election_timeout",
                "needs heartbeat_interval < minimum <= maximum",
            ));
        }
        let servers = cluster.count("server");
        if servers == 0 {
            return Err(ParamError::new(
                "cluster.roles.server",
                "needs at least 1 `server` node",
            ));
        }
        if cluster.count("client") == 0 && cluster.count("kv-client") == 0 {
            return Err(ParamError::new(
                "cluster.roles.client",
                "needs at least 1 `client` node (or `kv-client` node)",
            ));
        }
        if params.ttl.0 <= max * 2 {
            return Err(ParamError::new(
                "ttl",
                "must be more than twice the maximum election timeout (etcd requires the \
                 minimum TTL to exceed the election timeout, `minTTL`)",
            ));
        }
        if params.lease_checkpoint_interval.0.is_zero() {
            return Err(ParamError::new(
                "lease_checkpoint_interval",
                "must be more than 0",
            ));
        }
        if params.read_index_retry.0.is_zero() {
            return Err(ParamError::new("read_index_retry", "must be more than 0"));
        }
        if params.kv_request_timeout.0.is_zero() {
            return Err(ParamError::new("kv_request_timeout", "must be more than 0"));
        }
        let storage = single_node(cluster, "storage")?;
        let workload = params
            .workload_params()
            .config(storage, params.max_attempts)?;
        Ok(EtcdServiceConfig {
            variant,
            election_timeout: (min, max),
            heartbeat_interval: heartbeat,
            ttl: params.ttl.0,
            lease_checkpoint_interval: params.lease_checkpoint_interval.0,
            resource_mode: params.resource_mode,
            workload,
            roles: Roles::of(cluster)?,
            orphan_session: params.orphan_session,
            read_index_retry: params.read_index_retry.0,
            read_timeout: params.read_index_retry.0 * 10 + max * 2,
            kv: ClientConfig {
                keys: 1,
                key_period: Duration::from_secs(1),
                reads: params.kv_reads.min(100),
                think: params.kv_think.0,
                request_timeout: params.kv_request_timeout.0,
                max_attempts: params.kv_max_attempts.max(1),
                round_robin_gets: true,
            },
        })
    }

    /// The revision fences every write across failover; `mutual-exclusion` is not
    /// promised (a client paused past its TTL acts after its lease is gone).
    fn promises(config: &EtcdServiceConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        // Linearizable gets and puts of the kv-clients' register (etcd's default
        // `Range` is linearizable: `linearizableReadNotify`) are promised in a cluster
        // of kv-clients only: the lock clients also record their reads and writes of
        // the storage's counter, which is no linearizable register (two holders may
        // overlap: `mutual-exclusion` is not promised; 4 of 1,000 `crashes` seeds of a
        // mixed cluster fail it there).
        if cluster.count("client") == 0 {
            return vec![tenure_core::Promise::new("linearizability").with("model", "cas-register")];
        }
        vec![
            tenure_core::Promise::new("fencing-safety"),
            tenure_core::Promise::new("no-lost-update"),
            crate::promises::lock_liveness(
                &config.workload,
                config.ttl,
                config.workload.request_timeout + config.election_timeout.1 * 2,
                Some(0.1),
                cluster,
                true,
            ),
            lease_expiry(config),
        ]
    }

    fn assumptions(config: &EtcdServiceConfig) -> tenure_core::Assumptions {
        use tenure_core::Limit;
        let (min, _) = config.election_timeout;
        let slack = min.saturating_sub(config.heartbeat_interval);
        tenure_core::Assumptions::new()
            .with_max_drift(Limit::new(
                MAX_DRIFT.unwrap_or_default(),
                "keep-alives every TTL/3 by the client's clock renew a lease timed by the \
                 leader's",
            ))
            .with_max_latency(Limit::new(
                slack / 2,
                "a stable leader needs broadcast time << election timeout (Raft §5.6)",
            ))
            // A member blocked in an fsync sends no heartbeat, and a member syncs once per
            // entry it appends: a burst of proposals on slow disks makes a backlog of syncs
            // that outlasts the election timeout, and leaders change over and over, which
            // also restarts every lease's TTL (#9395). etcd warns "failed to send out
            // heartbeat on time ... likely from slow disk"; its operators keep the WAL
            // fsync's p99 under 10ms for the default 100ms heartbeat, a tenth of it.
            .with_max_fsync(Limit::new(
                config.heartbeat_interval / 10,
                format!(
                    "a tenth of the heartbeat {}, as etcd's guidance of a WAL fsync under 10ms \
                     for its 100ms heartbeat: a member blocked in syncs sends no heartbeat",
                    tenure_core::format_duration(config.heartbeat_interval)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        Err(
            "lease expiry and the lock need timing and clients; the simulator explores it \
             (raft-log's model covers the log)",
        )
    }

    fn message_term(msg: &Msg) -> Option<u64> {
        msg.term()
    }
}
