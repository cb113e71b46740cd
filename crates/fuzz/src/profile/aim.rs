//! Faults aimed where bugs live (issue 33): at the node that holds a lock, a lease or a
//! leadership and at the node waiting for one (knobs `holder`, `waiter`), one-way
//! slow links and slow reply paths (`asymmetric`), and faults where the first
//! decisions are made, from time zero (`early`). Each draws from a ChaCha stream of its
//! own ([`aim_rng`], [`asymmetric_rng`], [`early_rng`]) and only when its knob is on, so
//! the draws of the schedule's own stream are never moved by them.
//!
//! **Clusters of several roles only** (clients and servers, candidates and a store,
//! proposers and acceptors): there a holder is a client, a waiter another, and a reply
//! path runs from a server to a client. In a cluster of one role (an election) every
//! node is a peer, the profiles' `"leader"` aims already hit the holder, and the seeds
//! found and pinned under the built-in profiles (the book's, the tutorial's) stay what
//! they were: these knobs draw nothing there.

use super::{client_weight, ms, round_ms, Drawer};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use tenure_core::{NodeId, RoleKind};
use tenure_scenario::{Fault, Latency, LinkSpec, NodeSel};

fn stream(seed: u64, n: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(n);
    rng
}

/// The stream the `holder` and `waiter` re-aims are drawn from, one draw per fault.
pub(super) fn aim_rng(seed: u64) -> ChaCha8Rng {
    stream(seed, u64::MAX - 3)
}

/// The stream asymmetric delays are drawn from.
fn asymmetric_rng(seed: u64) -> ChaCha8Rng {
    stream(seed, u64::MAX - 4)
}

/// The stream the early faults are drawn from.
fn early_rng(seed: u64) -> ChaCha8Rng {
    stream(seed, u64::MAX - 5)
}

impl Drawer<'_> {
    /// Whether the cluster has a role of holders (lock clients): there, whoever holds
    /// records `Holds`, and nobody may record `Leader`.
    pub(super) fn has_holders(&self) -> bool {
        self.kinds.contains(&RoleKind::Holder)
    }

    /// Whether the cluster has several roles: only there do these knobs draw (see the
    /// module documentation).
    pub(super) fn several_roles(&self) -> bool {
        self.cluster.roles().len() > 1
    }

    /// The selector a fault drawn at `sel` is aimed with: `"leader"` becomes `"holder"`
    /// in clusters of lock clients (a lock holder records `Holds`, not `Leader`, so a
    /// fault aimed at the leader found nobody there); a fixed node becomes `"holder"`
    /// with chance `holder` and `"waiter"` with chance `waiter` (one draw of the aim
    /// stream, made only when either is on).
    pub(super) fn reaim(&mut self, sel: NodeSel) -> NodeSel {
        match sel {
            NodeSel::Leader if self.has_holders() => NodeSel::Holder,
            NodeSel::Id(_) => self.reaim_fixed().unwrap_or(sel),
            other => other,
        }
    }

    /// `Some(role)` when a fault at a fixed node is to aim at a role instead.
    pub(super) fn reaim_fixed(&mut self) -> Option<NodeSel> {
        let (holder, waiter) = (self.p.holder, self.p.waiter);
        if (holder <= 0.0 && waiter <= 0.0) || !self.several_roles() {
            return None;
        }
        let x: f64 = self.aim.gen_range(0.0..1.0);
        if x < holder {
            Some(NodeSel::Holder)
        } else if x < holder + waiter {
            Some(NodeSel::Waiter)
        } else {
            None
        }
    }

    /// Whether one more node may go down over `[from, until)` in every role (a fault
    /// aimed at a role hits a node of any role that holds or waits).
    pub(super) fn room_in_every_role(&self, from: Duration, until: Duration) -> bool {
        let roles: Vec<&str> = self
            .cluster
            .roles()
            .iter()
            .map(|r| r.role.as_str())
            .collect();
        let by_role = |role: &str| {
            self.down
                .iter()
                .filter(|(n, a, b)| self.cluster.role_of(*n) == role && *a < until && from < *b)
                .count()
        };
        let aimed = self
            .leader_down
            .iter()
            .filter(|(a, b)| *a < until && from < *b)
            .count();
        roles
            .iter()
            .all(|r| by_role(r) + aimed < super::down_budget(self.cluster.count(r)))
    }

    /// Whether a crash aimed at a role may go down over `[at, end)`: one more down
    /// fits in every role, and no down drawn so far spans `end`, when every node is
    /// restarted (see [`Drawer::crash_aimed`]).
    pub(super) fn may_crash_aimed(&self, at: Duration, end: Duration) -> bool {
        self.room_in_every_role(at, end) && !self.down.iter().any(|(_, a, b)| *a < end && end < *b)
    }

    /// `fault`, a crash or a power loss aimed at a role, at `at`, restarted at `end`: whoever it hits is
    /// known only when the run gets there, so every node is restarted then (a restart of
    /// a node that is up does nothing), as after a leader crash. Counts as one node down
    /// in every role, and no other down may span `end` (the restart would end it early,
    /// below a declared minimum restart delay, say).
    pub(super) fn crash_aimed(&mut self, at: Duration, end: Duration, fault: Fault) {
        self.leader_down.push((at, end));
        self.restart_marks.push(end);
        self.push(at, fault);
        let nodes: Vec<NodeId> = self.cluster.nodes().collect();
        for node in nodes {
            self.push(
                end,
                Fault::Restart {
                    node: NodeSel::Id(node.0),
                },
            );
        }
    }

    /// Asymmetric delays for the whole run, one direction slow and the other at the
    /// scenario's own latency. In a cluster of several roles, a third of the time every
    /// link from one role to another is slow (servers to clients: a slow reply path,
    /// which a holder that times its lease from the reply pays for; clients to servers:
    /// slow requests), a third of the time every link from one role to one node of
    /// another (one client behind a slow reply path: its replies late, the others'
    /// not); else each ordered pair of nodes is slow with chance 0.3, one way only. The slow latency is drawn from the top half of
    /// `latency_range` (capped at a declared `max_latency`).
    pub(super) fn draw_asymmetric(&mut self) -> Vec<LinkSpec> {
        if self.p.asymmetric <= 0.0 || !self.several_roles() {
            return Vec::new();
        }
        let main = std::mem::replace(&mut self.rng, asymmetric_rng(self.seed));
        let mut links = Vec::new();
        if self.chance(self.p.asymmetric) {
            let top = self.p.latency_range[1];
            let max = self.between([top / 2, top]).max(ms(1));
            let latency = Latency::new(round_ms(max / 2), max);
            let roles = self.cluster.roles().len();
            let nodes: Vec<NodeId> = self.cluster.nodes().collect();
            let mut pairs: Vec<(NodeId, NodeId)> = Vec::new();
            let shape = self.rng.gen_range(0..3);
            if shape < 2 {
                // From every node of one role to every node of another (shape 0), or
                // to one node of it (shape 1: one client behind a slow path).
                let from = self.rng.gen_range(0..roles);
                let to = (from + self.rng.gen_range(1..roles)) % roles;
                let (from, to) = (
                    self.cluster.roles()[from].role.clone(),
                    self.cluster.roles()[to].role.clone(),
                );
                let targets: Vec<NodeId> = nodes
                    .iter()
                    .copied()
                    .filter(|n| self.cluster.role_of(*n) == to)
                    .collect();
                let targets = if shape == 1 {
                    vec![targets[self.rng.gen_range(0..targets.len())]]
                } else {
                    targets
                };
                for a in &nodes {
                    for b in &targets {
                        if self.cluster.role_of(*a) == from {
                            pairs.push((*a, *b));
                        }
                    }
                }
            } else {
                for a in &nodes {
                    for b in &nodes {
                        if a != b && self.rng.gen_bool(0.3) {
                            pairs.push((*a, *b));
                        }
                    }
                }
            }
            for (from, to) in pairs {
                links.push(LinkSpec {
                    from,
                    to,
                    both: false,
                    latency: Some(latency.into()),
                    loss: None,
                    duplicate: None,
                });
            }
            self.slow_paths_to_holders(top);
        }
        self.rng = main;
        links
    }

    /// One to three slow paths aimed at the holder (or, a third of the time, at a
    /// waiter) for a while in the fault window: `slow-link` events from a server (a
    /// node of the smallest role that is not the protected resource; else any protocol
    /// node) to `"holder"`, so the reply path to whoever holds when it fires is slow and
    /// the others' are not. What a holder that times its lease from the reply of its
    /// renewal pays for, and a whole-run slow link seldom shows: the node behind a slow
    /// path loses the race to lead or lock in the first place. Latency from the top half
    /// of `latency_range`, lengths log-uniform from 200 ms to 5 s, each over by the heal.
    fn slow_paths_to_holders(&mut self, top: Duration) {
        let (_, heal_at) = self.window;
        let protocol_nodes: Vec<NodeId> = self
            .cluster
            .nodes()
            .filter(|n| self.kind_of(*n) != RoleKind::Resource)
            .collect();
        let smallest = self
            .cluster
            .roles()
            .iter()
            .filter(|r| {
                self.cluster
                    .nodes()
                    .find(|n| self.cluster.role_of(*n) == r.role)
                    .is_some_and(|n| self.kind_of(n) != RoleKind::Resource)
            })
            .min_by_key(|r| r.count)
            .map(|r| r.role.clone());
        for _ in 0..self.rng.gen_range(1..=3u32) {
            let at = self.when();
            let servers: Vec<NodeId> = protocol_nodes
                .iter()
                .copied()
                .filter(|n| Some(self.cluster.role_of(*n)) == smallest.as_deref())
                .collect();
            let pool = if self.rng.gen_bool(0.5) && !servers.is_empty() {
                servers
            } else {
                protocol_nodes.clone()
            };
            let from = pool[self.rng.gen_range(0..pool.len())];
            let node = if self.rng.gen_bool(1.0 / 3.0) {
                NodeSel::Waiter
            } else {
                NodeSel::Holder
            };
            let max = self.between([top / 2, top]).max(ms(1));
            let latency = Latency::new(round_ms(max / 2), max);
            let duration = self.log_between([ms(200), Duration::from_secs(5)]);
            self.push_before_heal(at, duration, heal_at, |duration| Fault::SlowLink {
                from: NodeSel::Id(from.0),
                node,
                latency: latency.into(),
                duration,
            });
        }
    }

    /// Faults where one-shot decisions are made, for seeds with `early`, all from time
    /// zero (faults at time zero apply before any node starts) to `early_window`.
    /// Returns the nodes the heal must restart (those of crash points that may not have
    /// fired by then).
    ///
    /// * *Crash points at time zero* (one or two; not for targets that declare a minimum
    ///   restart delay): half the time a power loss right before the node's first sync
    ///   (a vote's, a promise's), else a crash or a power loss after 1 to 8 of its
    ///   effects counted from time zero, inside its first handlers (between a promise's
    ///   write and its reply, or its reply and its sync); each restarts after an outage
    ///   of 1 ms up to `early_window` (log-uniform), back in time to rejoin the decision
    ///   it crashed in. Protocol nodes only, holders preferred, never the protected
    ///   resource. Each counts as down through the early window and its outage (the
    ///   heal disarms one that has not fired, and restarts its node).
    /// * *A node held at its start* by a pause at time zero of 1 to 50 ms (within a
    ///   declared `max_pause`): the others decide without it, then it joins.
    /// * *Pauses aimed at a waiter or a holder* (one to three, 1 to 50 ms) at times in
    ///   the window, log-uniform from 1 ms (most in the first milliseconds): a node
    ///   with a request in flight (a candidate, a proposer in phase 1, a lock client
    ///   waiting), or the one that just got what it asked for (a leader, a proposer in
    ///   phase 2, a lock holder).
    pub(super) fn draw_early(&mut self, heal_at: Duration) -> Vec<NodeId> {
        if self.p.early <= 0.0 || !self.several_roles() {
            return Vec::new();
        }
        let p = self.p.clone();
        let main = std::mem::replace(&mut self.rng, early_rng(self.seed));
        let mut restart_at_heal = Vec::new();
        let end = p.early_window.min(heal_at);
        if self.chance(p.early) && !end.is_zero() {
            let short = [ms(1), ms(50).min(p.pause_range[1]).max(ms(1))];
            if p.crash_points {
                for _ in 0..self.rng.gen_range(1..=2u32) {
                    let node = self.pick(|kind| {
                        if kind == RoleKind::Resource {
                            0
                        } else {
                            client_weight(kind)
                        }
                    });
                    // Half the time a power loss right before the node's first sync
                    // (a vote's or a promise's, with the writes it would make durable
                    // still in the page cache); else a crash or a power loss after 1
                    // to 8 effects counted from time zero, inside its first handlers
                    // (between a promise's write and its reply, or its reply and its
                    // sync).
                    let at_sync = self.rng.gen_bool(0.5);
                    let at_effect = if at_sync {
                        0
                    } else {
                        self.rng.gen_range(1..=8)
                    };
                    let power = at_sync || self.rng.gen_bool(0.5);
                    // Back within the early window (a supervisor's quick restart, as in
                    // a flap), so the node rejoins the decision it crashed in.
                    let restart_after = self.log_between([ms(1), p.early_window.max(ms(1))]);
                    // It fires within the node's first handlers, at a time the draw
                    // cannot know exactly: down through the early window and its
                    // outage (the heal restarts it at the latest, and disarms it).
                    let until = (end + restart_after).min(heal_at);
                    if self.may_go_down(node, Duration::ZERO, until) {
                        self.down.push((node, Duration::ZERO, until));
                        self.push(
                            Duration::ZERO,
                            Fault::CrashPoint {
                                node: NodeSel::Id(node.0),
                                at_effect,
                                at_sync,
                                power,
                                restart_after: Some(restart_after),
                            },
                        );
                        restart_at_heal.push(node);
                    }
                }
            }
            if self.rng.gen_bool(0.5) {
                let node = self.pick(|kind| u32::from(kind != RoleKind::Resource));
                let duration = self.between(short);
                if self.may_go_down(node, Duration::ZERO, duration) {
                    self.down.push((node, Duration::ZERO, duration));
                    self.push(
                        Duration::ZERO,
                        Fault::Pause {
                            node: NodeSel::Id(node.0),
                            duration,
                        },
                    );
                }
            }
            for _ in 0..self.rng.gen_range(1..=3u32) {
                // Log-uniform: most in the first milliseconds, where one-shot
                // decisions are made.
                let at = self.log_between([ms(1), end.max(ms(1))]);
                let node = if self.rng.gen_bool(0.5) {
                    NodeSel::Waiter
                } else {
                    NodeSel::Holder
                };
                let duration = self.between(short).min(heal_at.saturating_sub(at));
                if duration >= ms(1) && at < heal_at {
                    self.push(at, Fault::Pause { node, duration });
                }
            }
        }
        self.rng = main;
        restart_at_heal
    }
}
