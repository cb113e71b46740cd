//! `zookeeper-ensemble`: a ZooKeeper-like replicated ensemble. A leader and followers
//! commit writes in zxid order by quorum (Zab-like: proposal, ack from a quorum,
//! commit); each client is connected to one server and reads from it, so a plain read
//! may be stale, and `sync` + read is not stale as long as the leader that serves the
//! `sync` still leads. Are ZooKeeper reads linearizable? Writes are; reads are not:
//! ZooKeeper promises sequential consistency per client ("a client sees its own
//! writes", "a client never sees an older zxid than it has seen"), and `sync` only
//! narrows the window to the leader's timing.
//!
//! # What was read, and where (apache/zookeeper, tag `release-3.8.4`)
//!
//! Checked again against the tag `release-3.8.4` of apache/zookeeper (issue 36, second
//! pass): the citations below hold; two details were added (the refusal closes the
//! connection, and how a leader counts its followers as synced).
//!
//! Under `zookeeper-server/src/main/java/org/apache/zookeeper/server/`:
//! * **Zab broadcast.** `quorum/Leader.java`: `propose` gives a request the next zxid
//!   (epoch in the high 32 bits, a counter in the low ones) and sends a PROPOSAL to
//!   every synced follower; `processAck` counts acks and `tryToCommit` commits in zxid
//!   order once a quorum acked (the leader's own ack included), sending COMMIT to the
//!   followers and INFORM to observers. `quorum/Follower.java`
//!   (`processPacket`): a PROPOSAL is logged (`FollowerZooKeeperServer.logRequest`,
//!   synced by `SyncRequestProcessor`) and acked; a COMMIT hands it to
//!   `CommitProcessor`, then `FinalRequestProcessor` applies it to the `DataTree`, and
//!   the server the client is connected to answers it.
//! * **Reads** (`FinalRequestProcessor` for `getData`, `exists`, `getChildren`) are
//!   answered from the local `DataTree` of the server the client is connected to, with
//!   no quorum round: a follower behind the leader answers from its past.
//! * **sync**: `FollowerRequestProcessor` forwards it to the leader;
//!   `Leader.processSync` answers at once (`sendSync`) when no proposal is outstanding,
//!   else queues it in `pendingSyncs` until the last outstanding proposal commits
//!   (`tryToCommit` -> `sendSync`). The follower answers the client after the SYNC
//!   packet, which the leader's FIFO channel orders after every COMMIT it sent before.
//!   Not a quorum operation: a leader that lost its quorum and does not know it yet
//!   (it notices after `syncLimit` ticks, `Leader.lead`'s "Not sufficient followers
//!   synced") answers from its stale state.
//! * **A leader's quorum check.** `Leader.lead` counts a learner as synced while
//!   `LearnerHandler.synced()`: the current tick is at most its `tickOfNextAckDeadline`,
//!   which starts at `tick + initLimit + syncLimit` when the learner connects
//!   (`Leader.getTickOfInitialAckDeadline`) and moves to `tick + syncLimit` with each
//!   ack. The model gives every server its full grace (half a leader timeout) from the
//!   start of a leadership, then renews it with each ack: a leader that counted only
//!   itself stepped down at its first tick whenever NEWLEADER's round trip took longer
//!   than a tick, and none was ever established (the trust test's seeds, issue 36).
//! * **Sessions.** `SessionTrackerImpl` (run by the leader, `LeaderSessionTracker`):
//!   deadlines in `tickTime` buckets, `touchSession` on every request and ping
//!   (followers forward touches to the leader with their PINGs,
//!   `LearnerSessionTracker`), an expired session is closed by a `closeSession`
//!   transaction that goes through Zab, and `DataTree.killSession` deletes its
//!   ephemeral nodes. A new leader gives every session a fresh timeout.
//! * **Reconnect.** `ZooKeeperServer.processConnectRequest`: "Refusing session request
//!   for client ... as it has seen zxid 0x.. our last zxid is 0x.. client must try
//!   another server" when the client's `lastZxidSeen` is ahead of the server's
//!   `zkDb.dataTree.lastProcessedZxid`; the server throws `CloseRequestException`
//!   (`DisconnectReason.CLIENT_ZXID_AHEAD`) and closes the connection, where the model
//!   sends a `Refused` message (the client moves on either way); `ClientCnxn.SendThread`
//!   (`primeConnection`) sends the client's `lastZxid` and session id, and on
//!   CONNECTIONLOSS moves to the next host of the connect string. A connection that
//!   ends (the server crashed: its kernel resets the socket) is CONNECTIONLOSS at once:
//!   `ClientCnxnSocketNIO.doIO` reads the end of the stream ("Unable to read additional
//!   data from server sessionid 0x.., likely server has closed socket") and
//!   `SendThread.run` closes the socket and tries the next host (the model's
//!   `on_disconnect`). Until the client handled that, it waited for a reply timeout
//!   after a crash, by which time the server it moved to had caught up, and no fuzz
//!   profile found `reconnect-to-older-zxid`.
//! * **Election and synchronisation.** `quorum/FastLeaderElection.java`
//!   (`totalOrderPredicate`: higher epoch, then higher zxid, then higher server id);
//!   `quorum/Leader.java` / `quorum/LearnerHandler.java`: the new leader's epoch is
//!   above every follower's `acceptedEpoch`, followers are synced (`syncFollower`:
//!   DIFF, TRUNC or SNAP), and the leader starts only when a quorum acked NEWLEADER.
//!
//! # What is simplified
//!
//! * **Election**: Raft-like rounds instead of FastLeaderElection's notification
//!   gossip. A looking server starts round r (its `acceptedEpoch`, durable) and asks
//!   for votes with its (`currentEpoch`, last zxid); a server votes once per round, for
//!   a candidate at least as far as itself by `totalOrderPredicate`, and not while it
//!   hears from a live leader; a majority elects. The winner of round r leads epoch r.
//!   What FLE's proposal-changing, out-of-election notifications and the separate
//!   discovery phase (LEADERINFO / ACKEPOCH) add is left out: the same order decides.
//! * **Synchronisation** is always a snapshot of the whole log (SNAP with the log): a
//!   follower adopts the leader's history and acks NEWLEADER; once a quorum did, all of
//!   it is committed.
//! * **Servers notice a lost leader or follower by their timeouts**, not by the reset
//!   of its connection (`Follower.followLeader` would leave at the end of the stream at
//!   once, and `Learner.shutdown` close its clients' connections): a follower whose
//!   leader crashed serves from its tree, and accepts connections, until its leader
//!   timeout, as one cut from its leader by a partition does.
//! * **Sessions' timeouts** are not negotiated; touches are forwarded at once, not
//!   batched with the follower's PING.
//! * **The lock recipe polls** (`getChildren` every tenth of the session timeout) where
//!   the real one sets a watch on its predecessor: this module is about replication,
//!   and the watch machinery is `zookeeper`'s (single server). The recipe's logic is
//!   the same as `zookeeper`'s (lowest sequence holds, the czxid as fencing token, a
//!   node found again by its session prefix after CONNECTIONLOSS, as Curator's GUID).
//!
//! # Why the recipes are safe without `sync`
//!
//! A client's own node is created through its server, which answers only after
//! applying the create; a server applies transactions in zxid order; and a client
//! reconnects only to a server at least as recent as what it saw. A node with a lower
//! sequence number than ours was created (lower zxid) before ours, so any server that
//! shows our node shows it too, and shows it gone only once it really went. "Our node
//! is the lowest" read from any server the client may use is therefore true at that
//! zxid. (What a stale view can cost is waiting longer, never a second holder.) The
//! register workload's read of a key the client itself writes needs no `sync` for the
//! same reason, as long as it saw the answer to each of its writes: a write whose reply
//! was lost (CONNECTIONLOSS) may be committed at a zxid the client never saw, and a
//! server it reconnects to may be behind it, so after such a write the client reads its
//! own key with `sync` until one such read succeeds (the release sweep found the plain
//! read stale: `partitions` seeds 156 and 215). A read of another client's key always
//! needs `sync`.
//!
//! # Variants
//!
//! * `correct`.
//! * `read-without-sync`: register clients read other clients' keys with a plain
//!   read: a follower that has not yet applied a write another client was told is done
//!   returns the older value (`linearizability`).
//! * `reconnect-to-older-zxid`: a server accepts a client whose last seen zxid is
//!   ahead of its own: the client then reads its own key from the past
//!   (`linearizability`).
//! * `ephemeral-kept-after-expiry`: closing a session keeps its ephemeral nodes: a lock
//!   holder whose session expired (crashed, partitioned) holds the lock forever, every
//!   waiter waits (`lock-liveness`).

mod client;
mod server;
mod tree;

pub use client::{ZkeClient, ZkeSession};
pub use server::{Durable, ServerRole, ZkeServer};
pub use tree::Tree;

use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, WorkloadConfig, WorkloadTimer};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, ParamError, Protocol, ProtocolInfo,
    RoleInfo, RoleKind, VariantInfo,
};

pub type SessionId = u64;
/// Epoch in the high 32 bits, counter in the low 32 (as ZooKeeper's).
pub type Zxid = u64;

pub fn zxid(epoch: u64, counter: u64) -> Zxid {
    (epoch << 32) | counter
}

pub fn epoch_of(z: Zxid) -> u64 {
    z >> 32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkeError {
    NoNode,
    NodeExists,
    NotEmpty,
    SessionExpired,
}

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkeOp {
    /// Internal: a new session (from a `Connect` without one).
    CreateSession {
        timeout: Duration,
    },
    Create {
        path: String,
        ephemeral: bool,
        sequential: bool,
    },
    Delete {
        path: String,
    },
    GetChildren {
        path: String,
    },
    Write {
        key: u32,
        value: i64,
    },
    /// A plain read, from the connected server's tree.
    Read {
        key: u32,
    },
    /// `sync` then read (ZooKeeper's client sends both; the read follows the sync on the
    /// same connection).
    SyncRead {
        key: u32,
    },
}

/// What a request's reply says.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkeResult {
    Connected,
    Created {
        path: String,
        czxid: Zxid,
    },
    Deleted,
    Written,
    Value(i64),
    /// Children names with their czxid.
    Children(Vec<(String, Zxid)>),
    Error(ZkeError),
}

/// A transaction of the log.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Txn {
    CreateSession {
        session: SessionId,
        client: NodeId,
        timeout: Duration,
    },
    CloseSession {
        session: SessionId,
    },
    Create {
        path: String,
        owner: Option<SessionId>,
        /// A sequential node's number (the parent's next one becomes this + 1).
        sequence: Option<u64>,
    },
    Delete {
        path: String,
    },
    Write {
        key: u32,
        value: i64,
    },
    /// A request that failed its checks at the leader: logged so that its reply keeps
    /// its place in zxid order (ZooKeeper's error txn).
    Error {
        error: ZkeError,
    },
}

/// Who asked: the server the client is connected to answers once it applied the txn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Origin {
    pub server: NodeId,
    pub client: NodeId,
    pub session: SessionId,
    pub xid: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entry {
    pub zxid: Zxid,
    pub txn: Txn,
    pub origin: Option<Origin>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkeMsg {
    // client -> server
    /// A new connection: `session` to resume one, `last_zxid` the highest zxid the
    /// client has seen.
    Connect {
        session: Option<SessionId>,
        last_zxid: Zxid,
        timeout: Duration,
    },
    Ping {
        session: SessionId,
    },
    Request {
        session: SessionId,
        xid: u64,
        op: ZkeOp,
    },
    // server -> client
    Connected {
        session: SessionId,
        zxid: Zxid,
    },
    /// The server is behind the client's last zxid: try another.
    Refused {
        zxid: Zxid,
    },
    SessionExpired {
        session: SessionId,
    },
    Pong {
        session: SessionId,
        zxid: Zxid,
    },
    /// `zxid`: the last zxid the server had applied when it answered.
    Reply {
        session: SessionId,
        xid: u64,
        zxid: Zxid,
        result: ZkeResult,
    },
    // server <-> server
    Forward {
        origin: Origin,
        op: ZkeOp,
    },
    Touch {
        session: SessionId,
    },
    SyncReq {
        origin: Origin,
        key: u32,
    },
    SyncDone {
        origin: Origin,
        key: u32,
        zxid: Zxid,
    },
    VoteReq {
        round: u64,
        epoch: u64,
        zxid: Zxid,
    },
    Vote {
        round: u64,
        granted: bool,
    },
    NewLeader {
        epoch: u64,
        log: Vec<Entry>,
        commit: Zxid,
    },
    NewLeaderAck {
        epoch: u64,
        zxid: Zxid,
    },
    /// A server asks the leader for its history (it missed proposals, or restarted);
    /// `round` is its own, and a higher one deposes the leader.
    Resync {
        round: u64,
    },
    Propose {
        epoch: u64,
        prev: Zxid,
        entry: Entry,
    },
    Ack {
        epoch: u64,
        zxid: Zxid,
    },
    Commit {
        epoch: u64,
        zxid: Zxid,
    },
    Heartbeat {
        epoch: u64,
        commit: Zxid,
    },
    HeartbeatAck {
        epoch: u64,
        zxid: Zxid,
    },
    Resource(ResourceMsg),
}

impl From<ResourceMsg> for ZkeMsg {
    fn from(m: ResourceMsg) -> ZkeMsg {
        ZkeMsg::Resource(m)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkeTimer {
    /// Server: heartbeat, leader check, session expiry.
    Tick,
    /// Server: look for a leader (start an election round).
    Elect,
    /// Client: ping (or notice the connection is dead).
    Ping,
    /// Client: the reply to request (or connect attempt) `xid` is due.
    Request(u64),
    /// Lock client: look at the children again.
    Poll,
    /// Register client: next operation.
    Think,
    Workload(WorkloadTimer),
}

impl From<WorkloadTimer> for ZkeTimer {
    fn from(t: WorkloadTimer) -> ZkeTimer {
        ZkeTimer::Workload(t)
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ZkeVariant {
    Correct,
    ReadWithoutSync,
    ReconnectToOlderZxid,
    EphemeralKeptAfterExpiry,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ZkeRole {
    /// An ensemble server.
    Server,
    /// A lock client (the lock recipe and the lock workload).
    Client,
    /// A register client: reads and writes integer registers.
    Register,
    /// The protected resource of the lock recipe.
    Storage,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkeConfig {
    pub variant: ZkeVariant,
    pub session_timeout: Duration,
    pub tick: Duration,
    pub leader_timeout: Duration,
    pub workload: WorkloadConfig,
    pub reads: u32,
    pub register_think: (Duration, Duration),
    pub resource_mode: FencingMode,
    pub roles: tenure_core::Roles<ZkeRole>,
}

lock_client_params! {
    /// Scenario parameters (`[protocol.params]`): the ensemble's timing, the register
    /// clients' mix, then the lock workload's (the same names and defaults as the
    /// other lock protocols', see [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ZkEnsembleParams {
        /// Requested by every client; the leader expires a session this long after it
        /// last heard from it.
        pub session_timeout: HumanDuration = HumanDuration(Duration::from_millis(2_000)),
        /// ZooKeeper's `tickTime`: the leader's heartbeats and the session tracker's
        /// granularity.
        pub tick: HumanDuration = HumanDuration(Duration::from_millis(100)),
        /// A follower that hears nothing from its leader this long looks for another
        /// (`syncLimit` x `tickTime`); a leader not acked by a quorum for half of it
        /// steps down.
        pub leader_timeout: HumanDuration = HumanDuration(Duration::from_millis(1_000)),
        /// Register clients: percentage of reads.
        pub reads: u32 = 50,
        /// Register clients: pause between operations, drawn uniformly.
        pub register_think: [HumanDuration; 2] = [
            HumanDuration(Duration::from_millis(20)),
            HumanDuration(Duration::from_millis(100)),
        ],
        /// Whether the storage checks the tokens (czxids).
        pub resource_mode: FencingMode = FencingMode::Fenced,
        /// At most this many acquire attempts per lock client (retries included);
        /// absent: no limit.
        pub max_attempts: Option<u32> = None,
    }
}

/// A node of the ensemble protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ZkEnsemble {
    Server(Box<ZkeServer>),
    Client(Box<ZkeClient>),
    Storage(Resource),
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "zookeeper-ensemble",
    "a ZooKeeper-like ensemble: Zab-like quorum writes in zxid order, reads from \
     the connected server (stale unless after sync), sessions expired by the \
     leader, reconnects that never go back in zxid; the lock recipe and register \
     clients on top",
    &[
        RoleInfo::new("server", "an ensemble server (leader or follower)", 3),
        RoleInfo::new(
            "client",
            "runs the lock recipe (ephemeral sequential znodes, lowest holds) and \
             the lock workload",
            2,
        )
        .with_kind(RoleKind::Holder),
        RoleInfo::new(
            "register",
            "reads and writes integer registers (its own key; others' after sync)",
            2,
        ),
        RoleInfo::new(
            "storage",
            "the protected resource of the lock recipe, fenced by czxid",
            1,
        )
        .with_kind(RoleKind::Resource),
    ],
    &[
        VariantInfo::new(
            "correct",
            "sync before reading another client's write; servers refuse clients \
             ahead of them; expiry deletes ephemeral nodes",
        ),
        VariantInfo::new(
            "read-without-sync",
            "reads of other clients' writes without sync: a lagging follower \
             answers from the past",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "reconnect-to-older-zxid",
            "a server accepts a client that has seen a later zxid than its own: \
             the client reads its own write undone",
        )
        .with_breaks(&["linearizability"]),
        VariantInfo::new(
            "ephemeral-kept-after-expiry",
            "an expired session's ephemeral nodes stay: a dead holder keeps the lock",
        )
        .with_breaks(&["lock-liveness"]),
    ],
);

impl Protocol for ZkEnsemble {
    type Msg = ZkeMsg;
    type Timer = ZkeTimer;
    type Config = ZkeConfig;

    fn new(config: &ZkeConfig, me: NodeId, cluster: &Cluster) -> ZkEnsemble {
        match config.roles.get(me) {
            ZkeRole::Server => ZkEnsemble::Server(Box::new(ZkeServer::new(
                me,
                cluster.with_role("server").collect(),
                config.variant,
                config.tick,
                config.leader_timeout,
            ))),
            ZkeRole::Client | ZkeRole::Register => {
                ZkEnsemble::Client(Box::new(ZkeClient::new(config, me, cluster)))
            }
            ZkeRole::Storage => ZkEnsemble::Storage(Resource::new(config.resource_mode)),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<ZkeMsg, ZkeTimer>) {
        match self {
            ZkEnsemble::Server(s) => s.on_start(env),
            ZkEnsemble::Client(c) => c.on_start(env),
            ZkEnsemble::Storage(r) => r.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<ZkeMsg, ZkeTimer>, from: NodeId, msg: ZkeMsg) {
        match (self, msg) {
            (ZkEnsemble::Storage(r), ZkeMsg::Resource(m)) => r.on_message(env, from, m),
            (ZkEnsemble::Storage(_), _) => {}
            (ZkEnsemble::Server(s), msg) => s.on_message(env, from, msg),
            (ZkEnsemble::Client(c), msg) => c.on_message(env, from, msg),
        }
    }

    /// A client whose server's connection was reset reconnects at once (see
    /// [`ZkeClient::on_disconnect`]); a server notices a lost leader or follower by its
    /// timeouts, as before (a simplification: `Follower.followLeader` would leave at the
    /// socket's end at once).
    fn on_disconnect(&mut self, env: &mut dyn Env<ZkeMsg, ZkeTimer>, peer: NodeId) {
        if let ZkEnsemble::Client(c) = self {
            c.on_disconnect(env, peer);
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<ZkeMsg, ZkeTimer>, timer: ZkeTimer) {
        match self {
            ZkEnsemble::Server(s) => s.on_timer(env, timer),
            ZkEnsemble::Client(c) => c.on_timer(env, timer),
            ZkEnsemble::Storage(_) => {}
        }
    }
}

fn count_role(cluster: &Cluster, role: &str, min: usize, max: usize) -> Result<(), ParamError> {
    let n = cluster.count(role);
    if n < min || n > max {
        return Err(ParamError::new(
            &format!("cluster.roles.{role}"),
            format!("needs {min} to {max} `{role}` node(s), got {n}"),
        ));
    }
    Ok(())
}

impl Configurable for ZkEnsemble {
    type Params = ZkEnsembleParams;
    type Variant = ZkeVariant;
    type Role = ZkeRole;

    /// Clients and servers talk over TCP connections (`ClientCnxn`, the quorum's
    /// `LearnerHandler` sockets): FIFO, a long partition is a connection loss.
    fn transport() -> tenure_core::Transport {
        tenure_core::Transport::Stream
    }

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: ZkEnsembleParams,
        variant: ZkeVariant,
        cluster: &Cluster,
    ) -> Result<ZkeConfig, ParamError> {
        count_role(cluster, "server", 1, 9)?;
        count_role(
            cluster,
            "storage",
            usize::from(cluster.count("client") > 0),
            1,
        )?;
        if cluster.count("client") + cluster.count("register") == 0 {
            return Err(ParamError::new(
                "cluster.roles",
                "needs at least 1 `client` or `register` node",
            ));
        }
        if params.session_timeout.0 < Duration::from_millis(30) {
            return Err(ParamError::new(
                "session_timeout",
                "must be at least 30ms (clients ping every third of it)",
            ));
        }
        if params.tick.0.is_zero() || params.tick.0 * 4 > params.leader_timeout.0 {
            return Err(ParamError::new(
                "tick",
                "must be above zero and at most a quarter of leader_timeout",
            ));
        }
        if params.reads > 100 {
            return Err(ParamError::new("reads", "a percentage: 0 to 100"));
        }
        let [lo, hi] = params.register_think;
        if lo.0 > hi.0 {
            return Err(ParamError::new(
                "register_think",
                "[low, high] with low <= high",
            ));
        }
        // The storage node (a placeholder when there are no lock clients: no workload
        // runs then).
        let storage = cluster.with_role("storage").next().unwrap_or(NodeId(0));
        let workload = params
            .workload_params()
            .config(storage, params.max_attempts)?;
        Ok(ZkeConfig {
            variant,
            session_timeout: params.session_timeout.0,
            tick: params.tick.0,
            leader_timeout: params.leader_timeout.0,
            workload,
            reads: params.reads,
            register_think: (lo.0, hi.0),
            resource_mode: params.resource_mode,
            roles: tenure_core::Roles::of(cluster)?,
        })
    }

    fn promises(config: &ZkeConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::Promise;
        let mut promises = Vec::new();
        if cluster.count("register") > 0 {
            // One register per key, 0 until written.
            promises.push(Promise::new("linearizability").with("model", "cas-register"));
        }
        if cluster.count("client") > 0 {
            promises.push(Promise::new("fencing-safety"));
            promises.push(Promise::new("no-lost-update"));
            // A dead holder's session expires (T after it was last heard), the leader
            // closes it within a tick; waiters poll every T/10. Elections after a
            // heal: up to 3 leader timeouts.
            let lease = config.session_timeout + config.leader_timeout * 3;
            promises.push(crate::promises::lock_liveness(
                &config.workload,
                lease,
                config.session_timeout,
                Some(0.1),
                cluster,
                false,
            ));
        }
        promises
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
        Ok(ModelSpec::new(
            "three servers and two register clients: elections, NEWLEADER, proposals, \
             acks and commits, sessions, reads from the connected server, sync, writes \
             and reconnects (a client's request timer may fire at any point); clocks \
             frozen, so no leader steps down and no session expires by the clock",
            &[("server", 3), ("register", 2)],
        )
        .with_out_of_scope(&[
            (
                "reconnect-to-older-zxid",
                "it needs a follower cut off from commits, a client's write through \
                 another server and that client's reconnect to the lagging one before \
                 it catches up: 2,000 random walks of depth 60 find none",
            ),
            (
                "ephemeral-kept-after-expiry",
                "it breaks lock-liveness, which the model does not judge (no run ends), and \
                 the register clients it explores hold no ephemeral nodes",
            ),
        ])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(30)
                .with_max_states(300_000)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::All)
                .with_timers(TimerModel::Quiet),
        )
        .with_checks(&["linearizability"]))
    }

    fn assumptions(config: &ZkeConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        tenure_core::Assumptions::new()
            .with_max_drift(Limit::new(
                0.1,
                "a leader steps down half a leader timeout after its last quorum ack, by its \
                 clock, before followers (a full leader timeout by theirs) elect another; \
                 clients ping every third of the session timeout",
            ))
            .with_max_pause(Limit::new(
                config.leader_timeout / 2,
                format!(
                    "sync is not a quorum operation: a leader paused longer than half its \
                     leader timeout ({}) may wake after another was elected and answer a \
                     sync from its stale state before its next tick deposes it",
                    f(config.leader_timeout)
                ),
            ))
    }
}

#[cfg(test)]
mod tests;
