//! The shared state of a run: every node's process, storage, clock, timers and inbox,
//! the network, and the history. Node tasks and the fault supervisor take turns on it
//! (madsim runs one task at a time); nothing here reads real time or global randomness.

use crate::clock::NodeClock;
use crate::net::{DropReason, Fate, Network};
use crate::rng::{LazyRng, SeededRng};
use crate::trace::TraceEvent;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::task::Waker;
use std::time::Duration;
mod stream;
mod timers;

pub use stream::Streams;
use tenure_core::{
    Cluster, Effect, History, NodeId, Observation, Protocol, Record, Request, RunInfo, SimTime,
    Step, StorageMap,
};
use timers::Timers;

/// A protocol handler running this many events at one true instant is a livelock bug.
const MAX_EVENTS_PER_INSTANT: u32 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Up,
    Paused,
    Down,
}

enum Input<M> {
    Message {
        id: u64,
        from: NodeId,
        msg: M,
    },
    Request(Request),
    /// The node was turned Byzantine (`Protocol::on_byzantine`).
    Byzantine(tenure_core::Byzantine),
    /// Stream mode: the connection to `peer` was reset.
    Disconnect {
        peer: NodeId,
    },
}

/// Something due at a node, in its inbox: its true time, the order it was scheduled
/// in, and where its input waits in the world's [`Inputs`]. Ordered by (`at`, `seq`),
/// which no two share, exactly as the inbox's entries were when they held their
/// inputs: the heap makes the same comparisons with the same outcomes, so its layout
/// (which `start_node` and `draw_order` walk) and its order do not change. An entry is
/// 24 bytes instead of 72 (Raft's): a leader's inbox holds a reply from every
/// follower, and each pop moves an entry down each of its levels.
#[derive(Clone, Copy)]
struct Due {
    at: SimTime,
    seq: u64,
    input: u32,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The inputs waiting in every node's inbox, by slot; freed slots are reused last
/// freed first, so a new message goes where one was just taken out (memory the
/// caches still hold).
struct Inputs<M> {
    slots: Vec<Line<Option<Input<M>>>>,
    free: Vec<u32>,
}

/// How many sends ahead a handler's effects fetch a receiver's slot (and half as many
/// its inbox): each send takes long enough for the fetch of one to arrive (issue 38).
const SEND_AHEAD: usize = 4;

/// One slot a cache line (or whole lines): a delivery's `take` and a send's `put`
/// read one line, not two (Raft's 56-byte input straddled two lines at 6 of every 8
/// slots).
#[repr(align(64))]
struct Line<T>(T);

impl<M> Inputs<M> {
    fn new() -> Self {
        Inputs {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    fn put(&mut self, input: Input<M>) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Line(Some(input));
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("at most 2^32 inputs queued");
                self.slots.push(Line(Some(input)));
                slot
            }
        }
    }

    fn get(&self, slot: u32) -> &Input<M> {
        self.slots[slot as usize]
            .0
            .as_ref()
            .expect("a queued input")
    }

    fn take(&mut self, slot: u32) -> Input<M> {
        let input = self.slots[slot as usize].0.take().expect("a queued input");
        self.free.push(slot);
        input
    }
}

/// A node's state. `repr(C)` keeps the fields in the order written: what a delivery
/// touches first, so the handful of cache lines a message brings in are the same few
/// (at 10,000 nodes every node's slot falls out of the caches between two
/// heartbeats, and the compiler's order spread the hot fields over most of a
/// 904-byte slot: `rung`, the first field a woken node task reads, sat at byte 892,
/// its task's first cache miss). The first line holds what the sender's side (`due_at`) and the
/// node task's wake (`node_waits`) read; then what `run_due`, the handlers and
/// `apply` read; the rest is cold. Aligned to a cache line so the first line is one.
/// Layout only: no run changes.
#[repr(C, align(64))]
pub struct NodeSlot<P: Protocol> {
    /// The node task's waker and whether it was rung since it last looked.
    waker: Option<Waker>,
    /// When the node task plans to wake next (what `process_due` returned, or an
    /// earlier arrival since).
    planned_wake: SimTime,
    /// The deadlines of the madsim timers set to wake the node task that had not gone
    /// off when last looked at (see [`crate::host::wake_by`]).
    wakeups: crate::host::Wakeups,
    pub status: Status,
    rung: bool,
    /// A sync is in progress: the node does nothing else until `busy_until`, then the
    /// sync's writes become durable and `deferred` (the rest of the handler's effects)
    /// are applied.
    sync_pending: bool,
    /// The node was stalled (paused, or busy processing): the next time it handles
    /// what is due, the order of its overdue messages and timers is drawn from
    /// `order_rng` (see [`World::draw_order`]).
    stalled: bool,
    pub incarnation: u32,
    inbox: BinaryHeap<Due>,
    /// Each timer's deadline on the node's monotonic clock, and its scheduling order.
    timers: Timers<P::Timer>,
    cpu_busy_until: SimTime,
    busy_until: SimTime,
    pub clock: NodeClock,
    /// The protocol's stream (boxed: a ChaCha8 state would spread the slot's hot
    /// fields over more cache lines).
    rng: Box<SeededRng>,
    /// The drawn order still to follow: `Some(timer)` or `None` for the inbox's next
    /// (overdue messages were re-keyed to come out of the heap in the drawn order).
    forced: std::collections::VecDeque<Option<P::Timer>>,
    /// An armed crash point: the node crashes (or loses power, if `power`) right after
    /// applying `remaining` more effects (before its next one if `remaining` is 0).
    crash_point: Option<CrashPoint>,
    /// Each handler takes a processing time drawn uniformly from this range (zero
    /// unless set); the node handles nothing else until `cpu_busy_until`.
    pub cpu: (Duration, Duration),
    /// The handler running (or whose effects wait on a sync), for durability hints.
    handling: Handling<P::Timer>,
    /// What is on the node's disk and how its syncs behave.
    pub disk: Disk,
    pub storage: StorageMap,
    proto: Option<P>,
    deferred: Vec<Effect<P::Msg, P::Timer>>,
    /// The sync in progress was the armed crash point's last effect: the node crashes
    /// when it completes, before the effects that waited for it.
    crash_when_synced: bool,
    cpu_rng: LazyRng,
    /// A `slow` fault: processing times and fsync latencies are multiplied by
    /// `slow_factor` until `slow_until`.
    pub slow_factor: f64,
    pub slow_until: SimTime,
    order_rng: LazyRng,
    /// A `byzantine` fault turned the node: every start tells its new process again.
    pub byzantine: Option<tenure_core::Byzantine>,
}

impl<P: Protocol> NodeSlot<P> {
    /// The `slow` multiplier in force at `now` (1 when none).
    fn slowdown(&self, now: SimTime) -> f64 {
        if now < self.slow_until {
            self.slow_factor
        } else {
            1.0
        }
    }
}

/// `d` times `factor` (at least 1), saturating.
fn scale(d: Duration, factor: f64) -> Duration {
    if factor <= 1.0 {
        d
    } else {
        Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
    }
}

/// An armed crash point (see [`World::arm_crash_point`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashPoint {
    /// Effects still to apply before the crash.
    pub remaining: u32,
    /// The count waits for the node's next sync (then counts from it, the sync
    /// included: `remaining = 0` crashes right before the sync).
    pub at_sync: bool,
    pub power: bool,
    /// The node boots again this long after the crash.
    pub restart_after: Option<std::time::Duration>,
}

/// An item overdue after a stall: its due time, scheduling order, and the timer (`Ok`)
/// or the input (`Err`).
type Overdue<P> = (SimTime, u64, Result<<P as Protocol>::Timer, Due>);

/// Writes as a file system sees them: `None` is a delete.
type Writes = BTreeMap<String, Option<String>>;

fn apply_writes(map: &mut StorageMap, writes: Writes) {
    for (key, value) in writes {
        match value {
            Some(v) => map.insert(key, v),
            None => map.remove(&key),
        };
    }
}

/// A node's disk. The node's `storage` (what handlers read) is always
/// `durable` + `syncing` + `unsynced`, applied in that order.
/// `repr(C)`: what every handler's send and start read (`unsynced`, `error_until`)
/// first, on the line after the node slot's hot fields (see [`NodeSlot`]).
#[repr(C)]
pub struct Disk {
    /// Writes that reached the operating system since the last sync began.
    unsynced: Writes,
    /// Syncs before this true time fail (`disk-error`).
    pub error_until: SimTime,
    /// What survives a power loss.
    pub durable: StorageMap,
    /// Writes of the sync in progress: durable when it completes.
    syncing: Writes,
    /// Each sync takes a latency drawn uniformly from this range.
    pub fsync: (Duration, Duration),
    /// Syncs begun before this true time complete no earlier than it (`disk-stall`).
    pub stall_until: SimTime,
    /// The key of the latest write (to tear it on a torn power loss).
    last_write: Option<String>,
    /// Torn records: the prefix of a write a power loss tore (see
    /// [`Disk::tear_last_write`]), kept until the key is written again. Each fails its
    /// checksum, so reads never see it: the key reads as its last synced value.
    pub torn: BTreeMap<String, String>,
    rng: LazyRng,
}

impl Disk {
    fn new(seed: u64, index: usize) -> Disk {
        Disk {
            durable: StorageMap::new(),
            syncing: Writes::new(),
            unsynced: Writes::new(),
            fsync: (Duration::ZERO, Duration::ZERO),
            stall_until: SimTime::ZERO,
            error_until: SimTime::ZERO,
            last_write: None,
            torn: BTreeMap::new(),
            rng: LazyRng::disk(seed, index),
        }
    }

    /// A power loss tears the latest write if it is not yet durable: the disk keeps a
    /// prefix of its value, of a length drawn from the disk's stream (from none of it
    /// to all but its last byte, cut back to a character boundary), as a record whose
    /// checksum fails. Returns `(key, bytes kept, bytes written)`; `None` when the
    /// latest write is durable, is a delete, or is empty. Call it before the power
    /// loss drops the unsynced writes.
    pub fn tear_last_write(&mut self) -> Option<(String, usize, usize)> {
        use tenure_core::Rng;
        let key = self.last_write.clone()?;
        let value = match self.unsynced.get(&key) {
            Some(v) => v.clone(),
            None => self.syncing.get(&key)?.clone(),
        }?;
        if value.is_empty() {
            return None;
        }
        let mut keep = self.rng.range_inclusive(0, value.len() as u64 - 1) as usize;
        while !value.is_char_boundary(keep) {
            keep -= 1;
        }
        self.torn.insert(key.clone(), value[..keep].to_string());
        Some((key, keep, value.len()))
    }

    /// The writes not yet durable, in the order a power loss would lose them.
    pub fn unsynced_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.syncing.keys().cloned().collect();
        keys.extend(self.unsynced.keys().cloned());
        keys.sort();
        keys.dedup();
        keys
    }

    /// When a sync begun at `now` completes, its latency multiplied by `slowdown`.
    fn sync_done_at(&mut self, now: SimTime, slowdown: f64) -> SimTime {
        use tenure_core::Rng;
        let latency = self.rng.duration_between(self.fsync.0, self.fsync.1);
        now.max(self.stall_until) + scale(latency, slowdown)
    }

    /// What a process sees after a crash: everything written (the operating system
    /// keeps it); a sync in progress is abandoned, so its writes are unsynced again.
    fn after_crash(&mut self) -> StorageMap {
        let syncing = std::mem::take(&mut self.syncing);
        let newer = std::mem::take(&mut self.unsynced);
        self.unsynced = syncing;
        self.unsynced.extend(newer);
        let mut storage = self.durable.clone();
        apply_writes(&mut storage, self.unsynced.clone());
        storage
    }

    /// What a machine sees after a power loss: only what was synced.
    fn after_power_loss(&mut self) -> StorageMap {
        self.syncing.clear();
        self.unsynced.clear();
        self.durable.clone()
    }
}

/// Counters kept for every run (cheap; the full trace is optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// "Messages" wherever tenure counts them: sends by the nodes, each counted once
    /// whatever its fate (dropped, delivered, or delivered twice).
    pub messages_sent: u64,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
    pub timers_fired: u64,
    pub handler_calls: u64,
    /// Messages sent to the nodes of each role in each 10ms of true time
    /// (`[role][window]`, roles in the cluster's order), for the coordinator-load
    /// metric. Per role, not per node: a large cluster's heartbeat round would touch
    /// one row per node, and a minute of 2,001 nodes would keep 48 MB of counts.
    #[serde(skip)]
    pub sent_to_role_per_10ms: Vec<Vec<u32>>,
    /// The most messages sent to each node within one millisecond of true time (how
    /// bursty its load is: retries in lockstep arrive together).
    #[serde(skip)]
    pub max_sent_to_in_1ms: Vec<u32>,
    /// Per node: the current millisecond and the messages sent to it in it (the
    /// bookkeeping of `max_sent_to_in_1ms`).
    #[serde(skip)]
    pub sent_to_this_ms: Vec<(u64, u32)>,
    /// The most messages (and requests) queued for delivery at once, over all nodes.
    #[serde(skip)]
    pub max_in_flight: usize,
    /// The run stopped early because it went over a limit (`--max-in-flight`): bad
    /// input, not a verdict.
    #[serde(skip)]
    pub stopped_by: Option<tenure_scenario::Exceeded>,
    /// The trace was cut at its limit (`--max-trace-events`); the run went on.
    #[serde(skip)]
    pub trace_cut: Option<tenure_scenario::Exceeded>,
    /// Messages sent after a write to storage and before the next successful sync:
    /// the shape of every "reply before persist" bug, a hint on every seed before any
    /// power loss lands on it. One entry per (keys, handler, message kind), the first
    /// [`MAX_DURABILITY_HINTS`] of them; `durability_hint_sends` counts every such send.
    pub durability_hints: Vec<DurabilityHint>,
    pub durability_hint_sends: u64,
}

/// At most this many distinct durability hints are kept per run.
pub const MAX_DURABILITY_HINTS: usize = 16;

/// A node sent a message while writes it made were not yet durable (see
/// [`Stats::durability_hints`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DurabilityHint {
    /// The first such send.
    pub time: SimTime,
    pub node: NodeId,
    /// The keys written and not yet synced.
    pub keys: Vec<String>,
    /// The handler that sent it: `on_message from n2`, `on_timer Election`, ...
    pub handler: String,
    /// The message, as its `Debug` prints it.
    pub message: String,
    pub to: NodeId,
    /// How many sends had this (keys, handler, message kind).
    pub sends: u64,
    /// What groups sends into one hint (a hash of node, keys, handler kind and message
    /// kind; compared within a run only).
    #[serde(skip)]
    pub group: u64,
}

impl std::fmt::Display for DurabilityHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|k| format!("`{k}`")).collect();
        write!(
            f,
            "{} {} sent {} to {} in {} after writing {} and before syncing it{}: a power \
             loss there loses a write the message may promise (sync first, or declare \
             the key not durable)",
            self.time,
            self.node,
            self.message,
            self.to,
            self.handler,
            keys.join(", "),
            if self.sends > 1 {
                format!(" ({} such sends)", self.sends)
            } else {
                String::new()
            }
        )
    }
}

/// The handler a node is running, for durability hints.
#[derive(Clone, Debug)]
enum Handling<T> {
    Start,
    Timer(T),
    Message(NodeId),
    Request(String),
    Byzantine,
    Disconnect(NodeId),
}

impl<T: std::fmt::Debug> Handling<T> {
    fn label(&self) -> String {
        match self {
            Handling::Start => "on_start".to_string(),
            Handling::Timer(t) => format!("on_timer {t:?}"),
            Handling::Message(from) => format!("on_message from {from}"),
            Handling::Request(name) => format!("on_request {name}"),
            Handling::Byzantine => "on_byzantine".to_string(),
            Handling::Disconnect(peer) => format!("on_disconnect {peer}"),
        }
    }

    /// Hashes the handler's kind (which handler, which timer variant, which request).
    fn hash_kind<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        match self {
            Handling::Start => 0u8.hash(h),
            Handling::Timer(t) => {
                1u8.hash(h);
                std::mem::discriminant(t).hash(h);
            }
            Handling::Message(_) => 2u8.hash(h),
            Handling::Request(name) => {
                3u8.hash(h);
                name.hash(h);
            }
            Handling::Disconnect(_) => 4u8.hash(h),
            Handling::Byzantine => 5u8.hash(h),
        }
    }
}

impl Stats {
    /// Messages sent to the nodes of role `role` in each 10ms of true time (empty when
    /// no node plays it or none was sent any).
    pub fn sent_to_role(&self, cluster: &tenure_core::Cluster, role: &str) -> Vec<u32> {
        cluster
            .role_index(role)
            .and_then(|i| self.sent_to_role_per_10ms.get(i))
            .cloned()
            .unwrap_or_default()
    }

    fn count_sent_to(&mut self, to: NodeId, role: usize, now: SimTime) {
        let window = (now.as_nanos() / 10_000_000) as usize;
        if self.sent_to_role_per_10ms.len() <= role {
            self.sent_to_role_per_10ms.resize(role + 1, Vec::new());
        }
        let row = &mut self.sent_to_role_per_10ms[role];
        // Pushed one by one: a row grows by a few windows at a time, and `resize`
        // would call `memset` for each.
        while row.len() <= window {
            row.push(0);
        }
        row[window] += 1;
        let ms = now.as_nanos() / 1_000_000;
        if self.sent_to_this_ms.len() <= to.index() {
            self.sent_to_this_ms.resize(to.index() + 1, (0, 0));
            self.max_sent_to_in_1ms.resize(to.index() + 1, 0);
        }
        let slot = &mut self.sent_to_this_ms[to.index()];
        *slot = if slot.0 == ms {
            (ms, slot.1 + 1)
        } else {
            (ms, 1)
        };
        let max = &mut self.max_sent_to_in_1ms[to.index()];
        *max = (*max).max(slot.1);
    }
}

/// Called with each new record; returns true to stop the run at once (online checking).
pub type RecordHook = Box<dyn FnMut(usize, &Record) -> bool + Send>;

pub struct World<P: Protocol> {
    pub cluster: Cluster,
    config: P::Config,
    pub seed: u64,
    pub nodes: Vec<NodeSlot<P>>,
    pub net: Network,
    net_rng: SeededRng,
    seq: u64,
    pub records: Vec<Record>,
    pub trace: Option<Vec<TraceEvent>>,
    pub stats: Stats,
    /// What each node believes now (leads, holds, waits), for the `leader`, `holder` and
    /// `waiter` selectors.
    pub beliefs: tenure_core::Beliefs,
    pub calm_from: SimTime,
    hook: Option<RecordHook>,
    pub stop_requested: bool,
    /// The supervisor's doorbell (rung when a hook asks to stop, or a crash point
    /// asks for a restart).
    pub supervisor_waker: Option<Waker>,
    /// Restarts asked for by fired crash points (`restart_after`), not yet scheduled.
    restarts: Vec<(SimTime, NodeId)>,
    /// An empty effect buffer, reused by every handler call (no allocation per call).
    effects: Vec<Effect<P::Msg, P::Timer>>,
    /// The inputs in every node's inbox (the inbox holds their order, see [`Due`]).
    inputs: Inputs<P::Msg>,
    /// Items in every node's inbox together (messages and requests), and its limit.
    in_flight: usize,
    max_in_flight: usize,
    /// The most trace events kept.
    max_trace_events: usize,
    /// Stream mode's connections (`None`: datagrams).
    streams: Option<Streams<P::Msg>>,
    /// Draw the order of a node's overdue items after a stall from the seed (off:
    /// by due time, then scheduling order). See [`World::draw_order`].
    pub order_after_stall: bool,
    /// madsim's clock, to set the timers that wake node tasks (`None` until a node
    /// task starts: outside a run an arrival rings the doorbell instead).
    time: Option<madsim::time::TimeHandle>,
    /// While the faults at time zero are being applied, the node tasks waiting to start
    /// (`None`: the gate is open; see [`World::close_start_gate`]).
    start_gate: Option<Vec<Waker>>,
    /// Faults aimed at `"holder"` or `"waiter"` that found nobody and wait for one, by
    /// id (see [`crate::Control::wait_for_aim`]).
    awaiting: Vec<(u64, tenure_core::Aim, crate::control::Action<P>)>,
    next_await: u64,
    /// Somebody began to hold or wait while faults were waiting: the supervisor is to
    /// apply them now.
    aim_ready: bool,
}

impl<P: Protocol> World<P> {
    pub fn new(
        cluster: Cluster,
        config: P::Config,
        seed: u64,
        net: Network,
        clocks: Vec<NodeClock>,
        trace: bool,
    ) -> Self {
        assert_eq!(clocks.len(), cluster.size());
        let nodes = clocks
            .into_iter()
            .enumerate()
            .map(|(i, clock)| NodeSlot {
                status: Status::Down,
                proto: None,
                storage: StorageMap::new(),
                timers: Timers::new(),
                inbox: BinaryHeap::new(),
                clock,
                rng: Box::new(SeededRng::node(seed, i)),
                waker: None,
                rung: false,
                planned_wake: SimTime::ZERO,
                wakeups: Default::default(),
                incarnation: 0,
                disk: Disk::new(seed, i),
                sync_pending: false,
                crash_when_synced: false,
                busy_until: SimTime::ZERO,
                deferred: Vec::new(),
                crash_point: None,
                cpu: (Duration::ZERO, Duration::ZERO),
                cpu_rng: LazyRng::cpu(seed, i),
                cpu_busy_until: SimTime::ZERO,
                slow_factor: 1.0,
                slow_until: SimTime::ZERO,
                stalled: false,
                order_rng: LazyRng::order(seed, i),
                forced: std::collections::VecDeque::new(),
                handling: Handling::Start,
                byzantine: None,
            })
            .collect();
        let n = cluster.size();
        World {
            cluster,
            config,
            seed,
            nodes,
            net,
            net_rng: SeededRng::network(seed),
            seq: 0,
            records: Vec::new(),
            trace: trace.then(Vec::new),
            stats: Stats::default(),
            beliefs: tenure_core::Beliefs::new(n),
            calm_from: SimTime::ZERO,
            hook: None,
            stop_requested: false,
            supervisor_waker: None,
            restarts: Vec::new(),
            effects: Vec::new(),
            inputs: Inputs::new(),
            in_flight: 0,
            max_in_flight: tenure_scenario::limits().max_in_flight,
            max_trace_events: tenure_scenario::limits().max_trace_events,
            streams: None,
            order_after_stall: false,
            time: None,
            start_gate: None,
            awaiting: Vec::new(),
            next_await: 0,
            aim_ready: false,
        }
    }

    /// The timeline has events at time zero: they apply before any node starts (a
    /// crash point armed then fires inside `on_start`, a pause at zero holds the node
    /// before it starts, a partition at zero sees the first messages). Every node counts
    /// as up (booting) from now; node tasks wait at the gate ([`World::start_gate_open`])
    /// until the supervisor has applied the events of time zero and opens it
    /// ([`World::open_start_gate`]). Runs without events at time zero never close it,
    /// so they are what they were.
    pub fn close_start_gate(&mut self) {
        self.start_gate = Some(Vec::new());
        for slot in &mut self.nodes {
            slot.status = Status::Up;
        }
    }

    /// Whether a node task may start; if not, `waker` is woken when it may.
    pub fn start_gate_open(&mut self, waker: &Waker) -> bool {
        match &mut self.start_gate {
            None => true,
            Some(waiting) => {
                waiting.push(waker.clone());
                false
            }
        }
    }

    /// Opens the start gate (if closed): the node tasks waiting at it start.
    pub fn open_start_gate(&mut self) {
        for w in self.start_gate.take().into_iter().flatten() {
            w.wake();
        }
    }

    /// Stops the run from inside (a hook's verdict or a limit): the node loops see
    /// `stop_requested` and the supervisor is woken to end the run.
    fn request_stop(&mut self) {
        self.stop_requested = true;
        if let Some(w) = self.supervisor_waker.take() {
            w.wake();
        }
    }

    /// One more item queued for delivery at some node; over the limit stops the run.
    fn queued(&mut self, now: SimTime) {
        self.in_flight += 1;
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.in_flight);
        if self.in_flight > self.max_in_flight && self.stats.stopped_by.is_none() {
            self.stats.stopped_by = Some(tenure_scenario::Exceeded::InFlight {
                limit: self.max_in_flight,
                at: now,
            });
            self.request_stop();
        }
    }

    /// Whether the trace may take one more event at `now` (false once cut at its limit).
    fn trace_has_room(&mut self, now: SimTime) -> bool {
        let Some(t) = &self.trace else {
            return false;
        };
        if t.len() < self.max_trace_events {
            return true;
        }
        if self.stats.trace_cut.is_none() {
            self.stats.trace_cut = Some(tenure_scenario::Exceeded::TraceEvents {
                limit: self.max_trace_events,
                at: now,
            });
        }
        false
    }

    /// Stream mode: per-link FIFO connections that hold messages across a partition
    /// shorter than `connection_timeout` and reset on a longer one or a crash.
    pub fn set_stream(&mut self, connection_timeout: Duration) {
        self.streams = Some(Streams::new(self.cluster.size(), connection_timeout));
    }

    pub fn set_hook(&mut self, hook: RecordHook) {
        self.hook = Some(hook);
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn trace(&mut self, now: SimTime, event: impl FnOnce() -> TraceEvent) {
        if self.trace_has_room(now) {
            if let Some(t) = &mut self.trace {
                t.push(event());
            }
        }
    }

    pub fn trace_fault(
        &mut self,
        now: SimTime,
        kind: &'static str,
        nodes: Vec<NodeId>,
        detail: String,
    ) {
        self.trace(now, || TraceEvent::Fault {
            time: now,
            kind,
            nodes,
            detail,
        });
    }

    /// Records an observation of `node` at `now`, stamped with its clock readings.
    pub fn record(&mut self, now: SimTime, node: NodeId, obs: Observation) {
        self.beliefs.apply(node, &obs);
        if !self.aim_ready
            && self
                .awaiting
                .iter()
                .any(|(_, aim, _)| self.beliefs.is(node, *aim))
        {
            self.aim_ready = true;
            if let Some(w) = self.supervisor_waker.take() {
                w.wake();
            }
        }
        let clock = &self.nodes[node.index()].clock;
        let record = Record::new(now, node, clock.monotonic(now), clock.wall(now), obs);
        if self.trace_has_room(now) {
            if let Some(t) = &mut self.trace {
                t.push(TraceEvent::Observed(record.clone()));
            }
        }
        let index = self.records.len();
        self.records.push(record);
        if let Some(hook) = &mut self.hook {
            if hook(index, &self.records[index]) {
                self.request_stop();
            }
        }
    }

    /// The node that believes it leads the highest term (lowest id on a tie), if any.
    pub fn leader(&self) -> Option<NodeId> {
        self.beliefs.leader()
    }

    pub fn ring(&mut self, node: NodeId) {
        let slot = &mut self.nodes[node.index()];
        slot.rung = true;
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }

    /// The clock node tasks' timers are set on (the first node task to start sets it).
    pub fn set_time(&mut self, time: &madsim::time::TimeHandle) {
        if self.time.is_none() {
            self.time = Some(time.clone());
        }
    }

    /// The node task looks at its doorbell and its plan at `now`: true if the doorbell
    /// was rung (it is cleared) or what the node planned to wake for is due; otherwise
    /// keeps `waker` and makes sure a timer wakes the task when planned.
    pub fn node_waits(&mut self, node: NodeId, now: SimTime, waker: &Waker) -> bool {
        let slot = &mut self.nodes[node.index()];
        if slot.rung {
            slot.rung = false;
            return true;
        }
        if slot.planned_wake <= now {
            return true;
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            // A new task (a restart; or the old one after a crash point, before the
            // supervisor replaces it): the timers set so far wake another task.
            slot.waker = Some(waker.clone());
            slot.wakeups = Default::default();
        }
        if let (Some(time), true) = (&self.time, slot.planned_wake != SimTime::MAX) {
            crate::host::wake_by(time, &mut slot.wakeups, waker, slot.planned_wake);
        }
        false
    }

    /// Something is due at `node` at `at` (a message arrives): if that is before the
    /// node task planned to wake, it wakes then instead. A timer is set for it, so the
    /// task does not run before anything is due (a doorbell would run it at once, only
    /// to set that timer).
    fn due_at(&mut self, node: NodeId, at: SimTime, now: SimTime) {
        let slot = &mut self.nodes[node.index()];
        if at >= slot.planned_wake {
            return;
        }
        match (&self.time, &slot.waker) {
            (Some(time), Some(waker)) if at > now && !slot.rung => {
                slot.planned_wake = at;
                crate::host::wake_by(time, &mut slot.wakeups, waker, at);
            }
            // Due at once, or the task is about to run (or not running): it looks
            // at its inbox when it runs.
            _ => self.ring(node),
        }
    }

    /// A process starts on `node`: a fresh protocol value over the kept storage. What
    /// arrived while it was down is lost.
    pub fn start_node(&mut self, node: NodeId, now: SimTime) {
        let i = node.index();
        // A request handed to a node booting at time zero (see `close_start_gate`)
        // waits for its first start; only a node that never started has one queued.
        let first = self.nodes[i].incarnation == 0;
        let stale: Vec<Input<P::Msg>> = {
            let inbox = &mut self.nodes[i].inbox;
            let inputs = &mut self.inputs;
            let mut keep = BinaryHeap::new();
            let mut stale = Vec::new();
            for d in std::mem::take(inbox).into_vec() {
                if d.at <= now && !(first && matches!(inputs.get(d.input), Input::Request(_))) {
                    stale.push(inputs.take(d.input));
                } else {
                    keep.push(d);
                }
            }
            *inbox = keep;
            stale
        };
        self.in_flight -= stale.len();
        for input in stale {
            self.stats.messages_dropped += 1;
            if let Input::Message { id, .. } = input {
                self.trace(now, || TraceEvent::Lost {
                    time: now,
                    id,
                    to: node,
                    reason: DropReason::Down,
                });
            }
        }
        let slot = &mut self.nodes[i];
        slot.status = Status::Up;
        slot.incarnation += 1;
        slot.timers.clear();
        slot.proto = Some(P::new(&self.config, node, &self.cluster));
        slot.handling = Handling::Start;
        self.record(now, node, Observation::Started);
        self.run_handler(node, now, |p, env| p.on_start(env));
        if let Some(behaviour) = self.nodes[i].byzantine {
            self.queue_byzantine(node, now, behaviour);
        }
    }

    /// The process on `node` dies: volatile state and timers are gone, and so are the
    /// effects of a handler waiting on a sync. What it wrote stays (the operating
    /// system has it), synced or not. With `power`, the machine loses power instead:
    /// every write not yet synced is lost too, and the monotonic clock restarts from
    /// a new origin when the machine boots again.
    pub fn crash_node(&mut self, node: NodeId, now: SimTime, power: bool) {
        let slot = &mut self.nodes[node.index()];
        slot.status = Status::Down;
        slot.proto = None;
        slot.timers.clear();
        // The timers set for the dead task wake nothing; the next task to wait has
        // another waker, and `node_waits` forgets them then.
        slot.waker = None;
        slot.rung = false;
        slot.sync_pending = false;
        slot.busy_until = SimTime::ZERO;
        slot.deferred.clear();
        slot.crash_when_synced = false;
        slot.crash_point = None;
        slot.cpu_busy_until = SimTime::ZERO;
        slot.stalled = false;
        slot.forced.clear();
        slot.storage = if power {
            slot.clock.reboot(now);
            slot.disk.after_power_loss()
        } else {
            slot.disk.after_crash()
        };
        self.record(now, node, Observation::Crashed);
        if self.streams.is_some() {
            self.reset_connections_of(node, now);
        }
    }

    /// Arms a crash point: `node` keeps running and crashes (loses power, if `power`)
    /// right after applying `after_effects` more effects (sends, timer changes, writes,
    /// syncs, observations), before the next one.
    /// Disarms every crash point that has not fired (the heal: every fault is undone).
    pub fn disarm_crash_points(&mut self) {
        for n in &mut self.nodes {
            n.crash_point = None;
        }
    }

    pub fn arm_crash_point(&mut self, node: NodeId, point: CrashPoint) {
        self.nodes[node.index()].crash_when_synced = false;
        self.nodes[node.index()].crash_point = Some(point);
    }

    /// Restarts that fired crash points asked for, `(when, node)`, for the supervisor
    /// to schedule (it is woken when one is added).
    pub fn take_restarts(&mut self) -> Vec<(SimTime, NodeId)> {
        std::mem::take(&mut self.restarts)
    }

    pub fn restarts_pending(&self) -> bool {
        !self.restarts.is_empty()
    }

    /// A new id for a waiting fault.
    pub(crate) fn new_await_id(&mut self) -> u64 {
        self.next_await += 1;
        self.next_await
    }

    /// Keeps `action`, the waiting fault `id`, until somebody is what `aim` names.
    pub(crate) fn await_aim(
        &mut self,
        id: u64,
        aim: tenure_core::Aim,
        action: crate::control::Action<P>,
    ) {
        self.awaiting.push((id, aim, action));
    }

    /// Takes the waiting fault `id` back, if it is still waiting.
    pub(crate) fn forget_aim(&mut self, id: u64) -> Option<crate::control::Action<P>> {
        let i = self.awaiting.iter().position(|(i, _, _)| *i == id)?;
        Some(self.awaiting.remove(i).2)
    }

    /// Whether somebody began to hold or wait while faults were waiting.
    pub fn aim_ready(&self) -> bool {
        self.aim_ready
    }

    /// The waiting faults that find their node now (a holder for `"holder"`, a waiter
    /// for `"waiter"`), to apply now (in the order they began to wait).
    pub(crate) fn take_ready_aims(&mut self) -> Vec<crate::control::Action<P>> {
        if !std::mem::take(&mut self.aim_ready) {
            return Vec::new();
        }
        let beliefs = &self.beliefs;
        let (ready, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.awaiting)
            .into_iter()
            .partition(|(_, aim, _)| beliefs.of_role(*aim, |_| true).is_some());
        self.awaiting = wait;
        ready.into_iter().map(|(_, _, a)| a).collect()
    }

    /// Runs one handler on `node` and applies its effects.
    fn run_handler(
        &mut self,
        node: NodeId,
        now: SimTime,
        f: impl FnOnce(&mut P, &mut Step<'_, P::Msg, P::Timer>),
    ) {
        self.stats.handler_calls += 1;
        let buffer = std::mem::take(&mut self.effects);
        let mut effects = {
            let slot = &mut self.nodes[node.index()];
            let proto = slot
                .proto
                .as_mut()
                .expect("handlers run only on live nodes");
            let mono = slot.clock.monotonic(now);
            let wall = slot.clock.wall(now);
            let sync_fails = now < slot.disk.error_until;
            let mut step = Step::new(
                node,
                &self.cluster,
                mono,
                wall,
                &mut slot.storage,
                &mut *slot.rng,
            );
            step.effects = buffer;
            step.sync_fails = sync_fails;
            f(proto, &mut step);
            step.effects
        };
        self.apply(node, now, &mut effects);
        self.effects = effects;
        self.spend_cpu(node, now);
    }

    /// The handler just run on `node` took processing time: the node handles nothing
    /// else until it has passed. No draw at all when the node's range is zero.
    fn spend_cpu(&mut self, node: NodeId, now: SimTime) {
        use tenure_core::Rng;
        let slot = &mut self.nodes[node.index()];
        if slot.cpu.1.is_zero() || slot.status == Status::Down {
            return;
        }
        let drawn = slot.cpu_rng.duration_between(slot.cpu.0, slot.cpu.1);
        let busy = scale(drawn, slot.slowdown(now));
        slot.cpu_busy_until = slot.cpu_busy_until.max(now + busy);
        slot.stalled |= self.order_after_stall && !busy.is_zero();
    }

    /// `node` resumes after a pause: what piled up is handled in an order drawn from the
    /// seed.
    pub fn mark_stalled(&mut self, node: NodeId) {
        self.nodes[node.index()].stalled = self.order_after_stall;
    }

    /// After a stall, draws the order of `node`'s overdue items (messages and requests
    /// that arrived, timers that fell due, strictly before `now`) from its order stream,
    /// and traces it: each sender's messages stay in their arrival order (one
    /// connection, read in order), and the senders, timers and outside requests are
    /// raced. Nothing is drawn with fewer than two queues.
    fn draw_order(&mut self, node: NodeId, now: SimTime) {
        use tenure_core::Rng;
        let i = node.index();
        let slot = &mut self.nodes[i];
        slot.stalled = false;
        let (overdue, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut slot.inbox)
            .into_sorted_vec()
            .into_iter()
            .rev()
            .partition(|p| p.at < now);
        slot.inbox = rest.into_iter().collect();
        let mut timers: Vec<(SimTime, u64, P::Timer)> = slot
            .timers
            .iter()
            .map(|(t, (deadline, seq))| (slot.clock.true_time_at(now, *deadline), *seq, t.clone()))
            .filter(|(at, _, _)| *at < now)
            .collect();
        timers.sort();
        // Arrival order (by due time, then scheduling order), then the queues raced.
        let mut items: Vec<Overdue<P>> = overdue
            .into_iter()
            .map(|p| (p.at, p.seq, Err(p)))
            .chain(timers.into_iter().map(|(at, seq, t)| (at, seq, Ok(t))))
            .collect();
        items.sort_by_key(|(at, seq, _)| (*at, *seq));
        // One queue per connection (a sender's messages, and its disconnect, in the
        // order they arrived: one TCP stream read in order), one per timer and per
        // outside request; then the queues are raced: each next item is the head of a
        // queue drawn uniformly among those not yet empty (goroutines woken together,
        // scheduled in no set order). A queue's length does not weigh its chances.
        // Queues in the order of their first item; a sender's queue found by its id.
        let mut queues: Vec<std::collections::VecDeque<Overdue<P>>> = Vec::new();
        let mut by_sender: BTreeMap<NodeId, usize> = BTreeMap::new();
        for item in items {
            let sender = match &item.2 {
                Err(p) => match self.inputs.get(p.input) {
                    Input::Message { from, .. } => Some(*from),
                    Input::Disconnect { peer } => Some(*peer),
                    Input::Request(_) | Input::Byzantine(_) => None,
                },
                Ok(_) => None,
            };
            match sender.and_then(|s| by_sender.get(&s)) {
                Some(&q) => queues[q].push_back(item),
                None => {
                    if let Some(s) = sender {
                        by_sender.insert(s, queues.len());
                    }
                    queues.push(std::collections::VecDeque::from([item]));
                }
            }
        }
        let mut items = Vec::new();
        while !queues.is_empty() {
            let j = if queues.len() >= 2 {
                slot.order_rng.range_inclusive(0, queues.len() as u64 - 1) as usize
            } else {
                0
            };
            items.extend(queues[j].pop_front());
            if queues[j].is_empty() {
                queues.remove(j);
            }
        }
        let mut order = Vec::with_capacity(items.len());
        let mut forced = std::collections::VecDeque::with_capacity(items.len());
        let mut requeue = Vec::new();
        for (_, _, item) in items {
            match item {
                Ok(t) => {
                    order.push(format!("timer {t:?}"));
                    forced.push_back(Some(t));
                }
                Err(p) => {
                    order.push(match self.inputs.get(p.input) {
                        Input::Message { id, from, .. } => format!("message {id} from {from}"),
                        Input::Request(r) => format!("request {}", r.name),
                        Input::Byzantine(b) => format!("byzantine {b}"),
                        Input::Disconnect { peer } => format!("disconnect from {peer}"),
                    });
                    forced.push_back(None);
                    requeue.push(p);
                }
            }
        }
        // Overdue inputs come out of the heap first, in the drawn order.
        for p in requeue {
            self.seq += 1;
            let seq = self.seq;
            self.nodes[i].inbox.push(Due {
                at: SimTime::ZERO,
                seq,
                input: p.input,
            });
        }
        if order.len() >= 2 {
            self.trace(now, || TraceEvent::Reordered {
                time: now,
                node,
                order,
            });
        }
        self.nodes[i].forced = if forced.len() >= 2 {
            forced
        } else {
            Default::default()
        };
    }

    /// The next item of a drawn order that is still pending: `Some(Some(timer))`,
    /// `Some(None)` for the inbox's top, `None` when the order is done.
    fn next_forced(&mut self, node: NodeId, now: SimTime) -> Option<Option<P::Timer>> {
        let slot = &mut self.nodes[node.index()];
        while let Some(f) = slot.forced.pop_front() {
            match f {
                Some(t) if slot.timers.contains_key(&t) => return Some(Some(t)),
                None if slot.inbox.peek().is_some_and(|p| p.at <= now) => return Some(None),
                _ => {}
            }
        }
        None
    }

    /// Applies (and empties) `effects`, in order. A sync that takes time stops here:
    /// the effects after it wait in `deferred` until it completes. An armed crash
    /// point crashes the node right after the effect its count ends on (between two
    /// effects of a handler, or as the handler ends: a reply is out), or before the
    /// next effect when armed at zero; the rest are then never applied. A count that
    /// ends on a sync that takes time crashes the node when the sync completes.
    fn apply(&mut self, node: NodeId, now: SimTime, effects: &mut Vec<Effect<P::Msg, P::Timer>>) {
        let mut iter = effects.drain(..);
        while let Some(effect) = iter.next() {
            // `Some(name)`: this effect ends an armed crash point's count.
            let mut last = None;
            if let Some(point) = &mut self.nodes[node.index()].crash_point {
                if point.at_sync && matches!(effect, Effect::Sync { .. }) {
                    point.at_sync = false;
                }
                if !point.at_sync {
                    if point.remaining == 0 {
                        let point = *point;
                        let detail = format!("crash point, before {}", effect_name(&effect));
                        drop(iter);
                        self.fire_crash_point(node, now, point, detail);
                        return;
                    }
                    point.remaining -= 1;
                    last = (point.remaining == 0).then(|| effect_name(&effect));
                }
            }
            // A broadcast: the receivers' slots a few sends ahead, then their inboxes, are
            // fetched while this send is made (issue 38; hints only).
            let ahead = iter.as_slice();
            if let Some(Effect::Send { to, .. }) = ahead.get(SEND_AHEAD) {
                self.prefetch_slot(*to);
            }
            if let Some(Effect::Send { to, .. }) = ahead.get(SEND_AHEAD / 2) {
                self.prefetch_inbox_end(*to);
            }
            match effect {
                Effect::Send { to, msg } => {
                    if !self.nodes[node.index()].disk.unsynced.is_empty() {
                        self.durability_hint(node, now, to, &msg);
                    }
                    self.send(node, to, now, msg)
                }
                Effect::SetTimer { timer, after } => {
                    let seq = self.next_seq();
                    let slot = &mut self.nodes[node.index()];
                    let deadline = slot.clock.monotonic(now) + after;
                    slot.timers.insert(timer, (deadline, seq));
                }
                Effect::CancelTimer { timer } => {
                    self.nodes[node.index()].timers.remove(&timer);
                }
                // Already in `storage` (the Step wrote it); the disk learns of it now.
                Effect::Store { key, value } => {
                    let disk = &mut self.nodes[node.index()].disk;
                    disk.torn.remove(&key);
                    disk.last_write = Some(key.clone());
                    disk.unsynced.insert(key, value);
                }
                Effect::Sync { ok: false } => {}
                Effect::Sync { ok: true } => {
                    let slot = &mut self.nodes[node.index()];
                    let slowdown = slot.slowdown(now);
                    let done = slot.disk.sync_done_at(now, slowdown);
                    let writes = std::mem::take(&mut slot.disk.unsynced);
                    if done <= now {
                        apply_writes(&mut slot.disk.durable, writes);
                    } else {
                        slot.disk.syncing = writes;
                        slot.sync_pending = true;
                        slot.busy_until = done;
                        slot.deferred.extend(iter);
                        slot.crash_when_synced = last.is_some();
                        return;
                    }
                }
                Effect::Observe(obs) => self.record(now, node, obs),
            }
            if let Some(last) = last {
                let point = self.nodes[node.index()].crash_point.expect("counted above");
                drop(iter);
                self.fire_crash_point(node, now, point, format!("crash point, after {last}"));
                return;
            }
        }
    }

    /// `node` sends `msg` while it has writes not yet synced: a durability hint, unless
    /// the protocol declares every such key not durable ([`Protocol::durable`]).
    fn durability_hint(&mut self, node: NodeId, now: SimTime, to: NodeId, msg: &P::Msg) {
        use std::hash::{Hash, Hasher};
        let slot = &self.nodes[node.index()];
        // Sends group by node, keys, handler kind and message kind; only a new group
        // formats anything (a protocol that never syncs sends "dirty" all run long).
        let mut hasher = std::hash::DefaultHasher::new();
        node.hash(&mut hasher);
        let mut keys = 0;
        for key in slot.disk.unsynced.keys().filter(|k| P::durable(k)) {
            key.hash(&mut hasher);
            keys += 1;
        }
        if keys == 0 {
            return;
        }
        slot.handling.hash_kind(&mut hasher);
        std::mem::discriminant(msg).hash(&mut hasher);
        let group = hasher.finish();
        self.stats.durability_hint_sends += 1;
        let hints = &mut self.stats.durability_hints;
        match hints.iter().position(|h| h.group == group) {
            Some(i) => hints[i].sends += 1,
            None if hints.len() < MAX_DURABILITY_HINTS => hints.push(DurabilityHint {
                time: now,
                node,
                keys: slot
                    .disk
                    .unsynced
                    .keys()
                    .filter(|k| P::durable(k))
                    .cloned()
                    .collect(),
                handler: slot.handling.label(),
                message: format!("{msg:?}"),
                to,
                sends: 1,
                group,
            }),
            None => {}
        }
    }

    /// The sync in progress at `node` completes: its writes are durable, and the
    /// effects that waited for it are applied.
    fn complete_sync(&mut self, node: NodeId, now: SimTime) {
        let slot = &mut self.nodes[node.index()];
        slot.sync_pending = false;
        let writes = std::mem::take(&mut slot.disk.syncing);
        apply_writes(&mut slot.disk.durable, writes);
        let mut rest = std::mem::take(&mut slot.deferred);
        if std::mem::take(&mut slot.crash_when_synced) {
            // The sync ended a crash point's count (unless the heal disarmed it since).
            if let Some(point) = slot.crash_point {
                let detail = "crash point, after a sync".to_string();
                self.fire_crash_point(node, now, point, detail);
                return;
            }
        }
        self.apply(node, now, &mut rest);
    }

    /// An armed crash point fires: the node crashes (or loses power) here, and boots
    /// again `restart_after` later if the point says so.
    fn fire_crash_point(&mut self, node: NodeId, now: SimTime, point: CrashPoint, detail: String) {
        self.crash_here(node, now, point.power, detail);
        if let Some(after) = point.restart_after {
            self.restarts.push((now + after, node));
            if let Some(w) = self.supervisor_waker.take() {
                w.wake();
            }
        }
    }

    /// A crash point fires inside the node's own handling.
    fn crash_here(&mut self, node: NodeId, now: SimTime, power: bool, detail: String) {
        let kind = if power { "power-loss" } else { "crash" };
        self.calm_from = now;
        tracing::info!(kind, ?node, %detail, "fault");
        self.trace_fault(now, kind, vec![node], detail);
        self.crash_node(node, now, power);
    }

    /// Queues `input` in `node`'s inbox, due at `at`, scheduled `seq`-th.
    fn push_input(&mut self, node: NodeId, at: SimTime, seq: u64, input: Input<P::Msg>) {
        let input = self.inputs.put(input);
        self.nodes[node.index()].inbox.push(Due { at, seq, input });
    }

    fn send(&mut self, from: NodeId, to: NodeId, now: SimTime, msg: P::Msg) {
        self.stats.messages_sent += 1;
        self.stats
            .count_sent_to(to, self.cluster.role_index_of(to), now);
        let id = self.next_seq();
        if self.streams.is_some() {
            self.send_stream(from, to, now, id, msg);
            return;
        }
        let fate = self.net.route(from, to, now, &mut self.net_rng);
        if self.trace.is_some() {
            let (deliver_at, dropped) = match &fate {
                Fate::Dropped(r) => (Vec::new(), Some(*r)),
                Fate::Delivered(at, again) => (std::iter::once(*at).chain(*again).collect(), None),
            };
            let msg = format!("{msg:?}");
            self.trace(now, || TraceEvent::Sent {
                time: now,
                id,
                from,
                to,
                msg,
                deliver_at,
                dropped,
            });
        }
        match fate {
            Fate::Dropped(_) => self.stats.messages_dropped += 1,
            Fate::Delivered(at, again) => {
                let last = usize::from(again.is_some());
                let mut msg = Some(msg);
                for (k, at) in std::iter::once(at).chain(again).enumerate() {
                    let m = if k == last {
                        msg.take().expect("moved once")
                    } else {
                        msg.clone().expect("still here")
                    };
                    let seq = self.next_seq();
                    self.push_input(to, at, seq, Input::Message { id, from, msg: m });
                    self.due_at(to, at, now);
                    self.queued(now);
                }
            }
        }
    }

    /// Queues a client request for `node`, due now.
    pub fn request(&mut self, node: NodeId, now: SimTime, request: Request) {
        let seq = self.next_seq();
        self.push_input(node, now, seq, Input::Request(request));
        self.ring(node);
        self.queued(now);
    }

    /// Turns `node` Byzantine for the rest of the run: recorded now (checkers stop
    /// trusting what it records), told to its process now if it is up and at every
    /// later start.
    pub fn byzantine(&mut self, node: NodeId, now: SimTime, behaviour: tenure_core::Byzantine) {
        self.nodes[node.index()].byzantine = Some(behaviour);
        self.record(now, node, Observation::Byzantine { behaviour });
        if self.nodes[node.index()].status != Status::Down {
            self.queue_byzantine(node, now, behaviour);
        }
    }

    fn queue_byzantine(&mut self, node: NodeId, now: SimTime, behaviour: tenure_core::Byzantine) {
        let seq = self.next_seq();
        self.push_input(node, now, seq, Input::Byzantine(behaviour));
        self.ring(node);
        self.queued(now);
    }

    /// Runs `node`'s `timer` now, as if it were due (it is unset first). Returns false,
    /// doing nothing, unless the node is up and the timer is set.
    pub fn fire_timer(&mut self, node: NodeId, now: SimTime, timer: P::Timer) -> bool {
        let slot = &mut self.nodes[node.index()];
        if slot.status != Status::Up || slot.sync_pending || slot.timers.remove(&timer).is_none() {
            return false;
        }
        self.stats.timers_fired += 1;
        if self.trace.is_some() {
            let text = format!("{timer:?}");
            self.trace(now, || TraceEvent::Timer {
                time: now,
                node,
                timer: text,
            });
        }
        self.nodes[node.index()].handling = Handling::Timer(timer.clone());
        self.run_handler(node, now, |p, env| p.on_timer(env, timer));
        self.ring(node); // its timers changed: let the node task plan its wake again
        true
    }

    /// Asks the processor for the lines of `node`'s slot that its run reads first, not
    /// waiting for them: the executor calls it for the node that runs next (the task of
    /// the next timer to go off) while the current one runs. Reads nothing of the slot
    /// itself, so it never waits. A hint only: nothing changes.
    pub fn prefetch_slot(&self, node: NodeId) {
        use madsim::hint::{prefetch, prefetch_all};
        if let Some(slot) = self.nodes.get(node.index()) {
            prefetch(slot);
            prefetch(&slot.inbox);
            prefetch(&slot.clock);
            prefetch_all(&slot.proto);
            prefetch(&slot.handling);
        }
    }

    /// Asks the processor for what `node`'s slot points to that its run reads: the top
    /// of its inbox and its random stream. Reads the slot (see [`World::prefetch_slot`],
    /// which fetched it). A hint only: nothing changes.
    pub fn prefetch_behind(&self, node: NodeId) {
        use madsim::hint::{prefetch, prefetch_all};
        if let Some(slot) = self.nodes.get(node.index()) {
            if let Some(top) = slot.inbox.peek() {
                prefetch(top);
            }
            prefetch_all(&*slot.rng);
        }
    }

    /// Where a message to `node` goes (a send): the end of its inbox. Reads the slot. A
    /// hint only: nothing changes.
    fn prefetch_inbox_end(&self, node: NodeId) {
        if let Some(slot) = self.nodes.get(node.index()) {
            if let Some(last) = slot.inbox.as_slice().last() {
                madsim::hint::prefetch(last);
            }
        }
    }

    /// Asks the processor for the memory `node`'s run reads, side by side, as the run
    /// begins (issue 38): its slot and what the slot points to (fetched ahead already
    /// when the executor named this node as the next to run, see
    /// [`World::prefetch_slot`] and [`World::prefetch_behind`]), then the input at the
    /// top of its inbox. At 10,000 nodes all of these have left the caches since the
    /// node's last run, and the run reached each in turn, one cache miss after another;
    /// asked for together, their misses overlap. A hint only: nothing changes.
    pub fn prefetch(&self, node: NodeId) {
        self.prefetch_slot(node);
        self.prefetch_behind(node);
        if let Some(top) = self.nodes.get(node.index()).and_then(|s| s.inbox.peek()) {
            madsim::hint::prefetch(&self.inputs.slots[top.input as usize]);
        }
    }

    /// The earliest due item of `node`: the inbox top or a timer.
    fn next_due(&self, node: NodeId, now: SimTime) -> Option<(SimTime, u64, Option<P::Timer>)> {
        let slot = &self.nodes[node.index()];
        let mut best = slot.inbox.peek().map(|p| (p.at, p.seq, None));
        for (timer, (deadline, seq)) in slot.timers.iter() {
            let at = slot.clock.true_time_at(now, *deadline);
            if best
                .as_ref()
                .is_none_or(|(b_at, b_seq, _)| (at, *seq) < (*b_at, *b_seq))
            {
                best = Some((at, *seq, Some(timer.clone())));
            }
        }
        best
    }

    /// Runs everything due at `node` by `now`, in order; returns when it next needs to
    /// wake (`SimTime::MAX` if nothing is scheduled), which is the node's plan.
    pub fn process_due(&mut self, node: NodeId, now: SimTime) -> SimTime {
        let wake = self.run_due(node, now);
        self.nodes[node.index()].planned_wake = wake;
        wake
    }

    fn run_due(&mut self, node: NodeId, now: SimTime) -> SimTime {
        if self.streams.is_some() {
            self.expire_connections(now);
        }
        let mut count = 0u32;
        loop {
            if self.nodes[node.index()].status != Status::Up || self.stop_requested {
                return SimTime::MAX;
            }
            let slot = &mut self.nodes[node.index()];
            if slot.cpu_busy_until > now {
                slot.planned_wake = slot.cpu_busy_until;
                return slot.cpu_busy_until;
            }
            if slot.sync_pending {
                if slot.busy_until > now {
                    slot.planned_wake = slot.busy_until;
                    return slot.busy_until;
                }
                self.complete_sync(node, now);
                continue;
            }
            if self.nodes[node.index()].stalled {
                self.draw_order(node, now);
            }
            if let Some(timer) = self.next_forced(node, now) {
                count += 1;
                self.handle_item(node, now, timer);
                continue;
            }
            let Some((at, _, timer)) = self.next_due(node, now) else {
                let wake = self.connection_deadline(node);
                self.nodes[node.index()].planned_wake = wake;
                return wake;
            };
            if at > now {
                let wake = at.min(self.connection_deadline(node));
                self.nodes[node.index()].planned_wake = wake;
                return wake;
            }
            count += 1;
            assert!(
                count < MAX_EVENTS_PER_INSTANT,
                "{node} handled {count} events at {now}: a livelock in the protocol"
            );
            self.handle_item(node, now, timer);
        }
    }

    /// Handles `timer`, or with `None` the inbox's top item.
    fn handle_item(&mut self, node: NodeId, now: SimTime, timer: Option<P::Timer>) {
        match timer {
            Some(timer) => {
                self.nodes[node.index()].timers.remove(&timer);
                self.stats.timers_fired += 1;
                if self.trace.is_some() {
                    let text = format!("{timer:?}");
                    self.trace(now, || TraceEvent::Timer {
                        time: now,
                        node,
                        timer: text,
                    });
                }
                self.nodes[node.index()].handling = Handling::Timer(timer.clone());
                self.run_handler(node, now, |p, env| p.on_timer(env, timer));
            }
            None => {
                let due = self.nodes[node.index()].inbox.pop().expect("peeked");
                self.in_flight -= 1;
                match self.inputs.take(due.input) {
                    Input::Message { id, from, msg } => {
                        self.stats.messages_delivered += 1;
                        self.trace(now, || TraceEvent::Delivered {
                            time: now,
                            id,
                            from,
                            to: node,
                        });
                        self.nodes[node.index()].handling = Handling::Message(from);
                        self.run_handler(node, now, |p, env| p.on_message(env, from, msg));
                    }
                    Input::Request(r) => {
                        self.nodes[node.index()].handling = Handling::Request(r.name.clone());
                        self.run_handler(node, now, |p, env| p.on_request(env, &r))
                    }
                    Input::Byzantine(b) => {
                        self.nodes[node.index()].handling = Handling::Byzantine;
                        self.run_handler(node, now, |p, env| p.on_byzantine(env, b))
                    }
                    Input::Disconnect { peer } => {
                        self.trace(now, || TraceEvent::Disconnected {
                            time: now,
                            node,
                            peer,
                        });
                        self.nodes[node.index()].handling = Handling::Disconnect(peer);
                        self.run_handler(node, now, |p, env| p.on_disconnect(env, peer))
                    }
                }
            }
        }
    }

    /// Takes every waker the world holds (the nodes' and the supervisor's). After a run
    /// they are the only link from the world back to the node tasks, whose futures hold
    /// the world: dropping them breaks that cycle, so the world (history, storage,
    /// inboxes) is freed with the run instead of leaking once per seed.
    pub fn take_wakers(&mut self) -> Vec<Waker> {
        let mut wakers: Vec<Waker> = self
            .nodes
            .iter_mut()
            .filter_map(|n| n.waker.take())
            .collect();
        wakers.extend(self.supervisor_waker.take());
        wakers
    }

    pub fn history(&self, end: SimTime) -> History {
        History {
            info: RunInfo {
                cluster: self.cluster.clone(),
                seed: self.seed,
                end,
                calm_from: self.calm_from,
            },
            records: self.records.clone(),
        }
    }
}

/// An effect's kind, for the trace of a crash point.
fn effect_name<M, T>(effect: &Effect<M, T>) -> &'static str {
    match effect {
        Effect::Send { .. } => "a send",
        Effect::SetTimer { .. } => "a timer set",
        Effect::CancelTimer { .. } => "a timer cancel",
        Effect::Store { .. } => "a write",
        Effect::Sync { .. } => "a sync",
        Effect::Observe(_) => "an observation",
    }
}

#[cfg(test)]
mod torn_tests {
    use super::*;

    fn write(disk: &mut Disk, key: &str, value: &str) {
        disk.last_write = Some(key.to_string());
        disk.unsynced
            .insert(key.to_string(), Some(value.to_string()));
    }

    #[test]
    fn a_torn_write_keeps_a_prefix_of_the_last_unsynced_write_only() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut disk = Disk::new(seed, 0);
            write(&mut disk, "term", "41");
            disk.durable = std::mem::take(&mut disk.unsynced)
                .into_iter()
                .map(|(k, v)| (k, v.unwrap()))
                .collect();
            write(&mut disk, "log", "{\"entries\":[1,2,3]}");
            write(&mut disk, "term", "{\"term\":42,\"vote\":2}");
            let (key, kept, of) = disk.tear_last_write().expect("the last write is unsynced");
            assert_eq!((key.as_str(), of), ("term", 20));
            assert!(kept < of, "a strict prefix");
            assert_eq!(disk.torn["term"], "{\"term\":42,\"vote\":2}"[..kept]);
            seen.insert(kept);
            // After the power loss, reads see what was synced: the torn record fails
            // its checksum, and the other unsynced write is lost whole.
            let storage = disk.after_power_loss();
            assert_eq!(storage.get("term").map(String::as_str), Some("41"));
            assert_eq!(storage.get("log"), None);
            // The same seed tears the same way.
            let mut again = Disk::new(seed, 0);
            write(&mut again, "term", "{\"term\":42,\"vote\":2}");
            assert_eq!(again.tear_last_write().unwrap().1, kept);
        }
        assert!(seen.len() > 10, "prefix lengths are drawn: {seen:?}");
    }

    #[test]
    fn a_synced_last_write_a_delete_or_nothing_is_not_torn() {
        let mut disk = Disk::new(1, 0);
        assert_eq!(disk.tear_last_write(), None);
        write(&mut disk, "k", "v1");
        let writes = std::mem::take(&mut disk.unsynced);
        apply_writes(&mut disk.durable, writes);
        assert_eq!(disk.tear_last_write(), None, "durable: nothing to tear");
        disk.last_write = Some("k".into());
        disk.unsynced.insert("k".into(), None);
        assert_eq!(
            disk.tear_last_write(),
            None,
            "a delete has no bytes to tear"
        );
        // A write whose sync is in progress is not durable yet: it can be torn.
        write(&mut disk, "k", "v2");
        disk.syncing = std::mem::take(&mut disk.unsynced);
        assert_eq!(disk.tear_last_write().map(|t| t.2), Some(2));
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::offset_of;
    type Slot = NodeSlot<tenure_protocols::raft::Raft>;

    /// What a delivery reads of the receiver's slot lies in its first cache lines (see
    /// [`NodeSlot`]): the wake's fields in the first, `run_due`'s and the handlers'
    /// in the next five. With the compiler's order `rung` was at byte 892.
    #[test]
    fn a_delivery_reads_the_first_lines_of_a_node_slot() {
        assert_eq!(std::mem::align_of::<Slot>(), 64);
        let end = |offset: usize, size: usize| offset + size;
        for (field, offset, size) in [
            ("waker", offset_of!(Slot, waker), 16),
            ("planned_wake", offset_of!(Slot, planned_wake), 8),
            ("wakeups", offset_of!(Slot, wakeups), 32),
            ("status", offset_of!(Slot, status), 1),
            ("rung", offset_of!(Slot, rung), 1),
            ("sync_pending", offset_of!(Slot, sync_pending), 1),
            ("stalled", offset_of!(Slot, stalled), 1),
        ] {
            assert!(
                end(offset, size) <= 64,
                "{field} at {offset}: not in the first line"
            );
        }
        for (field, offset) in [
            ("inbox", offset_of!(Slot, inbox)),
            ("timers", offset_of!(Slot, timers)),
            ("cpu_busy_until", offset_of!(Slot, cpu_busy_until)),
            ("clock", offset_of!(Slot, clock)),
            ("rng", offset_of!(Slot, rng)),
            ("forced", offset_of!(Slot, forced)),
            ("crash_point", offset_of!(Slot, crash_point)),
            ("cpu", offset_of!(Slot, cpu)),
            ("handling", offset_of!(Slot, handling)),
            (
                "disk.unsynced",
                offset_of!(Slot, disk) + offset_of!(Disk, unsynced),
            ),
            (
                "disk.error_until",
                offset_of!(Slot, disk) + offset_of!(Disk, error_until),
            ),
        ] {
            assert!(
                offset < 6 * 64,
                "{field} at {offset}: not in the first six lines"
            );
        }
    }
}
