//! `tenure real`: the zoo's lock clients against real servers on loopback.
//!
//! A scenario's server nodes are real server processes (`redis-server`, `etcd` or a
//! standalone ZooKeeper, one per server node, on free ports of 127.0.0.1 with a data
//! directory of its own under the system's temporary directory); its other nodes (the lock clients and the protected
//! storage) are the zoo's own state machines, unchanged, each in a thread of this
//! process with real clocks and timers ([`node`]). A client's requests to a server are
//! spoken to the real server on a connection of the client's own ([`Backend`]; for
//! Redis [`redis_server`], for etcd [`etcd_server`], for ZooKeeper [`zk_server`]), and
//! the answers come back as the model server's replies (a watch event, or a reply read
//! off a connection by a thread of its own, through [`node::Later`]).
//! Every node's observations go to `OUT/n<K>/observations.jsonl` in tenure-runtime's
//! format (what `tenure cluster` writes and `tenure check-trace` reads), the servers'
//! logs to `OUT/n<K>/server.log`, and the faults applied to `OUT/schedule.jsonl`.
//!
//! Faults ([`unsupported`] says which are refused, and why, before anything starts):
//! a server's `pause` is SIGSTOP and SIGCONT of its process group, its `crash` SIGKILL,
//! its `restart` the same command again (same port, same data directory); a client's
//! `pause` freezes its thread's loop (nothing handled, messages and timers pile up, as
//! SIGSTOP does to a process), its `crash` ends the thread (state lost; the `crashed`
//! record written for it) and its `restart` starts it again on the same directory.
//! Partitions, isolations, cuts and one-way faults block links: what crosses a blocked
//! link (a request to a server, its answer, a message to the storage) is dropped, as the
//! simulator's datagram network drops it, until a `heal`. A server's `clock-jump` steps
//! its wall clock through tenure's clock shim ([`clock`]).
//!
//! **Not deterministic.** Real processes, sockets and clocks: the seed gives each start
//! of each node its random stream, and nothing else. What makes a run reviewable is
//! what it keeps in `OUT`.
//!
//! Cleanup: every server process and temporary directory is owned by a value that
//! kills or removes it when dropped ([`servers`]), so they go on every way out,
//! panics included; a server also dies with this process if it is killed
//! (`setpriv --pdeathsig KILL`).

// Real processes and real time: what this crate is for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

pub mod clock;
pub mod etcd_server;
pub mod node;
pub mod redis_server;
pub mod servers;
pub mod zk_server;

use nix::sys::signal::Signal;
use node::{Input, NodeStart, Router, RunClock};
use servers::{ServerProc, TempDir};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use tenure_core::{Cluster, Configurable, LocalTime, NodeId, Observation, Record};
use tenure_scenario::{Fault, NodeSel, Scenario};

/// How a node's requests reach a real server: a connection per (client, server), and
/// one request at a time on it.
pub trait Backend: Send + Sync + 'static {
    type Msg: Clone + Send + 'static;
    type Conn: Send;
    /// Opens a connection to server node `server`.
    fn connect(&self, server: NodeId) -> Result<Self::Conn, String>;
    /// Speaks one request and gives the model's reply, if the request has one. `Err`:
    /// the connection failed (the request is lost; the next opens a new one). An
    /// answer that comes later (a watch event; a reply read by a thread of the
    /// connection's own) goes through `later`.
    fn request(
        &self,
        conn: &mut Self::Conn,
        msg: Self::Msg,
        later: &node::Later<Self::Msg>,
    ) -> Result<Option<Self::Msg>, String>;
}

/// Why a run did not happen or did not finish as the scenario asked.
#[derive(Debug)]
pub enum RealError {
    /// The scenario cannot be run for real (a fault, a protocol, a variant), a server
    /// binary is missing, or the output directory exists: exit 2.
    BadInput(String),
    /// Something broke while running: exit 3.
    Internal(String),
}

impl std::fmt::Display for RealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RealError::BadInput(m) | RealError::Internal(m) => write!(f, "{m}"),
        }
    }
}

/// What a finished run left for judging.
#[derive(Debug)]
pub struct Finished {
    /// Every node's directory (observations.jsonl, cluster.json), for the verdict.
    pub dirs: Vec<PathBuf>,
    /// Faults that should have been applied and were not, and nodes or servers that
    /// ended on their own: the run was not the scenario's.
    pub errors: usize,
    pub interrupted: bool,
    /// What the run did, a line each (also written to stderr unless quiet).
    pub notes: Vec<String>,
}

/// How to run.
pub struct Options<'a> {
    /// Must not exist; created.
    pub out: &'a Path,
    /// Say nothing on stderr while running.
    pub quiet: bool,
    /// Set from outside (Ctrl-C): end the run early, cleanly.
    pub stop: &'a AtomicBool,
}

/// The protocols `tenure real` runs, and which server program each needs.
pub const PROTOCOLS: &[(&str, &str)] = &[
    ("redis-lock", redis_server::PACKAGE),
    ("fencing", redis_server::PACKAGE),
    ("redlock", redis_server::PACKAGE),
    ("etcd-lock", etcd_server::PACKAGE),
    ("zookeeper", zk_server::PACKAGE),
];

/// Where the server program of `protocol` is, or the error naming its package.
fn server_program(protocol: &str) -> Result<PathBuf, String> {
    match protocol {
        "etcd-lock" => servers::on_path(etcd_server::PROGRAM)
            .ok_or_else(|| missing(etcd_server::PROGRAM, etcd_server::PACKAGE)),
        "zookeeper" => zk_server::java(),
        _ => servers::on_path(redis_server::PROGRAM)
            .ok_or_else(|| missing(redis_server::PROGRAM, redis_server::PACKAGE)),
    }
}

/// Why `fault` cannot be applied to a real run, if it cannot.
pub fn unsupported(fault: &Fault) -> Option<&'static str> {
    match fault {
        Fault::Pause { .. }
        | Fault::Crash { .. }
        | Fault::Restart { .. }
        | Fault::Partition { .. }
        | Fault::Isolate { .. }
        | Fault::Cut { .. }
        | Fault::OneWay { .. }
        | Fault::Bridge { .. }
        | Fault::Heal {}
        | Fault::Network { .. }
        | Fault::SlowLink { .. } => None,
        Fault::ClockJump { .. } => None,
        Fault::ClockDrift { .. } | Fault::ClockStall { .. } | Fault::ClockSlew { .. } => Some(
            "tenure's clock shim steps a real server's wall clock (clock-jump) and nothing else: no drift, stall or slew",
        ),
        Fault::PowerLoss { .. } => Some(
            "only the whole machine can lose power; killing a process keeps its unsynced writes",
        ),
        Fault::CrashPoint { .. } => {
            Some("a crash point needs the simulator's hooks between a handler's effects")
        }
        Fault::DiskStall { .. } | Fault::DiskError { .. } => {
            Some("disk faults need the simulator's disk")
        }
        Fault::Slow { .. } => Some("handler times are the real machine's"),
        Fault::Request { .. } => Some("requests from outside are not delivered to real nodes"),
        Fault::Byzantine { .. } => Some("real servers do not lie: Byzantine nodes are the simulator's"),
    }
}

/// The variants of a protocol that real servers cannot be: why, if `variant` is one.
fn unsupported_variant(protocol: &str, variant: &str) -> Option<&'static str> {
    match (protocol, variant) {
        (_, "monotonic-expiry") => Some(
            "real Redis times a key's TTL on its wall clock (keyIsExpired in src/db.c); the monotonic-expiry contrast exists only in the model",
        ),
        _ => None,
    }
}

/// Checks that `scenario` can run for real, before anything starts: its protocol and
/// variant, its faults, and the server program on PATH. `Err`: the message (exit 2).
pub fn check(scenario: &Scenario) -> Result<(), String> {
    let name = scenario.protocol.name.as_str();
    let Some((_, package)) = PROTOCOLS.iter().find(|(p, _)| *p == name) else {
        return Err(format!(
            "{}: tenure real runs {} against real servers; `{name}` is not one of them yet",
            scenario.file,
            PROTOCOLS
                .iter()
                .map(|(p, _)| *p)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    if let Some(why) = unsupported_variant(name, &scenario.protocol.variant) {
        return Err(scenario
            .error_at(
                "protocol.variant",
                format!(
                    "`{}` cannot run against real servers: {why}",
                    scenario.protocol.variant
                ),
            )
            .to_string());
    }
    for (i, e) in scenario.faults.iter().enumerate() {
        if let Some(why) = unsupported(&e.fault) {
            return Err(scenario
                .error_at(
                    &format!("fault[{i}]"),
                    format!(
                        "`{}` cannot be applied to a real run: {why}",
                        e.fault.kind()
                    ),
                )
                .to_string());
        }
    }
    let _ = package;
    if name == "etcd-lock" || name == "zookeeper" {
        no_clock_jumps(scenario).map_err(|e| e.to_string())?;
    }
    server_program(name)?;
    Ok(())
}

/// The error for a server program that is not installed.
pub fn missing(program: &str, package: &str) -> String {
    format!(
        "`{program}` is not on PATH: tenure real starts the real server; install Debian's package `{package}` (apt-get install -y {package}), then stop the service it starts (tenure starts its own on free loopback ports)"
    )
}

/// Runs `scenario` for real (see the crate's docs). The verdict is the caller's:
/// judge `Finished::dirs`.
pub fn run(scenario: &Scenario, opts: &Options) -> Result<Finished, RealError> {
    check(scenario).map_err(RealError::BadInput)?;
    use tenure_protocols::{fencing::Fencing, redis_lock::RedisLock, redlock::Redlock};
    match scenario.protocol.name.as_str() {
        "redis-lock" => run_redis::<RedisLock>(scenario, opts, false),
        "fencing" => run_redis::<Fencing>(scenario, opts, true),
        "redlock" => run_redis::<Redlock>(scenario, opts, false),
        "etcd-lock" => run_etcd(scenario, opts),
        "zookeeper" => run_zk(scenario, opts),
        other => Err(RealError::BadInput(format!(
            "`{other}`: not a real protocol"
        ))),
    }
}

fn configure<P: Configurable>(scenario: &Scenario) -> Result<(Cluster, P::Config), RealError> {
    let bad = |e: String| RealError::BadInput(e);
    let cluster = scenario
        .resolve_cluster(P::info())
        .map_err(|e| bad(e.to_string()))?;
    let params: P::Params = serde_json::from_value(scenario.protocol.params.clone())
        .map_err(|e| bad(format!("{}: [protocol.params]: {e}", scenario.file)))?;
    let config = P::configure_named(params, &scenario.protocol.variant, &cluster)
        .map_err(|e| bad(format!("{}: {e}", scenario.file)))?;
    Ok((cluster, config))
}

fn run_redis<P>(scenario: &Scenario, opts: &Options, tokens: bool) -> Result<Finished, RealError>
where
    P: Configurable<Msg = tenure_protocols::redis_lock::Msg> + 'static,
    P::Config: Send + Sync,
{
    let (cluster, config) = configure::<P>(scenario)?;
    let program = servers::on_path(redis_server::PROGRAM).ok_or_else(|| {
        RealError::BadInput(missing(redis_server::PROGRAM, redis_server::PACKAGE))
    })?;
    let server_nodes: Vec<NodeId> = cluster.with_role("server").collect();
    let mut ports = std::collections::BTreeMap::new();
    for n in &server_nodes {
        let p = servers::free_port()
            .map_err(|e| RealError::Internal(format!("no free loopback port: {e}")))?;
        ports.insert(*n, p);
    }
    // A server whose wall clock is stepped runs under tenure's clock shim.
    let mut jumped = BTreeSet::new();
    for (i, e) in scenario.faults.iter().enumerate() {
        if let Fault::ClockJump { node, .. } = &e.fault {
            match node {
                NodeSel::Id(n) if ports.contains_key(&NodeId(*n)) => {
                    jumped.insert(NodeId(*n));
                }
                _ => {
                    return Err(RealError::BadInput(
                        scenario
                            .error_at(
                                &format!("fault[{i}]"),
                                "`clock-jump` is applied to a real server only (named by its id): the clients are threads of tenure and share this machine's clock",
                            )
                            .to_string(),
                    ))
                }
            }
        }
    }
    let shim = if jumped.is_empty() {
        None
    } else {
        Some(clock::Shim::build().map_err(RealError::BadInput)?)
    };
    let spec = ServerSpec {
        program,
        args: Box::new(move |port, dir| redis_server::args(port, dir, tokens)),
        ready: Box::new(redis_server::ready),
        what: if tokens {
            "redis-server (appendonly, appendfsync always: the token counter is durable)"
        } else {
            "redis-server (no persistence: --save \"\" --appendonly no)"
        },
        scrub: &[],
    };
    let backend = Arc::new(redis_server::Redis {
        ports: ports.clone(),
        tokens,
    });
    drive::<P, _>(
        scenario,
        opts,
        cluster,
        Arc::new(config),
        backend,
        &ports,
        spec,
        shim.as_ref().map(|s| (s, &jumped)),
    )
}

fn no_clock_jumps(scenario: &Scenario) -> Result<(), RealError> {
    for (i, e) in scenario.faults.iter().enumerate() {
        if let Fault::ClockJump { .. } = &e.fault {
            return Err(RealError::BadInput(
                scenario
                    .error_at(
                        &format!("fault[{i}]"),
                        format!(
                            "`clock-jump` is applied to redis-server only: {} times leases and sessions on its monotonic clock",
                            scenario.protocol.name
                        ),
                    )
                    .to_string(),
            ));
        }
    }
    Ok(())
}

fn free_ports(nodes: &[NodeId]) -> Result<std::collections::BTreeMap<NodeId, u16>, RealError> {
    let mut ports = std::collections::BTreeMap::new();
    for n in nodes {
        let p = servers::free_port()
            .map_err(|e| RealError::Internal(format!("no free loopback port: {e}")))?;
        ports.insert(*n, p);
    }
    Ok(ports)
}

fn run_etcd(scenario: &Scenario, opts: &Options) -> Result<Finished, RealError> {
    use tenure_protocols::etcd_lock::EtcdLock;
    let (cluster, config) = configure::<EtcdLock>(scenario)?;
    no_clock_jumps(scenario)?;
    if config.ttl.subsec_nanos() != 0 || config.ttl < Duration::from_secs(2) {
        return Err(RealError::BadInput(
            scenario
                .error_at(
                    "protocol.params.ttl",
                    format!(
                        "{}: etcd grants leases in whole seconds, at least 2s (its minimum TTL with the default election timeout is 1.5s, rounded up)",
                        tenure_core::format_duration(config.ttl)
                    ),
                )
                .to_string(),
        ));
    }
    let program = server_program("etcd-lock").map_err(RealError::BadInput)?;
    let server_nodes: Vec<NodeId> = cluster.with_role("server").collect();
    let ports = free_ports(&server_nodes)?;
    let peers: std::collections::BTreeMap<u16, (NodeId, u16)> = free_ports(&server_nodes)?
        .into_iter()
        .map(|(n, peer)| (ports[&n], (n, peer)))
        .collect();
    let spec = ServerSpec {
        program,
        args: Box::new(move |port, dir| {
            let (n, peer) = peers[&port];
            etcd_server::args(&format!("n{}", n.0), port, peer, dir)
        }),
        ready: Box::new(etcd_server::ready),
        what: "etcd (a one-member cluster, client and peer URLs on 127.0.0.1)",
        // etcd reads every flag from ETCD_<FLAG> too (ETCD_LISTEN_METRICS_URLS, ...).
        scrub: &["ETCD_"],
    };
    let backend = Arc::new(etcd_server::Etcd {
        ports: ports.clone(),
    });
    drive::<EtcdLock, _>(
        scenario,
        opts,
        cluster,
        Arc::new(config),
        backend,
        &ports,
        spec,
        None,
    )
}

fn run_zk(scenario: &Scenario, opts: &Options) -> Result<Finished, RealError> {
    use tenure_protocols::zookeeper::ZooKeeper;
    let (cluster, config) = configure::<ZooKeeper>(scenario)?;
    no_clock_jumps(scenario)?;
    let java = server_program("zookeeper").map_err(RealError::BadInput)?;
    let server_nodes: Vec<NodeId> = cluster.with_role("server").collect();
    let ports = free_ports(&server_nodes)?;
    let spec = ServerSpec {
        program: java,
        args: Box::new(zk_server::args),
        ready: Box::new(zk_server::ready),
        what: "ZooKeeper 3.8 standalone (java, 127.0.0.1 only, no AdminServer)",
        // Options the JVM takes from the environment (a JMX port, ...), and
        // ZooKeeper's own scripts' variables.
        scrub: &[
            "JAVA_TOOL_OPTIONS",
            "JDK_JAVA_OPTIONS",
            "_JAVA_OPTIONS",
            "JVMFLAGS",
            "SERVER_JVMFLAGS",
            "ZOO",
        ],
    };
    let backend = Arc::new(zk_server::Zk {
        ports: ports.clone(),
    });
    drive::<ZooKeeper, _>(
        scenario,
        opts,
        cluster,
        Arc::new(config),
        backend,
        &ports,
        spec,
        None,
    )
}

/// A server's command-line arguments from its port and data directory.
type ArgsFn = Box<dyn Fn(u16, &Path) -> Vec<std::ffi::OsString>>;

/// How to start one kind of server.
struct ServerSpec {
    program: PathBuf,
    args: ArgsFn,
    ready: Box<dyn Fn(u16) -> bool>,
    what: &'static str,
    /// Environment variables not passed on to the server (by name prefix).
    scrub: &'static [&'static str],
}

/// A running server node: its process and its data directory (removed when dropped,
/// after the process: fields drop in order).
struct Server {
    node: NodeId,
    port: u16,
    proc: ServerProc,
    _data: TempDir,
    log: node::Log,
    paused_until: Option<Duration>,
    up: bool,
    /// Its wall clock's offset, when it runs under the clock shim.
    offset: Option<clock::Offset>,
}

/// A running (or crashed) client or storage node.
struct Local<M> {
    node: NodeId,
    tx: Option<Sender<Input<M>>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

/// How long a server may take to answer after it is started.
const SERVER_BOOT: Duration = Duration::from_secs(20);

#[allow(clippy::too_many_arguments)]
fn drive<P, B>(
    scenario: &Scenario,
    opts: &Options,
    cluster: Cluster,
    config: Arc<P::Config>,
    backend: Arc<B>,
    ports: &std::collections::BTreeMap<NodeId, u16>,
    spec: ServerSpec,
    shim: Option<(&clock::Shim, &BTreeSet<NodeId>)>,
) -> Result<Finished, RealError>
where
    P: Configurable + 'static,
    P::Config: Send + Sync,
    B: Backend<Msg = P::Msg>,
    P::Msg: Send + 'static,
{
    let out = opts.out;
    if out.exists() {
        return Err(RealError::BadInput(format!(
            "--out {}: exists; a real run never writes over an earlier one: name a new folder",
            out.display()
        )));
    }
    let io =
        |what: &Path, e: std::io::Error| RealError::Internal(format!("{}: {e}", what.display()));
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let dir = |n: NodeId| out.join(format!("n{}", n.0));
    let cluster_json = serde_json::to_string(&cluster).expect("a cluster serializes");
    for n in cluster.nodes() {
        let d = dir(n);
        std::fs::create_dir_all(&d).map_err(|e| io(&d, e))?;
        std::fs::write(d.join("cluster.json"), &cluster_json).map_err(|e| io(&d, e))?;
    }
    let _ = std::fs::write(out.join("scenario.toml"), &scenario.source);
    let mut notes: Vec<String> = Vec::new();
    let quiet = opts.quiet;
    #[allow(clippy::disallowed_methods)]
    let wall0 = SystemTime::now();
    let clock = RunClock { epoch: wall0 };
    let say = |notes: &mut Vec<String>, line: String| {
        if !quiet {
            eprintln!("tenure real: {line}");
        }
        notes.push(line);
    };
    say(
        &mut notes,
        format!(
            "{}/{}: {} server(s) as {}, {} other node(s) as threads; {} of real time, {} fault(s); kept in {} (not deterministic: real processes, sockets and clocks; the seed gives each node start its random stream, nothing more)",
            scenario.protocol.name,
            scenario.protocol.variant,
            ports.len(),
            spec.what,
            cluster.size() - ports.len(),
            tenure_core::format_duration(scenario.duration),
            scenario.faults.len(),
            out.display()
        ),
    );
    let datagrams = match scenario.network.mode {
        Some(mode) => mode == tenure_scenario::NetworkMode::Datagram,
        None => P::transport() == tenure_core::Transport::Datagram,
    };
    say(
        &mut notes,
        format!(
            "the scenario's network is applied between the nodes' threads and their connections: delays drawn from its distribution ({}) on top of loopback's own{}",
            scenario.network.latency.name(),
            if datagrams {
                ", each message lost or duplicated on its own as it says"
            } else {
                "; stream mode: nothing lost or duplicated (TCP), connections FIFO"
            }
        ),
    );
    // The servers, each answering before anything else starts.
    let mut servers: Vec<Server> = Vec::new();
    for (&node, &port) in ports {
        let data = TempDir::new(&format!("n{}", node.0))
            .map_err(|e| RealError::Internal(format!("cannot make a temporary directory: {e}")))?;
        let args = (spec.args)(port, data.path());
        let d = dir(node);
        let mut proc = ServerProc::new(
            format!("n{}", node.0),
            spec.program.clone(),
            args,
            d.join("server.log"),
        );
        proc.scrub_env(spec.scrub);
        let offset = match shim {
            Some((shim, jumped)) if jumped.contains(&node) => {
                let file = data.path().join("clock-offset");
                let offset = clock::Offset::create(&file).map_err(|e| io(&file, e))?;
                proc.env("LD_PRELOAD", shim.library());
                proc.env(clock::OFFSET_ENV, &file);
                Some(offset)
            }
            _ => None,
        };
        proc.spawn().map_err(RealError::Internal)?;
        let log = node::Log::open(&d).map_err(|e| io(&d, e))?;
        servers.push(Server {
            node,
            port,
            proc,
            _data: data,
            log,
            paused_until: None,
            up: true,
            offset,
        });
        let s = servers.last_mut().expect("pushed");
        let ready = &spec.ready;
        s.proc
            .wait_ready(SERVER_BOOT, || ready(port))
            .map_err(RealError::Internal)?;
        let rec = stamp(clock, node, Observation::Started);
        s.log.write(&rec);
        say(
            &mut notes,
            format!(
                "n{} is {} pid {} on 127.0.0.1:{port}",
                node.0,
                spec.program.display(),
                s.proc.pid().unwrap_or(0)
            ),
        );
    }
    let router = Arc::new(Router::<P::Msg>::new(
        cluster.size(),
        ports.keys().copied().collect(),
        node::Net::new(&scenario.network, datagrams, scenario.seed),
    ));
    let seen: Arc<Mutex<Vec<Record>>> = Arc::new(Mutex::new(Vec::new()));
    let protocol = P::info().name;
    let start_local = |node: NodeId| -> Result<Local<P::Msg>, RealError> {
        let (tx, rx) = channel();
        let start = NodeStart::<B> {
            me: node,
            cluster: cluster.clone(),
            dir: dir(node),
            protocol,
            seed: scenario.seed,
            incarnation: tenure_runtime::incarnation(&dir(node)),
            clock,
            router: router.clone(),
            backend: backend.clone(),
            seen: seen.clone(),
        };
        let config = config.clone();
        let me_tx = tx.clone();
        let thread = std::thread::Builder::new()
            .name(format!("n{}", node.0))
            .spawn(move || node::run_node::<P, B>(&config, start, rx, me_tx))
            .map_err(|e| RealError::Internal(format!("cannot start n{}: {e}", node.0)))?;
        if let Ok(mut inboxes) = router.inboxes.lock() {
            inboxes[node.index()] = Some(tx.clone());
        }
        Ok(Local {
            node,
            tx: Some(tx),
            thread: Some(thread),
        })
    };
    let mut locals: Vec<Local<P::Msg>> = Vec::new();
    for n in cluster.nodes().filter(|n| !ports.contains_key(n)) {
        locals.push(start_local(n)?);
    }
    let schedule_path = out.join("schedule.jsonl");
    let mut schedule = std::fs::File::create(&schedule_path).map_err(|e| io(&schedule_path, e))?;
    let started = Instant::now();
    let mut errors = 0usize;
    let mut events: std::collections::VecDeque<_> = scenario.faults.iter().collect();
    while started.elapsed() < scenario.duration && !opts.stop.load(Ordering::SeqCst) {
        let now = started.elapsed();
        // Server pauses that end now.
        for s in servers.iter_mut() {
            if s.paused_until.is_some_and(|t| t <= now) {
                s.paused_until = None;
                if let Err(e) = s.proc.signal(Signal::SIGCONT) {
                    errors += 1;
                    say(
                        &mut notes,
                        format!("error: the end of n{}'s pause: {e}", s.node.0),
                    );
                }
            }
        }
        // A server that exited on its own is not the scenario's run.
        for s in servers.iter_mut() {
            if s.up && !s.proc.alive() {
                s.up = false;
                errors += 1;
                let rec = stamp(clock, s.node, Observation::Crashed);
                s.log.write(&rec);
                say(
                    &mut notes,
                    format!("error: n{} exited on its own", s.node.0),
                );
            }
        }
        while events.front().is_some_and(|e| e.at <= now) {
            let e = events.pop_front().expect("checked");
            let resolve = |sel: &NodeSel| match sel {
                NodeSel::Id(n) => Some(NodeId(*n)),
                sel => sel.aim().and_then(|aim| {
                    let mut records = seen.lock().map(|s| s.clone()).unwrap_or_default();
                    records.sort_by_key(|r| r.time);
                    let mut beliefs = tenure_core::Beliefs::new(cluster.size());
                    for r in &records {
                        beliefs.apply(r.node, &r.obs);
                    }
                    let up = |n: NodeId| {
                        locals.iter().any(|l| l.node == n && l.tx.is_some())
                            || servers.iter().any(|s| s.node == n && s.up)
                    };
                    beliefs.select(aim, up).map(|s| s.node)
                }),
            };
            let target = e.fault.node().and_then(resolve);
            let applied: Result<String, String> = match (target, &e.fault) {
                (
                    _,
                    Fault::Partition { .. }
                    | Fault::Cut { .. }
                    | Fault::OneWay { .. }
                    | Fault::Heal {},
                )
                | (Some(_), Fault::Isolate { .. } | Fault::Bridge { .. }) => {
                    match router.net.lock() {
                        Ok(mut net) => {
                            block(&mut net.blocked, &e.fault, target, cluster.size() as u32);
                            Ok(format!("{} directed links blocked", net.blocked.len()))
                        }
                        Err(_) => Err("the link table failed".into()),
                    }
                }
                (
                    _,
                    Fault::Network {
                        latency,
                        loss,
                        duplicate,
                    },
                ) => match router.net.lock() {
                    Ok(mut net) => {
                        net.set_defaults(latency.as_ref(), *loss, *duplicate);
                        let mut changed = Vec::new();
                        if let Some(l) = latency {
                            changed.push(format!(
                                "latency {} up to {}",
                                l.name(),
                                tenure_core::format_duration(l.max())
                            ));
                        }
                        if let Some(l) = loss {
                            changed.push(format!("loss {l}"));
                        }
                        if let Some(d) = duplicate {
                            changed.push(format!("duplicate {d}"));
                        }
                        Ok(format!("the network from now on: {}", changed.join(", ")))
                    }
                    Err(_) => Err("the link table failed".into()),
                },
                (
                    Some(to),
                    Fault::SlowLink {
                        from,
                        latency,
                        duration,
                        ..
                    },
                ) => match resolve(from) {
                    None => Ok("skipped: no node at the link's other end".into()),
                    Some(from) => match router.net.lock() {
                        Ok(mut net) => {
                            net.slow_link(from, to, latency.clone(), Instant::now() + *duration);
                            Ok(format!(
                                "the link n{} -> n{} slow ({}) for {}",
                                from.0,
                                to.0,
                                latency.name(),
                                tenure_core::format_duration(*duration)
                            ))
                        }
                        Err(_) => Err("the link table failed".into()),
                    },
                },
                (None, _) => Ok("skipped: no node (nobody of that role at that moment)".into()),
                (Some(n), fault) => {
                    if let Some(s) = servers.iter_mut().find(|s| s.node == n) {
                        server_fault(s, fault, now, clock, &spec)
                    } else if let Some(l) = locals.iter_mut().find(|l| l.node == n) {
                        match fault {
                            Fault::Pause { duration, .. } => match &l.tx {
                                Some(tx) => tx
                                    .send(Input::Pause(*duration))
                                    .map(|()| {
                                        format!(
                                            "n{} (a thread) frozen for {}",
                                            n.0,
                                            tenure_core::format_duration(*duration)
                                        )
                                    })
                                    .map_err(|_| format!("n{} has ended", n.0)),
                                None => Ok(format!("skipped: n{} is down", n.0)),
                            },
                            Fault::Crash { .. } => match l.tx.take() {
                                Some(tx) => {
                                    if let Ok(mut inboxes) = router.inboxes.lock() {
                                        inboxes[n.index()] = None;
                                    }
                                    let _ = tx.send(Input::Crash);
                                    let ended = l.thread.take().map(|t| t.join());
                                    let rec = stamp(clock, n, Observation::Crashed);
                                    let logged = node::Log::open(&dir(n))
                                        .map(|mut log| log.write(&rec))
                                        .map_err(|e| format!("n{}: {e}", n.0));
                                    if let Ok(mut s) = seen.lock() {
                                        s.push(rec);
                                    }
                                    match (ended, logged) {
                                        (Some(Ok(Err(e))), _) | (_, Err(e)) => Err(e),
                                        _ => Ok(format!(
                                            "n{} crashed (its thread ended, state lost)",
                                            n.0
                                        )),
                                    }
                                }
                                None => Ok(format!("skipped: n{} is down", n.0)),
                            },
                            Fault::Restart { .. } if l.tx.is_none() => match start_local(n) {
                                Ok(new) => {
                                    *l = new;
                                    Ok(format!("n{} restarted", n.0))
                                }
                                Err(e) => Err(e.to_string()),
                            },
                            Fault::Restart { .. } => Ok(format!("skipped: n{} is up", n.0)),
                            other => Err(format!("`{}` is not applied to a client", other.kind())),
                        }
                    } else {
                        Err(format!("n{} is not in the cluster", n.0))
                    }
                }
            };
            let mut line = serde_json::json!({
                "planned_at": tenure_core::format_duration(e.at),
                "applied_at": format!("{:.3}s", started.elapsed().as_secs_f64()),
                "applied_at_epoch_ns": clock.wall(),
                "fault": e.fault.kind(),
                "node": target.map(|n| n.0),
            });
            match &applied {
                Ok(what) if what.starts_with("skipped") => line["skipped"] = what.as_str().into(),
                Ok(what) => line["applied"] = what.as_str().into(),
                Err(why) => {
                    errors += 1;
                    line["error"] = why.as_str().into();
                }
            }
            let _ = writeln!(schedule, "{line}");
            let at = started.elapsed().as_secs_f64();
            match applied {
                Ok(what) => say(&mut notes, format!("{at:.3}s {}: {what}", e.fault.kind())),
                Err(why) => say(
                    &mut notes,
                    format!("error at {at:.3}s: {} not applied: {why}", e.fault.kind()),
                ),
            }
        }
        let next = events
            .front()
            .map(|e| e.at)
            .into_iter()
            .chain(servers.iter().filter_map(|s| s.paused_until))
            .chain([scenario.duration])
            .min()
            .unwrap_or(scenario.duration);
        std::thread::sleep(
            next.saturating_sub(started.elapsed())
                .min(Duration::from_millis(20)),
        );
    }
    let interrupted = opts.stop.load(Ordering::SeqCst);
    // The end: servers continued (a stopped one would hold its clients' connections),
    // every node told to stop and joined, then the servers killed.
    for s in servers.iter_mut() {
        if s.paused_until.take().is_some() {
            let _ = s.proc.signal(Signal::SIGCONT);
        }
    }
    if let Ok(mut inboxes) = router.inboxes.lock() {
        inboxes.iter_mut().for_each(|i| *i = None);
    }
    for l in locals.iter_mut() {
        if let Some(tx) = l.tx.take() {
            let _ = tx.send(Input::Stop);
        }
    }
    for l in locals.iter_mut() {
        if let Some(t) = l.thread.take() {
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    errors += 1;
                    say(&mut notes, format!("error: n{}: {e}", l.node.0));
                }
                Err(_) => {
                    errors += 1;
                    say(&mut notes, format!("error: n{} panicked", l.node.0));
                }
            }
        }
    }
    for s in servers.iter_mut() {
        s.proc.kill();
    }
    drop(servers);
    Ok(Finished {
        dirs: cluster.nodes().map(dir).collect(),
        errors,
        interrupted,
        notes,
    })
}

/// A record stamped now, whose monotonic reading is the wall's (a server's lifecycle
/// records, written by the supervisor).
fn stamp(clock: RunClock, node: NodeId, obs: Observation) -> Record {
    let w = clock.wall();
    node::record_now(clock, node, LocalTime(w), obs)
}

/// A fault on a server node: its process signalled, killed or started again.
fn server_fault(
    s: &mut Server,
    fault: &Fault,
    now: Duration,
    clock: RunClock,
    spec: &ServerSpec,
) -> Result<String, String> {
    let n = s.node.0;
    match fault {
        Fault::Pause { duration, .. } if s.up => {
            s.proc.signal(Signal::SIGSTOP)?;
            s.paused_until = Some(now + *duration);
            Ok(format!(
                "SIGSTOP n{n} (pid {}) for {}",
                s.proc.pid().unwrap_or(0),
                tenure_core::format_duration(*duration)
            ))
        }
        Fault::Crash { .. } if s.up => {
            s.proc.signal(Signal::SIGKILL)?;
            s.proc.kill();
            s.up = false;
            s.paused_until = None;
            s.log.write(&stamp(clock, s.node, Observation::Crashed));
            Ok(format!("SIGKILL n{n}"))
        }
        Fault::Restart { .. } if !s.up => {
            s.proc.spawn()?;
            let port = s.port;
            s.proc.wait_ready(SERVER_BOOT, || (spec.ready)(port))?;
            s.up = true;
            s.log.write(&stamp(clock, s.node, Observation::Started));
            Ok(format!(
                "restarted n{n} (pid {}) on the same port and data directory",
                s.proc.pid().unwrap_or(0)
            ))
        }
        Fault::ClockJump { by, .. } => match s.offset.as_mut() {
            Some(o) => {
                let total = o
                    .step(by.0)
                    .map_err(|e| format!("n{n}'s clock offset: {e}"))?;
                Ok(format!(
                    "n{n}'s wall clock stepped by {by:?} (clock shim; offset now {:?})",
                    tenure_core::SignedDuration(total)
                ))
            }
            None => Err(format!("n{n} does not run under the clock shim")),
        },
        Fault::Pause { .. } | Fault::Crash { .. } | Fault::Restart { .. } => Ok(format!(
            "skipped: n{n} is {}",
            if s.up { "up" } else { "down" }
        )),
        other => Err(format!("`{}` is not applied to a server", other.kind())),
    }
}

/// Applies a link fault to the blocked directed links, as `tenure cluster`'s proxy and
/// the simulator do (`tenure_scenario::block_links`).
fn block(blocked: &mut BTreeSet<(u32, u32)>, fault: &Fault, node: Option<NodeId>, nodes: u32) {
    tenure_scenario::block_links(blocked, fault, node.map(|n| n.0), nodes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition blocks every link between its groups, the unnamed nodes a group of
    /// their own, both ways; a cut one link both ways; one-way only its direction; a
    /// heal everything.
    #[test]
    fn link_faults_block_what_the_proxy_blocks() {
        let mut b = BTreeSet::new();
        let p = Fault::Partition {
            groups: vec![vec![NodeId(0)], vec![NodeId(1)]],
        };
        block(&mut b, &p, None, 3);
        let want: BTreeSet<(u32, u32)> = [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)]
            .into_iter()
            .collect();
        assert_eq!(b, want);
        block(&mut b, &Fault::Heal {}, None, 3);
        assert!(b.is_empty());
        block(
            &mut b,
            &Fault::Cut {
                nodes: [NodeId(2), NodeId(0)],
            },
            None,
            3,
        );
        assert_eq!(b, [(0, 2), (2, 0)].into_iter().collect());
        b.clear();
        let one = Fault::OneWay {
            from: vec![NodeId(1)],
            to: vec![NodeId(0), NodeId(1)],
        };
        block(&mut b, &one, None, 3);
        assert_eq!(b, [(1, 0)].into_iter().collect());
        b.clear();
        block(
            &mut b,
            &Fault::Isolate {
                node: NodeSel::Id(1),
            },
            Some(NodeId(1)),
            3,
        );
        assert_eq!(b.len(), 4);
    }
}
