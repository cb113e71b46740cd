//! The simulated network: default latency/loss/duplication, per-link overrides, and the
//! blocked links that partitions, cuts, one-way splits and bridges leave behind.
//!
//! A message's fate is decided when it is sent: dropped by a partition, lost, or
//! delivered once or twice after a latency drawn from its link's range. Random latencies
//! reorder messages. A partition made while a message is in flight does not recall it.

use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{NodeId, Rng, SimTime};

/// Network settings for a link or the whole network.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSettings {
    pub latency: (Duration, Duration),
    pub loss: f64,
    pub duplicate: f64,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            latency: (Duration::from_millis(1), Duration::from_millis(5)),
            loss: 0.0,
            duplicate: 0.0,
        }
    }
}

/// A per-link override: each field replaces the default when set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkOverride {
    pub latency: Option<(Duration, Duration)>,
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
    /// Delivered at these true times (two when duplicated).
    Delivered(Vec<SimTime>),
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
    /// `blocked[from * n + to]`.
    blocked: Vec<bool>,
}

impl Network {
    pub fn new(n: usize, defaults: LinkSettings) -> Network {
        Network {
            n,
            defaults,
            overrides: BTreeMap::new(),
            blocked: vec![false; n * n],
        }
    }

    pub fn set_override(&mut self, from: NodeId, to: NodeId, link: LinkOverride) {
        self.overrides.insert((from, to), link);
    }

    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.blocked[from.index() * self.n + to.index()]
    }

    fn block(&mut self, from: NodeId, to: NodeId) {
        if from != to {
            self.blocked[from.index() * self.n + to.index()] = true;
        }
    }

    /// Any partition at all in force?
    pub fn is_partitioned(&self) -> bool {
        self.blocked.iter().any(|b| *b)
    }

    /// Splits the cluster into `groups`; nodes in no group form one more group. Adds to
    /// whatever is already blocked.
    pub fn partition(&mut self, groups: &[Vec<NodeId>]) {
        let mut group_of = vec![usize::MAX; self.n];
        for (g, members) in groups.iter().enumerate() {
            for m in members {
                group_of[m.index()] = g;
            }
        }
        for a in 0..self.n {
            for b in 0..self.n {
                if group_of[a] != group_of[b] {
                    self.block(NodeId(a as u32), NodeId(b as u32));
                }
            }
        }
    }

    pub fn isolate(&mut self, node: NodeId) {
        for other in 0..self.n as u32 {
            self.block(node, NodeId(other));
            self.block(NodeId(other), node);
        }
    }

    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.block(a, b);
        self.block(b, a);
    }

    pub fn one_way(&mut self, from: &[NodeId], to: &[NodeId]) {
        for f in from {
            for t in to {
                self.block(*f, *t);
            }
        }
    }

    /// A partial partition: the groups do not see each other; `bridge` sees everyone.
    pub fn bridge(&mut self, bridge: NodeId, groups: &[Vec<NodeId>]) {
        for (i, g) in groups.iter().enumerate() {
            for h in &groups[i + 1..] {
                for a in g.iter().filter(|a| **a != bridge) {
                    for b in h.iter().filter(|b| **b != bridge) {
                        self.cut(*a, *b);
                    }
                }
            }
        }
    }

    pub fn heal(&mut self) {
        self.blocked.iter_mut().for_each(|b| *b = false);
    }

    pub fn settings(&self, from: NodeId, to: NodeId) -> LinkSettings {
        let mut s = self.defaults.clone();
        if let Some(o) = self.overrides.get(&(from, to)) {
            if let Some(l) = o.latency {
                s.latency = l;
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
    /// ordering: a latency from the link's range, plus [`STREAM_RETRANSMIT`] when the
    /// link's `loss` strikes (TCP resends; it neither loses nor duplicates).
    pub fn stream_arrival(
        &self,
        from: NodeId,
        to: NodeId,
        now: SimTime,
        rng: &mut dyn Rng,
    ) -> SimTime {
        let s = self.settings(from, to);
        let mut at = now + rng.duration_between(s.latency.0, s.latency.1);
        if rng.chance(s.loss) {
            at = at + STREAM_RETRANSMIT;
        }
        at
    }

    /// Decides the fate of a message sent at `now`.
    pub fn route(&self, from: NodeId, to: NodeId, now: SimTime, rng: &mut dyn Rng) -> Fate {
        if self.is_blocked(from, to) {
            return Fate::Dropped(DropReason::Partition);
        }
        let s = self.settings(from, to);
        if rng.chance(s.loss) {
            return Fate::Dropped(DropReason::Loss);
        }
        let mut at = vec![now + rng.duration_between(s.latency.0, s.latency.1)];
        if rng.chance(s.duplicate) {
            at.push(now + rng.duration_between(s.latency.0, s.latency.1));
        }
        Fate::Delivered(at)
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
            Fate::Delivered(at) => {
                assert_eq!(at.len(), 2);
                assert!(at.iter().all(|t| (1_000_000..=5_000_000).contains(&t.0)));
            }
            other => panic!("expected delivery, got {other:?}"),
        }
    }

    #[test]
    fn overrides_replace_only_what_they_set() {
        let mut net = Network::new(2, LinkSettings::default());
        let slow = (Duration::from_millis(20), Duration::from_millis(20));
        net.set_override(
            n(0),
            n(1),
            LinkOverride {
                latency: Some(slow),
                ..Default::default()
            },
        );
        assert_eq!(net.settings(n(0), n(1)).latency, slow);
        assert_eq!(
            net.settings(n(1), n(0)).latency,
            LinkSettings::default().latency
        );
    }
}
