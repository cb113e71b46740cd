//! A client: its session, the election/lock recipe, and (lock recipe) the workload.

use super::{Recipe, SessionId, ZkConfig, ZkError, ZkEvent, ZkMsg, ZkTimer, ZkVariant};
use crate::backoff::Backoff;
use crate::workload::{LockApi, Workload, WorkloadTimer};
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
    /// The outstanding create, getChildren or exists request.
    pending: Option<u64>,
    /// Our node: full path and czxid.
    node: Option<(String, u64)>,
    /// Whether we want to be in the queue (election: always; lock: while acquiring).
    want: bool,
    /// Whether we believe we lead / hold the lock.
    leading: bool,
    /// The predecessor we watch (correct variant).
    watching: Option<String>,
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

/// The client id a recipe node's name carries (`n-<id>-<sequence>`).
fn owner_of(name: &str) -> Option<NodeId> {
    name.strip_prefix("n-")?
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

    fn ping_interval(&self) -> Duration {
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
        let msg = match self.session {
            Some(session) => ZkMsg::Ping { session },
            None => ZkMsg::Connect {
                timeout: self.session_timeout,
            },
        };
        env.send(self.server, msg);
        env.set_timer(ZkTimer::Ping, self.ping_interval());
    }

    /// Joins the queue: create our ephemeral sequential node.
    fn create(&mut self, env: &mut ZkEnv<'_>) {
        let Some(session) = self.session else {
            return; // done on connect
        };
        let xid = self.next_xid();
        self.pending = Some(xid);
        env.send(
            self.server,
            ZkMsg::Create {
                session,
                xid,
                path: format!("{}/n-{}-", self.root, self.me.0),
                ephemeral: true,
                sequential: true,
            },
        );
    }

    /// Reads the queue (with a watch on it in the herd variant).
    fn check(&mut self, env: &mut ZkEnv<'_>) {
        let Some(session) = self.session else { return };
        let xid = self.next_xid();
        self.pending = Some(xid);
        env.send(
            self.server,
            ZkMsg::GetChildren {
                session,
                xid,
                path: self.root.clone(),
                watch: self.herd,
            },
        );
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

    fn on_message(&mut self, env: &mut ZkEnv<'_>, msg: ZkMsg) -> Option<Change> {
        match msg {
            ZkMsg::Connected { session, .. } => {
                if self.session.is_some() {
                    return None; // a duplicate connect; that session will expire unused
                }
                self.session = Some(session);
                if let Some(b) = &mut self.reconnect {
                    b.on_success();
                }
                self.heard(env);
                if self.want {
                    self.create(env);
                }
                None
            }
            ZkMsg::SessionExpired { session } if Some(session) == self.session => {
                let lost = self.stop_leading(env);
                self.session = None;
                self.node = None;
                self.pending = None;
                self.watching = None;
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
            ZkMsg::Pong { session } if Some(session) == self.session => {
                if self.heard(env) && self.want && self.node.is_some() && self.pending.is_none() {
                    // Back from a suspicion: the queue may have moved meanwhile.
                    self.check(env);
                }
                None
            }
            ZkMsg::Created {
                session,
                xid,
                path,
                czxid,
            } if Some(session) == self.session => {
                self.heard(env);
                if self.pending == Some(xid) && self.want && self.node.is_none() {
                    self.pending = None;
                    self.node = Some((path, czxid));
                    self.check(env);
                } else {
                    // Not the node we want (any more): do not leave it blocking others.
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
            } if Some(session) == self.session && self.pending == Some(xid) => {
                self.heard(env);
                self.pending = None;
                self.on_children(env, children)
            }
            ZkMsg::Stat {
                session,
                xid,
                czxid,
                ..
            } if Some(session) == self.session && self.pending == Some(xid) => {
                self.heard(env);
                self.pending = None;
                if czxid.is_none() {
                    // The predecessor went before our watch was set: look again.
                    self.watching = None;
                    self.check(env);
                }
                None
            }
            ZkMsg::Watch {
                session,
                path,
                event,
            } if Some(session) == self.session => {
                self.heard(env);
                let relevant = match event {
                    ZkEvent::NodeDeleted => self.watching.as_deref() == Some(path.as_str()),
                    ZkEvent::ChildrenChanged => self.herd && path == self.root,
                    ZkEvent::NodeCreated => false,
                };
                if relevant && self.want && self.node.is_some() && !self.leading {
                    self.watching = None;
                    self.check(env);
                }
                None
            }
            ZkMsg::Error {
                session,
                xid,
                error,
            } if Some(session) == self.session => {
                self.heard(env);
                if self.pending == Some(xid) {
                    // Only getChildren on a vanished parent can fail here: start over.
                    assert_eq!(error, ZkError::NoNode, "unexpected error {error:?}");
                    self.pending = None;
                    self.node = None;
                    if self.want {
                        self.create(env);
                    }
                }
                None
            }
            ZkMsg::Deleted { session, .. } if Some(session) == self.session => {
                self.heard(env);
                None
            }
            _ => None,
        }
    }

    fn on_children(&mut self, env: &mut ZkEnv<'_>, mut children: Vec<String>) -> Option<Change> {
        let Some((path, czxid)) = self.node.clone() else {
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
            let session = self.session.expect("a reply came on it");
            let predecessor = format!("{}/{}", self.root, children[pos - 1]);
            let xid = self.next_xid();
            self.pending = Some(xid);
            self.watching = Some(predecessor.clone());
            env.send(
                self.server,
                ZkMsg::Exists {
                    session,
                    xid,
                    path: predecessor,
                    watch: true,
                },
            );
        }
        None
    }
}

impl LockApi<ZkMsg, ZkTimer> for ZkRecipeClient {
    fn start_acquire(&mut self, env: &mut ZkEnv<'_>) {
        self.want = true;
        if self.node.is_none() && self.pending.is_none() {
            self.create(env);
        }
    }

    fn release(&mut self, env: &mut ZkEnv<'_>) {
        self.want = false;
        self.leading = false;
        self.watching = None;
        self.pending = None;
        if let (Some((path, _)), Some(session)) = (self.node.take(), self.session) {
            let xid = self.next_xid();
            env.send(self.server, ZkMsg::Delete { session, xid, path });
        }
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
                node: None,
                want: config.recipe == Recipe::Election,
                leading: false,
                watching: None,
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
            // The workload ends its belief as if its validity ran out; it goes on to
            // write (unchecked, as real clients do) and then releases.
            Change::Lost if w.holding() => {
                w.on_timer(env, &mut self.recipe, WorkloadTimer::Validity)
            }
            Change::Lost => {}
            Change::Failed => w.on_acquire_failed(env),
        }
    }
}
