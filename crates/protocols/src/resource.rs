//! A protected resource: a storage service holding one integer counter per resource
//! name, which lock clients read and write. Every lock protocol in the zoo embeds it in
//! its node enum (`Node::Storage(Resource)`) and wraps its messages in its own `Msg`
//! enum (`Msg::Resource(ResourceMsg)` plus `impl From<ResourceMsg> for Msg`).
//!
//! What it promises: in [`FencingMode::Fenced`] it never accepts a write whose fencing
//! token is lower than the highest token it has already accepted (or seen on a read) for
//! that resource, and it rejects writes that carry no token at all. That is the storage-side check of
//! Kleppmann, "How to do distributed locking" (2016), "Making the lock safe with
//! fencing": the lock service alone cannot stop a paused client from writing, only the
//! resource can. In [`FencingMode::Unfenced`] it accepts every write, so a client that
//! wrongly believes it holds the lock overwrites newer data (a lost update).
//!
//! Every write is observed as [`Observation::Write`] (accepted or not); checkers judge
//! fencing safety and lost updates from those. The counters and the highest accepted
//! tokens are durable: they survive a crash of the storage node.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tenure_core::{Env, NodeId, Observation, Observe, Storage, StorageExt};

/// Whether the resource checks fencing tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FencingMode {
    /// Rejects a write without a token, or with a token lower than the highest accepted.
    Fenced,
    /// Accepts every write.
    Unfenced,
}

/// Requests to the resource and its replies. `op` is chosen by the client and echoed
/// back, so a late or duplicated reply to an older request can be told apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ResourceMsg {
    /// In fenced mode a read's token counts as seen: later writes with a lower token
    /// are rejected (see [`Resource::handle`]).
    Read {
        resource: String,
        op: u64,
        token: Option<u64>,
    },
    ReadReply {
        resource: String,
        op: u64,
        value: i64,
    },
    Write {
        resource: String,
        op: u64,
        token: Option<u64>,
        value: i64,
        /// The value the client read and computed `value` from (a read-modify-write).
        based_on: Option<i64>,
    },
    WriteReply {
        resource: String,
        op: u64,
        accepted: bool,
    },
}

/// One resource's durable state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cell {
    pub value: i64,
    /// The highest fencing token accepted (or seen on a read) so far, fenced mode only.
    pub highest_token: Option<u64>,
}

/// The storage service's state machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resource {
    mode: FencingMode,
    cells: BTreeMap<String, Cell>,
}

/// The storage key under which the cells are kept.
const STORAGE_KEY: &str = "resource/cells";

impl Resource {
    pub fn new(mode: FencingMode) -> Resource {
        Resource {
            mode,
            cells: BTreeMap::new(),
        }
    }

    pub fn mode(&self) -> FencingMode {
        self.mode
    }

    /// The current value of `resource` (0 if never written).
    pub fn value(&self, resource: &str) -> i64 {
        self.cells.get(resource).map_or(0, |c| c.value)
    }

    /// The durable state of `resource`, if it was ever written.
    pub fn cell(&self, resource: &str) -> Option<&Cell> {
        self.cells.get(resource)
    }

    /// Reads the durable cells back (call from the node's `on_start`).
    pub fn on_start<E: Storage + ?Sized>(&mut self, env: &E) {
        self.cells = env.load(STORAGE_KEY).unwrap_or_default();
    }

    /// Handles one request from `from` and returns the reply to send back (`None` for a
    /// message that is not a request, e.g. a stray reply). Accepted writes are stored
    /// before the reply is returned; every write is observed.
    ///
    /// In fenced mode a read's token raises the highest token seen, like a write's. Were
    /// only writes to count, a paused holder's stale write landing between the new
    /// holder's read and write would be accepted and then silently overwritten: fencing
    /// must cover the whole read-modify-write, not just its last step.
    pub fn handle<E: Storage + Observe + ?Sized>(
        &mut self,
        env: &mut E,
        from: NodeId,
        msg: ResourceMsg,
    ) -> Option<ResourceMsg> {
        match msg {
            ResourceMsg::Read {
                resource,
                op,
                token,
            } => {
                if let (FencingMode::Fenced, Some(t)) = (self.mode, token) {
                    let before = self.cells.get(&resource).cloned();
                    let cell = self.cells.entry(resource.clone()).or_default();
                    if cell.highest_token.is_none_or(|h| h < t) {
                        cell.highest_token = Some(t);
                        // Durable before it answers, as a real store's fsync: a power
                        // loss must not forget a token it has fenced on.
                        if env.store_synced(STORAGE_KEY, &self.cells).is_err() {
                            self.undo(env, &resource, before);
                            return None;
                        }
                    }
                }
                let value = self.value(&resource);
                Some(ResourceMsg::ReadReply {
                    resource,
                    op,
                    value,
                })
            }
            ResourceMsg::Write {
                resource,
                op,
                token,
                value,
                based_on,
            } => {
                let before = self.cells.get(&resource).cloned();
                let cell = self.cells.entry(resource.clone()).or_default();
                let accepted = match self.mode {
                    FencingMode::Unfenced => true,
                    FencingMode::Fenced => match (token, cell.highest_token) {
                        (None, _) => false,
                        (Some(_), None) => true,
                        (Some(t), Some(highest)) => t >= highest,
                    },
                };
                if accepted {
                    cell.value = value;
                    if self.mode == FencingMode::Fenced {
                        let t = token.expect("fenced writes are accepted only with a token");
                        assert!(cell.highest_token.is_none_or(|h| h <= t));
                        cell.highest_token = Some(t);
                    }
                    // Durable before it is acknowledged; a failed sync answers
                    // nothing (the client's request times out).
                    if env.store_synced(STORAGE_KEY, &self.cells).is_err() {
                        self.undo(env, &resource, before);
                        return None;
                    }
                }
                env.observe(Observation::Write {
                    resource: resource.clone(),
                    client: from,
                    token,
                    accepted,
                    value,
                    based_on,
                });
                Some(ResourceMsg::WriteReply {
                    resource,
                    op,
                    accepted,
                })
            }
            ResourceMsg::ReadReply { .. } | ResourceMsg::WriteReply { .. } => None,
        }
    }

    /// Takes back a change whose sync failed: the cell of `resource` goes back to
    /// `before` in memory and in the (unsynced) storage, as if the request had never
    /// arrived. Otherwise a later read would see a write nobody observed as accepted,
    /// or be answered on a token raise a power loss can still forget.
    fn undo<E: Storage + ?Sized>(&mut self, env: &mut E, resource: &str, before: Option<Cell>) {
        match before {
            Some(cell) => self.cells.insert(resource.to_string(), cell),
            None => self.cells.remove(resource),
        };
        env.store(STORAGE_KEY, &self.cells);
    }

    /// [`Resource::handle`], then sends the reply (wrapped in the protocol's message
    /// type) back to `from`.
    pub fn on_message<M: From<ResourceMsg>, T>(
        &mut self,
        env: &mut dyn Env<M, T>,
        from: NodeId,
        msg: ResourceMsg,
    ) {
        if let Some(reply) = self.handle(env, from, msg) {
            env.send(from, M::from(reply));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Cluster, Effect, LocalTime, SplitMix64, Step, StorageMap};

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Wrapped(ResourceMsg);
    impl From<ResourceMsg> for Wrapped {
        fn from(m: ResourceMsg) -> Wrapped {
            Wrapped(m)
        }
    }

    fn write(op: u64, token: Option<u64>, value: i64) -> ResourceMsg {
        ResourceMsg::Write {
            resource: "r".into(),
            op,
            token,
            value,
            based_on: Some(value - 1),
        }
    }

    fn write_obs(client: u32, token: Option<u64>, accepted: bool, value: i64) -> Observation {
        Observation::Write {
            resource: "r".into(),
            client: NodeId(client),
            token,
            accepted,
            value,
            based_on: Some(value - 1),
        }
    }

    /// Runs one message through `res` and returns the effects.
    fn step(
        res: &mut Resource,
        storage: &mut StorageMap,
        from: u32,
        msg: ResourceMsg,
    ) -> Vec<Effect<Wrapped, ()>> {
        step_with(res, storage, from, msg, false)
    }

    /// [`step`], with every `sync` failing if `sync_fails` (a disk error).
    fn step_with(
        res: &mut Resource,
        storage: &mut StorageMap,
        from: u32,
        msg: ResourceMsg,
        sync_fails: bool,
    ) -> Vec<Effect<Wrapped, ()>> {
        let cluster = Cluster::uniform("node", 4);
        let mut rng = SplitMix64(1);
        let mut s: Step<'_, Wrapped, ()> = Step::new(
            NodeId(0),
            &cluster,
            LocalTime(0),
            LocalTime(0),
            storage,
            &mut rng,
        );
        s.sync_fails = sync_fails;
        res.on_message(&mut s, NodeId(from), msg);
        s.effects
    }

    #[test]
    fn read_replies_with_the_value_and_has_no_other_effect() {
        let mut res = Resource::new(FencingMode::Unfenced);
        let mut storage = StorageMap::new();
        let effects = step(
            &mut res,
            &mut storage,
            2,
            ResourceMsg::Read {
                resource: "r".into(),
                op: 7,
                token: None,
            },
        );
        assert_eq!(
            effects,
            vec![Effect::Send {
                to: NodeId(2),
                msg: Wrapped(ResourceMsg::ReadReply {
                    resource: "r".into(),
                    op: 7,
                    value: 0
                })
            }]
        );
    }

    #[test]
    fn unfenced_accepts_a_stale_token_and_no_token() {
        let mut res = Resource::new(FencingMode::Unfenced);
        let mut storage = StorageMap::new();
        step(&mut res, &mut storage, 1, write(1, Some(5), 10));
        let effects = step(&mut res, &mut storage, 2, write(2, Some(3), 11));
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: STORAGE_KEY.into(),
                    value: Some(r#"{"r":{"value":11,"highest_token":null}}"#.into())
                },
                Effect::Sync { ok: true },
                Effect::Observe(write_obs(2, Some(3), true, 11)),
                Effect::Send {
                    to: NodeId(2),
                    msg: Wrapped(ResourceMsg::WriteReply {
                        resource: "r".into(),
                        op: 2,
                        accepted: true
                    })
                },
            ]
        );
        step(&mut res, &mut storage, 3, write(3, None, 12));
        assert_eq!(res.value("r"), 12);
    }

    #[test]
    fn fenced_rejects_a_lower_token_and_a_missing_token() {
        let mut res = Resource::new(FencingMode::Fenced);
        let mut storage = StorageMap::new();
        let first = step(&mut res, &mut storage, 1, write(1, Some(5), 10));
        assert_eq!(
            first[..2],
            [
                Effect::Store {
                    key: STORAGE_KEY.into(),
                    value: Some(r#"{"r":{"value":10,"highest_token":5}}"#.into())
                },
                Effect::Sync { ok: true },
            ]
        );
        let stale = step(&mut res, &mut storage, 2, write(2, Some(4), 99));
        assert_eq!(
            stale,
            vec![
                Effect::Observe(write_obs(2, Some(4), false, 99)),
                Effect::Send {
                    to: NodeId(2),
                    msg: Wrapped(ResourceMsg::WriteReply {
                        resource: "r".into(),
                        op: 2,
                        accepted: false
                    })
                },
            ]
        );
        let none = step(&mut res, &mut storage, 3, write(3, None, 98));
        assert_eq!(none[0], Effect::Observe(write_obs(3, None, false, 98)));
        // The same token again (the holder's second write) is fine.
        let same = step(&mut res, &mut storage, 1, write(4, Some(5), 11));
        assert_eq!(same[1], Effect::Sync { ok: true });
        assert_eq!(same[2], Effect::Observe(write_obs(1, Some(5), true, 11)));
        assert_eq!(res.cell("r").unwrap().highest_token, Some(5));
        assert_eq!(res.value("r"), 11);
    }

    #[test]
    fn cells_survive_a_restart() {
        let mut res = Resource::new(FencingMode::Fenced);
        let mut storage = StorageMap::new();
        step(&mut res, &mut storage, 1, write(1, Some(5), 10));
        let mut fresh = Resource::new(FencingMode::Fenced);
        fresh.on_start(&storage_env(&mut storage));
        assert_eq!(fresh, res);
        // After the restart a stale token is still rejected.
        let effects = step(&mut fresh, &mut storage, 2, write(2, Some(4), 3));
        assert_eq!(effects[0], Effect::Observe(write_obs(2, Some(4), false, 3)));
    }

    fn storage_env(storage: &mut StorageMap) -> StorageOnly<'_> {
        StorageOnly(storage)
    }

    struct StorageOnly<'a>(&'a mut StorageMap);
    impl Storage for StorageOnly<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(String::as_str)
        }
        fn put(&mut self, key: &str, value: String) {
            self.0.insert(key.into(), value);
        }
        fn delete(&mut self, key: &str) {
            self.0.remove(key);
        }
        fn sync(&mut self) -> Result<(), tenure_core::SyncError> {
            Ok(())
        }
    }

    #[test]
    fn fenced_read_raises_the_highest_token() {
        let mut res = Resource::new(FencingMode::Fenced);
        let mut storage = StorageMap::new();
        step(&mut res, &mut storage, 1, write(1, Some(1), 10));
        let read = ResourceMsg::Read {
            resource: "r".into(),
            op: 2,
            token: Some(2),
        };
        let effects = step(&mut res, &mut storage, 2, read);
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: STORAGE_KEY.into(),
                    value: Some(r#"{"r":{"value":10,"highest_token":2}}"#.into())
                },
                Effect::Sync { ok: true },
                Effect::Send {
                    to: NodeId(2),
                    msg: Wrapped(ResourceMsg::ReadReply {
                        resource: "r".into(),
                        op: 2,
                        value: 10
                    })
                },
            ]
        );
        // The old holder's stale write, landing between the new holder's read and
        // write, is rejected.
        let stale = step(&mut res, &mut storage, 1, write(3, Some(1), 11));
        assert_eq!(stale[0], Effect::Observe(write_obs(1, Some(1), false, 11)));
    }

    #[test]
    fn a_failed_sync_acknowledges_no_write_and_takes_it_back() {
        for mode in [FencingMode::Unfenced, FencingMode::Fenced] {
            let mut res = Resource::new(mode);
            let mut storage = StorageMap::new();
            let effects = step_with(&mut res, &mut storage, 1, write(1, Some(5), 10), true);
            let highest = if mode == FencingMode::Fenced {
                "5"
            } else {
                "null"
            };
            assert_eq!(
                effects,
                vec![
                    Effect::Store {
                        key: STORAGE_KEY.into(),
                        value: Some(format!(
                            r#"{{"r":{{"value":10,"highest_token":{highest}}}}}"#
                        ))
                    },
                    Effect::Sync { ok: false },
                    // Taken back: the cell is as before the write.
                    Effect::Store {
                        key: STORAGE_KEY.into(),
                        value: Some("{}".into())
                    },
                ],
                "{mode:?}: no observed write and no reply"
            );
            assert_eq!((res.value("r"), res.cell("r")), (0, None));
            // A read sees the value before the failed write.
            let read = ResourceMsg::Read {
                resource: "r".into(),
                op: 9,
                token: None,
            };
            assert_eq!(
                step_with(&mut res, &mut storage, 2, read, true),
                vec![Effect::Send {
                    to: NodeId(2),
                    msg: Wrapped(ResourceMsg::ReadReply {
                        resource: "r".into(),
                        op: 9,
                        value: 0
                    })
                }]
            );
            // Control: once the disk works again the same write is acknowledged.
            let effects = step_with(&mut res, &mut storage, 1, write(2, Some(5), 10), false);
            assert_eq!(
                effects.last(),
                Some(&Effect::Send {
                    to: NodeId(1),
                    msg: Wrapped(ResourceMsg::WriteReply {
                        resource: "r".into(),
                        op: 2,
                        accepted: true
                    })
                })
            );
        }
    }

    #[test]
    fn a_failed_sync_answers_no_fenced_read_that_raised_the_token_and_takes_the_raise_back() {
        let mut res = Resource::new(FencingMode::Fenced);
        let mut storage = StorageMap::new();
        step(&mut res, &mut storage, 1, write(1, Some(1), 10));
        let read = |op| ResourceMsg::Read {
            resource: "r".into(),
            op,
            token: Some(2),
        };
        let effects = step_with(&mut res, &mut storage, 2, read(2), true);
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: STORAGE_KEY.into(),
                    value: Some(r#"{"r":{"value":10,"highest_token":2}}"#.into())
                },
                Effect::Sync { ok: false },
                Effect::Store {
                    key: STORAGE_KEY.into(),
                    value: Some(r#"{"r":{"value":10,"highest_token":1}}"#.into())
                },
            ]
        );
        assert_eq!(res.cell("r").unwrap().highest_token, Some(1));
        // The retry is not answered on the unsynced raise: it raises and syncs again.
        let effects = step_with(&mut res, &mut storage, 2, read(3), true);
        assert_eq!(effects[1], Effect::Sync { ok: false });
        assert!(effects.iter().all(|e| !matches!(e, Effect::Send { .. })));
        // A read that does not raise the token writes nothing and is answered even
        // while the disk fails.
        let low = ResourceMsg::Read {
            resource: "r".into(),
            op: 4,
            token: Some(1),
        };
        assert_eq!(
            step_with(&mut res, &mut storage, 1, low, true),
            vec![Effect::Send {
                to: NodeId(1),
                msg: Wrapped(ResourceMsg::ReadReply {
                    resource: "r".into(),
                    op: 4,
                    value: 10
                })
            }]
        );
        // The disk recovers: the raise is synced and answered.
        let effects = step_with(&mut res, &mut storage, 2, read(5), false);
        assert_eq!(effects[1], Effect::Sync { ok: true });
        assert_eq!(res.cell("r").unwrap().highest_token, Some(2));
    }

    #[test]
    fn stray_replies_are_ignored() {
        let mut res = Resource::new(FencingMode::Fenced);
        let mut storage = StorageMap::new();
        let effects = step(
            &mut res,
            &mut storage,
            1,
            ResourceMsg::WriteReply {
                resource: "r".into(),
                op: 1,
                accepted: true,
            },
        );
        assert!(effects.is_empty());
    }
}
