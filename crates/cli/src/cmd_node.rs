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
It runs until SIGTERM or Ctrl-C. The scenario's faults are not applied here: `tenure
cluster` applies them to the processes. Not deterministic.

Exit codes: 0 stopped by a signal, 2 bad input (a scenario, a directory of another node,
a port in use), 3 internal error.";

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
    /// Seeded randomness (default: the operating system's).
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
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
    match (launcher.run)(
        &scenario.protocol.params,
        &scenario.protocol.variant,
        &spec,
        &stop,
    ) {
        Ok(stats) => {
            eprintln!(
                "tenure node n{}: stopped; {} sent, {} received, {} dropped, {} timers, {} observations{}",
                args.node,
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
