//! The runner: build a simulation of a protocol, schedule faults, run one seed.

use crate::clock::NodeClock;
use crate::control::{Action, Control};
use crate::host::{lock, node_process, now, Alarm, Doorbell};
use crate::net::{LinkOverride, LinkSettings, Network};
use crate::trace::TraceEvent;
use crate::world::{RecordHook, Stats, World};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tenure_core::{Cluster, History, NodeId, Protocol, SimTime};

/// A simulation of one protocol on one cluster, ready to run a seed.
pub struct Sim<P: Protocol> {
    cluster: Cluster,
    config: P::Config,
    seed: u64,
    pub(crate) duration: Duration,
    pub(crate) network: LinkSettings,
    links: Vec<(NodeId, NodeId, LinkOverride)>,
    clocks: Vec<NodeClock>,
    /// Each node's fsync latency range.
    fsync: Vec<(Duration, Duration)>,
    /// Each node's processing time range per handler.
    cpu: Vec<(Duration, Duration)>,
    actions: Vec<(SimTime, Action<P>)>,
    trace: bool,
    hook: Option<RecordHook>,
    /// Stream mode's connection timeout (`None`: datagrams).
    stream: Option<Duration>,
    order_after_stall: bool,
}

/// What a run produced.
pub struct RunOutput {
    pub history: History,
    /// The full trace, when asked for with [`Sim::trace`].
    pub trace: Option<Vec<TraceEvent>>,
    pub stats: Stats,
    /// True if the record hook asked to stop before the planned end.
    pub stopped_early: bool,
}

impl<P: Protocol> Sim<P> {
    /// How long the run lasts (true time).
    pub fn planned_duration(&self) -> Duration {
        self.duration
    }

    /// The network every link sees unless overridden.
    pub fn default_network(&self) -> &LinkSettings {
        &self.network
    }

    pub fn new(cluster: Cluster, config: P::Config, seed: u64) -> Sim<P> {
        let clocks = vec![NodeClock::new(0, 0.0); cluster.size()];
        let fsync = vec![(Duration::ZERO, Duration::ZERO); cluster.size()];
        let cpu = fsync.clone();
        Sim {
            cluster,
            config,
            seed,
            duration: Duration::from_secs(10),
            network: LinkSettings::default(),
            links: Vec::new(),
            clocks,
            fsync,
            cpu,
            actions: Vec::new(),
            trace: false,
            hook: None,
            stream: None,
            order_after_stall: false,
        }
    }

    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    pub fn network(mut self, settings: LinkSettings) -> Self {
        self.network = settings;
        self
    }

    pub fn link(mut self, from: NodeId, to: NodeId, link: LinkOverride) -> Self {
        self.links.push((from, to, link));
        self
    }

    /// A scenario's `[[network.link]]`: its override on `from -> to`, and back when it
    /// says `both`.
    pub fn link_spec(self, spec: &tenure_scenario::LinkSpec) -> Self {
        let o = LinkOverride {
            latency: spec.latency.clone(),
            loss: spec.loss,
            duplicate: spec.duplicate,
        };
        let sim = self.link(spec.from, spec.to, o.clone());
        if spec.both {
            sim.link(spec.to, spec.from, o)
        } else {
            sim
        }
    }

    /// The node's clock starts at `offset_ns` and runs at `1 + drift`.
    pub fn clock(mut self, node: NodeId, offset_ns: i64, drift: f64) -> Self {
        self.clocks[node.index()] = NodeClock::new(offset_ns, drift);
        self
    }

    /// Each `sync` of the node takes a latency drawn uniformly from `min..=max` (zero
    /// unless set), during which the node's later effects wait.
    pub fn fsync(mut self, node: NodeId, min: Duration, max: Duration) -> Self {
        assert!(min <= max, "fsync latency minimum above maximum");
        self.fsync[node.index()] = (min, max);
        self
    }

    /// Stream mode: TCP-like connections, FIFO per link, that hold messages across a
    /// partition shorter than `connection_timeout` and reset (with
    /// `Protocol::on_disconnect` at both ends) on a longer one or a crash.
    pub fn stream(mut self, connection_timeout: Duration) -> Self {
        assert!(
            !connection_timeout.is_zero(),
            "a connection timeout must be positive"
        );
        self.stream = Some(connection_timeout);
        self
    }

    /// Each handler of the node takes a processing time drawn uniformly from
    /// `min..=max` (zero unless set, from the node's own random stream), during which
    /// the node handles nothing else: its later messages and timers wait.
    pub fn processing(mut self, node: NodeId, min: Duration, max: Duration) -> Self {
        assert!(min <= max, "processing time minimum above maximum");
        self.cpu[node.index()] = (min, max);
        self
    }

    /// After a stall (a pause's end, a handler's processing time), handle a node's
    /// overdue messages and timers in an order drawn from the seed and traced
    /// (`reordered`), instead of by due time. Off by default: turning it on for every
    /// run changed which seeds find some broken variants (see the book's page on slow
    /// nodes).
    pub fn order_after_stall(mut self, on: bool) -> Self {
        self.order_after_stall = on;
        self
    }

    /// Records the full trace (messages, timers, faults), not only observations.
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Called with each observation as it is made; returning true stops the run.
    pub fn on_record(mut self, hook: RecordHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// Runs `action` at true time `at`.
    pub fn at(
        mut self,
        at: Duration,
        action: impl FnOnce(&mut Control<'_, P>) + Send + 'static,
    ) -> Self {
        self.actions
            .push((SimTime::from_duration(at), Box::new(action)));
        self
    }

    /// Runs the seed to the end (or until the hook stops it).
    pub fn run(self) -> RunOutput {
        let Sim {
            cluster,
            config,
            seed,
            duration,
            network,
            links,
            clocks,
            fsync,
            cpu,
            actions,
            trace,
            hook,
            stream,
            order_after_stall,
        } = self;
        let mut net = Network::new(cluster.size(), network);
        for (from, to, link) in links {
            net.set_override(from, to, link);
        }
        let mut world = World::<P>::new(cluster.clone(), config, seed, net, clocks, trace);
        for (slot, range) in world.nodes.iter_mut().zip(fsync) {
            slot.disk.fsync = range;
        }
        for (slot, range) in world.nodes.iter_mut().zip(cpu) {
            slot.cpu = range;
        }
        if let Some(timeout) = stream {
            world.set_stream(timeout);
        }
        world.order_after_stall = order_after_stall;
        if let Some(hook) = hook {
            world.set_hook(hook);
        }
        // Faults at time zero apply before the protocol's first actions.
        if actions.iter().any(|(at, _)| *at == SimTime::ZERO) {
            world.close_start_gate();
        }
        let world = Arc::new(Mutex::new(world));
        let end = SimTime::from_duration(duration);

        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        let handle = runtime.handle().clone();
        let mut madsim_ids = Vec::with_capacity(cluster.size());
        // One poll function for every node's process (see `node_process`).
        let process = node_process(world.clone());
        for node in cluster.nodes() {
            let built = handle
                .create_node()
                .name(node.to_string())
                .init_light(node.0, process.clone())
                .build();
            madsim_ids.push(built.id());
        }

        let supervisor = supervise(
            world.clone(),
            handle.clone(),
            madsim_ids.clone(),
            actions,
            end,
        );
        let stopped_early = runtime.block_on(async move {
            let stopped = supervisor.await;
            // The run is over. madsim does not drop a task still waiting when the
            // runtime is dropped, and every node task holds the world: kill the nodes and
            // yield once, so the executor drops their tasks. Otherwise each run leaks its
            // world (history, storage, inboxes): memory growing with every seed.
            for id in &madsim_ids {
                handle.kill(*id);
            }
            madsim::task::yield_now().await;
            stopped
        });
        drop(runtime);
        // Wakers kept in the world point at those tasks: drop them too (outside the
        // lock), so no cycle is left between the world and a task.
        let wakers = lock(&world).take_wakers();
        drop(wakers);

        let mut w = lock(&world);
        let end_time = if stopped_early {
            w.records.last().map_or(SimTime::ZERO, |r| r.time)
        } else {
            end
        };
        // The records move into the history (no copy of a long run's records).
        let records = std::mem::take(&mut w.records);
        let mut history = w.history(end_time);
        history.records = records;
        RunOutput {
            history,
            trace: w.trace.take(),
            stats: w.stats.clone(),
            stopped_early,
        }
    }
}

/// Applies the scheduled actions at their times until the end; true if stopped early.
async fn supervise<P: Protocol>(
    world: Arc<Mutex<World<P>>>,
    handle: madsim::runtime::Handle,
    madsim_ids: Vec<madsim::task::NodeId>,
    actions: Vec<(SimTime, Action<P>)>,
    end: SimTime,
) -> bool {
    // Stable order: by time, then as scheduled.
    let mut queue: Vec<(SimTime, u64, Action<P>)> = actions
        .into_iter()
        .enumerate()
        .map(|(i, (at, a))| (at, i as u64, a))
        .collect();
    let mut next_order = queue.len() as u64;
    loop {
        queue.sort_by_key(|(at, order, _)| std::cmp::Reverse((*at, *order)));
        let next_at = queue.last().map_or(end, |(at, _, _)| (*at).min(end));
        let t = now();
        if next_at > t {
            let mut alarm = Alarm::new(madsim::time::TimeHandle::current());
            alarm.set(next_at);
            Doorbell {
                world: &world,
                alarm: &mut alarm,
            }
            .await;
        }
        let t = now();
        let mut w = lock(&world);
        if w.stop_requested {
            return true;
        }
        if t >= end {
            return false;
        }
        for (at, node) in w.take_restarts() {
            let restart: Action<P> = Box::new(move |c: &mut Control<'_, P>| c.restart(node));
            queue.push((at, next_order, restart));
            next_order += 1;
            queue.sort_by_key(|(at, order, _)| std::cmp::Reverse((*at, *order)));
        }
        // Faults that waited for a holder or a waiter: somebody is one now.
        for action in w.take_ready_aims() {
            queue.push((t, next_order, action));
            next_order += 1;
            queue.sort_by_key(|(at, order, _)| std::cmp::Reverse((*at, *order)));
        }
        while queue.last().is_some_and(|(at, _, _)| *at <= t) {
            let (_, _, action) = queue.pop().expect("peeked");
            let mut control = Control {
                world: &mut w,
                handle: &handle,
                madsim_ids: &madsim_ids,
                now: t,
                later: Vec::new(),
            };
            action(&mut control);
            for (at, a) in control.later {
                queue.push((at, next_order, a));
                next_order += 1;
            }
            queue.sort_by_key(|(at, order, _)| std::cmp::Reverse((*at, *order)));
        }
        // The events of time zero are applied: the nodes may start.
        w.open_start_gate();
    }
}
