//! The lock-client workload: acquire, hold, read-modify-write the protected
//! [`Resource`](crate::resource::Resource), release, think, repeat.
//!
//! Every lock protocol's client embeds a [`Workload`] next to its own lock-client state,
//! which implements [`LockApi`]. The workload calls [`LockApi::start_acquire`] and
//! [`LockApi::release`]; the protocol reports the outcome of an acquire with
//! [`Workload::on_acquired`] or [`Workload::on_acquire_failed`], and forwards the
//! workload's timers and the resource's replies.
//!
//! What it observes: `Waiting` when it starts trying, `Holds { token }` when it believes
//! it holds the lock (token 0 if the lock service issues none), `Acts { token }` each time
//! it acts on the resource as holder (just before it sends its read and its write: what
//! `mutual-exclusion` judges), `Acked { amount }` when
//! its write was accepted, `Releases` when it believes it no longer holds the lock (it
//! released it, gave up, or its validity timer fired), `Retry` each time it tries again
//! after a failed acquire.
//!
//! Between a failed acquire and the next attempt it waits as its
//! [`BackoffPolicy`](crate::backoff::BackoffPolicy) says (the scenario's `backoff`
//! parameter; by default the historical uniform `retry_backoff` range).
//!
//! Its operations on the resource are also recorded as a client history with Jepsen's
//! conventions ([`Observation::Invoke`] / [`Observation::Complete`], key = the resource):
//! the read (`read`, ok with the value, info if no reply came) and the write, recorded as
//! `cas [seen new]` because the lock is what promises that the value is still the one the
//! client read (ok if accepted, fail if the storage rejected it, info if no reply came).
//! A lost update is then a non-linearizable `cas-register` history.
//!
//! How it fails, on purpose: like most real lock clients, it does *not* check that its
//! lock is still valid between reading and writing. A client paused (a GC or VM stall)
//! after `Holds` and its read keeps believing it holds the lock, and on waking writes a
//! value computed from a stale read: the classic GC pause of Kleppmann, "How to do
//! distributed locking" (2016). Only a fenced resource rejects that write.

use crate::backoff::{lock_policy, Backoff, BackoffParams, BackoffPolicy};
use crate::resource::ResourceMsg;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure_core::{Env, HumanDuration, NodeId, Observation, OpOutcome, OpValue, ParamError};

/// The lock API a protocol's client offers the workload.
pub trait LockApi<M, T> {
    /// Starts acquiring the lock. The protocol later calls [`Workload::on_acquired`] or
    /// [`Workload::on_acquire_failed`] (or nothing, if the lock service never answers).
    fn start_acquire(&mut self, env: &mut dyn Env<M, T>);
    /// Releases the lock (fire and forget). Called after every hold, also when the
    /// client's validity has already expired, as real clients do.
    fn release(&mut self, env: &mut dyn Env<M, T>);
}

/// The workload's own timers; the protocol wraps them in its `Timer` type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WorkloadTimer {
    /// Thinking is over: start acquiring.
    Think,
    /// Backoff after a failed acquire is over: try again.
    Retry,
    /// The work between read and write is done: write.
    Work,
    /// The lock's validity (as the lock API reported it) is over.
    Validity,
    /// No reply from the resource in time.
    Request,
}

/// How a workload behaves (shared by every client of a run).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkloadConfig {
    /// The name of the lock and of the protected resource.
    pub resource: String,
    /// The storage node holding the resource.
    pub storage: NodeId,
    /// How long the client works while holding the lock, between read and write.
    pub work_duration: Duration,
    /// Pause between a release and the next acquire, drawn uniformly.
    pub think_time: (Duration, Duration),
    /// How long to wait after a failed acquire (see [`crate::backoff`]).
    pub backoff: BackoffPolicy,
    /// How much each read-modify-write adds.
    pub amount: i64,
    /// How long to wait for the resource's reply before giving up the hold.
    pub request_timeout: Duration,
    /// The k-th client of its role (k = 0, 1, ...) waits an extra k × `start_stagger`
    /// before its first acquire, so scenarios can know who goes first.
    pub start_stagger: Duration,
    /// At most this many acquire attempts (retries included) per process, then the
    /// client stops; `None`: no limit. The model explorer sets it to keep a client's
    /// state space finite; scenarios leave it unset.
    pub max_attempts: Option<u32>,
}

impl WorkloadConfig {
    /// Checks the ranges; errors name the parameter.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.think_time.0 > self.think_time.1 {
            return Err(ParamError::new(
                "think_time",
                "the minimum is above the maximum",
            ));
        }
        self.backoff.validate()?;
        if self.request_timeout.is_zero() {
            return Err(ParamError::new("request_timeout", "must be above zero"));
        }
        if self.resource.is_empty() {
            return Err(ParamError::new("resource", "must not be empty"));
        }
        if self.max_attempts == Some(0) {
            return Err(ParamError::new(
                "max_attempts",
                "must be at least 1 (leave it out for no limit)",
            ));
        }
        Ok(())
    }
}

/// Where the client is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Thinking,
    /// Acquire in progress (or backing off before retrying).
    Acquiring,
    /// Holds the lock, waiting for the read reply.
    Reading,
    /// Holds the lock, working before the write.
    Working,
    /// Holds the lock, waiting for the write reply.
    Writing,
}

/// One client's workload state. Nothing of it is durable: a restarted client starts
/// a fresh cycle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    config: WorkloadConfig,
    phase: Phase,
    /// Whether the client believes it holds the lock (between `Holds` and `Releases`).
    holding: bool,
    token: Option<u64>,
    /// The id of the outstanding resource request.
    op: u64,
    read_value: i64,
    /// Acquire attempts made by this process (see [`WorkloadConfig::max_attempts`]).
    attempts: u32,
    backoff: Backoff,
    /// The client operation invoked and not yet completed (`read` or `cas`), with its
    /// value, for the client history.
    open: Option<(&'static str, OpValue)>,
}

impl Workload {
    pub fn new(config: WorkloadConfig) -> Workload {
        Workload {
            backoff: Backoff::new(config.backoff),
            config,
            phase: Phase::Thinking,
            holding: false,
            token: None,
            op: 0,
            read_value: 0,
            attempts: 0,
            open: None,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the client believes it holds the lock.
    pub fn holding(&self) -> bool {
        self.holding
    }

    pub fn config(&self) -> &WorkloadConfig {
        &self.config
    }

    /// The client starts (or restarts): think first, plus its stagger (see
    /// [`WorkloadConfig::start_stagger`]).
    pub fn on_start<M, T: From<WorkloadTimer>>(&mut self, env: &mut dyn Env<M, T>) {
        let me = env.me();
        let role = env.cluster().role_of(me).to_string();
        let rank = env
            .cluster()
            .with_role(&role)
            .position(|n| n == me)
            .expect("a node plays its own role") as u32;
        let stagger = self.config.start_stagger.saturating_mul(rank);
        self.phase = Phase::Thinking;
        if self.attempts_left() == 0 {
            return;
        }
        let (lo, hi) = self.config.think_time;
        let pause = env.duration_between(lo, hi);
        env.set_timer(T::from(WorkloadTimer::Think), pause + stagger);
    }

    /// The lock API granted the lock, with fencing `token` (if the service issues one)
    /// and `validity` (how long the client may believe it holds it; `None`: until it
    /// releases). Ignored unless an acquire is in progress.
    pub fn on_acquired<M: From<ResourceMsg>, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        token: Option<u64>,
        validity: Option<Duration>,
    ) {
        if self.phase != Phase::Acquiring {
            return;
        }
        env.cancel_timer(&T::from(WorkloadTimer::Retry));
        self.backoff.on_success();
        self.holding = true;
        self.token = token;
        env.observe(Observation::Holds {
            resource: self.config.resource.clone(),
            token: token.unwrap_or(0),
        });
        if let Some(v) = validity {
            env.set_timer(T::from(WorkloadTimer::Validity), v);
        }
        self.phase = Phase::Reading;
        self.op += 1;
        self.act(env);
        env.send(
            self.config.storage,
            M::from(ResourceMsg::Read {
                resource: self.config.resource.clone(),
                op: self.op,
                token: self.token,
            }),
        );
        self.invoke(env, "read", OpValue::Nil);
        env.set_timer(T::from(WorkloadTimer::Request), self.config.request_timeout);
    }

    /// The lock API could not get the lock this time: back off and retry.
    pub fn on_acquire_failed<M, T: From<WorkloadTimer>>(&mut self, env: &mut dyn Env<M, T>) {
        if self.phase != Phase::Acquiring {
            return;
        }
        if self.attempts_left() == 0 {
            // Out of attempts: stop trying (the client stays idle).
            self.phase = Phase::Thinking;
            return;
        }
        let backoff = self.backoff.on_failure(env);
        env.set_timer(T::from(WorkloadTimer::Retry), backoff);
    }

    pub fn on_timer<M: From<ResourceMsg>, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        lock: &mut dyn LockApi<M, T>,
        timer: WorkloadTimer,
    ) {
        match (timer, self.phase) {
            (WorkloadTimer::Think, Phase::Thinking) => {
                self.phase = Phase::Acquiring;
                env.observe(Observation::Waiting {
                    resource: self.config.resource.clone(),
                });
                self.attempts += 1;
                self.backoff.reset();
                lock.start_acquire(env);
            }
            (WorkloadTimer::Retry, Phase::Acquiring) => {
                self.attempts += 1;
                env.observe(Observation::Retry {
                    what: self.config.resource.clone(),
                    attempt: self.backoff.failures(),
                });
                lock.start_acquire(env);
            }
            (WorkloadTimer::Work, Phase::Working) => {
                // No validity check here: that is the window the GC pause exploits.
                self.phase = Phase::Writing;
                self.op += 1;
                self.act(env);
                env.send(
                    self.config.storage,
                    M::from(ResourceMsg::Write {
                        resource: self.config.resource.clone(),
                        op: self.op,
                        token: self.token,
                        value: self.read_value + self.config.amount,
                        based_on: Some(self.read_value),
                    }),
                );
                let rmw = OpValue::Pair(self.read_value, self.read_value + self.config.amount);
                self.invoke(env, "cas", rmw);
                env.set_timer(T::from(WorkloadTimer::Request), self.config.request_timeout);
            }
            (WorkloadTimer::Validity, _) if self.holding => self.stop_holding(env),
            (WorkloadTimer::Request, Phase::Reading | Phase::Writing) => {
                self.complete(env, OpOutcome::Info, None);
                self.finish(env, lock);
            }
            _ => {}
        }
    }

    /// The lock service told the client its lock is gone (the session or lease it
    /// rests on expired: etcd's `Session.Done()`, ZooKeeper's session expiry or
    /// CONNECTIONLOSS past the session timeout). A careful client stops acting on it at
    /// once, as a `select` on `Done()` does: a read in flight is abandoned (its reply
    /// will be ignored), the work in progress is dropped before its write, and the
    /// client releases and thinks again. A write already sent cannot be called back;
    /// the client only stops believing it holds and waits for the reply. What is left
    /// is the window the GC-pause lesson shows: a pause between the last check and the
    /// write, which only fencing closes.
    pub fn on_lost<M, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        lock: &mut dyn LockApi<M, T>,
    ) {
        if !self.holding {
            return;
        }
        match self.phase {
            Phase::Reading => {
                env.cancel_timer(&T::from(WorkloadTimer::Request));
                self.complete(env, OpOutcome::Info, None);
                self.finish(env, lock);
            }
            Phase::Working => {
                env.cancel_timer(&T::from(WorkloadTimer::Work));
                self.finish(env, lock);
            }
            Phase::Writing | Phase::Thinking | Phase::Acquiring => self.stop_holding(env),
        }
    }

    /// The hold ends before the work does: the client releases the lock and stops
    /// believing it holds it (`Releases`), but the work in progress goes on to its
    /// write, which then acts on the resource without the lock (no-op unless holding).
    /// A critical section that ends too early, as `redis-lock release-before-write`
    /// plants it on purpose.
    pub fn release_early<M, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        lock: &mut dyn LockApi<M, T>,
    ) {
        if !self.holding {
            return;
        }
        lock.release(env);
        self.stop_holding(env);
    }

    /// A reply from the resource. Replies to older requests are ignored.
    pub fn on_resource_reply<M, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        lock: &mut dyn LockApi<M, T>,
        msg: ResourceMsg,
    ) {
        match msg {
            ResourceMsg::ReadReply { op, value, .. }
                if op == self.op && self.phase == Phase::Reading =>
            {
                env.cancel_timer(&T::from(WorkloadTimer::Request));
                self.read_value = value;
                self.complete(env, OpOutcome::Ok, Some(OpValue::Int(value)));
                self.phase = Phase::Working;
                env.set_timer(T::from(WorkloadTimer::Work), self.config.work_duration);
            }
            ResourceMsg::WriteReply { op, accepted, .. }
                if op == self.op && self.phase == Phase::Writing =>
            {
                env.cancel_timer(&T::from(WorkloadTimer::Request));
                let outcome = if accepted {
                    OpOutcome::Ok
                } else {
                    OpOutcome::Fail
                };
                self.complete(env, outcome, None);
                if accepted {
                    env.observe(Observation::Acked {
                        resource: self.config.resource.clone(),
                        amount: self.config.amount,
                    });
                }
                self.finish(env, lock);
            }
            _ => {}
        }
    }

    /// The hold is over (written, or gave up): release and think.
    fn finish<M, T: From<WorkloadTimer>>(
        &mut self,
        env: &mut dyn Env<M, T>,
        lock: &mut dyn LockApi<M, T>,
    ) {
        lock.release(env);
        if self.holding {
            self.stop_holding(env);
        }
        self.token = None;
        self.think(env);
    }

    /// The client acts on the resource as holder (it is about to send a read or a write).
    fn act<M, T>(&self, env: &mut dyn Env<M, T>) {
        env.observe(Observation::Acts {
            resource: self.config.resource.clone(),
            token: self.token.unwrap_or(0),
        });
    }

    fn stop_holding<M, T: From<WorkloadTimer>>(&mut self, env: &mut dyn Env<M, T>) {
        assert!(self.holding);
        self.holding = false;
        env.cancel_timer(&T::from(WorkloadTimer::Validity));
        env.observe(Observation::Releases {
            resource: self.config.resource.clone(),
        });
    }

    /// Records the invocation of client operation `f` (see [`Observation::Invoke`]).
    fn invoke<M, T>(&mut self, env: &mut dyn Env<M, T>, f: &'static str, value: OpValue) {
        debug_assert!(self.open.is_none(), "one open operation at a time");
        self.open = Some((f, value));
        env.observe(Observation::Invoke {
            f: f.to_string(),
            key: self.config.resource.clone(),
            value,
        });
    }

    /// Records how the open operation ended; `value` is what it returned (`None`: the
    /// invocation's value, as Jepsen's completions repeat it).
    fn complete<M, T>(
        &mut self,
        env: &mut dyn Env<M, T>,
        outcome: OpOutcome,
        value: Option<OpValue>,
    ) {
        let Some((f, invoked)) = self.open.take() else {
            return;
        };
        let value = match outcome {
            OpOutcome::Info => OpValue::Nil,
            _ => value.unwrap_or(invoked),
        };
        env.observe(Observation::Complete {
            f: f.to_string(),
            key: self.config.resource.clone(),
            outcome,
            value,
        });
    }

    /// Acquire attempts this process may still make (`u32::MAX` without a limit).
    fn attempts_left(&self) -> u32 {
        self.config
            .max_attempts
            .map_or(u32::MAX, |max| max.saturating_sub(self.attempts))
    }

    fn think<M, T: From<WorkloadTimer>>(&mut self, env: &mut dyn Env<M, T>) {
        self.phase = Phase::Thinking;
        if self.attempts_left() == 0 {
            return;
        }
        let (lo, hi) = self.config.think_time;
        let pause = env.duration_between(lo, hi);
        env.set_timer(T::from(WorkloadTimer::Think), pause);
    }
}

/// The workload's eight scenario parameters, shared by every lock client protocol
/// (redis-lock, redlock, fencing, etcd-lock), with their one set of defaults. A
/// protocol's `[protocol.params]` struct gets them from [`lock_client_params!`], which
/// keeps `deny_unknown_fields` working (serde's `flatten` would not).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadParams {
    /// The lock's name and the protected resource's name.
    pub resource: String,
    /// How long a client works with the lock, between its read and its write.
    pub work_duration: HumanDuration,
    /// Pause between a release and the next acquire, drawn uniformly.
    pub think_time: [HumanDuration; 2],
    /// Uniform backoff range after a failed acquire, unless `backoff` is given.
    pub retry_backoff: [HumanDuration; 2],
    /// How a client spaces its retries after a failed acquire:
    /// `{ policy = "full-jitter", base = "10ms", cap = "1s" }` (see
    /// [`crate::backoff`]); absent: uniform in `retry_backoff`.
    pub backoff: Option<BackoffParams>,
    /// How much each read-modify-write adds.
    pub amount: i64,
    /// How long a client waits for the storage's reply.
    pub request_timeout: HumanDuration,
    /// The k-th client waits k x this before its first acquire.
    pub start_stagger: HumanDuration,
}

impl Default for WorkloadParams {
    fn default() -> WorkloadParams {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        WorkloadParams {
            resource: "counter".to_string(),
            work_duration: ms(100),
            think_time: [ms(100), ms(300)],
            retry_backoff: [ms(50), ms(150)],
            backoff: None,
            amount: 1,
            request_timeout: ms(1_000),
            start_stagger: ms(0),
        }
    }
}

impl WorkloadParams {
    /// The workload's configuration against `storage`; checks the ranges (errors name
    /// the parameter).
    pub fn config(
        &self,
        storage: NodeId,
        max_attempts: Option<u32>,
    ) -> Result<WorkloadConfig, ParamError> {
        let config = WorkloadConfig {
            resource: self.resource.clone(),
            storage,
            work_duration: self.work_duration.0,
            think_time: (self.think_time[0].0, self.think_time[1].0),
            backoff: lock_policy(
                self.backoff.as_ref(),
                (self.retry_backoff[0].0, self.retry_backoff[1].0),
            )?,
            amount: self.amount,
            request_timeout: self.request_timeout.0,
            start_stagger: self.start_stagger.0,
            max_attempts,
        };
        config.validate()?;
        Ok(config)
    }
}

/// Declares a lock protocol's `[protocol.params]` struct: the protocol's own fields,
/// each with its default (`pub ttl: HumanDuration = ms(2_000),`), then the eight
/// [`WorkloadParams`] fields under the same names and with the same defaults for every
/// lock protocol. Generates `Default` and `workload_params()`. The struct's own
/// attributes (derives, `#[serde(deny_unknown_fields, default)]`) are passed through.
macro_rules! lock_client_params {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// The lock's name and the protected resource's name.
            pub resource: String,
            /// How long a client works with the lock, between its read and its write.
            pub work_duration: tenure_core::HumanDuration,
            /// Pause between a release and the next acquire, drawn uniformly.
            pub think_time: [tenure_core::HumanDuration; 2],
            /// Uniform backoff range after a failed acquire, unless `backoff` is given.
            pub retry_backoff: [tenure_core::HumanDuration; 2],
            /// How a client spaces its retries after a failed acquire:
            /// `{ policy = "full-jitter", base = "10ms", cap = "1s" }` (see
            /// [`crate::backoff`]); absent: uniform in `retry_backoff`.
            pub backoff: Option<$crate::backoff::BackoffParams>,
            /// How much each read-modify-write adds.
            pub amount: i64,
            /// How long a client waits for the storage's reply.
            pub request_timeout: tenure_core::HumanDuration,
            /// The k-th client waits k x this before its first acquire.
            pub start_stagger: tenure_core::HumanDuration,
        }

        impl Default for $name {
            fn default() -> $name {
                let w = $crate::workload::WorkloadParams::default();
                $name {
                    $( $field: $default, )*
                    resource: w.resource,
                    work_duration: w.work_duration,
                    think_time: w.think_time,
                    retry_backoff: w.retry_backoff,
                    backoff: w.backoff,
                    amount: w.amount,
                    request_timeout: w.request_timeout,
                    start_stagger: w.start_stagger,
                }
            }
        }

        impl $name {
            /// The workload's eight parameters.
            pub fn workload_params(&self) -> $crate::workload::WorkloadParams {
                $crate::workload::WorkloadParams {
                    resource: self.resource.clone(),
                    work_duration: self.work_duration,
                    think_time: self.think_time,
                    retry_backoff: self.retry_backoff,
                    backoff: self.backoff.clone(),
                    amount: self.amount,
                    request_timeout: self.request_timeout,
                    start_stagger: self.start_stagger,
                }
            }
        }
    };
}
pub(crate) use lock_client_params;

/// The three roles of a lock protocol's cluster (redis-lock, fencing, redlock,
/// etcd-lock, zookeeper): their `Configurable::Role`, read into the config's
/// [`Roles`](tenure_core::Roles) by `configure`, so `Protocol::new` dispatches on it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum LockRole {
    /// The lock service (a Redis instance, an etcd server).
    Server,
    /// A lock client running the [`Workload`].
    Client,
    /// The protected [`Resource`](crate::resource::Resource).
    Storage,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Cluster, Effect, LocalTime, Rng, SplitMix64, Step, StorageMap};

    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Msg {
        Resource(ResourceMsg),
        Lock(&'static str),
    }
    impl From<ResourceMsg> for Msg {
        fn from(m: ResourceMsg) -> Msg {
            Msg::Resource(m)
        }
    }
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Timer(WorkloadTimer);
    impl From<WorkloadTimer> for Timer {
        fn from(t: WorkloadTimer) -> Timer {
            Timer(t)
        }
    }

    /// A lock API that just sends a marker message to node 0.
    struct FakeLock;
    impl LockApi<Msg, Timer> for FakeLock {
        fn start_acquire(&mut self, env: &mut dyn Env<Msg, Timer>) {
            env.send(NodeId(0), Msg::Lock("acquire"));
        }
        fn release(&mut self, env: &mut dyn Env<Msg, Timer>) {
            env.send(NodeId(0), Msg::Lock("release"));
        }
    }

    const STORAGE: NodeId = NodeId(1);

    fn config() -> WorkloadConfig {
        WorkloadConfig {
            resource: "r".into(),
            storage: STORAGE,
            work_duration: Duration::from_millis(100),
            think_time: (Duration::from_millis(10), Duration::from_millis(20)),
            backoff: BackoffPolicy::Uniform {
                min: Duration::from_millis(30),
                max: Duration::from_millis(40),
            },
            amount: 3,
            request_timeout: Duration::from_secs(1),
            start_stagger: Duration::from_millis(1000),
            max_attempts: None,
        }
    }

    /// Runs `f` on a fresh step for node 2 and returns the effects.
    fn step(f: impl FnOnce(&mut dyn Env<Msg, Timer>), rng_seed: u64) -> Vec<Effect<Msg, Timer>> {
        let cluster = Cluster::uniform("node", 3);
        let mut storage = StorageMap::new();
        let mut rng = SplitMix64(rng_seed);
        let mut s: Step<'_, Msg, Timer> = Step::new(
            NodeId(2),
            &cluster,
            LocalTime(0),
            LocalTime(0),
            &mut storage,
            &mut rng,
        );
        f(&mut s);
        s.effects
    }

    fn timer(t: WorkloadTimer, after: Duration) -> Effect<Msg, Timer> {
        Effect::SetTimer {
            timer: Timer(t),
            after,
        }
    }

    fn cancel(t: WorkloadTimer) -> Effect<Msg, Timer> {
        Effect::CancelTimer { timer: Timer(t) }
    }

    fn obs(o: Observation) -> Effect<Msg, Timer> {
        Effect::Observe(o)
    }

    fn send(to: NodeId, msg: Msg) -> Effect<Msg, Timer> {
        Effect::Send { to, msg }
    }

    fn holding_after_read(value: i64) -> Workload {
        let mut w = Workload::new(config());
        w.phase = Phase::Acquiring;
        step(|env| w.on_acquired(env, Some(9), None), 1);
        step(
            |env| {
                w.on_resource_reply(
                    env,
                    &mut FakeLock,
                    ResourceMsg::ReadReply {
                        resource: "r".into(),
                        op: 1,
                        value,
                    },
                )
            },
            1,
        );
        assert_eq!(w.phase, Phase::Working);
        w
    }

    #[test]
    fn start_thinks_for_a_seeded_time_plus_its_stagger() {
        let mut w = Workload::new(config());
        // Node 2 is the third node of its role: two staggers of 1s.
        let effects = step(|env| w.on_start(env), 5);
        let expected = SplitMix64(5)
            .duration_between(Duration::from_millis(10), Duration::from_millis(20))
            + Duration::from_secs(2);
        assert_eq!(effects, vec![timer(WorkloadTimer::Think, expected)]);
    }

    #[test]
    fn think_over_observes_waiting_and_starts_acquiring() {
        let mut w = Workload::new(config());
        let effects = step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Think),
            1,
        );
        assert_eq!(
            effects,
            vec![
                obs(Observation::Waiting {
                    resource: "r".into()
                }),
                send(NodeId(0), Msg::Lock("acquire")),
            ]
        );
        assert_eq!(w.phase, Phase::Acquiring);
    }

    #[test]
    fn acquired_observes_holds_and_reads() {
        let mut w = Workload::new(config());
        w.phase = Phase::Acquiring;
        let effects = step(
            |env| w.on_acquired(env, Some(9), Some(Duration::from_millis(500))),
            1,
        );
        assert_eq!(
            effects,
            vec![
                cancel(WorkloadTimer::Retry),
                obs(Observation::Holds {
                    resource: "r".into(),
                    token: 9
                }),
                timer(WorkloadTimer::Validity, Duration::from_millis(500)),
                obs(Observation::Acts {
                    resource: "r".into(),
                    token: 9
                }),
                send(
                    STORAGE,
                    Msg::Resource(ResourceMsg::Read {
                        resource: "r".into(),
                        op: 1,
                        token: Some(9)
                    })
                ),
                obs(Observation::Invoke {
                    f: "read".into(),
                    key: "r".into(),
                    value: OpValue::Nil
                }),
                timer(WorkloadTimer::Request, Duration::from_secs(1)),
            ]
        );
        assert!(w.holding);
    }

    #[test]
    fn a_late_grant_is_ignored() {
        let mut w = Workload::new(config());
        let effects = step(|env| w.on_acquired(env, None, None), 1);
        assert!(effects.is_empty());
        assert!(!w.holding);
    }

    #[test]
    fn failed_acquire_backs_off_with_jitter_then_retries() {
        let mut w = Workload::new(config());
        w.phase = Phase::Acquiring;
        let effects = step(|env| w.on_acquire_failed(env), 3);
        let expected =
            SplitMix64(3).duration_between(Duration::from_millis(30), Duration::from_millis(40));
        assert_eq!(effects, vec![timer(WorkloadTimer::Retry, expected)]);
        let effects = step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Retry),
            3,
        );
        assert_eq!(
            effects,
            vec![
                obs(Observation::Retry {
                    what: "r".into(),
                    attempt: 1
                }),
                send(NodeId(0), Msg::Lock("acquire"))
            ]
        );
    }

    #[test]
    fn the_backoff_policy_spaces_retries_and_a_grant_starts_it_over() {
        let mut w = Workload::new(WorkloadConfig {
            backoff: BackoffPolicy::Exponential {
                base: Duration::from_millis(10),
                cap: Duration::from_millis(25),
            },
            ..config()
        });
        step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Think),
            1,
        );
        let mut sleeps = Vec::new();
        for _ in 0..3 {
            let effects = step(|env| w.on_acquire_failed(env), 1);
            let [Effect::SetTimer { after, .. }] = effects[..] else {
                panic!("expected one retry timer, got {effects:?}");
            };
            sleeps.push(after);
            step(
                |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Retry),
                1,
            );
        }
        let ms = Duration::from_millis;
        assert_eq!(sleeps, vec![ms(10), ms(20), ms(25)]);
        step(|env| w.on_acquired(env, None, None), 1);
        let effects = step(|env| w.on_acquire_failed(env), 1);
        assert!(effects.is_empty(), "not acquiring: no retry");
        w.phase = Phase::Acquiring;
        let effects = step(|env| w.on_acquire_failed(env), 1);
        assert_eq!(effects, vec![timer(WorkloadTimer::Retry, ms(10))]);
    }

    #[test]
    fn out_of_attempts_the_client_stops_instead_of_retrying_or_thinking() {
        let mut w = Workload::new(WorkloadConfig {
            max_attempts: Some(1),
            ..config()
        });
        let effects = step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Think),
            1,
        );
        assert_eq!(effects[1], send(NodeId(0), Msg::Lock("acquire")));
        // Refused: no backoff timer, the client goes idle.
        let effects = step(|env| w.on_acquire_failed(env), 3);
        assert_eq!(effects, vec![]);
        assert_eq!(w.phase, Phase::Thinking);
        // Nor does a finished hold schedule another acquire.
        let mut w = holding_after_read(0);
        w.config.max_attempts = Some(1);
        w.attempts = 1;
        let effects = step(|env| w.think(env), 1);
        assert_eq!(effects, vec![]);
        // A restarted process starts a fresh count.
        let mut w = Workload::new(WorkloadConfig {
            max_attempts: Some(1),
            ..config()
        });
        assert_eq!(step(|env| w.on_start(env), 5).len(), 1);
    }

    #[test]
    fn read_reply_starts_work_then_writes_value_plus_amount_with_the_token() {
        let mut w = holding_after_read(40);
        let effects = step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        assert_eq!(
            effects,
            vec![
                obs(Observation::Acts {
                    resource: "r".into(),
                    token: 9
                }),
                send(
                    STORAGE,
                    Msg::Resource(ResourceMsg::Write {
                        resource: "r".into(),
                        op: 2,
                        token: Some(9),
                        value: 43,
                        based_on: Some(40)
                    })
                ),
                obs(Observation::Invoke {
                    f: "cas".into(),
                    key: "r".into(),
                    value: OpValue::Pair(40, 43)
                }),
                timer(WorkloadTimer::Request, Duration::from_secs(1)),
            ]
        );
    }

    #[test]
    fn accepted_write_acks_releases_and_thinks() {
        let mut w = holding_after_read(40);
        step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        let reply = ResourceMsg::WriteReply {
            resource: "r".into(),
            op: 2,
            accepted: true,
        };
        let effects = step(
            |env| w.on_resource_reply(env, &mut FakeLock, reply.clone()),
            4,
        );
        let think =
            SplitMix64(4).duration_between(Duration::from_millis(10), Duration::from_millis(20));
        assert_eq!(
            effects,
            vec![
                cancel(WorkloadTimer::Request),
                obs(Observation::Complete {
                    f: "cas".into(),
                    key: "r".into(),
                    outcome: OpOutcome::Ok,
                    value: OpValue::Pair(40, 43)
                }),
                obs(Observation::Acked {
                    resource: "r".into(),
                    amount: 3
                }),
                send(NodeId(0), Msg::Lock("release")),
                cancel(WorkloadTimer::Validity),
                obs(Observation::Releases {
                    resource: "r".into()
                }),
                timer(WorkloadTimer::Think, think),
            ]
        );
        // A duplicate of the same reply changes nothing.
        let effects = step(|env| w.on_resource_reply(env, &mut FakeLock, reply), 4);
        assert!(effects.is_empty());
    }

    #[test]
    fn rejected_write_does_not_ack() {
        let mut w = holding_after_read(40);
        step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        let effects = step(
            |env| {
                w.on_resource_reply(
                    env,
                    &mut FakeLock,
                    ResourceMsg::WriteReply {
                        resource: "r".into(),
                        op: 2,
                        accepted: false,
                    },
                )
            },
            4,
        );
        assert!(!effects
            .iter()
            .any(|e| matches!(e, Effect::Observe(Observation::Acked { .. }))));
        assert_eq!(
            effects[1],
            obs(Observation::Complete {
                f: "cas".into(),
                key: "r".into(),
                outcome: OpOutcome::Fail,
                value: OpValue::Pair(40, 43)
            })
        );
        assert_eq!(w.phase, Phase::Thinking);
    }

    #[test]
    fn validity_expiry_ends_belief_but_the_write_still_goes_out() {
        let mut w = holding_after_read(40);
        let effects = step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Validity),
            1,
        );
        assert_eq!(
            effects,
            vec![
                cancel(WorkloadTimer::Validity),
                obs(Observation::Releases {
                    resource: "r".into()
                }),
            ]
        );
        // The client's code does not check validity before writing (the GC-pause window).
        let effects = step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        assert!(matches!(
            effects[0],
            Effect::Observe(Observation::Acts { .. })
        ));
        assert!(matches!(
            effects[1],
            Effect::Send {
                msg: Msg::Resource(ResourceMsg::Write { value: 43, .. }),
                ..
            }
        ));
        // After the reply it still releases (real clients do), but observes no second
        // `Releases`.
        let effects = step(
            |env| {
                w.on_resource_reply(
                    env,
                    &mut FakeLock,
                    ResourceMsg::WriteReply {
                        resource: "r".into(),
                        op: 2,
                        accepted: true,
                    },
                )
            },
            1,
        );
        assert_eq!(effects[3], send(NodeId(0), Msg::Lock("release")));
        assert_eq!(
            effects
                .iter()
                .filter(|e| matches!(e, Effect::Observe(Observation::Releases { .. })))
                .count(),
            0
        );
    }

    #[test]
    fn lost_lock_while_working_drops_the_write_releases_and_thinks() {
        let mut w = holding_after_read(40);
        let effects = step(|env| w.on_lost(env, &mut FakeLock), 4);
        let think =
            SplitMix64(4).duration_between(Duration::from_millis(10), Duration::from_millis(20));
        assert_eq!(
            effects,
            vec![
                cancel(WorkloadTimer::Work),
                send(NodeId(0), Msg::Lock("release")),
                cancel(WorkloadTimer::Validity),
                obs(Observation::Releases {
                    resource: "r".into()
                }),
                timer(WorkloadTimer::Think, think),
            ]
        );
        assert_eq!(w.phase, Phase::Thinking);
        // Were the cancelled work timer to fire anyway, nothing is written.
        let effects = step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        assert!(effects.is_empty());
    }

    #[test]
    fn lost_lock_while_reading_abandons_the_read() {
        let mut w = Workload::new(config());
        w.phase = Phase::Acquiring;
        step(|env| w.on_acquired(env, Some(9), None), 1);
        let effects = step(|env| w.on_lost(env, &mut FakeLock), 1);
        assert_eq!(effects[0], cancel(WorkloadTimer::Request));
        assert_eq!(
            effects[1],
            obs(Observation::Complete {
                f: "read".into(),
                key: "r".into(),
                outcome: OpOutcome::Info,
                value: OpValue::Nil
            })
        );
        assert_eq!(w.phase, Phase::Thinking);
        // The read's late reply is ignored: no work starts.
        let effects = step(
            |env| {
                w.on_resource_reply(
                    env,
                    &mut FakeLock,
                    ResourceMsg::ReadReply {
                        resource: "r".into(),
                        op: 1,
                        value: 40,
                    },
                )
            },
            1,
        );
        assert!(effects.is_empty());
    }

    #[test]
    fn lost_lock_while_writing_only_ends_the_belief() {
        let mut w = holding_after_read(40);
        step(|env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Work), 1);
        let effects = step(|env| w.on_lost(env, &mut FakeLock), 1);
        assert_eq!(
            effects,
            vec![
                cancel(WorkloadTimer::Validity),
                obs(Observation::Releases {
                    resource: "r".into()
                }),
            ]
        );
        assert_eq!(w.phase, Phase::Writing);
        // Not holding: a second loss changes nothing.
        assert!(step(|env| w.on_lost(env, &mut FakeLock), 1).is_empty());
    }

    #[test]
    fn request_timeout_gives_up_the_hold() {
        let mut w = Workload::new(config());
        w.phase = Phase::Acquiring;
        step(|env| w.on_acquired(env, None, None), 1);
        let effects = step(
            |env| w.on_timer(env, &mut FakeLock, WorkloadTimer::Request),
            1,
        );
        // The read never got a reply: its outcome is unknown.
        assert_eq!(
            effects[0],
            obs(Observation::Complete {
                f: "read".into(),
                key: "r".into(),
                outcome: OpOutcome::Info,
                value: OpValue::Nil
            })
        );
        assert_eq!(effects[1], send(NodeId(0), Msg::Lock("release")));
        assert_eq!(
            effects[3],
            obs(Observation::Releases {
                resource: "r".into()
            })
        );
        assert_eq!(w.phase, Phase::Thinking);
        assert!(!w.holding);
    }

    #[test]
    fn bad_ranges_name_the_parameter() {
        let mut c = config();
        c.think_time = (Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(c.validate().unwrap_err().field, "think_time");
        let mut c = config();
        c.backoff = BackoffPolicy::Uniform {
            min: Duration::ZERO,
            max: Duration::ZERO,
        };
        assert_eq!(c.validate().unwrap_err().field, "backoff.cap");
        let mut c = config();
        c.max_attempts = Some(0);
        assert_eq!(c.validate().unwrap_err().field, "max_attempts");
        assert!(config().validate().is_ok());
    }

    #[test]
    fn every_lock_protocol_takes_the_same_eight_workload_parameters_and_defaults() {
        use crate::etcd_lock::EtcdLockParams;
        use crate::redis_lock::LockParams;
        use crate::redlock::RedlockParams;
        let defaults = WorkloadParams::default();
        assert_eq!(LockParams::default().workload_params(), defaults);
        assert_eq!(RedlockParams::default().workload_params(), defaults);
        assert_eq!(EtcdLockParams::default().workload_params(), defaults);
        // Each reads the shared fields by the same names...
        let text = r#"{"resource": "r", "work_duration": "1s", "think_time": ["1ms", "2ms"],
            "retry_backoff": ["3ms", "4ms"], "amount": 7, "request_timeout": "5s",
            "start_stagger": "6ms"}"#;
        let want = WorkloadParams {
            resource: "r".into(),
            work_duration: HumanDuration(Duration::from_secs(1)),
            think_time: [
                HumanDuration(Duration::from_millis(1)),
                HumanDuration(Duration::from_millis(2)),
            ],
            retry_backoff: [
                HumanDuration(Duration::from_millis(3)),
                HumanDuration(Duration::from_millis(4)),
            ],
            backoff: None,
            amount: 7,
            request_timeout: HumanDuration(Duration::from_secs(5)),
            start_stagger: HumanDuration(Duration::from_millis(6)),
        };
        let lock: LockParams = serde_json::from_str(text).unwrap();
        let redlock: RedlockParams = serde_json::from_str(text).unwrap();
        let etcd: EtcdLockParams = serde_json::from_str(text).unwrap();
        assert_eq!(lock.workload_params(), want);
        assert_eq!(redlock.workload_params(), want);
        assert_eq!(etcd.workload_params(), want);
        // ...and still rejects a misspelt one, naming it.
        for err in [
            serde_json::from_str::<LockParams>(r#"{"work_duraton": "1s"}"#).unwrap_err(),
            serde_json::from_str::<RedlockParams>(r#"{"work_duraton": "1s"}"#).unwrap_err(),
            serde_json::from_str::<EtcdLockParams>(r#"{"work_duraton": "1s"}"#).unwrap_err(),
        ] {
            assert!(err.to_string().contains("work_duraton"), "{err}");
        }
        // The range checks name the parameter.
        let bad = WorkloadParams {
            think_time: want.retry_backoff,
            retry_backoff: [want.retry_backoff[1], want.retry_backoff[0]],
            ..want
        };
        assert_eq!(
            bad.config(NodeId(0), None).unwrap_err().field,
            "retry_backoff"
        );
    }

    #[test]
    fn lock_roles_are_read_once_from_the_cluster() {
        let cluster = crate::redis_lock::tests::lock_cluster();
        let roles = tenure_core::Roles::<LockRole>::of(&cluster).unwrap();
        assert_eq!(roles.get(NodeId(0)), LockRole::Server);
        assert_eq!(roles.get(NodeId(1)), LockRole::Client);
        assert_eq!(roles.get(NodeId(3)), LockRole::Storage);
        let other = Cluster::new(vec![tenure_core::RoleSpec::new("witness", 1)]).unwrap();
        let err = tenure_core::Roles::<LockRole>::of(&other).unwrap_err();
        assert_eq!(err.field, "cluster");
        assert!(err.message.contains("witness"), "{err}");
    }
}
