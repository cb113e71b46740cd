//! Run one node of any tenure [`Protocol`] as a real process.
//!
//! The protocol code is the code the simulator runs, unchanged: it sees the same [`Env`]
//! traits, implemented here by the operating system.
//!
//! - **Network**: UDP datagrams on loopback (each node binds the address the cluster
//!   table gives it; a non-loopback address is refused). A message is
//!   `postcard(from, msg)`: the protocol's `Msg` must be `Serialize + Deserialize`. A
//!   datagram that does not decode is dropped and counted, as the network may.
//!   In stream mode ([`NodeSpec::stream`]: the protocol's `Transport::Stream`, or a
//!   scenario's `[network] mode = "stream"`) TCP connections on loopback instead, with
//!   `on_disconnect` when one is reset: see [`stream`].
//! - **Clocks**: monotonic from [`Instant`], wall from [`SystemTime`], both in
//!   nanoseconds since the cluster's epoch (a time every node is given), so their readings
//!   compare with a simulated run's.
//! - **Timers**: real deadlines on the monotonic clock; the loop sleeps in `recv` until
//!   the next one.
//! - **Storage**: [`DirStorage`] in the node's directory (fsync for `sync`).
//! - **Randomness**: with a seed, one ChaCha8 stream per (seed, node, incarnation)
//!   ([`NodeRng`]): a restarted node draws afresh, as in the simulator (where a node's
//!   one stream runs on across its restarts), and its first life draws what the
//!   simulator's node stream draws. The incarnation is the number of `started` records
//!   already in the node's log. Without a seed, the OS's randomness.
//! - **Observations**: one JSON line per observation in `observations.jsonl` in the
//!   node's directory, in the shape of a simulated history's records (`time` is real
//!   time since the epoch, `mono`/`wall` the node's own readings), appended and flushed
//!   line by line so a killed process keeps every line it wrote. `tenure check-trace`
//!   judges them with the simulator's checkers.
//!
//! **Not deterministic.** Real sockets, clocks and schedulers: the same command gives
//! different runs. What makes a real run reviewable is what it keeps: every node's
//! observation log, and (with `tenure cluster`) the schedule of faults applied.

// The real runtime: the OS's clocks and randomness are what it exists to provide (the
// workspace bans them so the simulator cannot reach them by accident).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub mod launch;
pub mod storage;
pub mod stream;

pub use launch::{Launcher, Launchers};
pub use storage::{DirStorage, StorageError};
pub use tenure_core::{NoRealProtocols, RealCatalogue, RealVisitor};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tenure_core::{
    Clock, Cluster, Env, LocalTime, Network, NodeId, Observation, Observe, Protocol, Record, Rng,
    SimTime, Storage, SyncError, Timers,
};

/// The largest datagram a node sends or accepts.
pub const MAX_DATAGRAM: usize = 65_507;

/// How long the loop waits at most before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(50);

/// Where and how one node runs.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub me: NodeId,
    pub cluster: Cluster,
    /// Where each node is reached (index = node id): its own port, or a proxy's in front
    /// of it (`tenure cluster`); all loopback.
    pub addrs: Vec<SocketAddr>,
    /// Where this node listens (loopback): `addrs[me]` unless a proxy sits in front.
    pub listen: SocketAddr,
    /// The node's storage and observation log.
    pub dir: PathBuf,
    /// Seeded randomness; `None` draws from the operating system.
    pub seed: Option<u64>,
    /// The cluster's time zero (real time): records' `time` and the clocks count from it.
    pub epoch: SystemTime,
    /// The protocol's name, written in the directory's owner file.
    pub protocol: String,
    /// `None`: datagrams (UDP). `Some(timeout)`: connections (TCP, stream mode), with
    /// `timeout` for opening one (connect and handshake); the scenario's
    /// `connection_timeout`.
    pub stream: Option<Duration>,
}

#[derive(Debug)]
pub enum RuntimeError {
    Spec(String),
    Storage(StorageError),
    Io(String, io::Error),
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Spec(m) => write!(f, "{m}"),
            RuntimeError::Storage(e) => write!(f, "{e}"),
            RuntimeError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// Counts of what a node's run did (for its exit line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub sent: u64,
    pub received: u64,
    /// Datagrams (frames) that did not decode, or claimed a sender outside the cluster;
    /// in stream mode also messages lost on a reset connection or sent while no
    /// connection could be opened.
    pub dropped: u64,
    pub timers: u64,
    pub observations: u64,
    /// Stream mode: connections reset (each end's `on_disconnect` calls).
    pub disconnects: u64,
    /// How many times the node had started before this run ([`incarnation`]): with a
    /// seed, its random stream is (seed, node, incarnation).
    pub incarnation: u32,
}

fn since(epoch: SystemTime, t: SystemTime) -> i64 {
    match t.duration_since(epoch) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

/// The OS's clocks, counted from the epoch.
struct RealClock {
    epoch: SystemTime,
    /// The monotonic clock's reading at `started`.
    mono_at_start: i64,
    started: Instant,
}

impl RealClock {
    #[allow(clippy::disallowed_methods)] // a real process: the real clock is the point
    fn new(epoch: SystemTime) -> RealClock {
        RealClock {
            epoch,
            mono_at_start: since(epoch, SystemTime::now()),
            started: Instant::now(),
        }
    }
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn mono_of(&self, t: Instant) -> LocalTime {
        LocalTime(self.mono_at_start + t.duration_since(self.started).as_nanos() as i64)
    }
    #[allow(clippy::disallowed_methods)]
    fn wall(&self) -> LocalTime {
        LocalTime(since(self.epoch, SystemTime::now()))
    }
}

/// A node's observation log.
struct ObsLog {
    file: File,
    path: PathBuf,
}

impl ObsLog {
    fn write(&mut self, record: &Record) {
        let mut line = serde_json::to_string(record).expect("records serialize");
        line.push('\n');
        if let Err(e) = self.file.write_all(line.as_bytes()) {
            eprintln!("tenure-runtime: {}: {e}", self.path.display());
        }
    }
}

/// How a node's messages leave it: datagrams (UDP) or connections (TCP, [`stream`]).
pub(crate) trait Wire<M> {
    /// Hands `msg` for `to` to the operating system (or to the connection's writer);
    /// `false` if it was not (then it is not counted as sent).
    fn send(&mut self, me: NodeId, to: NodeId, msg: &M) -> bool;
}

/// Datagram mode: one UDP datagram per message, `postcard(from, msg)`.
struct Udp<'a> {
    socket: &'a UdpSocket,
    addrs: &'a [SocketAddr],
}

impl<M: Serialize> Wire<M> for Udp<'_> {
    fn send(&mut self, me: NodeId, to: NodeId, msg: &M) -> bool {
        let Some(addr) = self.addrs.get(to.index()) else {
            return false;
        };
        match postcard::to_stdvec(&(me.0, msg)) {
            // A datagram the OS drops is a lost message: the network may lose it.
            Ok(bytes) if bytes.len() <= MAX_DATAGRAM => self.socket.send_to(&bytes, addr).is_ok(),
            Ok(bytes) => {
                eprintln!(
                    "tenure-runtime: n{}: a message of {} bytes is over the datagram limit {MAX_DATAGRAM}: not sent",
                    me.0,
                    bytes.len()
                );
                false
            }
            Err(e) => {
                eprintln!("tenure-runtime: n{}: cannot encode a message: {e}", me.0);
                false
            }
        }
    }
}

pub(crate) struct RealEnv<'a, M, T> {
    me: NodeId,
    cluster: &'a Cluster,
    wire: &'a mut dyn Wire<M>,
    clock: &'a RealClock,
    timers: &'a mut BTreeMap<T, Instant>,
    storage: &'a mut DirStorage,
    rng: &'a mut NodeRng,
    log: &'a mut ObsLog,
    stats: &'a mut Stats,
}

impl<M, T> Clock for RealEnv<'_, M, T> {
    fn monotonic(&self) -> LocalTime {
        self.clock.mono_of(self.clock.now())
    }
    fn wall(&self) -> LocalTime {
        self.clock.wall()
    }
}

impl<M, T> Network<M> for RealEnv<'_, M, T> {
    fn send(&mut self, to: NodeId, msg: M) {
        if self.wire.send(self.me, to, &msg) {
            self.stats.sent += 1;
        }
    }
}

impl<M, T: Ord> Timers<T> for RealEnv<'_, M, T> {
    fn set_timer(&mut self, timer: T, after: Duration) {
        let at = self.clock.now() + after;
        self.timers.insert(timer, at);
    }
    fn cancel_timer(&mut self, timer: &T) {
        self.timers.remove(timer);
    }
}

impl<M, T> Storage for RealEnv<'_, M, T> {
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

impl<M, T> Rng for RealEnv<'_, M, T> {
    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

impl<M, T> Observe for RealEnv<'_, M, T> {
    fn observe(&mut self, obs: Observation) {
        let now = self.clock.now();
        let record = Record::new(
            SimTime(self.clock.wall().0.max(0) as u64),
            self.me,
            self.clock.mono_of(now),
            self.clock.wall(),
            obs,
        );
        self.stats.observations += 1;
        self.log.write(&record);
    }
}

impl<M, T: Ord> Env<M, T> for RealEnv<'_, M, T> {
    fn me(&self) -> NodeId {
        self.me
    }
    fn cluster(&self) -> &Cluster {
        self.cluster
    }
}

/// Checks a spec before anything binds or writes.
pub fn check(spec: &NodeSpec) -> Result<(), RuntimeError> {
    if spec.addrs.len() != spec.cluster.size() {
        return Err(RuntimeError::Spec(format!(
            "{} addresses for a cluster of {} nodes",
            spec.addrs.len(),
            spec.cluster.size()
        )));
    }
    if !spec.cluster.contains(spec.me) {
        return Err(RuntimeError::Spec(format!(
            "node {} is not in the cluster (nodes 0..{})",
            spec.me.0,
            spec.cluster.size()
        )));
    }
    if let Some(a) = spec
        .addrs
        .iter()
        .chain([&spec.listen])
        .find(|a| !a.ip().is_loopback())
    {
        return Err(RuntimeError::Spec(format!(
            "{a} is not a loopback address: tenure runs real clusters on this machine only"
        )));
    }
    Ok(())
}

/// A real node's randomness: a ChaCha8 stream, as the simulator's.
#[derive(Clone, Debug)]
pub struct NodeRng(ChaCha8Rng);

impl NodeRng {
    /// Incarnation `incarnation` (0 for the first start) of node `node` under `seed`.
    /// The first incarnation draws the simulator's stream of that node
    /// (`tenure_sim::rng::SeededRng::node`: stream `1 + node`); each later one has a
    /// stream of its own (`2^63 + incarnation * 2^32 + node`, apart from every stream
    /// the simulator uses), so a restarted process never repeats its earlier draws. (The
    /// simulator keeps one stream per node across restarts; a real process cannot
    /// carry its position over, so it moves to a fresh stream.)
    pub fn seeded(seed: u64, node: NodeId, incarnation: u32) -> NodeRng {
        let stream = match incarnation {
            0 => 1 + u64::from(node.0),
            k => (1 << 63) | (u64::from(k.min(i32::MAX as u32)) << 32) | u64::from(node.0),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        NodeRng(rng)
    }

    /// The operating system's randomness (no seed).
    pub fn from_os() -> NodeRng {
        NodeRng(ChaCha8Rng::seed_from_u64(os_seed()))
    }
}

impl Rng for NodeRng {
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

/// How many times the node whose log is `dir/observations.jsonl` has started before:
/// the number of `started` records in it (a life that died before its `started` record
/// drew nothing).
pub fn incarnation(dir: &std::path::Path) -> u32 {
    std::fs::read_to_string(dir.join("observations.jsonl"))
        .map(|text| {
            text.lines()
                .filter(|l| {
                    serde_json::from_str::<Record>(l)
                        .is_ok_and(|r| matches!(r.obs, Observation::Started))
                })
                .count() as u32
        })
        .unwrap_or(0)
}

fn os_seed() -> u64 {
    let mut b = [0u8; 8];
    // No OS randomness at all: fall back to the time (still not a fixed seed).
    if getrandom::getrandom(&mut b).is_err() {
        #[allow(clippy::disallowed_methods)]
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return t;
    }
    u64::from_le_bytes(b)
}

/// What a node's loop keeps whatever its transport: the clocks, timers, storage,
/// randomness, log and counts.
pub(crate) struct Core<T> {
    me: NodeId,
    cluster: Cluster,
    clock: RealClock,
    timers: BTreeMap<T, Instant>,
    storage: DirStorage,
    rng: NodeRng,
    log: ObsLog,
    pub(crate) stats: Stats,
}

impl<T: Ord + Clone> Core<T> {
    fn open(spec: &NodeSpec) -> Result<Core<T>, RuntimeError> {
        let me = spec.me;
        let storage =
            DirStorage::open(&spec.dir, me, &spec.protocol).map_err(RuntimeError::Storage)?;
        // The cluster, for `tenure check-trace` (every node writes the same).
        let cluster_path = spec.dir.join("cluster.json");
        std::fs::write(
            &cluster_path,
            serde_json::to_string(&spec.cluster).expect("a cluster serializes"),
        )
        .map_err(|e| RuntimeError::Io(cluster_path.display().to_string(), e))?;
        let log_path = spec.dir.join("observations.jsonl");
        let incarnation = incarnation(&spec.dir);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| RuntimeError::Io(log_path.display().to_string(), e))?;
        Ok(Core {
            me,
            cluster: spec.cluster.clone(),
            clock: RealClock::new(spec.epoch),
            timers: BTreeMap::new(),
            storage,
            rng: match spec.seed {
                Some(seed) => NodeRng::seeded(seed, me, incarnation),
                None => NodeRng::from_os(),
            },
            log: ObsLog {
                file,
                path: log_path,
            },
            stats: Stats {
                incarnation,
                ..Stats::default()
            },
        })
    }

    pub(crate) fn env<'a, M>(&'a mut self, wire: &'a mut dyn Wire<M>) -> RealEnv<'a, M, T> {
        RealEnv {
            me: self.me,
            cluster: &self.cluster,
            wire,
            clock: &self.clock,
            timers: &mut self.timers,
            storage: &mut self.storage,
            rng: &mut self.rng,
            log: &mut self.log,
            stats: &mut self.stats,
        }
    }

    /// How long the loop may wait for input: until the next timer, at most [`POLL`].
    pub(crate) fn wait(&self) -> Duration {
        let now = self.clock.now();
        let next = self.timers.values().min().copied();
        next.map_or(POLL, |at| at.saturating_duration_since(now).min(POLL))
            .max(Duration::from_micros(100))
    }

    /// Every timer due now, earliest first.
    pub(crate) fn fire_due<P: Protocol<Timer = T>>(
        &mut self,
        node: &mut P,
        wire: &mut dyn Wire<P::Msg>,
    ) {
        loop {
            let now = self.clock.now();
            let due = self
                .timers
                .iter()
                .filter(|(_, at)| **at <= now)
                .min_by_key(|(_, at)| **at)
                .map(|(t, _)| t.clone());
            let Some(timer) = due else { break };
            self.timers.remove(&timer);
            self.stats.timers += 1;
            node.on_timer(&mut self.env(wire), timer);
        }
    }
}

/// Runs node `spec.me` of a `P` cluster until `stop` is set. Every observation is in
/// `spec.dir/observations.jsonl` (appended: a restart continues the log, after a
/// `started` record). Datagrams (UDP) unless `spec.stream` asks for connections (TCP,
/// see [`stream`]).
pub fn run<P>(config: &P::Config, spec: &NodeSpec, stop: &AtomicBool) -> Result<Stats, RuntimeError>
where
    P: Protocol,
    P::Msg: Serialize + DeserializeOwned,
{
    check(spec)?;
    match spec.stream {
        None => run_datagrams::<P>(config, spec, stop),
        Some(timeout) => stream::run::<P>(config, spec, timeout, stop),
    }
}

fn run_datagrams<P>(
    config: &P::Config,
    spec: &NodeSpec,
    stop: &AtomicBool,
) -> Result<Stats, RuntimeError>
where
    P: Protocol,
    P::Msg: Serialize + DeserializeOwned,
{
    let me = spec.me;
    let mut core: Core<P::Timer> = Core::open(spec)?;
    let addr = spec.listen;
    let socket = UdpSocket::bind(addr).map_err(|e| RuntimeError::Io(format!("bind {addr}"), e))?;
    let mut wire = Udp {
        socket: &socket,
        addrs: &spec.addrs,
    };
    let mut node = P::new(config, me, &spec.cluster);
    core.env::<P::Msg>(&mut wire).observe(Observation::Started);
    node.on_start(&mut core.env(&mut wire));
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !stop.load(Ordering::SeqCst) {
        socket
            .set_read_timeout(Some(core.wait()))
            .map_err(|e| RuntimeError::Io("set_read_timeout".into(), e))?;
        // Wait for a datagram or the next timer; then take every datagram already here
        // before any timer that fell due: after a stall (a pause, a slow scheduler) the
        // messages that arrived during it are handled first, as they arrived first.
        let mut first = true;
        loop {
            let blocking = first;
            let got = if first {
                socket.recv_from(&mut buf)
            } else {
                socket
                    .set_nonblocking(true)
                    .and_then(|()| socket.recv_from(&mut buf))
            };
            first = false;
            match got {
                Ok((n, _)) => match postcard::from_bytes::<(u32, P::Msg)>(&buf[..n]) {
                    Ok((from, msg)) if spec.cluster.contains(NodeId(from)) => {
                        core.stats.received += 1;
                        node.on_message(&mut core.env(&mut wire), NodeId(from), msg);
                        continue;
                    }
                    _ => {
                        core.stats.dropped += 1;
                        continue;
                    }
                },
                // No datagram (in time); or a signal (the SIGSTOP and SIGCONT of a
                // pause) cut the wait short.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    // The wait ended: still take what is already here.
                    if blocking {
                        continue;
                    }
                }
                // ICMP "port unreachable" from an earlier send to a node that is down.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(RuntimeError::Io(format!("recv on {addr}"), e)),
            }
            break;
        }
        socket
            .set_nonblocking(false)
            .map_err(|e| RuntimeError::Io("set_nonblocking".into(), e))?;
        core.fire_due(&mut node, &mut wire);
    }
    Ok(core.stats)
}

/// What [`record_kill`] appended to a killed node's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillRecord {
    /// The `crashed` record appended.
    pub record: Record,
    /// Bytes of a partial last line (the process killed in the middle of a write)
    /// removed first: not a record, and it would have made the next line unreadable.
    pub cut: usize,
}

/// A node killed with SIGKILL cannot say so: whoever killed it appends its `crashed`
/// record to its log (`dir/observations.jsonl`), after the process is gone, so the
/// checkers see every belief it held end there. `killed_at` is the moment the kill was
/// sent, on the log's clock (nanoseconds since the cluster's epoch, as the node stamps
/// its records); the record is stamped with it, or with the node's last record if that
/// is later (the process was still writing after the signal left), so the log stays in
/// time order. Its monotonic reading is extrapolated from the node's last record.
pub fn record_kill(
    dir: &std::path::Path,
    me: NodeId,
    killed_at: SimTime,
) -> io::Result<KillRecord> {
    let path = dir.join("observations.jsonl");
    let text = std::fs::read_to_string(&path)?;
    // A line the process did not finish is not evidence: cut it, so the record starts
    // a line of its own.
    let whole = text.rfind('\n').map_or(0, |i| i + 1);
    let cut = text.len() - whole;
    let last = text[..whole]
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Record>(l).ok());
    let time = last.as_ref().map_or(killed_at, |l| l.time.max(killed_at));
    let mono = last.as_ref().map_or(LocalTime(time.0 as i64), |l| {
        LocalTime(l.mono.0 + (time.0 - l.time.0) as i64)
    });
    let record = Record::new(
        time,
        me,
        mono,
        LocalTime(time.0 as i64),
        Observation::Crashed,
    );
    let file = OpenOptions::new().write(true).open(&path)?;
    file.set_len(whole as u64)?;
    let mut file = OpenOptions::new().append(true).open(&path)?;
    let mut line = serde_json::to_string(&record).expect("records serialize");
    line.push('\n');
    file.write_all(line.as_bytes())?;
    Ok(KillRecord { record, cut })
}

/// `127.0.0.1:<base + i>` for each of `n` nodes.
pub fn loopback_addrs(base_port: u16, n: usize) -> Result<Vec<SocketAddr>, RuntimeError> {
    (0..n)
        .map(|i| {
            let port = u16::try_from(usize::from(base_port) + i).map_err(|_| {
                RuntimeError::Spec(format!("ports {base_port}.. run past 65535 for {n} nodes"))
            })?;
            Ok(SocketAddr::from(([127, 0, 0, 1], port)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_and_one_address_per_node() {
        let cluster = Cluster::uniform("server", 3);
        let mut spec = NodeSpec {
            me: NodeId(0),
            cluster,
            addrs: loopback_addrs(40000, 3).unwrap(),
            listen: "127.0.0.1:40000".parse().unwrap(),
            dir: PathBuf::from("unused"),
            seed: Some(1),
            epoch: SystemTime::UNIX_EPOCH,
            protocol: "raft".into(),
            stream: None,
        };
        assert!(check(&spec).is_ok());
        spec.addrs[1] = "10.0.0.1:4000".parse().unwrap();
        assert!(check(&spec)
            .unwrap_err()
            .to_string()
            .contains("not a loopback"));
        spec.addrs.pop();
        assert!(check(&spec)
            .unwrap_err()
            .to_string()
            .contains("2 addresses"));
        assert!(loopback_addrs(65535, 2).is_err());
    }

    /// The `crashed` record of a killed node goes after everything it wrote: at the
    /// kill, or at its last record if that is later; a line it did not finish is cut.
    #[test]
    fn a_kill_is_recorded_after_the_nodes_last_record() {
        let dir = std::env::temp_dir().join(format!("tenure-runtime-kill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ms = |n: u64| n * 1_000_000;
        let at = |t: u64, obs| {
            Record::new(
                SimTime(ms(t)),
                NodeId(2),
                LocalTime(ms(t) as i64 + 5),
                LocalTime(ms(t) as i64),
                obs,
            )
        };
        let write = |partial: &str| {
            let mut text: String = [
                at(10, Observation::Started),
                at(20, Observation::Leader { term: 3 }),
            ]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
            text.push_str(partial);
            std::fs::write(dir.join("observations.jsonl"), text).unwrap();
        };
        let log = || -> Vec<Record> {
            std::fs::read_to_string(dir.join("observations.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).expect("every line a record"))
                .collect()
        };

        // Killed at 30ms: the record says 30ms, its monotonic reading extrapolated.
        write("");
        let k = record_kill(&dir, NodeId(2), SimTime(ms(30))).unwrap();
        assert_eq!(k.cut, 0);
        assert_eq!(k.record, {
            let mut crashed = at(30, Observation::Crashed);
            crashed.mono = LocalTime(ms(30) as i64 + 5);
            crashed
        });
        assert_eq!(log().last(), Some(&k.record));

        // The kill left at 15ms, the node still wrote at 20ms, and died in a write.
        write("{\"time\":2100");
        let k = record_kill(&dir, NodeId(2), SimTime(ms(15))).unwrap();
        assert_eq!(k.cut, "{\"time\":2100".len());
        assert_eq!(
            k.record.time,
            SimTime(ms(20)),
            "never before the node's last record"
        );
        let times: Vec<SimTime> = log().iter().map(|r| r.time).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert_eq!(log().len(), 3);
        assert_eq!(log()[2].obs, Observation::Crashed);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    struct NoWire;
    impl Wire<u8> for NoWire {
        fn send(&mut self, _: NodeId, _: NodeId, _: &u8) -> bool {
            false
        }
    }

    /// A start of node 1 in `dir` (as `run` starts it: `started`, then the protocol's
    /// draws): its incarnation and its first draws.
    fn a_life(dir: &std::path::Path) -> (u32, Vec<u64>) {
        let spec = NodeSpec {
            me: NodeId(1),
            cluster: Cluster::uniform("server", 3),
            addrs: loopback_addrs(40000, 3).unwrap(),
            listen: "127.0.0.1:40001".parse().unwrap(),
            dir: dir.to_path_buf(),
            seed: Some(7),
            epoch: SystemTime::UNIX_EPOCH,
            protocol: "raft".into(),
            stream: None,
        };
        let mut core: Core<u8> = Core::open(&spec).unwrap();
        let mut wire = NoWire;
        let mut env = core.env(&mut wire);
        env.observe(Observation::Started);
        let draws = (0..4).map(|_| env.next_u64()).collect();
        (core.stats.incarnation, draws)
    }

    /// A restarted node draws from a stream of its own (before: the same seed every
    /// life, so a ZooKeeper client's protected-mode GUID was the same in each), and the
    /// same (seed, node, incarnation) draws the same.
    #[test]
    fn each_incarnation_draws_its_own_stream() {
        let scratch = |name: &str| {
            let d = std::env::temp_dir().join(format!(
                "tenure-runtime-incarnation-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&d);
            d
        };
        let (a, b) = (scratch("a"), scratch("b"));
        let first = a_life(&a);
        let second = a_life(&a);
        let third = a_life(&a);
        assert_eq!((first.0, second.0, third.0), (0, 1, 2));
        assert_ne!(first.1, second.1, "a restart draws afresh");
        assert_ne!(second.1, third.1);
        assert_ne!(first.1, third.1);
        // Another directory, another run of the same node: the same draws, life by life.
        assert_eq!(a_life(&b), first);
        assert_eq!(a_life(&b), second);
        let mut rng = NodeRng::seeded(7, NodeId(1), 1);
        assert_eq!((0..4).map(|_| rng.next_u64()).collect::<Vec<_>>(), second.1);
        // Another node, another seed: other draws.
        assert_ne!(
            NodeRng::seeded(7, NodeId(2), 1).next_u64(),
            NodeRng::seeded(7, NodeId(1), 1).next_u64()
        );
        assert_ne!(
            NodeRng::seeded(8, NodeId(1), 1).next_u64(),
            NodeRng::seeded(7, NodeId(1), 1).next_u64()
        );
        for d in [a, b] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
