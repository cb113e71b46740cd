//! The KV server with leases: one linearizable server standing for the etcd cluster
//! (see the module doc of [`crate::etcd_lock`]).

use super::{EtcdMsg, EtcdTimer, LeaseId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{Env, LocalTime, NodeId, Observation, StorageExt};

const DATA_KEY: &str = "etcd/data";

type EtcdEnv<'a> = dyn Env<EtcdMsg, EtcdTimer> + 'a;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    pub client: NodeId,
    pub ttl: Duration,
    pub keys: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Kv {
    pub create_revision: u64,
    pub lease: LeaseId,
}

/// The server's durable state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EtcdData {
    /// The revision of the last change.
    pub revision: u64,
    pub next_lease: LeaseId,
    pub leases: BTreeMap<LeaseId, Lease>,
    pub kv: BTreeMap<String, Kv>,
    /// Deletion watches by key: who asked, and the request id to answer with.
    pub watches: BTreeMap<String, BTreeSet<(NodeId, u64)>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EtcdServer {
    data: EtcdData,
    /// When each lease expires unless kept alive, by the server's monotonic clock.
    deadlines: BTreeMap<LeaseId, LocalTime>,
}

impl EtcdServer {
    pub fn new() -> EtcdServer {
        EtcdServer::default()
    }

    pub fn data(&self) -> &EtcdData {
        &self.data
    }

    pub fn on_start(&mut self, env: &mut EtcdEnv<'_>) {
        self.data = env.load(DATA_KEY).unwrap_or_default();
        // Every surviving lease gets a fresh TTL, as after a leader change.
        let now = env.monotonic();
        for (&id, lease) in &self.data.leases {
            self.deadlines.insert(id, now + lease.ttl);
            env.set_timer(EtcdTimer::LeaseExpire(id), lease.ttl);
        }
    }

    /// Writes the store and syncs it, as etcd fsyncs its WAL before it answers. Returns
    /// false if the sync failed (etcd treats that as fatal; here the reply is not sent
    /// and the client's retry finds the state as written).
    fn persist(&self, env: &mut EtcdEnv<'_>) -> bool {
        env.store(DATA_KEY, &self.data);
        env.sync().is_ok()
    }

    fn refresh(&mut self, env: &mut EtcdEnv<'_>, lease: LeaseId) {
        let ttl = self.data.leases[&lease].ttl;
        self.deadlines.insert(lease, env.monotonic() + ttl);
        env.set_timer(EtcdTimer::LeaseExpire(lease), ttl);
    }

    pub fn on_message(&mut self, env: &mut EtcdEnv<'_>, from: NodeId, msg: EtcdMsg) {
        let mut synced = true;
        let reply = match msg {
            EtcdMsg::LeaseGrant { req, ttl } => {
                self.data.revision += 1;
                self.data.next_lease += 1;
                let lease = self.data.next_lease;
                self.data.leases.insert(
                    lease,
                    Lease {
                        client: from,
                        ttl,
                        keys: BTreeSet::new(),
                    },
                );
                self.refresh(env, lease);
                synced &= self.persist(env);
                EtcdMsg::LeaseGranted { req, lease, ttl }
            }
            EtcdMsg::KeepAlive { req, lease } => {
                // A lease whose TTL has run out is not renewed, even if its expiry has
                // not been handled yet (the server was stalled, its timers and
                // requests piled up): etcd's `lessor.Renew` answers an expired lease
                // only after revoking it, with "lease not found". Seen against etcd
                // 3.4.23 stopped past the TTL (`tenure real`, book: real-servers.md).
                if self
                    .deadlines
                    .get(&lease)
                    .is_some_and(|d| *d <= env.monotonic())
                {
                    self.expire(env, lease);
                }
                let ttl = self.data.leases.get(&lease).map(|l| l.ttl);
                if ttl.is_some() {
                    self.refresh(env, lease);
                }
                EtcdMsg::KeepAliveReply { req, lease, ttl }
            }
            EtcdMsg::PutIfAbsent { req, key, lease } => {
                let create_revision = if let Some(kv) = self.data.kv.get(&key) {
                    Some(kv.create_revision)
                } else if let Some(l) = self.data.leases.get_mut(&lease) {
                    self.data.revision += 1;
                    l.keys.insert(key.clone());
                    let create_revision = self.data.revision;
                    self.data.kv.insert(
                        key.clone(),
                        Kv {
                            create_revision,
                            lease,
                        },
                    );
                    synced &= self.persist(env);
                    Some(create_revision)
                } else {
                    None
                };
                EtcdMsg::PutReply {
                    req,
                    key,
                    create_revision,
                }
            }
            EtcdMsg::GetPredecessor {
                req,
                prefix,
                before,
            } => {
                let key = self.predecessor(&prefix, before);
                EtcdMsg::Predecessor {
                    req,
                    key,
                    revision: self.data.revision,
                }
            }
            EtcdMsg::Get { req, key } => {
                let create_revision = self.data.kv.get(&key).map(|kv| kv.create_revision);
                EtcdMsg::GetReply {
                    req,
                    key,
                    create_revision,
                }
            }
            EtcdMsg::WatchDelete { req, key, revision } => {
                // The key as it was at `revision` is still there only if it was
                // created by then: one created since is a new key of that name, and
                // the watched one was deleted in between.
                let unchanged = self
                    .data
                    .kv
                    .get(&key)
                    .is_some_and(|kv| kv.create_revision <= revision);
                if unchanged {
                    // One watch per watcher and key: a re-watch (a resumed stream)
                    // replaces the old one.
                    let watchers = self.data.watches.entry(key).or_default();
                    watchers.retain(|(watcher, _)| *watcher != from);
                    watchers.insert((from, req));
                    let _ = self.persist(env);
                    return;
                }
                EtcdMsg::KeyDeleted { req, key }
            }
            EtcdMsg::Delete { req, key } => {
                if self.data.kv.contains_key(&key) {
                    self.data.revision += 1;
                    self.remove_key(env, &key);
                    synced &= self.persist(env);
                }
                EtcdMsg::Deleted { req }
            }
            _ => return, // not a request
        };
        if synced {
            env.send(from, reply);
        }
    }

    pub fn on_timer(&mut self, env: &mut EtcdEnv<'_>, timer: EtcdTimer) {
        let EtcdTimer::LeaseExpire(lease) = timer else {
            return;
        };
        let Some(&deadline) = self.deadlines.get(&lease) else {
            return;
        };
        let now = env.monotonic();
        if now < deadline {
            env.set_timer(EtcdTimer::LeaseExpire(lease), now.until(deadline));
            return;
        }
        self.expire(env, lease);
    }

    /// The key under `prefix` with the highest create revision below `before`.
    pub fn predecessor(&self, prefix: &str, before: u64) -> Option<String> {
        let dir = format!("{prefix}/");
        self.data
            .kv
            .range(dir.clone()..)
            .take_while(|(k, _)| k.starts_with(&dir))
            .filter(|(_, kv)| kv.create_revision < before)
            .max_by_key(|(_, kv)| kv.create_revision)
            .map(|(k, _)| k.clone())
    }

    /// Deletes a key within the current revision and tells its watchers.
    fn remove_key(&mut self, env: &mut EtcdEnv<'_>, key: &str) {
        let kv = self.data.kv.remove(key).expect("the key exists");
        if let Some(lease) = self.data.leases.get_mut(&kv.lease) {
            lease.keys.remove(key);
        }
        for (client, req) in self.data.watches.remove(key).unwrap_or_default() {
            env.send(
                client,
                EtcdMsg::KeyDeleted {
                    req,
                    key: key.to_string(),
                },
            );
        }
    }

    /// The TTL ran out: one revision revokes the lease and deletes its keys.
    fn expire(&mut self, env: &mut EtcdEnv<'_>, lease: LeaseId) {
        let l = self
            .data
            .leases
            .remove(&lease)
            .expect("only live leases have deadlines");
        self.deadlines.remove(&lease);
        self.data.revision += 1;
        env.observe(Observation::Note {
            text: format!("lease {lease} of {} expired", l.client),
        });
        for key in &l.keys {
            self.remove_key(env, key);
        }
        // A failed sync leaves the expiry in the OS cache; the next write syncs it.
        let _ = self.persist(env);
    }
}
