//! A global state of the model: every node's process, storage and pending timers, the
//! messages in flight and the fault budget used; and how one [`Action`] moves it.
//!
//! Handlers run through [`Step`], so the explorer drives exactly the code the simulator
//! runs. What the model leaves free or abstracts:
//!
//! * **Timing is free.** A pending timer is just an id; any pending timer may fire at
//!   any point, whatever duration was asked for. Any in-flight message may be delivered
//!   in any order.
//! * **Clocks are logical.** A node's monotonic and wall readings are both
//!   `steps × 1ms`, where `steps` counts the handler calls that node has run. Since
//!   timers fire in any order anyway, real durations carry no meaning here, so
//!   timing-based properties (lease safety, single leader *at a true instant* with
//!   clock drift) stay with the simulator, which models true time, drift and skew.
//! * **Time may leap.** With [`crate::Bounds::max_leaps`] above zero the environment may
//!   move every clock forward by [`LEAP`] at once ([`Action::Leap`]): every TTL, lease
//!   and session deadline then lies in the past, as when true time passes. Since timers
//!   and deliveries stay free, whoever does not run before the deadline-holder acts is
//!   *paused* past it: a lock holder whose TTL expires at the server before its write
//!   is delivered (the GC pause of Kleppmann 2016).
//! * **Nodes may lie.** With [`crate::Bounds::max_byzantine`] above zero the environment
//!   may turn a live node of the cluster's first role Byzantine ([`Action::Turn`]), as
//!   the simulator's `byzantine` fault does: the host records `Observation::Byzantine`
//!   (checkers stop trusting that node's records), the node gets `on_byzantine`, and
//!   again after every restart.
//! * **Randomness is a function of the state.** Each handler call gets a
//!   [`SplitMix64`] seeded from a hash of (node, its step count), so a handler is a
//!   pure function of the state it runs in.

use crate::action::Action;
use crate::{ClockModel, SeenModel, TimerModel};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;
use tenure_core::{
    Byzantine, Cluster, Effect, NodeId, Observation, Protocol, Record, SimTime, SplitMix64, Step,
    StorageMap,
};

/// The clock and seen models, passed together down the handler helpers.
type Models = (ClockModel, SeenModel);

/// Logical time per step (node clocks) and per depth (record stamps).
pub use tenure_core::model::TICK;

/// How far every clock moves on an [`Action::Leap`]: longer than any timeout, TTL or
/// lease the zoo's parameters use, so after a leap every deadline has passed.
pub const LEAP: Duration = Duration::from_secs(3_600);

/// One node: its process (`None` while crashed), its durable storage and its pending
/// timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeState<P: Protocol> {
    pub process: Option<P>,
    pub storage: StorageMap,
    pub timers: BTreeSet<P::Timer>,
    /// Handler calls run by this node (its logical clock). Not part of the fingerprint.
    pub steps: u64,
    /// The term the node last observed itself leading, until it observes another role
    /// or crashes (a belief derived from its observations, not from its internals).
    pub leads: Option<u64>,
    /// How it lies, once the environment turned it Byzantine ([`Action::Turn`]): for
    /// the rest of the run, across restarts.
    pub byzantine: Option<Byzantine>,
}

/// A global state. `Hash` leaves out the logical clocks ([`NodeState::steps`]): two
/// states that differ only in how many steps their nodes took are one state to the
/// explorer (the first path to reach it, a shortest one, stands for all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State<P: Protocol> {
    pub nodes: Vec<NodeState<P>>,
    /// The messages in flight, as a multiset.
    pub in_flight: BTreeMap<(NodeId, NodeId, P::Msg), u32>,
    /// Every (node, observation) made on the path to this state (of those [`SeenModel`]
    /// keeps). Two paths that reach
    /// the same nodes and network are only merged if they also observed the same
    /// things, so a checker that judges the set of beliefs held (single leader per term)
    /// loses nothing to deduplication. Order and timing of observations are not kept.
    pub seen: BTreeSet<(NodeId, Observation)>,
    pub crashes: u32,
    pub drops: u32,
    pub duplicates: u32,
    /// How many times time leapt ([`Action::Leap`]); every clock reads `leaps × LEAP`
    /// on top of the [`ClockModel`]'s reading.
    pub leaps: u32,
    /// How many times a node was isolated ([`Action::Isolate`]).
    pub isolations: u32,
    /// How many nodes (the first ones, `NodeId`s `0..eligible`) form the cluster's first
    /// role, the only nodes [`Action::Turn`] may turn. Fixed by the cluster: not part
    /// of the fingerprint.
    pub eligible: u32,
}

impl<P: Protocol> Hash for State<P> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for node in &self.nodes {
            node.process.hash(h);
            node.storage.hash(h);
            node.timers.hash(h);
            node.leads.hash(h);
            node.byzantine.hash(h);
        }
        self.in_flight.hash(h);
        self.seen.hash(h);
        (
            self.crashes,
            self.drops,
            self.duplicates,
            self.leaps,
            self.isolations,
        )
            .hash(h);
    }
}

impl<P: Protocol> State<P> {
    /// Every node `new` + `on_start`. Returns the state and the records made.
    pub fn initial(
        config: &P::Config,
        cluster: &Cluster,
        bounds: &crate::Bounds,
    ) -> (State<P>, Vec<Record>) {
        let mut state = State {
            nodes: cluster
                .nodes()
                .map(|_| NodeState {
                    process: None,
                    storage: StorageMap::new(),
                    timers: BTreeSet::new(),
                    steps: 0,
                    leads: None,
                    byzantine: None,
                })
                .collect(),
            in_flight: BTreeMap::new(),
            seen: BTreeSet::new(),
            crashes: 0,
            drops: 0,
            duplicates: 0,
            leaps: 0,
            isolations: 0,
            eligible: cluster
                .roles()
                .first()
                .map_or(0, |r| cluster.with_role(&r.role).count() as u32),
        };
        let mut records = Vec::new();
        for node in cluster.nodes() {
            state.start(
                config,
                cluster,
                (bounds.clock, bounds.seen),
                node,
                0,
                &mut records,
            );
        }
        (state, records)
    }

    /// A 64-bit hash of everything but the logical clocks (see the `Hash` impl).
    /// Collisions are possible in principle (about n²/2⁶⁵ for n states: 3·10⁻⁸ at a
    /// million states).
    pub fn fingerprint(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }

    /// The nodes that currently believe they lead, with their terms.
    pub fn leaders(&self) -> Vec<(NodeId, u64)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.leads.map(|term| (NodeId(i as u32), term)))
            .collect()
    }

    /// How many nodes the environment turned Byzantine.
    pub fn turned(&self) -> u32 {
        self.nodes.iter().filter(|n| n.byzantine.is_some()).count() as u32
    }

    /// A stored value of `node` read as JSON (`None` if absent or of another type).
    pub fn stored<T: serde::de::DeserializeOwned>(&self, node: NodeId, key: &str) -> Option<T> {
        let text = self.nodes[node.index()].storage.get(key)?;
        serde_json::from_str(text).ok()
    }

    /// The actions enabled in this state under `bounds`, in a fixed order.
    pub fn actions(&self, bounds: &crate::Bounds) -> Vec<Action<P>> {
        let mut out = Vec::new();
        for (from, to, msg) in self.in_flight.keys() {
            if self.nodes[to.index()].process.is_some() {
                out.push(Action::Deliver {
                    from: *from,
                    to: *to,
                    msg: msg.clone(),
                });
            }
            if self.drops < bounds.max_drops {
                out.push(Action::Drop {
                    from: *from,
                    to: *to,
                    msg: msg.clone(),
                });
            }
            if self.duplicates < bounds.max_duplicates {
                out.push(Action::Duplicate {
                    from: *from,
                    to: *to,
                    msg: msg.clone(),
                });
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let id = NodeId(i as u32);
            if bounds.timers == TimerModel::Quiet && !self.in_flight.is_empty() {
                continue;
            }
            for timer in &node.timers {
                out.push(Action::Fire {
                    node: id,
                    timer: timer.clone(),
                });
            }
        }
        if self.isolations < bounds.max_isolations {
            for i in 0..self.nodes.len() {
                let id = NodeId(i as u32);
                if self
                    .in_flight
                    .keys()
                    .any(|(from, to, _)| *from == id || *to == id)
                {
                    out.push(Action::Isolate { node: id });
                }
            }
        }
        if self.leaps < bounds.max_leaps {
            out.push(Action::Leap);
        }
        if self.turned() < bounds.max_byzantine {
            for (i, node) in self.nodes.iter().enumerate().take(self.eligible as usize) {
                if node.process.is_some() && node.byzantine.is_none() {
                    for &behaviour in bounds.behaviours {
                        out.push(Action::Turn {
                            node: NodeId(i as u32),
                            behaviour,
                        });
                    }
                }
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let id = NodeId(i as u32);
            if node.process.is_some() {
                if self.crashes < bounds.max_crashes {
                    out.push(Action::Crash { node: id });
                }
            } else {
                out.push(Action::Restart { node: id });
            }
        }
        out
    }

    /// Applies `action` (which must be enabled), stamping records with logical time
    /// `depth`. Returns the records made.
    pub fn apply(
        &mut self,
        config: &P::Config,
        cluster: &Cluster,
        bounds: &crate::Bounds,
        action: &Action<P>,
        depth: usize,
    ) -> Vec<Record> {
        let clock = (bounds.clock, bounds.seen);
        let mut records = Vec::new();
        match action {
            Action::Deliver { from, to, msg } => {
                self.take_message(*from, *to, msg);
                let (from, msg) = (*from, msg.clone());
                self.run(cluster, clock, *to, depth, &mut records, |p, env| {
                    p.on_message(env, from, msg)
                });
            }
            Action::Drop { from, to, msg } => {
                self.take_message(*from, *to, msg);
                self.drops += 1;
            }
            Action::Duplicate { from, to, msg } => {
                let count = self
                    .in_flight
                    .get_mut(&(*from, *to, msg.clone()))
                    .expect("a duplicated message is in flight");
                *count += 1;
                self.duplicates += 1;
            }
            Action::Fire { node, timer } => {
                let removed = self.nodes[node.index()].timers.remove(timer);
                assert!(
                    removed,
                    "{node} fired timer {timer:?}, which is not pending"
                );
                let timer = timer.clone();
                self.run(cluster, clock, *node, depth, &mut records, |p, env| {
                    p.on_timer(env, timer)
                });
            }
            Action::Isolate { node } => {
                assert!(
                    self.isolations < bounds.max_isolations,
                    "a node was isolated beyond the budget"
                );
                let node = *node;
                self.in_flight
                    .retain(|(from, to, _), _| *from != node && *to != node);
                self.isolations += 1;
            }
            Action::Leap => {
                assert!(
                    self.leaps < bounds.max_leaps,
                    "time leapt beyond its budget"
                );
                self.leaps += 1;
            }
            Action::Crash { node } => {
                let n = &mut self.nodes[node.index()];
                assert!(n.process.is_some(), "{node} crashed while down");
                n.process = None;
                n.timers.clear();
                self.crashes += 1;
                self.observe(*node, Observation::Crashed, clock, depth, &mut records);
            }
            Action::Restart { node } => {
                assert!(
                    self.nodes[node.index()].process.is_none(),
                    "{node} restarted while up"
                );
                self.start(config, cluster, clock, *node, depth, &mut records);
            }
            Action::Turn { node, behaviour } => {
                assert!(
                    self.turned() < bounds.max_byzantine,
                    "a node turned Byzantine beyond the budget"
                );
                let n = &mut self.nodes[node.index()];
                assert!(
                    n.process.is_some() && n.byzantine.is_none(),
                    "{node} turned while down or already Byzantine"
                );
                n.byzantine = Some(*behaviour);
                let behaviour = *behaviour;
                self.observe(
                    *node,
                    Observation::Byzantine { behaviour },
                    clock,
                    depth,
                    &mut records,
                );
                self.run(cluster, clock, *node, depth, &mut records, |p, env| {
                    p.on_byzantine(env, behaviour)
                });
            }
        }
        records
    }

    fn take_message(&mut self, from: NodeId, to: NodeId, msg: &P::Msg) {
        let key = (from, to, msg.clone());
        let count = self
            .in_flight
            .get_mut(&key)
            .expect("a delivered or dropped message is in flight");
        *count -= 1;
        if *count == 0 {
            self.in_flight.remove(&key);
        }
    }

    fn start(
        &mut self,
        config: &P::Config,
        cluster: &Cluster,
        clock: Models,
        node: NodeId,
        depth: usize,
        records: &mut Vec<Record>,
    ) {
        self.observe(node, Observation::Started, clock, depth, records);
        self.nodes[node.index()].process = Some(P::new(config, node, cluster));
        self.run(cluster, clock, node, depth, records, |p, env| {
            p.on_start(env)
        });
        // A Byzantine node stays Byzantine: every start tells its new process again
        // (the simulator's `World::start_node` does the same).
        if let Some(behaviour) = self.nodes[node.index()].byzantine {
            self.run(cluster, clock, node, depth, records, |p, env| {
                p.on_byzantine(env, behaviour)
            });
        }
    }

    /// Runs one handler of `node` through a [`Step`] and applies its effects.
    fn run(
        &mut self,
        cluster: &Cluster,
        clock: Models,
        node: NodeId,
        depth: usize,
        records: &mut Vec<Record>,
        handler: impl FnOnce(&mut P, &mut Step<'_, P::Msg, P::Timer>),
    ) {
        let n = &mut self.nodes[node.index()];
        n.steps += 1;
        let mut seed = DefaultHasher::new();
        (node, n.steps).hash(&mut seed);
        let mut rng = SplitMix64(seed.finish());
        let now = clock.0.reading(n.steps) + LEAP * self.leaps;
        let mut process = n.process.take().expect("a handler runs on a live node");
        let effects = {
            let mut step = Step::new(node, cluster, now, now, &mut n.storage, &mut rng);
            handler(&mut process, &mut step);
            step.effects
        };
        n.process = Some(process);
        for effect in effects {
            match effect {
                Effect::Send { to, msg } => {
                    *self.in_flight.entry((node, to, msg)).or_insert(0) += 1;
                }
                Effect::SetTimer { timer, .. } => {
                    self.nodes[node.index()].timers.insert(timer);
                }
                Effect::CancelTimer { timer } => {
                    self.nodes[node.index()].timers.remove(&timer);
                }
                // Already applied to storage by the Step.
                Effect::Store { .. } => {}
                // The explorer models process crashes, not power loss: every write
                // survives, so a sync changes nothing here.
                Effect::Sync { .. } => {}
                Effect::Observe(obs) => self.observe(node, obs, clock, depth, records),
            }
        }
    }

    fn observe(
        &mut self,
        node: NodeId,
        obs: Observation,
        clock: Models,
        depth: usize,
        records: &mut Vec<Record>,
    ) {
        let n = &mut self.nodes[node.index()];
        match obs {
            Observation::Leader { term } => n.leads = Some(term),
            Observation::Follower { .. } | Observation::Candidate { .. } | Observation::Crashed => {
                n.leads = None
            }
            _ => {}
        }
        let reading = clock.0.reading(n.steps) + LEAP * self.leaps;
        records.push(Record::new(
            SimTime::ZERO + TICK * depth as u32,
            node,
            reading,
            reading,
            obs.clone(),
        ));
        if clock.1.keeps(&obs) {
            self.seen.insert((node, obs));
        }
    }
}
