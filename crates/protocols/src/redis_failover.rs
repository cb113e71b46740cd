//! `redis-failover`: a Redis primary with asynchronous replicas and Sentinel-like
//! failover, lock clients that `SET key owner NX PX ttl` on whichever node they believe
//! is the primary, and a protected resource. Is a Redis lock safe across failover? No:
//! the lock is lost in failover, as the Redis documentation ("Distributed locks with
//! Redis", the failover paragraph) and Kleppmann ("How to do distributed locking",
//! 2016) describe.
//!
//! # What was read, and where (redis/redis tag 7.0.15)
//!
//! * **Replication is asynchronous.** `call()` executes a command, and only afterwards
//!   `propagatePendingCommands` / `propagateNow` (`src/server.c`) hand it to
//!   `replicationFeedSlaves` (`src/replication.c`), which appends it to the backlog and
//!   to each replica's output buffer; the client's reply is already in its own buffer.
//!   Both buffers are written by the event loop later (`beforeSleep` ->
//!   `handleClientsWithPendingWritesUsingThreads`): nothing waits for a replica. A `SET
//!   ... PX ttl` is propagated as `SET ... PXAT <absolute ms>` (`src/t_string.c`), so a
//!   replica holds the key with the primary's absolute expiry time and, once promoted,
//!   expires it by its own wall clock.
//! * **Acks and `WAIT`.** A replica reports its processed offset with `REPLCONF ACK`
//!   (`replicationSendAck`, from `replicationCron` and on `REPLCONF GETACK`).
//!   `waitCommand` blocks the client until `replicationCountAcksByOffset(c->woff)`
//!   counts `numreplicas` replicas whose acked offset reaches the client's last write
//!   (or the timeout ends) and answers the count; `beforeSleep` sends `GETACK` to the
//!   replicas when a client blocked (`sendGetackToReplicas`). `WAIT` counts acks; it
//!   does not choose which replica a failover promotes.
//! * **Sentinel** (`src/sentinel.c`): `sentinelCheckSubjectivelyDown` marks the primary
//!   SDOWN when the oldest unanswered PING is older than `down-after-milliseconds`;
//!   `sentinelCheckObjectivelyDown` marks it ODOWN when `quorum` sentinels (itself and
//!   those whose `is-master-down-by-addr` reply said so, `sentinelReceiveIsMasterDownReply`)
//!   see it down; `sentinelStartFailoverIfNeeded` starts a failover (no failover
//!   attempted within `2 x failover-timeout`), `sentinelStartFailover` increments the
//!   current epoch; `sentinelAskMasterStateToOtherSentinels` asks for votes with its own
//!   id; `sentinelVoteLeader` grants one vote per epoch (the first asker of an epoch
//!   above the voter's) and delays the voter's own failover; `sentinelGetLeader` wants
//!   a majority of ALL known sentinels and at least `quorum`; `sentinelSelectSlave` /
//!   `compareSlavesForPromotion` take a replica that answers PING, with fresh INFO,
//!   highest replication offset first; `sentinelFailoverSendSlaveOfNoOne` sends
//!   `REPLICAOF NO ONE` (`sentinelSendSlaveOf`); the promotion is seen in INFO, the
//!   other replicas are reconfigured; the new configuration spreads in hello messages
//!   with its config epoch, the higher winning. A demoted primary that comes back is
//!   told `REPLICAOF <new primary>` and resyncs, losing what it never replicated (its
//!   replication id is not the new primary's: PSYNC2's `replid2` lets only a prefix
//!   continue, `shiftReplicationId`).
//!
//! # The model
//!
//! Roles: `redis` (the first node is the initial primary, the others its replicas),
//! `sentinel` (with `quorum`), `client` (the lock workload of [`crate::workload`]),
//! `storage` (the [`Resource`]) and `tokens` (a durable token counter standing for a
//! consensus service such as etcd or ZooKeeper; idle unless the variant is
//! `consensus-tokens`). Replication delay is the network's: a write's replication
//! message leaves after the client's reply in the same handler, so a crash (or a
//! crash point) between the two, a partition or a lost message leaves the replica
//! behind. A replica acks every `repl_period`; a primary resends what an ack shows
//! missing (TCP's retransmission) or sends a full sync (a different history). Data are
//! in memory only (no persistence): a restarted node comes back empty, in the role its
//! rewritten configuration names. Clients ask the sentinels for the primary after a
//! timeout or a `READONLY` reply and follow the highest config epoch they hear.
//!
//! Variants:
//! * `consensus-tokens` (correct): after the `SET` is granted, the client takes a
//!   fencing token from the `tokens` node (a linearizable, durable counter) and the
//!   storage fences on it. Two clients may still both believe they hold the lock after
//!   a failover, and both act (`mutual-exclusion` of actions is not promised), but the
//!   resource rejects the older token: `fencing-safety` and `no-lost-update` hold.
//! * `no-fencing`: the lock alone, an unfenced resource. The primary acks the `SET` and
//!   dies (or is cut off) before the replica has it; the replica is promoted; a second
//!   client acquires the same lock: two holders act. Breaks `mutual-exclusion`.
//! * `wait`: as `no-fencing`, but the client issues `WAIT 1` after its `SET` and acts
//!   only if a replica acked. It narrows the window (a cut-off primary's `WAIT` times
//!   out), it does not close it: the replica that acked may not be the one promoted,
//!   a failover can promote a replica whose ack is stale. Breaks `mutual-exclusion`.
//! * `primary-tokens`: fencing tokens from the primary's own `INCR`, replicated
//!   asynchronously like the lock: after a promotion the new primary hands out tokens
//!   the old one already handed out. Breaks `fencing-safety`.

use crate::resource::{FencingMode, Resource, ResourceMsg};
use crate::workload::{lock_client_params, LockApi, Workload, WorkloadConfig, WorkloadTimer};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, LocalTime, NodeId, ParamError, Protocol,
    ProtocolInfo, RoleInfo, RoleKind, Roles, StorageExt, VariantInfo,
};

/// A stored value: a lock (its owner and absolute expiry by the wall clock of the
/// primary that set it, in nanoseconds) or an integer (the token counter).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Value {
    Lock { owner: u64, expires_at: i64 },
    Int(u64),
}

/// A write as the replication stream carries it (`SET ... PXAT`, `SET n`, `DEL`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Cmd {
    Set { key: String, value: Value },
    Del { key: String },
}

/// The sentinels' configuration of the primary: `primary` since config epoch `epoch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Config {
    pub epoch: u64,
    pub primary: NodeId,
}

/// Messages of every role.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    Resource(ResourceMsg),
    /// `SET key owner NX PX ttl` (with tokens: and `INCR` the token counter).
    Set {
        req: u64,
        key: String,
        owner: u64,
        ttl: Duration,
    },
    /// `not_primary`: a replica's `READONLY` error.
    SetReply {
        req: u64,
        granted: bool,
        token: Option<u64>,
        not_primary: bool,
    },
    /// The compare-and-delete release script.
    DelIfOwner {
        key: String,
        owner: u64,
    },
    /// `WAIT replicas timeout`.
    Wait {
        req: u64,
        replicas: u32,
        timeout: Duration,
    },
    WaitReply {
        req: u64,
        acked: u32,
    },
    /// The replication stream: the write at `offset` of history `replid`.
    Repl {
        replid: u64,
        offset: u64,
        cmd: Cmd,
    },
    /// `+CONTINUE`: a partial resync onto the primary's new history.
    Continue {
        replid: u64,
    },
    /// `+FULLRESYNC` and the snapshot.
    FullSync {
        replid: u64,
        offset: u64,
        data: Vec<(String, Value)>,
    },
    /// `REPLCONF ACK` (and `PSYNC`): a replica's history and processed offset.
    Ack {
        replid: u64,
        offset: u64,
    },
    /// `REPLCONF GETACK`.
    GetAck,
    Ping,
    /// PING's reply with what INFO reports: the role (`None`: primary), the offset,
    /// and the newest hello the node relays (Sentinel's hello channel).
    Pong {
        role: Option<NodeId>,
        offset: u64,
        hello: Option<Config>,
    },
    /// `REPLICAOF host port` (`None`: `REPLICAOF NO ONE`).
    ReplicaOf {
        primary: Option<NodeId>,
    },
    /// A sentinel's hello: its configuration.
    Hello(Config),
    /// `SENTINEL is-master-down-by-addr`: `candidate` asks for a vote in `epoch`.
    IsDown {
        primary: NodeId,
        epoch: u64,
        candidate: Option<NodeId>,
    },
    IsDownReply {
        down: bool,
        leader: Option<(NodeId, u64)>,
    },
    /// `SENTINEL get-master-addr-by-name`.
    GetPrimary,
    PrimaryIs(Config),
    /// A fencing token from the consensus-backed counter.
    Token {
        req: u64,
    },
    TokenReply {
        req: u64,
        token: u64,
    },
}

impl From<ResourceMsg> for Msg {
    fn from(m: ResourceMsg) -> Msg {
        Msg::Resource(m)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    Workload(WorkloadTimer),
    AcquireTimeout,
    /// A sentinel's periodic work (`sentinelTimer`).
    SentinelTick,
    /// A replica's periodic ack (`replicationCron`).
    ReplCron,
    /// The `WAIT` of this client timed out.
    WaitTimeout(NodeId),
}

impl From<WorkloadTimer> for Timer {
    fn from(t: WorkloadTimer) -> Timer {
        Timer::Workload(t)
    }
}

/// The roles.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum FailoverRole {
    Redis,
    Sentinel,
    Client,
    Storage,
    Tokens,
}

/// The variants.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum RedisFailoverVariant {
    ConsensusTokens,
    NoFencing,
    Wait,
    PrimaryTokens,
}

/// Configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FailoverConfig {
    pub variant: RedisFailoverVariant,
    pub ttl: Duration,
    pub acquire_timeout: Duration,
    pub down_after: Duration,
    pub failover_timeout: Duration,
    pub quorum: usize,
    pub wait_timeout: Duration,
    pub repl_period: Duration,
    pub workload: WorkloadConfig,
    pub roles: Roles<FailoverRole>,
}

impl FailoverConfig {
    /// Sentinel's PING period: `min(down-after, 1s)` (`sentinelSendPeriodicCommands`).
    fn ping_period(&self) -> Duration {
        self.down_after.min(Duration::from_secs(1))
    }
    /// The sentinel timer's period: a quarter of the PING period.
    fn tick(&self) -> Duration {
        (self.ping_period() / 4).max(Duration::from_millis(1))
    }
}

const ROLE_KEY: &str = "redis/role";
const TOKEN_KEY: &str = "fence";
const SENTINEL_KEY: &str = "sentinel/state";
const TOKENS_KEY: &str = "tokens/last";

fn expired(v: &Value, wall: LocalTime) -> bool {
    matches!(v, Value::Lock { expires_at, .. } if wall.as_nanos() > *expires_at)
}

// ---------------------------------------------------------------------------------
// Redis nodes

/// A Redis node, primary or replica.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RedisNode {
    /// `None`: primary; `Some(p)`: replica of `p`.
    role: Option<NodeId>,
    data: BTreeMap<String, Value>,
    replid: u64,
    /// The previous history and the offset up to which it is shared (PSYNC2).
    replid2: u64,
    upto2: u64,
    offset: u64,
    /// The backlog: the writes after `log_base`, up to `offset`.
    log_base: u64,
    log: Vec<Cmd>,
    /// Replicas that synced with this primary, and the offset each acked.
    replicas: BTreeMap<NodeId, u64>,
    /// Each client's last write offset (`c->woff`).
    woff: BTreeMap<NodeId, u64>,
    /// Clients blocked in `WAIT`: request, offset, replicas wanted.
    waiting: BTreeMap<NodeId, (u64, u64, u32)>,
    hello: Option<Config>,
    issue_tokens: bool,
    repl_period: Duration,
}

impl RedisNode {
    fn new(config: &FailoverConfig) -> RedisNode {
        RedisNode {
            role: None,
            data: BTreeMap::new(),
            replid: 0,
            replid2: 0,
            upto2: 0,
            offset: 0,
            log_base: 0,
            log: Vec::new(),
            replicas: BTreeMap::new(),
            woff: BTreeMap::new(),
            waiting: BTreeMap::new(),
            hello: None,
            issue_tokens: config.variant == RedisFailoverVariant::PrimaryTokens,
            repl_period: config.repl_period,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let first = env
            .cluster()
            .with_role("redis")
            .next()
            .expect("configure checked");
        let me = env.me();
        // The role the (rewritten) configuration names; empty data, a new history.
        self.role = env
            .load::<Option<NodeId>>(ROLE_KEY)
            .unwrap_or((me != first).then_some(first));
        self.replid = env.next_u64();
        env.set_timer(Timer::ReplCron, self.repl_period);
        if let Some(p) = self.role {
            env.send(
                p,
                Msg::Ack {
                    replid: self.replid,
                    offset: self.offset,
                },
            );
        }
    }

    /// Applies a write and appends it to the backlog; returns its offset.
    fn apply(&mut self, cmd: Cmd) {
        match &cmd {
            Cmd::Set { key, value } => {
                self.data.insert(key.clone(), value.clone());
            }
            Cmd::Del { key } => {
                self.data.remove(key);
            }
        }
        self.offset += 1;
        self.log.push(cmd);
    }

    /// Sends the writes after `from` to replica `to`.
    fn feed(&self, env: &mut dyn Env<Msg, Timer>, to: NodeId, from: u64) {
        for offset in from + 1..=self.offset {
            let cmd = self.log[(offset - self.log_base - 1) as usize].clone();
            env.send(
                to,
                Msg::Repl {
                    replid: self.replid,
                    offset,
                    cmd,
                },
            );
        }
    }

    /// A primary's writes of this handler: reply first, then the replication stream
    /// (`replicationFeedSlaves`), which the replicas get a network delay later.
    fn propagate(&self, env: &mut dyn Env<Msg, Timer>, before: u64) {
        let replicas: Vec<NodeId> = self.replicas.keys().copied().collect();
        for r in replicas {
            self.feed(env, r, before);
        }
    }

    fn live(&self, key: &str, wall: LocalTime) -> Option<&Value> {
        self.data.get(key).filter(|v| !expired(v, wall))
    }

    fn acked(&self, offset: u64) -> u32 {
        self.replicas.values().filter(|a| **a >= offset).count() as u32
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        let wall = env.wall();
        match msg {
            Msg::Set {
                req,
                key,
                owner,
                ttl,
            } => {
                if self.role.is_some() {
                    env.send(
                        from,
                        Msg::SetReply {
                            req,
                            granted: false,
                            token: None,
                            not_primary: true,
                        },
                    );
                    return;
                }
                if self.live(&key, wall).is_some() {
                    env.send(
                        from,
                        Msg::SetReply {
                            req,
                            granted: false,
                            token: None,
                            not_primary: false,
                        },
                    );
                    return;
                }
                let before = self.offset;
                let token = self.issue_tokens.then(|| {
                    let next = match self.data.get(TOKEN_KEY) {
                        Some(Value::Int(n)) => n + 1,
                        _ => 1,
                    };
                    self.apply(Cmd::Set {
                        key: TOKEN_KEY.to_string(),
                        value: Value::Int(next),
                    });
                    next
                });
                let expires_at = (wall + ttl).as_nanos();
                self.apply(Cmd::Set {
                    key,
                    value: Value::Lock { owner, expires_at },
                });
                self.woff.insert(from, self.offset);
                env.send(
                    from,
                    Msg::SetReply {
                        req,
                        granted: true,
                        token,
                        not_primary: false,
                    },
                );
                self.propagate(env, before);
            }
            Msg::DelIfOwner { key, owner } => {
                let mine = matches!(self.live(&key, wall), Some(Value::Lock { owner: o, .. }) if *o == owner);
                if self.role.is_none() && mine {
                    let before = self.offset;
                    self.apply(Cmd::Del { key });
                    self.woff.insert(from, self.offset);
                    self.propagate(env, before);
                }
            }
            Msg::Wait {
                req,
                replicas,
                timeout,
            } => {
                if self.role.is_some() {
                    env.send(from, Msg::WaitReply { req, acked: 0 });
                    return;
                }
                let woff = self.woff.get(&from).copied().unwrap_or(0);
                let acked = self.acked(woff);
                if acked >= replicas {
                    env.send(from, Msg::WaitReply { req, acked });
                    return;
                }
                self.waiting.insert(from, (req, woff, replicas));
                env.set_timer(Timer::WaitTimeout(from), timeout);
                let replicas: Vec<NodeId> = self.replicas.keys().copied().collect();
                for r in replicas {
                    env.send(r, Msg::GetAck);
                }
            }
            Msg::Ack { replid, offset } => {
                if self.role.is_some() {
                    return;
                }
                let partial = offset >= self.log_base
                    && ((replid == self.replid && offset <= self.offset)
                        || (replid == self.replid2 && offset <= self.upto2));
                if partial {
                    if replid != self.replid {
                        env.send(
                            from,
                            Msg::Continue {
                                replid: self.replid,
                            },
                        );
                    }
                    self.replicas.insert(from, offset);
                    self.feed(env, from, offset);
                    self.unblock_waiters(env);
                } else {
                    self.replicas.insert(from, 0);
                    env.send(
                        from,
                        Msg::FullSync {
                            replid: self.replid,
                            offset: self.offset,
                            data: self
                                .data
                                .iter()
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        },
                    );
                }
            }
            Msg::Repl {
                replid,
                offset,
                cmd,
            } if self.role == Some(from) && replid == self.replid && offset == self.offset + 1 => {
                self.apply(cmd);
            }
            Msg::Continue { replid } if self.role == Some(from) => {
                self.replid2 = self.replid;
                self.upto2 = self.offset;
                self.replid = replid;
            }
            Msg::FullSync {
                replid,
                offset,
                data,
            } if self.role == Some(from) => {
                self.data = data.into_iter().collect();
                self.replid = replid;
                self.replid2 = 0;
                self.upto2 = 0;
                self.offset = offset;
                self.log_base = offset;
                self.log.clear();
                env.send(from, Msg::Ack { replid, offset });
            }
            Msg::GetAck if self.role == Some(from) => {
                env.send(
                    from,
                    Msg::Ack {
                        replid: self.replid,
                        offset: self.offset,
                    },
                );
            }
            Msg::Ping => env.send(
                from,
                Msg::Pong {
                    role: self.role,
                    offset: self.offset,
                    hello: self.hello,
                },
            ),
            Msg::Hello(c) if self.hello.is_none_or(|h| c.epoch > h.epoch) => {
                self.hello = Some(c);
            }
            Msg::ReplicaOf { primary } => self.replica_of(env, primary),
            _ => {}
        }
    }

    fn unblock_waiters(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let ready: Vec<(NodeId, u64, u32)> = self
            .waiting
            .iter()
            .filter(|(_, (_, off, n))| self.acked(*off) >= *n)
            .map(|(c, (req, off, _))| (*c, *req, self.acked(*off)))
            .collect();
        for (client, req, acked) in ready {
            self.waiting.remove(&client);
            env.cancel_timer(&Timer::WaitTimeout(client));
            env.send(client, Msg::WaitReply { req, acked });
        }
    }

    /// `REPLICAOF`: the role is rewritten to the configuration file (`CONFIG REWRITE`).
    fn replica_of(&mut self, env: &mut dyn Env<Msg, Timer>, primary: Option<NodeId>) {
        let primary = primary.filter(|p| *p != env.me());
        if primary == self.role {
            return;
        }
        let _ = env.store_synced(ROLE_KEY, &primary);
        // Blocked clients are released (`disconnectAllBlockedClients`).
        for (client, (req, off, _)) in std::mem::take(&mut self.waiting) {
            env.cancel_timer(&Timer::WaitTimeout(client));
            let acked = if primary.is_none() {
                self.acked(off)
            } else {
                0
            };
            env.send(client, Msg::WaitReply { req, acked });
        }
        self.role = primary;
        match primary {
            None => {
                // `shiftReplicationId`: a new history that continues the old one.
                self.replid2 = self.replid;
                self.upto2 = self.offset;
                self.replid = env.next_u64();
                self.replicas.clear();
                self.woff.clear();
            }
            Some(p) => {
                self.replicas.clear();
                env.send(
                    p,
                    Msg::Ack {
                        replid: self.replid,
                        offset: self.offset,
                    },
                );
            }
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match timer {
            Timer::ReplCron => {
                if let Some(p) = self.role {
                    env.send(
                        p,
                        Msg::Ack {
                            replid: self.replid,
                            offset: self.offset,
                        },
                    );
                }
                env.set_timer(Timer::ReplCron, self.repl_period);
            }
            Timer::WaitTimeout(client) => {
                if let Some((req, off, _)) = self.waiting.remove(&client) {
                    let acked = self.acked(off);
                    env.send(client, Msg::WaitReply { req, acked });
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------
// Sentinels

/// What a sentinel knows of one Redis node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Link {
    /// The oldest unanswered PING (`act_ping_time`).
    act_ping: Option<LocalTime>,
    last_ping: Option<LocalTime>,
    last_avail: Option<LocalTime>,
    /// The last reported role and offset, and when.
    report: Option<(Option<NodeId>, u64, LocalTime)>,
    wrong_since: Option<LocalTime>,
    fix_sent: Option<LocalTime>,
}

/// What a sentinel knows of another sentinel's view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Peer {
    master_down: bool,
    leader: Option<(NodeId, u64)>,
    last_reply: Option<LocalTime>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FailoverState {
    WaitStart,
    WaitPromotion { promoted: NodeId, since: LocalTime },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Failover {
    epoch: u64,
    started: LocalTime,
    state: FailoverState,
}

/// A sentinel's durable state (`sentinelFlushConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct SentinelState {
    current_epoch: u64,
    config: Config,
    vote: Option<(NodeId, u64)>,
}

/// A sentinel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sentinel {
    state: SentinelState,
    links: BTreeMap<NodeId, Link>,
    peers: BTreeMap<NodeId, Peer>,
    sdown: bool,
    failover: Option<Failover>,
    /// No failover of ours before this (`failover_start_time` + 2 x timeout).
    failover_start: Option<LocalTime>,
    config: FailoverConfig,
}

impl Sentinel {
    fn new(config: &FailoverConfig) -> Sentinel {
        Sentinel {
            state: SentinelState {
                current_epoch: 0,
                config: Config {
                    epoch: 0,
                    primary: NodeId(0),
                },
                vote: None,
            },
            links: BTreeMap::new(),
            peers: BTreeMap::new(),
            sdown: false,
            failover: None,
            failover_start: None,
            config: config.clone(),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let first = env
            .cluster()
            .with_role("redis")
            .next()
            .expect("configure checked");
        self.state = env.load(SENTINEL_KEY).unwrap_or(SentinelState {
            current_epoch: 0,
            config: Config {
                epoch: 0,
                primary: first,
            },
            vote: None,
        });
        let me = env.me();
        let redis: Vec<NodeId> = env.cluster().with_role("redis").collect();
        let peers: Vec<NodeId> = env
            .cluster()
            .with_role("sentinel")
            .filter(|s| *s != me)
            .collect();
        self.links = redis.into_iter().map(|n| (n, Link::default())).collect();
        self.peers = peers.into_iter().map(|n| (n, Peer::default())).collect();
        self.schedule(env);
    }

    /// The next tick, at a random point of `[tick/2, tick]`: Sentinel draws its timer's
    /// frequency anew each time (`server.hz = CONFIG_DEFAULT_HZ + rand() %
    /// CONFIG_DEFAULT_HZ` in `sentinelTimer`) so that sentinels do not act in lockstep
    /// and split their votes.
    fn schedule(&self, env: &mut dyn Env<Msg, Timer>) {
        let tick = self.config.tick();
        let next = env.duration_between(tick / 2, tick);
        env.set_timer(Timer::SentinelTick, next);
    }

    fn flush(&self, env: &mut dyn Env<Msg, Timer>) {
        // A failed fsync is not retried here: sentinel's own durability is not what
        // keeps the resource safe in any variant.
        let _ = env.store_synced(SENTINEL_KEY, &self.state);
    }

    /// `sentinelVoteLeader`.
    fn vote_leader(
        &mut self,
        env: &mut dyn Env<Msg, Timer>,
        epoch: u64,
        candidate: NodeId,
    ) -> Option<(NodeId, u64)> {
        let mut changed = false;
        if epoch > self.state.current_epoch {
            self.state.current_epoch = epoch;
            changed = true;
        }
        if self.state.vote.map_or(0, |v| v.1) < epoch && self.state.current_epoch <= epoch {
            self.state.vote = Some((candidate, self.state.current_epoch));
            changed = true;
            if candidate != env.me() {
                let jitter = env.duration_between(Duration::ZERO, self.config.ping_period());
                self.failover_start = Some(env.monotonic() + jitter);
            }
        }
        if changed {
            self.flush(env);
        }
        self.state.vote
    }

    /// `sentinelGetLeader`.
    fn leader(&mut self, env: &mut dyn Env<Msg, Timer>, epoch: u64) -> Option<NodeId> {
        let mut counts: BTreeMap<NodeId, usize> = BTreeMap::new();
        for p in self.peers.values() {
            if let Some((l, e)) = p.leader {
                if e == self.state.current_epoch {
                    *counts.entry(l).or_default() += 1;
                }
            }
        }
        let best = |counts: &BTreeMap<NodeId, usize>| {
            counts
                .iter()
                .fold(None, |b: Option<(NodeId, usize)>, (n, c)| match b {
                    Some((_, bc)) if bc >= *c => b,
                    _ => Some((*n, *c)),
                })
        };
        let winner = best(&counts).map(|b| b.0);
        let me = env.me();
        let myvote = self.vote_leader(env, epoch, winner.unwrap_or(me));
        if let Some((v, e)) = myvote {
            if e == epoch {
                *counts.entry(v).or_default() += 1;
            }
        }
        let (winner, votes) = best(&counts)?;
        let voters = self.peers.len() + 1;
        (votes > voters / 2 && votes >= self.config.quorum).then_some(winner)
    }

    fn fresh(&self, t: LocalTime, now: LocalTime) -> bool {
        t.until(now) <= self.config.ping_period() * 5
    }

    /// `sentinelSelectSlave`: a replica that answers, with a fresh report, highest
    /// offset first, then the lowest id.
    fn select_replica(&self, now: LocalTime) -> Option<NodeId> {
        let primary = self.state.config.primary;
        self.links
            .iter()
            .filter(|(n, l)| {
                **n != primary
                    && l.act_ping
                        .is_none_or(|t| t.until(now) <= self.config.down_after)
                    && l.last_avail.is_some_and(|t| self.fresh(t, now))
                    && l.report
                        .is_some_and(|(role, _, at)| role.is_some() && self.fresh(at, now))
            })
            .map(|(n, l)| (*n, l.report.map_or(0, |r| r.1)))
            .fold(None, |b: Option<(NodeId, u64)>, (n, off)| match b {
                Some((_, bo)) if bo >= off => b,
                _ => Some((n, off)),
            })
            .map(|b| b.0)
    }

    fn adopt(&mut self, env: &mut dyn Env<Msg, Timer>, c: Config) {
        if c.epoch <= self.state.config.epoch {
            return;
        }
        self.state.config = c;
        self.state.current_epoch = self.state.current_epoch.max(c.epoch);
        self.failover = None;
        self.sdown = false;
        self.flush(env);
    }

    fn ask(&self, env: &mut dyn Env<Msg, Timer>) {
        let candidate = self.failover.map(|_| env.me());
        for p in self.peers.keys() {
            env.send(
                *p,
                Msg::IsDown {
                    primary: self.state.config.primary,
                    epoch: self.state.current_epoch,
                    candidate,
                },
            );
        }
    }

    fn tick(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let now = env.monotonic();
        let ping = self.config.ping_period();
        for (n, l) in self.links.iter_mut() {
            if l.last_ping.is_none_or(|t| t.until(now) >= ping) {
                env.send(*n, Msg::Ping);
                l.last_ping = Some(now);
                l.act_ping.get_or_insert(now);
            }
        }
        let primary = self.state.config.primary;
        self.sdown = self.links[&primary]
            .act_ping
            .is_some_and(|t| t.until(now) > self.config.down_after);
        let stale = self.config.tick() * 5;
        for p in self.peers.values_mut() {
            if p.last_reply.is_none_or(|t| t.until(now) > stale) {
                p.master_down = false;
                p.leader = None;
            }
        }
        if self.sdown {
            self.ask(env);
        }
        let odown = self.sdown
            && 1 + self.peers.values().filter(|p| p.master_down).count() >= self.config.quorum;
        if odown
            && self.failover.is_none()
            && self
                .failover_start
                .is_none_or(|t| now >= t + self.config.failover_timeout * 2)
        {
            self.state.current_epoch += 1;
            self.flush(env);
            self.failover = Some(Failover {
                epoch: self.state.current_epoch,
                started: now,
                state: FailoverState::WaitStart,
            });
            let jitter = env.duration_between(Duration::ZERO, ping);
            self.failover_start = Some(now + jitter);
            self.ask(env);
        }
        if let Some(f) = self.failover {
            match f.state {
                FailoverState::WaitStart => {
                    if self.leader(env, f.epoch) == Some(env.me()) {
                        match self.select_replica(now) {
                            Some(promoted) => {
                                env.send(promoted, Msg::ReplicaOf { primary: None });
                                self.failover = Some(Failover {
                                    state: FailoverState::WaitPromotion {
                                        promoted,
                                        since: now,
                                    },
                                    ..f
                                });
                            }
                            None => self.failover = None,
                        }
                    } else if f.started.until(now)
                        > self.config.failover_timeout.min(Duration::from_secs(10))
                    {
                        self.failover = None;
                    }
                }
                FailoverState::WaitPromotion { since, .. } => {
                    if since.until(now) > self.config.failover_timeout {
                        self.failover = None;
                    }
                }
            }
        }
        // Hello: to the other sentinels and through every Redis node.
        let hello = Msg::Hello(self.state.config);
        for p in self.peers.keys() {
            env.send(*p, hello.clone());
        }
        for n in self.links.keys() {
            env.send(*n, hello.clone());
        }
        self.fix_config(env, now);
        self.schedule(env);
    }

    /// Nodes that report a role other than the configuration's are reconfigured, once
    /// the primary looks sane and the report has stood for a while
    /// (`sentinelRefreshInstanceInfo`, "+convert-to-slave", "+fix-slave-config").
    fn fix_config(&mut self, env: &mut dyn Env<Msg, Timer>, now: LocalTime) {
        let primary = self.state.config.primary;
        let wait = self.config.ping_period() * 4;
        let sane = !self.sdown
            && self.failover.is_none()
            && self.links[&primary]
                .report
                .is_some_and(|(role, _, at)| role.is_none() && at.until(now) <= wait);
        for (n, l) in self.links.iter_mut() {
            if *n == primary {
                continue;
            }
            let wrong = l
                .report
                .is_some_and(|(role, _, at)| role != Some(primary) && at.until(now) <= wait);
            if !wrong || !sane {
                l.wrong_since = None;
                continue;
            }
            let since = *l.wrong_since.get_or_insert(now);
            if since.until(now) >= wait && l.fix_sent.is_none_or(|t| t.until(now) >= wait) {
                env.send(
                    *n,
                    Msg::ReplicaOf {
                        primary: Some(primary),
                    },
                );
                l.fix_sent = Some(now);
            }
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        let now = env.monotonic();
        match msg {
            Msg::Pong {
                role,
                offset,
                hello,
            } => {
                if let Some(l) = self.links.get_mut(&from) {
                    l.act_ping = None;
                    l.last_avail = Some(now);
                    l.report = Some((role, offset, now));
                }
                if let Some(c) = hello {
                    self.adopt(env, c);
                }
                if let Some(f) = self.failover {
                    if let FailoverState::WaitPromotion { promoted, .. } = f.state {
                        if promoted == from && role.is_none() {
                            // Promoted: the new configuration, the other nodes told.
                            self.failover = None;
                            self.state.config = Config {
                                epoch: f.epoch,
                                primary: promoted,
                            };
                            self.flush(env);
                            for n in self.links.keys() {
                                if *n != promoted {
                                    env.send(
                                        *n,
                                        Msg::ReplicaOf {
                                            primary: Some(promoted),
                                        },
                                    );
                                }
                            }
                            for p in self.peers.keys() {
                                env.send(*p, Msg::Hello(self.state.config));
                            }
                        }
                    }
                }
            }
            Msg::Hello(c) => {
                self.state.current_epoch = self.state.current_epoch.max(c.epoch);
                self.adopt(env, c);
            }
            Msg::IsDown {
                primary,
                epoch,
                candidate,
            } => {
                let mine = primary == self.state.config.primary;
                let leader = match candidate {
                    Some(c) if mine => self.vote_leader(env, epoch, c),
                    _ => None,
                };
                env.send(
                    from,
                    Msg::IsDownReply {
                        down: mine && self.sdown,
                        leader,
                    },
                );
            }
            Msg::IsDownReply { down, leader } => {
                if let Some(p) = self.peers.get_mut(&from) {
                    p.master_down = down;
                    p.last_reply = Some(now);
                    if leader.is_some() {
                        p.leader = leader;
                    }
                }
            }
            Msg::GetPrimary => env.send(from, Msg::PrimaryIs(self.state.config)),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------
// Clients

/// How a client gets its fencing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tokens {
    /// No token (an unfenced resource).
    None,
    /// The primary's `INCR`, with the grant.
    Primary,
    /// The consensus-backed counter, after the grant.
    Service(NodeId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// Asking the sentinels where the primary is (a client that has not heard yet).
    Resolve,
    Set,
    /// Granted; waiting for `WAIT`'s reply.
    Wait(Option<u64>),
    /// Granted; waiting for the token.
    Token,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Attempt {
    req: u64,
    owner: u64,
    sent_at: LocalTime,
    stage: Stage,
}

/// The lock half of a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FailoverLock {
    sentinels: Vec<NodeId>,
    /// Where the client believes the primary is, and the config epoch it heard it
    /// with; `None` until a sentinel has answered (a client asks on start, as
    /// Sentinel-aware clients resolve the primary before they connect).
    primary: Option<Config>,
    key: String,
    ttl: Duration,
    acquire_timeout: Duration,
    /// `WAIT 1 timeout` after the grant.
    wait: Option<Duration>,
    tokens: Tokens,
    req: u64,
    attempt: Option<Attempt>,
    /// Acquires given up on: a late grant is given back.
    abandoned: Vec<(u64, u64)>,
    held_owner: Option<u64>,
}

impl FailoverLock {
    fn resolve(&self, env: &mut dyn Env<Msg, Timer>) {
        for s in &self.sentinels {
            env.send(*s, Msg::GetPrimary);
        }
    }

    fn send_set(&self, env: &mut dyn Env<Msg, Timer>, to: NodeId, req: u64, owner: u64) {
        env.send(
            to,
            Msg::Set {
                req,
                key: self.key.clone(),
                owner,
                ttl: self.ttl,
            },
        );
    }

    fn abandon(&mut self, req: u64, owner: u64) {
        self.abandoned.push((req, owner));
        if self.abandoned.len() > 8 {
            self.abandoned.remove(0);
        }
    }
}

impl LockApi<Msg, Timer> for FailoverLock {
    fn start_acquire(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.req += 1;
        let owner = env.next_u64();
        let stage = match self.primary {
            Some(c) => {
                self.send_set(env, c.primary, self.req, owner);
                Stage::Set
            }
            None => {
                self.resolve(env);
                Stage::Resolve
            }
        };
        self.attempt = Some(Attempt {
            req: self.req,
            owner,
            sent_at: env.monotonic(),
            stage,
        });
        env.set_timer(Timer::AcquireTimeout, self.acquire_timeout);
    }

    fn release(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if let (Some(owner), Some(c)) = (self.held_owner.take(), self.primary) {
            env.send(
                c.primary,
                Msg::DelIfOwner {
                    key: self.key.clone(),
                    owner,
                },
            );
        }
    }
}

/// A client: the lock half and the workload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    pub lock: FailoverLock,
    pub workload: Workload,
}

impl Client {
    fn proceed(&mut self, env: &mut dyn Env<Msg, Timer>, a: Attempt, token: Option<u64>) {
        self.lock.attempt = None;
        env.cancel_timer(&Timer::AcquireTimeout);
        let validity = self
            .lock
            .ttl
            .saturating_sub(a.sent_at.until(env.monotonic()));
        if validity.is_zero() {
            self.lock.release(env);
            self.workload.on_acquire_failed(env);
        } else {
            self.workload.on_acquired(env, token, Some(validity));
        }
    }

    fn fail(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.lock.attempt = None;
        env.cancel_timer(&Timer::AcquireTimeout);
        self.lock.release(env);
        self.workload.on_acquire_failed(env);
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        let attempt = self.lock.attempt;
        match msg {
            Msg::SetReply {
                req,
                granted,
                token,
                not_primary,
            } => {
                let Some(a) = attempt.filter(|a| a.req == req && a.stage == Stage::Set) else {
                    if let Some(i) = self.lock.abandoned.iter().position(|x| x.0 == req) {
                        let (_, owner) = self.lock.abandoned.remove(i);
                        if granted {
                            let key = self.lock.key.clone();
                            env.send(from, Msg::DelIfOwner { key, owner });
                        }
                    }
                    return;
                };
                if !granted {
                    if not_primary {
                        self.lock.resolve(env);
                    }
                    self.fail(env);
                    return;
                }
                self.lock.held_owner = Some(a.owner);
                if let Some(timeout) = self.lock.wait {
                    self.lock.attempt = Some(Attempt {
                        stage: Stage::Wait(token),
                        ..a
                    });
                    env.send(
                        from,
                        Msg::Wait {
                            req,
                            replicas: 1,
                            timeout,
                        },
                    );
                    env.set_timer(Timer::AcquireTimeout, timeout + self.lock.acquire_timeout);
                } else if let Tokens::Service(t) = self.lock.tokens {
                    self.lock.attempt = Some(Attempt {
                        stage: Stage::Token,
                        ..a
                    });
                    env.send(t, Msg::Token { req });
                    env.set_timer(Timer::AcquireTimeout, self.lock.acquire_timeout);
                } else {
                    self.proceed(env, a, token);
                }
            }
            Msg::WaitReply { req, acked } => {
                if let Some(a) = attempt.filter(|a| a.req == req) {
                    if let Stage::Wait(token) = a.stage {
                        if acked >= 1 {
                            self.proceed(env, a, token);
                        } else {
                            self.fail(env);
                        }
                    }
                }
            }
            Msg::TokenReply { req, token } => {
                if let Some(a) = attempt.filter(|a| a.req == req && a.stage == Stage::Token) {
                    self.proceed(env, a, Some(token));
                }
            }
            Msg::PrimaryIs(c) => {
                if self.lock.primary.is_none_or(|p| c.epoch > p.epoch) {
                    self.lock.primary = Some(c);
                }
                if let Some(a) = attempt.filter(|a| a.stage == Stage::Resolve) {
                    let to = self.lock.primary.map_or(c.primary, |p| p.primary);
                    self.lock.send_set(env, to, a.req, a.owner);
                    self.lock.attempt = Some(Attempt {
                        stage: Stage::Set,
                        sent_at: env.monotonic(),
                        ..a
                    });
                }
            }
            Msg::Resource(m) => {
                self.workload.on_resource_reply(env, &mut self.lock, m);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match timer {
            Timer::Workload(t) => self.workload.on_timer(env, &mut self.lock, t),
            Timer::AcquireTimeout => {
                if let Some(a) = self.lock.attempt.take() {
                    if a.stage == Stage::Set {
                        self.lock.abandon(a.req, a.owner);
                    }
                    self.lock.resolve(env);
                    self.lock.release(env);
                    self.workload.on_acquire_failed(env);
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------
// The token service

/// A linearizable, durable counter: each token is synced before it is handed out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenService {
    last: u64,
}

impl TokenService {
    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        if let Msg::Token { req } = msg {
            if env.store_synced(TOKENS_KEY, &(self.last + 1)).is_ok() {
                self.last += 1;
                env.send(
                    from,
                    Msg::TokenReply {
                        req,
                        token: self.last,
                    },
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// The protocol

/// A redis-failover node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RedisFailover {
    Redis(Box<RedisNode>),
    Sentinel(Box<Sentinel>),
    Client(Box<Client>),
    Storage(Resource),
    Tokens(TokenService),
}

impl Protocol for RedisFailover {
    type Msg = Msg;
    type Timer = Timer;
    type Config = FailoverConfig;

    fn new(config: &FailoverConfig, _me: NodeId, cluster: &Cluster) -> RedisFailover {
        match config.roles.get(_me) {
            FailoverRole::Redis => RedisFailover::Redis(Box::new(RedisNode::new(config))),
            FailoverRole::Sentinel => RedisFailover::Sentinel(Box::new(Sentinel::new(config))),
            FailoverRole::Client => {
                let tokens = match config.variant {
                    RedisFailoverVariant::ConsensusTokens => Tokens::Service(
                        cluster
                            .with_role("tokens")
                            .next()
                            .expect("configure checked"),
                    ),
                    RedisFailoverVariant::PrimaryTokens => Tokens::Primary,
                    _ => Tokens::None,
                };
                RedisFailover::Client(Box::new(Client {
                    lock: FailoverLock {
                        sentinels: cluster.with_role("sentinel").collect(),
                        primary: None,
                        key: config.workload.resource.clone(),
                        ttl: config.ttl,
                        acquire_timeout: config.acquire_timeout,
                        wait: (config.variant == RedisFailoverVariant::Wait)
                            .then_some(config.wait_timeout),
                        tokens,
                        req: 0,
                        attempt: None,
                        abandoned: Vec::new(),
                        held_owner: None,
                    },
                    workload: Workload::new(config.workload.clone()),
                }))
            }
            FailoverRole::Storage => RedisFailover::Storage(Resource::new(match config.variant {
                RedisFailoverVariant::ConsensusTokens | RedisFailoverVariant::PrimaryTokens => {
                    FencingMode::Fenced
                }
                _ => FencingMode::Unfenced,
            })),
            FailoverRole::Tokens => RedisFailover::Tokens(TokenService { last: 0 }),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match self {
            RedisFailover::Redis(r) => r.on_start(env),
            RedisFailover::Sentinel(s) => s.on_start(env),
            RedisFailover::Client(c) => c.workload.on_start(env),
            RedisFailover::Storage(r) => r.on_start(env),
            RedisFailover::Tokens(t) => t.last = env.load(TOKENS_KEY).unwrap_or(0),
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match (self, msg) {
            (RedisFailover::Storage(r), Msg::Resource(m)) => r.on_message(env, from, m),
            (RedisFailover::Storage(_), _) => {}
            (RedisFailover::Redis(r), msg) => r.on_message(env, from, msg),
            (RedisFailover::Sentinel(s), msg) => s.on_message(env, from, msg),
            (RedisFailover::Client(c), msg) => c.on_message(env, from, msg),
            (RedisFailover::Tokens(t), msg) => t.on_message(env, from, msg),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match self {
            RedisFailover::Redis(r) => r.on_timer(env, timer),
            RedisFailover::Sentinel(s) => {
                if timer == Timer::SentinelTick {
                    s.tick(env);
                }
            }
            RedisFailover::Client(c) => c.on_timer(env, timer),
            RedisFailover::Storage(_) | RedisFailover::Tokens(_) => {}
        }
    }
}

lock_client_params! {
    /// Parameters: the lock's TTL and acquire timeout, Sentinel's `down-after`,
    /// `failover-timeout` and `quorum`, `WAIT`'s timeout, the replicas' ack period,
    /// then the workload's (see [`WorkloadParams`](crate::workload::WorkloadParams)).
    #[derive(Clone, Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct FailoverParams {
        /// The key's time to live (`PX`).
        pub ttl: HumanDuration = HumanDuration(Duration::from_millis(2_000)),
        /// How long a client waits for an answer before it asks the sentinels again.
        pub acquire_timeout: HumanDuration = HumanDuration(Duration::from_millis(200)),
        /// Sentinel's `down-after-milliseconds`.
        pub down_after: HumanDuration = HumanDuration(Duration::from_millis(200)),
        /// Sentinel's `failover-timeout`.
        pub failover_timeout: HumanDuration = HumanDuration(Duration::from_millis(1_000)),
        /// Sentinels that must see the primary down (ODOWN).
        pub quorum: usize = 2,
        /// The `WAIT 1` timeout (variant `wait`).
        pub wait_timeout: HumanDuration = HumanDuration(Duration::from_millis(100)),
        /// How often a replica acks its offset (`REPLCONF ACK`).
        pub repl_period: HumanDuration = HumanDuration(Duration::from_millis(100)),
    }
}

const ROLES: &[RoleInfo] = &[
    RoleInfo::new(
        "redis",
        "Redis nodes: the first is the initial primary, the others its asynchronous replicas",
        3,
    ),
    RoleInfo::new(
        "sentinel",
        "Sentinels: mark the primary down (quorum), elect a leader per epoch, promote a replica",
        3,
    ),
    RoleInfo::new(
        "client",
        "lock clients: SET NX PX on the primary the sentinels name, read-modify-write the storage",
        3,
    )
    .with_kind(RoleKind::Holder),
    RoleInfo::new(
        "storage",
        "the protected resource, a counter (fenced in the token variants)",
        1,
    )
    .with_kind(RoleKind::Resource),
    RoleInfo::new(
        "tokens",
        "a consensus-backed, durable token counter (used by consensus-tokens only)",
        1,
    ),
];

static INFO: ProtocolInfo = ProtocolInfo::new(
    "redis-failover",
    "a Redis lock across Sentinel failover: an asynchronous replica promoted without the lock",
    ROLES,
    &[
        VariantInfo::new(
            "consensus-tokens",
            "fencing tokens from a consensus-backed counter, checked by the storage: two holders may act after a failover, the older token is rejected",
        ),
        VariantInfo::new(
            "no-fencing",
            "the lock alone: the primary acks the SET and dies before replicating it, the replica is promoted, a second client acquires (Redis with Sentinel, every version: replication is asynchronous; sibson/redbeat #163, closed without a fix; \"Distributed locks with Redis\")",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new(
            "wait",
            "WAIT 1 before acting: narrows the window, does not close it (the acked replica need not be the promoted one)",
        )
        .with_breaks(&["mutual-exclusion"]),
        VariantInfo::new(
            "primary-tokens",
            "fencing tokens from the primary's INCR, replicated asynchronously: the promoted replica hands out a token again",
        )
        .with_breaks(&["fencing-safety", "no-lost-update"]),
    ],
);

fn count_role(cluster: &Cluster, role: &str, min: usize, max: usize) -> Result<(), ParamError> {
    let n = cluster.count(role);
    if n < min || n > max {
        return Err(ParamError::new(
            &format!("cluster.roles.{role}"),
            format!("needs {min} to {max} `{role}` node(s), got {n}"),
        ));
    }
    Ok(())
}

impl Configurable for RedisFailover {
    type Params = FailoverParams;
    type Variant = RedisFailoverVariant;
    type Role = FailoverRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: FailoverParams,
        variant: RedisFailoverVariant,
        cluster: &Cluster,
    ) -> Result<FailoverConfig, ParamError> {
        count_role(cluster, "redis", 2, 16)?;
        count_role(cluster, "sentinel", 1, 16)?;
        count_role(cluster, "client", 1, usize::MAX)?;
        count_role(cluster, "storage", 1, 1)?;
        let tokens_min = usize::from(variant == RedisFailoverVariant::ConsensusTokens);
        count_role(cluster, "tokens", tokens_min, 1)?;
        let sentinels = cluster.count("sentinel");
        if params.quorum == 0 || params.quorum > sentinels {
            return Err(ParamError::new(
                "quorum",
                format!("must be 1 to the number of sentinels ({sentinels})"),
            ));
        }
        for (name, d) in [
            ("ttl", params.ttl),
            ("acquire_timeout", params.acquire_timeout),
            ("down_after", params.down_after),
            ("failover_timeout", params.failover_timeout),
            ("wait_timeout", params.wait_timeout),
            ("repl_period", params.repl_period),
        ] {
            if d.0.is_zero() {
                return Err(ParamError::new(name, "must be above zero"));
            }
        }
        let storage = cluster.with_role("storage").next().expect("counted");
        Ok(FailoverConfig {
            variant,
            ttl: params.ttl.0,
            acquire_timeout: params.acquire_timeout.0,
            down_after: params.down_after.0,
            failover_timeout: params.failover_timeout.0,
            quorum: params.quorum,
            wait_timeout: params.wait_timeout.0,
            repl_period: params.repl_period.0,
            workload: params.workload_params().config(storage, None)?,
            roles: Roles::of(cluster)?,
        })
    }

    fn promises(config: &FailoverConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        match config.variant {
            RedisFailoverVariant::ConsensusTokens | RedisFailoverVariant::PrimaryTokens => vec![
                tenure_core::Promise::new("fencing-safety"),
                tenure_core::Promise::new("no-lost-update"),
            ],
            RedisFailoverVariant::NoFencing | RedisFailoverVariant::Wait => {
                vec![tenure_core::Promise::new("mutual-exclusion")]
            }
        }
    }

    fn assumptions(config: &FailoverConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Assumptions, Limit};
        if matches!(
            config.variant,
            RedisFailoverVariant::ConsensusTokens | RedisFailoverVariant::PrimaryTokens
        ) {
            // Fencing keeps the resource safe whatever the lock does: nothing assumed.
            return Assumptions::default();
        }
        // The lock-only variants assume what a single Redis lock needs (see
        // redis-lock), so that what fails them is the failover, not a pause.
        let ttl = config.ttl;
        let work = config.workload.work_duration;
        let margin = ttl.saturating_sub(work);
        Assumptions::new()
            .with_max_pause(Limit::new(
                margin / 2,
                format!(
                    "a holder paused past its TTL {} minus its work {} acts on a lock that \
                     expired",
                    f(ttl),
                    f(work)
                ),
            ))
            .with_max_drift(Limit::new(
                0.1,
                "the holder's work and the primary's TTL are measured by two clocks",
            ))
            .with_min_restart_delay(Limit::new(
                ttl,
                "a Redis node restarts empty (no persistence): it must stay down a TTL",
            ))
            .with_max_wall_jump(Limit::new(
                margin / 4,
                "keys expire by the wall clock of the node that holds them",
            ))
    }
}

#[cfg(test)]
mod tests;
