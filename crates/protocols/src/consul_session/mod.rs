//! A Consul-style session lock with lock-delay: 3 servers running Raft with a log (the
//! rules of [`crate::raft_log`], as [`crate::etcd_service`] runs them, plus the leader
//! lease of hashicorp/raft), Consul's state store on that log (sessions; KV entries with
//! their `Session`, `LockIndex` and `ModifyIndex`), and clients that create a session
//! with a TTL, renew it, take a lock with `PUT ?acquire=<session>`, act on the protected
//! resource while they hold it, and release it.
//!
//! **Sessions** (`agent/consul/session_endpoint.go`, `session_ttl.go`): a session is
//! created through the log; the leader alone times it (`sessionTimers`, not in the log),
//! for `TTL x SessionTTLMultiplier` (2), reset by every `Session.Renew` the leader
//! answers; when a timer fires the leader invalidates the session (`invalidateSession`:
//! a destroy through the log). A new leader resets every session's timer in full
//! (`initializeSessionTimers` in `establishLeadership`): "the TTL is renewed on session
//! creation, on session renew, and on leader failover" (the sessions docs; the design
//! of PR #524, after Chubby). Under enough leader churn a session whose client stopped
//! renewing is never invalidated, and its lock is never released: the same class as etcd
//! #9395 (`lease-expiry` with a bound that does not allow a full TTL per leader).
//!
//! **The lock** (`agent/consul/state/kvs.go`, `kvsLockTxn` / `kvsUnlockTxn`): acquire is
//! a check-and-set of the key's `Session`: it fails if another session holds the key; a
//! new holder increments the key's `LockIndex` (the sequencer's number: the fencing
//! token here). Invalidating a session (`deleteSessionTxn`, behavior "release") clears
//! the `Session` of every key it holds and sets each key's **lock-delay**: in memory on
//! every server (`lockDelay.SetExpiration`, not in the log), from the time that server
//! applies the invalidation. `KVS.Apply` checks it before the log, at the leader only
//! (`kvsPreApply`: "the lock-delay must be enforced before commit ... only the
//! wall-time of the leader node is used"): an acquire inside the delay is refused.
//!
//! **What lock-delay buys** (`correct`): a holder that does not yet know its session
//! was invalidated (cut off from the servers with a slow clock, or paused) keeps acting
//! for a while; lock-delay keeps the next holder out for that long. It holds if that
//! while stays under the delay (`max_pause`, with the drift's share). **What it cannot buy**: a pause longer than the delay; only a
//! resource that checks the sequencer (`fenced`) refuses the late write.
//! `no-lock-delay` (a session created with `LockDelay: 0`) shows a holder whose session
//! was invalidated during its pause act while the next holder acts.
//!
//! **The client** (`api/lock.go`, `api/session.go`): it renews every TTL/2
//! (`RenewPeriodic`). Consul's lock holder learns that its session is gone from the
//! servers only (`monitorLock`, a renewal answered "not found"); cut off from them it
//! keeps believing. The model's holder believes its session until the send time of its
//! last answered renewal plus the servers' whole timer (TTL x 2), by its own clock: as
//! long as the servers may keep it, which a drifting clock stretches past the leader's
//! invalidation; that late notice is what lock-delay covers. It checks the belief when an
//! acquire is answered. Instead of `api.Lock`'s blocking queries a failed acquire is
//! retried after the workload's backoff.
//!
//! **The abandoned session (the workload).** The first client (the lowest-numbered
//! `client` node), once per incarnation, stops renewing its session without destroying
//! it: an application whose renew loop (`PUT /v1/session/renew/<id>`) stops, so that the
//! session is left to the servers' TTL timer ("if a session is not renewed within its
//! TTL, it is invalidated", the sessions docs; `api.Session.RenewPeriodic` destroys the
//! session when its done channel closes, this client does not get that far). It does so
//! at a drawn time in `[TTL, 2 x TTL]` after it starts: the session has been created and
//! renewed (every TTL/2) by then, and its deadline (TTL x 2 as the promise's `within`
//! allows, plus the per-leader allowance) falls early in the run, inside the liveness
//! phase of every fault profile. The client notices by its own clock that its session
//! may be gone, loses the lock if it held it, and creates a new session. `lease-expiry`
//! then judges a session whose renewals stopped in every run.
//!
//! **Sources verified** (hashicorp/consul, read through the stored index at commit
//! 00b551337336 of `agent/consul/session_ttl.go` and the matching versions of
//! `agent/consul/kvs_endpoint.go` (`kvsPreApply`), `agent/consul/state/session.go`
//! (`deleteSessionTxn`), `agent/structs/structs.go` (`SessionTTLMultiplier = 2`), the
//! sessions docs (`website/content/docs/.../sessions.mdx`: TTL 10s to 86400s, lock-delay
//! 15s by default, 0 to 60s) and PR #524 ("a TTL is extended on creation, heartbeat or
//! failover"); no release tag could be checked out here (the repository is too large to
//! fetch), so no tag is named.

mod client;
mod server;
#[cfg(test)]
mod tests;

pub use client::Client;
pub use server::{
    Cmd, Entry, KeyState, Server, SessionState, State, ANSWERED_PER_CLIENT, SESSION_TTL_MULTIPLIER,
};

use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, LockRole, WorkloadConfig, WorkloadTimer};
use crate::zookeeper::single_node;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, ParamError, Protocol, ProtocolInfo,
    RoleInfo, Roles, VariantInfo,
};

/// A session's id: the log index of the entry that created it.
pub type SessionId = u64;

/// What a client asks the servers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Op {
    CreateSession { ttl: Duration, lock_delay: Duration },
    Renew { session: SessionId },
    Acquire { key: String, session: SessionId },
    Release { key: String, session: SessionId },
}

/// A server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Answer {
    Created {
        session: SessionId,
        ttl: Duration,
    },
    /// `None`: the session is gone.
    Renewed {
        ttl: Option<Duration>,
    },
    /// `lock_index`: the key's LockIndex if acquired; `None`: held, or inside its
    /// lock-delay. `session_gone`: the session no longer exists.
    Acquired {
        lock_index: Option<u64>,
        session_gone: bool,
    },
    Released,
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
    },
    AppendEntriesReply {
        term: u64,
        success: bool,
        match_index: u64,
        last_index: u64,
        round: u64,
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
            | Msg::AppendEntriesReply { term, .. } => Some(*term),
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
    /// Server: the leader's next AppendEntries round (and its lease check).
    Heartbeat,
    /// Client: renew the session; retry what went unanswered.
    Renew,
    /// Client: its session runs out by its own clock.
    SessionCheck,
    /// Client (the first one): stop renewing the session (no destroy).
    Abandon,
    Workload(WorkloadTimer),
    /// Client: the notice that the session is gone reaches the work in progress (a
    /// channel the worker selects on: `api.Lock`'s lost channel). Set when the session
    /// is found gone, it fires after what was already due: a client waking from a pause
    /// runs the work whose timer fell due during the pause (its late write) first.
    LostNotice,
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
pub enum ConsulVariant {
    /// Sessions with a lock-delay, an unfenced resource.
    Correct,
    /// Sessions created with `LockDelay: 0`.
    NoLockDelay,
    /// `correct` with a resource that checks the sequencer's LockIndex.
    Fenced,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "consul-lock",
    "a Consul-style session lock on Raft with a log: sessions with a TTL timed by \
     the leader (reset on leader failover), locks taken with ?acquire=<session>, \
     released when the session is invalidated, and Consul's lock-delay",
    &[
        RoleInfo::new(
            "server",
            "a Consul server: Raft with a log, the state store, the session timers",
            3,
        ),
        RoleInfo::new(
            "client",
            "lock clients: a session, acquire, read-modify-write the storage, release",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
        RoleInfo::new("storage", "the protected resource, a counter", 1)
            .with_kind(tenure_core::RoleKind::Resource),
    ],
    &[
        VariantInfo::new(
            "correct",
            "Consul's sessions with a lock-delay (15s by default in Consul): after an \
             invalidation no one takes the key for that long, so a holder that acts \
             late by less than the delay (its pause) acts alone; the TTL is reset \
             on leader failover as Consul documents it",
        ),
        VariantInfo::new(
            "no-lock-delay",
            "sessions created with LockDelay 0: a holder paused past its session's \
             invalidation wakes and acts while the next holder acts",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new(
            "fenced",
            "`correct` with a resource that checks the sequencer (the key's \
             LockIndex): a write of a holder paused past the lock-delay is refused",
        ),
    ],
);

lock_client_params! {
    /// Scenario parameters (`[protocol.params]`): Raft's timing, the session's TTL and
    /// lock-delay, then the workload's (see [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct ConsulParams {
        /// The range a server's election timeout is drawn from.
        pub election_timeout: [HumanDuration; 2] = [
            HumanDuration(Duration::from_millis(150)),
            HumanDuration(Duration::from_millis(300)),
        ],
        /// How often a leader sends AppendEntries (and checks its leader lease).
        pub heartbeat_interval: HumanDuration = HumanDuration(Duration::from_millis(50)),
        /// A leader that has not heard from a majority for this long steps down
        /// (hashicorp/raft's `LeaderLeaseTimeout`); at most the minimum election timeout.
        pub leader_lease_timeout: HumanDuration = HumanDuration(Duration::from_millis(150)),
        /// The session TTL (Consul: 10s to 86400s; scaled to short runs). The leader
        /// invalidates a session not renewed for twice this.
        pub ttl: HumanDuration = HumanDuration(Duration::from_millis(800)),
        /// The session's lock-delay (Consul: 15s by default, 0 to 60s; scaled).
        pub lock_delay: HumanDuration = HumanDuration(Duration::from_secs(4)),
        /// At most this many acquire attempts per client process; absent: no limit.
        pub max_attempts: Option<u32> = None,
        /// Whether the first client stops renewing its session once per incarnation, at
        /// a drawn time in `[TTL, 2 x TTL]` after it starts, leaving it to the servers'
        /// TTL timer (see the module docs).
        pub abandon_session: bool = true,
    }
}

/// Everything a node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConsulConfig {
    pub variant: ConsulVariant,
    pub election_timeout: (Duration, Duration),
    pub heartbeat_interval: Duration,
    pub leader_lease_timeout: Duration,
    pub ttl: Duration,
    pub lock_delay: Duration,
    pub workload: WorkloadConfig,
    pub roles: Roles<LockRole>,
    /// Whether the first client stops renewing its session once per incarnation.
    pub abandon_session: bool,
}

impl ConsulConfig {
    pub fn servers(cluster: &Cluster) -> Vec<NodeId> {
        cluster.with_role("server").collect()
    }
}

/// A node: a server, a lock client or the protected storage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConsulLock {
    Server(Box<Server>),
    Client(Box<Client>),
    Storage(Resource),
}

impl ConsulLock {
    pub fn server(&self) -> Option<&Server> {
        match self {
            ConsulLock::Server(s) => Some(s),
            _ => None,
        }
    }
}

type E<'a> = dyn Env<Msg, Timer> + 'a;

impl Protocol for ConsulLock {
    type Msg = Msg;
    type Timer = Timer;
    type Config = ConsulConfig;

    fn new(config: &ConsulConfig, me: NodeId, cluster: &Cluster) -> ConsulLock {
        match config.roles.get(me) {
            LockRole::Server => ConsulLock::Server(Box::new(Server::new(config, me, cluster))),
            LockRole::Client => ConsulLock::Client(Box::new(Client::new(config, cluster))),
            LockRole::Storage => ConsulLock::Storage(Resource::new(resource_mode(config))),
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        match self {
            ConsulLock::Server(s) => s.on_start(env),
            ConsulLock::Client(c) => c.on_start(env),
            ConsulLock::Storage(r) => r.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (ConsulLock::Storage(r), Msg::Resource(m)) => r.on_message(env, from, m),
            (ConsulLock::Storage(_), _) => {}
            (ConsulLock::Server(s), msg) => s.on_message(env, from, msg),
            (ConsulLock::Client(c), msg) => c.on_message(env, from, msg),
        }
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        match self {
            ConsulLock::Server(s) => s.on_timer(env, timer),
            ConsulLock::Client(c) => c.on_timer(env, timer),
            ConsulLock::Storage(_) => {}
        }
    }
}

/// Whether the storage checks the sequencer: `fenced` only.
pub fn resource_mode(config: &ConsulConfig) -> FencingMode {
    match config.variant {
        ConsulVariant::Fenced => FencingMode::Fenced,
        ConsulVariant::Correct | ConsulVariant::NoLockDelay => FencingMode::Unfenced,
    }
}

/// The clock drift the service assumes (see `assumptions`).
const MAX_DRIFT: Option<f64> = Some(0.1);

/// How long after a session's last renewal its invalidation is owed, with its
/// derivation: the leader's timer (TTL x 2), a leader paused up to an election timeout
/// before its timer runs, and the destroy's commit (a few heartbeats); timed by the
/// leader's clock, scaled for the declared drift.
fn invalidation_bound(config: &ConsulConfig) -> (Duration, String) {
    let (_, e_max) = config.election_timeout;
    let beats = config.heartbeat_interval * 4;
    let (d, drift) = crate::promises::slow_clock(
        config.ttl * SESSION_TTL_MULTIPLIER + e_max + beats,
        MAX_DRIFT,
    );
    let fmt = tenure_core::format_duration;
    (
        d,
        format!(
            "(TTL {} x 2 + election timeout max {} + 4 x heartbeat {}){drift}",
            fmt(config.ttl),
            fmt(e_max),
            fmt(config.heartbeat_interval)
        ),
    )
}

/// How much later than the leader's invalidation a holder's own deadline (2 x TTL after
/// its renewal, by its clock) may come, with both clocks within the declared drift.
fn drift_slack(config: &ConsulConfig) -> Duration {
    let timer = config.ttl * SESSION_TTL_MULTIPLIER;
    whole_ms(
        timer
            .mul_f64(1.0 / 0.9)
            .saturating_sub(timer.mul_f64(1.0 / 1.1)),
    )
}

/// `correct`'s `max_pause`: half of what the lock-delay leaves after the drift's share.
fn max_pause(config: &ConsulConfig) -> Duration {
    whole_ms(config.lock_delay.saturating_sub(drift_slack(config)) / 2)
}

fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

/// `lease-expiry`: a session whose renewals stopped is invalidated within its TTL plus
/// `within` (the multiplier's second TTL, a paused leader, the commit), plus, for each
/// leader elected since, what that leader may restart: the whole timer (TTL x 2: Consul
/// resets every session on failover) and the election.
pub fn lease_expiry(config: &ConsulConfig) -> tenure_core::Promise {
    let (bound, text) = invalidation_bound(config);
    let within = whole_ms(bound.saturating_sub(config.ttl));
    tenure_core::Promise::new("lease-expiry")
        .within(
            within,
            format!("within: {text} - TTL; per leader: the same {text} (a new leader resets every session's timer)"),
        )
        .with("per_leader", tenure_core::format_duration(whole_ms(bound)))
        .with("role", "server")
}

impl Configurable for ConsulLock {
    type Params = ConsulParams;
    type Variant = ConsulVariant;
    type Role = LockRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: ConsulParams,
        variant: ConsulVariant,
        cluster: &Cluster,
    ) -> Result<ConsulConfig, ParamError> {
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
        let lease = params.leader_lease_timeout.0;
        if lease <= heartbeat || lease > min {
            return Err(ParamError::new(
                "leader_lease_timeout",
                "needs heartbeat_interval < leader_lease_timeout <= the minimum election \
                 timeout (a deposed leader must step down before a new one is elected)",
            ));
        }
        if cluster.count("server") == 0 {
            return Err(ParamError::new(
                "cluster.roles.server",
                "needs at least 1 `server` node",
            ));
        }
        if cluster.count("client") == 0 {
            return Err(ParamError::new(
                "cluster.roles.client",
                "needs at least 1 `client` node",
            ));
        }
        if params.ttl.0 <= max * 2 {
            return Err(ParamError::new(
                "ttl",
                "must be more than twice the maximum election timeout (renewals every TTL/2 \
                 must outlast a leader change)",
            ));
        }
        let storage = single_node(cluster, "storage")?;
        let workload = params
            .workload_params()
            .config(storage, params.max_attempts)?;
        let config = ConsulConfig {
            variant,
            election_timeout: (min, max),
            heartbeat_interval: heartbeat,
            leader_lease_timeout: lease,
            ttl: params.ttl.0,
            lock_delay: params.lock_delay.0,
            workload,
            roles: Roles::of(cluster)?,
            abandon_session: params.abandon_session,
        };
        if max_pause(&config).is_zero() {
            return Err(ParamError::new(
                "lock_delay",
                format!(
                    "must be more than {}, how much later than the leader's invalidation a \
                     holder's clock (drift 0.1) may end its session (2 x TTL x (1/0.9 - \
                     1/1.1)); use the variant no-lock-delay for none",
                    tenure_core::format_duration(drift_slack(&config))
                ),
            ));
        }
        Ok(config)
    }

    /// `correct` and `no-lock-delay` promise `mutual-exclusion` on actions (the second
    /// breaks it); `fenced` promises what its resource enforces instead. All promise
    /// `lease-expiry` and `lock-liveness`.
    fn promises(config: &ConsulConfig, cluster: &Cluster) -> Vec<tenure_core::Promise> {
        let (invalidated, _) = invalidation_bound(config);
        let mut promises = match config.variant {
            ConsulVariant::Fenced => vec![
                tenure_core::Promise::new("fencing-safety"),
                tenure_core::Promise::new("no-lost-update"),
            ],
            ConsulVariant::Correct | ConsulVariant::NoLockDelay => {
                vec![tenure_core::Promise::new("mutual-exclusion")]
            }
        };
        promises.push(crate::promises::lock_liveness_for(
            &config.workload,
            crate::promises::Lease {
                duration: invalidated + config.lock_delay.mul_f64(1.0 / 0.9),
                text: format!(
                    "session invalidation ({}) + lock-delay {} / (1 - max drift 0.1)",
                    tenure_core::format_duration(invalidated),
                    tenure_core::format_duration(config.lock_delay)
                ),
            },
            config.workload.request_timeout + config.election_timeout.1 * 2,
            MAX_DRIFT,
            cluster,
            false,
        ));
        promises.push(lease_expiry(config));
        promises
    }

    fn assumptions(config: &ConsulConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        let (min, _) = config.election_timeout;
        let slack = min.saturating_sub(config.heartbeat_interval);
        let max_pause = match config.variant {
            ConsulVariant::Fenced => None,
            ConsulVariant::Correct | ConsulVariant::NoLockDelay => Some(Limit::new(
                max_pause(config),
                format!(
                    "a holder acts at most one pause after its session deadline (its last \
                     answered renewal's send + 2 x TTL by its clock), which drift 0.1 puts \
                     at most {} after the leader's invalidation (2 x TTL {} x (1/0.9 - \
                     1/1.1)); the next holder acts no sooner than the lock-delay {} after \
                     it: half of what is left, the other half for the leader's clock and \
                     the round trips",
                    f(drift_slack(config)),
                    f(config.ttl),
                    f(config.lock_delay)
                ),
            )),
        };
        tenure_core::Assumptions::new()
            .with_max_pause(max_pause)
            .with_max_drift(Limit::new(
                MAX_DRIFT.unwrap_or_default(),
                "renewals every TTL/2 by the client's clock renew a session timed by the \
                 leader's",
            ))
            .with_max_latency(Limit::new(
                slack / 2,
                "a stable leader needs broadcast time << election timeout (Raft §5.6)",
            ))
            .with_max_fsync(Limit::new(
                config.heartbeat_interval / 10,
                format!(
                    "a tenth of the heartbeat {}: a server blocked in syncs sends no heartbeat",
                    f(config.heartbeat_interval)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        Err(
            "sessions, lock-delays and the lock need timing and clients; the simulator \
             explores it (raft-log's model covers the log)",
        )
    }

    fn message_term(msg: &Msg) -> Option<u64> {
        msg.term()
    }
}
