//! `multi-lock`: clients that each need `k` of `m` locks at once, on one Redis-like
//! [`LockServer`] (`SET key owner NX [PX ttl]`, the compare-and-delete release).
//!
//! Each client, over and over: thinks, draws a request of `k` distinct resources out of
//! `r0..r{m-1}` (resource `i` with weight `1 / (i + 1)^skew`: `skew = 0` is uniform, a
//! larger skew makes `r0` a hot spot), acquires them one by one, holds them all for
//! `hold_time`, releases them all and observes `Done`. Two strategies:
//!
//! * `wait` (hold and wait): a refused `SET` is polled again every `poll_interval` while
//!   the locks already granted stay held. With `acquire_timeout`, a wait for one lock
//!   that lasts that long gives up: the client releases everything, backs off and
//!   retries the whole request. Without it, it waits forever.
//! * `try-lock`: the first refused `SET` makes the client release everything it holds,
//!   back off and retry the whole request. It never waits while holding, so it cannot
//!   deadlock; under contention it can livelock, which the backoff (exponential, with
//!   jitter) is there to prevent.
//!
//! What it observes: `Waiting { r }` when it starts waiting for `r`, `Holds { r, 0 }`
//! when granted (this server issues no fencing tokens), `GivesUp { r }` when it stops
//! waiting without it, `Releases { r }` when it lets go, `Done` after each completed
//! request. The `deadlock` checker builds the wait-for graph from these, `no-starvation`
//! counts `Done`s per client. What it *does* on the strength of its locks is observed as
//! `Acts { r, 0 }`: it reads each resource as soon as its lock is granted and writes
//! every resource of the request when the hold is over, just before releasing them, so
//! `mutual-exclusion` judges actions (a client whose lock expired while it waited for
//! the next one writes on the strength of a lock it no longer has).
//!
//! What it promises (variant `correct`): requests are acquired in one global order (by
//! resource index), so no cycle of waits can form (Coffman et al., "System Deadlocks",
//! 1971: breaking the circular-wait condition). With `ttl`, a lock expires on the server
//! while its holder still believes it holds it (the client does not watch its earlier
//! locks while it waits for the next one, as a client blocked on a lock call cannot), so
//! lease expiry breaks a deadlock at the price of mutual exclusion (its late write
//! interleaves with the next holder's actions), as in `redis-lock`'s GC pause (Kleppmann, "How to do distributed locking", 2016).
//!
//! Broken variant:
//! * `unordered`: each request is acquired in a random order. Two clients can each hold
//!   one lock the other waits for: with `wait`, no `acquire_timeout` and no `ttl` they
//!   wait forever (breaks `deadlock`, and `no-starvation`).
//!
//! Sources: issue 13's source article on distributed locks under contention (hot
//! resources, a consistent acquisition order, timeouts and lease expiry that "loosen
//! deadlock chains", backoff with jitter against "lock storms"); the Redis `SET`
//! documentation for the lock itself; Brooker, "Exponential Backoff And Jitter" (AWS
//! Architecture Blog, 2015) for the retry delay: the shared [`crate::backoff`] module's
//! equal-jitter exponential policy, from `backoff = [base, cap]`.
//!
//! Lost messages: a `SET` whose reply does not come within `request_timeout` is
//! abandoned (a late grant of it is deleted at once) and sent again under a new owner
//! value; without `ttl`, a grant whose reply is lost for good stays on the server, as
//! in `redis-lock`'s `no-ttl`. The scenarios run without loss.

use crate::backoff::{Backoff, BackoffPolicy};
use crate::lock_server::{ExpiryClock, LockMsg, LockServer};
use crate::redis_lock::{check_role_count, the_one};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, ParamError, Protocol,
    ProtocolInfo, RoleInfo, VariantInfo,
};

/// The messages: the lock server's, unchanged.
pub type Msg = LockMsg;

/// A client's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// Thinking is over: draw a request and start acquiring.
    Think,
    /// The server did not answer the outstanding `SET` in time.
    Reply,
    /// Hold and wait: ask again for the lock that was refused.
    Poll,
    /// Hold and wait: the wait for one lock lasted `acquire_timeout`.
    AcquireTimeout,
    /// The backoff after giving up is over: retry the request.
    Backoff,
    /// Every lock has been held for `hold_time`: release them all.
    Hold,
}

/// How a client acquires its locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Hold and wait: poll a refused lock while keeping the granted ones.
    Wait,
    /// Release everything at the first refusal, back off, retry.
    TryLock,
}

/// What every client of a run shares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    pub server: NodeId,
    /// Per resource `r{i}`, its weight in the draw (scaled to integers).
    pub weights: Vec<u64>,
    pub k: usize,
    /// Acquire in resource-index order (the `correct` variant).
    pub ordered: bool,
    pub strategy: Strategy,
    pub ttl: Option<Duration>,
    pub acquire_timeout: Option<Duration>,
    pub poll_interval: Duration,
    pub request_timeout: Duration,
    pub hold_time: Duration,
    pub think_time: (Duration, Duration),
    /// Backoff base and cap (see [`backoff_delay`]).
    pub backoff: (Duration, Duration),
}

/// The configuration of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MultiLockConfig {
    pub client: ClientConfig,
    pub roles: tenure_core::Roles<MultiLockRole>,
}

/// The roles of a multi-lock cluster (`Configurable::Role`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum MultiLockRole {
    /// The lock server (one Redis instance).
    Server,
    /// A client that needs several locks at once.
    Client,
}

/// Where a client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Thinking,
    Acquiring,
    Holding,
    BackingOff,
}

/// At most this many abandoned `SET`s are remembered (to delete their late grants).
const MAX_ABANDONED: usize = 16;

/// A multi-lock client. Nothing is durable: a restarted client starts afresh (its old
/// locks stay on the server until they expire, if they do).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    config: ClientConfig,
    phase: Phase,
    /// The resources of the current request, in acquisition order.
    request: Vec<String>,
    /// The index in `request` of the lock being acquired.
    next: usize,
    /// Granted and not released: (resource, owner value).
    held: Vec<(String, u64)>,
    /// The outstanding `SET`: (request id, owner value).
    pending: Option<(u64, u64)>,
    /// `SET`s given up on: request id -> (resource, owner value).
    abandoned: BTreeMap<u64, (String, u64)>,
    /// Whether `Waiting` has been observed for `request[next]` in this attempt.
    waiting: bool,
    req: u64,
    /// The retry delay after a failed attempt of the current request.
    backoff: Backoff,
}

impl Client {
    pub fn new(config: ClientConfig) -> Client {
        let (base, cap) = config.backoff;
        Client {
            config,
            phase: Phase::Thinking,
            request: Vec::new(),
            next: 0,
            held: Vec::new(),
            pending: None,
            abandoned: BTreeMap::new(),
            waiting: false,
            req: 0,
            // Brooker's "Equal Jitter": uniform in the upper half of min(cap, base x 2^n).
            backoff: Backoff::new(BackoffPolicy::EqualJitter { base, cap }),
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn request(&self) -> &[String] {
        &self.request
    }

    fn think(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.phase = Phase::Thinking;
        let (lo, hi) = self.config.think_time;
        let pause = env.duration_between(lo, hi);
        env.set_timer(Timer::Think, pause);
    }

    /// Draws `k` distinct resource indices by weight, without replacement; shuffled
    /// unless ordered (then sorted: the global order).
    fn draw(&self, env: &mut dyn Env<Msg, Timer>) -> Vec<String> {
        let mut left: Vec<(usize, u64)> = self.config.weights.iter().copied().enumerate().collect();
        let mut picked = Vec::with_capacity(self.config.k);
        for _ in 0..self.config.k {
            let total: u64 = left.iter().map(|(_, w)| w).sum();
            let mut x = env.range_inclusive(0, total - 1);
            let at = left
                .iter()
                .position(|(_, w)| {
                    if x < *w {
                        true
                    } else {
                        x -= w;
                        false
                    }
                })
                .expect("x is below the total weight");
            picked.push(left.remove(at).0);
        }
        if self.config.ordered {
            picked.sort_unstable();
        } else {
            // Fisher-Yates, so a hot resource is not always first.
            for i in (1..picked.len()).rev() {
                let j = env.range_inclusive(0, i as u64) as usize;
                picked.swap(i, j);
            }
        }
        picked.into_iter().map(|i| format!("r{i}")).collect()
    }

    fn start_attempt(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.phase = Phase::Acquiring;
        self.next = 0;
        self.acquire_next(env);
    }

    fn acquire_next(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if self.next == self.request.len() {
            self.phase = Phase::Holding;
            env.set_timer(Timer::Hold, self.config.hold_time);
            return;
        }
        let resource = self.request[self.next].clone();
        if !self.waiting {
            self.waiting = true;
            env.observe(Observation::Waiting {
                resource: resource.clone(),
            });
            if let (Strategy::Wait, Some(t)) = (self.config.strategy, self.config.acquire_timeout) {
                env.set_timer(Timer::AcquireTimeout, t);
            }
        }
        self.send_set(env, resource);
    }

    fn send_set(&mut self, env: &mut dyn Env<Msg, Timer>, key: String) {
        self.req += 1;
        let owner = env.next_u64();
        self.pending = Some((self.req, owner));
        env.send(
            self.config.server,
            LockMsg::Set {
                req: self.req,
                key,
                owner,
                ttl: self.config.ttl,
            },
        );
        env.set_timer(Timer::Reply, self.config.request_timeout);
    }

    /// Forgets the outstanding `SET`; a late grant of it will be deleted.
    fn abandon_pending(&mut self) {
        if let Some((req, owner)) = self.pending.take() {
            let key = self.request[self.next].clone();
            self.abandoned.insert(req, (key, owner));
            while self.abandoned.len() > MAX_ABANDONED {
                self.abandoned.pop_first();
            }
        }
    }

    fn release_all(&mut self, env: &mut dyn Env<Msg, Timer>) {
        while let Some((key, owner)) = self.held.pop() {
            env.send(
                self.config.server,
                LockMsg::DelIfOwner {
                    key: key.clone(),
                    owner,
                },
            );
            env.observe(Observation::Releases { resource: key });
        }
    }

    /// Gives up this attempt: stop waiting, release everything, back off.
    fn give_up(&mut self, env: &mut dyn Env<Msg, Timer>) {
        for t in [Timer::Poll, Timer::Reply, Timer::AcquireTimeout] {
            env.cancel_timer(&t);
        }
        self.abandon_pending();
        if std::mem::take(&mut self.waiting) {
            env.observe(Observation::GivesUp {
                resource: self.request[self.next].clone(),
            });
        }
        self.release_all(env);
        self.phase = Phase::BackingOff;
        let delay = self.backoff.on_failure(env);
        env.set_timer(Timer::Backoff, delay);
    }

    pub fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        // Request ids start at a random point, so a reply meant for the process that ran
        // before a crash never matches a request of this one.
        self.req = env.next_u64() >> 1;
        self.think(env);
    }

    pub fn on_set_reply(&mut self, env: &mut dyn Env<Msg, Timer>, req: u64, granted: bool) {
        if let Some((key, owner)) = self.abandoned.remove(&req) {
            if granted {
                env.send(self.config.server, LockMsg::DelIfOwner { key, owner });
            }
            return;
        }
        let Some((pending, owner)) = self.pending else {
            return;
        };
        if pending != req || self.phase != Phase::Acquiring {
            return;
        }
        self.pending = None;
        env.cancel_timer(&Timer::Reply);
        let resource = self.request[self.next].clone();
        if granted {
            env.cancel_timer(&Timer::AcquireTimeout);
            self.waiting = false;
            self.held.push((resource.clone(), owner));
            env.observe(Observation::Holds {
                resource: resource.clone(),
                token: 0,
            });
            // It reads the resource at once, on the strength of the lock.
            env.observe(Observation::Acts { resource, token: 0 });
            self.next += 1;
            self.acquire_next(env);
            return;
        }
        match self.config.strategy {
            Strategy::TryLock => self.give_up(env),
            Strategy::Wait => env.set_timer(Timer::Poll, self.config.poll_interval),
        }
    }

    pub fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match (timer, self.phase) {
            (Timer::Think, Phase::Thinking) => {
                self.request = self.draw(env);
                self.backoff.reset();
                self.start_attempt(env);
            }
            (Timer::Backoff, Phase::BackingOff) => self.start_attempt(env),
            (Timer::Poll, Phase::Acquiring) if self.pending.is_none() => {
                let key = self.request[self.next].clone();
                self.send_set(env, key);
            }
            (Timer::Reply, Phase::Acquiring) if self.pending.is_some() => {
                self.abandon_pending();
                match self.config.strategy {
                    Strategy::TryLock => self.give_up(env),
                    Strategy::Wait => {
                        let key = self.request[self.next].clone();
                        self.send_set(env, key);
                    }
                }
            }
            (Timer::AcquireTimeout, Phase::Acquiring) => self.give_up(env),
            (Timer::Hold, Phase::Holding) => {
                // The work is done: it writes every resource it holds, then releases.
                for (resource, _) in &self.held {
                    env.observe(Observation::Acts {
                        resource: resource.clone(),
                        token: 0,
                    });
                }
                self.release_all(env);
                env.observe(Observation::Done);
                self.think(env);
            }
            _ => {}
        }
    }
}

/// A multi-lock node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MultiLock {
    Server(LockServer),
    Client(Box<Client>),
}

impl Protocol for MultiLock {
    type Msg = Msg;
    type Timer = Timer;
    type Config = MultiLockConfig;

    fn new(config: &MultiLockConfig, me: NodeId, _cluster: &Cluster) -> MultiLock {
        match config.roles.get(me) {
            MultiLockRole::Server => {
                MultiLock::Server(LockServer::new(ExpiryClock::Monotonic, false))
            }
            MultiLockRole::Client => {
                MultiLock::Client(Box::new(Client::new(config.client.clone())))
            }
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match self {
            MultiLock::Server(s) => s.on_start(env),
            MultiLock::Client(c) => c.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (MultiLock::Server(s), m) => s.on_message(env, from, m),
            (MultiLock::Client(c), LockMsg::SetReply { req, granted, .. }) => {
                c.on_set_reply(env, req, granted)
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        if let MultiLock::Client(c) = self {
            c.on_timer(env, timer);
        }
    }
}

/// The scenario parameters of `multi-lock`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MultiLockParams {
    /// How many resources there are (`r0` .. `r{resources-1}`).
    pub resources: u32,
    /// How many distinct resources each request needs.
    pub k: u32,
    /// Hot-spot skew: resource `i` is drawn with weight `1 / (i + 1)^skew`.
    pub skew: f64,
    /// How long a client holds all its locks.
    pub hold_time: HumanDuration,
    pub think_time: [HumanDuration; 2],
    pub strategy: Strategy,
    /// Hold and wait only: give up a wait for one lock after this long (absent: never).
    pub acquire_timeout: Option<HumanDuration>,
    /// The locks' time to live on the server (absent: they never expire).
    pub ttl: Option<HumanDuration>,
    /// Hold and wait: how often a refused lock is asked for again.
    pub poll_interval: HumanDuration,
    /// How long a client waits for the server's reply to a `SET`.
    pub request_timeout: HumanDuration,
    /// Backoff base and cap after giving up.
    pub backoff: [HumanDuration; 2],
}

impl Default for MultiLockParams {
    fn default() -> MultiLockParams {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        MultiLockParams {
            resources: 4,
            k: 2,
            skew: 0.0,
            hold_time: ms(200),
            think_time: [ms(50), ms(150)],
            strategy: Strategy::Wait,
            acquire_timeout: None,
            ttl: None,
            poll_interval: ms(20),
            request_timeout: ms(500),
            backoff: [ms(20), ms(1_000)],
        }
    }
}

/// The weights' scale: resource 0 weighs this much.
const WEIGHT_SCALE: f64 = 1_000_000.0;

impl MultiLockParams {
    fn config(&self, cluster: &Cluster, ordered: bool) -> Result<MultiLockConfig, ParamError> {
        check_role_count(cluster, "server", 1, 1)?;
        check_role_count(cluster, "client", 1, usize::MAX)?;
        if !(1..=1_000).contains(&self.resources) {
            return Err(ParamError::new("resources", "must be between 1 and 1000"));
        }
        if self.k == 0 || self.k > self.resources {
            return Err(ParamError::new(
                "k",
                format!("must be between 1 and resources ({})", self.resources),
            ));
        }
        if !(self.skew.is_finite() && (0.0..=10.0).contains(&self.skew)) {
            return Err(ParamError::new("skew", "must be between 0 and 10"));
        }
        let positive = |name: &str, d: HumanDuration| {
            if d.0.is_zero() {
                Err(ParamError::new(name, "must be above zero"))
            } else {
                Ok(d.0)
            }
        };
        positive("hold_time", self.hold_time)?;
        positive("poll_interval", self.poll_interval)?;
        positive("request_timeout", self.request_timeout)?;
        positive("backoff", self.backoff[0])?;
        if let Some(t) = self.ttl {
            positive("ttl", t)?;
        }
        if let Some(t) = self.acquire_timeout {
            positive("acquire_timeout", t)?;
            if self.strategy == Strategy::TryLock {
                return Err(ParamError::new(
                    "acquire_timeout",
                    "has no effect with strategy \"try-lock\" (it never waits); leave it out",
                ));
            }
        }
        if self.think_time[0] > self.think_time[1] {
            return Err(ParamError::new(
                "think_time",
                "the minimum is above the maximum",
            ));
        }
        if self.backoff[0] > self.backoff[1] {
            return Err(ParamError::new("backoff", "the base is above the cap"));
        }
        let weights = (0..self.resources)
            .map(|i| ((WEIGHT_SCALE / f64::from(i + 1).powf(self.skew)).round() as u64).max(1))
            .collect();
        Ok(MultiLockConfig {
            client: ClientConfig {
                server: the_one(cluster, "server"),
                weights,
                k: self.k as usize,
                ordered,
                strategy: self.strategy,
                ttl: self.ttl.map(|t| t.0),
                acquire_timeout: self.acquire_timeout.map(|t| t.0),
                poll_interval: self.poll_interval.0,
                request_timeout: self.request_timeout.0,
                hold_time: self.hold_time.0,
                think_time: (self.think_time[0].0, self.think_time[1].0),
                backoff: (self.backoff[0].0, self.backoff[1].0),
            },
            roles: tenure_core::Roles::of(cluster)?,
        })
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "multi-lock",
    "clients that need k of m locks on one Redis-like server: hold-and-wait or try-lock, ordered or not",
    &[
        RoleInfo::new("server", "the lock server (one Redis instance, SET NX [PX])", 1),
        RoleInfo::new(
            "client",
            "clients that each acquire k of the m resources, hold them, release them",
            3,
        )
        .with_kind(tenure_core::RoleKind::Holder),
    ],
    &[
        VariantInfo::new(
            "correct",
            "every request is acquired in one global order (by resource index): no circular wait",
        ),
        VariantInfo::new(
            "unordered",
            "requests are acquired in a random order: hold and wait without a timeout deadlocks",
        )
        .with_breaks(&["deadlock", "no-starvation"]),
    ],
);

/// multi-lock's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum MultiLockVariant {
    Correct,
    Unordered,
}

impl Configurable for MultiLock {
    type Params = MultiLockParams;
    type Variant = MultiLockVariant;
    type Role = MultiLockRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: MultiLockParams,
        variant: MultiLockVariant,
        cluster: &Cluster,
    ) -> Result<MultiLockConfig, ParamError> {
        let ordered = match variant {
            MultiLockVariant::Correct => true,
            MultiLockVariant::Unordered => false,
        };
        params.config(cluster, ordered)
    }

    /// What ordered acquisition promises: no wait-for cycle outlives the timeouts that
    /// would break it. Not progress for every client (exponential try-lock backoff is
    /// unfair, a scenario shows it), and without a TTL not liveness after a crash.
    fn promises(config: &MultiLockConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        let mut deadlock = tenure_core::Promise::new("deadlock");
        if let Some(t) = config.client.acquire_timeout {
            deadlock = deadlock.with("acquire_timeout", tenure_core::format_duration(t));
        }
        if let Some(t) = config.client.ttl {
            deadlock = deadlock.with("lease", tenure_core::format_duration(t));
        }
        vec![deadlock]
    }
}

#[cfg(test)]
mod tests;
