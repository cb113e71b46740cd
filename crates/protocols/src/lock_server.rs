//! A Redis-like lock server: `SET key value NX PX ttl`, the compare-and-delete release
//! script, plain `DEL`, and optionally a fencing token from a durable counter (`INCR`)
//! with every grant. The redis-lock, redlock and fencing protocols all run it.
//!
//! What it promises: at most one owner per key *by its own clock*.
//!
//! Key expiry as real Redis does it ([`ExpiryClock::Wall`]): `SET ... PX ttl` stores an
//! absolute Unix-millisecond expiry time, `commandTimeSnapshot() + ttl`
//! (`setGenericCommand` in `src/t_string.c`), and a key is expired when
//! `keyIsExpired` (`src/db.c`) finds `now > when`, with `now = commandTimeSnapshot()`:
//! the server's cached `mstime()`, i.e. `gettimeofday`, the *wall* clock (refreshed by
//! `updateCachedTime` in `src/server.c`; lazy expiry on access in `expireIfNeeded`,
//! active expiry in `activeExpireCycle`, `src/expire.c`, compare the same way). So a
//! forward step of the server's wall clock (an NTP step, an operator fixing the time)
//! expires a lock early, and a backward step keeps it longer: the clock-jump case of
//! Kleppmann, "How to do distributed locking" (2016), "Breaking Redlock with clock
//! jumps". Source read: redis/redis `src/db.c` (`keyIsExpired`, `now > when`,
//! strict), `src/server.c` (`mstime`, `commandTimeSnapshot`).
//!
//! [`ExpiryClock::Monotonic`] is the contrast (not what Redis does): the TTL is timed on
//! the server's monotonic clock, which no wall step moves.
//!
//! The release script is the one in the Redis `SET` documentation (and seed 002):
//! delete only if the value is still mine. A plain `DEL` deletes whoever's lock is
//! there.
//!
//! The lock table lives in memory (a Redis without fsync'd persistence: a restart
//! forgets every lock). The token counter, when tokens are issued, is durable, so a
//! restarted server never issues a token twice.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{Clock, Env, LocalTime, NodeId, Storage, StorageExt};

/// Which clock times a key's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ExpiryClock {
    /// The contrast: the server's monotonic clock (wall steps do not move expiry).
    Monotonic,
    /// Real Redis: absolute expiry times on the server's wall clock.
    Wall,
}

/// Lock-server requests and replies.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LockMsg {
    /// `SET key owner NX [PX ttl]`: set only if absent; no `ttl` means no expiry.
    Set {
        req: u64,
        key: String,
        owner: u64,
        ttl: Option<Duration>,
    },
    /// `token` is the fencing token, when the server issues them.
    SetReply {
        req: u64,
        granted: bool,
        token: Option<u64>,
    },
    /// The release script: delete `key` only if its value is still `owner`.
    DelIfOwner { key: String, owner: u64 },
    /// Plain `DEL key`.
    Del { key: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Held {
    owner: u64,
    /// By the server's expiry clock; `None` never expires.
    expires_at: Option<LocalTime>,
}

/// The lock server's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockServer {
    expiry: ExpiryClock,
    issue_tokens: bool,
    locks: BTreeMap<String, Held>,
    last_token: u64,
}

const TOKEN_KEY: &str = "lock/last_token";

impl LockServer {
    pub fn new(expiry: ExpiryClock, issue_tokens: bool) -> LockServer {
        LockServer {
            expiry,
            issue_tokens,
            locks: BTreeMap::new(),
            last_token: 0,
        }
    }

    /// Reads the token counter back (the lock table is volatile).
    pub fn on_start<E: Storage + ?Sized>(&mut self, env: &E) {
        self.last_token = env.load(TOKEN_KEY).unwrap_or(0);
    }

    /// The owner of `key` now (by the server's clock reading `now`), if any. A key is
    /// expired once `now > expires_at`, strictly, as in Redis's `keyIsExpired`.
    pub fn owner(&self, key: &str, now: LocalTime) -> Option<u64> {
        self.locks
            .get(key)
            .filter(|h| h.expires_at.is_none_or(|e| now <= e))
            .map(|h| h.owner)
    }

    fn now<E: Clock + ?Sized>(&self, env: &E) -> LocalTime {
        match self.expiry {
            ExpiryClock::Monotonic => env.monotonic(),
            ExpiryClock::Wall => env.wall(),
        }
    }

    /// Handles one request and returns the reply, if the request has one.
    pub fn handle<E: Clock + Storage + ?Sized>(
        &mut self,
        env: &mut E,
        msg: LockMsg,
    ) -> Option<LockMsg> {
        let now = self.now(env);
        match msg {
            LockMsg::Set {
                req,
                key,
                owner,
                ttl,
            } => {
                if self.owner(&key, now).is_some() {
                    return Some(LockMsg::SetReply {
                        req,
                        granted: false,
                        token: None,
                    });
                }
                // A fencing token is durable before it is handed out: a server that
                // lost power must never issue it again. A failed sync grants nothing.
                let token = if self.issue_tokens {
                    if env.store_synced(TOKEN_KEY, &(self.last_token + 1)).is_err() {
                        return Some(LockMsg::SetReply {
                            req,
                            granted: false,
                            token: None,
                        });
                    }
                    self.last_token += 1;
                    Some(self.last_token)
                } else {
                    None
                };
                let expires_at = ttl.map(|t| now + t);
                self.locks.insert(key, Held { owner, expires_at });
                Some(LockMsg::SetReply {
                    req,
                    granted: true,
                    token,
                })
            }
            LockMsg::DelIfOwner { key, owner } => {
                if self.owner(&key, now) == Some(owner) {
                    self.locks.remove(&key);
                }
                None
            }
            LockMsg::Del { key } => {
                self.locks.remove(&key);
                None
            }
            LockMsg::SetReply { .. } => None,
        }
    }

    /// [`LockServer::handle`], then sends the reply (if any) back to `from`.
    pub fn on_message<M: From<LockMsg>, T>(
        &mut self,
        env: &mut dyn Env<M, T>,
        from: NodeId,
        msg: LockMsg,
    ) {
        if let Some(reply) = self.handle(env, msg) {
            env.send(from, M::from(reply));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Cluster, Effect, SplitMix64, Step, StepHost, StorageMap};

    const SEC: i64 = 1_000_000_000;

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Wrapped(LockMsg);
    impl From<LockMsg> for Wrapped {
        fn from(m: LockMsg) -> Wrapped {
            Wrapped(m)
        }
    }

    /// Runs one message on `server` with the given clock readings (in seconds).
    fn step(
        server: &mut LockServer,
        storage: &mut StorageMap,
        mono_s: i64,
        wall_s: i64,
        msg: LockMsg,
    ) -> Vec<Effect<Wrapped, ()>> {
        let cluster = Cluster::uniform("node", 3);
        let mut rng = SplitMix64(1);
        let mut s: Step<'_, Wrapped, ()> = Step::new(
            NodeId(0),
            &cluster,
            LocalTime(mono_s * SEC),
            LocalTime(wall_s * SEC),
            storage,
            &mut rng,
        );
        server.on_message(&mut s, NodeId(1), msg);
        s.effects
    }

    fn set(req: u64, owner: u64, ttl_s: Option<u64>) -> LockMsg {
        LockMsg::Set {
            req,
            key: "k".into(),
            owner,
            ttl: ttl_s.map(Duration::from_secs),
        }
    }

    fn reply(req: u64, granted: bool, token: Option<u64>) -> Vec<Effect<Wrapped, ()>> {
        vec![Effect::Send {
            to: NodeId(1),
            msg: Wrapped(LockMsg::SetReply {
                req,
                granted,
                token,
            }),
        }]
    }

    #[test]
    fn set_nx_grants_once_until_expiry_by_the_monotonic_clock() {
        let mut s = LockServer::new(ExpiryClock::Monotonic, false);
        let mut st = StorageMap::new();
        assert_eq!(
            step(&mut s, &mut st, 10, 0, set(1, 7, Some(2))),
            reply(1, true, None)
        );
        // A wall clock jump does not matter to the monotonic clock.
        assert_eq!(
            step(&mut s, &mut st, 11, 100, set(2, 8, Some(2))),
            reply(2, false, None)
        );
        // Expired only once the clock is past the expiry time (`now > when`).
        assert_eq!(
            step(&mut s, &mut st, 12, 0, set(3, 8, Some(2))),
            reply(3, false, None)
        );
        assert_eq!(
            step(&mut s, &mut st, 13, 0, set(4, 8, Some(2))),
            reply(4, true, None)
        );
    }

    #[test]
    fn wall_clock_expiry_expires_early_on_a_forward_jump() {
        let mut s = LockServer::new(ExpiryClock::Wall, false);
        let mut st = StorageMap::new();
        step(&mut s, &mut st, 10, 10, set(1, 7, Some(10)));
        assert_eq!(
            step(&mut s, &mut st, 11, 100, set(2, 8, Some(10))),
            reply(2, true, None)
        );
    }

    #[test]
    fn wall_clock_expiry_holds_longer_after_a_backward_step() {
        let mut s = LockServer::new(ExpiryClock::Wall, false);
        let mut st = StorageMap::new();
        step(&mut s, &mut st, 10, 10, set(1, 7, Some(2)));
        // 30 s later by the monotonic clock, but the wall clock stepped back 29 s.
        assert_eq!(
            step(&mut s, &mut st, 40, 11, set(2, 8, Some(2))),
            reply(2, false, None)
        );
        assert_eq!(
            step(&mut s, &mut st, 42, 13, set(3, 8, Some(2))),
            reply(3, true, None)
        );
    }

    #[test]
    fn no_ttl_never_expires() {
        let mut s = LockServer::new(ExpiryClock::Monotonic, false);
        let mut st = StorageMap::new();
        step(&mut s, &mut st, 0, 0, set(1, 7, None));
        assert_eq!(
            step(&mut s, &mut st, 1_000_000, 0, set(2, 8, None)),
            reply(2, false, None)
        );
    }

    #[test]
    fn compare_and_delete_spares_another_owners_lock_but_del_does_not() {
        let mut s = LockServer::new(ExpiryClock::Monotonic, false);
        let mut st = StorageMap::new();
        step(&mut s, &mut st, 0, 0, set(1, 7, Some(2)));
        // Owner 7's lock expired; 8 took it.
        step(&mut s, &mut st, 3, 0, set(2, 8, Some(2)));
        let del_if = LockMsg::DelIfOwner {
            key: "k".into(),
            owner: 7,
        };
        assert!(step(&mut s, &mut st, 3, 0, del_if).is_empty());
        assert_eq!(s.owner("k", LocalTime(3 * SEC)), Some(8));
        step(&mut s, &mut st, 3, 0, LockMsg::Del { key: "k".into() });
        assert_eq!(s.owner("k", LocalTime(3 * SEC)), None);
    }

    #[test]
    fn tokens_increase_and_survive_a_restart() {
        let mut s = LockServer::new(ExpiryClock::Monotonic, true);
        let mut st = StorageMap::new();
        let effects = step(&mut s, &mut st, 0, 0, set(1, 7, Some(1)));
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: TOKEN_KEY.into(),
                    value: Some("1".into())
                },
                Effect::Sync { ok: true },
                reply(1, true, Some(1)).remove(0),
            ]
        );
        // A denied SET issues no token.
        assert_eq!(
            step(&mut s, &mut st, 0, 0, set(2, 8, Some(1))),
            reply(2, false, None)
        );
        let mut restarted = LockServer::new(ExpiryClock::Monotonic, true);
        {
            let cluster = Cluster::uniform("node", 3);
            let mut rng = SplitMix64(1);
            let env: Step<'_, Wrapped, ()> = Step::new(
                NodeId(0),
                &cluster,
                LocalTime(0),
                LocalTime(0),
                &mut st,
                &mut rng,
            );
            restarted.on_start(&env);
        }
        assert_eq!(
            step(&mut restarted, &mut st, 5, 0, set(3, 8, Some(1))),
            vec![
                Effect::Store {
                    key: TOKEN_KEY.into(),
                    value: Some("2".into())
                },
                Effect::Sync { ok: true },
                reply(3, true, Some(2)).remove(0),
            ]
        );
    }

    /// Runs one message on `server` over `host`'s storage (monotonic clock at zero).
    fn host_step(
        server: &mut LockServer,
        host: &mut StepHost,
        msg: LockMsg,
    ) -> Vec<Effect<Wrapped, ()>> {
        let mut s = host.step::<Wrapped, ()>();
        server.on_message(&mut s, NodeId(1), msg);
        s.effects
    }

    #[test]
    fn a_failed_sync_of_the_token_refuses_the_grant() {
        let cluster = Cluster::uniform("node", 3);
        let mut host = StepHost::new(NodeId(0), &cluster);
        let mut s = LockServer::new(ExpiryClock::Monotonic, true);
        host.sync_fails = true;
        assert_eq!(
            host_step(&mut s, &mut host, set(1, 7, Some(10))),
            vec![
                Effect::Store {
                    key: TOKEN_KEY.into(),
                    value: Some("1".into())
                },
                Effect::Sync { ok: false },
                reply(1, false, None).remove(0),
            ]
        );
        // Nobody holds the lock and no token was issued.
        assert_eq!(s.owner("k", LocalTime(0)), None);
        assert_eq!(s.last_token, 0);
        assert!(!host.durable.contains_key(TOKEN_KEY));
        // The disk recovers: the next SET is granted token 1, durably.
        host.sync_fails = false;
        assert_eq!(
            host_step(&mut s, &mut host, set(2, 8, Some(10))),
            vec![
                Effect::Store {
                    key: TOKEN_KEY.into(),
                    value: Some("1".into())
                },
                Effect::Sync { ok: true },
                reply(2, true, Some(1)).remove(0),
            ]
        );
        assert_eq!(s.owner("k", LocalTime(0)), Some(8));
        assert_eq!(host.durable.get(TOKEN_KEY).map(String::as_str), Some("1"));
        // A power loss keeps the token: the restarted server issues 2 next.
        host.power_loss();
        let mut restarted = LockServer::new(ExpiryClock::Monotonic, true);
        restarted.on_start(&host.step::<Wrapped, ()>());
        assert_eq!(
            host_step(&mut restarted, &mut host, set(3, 9, Some(10))).last(),
            reply(3, true, Some(2)).last()
        );
    }

    #[test]
    fn without_tokens_the_grant_needs_no_sync() {
        let cluster = Cluster::uniform("node", 3);
        let mut host = StepHost::new(NodeId(0), &cluster);
        host.sync_fails = true;
        let mut s = LockServer::new(ExpiryClock::Monotonic, false);
        assert_eq!(
            host_step(&mut s, &mut host, set(1, 7, Some(10))),
            reply(1, true, None)
        );
    }
}
