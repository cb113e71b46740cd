//! paxos-outside: single-decree Paxos, three proposers and three acceptors, written the
//! way a tenure user writes their own protocol (only the `tenure` facade and serde).
//!
//! **What it promises:** agreement: no two proposers learn different values for one
//! decision. It is stated through an observation tenure already judges: a proposer that
//! learns the value chosen for decision `i` records `LogApply { index: i, term: 0,
//! digest: value }`, so `state-machine-safety` (every application at one index carries
//! the same entry) is agreement.
//!
//! **How it works** (Lamport, "Paxos Made Simple", 2001, §2.2): a proposer picks a
//! ballot `(round, its id)` above every ballot it has seen, writes the round to disk
//! (a ballot is never reused across a restart) and sends `Prepare` to every acceptor. An
//! acceptor promises a ballot above every one it promised before, and answers with the
//! value it accepted last, if any. With promises from a majority the proposer sends
//! `Accept` with the value of the highest-ballot acceptance reported, or its own. An
//! acceptor accepts a ballot no lower than its promise. With acceptances from a
//! majority the value is chosen, and the proposer learns it. A proposer that hears
//! nothing back in time, or is refused, tries again with a higher round after a random
//! back-off, doubled with every ballot of the decision (up to 64 times `retry`): without
//! it, proposers whose round trips outlast `retry` (slow links) pre-empt each other for
//! ever and nothing is decided (§2.4: progress needs one proposer to be let finish). An acceptor writes its promise and its acceptance to disk, and syncs them,
//! before it answers: its answers are promises about the future, and a restart must
//! not take them back.
//!
//! **What a proposer observes:** `Candidate { term }` as it prepares (the term is the
//! ballot, `round * 1000 + id`), `Leader { term }` when a majority promised (it leads its
//! ballot), `Follower` when it stops (refused, or decided), and `LogApply` when it
//! learns the value.
//!
//! **Planted bugs** (variants): `promise-in-memory` (an acceptor keeps its promise only
//! in memory: a restart forgets it, and the acceptor then accepts a lower ballot it had
//! promised to refuse) and `reply-before-sync` (an acceptor answers before the sync of
//! what it answered completes: a power loss inside the fsync takes the promise or the
//! acceptance back after it was sent). Either lets two proposers each assemble a
//! majority for different values.
//!
//! **The model checker** (`check-model --protocol paxos`, [`Configurable::model`]): two
//! proposers, three acceptors, one decision, one crash. Random walks (`--walk`) find
//! `promise-in-memory`; `reply-before-sync` needs a power loss inside an fsync, which
//! the explorer never draws, so it is declared out of the model's scope and reported
//! not judged.
//!
//! **A workload that repeats the decision:** `instances` (default 1) runs that many
//! decisions, each an independent single-decree Paxos, one every `interval` (default
//! 200 ms): every proposer starts decision `i` at `(i - 1) x interval` after its start
//! (or as soon as it learned the one before, if later), so each decision is a race of
//! all three, as the first one is: each decision has rounds of its own, from 1.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure::prelude::*;

/// A ballot: a round, and the proposer's id to make it unique. Ordered by round first.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Ballot {
    pub round: u64,
    pub proposer: u32,
}

impl Ballot {
    /// The ballot as one number, for observations (`Candidate`, `Leader`).
    pub fn term(self) -> u64 {
        self.round * 1000 + u64::from(self.proposer)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    Prepare {
        instance: u64,
        ballot: Ballot,
    },
    Promise {
        instance: u64,
        ballot: Ballot,
        accepted: Option<(Ballot, u64)>,
    },
    Accept {
        instance: u64,
        ballot: Ballot,
        value: u64,
    },
    Accepted {
        instance: u64,
        ballot: Ballot,
    },
    /// The acceptor refuses `ballot`: it promised `promised`.
    Nack {
        instance: u64,
        ballot: Ballot,
        promised: Ballot,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// The proposer's next try if it has not learned the value by then.
    Retry,
    /// The next decision's slot (with `instances` above 1).
    Next,
}

/// What a planted bug changes in the acceptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    None,
    /// The promise is not written to disk (only acceptances are).
    PromiseInMemory,
    /// The answer is sent before the sync of what it answers.
    ReplyBeforeSync,
}

/// Shared by every node of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// A proposer that has not learned the value tries again after a time drawn from
    /// this range.
    pub retry: (Duration, Duration),
    /// How many decisions to make, one every `interval`.
    pub instances: u64,
    pub interval: Duration,
    pub bug: Bug,
    pub roles: Roles<PaxosRole>,
    pub acceptors: Vec<NodeId>,
}

/// An acceptor's state for one decision, as it is written to disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AcceptorState {
    pub promised: Option<Ballot>,
    pub accepted: Option<(Ballot, u64)>,
}

/// Where a proposer is in its current ballot.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Phase 1: the promises so far, with what each acceptor had accepted, and who
    /// refused.
    Preparing {
        promises: BTreeMap<NodeId, Option<(Ballot, u64)>>,
        refused: BTreeSet<NodeId>,
    },
    /// Phase 2: the value sent, who accepted it and who refused.
    Accepting {
        value: u64,
        acks: BTreeSet<NodeId>,
        refused: BTreeSet<NodeId>,
    },
    /// Refused: waiting for the retry timer.
    Refused,
    /// Every decision learned.
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proposer {
    pub me: NodeId,
    pub instance: u64,
    /// The latest decision whose slot has come (see `Timer::Next`).
    pub slot: u64,
    pub ballot: Ballot,
    /// The highest round seen in a refusal.
    pub highest_seen: u64,
    /// Ballots tried for this decision (since the process started), this one included:
    /// the retry timer doubles with each.
    pub attempt: u32,
    pub phase: Phase,
}

/// One node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Paxos {
    Proposer {
        config: Config,
        p: Proposer,
    },
    Acceptor {
        config: Config,
        /// The decisions seen since the process started (read from disk when first
        /// needed).
        states: BTreeMap<u64, AcceptorState>,
    },
}

type E<'a> = &'a mut dyn Env<Msg, Timer>;

/// Where a proposer keeps the last round it used for decision `instance` (each decision
/// is a Paxos of its own, its rounds from 1: every decision is a race of all three, as
/// the first one is).
fn round_key(instance: u64) -> String {
    format!("round/{instance}")
}

/// The back-off doubles with every ballot of a decision, up to this many doublings (64
/// times `retry`: with the default 20 to 60 ms, up to 1.3 to 3.8 s, above any round trip
/// of the built-in profiles' slow links).
pub const MAX_DOUBLINGS: u32 = 6;

fn instance_key(instance: u64) -> String {
    format!("instance/{instance}")
}

/// The value proposer `me` proposes for decision `instance`.
pub fn value_of(instance: u64, me: NodeId) -> u64 {
    instance * 100 + u64::from(me.0) + 1
}

impl Proposer {
    fn majority(config: &Config) -> usize {
        config.acceptors.len() / 2 + 1
    }

    /// On to decision `instance`: its rounds start after the last one this proposer used
    /// for it (on disk: none unless a restart brought it back), its back-off afresh.
    fn begin(&mut self, instance: u64, env: E<'_>) {
        self.instance = instance;
        self.ballot.round = env.load(&round_key(instance)).unwrap_or(0);
        self.highest_seen = 0;
        self.attempt = 0;
    }

    /// A new ballot above every round seen, its round on disk before it is used.
    fn prepare(&mut self, config: &Config, env: E<'_>) {
        let round = self.ballot.round.max(self.highest_seen) + 1;
        // A failed sync leaves the round unrecorded: try again later with a higher one.
        if env.store_synced(&round_key(self.instance), &round).is_err() {
            self.phase = Phase::Refused;
            self.schedule_retry(config, env);
            return;
        }
        self.ballot = Ballot {
            round,
            proposer: self.me.0,
        };
        self.attempt += 1;
        self.phase = Phase::Preparing {
            promises: BTreeMap::new(),
            refused: BTreeSet::new(),
        };
        env.observe(Observation::Candidate {
            term: self.ballot.term(),
        });
        to_acceptors(
            config,
            env,
            Msg::Prepare {
                instance: self.instance,
                ballot: self.ballot,
            },
        );
        self.schedule_retry(config, env);
    }

    /// Randomized exponential back-off (Lamport 2001, §2.4: progress needs one proposer
    /// to be let finish): drawn from `retry`, doubled for every earlier ballot of this
    /// decision, up to [`MAX_DOUBLINGS`] times, so a proposer whose round trips outlast
    /// `retry` (slow links) still completes a ballot.
    fn schedule_retry(&self, config: &Config, env: E<'_>) {
        let factor = 1u32 << self.attempt.saturating_sub(1).min(MAX_DOUBLINGS);
        let after = env.duration_between(config.retry.0 * factor, config.retry.1 * factor);
        env.set_timer(Timer::Retry, after);
    }

    fn on_promise(
        &mut self,
        config: &Config,
        env: E<'_>,
        from: NodeId,
        accepted: Option<(Ballot, u64)>,
    ) {
        let Phase::Preparing { promises, .. } = &mut self.phase else {
            return;
        };
        promises.insert(from, accepted);
        if promises.len() < Proposer::majority(config) {
            return;
        }
        // The value of the highest-ballot acceptance reported, else its own.
        let value = promises
            .values()
            .flatten()
            .max_by_key(|(b, _)| *b)
            .map_or(value_of(self.instance, self.me), |(_, v)| *v);
        self.phase = Phase::Accepting {
            value,
            acks: BTreeSet::new(),
            refused: BTreeSet::new(),
        };
        env.observe(Observation::Leader {
            term: self.ballot.term(),
        });
        to_acceptors(
            config,
            env,
            Msg::Accept {
                instance: self.instance,
                ballot: self.ballot,
                value,
            },
        );
    }

    fn on_accepted(&mut self, config: &Config, env: E<'_>, from: NodeId) {
        let Phase::Accepting { value, acks, .. } = &mut self.phase else {
            return;
        };
        acks.insert(from);
        if acks.len() < Proposer::majority(config) {
            return;
        }
        let value = *value;
        env.observe(Observation::LogApply {
            index: self.instance,
            term: 0,
            digest: value,
        });
        env.observe(Observation::Follower {
            term: self.ballot.term(),
            leader: None,
        });
        // Learned: on to the latest decision whose slot has come, if it is a later one;
        // else wait for the next slot.
        self.phase = Phase::Done;
        env.cancel_timer(&Timer::Retry);
        if self.slot > self.instance {
            self.begin(self.slot, env);
            self.prepare(config, env);
        }
    }

    /// A refusal: the ballot is given up once too many refused for a majority to be
    /// left (a later round goes above the promise it was refused for).
    /// The slot of the next decision: start it now if the last one is learned.
    fn on_next(&mut self, config: &Config, env: E<'_>) {
        if self.slot >= config.instances {
            return;
        }
        self.slot += 1;
        if self.slot < config.instances {
            env.set_timer(Timer::Next, config.interval);
        }
        if self.phase == Phase::Done {
            self.begin(self.slot, env);
            self.prepare(config, env);
        }
    }

    fn on_nack(&mut self, config: &Config, env: E<'_>, from: NodeId, promised: Ballot) {
        self.highest_seen = self.highest_seen.max(promised.round);
        let refused = match &mut self.phase {
            Phase::Preparing { refused, .. } | Phase::Accepting { refused, .. } => refused,
            Phase::Refused | Phase::Done => return,
        };
        refused.insert(from);
        if refused.len() > config.acceptors.len() - Proposer::majority(config) {
            self.phase = Phase::Refused;
            env.observe(Observation::Follower {
                term: self.ballot.term(),
                leader: None,
            });
        }
    }
}

impl Paxos {
    /// The acceptor's state for `instance`: in memory, else as last written to disk.
    fn state(
        states: &mut BTreeMap<u64, AcceptorState>,
        env: E<'_>,
        instance: u64,
    ) -> AcceptorState {
        states
            .entry(instance)
            .or_insert_with(|| env.load(&instance_key(instance)).unwrap_or_default())
            .clone()
    }

    /// Records `state` and sends `reply` to `to`, as the variant does it: write and
    /// sync, then answer (correct); answer, then sync (`reply-before-sync`). `durable`
    /// is what goes to disk (the `promise-in-memory` acceptor writes the promise only
    /// with an acceptance).
    fn answer(
        config: &Config,
        env: E<'_>,
        instance: u64,
        durable: Option<&AcceptorState>,
        to: NodeId,
        reply: Msg,
    ) {
        let Some(durable) = durable else {
            env.send(to, reply);
            return;
        };
        let key = instance_key(instance);
        if config.bug == Bug::ReplyBeforeSync {
            env.store(&key, durable);
            env.send(to, reply);
            let _retried_by_the_next_write = env.sync();
        } else if env.store_synced(&key, durable).is_ok() {
            env.send(to, reply);
        }
        // A failed sync: no answer (the proposer times out and tries again).
    }

    fn on_prepare(
        config: &Config,
        states: &mut BTreeMap<u64, AcceptorState>,
        env: E<'_>,
        from: NodeId,
        instance: u64,
        ballot: Ballot,
    ) {
        let mut s = Paxos::state(states, env, instance);
        if s.promised.is_some_and(|p| p >= ballot) {
            let promised = s.promised.expect("checked");
            env.send(
                from,
                Msg::Nack {
                    instance,
                    ballot,
                    promised,
                },
            );
            return;
        }
        s.promised = Some(ballot);
        states.insert(instance, s.clone());
        let reply = Msg::Promise {
            instance,
            ballot,
            accepted: s.accepted,
        };
        let durable = (config.bug != Bug::PromiseInMemory).then_some(&s);
        Paxos::answer(config, env, instance, durable, from, reply);
    }

    fn on_accept(
        config: &Config,
        states: &mut BTreeMap<u64, AcceptorState>,
        env: E<'_>,
        from: NodeId,
        instance: u64,
        ballot: Ballot,
        value: u64,
    ) {
        let mut s = Paxos::state(states, env, instance);
        if let Some(promised) = s.promised.filter(|p| *p > ballot) {
            env.send(
                from,
                Msg::Nack {
                    instance,
                    ballot,
                    promised,
                },
            );
            return;
        }
        s.promised = Some(ballot);
        s.accepted = Some((ballot, value));
        states.insert(instance, s.clone());
        let reply = Msg::Accepted { instance, ballot };
        Paxos::answer(config, env, instance, Some(&s), from, reply);
    }
}

impl Protocol for Paxos {
    type Msg = Msg;
    type Timer = Timer;
    type Config = Config;

    fn new(config: &Config, me: NodeId, _cluster: &Cluster) -> Paxos {
        match config.roles.get(me) {
            PaxosRole::Proposer => Paxos::Proposer {
                config: config.clone(),
                p: Proposer {
                    me,
                    instance: 1,
                    slot: 1,
                    ballot: Ballot::default(),
                    highest_seen: 0,
                    attempt: 0,
                    phase: Phase::Refused,
                },
            },
            PaxosRole::Acceptor => Paxos::Acceptor {
                config: config.clone(),
                states: BTreeMap::new(),
            },
        }
    }

    fn on_start(&mut self, env: E<'_>) {
        if let Paxos::Proposer { config, p } = self {
            // The last round used, so no ballot is used twice across a restart.
            p.begin(p.instance, env);
            p.prepare(config, env);
            if config.instances > 1 {
                env.set_timer(Timer::Next, config.interval);
            }
        }
    }

    fn on_message(&mut self, env: E<'_>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (Paxos::Acceptor { config, states }, Msg::Prepare { instance, ballot }) => {
                Paxos::on_prepare(config, states, env, from, instance, ballot)
            }
            (
                Paxos::Acceptor { config, states },
                Msg::Accept {
                    instance,
                    ballot,
                    value,
                },
            ) => Paxos::on_accept(config, states, env, from, instance, ballot, value),
            (Paxos::Proposer { config, p }, msg) => {
                let (instance, ballot) = match &msg {
                    Msg::Promise {
                        instance, ballot, ..
                    }
                    | Msg::Accepted { instance, ballot }
                    | Msg::Nack {
                        instance, ballot, ..
                    } => (*instance, *ballot),
                    _ => return,
                };
                if instance != p.instance || ballot != p.ballot {
                    return; // about an earlier ballot or decision
                }
                match msg {
                    Msg::Promise { accepted, .. } => p.on_promise(config, env, from, accepted),
                    Msg::Accepted { .. } => p.on_accepted(config, env, from),
                    Msg::Nack { promised, .. } => p.on_nack(config, env, from, promised),
                    _ => {}
                }
            }
            _ => {} // nobody sends acceptors answers, nor proposers requests
        }
    }

    fn on_timer(&mut self, env: E<'_>, timer: Timer) {
        match (self, timer) {
            (Paxos::Proposer { config, p }, Timer::Next) => p.on_next(config, env),
            (Paxos::Proposer { config, p }, Timer::Retry) if p.phase != Phase::Done => {
                if !matches!(p.phase, Phase::Refused) {
                    env.observe(Observation::Follower {
                        term: p.ballot.term(),
                        leader: None,
                    });
                }
                p.prepare(config, env)
            }
            _ => {}
        }
    }
}

/// Who plays which part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaxosRole {
    Proposer,
    Acceptor,
}

impl Variant for PaxosRole {
    fn all() -> &'static [PaxosRole] {
        &[PaxosRole::Proposer, PaxosRole::Acceptor]
    }
}

impl std::fmt::Display for PaxosRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PaxosRole::Proposer => "proposer",
            PaxosRole::Acceptor => "acceptor",
        })
    }
}

/// The variants a scenario can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaxosVariant {
    Correct,
    PromiseInMemory,
    ReplyBeforeSync,
}

impl Variant for PaxosVariant {
    fn all() -> &'static [PaxosVariant] {
        &[
            PaxosVariant::Correct,
            PaxosVariant::PromiseInMemory,
            PaxosVariant::ReplyBeforeSync,
        ]
    }
}

impl std::fmt::Display for PaxosVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PaxosVariant::Correct => "correct",
            PaxosVariant::PromiseInMemory => "promise-in-memory",
            PaxosVariant::ReplyBeforeSync => "reply-before-sync",
        })
    }
}

/// Scenario parameters (`[protocol.params]`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// The retry back-off range, as durations (`["20ms", "60ms"]`).
    pub retry: Option<[HumanDuration; 2]>,
    /// How many decisions to make (default 1), one every `interval`.
    pub instances: Option<u64>,
    /// The time between two decisions' slots (default `"200ms"`).
    pub interval: Option<HumanDuration>,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "paxos",
    "single-decree Paxos (Lamport 2001), written as an outside user would: proposers, acceptors that sync before they answer",
    &[
        RoleInfo::new("proposer", "proposes a value with ballots, learns the chosen one", 3),
        RoleInfo::new("acceptor", "promises and accepts ballots, on disk before it answers", 3),
    ],
    &[
        VariantInfo::new(
            "correct",
            "promises and acceptances written and synced before the answer",
        ),
        VariantInfo::new(
            "promise-in-memory",
            "an acceptor keeps its promise only in memory: after a restart it accepts a ballot it promised to refuse",
        )
        .with_breaks(&["state-machine-safety"]),
        VariantInfo::new(
            "reply-before-sync",
            "an acceptor answers before its sync completes: a power loss inside the fsync takes back what it answered",
        )
        .with_breaks(&["state-machine-safety"]),
    ],
);

impl Configurable for Paxos {
    type Params = Params;
    type Variant = PaxosVariant;
    type Role = PaxosRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: Params,
        variant: PaxosVariant,
        cluster: &Cluster,
    ) -> Result<Config, ParamError> {
        let roles: Roles<PaxosRole> = Roles::of(cluster)?;
        let acceptors: Vec<NodeId> = cluster
            .nodes()
            .filter(|&n| roles.get(n) == PaxosRole::Acceptor)
            .collect();
        if acceptors.is_empty() {
            return Err(ParamError::new("cluster", "paxos needs an acceptor"));
        }
        let mut retry = (Duration::from_millis(20), Duration::from_millis(60));
        if let Some([min, max]) = params.retry {
            if min.0 > max.0 || min.0.is_zero() {
                return Err(ParamError::new(
                    "retry",
                    "give [min, max] with 0 < min <= max",
                ));
            }
            retry = (min.0, max.0);
        }
        let instances = params.instances.unwrap_or(1);
        if instances == 0 {
            return Err(ParamError::new("instances", "make at least one decision"));
        }
        let interval = params.interval.map_or(Duration::from_millis(200), |d| d.0);
        if interval.is_zero() {
            return Err(ParamError::new("interval", "must be above zero"));
        }
        Ok(Config {
            retry,
            instances,
            interval,
            bug: match variant {
                PaxosVariant::Correct => Bug::None,
                PaxosVariant::PromiseInMemory => Bug::PromiseInMemory,
                PaxosVariant::ReplyBeforeSync => Bug::ReplyBeforeSync,
            },
            roles,
            acceptors,
        })
    }

    /// The model checker's view (`check-model --protocol paxos`): two proposers and
    /// three acceptors, one decision; every message delivered in any order, timers
    /// firing only when none is in flight, one crash (and restart) of any node. A
    /// promise kept only in memory is forgotten in that crash; an answer sent before
    /// its fsync is lost only by a power loss inside the fsync, which the explorer
    /// never draws.
    fn model() -> Result<tenure::model::ModelSpec, &'static str> {
        use tenure::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
        Ok(ModelSpec::new(
            "two proposers and three acceptors, one decision; messages delivered in any \
             order, timers firing when no message is in flight, one crash; exhaustive to \
             depth 11 (a forgotten promise needs a longer path: random walks, `--walk`, \
             find it)",
            &[("proposer", 2), ("acceptor", 3)],
        )
        .with_out_of_scope(&[(
            "reply-before-sync",
            "an answer is taken back only by a power loss inside its fsync: the explorer \
             crashes processes but never cuts power, so every write survives",
        )])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(11)
                .with_max_crashes(1)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::All)
                .with_timers(TimerModel::Quiet),
        )
        .with_checks(&["state-machine-safety"]))
    }

    fn promises(_config: &Config, _cluster: &Cluster) -> Vec<tenure::Promise> {
        // Agreement, as state-machine safety of the learned values. No liveness: two
        // proposers can duel forever (FLP); the random back-off only makes it unlikely.
        vec![tenure::Promise::new("state-machine-safety")]
    }
}

/// The default cluster: three proposers, three acceptors.
pub fn cluster() -> Cluster {
    Cluster::new(vec![
        RoleSpec::new("proposer", 3),
        RoleSpec::new("acceptor", 3),
    ])
    .expect("a valid cluster")
}

/// This crate's catalogue: what its `paxos-outside` binary runs from a scenario file.
pub struct PaxosProtocols;

impl Catalogue for PaxosProtocols {
    fn visit<V: Visitor>(&self, v: &mut V) {
        v.visit::<Paxos>();
    }
}

/// Sends `msg` to every acceptor (phase 1a and 2a).
fn to_acceptors(config: &Config, env: E<'_>, msg: Msg) {
    for &a in &config.acceptors {
        env.send(a, msg.clone());
    }
}

#[cfg(test)]
mod tests {
    //! Handlers in isolation: effects asserted exactly, no simulator.
    use super::*;
    use tenure::{Effect, StepHost};

    fn node(variant: PaxosVariant, me: u32) -> (Paxos, Cluster) {
        let cluster = cluster();
        let config = Paxos::configure(Params::default(), variant, &cluster).unwrap();
        (Paxos::new(&config, NodeId(me), &cluster), cluster)
    }

    fn b(round: u64, proposer: u32) -> Ballot {
        Ballot { round, proposer }
    }

    fn prepare(round: u64, proposer: u32) -> Msg {
        Msg::Prepare {
            instance: 1,
            ballot: b(round, proposer),
        }
    }

    /// The kinds of effects, in order: where the answer sits relative to the sync.
    fn shape(effects: &[Effect<Msg, Timer>]) -> Vec<&'static str> {
        effects
            .iter()
            .map(|e| match e {
                Effect::Store { .. } => "store",
                Effect::Sync { .. } => "sync",
                Effect::Send { .. } => "send",
                _ => "other",
            })
            .collect()
    }

    #[test]
    fn an_acceptor_promises_higher_ballots_only_and_syncs_before_it_answers() {
        let (mut a, cluster) = node(PaxosVariant::Correct, 3);
        let mut host = StepHost::new(NodeId(3), &cluster);
        let mut step = host.step();
        a.on_message(&mut step, NodeId(1), prepare(1, 1));
        assert_eq!(shape(&step.effects), vec!["store", "sync", "send"]);
        step.effects.clear();
        a.on_message(&mut step, NodeId(0), prepare(1, 0));
        assert_eq!(
            step.sent(),
            vec![(
                NodeId(0),
                &Msg::Nack {
                    instance: 1,
                    ballot: b(1, 0),
                    promised: b(1, 1)
                }
            )]
        );
    }

    #[test]
    fn a_restarted_acceptor_keeps_its_promise_unless_it_kept_it_in_memory() {
        for (variant, refuses) in [
            (PaxosVariant::Correct, true),
            (PaxosVariant::PromiseInMemory, false),
        ] {
            let (mut a, cluster) = node(variant, 3);
            let mut host = StepHost::new(NodeId(3), &cluster);
            a.on_message(&mut host.step(), NodeId(2), prepare(1, 2));
            // A new process over the same storage: what a crash and restart leaves.
            let (mut restarted, _) = node(variant, 3);
            let mut step = host.step();
            restarted.on_start(&mut step);
            let accept = Msg::Accept {
                instance: 1,
                ballot: b(1, 0),
                value: 101,
            };
            restarted.on_message(&mut step, NodeId(0), accept);
            let nacked = matches!(step.sent()[..], [(_, Msg::Nack { .. })]);
            assert_eq!(nacked, refuses, "{variant}: {:?}", step.effects);
        }
    }

    #[test]
    fn the_reply_before_sync_acceptor_answers_before_its_sync() {
        let (mut a, cluster) = node(PaxosVariant::ReplyBeforeSync, 4);
        let mut host = StepHost::new(NodeId(4), &cluster);
        let mut step = host.step();
        a.on_message(&mut step, NodeId(1), prepare(1, 1));
        assert_eq!(shape(&step.effects), vec!["store", "send", "sync"]);
    }

    /// The retry timers a step set.
    fn retries(effects: &[Effect<Msg, Timer>]) -> Vec<Duration> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::SetTimer {
                    timer: Timer::Retry,
                    after,
                } => Some(*after),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_refused_proposer_backs_off_twice_as_long_with_every_ballot_up_to_64_times() {
        let (mut p, cluster) = node(PaxosVariant::Correct, 0);
        let (min, max) = (Duration::from_millis(20), Duration::from_millis(60));
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut step = host.step();
        p.on_start(&mut step);
        let mut windows = Vec::new();
        for _ in 0..9 {
            let after = retries(&step.effects);
            assert_eq!(after.len(), 1, "{:?}", step.effects);
            windows.push(after[0]);
            step = host.step();
            p.on_timer(&mut step, Timer::Retry);
        }
        for (i, after) in windows.iter().enumerate() {
            let factor = 1u32 << (i as u32).min(MAX_DOUBLINGS);
            assert!(
                (min * factor..=max * factor).contains(after),
                "ballot {}: {after:?} outside {factor} x [20ms, 60ms]",
                i + 1
            );
        }
        // Negative control: without the doubling the seventh ballot's wait would be
        // at most 60 ms.
        assert!(windows[6] > max, "{windows:?}");
    }

    #[test]
    fn each_decision_starts_its_own_rounds_and_a_restart_resumes_them() {
        let (mut p, cluster) = node(PaxosVariant::Correct, 1);
        let mut host = StepHost::new(NodeId(1), &cluster);
        p.on_start(&mut host.step()); // decision 1, ballot (1, 1)
        p.on_timer(&mut host.step(), Timer::Retry); // (2, 1)
        let Paxos::Proposer { p: prop, config } = &mut p else {
            unreachable!()
        };
        assert_eq!(prop.ballot, b(2, 1));
        // Decision 2 starts at round 1 again, its back-off afresh.
        let mut step = host.step();
        prop.begin(2, &mut step);
        prop.prepare(config, &mut step);
        assert_eq!(prop.ballot, b(1, 1));
        assert_eq!(prop.attempt, 1);
        // A new process over the same storage starts at decision 1 above round 2.
        let (mut restarted, _) = node(PaxosVariant::Correct, 1);
        let mut step = host.step();
        restarted.on_start(&mut step);
        assert!(
            step.sent().iter().all(|(_, m)| *m == &prepare(3, 1)),
            "{:?}",
            step.sent()
        );
    }

    #[test]
    fn a_proposer_adopts_the_highest_accepted_value_and_learns_it_from_a_majority() {
        let (mut p, cluster) = node(PaxosVariant::Correct, 0);
        let mut host = StepHost::new(NodeId(0), &cluster);
        p.on_start(&mut host.step()); // ballot (1, 0)
        let promise = |accepted| Msg::Promise {
            instance: 1,
            ballot: b(1, 0),
            accepted,
        };
        p.on_message(&mut host.step(), NodeId(3), promise(Some((b(0, 2), 7))));
        let mut step = host.step();
        p.on_message(&mut step, NodeId(4), promise(None));
        assert_eq!(
            step.sent()[0],
            (
                NodeId(3),
                &Msg::Accept {
                    instance: 1,
                    ballot: b(1, 0),
                    value: 7
                }
            )
        );
        let accepted = Msg::Accepted {
            instance: 1,
            ballot: b(1, 0),
        };
        p.on_message(&mut host.step(), NodeId(3), accepted.clone());
        let mut step = host.step();
        p.on_message(&mut step, NodeId(5), accepted);
        assert_eq!(
            step.observed()[0],
            &Observation::LogApply {
                index: 1,
                term: 0,
                digest: 7
            }
        );
    }
}
