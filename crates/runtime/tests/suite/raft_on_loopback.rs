//! The zoo's Raft, unchanged, as real nodes: a 5-node cluster on loopback UDP (a thread
//! per node) elects a leader and the simulator's checker judges the logs; a node killed
//! with SIGKILL (a child process) keeps what it synced.
//!
//! Real sockets and clocks: the runs are not deterministic. The tests wait for events
//! (a leader observation), never for a time, and assert nothing about durations; the
//! long safety limits only turn a hang into a failure.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // a real cluster

use crate::common;
use common::records;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tenure_core::{Cluster, Configurable, NodeId, Observation, Record, Storage};
use tenure_protocols::raft::Raft;
use tenure_runtime::{loopback_addrs, DirStorage, NodeSpec};

/// Only turns a hang into a failure; the tests wait for events.
const SAFETY_LIMIT: Duration = Duration::from_secs(120);

fn scratch(name: &str) -> PathBuf {
    common::scratch("runtime", name)
}

/// A free block of `n` loopback UDP ports (bound and released: another process may take
/// one in between, which the test then reports as a bind error, not a wrong verdict).
fn free_ports(n: usize, from: u16) -> u16 {
    for base in (from..60_000).step_by(97) {
        let ok = (0..n as u16).all(|i| std::net::UdpSocket::bind(("127.0.0.1", base + i)).is_ok());
        if ok {
            return base;
        }
    }
    panic!("no free block of {n} loopback ports");
}

#[allow(clippy::disallowed_methods)] // waiting for a real cluster
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < SAFETY_LIMIT, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spec(dir: &Path, me: u32, cluster: &Cluster, base: u16, epoch: SystemTime) -> NodeSpec {
    NodeSpec {
        me: NodeId(me),
        cluster: cluster.clone(),
        addrs: loopback_addrs(base, cluster.size()).unwrap(),
        listen: loopback_addrs(base, cluster.size()).unwrap()[me as usize],
        dir: dir.join(format!("n{me}")),
        seed: Some(7),
        epoch,
        protocol: "raft".into(),
        stream: None,
    }
}

#[test]
#[allow(clippy::disallowed_methods)]
fn five_real_raft_nodes_elect_one_leader_per_term() {
    let dir = scratch("five");
    let cluster = Cluster::uniform("server", 5);
    let config = Raft::configure_named(Default::default(), "correct", &cluster).unwrap();
    let base = free_ports(5, 21_000);
    let epoch = SystemTime::now();
    let stop = Arc::new(AtomicBool::new(false));
    let nodes: Vec<_> = (0..5)
        .map(|me| {
            let (spec, config, stop) = (
                spec(&dir, me, &cluster, base, epoch),
                config.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || tenure_runtime::run::<Raft>(&config, &spec, &stop))
        })
        .collect();
    let leaders = || {
        (0..5)
            .flat_map(|n| records(&dir.join(format!("n{n}"))))
            .filter(|r| matches!(r.obs, Observation::Leader { .. }))
            .count()
    };
    wait_for("a leader", || leaders() > 0);
    stop.store(true, Ordering::SeqCst);
    for n in nodes {
        let stats = n.join().unwrap().unwrap();
        assert!(stats.sent > 0 && stats.received > 0, "{stats:?}");
    }
    // The simulator's checker, over the real logs.
    let mut history: Vec<Record> = (0..5)
        .flat_map(|n| records(&dir.join(format!("n{n}"))))
        .collect();
    history.sort_by_key(|r| r.time);
    let mut check =
        tenure_check::build("single-leader-per-term", &serde_json::json!({}), &cluster).unwrap();
    for (i, r) in history.iter().enumerate() {
        assert!(
            check.on_record(i, r).is_none(),
            "two leaders of one term: {history:#?}"
        );
    }
    let judged = check.judged().expect("it says what it judged");
    assert!(judged.vacuous.is_none(), "{judged:?}");
}

/// One node of a 3-node cluster whose peers never start stands for election again and
/// again, storing and syncing its term; killed with SIGKILL, its directory still holds
/// the terms. The test re-runs itself as the child process (`TENURE_RUNTIME_CHILD`).
/// A process kill leaves the operating system's page cache, so this holds even with a
/// `sync` that does nothing: what `sync` makes durable is tested against a model disk
/// that a power loss empties (`storage::tests`, with a no-op sync as negative control).
#[test]
#[allow(clippy::disallowed_methods)]
fn a_node_killed_with_sigkill_keeps_what_it_wrote() {
    if let Ok(dir) = std::env::var("TENURE_RUNTIME_CHILD") {
        let base: u16 = std::env::var("TENURE_RUNTIME_PORT")
            .unwrap()
            .parse()
            .unwrap();
        let cluster = Cluster::uniform("server", 3);
        let config = Raft::configure_named(Default::default(), "correct", &cluster).unwrap();
        let spec = spec(Path::new(&dir), 0, &cluster, base, SystemTime::UNIX_EPOCH);
        let stop = AtomicBool::new(false);
        tenure_runtime::run::<Raft>(&config, &spec, &stop).unwrap();
        return;
    }
    let dir = scratch("sigkill");
    let base = free_ports(3, 33_000);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "raft_on_loopback::a_node_killed_with_sigkill_keeps_what_it_wrote",
            "--nocapture",
        ])
        .env("TENURE_RUNTIME_CHILD", &dir)
        .env("TENURE_RUNTIME_PORT", base.to_string())
        .spawn()
        .unwrap();
    let node = dir.join("n0");
    // Candidates of three terms: the term was stored and synced before each RequestVote.
    let terms = || {
        records(&node)
            .iter()
            .filter_map(|r| match r.obs {
                Observation::Candidate { term } => Some(term),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    };
    wait_for("three elections", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the node exited ({status}) before three elections");
        }
        terms() >= 3
    });
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    let seen = terms();
    let storage = DirStorage::open(&node, NodeId(0), "raft").unwrap();
    let stored: u64 = storage
        .get("term")
        .or_else(|| storage.get("current_term"))
        .unwrap_or_else(|| panic!("the term is stored: {storage:?}"))
        .parse()
        .unwrap();
    // Raft announces a candidacy before it persists the new term; every earlier election's
    // handler finished (write, fsync, send) before the last one began, so the kill may
    // at most have cut the last write short.
    assert!(seen >= 3);
    assert!(
        stored + 1 >= seen,
        "stored term {stored} after the kill, a candidate of term {seen} observed before it"
    );
}
