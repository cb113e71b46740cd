//! `tenure node SCENARIO --node K --dir DIR`: one node of the scenario's protocol as a
//! real process (tenure-runtime), until SIGTERM or Ctrl-C. `tenure cluster` starts these.

// Real processes and real time: what these commands are for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use crate::{shown, Outcome, Tools};
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tenure_core::NodeId;
use tenure_runtime::{loopback_addrs, NodeSpec};

const AFTER_HELP: &str = "\
The node runs the scenario's protocol, variant and parameters, unchanged, on the real
machine: UDP on 127.0.0.1 ports BASE.. (TCP in stream mode: the protocol's transport or
`[network] mode = \"stream\"`), the OS's clocks and timers, storage in DIR (fsync for
sync), observations appended to DIR/observations.jsonl for `tenure check-trace`.
It runs until SIGTERM or Ctrl-C, or, with --parent PID, until process PID is gone
(`tenure cluster` starts its nodes so: they die with it, even when it is killed with
SIGKILL, paused nodes included). The scenario's faults are not applied here: `tenure
cluster` applies them to the processes. Not deterministic.

With --seed, the node's randomness is a stream of its own for each start: (seed, node,
incarnation), the incarnation being the number of times the node has started in DIR
before (the `started` records in its log). The first start draws what the simulator's
node draws; a restart never repeats an earlier life's draws.

Exit codes: 0 stopped by a signal, 2 bad input (a scenario, a directory of another node,
a port in use, a --parent that is not this process's parent), 3 internal error.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct NodeArgs {
    /// The scenario (its protocol, variant, parameters and cluster).
    scenario: PathBuf,
    /// Which node this process is (0-based).
    #[arg(long, value_name = "K")]
    node: u32,
    /// The node's directory: storage and observation log.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Node K is reached at 127.0.0.1:BASE+K.
    #[arg(long, value_name = "PORT", default_value_t = 47_000)]
    base_port: u16,
    /// Where this node listens, when a proxy sits in front of it (default BASE+K).
    #[arg(long, value_name = "PORT")]
    listen_port: Option<u16>,
    /// The cluster's time zero, in nanoseconds since the Unix epoch (default: now).
    #[arg(long, value_name = "NS")]
    epoch_ns: Option<u64>,
    /// Seeded randomness (default: the operating system's): each start of the node
    /// draws from the stream (SEED, node, incarnation).
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// Exit when process PID, this node's parent, is gone (`tenure cluster` sets it).
    #[arg(long, value_name = "PID")]
    parent: Option<u32>,
}

/// The node dies with its parent `pid`: on Linux the kernel sends it SIGKILL when the
/// parent dies (`PR_SET_PDEATHSIG`, which also ends a node stopped by SIGSTOP);
/// everywhere a thread watches the parent and stops the node when it is gone. `Err` if
/// `pid` is not the parent (already gone: the node was orphaned before it could ask).
fn die_with_parent(pid: u32, stop: Arc<AtomicBool>) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("--parent {pid}: prctl(PR_SET_PDEATHSIG): {e}"))?;
    // The parent may have died before the kernel was asked: then it is not the parent.
    let parent = std::os::unix::process::parent_id();
    if parent != pid {
        return Err(format!(
            "--parent {pid}: this process's parent is {parent}: {pid} is gone (or never was its parent)"
        ));
    }
    std::thread::spawn(move || {
        while std::os::unix::process::parent_id() == pid {
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("tenure node: the parent process {pid} is gone: stopping");
        stop.store(true, Ordering::SeqCst);
    });
    Ok(())
}

/// The launcher of `scenario`'s protocol, or why it does not run as real nodes.
pub fn launcher_for<'t>(
    tools: &'t Tools,
    scenario: &tenure_scenario::Scenario,
    file: &std::path::Path,
) -> Result<&'t tenure_runtime::Launcher, String> {
    let name = &scenario.protocol.name;
    tools.launchers.get(name).ok_or_else(|| {
        format!(
            "{}: protocol `{name}` does not run as real nodes (its messages have no wire encoding); those that do: {}",
            shown(file),
            tools.launchers.names().join(", ")
        )
    })
}

/// How `scenario` runs for real: `Some(connection timeout)` in stream mode (TCP), `None`
/// on datagrams (UDP). `[network] mode` when written, else the protocol's own transport,
/// as in the simulator.
pub fn stream_timeout(
    launcher: &tenure_runtime::Launcher,
    scenario: &tenure_scenario::Scenario,
) -> Option<Duration> {
    let mut network = scenario.network.clone();
    if network.mode.is_none() {
        network.mode = Some(match (launcher.transport)() {
            tenure_core::Transport::Stream => tenure_scenario::NetworkMode::Stream,
            tenure_core::Transport::Datagram => tenure_scenario::NetworkMode::Datagram,
        });
    }
    network.stream_timeout()
}

pub fn run(args: NodeArgs, tools: &Tools) -> Outcome {
    let bad = |m: String| {
        eprintln!("tenure: {m}");
        Outcome::BadInput
    };
    let scenario = match tenure_scenario::load(&args.scenario) {
        Ok(s) => s,
        Err(e) => return bad(e.to_string()),
    };
    let name = &scenario.protocol.name;
    let launcher = match launcher_for(tools, &scenario, &args.scenario) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let cluster = match scenario.resolve_cluster(launcher.info) {
        Ok(c) => c,
        Err(e) => return bad(e.to_string()),
    };
    let addrs = match loopback_addrs(args.base_port, cluster.size()) {
        Ok(a) => a,
        Err(e) => return bad(format!("--base-port: {e}")),
    };
    let epoch = match args.epoch_ns {
        Some(ns) => SystemTime::UNIX_EPOCH + Duration::from_nanos(ns),
        #[allow(clippy::disallowed_methods)] // a real process
        None => SystemTime::now(),
    };
    let listen = match args.listen_port {
        Some(p) => std::net::SocketAddr::from(([127, 0, 0, 1], p)),
        None => match addrs.get(args.node as usize) {
            Some(a) => *a,
            None => {
                return bad(format!(
                    "--node {}: the cluster has nodes 0..{}",
                    args.node,
                    addrs.len()
                ))
            }
        },
    };
    let spec = NodeSpec {
        me: NodeId(args.node),
        cluster,
        addrs,
        listen,
        dir: args.dir.clone(),
        seed: args.seed,
        epoch,
        protocol: name.clone(),
        stream: stream_timeout(launcher, &scenario),
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    if let Some(pid) = args.parent {
        if let Err(e) = die_with_parent(pid, stop.clone()) {
            return bad(e);
        }
    }
    match (launcher.run)(
        &scenario.protocol.params,
        &scenario.protocol.variant,
        &spec,
        &stop,
    ) {
        Ok(stats) => {
            eprintln!(
                "tenure node n{} (incarnation {}): stopped; {} sent, {} received, {} dropped, {} timers, {} observations{}",
                args.node,
                stats.incarnation,
                stats.sent,
                stats.received,
                stats.dropped,
                stats.timers,
                stats.observations,
                if spec.stream.is_some() {
                    format!(", {} connections reset", stats.disconnects)
                } else {
                    String::new()
                }
            );
            Outcome::Passed
        }
        Err(e) => bad(format!("node {}: {e}", args.node)),
    }
}

#[cfg(test)]
mod tests {
    use tenure_core::{NodeId, Rng};

    /// A real node's first start draws what the simulator's node draws under the same
    /// seed (its stream `SeededRng::node`); its restarts draw other streams.
    #[test]
    fn a_first_start_draws_the_simulators_node_stream() {
        for (seed, node) in [(1, 0), (7, 3), (u64::MAX, 40)] {
            let draws = |rng: &mut dyn Rng| (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>();
            let sim = draws(&mut tenure_sim::rng::SeededRng::node(seed, node as usize));
            let first = draws(&mut tenure_runtime::NodeRng::seeded(seed, NodeId(node), 0));
            let again = draws(&mut tenure_runtime::NodeRng::seeded(seed, NodeId(node), 1));
            assert_eq!(first, sim);
            assert_ne!(again, sim);
        }
    }
}
