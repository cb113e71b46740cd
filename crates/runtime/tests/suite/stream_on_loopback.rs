//! Stream mode for real: nodes on TCP over loopback get `on_disconnect` when a peer's
//! connection ends (the peer killed with SIGKILL, or one direction closed), both
//! directions are closed so both ends know, and a later send opens a new connection.
//!
//! Real sockets and clocks: the runs are not deterministic. The tests wait for events
//! (a line in a node's log, a byte on a socket), never for a time, and assert nothing
//! about durations; the long safety limits only turn a hang into a failure.

#![allow(clippy::disallowed_types, clippy::disallowed_methods)] // a real cluster

use crate::common;
use common::records;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, Record};
use tenure_runtime::stream::{dial, parse_hello, read_frame, write_frame, ACK};
use tenure_runtime::{loopback_addrs, NodeSpec};

/// Only turns a hang into a failure; the tests wait for events.
const SAFETY_LIMIT: Duration = Duration::from_secs(120);

/// Every node sends a numbered ping to every other node on a 20ms timer; it logs what
/// it receives (`Custom` "from nK") and every reset (`Note` "disconnected from nK").
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Pinger {
    me: NodeId,
    peers: Vec<NodeId>,
    seq: u64,
}

impl Protocol for Pinger {
    type Msg = u64;
    type Timer = u8;
    type Config = ();

    fn new(_: &(), me: NodeId, cluster: &Cluster) -> Self {
        Pinger {
            me,
            peers: cluster.nodes().filter(|n| *n != me).collect(),
            seq: 0,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<u64, u8>) {
        env.set_timer(0, Duration::from_millis(20));
    }

    fn on_message(&mut self, env: &mut dyn Env<u64, u8>, from: NodeId, msg: u64) {
        env.observe(Observation::Custom {
            name: format!("from n{}", from.0),
            value: msg as i64,
        });
    }

    fn on_timer(&mut self, env: &mut dyn Env<u64, u8>, _: u8) {
        for p in self.peers.clone() {
            env.send(p, self.seq);
        }
        self.seq += 1;
        env.set_timer(0, Duration::from_millis(20));
    }

    fn on_disconnect(&mut self, env: &mut dyn Env<u64, u8>, peer: NodeId) {
        env.observe(Observation::Note {
            text: format!("disconnected from n{}", peer.0),
        });
    }
}

fn scratch(name: &str) -> PathBuf {
    common::scratch("runtime-stream", name)
}

/// The node's records after its `n`th start (1-based).
fn since_start(dir: &Path, n: usize) -> Vec<Record> {
    let all = records(dir);
    let starts: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, r)| r.obs == Observation::Started)
        .map(|(i, _)| i)
        .collect();
    starts
        .get(n - 1)
        .map_or_else(Vec::new, |&i| all[i..].to_vec())
}

fn heard_from(records: &[Record], peer: u32) -> bool {
    let name = format!("from n{peer}");
    records
        .iter()
        .any(|r| matches!(&r.obs, Observation::Custom { name: n, .. } if *n == name))
}

fn disconnects(records: &[Record], peer: u32) -> usize {
    let text = format!("disconnected from n{peer}");
    records
        .iter()
        .filter(|r| matches!(&r.obs, Observation::Note { text: t } if *t == text))
        .count()
}

/// A free block of `n` loopback ports, for TCP and UDP (bound and released: another
/// process may take one in between, which the test then reports as a bind error).
fn free_ports(n: usize, from: u16) -> u16 {
    for base in (from..60_000).step_by(89) {
        let ok = (0..n as u16).all(|i| {
            TcpListener::bind(("127.0.0.1", base + i)).is_ok()
                && std::net::UdpSocket::bind(("127.0.0.1", base + i)).is_ok()
        });
        if ok {
            return base;
        }
    }
    panic!("no free block of {n} loopback ports");
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < SAFETY_LIMIT, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spec(dir: &Path, me: u32, base: u16) -> NodeSpec {
    let cluster = Cluster::uniform("node", 2);
    let addrs = loopback_addrs(base, 2).unwrap();
    NodeSpec {
        me: NodeId(me),
        listen: addrs[me as usize],
        cluster,
        addrs,
        dir: dir.join(format!("n{me}")),
        seed: Some(3),
        epoch: SystemTime::UNIX_EPOCH,
        protocol: "pinger".into(),
        stream: Some(Duration::from_secs(1)),
    }
}

/// A child process, killed (SIGKILL) and reaped however the test ends.
struct Child(std::process::Child);

impl Child {
    fn start(dir: &Path, base: u16) -> Child {
        Child(
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "stream_on_loopback::a_peer_killed_with_sigkill_is_a_disconnect_then_a_new_connection",
                    "--nocapture",
                ])
                .env("TENURE_STREAM_CHILD", dir)
                .env("TENURE_STREAM_PORT", base.to_string())
                .spawn()
                .unwrap(),
        )
    }

    fn sigkill(&mut self) {
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        self.0.wait().unwrap();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Node 0 in this process, node 1 a child process (the test re-runs itself,
/// `TENURE_STREAM_CHILD`). Killed with SIGKILL, node 1's connections end at once:
/// node 0's protocol is told, and once node 1 runs again node 0's next pings open a
/// new connection to it.
#[test]
fn a_peer_killed_with_sigkill_is_a_disconnect_then_a_new_connection() {
    if let Ok(dir) = std::env::var("TENURE_STREAM_CHILD") {
        let base: u16 = std::env::var("TENURE_STREAM_PORT")
            .unwrap()
            .parse()
            .unwrap();
        let stop = AtomicBool::new(false);
        tenure_runtime::run::<Pinger>(&(), &spec(Path::new(&dir), 1, base), &stop).unwrap();
        return;
    }
    let dir = scratch("sigkill");
    let base = free_ports(2, 34_000);
    let stop = Arc::new(AtomicBool::new(false));
    let node0 = {
        let (spec, stop) = (spec(&dir, 0, base), stop.clone());
        std::thread::spawn(move || tenure_runtime::run::<Pinger>(&(), &spec, &stop))
    };
    let (n0, n1) = (dir.join("n0"), dir.join("n1"));
    let mut child = Child::start(&dir, base);
    wait_for("pings both ways", || {
        heard_from(&records(&n0), 1) && heard_from(&records(&n1), 0)
    });
    assert_eq!(disconnects(&records(&n0), 1), 0, "no reset before the kill");
    child.sigkill();
    wait_for("node 0 told of the reset", || {
        disconnects(&records(&n0), 1) >= 1
    });

    // Node 1 again, on the same directory: node 0's pings reach it over a new connection,
    // and node 0 hears from it again after the reset.
    let mut child = Child::start(&dir, base);
    wait_for("pings to the restarted node", || {
        heard_from(&since_start(&n1, 2), 0)
    });
    wait_for("pings from the restarted node", || {
        let r = records(&n0);
        let reset = r
            .iter()
            .position(|r| matches!(&r.obs, Observation::Note { .. }))
            .unwrap();
        heard_from(&r[reset..], 1)
    });
    child.sigkill();
    stop.store(true, Ordering::SeqCst);
    let stats = node0.join().unwrap().unwrap();
    assert!(stats.disconnects >= 2, "two kills, two resets: {stats:?}");
    assert!(stats.sent > 0 && stats.received > 0, "{stats:?}");
    // A reset is said once per connection: never more often than node 0 had one.
    assert_eq!(
        disconnects(&records(&n0), 1) as u64,
        stats.disconnects,
        "{stats:?}"
    );
}

/// Node 0 real; node 1 played by hand with raw sockets. When node 1 closes the one
/// connection it dialed (node 1 -> node 0), node 0 is told, and it closes its own
/// connection to node 1 as well, so node 1's end learns of the reset too; node 0's next
/// pings open a new connection.
#[test]
fn when_one_direction_ends_both_are_closed_and_both_ends_know() {
    let dir = scratch("one-direction");
    let base = free_ports(2, 36_000);
    let addrs = loopback_addrs(base, 2).unwrap();
    let listener = TcpListener::bind(addrs[1]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let node0 = {
        let (spec, stop) = (spec(&dir, 0, base), stop.clone());
        std::thread::spawn(move || tenure_runtime::run::<Pinger>(&(), &spec, &stop))
    };
    let n0 = dir.join("n0");
    // Node 0 dials node 1: hello, answer, then pings.
    let accept = || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(SAFETY_LIMIT)).unwrap();
        let mut h = [0u8; 8];
        s.read_exact(&mut h).unwrap();
        assert_eq!(parse_hello(&h), Some(0), "node 0 says who it is");
        s.write_all(&[ACK]).unwrap();
        let first = read_frame(&mut s).unwrap().expect("a ping");
        postcard::from_bytes::<u64>(&first).unwrap();
        s
    };
    let mut from0 = accept();
    // Node 1 dials node 0 and pings it.
    let mut to0 = dial(addrs[0], NodeId(1), SAFETY_LIMIT).unwrap();
    write_frame(&mut to0, &postcard::to_stdvec(&41u64).unwrap()).unwrap();
    wait_for("node 0 hears node 1", || heard_from(&records(&n0), 1));
    // Node 1 closes the connection it dialed; node 0 is told once, and closes its own.
    to0.shutdown(Shutdown::Both).unwrap();
    wait_for("node 0 told", || disconnects(&records(&n0), 1) == 1);
    loop {
        match read_frame(&mut from0) {
            Ok(Some(_)) => continue,
            Ok(None) => break,
            // Reset by node 0 rather than closed: an end all the same.
            Err(e) => {
                assert_ne!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock,
                    "node 0 never closed its connection to node 1"
                );
                break;
            }
        }
    }
    // Node 0's later pings open a new connection.
    let _again = accept();
    stop.store(true, Ordering::SeqCst);
    let stats = node0.join().unwrap().unwrap();
    assert_eq!(stats.disconnects, 1, "{stats:?}");
}
