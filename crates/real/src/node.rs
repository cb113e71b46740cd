//! One client (or storage) node of a real run: the zoo's own state machine, unchanged,
//! in a thread of its own with the operating system's clocks, real timers, a
//! [`DirStorage`] and a seeded [`NodeRng`], and its observations appended to
//! `observations.jsonl` in tenure-runtime's format.
//!
//! Its messages to a server node go to a connection of its own to that real server (a
//! worker thread that speaks the server's protocol through a [`Backend`]: a request
//! blocks there, as on a TCP connection, while the node's loop goes on and its
//! timeouts fire); the server's answers come back into the node's inbox. Its messages
//! to another node of the run (the protected storage) go straight into that node's
//! inbox.

use crate::Backend;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tenure_core::{
    Clock, Cluster, Env, LocalTime, Network, NodeId, Observation, Observe, Protocol, Record, Rng,
    SimTime, Storage, SyncError, Timers,
};
use tenure_runtime::{DirStorage, NodeRng};

/// What a node's loop is told.
pub enum Input<M> {
    /// A message from a node (a server's reply comes from the server's id).
    Msg(NodeId, M),
    /// Freeze the loop for this long: nothing is handled, messages and timers pile up,
    /// and the node keeps every belief (a process stopped with SIGSTOP).
    Pause(Duration),
    /// End the loop now, state lost (the supervisor writes the `crashed` record).
    Crash,
    /// End the loop (the end of the run).
    Stop,
}

/// Where a node's messages go: the inboxes of the run's other nodes (`None`: down) and
/// which nodes are real servers.
pub struct Router<M> {
    pub inboxes: Mutex<Vec<Option<Sender<Input<M>>>>>,
    pub servers: Vec<NodeId>,
    /// Blocked directed links (from, to): what crosses one is dropped, as the
    /// simulator's datagram network drops it.
    pub blocked: Mutex<BTreeSet<(u32, u32)>>,
}

impl<M> Router<M> {
    pub fn new(nodes: usize, servers: Vec<NodeId>) -> Router<M> {
        Router {
            inboxes: Mutex::new((0..nodes).map(|_| None).collect()),
            servers,
            blocked: Mutex::new(BTreeSet::new()),
        }
    }

    /// Whether the link from `from` to `to` is blocked now.
    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.blocked
            .lock()
            .is_ok_and(|b| b.contains(&(from.0, to.0)))
    }

    fn deliver(&self, from: NodeId, to: NodeId, msg: M) {
        if self.is_blocked(from, to) {
            return;
        }
        let inbox = self
            .inboxes
            .lock()
            .ok()
            .and_then(|v| v.get(to.index()).cloned().flatten());
        if let Some(inbox) = inbox {
            // A node that is down loses what was sent to it.
            let _ = inbox.send(Input::Msg(from, msg));
        }
    }
}

/// A server's way to answer a client later, outside the request that asked (a watch
/// event, a reply read off a connection by a thread of its own): the answer goes into
/// the client's inbox, unless the link from the server to the client is blocked then.
pub struct Later<M> {
    router: Arc<Router<M>>,
    client: NodeId,
    server: NodeId,
    inbox: Sender<Input<M>>,
}

impl<M> Clone for Later<M> {
    fn clone(&self) -> Self {
        Later {
            router: self.router.clone(),
            client: self.client,
            server: self.server,
            inbox: self.inbox.clone(),
        }
    }
}

impl<M> Later<M> {
    /// Delivers `msg` from the server to the client. `false`: the client has ended
    /// (crashed or stopped), and nothing more need be sent to it.
    pub fn send(&self, msg: M) -> bool {
        if self.router.is_blocked(self.server, self.client) {
            return true;
        }
        self.inbox.send(Input::Msg(self.server, msg)).is_ok()
    }
}

/// The clocks of a run, counted from its epoch as tenure-runtime's are.
#[derive(Clone, Copy)]
pub struct RunClock {
    pub epoch: SystemTime,
}

impl RunClock {
    /// Nanoseconds since the epoch on the wall clock.
    #[allow(clippy::disallowed_methods)] // a real run: the real clock is the point
    pub fn wall(&self) -> i64 {
        match SystemTime::now().duration_since(self.epoch) {
            Ok(d) => d.as_nanos() as i64,
            Err(e) => -(e.duration().as_nanos() as i64),
        }
    }
}

/// A node's monotonic clock: the wall reading at its start, then `Instant`.
struct NodeClock {
    at_start: i64,
    started: Instant,
    run: RunClock,
}

impl NodeClock {
    #[allow(clippy::disallowed_methods)]
    fn new(run: RunClock) -> NodeClock {
        NodeClock {
            at_start: run.wall(),
            started: Instant::now(),
            run,
        }
    }
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn mono_of(&self, t: Instant) -> LocalTime {
        LocalTime(self.at_start + t.duration_since(self.started).as_nanos() as i64)
    }
}

/// A node's observation log: `observations.jsonl`, a line per record, flushed as written.
pub struct Log {
    file: File,
    path: PathBuf,
}

impl Log {
    pub fn open(dir: &std::path::Path) -> std::io::Result<Log> {
        let path = dir.join("observations.jsonl");
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Log { file, path })
    }

    pub fn write(&mut self, record: &Record) {
        let mut line = serde_json::to_string(record).expect("records serialize");
        line.push('\n');
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            eprintln!("tenure real: {}: {e}", self.path.display());
        }
    }
}

/// A record stamped now (`time` is the wall reading, as tenure-runtime's).
pub fn record_now(run: RunClock, node: NodeId, mono: LocalTime, obs: Observation) -> Record {
    let wall = run.wall();
    Record {
        time: SimTime(wall.max(0) as u64),
        node,
        mono,
        wall: LocalTime(wall),
        obs,
    }
}

/// One start of one node.
pub struct NodeStart<B: Backend> {
    pub me: NodeId,
    pub cluster: Cluster,
    pub dir: PathBuf,
    pub protocol: &'static str,
    pub seed: u64,
    pub incarnation: u32,
    pub clock: RunClock,
    pub router: Arc<Router<B::Msg>>,
    pub backend: Arc<B>,
    /// Every record of the run so far, for the supervisor's `holder`/`waiter` selectors.
    pub seen: Arc<Mutex<Vec<Record>>>,
}

struct ThreadEnv<'a, P: Protocol, B: Backend<Msg = P::Msg>> {
    start: &'a NodeStart<B>,
    clock: &'a NodeClock,
    timers: &'a mut BTreeMap<P::Timer, Instant>,
    storage: &'a mut DirStorage,
    rng: &'a mut NodeRng,
    log: &'a mut Log,
    /// This node's connections to the servers: a worker thread each.
    conns: &'a mut BTreeMap<NodeId, Sender<B::Msg>>,
    inbox: &'a Sender<Input<P::Msg>>,
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Clock for ThreadEnv<'_, P, B> {
    fn monotonic(&self) -> LocalTime {
        self.clock.mono_of(self.clock.now())
    }
    fn wall(&self) -> LocalTime {
        LocalTime(self.clock.run.wall())
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Network<P::Msg> for ThreadEnv<'_, P, B> {
    fn send(&mut self, to: NodeId, msg: P::Msg) {
        let me = self.start.me;
        if self.start.router.is_blocked(me, to) {
            return;
        }
        if !self.start.router.servers.contains(&to) {
            self.start.router.deliver(me, to, msg);
            return;
        }
        let conn = self.conns.entry(to).or_insert_with(|| {
            connection(
                self.start.backend.clone(),
                self.start.router.clone(),
                me,
                to,
                self.inbox.clone(),
                format!("n{}->n{}", me.0, to.0),
            )
        });
        let _ = conn.send(msg);
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Timers<P::Timer> for ThreadEnv<'_, P, B> {
    fn set_timer(&mut self, timer: P::Timer, after: Duration) {
        self.timers.insert(timer, self.clock.now() + after);
    }
    fn cancel_timer(&mut self, timer: &P::Timer) {
        self.timers.remove(timer);
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Storage for ThreadEnv<'_, P, B> {
    fn get(&self, key: &str) -> Option<&str> {
        self.storage.get(key)
    }
    fn put(&mut self, key: &str, value: String) {
        self.storage.put(key, value);
    }
    fn delete(&mut self, key: &str) {
        self.storage.delete(key);
    }
    fn sync(&mut self) -> Result<(), SyncError> {
        self.storage.sync()
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Rng for ThreadEnv<'_, P, B> {
    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Observe for ThreadEnv<'_, P, B> {
    fn observe(&mut self, obs: Observation) {
        let mono = self.clock.mono_of(self.clock.now());
        let record = record_now(self.clock.run, self.start.me, mono, obs);
        self.log.write(&record);
        if let Ok(mut seen) = self.start.seen.lock() {
            seen.push(record);
        }
    }
}

impl<P: Protocol, B: Backend<Msg = P::Msg>> Env<P::Msg, P::Timer> for ThreadEnv<'_, P, B> {
    fn me(&self) -> NodeId {
        self.start.me
    }
    fn cluster(&self) -> &Cluster {
        &self.start.cluster
    }
}

/// A connection of one node to one server: a worker thread that takes the node's
/// requests in order, speaks them to the server through `backend` (blocking, as a
/// client library on a TCP connection does), and puts the answers in the node's inbox.
/// It ends when the node's end of the channel is dropped (the node crashed or
/// stopped); a request that fails (the server killed, the connection reset) gets no
/// answer and the connection is opened anew for the next one.
fn connection<B: Backend>(
    backend: Arc<B>,
    router: Arc<Router<B::Msg>>,
    client: NodeId,
    server: NodeId,
    inbox: Sender<Input<B::Msg>>,
    name: String,
) -> Sender<B::Msg> {
    let (tx, rx) = channel::<B::Msg>();
    let later = Later {
        router: router.clone(),
        client,
        server,
        inbox: inbox.clone(),
    };
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let mut conn: Option<B::Conn> = None;
        while let Ok(msg) = rx.recv() {
            if conn.is_none() {
                conn = backend.connect(server).ok();
            }
            let Some(c) = conn.as_mut() else { continue };
            match backend.request(c, msg, &later) {
                // An answer across a link blocked meanwhile is dropped.
                Ok(Some(_)) if router.is_blocked(server, client) => {}
                Ok(Some(reply)) => {
                    if inbox.send(Input::Msg(server, reply)).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => conn = None,
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!("tenure real: cannot start a connection thread: {e}");
    }
    tx
}

/// Runs one start of a node until it is told to stop or crash. `P::new` builds it, as
/// the simulator does, and `on_start` is called after its `started` record.
pub fn run_node<P, B>(
    config: &P::Config,
    start: NodeStart<B>,
    inbox: Receiver<Input<P::Msg>>,
    me_tx: Sender<Input<P::Msg>>,
) -> Result<(), String>
where
    P: Protocol,
    B: Backend<Msg = P::Msg>,
{
    let me = start.me;
    let mut storage =
        DirStorage::open(&start.dir, me, start.protocol).map_err(|e| format!("n{}: {e}", me.0))?;
    let mut log = Log::open(&start.dir).map_err(|e| format!("n{}: {e}", me.0))?;
    let clock = NodeClock::new(start.clock);
    let mut rng = NodeRng::seeded(start.seed, me, start.incarnation);
    let mut timers: BTreeMap<P::Timer, Instant> = BTreeMap::new();
    let mut conns: BTreeMap<NodeId, Sender<B::Msg>> = BTreeMap::new();
    let mut node = P::new(config, me, &start.cluster);
    macro_rules! env {
        () => {
            &mut ThreadEnv::<P, B> {
                start: &start,
                clock: &clock,
                timers: &mut timers,
                storage: &mut storage,
                rng: &mut rng,
                log: &mut log,
                conns: &mut conns,
                inbox: &me_tx,
            }
        };
    }
    env!().observe(Observation::Started);
    node.on_start(env!());
    loop {
        let now = clock.now();
        let wait = timers
            .values()
            .min()
            .map_or(Duration::from_millis(50), |at| {
                at.saturating_duration_since(now)
            })
            .min(Duration::from_millis(50));
        // Wait for input or the next timer; then take every input already here before
        // any timer that fell due: after a pause, what arrived during it is handled
        // first, as it arrived first (tenure-runtime's order).
        let mut next = inbox.recv_timeout(wait);
        loop {
            match next {
                Ok(Input::Msg(from, msg)) => node.on_message(env!(), from, msg),
                Ok(Input::Pause(d)) => std::thread::sleep(d),
                Ok(Input::Crash) | Ok(Input::Stop) => return Ok(()),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            next = inbox.try_recv().map_err(|e| match e {
                std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            });
        }
        // Every timer due now, earliest first.
        loop {
            let now = clock.now();
            let due = timers
                .iter()
                .filter(|(_, at)| **at <= now)
                .min_by_key(|(_, at)| **at)
                .map(|(t, _)| t.clone());
            let Some(timer) = due else { break };
            timers.remove(&timer);
            node.on_timer(env!(), timer);
        }
    }
}
