//! Single-decree Paxos, sans-IO: proposers, acceptors and learners, one decision per
//! instance.
//!
//! **Promises.** Agreement (`agreement`: only a single value is chosen for an
//! instance, so no two learners learn different values) and validity (`validity`: only
//! a value some proposer proposed for that instance is chosen), on any network (loss,
//! duplication, reordering, partitions), with any clocks, and across crashes and power
//! losses of any node: Paxos needs no timing for safety. No liveness is promised:
//! two proposers can pre-empt each other for ever (FLP; `no-backoff` shows it, judged by
//! `decision-liveness` in scenarios that state their bound); randomized back-off ends a
//! duel with probability 1 but within no bound; a distinguished proposer
//! (`distinguished = true`, Lamport §2.4) removes the duel, but slow acceptor disks can
//! still leave it behind for ever (see `promises`).
//!
//! **How it works** (Lamport, "Paxos Made Simple", 2001, §2.2 choosing a value, §2.3
//! learning it): a proposer picks a ballot `(round, its id)` above every round it has
//! seen, syncs the round to disk (a ballot is never reused across a restart) and sends
//! `Prepare` (phase 1a) to every acceptor. An acceptor promises a ballot no lower than
//! every ballot it promised before, and answers with the value it accepted last, if any
//! (1b). With promises from a majority the proposer sends `Accept` (2a) with the value
//! of the highest-ballot acceptance reported, or its own value if none was. An acceptor
//! accepts a ballot no lower than its promise and tells the proposer and every learner
//! (2b). A learner learns a value once a majority of acceptors accepted it in one
//! ballot; so does the proposer. An acceptor writes its promise and its acceptance to
//! disk, and syncs them, before it answers: its answers are promises about the future,
//! and a restart must not take them back. A proposer whose ballot is refused by too many
//! to leave a majority, or gets no majority in time, tries again with a higher round
//! after a random back-off (`retry`, doubled with every ballot of the instance).
//!
//! **Workload.** `instances` decisions (default 40), each an independent single-decree
//! Paxos, one every `interval` (default 200 ms): every active proposer starts decision
//! `i` at `(i - 1) x interval` after its start, so each decision is a race of the
//! proposers and faults drawn anywhere in a run meet decisions in flight. A restarted
//! proposer starts again every decision it had started (it remembers how far it got on
//! disk): Paxos makes re-proposing a decided instance harmless.
//!
//! **Observations.** A proposer records `Proposes { instance, value }` when it puts its
//! own value forward, `Candidate { term }` as it prepares a ballot (the term is the
//! ballot, `round * 1000 + id`), `Leader { term }` when a majority promised it,
//! `Follower` when the ballot ends (chosen, refused or timed out), and `Decides` when its
//! ballot is chosen. A learner records `Decides { instance, value }` when a majority
//! accepted `value` in one ballot (again if it later sees a majority for a different
//! value: that is the disagreement `agreement` looks for).
//!
//! **Broken variants.** `forget-promise` (an acceptor keeps its promise only in memory:
//! a restart forgets it, and it then accepts a lower ballot it promised to refuse),
//! `ignore-accepted` (a proposer proposes its own value whatever the promises report),
//! `same-ballot` (ballots carry no proposer id: two proposers can pick the same ballot,
//! and both are promised and accepted), `shared-slot` (an acceptor keeps one promise and
//! acceptance for all instances: it reports a value accepted in an earlier instance as
//! accepted in this one, which breaks validity), `no-backoff` (proposers never back off,
//! whatever `backoff` says: with a retry timer shorter than a ballot's two round trips,
//! each new prepare refuses the accept in flight and no value is chosen, which breaks
//! `decision-liveness`; scenarios/paxos/dueling-*.toml).
//!
//! **Source.** Leslie Lamport, "Paxos Made Simple", ACM SIGACT News 32(4), 2001: §2.2
//! (P2c and the two phases, "an acceptor can accept a proposal numbered n iff it has
//! not responded to a prepare request having a number greater than n"; "different
//! proposers choose their numbers from disjoint sets"; "an acceptor must remember this
//! information even if it fails and then restarts"), §2.3 (learners), §2.4 (progress: a
//! distinguished proposer).

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, NodeId, Observation, ParamError, Protocol,
    ProtocolInfo, RoleInfo, Roles, StorageExt, VariantInfo,
};

/// A ballot: a round and the proposer's id, so two proposers never share one (except
/// in `same-ballot`, where the id is always 0). Ordered by round first.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Ballot {
    pub round: u64,
    pub proposer: u32,
}

impl Ballot {
    /// The ballot as one number, for `Candidate` and `Leader` observations.
    pub fn term(self) -> u64 {
        self.round * 1000 + u64::from(self.proposer)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// Phase 1a.
    Prepare { instance: u64, ballot: Ballot },
    /// Phase 1b: a promise, with what the acceptor accepted last.
    Promise {
        instance: u64,
        ballot: Ballot,
        accepted: Option<(Ballot, u64)>,
    },
    /// Phase 2a.
    Accept {
        instance: u64,
        ballot: Ballot,
        value: u64,
    },
    /// Phase 2b, to the proposer and every learner.
    Accepted {
        instance: u64,
        ballot: Ballot,
        value: u64,
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
    /// The proposer's next ballot for this instance if it is not chosen by then.
    Retry(u64),
    /// The next decision's slot.
    Next,
}

/// Which Paxos a run uses: the correct one or a known-broken one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PaxosVariant {
    Correct,
    /// An acceptor keeps its promise in memory only.
    ForgetPromise,
    /// A proposer proposes its own value whatever the promises report.
    IgnoreAccepted,
    /// Ballots carry no proposer id.
    SameBallot,
    /// An acceptor keeps one state for every instance.
    SharedSlot,
    /// Proposers never back off, whatever `backoff` says: dueling proposers livelock.
    NoBackoff,
}

/// Who plays which part.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PaxosRole {
    Proposer,
    Acceptor,
    Learner,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "paxos",
    "single-decree Paxos (Lamport 2001): proposers, acceptors that sync before \
     they answer, learners; one decision per instance",
    &[
        RoleInfo::new(
            "proposer",
            "proposes its own value with ballots; learns its ballot's value",
            2,
        ),
        RoleInfo::new(
            "acceptor",
            "promises and accepts ballots, on disk before it answers",
            3,
        ),
        RoleInfo::new(
            "learner",
            "learns a value once a majority of acceptors accepted it in one ballot",
            2,
        ),
    ],
    &[
        VariantInfo::new(
            "correct",
            "Paxos as in Lamport 2001 §2.2-2.3: promises and acceptances synced \
             before the answer, the highest accepted value adopted, unique ballots",
        ),
        VariantInfo::new(
            "forget-promise",
            "an acceptor keeps its promise only in memory: after a restart it \
             accepts a lower ballot it promised to refuse",
        )
        .with_breaks(&["agreement"]),
        VariantInfo::new(
            "ignore-accepted",
            "a proposer proposes its own value even when a promise reports an \
             accepted one: a chosen value is overwritten",
        )
        .with_breaks(&["agreement"]),
        VariantInfo::new(
            "same-ballot",
            "ballots carry no proposer id: two proposers pick the same ballot and \
             both are promised and accepted",
        )
        .with_breaks(&["agreement"]),
        VariantInfo::new(
            "shared-slot",
            "an acceptor keeps one state for every instance: it reports a value \
             accepted in an earlier decision, and a proposer adopts it here",
        )
        .with_breaks(&["validity"]),
        VariantInfo::new(
            "no-backoff",
            "proposers never back off (`backoff = false` forced): a refused proposer \
             prepares a higher ballot at once, and two of them can pre-empt each \
             other for ever (Lamport §2.4)",
        )
        .with_breaks(&["decision-liveness"]),
    ],
);

/// Paxos's parameters as a scenario's `[protocol.params]` table writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PaxosParams {
    /// How many decisions to make, one every `interval`.
    pub instances: u64,
    /// The time between two decisions' slots.
    pub interval: HumanDuration,
    /// A proposer whose ballot has not been chosen tries again after a time drawn
    /// uniformly from this range (randomized back-off), doubled for every earlier
    /// ballot of the same instance (up to 64x: exponential back-off).
    pub retry: [HumanDuration; 2],
    /// Without back-off (`false`), a refused proposer tries again at once, and a
    /// timed-out one after exactly `retry`'s minimum: dueling proposers can pre-empt
    /// each other for as long as their timing stays in step.
    pub backoff: bool,
    /// Only the first proposer proposes (Lamport §2.4, a distinguished proposer); the
    /// others stay idle.
    pub distinguished: bool,
}

impl Default for PaxosParams {
    fn default() -> Self {
        PaxosParams {
            instances: 40,
            interval: HumanDuration(Duration::from_millis(200)),
            retry: [
                HumanDuration(Duration::from_millis(20)),
                HumanDuration(Duration::from_millis(60)),
            ],
            backoff: true,
            distinguished: false,
        }
    }
}

/// Everything a Paxos node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PaxosConfig {
    pub variant: PaxosVariant,
    pub instances: u64,
    pub interval: Duration,
    pub retry: (Duration, Duration),
    pub backoff: bool,
    pub distinguished: bool,
    pub roles: Roles<PaxosRole>,
    pub proposers: Vec<NodeId>,
    pub acceptors: Vec<NodeId>,
    pub learners: Vec<NodeId>,
}

impl PaxosConfig {
    fn majority(&self) -> usize {
        self.acceptors.len() / 2 + 1
    }

    /// Whether `me` proposes at all.
    fn active(&self, me: NodeId) -> bool {
        !self.distinguished || self.proposers.first() == Some(&me)
    }
}

/// An acceptor's state for one instance, as written to disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AcceptorState {
    pub promised: Option<Ballot>,
    pub accepted: Option<(Ballot, u64)>,
}

/// Where a proposer is in its current ballot of one instance.
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
    /// Refused or timed out: waiting for the retry timer.
    Waiting,
    /// Its ballot was chosen, with this value.
    Chosen(u64),
}

/// One instance as a proposer sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    pub ballot: Ballot,
    pub phase: Phase,
    /// Ballots tried for this instance (since the process started), this one included.
    pub attempt: u32,
}

/// The back-off doubles with every ballot of an instance, up to this many doublings.
const MAX_DOUBLINGS: u32 = 6;

/// What a proposer keeps on disk: the last round it used and the last instance it
/// started, synced before a ballot is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProposerDisk {
    pub round: u64,
    pub slot: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proposer {
    pub me: NodeId,
    pub disk: ProposerDisk,
    /// The highest round seen in a refusal.
    pub highest_seen: u64,
    pub runs: BTreeMap<u64, Run>,
}

/// One Paxos node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Paxos {
    Proposer {
        config: PaxosConfig,
        p: Proposer,
    },
    Acceptor {
        config: PaxosConfig,
        /// The instances seen since the process started (read from disk when first
        /// needed).
        states: BTreeMap<u64, AcceptorState>,
    },
    Learner {
        config: PaxosConfig,
        /// Per instance: acceptors that accepted each (ballot, value), and the value
        /// learned last.
        tallies: BTreeMap<u64, Tally>,
    },
}

/// A learner's count of acceptances for one instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tally {
    pub accepted: BTreeMap<(Ballot, u64), BTreeSet<NodeId>>,
    pub learned: Option<u64>,
}

type E<'a> = &'a mut dyn Env<Msg, Timer>;

/// The disk key of the proposer's round and slot.
pub const PROPOSER_KEY: &str = "proposer";

/// The disk key of an acceptor's state for `instance`.
pub fn acceptor_key(instance: u64) -> String {
    format!("instance/{instance}")
}

/// The value proposer `me` proposes for `instance`: unique per (instance, proposer).
pub fn value_of(instance: u64, me: NodeId) -> u64 {
    instance * 100 + u64::from(me.0) + 1
}

fn to_acceptors(config: &PaxosConfig, env: E<'_>, msg: Msg) {
    for &a in &config.acceptors {
        env.send(a, msg.clone());
    }
}

impl Proposer {
    /// Starts `instance`: puts its own value forward and prepares a ballot.
    fn begin(&mut self, config: &PaxosConfig, env: E<'_>, instance: u64) {
        env.observe(Observation::Proposes {
            instance,
            value: value_of(instance, self.me),
        });
        self.prepare(config, env, instance);
    }

    /// A new ballot for `instance` above every round seen, its round on disk first.
    fn prepare(&mut self, config: &PaxosConfig, env: E<'_>, instance: u64) {
        let attempt = self.runs.get(&instance).map_or(0, |r| r.attempt) + 1;
        let round = self.disk.round.max(self.highest_seen) + 1;
        let disk = ProposerDisk {
            round,
            slot: self.disk.slot.max(instance),
        };
        if env.store_synced(PROPOSER_KEY, &disk).is_err() {
            // Unrecorded: try again later, with a higher round.
            self.runs.insert(
                instance,
                Run {
                    ballot: Ballot::default(),
                    phase: Phase::Waiting,
                    attempt,
                },
            );
            self.schedule_retry(config, env, instance, attempt);
            return;
        }
        self.disk = disk;
        let ballot = Ballot {
            round,
            proposer: if config.variant == PaxosVariant::SameBallot {
                0
            } else {
                self.me.0
            },
        };
        self.runs.insert(
            instance,
            Run {
                ballot,
                phase: Phase::Preparing {
                    promises: BTreeMap::new(),
                    refused: BTreeSet::new(),
                },
                attempt,
            },
        );
        env.observe(Observation::Candidate {
            term: ballot.term(),
        });
        to_acceptors(config, env, Msg::Prepare { instance, ballot });
        self.schedule_retry(config, env, instance, attempt);
    }

    /// The retry timer of a ballot: with back-off, drawn from `retry` and doubled for
    /// every earlier ballot of the instance (up to 64x), so a proposer whose round trips
    /// outlast `retry` still completes one; without, `retry`'s minimum every time.
    fn schedule_retry(&self, config: &PaxosConfig, env: E<'_>, instance: u64, attempt: u32) {
        let after = if config.backoff {
            let factor = 1u32 << (attempt - 1).min(MAX_DOUBLINGS);
            env.duration_between(config.retry.0 * factor, config.retry.1 * factor)
        } else {
            config.retry.0
        };
        env.set_timer(Timer::Retry(instance), after);
    }

    fn on_promise(
        &mut self,
        config: &PaxosConfig,
        env: E<'_>,
        instance: u64,
        from: NodeId,
        accepted: Option<(Ballot, u64)>,
    ) {
        let Some(run) = self.runs.get_mut(&instance) else {
            return;
        };
        let Phase::Preparing { promises, .. } = &mut run.phase else {
            return;
        };
        promises.insert(from, accepted);
        if promises.len() < config.majority() {
            return;
        }
        // P2c: the value of the highest-ballot acceptance reported, else its own.
        let own = value_of(instance, self.me);
        let value = if config.variant == PaxosVariant::IgnoreAccepted {
            own
        } else {
            promises
                .values()
                .flatten()
                .max_by_key(|(b, _)| *b)
                .map_or(own, |(_, v)| *v)
        };
        let ballot = run.ballot;
        run.phase = Phase::Accepting {
            value,
            acks: BTreeSet::new(),
            refused: BTreeSet::new(),
        };
        env.observe(Observation::Leader {
            term: ballot.term(),
        });
        to_acceptors(
            config,
            env,
            Msg::Accept {
                instance,
                ballot,
                value,
            },
        );
    }

    fn on_accepted(&mut self, config: &PaxosConfig, env: E<'_>, instance: u64, from: NodeId) {
        let Some(run) = self.runs.get_mut(&instance) else {
            return;
        };
        let Phase::Accepting { value, acks, .. } = &mut run.phase else {
            return;
        };
        acks.insert(from);
        if acks.len() < config.majority() {
            return;
        }
        let value = *value;
        run.phase = Phase::Chosen(value);
        env.observe(Observation::Decides { instance, value });
        env.observe(Observation::Follower {
            term: run.ballot.term(),
            leader: None,
        });
        env.cancel_timer(&Timer::Retry(instance));
    }

    /// A refusal: the ballot is given up once too many refused for a majority to be
    /// left; without back-off a new one is prepared at once.
    fn on_nack(
        &mut self,
        config: &PaxosConfig,
        env: E<'_>,
        instance: u64,
        from: NodeId,
        promised: Ballot,
    ) {
        self.highest_seen = self.highest_seen.max(promised.round);
        let Some(run) = self.runs.get_mut(&instance) else {
            return;
        };
        let refused = match &mut run.phase {
            Phase::Preparing { refused, .. } | Phase::Accepting { refused, .. } => refused,
            Phase::Waiting | Phase::Chosen(_) => return,
        };
        refused.insert(from);
        if refused.len() <= config.acceptors.len() - config.majority() {
            return;
        }
        run.phase = Phase::Waiting;
        env.observe(Observation::Follower {
            term: run.ballot.term(),
            leader: None,
        });
        if !config.backoff {
            self.prepare(config, env, instance);
        }
    }

    fn on_retry(&mut self, config: &PaxosConfig, env: E<'_>, instance: u64) {
        let Some(run) = self.runs.get(&instance) else {
            return;
        };
        match run.phase {
            Phase::Chosen(_) => {}
            Phase::Waiting => self.prepare(config, env, instance),
            Phase::Preparing { .. } | Phase::Accepting { .. } => {
                env.observe(Observation::Follower {
                    term: run.ballot.term(),
                    leader: None,
                });
                self.prepare(config, env, instance);
            }
        }
    }

    /// The next decision's slot: start it, and set the one after.
    fn on_next(&mut self, config: &PaxosConfig, env: E<'_>) {
        let next = self.disk.slot + 1;
        if next > config.instances {
            return;
        }
        if next < config.instances {
            env.set_timer(Timer::Next, config.interval);
        }
        self.begin(config, env, next);
    }
}

impl Paxos {
    /// Which state an instance's messages touch: its own, or (`shared-slot`) the one
    /// state the acceptor keeps for all.
    fn slot_of(config: &PaxosConfig, instance: u64) -> u64 {
        if config.variant == PaxosVariant::SharedSlot {
            0
        } else {
            instance
        }
    }

    /// The acceptor's state for `slot`: in memory, else as last written to disk.
    fn state(states: &mut BTreeMap<u64, AcceptorState>, env: E<'_>, slot: u64) -> AcceptorState {
        states
            .entry(slot)
            .or_insert_with(|| env.load(&acceptor_key(slot)).unwrap_or_default())
            .clone()
    }

    fn on_prepare(
        config: &PaxosConfig,
        states: &mut BTreeMap<u64, AcceptorState>,
        env: E<'_>,
        from: NodeId,
        instance: u64,
        ballot: Ballot,
    ) {
        let slot = Paxos::slot_of(config, instance);
        let mut s = Paxos::state(states, env, slot);
        // Promise a ballot no lower than every one promised (a duplicate Prepare of the
        // promised ballot is answered again).
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
        states.insert(slot, s.clone());
        let reply = Msg::Promise {
            instance,
            ballot,
            accepted: s.accepted,
        };
        if config.variant == PaxosVariant::ForgetPromise {
            env.send(from, reply);
            return;
        }
        // A failed sync: no answer (the proposer times out and tries again).
        if env.store_synced(&acceptor_key(slot), &s).is_ok() {
            env.send(from, reply);
        }
    }

    fn on_accept(
        config: &PaxosConfig,
        states: &mut BTreeMap<u64, AcceptorState>,
        env: E<'_>,
        from: NodeId,
        instance: u64,
        ballot: Ballot,
        value: u64,
    ) {
        let slot = Paxos::slot_of(config, instance);
        let mut s = Paxos::state(states, env, slot);
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
        states.insert(slot, s.clone());
        let mut durable = s;
        if config.variant == PaxosVariant::ForgetPromise {
            // Only the acceptance goes to disk: the promise stays what the disk had.
            let on_disk: AcceptorState = env.load(&acceptor_key(slot)).unwrap_or_default();
            durable.promised = on_disk.promised.max(Some(ballot));
        }
        if env.store_synced(&acceptor_key(slot), &durable).is_err() {
            return;
        }
        let reply = Msg::Accepted {
            instance,
            ballot,
            value,
        };
        env.send(from, reply.clone());
        for &l in &config.learners {
            if l != from {
                env.send(l, reply.clone());
            }
        }
    }

    fn on_learn(
        config: &PaxosConfig,
        tallies: &mut BTreeMap<u64, Tally>,
        env: E<'_>,
        from: NodeId,
        instance: u64,
        ballot: Ballot,
        value: u64,
    ) {
        let tally = tallies.entry(instance).or_default();
        let by = tally.accepted.entry((ballot, value)).or_default();
        by.insert(from);
        if by.len() >= config.majority() && tally.learned != Some(value) {
            tally.learned = Some(value);
            env.observe(Observation::Decides { instance, value });
        }
    }
}

impl Protocol for Paxos {
    type Msg = Msg;
    type Timer = Timer;
    type Config = PaxosConfig;

    fn new(config: &PaxosConfig, me: NodeId, _cluster: &Cluster) -> Paxos {
        let config = config.clone();
        match config.roles.get(me) {
            PaxosRole::Proposer => Paxos::Proposer {
                config,
                p: Proposer {
                    me,
                    disk: ProposerDisk::default(),
                    highest_seen: 0,
                    runs: BTreeMap::new(),
                },
            },
            PaxosRole::Acceptor => Paxos::Acceptor {
                config,
                states: BTreeMap::new(),
            },
            PaxosRole::Learner => Paxos::Learner {
                config,
                tallies: BTreeMap::new(),
            },
        }
    }

    fn on_start(&mut self, env: E<'_>) {
        let Paxos::Proposer { config, p } = self else {
            return; // acceptors read their state when a message needs it
        };
        if !config.active(p.me) {
            return;
        }
        p.disk = env.load(PROPOSER_KEY).unwrap_or_default();
        // After a restart: every decision it had started, again (it does not know which
        // were chosen; Paxos makes proposing again harmless). First boot: decision 1.
        let started = p.disk.slot.max(1);
        for instance in 1..=started {
            p.begin(config, env, instance);
        }
        if started < config.instances {
            env.set_timer(Timer::Next, config.interval);
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
            (
                Paxos::Learner { config, tallies },
                Msg::Accepted {
                    instance,
                    ballot,
                    value,
                },
            ) => Paxos::on_learn(config, tallies, env, from, instance, ballot, value),
            (Paxos::Proposer { config, p }, msg) => {
                let (instance, ballot) = match &msg {
                    Msg::Promise {
                        instance, ballot, ..
                    }
                    | Msg::Accepted {
                        instance, ballot, ..
                    }
                    | Msg::Nack {
                        instance, ballot, ..
                    } => (*instance, *ballot),
                    Msg::Prepare { .. } | Msg::Accept { .. } => return,
                };
                if let Msg::Nack { promised, .. } = &msg {
                    p.highest_seen = p.highest_seen.max(promised.round);
                }
                if p.runs.get(&instance).map(|r| r.ballot) != Some(ballot) {
                    return; // about an earlier ballot
                }
                match msg {
                    Msg::Promise { accepted, .. } => {
                        p.on_promise(config, env, instance, from, accepted)
                    }
                    Msg::Accepted { .. } => p.on_accepted(config, env, instance, from),
                    Msg::Nack { promised, .. } => p.on_nack(config, env, instance, from, promised),
                    Msg::Prepare { .. } | Msg::Accept { .. } => {}
                }
            }
            _ => {} // nobody sends acceptors answers, nor learners requests
        }
    }

    fn on_timer(&mut self, env: E<'_>, timer: Timer) {
        let Paxos::Proposer { config, p } = self else {
            return;
        };
        match timer {
            Timer::Retry(instance) => p.on_retry(config, env, instance),
            Timer::Next => p.on_next(config, env),
        }
    }
}

impl Configurable for Paxos {
    type Params = PaxosParams;
    type Variant = PaxosVariant;
    type Role = PaxosRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: PaxosParams,
        variant: PaxosVariant,
        cluster: &Cluster,
    ) -> Result<PaxosConfig, ParamError> {
        let roles: Roles<PaxosRole> = Roles::of(cluster)?;
        let of =
            |role| -> Vec<NodeId> { cluster.nodes().filter(|&n| roles.get(n) == role).collect() };
        let (proposers, acceptors, learners) = (
            of(PaxosRole::Proposer),
            of(PaxosRole::Acceptor),
            of(PaxosRole::Learner),
        );
        if proposers.is_empty() || acceptors.is_empty() {
            return Err(ParamError::new(
                "cluster",
                "paxos needs at least one proposer and one acceptor",
            ));
        }
        let [min, max] = params.retry;
        if min.0 > max.0 || min.0.is_zero() {
            return Err(ParamError::new(
                "retry",
                "give [min, max] with 0 < min <= max",
            ));
        }
        if params.instances == 0 {
            return Err(ParamError::new("instances", "make at least one decision"));
        }
        if params.interval.0.is_zero() {
            return Err(ParamError::new("interval", "must be above zero"));
        }
        Ok(PaxosConfig {
            variant,
            instances: params.instances,
            interval: params.interval.0,
            retry: (min.0, max.0),
            backoff: params.backoff && variant != PaxosVariant::NoBackoff,
            distinguished: params.distinguished,
            roles,
            proposers,
            acceptors,
            learners,
        })
    }

    fn promises(_config: &PaxosConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        // Safety only. Liveness (`decision-liveness`) needs a distinguished proposer
        // (Lamport §2.4; FLP rules out more), and even then it is not promised: under the
        // `power` profile, acceptors with slow disks (fsync up to ~90 ms) serve fewer
        // syncs a second than the 40 instances' retries ask for, and the backlog never
        // drains (seed 103 of `power` with `distinguished = true`, no fault events: an
        // instance still undecided 18 s after the calm). The dueling scenarios state
        // their own `within`.
        vec![
            tenure_core::Promise::new("agreement"),
            tenure_core::Promise::new("validity"),
        ]
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
        // Every variant's model: frozen clocks, every observation kept, timers when the
        // network is quiet, no crash, depth 16.
        const BOUNDS: Bounds = Bounds::DEFAULT
            .with_max_depth(16)
            .with_max_crashes(0)
            .with_clock(ClockModel::Frozen)
            .with_seen(SeenModel::All)
            .with_timers(TimerModel::Quiet);
        const VARIANT_BOUNDS: &[(&str, Bounds)] = &[
            // An acceptor that forgets its promise needs a crash and a restart between
            // that promise and a lower ballot's accept: 18 steps, all of them explored.
            (
                "forget-promise",
                BOUNDS
                    .with_max_depth(18)
                    .with_max_states(40_000_000)
                    .with_max_crashes(1),
            ),
            // The second decision takes a value reported for the first: 27 steps, once
            // the first decision's messages are all delivered.
            ("shared-slot", BOUNDS.with_max_depth(27)),
        ];
        Ok(ModelSpec::new(
            "two decisions by two proposers and three acceptors (the proposers learn); \
             messages delivered, lost or duplicated in any order, timers firing when no \
             message is in flight; shortest counterexamples for ignore-accepted and \
             same-ballot (16 steps); with bounds of their own, shared-slot (27 steps, the \
             second decision: 400,000 states, 10 seconds) and, with one crash, \
             forget-promise (18 steps: 28 million states, about 10 minutes and 1.1 GB in \
             a release build)",
            &[("proposer", 2), ("acceptor", 3)],
        )
        .with_out_of_scope(&[(
            "no-backoff",
            "a liveness bug (dueling proposers): the explorer judges safety only; \
             scenarios/paxos/dueling-no-backoff.toml shows it in the simulator",
        )])
        .with_bounds(BOUNDS)
        .with_variant_bounds(VARIANT_BOUNDS)
        .with_checks(&["agreement", "validity"])
        .with_params(r#"{"instances": 2}"#)
        .with_walk_params(r#"{"instances": 3}"#))
    }
}
