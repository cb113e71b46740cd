//! `tenure cluster SCENARIO --out DIR`: the scenario's nodes as real processes on this
//! machine (`tenure node`, one each), its faults applied for real where a real machine
//! can apply them, and the run judged with the scenario's checks from the nodes' logs.

// Real processes and real time: what these commands are for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use crate::cmd_check_trace::load;
use crate::real_verdict::{Check, ClockError};
use crate::{shown, Outcome, Tools};
use clap::Args;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tenure_core::{NodeId, Observation, Record, SimTime};
use tenure_scenario::{Fault, FaultEvent, NodeSel, Scenario};

const AFTER_HELP: &str = "\
Starts one `tenure node` process per node of the scenario's cluster, on 127.0.0.1, each
with its own directory under --out (storage, observations.jsonl, node.log), and applies
the scenario's faults at their times, for real:
    crash      SIGKILL (storage keeps what the node wrote; a real machine keeps it
               all, synced or not, when only the process dies); a killed process
               cannot say so, so tenure cluster appends its `crashed` record to its
               observations.jsonl, stamped with the moment of the kill (or with the
               node's last record, if that is later)
    restart    the node's process started again on the same directory
    pause      SIGSTOP, then SIGCONT after the pause's duration
    partition, isolate, cut, one-way, bridge, heal, network
               by a loopback proxy in front of every node: each node sends to the
               proxies, which drop what a blocked link forbids and lose, duplicate
               and delay the rest as the network says
In stream mode (the protocol's transport, e.g. zookeeper and etcd-lock, or `[network]
mode = \"stream\"`) the nodes talk over TCP and the proxy pipes their connections: a
blocked link holds their bytes, a link blocked for the connection timeout
(`connection_timeout`, 1s by default) has its connections closed (both nodes see the
reset: `on_disconnect`), and new connections across it are refused until the heal;
a killed node's connections end at once. Loss and duplication do not apply to TCP and
are refused in stream mode.
A fault aimed at `leader` goes to the node whose log last says it leads. Faults a real
machine cannot apply to one process (per-node clock drift, jumps, stalls and slews;
power loss of unsynced writes; crash points; disk faults; slow handlers) are refused
before anything starts, and so are per-link network settings ([[network.link]]). The
scenario's [network] latency, loss and duplication, and its `network` faults, are the
proxy's: delays drawn from the scenario's distribution on top of loopback's own.
Every fault is written to --out/schedule.jsonl with when it was planned and when it
was applied (`applied`), or why it was skipped (`skipped`: no leader at that moment,
a node already down); a fault whose signal failed (the process had exited on its
own, or kill(2) refused) is an error (`error`), said at once on stderr, and the run
then exits 3 unless a check failed: it was not the scenario's run. A node that exits
on its own is the same error.

The schedule's clock starts when every node has started (its log says `started`): a
fault at 0s finds every process running. schedule.jsonl gives each fault's time both on
that clock and on the logs' (nanoseconds since the cluster's epoch).

At the end every node gets SIGTERM (SIGKILL if it does not stop), and the scenario's
checks judge the merged logs with the code `tenure check-trace` runs: the same logs
get the same verdict and exit code from both. Checks that compare time intervals of
different nodes (single-leader-at-a-time, mutual-exclusion and their belief forms)
are judged only with --clock-error, a bound on the error between the nodes'
timestamps (here one machine's clock, read by different processes), added to their
tolerance and stated in the report; without it they are listed as not judged, as are
lease-safety (no tolerance) and the liveness checks (they count from the end of the
fault schedule, which real time blurs). A check not judged is never a pass.

Not deterministic: real processes, sockets and clocks. The same command gives another
run; --out keeps every node's log and the schedule. No process outlives the command:
the nodes are told to die with it (`tenure node --parent PID`), even if it is killed
with SIGKILL. With the scenario's seed, each start of a node draws from its own random
stream (seed, node, incarnation).

Exit codes: 0 every check passed, 1 a check failed, 2 bad input (including a fault that
cannot be applied for real, or an --out that exists) or a check that judged nothing,
3 internal error (including a fault whose signal failed), 5 no check failed but at
least one was not judged (never a pass).";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ClusterArgs {
    /// The scenario: protocol, variant, parameters, cluster, duration, faults, checks.
    scenario: PathBuf,
    /// Where the nodes' directories and the schedule go (must not exist).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Node K's proxy listens on 127.0.0.1:BASE+K and the node itself on BASE+N+K, for N
    /// nodes (default: a free block found at start).
    #[arg(long, value_name = "PORT")]
    base_port: Option<u16>,
    /// A bound on the error between the nodes' timestamps (e.g. 1ms): judges the
    /// checks that compare time intervals of different nodes (see check-trace).
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    clock_error: Option<Duration>,
}

/// How long the nodes may take to start before the run is abandoned.
const BOOT_LIMIT: Duration = Duration::from_secs(60);

fn bad(m: impl std::fmt::Display) -> Outcome {
    eprintln!("tenure: {m}");
    Outcome::BadInput
}

/// Why a fault cannot be applied to a real process, if it cannot.
fn unsupported(fault: &Fault) -> Option<&'static str> {
    match fault {
        Fault::Crash { .. }
        | Fault::Restart { .. }
        | Fault::Pause { .. }
        | Fault::Partition { .. }
        | Fault::Isolate { .. }
        | Fault::Cut { .. }
        | Fault::OneWay { .. }
        | Fault::Bridge { .. }
        | Fault::Heal {}
        | Fault::Network { .. } => None,
        Fault::ClockDrift { .. }
        | Fault::ClockJump { .. }
        | Fault::ClockStall { .. }
        | Fault::ClockSlew { .. } => Some(
            "the nodes share this machine's clock: one process's clock cannot drift, jump, stall or slew alone",
        ),
        Fault::PowerLoss { .. } => Some(
            "only the whole machine can lose power; killing a process keeps its unsynced writes",
        ),
        Fault::CrashPoint { .. } => Some("a crash point needs the simulator's hooks between a handler's effects"),
        Fault::DiskStall { .. } | Fault::DiskError { .. } => Some("disk faults need the simulator's disk"),
        Fault::Slow { .. } => Some("handler times are the real machine's"),
        Fault::SlowLink { .. } => {
            Some("the proxy applies one latency to every link; one link's own is the simulator's")
        }
        Fault::Request { .. } => Some("requests from outside are not delivered to real nodes yet"),
        Fault::Byzantine { .. } => Some("Byzantine behaviour is delivered by the simulator only"),
    }
}

/// The nodes' processes; every one is killed and reaped when this is dropped, whatever
/// ended the run (the end, an error, a panic, Ctrl-C).
struct Processes {
    children: Vec<Option<Child>>,
}

impl Processes {
    /// Sends `sig` to node `node`'s process; `Err` says why it could not (no process,
    /// one that had already exited, kill(2) refused).
    fn signal(&mut self, node: usize, sig: Signal) -> Result<(), String> {
        let Some(Some(child)) = self.children.get_mut(node) else {
            return Err(format!("cannot send {sig} to n{node}: it has no process"));
        };
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "cannot send {sig} to n{node}: its process had already exited ({status})"
            ));
        }
        let pid = Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, sig)
            .map_err(|e| format!("cannot send {sig} to n{node} (pid {pid}): {e}"))
    }

    /// SIGKILL to node `node`, stamped on the logs' clock (nanoseconds since `epoch`)
    /// just before it is sent; the process is reaped. Returns the stamp.
    fn kill(&mut self, node: usize, epoch: SystemTime) -> Result<SimTime, String> {
        let at = SimTime(since(epoch));
        self.signal(node, Signal::SIGKILL)?;
        if let Some(mut child) = self.children[node].take() {
            let _ = child.wait();
        }
        Ok(at)
    }

    /// Whether node `node` has a process that has not exited.
    fn alive(&mut self, node: usize) -> bool {
        self.children[node]
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kills and reaps every process left, without a word (the end of an aborted run).
    fn kill_all(&mut self) {
        for child in self.children.iter_mut().filter_map(Option::take) {
            let mut child = child;
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Nanoseconds from `epoch` to now: the clock every node stamps its records with.
fn since(epoch: SystemTime) -> u64 {
    SystemTime::now()
        .duration_since(epoch)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// SIGKILL to node `n` and its `crashed` record appended to its log (see
/// [`tenure_runtime::record_kill`]); the words for the schedule, and the record's time.
fn kill_and_record(
    procs: &mut Processes,
    n: usize,
    dir: &Path,
    epoch: SystemTime,
) -> Result<(String, u64), String> {
    let at = procs.kill(n, epoch)?;
    let k = tenure_runtime::record_kill(dir, NodeId(n as u32), at).map_err(|e| {
        format!(
            "n{n} was killed, but its `crashed` record could not be written to {}: {e}",
            shown(&dir.join("observations.jsonl"))
        )
    })?;
    let mut what = format!("SIGKILL n{n}");
    if k.record.time > at {
        what.push_str(&format!(
            "; crashed recorded at its last record, {} after the kill",
            tenure_core::format_duration(Duration::from_nanos(k.record.time.0 - at.0))
        ));
    }
    if k.cut > 0 {
        what.push_str(&format!(
            "; the {} bytes of a line it did not finish cut from its log",
            k.cut
        ));
    }
    Ok((what, k.record.time.0))
}

/// A `crash`: SIGKILL and the `crashed` record; the process's pending pause ends go
/// with it.
fn crash(
    procs: &mut Processes,
    n: usize,
    dir: &Path,
    epoch: SystemTime,
    resumes: &mut Vec<(Duration, usize)>,
) -> Applied {
    match kill_and_record(procs, n, dir, epoch) {
        Ok((what, at)) => {
            resumes.retain(|(_, r)| *r != n);
            Applied::Done(what, Some(at))
        }
        Err(e) => Applied::Failed(e),
    }
}

/// A `pause` at `now`: SIGSTOP, and SIGCONT due after `duration`, if the SIGSTOP went.
fn pause(
    procs: &mut Processes,
    n: usize,
    now: Duration,
    duration: Duration,
    resumes: &mut Vec<(Duration, usize)>,
) -> Applied {
    match procs.signal(n, Signal::SIGSTOP) {
        Ok(()) => {
            resumes.push((now + duration, n));
            Applied::Done(
                format!(
                    "SIGSTOP n{n} for {}",
                    tenure_core::format_duration(duration)
                ),
                None,
            )
        }
        Err(e) => Applied::Failed(e),
    }
}

/// What became of one fault.
#[derive(Debug, PartialEq, Eq)]
enum Applied {
    /// Applied; for a crash, the time of the `crashed` record written.
    Done(String, Option<u64>),
    /// Not applicable at that moment (no leader, the node already down or up).
    Skipped(String),
    /// It should have been applied and was not: a signal failed.
    Failed(String),
}

impl Applied {
    /// The fault's line in schedule.jsonl.
    fn schedule_line(&self, base: serde_json::Value) -> serde_json::Value {
        let mut line = base;
        let (key, text) = match self {
            Applied::Done(t, _) => ("applied", t),
            Applied::Skipped(t) => ("skipped", t),
            Applied::Failed(t) => ("error", t),
        };
        line[key] = text.as_str().into();
        if let Applied::Done(_, Some(at)) = self {
            line["crashed_at_epoch_ns"] = (*at).into();
        }
        line
    }
}

struct Launch<'a> {
    scenario: &'a Path,
    out: &'a Path,
    /// Proxies at base.., nodes at base+nodes...
    base_port: u16,
    nodes: usize,
    epoch_ns: u64,
    seed: u64,
}

impl Launch<'_> {
    fn dir(&self, node: usize) -> PathBuf {
        self.out.join(format!("n{node}"))
    }

    fn start(&self, node: usize) -> std::io::Result<Child> {
        let dir = self.dir(node);
        std::fs::create_dir_all(&dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("node.log"))?;
        Command::new(std::env::current_exe()?)
            .arg("node")
            .arg(self.scenario)
            .args(["--node", &node.to_string()])
            .arg("--dir")
            .arg(&dir)
            .args(["--base-port", &self.base_port.to_string()])
            .args([
                "--listen-port",
                &(usize::from(self.base_port) + self.nodes + node).to_string(),
            ])
            .args(["--epoch-ns", &self.epoch_ns.to_string()])
            .args(["--seed", &self.seed.to_string()])
            .args(["--parent", &std::process::id().to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
    }
}

/// What the nodes believe now, from the logs so far: every node's records in time order
/// through [`tenure_core::Beliefs`], as the simulator keeps them.
fn current_beliefs(out: &Path, nodes: usize) -> tenure_core::Beliefs {
    let mut records: Vec<Record> = (0..nodes)
        .flat_map(|n| {
            std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl")))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Record>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect();
    records.sort_by_key(|r| r.time);
    let mut beliefs = tenure_core::Beliefs::new(nodes);
    for r in &records {
        beliefs.apply(r.node, &r.obs);
    }
    beliefs
}

/// The node a `holder` or `waiter` selector hits now, from the logs so far, as the
/// simulator resolves it (among the nodes still up).
fn current_aimed(out: &Path, nodes: usize, up: &[bool], sel: NodeSel) -> Option<usize> {
    let aim = sel.aim()?;
    current_beliefs(out, nodes)
        .select(aim, |n| up.get(n.index()).copied().unwrap_or(false))
        .map(|s| s.node.index())
}

/// Whether a node that is up is of the role `sel` names now (a holder for `holder`, a
/// waiter for `waiter`), without re-aiming: what a fault aimed at it waits for.
fn role_present(beliefs: &tenure_core::Beliefs, up: &[bool], sel: NodeSel) -> bool {
    sel.aim().is_none_or(|aim| {
        beliefs
            .of_role(aim, |n| up.get(n.index()).copied().unwrap_or(false))
            .is_some()
    })
}

/// The node that last said it leads (the highest term's latest `leader` record of a
/// node still up), from the logs so far.
fn current_leader(out: &Path, nodes: usize, up: &[bool]) -> Option<usize> {
    let mut best: Option<(u64, u64, usize)> = None;
    for (n, up) in up.iter().enumerate().take(nodes) {
        if !up {
            continue;
        }
        let text = std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl")))
            .unwrap_or_default();
        // The node's last election record: a leader record counts only if nothing after
        // it says the node stepped down.
        let mut last: Option<(u64, u64, bool)> = None;
        for r in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        {
            match r.obs {
                Observation::Leader { term } => last = Some((term, r.time.0, true)),
                Observation::Follower { term, .. } | Observation::Candidate { term } => {
                    last = Some((term, r.time.0, false))
                }
                Observation::Started | Observation::Crashed => last = None,
                _ => {}
            }
        }
        if let Some((term, t, true)) = last {
            if best.is_none_or(|(bt, btime, _)| (term, t) > (bt, btime)) {
                best = Some((term, t, n));
            }
        }
    }
    best.map(|(_, _, n)| n)
}

/// A free block of `n` loopback ports, UDP and TCP (the search starts at a place drawn
/// from the process id, so two clusters started together look in different places).
fn free_ports(n: usize) -> Option<u16> {
    let from = 20_000 + (std::process::id() % 300) as u16 * 97;
    (from..60_000).chain(20_000..from).step_by(97).find(|base| {
        (0..n).all(|i| {
            u16::try_from(i)
                .ok()
                .and_then(|i| base.checked_add(i))
                .is_some_and(|p| {
                    std::net::UdpSocket::bind(("127.0.0.1", p)).is_ok()
                        && std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
                })
        })
    })
}

#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // real processes, real time
pub fn run(args: ClusterArgs, tools: &Tools) -> Outcome {
    let scenario: Scenario = match tenure_scenario::load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return bad(e),
    };
    let name = &scenario.protocol.name;
    let launcher = match crate::cmd_node::launcher_for(tools, &scenario, &args.scenario) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let cluster = match scenario.resolve_cluster(launcher.info) {
        Ok(c) => c,
        Err(e) => return bad(e),
    };
    if let Err(e) = (launcher.check)(
        &scenario.protocol.params,
        &scenario.protocol.variant,
        &cluster,
    ) {
        return bad(format!("{}: {e}", shown(&args.scenario)));
    }
    for (i, e) in scenario.faults.iter().enumerate() {
        if let Some(why) = unsupported(&e.fault) {
            return bad(scenario.error_at(
                &format!("fault[{i}]"),
                format!(
                    "`{}` cannot be applied to real processes: {why}",
                    e.fault.kind()
                ),
            ));
        }
    }
    if !scenario.network.links.is_empty() {
        return bad(scenario.error_at(
            "network.link[0]",
            "per-link network settings are not applied by tenure cluster's proxy yet",
        ));
    }
    let stream = crate::cmd_node::stream_timeout(launcher, &scenario);
    if stream.is_some() {
        let lossy = |loss: f64, dup: f64| loss > 0.0 || dup > 0.0;
        if lossy(scenario.network.loss, scenario.network.duplicate) {
            return bad(scenario.error_at(
                "network.loss",
                "stream mode runs on TCP, which retransmits and deduplicates: tenure cluster's proxy cannot lose or duplicate its segments (the simulator delays a lost one by a retransmission timeout); set loss and duplicate to 0 for a real run",
            ));
        }
        for (i, e) in scenario.faults.iter().enumerate() {
            if let Fault::Network {
                loss, duplicate, ..
            } = &e.fault
            {
                if lossy(loss.unwrap_or(0.0), duplicate.unwrap_or(0.0)) {
                    return bad(scenario.error_at(
                        &format!("fault[{i}]"),
                        "`network` with loss or duplication cannot be applied in stream mode: TCP retransmits and deduplicates",
                    ));
                }
            }
        }
    }
    if args.out.exists() {
        return bad(format!(
            "--out {}: exists; a cluster run never writes over an earlier one: name a new folder",
            shown(&args.out)
        ));
    }
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return bad(format!("--out {}: {e}", shown(&args.out)));
    }
    let nodes = cluster.size();
    let base_port = match args.base_port.or_else(|| free_ports(2 * nodes)) {
        Some(p) => p,
        None => return bad("no free block of loopback ports; give --base-port"),
    };
    let epoch_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // The nodes' epoch exactly as they read it from --epoch-ns, so a `crashed` record
    // written here is on their clock.
    let epoch = SystemTime::UNIX_EPOCH + Duration::from_nanos(epoch_ns);
    if usize::from(base_port) + 2 * nodes > usize::from(u16::MAX) {
        return bad(format!(
            "--base-port {base_port}: {} ports from there run past 65535",
            2 * nodes
        ));
    }
    let launch = Launch {
        scenario: &args.scenario,
        out: &args.out,
        base_port,
        nodes,
        epoch_ns,
        seed: scenario.seed,
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    eprintln!(
        "tenure cluster: {} nodes of {}/{} on 127.0.0.1:{base_port}.. ({}), {} of real time, {} faults; logs in {} (not deterministic: real processes, sockets and clocks)",
        nodes,
        name,
        scenario.protocol.variant,
        match stream {
            Some(t) => format!(
                "stream mode: TCP, connection timeout {}",
                tenure_core::format_duration(t)
            ),
            None => "datagrams: UDP".to_string(),
        },
        tenure_core::format_duration(scenario.duration),
        scenario.faults.len(),
        shown(&args.out)
    );
    let port = |i: usize| std::net::SocketAddr::from(([127, 0, 0, 1], base_port + i as u16));
    let fronts: Vec<_> = (0..nodes).map(port).collect();
    let backs: Vec<_> = (0..nodes).map(|i| port(nodes + i)).collect();
    // The scenario's own network, as the proxy applies it: its delay distribution (on top
    // of loopback's), loss and duplication. Per-link settings are refused above.
    let start_links = crate::proxy::Links {
        loss: scenario.network.loss,
        duplicate: scenario.network.duplicate,
        latency: Some(scenario.network.latency.clone()),
        ..Default::default()
    };
    let started_proxy = match stream {
        Some(timeout) => {
            crate::proxy::Proxy::start_stream(&fronts, &backs, start_links, scenario.seed, timeout)
        }
        None => crate::proxy::Proxy::start(&fronts, &backs, start_links, scenario.seed),
    };
    let proxy = match started_proxy {
        Ok(p) => p,
        Err(e) => {
            return bad(format!(
                "cannot start the loopback proxy on 127.0.0.1:{base_port}..: {e}"
            ))
        }
    };
    let mut procs = Processes {
        children: Vec::new(),
    };
    for n in 0..nodes {
        match launch.start(n) {
            Ok(c) => procs.children.push(Some(c)),
            Err(e) => return bad(format!("cannot start node {n}: {e}")),
        }
    }
    // The schedule's time zero: every node has started (its log says so), so a fault at
    // `0s` finds every process running, as in the simulator.
    let booting = Instant::now();
    let started_all = |out: &Path| {
        (0..nodes).all(|n| {
            std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl")))
                .is_ok_and(|t| t.contains("\"kind\":\"started\""))
        })
    };
    while !started_all(&args.out) {
        if let Some(n) = (0..nodes).find(|&n| {
            procs.children[n]
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))))
        }) {
            return bad(format!(
                "node {n} exited as it started; its log: {}",
                shown(&launch.dir(n).join("node.log"))
            ));
        }
        if booting.elapsed() > BOOT_LIMIT || stop.load(Ordering::SeqCst) {
            return bad(format!(
                "the nodes did not all start within {}s",
                BOOT_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut up = vec![true; nodes];
    let schedule_path = args.out.join("schedule.jsonl");
    let mut schedule = match std::fs::File::create(&schedule_path) {
        Ok(f) => f,
        Err(e) => return bad(format!("{}: {e}", shown(&schedule_path))),
    };
    let started = Instant::now();
    // Faults that should have been applied and were not (a signal failed), and nodes
    // that exited on their own: the run was not the scenario's.
    let mut errors = 0usize;
    let note = |schedule: &mut std::fs::File, line: serde_json::Value, said: &str, error: bool| {
        let _ = writeln!(schedule, "{line}");
        let at = started.elapsed().as_secs_f64();
        if error {
            eprintln!("tenure: cluster at {at:.3}s: {said}");
        } else {
            eprintln!("tenure cluster: {at:.3}s {said}");
        }
    };
    // Pauses to end: (when, node).
    let mut resumes: Vec<(Duration, usize)> = Vec::new();
    let mut events: std::collections::VecDeque<(usize, &FaultEvent)> =
        scenario.faults.iter().enumerate().collect();
    // Faults aimed at a holder or a waiter that found nobody of their role, waiting for
    // one until their deadline (`FaultEvent::aim_deadline`), as in the simulator.
    let mut waiting: Vec<(Duration, &FaultEvent)> = Vec::new();
    while started.elapsed() < scenario.duration && !stop.load(Ordering::SeqCst) {
        let now = started.elapsed();
        // A node that exited on its own is not what the scenario asked for.
        for (n, up) in up.iter_mut().enumerate() {
            let exited = match procs.children[n].as_mut() {
                Some(c) if *up => c.try_wait().ok().flatten(),
                _ => None,
            };
            if let Some(status) = exited {
                *up = false;
                errors += 1;
                let said = format!(
                    "n{n} exited on its own ({status}); its log: {}",
                    shown(&launch.dir(n).join("node.log"))
                );
                let line = serde_json::json!({
                    "at": format!("{:.3}s", now.as_secs_f64()),
                    "node": n,
                    "error": said,
                });
                note(&mut schedule, line, &said, true);
            }
        }
        let mut due = Vec::new();
        resumes.retain(|(at, n)| {
            if *at <= now {
                due.push(*n);
                false
            } else {
                true
            }
        });
        for n in due {
            if let Err(e) = procs.signal(n, Signal::SIGCONT) {
                errors += 1;
                let line = serde_json::json!({
                    "at": format!("{:.3}s", now.as_secs_f64()),
                    "fault": "pause",
                    "node": n,
                    "error": format!("the end of the pause: {e}"),
                });
                note(&mut schedule, line, &e, true);
            }
        }
        // What is due now: the waiting faults whose role someone now holds (or whose
        // wait ran out: aimed as without it), then the events of their time.
        let mut due_events: Vec<&FaultEvent> = Vec::new();
        // The nodes' logs, read at most once a round, and only if a fault needs them.
        let mut beliefs = None;
        let mut present = |sel: NodeSel| {
            let b = beliefs.get_or_insert_with(|| current_beliefs(&args.out, nodes));
            role_present(b, &up, sel)
        };
        waiting.retain(|(until, e)| {
            let sel = *e.fault.node().expect("aimed at a role");
            if now >= *until || present(sel) {
                due_events.push(e);
                false
            } else {
                true
            }
        });
        while events.front().is_some_and(|(_, e)| e.at <= now) {
            let (i, e) = events.pop_front().expect("checked");
            let wait = match e.fault.node() {
                Some(sel @ (NodeSel::Holder | NodeSel::Waiter)) => {
                    FaultEvent::aim_deadline(&scenario.faults, i, scenario.duration)
                        .filter(|until| now < *until)
                        .filter(|_| !present(*sel))
                }
                _ => None,
            };
            match wait {
                Some(until) => {
                    let said = format!(
                        "{} aimed at the {} waits for one until {}: no node believes it {}",
                        e.fault.kind(),
                        e.fault.node().expect("aimed"),
                        tenure_core::format_duration(until),
                        if matches!(e.fault.node(), Some(NodeSel::Holder)) {
                            "holds"
                        } else {
                            "waits"
                        }
                    );
                    let line = serde_json::json!({
                        "planned_at": tenure_core::format_duration(e.at),
                        "at": format!("{:.3}s", now.as_secs_f64()),
                        "fault": e.fault.kind(),
                        "waiting_until": tenure_core::format_duration(until),
                    });
                    note(&mut schedule, line, &said, false);
                    waiting.push((until, e));
                }
                None => due_events.push(e),
            }
        }
        for e in due_events {
            let node = match e.fault.node() {
                Some(NodeSel::Id(n)) => Some(*n as usize),
                Some(NodeSel::Leader) => current_leader(&args.out, nodes, &up),
                Some(sel @ (NodeSel::Holder | NodeSel::Waiter)) => {
                    current_aimed(&args.out, nodes, &up, *sel)
                }
                None => None,
            };
            let applied = match (&e.fault, node) {
                (
                    Fault::Partition { .. }
                    | Fault::Cut { .. }
                    | Fault::OneWay { .. }
                    | Fault::Heal {}
                    | Fault::Network { .. },
                    _,
                )
                | (Fault::Isolate { .. } | Fault::Bridge { .. }, Some(_)) => {
                    match proxy.links.lock() {
                        Ok(mut links) => {
                            links.apply(&e.fault, node.map(|n| n as u32), nodes as u32);
                            Applied::Done(
                                format!(
                                    "{}: {} links blocked",
                                    e.fault.kind(),
                                    links.blocked.len()
                                ),
                                None,
                            )
                        }
                        Err(_) => Applied::Failed("the proxy failed".to_string()),
                    }
                }
                (_, None) => {
                    Applied::Skipped("no node (nobody of that role at that moment)".to_string())
                }
                (Fault::Crash { .. }, Some(n)) if up[n] => {
                    let a = crash(&mut procs, n, &launch.dir(n), epoch, &mut resumes);
                    up[n] = procs.alive(n);
                    a
                }
                (Fault::Restart { .. }, Some(n)) if !up[n] => match launch.start(n) {
                    Ok(c) => {
                        procs.children[n] = Some(c);
                        up[n] = true;
                        Applied::Done(format!("restarted n{n}"), None)
                    }
                    Err(err) => Applied::Failed(format!("restart of n{n} failed: {err}")),
                },
                (Fault::Pause { duration, .. }, Some(n)) if up[n] => {
                    pause(&mut procs, n, now, *duration, &mut resumes)
                }
                (_, Some(n)) => {
                    Applied::Skipped(format!("n{n} is {}", if up[n] { "up" } else { "down" }))
                }
            };
            let line = applied.schedule_line(serde_json::json!({
                "planned_at": tenure_core::format_duration(e.at),
                "applied_at": format!("{:.3}s", started.elapsed().as_secs_f64()),
                "applied_at_epoch_ns": since(epoch),
                "fault": e.fault.kind(),
                "node": node,
            }));
            match &applied {
                Applied::Done(what, _) => note(&mut schedule, line, what, false),
                Applied::Skipped(why) => note(
                    &mut schedule,
                    line,
                    &format!("{}: skipped: {why}", e.fault.kind()),
                    false,
                ),
                Applied::Failed(why) => {
                    errors += 1;
                    let said = format!("{} not applied: {why}", e.fault.kind());
                    note(&mut schedule, line, &said, true);
                }
            }
        }
        let next = events
            .front()
            .map(|(_, e)| e.at)
            .into_iter()
            .chain(waiting.iter().map(|(until, _)| *until))
            .chain(resumes.iter().map(|(at, _)| *at))
            .chain([scenario.duration])
            .min()
            .unwrap_or(scenario.duration);
        std::thread::sleep(
            next.saturating_sub(started.elapsed())
                .min(Duration::from_millis(20)),
        );
    }
    // The end: continue the paused, ask every node to stop, then make sure (a node
    // that has to be killed gets its `crashed` record, as any killed node).
    for (_, n) in resumes.drain(..) {
        let _ = procs.signal(n, Signal::SIGCONT);
    }
    for n in (0..nodes).filter(|n| up[*n]) {
        let _ = procs.signal(n, Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for n in 0..nodes {
        let Some(child) = procs.children[n].as_mut() else {
            continue;
        };
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(child.try_wait(), Ok(None)) {
            match kill_and_record(&mut procs, n, &launch.dir(n), epoch) {
                Ok((what, _)) => eprintln!("tenure cluster: n{n} did not stop on SIGTERM: {what}"),
                Err(e) => eprintln!("tenure: {e}"),
            }
        }
    }
    procs.kill_all();
    drop(procs);
    if stream.is_some() {
        eprintln!(
            "tenure cluster: the proxy piped {} connections, refused {} (a blocked link, or the node down) and reset {} (links blocked for the connection timeout)",
            proxy.forwarded.load(Ordering::Relaxed),
            proxy.dropped.load(Ordering::Relaxed),
            proxy.resets.load(Ordering::Relaxed)
        );
    } else {
        eprintln!(
            "tenure cluster: the proxy forwarded {} datagrams and dropped {} (blocked links and losses)",
            proxy.forwarded.load(Ordering::Relaxed),
            proxy.dropped.load(Ordering::Relaxed)
        );
    }
    drop(proxy);
    let dirs: Vec<PathBuf> = (0..nodes).map(|n| launch.dir(n)).collect();
    let history = match load(&dirs) {
        Ok(h) => h,
        Err(e) => return bad(e),
    };
    let checks: Vec<Check> = scenario
        .checks
        .iter()
        .map(|c| Check {
            name: c.name.clone(),
            params: c.params.clone(),
        })
        .collect();
    let clock_error = args.clock_error.map(|bound| ClockError {
        bound,
        source: "--clock-error",
    });
    if stop.load(Ordering::SeqCst) {
        eprintln!("tenure cluster: interrupted; judging the logs so far");
    }
    let verdict = crate::real_verdict::report(&history, &checks, clock_error);
    match verdict {
        Outcome::CheckFailed | Outcome::BadInput => verdict,
        _ if errors > 0 => {
            eprintln!(
                "tenure: {errors} of the scenario's faults or nodes went wrong (see above and {}): this was not the scenario's run, whatever its checks say",
                shown(&schedule_path)
            );
            Outcome::Internal
        }
        _ => verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node process: `sleep` (alive until killed) or `true` (exited and reaped).
    fn processes(alive: bool) -> Processes {
        let mut child = Command::new(if alive { "sleep" } else { "true" })
            .args(if alive { &["600"][..] } else { &[][..] })
            .spawn()
            .unwrap();
        if !alive {
            child.wait().unwrap();
        }
        Processes {
            children: vec![Some(child)],
        }
    }

    /// A signal that cannot be sent is an error, not an applied fault: the schedule
    /// line says "error" and no "applied", and no SIGCONT is left due. (Before, `kill
    /// -STOP` failing was ignored and the pause logged as applied.)
    #[test]
    fn a_pause_or_a_crash_whose_signal_fails_is_an_error_not_applied() {
        let dir = std::env::temp_dir().join(format!("tenure-cluster-gone-{}", std::process::id()));
        let mut procs = processes(false);
        let mut resumes = Vec::new();
        let second = Duration::from_secs(1);
        let a = pause(&mut procs, 0, second, second, &mut resumes);
        let Applied::Failed(why) = &a else {
            panic!("a pause of an exited process: {a:?}")
        };
        assert!(
            why.contains("SIGSTOP") && why.contains("already exited"),
            "{why}"
        );
        assert!(resumes.is_empty());
        let line = a.schedule_line(serde_json::json!({"fault": "pause"}));
        assert!(
            line.get("applied").is_none() && line["error"] == why.as_str(),
            "{line}"
        );

        let a = crash(&mut procs, 0, &dir, SystemTime::UNIX_EPOCH, &mut resumes);
        assert!(
            matches!(&a, Applied::Failed(w) if w.contains("SIGKILL")),
            "{a:?}"
        );
        assert!(
            !dir.exists(),
            "no record written for a kill that did not happen"
        );
    }

    /// A pause and then a crash of a live process: SIGSTOP (its SIGCONT due), then
    /// SIGKILL, the process reaped, its `crashed` record appended to its log, stamped
    /// no earlier than the kill was sent and after the log's last record; the pending
    /// SIGCONT goes with the process.
    #[test]
    fn a_crash_kills_the_process_and_writes_its_crashed_record() {
        let dir = std::env::temp_dir().join(format!("tenure-cluster-crash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let epoch = SystemTime::now() - Duration::from_secs(1);
        let started = Record::new(
            SimTime(since(epoch)),
            NodeId(0),
            tenure_core::LocalTime(since(epoch) as i64),
            tenure_core::LocalTime(since(epoch) as i64),
            Observation::Started,
        );
        std::fs::write(
            dir.join("observations.jsonl"),
            serde_json::to_string(&started).unwrap() + "\n",
        )
        .unwrap();
        let mut procs = processes(true);
        let mut resumes = Vec::new();
        let second = Duration::from_secs(1);
        let a = pause(&mut procs, 0, second, second, &mut resumes);
        assert_eq!(a, Applied::Done("SIGSTOP n0 for 1s".into(), None));
        assert_eq!(resumes, [(2 * second, 0)]);

        let before = since(epoch);
        let a = crash(&mut procs, 0, &dir, epoch, &mut resumes);
        let Applied::Done(what, Some(at)) = &a else {
            panic!("{a:?}")
        };
        assert_eq!(what, "SIGKILL n0");
        assert!(*at >= before && *at >= started.time.0, "{at} {before}");
        assert!(resumes.is_empty(), "the killed process is not continued");
        assert!(procs.children[0].is_none(), "reaped");
        let log = std::fs::read_to_string(dir.join("observations.jsonl")).unwrap();
        let last: Record = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        assert_eq!(
            (last.obs, last.time, last.node),
            (Observation::Crashed, SimTime(*at), NodeId(0))
        );
        let line = a.schedule_line(serde_json::json!({}));
        assert_eq!(line["crashed_at_epoch_ns"], *at);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
