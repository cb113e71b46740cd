//! A tiny deterministic driver for whole-cluster tests of one protocol: fixed message
//! latency, perfect clocks, isolation and crash/restart. It is not the simulator (that
//! is tenure-sim); it only lets this crate check that its protocols converge.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{
    Cluster, Effect, LocalTime, NodeId, Observation, Protocol, SplitMix64, Step, StorageMap,
};

enum Event<P: Protocol> {
    Deliver {
        to: NodeId,
        from: NodeId,
        msg: P::Msg,
    },
    Timer {
        node: NodeId,
        timer: P::Timer,
        seq: u64,
    },
}

pub struct Net<P: Protocol> {
    config: P::Config,
    cluster: Cluster,
    nodes: Vec<Option<P>>,
    storages: Vec<StorageMap>,
    rng: SplitMix64,
    now_ns: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Event<P>>,
    /// The live sequence number of each set timer (a moved or cancelled timer's old
    /// event is stale).
    timers: BTreeMap<(NodeId, P::Timer), u64>,
    isolated: BTreeSet<NodeId>,
    latency: Duration,
    pub observations: Vec<(Duration, NodeId, Observation)>,
}

impl<P: Protocol> Net<P> {
    /// Builds and starts every node.
    pub fn start(config: P::Config, cluster: Cluster, seed: u64) -> Net<P> {
        let n = cluster.size();
        let mut net = Net {
            config,
            cluster,
            nodes: (0..n).map(|_| None).collect(),
            storages: vec![StorageMap::new(); n],
            rng: SplitMix64(seed),
            now_ns: 0,
            seq: 0,
            queue: BTreeMap::new(),
            timers: BTreeMap::new(),
            isolated: BTreeSet::new(),
            latency: Duration::from_millis(5),
            observations: Vec::new(),
        };
        for i in 0..n as u32 {
            net.boot(NodeId(i));
        }
        net
    }

    pub fn node(&self, id: u32) -> &P {
        self.nodes[id as usize].as_ref().expect("node is up")
    }

    fn boot(&mut self, id: NodeId) {
        self.nodes[id.index()] = Some(P::new(&self.config, id, &self.cluster));
        self.with_node(id, |p, step| p.on_start(step));
    }

    pub fn crash(&mut self, id: u32) {
        self.nodes[id as usize] = None;
        self.timers.retain(|(n, _), _| n.0 != id);
    }

    pub fn restart(&mut self, id: u32) {
        assert!(self.nodes[id as usize].is_none(), "restart of a live node");
        self.boot(NodeId(id));
    }

    pub fn isolate(&mut self, id: u32) {
        self.isolated.insert(NodeId(id));
    }

    pub fn heal(&mut self) {
        self.isolated.clear();
    }

    /// Runs until `after` more time has passed.
    pub fn run(&mut self, after: Duration) {
        let end = self.now_ns + after.as_nanos() as u64;
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > end {
                break;
            }
            let ((at, _), event) = entry.remove_entry();
            self.now_ns = at;
            match event {
                Event::Deliver { to, from, msg } => {
                    self.with_node(to, |p, step| p.on_message(step, from, msg));
                }
                Event::Timer { node, timer, seq } => {
                    if self.timers.get(&(node, timer.clone())) == Some(&seq) {
                        self.timers.remove(&(node, timer.clone()));
                        self.with_node(node, |p, step| p.on_timer(step, timer));
                    }
                }
            }
        }
        self.now_ns = end;
    }

    fn with_node(&mut self, id: NodeId, f: impl FnOnce(&mut P, &mut Step<'_, P::Msg, P::Timer>)) {
        let Some(node) = self.nodes[id.index()].as_mut() else {
            return; // crashed: the message is lost
        };
        let now = LocalTime(self.now_ns as i64);
        let mut step = Step::new(
            id,
            &self.cluster,
            now,
            now,
            &mut self.storages[id.index()],
            &mut self.rng,
        );
        f(node, &mut step);
        let effects = step.take_effects();
        for effect in effects {
            self.apply(id, effect);
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn apply(&mut self, id: NodeId, effect: Effect<P::Msg, P::Timer>) {
        match effect {
            Effect::Send { to, msg } => {
                if !self.isolated.contains(&id) && !self.isolated.contains(&to) {
                    let at = self.now_ns + self.latency.as_nanos() as u64;
                    let seq = self.next_seq();
                    self.queue
                        .insert((at, seq), Event::Deliver { to, from: id, msg });
                }
            }
            Effect::SetTimer { timer, after } => {
                let at = self.now_ns + after.as_nanos() as u64;
                let seq = self.next_seq();
                let event = Event::Timer {
                    node: id,
                    timer: timer.clone(),
                    seq,
                };
                self.queue.insert((at, seq), event);
                self.timers.insert((id, timer), seq);
            }
            Effect::CancelTimer { timer } => {
                self.timers.remove(&(id, timer));
            }
            Effect::Store { .. } => {} // Step already wrote it
            Effect::Observe(obs) => {
                self.observations
                    .push((Duration::from_nanos(self.now_ns), id, obs));
            }
        }
    }

    /// Each node's latest role observation, for nodes that are up.
    pub fn beliefs(&self) -> BTreeMap<NodeId, Observation> {
        let mut latest = BTreeMap::new();
        for (_, node, obs) in &self.observations {
            if matches!(
                obs,
                Observation::Leader { .. }
                    | Observation::Follower { .. }
                    | Observation::Candidate { .. }
            ) {
                latest.insert(*node, obs.clone());
            }
        }
        latest.retain(|n, _| self.nodes[n.index()].is_some());
        latest
    }

    /// The nodes that are up and currently believe they lead.
    pub fn leaders(&self) -> Vec<NodeId> {
        self.beliefs()
            .into_iter()
            .filter(|(_, o)| matches!(o, Observation::Leader { .. }))
            .map(|(n, _)| n)
            .collect()
    }

    /// Every (term, node) that ever observed `Leader`.
    pub fn leaders_by_term(&self) -> BTreeMap<u64, BTreeSet<NodeId>> {
        let mut by_term: BTreeMap<u64, BTreeSet<NodeId>> = BTreeMap::new();
        for (_, node, obs) in &self.observations {
            if let Observation::Leader { term } = obs {
                by_term.entry(*term).or_default().insert(*node);
            }
        }
        by_term
    }
}
