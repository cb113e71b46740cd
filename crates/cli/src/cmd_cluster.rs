//! `tenure cluster SCENARIO --out DIR`: the scenario's nodes as real processes on this
//! machine (`tenure node`, one each), its faults applied for real where a real machine
//! can apply them, and the run judged with the scenario's checks from the nodes' logs.

// Real processes and real time: what these commands are for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use crate::cmd_check_trace::{judge, load, plan, Check, ClockError};
use crate::{shown, Outcome, Tools};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tenure_core::{Observation, Record};
use tenure_scenario::{Fault, FaultEvent, NodeSel, Scenario};

const AFTER_HELP: &str = "\
Starts one `tenure node` process per node of the scenario's cluster, on 127.0.0.1, each
with its own directory under --out (storage, observations.jsonl, node.log), and applies
the scenario's faults at their times, for real:
    crash      SIGKILL (storage keeps what the node wrote; a real machine keeps it
               all, synced or not, when only the process dies)
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
Every fault applied is written to
--out/schedule.jsonl with when it was planned and when it was applied.

The schedule's clock starts when every node has started (its log says `started`): a
fault at 0s finds every process running. schedule.jsonl gives each fault's time both on
that clock and on the logs' (nanoseconds since the cluster's epoch).

At the end every node gets SIGTERM (SIGKILL if it does not stop), and the scenario's
checks judge the merged logs as `tenure check-trace` does. Checks that compare time
intervals of different nodes (single-leader-at-a-time, mutual-exclusion and their
belief forms) are judged only with --clock-error, a bound on the error between the
nodes' timestamps (here one machine's clock, read by different processes), added to
their tolerance and stated in the report; without it they are listed as not judged,
as are lease-safety (no tolerance) and the liveness checks.

Not deterministic: real processes, sockets and clocks. The same command gives another
run; --out keeps every node's log and the schedule. No process outlives the command.

Exit codes: 0 every judged check passed, 1 a check failed, 2 bad input (including a
fault that cannot be applied for real, or an --out that exists), 3 internal error.";

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
    }
}

/// The nodes' processes; every one is killed and reaped when this is dropped, whatever
/// ended the run (the end, an error, a panic, Ctrl-C).
struct Processes {
    children: Vec<Option<Child>>,
}

impl Processes {
    fn signal(&self, node: usize, sig: &str) -> bool {
        let Some(Some(child)) = self.children.get(node) else {
            return false;
        };
        Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    fn kill(&mut self, node: usize) {
        if let Some(mut child) = self.children[node].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            // A stopped process must be continued to die of SIGTERM; SIGKILL needs not.
            self.kill(i);
        }
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
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
    }
}

/// The node a `holder` or `waiter` selector hits now, from the logs so far: every node's
/// records in time order through [`tenure_core::Beliefs`], as the simulator resolves it
/// (among the nodes still up).
fn current_aimed(out: &Path, nodes: usize, up: &[bool], sel: NodeSel) -> Option<usize> {
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
    let aim = sel.aim()?;
    beliefs
        .select(aim, |n| up.get(n.index()).copied().unwrap_or(false))
        .map(|s| s.node.index())
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
    let epoch = SystemTime::now();
    let epoch_ns = epoch
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
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
    // Pauses to end: (when, node).
    let mut resumes: Vec<(Duration, usize)> = Vec::new();
    let mut events: std::collections::VecDeque<&FaultEvent> = scenario.faults.iter().collect();
    while started.elapsed() < scenario.duration && !stop.load(Ordering::SeqCst) {
        let now = started.elapsed();
        resumes.retain(|(at, n)| {
            if *at <= now {
                procs.signal(*n, "-CONT");
                false
            } else {
                true
            }
        });
        while events.front().is_some_and(|e| e.at <= now) {
            let e = events.pop_front().expect("checked");
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
                    if let Ok(mut links) = proxy.links.lock() {
                        links.apply(&e.fault, node.map(|n| n as u32), nodes as u32);
                        format!("{}: {} links blocked", e.fault.kind(), links.blocked.len())
                    } else {
                        "skipped: the proxy failed".to_string()
                    }
                }
                (_, None) => "skipped: no node (nobody of that role at that moment)".to_string(),
                (Fault::Crash { .. }, Some(n)) if up[n] => {
                    procs.kill(n);
                    up[n] = false;
                    format!("SIGKILL n{n}")
                }
                (Fault::Restart { .. }, Some(n)) if !up[n] => match launch.start(n) {
                    Ok(c) => {
                        procs.children[n] = Some(c);
                        up[n] = true;
                        format!("restarted n{n}")
                    }
                    Err(err) => format!("restart of n{n} failed: {err}"),
                },
                (Fault::Pause { duration, .. }, Some(n)) if up[n] => {
                    procs.signal(n, "-STOP");
                    resumes.push((now + *duration, n));
                    format!(
                        "SIGSTOP n{n} for {}",
                        tenure_core::format_duration(*duration)
                    )
                }
                (_, Some(n)) => format!("skipped: n{n} is {}", if up[n] { "up" } else { "down" }),
            };
            let line = serde_json::json!({
                "planned_at": tenure_core::format_duration(e.at),
                "applied_at": format!("{:.3}s", started.elapsed().as_secs_f64()),
                "applied_at_epoch_ns": SystemTime::now()
                    .duration_since(epoch)
                    .map_or(0, |d| d.as_nanos() as u64),
                "fault": e.fault.kind(),
                "node": node,
                "applied": applied,
            });
            let _ = writeln!(schedule, "{line}");
            eprintln!(
                "tenure cluster: {:.3}s {applied}",
                started.elapsed().as_secs_f64()
            );
        }
        let next = events
            .front()
            .map(|e| e.at)
            .into_iter()
            .chain(resumes.iter().map(|(at, _)| *at))
            .chain([scenario.duration])
            .min()
            .unwrap_or(scenario.duration);
        std::thread::sleep(
            next.saturating_sub(started.elapsed())
                .min(Duration::from_millis(20)),
        );
    }
    // The end: continue the paused, ask every node to stop, then make sure.
    for (_, n) in resumes.drain(..) {
        procs.signal(n, "-CONT");
    }
    for n in 0..nodes {
        procs.signal(n, "-TERM");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for n in 0..nodes {
        if let Some(child) = procs.children[n].as_mut() {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        procs.kill(n);
    }
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
    // The liveness checks need the fault schedule's end, which real time blurs.
    let (liveness, checks): (Vec<Check>, Vec<Check>) = scenario
        .checks
        .iter()
        .map(|c| Check {
            name: c.name.clone(),
            params: c.params.clone(),
        })
        .partition(|c| c.name.ends_with("-liveness"));
    let clock_error = args.clock_error.map(|bound| ClockError {
        bound,
        source: "--clock-error",
    });
    let mut plan = plan(&checks, clock_error);
    for c in liveness {
        plan.not_judged.push((
            c.name,
            "needs the fault schedule's end, which real time blurs; judge it in the simulator"
                .into(),
        ));
    }
    if stop.load(Ordering::SeqCst) {
        eprintln!("tenure cluster: interrupted; judging the logs so far");
    }
    judge(&history, &plan)
}
