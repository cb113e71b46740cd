//! Fault verbs: what a scenario timeline (or a test) does to a running cluster.
//! Every verb but `request` counts as a fault: the liveness phase starts after the last.

use crate::world::{CrashPoint, Status, World};
use std::time::Duration;
use tenure_core::{Aim, NodeId, Protocol, Request, SimTime};

/// A scheduled action on the running cluster.
pub type Action<P> = Box<dyn FnOnce(&mut Control<'_, P>) + Send>;

/// The cluster as the fault supervisor sees it at one instant.
pub struct Control<'a, P: Protocol> {
    pub(crate) world: &'a mut World<P>,
    pub(crate) handle: &'a madsim::runtime::Handle,
    pub(crate) madsim_ids: &'a [madsim::task::NodeId],
    pub(crate) now: SimTime,
    pub(crate) later: Vec<(SimTime, Action<P>)>,
}

impl<P: Protocol> Control<'_, P> {
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The node that currently believes it leads the highest term, if any.
    pub fn leader(&self) -> Option<NodeId> {
        self.world.leader()
    }

    pub fn status(&self, node: NodeId) -> Status {
        self.world.nodes[node.index()].status
    }

    fn fault(&mut self, kind: &'static str, nodes: Vec<NodeId>, detail: String) {
        self.world.calm_from = self.world.calm_from.max(self.now);
        tracing::info!(kind, ?nodes, %detail, "fault");
        self.world.trace_fault(self.now, kind, nodes, detail);
    }

    /// Records in the trace that an event aimed at "the leader" found none.
    pub fn note_skipped(&mut self, kind: &'static str) {
        self.note_skipped_aim(kind, Aim::Leader);
    }

    /// Records in the trace that an event aimed at `aim` found nobody to aim at.
    fn note_skipped_aim(&mut self, kind: &'static str, aim: Aim) {
        let why = match aim {
            Aim::Leader => "no node believes it leads",
            Aim::Holder | Aim::Waiter => "no node believes it holds or waits",
        };
        let detail = format!("{kind} skipped: {why}");
        tracing::info!(%detail, "fault skipped");
        self.world
            .trace_fault(self.now, "skipped", Vec::new(), detail);
    }

    /// The node a fault of `kind` aimed at `aim` hits now, from what the nodes believe
    /// at this instant ([`tenure_core::Beliefs::select`]): `leader` as it always was;
    /// `holder` and `waiter` among the nodes that are up first (a paused holder cannot
    /// be paused again), then among all. A `holder` nobody is re-aimed at a waiter and
    /// a `waiter` nobody at a holder, and the trace says so (`re-aimed`); when nobody
    /// holds or waits, the trace says the fault was skipped and `None` is returned.
    pub fn select(&mut self, aim: Aim, kind: &'static str) -> Option<NodeId> {
        let selected = match aim {
            Aim::Leader => self.world.beliefs.select(aim, |_| true),
            Aim::Holder | Aim::Waiter => {
                let nodes = &self.world.nodes;
                self.world
                    .beliefs
                    .select(aim, |n| nodes[n.index()].status == Status::Up)
                    .or_else(|| self.world.beliefs.select(aim, |_| true))
            }
        };
        let Some(selected) = selected else {
            self.note_skipped_aim(kind, aim);
            return None;
        };
        if let Some(other) = selected.reaimed {
            let why = match aim {
                Aim::Holder => "no node holds",
                _ => "no node waits",
            };
            let detail = format!(
                "{kind} aimed at the {} re-aimed at {}, the {}: {why}",
                aim.name(),
                selected.node,
                other.name()
            );
            tracing::info!(%detail, "fault re-aimed");
            self.world
                .trace_fault(self.now, "re-aimed", Vec::new(), detail);
        }
        Some(selected.node)
    }

    /// Whether somebody is of the role `aim` names now, without re-aiming
    /// ([`tenure_core::Beliefs::of_role`]).
    pub fn finds(&self, aim: Aim) -> bool {
        self.world.beliefs.of_role(aim, |_| true).is_some()
    }

    /// A fault of `kind` aimed at `aim` (`holder` or `waiter`) found nobody of that
    /// role: it waits for one, until `until`. The moment a node records that it holds
    /// (for `holder`) or waits (for `waiter`), the supervisor runs `action(id)`, which
    /// aims the fault again and may wait again with the same `id`; at `until` a fault
    /// still waiting runs `at_end`, which aims it as it would have been without the
    /// wait (re-aimed at the other role, or skipped). The trace says `waiting` when it
    /// begins.
    pub fn wait_for_aim(
        &mut self,
        kind: &'static str,
        aim: Aim,
        until: SimTime,
        id: Option<u64>,
        action: impl FnOnce(u64) -> Action<P>,
        at_end: Action<P>,
    ) {
        let first = id.is_none();
        let id = id.unwrap_or_else(|| self.world.new_await_id());
        self.world.await_aim(id, aim, action(id));
        if !first {
            return;
        }
        let detail = format!(
            "{kind} aimed at the {} waits for one until {until}: no node believes it {}",
            aim.name(),
            if aim == Aim::Holder { "holds" } else { "waits" }
        );
        tracing::info!(%detail, "fault waits");
        self.world
            .trace_fault(self.now, "waiting", Vec::new(), detail);
        let expire: Action<P> = Box::new(move |c: &mut Control<'_, P>| {
            if c.world.forget_aim(id).is_some() {
                at_end(c);
            }
        });
        self.later.push((until, expire));
    }

    /// Schedules `action` to run `after` from now.
    pub fn after(&mut self, after: Duration, action: Action<P>) {
        self.later.push((self.now + after, action));
    }

    /// Kills the node's process: volatile state and timers are lost, storage is kept
    /// (written data reached the operating system, synced or not). No-op on a node
    /// that is already down.
    pub fn crash(&mut self, node: NodeId) {
        self.kill(node, false, false);
    }

    /// The node's machine loses power: like a crash, and every write it had not
    /// synced is lost; its monotonic clock restarts from a new origin. No-op on a
    /// node that is already down. `restart` boots it again.
    pub fn power_loss(&mut self, node: NodeId) {
        self.kill(node, true, false);
    }

    /// A power loss that tears the node's last write if it was not synced: the disk
    /// keeps a seeded prefix of it, a record that fails its checksum, so the key reads
    /// as its last synced value (as if the write were lost whole). See
    /// `Disk::tear_last_write`.
    pub fn power_loss_torn(&mut self, node: NodeId) {
        self.kill(node, true, true);
    }

    fn kill(&mut self, node: NodeId, power: bool, torn: bool) {
        if self.status(node) == Status::Down {
            return;
        }
        if self.status(node) == Status::Paused {
            self.handle.resume(self.madsim_ids[node.index()]);
        }
        let (kind, detail) = if power {
            let disk = &mut self.world.nodes[node.index()].disk;
            let lost = disk.unsynced_keys();
            let mut detail = format!("unsynced writes lost: {lost:?}");
            if torn {
                match disk.tear_last_write() {
                    Some((key, kept, of)) => detail.push_str(&format!(
                        "; the last write, `{key}`, torn: {kept} of {of} bytes on disk (its checksum fails: it reads as its last synced value)"
                    )),
                    None => detail.push_str("; no unsynced write to tear"),
                }
            }
            ("power-loss", detail)
        } else {
            ("crash", String::new())
        };
        self.fault(kind, vec![node], detail);
        self.world.crash_node(node, self.now, power);
        self.handle.kill(self.madsim_ids[node.index()]);
    }

    /// Arms a crash point inside the node's handling: it crashes (loses power, if
    /// `power`) right after applying `after_effects` more effects, between two effects
    /// of one handler if that is where the count ends (after the send, before the
    /// sync). The crash itself is traced when it happens. No-op on a node that is down.
    pub fn crash_point(&mut self, node: NodeId, after_effects: u32, power: bool) {
        self.arm_crash_point(
            node,
            CrashPoint {
                remaining: after_effects,
                at_sync: false,
                power,
                restart_after: None,
            },
        );
    }

    /// Arms a crash point (see [`Control::crash_point`]); with `at_sync` the count
    /// starts at the node's next sync (0: right before it), and with `restart_after`
    /// the node boots again that long after the crash. No-op on a node that is down.
    pub fn arm_crash_point(&mut self, node: NodeId, point: CrashPoint) {
        if self.status(node) == Status::Down {
            return;
        }
        let what = if point.power { "power loss" } else { "crash" };
        let from = if point.at_sync {
            " from its next sync"
        } else {
            ""
        };
        let restart = point.restart_after.map_or(String::new(), |d| {
            format!(", restart {} later", tenure_core::format_duration(d))
        });
        self.fault(
            "crash-point",
            vec![node],
            format!(
                "{what} after {} more effects{from}{restart}",
                point.remaining
            ),
        );
        self.world.arm_crash_point(node, point);
    }

    /// The node's syncs hang for `duration`: a sync begun before it ends completes
    /// no earlier than its end (plus the usual fsync latency).
    pub fn disk_stall(&mut self, node: NodeId, duration: Duration) {
        self.fault(
            "disk-stall",
            vec![node],
            tenure_core::format_duration(duration),
        );
        let until = self.now + duration;
        let disk = &mut self.world.nodes[node.index()].disk;
        disk.stall_until = disk.stall_until.max(until);
    }

    /// The node's syncs fail for `duration`: the protocol sees `Err` from `sync`, and
    /// nothing it wrote becomes durable by that call.
    pub fn disk_error(&mut self, node: NodeId, duration: Duration) {
        self.fault(
            "disk-error",
            vec![node],
            tenure_core::format_duration(duration),
        );
        let until = self.now + duration;
        let disk = &mut self.world.nodes[node.index()].disk;
        disk.error_until = disk.error_until.max(until);
    }

    /// The node turns slow for `duration` (a gray failure: alive, but slow): its
    /// handlers' processing times and its fsync latencies are multiplied by `factor`
    /// (at least 1). A later `slow` replaces an earlier one still in force.
    pub fn slow(&mut self, node: NodeId, factor: f64, duration: Duration) {
        assert!(factor >= 1.0, "a slowdown factor is at least 1");
        self.fault(
            "slow",
            vec![node],
            format!("x{factor} for {}", tenure_core::format_duration(duration)),
        );
        let slot = &mut self.world.nodes[node.index()];
        slot.slow_factor = factor;
        slot.slow_until = self.now + duration;
        // Its end is traced (and counts as a fault, so the calm starts after it).
        self.after(
            duration,
            Box::new(move |c: &mut Control<'_, P>| {
                if c.world.nodes[node.index()].slow_until <= c.now {
                    c.fault("slow-end", vec![node], String::new());
                }
            }),
        );
    }

    /// One direction of one link turns slow for `duration`: messages sent from `from` to
    /// `to` from now on take `latency` (the way back keeps its own); then the link gets
    /// back the settings it had. A later slow-link on the same link replaces this one,
    /// and each puts back what it found.
    pub fn slow_link(
        &mut self,
        from: NodeId,
        to: NodeId,
        latency: crate::net::Delay,
        duration: Duration,
    ) {
        let shown = match latency.as_uniform() {
            Some(l) => format!(
                "[\"{}\", \"{}\"]",
                tenure_core::format_duration(l.min),
                tenure_core::format_duration(l.max)
            ),
            None => serde_json::to_string(&latency).expect("a delay serializes"),
        };
        self.fault(
            "slow-link",
            vec![from, to],
            format!(
                "{from} -> {to}: latency = {shown} for {}",
                tenure_core::format_duration(duration)
            ),
        );
        let before = self.world.net.override_of(from, to).cloned();
        let slow = crate::net::LinkOverride {
            latency: Some(latency),
            ..before.clone().unwrap_or_default()
        };
        self.world.net.set_override(from, to, slow);
        // Its end is traced (and counts as a fault, so the calm starts after it).
        self.after(
            duration,
            Box::new(move |c: &mut Control<'_, P>| {
                c.fault("slow-link-end", vec![from, to], String::new());
                c.world.net.restore_override(from, to, before);
            }),
        );
    }

    /// Starts a crashed node's process again. No-op on a node that is not down.
    pub fn restart(&mut self, node: NodeId) {
        if self.status(node) != Status::Down {
            return;
        }
        self.fault("restart", vec![node], String::new());
        self.handle.restart(self.madsim_ids[node.index()]);
    }

    /// Stops the node for `duration` (a GC or VM stall): no handler runs, messages and
    /// timers pile up, and it keeps believing what it believed.
    pub fn pause(&mut self, node: NodeId, duration: Duration) {
        if self.status(node) != Status::Up {
            return;
        }
        self.fault("pause", vec![node], tenure_core::format_duration(duration));
        self.world.nodes[node.index()].status = Status::Paused;
        self.handle.pause(self.madsim_ids[node.index()]);
        self.after(
            duration,
            Box::new(move |c: &mut Control<'_, P>| c.resume(node)),
        );
    }

    pub fn resume(&mut self, node: NodeId) {
        if self.status(node) != Status::Paused {
            return;
        }
        self.fault("resume", vec![node], String::new());
        self.world.nodes[node.index()].status = Status::Up;
        self.world.mark_stalled(node);
        self.handle.resume(self.madsim_ids[node.index()]);
        self.world.ring(node);
    }

    pub fn partition(&mut self, groups: &[Vec<NodeId>]) {
        self.fault("partition", groups.concat(), format!("{groups:?}"));
        self.world.net.partition(groups);
        self.world.network_changed(self.now);
    }

    pub fn isolate(&mut self, node: NodeId) {
        self.fault("isolate", vec![node], String::new());
        self.world.net.isolate(node);
        self.world.network_changed(self.now);
    }

    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.fault("cut", vec![a, b], String::new());
        self.world.net.cut(a, b);
        self.world.network_changed(self.now);
    }

    pub fn one_way(&mut self, from: &[NodeId], to: &[NodeId]) {
        self.fault(
            "one-way",
            [from, to].concat(),
            format!("{from:?} -/-> {to:?}"),
        );
        self.world.net.one_way(from, to);
        self.world.network_changed(self.now);
    }

    pub fn bridge(&mut self, bridge: NodeId, groups: &[Vec<NodeId>]) {
        self.fault("bridge", vec![bridge], format!("{groups:?}"));
        self.world.net.bridge(bridge, groups);
        self.world.network_changed(self.now);
    }

    /// Heals every partition and disarms every crash point that has not fired.
    pub fn heal(&mut self) {
        self.fault("heal", Vec::new(), String::new());
        self.world.net.heal();
        self.world.network_changed(self.now);
        self.world.disarm_crash_points();
    }

    /// Steps the node's wall clock by `by_ns` (its monotonic clock is untouched).
    pub fn clock_jump(&mut self, node: NodeId, by_ns: i64) {
        self.fault(
            "clock-jump",
            vec![node],
            tenure_core::SignedDuration(by_ns).to_string(),
        );
        self.world.nodes[node.index()].clock.jump(by_ns);
        self.world.ring(node);
    }

    /// The node's clocks, wall and monotonic, stand still for `duration` of true time,
    /// then run on from where they stopped (a VM freeze seen from the clock). The node
    /// keeps running meanwhile: it handles messages, reading the frozen clock, and its
    /// timers (deadlines on the monotonic clock) do not fire until the clock moves
    /// again, so each fires `duration` late.
    pub fn clock_stall(&mut self, node: NodeId, duration: Duration) {
        self.fault(
            "clock-stall",
            vec![node],
            tenure_core::format_duration(duration),
        );
        let now = self.now;
        self.world.nodes[node.index()].clock.stall(now, duration);
        self.world.ring(node);
        // Its end is traced (and counts as a fault, so the calm starts after it).
        self.after(
            duration,
            Box::new(move |c: &mut Control<'_, P>| {
                if !c.world.nodes[node.index()].clock.stalled(c.now) {
                    c.fault("clock-stall-end", vec![node], String::new());
                }
            }),
        );
    }

    /// NTP slewing: the node's wall clock moves by `by_ns` gradually, at `ppm` parts
    /// per million of its monotonic time, instead of stepping; the monotonic clock is
    /// not slewed.
    pub fn clock_slew(&mut self, node: NodeId, by_ns: i64, ppm: f64) {
        self.fault(
            "clock-slew",
            vec![node],
            format!("{} at {ppm}ppm", tenure_core::SignedDuration(by_ns)),
        );
        let now = self.now;
        self.world.nodes[node.index()].clock.slew(now, by_ns, ppm);
        self.world.ring(node);
    }

    /// From now on the node's clock runs at `1 + drift`; its timers move with it.
    pub fn clock_drift(&mut self, node: NodeId, drift: f64) {
        self.fault("clock-drift", vec![node], format!("{drift}"));
        let now = self.now;
        self.world.nodes[node.index()].clock.set_drift(now, drift);
        self.world.ring(node);
    }

    /// Changes the network-wide defaults from now on.
    pub fn network(
        &mut self,
        latency: Option<crate::net::Delay>,
        loss: Option<f64>,
        duplicate: Option<f64>,
    ) {
        let d = &mut self.world.net.defaults;
        if let Some(l) = latency {
            d.latency = l;
        }
        if let Some(l) = loss {
            d.loss = l;
        }
        if let Some(x) = duplicate {
            d.duplicate = x;
        }
        let d = &self.world.net.defaults;
        let latency = match d.latency.as_uniform() {
            Some(l) => format!(
                "[\"{}\", \"{}\"]",
                tenure_core::format_duration(l.min),
                tenure_core::format_duration(l.max)
            ),
            None => serde_json::to_string(&d.latency).expect("a delay serializes"),
        };
        let detail = format!(
            "latency = {latency}, loss = {}, duplicate = {}",
            d.loss, d.duplicate
        );
        self.fault("network", Vec::new(), detail);
    }

    /// Fires the node's `timer` now, as if it were due (not a fault): a test script
    /// poking a node, e.g. making a leader broadcast its heartbeats at a chosen instant
    /// as the Raft paper's election measurement does (§9.3). Returns false, doing
    /// nothing, unless the node is up and the timer is set.
    pub fn fire_timer(&mut self, node: NodeId, timer: P::Timer) -> bool {
        let now = self.now;
        self.world.fire_timer(node, now, timer)
    }

    /// Ends the run now (not a fault): what was recorded so far is its history.
    pub fn stop(&mut self) {
        self.world.stop_requested = true;
    }

    /// Turns the node Byzantine for the rest of the run (restarts included): it lies as
    /// `behaviour` says, through `Protocol::on_byzantine`.
    pub fn byzantine(&mut self, node: NodeId, behaviour: tenure_core::Byzantine) {
        self.fault("byzantine", vec![node], behaviour.to_string());
        let now = self.now;
        self.world.byzantine(node, now, behaviour);
    }

    /// Hands a client request to the node (not a fault). Dropped if the node is down.
    pub fn request(&mut self, node: NodeId, request: Request) {
        if self.status(node) == Status::Down {
            return;
        }
        let now = self.now;
        self.world.request(node, now, request);
    }
}
