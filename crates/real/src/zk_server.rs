//! `zookeeper` (the lock and election recipes) against a real ZooKeeper 3.8 server
//! (Debian's zookeeperd: `ZooKeeperServerMain`, standalone): each client's [`ZkMsg`]
//! requests become ZooKeeper's own wire protocol (jute records over TCP, as
//! `ClientCnxn` sends them), on one TCP connection per session, and what the server
//! sends back (replies, pings, watch events) becomes the model server's messages.
//!
//! Why no client crate: a ZooKeeper client library (`zookeeper`, `zookeeper-client`)
//! keeps its session alive with a ping thread of its own and reconnects by itself.
//! The zoo's client does both itself (its `Ping`, `Reconnect` and `SetWatches`), and a
//! client paused in a real run must stop pinging, as a paused JVM stops, so that the
//! server expires its session for real. So each model message is one wire request:
//!
//! | the model's request | on the wire |
//! |---|---|
//! | `Connect { timeout }` | a new TCP connection and a `ConnectRequest` (session 0, the timeout); the answer's session id and negotiated timeout |
//! | `Reconnect { session }` | a new TCP connection and a `ConnectRequest` with the session's id and password: a timeout of 0 back means expired |
//! | `Ping` | a ping (`xid -2`, `OpCode.ping`) |
//! | `Create { path, ephemeral, sequential }` | `create2` (its `Stat` has the czxid), after `create`s of the persistent parents (pipelined on the session: ZooKeeper runs a session's requests in order) |
//! | `Delete`, `GetChildren`, `Exists` (watch flags as asked) | `delete` (any version), `getChildren`, `exists` (`NONODE`: no node) |
//! | `SetWatches { exists, children }` | `setWatches` (`xid -8`) with the session's last zxid: a watch on a node that existed is a data watch, on one that did not an exist watch |
//!
//! Watch events (`xid -1`) are numbered per session as the model server numbers them,
//! and a `Pong` says how many were delivered before it: one TCP connection delivers in
//! order, so the model client's check for lost events finds none, unless a blocked link
//! dropped one.
//!
//! The server: `java -cp zookeeper.jar ... ZooKeeperServerMain D/zoo.cfg` with
//! `clientPortAddress=127.0.0.1`, `admin.enableServer=false` (the AdminServer would
//! listen on 0.0.0.0:8080), no JMX port, `tickTime=100` (session expiry is checked every
//! tick) and session timeouts allowed from 200ms to 60s.

use crate::node::Later;
use crate::Backend;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tenure_core::NodeId;
use tenure_protocols::zookeeper::{ZkError, ZkEvent, ZkMsg};

/// The Debian package that has ZooKeeper's server.
pub const PACKAGE: &str = "zookeeperd";
/// ZooKeeper's jar (its manifest names the jars it needs).
pub const JAR: &str = "/usr/share/java/zookeeper.jar";
/// An SLF4J binding that writes the server's log to stderr, if installed.
const LOGGER: &str = "/usr/share/java/slf4j-simple.jar";

/// `java`, if it and ZooKeeper's jar are installed; else the message saying what is
/// missing, naming the package.
pub fn java() -> Result<PathBuf, String> {
    if !Path::new(JAR).is_file() {
        return Err(crate::missing(JAR, PACKAGE).replace("is not on PATH", "is not there"));
    }
    crate::servers::on_path("java").ok_or_else(|| crate::missing("java", PACKAGE))
}

/// The server's configuration: loopback only, no AdminServer, its data under `dir`.
pub fn config(port: u16, dir: &Path) -> String {
    format!(
        "tickTime=100\n\
         minSessionTimeout=200\n\
         maxSessionTimeout=60000\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         preAllocSize=1024\n\
         4lw.commands.whitelist=srvr\n",
        dir.join("data").display()
    )
}

/// The java command line of one server; writes its `zoo.cfg` into `dir`.
pub fn args(port: u16, dir: &Path) -> Vec<OsString> {
    let cfg = dir.join("zoo.cfg");
    if let Err(e) = std::fs::write(&cfg, config(port, dir)) {
        eprintln!("tenure real: {}: {e}", cfg.display());
    }
    let mut cp = JAR.to_string();
    if Path::new(LOGGER).is_file() {
        cp = format!("{cp}:{LOGGER}");
    }
    [
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-cp",
        &cp,
        "org.apache.zookeeper.server.ZooKeeperServerMain",
    ]
    .into_iter()
    .map(OsString::from)
    .chain([cfg.into_os_string()])
    .collect()
}

// ---- jute, ZooKeeper's serialization: big-endian, strings and buffers length-prefixed.

#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn int(&mut self, v: i32) -> &mut Self {
        self.0.extend(v.to_be_bytes());
        self
    }
    fn long(&mut self, v: i64) -> &mut Self {
        self.0.extend(v.to_be_bytes());
        self
    }
    fn bool(&mut self, v: bool) -> &mut Self {
        self.0.push(v as u8);
        self
    }
    fn buf(&mut self, v: &[u8]) -> &mut Self {
        self.int(v.len() as i32);
        self.0.extend(v);
        self
    }
    fn string(&mut self, v: &str) -> &mut Self {
        self.buf(v.as_bytes())
    }
    fn strings(&mut self, v: &[String]) -> &mut Self {
        self.int(v.len() as i32);
        for s in v {
            self.string(s);
        }
        self
    }
    /// The frame: a 4-byte length, then the record.
    fn frame(&self) -> Vec<u8> {
        let mut f = (self.0.len() as i32).to_be_bytes().to_vec();
        f.extend(&self.0);
        f
    }
}

struct In<'a>(&'a [u8]);

impl In<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn int(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn long(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn buf(&mut self) -> Option<Vec<u8>> {
        let n = self.int()?;
        if n < 0 {
            return Some(Vec::new());
        }
        Some(self.take(n as usize)?.to_vec())
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.buf()?).ok()
    }
    /// A `Stat`'s czxid (the rest of it skipped).
    fn stat_czxid(&mut self) -> Option<i64> {
        let czxid = self.long()?;
        // mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner,
        // dataLength, numChildren, pzxid
        self.take(8 * 3 + 4 * 3 + 8 + 4 * 2 + 8)?;
        Some(czxid)
    }
}

fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let n = i32::from_be_bytes(len);
    if !(0..=16 << 20).contains(&n) {
        return Err(std::io::Error::other(format!("a frame of {n} bytes")));
    }
    let mut body = vec![0u8; n as usize];
    s.read_exact(&mut body)?;
    Ok(body)
}

// Op codes and errors (`ZooDefs.OpCode`, `KeeperException.Code`).
const OP_CREATE: i32 = 1;
const OP_DELETE: i32 = 2;
const OP_EXISTS: i32 = 3;
const OP_GET_CHILDREN: i32 = 8;
const OP_PING: i32 = 11;
const OP_CREATE2: i32 = 15;
const OP_SET_WATCHES: i32 = 101;
const OP_CLOSE: i32 = -11;
const XID_NOTIFICATION: i32 = -1;
const XID_PING: i32 = -2;
const XID_SET_WATCHES: i32 = -8;
const OK: i32 = 0;
const NONODE: i32 = -101;
const NODEEXISTS: i32 = -110;
const NOTEMPTY: i32 = -111;
const SESSIONEXPIRED: i32 = -112;

/// Opens a TCP connection and says hello: a `ConnectRequest` for `session` (0: a new
/// one). The answer: the stream, the session id, its password and the negotiated
/// timeout in ms (0 or less: the session has expired).
fn hello(
    port: u16,
    last_zxid: i64,
    timeout: Duration,
    session: i64,
    passwd: &[u8],
) -> Result<(TcpStream, i64, Vec<u8>, i32), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1))
        .map_err(|e| format!("127.0.0.1:{port}: {e}"))?;
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(|e| e.to_string())?;
    let mut req = Out::default();
    req.int(0) // protocolVersion
        .long(last_zxid)
        .int(timeout.as_millis() as i32)
        .long(session)
        .buf(if passwd.is_empty() {
            &[0u8; 16]
        } else {
            passwd
        })
        .bool(false); // readOnly
    s.write_all(&req.frame()).map_err(|e| e.to_string())?;
    let body = read_frame(&mut s).map_err(|e| e.to_string())?;
    let mut r = In(&body);
    let bad = || "a short ConnectResponse".to_string();
    let _version = r.int().ok_or_else(bad)?;
    let negotiated = r.int().ok_or_else(bad)?;
    let id = r.long().ok_or_else(bad)?;
    let passwd = r.buf().ok_or_else(bad)?;
    s.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok((s, id, passwd, negotiated))
}

/// Whether a server on `port` opens sessions (one is opened and closed).
pub fn ready(port: u16) -> bool {
    match hello(port, 0, Duration::from_secs(2), 0, &[]) {
        Ok((mut s, _, _, t)) if t > 0 => {
            let mut close = Out::default();
            close.int(1).int(OP_CLOSE);
            let _ = s.write_all(&close.frame());
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = read_frame(&mut s);
            true
        }
        _ => false,
    }
}

/// The servers of a run, by node.
pub struct Zk {
    pub ports: BTreeMap<NodeId, u16>,
}

/// What a reply on the wire answers.
enum Pending {
    /// A parent made on the way: its answer is not the model's.
    Parent,
    Create {
        xid: u64,
    },
    Delete {
        xid: u64,
    },
    Children {
        xid: u64,
        path: String,
    },
    Exists {
        xid: u64,
        path: String,
    },
    SetWatches {
        xid: u64,
    },
}

/// What a session's connection shares with the thread that reads it.
struct Shared {
    session: u64,
    pending: Mutex<BTreeMap<i32, Pending>>,
    /// Watch events delivered on this session (across its connections).
    events: Arc<AtomicU64>,
    last_zxid: Arc<AtomicI64>,
}

/// A session and its current TCP connection.
struct Session {
    id: i64,
    passwd: Vec<u8>,
    timeout: Duration,
    stream: TcpStream,
    shared: Arc<Shared>,
    next_xid: i32,
}

impl Drop for Session {
    fn drop(&mut self) {
        // The reading thread ends with the connection; the session stays on the
        // server until it expires, as when a client process dies.
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

/// A client's connection to one server: its session, if it has one.
pub struct Conn {
    port: u16,
    session: Option<Session>,
}

impl Backend for Zk {
    type Msg = ZkMsg;
    type Conn = Conn;

    fn connect(&self, server: NodeId) -> Result<Conn, String> {
        let port = *self
            .ports
            .get(&server)
            .ok_or_else(|| format!("n{} is not a server", server.0))?;
        Ok(Conn {
            port,
            session: None,
        })
    }

    fn request(
        &self,
        c: &mut Conn,
        msg: ZkMsg,
        later: &Later<ZkMsg>,
    ) -> Result<Option<ZkMsg>, String> {
        match msg {
            ZkMsg::Connect { timeout } => {
                c.session = None;
                let (stream, id, passwd, negotiated) = hello(c.port, 0, timeout, 0, &[])?;
                if negotiated <= 0 {
                    return Err("the server refused a new session".into());
                }
                let s = open(
                    stream,
                    id,
                    passwd,
                    Duration::from_millis(negotiated as u64),
                    Arc::new(AtomicU64::new(0)),
                    Arc::new(AtomicI64::new(0)),
                    later,
                )?;
                let reply = ZkMsg::Connected {
                    session: s.id as u64,
                    timeout: s.timeout,
                };
                c.session = Some(s);
                Ok(Some(reply))
            }
            ZkMsg::Reconnect { session, xid } => {
                let Some(old) = c.session.take().filter(|s| s.id as u64 == session) else {
                    return Ok(Some(ZkMsg::SessionExpired { session }));
                };
                let (events, zxid) = (old.shared.events.clone(), old.shared.last_zxid.clone());
                let (passwd, timeout) = (old.passwd.clone(), old.timeout);
                drop(old);
                let (stream, id, passwd, negotiated) = hello(
                    c.port,
                    zxid.load(Ordering::SeqCst),
                    timeout,
                    session as i64,
                    &passwd,
                )?;
                if negotiated <= 0 || id as u64 != session {
                    return Ok(Some(ZkMsg::SessionExpired { session }));
                }
                let s = open(stream, id, passwd, timeout, events, zxid, later)?;
                let reply = ZkMsg::Reconnected {
                    session,
                    xid,
                    events: s.shared.events.load(Ordering::SeqCst),
                };
                c.session = Some(s);
                Ok(Some(reply))
            }
            ZkMsg::Ping { session } => {
                let Some(s) = live(c, session) else {
                    return Ok(stale(c, session));
                };
                let mut p = Out::default();
                p.int(XID_PING).int(OP_PING);
                s.send(&p, None)?;
                Ok(None)
            }
            ZkMsg::Create {
                session,
                xid,
                path,
                ephemeral,
                sequential,
            } => {
                let Some(s) = live(c, session) else {
                    return Ok(stale(c, session));
                };
                // The persistent parents first (Curator's creatingParentsIfNeeded):
                // the session's requests run in order, so they exist by the create.
                let mut parent = String::new();
                let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
                for part in parts.iter().take(parts.len().saturating_sub(1)) {
                    parent = format!("{parent}/{part}");
                    let x = s.xid();
                    let mut r = Out::default();
                    r.int(x).int(OP_CREATE);
                    create_body(&mut r, &parent, 0);
                    s.send(&r, Some((x, Pending::Parent)))?;
                }
                let x = s.xid();
                let mut r = Out::default();
                r.int(x).int(OP_CREATE2);
                let flags = i32::from(ephemeral) | (i32::from(sequential) << 1);
                create_body(&mut r, &path, flags);
                s.send(&r, Some((x, Pending::Create { xid })))?;
                Ok(None)
            }
            ZkMsg::Delete { session, xid, path } => {
                let Some(s) = live(c, session) else {
                    return Ok(stale(c, session));
                };
                let x = s.xid();
                let mut r = Out::default();
                r.int(x).int(OP_DELETE).string(&path).int(-1);
                s.send(&r, Some((x, Pending::Delete { xid })))?;
                Ok(None)
            }
            ZkMsg::GetChildren {
                session,
                xid,
                path,
                watch,
            }
            | ZkMsg::Exists {
                session,
                xid,
                path,
                watch,
            } if live(c, session).is_none() => {
                let _ = (xid, path, watch);
                Ok(stale(c, session))
            }
            ZkMsg::GetChildren {
                session,
                xid,
                path,
                watch,
            } => {
                let s = live(c, session).expect("checked");
                let x = s.xid();
                let mut r = Out::default();
                r.int(x).int(OP_GET_CHILDREN).string(&path).bool(watch);
                s.send(&r, Some((x, Pending::Children { xid, path })))?;
                Ok(None)
            }
            ZkMsg::Exists {
                session,
                xid,
                path,
                watch,
            } => {
                let s = live(c, session).expect("checked");
                let x = s.xid();
                let mut r = Out::default();
                r.int(x).int(OP_EXISTS).string(&path).bool(watch);
                s.send(&r, Some((x, Pending::Exists { xid, path })))?;
                Ok(None)
            }
            ZkMsg::SetWatches {
                session,
                xid,
                exists,
                children,
            } => {
                let Some(s) = live(c, session) else {
                    return Ok(stale(c, session));
                };
                // `ExistsWatchRegistration`: a watch set on a node that existed is a data
                // watch (fires on its deletion), on one that did not an exist watch.
                let data: Vec<String> = exists
                    .iter()
                    .filter(|(_, czxid)| czxid.is_some())
                    .map(|(p, _)| p.clone())
                    .collect();
                let absent: Vec<String> = exists
                    .iter()
                    .filter(|(_, czxid)| czxid.is_none())
                    .map(|(p, _)| p.clone())
                    .collect();
                let mut r = Out::default();
                r.int(XID_SET_WATCHES)
                    .int(OP_SET_WATCHES)
                    .long(s.shared.last_zxid.load(Ordering::SeqCst))
                    .strings(&data)
                    .strings(&absent)
                    .strings(&children);
                s.send(&r, Some((XID_SET_WATCHES, Pending::SetWatches { xid })))?;
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// The session's connection, if `session` is the client's current one.
fn live(c: &mut Conn, session: u64) -> Option<&mut Session> {
    c.session.as_mut().filter(|s| s.id as u64 == session)
}

/// The answer to a request on a session the connection does not have: the model
/// server's (the session is gone), unless the client has no session here at all (its
/// connection was reopened: the request is lost, as on CONNECTIONLOSS).
fn stale(c: &Conn, session: u64) -> Option<ZkMsg> {
    c.session
        .as_ref()
        .map(|_| ZkMsg::SessionExpired { session })
}

fn create_body(r: &mut Out, path: &str, flags: i32) {
    r.string(path)
        .buf(&[])
        .int(1) // one ACL: OPEN_ACL_UNSAFE
        .int(31)
        .string("world")
        .string("anyone")
        .int(flags);
}

impl Session {
    fn xid(&mut self) -> i32 {
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        self.next_xid
    }

    fn send(&mut self, r: &Out, pending: Option<(i32, Pending)>) -> Result<(), String> {
        if let Some((x, p)) = pending {
            if let Ok(mut m) = self.shared.pending.lock() {
                m.insert(x, p);
            }
        }
        self.stream
            .write_all(&r.frame())
            .map_err(|e| format!("session {:#x}: {e}", self.id))
    }
}

/// A session on `stream`, and the thread that reads what the server sends on it.
fn open(
    stream: TcpStream,
    id: i64,
    passwd: Vec<u8>,
    timeout: Duration,
    events: Arc<AtomicU64>,
    last_zxid: Arc<AtomicI64>,
    later: &Later<ZkMsg>,
) -> Result<Session, String> {
    let shared = Arc::new(Shared {
        session: id as u64,
        pending: Mutex::new(BTreeMap::new()),
        events,
        last_zxid,
    });
    let mut reading = stream.try_clone().map_err(|e| e.to_string())?;
    let (sh, later) = (shared.clone(), later.clone());
    std::thread::Builder::new()
        .name(format!("zk session {id:#x}"))
        .spawn(move || {
            while let Ok(frame) = read_frame(&mut reading) {
                let Some(reply) = answer(&sh, &frame) else {
                    continue;
                };
                if !later.send(reply) {
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start a session thread: {e}"))?;
    Ok(Session {
        id,
        passwd,
        timeout,
        stream,
        shared,
        next_xid: 0,
    })
}

/// The model's message for one frame the server sent, if it is one.
fn answer(sh: &Shared, frame: &[u8]) -> Option<ZkMsg> {
    let session = sh.session;
    let mut r = In(frame);
    let xid = r.int()?;
    let zxid = r.long()?;
    let err = r.int()?;
    if zxid > 0 {
        sh.last_zxid.fetch_max(zxid, Ordering::SeqCst);
    }
    match xid {
        XID_NOTIFICATION => {
            let kind = r.int()?;
            let _state = r.int()?;
            let path = r.string()?;
            let event = match kind {
                1 => ZkEvent::NodeCreated,
                2 => ZkEvent::NodeDeleted,
                4 => ZkEvent::ChildrenChanged,
                _ => return None, // data changes (the recipes write none), states
            };
            let seq = sh.events.fetch_add(1, Ordering::SeqCst);
            return Some(ZkMsg::Watch {
                session,
                path,
                event,
                seq,
            });
        }
        XID_PING => {
            return Some(ZkMsg::Pong {
                session,
                events: sh.events.load(Ordering::SeqCst),
            })
        }
        _ => {}
    }
    let pending = sh.pending.lock().ok()?.remove(&xid)?;
    if err == SESSIONEXPIRED {
        return Some(ZkMsg::SessionExpired { session });
    }
    let error = |xid: u64| {
        let error = match err {
            NONODE => ZkError::NoNode,
            NODEEXISTS => ZkError::NodeExists,
            NOTEMPTY => ZkError::NotEmpty,
            _ => return None,
        };
        Some(ZkMsg::Error {
            session,
            xid,
            error,
        })
    };
    match pending {
        Pending::Parent => None,
        Pending::Create { xid, .. } if err != OK => error(xid),
        Pending::Create { xid, .. } => {
            let path = r.string()?;
            let czxid = r.stat_czxid()?;
            Some(ZkMsg::Created {
                session,
                xid,
                path,
                czxid: czxid as u64,
            })
        }
        Pending::Delete { xid } if err != OK => error(xid),
        Pending::Delete { xid } => Some(ZkMsg::Deleted { session, xid }),
        Pending::Children { xid, .. } if err != OK => error(xid),
        Pending::Children { xid, path } => {
            let n = r.int()?;
            let mut children = Vec::new();
            for _ in 0..n.max(0) {
                children.push(r.string()?);
            }
            children.sort();
            Some(ZkMsg::Children {
                session,
                xid,
                path,
                children,
            })
        }
        Pending::Exists { xid, path } if err == NONODE => Some(ZkMsg::Stat {
            session,
            xid,
            path,
            czxid: None,
        }),
        Pending::Exists { xid, .. } if err != OK => error(xid),
        Pending::Exists { xid, path } => Some(ZkMsg::Stat {
            session,
            xid,
            path,
            czxid: Some(r.stat_czxid()? as u64),
        }),
        Pending::SetWatches { xid } => Some(ZkMsg::WatchesSet { session, xid }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's only listening socket is the client port on 127.0.0.1; the
    /// AdminServer (0.0.0.0:8080 by default) is off.
    #[test]
    fn the_config_is_loopback_only() {
        let c = config(2181, Path::new("/tmp/x"));
        assert!(c.contains("clientPortAddress=127.0.0.1\n"), "{c}");
        assert!(c.contains("admin.enableServer=false\n"), "{c}");
        assert!(!c.contains("jmx"), "{c}");
        let dir = std::env::temp_dir().join(format!("tenure-zk-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = args(2181, &dir);
        let written = std::fs::read_to_string(dir.join("zoo.cfg")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(written, config(2181, &dir));
        assert!(a
            .iter()
            .any(|s| s == "-Dzookeeper.admin.enableServer=false"));
        assert!(!a
            .iter()
            .any(|s| s.to_string_lossy().contains("jmxremote.port")));
    }

    #[test]
    fn jute_round_trips() {
        let mut o = Out::default();
        o.int(-2)
            .long(7)
            .string("/a")
            .strings(&["x".into(), "y".into()]);
        let f = o.frame();
        assert_eq!(
            i32::from_be_bytes(f[..4].try_into().unwrap()) as usize,
            f.len() - 4
        );
        let mut i = In(&f[4..]);
        assert_eq!(i.int(), Some(-2));
        assert_eq!(i.long(), Some(7));
        assert_eq!(i.string().as_deref(), Some("/a"));
        assert_eq!(i.int(), Some(2));
    }
}
