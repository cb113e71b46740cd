//! The loopback proxy of `tenure cluster`: one UDP socket per node that every other node
//! sends to instead of the node itself, so the cluster can drop what a partition, a cut
//! or a one-way fault forbids, and lose, duplicate and delay what the scenario's
//! `[network]` (and its `network` faults) say. A datagram names its sender
//! (tenure-runtime puts the sender's id first, as a postcard varint); the proxy forwards
//! it to the node's real port unless the link from that sender is blocked. Delays are
//! drawn from the scenario's distribution with the simulator's sampler
//! (`tenure_sim::net::sample`) and added to loopback's own; a delayed datagram waits in
//! one queue, sent by one thread when it is due.
//!
//! In stream mode ([`Proxy::start_stream`]) the proxy is a TCP listener per node instead:
//! it reads a connection's hello (tenure-runtime's: the dialer's id), refuses the
//! connection (closes it before the node's answer, so the dialer's send fails) while
//! the link is blocked either way, and otherwise pipes bytes both ways to the node. As
//! in the simulator's stream mode, a link that becomes blocked holds the bytes on its
//! connections (they flow again, in order, at a heal), and a pair of nodes whose link
//! stays blocked (either way) for the connection timeout has its connections reset:
//! the proxy closes both sides, so both nodes see the connection end and their protocol
//! gets `on_disconnect`. A connection that one side closes (a killed node) is closed on
//! the other side too. Delays are drawn as for datagrams, per chunk of bytes, in order
//! (an arrival is never earlier than the previous one on the connection); loss and
//! duplication do not apply (TCP retransmits and deduplicates).

// Real sockets and real time: what the proxy is for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;
use tenure_core::{Rng, SplitMix64};
use tenure_scenario::Delay;
use tenure_scenario::Fault;

/// Which directed links drop everything: `(from, to)`; and what every other datagram
/// meets on its way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Links {
    pub blocked: BTreeSet<(u32, u32)>,
    pub loss: f64,
    pub duplicate: f64,
    /// `None`: loopback's own delay only.
    pub latency: Option<Delay>,
}

impl Links {
    /// Applies a network fault as the simulator does (`sim/src/net.rs`): the links it
    /// blocks or heals (`tenure_scenario::block_links`), and a `network` fault's loss,
    /// duplication and latency. `node` is the fault's node, resolved.
    pub fn apply(&mut self, fault: &Fault, node: Option<u32>, nodes: u32) {
        tenure_scenario::block_links(&mut self.blocked, fault, node, nodes);
        if let Fault::Network {
            latency,
            loss,
            duplicate,
        } = fault
        {
            if let Some(l) = latency {
                self.latency = Some(l.clone());
            }
            if let Some(l) = loss {
                self.loss = *l;
            }
            if let Some(d) = duplicate {
                self.duplicate = *d;
            }
        }
    }
}

/// The running proxies; stopped and joined on drop.
pub struct Proxy {
    pub links: Arc<Mutex<Links>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Datagrams forwarded (each copy) and dropped (a blocked link, a loss); in stream
    /// mode, connections piped and refused (a blocked link).
    pub forwarded: Arc<AtomicU64>,
    pub dropped: Arc<AtomicU64>,
    /// Stream mode: connections reset because their link stayed blocked for the
    /// connection timeout.
    pub resets: Arc<AtomicU64>,
}

/// One proxied connection (stream mode): both sockets, closed together.
struct Piped {
    /// The dialer and the node it reached.
    from: u32,
    to: u32,
    front: TcpStream,
    back: TcpStream,
    closed: Arc<AtomicBool>,
}

impl Piped {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.front.shutdown(Shutdown::Both);
        let _ = self.back.shutdown(Shutdown::Both);
    }
}

/// Whether the directed link `from -> to` is blocked now.
fn blocked(links: &Mutex<Links>, from: u32, to: u32) -> bool {
    links
        .lock()
        .map_or(true, |l| l.blocked.contains(&(from, to)))
}

impl Proxy {
    /// A proxy socket at `fronts[j]` for each node `j`, forwarding to `backs[j]`, with
    /// `links` to start with and draws from `seed`.
    pub fn start(
        fronts: &[SocketAddr],
        backs: &[SocketAddr],
        links: Links,
        seed: u64,
    ) -> std::io::Result<Proxy> {
        let links = Arc::new(Mutex::new(links));
        let rng = Arc::new(Mutex::new(SplitMix64(seed)));
        type Queue = BinaryHeap<Reverse<(Instant, u64, SocketAddr, Vec<u8>)>>;
        let queue: Arc<Mutex<Queue>> = Arc::new(Mutex::new(BinaryHeap::new()));
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
            let (rng, queue) = (rng.clone(), queue.clone());
            threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; tenure_runtime::MAX_DATAGRAM];
                while !stop.load(Ordering::SeqCst) {
                    let Ok((n, _)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let from = postcard::take_from_bytes::<u32>(&buf[..n]).map(|(f, _)| f);
                    // The datagram's fate: blocked, lost, or sent once or twice, each copy
                    // after its own delay.
                    let copies: Vec<Duration> = {
                        let (Ok(links), Ok(mut rng)) = (links.lock(), rng.lock()) else {
                            continue;
                        };
                        match from {
                            Ok(f) if !links.blocked.contains(&(f, to)) => {
                                if rng.chance(links.loss) {
                                    Vec::new()
                                } else {
                                    let twice = rng.chance(links.duplicate);
                                    (0..1 + usize::from(twice))
                                        .map(|_| {
                                            links.latency.as_ref().map_or(Duration::ZERO, |d| {
                                                tenure_sim::net::sample(d, &mut *rng)
                                            })
                                        })
                                        .collect()
                                }
                            }
                            _ => Vec::new(),
                        }
                    };
                    if copies.is_empty() {
                        drp.fetch_add(1, Ordering::Relaxed);
                    }
                    for delay in copies {
                        fwd.fetch_add(1, Ordering::Relaxed);
                        if delay.is_zero() {
                            let _ = socket.send_to(&buf[..n], back);
                        } else if let Ok(mut q) = queue.lock() {
                            let seq = q.len() as u64;
                            q.push(Reverse((
                                Instant::now() + delay,
                                seq,
                                back,
                                buf[..n].to_vec(),
                            )));
                        }
                    }
                }
            }));
        }
        // The delayed datagrams, sent when due.
        {
            let (stop, queue) = (stop.clone(), queue.clone());
            let socket = UdpSocket::bind("127.0.0.1:0")?;
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let due: Vec<(SocketAddr, Vec<u8>)> = match queue.lock() {
                        Ok(mut q) => {
                            let now = Instant::now();
                            let mut due = Vec::new();
                            while q.peek().is_some_and(|Reverse((at, ..))| *at <= now) {
                                if let Some(Reverse((_, _, to, bytes))) = q.pop() {
                                    due.push((to, bytes));
                                }
                            }
                            due
                        }
                        Err(_) => return,
                    };
                    for (to, bytes) in due {
                        let _ = socket.send_to(&bytes, to);
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
            }));
        }
        Ok(Proxy {
            links,
            stop,
            threads,
            forwarded,
            dropped,
            resets: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Stream mode: a TCP listener at `fronts[j]` for each node `j`, piping accepted
    /// connections to `backs[j]` (see the module's documentation); a pair's connections
    /// are reset once its link has been blocked for `timeout`.
    pub fn start_stream(
        fronts: &[SocketAddr],
        backs: &[SocketAddr],
        links: Links,
        seed: u64,
        timeout: Duration,
    ) -> std::io::Result<Proxy> {
        let links = Arc::new(Mutex::new(links));
        let rng = Arc::new(Mutex::new(SplitMix64(seed)));
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded = Arc::new(AtomicU64::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let resets = Arc::new(AtomicU64::new(0));
        let conns: Arc<Mutex<Vec<Piped>>> = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (j, (front, back)) in fronts.iter().zip(backs).enumerate() {
            let listener = TcpListener::bind(front)?;
            listener.set_nonblocking(true)?;
            let (links, stop, back, to) = (links.clone(), stop.clone(), *back, j as u32);
            let (fwd, drp, rng, conns) = (
                forwarded.clone(),
                dropped.clone(),
                rng.clone(),
                conns.clone(),
            );
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Ok((client, _)) = listener.accept() else {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    };
                    let (links, fwd, drp, rng, conns) = (
                        links.clone(),
                        fwd.clone(),
                        drp.clone(),
                        rng.clone(),
                        conns.clone(),
                    );
                    std::thread::spawn(move || {
                        let Some(p) = open(client, to, back, &links, timeout, &drp) else {
                            return;
                        };
                        fwd.fetch_add(1, Ordering::Relaxed);
                        let clones = (|| {
                            Ok::<_, std::io::Error>((
                                p.front.try_clone()?,
                                p.back.try_clone()?,
                                p.front.try_clone()?,
                                p.back.try_clone()?,
                            ))
                        })();
                        let Ok((f1, b1, f2, b2)) = clones else {
                            p.close();
                            return;
                        };
                        let closed = p.closed.clone();
                        let (from, to) = (p.from, p.to);
                        pipe(f1, b1, (from, to), &links, &rng, &closed, &p);
                        pipe(b2, f2, (to, from), &links, &rng, &closed, &p);
                        if let Ok(mut c) = conns.lock() {
                            c.push(p);
                        }
                    });
                }
            }));
        }
        // The connection timeout: resets the connections of pairs blocked for it; at
        // the end, closes every connection.
        {
            let (links, stop, conns, resets) =
                (links.clone(), stop.clone(), conns.clone(), resets.clone());
            threads.push(std::thread::spawn(move || {
                let mut broken_since: std::collections::BTreeMap<(u32, u32), Instant> =
                    std::collections::BTreeMap::new();
                loop {
                    let halt = stop.load(Ordering::SeqCst);
                    let Ok(mut conns) = conns.lock() else { return };
                    conns.retain(|p| !p.closed.load(Ordering::SeqCst));
                    if halt {
                        for p in conns.iter() {
                            p.close();
                        }
                        return;
                    }
                    let blocked: BTreeSet<(u32, u32)> = match links.lock() {
                        Ok(l) => l.blocked.clone(),
                        Err(_) => return,
                    };
                    let now = Instant::now();
                    let pair = |a: u32, b: u32| (a.min(b), a.max(b));
                    let broken: BTreeSet<(u32, u32)> =
                        blocked.iter().map(|&(a, b)| pair(a, b)).collect();
                    broken_since.retain(|p, _| broken.contains(p));
                    for p in &broken {
                        broken_since.entry(*p).or_insert(now);
                    }
                    for p in conns.iter() {
                        let since = broken_since.get(&pair(p.from, p.to));
                        if since.is_some_and(|s| now.duration_since(*s) >= timeout) {
                            // Counted before it is closed: whoever sees it closed sees
                            // it counted.
                            resets.fetch_add(1, Ordering::Relaxed);
                            p.close();
                        }
                    }
                    drop(conns);
                    std::thread::sleep(Duration::from_millis(5));
                }
            }));
        }
        Ok(Proxy {
            links,
            stop,
            threads,
            forwarded,
            dropped,
            resets,
        })
    }
}

/// Stream mode: reads a connection's hello; refuses it (closes it, counted in
/// `refused`) across a blocked link, or if the node does not take it; otherwise
/// connects to the node and passes the hello on.
fn open(
    mut client: TcpStream,
    to: u32,
    back: SocketAddr,
    links: &Mutex<Links>,
    timeout: Duration,
    refused: &AtomicU64,
) -> Option<Piped> {
    // Counted before it is closed: whoever sees it closed sees it counted.
    let refuse = |c: &TcpStream| {
        refused.fetch_add(1, Ordering::Relaxed);
        let _ = c.shutdown(Shutdown::Both);
    };
    let mut hello = [0u8; 8];
    let from = client
        .set_nonblocking(false)
        .and_then(|()| client.set_read_timeout(Some(timeout)))
        .and_then(|()| client.read_exact(&mut hello))
        .ok()
        .and_then(|()| tenure_runtime::stream::parse_hello(&hello));
    let Some(from) = from else {
        refuse(&client);
        return None;
    };
    if blocked(links, from, to) || blocked(links, to, from) {
        refuse(&client);
        return None;
    }
    let node = TcpStream::connect_timeout(&back, timeout).and_then(|mut s| {
        s.set_nodelay(true)?;
        s.write_all(&hello)?;
        Ok(s)
    });
    let Ok(node) = node else {
        refuse(&client);
        return None;
    };
    if client.set_read_timeout(None).is_err() || client.set_nodelay(true).is_err() {
        let _ = node.shutdown(Shutdown::Both);
        refuse(&client);
        return None;
    }
    Some(Piped {
        from,
        to,
        front: client,
        back: node,
        closed: Arc::new(AtomicBool::new(false)),
    })
}

/// Stream mode: copies `src` to `dst` over the directed link `link`, each chunk after
/// its drawn delay and never before the previous one, held while the link is blocked;
/// when either side ends, closes both (`ends`).
fn pipe(
    mut src: TcpStream,
    mut dst: TcpStream,
    link: (u32, u32),
    links: &Arc<Mutex<Links>>,
    rng: &Arc<Mutex<SplitMix64>>,
    closed: &Arc<AtomicBool>,
    ends: &Piped,
) {
    let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let (links_r, rng) = (links.clone(), rng.clone());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last = Instant::now();
        loop {
            let n = match src.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let delay = match (links_r.lock(), rng.lock()) {
                (Ok(l), Ok(mut r)) => l
                    .latency
                    .as_ref()
                    .map_or(Duration::ZERO, |d| tenure_sim::net::sample(d, &mut *r)),
                _ => break,
            };
            last = last.max(Instant::now() + delay);
            if tx.send((last, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    let (links, closed) = (links.clone(), closed.clone());
    let (Ok(a), Ok(b)) = (ends.front.try_clone(), ends.back.try_clone()) else {
        ends.close();
        return;
    };
    std::thread::spawn(move || {
        for (due, bytes) in rx {
            let wait = due.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            while blocked(&links, link.0, link.1) && !closed.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(2));
            }
            if closed.load(Ordering::SeqCst) || dst.write_all(&bytes).is_err() {
                break;
            }
        }
        // One side ended (or the connection was reset): the whole connection goes.
        closed.store(true, Ordering::SeqCst);
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
    });
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
    use tenure_core::NodeId;

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
        let proxy =
            Proxy::start(&[front], &[back.local_addr().unwrap()], Links::default(), 1).unwrap();
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

    /// Stream mode, with a node played by hand: a connection's hello reaches the node
    /// and bytes flow both ways; bytes sent across a blocked link are held and arrive,
    /// in order, after the heal; a link blocked for the connection timeout has its
    /// connection closed on both sides; while it is blocked a new connection is refused
    /// before it reaches the node. (Events only: no assertion on how long anything took.)
    #[test]
    fn stream_mode_holds_then_resets_and_refuses_across_a_blocked_link() {
        use std::net::TcpListener;
        use tenure_runtime::stream::{hello, parse_hello, ACK};
        let ended = |s: &mut TcpStream| {
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut b = [0u8; 16];
            loop {
                match s.read(&mut b) {
                    Ok(0) => return true,
                    Ok(_) => continue,
                    Err(e) => {
                        return !matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        )
                    }
                }
            }
        };
        for timeout in [Duration::from_secs(60), Duration::from_millis(200)] {
            let back = TcpListener::bind("127.0.0.1:0").unwrap();
            let front = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let proxy = Proxy::start_stream(
                &[front],
                &[back.local_addr().unwrap()],
                Links::default(),
                1,
                timeout,
            )
            .unwrap();
            let mut dialer = TcpStream::connect(front).unwrap();
            dialer.write_all(&hello(NodeId(3))).unwrap();
            let (mut node, _) = back.accept().unwrap();
            node.set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            dialer
                .set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            let mut h = [0u8; 8];
            node.read_exact(&mut h).unwrap();
            assert_eq!(parse_hello(&h), Some(3), "the dialer's hello, passed on");
            node.write_all(&[ACK]).unwrap();
            let mut a = [0u8; 1];
            dialer.read_exact(&mut a).unwrap();
            assert_eq!(a[0], ACK);
            proxy.links.lock().unwrap().blocked.insert((3, 0));
            if timeout > Duration::from_secs(1) {
                // Held across the block, delivered in order after the heal.
                dialer.write_all(b"ab").unwrap();
                dialer.write_all(b"cd").unwrap();
                proxy.links.lock().unwrap().blocked.clear();
                let mut got = [0u8; 4];
                node.read_exact(&mut got).unwrap();
                assert_eq!(&got, b"abcd");
                assert_eq!(proxy.resets.load(Ordering::Relaxed), 0);
            } else {
                // Blocked for the timeout: both sides closed.
                assert!(ended(&mut dialer), "the dialer's side closed");
                assert!(ended(&mut node), "the node's side closed");
                assert!(proxy.resets.load(Ordering::Relaxed) >= 1);
                // Still blocked: a new connection is refused, the node never sees it.
                let mut again = TcpStream::connect(front).unwrap();
                let _ = again.write_all(&hello(NodeId(3)));
                assert!(ended(&mut again), "refused");
                assert!(proxy.dropped.load(Ordering::Relaxed) >= 1);
                back.set_nonblocking(true).unwrap();
                assert!(
                    back.accept().is_err(),
                    "the refused connection reached the node"
                );
            }
            drop(proxy);
        }
    }
}
