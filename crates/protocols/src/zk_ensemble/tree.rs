//! The replicated state: znodes, sessions and integer registers, changed only by
//! committed transactions applied in zxid order.

use super::{Entry, Origin, SessionId, Txn, ZkeError, ZkeOp, ZkeResult, ZkeVariant, Zxid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::NodeId;

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tree {
    /// The zxid of the last transaction applied.
    pub zxid: Zxid,
    /// Every znode by full path: its czxid and, if ephemeral, its owner session.
    pub nodes: BTreeMap<String, (Zxid, Option<SessionId>)>,
    /// The next sequence number under each parent.
    pub sequences: BTreeMap<String, u64>,
    /// Live sessions: the client and the timeout.
    pub sessions: BTreeMap<SessionId, (NodeId, Duration)>,
    /// Integer registers (a znode's data, reduced to a number), 0 until written.
    pub registers: BTreeMap<u32, i64>,
}

/// The parent of `path` (`/a/b` -> `/a`, `/a` -> `/`).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl Tree {
    pub fn read(&self, key: u32) -> i64 {
        self.registers.get(&key).copied().unwrap_or(0)
    }

    /// `path`'s children: names with their czxid, in name order.
    pub fn children(&self, path: &str) -> Vec<(String, Zxid)> {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, &(czxid, _))| {
                let name = &p[prefix.len()..];
                (!name.contains('/')).then(|| (name.to_string(), czxid))
            })
            .collect()
    }

    /// The leader's `PrepRequestProcessor`: turns a request into the transaction that
    /// will have zxid `zxid`, checked against this (tip) state.
    pub fn prep(&self, op: &ZkeOp, origin: Origin, zxid: Zxid) -> Txn {
        match op {
            ZkeOp::CreateSession { timeout } => Txn::CreateSession {
                session: zxid,
                client: origin.client,
                timeout: *timeout,
            },
            ZkeOp::Create {
                path,
                ephemeral,
                sequential,
            } => {
                if !self.sessions.contains_key(&origin.session) {
                    return Txn::Error {
                        error: ZkeError::SessionExpired,
                    };
                }
                let parent = parent_of(path).to_string();
                let (path, sequence) = if *sequential {
                    let seq = self.sequences.get(&parent).copied().unwrap_or(0);
                    (format!("{path}{seq:010}"), Some(seq))
                } else {
                    (path.clone(), None)
                };
                if self.nodes.contains_key(&path) {
                    return Txn::Error {
                        error: ZkeError::NodeExists,
                    };
                }
                Txn::Create {
                    path,
                    owner: ephemeral.then_some(origin.session),
                    sequence,
                }
            }
            ZkeOp::Delete { path } => {
                if !self.nodes.contains_key(path) {
                    Txn::Error {
                        error: ZkeError::NoNode,
                    }
                } else if !self.children(path).is_empty() {
                    Txn::Error {
                        error: ZkeError::NotEmpty,
                    }
                } else {
                    Txn::Delete { path: path.clone() }
                }
            }
            ZkeOp::Write { key, value } => Txn::Write {
                key: *key,
                value: *value,
            },
            ZkeOp::Read { .. } | ZkeOp::SyncRead { .. } | ZkeOp::GetChildren { .. } => {
                unreachable!("reads are served by the client's own server")
            }
        }
    }

    /// `FinalRequestProcessor` / `DataTree.processTxn`: applies one committed
    /// transaction and says what its origin's client is told.
    pub fn apply(&mut self, e: &Entry, variant: ZkeVariant) -> ZkeResult {
        debug_assert!(e.zxid > self.zxid, "zxid order");
        self.zxid = e.zxid;
        match &e.txn {
            Txn::CreateSession {
                session,
                client,
                timeout,
            } => {
                self.sessions.insert(*session, (*client, *timeout));
                ZkeResult::Connected
            }
            Txn::CloseSession { session } => {
                self.sessions.remove(session);
                if variant != ZkeVariant::EphemeralKeptAfterExpiry {
                    // `DataTree.killSession`: the session's ephemeral nodes go with it.
                    self.nodes.retain(|_, (_, owner)| *owner != Some(*session));
                }
                ZkeResult::Deleted
            }
            Txn::Create {
                path,
                owner,
                sequence,
            } => {
                if let Some(seq) = sequence {
                    self.sequences.insert(parent_of(path).to_string(), seq + 1);
                }
                // Recipes create their parents on the way (Curator's
                // creatingParentsIfNeeded): containers, persistent, czxid of the child.
                let mut p = parent_of(path);
                while p != "/" {
                    self.nodes.entry(p.to_string()).or_insert((e.zxid, None));
                    p = parent_of(p);
                }
                self.nodes.insert(path.clone(), (e.zxid, *owner));
                ZkeResult::Created {
                    path: path.clone(),
                    czxid: e.zxid,
                }
            }
            Txn::Delete { path } => {
                self.nodes.remove(path);
                ZkeResult::Deleted
            }
            Txn::Write { key, value } => {
                self.registers.insert(*key, *value);
                ZkeResult::Written
            }
            Txn::Error { error } => ZkeResult::Error(*error),
        }
    }
}
