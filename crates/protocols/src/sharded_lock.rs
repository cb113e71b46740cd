//! `sharded-lock`: a lock service sharded over coordinators by consistent hashing, with
//! membership changes that move ownership through a hand-over protocol.
//!
//! Resources `r0 .. r{n-1}` are mapped to coordinators by a hash ring with virtual
//! nodes ([`Ring`]: each member owns `vnodes` points, SHA-256 of `"<node>#<i>"`; a
//! resource belongs to the first point at or after the hash of its name, wrapping).
//! Karger et al., "Consistent Hashing and Random Trees" (STOC 1997); virtual nodes as in
//! Dynamo (DeCandia et al., SOSP 2007, §4.2). When a coordinator joins or leaves, only
//! the resources whose owner changes move: about `1/n` of them for `n` members. The
//! coordinator that starts a change observes the moved fraction as a `Note` and as
//! `Custom { name: "moved-permille" }`.
//!
//! Membership: every node starts with epoch 1 (all coordinators but the last `standby`
//! ones). A standby coordinator joins by itself at `standby_joins_at` (unless
//! `auto_join = false`), and again that long after a restart that finds the first ring
//! still without it (its join was lost with a power loss: its configuration still says
//! to join, as a node brought up with a join flag rejoins on every start); a scenario `request` event named `join` or `leave` sent to a
//! coordinator makes it join or leave. The coordinator that changes the membership
//! sends the new epoch and member list (`Config`) to every node, standing in for the
//! consensus store (etcd, ZooKeeper) real systems keep it in. Delivery to the
//! coordinators is reliable, as it must be for liveness: every coordinator that learns
//! an epoch resends it every `resend_interval` to each coordinator that has not
//! acknowledged it (`ConfigAck`; one behind is sent the newer ring instead), so a lost
//! message, a partition or a crash delays the change but never leaves a coordinator on
//! an old ring. Clients are told once: one on an old ring is redirected by `NotOwner`.
//! One change at a time: concurrent changes are out of scope.
//!
//! The hand-over (variant `correct`): on learning a new epoch, a coordinator that loses
//! a resource stops serving it first (it is fenced: `Disowns`), then sends the
//! resource's lock (holder and remaining lease) to the new owner in a `Handover`,
//! resent every `resend_interval` until a `HandoverAck` (it is on disk meanwhile). The
//! new owner answers `Busy` for that resource until the hand-over arrives, and only
//! then serves it (`Owns`). A hand-over is the resource's one token of ownership: it
//! carries a transfer number, so a duplicate or a resend whose ack was lost is not
//! taken for a second token, and one that arrives after the ring moved on again is
//! passed on to the owner by the newer ring. So at every instant at most one coordinator acts as the
//! owner (checked by `single-owner`), and a lock granted by the old owner is honoured
//! by the new one (checked by `mutual-exclusion` over the clients). Dynamo §4.9 does
//! the same with its key ranges: the old owner transfers them and only then stops
//! being responsible.
//!
//! A coordinator keeps on disk the ring it knows, the resources it serves and the
//! hand-overs it awaits. A restarted one reads them back, syncs them (a crash inside an
//! fsync leaves them in the page cache, not yet durable) and waits one lease (`ttl`)
//! before serving again, so locks it granted before its crash (its lock table is in
//! memory) have expired: the delayed restart of the Redis lock documentation. It never
//! serves a resource whose hand-over it did not receive.
//!
//! Broken variant:
//! * `no-fence`: the new owner serves a resource as soon as it learns the new ring, and
//!   nothing is handed over. Until the old owner learns the change (a network delay
//!   later) both serve the resource (breaks `single-owner`), and a lock the old owner
//!   granted is unknown to the new one, which grants it again (breaks
//!   `mutual-exclusion`).
//!
//! Clients: think, pick a resource uniformly, `Acquire` it from its owner by their own
//! view of the ring (a `NotOwner` reply carries the newer ring; `Busy` means retry),
//! hold it for `hold_time` (below `ttl`), `Release` it, repeat.

use crate::backoff::{Backoff, BackoffPolicy};
use crate::redis_lock::check_role_count;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{
    Cluster, Configurable, Env, HumanDuration, LocalTime, NodeId, Observation, ParamError,
    Protocol, ProtocolInfo, Request, RoleInfo, StorageExt, VariantInfo,
};

/// A lock handed over: the holder and what remains of its lease.
pub type HandedLock = Option<(NodeId, Duration)>;

/// One resource in a hand-over: the token of its ownership. `transfer` counts its
/// hand-overs (the owners of epoch 1 hold transfer 0), so a copy of an old hand-over is
/// told from the live one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Handed {
    pub resource: String,
    pub transfer: u64,
    pub lock: HandedLock,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// The membership of `epoch`.
    Config {
        epoch: u64,
        members: Vec<NodeId>,
    },
    /// A coordinator knows `epoch` (the sender of a `Config` stops resending it).
    ConfigAck {
        epoch: u64,
    },
    /// From the old owner to the new one: the resources it gave up (the ring of `epoch`,
    /// whose members it repeats in case the `Config` is still on its way), with their
    /// locks. Resent until acknowledged.
    Handover {
        epoch: u64,
        members: Vec<NodeId>,
        locks: Vec<Handed>,
    },
    /// These hand-overs (resource, transfer) arrived: stop resending them.
    HandoverAck {
        resources: Vec<(String, u64)>,
    },
    Acquire {
        req: u64,
        resource: String,
    },
    Granted {
        req: u64,
        resource: String,
    },
    /// The resource is locked, or its hand-over has not arrived yet: retry later.
    Busy {
        req: u64,
    },
    /// Not mine; here is the ring I know.
    NotOwner {
        req: u64,
        epoch: u64,
        members: Vec<NodeId>,
    },
    Release {
        resource: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// A standby coordinator joins by itself.
    Join,
    /// A restarted coordinator has waited one lease: serve again.
    Recovered,
    /// Send again what is not acknowledged yet (the epoch, hand-overs).
    Resend,
    Think,
    Retry,
    Reply,
    Hold,
}

/// The hash of a name on the ring: the first 8 bytes of its SHA-256.
pub fn ring_hash(name: &str) -> u64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// A consistent-hash ring with virtual nodes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ring {
    pub epoch: u64,
    pub members: BTreeSet<NodeId>,
    points: BTreeMap<u64, NodeId>,
}

impl Ring {
    pub fn new(epoch: u64, members: BTreeSet<NodeId>, vnodes: u32) -> Ring {
        let mut points = BTreeMap::new();
        for m in &members {
            for v in 0..vnodes {
                // A collision of 64-bit hashes keeps the first member: deterministic.
                points
                    .entry(ring_hash(&format!("{}#{v}", m.0)))
                    .or_insert(*m);
            }
        }
        Ring {
            epoch,
            members,
            points,
        }
    }

    /// The owner of `key`: the first point at or after its hash, wrapping around.
    pub fn owner(&self, key: &str) -> NodeId {
        let h = ring_hash(key);
        let (_, node) = self
            .points
            .range(h..)
            .next()
            .or_else(|| self.points.iter().next())
            .expect("a ring has at least one member");
        *node
    }
}

/// How many of `resources` change owner from `a` to `b`.
pub fn moved(a: &Ring, b: &Ring, resources: &[String]) -> usize {
    resources
        .iter()
        .filter(|r| a.owner(r) != b.owner(r))
        .count()
}

/// What every node of a run shares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shared {
    pub resources: Vec<String>,
    pub vnodes: u32,
    pub coordinators: Vec<NodeId>,
    pub clients: Vec<NodeId>,
    /// The members of epoch 1.
    pub initial: BTreeSet<NodeId>,
    pub standby_joins_at: Option<Duration>,
    /// `correct`: hand over with fencing; `no-fence`: serve at once, hand nothing over.
    pub fence: bool,
    pub ttl: Duration,
    pub hold_time: Duration,
    pub think_time: (Duration, Duration),
    pub retry_delay: (Duration, Duration),
    pub request_timeout: Duration,
    /// How often a coordinator resends an unacknowledged epoch or hand-over.
    pub resend_interval: Duration,
    pub roles: tenure_core::Roles<ShardedLockRole>,
}

/// The roles of a sharded-lock cluster (`Configurable::Role`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ShardedLockRole {
    /// A lock server that owns the resources the ring gives it.
    Coordinator,
    /// A client that takes locks on the resources.
    Client,
}

impl Shared {
    fn ring(&self, epoch: u64, members: &[NodeId]) -> Ring {
        Ring::new(epoch, members.iter().copied().collect(), self.vnodes)
    }
}

/// What a coordinator keeps on disk: the ring it knows and its part in it, so that a
/// restarted process neither serves what it never received, nor forgets a hand-over it
/// awaits or one it has sent and not seen acknowledged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct StoredRing {
    epoch: u64,
    members: Vec<NodeId>,
    serving: Vec<String>,
    awaiting: Vec<String>,
    /// Hand-overs sent and not acknowledged: (resource, to, transfer number).
    outgoing: Vec<(String, NodeId, u64)>,
    /// Per resource, the transfer number of the last hand-over it accepted.
    seen: Vec<(String, u64)>,
}

const RING_KEY: &str = "sharded/ring";

/// A hand-over sent and not acknowledged yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Outgoing {
    to: NodeId,
    /// The resource's transfer number: one more than that of the hand-over that brought
    /// it here (0 for the owners of epoch 1).
    transfer: u64,
    /// The lock it carries: holder and lease end by this node's monotonic clock.
    lock: Option<(NodeId, LocalTime)>,
}

/// A coordinator: owns the resources the ring gives it, grants their locks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Coordinator {
    shared: Shared,
    ring: Ring,
    /// Resources it acts as the owner of.
    serving: BTreeSet<String>,
    /// Gained resources whose hand-over has not arrived.
    awaiting: BTreeSet<String>,
    /// Hand-overs sent and not acknowledged: resent every `resend_interval`.
    outgoing: BTreeMap<String, Outgoing>,
    /// Per resource, the transfer number of the last hand-over accepted here: a copy of
    /// an older one (a duplicate, a resend whose ack was lost) is not a second token.
    seen: BTreeMap<String, u64>,
    /// Coordinators that have not acknowledged this node's epoch yet (epochs after 1).
    unacked: BTreeSet<NodeId>,
    /// resource -> (holder, lease end by the monotonic clock).
    locks: BTreeMap<String, (NodeId, LocalTime)>,
    /// Restarted and waiting one lease before serving these (what it served before).
    recovering: Option<BTreeSet<String>>,
    /// Whether the `Resend` timer is armed.
    resending: bool,
}

impl Coordinator {
    pub fn new(shared: Shared) -> Coordinator {
        let ring = Ring::new(1, shared.initial.clone(), shared.vnodes);
        Coordinator {
            shared,
            ring,
            serving: BTreeSet::new(),
            awaiting: BTreeSet::new(),
            outgoing: BTreeMap::new(),
            seen: BTreeMap::new(),
            unacked: BTreeSet::new(),
            locks: BTreeMap::new(),
            recovering: None,
            resending: false,
        }
    }

    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    pub fn serving(&self) -> &BTreeSet<String> {
        &self.serving
    }

    /// Resources handed over and not acknowledged yet.
    pub fn unacknowledged_handovers(&self) -> usize {
        self.outgoing.len()
    }

    fn members(&self) -> Vec<NodeId> {
        self.ring.members.iter().copied().collect()
    }

    fn config(&self) -> Msg {
        Msg::Config {
            epoch: self.ring.epoch,
            members: self.members(),
        }
    }

    /// Makes the ring, what it serves, awaits and hands over durable (synced) before
    /// anything that depends on them goes out: a coordinator that loses power must not
    /// come back serving under an older epoch, or forget a hand-over. A failed sync
    /// (`disk-error`) is not drawn by the profiles; a production coordinator would stop
    /// serving until it succeeds.
    fn persist(&self, env: &mut dyn Env<Msg, Timer>) {
        let serving = match &self.recovering {
            Some(resume) => resume.iter().cloned().collect(),
            None => self.serving.iter().cloned().collect(),
        };
        let _not_drawn = env.store_synced(
            RING_KEY,
            &StoredRing {
                epoch: self.ring.epoch,
                members: self.members(),
                serving,
                awaiting: self.awaiting.iter().cloned().collect(),
                outgoing: self
                    .outgoing
                    .iter()
                    .map(|(r, o)| (r.clone(), o.to, o.transfer))
                    .collect(),
                seen: self.seen.iter().map(|(r, n)| (r.clone(), *n)).collect(),
            },
        );
    }

    /// Starts serving `r` (or, while recovering, once the recovery is over).
    fn own(&mut self, env: &mut dyn Env<Msg, Timer>, r: String) {
        match &mut self.recovering {
            Some(resume) => {
                resume.insert(r);
            }
            None => {
                if self.serving.insert(r.clone()) {
                    env.observe(Observation::Owns {
                        resource: r,
                        epoch: self.ring.epoch,
                    });
                }
            }
        }
    }

    /// Arms the `Resend` timer if something awaits an acknowledgement.
    fn arm_resend(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if !self.resending && (!self.unacked.is_empty() || !self.outgoing.is_empty()) {
            self.resending = true;
            env.set_timer(Timer::Resend, self.shared.resend_interval);
        }
    }

    /// Every coordinator but this one must acknowledge the current epoch.
    fn expect_acks(&mut self, env: &mut dyn Env<Msg, Timer>) {
        let me = env.me();
        self.unacked = self
            .shared
            .coordinators
            .iter()
            .copied()
            .filter(|c| *c != me)
            .collect();
    }

    pub fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match env.load::<StoredRing>(RING_KEY) {
            Some(stored) => {
                // A restart: the lock table is gone; wait out every lease it granted.
                self.ring = self.shared.ring(stored.epoch, &stored.members);
                self.awaiting = stored.awaiting.into_iter().collect();
                self.seen = stored.seen.into_iter().collect();
                // What was handed over and not acknowledged is sent again, without its
                // lock (forgotten), once every lease granted here has run out.
                self.outgoing = stored
                    .outgoing
                    .into_iter()
                    .map(|(r, to, transfer)| {
                        (
                            r,
                            Outgoing {
                                to,
                                transfer,
                                lock: None,
                            },
                        )
                    })
                    .collect();
                self.recovering = Some(stored.serving.into_iter().collect());
                if self.ring.epoch > 1 {
                    self.expect_acks(env);
                }
                env.set_timer(Timer::Recovered, self.shared.ttl);
                // A standby that lost power before its join took effect (the ring it
                // reads back is still the first one, without it) is still configured
                // to join: it joins again, as long after this start as after its first,
                // and not before its recovery wait is over. Without this a power loss
                // inside the join's fsync left the ring unchanged for the rest of the
                // run (and `single-owner` with no resource that changed owner to judge).
                if let Some(at) = self.shared.standby_joins_at {
                    let me = env.me();
                    if self.ring.epoch == 1 && !self.ring.members.contains(&me) {
                        env.set_timer(Timer::Join, at.max(self.shared.ttl));
                    }
                }
                // What a restarted process reads back may not be durable: a process
                // that crashed inside its fsync left the write in the page cache,
                // unsynced. Acting on it (acknowledging its epoch, which stops the
                // resends) and then losing power would bring the node back on an
                // older ring that nobody sends it again. So sync it before acting on
                // it, as PostgreSQL fsyncs its data directory before crash recovery
                // (`SyncDataDirectory`). The node handles nothing until the sync is done.
                self.persist(env);
            }
            None => {
                let me = env.me();
                if self.ring.members.contains(&me) {
                    let mine: Vec<String> = self
                        .shared
                        .resources
                        .iter()
                        .filter(|r| self.ring.owner(r) == me)
                        .cloned()
                        .collect();
                    for r in mine {
                        self.own(env, r);
                    }
                } else if let Some(at) = self.shared.standby_joins_at {
                    env.set_timer(Timer::Join, at);
                }
                self.persist(env);
            }
        }
    }

    /// Starts a membership change to `members` (the next epoch): tell everyone, apply.
    fn change(&mut self, env: &mut dyn Env<Msg, Timer>, members: BTreeSet<NodeId>, what: &str) {
        let epoch = self.ring.epoch + 1;
        let members: Vec<NodeId> = members.into_iter().collect();
        let next = self.shared.ring(epoch, &members);
        let n = self.shared.resources.len();
        let m = moved(&self.ring, &next, &self.shared.resources);
        let permille = (m * 1000 / n.max(1)) as i64;
        env.observe(Observation::Note {
            text: format!(
                "epoch {epoch}: {what}; {m} of {n} resources change owner ({}.{}%), 1/{} = {:.1}%",
                permille / 10,
                permille % 10,
                members.len().max(self.ring.members.len()),
                100.0 / members.len().max(self.ring.members.len()) as f64
            ),
        });
        env.observe(Observation::Custom {
            name: "moved-permille".into(),
            value: permille,
        });
        self.apply(env, epoch, &members);
        // The clients are told once (a client on an old ring is redirected by a
        // `NotOwner`); the coordinators are told until they acknowledge (`Resend`).
        let me = env.me();
        for to in self.shared.coordinators.iter().chain(&self.shared.clients) {
            if *to != me {
                env.send(*to, self.config());
            }
        }
    }

    /// Moves to the ring of `epoch` if it is newer: hand over what it loses, await (or,
    /// without fencing, take at once) what it gains.
    fn apply(&mut self, env: &mut dyn Env<Msg, Timer>, epoch: u64, members: &[NodeId]) {
        if epoch <= self.ring.epoch {
            return;
        }
        let me = env.me();
        let next = self.shared.ring(epoch, members);
        let mut gained = Vec::new();
        let mut lost = Vec::new();
        for r in &self.shared.resources {
            let (was, will) = (self.ring.owner(r), next.owner(r));
            if was == me && will != me {
                if self.serving.remove(r) {
                    env.observe(Observation::Disowns {
                        resource: r.clone(),
                        epoch,
                    });
                    lost.push(r.clone());
                } else if self
                    .recovering
                    .as_mut()
                    .is_some_and(|resume| resume.remove(r))
                {
                    lost.push(r.clone());
                }
                // A resource still awaited stays awaited: when its hand-over arrives, it
                // is passed on to its owner by the ring of that time.
            } else if will == me && was != me {
                if self.shared.fence {
                    self.awaiting.insert(r.clone());
                } else {
                    gained.push(r.clone());
                }
            }
        }
        self.ring = next;
        self.expect_acks(env);
        for r in gained {
            self.own(env, r);
        }
        let now = env.monotonic();
        for r in lost {
            let lock = self.locks.remove(&r).filter(|(_, end)| now < *end);
            if self.shared.fence {
                let to = self.ring.owner(&r);
                let transfer = self.seen.get(&r).copied().unwrap_or(0) + 1;
                self.outgoing.insert(r, Outgoing { to, transfer, lock });
            }
        }
        self.persist(env);
        self.send_handovers(env);
        self.arm_resend(env);
    }

    /// Sends every unacknowledged hand-over (not while recovering: the locks it granted
    /// are forgotten, so it waits until they have run out).
    fn send_handovers(&mut self, env: &mut dyn Env<Msg, Timer>) {
        if self.recovering.is_some() {
            return;
        }
        let now = env.monotonic();
        let mut by_node: BTreeMap<NodeId, Vec<Handed>> = BTreeMap::new();
        for (r, o) in &self.outgoing {
            let lock = o
                .lock
                .filter(|(_, end)| now < *end)
                .map(|(holder, end)| (holder, now.until(end)));
            by_node.entry(o.to).or_default().push(Handed {
                resource: r.clone(),
                transfer: o.transfer,
                lock,
            });
        }
        for (to, locks) in by_node {
            env.send(
                to,
                Msg::Handover {
                    epoch: self.ring.epoch,
                    members: self.members(),
                    locks,
                },
            );
        }
    }

    fn on_handover(
        &mut self,
        env: &mut dyn Env<Msg, Timer>,
        from: NodeId,
        epoch: u64,
        members: &[NodeId],
        locks: Vec<Handed>,
    ) {
        self.apply(env, epoch, members);
        let me = env.me();
        let now = env.monotonic();
        let mut acks = Vec::new();
        for h in locks {
            acks.push((h.resource.clone(), h.transfer));
            // A copy of a hand-over accepted before is not a second token.
            if self.seen.get(&h.resource).copied().unwrap_or(0) >= h.transfer {
                continue;
            }
            self.seen.insert(h.resource.clone(), h.transfer);
            let lock = h.lock.map(|(holder, left)| (holder, now + left));
            let owner = self.ring.owner(&h.resource);
            if owner == me {
                self.awaiting.remove(&h.resource);
                if let Some(l) = lock {
                    self.locks.insert(h.resource.clone(), l);
                }
                self.own(env, h.resource);
            } else {
                // The ring moved on while it was on its way: pass it on.
                self.awaiting.remove(&h.resource);
                self.outgoing.insert(
                    h.resource,
                    Outgoing {
                        to: owner,
                        transfer: h.transfer + 1,
                        lock,
                    },
                );
            }
        }
        self.persist(env);
        env.send(from, Msg::HandoverAck { resources: acks });
        self.send_handovers(env);
        self.arm_resend(env);
    }

    fn on_acquire(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, req: u64, r: String) {
        let now = env.monotonic();
        let me = env.me();
        let reply = if self.serving.contains(&r) {
            match self.locks.get(&r) {
                Some((holder, end)) if *holder != from && now < *end => Msg::Busy { req },
                _ => {
                    self.locks.insert(r.clone(), (from, now + self.shared.ttl));
                    Msg::Granted { req, resource: r }
                }
            }
        } else if self.ring.owner(&r) == me
            && (self.recovering.is_some() || self.awaiting.contains(&r))
        {
            Msg::Busy { req }
        } else {
            Msg::NotOwner {
                req,
                epoch: self.ring.epoch,
                members: self.members(),
            }
        };
        env.send(from, reply);
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Config { epoch, members } => {
                self.apply(env, epoch, &members);
                if !self.shared.coordinators.contains(&from) {
                    return;
                }
                if self.ring.epoch > epoch {
                    // The sender is behind: it gets the newer ring (and acknowledges it).
                    env.send(from, self.config());
                } else {
                    env.send(from, Msg::ConfigAck { epoch });
                }
            }
            Msg::ConfigAck { epoch } => {
                if epoch >= self.ring.epoch {
                    self.unacked.remove(&from);
                }
            }
            Msg::Handover {
                epoch,
                members,
                locks,
            } => self.on_handover(env, from, epoch, &members, locks),
            Msg::HandoverAck { resources } => {
                let mut changed = false;
                for (r, transfer) in resources {
                    if self
                        .outgoing
                        .get(&r)
                        .is_some_and(|o| o.to == from && o.transfer == transfer)
                    {
                        self.outgoing.remove(&r);
                        changed = true;
                    }
                }
                if changed {
                    self.persist(env);
                }
            }
            Msg::Acquire { req, resource } => self.on_acquire(env, from, req, resource),
            Msg::Release { resource } => {
                if self.locks.get(&resource).is_some_and(|(h, _)| *h == from) {
                    self.locks.remove(&resource);
                }
            }
            Msg::Granted { .. } | Msg::Busy { .. } | Msg::NotOwner { .. } => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match timer {
            Timer::Join => self.on_request(
                env,
                &Request {
                    name: "join".into(),
                    arg: 0,
                },
            ),
            Timer::Recovered => {
                // Serve again what was served before the crash (and what was handed over
                // meanwhile); what still awaits its hand-over keeps waiting for it.
                let resume = self.recovering.take().unwrap_or_default();
                for r in resume {
                    self.own(env, r);
                }
                self.persist(env);
                self.send_handovers(env);
                self.arm_resend(env);
            }
            Timer::Resend => {
                self.resending = false;
                let config = self.config();
                for to in &self.unacked {
                    env.send(*to, config.clone());
                }
                self.send_handovers(env);
                self.arm_resend(env);
            }
            _ => {}
        }
    }

    fn on_request(&mut self, env: &mut dyn Env<Msg, Timer>, request: &Request) {
        let me = env.me();
        let mut members = self.ring.members.clone();
        match request.name.as_str() {
            "join" if !members.contains(&me) => {
                members.insert(me);
                self.change(env, members, &format!("{me} joins"));
            }
            "leave" if members.contains(&me) && members.len() > 1 => {
                members.remove(&me);
                self.change(env, members, &format!("{me} leaves"));
            }
            other => env.observe(Observation::Note {
                text: format!(
                    "request `{other}` ignored (in the ring: {})",
                    members.contains(&me)
                ),
            }),
        }
    }
}

/// Where a client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Thinking,
    Acquiring,
    Holding,
}

/// A lock client that routes by its own view of the ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    shared: Shared,
    ring: Ring,
    phase: Phase,
    resource: String,
    req: u64,
    /// The coordinator that granted the lock it holds.
    granted_by: Option<NodeId>,
}

impl Client {
    pub fn new(shared: Shared) -> Client {
        let ring = Ring::new(1, shared.initial.clone(), shared.vnodes);
        Client {
            shared,
            ring,
            phase: Phase::Thinking,
            resource: String::new(),
            req: 0,
            granted_by: None,
        }
    }

    fn think(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.phase = Phase::Thinking;
        let (lo, hi) = self.shared.think_time;
        let pause = env.duration_between(lo, hi);
        env.set_timer(Timer::Think, pause);
    }

    fn send_acquire(&mut self, env: &mut dyn Env<Msg, Timer>) {
        self.req += 1;
        let to = self.ring.owner(&self.resource);
        env.send(
            to,
            Msg::Acquire {
                req: self.req,
                resource: self.resource.clone(),
            },
        );
        env.set_timer(Timer::Reply, self.shared.request_timeout);
    }

    fn retry_later(&mut self, env: &mut dyn Env<Msg, Timer>) {
        env.cancel_timer(&Timer::Reply);
        let (min, max) = self.shared.retry_delay;
        // The shared backoff module's `uniform` policy (no state: every retry alike).
        let delay = Backoff::new(BackoffPolicy::Uniform { min, max }).on_failure(env);
        env.set_timer(Timer::Retry, delay);
    }

    fn learn(&mut self, epoch: u64, members: &[NodeId]) {
        if epoch > self.ring.epoch {
            self.ring = self.shared.ring(epoch, members);
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Config { epoch, members } => self.learn(epoch, &members),
            Msg::Granted { req, resource } if req == self.req && self.phase == Phase::Acquiring => {
                env.cancel_timer(&Timer::Reply);
                self.phase = Phase::Holding;
                self.granted_by = Some(from);
                env.observe(Observation::Holds {
                    resource: resource.clone(),
                    token: 0,
                });
                // It reads the resource at once, on the strength of the lock.
                env.observe(Observation::Acts { resource, token: 0 });
                env.set_timer(Timer::Hold, self.shared.hold_time);
            }
            Msg::Busy { req } if req == self.req && self.phase == Phase::Acquiring => {
                self.retry_later(env)
            }
            Msg::NotOwner {
                req,
                epoch,
                members,
            } if req == self.req && self.phase == Phase::Acquiring => {
                self.learn(epoch, &members);
                self.retry_later(env);
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match (timer, self.phase) {
            (Timer::Think, Phase::Thinking) => {
                let n = self.shared.resources.len() as u64;
                let i = env.range_inclusive(0, n - 1) as usize;
                self.resource = self.shared.resources[i].clone();
                self.phase = Phase::Acquiring;
                env.observe(Observation::Waiting {
                    resource: self.resource.clone(),
                });
                self.send_acquire(env);
            }
            (Timer::Retry | Timer::Reply, Phase::Acquiring) => self.send_acquire(env),
            (Timer::Hold, Phase::Holding) => {
                // The work is done: it writes the resource, then releases the lock.
                env.observe(Observation::Acts {
                    resource: self.resource.clone(),
                    token: 0,
                });
                if let Some(to) = self.granted_by.take() {
                    env.send(
                        to,
                        Msg::Release {
                            resource: self.resource.clone(),
                        },
                    );
                }
                env.observe(Observation::Releases {
                    resource: self.resource.clone(),
                });
                self.think(env);
            }
            _ => {}
        }
    }
}

/// A sharded-lock node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShardedLock {
    Coordinator(Box<Coordinator>),
    Client(Box<Client>),
}

impl Protocol for ShardedLock {
    type Msg = Msg;
    type Timer = Timer;
    type Config = Shared;

    fn new(config: &Shared, me: NodeId, _cluster: &Cluster) -> ShardedLock {
        match config.roles.get(me) {
            ShardedLockRole::Coordinator => {
                ShardedLock::Coordinator(Box::new(Coordinator::new(config.clone())))
            }
            ShardedLockRole::Client => ShardedLock::Client(Box::new(Client::new(config.clone()))),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, Timer>) {
        match self {
            ShardedLock::Coordinator(c) => c.on_start(env),
            ShardedLock::Client(c) => {
                // Request ids start at a random point, so a reply meant for the process
                // that ran before a crash never matches a request of this one.
                c.req = env.next_u64() >> 1;
                c.think(env);
            }
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<Msg, Timer>, from: NodeId, msg: Msg) {
        match self {
            ShardedLock::Coordinator(c) => c.on_message(env, from, msg),
            ShardedLock::Client(c) => c.on_message(env, from, msg),
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<Msg, Timer>, timer: Timer) {
        match self {
            ShardedLock::Coordinator(c) => c.on_timer(env, timer),
            ShardedLock::Client(c) => c.on_timer(env, timer),
        }
    }

    fn on_request(&mut self, env: &mut dyn Env<Msg, Timer>, request: &Request) {
        if let ShardedLock::Coordinator(c) = self {
            c.on_request(env, request);
        }
    }
}

/// The scenario parameters of `sharded-lock`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShardedLockParams {
    /// How many resources (`r0` .. `r{resources-1}`).
    pub resources: u32,
    /// Points per coordinator on the ring.
    pub vnodes: u32,
    /// How many of the last coordinators start outside the ring.
    pub standby: u32,
    /// Standby coordinators join by themselves at this time (with `auto_join`).
    pub standby_joins_at: HumanDuration,
    pub auto_join: bool,
    /// A lock's lease at its coordinator.
    pub ttl: HumanDuration,
    /// How long a client holds a lock (below `ttl`).
    pub hold_time: HumanDuration,
    pub think_time: [HumanDuration; 2],
    /// How long a client waits before asking again after `Busy` or `NotOwner`.
    pub retry_delay: [HumanDuration; 2],
    pub request_timeout: HumanDuration,
    /// How often a coordinator resends a membership epoch or a hand-over that was not
    /// acknowledged.
    pub resend_interval: HumanDuration,
}

impl Default for ShardedLockParams {
    fn default() -> ShardedLockParams {
        let ms = |n| HumanDuration(Duration::from_millis(n));
        ShardedLockParams {
            resources: 64,
            vnodes: 32,
            standby: 1,
            standby_joins_at: ms(2_000),
            auto_join: true,
            ttl: ms(1_000),
            hold_time: ms(200),
            think_time: [ms(50), ms(150)],
            retry_delay: [ms(20), ms(60)],
            request_timeout: ms(300),
            resend_interval: ms(100),
        }
    }
}

impl ShardedLockParams {
    fn shared(&self, cluster: &Cluster, fence: bool) -> Result<Shared, ParamError> {
        check_role_count(cluster, "coordinator", 1, usize::MAX)?;
        check_role_count(cluster, "client", 1, usize::MAX)?;
        let coordinators: Vec<NodeId> = cluster.with_role("coordinator").collect();
        if self.standby as usize >= coordinators.len() {
            return Err(ParamError::new(
                "standby",
                format!(
                    "must leave at least one of the {} coordinators in the ring",
                    coordinators.len()
                ),
            ));
        }
        if !(1..=10_000).contains(&self.resources) {
            return Err(ParamError::new("resources", "must be between 1 and 10000"));
        }
        if !(1..=1_000).contains(&self.vnodes) {
            return Err(ParamError::new("vnodes", "must be between 1 and 1000"));
        }
        for (name, d) in [
            ("ttl", self.ttl),
            ("hold_time", self.hold_time),
            ("request_timeout", self.request_timeout),
            ("retry_delay", self.retry_delay[1]),
            ("resend_interval", self.resend_interval),
        ] {
            if d.0.is_zero() {
                return Err(ParamError::new(name, "must be above zero"));
            }
        }
        if self.hold_time.0 >= self.ttl.0 {
            return Err(ParamError::new(
                "hold_time",
                "must be below ttl (a client holds a lock only while its lease lasts)",
            ));
        }
        for (name, [lo, hi]) in [
            ("think_time", self.think_time),
            ("retry_delay", self.retry_delay),
        ] {
            if lo.0 > hi.0 {
                return Err(ParamError::new(name, "the minimum is above the maximum"));
            }
        }
        let in_ring = coordinators.len() - self.standby as usize;
        Ok(Shared {
            resources: (0..self.resources).map(|i| format!("r{i}")).collect(),
            vnodes: self.vnodes,
            initial: coordinators[..in_ring].iter().copied().collect(),
            coordinators,
            clients: cluster.with_role("client").collect(),
            standby_joins_at: self.auto_join.then_some(self.standby_joins_at.0),
            fence,
            ttl: self.ttl.0,
            hold_time: self.hold_time.0,
            think_time: (self.think_time[0].0, self.think_time[1].0),
            retry_delay: (self.retry_delay[0].0, self.retry_delay[1].0),
            request_timeout: self.request_timeout.0,
            resend_interval: self.resend_interval.0,
            roles: tenure_core::Roles::of(cluster)?,
        })
    }
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "sharded-lock",
    "a lock service sharded over coordinators by a consistent-hash ring; join/leave hand ownership over",
    &[
        RoleInfo::new(
            "coordinator",
            "lock coordinators, each owning the resources the ring gives it (the last `standby` start outside the ring)",
            4,
        ),
        RoleInfo::new(
            "client",
            "lock clients: acquire a random resource from its owner, hold, release",
            4,
        )
        .with_kind(tenure_core::RoleKind::Holder),
    ],
    &[
        VariantInfo::new(
            "correct",
            "the old owner stops serving and hands the lock over; the new owner serves only after the hand-over",
        ),
        VariantInfo::new(
            "no-fence",
            "the new owner serves as soon as it learns the ring; nothing is handed over",
        )
        .with_breaks(&["single-owner", "mutual-exclusion"]),
    ],
);

/// sharded-lock's variants (names as scenarios write them).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ShardedLockVariant {
    Correct,
    NoFence,
}

impl Configurable for ShardedLock {
    type Params = ShardedLockParams;
    type Variant = ShardedLockVariant;
    type Role = ShardedLockRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: ShardedLockParams,
        variant: ShardedLockVariant,
        cluster: &Cluster,
    ) -> Result<Shared, ParamError> {
        let fence = match variant {
            ShardedLockVariant::Correct => true,
            ShardedLockVariant::NoFence => false,
        };
        params.shared(cluster, fence)
    }

    /// What the fenced, acknowledged hand-over promises: no resource has two acting
    /// owners at once (both variants are judged on it; `no-fence` breaks it), and
    /// lock-liveness with a bound derived from the parameters (see
    /// [`sharded_liveness`]). Mutual exclusion of clients under pauses longer than the
    /// lease is the usual lesson (only a fenced resource is safe), not a promise.
    fn promises(config: &Shared, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        vec![
            tenure_core::Promise::new("single-owner"),
            sharded_liveness(config),
        ]
    }

    fn assumptions(_config: &Shared) -> tenure_core::Assumptions {
        tenure_core::Assumptions::new().with_max_drift(tenure_core::Limit::new(
            0.1,
            "the lock-liveness bound is scaled for monotonic clocks up to 10% slow",
        ))
    }
}

/// `lock-liveness` of the sharded lock, in the progress form (no queue: a waiter may
/// lose every race). After the calm, a waiter gets its resource within:
/// * a lease (`ttl`): a coordinator restarted just before the calm waits one lease
///   before it serves, or hands over what it handed before its crash;
/// * one resend interval plus a request timeout per coordinator: the epoch and the
///   hand-over are resent every `resend_interval` until acknowledged, and a hand-over
///   that arrives after the ring moved on is passed on, at most once per coordinator;
/// * a lease: the lock the hand-over carried (its holder may have crashed or paused);
/// * a request timeout plus the longest retry delay: the waiter asks again;
/// * a hold time: the holder at that moment finishes;
///
/// all scaled for clocks up to 10% slow (every timer here is a monotonic-clock timer).
pub fn sharded_liveness(config: &Shared) -> tenure_core::Promise {
    use tenure_core::format_duration as f;
    let hops = config.coordinators.len() as u32;
    let hop = config.resend_interval + config.request_timeout;
    let base = config.ttl
        + hop * hops
        + config.ttl
        + config.request_timeout
        + config.retry_delay.1
        + config.hold_time;
    let text = format!(
        "recovery ttl {} + {hops} coordinators x (resend {} + request timeout {}) + lease ttl {} \
         + request timeout {} + retry max {} + hold {}",
        f(config.ttl),
        f(config.resend_interval),
        f(config.request_timeout),
        f(config.ttl),
        f(config.request_timeout),
        f(config.retry_delay.1),
        f(config.hold_time),
    );
    let (within, scale) = crate::promises::slow_clock(base, Some(0.1));
    tenure_core::Promise::new("lock-liveness")
        .within(within, format!("{text}{scale}"))
        .with("per_waiter", false)
}

#[cfg(test)]
mod tests;
