//! k8s-lease: Kubernetes-style leader election on a `Lease` object, as client-go's
//! `LeaderElector` does it, written the way a tenure user writes their own protocol
//! (only the `tenure` facade and serde).
//!
//! **Source read:** `kubernetes/client-go` at commit
//! `32ce75a7d6bc6960fd048d3d1e3b34185418d8c8` (the last change to
//! `tools/leaderelection/leaderelection.go` there is
//! `1b1630d32aabbda55bb6d34ba10847cb4d82e43b`): `tools/leaderelection/leaderelection.go`
//! (`NewLeaderElector`, `acquire`, `renew`, `tryAcquireOrRenew`, `isLeaseValid`,
//! `setObservedRecord`) and `tools/leaderelection/resourcelock/leaselock.go` (`Get`,
//! `Create`, `Update` carrying the Lease's `resourceVersion`).
//!
//! **Roles.** One `apiserver` (node 0): a linearizable store of one Lease with a
//! `resourceVersion`; `Get`, `Create` (fails if it exists) and `Update` (fails with a
//! conflict unless the caller's `resourceVersion` is the current one: the API server's
//! optimistic concurrency). It fsyncs every write before it answers (etcd does).
//! `candidate` nodes (default 3) run the elector.
//!
//! **How a candidate works** (`tryAcquireOrRenew`): every `RetryPeriod` (jittered up to
//! x2.2 while acquiring, as `wait.JitterUntil` with `JitterFactor` 1.2) it `Get`s the
//! Lease. Whenever the record differs from the one it last saw, it sets `observedTime`
//! to *its own monotonic clock* (`setObservedRecord`: `time.Now()` carries a monotonic
//! reading). If another holder's lease is still valid by that local reading
//! (`observedTime + leaseDurationSeconds > now`, `isLeaseValid`) it follows; otherwise
//! it `Update`s the Lease to itself with the `resourceVersion` it read, bumping
//! `leaseTransitions` on a takeover. The record's `renewTime`/`acquireTime` are wall
//! clock readings it writes but never uses to decide. A leader renews every
//! `RetryPeriod` (the fast path: `Update` with the cached record and version) and gives
//! up when `RenewDeadline` passes without a successful renewal (`renew`'s
//! `PollUntilContextTimeout`). Candidates keep nothing on disk (client-go keeps the
//! elector in memory).
//!
//! **What a leader observes.** `Leader { term }` when it acquires (the term is
//! `leaseTransitions + 1`), `Serves { term }` each time it does work as leader (at once,
//! then every `work_interval`), each time after checking its monotonic clock that the
//! renewal deadline has not passed, and `Follower` when it steps down or sees another
//! holder.
//!
//! **Two deliberate differences from client-go**, both stated so nobody mistakes them
//! for client-go's behaviour:
//! * the leader's deadline is timed from the moment it *sent* its last successful
//!   renewal, `sent + RetryPeriod + RenewDeadline` (client-go's context deadline is
//!   `RenewDeadline` after the next poll starts, `RetryPeriod` after the previous one
//!   *returned*; timing from the return lets a slow or paused response extend the
//!   leadership past what the others see, which the safety argument below cannot
//!   bound);
//! * `leaseDurationSeconds` is carried in milliseconds, so the scaled-down durations
//!   (1.5 s) are not truncated to whole seconds as client-go's
//!   `int(LeaseDuration / time.Second)` would.
//!
//! **Why it is safe** (`single-leader-at-a-time` with no tolerated overlap): a renewal
//! sent at `s` is applied at the API server at `u >= s`. Any other candidate that sees
//! that record (or a later one) sets its `observedTime` at or after `u` and waits a
//! `LeaseDuration` on its clock, i.e. at least `LD / (1 + drift)` of true time, before
//! it even sends its takeover, whose compare-and-swap fails if the leader renewed in
//! between. The leader stops acting `(RP + RD) / (1 - drift)` of true time after `s`.
//! So `(RP + RD) / (1 - drift) < LD / (1 + drift)` is the whole condition: a bound on
//! drift, and none on pauses or message delays (the check and the action are one
//! handler; the deadline is timed from the send).
//!
//! **Planted bugs** (variants): `renew-deadline-too-long` (RenewDeadline above
//! LeaseDuration, which `NewLeaderElector` rejects), `act-after-failed-renew` (the work
//! ignores the lost leadership, as an `OnStartedLeading` that does not watch its
//! context), `wall-clock-observed-time` (observedTime and every deadline on the wall
//! clock), `no-resource-version` (Update without the compare-and-swap) and
//! `transitions-on-renewal` (every renewal adds one to `leaseTransitions`: judged by this
//! crate's own checker, [`transitions`], which its promises name).

pub mod transitions;

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tenure::prelude::*;
use tenure::{Assumptions, Limit, Promise, Transport};

/// Shared by every node of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// How long a non-leader waits, on its own clock, after it last saw the record
    /// change before it may take over (client-go default 15 s).
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it gives up (default 10 s).
    pub renew_deadline: Duration,
    /// How often candidates try (default 2 s).
    pub retry_period: Duration,
    /// How often a leader does its work (`Serves`).
    pub work_interval: Duration,
    /// A request with no answer after this long is abandoned (the HTTP client's timeout).
    pub request_timeout: Duration,
    /// The planted bug, if any.
    pub bug: Bug,
}

/// What a planted bug changes in the elector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    None,
    /// The leader's work does not stop when its renewal deadline passes.
    ActAfterFailedRenew,
    /// observedTime, the validity check and the renew deadline read the wall clock.
    WallClock,
    /// Update is sent without a resourceVersion: no compare-and-swap.
    NoResourceVersion,
    /// A renewal counts as a transition (leaseTransitions + 1 on every write).
    TransitionsOnRenewal,
}

impl Config {
    /// client-go's 15 s / 10 s / 2 s, scaled down by ten.
    pub fn correct() -> Config {
        Config {
            lease_duration: Duration::from_millis(1500),
            renew_deadline: Duration::from_millis(1000),
            retry_period: Duration::from_millis(200),
            work_interval: Duration::from_millis(100),
            request_timeout: Duration::from_millis(500),
            bug: Bug::None,
        }
    }

    pub fn variant(variant: LeaseVariant) -> Config {
        let correct = Config::correct();
        match variant {
            LeaseVariant::Correct => correct,
            LeaseVariant::RenewDeadlineTooLong => Config {
                renew_deadline: Duration::from_millis(2000),
                ..correct
            },
            LeaseVariant::ActAfterFailedRenew => Config {
                bug: Bug::ActAfterFailedRenew,
                ..correct
            },
            LeaseVariant::WallClockObservedTime => Config {
                bug: Bug::WallClock,
                ..correct
            },
            LeaseVariant::NoResourceVersion => Config {
                bug: Bug::NoResourceVersion,
                ..correct
            },
            LeaseVariant::TransitionsOnRenewal => Config {
                bug: Bug::TransitionsOnRenewal,
                ..correct
            },
        }
    }

    /// The timings the assumptions are derived from: these, or, where RenewDeadline
    /// breaks `NewLeaderElector`'s rule (the planted `renew-deadline-too-long`), the
    /// correct RenewDeadline: the bug is judged within what its correct twin assumes.
    pub fn designed(&self) -> Config {
        let mut c = self.clone();
        if c.renew_deadline + c.retry_period >= c.lease_duration {
            c.renew_deadline = Config::correct().renew_deadline;
        }
        c
    }

    /// The largest drift the safety argument allows:
    /// `(RP + RD) / (1 - d) < LD / (1 + d)` iff `d < (LD - RP - RD) / (LD + RP + RD)`.
    pub fn drift_bound(&self) -> f64 {
        let held = (self.retry_period + self.renew_deadline).as_secs_f64();
        let ld = self.lease_duration.as_secs_f64();
        ((ld - held) / (ld + held)).max(0.0)
    }

    /// The drift declared: 90% of the bound, rounded down to a thousandth.
    pub fn max_drift(&self) -> f64 {
        (self.drift_bound() * 0.9 * 1000.0).floor() / 1000.0
    }
}

/// The Lease's spec, as `LeaderElectionRecord` (durations in milliseconds, times as
/// wall-clock nanoseconds of the writer).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LeaseRecord {
    pub holder: Option<NodeId>,
    pub lease_duration_ms: u64,
    pub acquire_time: i64,
    pub renew_time: i64,
    pub transitions: u64,
}

/// A request to the API server.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Get,
    Create(LeaseRecord),
    /// `rv: None` is an unconditional update (no optimistic concurrency).
    Update {
        record: LeaseRecord,
        rv: Option<u64>,
    },
}

/// The API server's answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// The Lease and its resourceVersion (`Get`, or a successful write).
    Lease(LeaseRecord, u64),
    NotFound,
    /// 409: it exists (`Create`) or the resourceVersion is stale (`Update`).
    Conflict,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    Request { id: u64, op: Op },
    Reply { id: u64, answer: Answer },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// The elector's next try (acquire or renew).
    Retry,
    /// The leader's next piece of work.
    Work,
}

/// A request in flight: what it was and when it was sent (elector clock).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pending {
    pub id: u64,
    pub op: Op,
    pub sent: i64,
}

/// The elector's state (candidates only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Elector {
    /// The last record seen, its resourceVersion, and when it was first seen (elector
    /// clock, nanoseconds): `observedRecord`, `ll.lease.ResourceVersion`, `observedTime`.
    pub observed: Option<(LeaseRecord, u64)>,
    pub observed_time: i64,
    /// Leading: the term, and the elector-clock instant its leadership ends unless renewed.
    pub leading: Option<(u64, i64)>,
    /// The term whose work continues regardless (the `act-after-failed-renew` bug).
    pub working: Option<u64>,
    /// The follower belief last observed, so it is observed only when it changes.
    pub following: Option<(u64, Option<NodeId>)>,
    pub pending: Option<Pending>,
    pub next_id: u64,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::large_enum_variant)] // three candidates to one server; no boxing needed
pub enum K8sLease {
    ApiServer {
        lease: Option<(LeaseRecord, u64)>,
    },
    Candidate {
        config: Config,
        me: NodeId,
        apiserver: NodeId,
        e: Elector,
    },
}

type E<'a> = &'a mut dyn Env<Msg, Timer>;

const LEASE_KEY: &str = "lease";

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

impl Elector {
    fn fresh() -> Elector {
        Elector {
            observed: None,
            observed_time: 0,
            leading: None,
            working: None,
            following: None,
            pending: None,
            next_id: 0,
        }
    }
}

/// The candidate's logic, over its fields.
struct Cand<'a> {
    config: &'a Config,
    me: NodeId,
    apiserver: NodeId,
    e: &'a mut Elector,
}

impl Cand<'_> {
    /// The elector's clock: monotonic, or the wall clock with the planted bug.
    fn now(&self, env: E<'_>) -> i64 {
        match self.config.bug {
            Bug::WallClock => env.wall().0,
            _ => env.monotonic().0,
        }
    }

    /// `isLeaseValid`: the observed record's lease runs until observedTime + its duration.
    fn lease_valid(&self, now: i64) -> bool {
        match &self.e.observed {
            Some((r, _)) => {
                let ld = nanos(Duration::from_millis(r.lease_duration_ms));
                self.e.observed_time.saturating_add(ld) > now
            }
            None => false,
        }
    }

    fn is_holder(&self) -> bool {
        matches!(&self.e.observed, Some((r, _)) if r.holder == Some(self.me))
    }

    /// `setObservedRecord` when the record changed: the record, and now.
    fn observe_record(&mut self, env: E<'_>, record: LeaseRecord, rv: u64) {
        let changed = self.e.observed.as_ref().map(|(r, _)| r) != Some(&record);
        if changed {
            self.e.observed_time = self.now(env);
        }
        self.e.observed = Some((record, rv));
    }

    fn schedule_retry(&self, env: E<'_>) {
        let rp = self.config.retry_period;
        let after = if self.e.leading.is_some() {
            rp // wait.Until: no jitter
        } else {
            // wait.JitterUntil with JitterFactor 1.2: RP + rand * 1.2 * RP
            env.duration_between(rp, rp + rp.mul_f64(1.2))
        };
        env.set_timer(Timer::Retry, after);
    }

    fn send(&mut self, env: E<'_>, op: Op) {
        self.e.next_id += 1;
        let id = self.e.next_id;
        let sent = self.now(env);
        self.e.pending = Some(Pending {
            id,
            op: op.clone(),
            sent,
        });
        env.send(self.apiserver, Msg::Request { id, op });
    }

    /// The record this candidate writes: itself as holder, now as renewTime.
    fn my_record(&self, env: E<'_>, old: Option<&LeaseRecord>) -> LeaseRecord {
        let wall = env.wall().0;
        let mine = old.is_some_and(|r| r.holder == Some(self.me));
        LeaseRecord {
            holder: Some(self.me),
            lease_duration_ms: self.config.lease_duration.as_millis() as u64,
            acquire_time: match old {
                Some(r) if mine => r.acquire_time,
                _ => wall,
            },
            renew_time: wall,
            transitions: match old {
                Some(r) if mine && self.config.bug == Bug::TransitionsOnRenewal => {
                    r.transitions + 1
                }
                Some(r) if mine => r.transitions,
                Some(r) => r.transitions + 1,
                None => 0,
            },
        }
    }

    fn update(&mut self, env: E<'_>, record: LeaseRecord, rv: u64) {
        let rv = match self.config.bug {
            Bug::NoResourceVersion => None,
            _ => Some(rv),
        };
        self.send(env, Op::Update { record, rv });
    }

    /// One try of `tryAcquireOrRenew`: the leader's fast path, else a Get.
    fn try_acquire_or_renew(&mut self, env: E<'_>) {
        let now = self.now(env);
        if let Some(p) = &self.e.pending {
            if now.saturating_sub(p.sent) < nanos(self.config.request_timeout) {
                return; // the call is still blocked
            }
            self.e.pending = None; // timed out
        }
        if self.is_holder() && self.lease_valid(now) {
            let (old, rv) = self.e.observed.clone().expect("holder implies observed");
            let record = self.my_record(env, Some(&old));
            self.update(env, record, rv);
        } else {
            self.send(env, Op::Get);
        }
    }

    fn on_retry(&mut self, env: E<'_>) {
        let now = self.now(env);
        if let Some((_, until)) = self.e.leading {
            if now >= until {
                self.step_down(env);
            }
        }
        self.try_acquire_or_renew(env);
        self.schedule_retry(env);
    }

    fn step_down(&mut self, env: E<'_>) {
        let Some((term, _)) = self.e.leading.take() else {
            return;
        };
        if self.config.bug == Bug::ActAfterFailedRenew {
            // The work goroutine does not watch its context: it goes on.
            self.e.working = Some(term);
        } else {
            env.cancel_timer(&Timer::Work);
        }
        self.e.following = Some((term, None));
        env.observe(Observation::Follower { term, leader: None });
    }

    /// Someone else holds the lease: follow it (observed once per holder and term).
    fn follow(&mut self, env: E<'_>, record: &LeaseRecord) {
        if self.e.leading.is_some() {
            self.step_down(env);
        }
        self.e.working = None;
        env.cancel_timer(&Timer::Work);
        let belief = (record.transitions + 1, record.holder);
        if self.e.following != Some(belief) {
            self.e.following = Some(belief);
            env.observe(Observation::Follower {
                term: belief.0,
                leader: belief.1,
            });
        }
    }

    fn on_work(&mut self, env: E<'_>) {
        let now = self.now(env);
        match self.e.leading {
            Some((term, until)) if now < until => {
                env.observe(Observation::Serves { term });
                env.set_timer(Timer::Work, self.config.work_interval);
            }
            Some(_) => {
                self.step_down(env);
                if let Some(term) = self.e.working {
                    env.observe(Observation::Serves { term });
                    env.set_timer(Timer::Work, self.config.work_interval);
                }
            }
            None => {
                if let Some(term) = self.e.working {
                    env.observe(Observation::Serves { term });
                    env.set_timer(Timer::Work, self.config.work_interval);
                }
            }
        }
    }

    fn on_reply(&mut self, env: E<'_>, id: u64, answer: Answer) {
        let Some(pending) = self.e.pending.take_if(|p| p.id == id) else {
            return; // an abandoned call's late answer
        };
        let now = self.now(env);
        match (pending.op, answer) {
            (Op::Get, Answer::NotFound) => {
                // Create it (transitions 0), `tryAcquireOrRenew` step 2.
                let record = self.my_record(env, None);
                self.send(env, Op::Create(record));
            }
            (Op::Get, Answer::Lease(record, rv)) => {
                self.observe_record(env, record.clone(), rv);
                let held_by_other = record.holder.is_some_and(|h| h != self.me);
                if held_by_other && self.lease_valid(now) {
                    self.follow(env, &record);
                    return;
                }
                let mine = self.my_record(env, Some(&record));
                self.update(env, mine, rv);
            }
            (Op::Create(record) | Op::Update { record, .. }, Answer::Lease(_, rv)) => {
                self.e.observed = Some((record.clone(), rv));
                self.e.observed_time = now;
                self.won(env, record.transitions + 1, pending.sent);
            }
            (Op::Update { .. }, Answer::Conflict | Answer::NotFound) => {
                // The fast path failed (or a takeover lost the race): Get at once.
                self.send(env, Op::Get);
            }
            (Op::Create(_), _) | (Op::Get, Answer::Conflict) => {} // next try Gets
        }
    }

    /// A successful write sent at `sent`: leading until `sent + RP + RD`.
    fn won(&mut self, env: E<'_>, term: u64, sent: i64) {
        let until =
            sent.saturating_add(nanos(self.config.retry_period + self.config.renew_deadline));
        let was = self.e.leading.map(|(t, _)| t);
        self.e.leading = Some((term, until));
        self.e.working = None;
        self.e.following = None;
        if was != Some(term) {
            env.observe(Observation::Leader { term });
            // It acts at once (OnStartedLeading), then every work interval.
            self.on_work(env);
            self.schedule_retry(env);
        }
    }

    /// The connection reset: the blocked call returns an error; the next try starts
    /// a new one.
    fn on_disconnect(&mut self) {
        self.e.pending = None;
    }
}

impl K8sLease {
    fn cand(&mut self) -> Option<Cand<'_>> {
        match self {
            K8sLease::Candidate {
                config,
                me,
                apiserver,
                e,
            } => Some(Cand {
                config,
                me: *me,
                apiserver: *apiserver,
                e,
            }),
            K8sLease::ApiServer { .. } => None,
        }
    }

    /// Writes the Lease with the next resourceVersion, durably, before answering.
    fn write(
        lease: &mut Option<(LeaseRecord, u64)>,
        env: E<'_>,
        record: LeaseRecord,
    ) -> Option<Answer> {
        let rv = lease.as_ref().map_or(1, |(_, rv)| rv + 1);
        let before = lease.replace((record.clone(), rv));
        if env.store_synced(LEASE_KEY, &*lease).is_err() {
            // The disk failed: nothing changed, and no answer (the client times out).
            env.store(LEASE_KEY, &before);
            *lease = before;
            return None;
        }
        // What it committed, for `lease-transitions` (this crate's own checker).
        if let Some(holder) = record.holder {
            env.observe(
                Observation::structured(transitions::WRITE)
                    .with("holder", holder)
                    .with(
                        "transitions",
                        i64::try_from(record.transitions).unwrap_or(i64::MAX),
                    ),
            );
        }
        Some(Answer::Lease(record, rv))
    }

    fn serve(lease: &mut Option<(LeaseRecord, u64)>, env: E<'_>, from: NodeId, id: u64, op: Op) {
        let answer = match op {
            Op::Get => match lease {
                Some((r, rv)) => Some(Answer::Lease(r.clone(), *rv)),
                None => Some(Answer::NotFound),
            },
            Op::Create(record) => match lease {
                Some(_) => Some(Answer::Conflict),
                None => K8sLease::write(lease, env, record),
            },
            Op::Update { record, rv } => match (&lease, rv) {
                (None, _) => Some(Answer::NotFound),
                (Some((_, current)), Some(rv)) if rv != *current => Some(Answer::Conflict),
                _ => K8sLease::write(lease, env, record),
            },
        };
        if let Some(answer) = answer {
            env.send(from, Msg::Reply { id, answer });
        }
    }
}

impl Protocol for K8sLease {
    type Msg = Msg;
    type Timer = Timer;
    type Config = LeaseConfig;

    fn new(config: &LeaseConfig, me: NodeId, _cluster: &Cluster) -> K8sLease {
        match config.roles.get(me) {
            LeaseRole::Apiserver => K8sLease::ApiServer { lease: None },
            LeaseRole::Candidate => K8sLease::Candidate {
                config: config.elector.clone(),
                me,
                apiserver: config.apiserver,
                e: Elector::fresh(),
            },
        }
    }

    fn on_start(&mut self, env: E<'_>) {
        match self {
            K8sLease::ApiServer { lease } => {
                *lease = env.load(LEASE_KEY).unwrap_or_default();
                // A crash can leave a write whose fsync never completed: make what it
                // read durable before it serves it (a power loss must not take back a
                // resourceVersion a client has seen). A failed sync is retried by the
                // next write's.
                let _ = env.sync();
            }
            K8sLease::Candidate { .. } => {
                env.observe(Observation::Follower {
                    term: 0,
                    leader: None,
                });
                let mut c = self.cand().expect("a candidate");
                c.try_acquire_or_renew(env);
                c.schedule_retry(env);
            }
        }
    }

    fn on_message(&mut self, env: E<'_>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (K8sLease::ApiServer { lease }, Msg::Request { id, op }) => {
                K8sLease::serve(lease, env, from, id, op)
            }
            (me @ K8sLease::Candidate { .. }, Msg::Reply { id, answer }) => {
                me.cand().expect("a candidate").on_reply(env, id, answer)
            }
            _ => {} // nobody else talks to these roles
        }
    }

    fn on_timer(&mut self, env: E<'_>, timer: Timer) {
        let Some(mut c) = self.cand() else {
            return;
        };
        match timer {
            Timer::Retry => c.on_retry(env),
            Timer::Work => c.on_work(env),
        }
    }

    fn on_disconnect(&mut self, _env: E<'_>, _peer: NodeId) {
        if let Some(mut c) = self.cand() {
            c.on_disconnect();
        }
    }
}

/// A run's configuration: the elector's, and who plays which role.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaseConfig {
    pub elector: Config,
    pub roles: Roles<LeaseRole>,
    pub apiserver: NodeId,
}

impl LeaseConfig {
    /// `config` on `cluster` (which must have exactly one `apiserver`).
    pub fn new(elector: Config, cluster: &Cluster) -> Result<LeaseConfig, ParamError> {
        let roles: Roles<LeaseRole> = Roles::of(cluster)?;
        let servers: Vec<NodeId> = cluster
            .nodes()
            .filter(|&n| roles.get(n) == LeaseRole::Apiserver)
            .collect();
        let [apiserver] = servers[..] else {
            return Err(ParamError::new(
                "cluster",
                "k8s-lease needs exactly one apiserver",
            ));
        };
        Ok(LeaseConfig {
            elector,
            roles,
            apiserver,
        })
    }
}

/// The default cluster: one API server and `candidates` candidates.
pub fn cluster(candidates: u32) -> Cluster {
    Cluster::new(vec![
        RoleSpec::new("apiserver", 1),
        RoleSpec::new("candidate", candidates),
    ])
    .expect("a valid cluster")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseRole {
    Apiserver,
    Candidate,
}

impl Variant for LeaseRole {
    fn all() -> &'static [LeaseRole] {
        &[LeaseRole::Apiserver, LeaseRole::Candidate]
    }
}

impl std::fmt::Display for LeaseRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LeaseRole::Apiserver => "apiserver",
            LeaseRole::Candidate => "candidate",
        })
    }
}

/// The variants a scenario can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseVariant {
    Correct,
    RenewDeadlineTooLong,
    ActAfterFailedRenew,
    WallClockObservedTime,
    NoResourceVersion,
    TransitionsOnRenewal,
}

impl Variant for LeaseVariant {
    fn all() -> &'static [LeaseVariant] {
        &[
            LeaseVariant::Correct,
            LeaseVariant::RenewDeadlineTooLong,
            LeaseVariant::ActAfterFailedRenew,
            LeaseVariant::WallClockObservedTime,
            LeaseVariant::NoResourceVersion,
            LeaseVariant::TransitionsOnRenewal,
        ]
    }
}

impl std::fmt::Display for LeaseVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LeaseVariant::Correct => "correct",
            LeaseVariant::RenewDeadlineTooLong => "renew-deadline-too-long",
            LeaseVariant::ActAfterFailedRenew => "act-after-failed-renew",
            LeaseVariant::WallClockObservedTime => "wall-clock-observed-time",
            LeaseVariant::NoResourceVersion => "no-resource-version",
            LeaseVariant::TransitionsOnRenewal => "transitions-on-renewal",
        })
    }
}

/// Scenario parameters (`[protocol.params]`), as durations (`"1500ms"`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub lease_duration: Option<HumanDuration>,
    pub renew_deadline: Option<HumanDuration>,
    pub retry_period: Option<HumanDuration>,
    pub work_interval: Option<HumanDuration>,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "k8s-lease",
    "Kubernetes leader election on a Lease object (client-go's LeaderElector) over a compare-and-swap API server",
    &[
        RoleInfo::new(
            "apiserver",
            "stores the Lease; Update only if the resourceVersion matches",
            1,
        ),
        RoleInfo::new("candidate", "runs the elector: acquires, renews, acts as leader", 3),
    ],
    &[
        VariantInfo::new("correct", "client-go's elector, monotonic clock, 1.5s/1s/200ms"),
        VariantInfo::new(
            "renew-deadline-too-long",
            "RenewDeadline 2s above LeaseDuration 1.5s (NewLeaderElector rejects it): a cut-off leader acts after others took over",
        )
        .with_breaks(&["single-leader-at-a-time"]),
        VariantInfo::new(
            "act-after-failed-renew",
            "the leader's work goes on after its renew deadline passed (OnStartedLeading ignoring its context)",
        )
        .with_breaks(&["single-leader-at-a-time"]),
        VariantInfo::new(
            "wall-clock-observed-time",
            "observedTime and deadlines on the wall clock: a clock step expires a live lease",
        )
        .with_breaks(&["single-leader-at-a-time"]),
        VariantInfo::new(
            "no-resource-version",
            "Update without the resourceVersion: two takeovers of one lease both succeed, and a stale write miscounts leaseTransitions",
        )
        .with_breaks(&["single-leader-per-term", "lease-transitions"]),
        VariantInfo::new(
            "transitions-on-renewal",
            "every renewal adds one to leaseTransitions: the count no longer says how often the holder changed (judged by this crate's own checker)",
        )
        .with_breaks(&["lease-transitions"]),
    ],
);

impl Configurable for K8sLease {
    type Params = Params;
    type Variant = LeaseVariant;
    type Role = LeaseRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: Params,
        variant: LeaseVariant,
        cluster: &Cluster,
    ) -> Result<LeaseConfig, ParamError> {
        let mut c = Config::variant(variant);
        if let Some(d) = params.lease_duration {
            c.lease_duration = d.0;
        }
        if let Some(d) = params.renew_deadline {
            c.renew_deadline = d.0;
        }
        if let Some(d) = params.retry_period {
            c.retry_period = d.0;
        }
        if let Some(d) = params.work_interval {
            c.work_interval = d.0;
        }
        if c.retry_period.is_zero() || c.work_interval.is_zero() {
            return Err(ParamError::new("retry_period", "must be above zero"));
        }
        // NewLeaderElector's checks, for the variants that do not plant a violation of them.
        if variant != LeaseVariant::RenewDeadlineTooLong {
            if c.lease_duration <= c.renew_deadline {
                return Err(ParamError::new(
                    "lease_duration",
                    "leaseDuration must be greater than renewDeadline",
                ));
            }
            if c.renew_deadline <= c.retry_period.mul_f64(1.2) {
                return Err(ParamError::new(
                    "renew_deadline",
                    "renewDeadline must be greater than retryPeriod*JitterFactor",
                ));
            }
        }
        c.request_timeout = c.renew_deadline / 2;
        LeaseConfig::new(c, cluster)
    }

    /// The model checker's view (`check-model --protocol k8s-lease`): timers fire in
    /// any order and time only leaps (every clock past every deadline at once), so the
    /// drift bound the safety argument needs holds trivially (all clocks move
    /// together) and what is left is the logic: who acts after which leap. Two leaps
    /// are enough for a takeover (the contender first sees the record, then waits a
    /// lease duration on its own clock).
    fn model() -> Result<tenure::model::ModelSpec, &'static str> {
        use tenure::model::{Bounds, ClockModel, ModelSpec};
        Ok(ModelSpec::new(
            "one API server and two candidates; timers fire in any order, every clock \
             leaps past every deadline at most twice, no message lost",
            &[("apiserver", 1), ("candidate", 2)],
        )
        .with_out_of_scope(&[
            (
                "wall-clock-observed-time",
                "a wall-clock step that moves one node's clock alone: the model's \
                 clocks only leap together",
            ),
            (
                "renew-deadline-too-long",
                "its overlap lasts for the difference between two durations; a \
                 leap passes every deadline at once, so the model cannot order them",
            ),
        ])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(24)
                .with_max_leaps(2)
                .with_clock(ClockModel::Frozen),
        )
        .with_checks(&[
            "single-leader-at-a-time",
            "single-leader-per-term",
            transitions::NAME,
        ]))
    }

    fn transport() -> Transport {
        // client-go talks HTTP/2 over TCP to the API server.
        Transport::Stream
    }

    fn promises(config: &LeaseConfig, _cluster: &Cluster) -> Vec<Promise> {
        let e = &config.elector;
        let f = tenure::format_duration;
        let drift = e.designed().max_drift();
        let latency = e.retry_period / 2;
        // After the calm: the others saw the record at the latest at calm_from; they wait
        // a lease duration, notice within a jittered retry (2.2 x RP), and a lost race
        // or a stepped-down leader costs up to RD + RP and two more jittered retries.
        let base =
            e.lease_duration + e.renew_deadline + e.retry_period + e.retry_period.mul_f64(6.6);
        let within = base.div_f64(1.0 - drift) + latency * 4;
        let derivation = format!(
            "(lease {} + renew deadline {} + retry {} + 3 x 2.2 x retry) / (1 - max drift {drift}) + 4 x max latency {}",
            f(e.lease_duration),
            f(e.renew_deadline),
            f(e.retry_period),
            f(latency)
        );
        vec![
            Promise::new("single-leader-at-a-time").with("max_overlap", "0s"),
            Promise::new("single-leader-per-term"),
            // This crate's own checker: registered by its command line
            // (`src/bin/k8s-lease.rs`), or by `tenure::register_checker` in a test.
            Promise::new(transitions::NAME),
            Promise::new("leader-liveness")
                .within(within, derivation)
                .with("role", "candidate"),
        ]
    }

    fn assumptions(config: &LeaseConfig) -> Assumptions {
        // Declared from the correct configuration's parameters: a planted bug is judged
        // within the assumptions its correct twin is designed for.
        let c = config.elector.designed();
        let f = tenure::format_duration;
        Assumptions::new()
            .with_max_drift(Limit::new(
                c.max_drift(),
                format!(
                    "a leader acts until (retry {} + renew deadline {}) / (1 - d) after its renewal, others wait lease {} / (1 + d): safe for d < {:.3}, declared 90% of it",
                    f(c.retry_period),
                    f(c.renew_deadline),
                    f(c.lease_duration),
                    c.drift_bound()
                ),
            ))
            .with_max_latency(Limit::new(
                c.retry_period / 2,
                format!(
                    "for liveness a renewal's round trip (2 x latency) fits in a retry period {}, well within the renew deadline {}",
                    f(c.retry_period),
                    f(c.renew_deadline)
                ),
            ))
    }
}

/// This crate's catalogue: what its `k8s-lease` binary runs from a scenario file.
pub struct LeaseProtocols;

impl Catalogue for LeaseProtocols {
    fn visit<V: Visitor>(&self, v: &mut V) {
        v.visit::<K8sLease>();
    }
}

#[cfg(test)]
mod tests {
    //! Handlers in isolation: effects asserted exactly, no simulator.
    use super::*;
    use tenure::{Effect, StepHost};

    const MS: i64 = 1_000_000;

    fn node(variant: LeaseVariant, me: u32) -> (K8sLease, Cluster) {
        let cluster = cluster(3);
        let config = K8sLease::configure(Params::default(), variant, &cluster).unwrap();
        (K8sLease::new(&config, NodeId(me), &cluster), cluster)
    }

    fn record(holder: u32, transitions: u64) -> LeaseRecord {
        LeaseRecord {
            holder: Some(NodeId(holder)),
            lease_duration_ms: 1500,
            acquire_time: 0,
            renew_time: 0,
            transitions,
        }
    }

    fn reply(id: u64, answer: Answer) -> Msg {
        Msg::Reply { id, answer }
    }

    #[test]
    fn the_api_server_updates_only_at_the_current_resource_version() {
        let (mut s, cluster) = node(LeaseVariant::Correct, 0);
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut step = host.step();
        s.on_start(&mut step);
        let create = Op::Create(record(1, 0));
        s.on_message(&mut step, NodeId(1), Msg::Request { id: 1, op: create });
        let stale = Op::Update {
            record: record(2, 1),
            rv: Some(0),
        };
        s.on_message(&mut step, NodeId(2), Msg::Request { id: 7, op: stale });
        let current = Op::Update {
            record: record(2, 1),
            rv: Some(1),
        };
        s.on_message(&mut step, NodeId(2), Msg::Request { id: 8, op: current });
        let sent: Vec<_> = step
            .sent()
            .into_iter()
            .map(|(to, m)| (to, m.clone()))
            .collect();
        assert_eq!(
            sent,
            vec![
                (NodeId(1), reply(1, Answer::Lease(record(1, 0), 1))),
                (NodeId(2), reply(7, Answer::Conflict)),
                (NodeId(2), reply(8, Answer::Lease(record(2, 1), 2))),
            ]
        );
        // Every write is synced before its answer.
        let syncs = step
            .effects
            .iter()
            .filter(|e| matches!(e, Effect::Sync { ok: true }))
            .count();
        assert_eq!(syncs, 3, "one at start, one per write");
    }

    #[test]
    fn the_lease_survives_an_api_server_power_loss() {
        let (mut s, cluster) = node(LeaseVariant::Correct, 0);
        let mut host = StepHost::new(NodeId(0), &cluster);
        let op = Op::Create(record(1, 0));
        s.on_message(&mut host.step(), NodeId(1), Msg::Request { id: 1, op });
        host.power_loss();
        let (mut restarted, _) = node(LeaseVariant::Correct, 0);
        let mut step = host.step();
        restarted.on_start(&mut step);
        restarted.on_message(&mut step, NodeId(2), Msg::Request { id: 2, op: Op::Get });
        assert_eq!(
            step.sent(),
            vec![(NodeId(2), &reply(2, Answer::Lease(record(1, 0), 1)))]
        );
    }

    /// A candidate that sees another holder's record follows it until a LeaseDuration
    /// has passed on its monotonic clock since the record last changed, then takes
    /// over with the resourceVersion it read and one more transition.
    #[test]
    fn a_candidate_takes_over_only_after_a_lease_duration_on_its_monotonic_clock() {
        let (mut c, cluster) = node(LeaseVariant::Correct, 2);
        let mut host = StepHost::new(NodeId(2), &cluster);
        c.on_start(&mut host.step()); // sends Get (id 1)
        host.monotonic = LocalTime(100 * MS);
        let mut step = host.step();
        c.on_message(
            &mut step,
            NodeId(0),
            reply(1, Answer::Lease(record(1, 4), 9)),
        );
        assert_eq!(
            step.observed(),
            vec![&Observation::Follower {
                term: 5,
                leader: Some(NodeId(1))
            }]
        );
        assert_eq!(step.sent(), vec![]);

        // 1.5 s later by its clock, the same record: expired; a wall-clock step means
        // nothing to it.
        host.monotonic = LocalTime(1600 * MS + 1);
        host.wall = LocalTime(-30_000 * MS);
        let mut step = host.step();
        c.on_timer(&mut step, Timer::Retry); // Get (id 2)
        c.on_message(
            &mut step,
            NodeId(0),
            reply(2, Answer::Lease(record(1, 4), 9)),
        );
        let sent: Vec<_> = step.sent().into_iter().map(|(_, m)| m.clone()).collect();
        let takeover = Op::Update {
            record: LeaseRecord {
                holder: Some(NodeId(2)),
                lease_duration_ms: 1500,
                acquire_time: -30_000 * MS,
                renew_time: -30_000 * MS,
                transitions: 5,
            },
            rv: Some(9),
        };
        assert_eq!(
            sent,
            vec![
                Msg::Request { id: 2, op: Op::Get },
                Msg::Request {
                    id: 3,
                    op: takeover
                }
            ]
        );
    }

    /// With the planted wall-clock bug the same record expires when the wall clock
    /// steps forward, a moment after it was observed.
    #[test]
    fn the_wall_clock_bug_takes_over_after_a_clock_step() {
        let (mut c, cluster) = node(LeaseVariant::WallClockObservedTime, 2);
        let mut host = StepHost::new(NodeId(2), &cluster);
        c.on_start(&mut host.step());
        c.on_message(
            &mut host.step(),
            NodeId(0),
            reply(1, Answer::Lease(record(1, 4), 9)),
        );
        host.monotonic = LocalTime(300 * MS);
        host.wall = LocalTime(20_000 * MS);
        let mut step = host.step();
        c.on_timer(&mut step, Timer::Retry);
        c.on_message(
            &mut step,
            NodeId(0),
            reply(2, Answer::Lease(record(1, 4), 9)),
        );
        assert!(
            step.sent().iter().any(|(_, m)| matches!(
                m,
                Msg::Request {
                    op: Op::Update { .. },
                    ..
                }
            )),
            "{:?}",
            step.effects
        );
    }

    /// A leader acts at once when it wins, then only while its deadline (renewal sent +
    /// RetryPeriod + RenewDeadline) has not passed; past it, it steps down and stops.
    #[test]
    fn a_leader_acts_only_before_its_renew_deadline() {
        let (mut c, cluster) = node(LeaseVariant::Correct, 1);
        let mut host = StepHost::new(NodeId(1), &cluster);
        c.on_start(&mut host.step()); // Get, id 1, sent at 0
        c.on_message(&mut host.step(), NodeId(0), reply(1, Answer::NotFound)); // Create id 2 at 0
        let mut step = host.step();
        c.on_message(
            &mut step,
            NodeId(0),
            reply(2, Answer::Lease(record(1, 0), 1)),
        );
        assert_eq!(
            step.observed(),
            vec![
                &Observation::Leader { term: 1 },
                &Observation::Serves { term: 1 }
            ]
        );
        host.monotonic = LocalTime(1199 * MS);
        let mut step = host.step();
        c.on_timer(&mut step, Timer::Work);
        assert_eq!(step.observed(), vec![&Observation::Serves { term: 1 }]);
        host.monotonic = LocalTime(1200 * MS);
        let mut step = host.step();
        c.on_timer(&mut step, Timer::Work);
        assert_eq!(
            step.observed(),
            vec![&Observation::Follower {
                term: 1,
                leader: None
            }]
        );
        assert!(step
            .effects
            .contains(&Effect::CancelTimer { timer: Timer::Work }));
    }

    /// The planted bug: past the deadline it steps down but its work goes on.
    #[test]
    fn the_act_after_failed_renew_bug_serves_past_its_deadline() {
        let (mut c, cluster) = node(LeaseVariant::ActAfterFailedRenew, 1);
        let mut host = StepHost::new(NodeId(1), &cluster);
        c.on_start(&mut host.step());
        c.on_message(&mut host.step(), NodeId(0), reply(1, Answer::NotFound));
        c.on_message(
            &mut host.step(),
            NodeId(0),
            reply(2, Answer::Lease(record(1, 0), 1)),
        );
        host.monotonic = LocalTime(5000 * MS);
        let mut step = host.step();
        c.on_timer(&mut step, Timer::Work);
        assert_eq!(
            step.observed(),
            vec![
                &Observation::Follower {
                    term: 1,
                    leader: None
                },
                &Observation::Serves { term: 1 }
            ]
        );
    }

    #[test]
    fn without_the_resource_version_an_update_is_unconditional() {
        let (mut c, cluster) = node(LeaseVariant::NoResourceVersion, 2);
        let mut host = StepHost::new(NodeId(2), &cluster);
        c.on_start(&mut host.step());
        let mut step = host.step();
        let vacant = LeaseRecord {
            holder: None,
            ..record(1, 3)
        };
        c.on_message(&mut step, NodeId(0), reply(1, Answer::Lease(vacant, 9)));
        assert!(
            matches!(
                step.sent()[..],
                [(
                    _,
                    Msg::Request {
                        op: Op::Update { rv: None, .. },
                        ..
                    }
                )]
            ),
            "{:?}",
            step.effects
        );
    }

    #[test]
    fn configure_applies_client_gos_checks() {
        let cluster = cluster(3);
        let params = Params {
            renew_deadline: Some(HumanDuration(Duration::from_millis(1500))),
            ..Params::default()
        };
        let err = K8sLease::configure(params, LeaseVariant::Correct, &cluster).unwrap_err();
        assert_eq!(
            err.message,
            "leaseDuration must be greater than renewDeadline"
        );
        let two_servers = Cluster::new(vec![
            RoleSpec::new("apiserver", 2),
            RoleSpec::new("candidate", 1),
        ])
        .unwrap();
        let err = K8sLease::configure(Params::default(), LeaseVariant::Correct, &two_servers)
            .unwrap_err();
        assert_eq!(err.field, "cluster");
    }

    #[test]
    fn the_declared_drift_follows_from_the_timings() {
        let c = Config::correct();
        // (1.5 - 1.2) / (1.5 + 1.2) = 0.111
        assert!((c.drift_bound() - 0.3 / 2.7).abs() < 1e-9);
        assert_eq!(c.max_drift(), 0.1);
    }
}
