//! The simulated network: default latency/loss/duplication, per-link overrides, and the
//! blocked links that partitions, cuts, one-way splits and bridges leave behind.
//!
//! A message's fate is decided when it is sent: dropped by a partition, lost, or
//! delivered once or twice after a latency drawn from its link's delay distribution
//! ([`sample`]). Random latencies reorder messages. A partition made while a message is
//! in flight does not recall it.

use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{NodeId, Rng, SimTime};
pub use tenure_scenario::Delay;

/// Network settings for a link or the whole network.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSettings {
    /// The delay distribution (uniform `1ms..=5ms` by default).
    pub latency: Delay,
    pub loss: f64,
    pub duplicate: f64,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            latency: Delay::uniform(Duration::from_millis(1), Duration::from_millis(5)),
            loss: 0.0,
            duplicate: 0.0,
        }
    }
}

/// One delay drawn from `delay` with `rng`: [`Delay::sample`] (the sampler lives with
/// the distribution so that real runs, `tenure real` and `tenure cluster`, draw the same
/// shapes without the engine).
pub fn sample(delay: &Delay, rng: &mut dyn Rng) -> Duration {
    delay.sample(rng)
}

/// A per-link override: each field replaces the default when set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkOverride {
    pub latency: Option<Delay>,
    pub loss: Option<f64>,
    pub duplicate: Option<f64>,
}

/// Why a message was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    Partition,
    Loss,
    /// The receiver was down when the message arrived.
    Down,
    /// Stream mode: the connection was reset (a partition outlasted the connection
    /// timeout, or an end crashed) while the message was queued on it.
    Reset,
}

/// What happens to one sent message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Dropped(DropReason),
    /// Delivered at this true time, and at the second when duplicated (no allocation
    /// a message: this is the simulator's hottest path).
    Delivered(SimTime, Option<SimTime>),
}

/// Stream mode: a message the link's `loss` would lose is sent again after this (Linux's
/// minimum TCP retransmission timeout), so it arrives late instead of never.
pub const STREAM_RETRANSMIT: Duration = Duration::from_millis(200);

/// Stream mode's default connection timeout: how long a connection survives a broken
/// link before both ends see it reset.
pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Clone, Debug)]
pub struct Network {
    n: usize,
    pub defaults: LinkSettings,
    overrides: BTreeMap<(NodeId, NodeId), LinkOverride>,
    /// The faults in force that block links, each kept as it was declared: a link is
    /// blocked when one of them blocks it. Only faults that block at least one link are
    /// kept, so "nothing blocked" is "nothing kept". O(nodes) a fault, not O(nodes²):
    /// a bit a link took 12.5 MB at 10,000 nodes and 1.25 GB at 100,000 (issue 38:
    /// the node limit is a limit, not a structure), and every heal cleared all of it.
    blocks: Vec<Block>,
}

/// One fault that blocks links (see [`Network::is_blocked`]).
#[derive(Clone, Debug)]
enum Block {
    /// A partition: the group of every node (unlisted nodes: `u32::MAX`, one more
    /// group); a link between two groups is blocked.
    Groups(Vec<u32>),
    /// Every link to and from the node.
    Isolate(NodeId),
    /// Every link from a node of the first list to a node of the second (sorted).
    OneWay(Vec<NodeId>, Vec<NodeId>),
    /// A partial partition: links between two different groups (sorted, without the
    /// bridge), except those of the bridge.
    Bridge(NodeId, Vec<Vec<NodeId>>),
}

impl Block {
    fn blocks(&self, from: NodeId, to: NodeId) -> bool {
        match self {
            Block::Groups(group_of) => group_of[from.index()] != group_of[to.index()],
            Block::Isolate(node) => from == *node || to == *node,
            Block::OneWay(f, t) => f.binary_search(&from).is_ok() && t.binary_search(&to).is_ok(),
            Block::Bridge(bridge, groups) => {
                if from == *bridge || to == *bridge {
                    return false;
                }
                let has = |g: &Vec<NodeId>, n: NodeId| g.binary_search(&n).is_ok();
                groups.iter().enumerate().any(|(i, g)| {
                    has(g, from) && groups.iter().enumerate().any(|(j, h)| i != j && has(h, to))
                })
            }
        }
    }
}

/// `nodes` sorted, without repeats.
fn sorted(nodes: &[NodeId]) -> Vec<NodeId> {
    let mut v = nodes.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

impl Network {
    pub fn new(n: usize, defaults: LinkSettings) -> Network {
        Network {
            n,
            defaults,
            overrides: BTreeMap::new(),
            blocks: Vec::new(),
        }
    }

    pub fn set_override(&mut self, from: NodeId, to: NodeId, link: LinkOverride) {
        self.overrides.insert((from, to), link);
    }

    /// The override of the link `from -> to`, if any.
    pub fn override_of(&self, from: NodeId, to: NodeId) -> Option<&LinkOverride> {
        self.overrides.get(&(from, to))
    }

    /// Puts back what [`Network::override_of`] gave (`None`: no override).
    pub fn restore_override(&mut self, from: NodeId, to: NodeId, link: Option<LinkOverride>) {
        match link {
            Some(l) => self.set_override(from, to, l),
            None => {
                self.overrides.remove(&(from, to));
            }
        }
    }

    /// A node's link to itself is never blocked.
    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        from != to && self.blocks.iter().any(|b| b.blocks(from, to))
    }

    /// Any partition at all in force?
    pub fn is_partitioned(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// Splits the cluster into `groups`; nodes in no group form one more group. Adds to
    /// whatever is already blocked.
    pub fn partition(&mut self, groups: &[Vec<NodeId>]) {
        let mut group_of = vec![u32::MAX; self.n];
        for (g, members) in groups.iter().enumerate() {
            for m in members {
                group_of[m.index()] = g as u32;
            }
        }
        if group_of.iter().any(|g| *g != group_of[0]) {
            self.blocks.push(Block::Groups(group_of));
        }
    }

    pub fn isolate(&mut self, node: NodeId) {
        if self.n > 1 {
            self.blocks.push(Block::Isolate(node));
        }
    }

    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        if a != b {
            self.blocks.push(Block::OneWay(vec![a], vec![b]));
            self.blocks.push(Block::OneWay(vec![b], vec![a]));
        }
    }

    pub fn one_way(&mut self, from: &[NodeId], to: &[NodeId]) {
        let (from, to) = (sorted(from), sorted(to));
        // Blocks something unless the only link it names is a node's to itself.
        let only_self = from.len() == 1 && to.len() == 1 && from == to;
        if !from.is_empty() && !to.is_empty() && !only_self {
            self.blocks.push(Block::OneWay(from, to));
        }
    }

    /// A partial partition: the groups do not see each other; `bridge` sees everyone.
    pub fn bridge(&mut self, bridge: NodeId, groups: &[Vec<NodeId>]) {
        let groups: Vec<Vec<NodeId>> = groups
            .iter()
            .map(|g| {
                let mut g = sorted(g);
                g.retain(|n| *n != bridge);
                g
            })
            .collect();
        let blocks_some = groups.iter().enumerate().any(|(i, g)| {
            groups[i + 1..]
                .iter()
                .any(|h| g.iter().any(|a| h.iter().any(|b| a != b)))
        });
        if blocks_some {
            self.blocks.push(Block::Bridge(bridge, groups));
        }
    }

    pub fn heal(&mut self) {
        self.blocks.clear();
    }

    /// The link's latency, loss and duplication: [`Network::settings`] without the
    /// clone (a `Spikes` latency is boxed: cloning it allocated once a message).
    fn link(&self, from: NodeId, to: NodeId) -> (&Delay, f64, f64) {
        let d = &self.defaults;
        match self.overrides.get(&(from, to)) {
            None => (&d.latency, d.loss, d.duplicate),
            Some(o) => (
                o.latency.as_ref().unwrap_or(&d.latency),
                o.loss.unwrap_or(d.loss),
                o.duplicate.unwrap_or(d.duplicate),
            ),
        }
    }

    pub fn settings(&self, from: NodeId, to: NodeId) -> LinkSettings {
        let mut s = self.defaults.clone();
        if let Some(o) = self.overrides.get(&(from, to)) {
            if let Some(l) = &o.latency {
                s.latency = l.clone();
            }
            if let Some(l) = o.loss {
                s.loss = l;
            }
            if let Some(d) = o.duplicate {
                s.duplicate = d;
            }
        }
        s
    }

    /// Stream mode: when a message sent at `now` on an open link arrives, before FIFO
    /// ordering: a latency from the link's distribution, plus [`STREAM_RETRANSMIT`] when the
    /// link's `loss` strikes (TCP resends; it neither loses nor duplicates).
    pub fn stream_arrival(
        &self,
        from: NodeId,
        to: NodeId,
        now: SimTime,
        rng: &mut dyn Rng,
    ) -> SimTime {
        let (latency, loss, _) = self.link(from, to);
        let mut at = now + sample(latency, rng);
        if rng.chance(loss) {
            at = at + STREAM_RETRANSMIT;
        }
        at
    }

    /// Decides the fate of a message sent at `now`.
    pub fn route(&self, from: NodeId, to: NodeId, now: SimTime, rng: &mut dyn Rng) -> Fate {
        if self.is_blocked(from, to) {
            return Fate::Dropped(DropReason::Partition);
        }
        let (latency, loss, duplicate) = self.link(from, to);
        if rng.chance(loss) {
            return Fate::Dropped(DropReason::Loss);
        }
        let at = now + sample(latency, rng);
        let again = rng.chance(duplicate).then(|| now + sample(latency, rng));
        Fate::Delivered(at, again)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::SplitMix64;

    fn n(i: u32) -> NodeId {
        NodeId(i)
    }

    #[test]
    fn partitions_block_across_groups_only() {
        let mut net = Network::new(5, LinkSettings::default());
        net.partition(&[vec![n(0), n(1)], vec![n(2), n(3)]]);
        assert!(!net.is_blocked(n(0), n(1)));
        assert!(net.is_blocked(n(0), n(2)));
        assert!(
            net.is_blocked(n(4), n(0)),
            "unlisted nodes form their own group"
        );
        net.heal();
        assert!(!net.is_partitioned());
    }

    /// The bit-a-link network the fault list replaced, as the reference.
    struct Bits {
        n: usize,
        bits: Vec<bool>,
    }

    impl Bits {
        fn block(&mut self, a: NodeId, b: NodeId) {
            if a != b {
                self.bits[a.index() * self.n + b.index()] = true;
            }
        }
        fn apply(&mut self, fault: &Op) {
            let n = self.n;
            match fault {
                Op::Partition(groups) => {
                    let mut group_of = vec![usize::MAX; n];
                    for (g, members) in groups.iter().enumerate() {
                        for m in members {
                            group_of[m.index()] = g;
                        }
                    }
                    for a in 0..n {
                        for b in 0..n {
                            if group_of[a] != group_of[b] {
                                self.block(NodeId(a as u32), NodeId(b as u32));
                            }
                        }
                    }
                }
                Op::Isolate(node) => {
                    for o in 0..n as u32 {
                        self.block(*node, NodeId(o));
                        self.block(NodeId(o), *node);
                    }
                }
                Op::Cut(a, b) => {
                    self.block(*a, *b);
                    self.block(*b, *a);
                }
                Op::OneWay(from, to) => {
                    for f in from {
                        for t in to {
                            self.block(*f, *t);
                        }
                    }
                }
                Op::Bridge(bridge, groups) => {
                    for (i, g) in groups.iter().enumerate() {
                        for h in &groups[i + 1..] {
                            for a in g.iter().filter(|a| *a != bridge) {
                                for b in h.iter().filter(|b| *b != bridge) {
                                    self.block(*a, *b);
                                    self.block(*b, *a);
                                }
                            }
                        }
                    }
                }
                Op::Heal => self.bits.iter_mut().for_each(|b| *b = false),
            }
        }
    }

    #[derive(Debug)]
    enum Op {
        Partition(Vec<Vec<NodeId>>),
        Isolate(NodeId),
        Cut(NodeId, NodeId),
        OneWay(Vec<NodeId>, Vec<NodeId>),
        Bridge(NodeId, Vec<Vec<NodeId>>),
        Heal,
    }

    #[test]
    fn the_fault_list_blocks_what_a_bit_a_link_blocked() {
        let mut rng = SplitMix64(11);
        let mut draw = |k: u64| rng.next_u64() % k;
        for n in [1usize, 2, 3, 6] {
            let mut net = Network::new(n, LinkSettings::default());
            let mut bits = Bits {
                n,
                bits: vec![false; n * n],
            };
            for step in 0..3000 {
                let nodes = |draw: &mut dyn FnMut(u64) -> u64| -> Vec<NodeId> {
                    (0..draw(4))
                        .map(|_| NodeId(draw(n as u64) as u32))
                        .collect()
                };
                let node = NodeId(draw(n as u64) as u32);
                let op = match draw(8) {
                    0 => Op::Partition((0..draw(4)).map(|_| nodes(&mut draw)).collect()),
                    1 => Op::Isolate(node),
                    2 => Op::Cut(node, NodeId(draw(n as u64) as u32)),
                    3 => Op::OneWay(nodes(&mut draw), nodes(&mut draw)),
                    4 => Op::Bridge(node, (0..draw(4)).map(|_| nodes(&mut draw)).collect()),
                    _ => Op::Heal,
                };
                bits.apply(&op);
                match &op {
                    Op::Partition(g) => net.partition(g),
                    Op::Isolate(x) => net.isolate(*x),
                    Op::Cut(a, b) => net.cut(*a, *b),
                    Op::OneWay(f, t) => net.one_way(f, t),
                    Op::Bridge(x, g) => net.bridge(*x, g),
                    Op::Heal => net.heal(),
                }
                for a in 0..n {
                    for b in 0..n {
                        let (x, y) = (NodeId(a as u32), NodeId(b as u32));
                        assert_eq!(
                            net.is_blocked(x, y),
                            bits.bits[a * n + b],
                            "n={n} step {step} after {op:?}: {x} -> {y}"
                        );
                    }
                }
                assert_eq!(
                    net.is_partitioned(),
                    bits.bits.iter().any(|b| *b),
                    "n={n} step {step}"
                );
            }
        }
    }

    #[test]
    fn one_way_and_bridge() {
        let mut net = Network::new(3, LinkSettings::default());
        net.one_way(&[n(0)], &[n(1)]);
        assert!(net.is_blocked(n(0), n(1)));
        assert!(!net.is_blocked(n(1), n(0)));
        net.heal();
        net.bridge(n(1), &[vec![n(0), n(1)], vec![n(1), n(2)]]);
        assert!(net.is_blocked(n(0), n(2)) && net.is_blocked(n(2), n(0)));
        assert!(!net.is_blocked(n(0), n(1)) && !net.is_blocked(n(1), n(2)));
    }

    #[test]
    fn loss_and_duplication_follow_the_settings() {
        let mut rng = SplitMix64(3);
        let lossy = Network::new(
            2,
            LinkSettings {
                loss: 1.0,
                ..LinkSettings::default()
            },
        );
        assert_eq!(
            lossy.route(n(0), n(1), SimTime(0), &mut rng),
            Fate::Dropped(DropReason::Loss)
        );
        let dup = Network::new(
            2,
            LinkSettings {
                duplicate: 1.0,
                ..LinkSettings::default()
            },
        );
        match dup.route(n(0), n(1), SimTime(0), &mut rng) {
            Fate::Delivered(at, Some(again)) => {
                assert!([at, again]
                    .iter()
                    .all(|t| (1_000_000..=5_000_000).contains(&t.0)));
            }
            other => panic!("expected delivery, got {other:?}"),
        }
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let mut net = Network::new(2, LinkSettings::default());
        let slow = Delay::uniform(Duration::from_millis(20), Duration::from_millis(20));
        net.set_override(
            n(0),
            n(1),
            LinkOverride {
                latency: Some(slow.clone()),
                ..Default::default()
            },
        );
        assert_eq!(net.settings(n(0), n(1)).latency, slow);
        assert_eq!(
            net.settings(n(1), n(0)).latency,
            LinkSettings::default().latency
        );
    }

    /// `count` draws of `delay` from one seeded stream, sorted, in milliseconds.
    fn draws(delay: &Delay, count: usize) -> Vec<f64> {
        let mut rng = crate::rng::SeededRng::network(42);
        let mut v: Vec<f64> = (0..count)
            .map(|_| sample(delay, &mut rng).as_secs_f64() * 1e3)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    fn quantile(v: &[f64], q: f64) -> f64 {
        v[((v.len() - 1) as f64 * q) as usize]
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_uniform_delay_draws_exactly_what_the_range_drew() {
        let (mut a, mut b) = (SplitMix64(9), SplitMix64(9));
        for _ in 0..1000 {
            assert_eq!(
                sample(&Delay::uniform(ms(1), ms(150)), &mut a),
                b.duration_between(ms(1), ms(150))
            );
        }
    }

    #[test]
    fn exponential_delays_have_their_mean_and_median() {
        let d = Delay::Exponential {
            min: ms(1),
            mean: ms(4),
            max: ms(10_000),
        };
        let v = draws(&d, 100_000);
        assert!(v[0] >= 1.0);
        assert!((mean(&v) - 5.0).abs() < 0.1, "mean {}", mean(&v));
        // The median of an exponential is mean * ln 2.
        let median = quantile(&v, 0.5);
        assert!((median - (1.0 + 4.0 * 2f64.ln())).abs() < 0.1, "{median}");
    }

    #[test]
    fn log_normal_delays_have_their_median_and_spread() {
        let d = Delay::LogNormal {
            min: Duration::ZERO,
            median: ms(5),
            sigma: 1.0,
            max: ms(100_000),
        };
        let v = draws(&d, 100_000);
        assert!(
            (quantile(&v, 0.5) - 5.0).abs() < 0.15,
            "{}",
            quantile(&v, 0.5)
        );
        // One sigma up: the 84.13th percentile is median * e.
        let q = quantile(&v, 0.8413);
        assert!((q - 5.0 * std::f64::consts::E).abs() < 0.5, "{q}");
    }

    #[test]
    fn pareto_delays_have_a_power_law_tail_and_a_cap() {
        let d = Delay::Pareto {
            scale: ms(2),
            shape: 1.5,
            max: ms(2_000),
        };
        let v = draws(&d, 100_000);
        assert!(v[0] >= 2.0, "scale is the shortest delay");
        assert!(*v.last().unwrap() <= 2_000.0, "capped");
        // P(X > x) = (scale / x)^shape: 1% of delays are above 2ms * 100^(1/1.5).
        let q99 = quantile(&v, 0.99);
        let expected = 2.0 * 100f64.powf(1.0 / 1.5);
        assert!((q99 / expected - 1.0).abs() < 0.1, "{q99} vs {expected}");
        let median = quantile(&v, 0.5);
        let expected = 2.0 * 2f64.powf(1.0 / 1.5);
        assert!(
            (median / expected - 1.0).abs() < 0.02,
            "{median} vs {expected}"
        );
        // The cap holds some of the tail: (2 / 2000)^1.5 of the draws, about 3 in 100,000.
        assert!(v.iter().filter(|x| **x == 2_000.0).count() < 20);
    }

    #[test]
    fn spikes_add_a_large_delay_at_their_rate() {
        let d = Delay::Spikes {
            base: Box::new(Delay::uniform(ms(1), ms(5))),
            probability: 0.02,
            spike: tenure_scenario::Latency::new(ms(200), ms(400)),
        };
        let v = draws(&d, 100_000);
        let spiked = v.iter().filter(|x| **x >= 200.0).count() as f64 / v.len() as f64;
        assert!((spiked - 0.02).abs() < 0.003, "{spiked}");
        assert!(v.iter().all(|x| *x <= 5.0 || (201.0..=405.0).contains(x)));
        assert_eq!(d.max(), ms(405));
    }

    #[test]
    fn draws_are_a_function_of_the_seed() {
        let d = Delay::Pareto {
            scale: ms(1),
            shape: 1.2,
            max: ms(500),
        };
        assert_eq!(draws(&d, 1000), draws(&d, 1000));
    }
}
