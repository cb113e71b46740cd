//! etcd-style lease locks: a key per client under the lock prefix, attached to the
//! client's lease; the lowest create revision holds the lock and is its fencing token.
//!
//! **Model.** The etcd cluster is modelled as ONE linearizable KV server (role `server`):
//! Raft replication and leader changes are out of scope. What the lock depends on is
//! kept: a global revision bumped by every change; leases with a TTL, kept alive by the
//! client and expired by the server's monotonic clock, deleting their keys; watches on a
//! key's deletion. The server's state is durable; after a restart every lease gets a
//! fresh TTL, as etcd does after a leader change. A keep-alive handled after its
//! lease's TTL ran out (a stalled server) renews nothing: the lease is revoked then, as
//! etcd's `lessor.Renew` answers an expired lease only after revoking it (v3.4.23
//! `lease/lessor.go`, `Renew`: `if l.expired()` waits on `l.revokec` and returns
//! `ErrLeaseNotFound`; read in the etcd repository at tag v3.4.23).
//!
//! **The lock** (etcd `clientv3/concurrency.Mutex`): the client grants itself a lease and
//! keeps it alive every `ttl / 3`. To lock it puts `<prefix>/<lease id>` with its lease
//! if absent and learns the key's create revision. If no key under the prefix has a
//! lower create revision, it holds the lock with that revision as its fencing token
//! (`Holds { token: create_revision }`). Otherwise it watches the key with the next
//! lower revision (its predecessor) for deletion and looks again when it goes, so one
//! release wakes one waiter. A client believes in its lease until `ttl` after it sent
//! the last keep-alive that was answered (its monotonic clock); past that it gives up
//! the lock. Releasing deletes the key.
//!
//! **After waiting, the own key** (etcd client v3.5.0 and later, PR #11408, `Mutex.Lock` in
//! `client/v3/concurrency/mutex.go`; never in a 3.4.x client: "make sure the session is not expired, and the
//! owner key still exists"): a client that had to wait and then finds no predecessor
//! first `Get`s its own key; only if it still exists with its create revision does the
//! client hold (`ErrSessionExpired` otherwise: the acquire fails, the client starts over
//! with a new lease). A client that never waited holds at once, as `Mutex.Lock` does
//! when the transaction already shows it as the owner.
//!
//! The `no-key-check` variant is the client before that fix (etcd 3.4.3, the Jepsen
//! etcd 3.4.3 analysis, 2020): `Lock` blocks in `waitDeletes` without looking at its
//! session, so a waiter whose lease expired while it waited (its key deleted with it)
//! keeps waiting, finds no predecessor once the holder goes, and believes it holds, while
//! the next waiter, whose predecessor was the deleted key, holds as well: two holders.
//!
//! **How it fails.** Even correct, a client paused longer than its TTL (a GC or VM
//! stall) keeps believing it holds the lock after the server deleted its key and the
//! next waiter took over: mutual exclusion of belief is lost, and only the fenced
//! resource, which rejects the stale token, keeps the data safe. The `no-keepalive`
//! variant stops keep-alives while it holds the lock and does not watch its lease
//! either (it assumes the work is short): when the work outlasts the TTL the lease
//! expires under it and the next waiter gets the lock (breaks `mutual-exclusion`).
//!
//! **Source.** etcd docs, "Lease" (API guide) and `client/v3/concurrency/mutex.go`
//! (`Mutex.Lock`, `waitDeletes`, the own-key `Get` added by etcd PR #11408, merged in
//! December 2019 and released in v3.5.0 only: `clientv3/concurrency/mutex.go` of v3.4.3,
//! v3.4.8, v3.4.23 and v3.4.30 has no `ErrSessionExpired`); Kyle Kingsbury, "Jepsen: etcd 3.4.3" (2020), locks; Kleppmann, "How to do distributed locking" (2016), on pauses and
//! fencing tokens; the seed article "Coordination Patterns" ("etcd: Lease-based locks
//! with TTL").

mod client;
mod server;

pub use client::{EtcdClient, EtcdLockClient};
pub use server::{EtcdData, EtcdServer, Kv, Lease};

use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, LockRole, WorkloadConfig, WorkloadTimer};
use crate::zookeeper::single_node;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, ParamError, Protocol, ProtocolInfo,
    RoleInfo, Roles, VariantInfo,
};

pub type LeaseId = u64;

/// Messages between clients and the server (`req` is the client's request id, echoed
/// back), and to the protected resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EtcdMsg {
    LeaseGrant {
        req: u64,
        ttl: Duration,
    },
    LeaseGranted {
        req: u64,
        lease: LeaseId,
        ttl: Duration,
    },
    KeepAlive {
        req: u64,
        lease: LeaseId,
    },
    /// `ttl` is `None` when the lease is gone.
    KeepAliveReply {
        req: u64,
        lease: LeaseId,
        ttl: Option<Duration>,
    },
    /// A transaction: if the key does not exist, put it with `lease`. The reply carries
    /// the key's create revision either way (`None`: the lease is gone).
    PutIfAbsent {
        req: u64,
        key: String,
        lease: LeaseId,
    },
    PutReply {
        req: u64,
        key: String,
        create_revision: Option<u64>,
    },
    /// The key under `prefix` with the highest create revision below `before`.
    GetPredecessor {
        req: u64,
        prefix: String,
        before: u64,
    },
    /// The predecessor, and the store's revision when it was read (etcd's response
    /// header revision).
    Predecessor {
        req: u64,
        key: Option<String>,
        revision: u64,
    },
    /// Watch `key` for a delete after `revision` (reported at once if the key was
    /// deleted since, even if a new key of that name was created after): etcd's
    /// `waitDelete` watches the predecessor `WithRev(resp.Header.Revision)` of the
    /// `Get` that found it (`client/v3/concurrency/key.go`).
    WatchDelete {
        req: u64,
        key: String,
        revision: u64,
    },
    KeyDeleted {
        req: u64,
        key: String,
    },
    Delete {
        req: u64,
        key: String,
    },
    Deleted {
        req: u64,
    },
    /// Read `key` (etcd `Get`): its create revision, `None` if it does not exist.
    Get {
        req: u64,
        key: String,
    },
    GetReply {
        req: u64,
        key: String,
        create_revision: Option<u64>,
    },
    Resource(ResourceMsg),
}

impl From<ResourceMsg> for EtcdMsg {
    fn from(m: ResourceMsg) -> EtcdMsg {
        EtcdMsg::Resource(m)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EtcdTimer {
    /// Server: the lease's TTL may be over.
    LeaseExpire(LeaseId),
    /// Client: send a keep-alive (or ask for a new lease).
    KeepAlive,
    /// Client: its lease runs out by its own clock.
    LeaseCheck,
    Workload(WorkloadTimer),
}

impl From<WorkloadTimer> for EtcdTimer {
    fn from(t: WorkloadTimer) -> EtcdTimer {
        EtcdTimer::Workload(t)
    }
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum EtcdVariant {
    Correct,
    NoKeepalive,
    /// etcd clients before v3.5.0 (every 3.4.x): no check of the own key after waiting.
    NoKeyCheck,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdConfig {
    pub variant: EtcdVariant,
    pub ttl: Duration,
    pub resource_mode: FencingMode,
    pub workload: WorkloadConfig,
    pub roles: Roles<LockRole>,
}

lock_client_params! {
    /// Scenario parameters (`[protocol.params]`): the lease TTL, the storage's mode and
    /// the attempt limit, then the workload's, with the same names and defaults as the
    /// other lock protocols' (see [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct EtcdLockParams {
        /// The lease's time to live, timed by the server.
        pub ttl: HumanDuration = HumanDuration(Duration::from_millis(2_000)),
        /// Whether the storage checks the tokens (create revisions).
        pub resource_mode: FencingMode = FencingMode::Fenced,
        /// At most this many acquire attempts per client process (retries included);
        /// absent: no limit. Bounds the workload for the model explorer.
        pub max_attempts: Option<u32> = None,
    }
}

/// A node of the etcd-lock protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EtcdLock {
    Server(EtcdServer),
    Client(Box<EtcdClient>),
    Storage(Resource),
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "etcd-lock",
    "etcd-style lease locks: lowest create revision holds, waiters watch their \
     predecessor, the revision is the fencing token (one linearizable KV server)",
    &[
        RoleInfo::new(
            "server",
            "the KV store with leases (one linearizable server standing for the \
             cluster)",
            1,
        ),
        RoleInfo::new(
            "client",
            "lock clients: acquire, read-modify-write the storage, release",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
        RoleInfo::new("storage", "the protected resource, a counter", 1)
            .with_kind(tenure_core::RoleKind::Resource),
    ],
    &[
        VariantInfo::new(
            "correct",
            "keep-alives every ttl/3; the client gives up when its lease runs out \
             (still unsafe under a pause longer than the TTL, fencing saves the data)",
        ),
        VariantInfo::new(
            "no-keepalive",
            "no keep-alives while holding: the lease expires under a long hold",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new(
            "no-key-check",
            "etcd clients before v3.5.0, every 3.4.x (PR #11408 is in v3.5.0 only): after waiting, the client believes it \
             holds without checking that its own key still exists; a waiter whose \
             lease expired while it waited holds alongside the next client",
        )
        .with_breaks(&["mutual-exclusion"]),
    ],
);

impl Protocol for EtcdLock {
    type Msg = EtcdMsg;
    type Timer = EtcdTimer;
    type Config = EtcdConfig;

    fn new(config: &EtcdConfig, me: NodeId, cluster: &Cluster) -> EtcdLock {
        match config.roles.get(me) {
            LockRole::Server => EtcdLock::Server(EtcdServer::new()),
            LockRole::Client => EtcdLock::Client(Box::new(EtcdClient::new(config, me, cluster))),
            LockRole::Storage => EtcdLock::Storage(Resource::new(config.resource_mode)),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<EtcdMsg, EtcdTimer>) {
        match self {
            EtcdLock::Server(s) => s.on_start(env),
            EtcdLock::Client(c) => c.on_start(env),
            EtcdLock::Storage(r) => r.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<EtcdMsg, EtcdTimer>, from: NodeId, msg: EtcdMsg) {
        match (self, msg) {
            (EtcdLock::Storage(r), EtcdMsg::Resource(m)) => r.on_message(env, from, m),
            (EtcdLock::Storage(_), _) => {}
            (EtcdLock::Server(s), msg) => s.on_message(env, from, msg),
            (EtcdLock::Client(c), msg) => c.on_message(env, msg),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<EtcdMsg, EtcdTimer>, timer: EtcdTimer) {
        match self {
            EtcdLock::Server(s) => s.on_timer(env, timer),
            EtcdLock::Client(c) => c.on_timer(env, timer),
            EtcdLock::Storage(_) => {}
        }
    }
}

impl Configurable for EtcdLock {
    type Params = EtcdLockParams;
    type Variant = EtcdVariant;
    type Role = LockRole;

    /// etcd clients talk gRPC over HTTP/2: one TCP connection per endpoint, with the
    /// lease keep-alives and watches as streams on it.
    fn transport() -> tenure_core::Transport {
        tenure_core::Transport::Stream
    }

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: EtcdLockParams,
        variant: EtcdVariant,
        cluster: &Cluster,
    ) -> Result<EtcdConfig, ParamError> {
        single_node(cluster, "server")?;
        if cluster.count("client") == 0 {
            return Err(ParamError::new(
                "cluster.roles.client",
                "needs at least 1 `client` node",
            ));
        }
        if params.ttl.0 < Duration::from_millis(30) {
            return Err(ParamError::new(
                "ttl",
                "must be at least 30ms (clients keep alive every third of it)",
            ));
        }
        let storage = single_node(cluster, "storage")?;
        let workload = params
            .workload_params()
            .config(storage, params.max_attempts)?;
        Ok(EtcdConfig {
            variant,
            ttl: params.ttl.0,
            resource_mode: params.resource_mode,
            workload,
            roles: Roles::of(cluster)?,
        })
    }

    /// What etcd's lock promises: the resource, fenced by the key's create revision,
    /// never takes a stale write, and waiters get the lock in revision order. It does NOT
    /// promise that two clients never act at once: a holder whose lease expires while
    /// its keep-alives are lost (or while it is paused) still acts until it notices, and
    /// only the fenced resource keeps that safe (Kleppmann 2016; etcd's own
    /// documentation of `concurrency.Mutex`). `mutual-exclusion` stays a lesson here.
    fn promises(config: &EtcdConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        vec![
            tenure_core::Promise::new("fencing-safety"),
            tenure_core::Promise::new("no-lost-update"),
            crate::promises::lock_liveness(
                &config.workload,
                config.ttl,
                config.workload.request_timeout,
                Some(0.1),
                cluster,
                true,
            ),
        ]
    }

    fn assumptions(_config: &EtcdConfig) -> tenure_core::Assumptions {
        tenure_core::Assumptions::new().with_max_drift(tenure_core::Limit::new(
            0.1,
            "keep-alives every TTL/3 by the client's clock renew a lease timed by the server's",
        ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::ModelSpec;
        Ok(ModelSpec::new(
            "one KV server with leases and revisions, clients making one acquire \
             attempt each, a fenced storage; time may leap once (lease expiry); \
             keep-alives make the space grow with depth, so it is depth-bounded",
            &[("server", 1), ("client", 2), ("storage", 1)],
        )
        .with_out_of_scope(&[
            (
                "no-keepalive",
                "its lease expires because the work outlasts the TTL; with free timing \
                 the correct client is paused past its TTL just the same, so only the \
                 simulator's durations tell the two apart",
            ),
            (
                "no-key-check",
                "two holders need a waiter's lease to expire while it waits, a third \
                 client queued behind it, and the holder's release after that: three \
                 clients and more depth than these bounds (two clients, depth 20); the \
                 simulator's scenario and fuzzing show it",
            ),
        ])
        .with_bounds(
            tenure_core::model::Bounds::DEFAULT
                .with_max_depth(20)
                .with_max_leaps(1)
                .with_max_duplicates(0)
                .with_clock(tenure_core::model::ClockModel::Frozen)
                .with_timers(tenure_core::model::TimerModel::Quiet)
                .with_max_states(300_000),
        )
        .with_checks(&["fencing-safety", "no-lost-update"])
        .with_params(r#"{ "max_attempts": 1 }"#)
        .with_walk_params(r#"{ "max_attempts": 6 }"#))
    }
}

#[cfg(test)]
mod tests;
