//! Leader leases granted by a majority, with voter promises and a drift margin.
//!
//! **Promise.** At most one node acts on a valid lease at any true instant (the
//! `lease-safety` checker: the leaseholder serves a lease read every `serve_interval`,
//! observed as `Serves`, after checking by its clock that its lease still runs), and at
//! most one node leads each term. A leader paused past its lease keeps *believing* in
//! it through the pause (`lease-safety-belief` shows the overlap), but on waking it
//! checks its clock before serving and steps down: it never *acts* on the old lease. A gap with no leader
//! (after a leader dies, until its lease has run out) is fine; two leaders never are.
//!
//! **How.** Every server is a voter. A candidate (or the leader, to renew) notes the
//! time it *sent* `RequestLease` and asks every server. A voter grants when it has no
//! unexpired promise to another node, and then promises by its own *monotonic* clock not
//! to grant anyone else for `lease_duration` from when it received the request. With
//! grants from a majority the requester holds the lease until
//! `sent_at + lease_duration - margin` by its own monotonic clock, where
//! `margin = lease_duration * 2 * max_drift + 10ms` covers a slow leader clock against a
//! fast voter clock (the constant covers timer granularity). Any two majorities share a
//! voter, and that voter only grants the next leader once its promise ran out, which is
//! after the old leader's lease ended: a new leader waits out the old lease. A voter's
//! promises are volatile, so a (re)started server grants nothing for one
//! `lease_duration` (its quiet period). Term and vote are durable: one grant per voter
//! per term. A candidate whose attempt cannot win (a split vote) or runs out of time
//! releases the voters that granted it (it never acts on that attempt) and steps back for
//! a random moment; a refusal because of a *leader's* lease says how long it has left, so
//! candidates come back just after it.
//!
//! **Handing over (the workload).** A leader releases its lease once per incarnation
//! (`resign`, on by default), as Kubernetes client-go's `leaderelection` does with
//! `ReleaseOnCancel` (`LeaderElector.release` in
//! `staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go`: on shutdown the
//! holder writes the lease back with an empty holder and a one-second duration, so that
//! another candidate acquires it at once instead of waiting out the lease). Each
//! incarnation draws one moment at its start, in `[q, q + lease_duration]` with
//! `q = lease_duration + election_timeout max + renew_interval` (its quiet period, by
//! when the first election is due, and one renewal: a lease won at the first election
//! has been held and renewed by then); if it leads at that moment, it releases its
//! lease. So the handovers come early, within `2 x lease_duration + election timeout
//! max + renew_interval` of the (re)start that is the last fault, and leader-liveness's
//! bound still covers them. Releasing, the leader stops serving and renewing, observes
//! `LeaseEnd`, and only then sends `Resign` to every voter: a voter forgets its promise
//! to that node for that term. It stands again no sooner than one election timeout
//! maximum plus a drawn election timeout later, so a follower (which times out within
//! an election timeout maximum of the last renewal) takes over. `lease-safety` then
//! judges two holders, not one.
//!
//! **How it fails (the broken variants).**
//! * `no-drift-margin`: the lease ends exactly `lease_duration` after the request by the
//!   leader's clock. A leader whose clock runs slow believes in its lease after the
//!   voters' promises ran out and a new leader was granted one.
//! * `wall-clock-lease`: the leader times its lease on the wall clock. A backward step
//!   (NTP correction, operator) stretches its belief by the size of the step.
//!
//! **Source.** Gray and Cheriton, "Leases" (SOSP 1989), on clock drift and the
//! `epsilon` margin; Chandra et al., "Paxos Made Live" (PODC 2007) §5.2 on master
//! leases; the seed article "Coordination Patterns" (leader lease timeline: "During
//! T=8-15: No leader (safer than split-brain)"); Kleppmann, "How to do distributed
//! locking" (2016) on trusting clocks.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, LocalTime, NodeId, Observation, ParamError,
    Protocol, ProtocolInfo, RoleInfo, StorageExt, VariantInfo,
};

/// Added to the drift margin: timers fire up to a millisecond late in the simulator,
/// and real timers are coarser still.
pub const MARGIN_CONSTANT: Duration = Duration::from_millis(10);

/// Storage key of the durable vote.
const VOTE_KEY: &str = "leader-lease/vote";

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum LeaderLeaseVariant {
    Correct,
    NoDriftMargin,
    WallClockLease,
}

/// Scenario parameters (`[protocol.params]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeaderLeaseParams {
    /// How long a voter's promise lasts, by the voter's monotonic clock.
    pub lease_duration: HumanDuration,
    /// How often the leader renews.
    pub renew_interval: HumanDuration,
    /// `[min, max]`: a follower stands for election after this long without a renewal.
    pub election_timeout: [HumanDuration; 2],
    /// The largest clock drift rate the margin tolerates (a fraction: 0.01 = 1%).
    pub max_drift: f64,
    /// How often the leaseholder serves a lease read (a steady read load): each time it
    /// first checks its clock, and serves (`Serves`) only if its lease still runs.
    pub serve_interval: HumanDuration,
    /// Whether a node that leads at one moment drawn at its start (in `[q, q +
    /// lease_duration]`, `q = lease_duration + election_timeout max + renew_interval`)
    /// releases its lease then (client-go's `ReleaseOnCancel`; see the module docs).
    pub resign: bool,
}

impl Default for LeaderLeaseParams {
    fn default() -> Self {
        LeaderLeaseParams {
            lease_duration: HumanDuration(Duration::from_secs(2)),
            renew_interval: HumanDuration(Duration::from_millis(500)),
            election_timeout: [
                HumanDuration(Duration::from_millis(1000)),
                HumanDuration(Duration::from_millis(1500)),
            ],
            max_drift: 0.01,
            serve_interval: HumanDuration(Duration::from_millis(10)),
            resign: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaderLeaseConfig {
    pub variant: LeaderLeaseVariant,
    pub lease_duration: Duration,
    pub renew_interval: Duration,
    pub election_timeout_min: Duration,
    pub election_timeout_max: Duration,
    /// Subtracted from `lease_duration` on the leader's side (zero in `no-drift-margin`).
    pub margin: Duration,
    /// The `max_drift` parameter in parts per million: the drift the design assumes.
    pub max_drift_ppm: u32,
    /// How often the leaseholder serves a lease read.
    pub serve_interval: Duration,
    /// Whether a node leading at a moment drawn at its start releases its lease then.
    pub resign: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LeaseMsg {
    /// "Grant me (or renew) the lease of `term`." `round` tells the requester's attempts
    /// apart; `leader` is true for renewals by a node that already leads.
    RequestLease {
        term: u64,
        round: u64,
        leader: bool,
    },
    Grant {
        term: u64,
        round: u64,
    },
    /// `term` is the voter's; `retry_after` is how long its promise to a *leader* (or
    /// its quiet period) still runs, by its clock, if that is the reason. A promise to a
    /// mere candidate may be released early, so it gives no hint.
    Reject {
        term: u64,
        round: u64,
        retry_after: Option<Duration>,
    },
    /// "I gave up that attempt (a split vote): forget your promise to me." Safe because
    /// the candidate never acts on that attempt and ignores its late grants.
    Release {
        term: u64,
        round: u64,
    },
    /// "I released the lease of `term` (client-go's `ReleaseOnCancel`): forget your
    /// promise to me." Sent only after the leader stopped acting on the lease.
    Resign {
        term: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeaseTimer {
    Election,
    Renew,
    LeaseEnd,
    /// Time to serve the next lease read.
    Serve,
    /// Time for the leader to release its lease (the `resign` workload).
    Resign,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaseRole {
    Follower,
    Candidate,
    Leader,
}

/// A voter's promise not to grant anyone but `to` until `until` (its monotonic clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Promise {
    pub to: NodeId,
    pub until: LocalTime,
    /// In this term (a candidate's release must name it).
    pub term: u64,
    /// Granted to a renewal: `to` leads.
    pub leader: bool,
}

/// One request for (or renewal of) the lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    pub term: u64,
    pub round: u64,
    /// When the request was sent, by the clock the lease is timed on.
    pub sent_at: LocalTime,
    pub grants: BTreeSet<NodeId>,
    pub rejects: BTreeSet<NodeId>,
    /// Some voter refused because of a leader's lease (or its quiet period).
    pub leader_blocks: bool,
    pub won: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Vote {
    term: u64,
    voted_for: Option<NodeId>,
}

/// One server of the leader-lease protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaderLease {
    config: LeaderLeaseConfig,
    me: NodeId,
    servers: Vec<NodeId>,
    // durable (the vote)
    term: u64,
    voted_for: Option<NodeId>,
    // voter, volatile
    promise: Option<Promise>,
    quiet_until: LocalTime,
    // candidate / leader, volatile
    role: LeaseRole,
    round: u64,
    attempt: Option<Attempt>,
    /// When the lease ends, by the clock it is timed on.
    lease_end: Option<LocalTime>,
    /// What this node last observed as a follower (to observe changes only).
    following: Option<(u64, Option<NodeId>)>,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "leader-lease",
    "a leader holds a time-limited lease granted by a majority, renewed before it \
     expires; voters wait out their promises by their own monotonic clocks",
    &[RoleInfo::new(
        "server",
        "a voter that may also stand for leader",
        5,
    )],
    &[
        VariantInfo::new(
            "correct",
            "lease timed from the request's send time on the monotonic clock, minus \
             a drift margin",
        ),
        VariantInfo::new(
            "no-drift-margin",
            "no drift margin: a leader with a slow clock outlives the voters' promises",
        )
        .with_breaks(&["lease-safety"]),
        VariantInfo::new(
            "wall-clock-lease",
            "the leader times its lease on the wall clock: a backward step extends it",
        )
        .with_breaks(&["lease-safety"]),
    ],
);

impl LeaderLease {
    pub fn role(&self) -> LeaseRole {
        self.role
    }
    pub fn term(&self) -> u64 {
        self.term
    }
    pub fn promise(&self) -> Option<Promise> {
        self.promise
    }
    pub fn lease_end(&self) -> Option<LocalTime> {
        self.lease_end
    }

    fn majority(&self) -> usize {
        self.servers.len() / 2 + 1
    }

    /// The clock the leader times its lease on (the wall clock only in the broken variant).
    fn lease_now(&self, env: &dyn Env<LeaseMsg, LeaseTimer>) -> LocalTime {
        match self.config.variant {
            LeaderLeaseVariant::WallClockLease => env.wall(),
            _ => env.monotonic(),
        }
    }

    fn election_timeout(&self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) -> Duration {
        env.duration_between(
            self.config.election_timeout_min,
            self.config.election_timeout_max,
        )
    }

    fn jitter(&self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) -> Duration {
        env.duration_between(
            Duration::ZERO,
            self.config.election_timeout_max - self.config.election_timeout_min,
        )
    }

    /// Makes the term and vote durable (synced) before anything that depends on them
    /// is sent. Whether the sync failed (the disk reported an error).
    fn store_vote(&self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) -> bool {
        env.store_synced(
            VOTE_KEY,
            &Vote {
                term: self.term,
                voted_for: self.voted_for,
            },
        )
        .is_err()
    }

    /// Why this voter may not grant `to` now: `Some(remaining)` while a promise to
    /// another node or the quiet period runs, with whether that one is worth waiting
    /// for (a leader's lease or the quiet period, not a candidate's).
    fn blocked_for(&self, now: LocalTime, to: NodeId) -> Option<(Duration, bool)> {
        if now < self.quiet_until {
            return Some((now.until(self.quiet_until), true));
        }
        match self.promise {
            Some(p) if p.to != to && now < p.until => Some((now.until(p.until), p.leader)),
            _ => None,
        }
    }

    fn observe_follower(
        &mut self,
        env: &mut dyn Env<LeaseMsg, LeaseTimer>,
        leader: Option<NodeId>,
    ) {
        let now = (self.term, leader);
        if self.following != Some(now) {
            self.following = Some(now);
            env.observe(Observation::Follower {
                term: self.term,
                leader,
            });
        }
    }

    fn start_attempt(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        self.round += 1;
        let now = env.monotonic();
        // Our own grant: the same promise every voter makes.
        self.promise = Some(Promise {
            to: self.me,
            until: now + self.config.lease_duration,
            term: self.term,
            leader: self.role == LeaseRole::Leader,
        });
        self.attempt = Some(Attempt {
            term: self.term,
            round: self.round,
            sent_at: self.lease_now(env),
            grants: BTreeSet::from([self.me]),
            rejects: BTreeSet::new(),
            leader_blocks: false,
            won: false,
        });
        let msg = LeaseMsg::RequestLease {
            term: self.term,
            round: self.round,
            leader: self.role == LeaseRole::Leader,
        };
        for &peer in &self.servers {
            if peer != self.me {
                env.send(peer, msg.clone());
            }
        }
    }

    fn on_election_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        if self.role == LeaseRole::Leader {
            return;
        }
        if let Some(attempt) = &self.attempt {
            // Our last attempt did not win in time. If only other candidates stood in
            // the way, step back for a random moment so that one of us can win.
            let leader_blocks = attempt.leader_blocks;
            self.give_up(env);
            if !leader_blocks {
                return;
            }
        }
        let now = env.monotonic();
        if let Some((remaining, _)) = self.blocked_for(now, self.me) {
            // Wait out the lease we promised someone else (or our quiet period).
            let after = remaining + self.jitter(env);
            env.set_timer(LeaseTimer::Election, after);
            return;
        }
        self.term += 1;
        self.voted_for = Some(self.me);
        // A candidate whose vote is not durable would vote again after a power loss:
        // it stands only once its disk has its vote.
        let failed = self.store_vote(env);
        if failed {
            let after = self.election_timeout(env);
            env.set_timer(LeaseTimer::Election, after);
            return;
        }
        self.role = LeaseRole::Candidate;
        self.following = None;
        env.observe(Observation::Candidate { term: self.term });
        self.start_attempt(env);
        let after = self.election_timeout(env);
        env.set_timer(LeaseTimer::Election, after);
    }

    fn on_renew_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        if self.role != LeaseRole::Leader {
            return;
        }
        self.start_attempt(env);
        env.set_timer(LeaseTimer::Renew, self.config.renew_interval);
    }

    /// Serves a lease read if the lease still runs by the clock it is timed on (a leader
    /// that has just resumed from a pause finds it over and steps down instead: it
    /// never acts on a lease it cannot vouch for). Observes `Serves`.
    fn on_serve_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        if self.role != LeaseRole::Leader {
            return;
        }
        if self.lease_end.is_some_and(|end| self.lease_now(env) >= end) {
            env.cancel_timer(&LeaseTimer::LeaseEnd);
            self.on_lease_end_timer(env);
            return;
        }
        env.observe(Observation::Serves { term: self.term });
        env.set_timer(LeaseTimer::Serve, self.config.serve_interval);
    }

    fn on_lease_end_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        let Some(end) = self.lease_end else { return };
        let now = self.lease_now(env);
        if now < end {
            // Only the wall clock can get here: it was stepped back, and the leader
            // believes its lease has that much longer to run.
            env.set_timer(LeaseTimer::LeaseEnd, now.until(end));
            return;
        }
        assert_eq!(self.role, LeaseRole::Leader, "a lease end without a lease");
        self.lease_end = None;
        self.attempt = None;
        env.observe(Observation::LeaseEnd { term: self.term });
        self.role = LeaseRole::Follower;
        self.observe_follower(env, None);
        env.cancel_timer(&LeaseTimer::Renew);
        env.cancel_timer(&LeaseTimer::Serve);
        let after = self.election_timeout(env);
        env.set_timer(LeaseTimer::Election, after);
    }

    /// The leader releases its lease (client-go `LeaderElector.release`, run on
    /// `ReleaseOnCancel`): it stops acting on it first (no more `Serves`, renewals or
    /// lease-end timer; observes `LeaseEnd`), then tells every voter to forget its
    /// promise for this term, and stands again only after one election timeout maximum
    /// plus a drawn election timeout, later than any follower's timer.
    fn on_resign_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        if self.role != LeaseRole::Leader {
            return; // this incarnation's one moment passed without a lease
        }
        if self.lease_end.is_some_and(|end| self.lease_now(env) >= end) {
            // The lease already ran out (a pause): step down as the timer would.
            env.cancel_timer(&LeaseTimer::LeaseEnd);
            self.on_lease_end_timer(env);
            return;
        }
        let term = self.term;
        self.lease_end = None;
        self.attempt = None;
        if self.promise.is_some_and(|p| p.to == self.me) {
            self.promise = None;
        }
        env.cancel_timer(&LeaseTimer::LeaseEnd);
        env.cancel_timer(&LeaseTimer::Renew);
        env.cancel_timer(&LeaseTimer::Serve);
        env.observe(Observation::LeaseEnd { term });
        self.role = LeaseRole::Follower;
        self.observe_follower(env, None);
        for &peer in &self.servers {
            if peer != self.me {
                env.send(peer, LeaseMsg::Resign { term });
            }
        }
        let after = self.config.election_timeout_max + self.election_timeout(env);
        env.set_timer(LeaseTimer::Election, after);
    }

    fn on_request_lease(
        &mut self,
        env: &mut dyn Env<LeaseMsg, LeaseTimer>,
        from: NodeId,
        term: u64,
        round: u64,
        leader: bool,
    ) {
        let now = env.monotonic();
        let reject = |this: &Self, retry_after| LeaseMsg::Reject {
            term: this.term,
            round,
            retry_after,
        };
        if term < self.term {
            env.send(from, reject(self, None));
            return;
        }
        if let Some((remaining, worth_waiting)) = self.blocked_for(now, from) {
            env.send(from, reject(self, worth_waiting.then_some(remaining)));
            return;
        }
        if term == self.term && self.voted_for.is_some_and(|v| v != from) {
            env.send(from, reject(self, None));
            return;
        }
        if term > self.term || self.voted_for.is_none() {
            let before = (self.term, self.voted_for);
            self.term = term;
            self.voted_for = Some(from);
            if self.store_vote(env) {
                // Not durable: promise nothing (the candidate retries). Forget the vote
                // too, or the retry would find it recorded and be granted unsynced.
                (self.term, self.voted_for) = before;
                return;
            }
        }
        self.promise = Some(Promise {
            to: from,
            until: now + self.config.lease_duration,
            term,
            leader,
        });
        if self.role == LeaseRole::Leader {
            // Our promise to ourselves ran out while we still believe in our lease. The
            // drift margin rules that out, so only a broken variant gets here: it goes
            // on believing (the bug it demonstrates).
            assert_ne!(
                self.config.variant,
                LeaderLeaseVariant::Correct,
                "a leader outlived its own promise"
            );
            env.send(from, LeaseMsg::Grant { term, round });
            return;
        }
        // A candidate's own promise has run out: it gives up its attempt and follows.
        self.role = LeaseRole::Follower;
        self.attempt = None;
        self.observe_follower(env, leader.then_some(from));
        env.send(from, LeaseMsg::Grant { term, round });
        let after = self.election_timeout(env);
        env.set_timer(LeaseTimer::Election, after);
    }

    fn on_grant(
        &mut self,
        env: &mut dyn Env<LeaseMsg, LeaseTimer>,
        from: NodeId,
        term: u64,
        round: u64,
    ) {
        let majority = self.majority();
        let Some(attempt) = self.attempt.as_mut() else {
            return;
        };
        if attempt.term != term || attempt.round != round || attempt.won {
            return;
        }
        attempt.grants.insert(from);
        if attempt.grants.len() < majority {
            return;
        }
        let end = attempt.sent_at + self.config.lease_duration - self.config.margin;
        let now = self.lease_now(env);
        let attempt = self.attempt.as_mut().expect("checked above");
        if end <= now {
            // The grants came too late to be worth anything: the attempt did not win
            // (its election timer gives it up; fuzzing found a won-but-not-leading
            // attempt there when a wall clock jumped forward).
            return;
        }
        attempt.won = true;
        if self.role != LeaseRole::Leader {
            self.role = LeaseRole::Leader;
            self.following = None;
            env.observe(Observation::Leader { term });
            env.observe(Observation::LeaseStart { term });
            env.cancel_timer(&LeaseTimer::Election);
            env.set_timer(LeaseTimer::Renew, self.config.renew_interval);
        }
        let end = self.lease_end.map_or(end, |old| old.max(end));
        let new_lease = self.lease_end.is_none();
        self.lease_end = Some(end);
        env.set_timer(LeaseTimer::LeaseEnd, now.until(end));
        if new_lease {
            // The lease runs (checked above): serve the first read now.
            env.observe(Observation::Serves { term });
            env.set_timer(LeaseTimer::Serve, self.config.serve_interval);
        }
    }

    fn on_reject(
        &mut self,
        env: &mut dyn Env<LeaseMsg, LeaseTimer>,
        from: NodeId,
        term: u64,
        round: u64,
        retry_after: Option<Duration>,
    ) {
        if self.role != LeaseRole::Candidate {
            return; // a leader's lease timer decides when it stops leading
        }
        if term > self.term {
            // A later term exists: ours is stale, and so is this attempt.
            self.term = term;
            self.voted_for = None;
            let _failed = self.store_vote(env); // stepping down is safe either way
            if self.attempt.is_some() {
                self.give_up(env);
            }
            return;
        }
        let servers = self.servers.len();
        let majority = self.majority();
        let Some(attempt) = self.attempt.as_mut() else {
            return;
        };
        if attempt.round != round || attempt.won {
            return;
        }
        attempt.rejects.insert(from);
        let lost = attempt.rejects.len() > servers - majority;
        if let Some(remaining) = retry_after {
            attempt.leader_blocks = true;
            // A leader's lease (or a quiet period) blocks us: try again just after it.
            let after = remaining + self.jitter(env);
            env.set_timer(LeaseTimer::Election, after);
        }
        if lost {
            self.give_up(env);
        }
    }

    /// This attempt can no longer win: release the voters who granted it (a split vote
    /// would otherwise block them, and us, for a whole lease).
    fn give_up(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        let attempt = self.attempt.take().expect("an attempt to give up");
        assert!(!attempt.won, "giving up an attempt that won");
        let msg = LeaseMsg::Release {
            term: attempt.term,
            round: attempt.round,
        };
        for &voter in &attempt.grants {
            if voter != self.me {
                env.send(voter, msg.clone());
            }
        }
        if self.promise.is_some_and(|p| p.to == self.me) {
            self.promise = None;
        }
        if !attempt.leader_blocks {
            // Only other candidates stood in the way: try again soon, at a random
            // moment. (Otherwise the timer is already set to when a lease runs out.)
            let after = self.jitter(env);
            env.set_timer(LeaseTimer::Election, after);
        }
    }

    fn on_release(&mut self, from: NodeId, term: u64) {
        if self
            .promise
            .is_some_and(|p| p.to == from && p.term == term && !p.leader)
        {
            self.promise = None;
        }
    }

    /// A leader released its lease of `term`: it no longer acts on it, so its promise
    /// (a leader's, too) is void.
    fn on_resign(&mut self, from: NodeId, term: u64) {
        if self.promise.is_some_and(|p| p.to == from && p.term == term) {
            self.promise = None;
        }
    }
}

impl Protocol for LeaderLease {
    type Msg = LeaseMsg;
    type Timer = LeaseTimer;
    type Config = LeaderLeaseConfig;

    fn new(config: &LeaderLeaseConfig, me: NodeId, cluster: &Cluster) -> Self {
        let servers: Vec<NodeId> = cluster.with_role("server").collect();
        assert!(servers.contains(&me), "{me} is not a leader-lease server");
        LeaderLease {
            config: config.clone(),
            me,
            servers,
            term: 0,
            voted_for: None,
            promise: None,
            quiet_until: LocalTime(i64::MIN),
            role: LeaseRole::Follower,
            round: 0,
            attempt: None,
            lease_end: None,
            following: None,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>) {
        if let Some(vote) = env.load::<Vote>(VOTE_KEY) {
            self.term = vote.term;
            self.voted_for = vote.voted_for;
        }
        // Promises made before a crash were volatile: grant nothing until any of them
        // has surely run out.
        self.quiet_until = env.monotonic() + self.config.lease_duration;
        self.observe_follower(env, None);
        let after = self.election_timeout(env);
        env.set_timer(LeaseTimer::Election, after);
        if self.config.resign {
            let c = &self.config;
            let q = c.lease_duration + c.election_timeout_max + c.renew_interval;
            let at = env.duration_between(q, q + c.lease_duration);
            env.set_timer(LeaseTimer::Resign, at);
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>, from: NodeId, msg: LeaseMsg) {
        // A leader that has just resumed from a pause may be handed messages before its
        // overdue lease-end timer: it must trust its clock, not the order of events.
        if self.role == LeaseRole::Leader
            && self.lease_end.is_some_and(|end| self.lease_now(env) >= end)
        {
            env.cancel_timer(&LeaseTimer::LeaseEnd);
            self.on_lease_end_timer(env);
        }
        match msg {
            LeaseMsg::RequestLease {
                term,
                round,
                leader,
            } => self.on_request_lease(env, from, term, round, leader),
            LeaseMsg::Grant { term, round } => self.on_grant(env, from, term, round),
            LeaseMsg::Reject {
                term,
                round,
                retry_after,
            } => self.on_reject(env, from, term, round, retry_after),
            LeaseMsg::Release { term, .. } => self.on_release(from, term),
            LeaseMsg::Resign { term } => self.on_resign(from, term),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<LeaseMsg, LeaseTimer>, timer: LeaseTimer) {
        match timer {
            LeaseTimer::Election => self.on_election_timer(env),
            LeaseTimer::Renew => self.on_renew_timer(env),
            LeaseTimer::LeaseEnd => self.on_lease_end_timer(env),
            LeaseTimer::Serve => self.on_serve_timer(env),
            LeaseTimer::Resign => self.on_resign_timer(env),
        }
    }
}

impl Configurable for LeaderLease {
    type Params = LeaderLeaseParams;
    type Variant = LeaderLeaseVariant;
    type Role = tenure_core::roles::Server;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: LeaderLeaseParams,
        variant: LeaderLeaseVariant,
        cluster: &Cluster,
    ) -> Result<LeaderLeaseConfig, ParamError> {
        if cluster.count("server") == 0 {
            return Err(ParamError::new(
                "cluster",
                "leader-lease needs at least one server",
            ));
        }
        let lease_duration = params.lease_duration.0;
        let renew_interval = params.renew_interval.0;
        let [min, max] = params.election_timeout.map(|d| d.0);
        if !(0.0..0.5).contains(&params.max_drift) {
            return Err(ParamError::new(
                "max_drift",
                format!("{} is not a fraction in [0, 0.5)", params.max_drift),
            ));
        }
        let margin = match variant {
            LeaderLeaseVariant::NoDriftMargin => Duration::ZERO,
            _ => lease_duration.mul_f64(2.0 * params.max_drift) + MARGIN_CONSTANT,
        };
        if margin >= lease_duration {
            return Err(ParamError::new(
                "lease_duration",
                "must be longer than its drift margin (lease_duration * 2 * max_drift + 10ms)",
            ));
        }
        if renew_interval.is_zero() || renew_interval >= lease_duration - margin {
            return Err(ParamError::new(
                "renew_interval",
                "must be above zero and shorter than the lease minus its drift margin",
            ));
        }
        if params.serve_interval.0.is_zero() {
            return Err(ParamError::new("serve_interval", "must be above zero"));
        }
        if min > max {
            return Err(ParamError::new(
                "election_timeout",
                "the minimum is above the maximum",
            ));
        }
        if min <= renew_interval {
            return Err(ParamError::new(
                "election_timeout",
                "the minimum must be longer than renew_interval",
            ));
        }
        Ok(LeaderLeaseConfig {
            variant,
            lease_duration,
            renew_interval,
            election_timeout_min: min,
            election_timeout_max: max,
            margin,
            max_drift_ppm: (params.max_drift * 1e6).round() as u32,
            serve_interval: params.serve_interval.0,
            resign: params.resign,
        })
    }

    fn promises(config: &LeaderLeaseConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::{format_duration as f, Promise};
        let drift = f64::from(config.max_drift_ppm) / 1e6;
        // After the calm the old lease runs out (lease duration), a follower times out
        // (election timeout max), and a split vote costs a few more rounds.
        let base = config.lease_duration + config.election_timeout_max * 5 + config.renew_interval;
        let (within, scale) = crate::promises::slow_clock(base, Some(drift));
        let bound = format!(
            "(lease {} + 5 x election timeout max {} + renew interval {}){scale}",
            f(config.lease_duration),
            f(config.election_timeout_max),
            f(config.renew_interval)
        );
        vec![
            Promise::new("lease-safety"),
            Promise::new("leader-liveness").within(within, bound),
        ]
    }

    fn assumptions(config: &LeaderLeaseConfig) -> tenure_core::Assumptions {
        let drift = f64::from(config.max_drift_ppm) / 1e6;
        tenure_core::Assumptions::new().with_max_drift(tenure_core::Limit::new(
            drift,
            format!(
                "the leader's margin, lease x 2 x max_drift + 10ms, covers clocks drifting \
                 up to max_drift = {drift}"
            ),
        ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        Err(
            "its promises are about durations and clock drift; they stay with the \
             simulator: `tenure run`",
        )
    }
}

#[cfg(test)]
mod tests;
