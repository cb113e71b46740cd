//! Stream mode for real nodes: TCP connections on loopback, with the simulator's stream
//! semantics (`sim/src/world/stream.rs`) as far as a real network gives them.
//!
//! * **Connections.** A node opens a connection to a peer the first time it sends to it
//!   and keeps it: one connection per direction (the sender dials, the receiver only
//!   reads), so the two ends never race to open one pair. Together the two directions
//!   are the pair's connection: when either is reset, the node closes the other too,
//!   so both ends learn of it.
//! * **Handshake.** The dialer writes a hello ([`HELLO_MAGIC`] and its node id, 8
//!   bytes); the receiver answers one byte ([`ACK`]). A connection counts as open only
//!   after the answer: one closed before it (the peer is down, or `tenure cluster`'s
//!   proxy refuses it across a blocked link) is a failed send, not a reset, as in the
//!   simulator, where sends across a link still broken after a reset fail at once.
//! * **Frames.** Each message is one frame: a 4-byte little-endian length, then the
//!   message in postcard (the sender is the connection's, from the hello). FIFO per
//!   direction, as TCP gives it.
//! * **Resets.** A connection that ends (EOF, a read or write error: the peer was
//!   killed, or the proxy cut it) is reset: the node closes both directions, messages
//!   still queued on it (not yet written, or written and not yet read) are lost, and
//!   the protocol gets `on_disconnect(peer)` once. Its peer sees its own directions end
//!   and is told too. A later send opens a new connection.
//!
//! Where this differs from the simulator: a connection exists only once one end has
//! sent (the simulator keeps one for every pair), so two nodes that never talked are
//! never told of a reset; and a reset is seen when the OS reports it (a killed peer at
//! once; a partition when the proxy cuts the connection, after the scenario's
//! `connection_timeout`).
//!
//! Threads: one writer per peer (it dials, writes frames, and a watcher thread reads the
//! dialed connection to see it end), one acceptor, and one reader per accepted
//! connection. Everything reaches the node's loop through one channel, so the protocol
//! runs on one thread, as in the simulator.

use crate::{Core, NodeSpec, RuntimeError, Stats, Wire};
use serde::{de::DeserializeOwned, Serialize};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tenure_core::{NodeId, Observation, Observe, Protocol};

/// The first four bytes of a connection: "TNR" and a version.
pub const HELLO_MAGIC: [u8; 4] = *b"TNR1";
/// The receiver's answer to a hello: the connection is open.
pub const ACK: u8 = 0xA5;
/// The largest frame a node accepts (a longer length is a broken connection).
pub const MAX_FRAME: usize = 16 << 20;

/// How long a writer waits for a message before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(50);

/// The hello a dialer writes: the magic and its node id.
pub fn hello(me: NodeId) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&HELLO_MAGIC);
    h[4..].copy_from_slice(&me.0.to_le_bytes());
    h
}

/// The node id in a hello, if it is one.
pub fn parse_hello(h: &[u8; 8]) -> Option<u32> {
    (h[..4] == HELLO_MAGIC).then(|| u32::from_le_bytes([h[4], h[5], h[6], h[7]]))
}

/// Writes one frame: length, then body.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| (*l as usize) <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "frame too long"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(body);
    w.write_all(&frame)
}

/// Reads one frame's body; `Ok(None)` at a clean end of the stream between frames.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit {MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Opens a connection to `addr` as node `me`: connect, hello, wait for the answer.
pub fn dial(addr: SocketAddr, me: NodeId, timeout: Duration) -> io::Result<TcpStream> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    s.write_all(&hello(me))?;
    s.set_read_timeout(Some(timeout))?;
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack)?;
    if ack[0] != ACK {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a tenure node",
        ));
    }
    s.set_read_timeout(None)?;
    Ok(s)
}

/// Which way a connection goes, seen from this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    /// Dialed by this node: its messages to the peer.
    Out,
    /// Accepted: the peer's messages to this node.
    In,
}

/// What the threads tell the node's loop.
enum Event {
    /// A connection opened (`epoch`: the peer's epoch it was dialed in; accepted ones
    /// take the epoch current when the loop sees them).
    Opened {
        peer: NodeId,
        conn: u64,
        dir: Dir,
        epoch: u64,
        stream: TcpStream,
    },
    Frame {
        peer: NodeId,
        conn: u64,
        body: Vec<u8>,
    },
    /// A connection ended (EOF, an error, a refused write).
    Ended { peer: NodeId, conn: u64 },
}

/// What the loop keeps of one peer's connection.
#[derive(Default)]
struct Link {
    out: Option<(u64, TcpStream)>,
    inc: Option<(u64, TcpStream)>,
}

/// A message on its way to a peer's writer: the peer's epoch when it was sent, and the
/// encoded message.
type Queued = (u64, Vec<u8>);

/// The protocol's sends, handed to the peers' writers.
struct Outbox {
    /// Per peer: its writer's queue, and its epoch (how many resets the pair has had):
    /// a message queued in an earlier epoch was queued on a reset connection, and is
    /// lost.
    peers: Vec<(Sender<Queued>, Arc<AtomicU64>)>,
}

impl<M: Serialize> Wire<M> for Outbox {
    fn send(&mut self, me: NodeId, to: NodeId, msg: &M) -> bool {
        let Some((queue, epoch)) = self.peers.get(to.index()) else {
            return false;
        };
        match postcard::to_stdvec(msg) {
            Ok(body) if body.len() <= MAX_FRAME => {
                queue.send((epoch.load(Ordering::SeqCst), body)).is_ok()
            }
            Ok(body) => {
                eprintln!(
                    "tenure-runtime: n{}: a message of {} bytes is over the frame limit {MAX_FRAME}: not sent",
                    me.0,
                    body.len()
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

/// Reads `stream` until it ends: frames (for an accepted connection) go to the loop;
/// on a dialed connection, where the peer never writes, any byte is a broken stream.
fn reader(peer: NodeId, conn: u64, dir: Dir, mut stream: TcpStream, events: Sender<Event>) {
    loop {
        match read_frame(&mut stream) {
            Ok(Some(body)) if dir == Dir::In => {
                if events.send(Event::Frame { peer, conn, body }).is_err() {
                    return;
                }
            }
            _ => break,
        }
    }
    let _ = events.send(Event::Ended { peer, conn });
}

struct Writer {
    me: NodeId,
    peer: NodeId,
    addr: SocketAddr,
    timeout: Duration,
    epoch: Arc<AtomicU64>,
    ids: Arc<AtomicU64>,
    events: Sender<Event>,
    /// Messages lost: queued on a reset connection, or no connection could be opened.
    lost: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Writer {
    fn run(self, queue: Receiver<Queued>) {
        // The open connection: its id, the epoch it was opened in, the stream.
        let mut conn: Option<(u64, u64, TcpStream)> = None;
        loop {
            let (epoch, body) = match queue.recv_timeout(POLL) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) if !self.stop.load(Ordering::SeqCst) => continue,
                Err(_) => break,
            };
            // Stopping: what is still queued is not sent (each could wait a whole
            // timeout for a peer that is stopping too).
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let now = self.epoch.load(Ordering::SeqCst);
            if epoch < now {
                // Queued on a connection that was reset since.
                self.lost.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // The loop reset the connection (and closed it): open a new one.
            if conn.as_ref().is_some_and(|(_, e, _)| *e < now) {
                conn = None;
            }
            if conn.is_none() {
                match dial(self.addr, self.me, self.timeout) {
                    Ok(s) => {
                        let id = self.ids.fetch_add(1, Ordering::SeqCst);
                        let (Ok(watch), Ok(for_loop)) = (s.try_clone(), s.try_clone()) else {
                            self.lost.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        if self
                            .events
                            .send(Event::Opened {
                                peer: self.peer,
                                conn: id,
                                dir: Dir::Out,
                                epoch,
                                stream: for_loop,
                            })
                            .is_err()
                        {
                            break;
                        }
                        let (peer, events) = (self.peer, self.events.clone());
                        std::thread::spawn(move || reader(peer, id, Dir::Out, watch, events));
                        conn = Some((id, epoch, s));
                    }
                    // Refused, or closed before the answer: the message is lost, and
                    // no connection was reset.
                    Err(_) => {
                        self.lost.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                }
            }
            let Some((id, _, stream)) = conn.as_mut() else {
                continue;
            };
            if write_frame(stream, &body).is_err() {
                self.lost.fetch_add(1, Ordering::Relaxed);
                let _ = self.events.send(Event::Ended {
                    peer: self.peer,
                    conn: *id,
                });
                conn = None;
            }
        }
        if let Some((_, _, s)) = conn {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Takes connections on `listener`: checks the hello, answers it, tells the loop, and
/// reads the connection's frames on a thread of its own.
fn acceptor(
    listener: TcpListener,
    nodes: usize,
    timeout: Duration,
    ids: Arc<AtomicU64>,
    events: Sender<Event>,
    stop: Arc<AtomicBool>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        let (ids, events) = (ids.clone(), events.clone());
        std::thread::spawn(move || {
            let mut h = [0u8; 8];
            let from = stream
                .set_read_timeout(Some(timeout))
                .and_then(|()| stream.read_exact(&mut h))
                .ok()
                .and_then(|()| parse_hello(&h))
                .filter(|f| (*f as usize) < nodes);
            let Some(from) = from else {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            };
            let peer = NodeId(from);
            let conn = ids.fetch_add(1, Ordering::SeqCst);
            let opened = stream.set_read_timeout(None).is_ok()
                && stream.set_nodelay(true).is_ok()
                && stream.write_all(&[ACK]).is_ok();
            let (true, Ok(for_loop)) = (opened, stream.try_clone()) else {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            };
            // Opened before any of its frames: the loop registers it first.
            if events
                .send(Event::Opened {
                    peer,
                    conn,
                    dir: Dir::In,
                    epoch: 0,
                    stream: for_loop,
                })
                .is_ok()
            {
                reader(peer, conn, Dir::In, stream, events);
            }
        });
    }
}

/// Runs node `spec.me` in stream mode (see the module's documentation).
pub(crate) fn run<P>(
    config: &P::Config,
    spec: &NodeSpec,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Stats, RuntimeError>
where
    P: Protocol,
    P::Msg: Serialize + DeserializeOwned,
{
    let me = spec.me;
    let n = spec.cluster.size();
    let mut core: Core<P::Timer> = Core::open(spec)?;
    let addr = spec.listen;
    let listener =
        TcpListener::bind(addr).map_err(|e| RuntimeError::Io(format!("bind tcp {addr}"), e))?;
    let (tx, events) = mpsc::channel::<Event>();
    let ids = Arc::new(AtomicU64::new(1));
    let lost = Arc::new(AtomicU64::new(0));
    let halt = Arc::new(AtomicBool::new(false));
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    {
        let (ids, tx, halt) = (ids.clone(), tx.clone(), halt.clone());
        threads.push(std::thread::spawn(move || {
            acceptor(listener, n, timeout, ids, tx, halt)
        }));
    }
    let mut outbox = Outbox { peers: Vec::new() };
    for (p, peer_addr) in spec.addrs.iter().enumerate() {
        let (qtx, qrx) = mpsc::channel();
        let epoch = Arc::new(AtomicU64::new(0));
        outbox.peers.push((qtx, epoch.clone()));
        let w = Writer {
            me,
            peer: NodeId(p as u32),
            addr: *peer_addr,
            timeout,
            epoch,
            ids: ids.clone(),
            events: tx.clone(),
            lost: lost.clone(),
            stop: halt.clone(),
        };
        threads.push(std::thread::spawn(move || w.run(qrx)));
    }
    drop(tx);
    let mut links: Vec<Link> = (0..n).map(|_| Link::default()).collect();
    let mut node = P::new(config, me, &spec.cluster);
    core.env::<P::Msg>(&mut outbox)
        .observe(Observation::Started);
    node.on_start(&mut core.env(&mut outbox));
    let result = (|| {
        while !stop.load(Ordering::SeqCst) {
            // Wait for input or the next timer; then take every event already here
            // before any timer that fell due (as datagram mode does).
            let mut next = match events.recv_timeout(core.wait()) {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RuntimeError::Spec("the connection threads ended".into()))
                }
            };
            while let Some(event) = next {
                handle(&mut core, &mut node, &mut outbox, &mut links, event);
                // A backlog (slow fsyncs, a stopped process) does not delay a stop.
                next = if stop.load(Ordering::SeqCst) {
                    None
                } else {
                    events.try_recv().ok()
                };
            }
            core.fire_due(&mut node, &mut outbox);
        }
        Ok(())
    })();
    // Stop the threads: the writers see the flag, the acceptor a last connection, the
    // readers their connections shut down.
    halt.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
    for link in &mut links {
        for (_, s) in link.out.take().into_iter().chain(link.inc.take()) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
    drop(outbox);
    // Connections the loop has not seen yet (before the join: a writer blocked on one
    // is freed by its shutdown), then those opened while the threads stopped.
    let close_opened = |events: &Receiver<Event>| {
        while let Ok(e) = events.try_recv() {
            if let Event::Opened { stream, .. } = e {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    };
    close_opened(&events);
    for t in threads {
        let _ = t.join();
    }
    close_opened(&events);
    core.stats.dropped += lost.load(Ordering::Relaxed);
    result.map(|()| core.stats)
}

fn handle<P>(
    core: &mut Core<P::Timer>,
    node: &mut P,
    outbox: &mut Outbox,
    links: &mut [Link],
    event: Event,
) where
    P: Protocol,
    P::Msg: Serialize + DeserializeOwned,
{
    match event {
        Event::Opened {
            peer,
            conn,
            dir,
            epoch,
            stream,
        } => {
            let Some(link) = links.get_mut(peer.index()) else {
                let _ = stream.shutdown(Shutdown::Both);
                return;
            };
            let current = outbox.peers[peer.index()].1.load(Ordering::SeqCst);
            match dir {
                // Dialed for a message of an epoch that has since been reset: close it.
                Dir::Out if epoch < current => {
                    let _ = stream.shutdown(Shutdown::Both);
                }
                Dir::Out => {
                    if let Some((_, old)) = link.out.replace((conn, stream)) {
                        let _ = old.shutdown(Shutdown::Both);
                    }
                }
                Dir::In => {
                    // A new connection from the peer replaces an older one (a
                    // restarted peer dials again).
                    if let Some((_, old)) = link.inc.replace((conn, stream)) {
                        let _ = old.shutdown(Shutdown::Both);
                    }
                }
            }
        }
        Event::Frame { peer, conn, body } => {
            let current = links
                .get(peer.index())
                .and_then(|l| l.inc.as_ref())
                .is_some_and(|(c, _)| *c == conn);
            if !current {
                // Read from a connection already reset: lost with it.
                core.stats.dropped += 1;
                return;
            }
            match postcard::from_bytes::<P::Msg>(&body) {
                Ok(msg) => {
                    core.stats.received += 1;
                    node.on_message(&mut core.env(outbox), peer, msg);
                }
                Err(_) => core.stats.dropped += 1,
            }
        }
        Event::Ended { peer, conn } => {
            let Some(link) = links.get_mut(peer.index()) else {
                return;
            };
            let ours = link.out.as_ref().is_some_and(|(c, _)| *c == conn)
                || link.inc.as_ref().is_some_and(|(c, _)| *c == conn);
            if !ours {
                // One the loop already closed (a reset it handled, a replaced one).
                return;
            }
            // The pair's connection is reset: close both directions, so the peer is
            // told too; what was queued on it is lost; the protocol hears of it once.
            for (_, s) in link.out.take().into_iter().chain(link.inc.take()) {
                let _ = s.shutdown(Shutdown::Both);
            }
            outbox.peers[peer.index()].1.fetch_add(1, Ordering::SeqCst);
            core.stats.disconnects += 1;
            // Said as it happens (the exit line's count needs a clean exit).
            eprintln!(
                "tenure-runtime: n{}: the connection with n{} was reset",
                core.me.0, peer.0
            );
            node.on_disconnect(&mut core.env(outbox), peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_clean_end_is_not_an_error() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"abc").unwrap();
        write_frame(&mut buf, b"").unwrap();
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), Some(Vec::new()));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        // Cut inside a frame: an error, not an end.
        let mut cut = &buf[..5];
        assert!(read_frame(&mut cut).is_err());
        // A length over the limit is refused before anything is allocated.
        let mut huge = &(u32::MAX.to_le_bytes())[..];
        assert!(read_frame(&mut huge).is_err());
    }

    #[test]
    fn hellos_name_their_sender() {
        assert_eq!(parse_hello(&hello(NodeId(7))), Some(7));
        assert_eq!(parse_hello(b"GET / HT"), None);
    }
}
