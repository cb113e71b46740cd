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
    /// What the network does to a message: blocked links, delays, loss, duplication.
    pub net: Mutex<Net>,
}

impl<M> Router<M> {
    pub fn new(nodes: usize, servers: Vec<NodeId>, net: Net) -> Router<M> {
        Router {
            inboxes: Mutex::new((0..nodes).map(|_| None).collect()),
            servers,
            net: Mutex::new(net),
        }
    }

    /// Whether the link from `from` to `to` is blocked now.
    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.net
            .lock()
            .map_or(true, |n| n.blocked.contains(&(from.0, to.0)))
    }

    /// The fate of a message sent now from `from` to `to`: when each copy arrives
    /// (none: blocked or lost; two: duplicated). See [`Net::fate`].
    pub fn fate(&self, from: NodeId, to: NodeId) -> Vec<Instant> {
        let now = Instant::now();
        match self.net.lock() {
            Ok(mut net) => net
                .fate(from, to, now)
                .into_iter()
                .map(|d| now + d)
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn deliver(&self, from: NodeId, to: NodeId, msg: M)
    where
        M: Clone + Send + 'static,
    {
        let inbox = self
            .inboxes
            .lock()
            .ok()
            .and_then(|v| v.get(to.index()).cloned().flatten());
        // A node that is down loses what was sent to it.
        let Some(inbox) = inbox else { return };
        for at in self.fate(from, to) {
            let (inbox, msg) = (inbox.clone(), msg.clone());
            if at <= Instant::now() {
                let _ = inbox.send(Input::Msg(from, msg));
            } else {
                // Delayed on its own: datagrams may overtake each other, as in the
                // simulator.
                let _ = std::thread::Builder::new()
                    .name("tenure-real-delay".into())
                    .spawn(move || {
                        sleep_until(at);
                        let _ = inbox.send(Input::Msg(from, msg));
                    });
            }
        }
    }
}

/// Sleeps until `at` (at once if it has passed).
fn sleep_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}

/// The network of a real run besides loopback's own: the links that faults block, and
/// what the scenario's `[network]` (its latency distribution, loss, duplication and
/// `[[network.link]]` overrides) and its `network` and `slow-link` events do to every
/// other message, drawn as the simulator draws them ([`tenure_scenario::Delay::sample`],
/// from a random stream of the run's seed: real runs are not reproducible, the draws
/// only follow the scenario's distributions). A delay is added to loopback's own. In
/// stream mode (etcd, ZooKeeper: TCP connections) messages are delayed and never lost
/// or duplicated, and a connection stays FIFO, as TCP retransmits and deduplicates; in
/// datagram mode each message is lost or duplicated on its own. A client's requests to
/// one server go over one connection, one at a time (a client library's), so their
/// delays add up in order there in either mode.
pub struct Net {
    pub blocked: BTreeSet<(u32, u32)>,
    latency: tenure_scenario::Delay,
    loss: f64,
    duplicate: f64,
    /// `[[network.link]]`, directed: (from, to) -> its settings.
    links: BTreeMap<(u32, u32), tenure_scenario::LinkSpec>,
    /// `slow-link` events in force: (from, to) -> (latency, until).
    slow: BTreeMap<(u32, u32), (tenure_scenario::Delay, Instant)>,
    datagrams: bool,
    rng: tenure_core::SplitMix64,
}

impl Net {
    /// The network `scenario` declares, in its transport mode (`datagrams`: whether a
    /// message can be lost or duplicated on its own).
    pub fn new(network: &tenure_scenario::NetworkSpec, datagrams: bool, seed: u64) -> Net {
        let mut links = BTreeMap::new();
        for l in &network.links {
            links.insert((l.from.0, l.to.0), l.clone());
            if l.both {
                links.insert((l.to.0, l.from.0), l.clone());
            }
        }
        Net {
            blocked: BTreeSet::new(),
            latency: network.latency.clone(),
            loss: network.loss,
            duplicate: network.duplicate,
            links,
            slow: BTreeMap::new(),
            datagrams,
            // Its own stream of the seed, apart from every node's.
            rng: tenure_core::SplitMix64(seed ^ 0x6e65_745f_7265_616c),
        }
    }

    /// A `network` event: new defaults from now on (fields not written keep theirs).
    pub fn set_defaults(
        &mut self,
        latency: Option<&tenure_scenario::Delay>,
        loss: Option<f64>,
        duplicate: Option<f64>,
    ) {
        if let Some(l) = latency {
            self.latency = l.clone();
        }
        if let Some(l) = loss {
            self.loss = l;
        }
        if let Some(d) = duplicate {
            self.duplicate = d;
        }
    }

    /// A `slow-link` event: messages from `from` to `to` take `latency` until `until`.
    pub fn slow_link(
        &mut self,
        from: NodeId,
        to: NodeId,
        latency: tenure_scenario::Delay,
        until: Instant,
    ) {
        self.slow.insert((from.0, to.0), (latency, until));
    }

    /// The delays of a message's copies sent at `now` from `from` to `to`: none when
    /// the link is blocked or the message is lost, two when it is duplicated.
    pub fn fate(&mut self, from: NodeId, to: NodeId, now: Instant) -> Vec<Duration> {
        let key = (from.0, to.0);
        if self.blocked.contains(&key) {
            return Vec::new();
        }
        self.slow.retain(|_, (_, until)| *until > now);
        let link = self.links.get(&key);
        let loss = link.and_then(|l| l.loss).unwrap_or(self.loss);
        let duplicate = link.and_then(|l| l.duplicate).unwrap_or(self.duplicate);
        let latency = match self.slow.get(&key) {
            Some((d, _)) => d.clone(),
            None => link
                .and_then(|l| l.latency.clone())
                .unwrap_or_else(|| self.latency.clone()),
        };
        let rng = &mut self.rng;
        if self.datagrams && rng.chance(loss) {
            return Vec::new();
        }
        let copies = if self.datagrams && rng.chance(duplicate) {
            2
        } else {
            1
        };
        (0..copies).map(|_| latency.sample(&mut *rng)).collect()
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
    pub fn send(&self, msg: M) -> bool
    where
        M: Clone + Send + 'static,
    {
        // In order on the connection: the delay is waited out here, in the thread
        // that reads the connection.
        for at in self.router.fate(self.server, self.client) {
            sleep_until(at);
            if self
                .inbox
                .send(Input::Msg(self.server, msg.clone()))
                .is_err()
            {
                return false;
            }
        }
        true
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
    Record::new(
        SimTime(wall.max(0) as u64),
        node,
        mono,
        LocalTime(wall),
        obs,
    )
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
    conns: &'a mut BTreeMap<NodeId, Conn<B::Msg>>,
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
        if !self.start.router.servers.contains(&to) {
            self.start.router.deliver(me, to, msg);
            return;
        }
        // Its fate is decided when it is sent, as in the simulator: blocked, lost, or
        // spoken to the server once or twice, each copy when it arrives.
        let arrivals = self.start.router.fate(me, to);
        if arrivals.is_empty() {
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
        let _ = conn.send((msg, arrivals));
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

/// A node's end of its connection to a server: each request with when its copies
/// arrive there.
type Conn<M> = Sender<(M, Vec<Instant>)>;

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
) -> Conn<B::Msg> {
    let (tx, rx) = channel::<(B::Msg, Vec<Instant>)>();
    let later = Later {
        router: router.clone(),
        client,
        server,
        inbox: inbox.clone(),
    };
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let mut conn: Option<B::Conn> = None;
        while let Ok((msg, arrivals)) = rx.recv() {
            // Each copy is spoken when it arrives (after the previous request's
            // answer: one connection, one request at a time).
            for at in arrivals {
                sleep_until(at);
                if conn.is_none() {
                    conn = backend.connect(server).ok();
                }
                let Some(c) = conn.as_mut() else { continue };
                match backend.request(c, msg.clone(), &later) {
                    // The answer's own fate, from the server to the client now: an
                    // answer across a link blocked meanwhile is dropped.
                    Ok(Some(reply)) => {
                        for back in router.fate(server, client) {
                            sleep_until(back);
                            if inbox.send(Input::Msg(server, reply.clone())).is_err() {
                                return;
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(_) => conn = None,
                }
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
    let mut conns: BTreeMap<NodeId, Conn<B::Msg>> = BTreeMap::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_scenario::{Delay, LinkSpec, NetworkSpec};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn spec(latency: Delay, loss: f64, duplicate: f64) -> NetworkSpec {
        NetworkSpec {
            latency,
            loss,
            duplicate,
            ..NetworkSpec::default()
        }
    }

    /// A blocked link drops everything; datagrams are lost and duplicated as the
    /// scenario says, streams never; delays are the distribution's.
    #[test]
    fn a_message_meets_the_scenarios_network() {
        let (a, b) = (NodeId(0), NodeId(1));
        let now = Instant::now();
        let mut lossy = Net::new(&spec(Delay::uniform(ms(7), ms(9)), 1.0, 0.0), true, 1);
        assert!(lossy.fate(a, b, now).is_empty(), "loss 1 loses a datagram");
        let mut stream = Net::new(&spec(Delay::uniform(ms(7), ms(9)), 1.0, 1.0), false, 1);
        let copies = stream.fate(a, b, now);
        assert_eq!(copies.len(), 1, "a stream loses and duplicates nothing");
        assert!((ms(7)..=ms(9)).contains(&copies[0]), "{copies:?}");
        let mut twice = Net::new(&spec(Delay::uniform(ms(1), ms(2)), 0.0, 1.0), true, 1);
        assert_eq!(
            twice.fate(a, b, now).len(),
            2,
            "duplicate 1 sends two copies"
        );
        twice.blocked.insert((0, 1));
        assert!(twice.fate(a, b, now).is_empty(), "a blocked link");
        assert_eq!(
            twice.fate(b, a, now).len(),
            2,
            "only that direction is blocked"
        );
        // Half the datagrams lost: some, not all (the draws are the run's seed's).
        let mut half = Net::new(&spec(Delay::default(), 0.5, 0.0), true, 3);
        let lost = (0..1000)
            .filter(|_| half.fate(a, b, now).is_empty())
            .count();
        assert!((350..650).contains(&lost), "{lost} of 1000 lost");
    }

    /// `[[network.link]]` overrides the defaults on its link (both ways with `both`),
    /// a `network` event changes the defaults, and a `slow-link` event sets one
    /// direction's delay until it ends.
    #[test]
    fn links_events_and_slow_links_override_in_order() {
        let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
        let mut s = spec(Delay::uniform(ms(1), ms(1)), 0.0, 0.0);
        s.links.push(LinkSpec {
            from: a,
            to: b,
            both: true,
            latency: Some(Delay::uniform(ms(30), ms(30))),
            loss: None,
            duplicate: None,
        });
        let now = Instant::now();
        let mut net = Net::new(&s, true, 1);
        assert_eq!(net.fate(a, b, now), vec![ms(30)]);
        assert_eq!(net.fate(b, a, now), vec![ms(30)]);
        assert_eq!(net.fate(a, c, now), vec![ms(1)]);
        net.set_defaults(Some(&Delay::uniform(ms(4), ms(4))), None, None);
        assert_eq!(net.fate(a, c, now), vec![ms(4)], "the new default");
        assert_eq!(net.fate(a, b, now), vec![ms(30)], "the link keeps its own");
        net.slow_link(c, a, Delay::uniform(ms(200), ms(200)), now + ms(500));
        assert_eq!(net.fate(c, a, now), vec![ms(200)], "the slow direction");
        assert_eq!(
            net.fate(a, c, now),
            vec![ms(4)],
            "the way back keeps its own"
        );
        assert_eq!(
            net.fate(c, a, now + ms(500)),
            vec![ms(4)],
            "a slow link ends after its duration"
        );
        net.set_defaults(None, Some(1.0), None);
        assert!(net.fate(a, c, now).is_empty(), "a `network` event's loss");
    }
}
