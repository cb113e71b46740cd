//! Fault profiles: what faults a fuzzed seed gets, drawn from the seed (swarm testing).
//!
//! **What it promises.** [`Draw::draw`] turns `(profile, seed, cluster, duration)`
//! into an explicit, replayable fault schedule ([`Drawn`]): clock specs and a timeline of
//! [`FaultEvent`]s. Each seed first draws its own *rates* (which fault kinds are on for
//! this seed, how lossy the network is, how far clocks drift), then the events, all
//! inside the fault window, then a liveness phase: at the end of the window every
//! partition is healed, every crashed node restarted and the network set back to calm;
//! every pause has ended by then. [`Drawn::apply_to`] writes the schedule into the
//! scenario, so the scenario file holding it, run with the same seed, is the same run:
//! the draw uses its own ChaCha stream of the seed ([`fuzz_rng`]), never one of the
//! run's streams (`crate::rng`).
//!
//! **Protocol-respecting faults.** Crashes come in crash/restart pairs; at most a
//! minority of a role (one node of a role of one or two) is down (crashed or paused) at
//! any instant; partitions are healed; pause targets and crash targets prefer `client`
//! nodes (what breaks locks), and pauses, isolations, clock jumps and drifts sometimes
//! aim at `"leader"` (what breaks elections and leases). Drift magnitudes are drawn
//! log-uniformly, so most seeds drift a little and some far beyond a lease's bound.
//!
//! **How it fails.** A profile knob out of range (a probability above 1, a range whose
//! minimum is above its maximum, an unknown knob) is an error naming `profile.<knob>`
//! and its line in the scenario file: the spec and its checks are the scenario
//! format's ([`tenure_scenario::profile`]), so `run`, `verify`, `fuzz` and `shrink`
//! reject a bad `[profile]` alike. Drawing never fails.
//!
//! **Source.** Swarm testing: Groce et al., "Swarm Testing" (ISSTA 2012); TigerBeetle's
//! VOPR (`src/vopr.zig`) draws every fault knob from the seed, then heals and demands
//! convergence (the liveness phase).

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
#[cfg(test)]
use std::collections::BTreeMap; // the tests' bookkeeping
use std::time::Duration;
use tenure_core::{Cluster, NodeId, RoleInfo, RoleKind, SignedDuration};
use tenure_scenario::{
    ClockSpec, Fault, FaultEvent, Latency, LinkSpec, NodeDiskSpec, NodeSel, Scenario,
};
use tenure_sim::Sim;

/// The spec (built-in profiles, knobs, validation of `[profile]`) is the scenario
/// format's, so every command checks a `[profile]` table alike; this module draws.
pub use tenure_scenario::profile::{
    Profile, ProfileTable, DEFAULT_PROFILE, PROFILE_NAMES, WITHIN_PROFILES,
};

/// The ChaCha stream the fault schedule is drawn from: the seed's last stream, which no
/// run uses (the network is stream 0, node `i` stream `1 + i`, and clusters are far
/// smaller than `u64::MAX - 1` nodes).
pub fn fuzz_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX);
    rng
}

/// The stream power losses and crash points are drawn from: not the schedule's own
/// ([`fuzz_rng`]), so adding them changed no other draw.
fn power_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 1);
    rng
}

/// The stream power losses inside an fsync are drawn from (see `sync_power_losses`):
/// neither [`fuzz_rng`] nor [`power_rng`], so adding them changed no other draw.
fn sync_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 2);
    rng
}

/// Drawing a seed's fault schedule from a [`Profile`].
pub trait Draw {
    /// The fault schedule of `seed` on `cluster` for a run of `duration` (extended if
    /// the liveness phase does not fit), every role a participant. A pure function of
    /// its arguments.
    fn draw(&self, seed: u64, cluster: &Cluster, duration: Duration) -> Drawn {
        self.draw_for(seed, cluster, &[], duration)
    }

    /// The same, aimed by what each role declares it is (`roles`, the protocol's
    /// [`RoleInfo`]s: holders draw more process faults, the protected resource none of
    /// the durability faults); a role not listed is a participant.
    fn draw_for(
        &self,
        seed: u64,
        cluster: &Cluster,
        roles: &[RoleInfo],
        duration: Duration,
    ) -> Drawn;
}

impl Draw for Profile {
    fn draw_for(
        &self,
        seed: u64,
        cluster: &Cluster,
        roles: &[RoleInfo],
        duration: Duration,
    ) -> Drawn {
        Drawer::new(self, seed, cluster, roles, duration).draw()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A seed's fault schedule: what [`Drawn::apply_to`] writes into a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub seed: u64,
    /// The profile it was drawn from.
    pub profile: String,
    /// The run's duration: the scenario's, or longer so the liveness phase fits after
    /// the heal.
    pub duration: Duration,
    /// When the last fault ends (the heal); `None` if the seed drew no fault.
    pub heal_at: Option<Duration>,
    /// Initial clock offsets and drifts.
    pub clocks: Vec<ClockSpec>,
    /// Slow links (`[[network.link]]`, both ways), for the whole run.
    pub links: Vec<LinkSpec>,
    /// Per-node fsync latencies (`[[disk.node]]`), for the whole run.
    pub disks: Vec<NodeDiskSpec>,
    /// The timeline, in time order, every event before `duration`. Network
    /// degradations are `network` events; the one at the heal has no fields here and
    /// means "back to the scenario's own network" ([`Drawn::apply_to`] fills it in).
    pub faults: Vec<FaultEvent>,
}

impl Drawn {
    /// Applies this schedule to a simulation: its clocks, disks and links, its timeline
    /// (the network reset at the heal goes back to the simulation's own defaults), and
    /// its duration when that is longer (so the liveness phase fits).
    pub fn apply<P: tenure_core::Protocol>(&self, mut sim: Sim<P>) -> Sim<P> {
        if self.duration > sim.planned_duration() {
            sim = sim.duration(self.duration);
        }
        for c in &self.clocks {
            sim = sim.clock(c.node, c.offset.0, c.drift);
        }
        for d in &self.disks {
            sim = sim.fsync(d.node, d.fsync.min, d.fsync.max);
        }
        for l in &self.links {
            sim = sim.link_spec(l);
        }
        let calm = sim.default_network().clone();
        let events: Vec<FaultEvent> = self
            .faults
            .iter()
            .map(|e| match &e.fault {
                Fault::Network {
                    latency: None,
                    loss: None,
                    duplicate: None,
                } => FaultEvent {
                    at: e.at,
                    fault: Fault::Network {
                        latency: Some(calm.latency.clone()),
                        loss: Some(calm.loss),
                        duplicate: Some(calm.duplicate),
                    },
                },
                _ => e.clone(),
            })
            .collect();
        sim.timeline(&events)
    }

    /// `scenario` with this schedule written in: drawn clocks for nodes it does not set
    /// itself, its own fault events followed by the drawn ones (stable by time; the
    /// network reset names the scenario's `[network]` values), the drawn duration, this
    /// seed as its default seed, and no `[profile]` (the schedule is explicit now:
    /// running it draws nothing).
    pub fn apply_to(&self, scenario: &Scenario) -> Scenario {
        let mut s = scenario.clone();
        s.source = String::new();
        s.duration = s.duration.max(self.duration);
        s.seed = self.seed;
        s.profile = None;
        for c in &self.clocks {
            if !s.clocks.iter().any(|own| own.node == c.node) {
                s.clocks.push(c.clone());
            }
        }
        s.clocks.sort_by_key(|c| c.node);
        for d in &self.disks {
            if !s.disk.nodes.iter().any(|own| own.node == d.node) {
                s.disk.nodes.push(d.clone());
            }
        }
        s.network.links.extend(self.links.iter().cloned());
        let calm = &scenario.network;
        s.faults.extend(self.faults.iter().map(|e| match &e.fault {
            Fault::Network {
                latency: None,
                loss: None,
                duplicate: None,
            } => FaultEvent {
                at: e.at,
                fault: Fault::Network {
                    latency: Some(calm.latency.clone()),
                    loss: Some(calm.loss),
                    duplicate: Some(calm.duplicate),
                },
            },
            _ => e.clone(),
        }));
        s.faults.sort_by_key(|e| e.at); // stable: the scenario's own events first
        s
    }
}

/// At most this many of a role's nodes may be down (crashed or paused) at once.
fn down_budget(role_count: usize) -> usize {
    if role_count >= 3 {
        (role_count - 1) / 2
    } else {
        1
    }
}

struct Drawer<'a> {
    p: &'a Profile,
    /// What each role of the cluster is, in the cluster's role order.
    kinds: Vec<RoleKind>,
    rng: ChaCha8Rng,
    seed: u64,
    cluster: &'a Cluster,
    window: (Duration, Duration),
    duration: Duration,
    /// The scenario's own duration.
    requested: Duration,
    events: Vec<FaultEvent>,
    /// `(node, from, until)`: when each fixed node is crashed or paused.
    down: Vec<(NodeId, Duration, Duration)>,
    /// `(from, until)`: when a crashed leader (whichever node it was) is down.
    leader_down: Vec<(Duration, Duration)>,
    /// The stream the `holder` and `waiter` re-aims are drawn from (see `aim`).
    aim: ChaCha8Rng,
    /// When a crash aimed at a role restarts every node (see `Drawer::crash_aimed`):
    /// no other down may span one of these instants, or that restart would end it early.
    restart_marks: Vec<Duration>,
}

impl<'a> Drawer<'a> {
    fn new(
        p: &'a Profile,
        seed: u64,
        cluster: &'a Cluster,
        roles: &[RoleInfo],
        duration: Duration,
    ) -> Drawer<'a> {
        let kinds = cluster
            .roles()
            .iter()
            .map(|r| {
                roles
                    .iter()
                    .find(|info| info.name == r.role)
                    .map_or(RoleKind::Participant, |info| info.kind)
            })
            .collect();
        let at = |f: f64| round_ms(duration.mul_f64(f));
        let window = (
            at(p.window[0]),
            at(p.window[1]).max(at(p.window[0]) + ms(1)),
        );
        Drawer {
            p,
            kinds,
            rng: fuzz_rng(seed),
            seed,
            cluster,
            window,
            duration: duration.max(window.1 + p.liveness),
            requested: duration,
            events: Vec::new(),
            down: Vec::new(),
            leader_down: Vec::new(),
            aim: aim::aim_rng(seed),
            restart_marks: Vec::new(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.gen_bool(p.min(1.0))
    }

    fn uniform(&mut self, r: [f64; 2]) -> f64 {
        if r[0] >= r[1] {
            r[0]
        } else {
            self.rng.gen_range(r[0]..=r[1])
        }
    }

    fn log_uniform(&mut self, r: [f64; 2]) -> f64 {
        let (a, b) = (r[0].max(1e-9), r[1].max(1e-9));
        self.uniform([a.ln(), b.ln()]).exp()
    }

    fn between(&mut self, r: [Duration; 2]) -> Duration {
        round_ms(if r[0] >= r[1] {
            r[0]
        } else {
            self.rng.gen_range(r[0]..=r[1])
        })
    }

    fn log_between(&mut self, r: [Duration; 2]) -> Duration {
        let secs = self.log_uniform([r[0].as_secs_f64().max(1e-3), r[1].as_secs_f64().max(1e-3)]);
        round_ms(Duration::from_secs_f64(secs))
    }

    /// A time in the fault window.
    fn when(&mut self) -> Duration {
        let (a, b) = self.window;
        round_ms(self.rng.gen_range(a..b))
    }

    fn count(&mut self) -> u32 {
        self.rng.gen_range(self.p.events[0]..=self.p.events[1])
    }

    fn sign(&mut self) -> f64 {
        if self.rng.gen_bool(0.5) {
            1.0
        } else {
            -1.0
        }
    }

    /// A node picked with `weight`, in id order (deterministic).
    fn pick(&mut self, weight: impl Fn(RoleKind) -> u32) -> NodeId {
        let weights: Vec<u32> = self
            .cluster
            .nodes()
            .map(|n| weight(self.kind_of(n)))
            .collect();
        let total: u32 = weights.iter().sum();
        assert!(total > 0, "every cluster has a node of positive weight");
        let mut x = self.rng.gen_range(0..total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return NodeId(i as u32);
            }
            x -= w;
        }
        unreachable!("x < total")
    }

    /// A target for pauses and clock faults: sometimes "leader", else a node, clients
    /// preferred.
    fn target(&mut self) -> NodeSel {
        self.target_weighted(client_weight)
    }

    /// A target for clock faults: sometimes "leader", else any node alike (a lock
    /// server's clock decides when its locks expire).
    fn clock_target(&mut self) -> NodeSel {
        self.target_weighted(|_| 1)
    }

    /// What `node`'s role is.
    fn kind_of(&self, node: NodeId) -> RoleKind {
        self.kinds[self.cluster.role_index_of(node)]
    }

    /// `"leader"` with chance `leader`, else a node picked with `weight`; then aimed
    /// where bugs live (see [`Drawer::reaim`]: `"holder"` instead of `"leader"` in
    /// clusters of lock clients, and a fixed node sometimes at a holder or a waiter).
    fn target_weighted(&mut self, weight: impl Fn(RoleKind) -> u32) -> NodeSel {
        let sel = if self.chance(self.p.leader) {
            NodeSel::Leader
        } else {
            NodeSel::Id(self.pick(weight).0)
        };
        self.reaim(sel)
    }

    fn push(&mut self, at: Duration, fault: Fault) {
        assert!(at < self.duration, "every event is before the end");
        self.events.push(FaultEvent { at, fault });
    }

    /// Whether `node` may go down over `[from, until)` within its role's budget.
    fn may_go_down(&self, node: NodeId, from: Duration, until: Duration) -> bool {
        let role = self.cluster.role_of(node);
        let overlapping: Vec<NodeId> = self
            .down
            .iter()
            .filter(|(n, a, b)| self.cluster.role_of(*n) == role && *a < until && from < *b)
            .map(|(n, _, _)| *n)
            .collect();
        let leader_down = self
            .leader_down
            .iter()
            .filter(|(a, b)| *a < until && from < *b)
            .count();
        !overlapping.contains(&node)
            && overlapping.len() + leader_down < down_budget(self.cluster.count(role))
            && !self.restart_marks.iter().any(|t| from < *t && *t < until)
    }

    fn draw(mut self) -> Drawn {
        let p = self.p.clone();
        // 1. This seed's rates: which kinds are on (swarm testing) and how hard.
        let partitions = self.chance(p.partition);
        let crashes = self.chance(p.crash);
        let pauses = self.chance(p.pause);
        let jumps = self.chance(p.clock_jump);
        let drifts = self.chance(p.clock_drift);
        let offsets = self.chance(p.clock_offset);
        let loss = self
            .chance(p.loss)
            .then(|| round_to(self.uniform(p.loss_range), 100.0));
        let duplicate = self
            .chance(p.duplicate)
            .then(|| round_to(self.uniform(p.duplicate_range), 100.0));
        let mut slow = self.chance(p.slow).then(|| {
            let a = self.between(p.latency_range);
            let b = self.between(p.latency_range);
            Latency::new(a.min(b), a.max(b))
        });
        // Half the slow seeds slow some links only (both ways, the whole run): a slow
        // link lets two nodes miss each other's messages for a while, the way two
        // candidates stand in one term, while the rest of the network is fast.
        let mut links = Vec::new();
        if let Some(latency) = slow {
            if self.rng.gen_bool(0.5) {
                slow = None;
                let nodes: Vec<NodeId> = self.cluster.nodes().collect();
                for (i, a) in nodes.iter().enumerate() {
                    for b in &nodes[i + 1..] {
                        if self.rng.gen_bool(0.3) {
                            links.push(LinkSpec {
                                from: *a,
                                to: *b,
                                both: true,
                                latency: Some(latency.into()),
                                loss: None,
                                duplicate: None,
                            });
                        }
                    }
                }
            }
        }

        // 2. Clocks at the start.
        let mut clocks = Vec::new();
        if offsets {
            let nodes: Vec<NodeId> = self.cluster.nodes().collect();
            for node in nodes {
                if self.rng.gen_bool(0.5) {
                    let offset = self.between(p.offset_range).as_nanos() as i64;
                    let offset = SignedDuration(offset * self.sign() as i64);
                    let small = [p.drift_range[0], p.drift_range[1].min(0.05)];
                    let drift = round_to(self.sign() * self.log_uniform(small), 10_000.0);
                    clocks.push(ClockSpec {
                        node,
                        offset,
                        drift,
                    });
                }
            }
        }

        // 3. The fault window.
        let (start, heal_at) = self.window;
        if loss.is_some() || duplicate.is_some() || slow.is_some() {
            let at = self.when().min(start + ms(500)).max(start);
            self.push(
                at,
                Fault::Network {
                    latency: slow.map(Into::into),
                    loss,
                    duplicate,
                },
            );
        }
        if partitions {
            for _ in 0..self.count() {
                let at = self.when();
                let fault = self.partition_fault();
                self.push(at, fault);
                let end = at + self.between(p.outage_range);
                if end < heal_at {
                    self.push(end, Fault::Heal {});
                }
            }
        }
        if crashes {
            for _ in 0..self.count() {
                let at = self.when();
                if self.chance(p.leader) && self.cluster.roles().len() == 1 {
                    self.crash_leader(at, heal_at);
                    continue;
                }
                let node = self.pick(client_weight);
                // Flapping voters give votes twice; in clusters of several roles a
                // flapping client or server only makes failures fragile to shrink.
                if self.cluster.roles().len() == 1 && self.chance(p.flap) {
                    self.flap(node, at, heal_at);
                    continue;
                }
                // Log-uniform: many quick restarts (a supervisor restarting a process),
                // some long outages.
                let end = (at + self.log_between(p.outage_range)).min(heal_at);
                // A crash the heal would end sooner than the shortest outage (a declared
                // minimum restart delay, see `within`) is not drawn.
                if end > at && end - at >= p.outage_range[0] && self.may_go_down(node, at, end) {
                    // Sometimes aimed at whoever holds or waits then (`holder`,
                    // `waiter`), when every role has room for one more down.
                    match self.reaim_fixed() {
                        Some(sel) if self.may_crash_aimed(at, end) => {
                            self.crash_aimed(at, end, Fault::Crash { node: sel })
                        }
                        _ => {
                            self.down.push((node, at, end));
                            self.crash_restart(node, at, end);
                        }
                    }
                }
            }
        }
        if pauses {
            for _ in 0..self.count() {
                let at = self.when();
                let target = self.target();
                let duration = self.between(p.pause_range).min(heal_at - at);
                if duration < ms(10) {
                    continue;
                }
                let ok = match target.id() {
                    Some(node) => self.may_go_down(node, at, at + duration),
                    None => true, // the leader is one node; the others stay up
                };
                if ok {
                    if let Some(node) = target.id() {
                        self.down.push((node, at, at + duration));
                    }
                    self.push(
                        at,
                        Fault::Pause {
                            node: target,
                            duration,
                        },
                    );
                }
            }
        }
        if jumps {
            for _ in 0..self.count() {
                let at = self.when();
                let node = self.clock_target();
                let by = self.log_between(p.jump_range).as_nanos() as i64;
                let by = SignedDuration(by * self.sign() as i64);
                self.push(at, Fault::ClockJump { node, by });
            }
        }
        if drifts {
            for _ in 0..self.count() {
                let at = self.when();
                let node = self.clock_target();
                let drift = round_to(self.sign() * self.log_uniform(p.drift_range), 10_000.0);
                self.push(
                    at,
                    Fault::ClockDrift {
                        node,
                        drift: drift.max(-0.95),
                    },
                );
            }
        }

        // Power losses and crash points, from their own stream (see `power`).
        let mut restart_at_heal = Vec::new();
        {
            let main = std::mem::replace(&mut self.rng, power_rng(self.seed));
            if self.chance(p.power) {
                for _ in 0..self.count() {
                    let at = self.when();
                    // The protected resource (`storage`) is what lock protocols are judged
                    // on, not a participant they must survive: its own durability is the
                    // storage system's promise, so power losses aim at the protocol's
                    // nodes only.
                    let node = self.pick(|kind| {
                        if kind == RoleKind::Resource {
                            0
                        } else {
                            client_weight(kind)
                        }
                    });
                    let crash_point = p.crash_points && self.rng.gen_bool(0.5);
                    if crash_point {
                        // The crash comes after `at_effect` more effects, at a time the
                        // draw cannot know: the node counts as down until the heal,
                        // which disarms the point if it has not fired and restarts the
                        // node if it has.
                        let at_effect = self.rng.gen_range(1..=6);
                        let power = self.rng.gen_bool(0.5);
                        if at < heal_at && self.may_go_down(node, at, heal_at) {
                            // Sometimes armed on whoever holds or waits then: down in
                            // every role until the heal, which restarts every node.
                            let sel = match self.reaim_fixed() {
                                Some(sel) if self.may_crash_aimed(at, heal_at) => {
                                    self.leader_down.push((at, heal_at));
                                    restart_at_heal.extend(self.cluster.nodes());
                                    sel
                                }
                                _ => {
                                    self.down.push((node, at, heal_at));
                                    restart_at_heal.push(node);
                                    NodeSel::Id(node.0)
                                }
                            };
                            self.push(
                                at,
                                Fault::CrashPoint {
                                    node: sel,
                                    at_effect,
                                    at_sync: false,
                                    power,
                                    restart_after: None,
                                },
                            );
                        }
                    } else {
                        let end = (at + self.log_between(p.outage_range)).min(heal_at);
                        if end > at
                            && end - at >= p.outage_range[0]
                            && self.may_go_down(node, at, end)
                        {
                            // Sometimes aimed at whoever holds or waits then.
                            if let Some(sel) = self.reaim_fixed() {
                                if self.may_crash_aimed(at, end) {
                                    let fault = Fault::PowerLoss {
                                        node: sel,
                                        torn: false,
                                    };
                                    self.crash_aimed(at, end, fault);
                                    continue;
                                }
                            }
                            self.down.push((node, at, end));
                            self.push(
                                at,
                                Fault::PowerLoss {
                                    node: NodeSel::Id(node.0),
                                    torn: false,
                                },
                            );
                            self.push(
                                end,
                                Fault::Restart {
                                    node: NodeSel::Id(node.0),
                                },
                            );
                        }
                    }
                }
            }
            self.rng = main;
        }
        let (more, disks) = self.disks();
        restart_at_heal.extend(more);

        // The field profile's faults, from their own stream (see `field`).
        links.extend(self.draw_field(heal_at));
        // Asymmetric delays and the early faults, each from its own stream (see `aim`).
        links.extend(self.draw_asymmetric());
        restart_at_heal.extend(self.draw_early(heal_at));
        // A rack's power failure, from its own stream (see `rack`).
        restart_at_heal.extend(self.draw_rack(heal_at));
        // Byzantine nodes, from their own stream (see `byzantine`).
        self.draw_byzantine();

        // 4. The heal, then the liveness phase: every fault undone, clocks back to the
        // rate they started the run with (a drift drawn in the window must not linger
        // into the phase that judges liveness).
        let any = !self.events.is_empty();
        if any {
            self.push(heal_at, Fault::Heal {});
            let mut restarted = Vec::new();
            for node in restart_at_heal {
                // Once each, in the order first asked for.
                if restarted.contains(&node) {
                    continue;
                }
                restarted.push(node);
                self.push(
                    heal_at,
                    Fault::Restart {
                        node: NodeSel::Id(node.0),
                    },
                );
            }
            if drifts {
                let nodes: Vec<NodeId> = self.cluster.nodes().collect();
                for node in nodes {
                    let base = clocks
                        .iter()
                        .find(|c: &&ClockSpec| c.node == node)
                        .map_or(0.0, |c| c.drift);
                    self.push(
                        heal_at,
                        Fault::ClockDrift {
                            node: NodeSel::Id(node.0),
                            drift: base,
                        },
                    );
                }
            }
            if loss.is_some() || duplicate.is_some() || slow.is_some() {
                self.push(
                    heal_at,
                    Fault::Network {
                        latency: None,
                        loss: None,
                        duplicate: None,
                    },
                );
            }
        }
        let mut faults = std::mem::take(&mut self.events);
        faults.sort_by_key(|e| e.at);
        Drawn {
            seed: self.seed,
            profile: p.name.clone(),
            // Without faults there is nothing to recover from: the run keeps its length.
            duration: if any { self.duration } else { self.requested },
            heal_at: any.then_some(heal_at),
            clocks,
            links,
            disks,
            faults,
        }
    }

    /// Disks as the field has them, drawn from their own stream ([`sync_rng`]) for
    /// seeds with `disk`: fsync latencies, power losses inside an fsync, and power
    /// flapping through an election. Returns the nodes the heal must restart and the
    /// disks. What real systems see, and why each draw is what it is:
    ///
    /// * *fsync latency:* each node's disk (but the protected resource's, `storage`)
    ///   draws its slowest fsync log-uniformly from `fsync_range` ([`tenure_scenario::profile::FSYNC_RANGE`], capped at a declared `max_fsync`) (most disks fast,
    ///   some slow), each sync uniform from 1 ms up to it. A handler's effects after a sync wait for it, so a slow disk delays a
    ///   candidate's later RequestVotes as a slow link would.
    /// * *Where a power loss strikes:* right before a sync (`at_sync`, `at_effect = 0`),
    ///   with the writes it would make durable still in the page cache. An fsync takes
    ///   milliseconds while the effects around it take microseconds, so a power loss
    ///   that hits a handler at all hits it, overwhelmingly, inside its fsync; and only
    ///   there does a power loss differ from a process crash (ALICE, Pillai et al.
    ///   OSDI 2014, and CrashMonkey, Mohan et al. OSDI 2018, crash at exactly these
    ///   persistence points for that reason). A handler that sends and then syncs has
    ///   sent by then. Armed at a time in the fault window, like every other fault, it
    ///   fires at the node's next sync (in a consensus protocol, the next term or vote
    ///   it records), and the heal disarms it if none came.
    /// * *Restart:* after an outage drawn log-uniformly from `outage_range`, as crash
    ///   outages are: mostly quick restarts (an orchestrator restarting the machine; a
    ///   microVM boots in about 125 ms, Firecracker, Agache et al. NSDI 2020), some
    ///   long ones; the heal restarts the node at the latest.
    /// * *Power flapping:* with chance `flap`, as the fault window opens and after each
    ///   leader crash, one node's power fails again and again (4 to 20 cycles, 1-10 ms
    ///   outages 5-50 ms apart, the shape of the process flaps): a failing supply or a
    ///   host resetting its guest, the storm an election runs into (the first one, for
    ///   a window that opens at the start, or the one after a crash). Each cycle is a
    ///   power loss at the node's next sync.
    fn disks(&mut self) -> (Vec<NodeId>, Vec<NodeDiskSpec>) {
        let p = self.p.clone();
        let mut restart_at_heal = Vec::new();
        let mut disks = Vec::new();
        let (_, heal_at) = self.window;
        let main = std::mem::replace(&mut self.rng, sync_rng(self.seed));
        if self.chance(p.disk) {
            let nodes: Vec<NodeId> = self.cluster.nodes().collect();
            for node in nodes {
                let max = self.log_between(p.fsync_range);
                // The protected resource is judged, not a participant: its disk is
                // the storage system's promise (as its power is, above).
                if self.kind_of(node) == RoleKind::Resource {
                    continue;
                }
                disks.push(NodeDiskSpec {
                    node,
                    fsync: Latency::new(ms(1).min(max), max),
                });
            }
            // A crash point's restart comes after its crash, whenever that is: targets
            // that declare a minimum restart delay get none (see `Profile::within`).
            if p.crash_points {
                for _ in 0..self.count() {
                    let at = self.when();
                    let node = self.pick(|kind| {
                        if kind == RoleKind::Resource {
                            0
                        } else {
                            client_weight(kind)
                        }
                    });
                    let restart_after = self.log_between(p.outage_range);
                    // The node counts as down until the heal: when it crashes is not
                    // known here.
                    if at < heal_at && self.may_go_down(node, at, heal_at) {
                        self.down.push((node, at, heal_at));
                        self.push(at, sync_power_loss(node, restart_after));
                        restart_at_heal.push(node);
                    }
                }
                // Power flapping as the window opens: through the first election, for a
                // window that opens at the start (a failing supply at boot). Syncs
                // bunch up in elections, and the first one has every node voting.
                if self.chance(p.flap) {
                    let node = self.pick(|kind| u32::from(kind != RoleKind::Resource));
                    if self.power_flap(node, self.window.0, heal_at)
                        && !restart_at_heal.contains(&node)
                    {
                        restart_at_heal.push(node);
                    }
                }
                for (at, _) in self.leader_down.clone() {
                    if self.chance(p.flap) {
                        let nodes: Vec<NodeId> = self.cluster.nodes().collect();
                        let node = nodes[self.rng.gen_range(0..nodes.len())];
                        if self.power_flap(node, at, heal_at) && !restart_at_heal.contains(&node) {
                            restart_at_heal.push(node);
                        }
                    }
                }
            }
            // Drawn last, so the draws above (and the seeds found with them) are
            // unchanged.
            self.slow_disks(&p, heal_at);
        }
        self.rng = main;
        (restart_at_heal, disks)
    }

    /// Disk stalls and slow nodes, for seeds with disks: with chance `disk_stall`, one
    /// to three stalls (a node's syncs complete only when the stall ends: a cloud
    /// volume's I/O freeze, a RAID rebuild); with chance `slow_node`, one node slowed by
    /// a factor of 2 to 10 (processing and fsyncs: a noisy neighbour, a throttled CPU).
    /// Lengths log-uniform in `disk_stall_range`, each over by the heal. Participants
    /// only: the protected resource's disk is the storage system's promise.
    fn slow_disks(&mut self, p: &Profile, heal_at: Duration) {
        let participant = |kind: RoleKind| u32::from(kind != RoleKind::Resource);
        if self.chance(p.disk_stall) {
            for _ in 0..self.rng.gen_range(1..=3) {
                let at = self.when();
                let node = NodeSel::Id(self.pick(participant).0);
                let duration = self.log_between(p.disk_stall_range);
                self.push_before_heal(at, duration, heal_at, |duration| Fault::DiskStall {
                    node,
                    duration,
                });
            }
        }
        if self.chance(p.slow_node) {
            let at = self.when();
            let node = NodeSel::Id(self.pick(participant).0);
            let factor = self.log_uniform([2.0, 10.0]).round();
            let duration = self.log_between(p.disk_stall_range);
            self.push_before_heal(at, duration, heal_at, |duration| Fault::Slow {
                node,
                factor,
                duration,
            });
        }
    }

    /// Pushes the fault that `fault` makes of a length at `at`, its `duration` cut to end
    /// by the heal; nothing if `at` is not before the heal.
    fn push_before_heal(
        &mut self,
        at: Duration,
        duration: Duration,
        heal_at: Duration,
        fault: impl FnOnce(Duration) -> Fault,
    ) {
        if at < heal_at {
            self.push(at, fault(duration.min(heal_at - at)));
        }
    }

    /// The outages of a flapping node from `at`: 4 to 20 cycles of an outage of 1 to 10 ms
    /// and a gap of 5 to 50 ms, each `(start, outage)`, all over before `heal_at`. Shared
    /// by process flaps ([`Drawer::flap`]) and power flaps ([`Drawer::power_flap`]).
    fn flap_cycles(&mut self, at: Duration, heal_at: Duration) -> Vec<(Duration, Duration)> {
        let cycles = self.rng.gen_range(4..=20u32);
        let mut t = at;
        let mut spans = Vec::new();
        for _ in 0..cycles {
            let outage = ms(self.rng.gen_range(1..=10));
            let gap = ms(self.rng.gen_range(5..=50));
            if t + outage >= heal_at {
                break;
            }
            spans.push((t, outage));
            t += outage + gap;
        }
        spans
    }

    /// Power losses at the node's next sync, again and again from `at` (see
    /// [`Drawer::disks`]); true if drawn (within the role's budget).
    fn power_flap(&mut self, node: NodeId, at: Duration, heal_at: Duration) -> bool {
        let spans = self.flap_cycles(at, heal_at);
        // Each point is re-armed by the next cycle, so the node is down within the
        // flap's span; only the last point may fire later (at the node's next sync
        // before the heal, which disarms it), for one outage of at most 10 ms.
        let Some(&(last, outage)) = spans.last() else {
            return false;
        };
        let until = last + outage;
        if !self.may_go_down(node, at, until) {
            return false;
        }
        self.down.push((node, at, until));
        for (a, outage) in spans {
            self.push(a, sync_power_loss(node, outage));
        }
        true
    }

    fn crash_restart(&mut self, node: NodeId, at: Duration, end: Duration) {
        let node = NodeSel::Id(node.0);
        self.push(at, Fault::Crash { node });
        self.push(end, Fault::Restart { node });
    }

    /// Crashes whoever leads at `at`. Which node that is shows only when the run gets
    /// there, so every node is restarted at the end of the outage (a restart of a node
    /// that is up does nothing). Only in clusters of one role, where the leader is one of
    /// the nodes restarted. The outage counts as one more node down in the role. Crash
    /// storms come together: with chance `flap` another node flaps through the election
    /// that follows.
    fn crash_leader(&mut self, at: Duration, heal_at: Duration) {
        let end = (at + self.log_between(self.p.outage_range)).min(heal_at);
        let role_count = self.cluster.size();
        let overlapping = |a: Duration, b: Duration| {
            self.down
                .iter()
                .filter(|(_, x, y)| *x < b && a < *y)
                .count()
                + self
                    .leader_down
                    .iter()
                    .filter(|(x, y)| *x < b && a < *y)
                    .count()
        };
        if end <= at || overlapping(at, end) >= down_budget(role_count) {
            return;
        }
        self.leader_down.push((at, end));
        self.push(
            at,
            Fault::Crash {
                node: NodeSel::Leader,
            },
        );
        let nodes: Vec<NodeId> = self.cluster.nodes().collect();
        for node in &nodes {
            self.push(
                end,
                Fault::Restart {
                    node: NodeSel::Id(node.0),
                },
            );
        }
        if self.chance(self.p.flap) {
            let node = nodes[self.rng.gen_range(0..nodes.len())];
            self.flap(node, at, heal_at);
        }
    }

    /// A flapping process: quick crash/restart cycles (a crash loop under a supervisor).
    /// It forgets whatever it did not persist between two messages of one exchange,
    /// the way a vote that is not written down is given twice.
    fn flap(&mut self, node: NodeId, at: Duration, heal_at: Duration) {
        let spans: Vec<(Duration, Duration)> = self
            .flap_cycles(at, heal_at)
            .into_iter()
            .map(|(t, outage)| (t, t + outage))
            .collect();
        let Some(last) = spans.last().map(|s| s.1) else {
            return;
        };
        if self.may_go_down(node, at, last) {
            self.down.push((node, at, last));
            for (a, b) in spans {
                self.crash_restart(node, a, b);
            }
        }
    }

    fn partition_fault(&mut self) -> Fault {
        let nodes: Vec<NodeId> = self.cluster.nodes().collect();
        let n = nodes.len();
        if n < 2 {
            return Fault::Isolate {
                node: NodeSel::Id(0),
            };
        }
        match self.rng.gen_range(0..5) {
            0 => Fault::Isolate {
                node: self.target(),
            },
            1 => {
                let mut a = Vec::new();
                for node in &nodes {
                    if self.rng.gen_bool(0.5) {
                        a.push(*node);
                    }
                }
                if a.is_empty() || a.len() == n {
                    a = vec![nodes[self.rng.gen_range(0..n)]];
                }
                Fault::Partition { groups: vec![a] }
            }
            2 => {
                let a = self.rng.gen_range(0..n);
                let b = (a + self.rng.gen_range(1..n)) % n;
                Fault::Cut {
                    nodes: [nodes[a], nodes[b]],
                }
            }
            3 => {
                let from = nodes[self.rng.gen_range(0..n)];
                let to: Vec<NodeId> = nodes.iter().copied().filter(|x| *x != from).collect();
                Fault::OneWay {
                    from: vec![from],
                    to,
                }
            }
            _ => {
                let bridge = nodes[self.rng.gen_range(0..n)];
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for node in nodes.iter().copied().filter(|x| *x != bridge) {
                    if self.rng.gen_bool(0.5) {
                        a.push(node);
                    } else {
                        b.push(node);
                    }
                }
                if a.is_empty() || b.is_empty() {
                    Fault::Isolate {
                        node: NodeSel::Id(bridge.0),
                    }
                } else {
                    Fault::Bridge {
                        node: NodeSel::Id(bridge.0),
                        groups: vec![a, b],
                    }
                }
            }
        }
    }
}

/// A power loss at `node`'s next sync, booting again `restart_after` later.
fn sync_power_loss(node: NodeId, restart_after: Duration) -> Fault {
    Fault::CrashPoint {
        node: NodeSel::Id(node.0),
        at_effect: 0,
        at_sync: true,
        power: true,
        restart_after: Some(restart_after),
    }
}

/// Holders matter most for locks: a paused or crashed holder is the classic failure.
fn client_weight(kind: RoleKind) -> u32 {
    if kind == RoleKind::Holder {
        3
    } else {
        1
    }
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

/// `x` rounded to `1 / scale`, so that it prints short and reads back exactly.
fn round_to(x: f64, scale: f64) -> f64 {
    (x * scale).round() / scale
}

mod aim;
mod byzantine;
mod field;
mod rack;

#[cfg(test)]
mod tests;
