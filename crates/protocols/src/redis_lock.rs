//! `redis-lock`: a lock on a single Redis instance, `SET key value NX PX ttl` to acquire
//! and the compare-and-delete script to release. Source: the Redis `SET` docs and
//! "Distributed locks with Redis" (single-instance section); seed 002 ("Lock
//! Acquisition Process (Redis Example)").
//!
//! What it promises: while the server is up, at most one client holds the key *by the
//! server's clock*; a crashed holder's key expires after `ttl`, so the lock is live.
//! Each client believes it holds the lock for `ttl` minus the time since it sent its
//! `SET`, by its own monotonic clock.
//!
//! The server expires keys as real Redis does (see [`crate::lock_server`]): an absolute
//! Unix-millisecond expiry time compared with the server's *wall* clock (`keyIsExpired`
//! in redis/redis `src/db.c`). A forward step of the server's wall clock therefore
//! expires the holder's key early and a second client gets the lock while the first
//! still works: mutual exclusion of actions fails on a single instance too
//! (`scenarios/redis-lock/server-clock-jump.toml`). The protocol declares the wall
//! steps it is designed for ([`tenure_core::Assumptions::max_wall_jump`]): a quarter
//! of the TTL margin (`ttl - work`), since pauses take half of it and the last quarter
//! covers drift and round trips. Variant `monotonic-expiry` times the TTL on the
//! server's monotonic clock instead: a contrast, not a bug, that passes the same jump
//! (`scenarios/redis-lock/server-clock-jump-monotonic-expiry.toml`).
//!
//! How it fails, even when correct: a client paused (GC, VM stall) longer than the TTL
//! keeps believing it holds the lock after the server has given it to someone else, and
//! writes to the unfenced storage from a stale read (Kleppmann, "How to do distributed
//! locking", 2016, "Protecting a resource with a lock"). Scenario
//! `scenarios/redis-lock/gc-pause.toml` encodes that as an expected violation.
//!
//! Broken variants:
//! * `plain-del-release`: release is a plain `DEL`. A client whose lock expired while it
//!   worked deletes the next holder's lock, and a third client gets it while the second
//!   still holds it. Breaks mutual-exclusion.
//! * `no-ttl`: `SET` without `PX`. A holder that crashes never releases, and every other
//!   client waits forever. Breaks lock-liveness.
//! * `release-before-write`: the client releases its lock as soon as its read returns,
//!   before its work and its write (a critical section that ends too early, as an
//!   `unlock` placed before the write instead of after it). The next client acquires and
//!   reads while the first still works, and the first then writes without the lock: it
//!   keeps acting after its hold ended, as a holder does whose lease ran out. No two
//!   clients ever *believe* they hold the lock at once (`mutual-exclusion-belief`
//!   passes); only their actions interleave. Breaks mutual-exclusion.
//!
//! [`SingleServerConfig`] and [`RedisLock`] are shared with the `fencing` protocol,
//! which is the same machinery with tokens and a fenced resource.

pub use crate::lock_server::ExpiryClock;
use crate::lock_server::{LockMsg, LockServer};
use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{
    lock_client_params, LockApi, LockRole, Phase, Workload, WorkloadConfig, WorkloadTimer,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, LocalTime, NodeId, ParamError, Protocol,
    ProtocolInfo, RoleInfo, Roles, VariantInfo,
};

/// Messages of the lock protocols that run a [`LockServer`] (redis-lock, redlock,
/// fencing).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    Lock(LockMsg),
    Resource(ResourceMsg),
}

impl From<LockMsg> for Msg {
    fn from(m: LockMsg) -> Msg {
        Msg::Lock(m)
    }
}

impl From<ResourceMsg> for Msg {
    fn from(m: ResourceMsg) -> Msg {
        Msg::Resource(m)
    }
}

/// Timers of the lock protocols' clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    Workload(WorkloadTimer),
    /// The lock server(s) did not answer the acquire in time.
    AcquireTimeout,
}

impl From<WorkloadTimer> for Timer {
    fn from(t: WorkloadTimer) -> Timer {
        Timer::Workload(t)
    }
}

/// How a client releases its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReleaseKind {
    /// The release script: delete only if the value is still mine.
    CompareAndDelete,
    /// Plain `DEL`.
    PlainDel,
}

/// Configuration of a single-lock-server protocol (redis-lock, fencing).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SingleServerConfig {
    /// Which clock the server times TTLs on (real Redis: the wall clock).
    pub expiry: ExpiryClock,
    /// `None`: `SET` without `PX` (never expires).
    pub ttl: Option<Duration>,
    pub release: ReleaseKind,
    /// Whether the server issues fencing tokens (and clients pass them on).
    pub issue_tokens: bool,
    pub resource_mode: FencingMode,
    pub acquire_timeout: Duration,
    /// Whether a client releases its lock as soon as its read returns, before its
    /// write (`redis-lock release-before-write`, a planted bug).
    pub release_after_read: bool,
    pub workload: WorkloadConfig,
    pub roles: Roles<LockRole>,
}

/// The lock half of a single-server client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SingleServerLock {
    server: NodeId,
    key: String,
    ttl: Option<Duration>,
    release: ReleaseKind,
    acquire_timeout: Duration,
    req: u64,
    /// The outstanding acquire: its request id, owner value and send time.
    attempt: Option<(u64, u64, LocalTime)>,
    /// Acquires that timed out before their reply came, newest last. A client talks to
    /// Redis over TCP: a reply that comes after the client stopped waiting still
    /// comes, and the key it granted is held for that owner value. Such a late grant
    /// is used if the client still wants the lock and TTL is left, else given back;
    /// it is never left to block every client for a TTL (with a round trip longer than
    /// `acquire_timeout`, that left no client the lock at all: fuzz seeds redis-lock
    /// partitions 32, chaos 143 and 178, fencing partitions 115 and chaos 178).
    timed_out: Vec<(u64, u64, LocalTime)>,
    /// The owner value of the lock we were granted and have not released.
    held_owner: Option<u64>,
    /// Release as soon as the read returns (see [`SingleServerConfig::release_after_read`]).
    release_after_read: bool,
}

/// How many timed-out acquires a client remembers (older late replies are ignored).
const TIMED_OUT_KEPT: usize = 8;

impl SingleServerLock {
    /// Gives back a key granted to `owner` that the client will not use.
    fn give_back(&self, env: &mut dyn Env<Msg, Timer>, owner: u64) {
        let key = self.key.clone();
        let msg = match self.release {
            ReleaseKind::CompareAndDelete => LockMsg::DelIfOwner { key, owner },
            ReleaseKind::PlainDel => LockMsg::Del { key },
        };
        env.send(self.server, Msg::Lock(msg));
    }

    /// Remembers a timed-out acquire whose reply may still come.
    fn remember_timed_out(&mut self, attempt: (u64, u64, LocalTime), now: LocalTime) {
        // A grant older than the TTL has expired on the server: nothing to use or give
        // back.
        let ttl = self.ttl;
        self.timed_out
            .retain(|a| ttl.is_none_or(|t| a.2.until(now) < t));
        self.timed_out.push(attempt);
        if self.timed_out.len() > TIMED_OUT_KEPT {
            self.timed_out.remove(0);
        }
    }
}

impl LockApi<Msg, Timer> for SingleServerLock {
    fn start_acquire(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.req += 1;
        let owner = env.next_u64();
        self.attempt = Some((self.req, owner, env.monotonic()));
        env.send(
            self.server,
            Msg::Lock(LockMsg::Set {
                req: self.req,
                key: self.key.clone(),
                owner,
                ttl: self.ttl,
            }),
        );
        env.set_timer(Timer::AcquireTimeout, self.acquire_timeout);
    }

    fn release(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let Some(owner) = self.held_owner.take() else {
            return;
        };
        let key = self.key.clone();
        let msg = match self.release {
            ReleaseKind::CompareAndDelete => LockMsg::DelIfOwner { key, owner },
            ReleaseKind::PlainDel => LockMsg::Del { key },
        };
        env.send(self.server, Msg::Lock(msg));
    }
}

/// A client: the lock half plus the workload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SingleServerClient {
    pub lock: SingleServerLock,
    pub workload: Workload,
}

impl SingleServerClient {
    fn on_set_reply(
        &mut self,
        env: &mut dyn Env<Msg, Timer>,
        req: u64,
        granted: bool,
        token: Option<u64>,
    ) {
        let now = env.monotonic();
        if let Some((pending, owner, sent_at)) = self.lock.attempt {
            if pending == req {
                self.lock.attempt = None;
                env.cancel_timer(&Timer::AcquireTimeout);
                if !granted {
                    self.workload.on_acquire_failed(env);
                    return;
                }
                self.lock.held_owner = Some(owner);
                let elapsed = sent_at.until(now);
                match self.lock.ttl.map(|t| t.saturating_sub(elapsed)) {
                    Some(validity) if validity.is_zero() => {
                        // Granted, but too late to use: give it back.
                        self.lock.release(env);
                        self.workload.on_acquire_failed(env);
                    }
                    validity => self.workload.on_acquired(env, token, validity),
                }
                return;
            }
        }
        // A late reply to an acquire that timed out.
        let Some(i) = self.lock.timed_out.iter().position(|a| a.0 == req) else {
            return;
        };
        let (_, owner, sent_at) = self.lock.timed_out.remove(i);
        if !granted {
            return;
        }
        let validity = self.lock.ttl.map(|t| t.saturating_sub(sent_at.until(now)));
        let wanted = self.workload.phase() == Phase::Acquiring
            && self.lock.held_owner.is_none()
            && validity.is_none_or(|v| !v.is_zero());
        if !wanted {
            self.lock.give_back(env, owner);
            return;
        }
        // Use it; the newer acquire, if one is out, is now moot (its grant, if any,
        // is given back when it comes).
        if let Some(newer) = self.lock.attempt.take() {
            env.cancel_timer(&Timer::AcquireTimeout);
            self.lock.remember_timed_out(newer, now);
        }
        self.lock.held_owner = Some(owner);
        self.workload.on_acquired(env, token, validity);
    }

    fn on_acquire_timeout(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if let Some(attempt) = self.lock.attempt.take() {
            self.lock.remember_timed_out(attempt, env.monotonic());
            self.workload.on_acquire_failed(env);
        }
    }
}

/// A redis-lock (or fencing) node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisLock {
    Server(LockServer),
    Client(Box<SingleServerClient>),
    Storage(Resource),
}

impl Protocol for RedisLock {
    type Msg = Msg;
    type Timer = Timer;
    type Config = SingleServerConfig;

    fn new(config: &SingleServerConfig, me: NodeId, cluster: &Cluster) -> RedisLock {
        match config.roles.get(me) {
            LockRole::Server => {
                RedisLock::Server(LockServer::new(config.expiry, config.issue_tokens))
            }
            LockRole::Client => RedisLock::Client(Box::new(SingleServerClient {
                lock: SingleServerLock {
                    server: the_one(cluster, "server"),
                    key: config.workload.resource.clone(),
                    ttl: config.ttl,
                    release: config.release,
                    acquire_timeout: config.acquire_timeout,
                    req: 0,
                    attempt: None,
                    timed_out: Vec::new(),
                    held_owner: None,
                    release_after_read: config.release_after_read,
                },
                workload: Workload::new(config.workload.clone()),
            })),
            LockRole::Storage => RedisLock::Storage(Resource::new(config.resource_mode)),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match self {
            RedisLock::Server(s) => s.on_start(env),
            RedisLock::Client(c) => c.workload.on_start(env),
            RedisLock::Storage(r) => r.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (RedisLock::Server(s), Msg::Lock(m)) => s.on_message(env, from, m),
            (
                RedisLock::Client(c),
                Msg::Lock(LockMsg::SetReply {
                    req,
                    granted,
                    token,
                }),
            ) => c.on_set_reply(env, req, granted, token),
            (RedisLock::Client(c), Msg::Resource(m)) => {
                let c = &mut **c;
                let read = matches!(m, ResourceMsg::ReadReply { .. });
                c.workload.on_resource_reply(env, &mut c.lock, m);
                // The planted bug: the read is in, so the lock "is no longer needed";
                // the work and the write go on without it.
                if c.lock.release_after_read && read && c.workload.phase() == Phase::Working {
                    c.workload.release_early(env, &mut c.lock);
                }
            }
            (RedisLock::Storage(r), Msg::Resource(m)) => r.on_message(env, from, m),
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        if let RedisLock::Client(c) = self {
            let c = &mut **c;
            match timer {
                Timer::Workload(t) => c.workload.on_timer(env, &mut c.lock, t),
                Timer::AcquireTimeout => c.on_acquire_timeout(env),
            }
        }
    }
}

/// The only node playing `role` (configure has checked there is exactly one).
pub(crate) fn the_one(cluster: &Cluster, role: &str) -> NodeId {
    let mut nodes = cluster.with_role(role);
    let node = nodes.next().expect("configure checked the role is present");
    assert!(
        nodes.next().is_none(),
        "configure checked the role has one node"
    );
    node
}

/// Checks that `role` has between `min` and `max` nodes.
pub(crate) fn check_role_count(
    cluster: &Cluster,
    role: &str,
    min: usize,
    max: usize,
) -> Result<(), ParamError> {
    let n = cluster.count(role);
    if n < min || n > max {
        let want = if min == max {
            format!("exactly {min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(ParamError::new(
            &format!("cluster.roles.{role}"),
            format!("needs {want} `{role}` node(s), got {n}"),
        ));
    }
    Ok(())
}

lock_client_params! {
    /// Parameters of the lock protocols' clients and single server (redis-lock,
    /// fencing): the TTL and acquire timeout, then the workload's (see
    /// [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct LockParams {
        /// The key's time to live (`PX`), timed by the server.
        pub ttl: HumanDuration = HumanDuration(Duration::from_millis(2_000)),
        /// How long a client waits for the lock server's answer.
        pub acquire_timeout: HumanDuration = HumanDuration(Duration::from_millis(200)),
        /// At most this many acquire attempts per client process (retries included);
        /// absent: no limit. Bounds the workload for the model explorer.
        pub max_attempts: Option<u32> = None,
    }
}

impl LockParams {
    /// The workload half, against the cluster's storage node; checks the ranges and
    /// that `storage` is exactly one node and `client` at least one.
    pub fn workload(&self, cluster: &Cluster) -> Result<WorkloadConfig, ParamError> {
        check_role_count(cluster, "storage", 1, 1)?;
        check_role_count(cluster, "client", 1, usize::MAX)?;
        self.workload_params()
            .config(the_one(cluster, "storage"), self.max_attempts)
    }

    /// The single-server protocol's configuration (redis-lock and fencing).
    pub fn single_server(
        &self,
        cluster: &Cluster,
        expiry: ExpiryClock,
        ttl: bool,
        release: ReleaseKind,
        issue_tokens: bool,
        resource_mode: FencingMode,
    ) -> Result<SingleServerConfig, ParamError> {
        check_role_count(cluster, "server", 1, 1)?;
        if self.ttl.0.is_zero() {
            return Err(ParamError::new("ttl", "must be above zero"));
        }
        if self.acquire_timeout.0.is_zero() {
            return Err(ParamError::new("acquire_timeout", "must be above zero"));
        }
        Ok(SingleServerConfig {
            expiry,
            ttl: ttl.then_some(self.ttl.0),
            release,
            issue_tokens,
            resource_mode,
            acquire_timeout: self.acquire_timeout.0,
            release_after_read: false,
            workload: self.workload(cluster)?,
            roles: Roles::of(cluster)?,
        })
    }
}

pub(crate) const LOCK_ROLES: &[RoleInfo] = &[
    RoleInfo::new("server", "the lock server (one Redis instance)", 1),
    RoleInfo::new(
        "client",
        "lock clients: acquire, read-modify-write the storage, release",
        3,
    )
    .with_kind(tenure_core::RoleKind::Holder),
    RoleInfo::new("storage", "the protected resource, a counter", 1)
        .with_kind(tenure_core::RoleKind::Resource),
];

static INFO: ProtocolInfo = ProtocolInfo::new(
    "redis-lock",
    "a lock on one Redis instance: SET NX PX to acquire, compare-and-delete to release",
    LOCK_ROLES,
    &[
        VariantInfo::new(
            "correct",
            "SET NX PX and the compare-and-delete script, keys expiring by the server's wall clock as in Redis (unsafe under a pause longer than the TTL or a wall step past the margin)",
        ),
        VariantInfo::new(
            "monotonic-expiry",
            "a contrast, not a bug: the server times TTLs on its monotonic clock, so wall steps do not expire a key",
        ),
        VariantInfo::new(
            "plain-del-release",
            "release is a plain DEL: a client whose lock expired deletes the next holder's lock",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new("no-ttl", "SET without PX: a crashed holder blocks everyone forever")
            .with_breaks(&["lock-liveness"]),
        VariantInfo::new(
            "release-before-write",
            "the client releases its lock once its read returns and writes after: it acts without the lock while the next holder acts (beliefs never overlap, actions do)",
        )
        .with_breaks(&["mutual-exclusion"]),
    ],
);

/// redis-lock's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RedisLockVariant {
    Correct,
    MonotonicExpiry,
    PlainDelRelease,
    NoTtl,
    ReleaseBeforeWrite,
}

/// The largest wall-clock step a TTL lock server that expires by its wall clock is
/// designed for: a quarter of the TTL margin `ttl - work_duration` (pauses take half of
/// it, see `max_pause`, and the last quarter covers the clocks' drift and the round
/// trips). `None` when keys never expire or expire by the monotonic clock.
pub(crate) fn max_wall_jump(config: &SingleServerConfig) -> Option<Duration> {
    let ttl = config.ttl?;
    (config.expiry == ExpiryClock::Wall)
        .then(|| ttl.saturating_sub(config.workload.work_duration) / 4)
}

impl Configurable for RedisLock {
    type Params = LockParams;
    type Variant = RedisLockVariant;
    type Role = LockRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: LockParams,
        variant: RedisLockVariant,
        cluster: &Cluster,
    ) -> Result<SingleServerConfig, ParamError> {
        use ExpiryClock::{Monotonic, Wall};
        let (expiry, ttl, release) = match variant {
            RedisLockVariant::Correct => (Wall, true, ReleaseKind::CompareAndDelete),
            RedisLockVariant::MonotonicExpiry => (Monotonic, true, ReleaseKind::CompareAndDelete),
            RedisLockVariant::PlainDelRelease => (Wall, true, ReleaseKind::PlainDel),
            RedisLockVariant::NoTtl => (Wall, false, ReleaseKind::CompareAndDelete),
            RedisLockVariant::ReleaseBeforeWrite => (Wall, true, ReleaseKind::CompareAndDelete),
        };
        let mut config =
            params.single_server(cluster, expiry, ttl, release, false, FencingMode::Unfenced)?;
        config.release_after_read = variant == RedisLockVariant::ReleaseBeforeWrite;
        Ok(config)
    }

    fn promises(config: &SingleServerConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        let ttl = config.ttl.unwrap_or_default();
        vec![
            tenure_core::Promise::new("mutual-exclusion"),
            crate::promises::lock_liveness_for(
                &config.workload,
                crate::promises::Lease::ttl(ttl, max_wall_jump(config)),
                config.acquire_timeout,
                Some(0.1),
                cluster,
                false,
            ),
        ]
    }

    fn assumptions(config: &SingleServerConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Assumptions, Limit};
        let Some(ttl) = config.ttl else {
            return Assumptions::default();
        };
        let work = config.workload.work_duration;
        let margin = ttl.saturating_sub(work);
        Assumptions::new()
            .with_max_pause(Limit::new(
                margin / 2,
                format!(
                    "a holder paused past its TTL {} minus its work {} still acts on a lock \
                     the server gave away; half that margin leaves room for the round trip",
                    f(ttl),
                    f(work)
                ),
            ))
            .with_max_drift(Limit::new(
                0.1,
                "the holder's work and the server's TTL are measured by two clocks",
            ))
            .with_min_restart_delay(Limit::new(
                ttl,
                "a server restarts with no keys: it must stay down a TTL (antirez's \
                 \"delayed restarts\") or a second client gets the lock",
            ))
            .with_max_wall_jump(max_wall_jump(config).map(|jump| {
                Limit::new(
                    jump,
                    format!(
                        "the server expires keys by its wall clock, as Redis does: a forward \
                         step shortens the holder's TTL by as much; the TTL margin ({} - \
                         work {}) goes half to pauses, a quarter to wall steps, a quarter to \
                         drift and round trips",
                        f(ttl),
                        f(work)
                    ),
                )
            }))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::ModelSpec;
        Ok(ModelSpec::new(
            "one lock server, clients making one acquire attempt each; no time leap by \
             default (a TTL never expires), a duplicated message can arrive late",
            &[("server", 1), ("client", 3), ("storage", 1)],
        )
        .with_out_of_scope(&[(
            "no-ttl",
            "lock-liveness is liveness: a bounded path cannot show `never`",
        )])
        // The model judges the actions themselves (`mutual-exclusion`, finished at
        // every state, so an interleaving still open is seen: `release-before-write`
        // overlaps only in actions) and the beliefs beside them: with no leap a
        // client acts in the same step in which it comes to believe it holds, and
        // keeps acting until it stops, so two beliefs at once are an interleaving
        // of actions under way, shown a few steps sooner (`plain-del-release`).
        .with_stands_for(&[("mutual-exclusion-belief", "mutual-exclusion")])
        .with_bounds(
            tenure_core::model::Bounds::DEFAULT
                .with_max_depth(16)
                .with_max_leaps(0)
                .with_max_duplicates(1)
                .with_clock(tenure_core::model::ClockModel::Frozen),
        )
        .with_checks(&["mutual-exclusion", "mutual-exclusion-belief"])
        .with_params(r#"{ "max_attempts": 1 }"#)
        .with_walk_params(r#"{ "max_attempts": 6 }"#))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tenure_core::OpValue;
    use tenure_core::{Effect, Observation, Rng, RoleSpec, SplitMix64, Step, StorageMap};

    pub(crate) fn lock_cluster() -> Cluster {
        Cluster::new(vec![
            RoleSpec::new("server", 1),
            RoleSpec::new("client", 2),
            RoleSpec::new("storage", 1),
        ])
        .unwrap()
    }

    const SERVER: NodeId = NodeId(0);
    const CLIENT: NodeId = NodeId(1);
    const STORAGE: NodeId = NodeId(3);

    fn config(variant: &str) -> SingleServerConfig {
        RedisLock::configure_named(LockParams::default(), variant, &lock_cluster()).unwrap()
    }

    /// Runs `f` on node `me` of the default lock cluster at monotonic time `mono_ms`;
    /// returns the effects.
    pub(crate) fn run<P: Protocol>(
        node: &mut P,
        me: NodeId,
        mono_ms: i64,
        seed: u64,
        f: impl FnOnce(&mut P, &mut dyn Env<P::Msg, P::Timer>),
    ) -> Vec<Effect<P::Msg, P::Timer>> {
        run_in(&lock_cluster(), node, me, mono_ms, seed, f)
    }

    /// Runs `f` on `node` (any state machine) as node `me` of `cluster`, at monotonic
    /// (and wall) time `mono_ms`, with fresh storage; returns the effects.
    pub(crate) fn run_in<N, M, T: Clone>(
        cluster: &Cluster,
        node: &mut N,
        me: NodeId,
        mono_ms: i64,
        seed: u64,
        f: impl FnOnce(&mut N, &mut dyn Env<M, T>),
    ) -> Vec<Effect<M, T>> {
        let mut storage = StorageMap::new();
        let mut rng = SplitMix64(seed);
        let mut step: Step<'_, M, T> = Step::new(
            me,
            cluster,
            LocalTime(mono_ms * 1_000_000),
            LocalTime(mono_ms * 1_000_000),
            &mut storage,
            &mut rng,
        );
        f(node, &mut step);
        step.effects
    }

    /// A client that has thought and sent its SET (owner from seed 1), at time 0.
    fn acquiring(variant: &str) -> (RedisLock, u64) {
        let mut c = RedisLock::new(&config(variant), CLIENT, &lock_cluster());
        run(&mut c, CLIENT, 0, 1, |c, env| c.on_start(env));
        run(&mut c, CLIENT, 0, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Think))
        });
        (c, SplitMix64(1).next_u64())
    }

    #[test]
    fn think_over_sends_set_nx_px_with_a_random_owner() {
        let mut c = RedisLock::new(&config("correct"), CLIENT, &lock_cluster());
        let effects = run(&mut c, CLIENT, 0, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Think))
        });
        let owner = SplitMix64(1).next_u64();
        assert_eq!(
            effects,
            vec![
                Effect::Observe(Observation::Waiting {
                    resource: "counter".into()
                }),
                Effect::Send {
                    to: SERVER,
                    msg: Msg::Lock(LockMsg::Set {
                        req: 1,
                        key: "counter".into(),
                        owner,
                        ttl: Some(Duration::from_secs(2)),
                    })
                },
                Effect::SetTimer {
                    timer: Timer::AcquireTimeout,
                    after: Duration::from_millis(200)
                },
            ]
        );
    }

    #[test]
    fn no_ttl_sends_set_without_px() {
        let mut c = RedisLock::new(&config("no-ttl"), CLIENT, &lock_cluster());
        let effects = run(&mut c, CLIENT, 0, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Think))
        });
        assert!(matches!(
            effects[1],
            Effect::Send {
                msg: Msg::Lock(LockMsg::Set { ttl: None, .. }),
                ..
            }
        ));
    }

    #[test]
    fn grant_holds_with_validity_ttl_minus_elapsed() {
        let (mut c, _) = acquiring("correct");
        let grant = Msg::Lock(LockMsg::SetReply {
            req: 1,
            granted: true,
            token: None,
        });
        let effects = run(&mut c, CLIENT, 30, 1, |c, env| {
            c.on_message(env, SERVER, grant.clone())
        });
        assert_eq!(
            effects,
            vec![
                Effect::CancelTimer {
                    timer: Timer::AcquireTimeout
                },
                Effect::CancelTimer {
                    timer: Timer::Workload(WorkloadTimer::Retry)
                },
                Effect::Observe(Observation::Holds {
                    resource: "counter".into(),
                    token: 0
                }),
                Effect::SetTimer {
                    timer: Timer::Workload(WorkloadTimer::Validity),
                    after: Duration::from_millis(1_970)
                },
                Effect::Observe(Observation::Acts {
                    resource: "counter".into(),
                    token: 0
                }),
                Effect::Send {
                    to: STORAGE,
                    msg: Msg::Resource(ResourceMsg::Read {
                        resource: "counter".into(),
                        op: 1,
                        token: None
                    })
                },
                Effect::Observe(Observation::Invoke {
                    f: "read".into(),
                    key: "counter".into(),
                    value: OpValue::Nil
                }),
                Effect::SetTimer {
                    timer: Timer::Workload(WorkloadTimer::Request),
                    after: Duration::from_secs(1)
                },
            ]
        );
        // A duplicate of the grant changes nothing.
        assert!(run(&mut c, CLIENT, 31, 1, |c, env| c
            .on_message(env, SERVER, grant))
        .is_empty());
    }

    #[test]
    fn denial_and_timeout_back_off() {
        let (mut c, _) = acquiring("correct");
        let denied = Msg::Lock(LockMsg::SetReply {
            req: 1,
            granted: false,
            token: None,
        });
        let effects = run(&mut c, CLIENT, 5, 2, |c, env| {
            c.on_message(env, SERVER, denied)
        });
        assert_eq!(
            effects[0],
            Effect::CancelTimer {
                timer: Timer::AcquireTimeout
            }
        );
        assert!(matches!(
            effects[1],
            Effect::SetTimer {
                timer: Timer::Workload(WorkloadTimer::Retry),
                ..
            }
        ));
        assert_eq!(effects.len(), 2);
        // Retry, then time out.
        run(&mut c, CLIENT, 100, 2, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Retry))
        });
        let effects = run(&mut c, CLIENT, 300, 2, |c, env| {
            c.on_timer(env, Timer::AcquireTimeout)
        });
        assert!(matches!(
            effects[..],
            [Effect::SetTimer {
                timer: Timer::Workload(WorkloadTimer::Retry),
                ..
            }]
        ));
    }

    #[test]
    fn a_late_grant_is_used_while_backing_off_and_given_back_once_held() {
        let (mut c, owner) = acquiring("correct");
        // The acquire times out (a round trip longer than acquire_timeout): back off.
        run(&mut c, CLIENT, 200, 1, |c, env| {
            c.on_timer(env, Timer::AcquireTimeout)
        });
        // The grant comes at 250 ms: the key is ours on the server, so it is used,
        // with the validity left since the SET was sent.
        let grant = |req| {
            Msg::Lock(LockMsg::SetReply {
                req,
                granted: true,
                token: None,
            })
        };
        let effects = run(&mut c, CLIENT, 250, 1, |c, env| {
            c.on_message(env, SERVER, grant(1))
        });
        assert!(effects.contains(&Effect::Observe(Observation::Holds {
            resource: "counter".into(),
            token: 0
        })));
        assert!(effects.contains(&Effect::SetTimer {
            timer: Timer::Workload(WorkloadTimer::Validity),
            after: Duration::from_millis(1_750)
        }));
        let RedisLock::Client(client) = &c else {
            unreachable!()
        };
        assert_eq!(client.lock.held_owner, Some(owner));
        // A duplicate of that late grant changes nothing.
        assert!(run(&mut c, CLIENT, 251, 1, |c, env| c.on_message(
            env,
            SERVER,
            grant(1)
        ))
        .is_empty());
        // Control: a late grant of another timed-out acquire, while the client holds,
        // is given back at once.
        let (mut c, _) = acquiring("correct");
        run(&mut c, CLIENT, 200, 1, |c, env| {
            c.on_timer(env, Timer::AcquireTimeout)
        });
        run(&mut c, CLIENT, 300, 7, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Retry))
        });
        let RedisLock::Client(client) = &c else {
            unreachable!()
        };
        let second_owner = client.lock.attempt.unwrap().1;
        run(&mut c, CLIENT, 310, 1, |c, env| {
            c.on_message(env, SERVER, grant(2))
        });
        let effects = run(&mut c, CLIENT, 320, 1, |c, env| {
            c.on_message(env, SERVER, grant(1))
        });
        assert_eq!(
            effects,
            vec![Effect::Send {
                to: SERVER,
                msg: Msg::Lock(LockMsg::DelIfOwner {
                    key: "counter".into(),
                    owner
                })
            }]
        );
        let RedisLock::Client(client) = &c else {
            unreachable!()
        };
        assert_eq!(client.lock.held_owner, Some(second_owner));
    }

    #[test]
    fn a_grant_that_arrives_after_the_ttl_is_given_back() {
        let (mut c, owner) = acquiring("correct");
        let grant = Msg::Lock(LockMsg::SetReply {
            req: 1,
            granted: true,
            token: None,
        });
        let effects = run(&mut c, CLIENT, 2_500, 1, |c, env| {
            c.on_message(env, SERVER, grant)
        });
        assert_eq!(
            effects[1],
            Effect::Send {
                to: SERVER,
                msg: Msg::Lock(LockMsg::DelIfOwner {
                    key: "counter".into(),
                    owner
                })
            }
        );
        assert!(!effects
            .iter()
            .any(|e| matches!(e, Effect::Observe(Observation::Holds { .. }))));
    }

    /// Drives a client through grant, read and write; returns the release message.
    fn release_message(variant: &str) -> (Msg, u64) {
        let (mut c, owner) = acquiring(variant);
        let grant = Msg::Lock(LockMsg::SetReply {
            req: 1,
            granted: true,
            token: None,
        });
        run(&mut c, CLIENT, 1, 1, |c, env| {
            c.on_message(env, SERVER, grant)
        });
        let read = Msg::Resource(ResourceMsg::ReadReply {
            resource: "counter".into(),
            op: 1,
            value: 4,
        });
        run(&mut c, CLIENT, 2, 1, |c, env| {
            c.on_message(env, STORAGE, read)
        });
        let effects = run(&mut c, CLIENT, 102, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Work))
        });
        assert_eq!(
            effects[0],
            Effect::Observe(Observation::Acts {
                resource: "counter".into(),
                token: 0
            })
        );
        assert_eq!(
            effects[1],
            Effect::Send {
                to: STORAGE,
                msg: Msg::Resource(ResourceMsg::Write {
                    resource: "counter".into(),
                    op: 2,
                    token: None,
                    value: 5,
                    based_on: Some(4)
                })
            }
        );
        let written = Msg::Resource(ResourceMsg::WriteReply {
            resource: "counter".into(),
            op: 2,
            accepted: true,
        });
        let effects = run(&mut c, CLIENT, 103, 1, |c, env| {
            c.on_message(env, STORAGE, written)
        });
        let sent: Vec<Msg> = effects
            .into_iter()
            .filter_map(|e| match e {
                Effect::Send { to, msg } if to == SERVER => Some(msg),
                _ => None,
            })
            .collect();
        assert_eq!(sent.len(), 1);
        (sent[0].clone(), owner)
    }

    #[test]
    fn correct_releases_with_compare_and_delete() {
        let (msg, owner) = release_message("correct");
        assert_eq!(
            msg,
            Msg::Lock(LockMsg::DelIfOwner {
                key: "counter".into(),
                owner
            })
        );
    }

    #[test]
    fn plain_del_release_sends_del() {
        let (msg, _) = release_message("plain-del-release");
        assert_eq!(
            msg,
            Msg::Lock(LockMsg::Del {
                key: "counter".into()
            })
        );
    }

    /// `release-before-write` gives the lock back (compare-and-delete, `Releases`) the
    /// moment its read returns, then still acts and writes after its work; nothing is
    /// released twice. The correct client does neither on its read reply.
    #[test]
    fn release_before_write_releases_on_the_read_and_writes_after() {
        let read_reply = |c: &mut RedisLock| {
            let grant = Msg::Lock(LockMsg::SetReply {
                req: 1,
                granted: true,
                token: None,
            });
            run(c, CLIENT, 1, 1, |c, env| c.on_message(env, SERVER, grant));
            let read = Msg::Resource(ResourceMsg::ReadReply {
                resource: "counter".into(),
                op: 1,
                value: 4,
            });
            run(c, CLIENT, 2, 1, |c, env| c.on_message(env, STORAGE, read))
        };
        let (mut correct, _) = acquiring("correct");
        assert_eq!(
            read_reply(&mut correct),
            vec![
                Effect::CancelTimer {
                    timer: Timer::Workload(WorkloadTimer::Request)
                },
                Effect::Observe(Observation::Complete {
                    f: "read".into(),
                    key: "counter".into(),
                    outcome: tenure_core::OpOutcome::Ok,
                    value: OpValue::Int(4),
                }),
                Effect::SetTimer {
                    timer: Timer::Workload(WorkloadTimer::Work),
                    after: Duration::from_millis(100)
                },
            ]
        );
        let (mut c, owner) = acquiring("release-before-write");
        let effects = read_reply(&mut c);
        assert_eq!(effects[..3], read_reply(&mut acquiring("correct").0)[..]);
        assert_eq!(
            effects[3..],
            [
                Effect::Send {
                    to: SERVER,
                    msg: Msg::Lock(LockMsg::DelIfOwner {
                        key: "counter".into(),
                        owner
                    })
                },
                Effect::CancelTimer {
                    timer: Timer::Workload(WorkloadTimer::Validity)
                },
                Effect::Observe(Observation::Releases {
                    resource: "counter".into()
                }),
            ]
        );
        let effects = run(&mut c, CLIENT, 102, 1, |c, env| {
            c.on_timer(env, Timer::Workload(WorkloadTimer::Work))
        });
        assert_eq!(
            effects[0],
            Effect::Observe(Observation::Acts {
                resource: "counter".into(),
                token: 0
            })
        );
        let written = Msg::Resource(ResourceMsg::WriteReply {
            resource: "counter".into(),
            op: 2,
            accepted: true,
        });
        let effects = run(&mut c, CLIENT, 103, 1, |c, env| {
            c.on_message(env, STORAGE, written)
        });
        assert!(
            !effects.iter().any(|e| matches!(
                e,
                Effect::Send { to, .. } if *to == SERVER
            ) || matches!(
                e,
                Effect::Observe(Observation::Releases { .. })
            )),
            "released once only: {effects:?}"
        );
    }

    #[test]
    fn server_and_storage_answer_requests() {
        let cfg = config("correct");
        let mut server = RedisLock::new(&cfg, SERVER, &lock_cluster());
        let set = Msg::Lock(LockMsg::Set {
            req: 3,
            key: "counter".into(),
            owner: 9,
            ttl: Some(Duration::from_secs(2)),
        });
        assert_eq!(
            run(&mut server, SERVER, 0, 1, |s, env| s
                .on_message(env, CLIENT, set)),
            vec![Effect::Send {
                to: CLIENT,
                msg: Msg::Lock(LockMsg::SetReply {
                    req: 3,
                    granted: true,
                    token: None
                })
            }]
        );
        let mut storage = RedisLock::new(&cfg, STORAGE, &lock_cluster());
        assert!(matches!(storage, RedisLock::Storage(ref r) if r.mode() == FencingMode::Unfenced));
        let write = Msg::Resource(ResourceMsg::Write {
            resource: "counter".into(),
            op: 1,
            token: None,
            value: 1,
            based_on: Some(0),
        });
        let effects = run(&mut storage, STORAGE, 0, 1, |s, env| {
            s.on_message(env, CLIENT, write)
        });
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: "resource/cells".into(),
                    value: Some(r#"{"counter":{"value":1,"highest_token":null}}"#.into())
                },
                Effect::Sync { ok: true },
                Effect::Observe(Observation::Write {
                    resource: "counter".into(),
                    client: CLIENT,
                    token: None,
                    accepted: true,
                    value: 1,
                    based_on: Some(0),
                }),
                Effect::Send {
                    to: CLIENT,
                    msg: Msg::Resource(ResourceMsg::WriteReply {
                        resource: "counter".into(),
                        op: 1,
                        accepted: true
                    })
                },
            ]
        );
    }

    #[test]
    fn params_are_checked() {
        let bad: Result<LockParams, _> = serde_json::from_str(r#"{"tll": "2s"}"#);
        assert!(bad.unwrap_err().to_string().contains("tll"));
        let p: LockParams =
            serde_json::from_str(r#"{"ttl": "5s", "think_time": ["1s", "2s"]}"#).unwrap();
        assert_eq!(p.ttl.0, Duration::from_secs(5));
        let p = LockParams {
            retry_backoff: [
                HumanDuration(Duration::from_secs(2)),
                HumanDuration(Duration::from_secs(1)),
            ],
            ..LockParams::default()
        };
        assert_eq!(
            RedisLock::configure_named(p, "correct", &lock_cluster())
                .unwrap_err()
                .field,
            "retry_backoff"
        );
        let two_servers = Cluster::new(vec![
            RoleSpec::new("server", 2),
            RoleSpec::new("client", 1),
            RoleSpec::new("storage", 1),
        ])
        .unwrap();
        assert_eq!(
            RedisLock::configure_named(LockParams::default(), "correct", &two_servers)
                .unwrap_err()
                .field,
            "cluster.roles.server"
        );
        assert_eq!(config("no-ttl").ttl, None);
    }

    #[test]
    fn correct_expires_by_the_wall_clock_and_declares_the_steps_it_takes() {
        assert_eq!(config("correct").expiry, ExpiryClock::Wall);
        assert_eq!(config("monotonic-expiry").expiry, ExpiryClock::Monotonic);
        // ttl 2s - work 100ms = 1.9s of margin: a quarter for wall steps.
        let a = RedisLock::assumptions(&config("correct"));
        assert_eq!(a.max_wall_jump.unwrap().value, Duration::from_millis(475));
        assert!(RedisLock::assumptions(&config("monotonic-expiry"))
            .max_wall_jump
            .is_none());
        // A backward step keeps a crashed holder's key that much longer: the liveness
        // bound has the term.
        let p = RedisLock::promises(&config("correct"), &lock_cluster());
        let live = p.iter().find(|p| p.check == "lock-liveness").unwrap();
        assert!(
            format!("{live:?}").contains("backward wall step max 475ms"),
            "{live:?}"
        );
        // The server the correct variant runs gives a key away after a forward step.
        let cfg = config("correct");
        let mut server = RedisLock::new(&cfg, SERVER, &lock_cluster());
        let set = |req, owner| {
            Msg::Lock(LockMsg::Set {
                req,
                key: "counter".into(),
                owner,
                ttl: Some(Duration::from_secs(2)),
            })
        };
        run(&mut server, SERVER, 0, 1, |s, env| {
            s.on_message(env, CLIENT, set(1, 7))
        });
        let mut storage = StorageMap::new();
        let mut rng = SplitMix64(1);
        let cluster = lock_cluster();
        // 1 s later by the monotonic clock, the wall clock stepped 5 s forward.
        let mut step: Step<'_, Msg, Timer> = Step::new(
            SERVER,
            &cluster,
            LocalTime(1_000_000_000),
            LocalTime(6_000_000_000),
            &mut storage,
            &mut rng,
        );
        server.on_message(&mut step, CLIENT, set(2, 8));
        assert_eq!(
            step.effects,
            vec![Effect::Send {
                to: CLIENT,
                msg: Msg::Lock(LockMsg::SetReply {
                    req: 2,
                    granted: true,
                    token: None
                })
            }]
        );
    }

    #[test]
    fn info_lists_correct_first_and_what_the_broken_variants_break() {
        let info = RedisLock::info();
        assert_eq!(info.variants[0].name, "correct");
        assert!(info.variants[0].breaks.is_empty());
        assert_eq!(
            info.variant("plain-del-release").unwrap().breaks,
            ["mutual-exclusion"]
        );
        assert_eq!(info.variant("no-ttl").unwrap().breaks, ["lock-liveness"]);
        assert_eq!(
            info.variant("release-before-write").unwrap().breaks,
            ["mutual-exclusion"]
        );
        let roles: Vec<&str> = info.roles.iter().map(|r| r.name).collect();
        assert_eq!(roles, ["server", "client", "storage"]);
    }
}
