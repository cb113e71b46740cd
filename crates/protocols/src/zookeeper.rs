//! ZooKeeper-style coordination: sessions, ephemeral sequential znodes and one-shot
//! watches, with the two classic recipes on top (leader election and a lock).
//!
//! **Model.** The ensemble is modelled as ONE linearizable server (role `server`): ZAB
//! replication, followers, observers and leader failover are out of scope. What the
//! recipes depend on is kept: sessions kept alive by client pings and expired by the
//! server's monotonic clock; expiring a session deletes its ephemeral nodes and fires
//! the watches on them; sequential nodes get a per-parent, ever-growing suffix; every
//! change gets the next zxid. The server's whole state (tree, sessions, watches, zxid)
//! is durable, standing in for a quorum's log and snapshots; after a restart every
//! session gets a fresh timeout (as ZooKeeper's `SessionTrackerImpl` does when a new
//! leader loads the sessions), and a watch event goes out only once the change that
//! fired it is stored.
//!
//! **CONNECTIONLOSS** (ZooKeeper 3.x `ClientCnxn`; Curator's `CreateBuilderImpl`). A real
//! client talks to the server over one TCP connection: requests and events arrive once
//! and in order, or the connection breaks. Our links lose, duplicate and reorder, so the
//! model keeps what TCP gives and handles the break as the real client does:
//! * A client has one request outstanding, and its reply is due within a third of the
//!   session timeout (`ClientCnxn.SendThread`: `readTimeout` is 2/3 of the negotiated
//!   session timeout, set in `onConnected`, and an idle client pings at half of it).
//!   When a reply is overdue the connection is lost: the request fails with
//!   CONNECTIONLOSS, and the client reconnects with its session id (`Reconnect`, the
//!   `ConnectRequest` of `primeConnection`). A live session is kept (`Reconnected`); an
//!   expired one is `SessionExpired` and the client starts a new session.
//! * Reconnected, it re-registers its watches (`SetWatches`, sent by `primeConnection`
//!   with the client's last zxid; the server's `DataTree.setWatches` fires at once every
//!   watch whose node changed meanwhile) and retries the failed request.
//! * A create of an ephemeral sequential node whose reply was lost may have made the
//!   node. Its name carries a GUID (`_c_<guid>-n-<id>-`, Curator's
//!   `ProtectedUtils.PROTECTED_PREFIX` and `withProtection()`), and the retry first reads
//!   the children and looks for it (`CreateBuilderImpl.findProtectedNodeInForeground`;
//!   the recipes page, "Recoverable Errors and the GUID") before creating another.
//! * TCP's sequence numbers, modelled: the server numbers each session's watch events
//!   and says in every `Pong` how many it has sent; an event still missing a ping
//!   interval later means the connection lost it, and the client reconnects (so the
//!   `SetWatches` fires it again). The server drops a request whose xid it already
//!   handled on that session (a duplicate); the client ignores replies to requests it
//!   no longer waits for, duplicated events, and duplicated `Created` replies.
//!
//! A lost, duplicated or late request, reply or event therefore never wedges a client,
//! and the model assumes no reliable network.
//!
//! **Recipes** (param `recipe`), run by every `client` node:
//! * `election`: create `/election/_c_<guid>-n-<id>-` ephemeral+sequential; the
//!   smallest sequence number leads (`Leader { term: sequence }`), every other node
//!   watches its predecessor with an `exists` watch and checks again when that node goes
//!   (`Follower { term: leader's sequence, leader }`). A follower also watches the
//!   leader's node, so that it learns who leads when the leader goes even if its own
//!   predecessor stays (as `LeaderElectionSupport` followers re-read the children to
//!   name the leader): without it, a follower went on naming a dead leader after a
//!   crash and restart, and leader-liveness failed (the restart liveness bug).
//! * `lock`: the same under `/lock/<resource>`, driven by the lock-client
//!   [`Workload`]; the holder's token is its node's czxid (`Holds { token: czxid }`),
//!   passed to the protected resource on the `storage` node.
//!
//! A client that hears nothing from the server for 2/3 of its session timeout suspects
//! its session and gives up leadership (Curator's `SUSPENDED`), so a partition alone
//! does not make two leaders. A *paused* client runs no timers, though: if its session
//! expires during the pause it still believes it leads or holds the lock until it runs
//! again and hears from the server (or its own timer fires), while the server has already
//! handed over. That is the lesson, and the scenarios expect the violation
//! (`mutual-exclusion` for the lock, `single-leader-at-a-time` for the election); only
//! the fenced resource keeps the data safe.
//!
//! **Variants.** `correct`; `herd`: every waiter sets a `getChildren` watch on the parent
//! and re-reads the children on every change, so one release wakes every waiter (the
//! herd effect). It breaks no checker; it shows in the message counts.
//!
//! **Source.** ZooKeeper Recipes and Solutions ("Leader Election", "Locks": "watch the
//! node with the next lowest sequence number ... to avoid the herd effect"); Hunt et
//! al., "ZooKeeper: Wait-free coordination for Internet-scale systems" (USENIX ATC
//! 2010) §2.4; the seed article "Coordination Patterns" (ZooKeeper election); Kleppmann,
//! "How to do distributed locking" (2016) on pauses and fencing with the zxid.

mod client;
mod server;

pub use client::{ZkClient, ZkRecipeClient};
pub use server::{Session, ZkData, ZkServer, Znode};

use crate::backoff::BackoffPolicy;
use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, LockRole, WorkloadConfig, WorkloadTimer};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, ParamError, Protocol, ProtocolInfo,
    RoleInfo, VariantInfo,
};

pub type SessionId = u64;

/// What a watch reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkEvent {
    NodeCreated,
    NodeDeleted,
    ChildrenChanged,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkError {
    NoNode,
    NodeExists,
    NotEmpty,
}

/// Messages between clients and the server, and to the protected resource. `xid` is
/// the client's request id, echoed in the reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkMsg {
    // client -> server
    Connect {
        timeout: Duration,
    },
    Ping {
        session: SessionId,
    },
    /// A new connection for an existing session (the `ConnectRequest` a client sends
    /// with its session id after CONNECTIONLOSS): `Reconnected` if the session lives,
    /// `SessionExpired` if not.
    Reconnect {
        session: SessionId,
        xid: u64,
    },
    /// Re-register the client's watches after a reconnect: `exists` watches with the
    /// czxid the client last saw (`None`: no node), `getChildren` watches by path.
    SetWatches {
        session: SessionId,
        xid: u64,
        exists: Vec<(String, Option<u64>)>,
        children: Vec<String>,
    },
    Create {
        session: SessionId,
        xid: u64,
        path: String,
        ephemeral: bool,
        sequential: bool,
    },
    Delete {
        session: SessionId,
        xid: u64,
        path: String,
    },
    GetChildren {
        session: SessionId,
        xid: u64,
        path: String,
        watch: bool,
    },
    Exists {
        session: SessionId,
        xid: u64,
        path: String,
        watch: bool,
    },
    // server -> client
    Connected {
        session: SessionId,
        timeout: Duration,
    },
    /// `events`: how many watch events the server has sent on this session so far.
    Pong {
        session: SessionId,
        events: u64,
    },
    Reconnected {
        session: SessionId,
        xid: u64,
        events: u64,
    },
    WatchesSet {
        session: SessionId,
        xid: u64,
    },
    /// The session is gone (expired, or never existed): the reply to any request on it.
    SessionExpired {
        session: SessionId,
    },
    Created {
        session: SessionId,
        xid: u64,
        path: String,
        czxid: u64,
    },
    Deleted {
        session: SessionId,
        xid: u64,
    },
    Error {
        session: SessionId,
        xid: u64,
        error: ZkError,
    },
    /// Children names, sorted.
    Children {
        session: SessionId,
        xid: u64,
        path: String,
        children: Vec<String>,
    },
    /// `czxid` is `None` when the node does not exist.
    Stat {
        session: SessionId,
        xid: u64,
        path: String,
        czxid: Option<u64>,
    },
    /// A one-shot watch fired; `seq` numbers the session's events from 0.
    Watch {
        session: SessionId,
        path: String,
        event: ZkEvent,
        seq: u64,
    },
    Resource(ResourceMsg),
}

impl From<ResourceMsg> for ZkMsg {
    fn from(m: ResourceMsg) -> ZkMsg {
        ZkMsg::Resource(m)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ZkTimer {
    /// Server: the session's timeout may be over.
    Expire(SessionId),
    /// Client: send a ping (or reconnect).
    Ping,
    /// Client: nothing heard from the server for 2/3 of the session timeout.
    SessionCheck,
    /// Client: the reply to request `xid` (or reconnect attempt) is due; if it has not
    /// come, the connection is lost (CONNECTIONLOSS).
    Request(u64),
    Workload(WorkloadTimer),
}

impl From<WorkloadTimer> for ZkTimer {
    fn from(t: WorkloadTimer) -> ZkTimer {
        ZkTimer::Workload(t)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    #[default]
    Election,
    Lock,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ZkVariant {
    Correct,
    Herd,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkConfig {
    pub variant: ZkVariant,
    pub recipe: Recipe,
    pub session_timeout: Duration,
    pub resource_mode: FencingMode,
    /// The lock recipe's workload (`None` for the election recipe).
    pub workload: Option<WorkloadConfig>,
    /// Election recipe: how a client whose session expired spaces its reconnects
    /// (`None`: at once, then every third of the session timeout).
    pub reconnect: Option<BackoffPolicy>,
    pub roles: tenure_core::Roles<LockRole>,
}

lock_client_params! {
    /// Scenario parameters (`[protocol.params]`): the recipe, the session timeout, the
    /// storage's mode and the attempt limit, then the workload's (they matter only to
    /// the lock recipe), with the same names and defaults as the other lock protocols'
    /// (see [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ZooKeeperParams {
        pub recipe: Recipe = Recipe::Election,
        /// Requested by every client; the server expires a session this long after it
        /// last heard from it (its monotonic clock).
        pub session_timeout: HumanDuration = HumanDuration(Duration::from_millis(2_000)),
        /// Whether the storage checks the tokens (czxids).
        pub resource_mode: FencingMode = FencingMode::Fenced,
        /// At most this many acquire attempts per client process (retries included);
        /// absent: no limit. Bounds the workload for the model explorer.
        pub max_attempts: Option<u32> = None,
    }
}

/// A node of the zookeeper protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ZooKeeper {
    Server(ZkServer),
    Client(Box<ZkClient>),
    Storage(Resource),
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "zookeeper",
    "ZooKeeper-style sessions, ephemeral sequential znodes and watches, with the \
     election and lock recipes (the ensemble modelled as one linearizable server)",
    &[
        RoleInfo::new(
            "server",
            "the coordination service (one linearizable server standing for the \
             ensemble)",
            1,
        ),
        RoleInfo::new(
            "client",
            "runs the election or lock recipe in its own session",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
        RoleInfo::new(
            "storage",
            "the protected resource of the lock recipe (idle for election)",
            1,
        )
        .with_kind(tenure_core::RoleKind::Resource),
    ],
    &[
        VariantInfo::new("correct", "each waiter watches only its predecessor"),
        VariantInfo::new(
            "herd",
            "every waiter watches the parent's children: each change wakes them all \
             (costs messages, breaks nothing)",
        ),
    ],
);

impl Protocol for ZooKeeper {
    type Msg = ZkMsg;
    type Timer = ZkTimer;
    type Config = ZkConfig;

    fn new(config: &ZkConfig, me: NodeId, cluster: &Cluster) -> ZooKeeper {
        match config.roles.get(me) {
            LockRole::Server => ZooKeeper::Server(ZkServer::new()),
            LockRole::Client => ZooKeeper::Client(Box::new(ZkClient::new(config, me, cluster))),
            LockRole::Storage => ZooKeeper::Storage(Resource::new(config.resource_mode)),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<ZkMsg, ZkTimer>) {
        match self {
            ZooKeeper::Server(s) => s.on_start(env),
            ZooKeeper::Client(c) => c.on_start(env),
            ZooKeeper::Storage(r) => r.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<ZkMsg, ZkTimer>, from: NodeId, msg: ZkMsg) {
        match (self, msg) {
            (ZooKeeper::Storage(r), ZkMsg::Resource(m)) => r.on_message(env, from, m),
            (ZooKeeper::Storage(_), _) => {}
            (ZooKeeper::Server(s), msg) => s.on_message(env, from, msg),
            (ZooKeeper::Client(c), msg) => c.on_message(env, msg),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<ZkMsg, ZkTimer>, timer: ZkTimer) {
        match self {
            ZooKeeper::Server(s) => s.on_timer(env, timer),
            ZooKeeper::Client(c) => c.on_timer(env, timer),
            ZooKeeper::Storage(_) => {}
        }
    }
}

/// The only node playing `role`, or an error naming the role.
pub(crate) fn single_node(cluster: &Cluster, role: &str) -> Result<NodeId, ParamError> {
    let nodes: Vec<NodeId> = cluster.with_role(role).collect();
    match nodes[..] {
        [one] => Ok(one),
        _ => Err(ParamError::new(
            &format!("cluster.roles.{role}"),
            format!("needs exactly 1 `{role}` node, got {}", nodes.len()),
        )),
    }
}

impl ZooKeeperParams {
    /// The lock workload's configuration (for the lock recipes of zookeeper and etcd).
    pub(crate) fn workload_config(&self, cluster: &Cluster) -> Result<WorkloadConfig, ParamError> {
        self.workload_params()
            .config(single_node(cluster, "storage")?, self.max_attempts)
    }
}

impl Configurable for ZooKeeper {
    type Params = ZooKeeperParams;
    type Variant = ZkVariant;
    type Role = LockRole;

    /// A ZooKeeper client holds one TCP connection to the ensemble (`ClientCnxn`'s
    /// `SendThread`): FIFO, a short partition delays requests, a long one is a
    /// connection loss.
    fn transport() -> tenure_core::Transport {
        tenure_core::Transport::Stream
    }

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: ZooKeeperParams,
        variant: ZkVariant,
        cluster: &Cluster,
    ) -> Result<ZkConfig, ParamError> {
        single_node(cluster, "server")?;
        if cluster.count("client") == 0 {
            return Err(ParamError::new(
                "cluster.roles.client",
                "needs at least 1 `client` node",
            ));
        }
        if params.session_timeout.0 < Duration::from_millis(30) {
            return Err(ParamError::new(
                "session_timeout",
                "must be at least 30ms (clients ping every third of it)",
            ));
        }
        let workload = match params.recipe {
            Recipe::Election => None,
            Recipe::Lock => Some(params.workload_config(cluster)?),
        };
        Ok(ZkConfig {
            variant,
            recipe: params.recipe,
            session_timeout: params.session_timeout.0,
            resource_mode: params.resource_mode,
            reconnect: match (params.recipe, &params.backoff) {
                (Recipe::Election, Some(b)) => Some(b.policy()?),
                _ => None,
            },
            workload,
            roles: tenure_core::Roles::of(cluster)?,
        })
    }

    fn promises(config: &ZkConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::{format_duration as f, Promise};
        match &config.workload {
            // Like etcd's, the recipe's promise is the fenced resource and the queue, not
            // that two clients never act at once (a client whose session expired acts
            // until it hears so).
            Some(workload) => vec![
                Promise::new("fencing-safety"),
                Promise::new("no-lost-update"),
                crate::promises::lock_liveness(
                    workload,
                    config.session_timeout,
                    workload.request_timeout,
                    Some(0.1),
                    cluster,
                    true,
                ),
            ],
            None => {
                // After the calm, with T the session timeout: a dead leader's session
                // expires (T after it was last heard), and once more for a restarted
                // client's old node racing it (T); the next in line hears of it, or
                // notices a lost event at its next ping after the pong that counted it
                // (2 x T/3), reconnects and re-sets its watches (2 replies, T/3 each),
                // and reads the queue: 2T + 4T/3 plus round trips, within 4T.
                let t = config.session_timeout;
                let base = t * 4;
                let (within, scale) = crate::promises::slow_clock(base, Some(0.1));
                let mut liveness = Promise::new("leader-liveness").within(
                    within,
                    format!(
                        "(4 x session timeout {}: 2 expiries + 2 pings + 2 reply timeouts \
                         of T/3, rounded up){scale}",
                        f(t)
                    ),
                );
                if cluster.count("client") > 0 && cluster.roles().len() > 1 {
                    liveness = liveness.with("role", "client");
                }
                vec![Promise::new("single-leader-per-term"), liveness]
            }
        }
    }

    fn assumptions(_config: &ZkConfig) -> tenure_core::Assumptions {
        tenure_core::Assumptions::new()
            // No `reliable_network`: a lost, duplicated or late request, reply or watch
            // event is CONNECTIONLOSS to the client, which reconnects within its session,
            // re-sets its watches and retries (finding its own node by GUID first).
            .with_max_drift(tenure_core::Limit::new(
                0.1,
                "pings every third of the session timeout by the client's clock keep a \
                 session timed by the server's",
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::ModelSpec;
        Ok(ModelSpec::new(
            "the lock recipe on one server with sessions and ephemeral sequential \
             znodes, clients making one acquire attempt each, a fenced storage; time \
             may leap once (session expiry); pings make the space grow with depth, so \
             it is depth-bounded",
            &[("server", 1), ("client", 2), ("storage", 1)],
        )
        .with_bounds(
            tenure_core::model::Bounds::DEFAULT
                .with_max_depth(40)
                .with_max_leaps(1)
                .with_max_duplicates(0)
                .with_clock(tenure_core::model::ClockModel::Frozen)
                .with_timers(tenure_core::model::TimerModel::Quiet)
                .with_max_states(300_000),
        )
        .with_checks(&["fencing-safety", "no-lost-update"])
        .with_params(r#"{ "recipe": "lock", "max_attempts": 1 }"#)
        .with_walk_params(r#"{ "recipe": "lock", "max_attempts": 6 }"#))
    }
}

#[cfg(test)]
mod tests;
