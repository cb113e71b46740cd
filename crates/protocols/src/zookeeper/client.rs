//! A client: its session, the election/lock recipe, and (lock recipe) the workload.

use super::{Recipe, SessionId, ZkConfig, ZkError, ZkEvent, ZkMsg, ZkTimer, ZkVariant};
use crate::backoff::Backoff;
use crate::workload::{LockApi, Workload};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation};

type ZkEnv<'a> = dyn Env<ZkMsg, ZkTimer> + 'a;

/// What the recipe tells the lock workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// Our node is the lowest: we hold the lock with this token (czxid).
    Acquired(u64),
    /// We held the lock and no longer may believe it (session expired or suspected).
    Lost,
    /// We were waiting and our session (and with it our node) is gone.
    Failed,
}

/// The outstanding request of a client (one at a time, so its requests reach the server
/// in order, as over one TCP connection).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Op {
    /// `create` of our protected ephemeral sequential node.
    Create,
    /// After CONNECTIONLOSS on a create: `getChildren` looking for our GUID.
    Find,
    /// `exists` (no watch) of the node found by our GUID, for its czxid.
    Stat(String),
    /// `getChildren` of the queue (with a watch in the herd variant).
    Check,
    /// `exists` with a watch on a node we wait for (predecessor, or the leader).
    Exists(String),
    /// `delete` of our node (release).
    Delete(String),
    /// `SetWatches` after a reconnect.
    SetWatches,
}

/// The session and recipe half of a client (the lock API the workload drives).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkRecipeClient {
    me: NodeId,
    server: NodeId,
    recipe: Recipe,
    herd: bool,
    session_timeout: Duration,
    /// `/election` or `/lock/<resource>`.
    root: String,
    session: Option<SessionId>,
    /// Nothing heard from the server for 2/3 of the session timeout.
    suspended: bool,
    xid: u64,
    /// The outstanding request.
    pending: Option<(u64, Op)>,
    /// CONNECTIONLOSS: the reconnect attempt in flight (its xid), and the request that
    /// failed with it, to retry once reconnected.
    reconnecting: Option<u64>,
    retry: Option<Op>,
    /// The GUID in the name of the node we create (`_c_<guid>-n-<id>-`), kept until
    /// that node is gone, so a create retried after CONNECTIONLOSS finds it.
    guid: Option<String>,
    /// Our node: full path and czxid.
    node: Option<(String, u64)>,
    /// Whether we want to be in the queue (election: always; lock: while acquiring).
    want: bool,
    /// Whether we believe we lead / hold the lock.
    leading: bool,
    /// The nodes we hold an `exists` watch on, with the czxid we saw (for SetWatches).
    watching: BTreeMap<String, u64>,
    /// Nodes still to set an `exists` watch on (after reading the queue).
    to_watch: Vec<String>,
    /// Watch events: every number below `events_seen` has arrived, and those in
    /// `events_ahead`; the server said (in a Pong) it had sent `events_sent`.
    events_seen: u64,
    events_ahead: BTreeSet<u64>,
    events_sent: u64,
    /// Election: what we last observed as a follower.
    following: Option<(u64, Option<NodeId>)>,
    /// Election: the backoff between reconnects after the session expired.
    reconnect: Option<Backoff>,
}

/// A client node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkClient {
    pub recipe: ZkRecipeClient,
    pub workload: Option<Workload>,
}

/// The sequence number at the end of a sequential node's name.
fn sequence_of(name: &str) -> u64 {
    let digits = &name[name.len().saturating_sub(10)..];
    digits
        .parse()
        .unwrap_or_else(|_| panic!("`{name}` is not a sequential node"))
}

/// A node's name without its protection prefix (`_c_<guid>-`, Curator's
/// `ProtectedUtils.PROTECTED_PREFIX`).
fn unprotected(name: &str) -> &str {
    match name.strip_prefix("_c_") {
        Some(rest) => rest.split_once('-').map_or(rest, |(_, r)| r),
        None => name,
    }
}

/// The client id a recipe node's name carries (`[_c_<guid>-]n-<id>-<sequence>`).
fn owner_of(name: &str) -> Option<NodeId> {
    unprotected(name)
        .strip_prefix("n-")?
        .split('-')
        .next()?
        .parse()
        .ok()
        .map(NodeId)
}

impl ZkRecipeClient {
    pub fn leading(&self) -> bool {
        self.leading
    }
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }
    pub fn node(&self) -> Option<&str> {
        self.node.as_ref().map(|(p, _)| p.as_str())
    }
    /// The GUID in the name of the node this client creates (or created).
    pub fn guid(&self) -> Option<&str> {
        self.guid.as_deref()
    }
    /// Whether the client is reconnecting after CONNECTIONLOSS.
    pub fn reconnecting(&self) -> bool {
        self.reconnecting.is_some()
    }

    fn ping_interval(&self) -> Duration {
        self.session_timeout / 3
    }

    /// How long a reply may take before the connection counts as lost.
    fn reply_timeout(&self) -> Duration {
        self.session_timeout / 3
    }

    fn next_xid(&mut self) -> u64 {
        self.xid += 1;
        self.xid
    }

    fn on_start(&mut self, env: &mut ZkEnv<'_>) {
        env.send(
            self.server,
            ZkMsg::Connect {
                timeout: self.session_timeout,
            },
        );
        env.set_timer(ZkTimer::Ping, self.ping_interval());
    }

    fn on_ping_timer(&mut self, env: &mut ZkEnv<'_>) {
        if let (None, Some(b)) = (self.session, &mut self.reconnect) {
            // Reconnecting after an expiry: each Connect is a retry of the election.
            env.observe(Observation::Retry {
                what: "election".to_string(),
                attempt: b.failures(),
            });
            env.send(
                self.server,
                ZkMsg::Connect {
                    timeout: self.session_timeout,
                },
            );
            let next = b.on_failure(env);
            env.set_timer(ZkTimer::Ping, next);
            return;
        }
        env.set_timer(ZkTimer::Ping, self.ping_interval());
        if self.reconnecting.is_some() {
            return; // the reconnect attempts keep the session alive
        }
        let msg = match self.session {
            Some(session) => {
                if self.events_seen < self.events_sent {
                    // A watch event the server sent a ping ago never came: the
                    // connection lost it.
                    self.connection_loss(env);
                    return;
                }
                ZkMsg::Ping { session }
            }
            None => ZkMsg::Connect {
                timeout: self.session_timeout,
            },
        };
        env.send(self.server, msg);
    }

    /// Sends a request as the outstanding one, its reply due within the reply timeout.
    fn request(&mut self, env: &mut ZkEnv<'_>, op: Op) {
        let Some(session) = self.session else {
            return; // done on connect
        };
        if self.reconnecting.is_some() {
            self.retry = Some(op);
            return;
        }
        let xid = self.next_xid();
        let msg = match &op {
            Op::Create => {
                let guid = match &self.guid {
                    Some(g) => g.clone(),
                    None => {
                        let g = format!("{:016x}", env.next_u64());
                        self.guid = Some(g.clone());
                        g
                    }
                };
                ZkMsg::Create {
                    session,
                    xid,
                    path: format!("{}/_c_{guid}-n-{}-", self.root, self.me.0),
                    ephemeral: true,
                    sequential: true,
                }
            }
            Op::Find => ZkMsg::GetChildren {
                session,
                xid,
                path: self.root.clone(),
                watch: false,
            },
            Op::Check => ZkMsg::GetChildren {
                session,
                xid,
                path: self.root.clone(),
                watch: self.herd,
            },
            Op::Stat(path) => ZkMsg::Exists {
                session,
                xid,
                path: path.clone(),
                watch: false,
            },
            Op::Exists(path) => ZkMsg::Exists {
                session,
                xid,
                path: path.clone(),
                watch: true,
            },
            Op::Delete(path) => ZkMsg::Delete {
                session,
                xid,
                path: path.clone(),
            },
            Op::SetWatches => ZkMsg::SetWatches {
                session,
                xid,
                exists: self
                    .watching
                    .iter()
                    .map(|(p, z)| (p.clone(), Some(*z)))
                    .collect(),
                children: if self.herd && self.node.is_some() {
                    vec![self.root.clone()]
                } else {
                    Vec::new()
                },
            },
        };
        self.pending = Some((xid, op));
        env.send(self.server, msg);
        env.set_timer(ZkTimer::Request(xid), self.reply_timeout());
    }

    /// The reply to `xid` came (or it no longer matters).
    fn answered(&mut self, env: &mut ZkEnv<'_>, xid: u64) {
        env.cancel_timer(&ZkTimer::Request(xid));
        self.pending = None;
    }

    /// The op of the outstanding request if `xid` is it.
    fn pending_op(&self, xid: u64) -> Option<Op> {
        match &self.pending {
            Some((x, op)) if *x == xid => Some(op.clone()),
            _ => None,
        }
    }

    /// CONNECTIONLOSS (ClientCnxn: the connection went quiet; every outstanding request
    /// fails with it): reconnect with our session id, then re-register the watches and
    /// retry the request that failed.
    fn connection_loss(&mut self, env: &mut ZkEnv<'_>) {
        let Some(session) = self.session else { return };
        if let Some((xid, op)) = self.pending.take() {
            env.cancel_timer(&ZkTimer::Request(xid));
            if self.retry.is_none() {
                self.retry = Some(op);
            }
        }
        env.observe(Observation::Retry {
            what: "zookeeper connection".to_string(),
            attempt: 0,
        });
        let xid = self.next_xid();
        self.reconnecting = Some(xid);
        env.send(self.server, ZkMsg::Reconnect { session, xid });
        env.set_timer(ZkTimer::Request(xid), self.reply_timeout());
    }

    fn on_request_timer(&mut self, env: &mut ZkEnv<'_>, xid: u64) {
        if self.reconnecting == Some(xid) {
            self.reconnecting = None;
            self.connection_loss(env); // try again
        } else if self.pending.as_ref().is_some_and(|(x, _)| *x == xid) {
            self.connection_loss(env);
        }
    }

    /// Joins the queue: create our ephemeral sequential node, protected by a GUID.
    fn create(&mut self, env: &mut ZkEnv<'_>) {
        self.request(env, Op::Create);
    }

    /// Reads the queue (with a watch on it in the herd variant).
    fn check(&mut self, env: &mut ZkEnv<'_>) {
        self.to_watch.clear();
        if self.reconnecting.is_none()
            && matches!(self.retry, Some(Op::Check | Op::Exists(_) | Op::SetWatches))
        {
            self.retry = None; // a fresh read of the queue supersedes it
        }
        self.request(env, Op::Check);
    }

    /// With nothing outstanding: join the queue if we want to and are not in it.
    fn advance(&mut self, env: &mut ZkEnv<'_>) {
        if self.want && self.node.is_none() && self.pending.is_none() && self.retry.is_none() {
            self.create(env);
        }
    }

    /// Sets the next `exists` watch we need, or reads the queue again.
    fn watch_next(&mut self, env: &mut ZkEnv<'_>) {
        if let Some(path) = self.to_watch.pop() {
            self.request(env, Op::Exists(path));
        }
    }

    /// Stop believing we lead: observe it (election) or tell the workload.
    fn stop_leading(&mut self, env: &mut ZkEnv<'_>) -> Option<Change> {
        if !self.leading {
            return None;
        }
        self.leading = false;
        match self.recipe {
            Recipe::Election => {
                // We led the term of our node's sequence; who leads now we do not know.
                let term = self.node.as_ref().map_or(0, |(p, _)| sequence_of(p));
                self.following = Some((term, None));
                env.observe(Observation::Follower { term, leader: None });
                None
            }
            Recipe::Lock => {
                // The workload releases (deleting our node) once its hold is over.
                self.want = false;
                Some(Change::Lost)
            }
        }
    }

    /// Any reply on our session: it is alive. Returns whether we had suspected it.
    fn heard(&mut self, env: &mut ZkEnv<'_>) -> bool {
        env.set_timer(ZkTimer::SessionCheck, self.session_timeout * 2 / 3);
        std::mem::replace(&mut self.suspended, false)
    }

    fn on_session_check(&mut self, env: &mut ZkEnv<'_>) -> Option<Change> {
        self.session?;
        self.suspended = true;
        self.stop_leading(env)
    }

    /// Back from a suspicion, or reconnected: the queue may have moved meanwhile.
    fn recheck_if_waiting(&mut self, env: &mut ZkEnv<'_>) {
        if self.want && self.node.is_some() && self.pending.is_none() && self.retry.is_none() {
            self.check(env);
        }
    }

    fn on_message(&mut self, env: &mut ZkEnv<'_>, msg: ZkMsg) -> Option<Change> {
        match msg {
            ZkMsg::Connected { session, .. } => {
                if self.session.is_some() {
                    return None; // a duplicate connect; that session will expire unused
                }
                self.session = Some(session);
                self.events_seen = 0;
                self.events_ahead.clear();
                self.events_sent = 0;
                if let Some(b) = &mut self.reconnect {
                    b.on_success();
                }
                self.heard(env);
                self.advance(env);
                None
            }
            ZkMsg::Reconnected {
                session,
                xid,
                events,
            } if Some(session) == self.session && self.reconnecting == Some(xid) => {
                env.cancel_timer(&ZkTimer::Request(xid));
                self.reconnecting = None;
                // A new connection: what the old one lost is re-sent through SetWatches;
                // count events from the server's number (which a server restart may
                // have moved back).
                self.events_seen = events;
                self.events_sent = self.events_seen;
                let seen = self.events_seen;
                self.events_ahead.retain(|s| *s >= seen);
                self.drain_events();
                let suspended = self.heard(env);
                if !self.watching.is_empty() || (self.herd && self.node.is_some()) {
                    self.request(env, Op::SetWatches);
                } else {
                    self.resume(env);
                }
                if suspended && self.pending.is_none() {
                    self.recheck_if_waiting(env);
                }
                None
            }
            ZkMsg::SessionExpired { session } if Some(session) == self.session => {
                let lost = self.stop_leading(env);
                self.session = None;
                self.node = None;
                self.guid = None;
                if let Some((xid, _)) = self.pending.take() {
                    env.cancel_timer(&ZkTimer::Request(xid));
                }
                if let Some(xid) = self.reconnecting.take() {
                    env.cancel_timer(&ZkTimer::Request(xid));
                }
                self.retry = None;
                self.watching.clear();
                self.to_watch.clear();
                self.suspended = false;
                env.cancel_timer(&ZkTimer::SessionCheck);
                if let Some(b) = &mut self.reconnect {
                    // Back off before reconnecting (the Ping timer sends the Connect).
                    b.reset();
                    let wait = b.on_failure(env);
                    env.set_timer(ZkTimer::Ping, wait);
                } else {
                    env.send(
                        self.server,
                        ZkMsg::Connect {
                            timeout: self.session_timeout,
                        },
                    );
                }
                if self.recipe == Recipe::Lock && lost.is_none() && self.want {
                    // We were waiting: the workload backs off and tries again.
                    self.want = false;
                    return Some(Change::Failed);
                }
                lost
            }
            ZkMsg::Pong { session, events } if Some(session) == self.session => {
                if events < self.events_seen && self.reconnecting.is_none() {
                    // The server numbers fewer events than we have seen: it restarted
                    // without some of them (a new connection, as after a real restart).
                    self.heard(env);
                    self.connection_loss(env);
                    return None;
                }
                self.events_sent = self.events_sent.max(events);
                if self.heard(env) && self.reconnecting.is_none() {
                    self.recheck_if_waiting(env);
                }
                None
            }
            ZkMsg::WatchesSet { session, xid } if Some(session) == self.session => {
                if self.pending_op(xid) == Some(Op::SetWatches) {
                    self.heard(env);
                    self.answered(env, xid);
                    self.resume(env);
                }
                None
            }
            ZkMsg::Created {
                session,
                xid,
                path,
                czxid,
            } if Some(session) == self.session => {
                if self.node.as_ref().is_some_and(|(p, _)| *p == path) {
                    return None; // a duplicated reply
                }
                self.heard(env);
                if self.pending_op(xid) == Some(Op::Create) && self.want && self.node.is_none() {
                    self.answered(env, xid);
                    self.node = Some((path, czxid));
                    self.check(env);
                } else if self.pending_op(xid) == Some(Op::Create) {
                    // Not wanted any more: do not leave it blocking others.
                    self.answered(env, xid);
                    self.guid = None;
                    self.request(env, Op::Delete(path));
                } else {
                    // A late reply to a create we gave up on: delete its node.
                    let xid = self.next_xid();
                    env.send(self.server, ZkMsg::Delete { session, xid, path });
                }
                None
            }
            ZkMsg::Children {
                session,
                xid,
                children,
                ..
            } if Some(session) == self.session => {
                let op = self.pending_op(xid)?;
                self.heard(env);
                self.answered(env, xid);
                match op {
                    Op::Check => self.on_children(env, children),
                    Op::Find => {
                        self.on_found(env, children);
                        None
                    }
                    _ => None,
                }
            }
            ZkMsg::Stat {
                session,
                xid,
                path,
                czxid,
            } if Some(session) == self.session => {
                let op = self.pending_op(xid)?;
                self.heard(env);
                self.answered(env, xid);
                match (op, czxid) {
                    (Op::Stat(_), Some(czxid)) => {
                        // The node our lost create made.
                        if self.want && self.node.is_none() {
                            self.node = Some((path, czxid));
                            self.check(env);
                        } else {
                            self.guid = None;
                            self.request(env, Op::Delete(path));
                        }
                    }
                    (Op::Stat(_), None) => self.advance(env),
                    (Op::Exists(_), Some(czxid)) => {
                        self.watching.insert(path, czxid);
                        self.watch_next(env);
                    }
                    (Op::Exists(_), None) => {
                        // The node went before our watch was set: look again.
                        self.watching.remove(&path);
                        self.recheck_if_waiting(env);
                    }
                    _ => {}
                }
                None
            }
            ZkMsg::Watch {
                session,
                path,
                event,
                seq,
            } if Some(session) == self.session => {
                if seq < self.events_seen || !self.events_ahead.insert(seq) {
                    return None; // a duplicate, or sent on a connection since replaced
                }
                self.drain_events();
                self.heard(env);
                let relevant = match event {
                    // The event may overtake the reply to the `exists` that set the watch
                    // (our links reorder; TCP would not): it counts all the same.
                    ZkEvent::NodeDeleted => {
                        self.watching.remove(&path).is_some()
                            || matches!(&self.pending, Some((_, Op::Exists(p))) if *p == path)
                    }
                    ZkEvent::ChildrenChanged => self.herd && path == self.root,
                    ZkEvent::NodeCreated => false,
                };
                if relevant && self.want && self.node.is_some() && !self.leading {
                    if self.reconnecting.is_some() {
                        self.retry = Some(Op::Check);
                    } else {
                        self.check(env);
                    }
                }
                None
            }
            ZkMsg::Error {
                session,
                xid,
                error,
            } if Some(session) == self.session => {
                let op = self.pending_op(xid)?;
                self.heard(env);
                self.answered(env, xid);
                match op {
                    // A getChildren on a vanished parent: our node went with it.
                    Op::Check | Op::Find => {
                        assert_eq!(error, ZkError::NoNode, "unexpected error {error:?}");
                        if op == Op::Check {
                            self.node = None;
                            self.guid = None;
                        }
                        self.advance(env);
                    }
                    // Deleted already (a retried delete whose first try got through).
                    Op::Delete(_) => self.advance(env),
                    _ => panic!("unexpected error {error:?} for {op:?}"),
                }
                None
            }
            ZkMsg::Deleted { session, xid } if Some(session) == self.session => {
                self.heard(env);
                if matches!(self.pending_op(xid), Some(Op::Delete(_))) {
                    self.answered(env, xid);
                    self.advance(env);
                }
                None
            }
            _ => None,
        }
    }

    fn drain_events(&mut self) {
        while self.events_ahead.remove(&self.events_seen) {
            self.events_seen += 1;
        }
        let seen = self.events_seen;
        self.events_ahead.retain(|s| *s >= seen);
    }

    /// Reconnected (and watches re-set): retry the request CONNECTIONLOSS failed.
    fn resume(&mut self, env: &mut ZkEnv<'_>) {
        match self.retry.take() {
            // A create whose reply was lost may have made our node: look for our GUID
            // before creating another (the recipes' "Recoverable errors and the GUID",
            // Curator's `CreateBuilderImpl.findProtectedNodeInForeground`).
            Some(Op::Create | Op::Find) => self.request(env, Op::Find),
            Some(Op::Stat(path)) => self.request(env, Op::Stat(path)),
            Some(Op::Delete(path)) => self.request(env, Op::Delete(path)),
            Some(Op::Check | Op::Exists(_) | Op::SetWatches) => {
                if self.want && self.node.is_some() {
                    self.check(env);
                } else {
                    self.advance(env);
                }
            }
            None => self.advance(env),
        }
    }

    /// The queue read after a lost create: is our GUID's node there?
    fn on_found(&mut self, env: &mut ZkEnv<'_>, children: Vec<String>) {
        let found = self.guid.as_ref().and_then(|g| {
            let prefix = format!("_c_{g}-");
            children.into_iter().find(|c| c.starts_with(&prefix))
        });
        match found {
            Some(name) => {
                let path = format!("{}/{name}", self.root);
                if self.want {
                    self.request(env, Op::Stat(path));
                } else {
                    self.request(env, Op::Delete(path));
                }
            }
            None if self.want => self.create(env),
            None => self.guid = None,
        }
    }

    fn on_children(&mut self, env: &mut ZkEnv<'_>, mut children: Vec<String>) -> Option<Change> {
        let Some((path, czxid)) = self.node.clone() else {
            self.advance(env);
            return None; // released meanwhile
        };
        if !self.want {
            return None;
        }
        let mine = path
            .rsplit('/')
            .next()
            .expect("a path has a name")
            .to_string();
        children.sort_by_key(|c| sequence_of(c));
        let Some(pos) = children.iter().position(|c| *c == mine) else {
            // Our node is gone: our session must have expired; we will hear so.
            return None;
        };
        if pos == 0 {
            if self.leading {
                return None;
            }
            self.leading = true;
            self.following = None;
            return match self.recipe {
                Recipe::Election => {
                    env.observe(Observation::Leader {
                        term: sequence_of(&mine),
                    });
                    None
                }
                Recipe::Lock => Some(Change::Acquired(czxid)),
            };
        }
        if self.recipe == Recipe::Election {
            let follow = (sequence_of(&children[0]), owner_of(&children[0]));
            if self.following != Some(follow) {
                self.following = Some(follow);
                env.observe(Observation::Follower {
                    term: follow.0,
                    leader: follow.1,
                });
            }
        }
        if !self.herd {
            // Watch the predecessor (our turn comes when it goes) and, in the election,
            // the leader too (a follower learns who leads when the leader goes, as
            // `LeaderElectionSupport` followers re-read on the leader's departure).
            let predecessor = format!("{}/{}", self.root, children[pos - 1]);
            let leader = format!("{}/{}", self.root, children[0]);
            self.to_watch.clear();
            if self.recipe == Recipe::Election && leader != predecessor {
                self.to_watch.push(leader);
            }
            self.to_watch.push(predecessor);
            self.watch_next(env);
        }
        None
    }
}

impl LockApi<ZkMsg, ZkTimer> for ZkRecipeClient {
    fn start_acquire(&mut self, env: &mut ZkEnv<'_>) {
        self.want = true;
        self.advance(env);
    }

    fn release(&mut self, env: &mut ZkEnv<'_>) {
        self.want = false;
        self.leading = false;
        self.watching.clear();
        self.to_watch.clear();
        if let Some((path, _)) = self.node.take() {
            self.guid = None;
            if let Some((xid, _)) = self.pending.take() {
                env.cancel_timer(&ZkTimer::Request(xid));
            }
            if self.reconnecting.is_some() {
                self.retry = Some(Op::Delete(path));
            } else {
                self.request(env, Op::Delete(path));
            }
        }
        // Without a node, a create (or the search for it by GUID) may be outstanding:
        // it goes on, and deletes the node it finds since we no longer want it.
    }
}

impl ZkClient {
    pub fn new(config: &ZkConfig, me: NodeId, cluster: &Cluster) -> ZkClient {
        let server = cluster
            .with_role("server")
            .next()
            .expect("configure checked there is a server");
        let root = match (&config.recipe, &config.workload) {
            (Recipe::Lock, Some(w)) => format!("/lock/{}", w.resource),
            (Recipe::Lock, None) => panic!("the lock recipe has a workload"),
            (Recipe::Election, _) => "/election".to_string(),
        };
        ZkClient {
            recipe: ZkRecipeClient {
                me,
                server,
                recipe: config.recipe,
                herd: config.variant == ZkVariant::Herd,
                session_timeout: config.session_timeout,
                root,
                session: None,
                suspended: false,
                xid: 0,
                pending: None,
                reconnecting: None,
                retry: None,
                guid: None,
                node: None,
                want: config.recipe == Recipe::Election,
                leading: false,
                watching: BTreeMap::new(),
                to_watch: Vec::new(),
                events_seen: 0,
                events_ahead: BTreeSet::new(),
                events_sent: 0,
                following: None,
                reconnect: config.reconnect.map(Backoff::new),
            },
            workload: config.workload.clone().map(Workload::new),
        }
    }

    pub fn on_start(&mut self, env: &mut ZkEnv<'_>) {
        self.recipe.on_start(env);
        if let Some(w) = &mut self.workload {
            w.on_start(env);
        }
    }

    pub fn on_message(&mut self, env: &mut ZkEnv<'_>, msg: ZkMsg) {
        if let ZkMsg::Resource(m) = msg {
            if let Some(w) = &mut self.workload {
                w.on_resource_reply(env, &mut self.recipe, m);
            }
            return;
        }
        let change = self.recipe.on_message(env, msg);
        self.apply(env, change);
    }

    pub fn on_timer(&mut self, env: &mut ZkEnv<'_>, timer: ZkTimer) {
        match timer {
            ZkTimer::Ping => self.recipe.on_ping_timer(env),
            ZkTimer::Request(xid) => self.recipe.on_request_timer(env, xid),
            ZkTimer::SessionCheck => {
                let change = self.recipe.on_session_check(env);
                self.apply(env, change);
            }
            ZkTimer::Workload(t) => {
                if let Some(w) = &mut self.workload {
                    w.on_timer(env, &mut self.recipe, t);
                }
            }
            ZkTimer::Expire(_) => {}
        }
    }

    fn apply(&mut self, env: &mut ZkEnv<'_>, change: Option<Change>) {
        let (Some(change), Some(w)) = (change, &mut self.workload) else {
            return;
        };
        match change {
            Change::Acquired(czxid) => w.on_acquired(env, Some(czxid), None),
            // The session is gone: stop acting on the lock (see `Workload::on_lost`).
            Change::Lost => w.on_lost(env, &mut self.recipe),
            Change::Failed => w.on_acquire_failed(env),
        }
    }
}
