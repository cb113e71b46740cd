//! The loopback proxy of `tenure cluster`: one UDP socket per node that every other node
//! sends to instead of the node itself, so the cluster can drop what a partition, a cut
//! or a one-way fault forbids. A datagram names its sender (tenure-runtime puts the
//! sender's id first, as a postcard varint); the proxy forwards it to the node's real
//! port unless the link from that sender is blocked.

// Real sockets and real time: what the proxy is for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tenure_core::NodeId;
use tenure_scenario::Fault;

/// Which directed links drop everything: `(from, to)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Links {
    pub blocked: BTreeSet<(u32, u32)>,
}

impl Links {
    fn block_between(&mut self, a: &[u32], b: &[u32]) {
        for &x in a {
            for &y in b {
                if x != y {
                    self.blocked.insert((x, y));
                    self.blocked.insert((y, x));
                }
            }
        }
    }

    /// Applies a network fault as the simulator does (`sim/src/net.rs`): a partition
    /// blocks every link across groups (nodes not listed form one more group), an isolate
    /// blocks a node from everyone, a cut one link both ways, a one-way fault one
    /// direction, a bridge blocks the groups from each other but not from the bridge
    /// node, and a heal unblocks everything. `node` is the fault's node, resolved.
    pub fn apply(&mut self, fault: &Fault, node: Option<u32>, nodes: u32) {
        let all: Vec<u32> = (0..nodes).collect();
        let ids = |g: &[NodeId]| g.iter().map(|n| n.0).collect::<Vec<u32>>();
        match fault {
            Fault::Partition { groups } => {
                let mut groups: Vec<Vec<u32>> = groups.iter().map(|g| ids(g)).collect();
                let listed: BTreeSet<u32> = groups.iter().flatten().copied().collect();
                let rest: Vec<u32> = all
                    .iter()
                    .copied()
                    .filter(|n| !listed.contains(n))
                    .collect();
                if !rest.is_empty() {
                    groups.push(rest);
                }
                for i in 0..groups.len() {
                    for j in i + 1..groups.len() {
                        let (a, b) = (groups[i].clone(), groups[j].clone());
                        self.block_between(&a, &b);
                    }
                }
            }
            Fault::Isolate { .. } => {
                if let Some(n) = node {
                    self.block_between(&[n], &all);
                }
            }
            Fault::Cut { nodes } => self.block_between(&[nodes[0].0], &[nodes[1].0]),
            Fault::OneWay { from, to } => {
                for f in ids(from) {
                    for t in ids(to) {
                        if f != t {
                            self.blocked.insert((f, t));
                        }
                    }
                }
            }
            Fault::Bridge { groups, .. } => {
                let groups: Vec<Vec<u32>> = groups
                    .iter()
                    .map(|g| ids(g).into_iter().filter(|n| Some(*n) != node).collect())
                    .collect();
                for i in 0..groups.len() {
                    for j in i + 1..groups.len() {
                        let (a, b) = (groups[i].clone(), groups[j].clone());
                        self.block_between(&a, &b);
                    }
                }
            }
            Fault::Heal {} => self.blocked.clear(),
            _ => {}
        }
    }
}

/// The running proxies; stopped and joined on drop.
pub struct Proxy {
    pub links: Arc<Mutex<Links>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Datagrams forwarded and dropped (by a blocked link).
    pub forwarded: Arc<AtomicU64>,
    pub dropped: Arc<AtomicU64>,
}

impl Proxy {
    /// A proxy socket at `fronts[j]` for each node `j`, forwarding to `backs[j]`.
    pub fn start(fronts: &[SocketAddr], backs: &[SocketAddr]) -> std::io::Result<Proxy> {
        let links = Arc::new(Mutex::new(Links::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded = Arc::new(AtomicU64::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for (j, (front, back)) in fronts.iter().zip(backs).enumerate() {
            let socket = UdpSocket::bind(front)?;
            socket.set_read_timeout(Some(Duration::from_millis(50)))?;
            let (links, stop, back) = (links.clone(), stop.clone(), *back);
            let (fwd, drp) = (forwarded.clone(), dropped.clone());
            let to = j as u32;
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; tenure_runtime::MAX_DATAGRAM];
                while !stop.load(Ordering::SeqCst) {
                    let Ok((n, _)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let from = postcard::take_from_bytes::<u32>(&buf[..n]).map(|(f, _)| f);
                    let blocked = match from {
                        Ok(f) => links
                            .lock()
                            .map(|l| l.blocked.contains(&(f, to)))
                            .unwrap_or(false),
                        Err(_) => true,
                    };
                    if blocked {
                        drp.fetch_add(1, Ordering::Relaxed);
                    } else if socket.send_to(&buf[..n], back).is_ok() {
                        fwd.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        Ok(Proxy {
            links,
            stop,
            threads,
            forwarded,
            dropped,
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_block_across_groups_and_heal_clears() {
        let mut l = Links::default();
        l.apply(
            &Fault::Partition {
                groups: vec![vec![NodeId(0), NodeId(1)]],
            },
            None,
            4,
        );
        assert!(l.blocked.contains(&(0, 2)) && l.blocked.contains(&(3, 1)));
        assert!(!l.blocked.contains(&(0, 1)) && !l.blocked.contains(&(2, 3)));
        l.apply(&Fault::Heal {}, None, 4);
        assert!(l.blocked.is_empty());
        l.apply(
            &Fault::OneWay {
                from: vec![NodeId(2)],
                to: vec![NodeId(0)],
            },
            None,
            4,
        );
        assert_eq!(l.blocked, BTreeSet::from([(2, 0)]));
        let mut l = Links::default();
        l.apply(
            &Fault::Isolate {
                node: tenure_scenario::NodeSel::Leader,
            },
            Some(1),
            3,
        );
        assert_eq!(l.blocked, BTreeSet::from([(0, 1), (1, 0), (1, 2), (2, 1)]));
    }

    #[test]
    fn a_blocked_link_drops_and_an_open_one_forwards() {
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let front: SocketAddr = {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap()
        };
        let proxy = Proxy::start(&[front], &[back.local_addr().unwrap()]).unwrap();
        proxy.links.lock().unwrap().blocked.insert((7, 0));
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        // From 7: blocked. From 3: forwarded (and it is the one that arrives).
        sender
            .send_to(&postcard::to_stdvec(&(7u32, 1u8)).unwrap(), front)
            .unwrap();
        sender
            .send_to(&postcard::to_stdvec(&(3u32, 2u8)).unwrap(), front)
            .unwrap();
        let mut buf = [0u8; 64];
        let (n, _) = back.recv_from(&mut buf).unwrap();
        assert_eq!(
            postcard::from_bytes::<(u32, u8)>(&buf[..n]).unwrap(),
            (3, 2)
        );
        drop(proxy);
    }
}
