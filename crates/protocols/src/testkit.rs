//! A tiny deterministic network for whole-cluster unit tests of the zoo: fixed latency,
//! per-node drift and wall-clock steps, cut links, crashes and pauses. It is not the
//! simulator (that is `tenure-sim`, which depends on this crate, so this crate's own
//! tests cannot use it); it lets each protocol module test whole elections and
//! handovers, and count the messages they cost, next to its code.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{
    Cluster, Effect, LocalTime, NodeId, Observation, Protocol, SplitMix64, Step, StorageMap,
};

enum Event<P: Protocol> {
    Deliver {
        from: NodeId,
        to: NodeId,
        msg: P::Msg,
    },
    Timer {
        node: NodeId,
        timer: P::Timer,
        seq: u64,
    },
}

pub struct Net<P: Protocol> {
    pub cluster: Cluster,
    config: P::Config,
    /// True time, ns.
    pub now: u64,
    nodes: Vec<Option<P>>,
    storage: Vec<StorageMap>,
    drift: Vec<f64>,
    mono_base: Vec<i64>,
    wall_step: Vec<i64>,
    paused_until: Vec<u64>,
    queue: BTreeMap<(u64, u64), Event<P>>,
    timers: BTreeMap<(NodeId, P::Timer), u64>,
    seq: u64,
    pub latency: Duration,
    rng: SplitMix64,
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Every observation: (true time ns, node, observation).
    pub records: Vec<(u64, NodeId, Observation)>,
    /// Every message sent (even on a cut link): (true time ns, from, to, message).
    pub sent: Vec<(u64, NodeId, NodeId, P::Msg)>,
}

impl<P: Protocol> Net<P> {
    /// Builds every node and runs its `on_start` at time zero; messages take 1ms.
    pub fn start(config: P::Config, cluster: Cluster, seed: u64) -> Self {
        Self::start_with_latency(config, cluster, seed, Duration::from_millis(1))
    }

    /// As [`Net::start`], with every message taking `latency`.
    pub fn start_with_latency(
        config: P::Config,
        cluster: Cluster,
        seed: u64,
        latency: Duration,
    ) -> Self {
        let n = cluster.size();
        let mut net = Net {
            cluster,
            config,
            now: 0,
            nodes: (0..n).map(|_| None).collect(),
            storage: vec![StorageMap::new(); n],
            drift: vec![0.0; n],
            mono_base: vec![0; n],
            wall_step: vec![0; n],
            paused_until: vec![0; n],
            queue: BTreeMap::new(),
            timers: BTreeMap::new(),
            seq: 0,
            latency,
            rng: SplitMix64(seed),
            cut: BTreeSet::new(),
            records: Vec::new(),
            sent: Vec::new(),
        };
        for id in 0..n as u32 {
            net.boot(NodeId(id));
        }
        net
    }

    pub fn node(&self, id: u32) -> &P {
        self.nodes[id as usize].as_ref().expect("node is up")
    }

    /// Changes `id`'s clock rate from now on (its readings stay continuous).
    pub fn set_drift(&mut self, id: u32, drift: f64) {
        let i = id as usize;
        let mono_now = self.mono(NodeId(id)).0;
        self.drift[i] = drift;
        self.mono_base[i] = mono_now - ((1.0 + drift) * self.now as f64) as i64;
    }

    pub fn step_wall(&mut self, id: u32, by: Duration, backward: bool) {
        let d = by.as_nanos() as i64;
        self.wall_step[id as usize] += if backward { -d } else { d };
    }

    pub fn pause(&mut self, id: u32, for_: Duration) {
        self.paused_until[id as usize] = self.now + for_.as_nanos() as u64;
    }

    pub fn isolate(&mut self, id: u32) {
        for other in self.cluster.nodes() {
            if other != NodeId(id) {
                self.cut.insert((NodeId(id), other));
                self.cut.insert((other, NodeId(id)));
            }
        }
    }

    pub fn heal(&mut self) {
        self.cut.clear();
    }

    pub fn crash(&mut self, id: u32) {
        let node = NodeId(id);
        self.nodes[id as usize] = None;
        self.timers.retain(|(n, _), _| *n != node);
        self.records.push((self.now, node, Observation::Crashed));
    }

    pub fn restart(&mut self, id: u32) {
        self.boot(NodeId(id));
    }

    fn boot(&mut self, node: NodeId) {
        self.nodes[node.index()] = Some(P::new(&self.config, node, &self.cluster));
        self.records.push((self.now, node, Observation::Started));
        self.with_node(node, |p, step| p.on_start(step));
    }

    fn mono(&self, node: NodeId) -> LocalTime {
        let i = node.index();
        LocalTime(((1.0 + self.drift[i]) * self.now as f64) as i64 + self.mono_base[i])
    }

    fn wall(&self, node: NodeId) -> LocalTime {
        LocalTime(self.mono(node).0 + self.wall_step[node.index()])
    }

    /// Runs one handler on `node` and applies its effects.
    fn with_node(
        &mut self,
        node: NodeId,
        f: impl FnOnce(&mut P, &mut dyn tenure_core::Env<P::Msg, P::Timer>),
    ) {
        let i = node.index();
        let (mono, wall) = (self.mono(node), self.wall(node));
        let Some(mut p) = self.nodes[i].take() else {
            return;
        };
        let effects = {
            let mut step = Step::new(
                node,
                &self.cluster,
                mono,
                wall,
                &mut self.storage[i],
                &mut self.rng,
            );
            f(&mut p, &mut step);
            step.take_effects()
        };
        self.nodes[i] = Some(p);
        for effect in effects {
            match effect {
                Effect::Send { to, msg } => {
                    self.sent.push((self.now, node, to, msg.clone()));
                    if !self.cut.contains(&(node, to)) {
                        let at = self.now + self.latency.as_nanos() as u64;
                        self.push(
                            at,
                            Event::Deliver {
                                from: node,
                                to,
                                msg,
                            },
                        );
                    }
                }
                Effect::SetTimer { timer, after } => {
                    self.seq += 1;
                    let seq = self.seq;
                    self.timers.insert((node, timer.clone()), seq);
                    let true_after = after.as_nanos() as f64 / (1.0 + self.drift[i]);
                    let at = self.now + true_after.ceil() as u64;
                    self.push(at, Event::Timer { node, timer, seq });
                }
                Effect::CancelTimer { timer } => {
                    self.timers.remove(&(node, timer));
                }
                Effect::Observe(obs) => self.records.push((self.now, node, obs)),
                // This harness has no fsync latency and no power loss.
                Effect::Store { .. } | Effect::Sync { .. } => {}
            }
        }
    }

    fn push(&mut self, at: u64, event: Event<P>) {
        self.seq += 1;
        self.queue.insert((at, self.seq), event);
    }

    /// Runs every event up to true time `until` (ns).
    pub fn run_until(&mut self, until: Duration) {
        let until = until.as_nanos() as u64;
        while let Some(entry) = self.queue.first_entry() {
            let (at, _) = *entry.key();
            if at > until {
                break;
            }
            let event = entry.remove();
            self.now = self.now.max(at);
            let node = match &event {
                Event::Deliver { to, .. } => *to,
                Event::Timer { node, .. } => *node,
            };
            if self.paused_until[node.index()] > self.now {
                let resume = self.paused_until[node.index()];
                self.push(resume, event);
                continue;
            }
            match event {
                Event::Deliver { from, to, msg } => {
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
        self.now = self.now.max(until);
    }

    /// Messages sent in true time `from..=to` (ns) that match `pred`: what a stretch of
    /// a run cost.
    pub fn count_sent(&self, from: u64, to: u64, pred: impl Fn(&P::Msg) -> bool) -> usize {
        self.sent
            .iter()
            .filter(|(t, _, _, m)| (from..=to).contains(t) && pred(m))
            .count()
    }

    /// Runs until `after` more true time has passed.
    pub fn run(&mut self, after: Duration) {
        let until = Duration::from_nanos(self.now) + after;
        self.run_until(until);
    }

    /// Each up node's latest role observation.
    pub fn beliefs(&self) -> BTreeMap<NodeId, Observation> {
        let mut latest = BTreeMap::new();
        for (_, node, obs) in &self.records {
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

    /// The up nodes that currently believe they lead.
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
        for (_, node, obs) in &self.records {
            if let Observation::Leader { term } = obs {
                by_term.entry(*term).or_default().insert(*node);
            }
        }
        by_term
    }
}
