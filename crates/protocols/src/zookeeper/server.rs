//! The coordination server: one linearizable server standing for the whole ensemble
//! (see the module doc of [`crate::zookeeper`]).

use super::{SessionId, ZkError, ZkEvent, ZkMsg, ZkTimer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{Env, LocalTime, NodeId, Observation, StorageExt};

const DATA_KEY: &str = "zookeeper/data";

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Znode {
    /// The zxid of the change that created it.
    pub czxid: u64,
    /// The session that owns it if it is ephemeral.
    pub ephemeral_owner: Option<SessionId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Session {
    pub client: NodeId,
    pub timeout: Duration,
    /// How many watch events the server has sent on this session: each `Watch` carries
    /// its number, and every `Pong` the count, so a client can tell that one was lost
    /// (standing in for TCP's sequence numbers, which make a real client see a lost
    /// event as a broken connection).
    #[serde(default)]
    pub events: u64,
}

/// The server's durable state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ZkData {
    /// The zxid of the last change.
    pub zxid: u64,
    pub next_session: SessionId,
    /// Every znode by full path (`/lock/counter/n-3-0000000002`).
    pub nodes: BTreeMap<String, Znode>,
    /// The next sequence number under each parent.
    pub sequences: BTreeMap<String, u64>,
    pub sessions: BTreeMap<SessionId, Session>,
    /// `exists` watches by path.
    pub data_watches: BTreeMap<String, BTreeSet<SessionId>>,
    /// `getChildren` watches by path.
    pub child_watches: BTreeMap<String, BTreeSet<SessionId>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ZkServer {
    data: ZkData,
    /// When each session expires unless heard from, by the server's monotonic clock.
    deadlines: BTreeMap<SessionId, LocalTime>,
    /// The data changed in this handler and is not yet stored.
    dirty: bool,
    /// The request xids lately handled per session: a duplicated request is dropped, as
    /// TCP delivers a request once (in memory: a restart drops every connection).
    seen: BTreeMap<SessionId, BTreeSet<u64>>,
    /// Watch events of this handler, sent once the change that fired them is durable
    /// (as ZooKeeper logs a transaction before its watches fire), so an event is never
    /// out before its number is stored.
    outbox: Vec<(NodeId, ZkMsg)>,
}

/// How many recent xids per session the server remembers to drop duplicates.
const SEEN_XIDS: usize = 64;

/// The parent of `path` (`/a/b` -> `/a`, `/a` -> `/`).
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

type ZkEnv<'a> = dyn Env<ZkMsg, ZkTimer> + 'a;

impl ZkServer {
    pub fn new() -> ZkServer {
        ZkServer::default()
    }

    pub fn data(&self) -> &ZkData {
        &self.data
    }

    pub fn on_start(&mut self, env: &mut ZkEnv<'_>) {
        self.data = env.load(DATA_KEY).unwrap_or_default();
        // Every surviving session gets a fresh timeout, as after a leader change.
        let now = env.monotonic();
        for (&id, session) in &self.data.sessions {
            self.deadlines.insert(id, now + session.timeout);
            env.set_timer(ZkTimer::Expire(id), session.timeout);
        }
    }

    /// Writes the data back if the handler changed it (once per handler), then sends
    /// what the handlers queued.
    fn persist(&mut self, env: &mut ZkEnv<'_>) {
        // Durable before the handler's replies go out, as ZooKeeper's transaction log
        // is synced before a request is acknowledged (`SyncRequestProcessor` hands a
        // request on only after `commit()`; a failed fsync stops the server). A failed
        // sync keeps the data dirty and the replies queued: nothing that depends on
        // the change goes out until a later handler's sync succeeds.
        if self.dirty {
            if env.store_synced(DATA_KEY, &self.data).is_err() {
                return;
            }
            self.dirty = false;
        }
        for (to, msg) in std::mem::take(&mut self.outbox) {
            env.send(to, msg);
        }
    }

    /// The session was heard from: push its expiry out.
    fn touch(&mut self, env: &mut ZkEnv<'_>, session: SessionId) {
        let timeout = self.data.sessions[&session].timeout;
        self.deadlines.insert(session, env.monotonic() + timeout);
        env.set_timer(ZkTimer::Expire(session), timeout);
    }

    pub fn on_message(&mut self, env: &mut ZkEnv<'_>, from: NodeId, msg: ZkMsg) {
        let session = match &msg {
            ZkMsg::Connect { timeout } => {
                self.data.zxid += 1;
                self.data.next_session += 1;
                let session = self.data.next_session;
                self.data.sessions.insert(
                    session,
                    Session {
                        client: from,
                        timeout: *timeout,
                        events: 0,
                    },
                );
                self.dirty = true;
                self.persist(env);
                self.touch(env, session);
                self.reply(
                    env,
                    from,
                    ZkMsg::Connected {
                        session,
                        timeout: *timeout,
                    },
                );
                return;
            }
            ZkMsg::Ping { session } | ZkMsg::Reconnect { session, .. } => *session,
            ZkMsg::Create { session, xid, .. }
            | ZkMsg::Delete { session, xid, .. }
            | ZkMsg::GetChildren { session, xid, .. }
            | ZkMsg::Exists { session, xid, .. }
            | ZkMsg::SetWatches { session, xid, .. } => {
                if !self.data.sessions.contains_key(session) {
                    self.reply(env, from, ZkMsg::SessionExpired { session: *session });
                    return;
                }
                let seen = self.seen.entry(*session).or_default();
                if !seen.insert(*xid) {
                    return; // a duplicate: TCP would not have delivered it twice
                }
                if seen.len() > SEEN_XIDS {
                    seen.pop_first();
                }
                *session
            }
            _ => return, // not a request
        };
        if !self.data.sessions.contains_key(&session) {
            self.reply(env, from, ZkMsg::SessionExpired { session });
            return;
        }
        self.touch(env, session);
        let reply = match msg {
            ZkMsg::Ping { session } => ZkMsg::Pong {
                session,
                events: self.data.sessions[&session].events,
            },
            ZkMsg::Reconnect { session, xid } => ZkMsg::Reconnected {
                session,
                xid,
                events: self.data.sessions[&session].events,
            },
            ZkMsg::SetWatches {
                session,
                xid,
                exists,
                children,
            } => {
                self.set_watches(session, exists, children);
                ZkMsg::WatchesSet { session, xid }
            }
            ZkMsg::Create {
                session,
                xid,
                path,
                ephemeral,
                sequential,
            } => match self.create(session, &path, ephemeral, sequential) {
                Ok((path, czxid)) => ZkMsg::Created {
                    session,
                    xid,
                    path,
                    czxid,
                },
                Err(error) => ZkMsg::Error {
                    session,
                    xid,
                    error,
                },
            },
            ZkMsg::Delete { session, xid, path } => match self.delete(&path) {
                Ok(()) => ZkMsg::Deleted { session, xid },
                Err(error) => ZkMsg::Error {
                    session,
                    xid,
                    error,
                },
            },
            ZkMsg::GetChildren {
                session,
                xid,
                path,
                watch,
            } => {
                if !self.data.nodes.contains_key(&path) && path != "/" {
                    ZkMsg::Error {
                        session,
                        xid,
                        error: ZkError::NoNode,
                    }
                } else {
                    if watch {
                        self.add_watch(true, &path, session);
                    }
                    let children = self.children(&path);
                    ZkMsg::Children {
                        session,
                        xid,
                        path,
                        children,
                    }
                }
            }
            ZkMsg::Exists {
                session,
                xid,
                path,
                watch,
            } => {
                if watch {
                    self.add_watch(false, &path, session);
                }
                let czxid = self.data.nodes.get(&path).map(|n| n.czxid);
                ZkMsg::Stat {
                    session,
                    xid,
                    path,
                    czxid,
                }
            }
            _ => unreachable!("only requests get here"),
        };
        self.persist(env);
        self.reply(env, from, reply);
    }

    /// Sends `msg` now, or after the sync that makes the data durable if the last one
    /// failed (see `persist`).
    fn reply(&mut self, env: &mut ZkEnv<'_>, to: NodeId, msg: ZkMsg) {
        if self.dirty {
            self.outbox.push((to, msg));
        } else {
            env.send(to, msg);
        }
    }

    pub fn on_timer(&mut self, env: &mut ZkEnv<'_>, timer: ZkTimer) {
        let ZkTimer::Expire(session) = timer else {
            return;
        };
        let Some(&deadline) = self.deadlines.get(&session) else {
            return;
        };
        let now = env.monotonic();
        if now < deadline {
            env.set_timer(ZkTimer::Expire(session), now.until(deadline));
            return;
        }
        self.expire(env, session);
    }

    /// Names of `path`'s children, sorted.
    pub fn children(&self, path: &str) -> Vec<String> {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        self.data
            .nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, _)| {
                let name = &p[prefix.len()..];
                (!name.contains('/')).then(|| name.to_string())
            })
            .collect()
    }

    fn add_watch(&mut self, child: bool, path: &str, session: SessionId) {
        let watches = if child {
            &mut self.data.child_watches
        } else {
            &mut self.data.data_watches
        };
        if watches.entry(path.to_string()).or_default().insert(session) {
            self.dirty = true;
        }
    }

    /// Fires (and removes) the one-shot watches of one kind on `path`.
    fn fire(&mut self, child: bool, path: &str, event: ZkEvent) {
        let watches = if child {
            &mut self.data.child_watches
        } else {
            &mut self.data.data_watches
        };
        let Some(sessions) = watches.remove(path) else {
            return;
        };
        for session in sessions {
            self.send_event(session, path, event);
        }
    }

    /// Sends one watch event to a live session, numbered.
    fn send_event(&mut self, session: SessionId, path: &str, event: ZkEvent) {
        let Some(s) = self.data.sessions.get_mut(&session) else {
            return;
        };
        let seq = s.events;
        s.events += 1;
        self.dirty = true;
        self.outbox.push((
            s.client,
            ZkMsg::Watch {
                session,
                path: path.to_string(),
                event,
                seq,
            },
        ));
    }

    /// `SetWatches` after a reconnect (ZooKeeper's `FinalRequestProcessor` for
    /// `OpCode.setWatches`, `DataTree.setWatches`): an `exists` watch whose node changed
    /// since the client last saw it fires at once (`NodeDeleted` or `NodeCreated`), any
    /// other is registered again. The real request carries the client's last zxid and the
    /// server compares each node's zxids to it; here the client sends the czxid it saw
    /// (`None`: it saw no node), which is the same test for nodes without data. A child
    /// watch is re-registered and fires `ChildrenChanged` at once: this server keeps no
    /// `pzxid`, so it cannot tell whether the children changed meanwhile, and a spurious
    /// event only makes the client read them again.
    fn set_watches(
        &mut self,
        session: SessionId,
        exists: Vec<(String, Option<u64>)>,
        children: Vec<String>,
    ) {
        for (path, seen) in exists {
            let now = self.data.nodes.get(&path).map(|n| n.czxid);
            match (seen, now) {
                (a, b) if a == b => self.add_watch(false, &path, session),
                (_, None) => self.send_event(session, &path, ZkEvent::NodeDeleted),
                (_, Some(_)) => self.send_event(session, &path, ZkEvent::NodeCreated),
            }
        }
        for path in children {
            if self.data.nodes.contains_key(&path) {
                self.send_event(session, &path, ZkEvent::ChildrenChanged);
            } else {
                self.send_event(session, &path, ZkEvent::NodeDeleted);
            }
        }
    }

    fn create(
        &mut self,
        session: SessionId,
        path: &str,
        ephemeral: bool,
        sequential: bool,
    ) -> Result<(String, u64), ZkError> {
        let parent = parent_of(path).to_string();
        if parent != "/" && !self.data.nodes.contains_key(&parent) {
            // Recipes create their parent on the way (Curator's creatingParentsIfNeeded).
            self.create(session, &parent, false, false)?;
        }
        let path = if sequential {
            let seq = self.data.sequences.entry(parent.clone()).or_insert(0);
            let name = format!("{path}{seq:010}");
            *seq += 1;
            name
        } else {
            path.to_string()
        };
        if self.data.nodes.contains_key(&path) {
            return Err(ZkError::NodeExists);
        }
        self.data.zxid += 1;
        let czxid = self.data.zxid;
        self.data.nodes.insert(
            path.clone(),
            Znode {
                czxid,
                ephemeral_owner: ephemeral.then_some(session),
            },
        );
        self.fire(false, &path, ZkEvent::NodeCreated);
        self.fire(true, &parent, ZkEvent::ChildrenChanged);
        self.dirty = true;
        Ok((path, czxid))
    }

    fn delete(&mut self, path: &str) -> Result<(), ZkError> {
        if !self.data.nodes.contains_key(path) {
            return Err(ZkError::NoNode);
        }
        if !self.children(path).is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.data.zxid += 1;
        self.remove_node(path);
        self.dirty = true;
        Ok(())
    }

    /// Removes a (childless) node and fires its watches, within the current zxid.
    fn remove_node(&mut self, path: &str) {
        self.data.nodes.remove(path);
        self.fire(false, path, ZkEvent::NodeDeleted);
        self.fire(true, path, ZkEvent::NodeDeleted);
        self.fire(true, parent_of(path), ZkEvent::ChildrenChanged);
    }

    /// The session timed out: one change (zxid) deletes its ephemeral nodes and fires
    /// their watches; its own watches go with it.
    fn expire(&mut self, env: &mut ZkEnv<'_>, session: SessionId) {
        let s = self
            .data
            .sessions
            .remove(&session)
            .expect("only live sessions have deadlines");
        self.deadlines.remove(&session);
        self.seen.remove(&session);
        self.data.zxid += 1;
        env.observe(Observation::Note {
            text: format!("session {session} of {} expired", s.client),
        });
        for watches in [&mut self.data.data_watches, &mut self.data.child_watches] {
            for set in watches.values_mut() {
                set.remove(&session);
            }
            watches.retain(|_, set| !set.is_empty());
        }
        let owned: Vec<String> = self
            .data
            .nodes
            .iter()
            .filter(|(_, n)| n.ephemeral_owner == Some(session))
            .map(|(p, _)| p.clone())
            .collect();
        for path in owned {
            self.remove_node(&path);
        }
        self.dirty = true;
        self.persist(env);
    }
}
