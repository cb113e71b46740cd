//! The clients: each connected to one server at a time, reconnecting to the next one
//! with its session id and last seen zxid. `client` nodes run the lock recipe (the
//! lock-client [`Workload`]), `register` nodes read and write integer registers.

// A message arm owns its message: a nested `if` ignores it when the condition fails,
// where a match guard would hand it on to the catch-all arm.
#![allow(clippy::collapsible_match)]

use super::{SessionId, ZkeConfig, ZkeMsg, ZkeOp, ZkeResult, ZkeRole, ZkeTimer, ZkeVariant, Zxid};
use crate::workload::{LockApi, Workload};
use std::time::Duration;
use tenure_core::{Cluster, Env, LocalTime, NodeId, Observation, OpOutcome, OpValue};

type E<'a> = dyn Env<ZkeMsg, ZkeTimer> + 'a;

/// What the lock recipe tells the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Change {
    Acquired(Zxid),
    Lost,
}

/// The register workload's open operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Open {
    f: &'static str,
    key: u32,
    value: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkeSession {
    me: NodeId,
    servers: Vec<NodeId>,
    /// Index in `servers` of the server we talk to.
    at: usize,
    variant: ZkeVariant,
    lock: bool,
    session_timeout: Duration,
    session: Option<SessionId>,
    connected: bool,
    /// The outstanding connect attempt (its timer is `Request(xid)`).
    connecting: Option<u64>,
    refusals: usize,
    /// The highest zxid this client has seen in a reply: it never connects to a server
    /// behind it.
    last_zxid: Zxid,
    last_heard: LocalTime,
    xid: u64,
    pending: Option<(u64, ZkeOp)>,
    // The lock recipe.
    root: String,
    want: bool,
    holds: bool,
    node: Option<(String, Zxid)>,
    to_delete: Option<String>,
    /// A create may have made a node we no longer know of (its reply was lost): look.
    orphan_check: bool,
    polling: bool,
    changes: Vec<Change>,
    // The register workload.
    keys: u32,
    my_key: u32,
    reads: u32,
    think: (Duration, Duration),
    open: Option<Open>,
    started: bool,
    /// A write of our own key ended without a reply (CONNECTIONLOSS): it may have been
    /// committed without our seeing its zxid, so a server we may reconnect to can be
    /// behind it. Our own key is read with `sync` until a `sync` + read of it succeeds.
    own_unknown: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkeClient {
    pub session: ZkeSession,
    pub workload: Option<Workload>,
}

/// The sequence number of a sequential node's name (its last 10 digits).
fn sequence_of(name: &str) -> u64 {
    name.get(name.len().saturating_sub(10)..)
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

impl ZkeSession {
    /// Whether the session is connected to a server.
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The server the client talks to (or is connecting to).
    pub fn current_server(&self) -> NodeId {
        self.server()
    }

    fn reply_timeout(&self) -> Duration {
        self.session_timeout / 3
    }

    fn server(&self) -> NodeId {
        self.servers[self.at % self.servers.len()]
    }

    fn next_xid(&mut self) -> u64 {
        self.xid += 1;
        self.xid
    }

    fn connect(&mut self, env: &mut E<'_>) {
        let xid = self.next_xid();
        self.connecting = Some(xid);
        self.connected = false;
        env.send(
            self.server(),
            ZkeMsg::Connect {
                session: self.session,
                last_zxid: self.last_zxid,
                timeout: self.session_timeout,
            },
        );
        env.set_timer(ZkeTimer::Request(xid), self.reply_timeout());
    }

    fn request(&mut self, env: &mut E<'_>, op: ZkeOp) {
        let (true, None, Some(session)) = (self.connected, &self.pending, self.session) else {
            return;
        };
        let xid = self.next_xid();
        self.pending = Some((xid, op.clone()));
        env.send(self.server(), ZkeMsg::Request { session, xid, op });
        env.set_timer(ZkeTimer::Request(xid), self.reply_timeout());
    }

    /// CONNECTIONLOSS: the request in flight fails, a holder suspends (Curator's
    /// SUSPENDED: stop acting on the lock), and the client tries the next server.
    fn connection_loss(&mut self, env: &mut E<'_>) {
        if let Some((xid, op)) = self.pending.take() {
            env.cancel_timer(&ZkeTimer::Request(xid));
            match op {
                ZkeOp::Create { .. } => self.orphan_check = true,
                // A release must not be lost with the connection: delete again.
                ZkeOp::Delete { path } => self.to_delete = Some(path),
                _ => {}
            }
        }
        self.fail_open(env, true);
        if self.holds {
            self.holds = false;
            self.changes.push(Change::Lost);
        }
        self.at += 1;
        self.connect(env);
    }

    fn on_ping_timer(&mut self, env: &mut E<'_>) {
        env.set_timer(ZkeTimer::Ping, self.session_timeout / 3);
        if !self.connected {
            if self.connecting.is_none() {
                self.connect(env);
            }
            return;
        }
        if self.last_heard.until(env.monotonic()) > self.session_timeout * 2 / 3 {
            self.connection_loss(env);
            return;
        }
        if let Some(session) = self.session {
            env.send(self.server(), ZkeMsg::Ping { session });
        }
    }

    fn on_request_timer(&mut self, env: &mut E<'_>, xid: u64) {
        if self.connecting == Some(xid) {
            self.connecting = None;
            self.at += 1;
            self.connect(env);
        } else if self.pending.as_ref().is_some_and(|(x, _)| *x == xid) {
            self.connection_loss(env);
        }
    }

    /// The connection to `peer` was reset (stream mode: `peer` crashed, or a partition
    /// outlasted the connection timeout). `ClientCnxnSocketNIO.doIO` reads the end of
    /// the stream ("Unable to read additional data from server sessionid 0x.., likely
    /// server has closed socket") and `ClientCnxn.SendThread.run` closes the socket and
    /// reconnects to the next host at once: CONNECTIONLOSS without waiting for a reply
    /// timeout.
    fn on_disconnect(&mut self, env: &mut E<'_>, peer: NodeId) {
        if peer != self.server() {
            return; // an old connection
        }
        if let Some(xid) = self.connecting.take() {
            env.cancel_timer(&ZkeTimer::Request(xid));
            self.at += 1;
            self.connect(env);
        } else if self.connected {
            self.connection_loss(env);
        }
    }

    fn heard(&mut self, env: &mut E<'_>, zxid: Zxid) {
        self.last_heard = env.monotonic();
        self.last_zxid = self.last_zxid.max(zxid);
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: ZkeMsg) {
        if from != self.server() {
            return; // an old connection's leftovers
        }
        match msg {
            ZkeMsg::Connected { session, zxid } => {
                let Some(xid) = self.connecting.take() else {
                    return;
                };
                env.cancel_timer(&ZkeTimer::Request(xid));
                if self.session != Some(session) {
                    self.node = None;
                    self.to_delete = None;
                    self.orphan_check = false;
                }
                self.session = Some(session);
                self.connected = true;
                self.refusals = 0;
                self.heard(env, zxid);
                if !self.started {
                    self.started = true;
                    if !self.lock {
                        self.think(env);
                    }
                }
                self.kick(env);
            }
            ZkeMsg::Refused { .. } => {
                let Some(xid) = self.connecting else {
                    return;
                };
                self.refusals += 1;
                if self.refusals < self.servers.len() {
                    env.cancel_timer(&ZkeTimer::Request(xid));
                    self.at += 1;
                    self.connect(env);
                } else {
                    // Every server refused: the timer moves on to the next one.
                    self.refusals = 0;
                }
            }
            ZkeMsg::SessionExpired { session } => {
                if self.session != Some(session) {
                    return;
                }
                if let Some(xid) = self.connecting.take() {
                    env.cancel_timer(&ZkeTimer::Request(xid));
                }
                if let Some((xid, _)) = self.pending.take() {
                    env.cancel_timer(&ZkeTimer::Request(xid));
                }
                env.observe(Observation::Note {
                    text: format!("{}: session {session} expired", self.me),
                });
                self.fail_open(env, true);
                self.session = None;
                self.node = None;
                self.to_delete = None;
                self.orphan_check = false;
                if self.holds {
                    self.holds = false;
                    self.changes.push(Change::Lost);
                }
                self.connect(env);
            }
            ZkeMsg::Pong { session, zxid } => {
                if self.session == Some(session) && self.connected {
                    self.heard(env, zxid);
                }
            }
            ZkeMsg::Reply {
                session,
                xid,
                zxid,
                result,
            } => {
                if self.session != Some(session)
                    || self.pending.as_ref().is_none_or(|(x, _)| *x != xid)
                {
                    return;
                }
                let (_, op) = self.pending.take().expect("checked");
                env.cancel_timer(&ZkeTimer::Request(xid));
                self.heard(env, zxid);
                self.on_result(env, op, result);
                self.kick(env);
            }
            _ => {}
        }
    }

    fn on_result(&mut self, env: &mut E<'_>, op: ZkeOp, result: ZkeResult) {
        let own_sync = op == (ZkeOp::SyncRead { key: self.my_key });
        match (op, result) {
            (ZkeOp::Read { .. } | ZkeOp::SyncRead { .. }, ZkeResult::Value(v)) => {
                if own_sync {
                    self.own_unknown = false;
                }
                self.complete(env, OpOutcome::Ok, OpValue::Int(v));
            }
            (ZkeOp::Write { value, .. }, ZkeResult::Written) => {
                self.complete(env, OpOutcome::Ok, OpValue::Int(value));
            }
            (ZkeOp::Write { .. }, _) => self.fail_open(env, false),
            (ZkeOp::GetChildren { .. }, ZkeResult::Children(children)) => {
                self.on_children(env, children);
            }
            (ZkeOp::Create { .. }, ZkeResult::Created { path, czxid }) => {
                if self.want {
                    self.node = Some((path, czxid));
                } else {
                    self.to_delete = Some(path);
                }
            }
            (ZkeOp::Delete { path }, _) => {
                if self.node.as_ref().is_some_and(|(p, _)| *p == path) {
                    self.node = None;
                }
            }
            _ => {}
        }
    }

    fn prefix(&self) -> String {
        format!("s{}-", self.session.unwrap_or(0))
    }

    /// The lock recipe: our node is the one with the lowest sequence number.
    fn on_children(&mut self, env: &mut E<'_>, mut children: Vec<(String, Zxid)>) {
        let prefix = self.prefix();
        let own = children
            .iter()
            .find(|(n, _)| n.starts_with(&prefix))
            .cloned();
        self.orphan_check = false;
        if !self.want {
            if let Some((name, _)) = own {
                self.to_delete = Some(format!("{}/{name}", self.root));
            }
            return;
        }
        let Some((name, czxid)) = own else {
            // No node of ours (our create's reply was lost before it was made, or the
            // session changed): create one.
            self.node = None;
            let path = format!("{}/{prefix}", self.root);
            self.request(
                env,
                ZkeOp::Create {
                    path,
                    ephemeral: true,
                    sequential: true,
                },
            );
            return;
        };
        self.node = Some((format!("{}/{name}", self.root), czxid));
        children.sort_by_key(|(n, _)| sequence_of(n));
        if children[0].0 == name {
            if !self.holds {
                self.holds = true;
                self.changes.push(Change::Acquired(czxid));
            }
        } else {
            // Wait for our predecessor to go (polled: see the module doc).
            self.polling = true;
            env.set_timer(ZkeTimer::Poll, self.session_timeout / 10);
        }
    }

    /// Sends what the lock recipe needs next, if nothing is outstanding.
    fn kick(&mut self, env: &mut E<'_>) {
        if !self.lock || !self.connected || self.pending.is_some() {
            return;
        }
        if let Some(path) = self.to_delete.take() {
            self.request(env, ZkeOp::Delete { path });
            return;
        }
        let look = if self.want {
            !self.holds && !self.polling
        } else {
            self.orphan_check
        };
        if look {
            let path = self.root.clone();
            self.request(env, ZkeOp::GetChildren { path });
        }
    }

    // The register workload.

    fn think(&mut self, env: &mut E<'_>) {
        let (lo, hi) = self.think;
        let pause = env.duration_between(lo, hi);
        env.set_timer(ZkeTimer::Think, pause);
    }

    fn on_think(&mut self, env: &mut E<'_>) {
        if self.open.is_some() {
            return;
        }
        if !self.connected || self.pending.is_some() {
            self.think(env);
            return;
        }
        let read = env.range_inclusive(0, 99) < u64::from(self.reads);
        let (op, open) = if read {
            let key = env.range_inclusive(0, u64::from(self.keys) - 1) as u32;
            // A client sees its own writes on any server it may connect to; another
            // client's write needs `sync` first (unless the variant skips it).
            let own = key == self.my_key && !self.own_unknown;
            let op = if own || self.variant == ZkeVariant::ReadWithoutSync {
                ZkeOp::Read { key }
            } else {
                ZkeOp::SyncRead { key }
            };
            (
                op,
                Open {
                    f: "read",
                    key,
                    value: 0,
                },
            )
        } else {
            let value = (env.next_u64() % 1_000_000) as i64 + 1;
            (
                ZkeOp::Write {
                    key: self.my_key,
                    value,
                },
                Open {
                    f: "write",
                    key: self.my_key,
                    value,
                },
            )
        };
        env.observe(Observation::Invoke {
            f: open.f.to_string(),
            key: format!("k{}", open.key),
            value: if read {
                OpValue::Nil
            } else {
                OpValue::Int(open.value)
            },
        });
        self.open = Some(open);
        self.request(env, op);
    }

    fn complete(&mut self, env: &mut E<'_>, outcome: OpOutcome, value: OpValue) {
        let Some(open) = self.open.take() else {
            return;
        };
        env.observe(Observation::Complete {
            f: open.f.to_string(),
            key: format!("k{}", open.key),
            outcome,
            value,
        });
        self.think(env);
    }

    /// The open operation got no answer: a read took no effect, a write may have.
    fn fail_open(&mut self, env: &mut E<'_>, unknown: bool) {
        let Some(open) = &self.open else {
            return;
        };
        let (outcome, value) = if open.f == "read" {
            (OpOutcome::Fail, OpValue::Nil)
        } else if unknown {
            self.own_unknown = true;
            (OpOutcome::Info, OpValue::Int(open.value))
        } else {
            (OpOutcome::Fail, OpValue::Int(open.value))
        };
        self.complete(env, outcome, value);
    }
}

impl LockApi<ZkeMsg, ZkeTimer> for ZkeSession {
    fn start_acquire(&mut self, env: &mut E<'_>) {
        self.want = true;
        self.polling = false;
        self.kick(env);
    }

    fn release(&mut self, env: &mut E<'_>) {
        self.want = false;
        self.holds = false;
        self.polling = false;
        env.cancel_timer(&ZkeTimer::Poll);
        if let Some((path, _)) = self.node.take() {
            self.to_delete = Some(path);
        }
        self.kick(env);
    }
}

impl ZkeClient {
    pub fn new(config: &ZkeConfig, me: NodeId, cluster: &Cluster) -> ZkeClient {
        let lock = config.roles.get(me) == ZkeRole::Client;
        let registers: Vec<NodeId> = cluster.with_role("register").collect();
        let servers: Vec<NodeId> = cluster.with_role("server").collect();
        let rank = cluster
            .with_role(cluster.role_of(me))
            .position(|n| n == me)
            .unwrap_or(0);
        ZkeClient {
            session: ZkeSession {
                me,
                // Each client starts on its own server, as a connect string shuffled.
                at: rank,
                servers,
                variant: config.variant,
                lock,
                session_timeout: config.session_timeout,
                session: None,
                connected: false,
                connecting: None,
                refusals: 0,
                last_zxid: 0,
                last_heard: LocalTime(0),
                xid: 0,
                pending: None,
                root: format!("/lock/{}", config.workload.resource),
                want: false,
                holds: false,
                node: None,
                to_delete: None,
                orphan_check: false,
                polling: false,
                changes: Vec::new(),
                keys: registers.len().max(1) as u32,
                my_key: registers.iter().position(|&n| n == me).unwrap_or(0) as u32,
                reads: config.reads,
                think: config.register_think,
                open: None,
                started: false,
                own_unknown: false,
            },
            workload: lock.then(|| Workload::new(config.workload.clone())),
        }
    }

    pub fn on_start(&mut self, env: &mut E<'_>) {
        let s = &mut self.session;
        s.pending = None;
        s.connecting = None;
        s.connected = false;
        s.holds = false;
        s.want = false;
        s.open = None;
        s.started = false;
        s.connect(env);
        env.set_timer(ZkeTimer::Ping, s.session_timeout / 3);
        if let Some(w) = &mut self.workload {
            w.on_start(env);
        }
    }

    pub fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: ZkeMsg) {
        if let ZkeMsg::Resource(m) = msg {
            if let Some(w) = &mut self.workload {
                w.on_resource_reply(env, &mut self.session, m);
            }
            return;
        }
        self.session.on_message(env, from, msg);
        self.apply(env);
    }

    pub fn on_disconnect(&mut self, env: &mut E<'_>, peer: NodeId) {
        self.session.on_disconnect(env, peer);
        self.apply(env);
    }

    pub fn on_timer(&mut self, env: &mut E<'_>, timer: ZkeTimer) {
        match timer {
            ZkeTimer::Ping => self.session.on_ping_timer(env),
            ZkeTimer::Request(xid) => self.session.on_request_timer(env, xid),
            ZkeTimer::Poll => {
                self.session.polling = false;
                self.session.kick(env);
            }
            ZkeTimer::Think => self.session.on_think(env),
            ZkeTimer::Workload(t) => {
                if let Some(w) = &mut self.workload {
                    w.on_timer(env, &mut self.session, t);
                }
            }
            ZkeTimer::Tick | ZkeTimer::Elect => {}
        }
        self.apply(env);
    }

    fn apply(&mut self, env: &mut E<'_>) {
        let changes = std::mem::take(&mut self.session.changes);
        let Some(w) = &mut self.workload else {
            return;
        };
        for change in changes {
            match change {
                Change::Acquired(czxid) => w.on_acquired(env, Some(czxid), None),
                Change::Lost => w.on_lost(env, &mut self.session),
            }
        }
    }
}
