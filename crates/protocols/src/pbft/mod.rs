//! PBFT (Castro & Liskov, "Practical Byzantine Fault Tolerance", OSDI 1999) as a teaching
//! model, sans-IO: `n` replicas tolerate `f` Byzantine ones, clients that sign requests
//! and accept a result on `f + 1` matching replies.
//!
//! **Promises.** Agreement (`agreement`: honest replicas execute the same request at each
//! sequence number) and validity (`validity` with `by_value`: an honest replica executes
//! only a request some client sent) with at most `f` Byzantine replicas (`max-byzantine`),
//! on any network, with any clocks, across crashes and power losses: PBFT needs no timing
//! for safety (§4.5). No liveness is promised: it needs f + 1... more precisely, it needs
//! the network to deliver within the view-change timeouts eventually and at most `f`
//! faulty replicas of any kind (a crashed one counts), and this model has no state
//! transfer, so a replica that missed a commit never catches up (see "Left out").
//!
//! **How it works.** §4.2, the normal case: the primary of view `v` (replica `v mod n`)
//! assigns a request the next sequence number and multicasts PRE-PREPARE(v, seq, digest,
//! request); a backup accepts it if it is in view `v`, the digest is the request's and
//! it accepted no other digest for (v, seq), and multicasts PREPARE(v, seq, digest). A
//! replica is *prepared* with the pre-prepare and `quorum - 1` matching prepares from
//! different backups (its own included: 2f for `correct`), then multicasts COMMIT; it is
//! *committed-local* once prepared with `quorum` matching commits (2f + 1). Replicas
//! execute in sequence order, record `Decides { instance: seq, value }` and reply to
//! the client, who accepts a result on `f + 1` matching replies (§4.1). §4.4, view
//! changes: a backup waiting for a request it received starts a timer; when it expires,
//! it multicasts VIEW-CHANGE(v + 1, P) where P holds a *prepared certificate* for every
//! sequence number it prepared (the pre-prepare and the `quorum - 1` prepares, each
//! signed by its sender), and waits twice as long for the next view. A replica that
//! receives `f + 1` view-changes for higher views joins the smallest. The new primary,
//! with `quorum` view-changes (its own included), multicasts NEW-VIEW(v + 1, V, O): V the
//! view-changes, O a pre-prepare for every sequence number up to the highest in any
//! certificate, re-issuing the request of the certificate with the highest view, or a
//! null request where there is none. Backups check every certificate and recompute O
//! before they enter the view and prepare O's pre-prepares.
//!
//! **Authentication** (§3: signatures that a faulty node cannot forge). The network's
//! sender is unforgeable. A signature is modelled as a value only its signer produces:
//! [`Signed`] is made only by a node's own `sign`, which stamps its own id, and the
//! Byzantine behaviours below sign through the same function, so a liar lies in its own
//! name only. A message sent directly must carry its sender's signature (`by == from`);
//! certificates relay others' signed statements (prepares, view-changes, client
//! requests), which a receiver checks for the right signers, views and digests. A
//! pre-prepare carries the client's signed request, so a primary cannot invent one.
//!
//! **Byzantine replicas** (`byzantine` fault events, `on_byzantine`): `equivocate` (a
//! primary pre-prepares a request for one half of the backups and another known request
//! at the same sequence number for the other half, with commits to match; a backup
//! prepares and commits the other digest to half of the replicas), `wrong-digest` (its
//! pre-prepares, prepares and commits carry a digest that matches no request), `silent`
//! (sends nothing), `conflicting-views` (every view-change timeout it votes VIEW-CHANGE
//! for the next view to half of the replicas and for the one after to the other half,
//! with no certificates). A Byzantine client (any behaviour but `silent`) sends two
//! different values under one request number to the two halves of the replicas.
//!
//! **Durability.** A replica syncs what it must not take back (its view, the digest it
//! accepted per view and sequence number, its prepared certificates, how far it
//! executed) before any message leaves; what it received is volatile.
//!
//! **Variants.** `correct`: n >= 3f + 1, quorums of 2f + 1. `small-quorum`: n = 3f with
//! quorums of n - f = 2f, which two can share only a Byzantine replica: with an
//! equivocating primary two halves commit different requests at one sequence number
//! (`agreement`). `small-cluster`: n = 3f with quorums of 2f + 1 = n: safe, but one silent
//! or crashed replica stops every decision (`decision-liveness`). Both run on any cluster of
//! at least 3f replicas: the first 3f form the group and any others stand by, taking no
//! part (so `tenure fuzz --protocol pbft --variant small-quorum` runs on the built-in 4).
//!
//! **Left out** (said so): checkpoints and garbage collection (§4.3; O covers every
//! sequence number from 1, and logs grow), state transfer (a replica that missed a
//! commit stays behind), MACs and the read-only and tentative-execution optimisations
//! (§5), request batching. Client requests go to every replica at once (§4.1 sends them
//! to the primary and multicasts only a retransmission), so backups start their timers
//! at once; parameter `to_primary` does as §4.1 (the model checker's settings turn it
//! on: fewer messages in flight).
//!
//! **Model checking** ([`Configurable::model`]): two clients with one request each, one
//! replica turned Byzantine at any step with any behaviour (f = 1), views up to 1.
//! `small-quorum`'s 11-step counterexample (an equivocating primary) is beyond
//! breadth-first search here and is found by random walks, shrunk to those 11 steps.
//!
//! **Observations.** A client records `Proposes { instance: its request number, value }`
//! as it sends a request (values are unique: `(client + 1) x 1,000,000 + number`). A
//! replica records `Decides { instance: seq, value }` when it executes a client request
//! (a null request records nothing), `Leader { term: view }` as the primary of a view it
//! enters and `Follower { term: view, leader }` as a backup.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{
    Byzantine, Cluster, Configurable, Env, HumanDuration, Limit, NodeId, Observation, ParamError,
    Protocol, ProtocolInfo, RoleInfo, Roles, StorageExt, VariantInfo,
};

type E<'a> = &'a mut dyn Env<Msg, Timer>;

/// A request's digest; the null request's is 0.
pub type Digest = u64;
pub const NULL_DIGEST: Digest = 0;

/// A statement signed by `by`: made only by [`sign`], with the signer's own id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signed<T> {
    pub by: NodeId,
    pub body: T,
}

/// The one way to sign: in one's own name.
fn sign<T>(me: NodeId, body: T) -> Signed<T> {
    Signed { by: me, body }
}

/// A client's request: its `t`-th, with `value`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Req {
    pub client: NodeId,
    pub t: u64,
    pub value: u64,
}

/// A request's digest (never 0).
pub fn digest(r: &Req) -> Digest {
    let mut x = u64::from(r.client.0)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(r.t.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(r.value.wrapping_mul(0x94D0_49BB_1331_11EB));
    x ^= x >> 31;
    x = x.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^= x >> 29;
    x.max(1)
}

fn digest_of(request: &Option<Signed<Req>>) -> Digest {
    request.as_ref().map_or(NULL_DIGEST, |r| digest(&r.body))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PrePrepare {
    pub view: u64,
    pub seq: u64,
    pub digest: Digest,
    /// The client's signed request; `None` for a null request (a new view's gap).
    pub request: Option<Signed<Req>>,
}

/// A prepare or a commit: which is said by the message that carries it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Vote {
    pub view: u64,
    pub seq: u64,
    pub digest: Digest,
}

/// A prepared certificate: a pre-prepare and `quorum - 1` matching prepares of backups.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cert {
    pub pp: Signed<PrePrepare>,
    pub prepares: Vec<Signed<Vote>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ViewChange {
    /// The view asked for.
    pub view: u64,
    pub prepared: Vec<Cert>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NewView {
    pub view: u64,
    pub vcs: Vec<Signed<ViewChange>>,
    pub pps: Vec<Signed<PrePrepare>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    Request(Signed<Req>),
    PrePrepare(Signed<PrePrepare>),
    Prepare(Signed<Vote>),
    Commit(Signed<Vote>),
    ViewChange(Signed<ViewChange>),
    NewView(Signed<NewView>),
    /// A replica executed the client's request `t` with `result` (sent directly: the
    /// network's sender authenticates it).
    Reply {
        view: u64,
        t: u64,
        result: u64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// A backup's view-change timer, for the view it was set in.
    View(u64),
    /// A conflicting-views liar's next pair of votes.
    Lie,
    /// A client's retransmission of request `t`.
    Retry(u64),
    /// A client's next request.
    Next,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PbftVariant {
    Correct,
    /// n = 3f, quorums of 2f.
    SmallQuorum,
    /// n = 3f, quorums of 2f + 1.
    SmallCluster,
}

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, strum::Display, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum PbftRole {
    Replica,
    Client,
}

static INFO: ProtocolInfo = ProtocolInfo::new(
    "pbft",
    "PBFT (Castro & Liskov 1999): 3f + 1 replicas tolerate f Byzantine ones; \
     pre-prepare, prepare, commit, view changes with prepared certificates",
    &[
        RoleInfo::new(
            "replica",
            "orders, executes and answers client requests; replica v mod n is \
             the primary of view v",
            4,
        ),
        RoleInfo::new(
            "client",
            "signs requests, sends them to every replica, accepts a result on \
             f + 1 matching replies",
            2,
        ),
    ],
    &[
        VariantInfo::new(
            "correct",
            "n >= 3f + 1 replicas, quorums of 2f + 1 (Castro & Liskov §4)",
        ),
        VariantInfo::new(
            "small-quorum",
            "n = 3f replicas with quorums of n - f = 2f: two quorums share only a \
             Byzantine replica, and an equivocating primary splits them",
        )
        .with_breaks(&["agreement"]),
        VariantInfo::new(
            "small-cluster",
            "n = 3f replicas with quorums of 2f + 1 = n: safe, but one silent or \
             crashed replica stops every decision",
        )
        .with_breaks(&["decision-liveness"]),
    ],
);

/// PBFT's parameters as a scenario's `[protocol.params]` table writes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PbftParams {
    /// How many Byzantine replicas it tolerates (the declared `max-byzantine`).
    pub f: u32,
    /// Requests per client, one after another (the next `interval` after a result).
    pub requests: u64,
    pub interval: HumanDuration,
    /// A client retransmits a request it has no result for after this long.
    pub retry: HumanDuration,
    /// A backup waiting for a request starts a view change after this long (doubled
    /// for every view that does not start in time).
    pub view_timeout: HumanDuration,
    /// A client sends a new request to the primary it believes current (of the highest
    /// view a reply named) and to every replica only when it retransmits, as §4.1 has
    /// it. Off by default (every request to every replica at once, so backups start
    /// their timers at once); the model checker turns it on: fewer messages in flight.
    pub to_primary: bool,
}

impl Default for PbftParams {
    fn default() -> Self {
        PbftParams {
            f: 1,
            requests: 20,
            interval: HumanDuration(Duration::from_millis(100)),
            retry: HumanDuration(Duration::from_millis(500)),
            view_timeout: HumanDuration(Duration::from_millis(400)),
            to_primary: false,
        }
    }
}

/// Everything a PBFT node needs to know about the run, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PbftConfig {
    pub variant: PbftVariant,
    pub f: u32,
    pub quorum: usize,
    pub requests: u64,
    pub interval: Duration,
    pub retry: Duration,
    pub view_timeout: Duration,
    pub to_primary: bool,
    pub roles: Roles<PbftRole>,
    pub replicas: Vec<NodeId>,
    pub clients: Vec<NodeId>,
}

impl PbftConfig {
    fn n(&self) -> usize {
        self.replicas.len()
    }

    pub fn primary(&self, view: u64) -> NodeId {
        self.replicas[(view % self.n() as u64) as usize]
    }

    fn is_client(&self, node: NodeId) -> bool {
        self.clients.contains(&node)
    }

    /// A client's request, signed by that client.
    fn valid_request(&self, r: &Signed<Req>) -> bool {
        self.is_client(r.by) && r.body.client == r.by
    }

    /// A pre-prepare signed by its view's primary whose digest is its request's.
    fn valid_pp(&self, pp: &Signed<PrePrepare>) -> bool {
        pp.by == self.primary(pp.body.view)
            && pp.body.digest == digest_of(&pp.body.request)
            && pp
                .body
                .request
                .as_ref()
                .is_none_or(|r| self.valid_request(r))
    }

    /// A prepared certificate from a view before `before`.
    fn valid_cert(&self, c: &Cert, before: u64) -> bool {
        let pp = &c.pp.body;
        if pp.view >= before || !self.valid_pp(&c.pp) {
            return false;
        }
        let signers: BTreeSet<NodeId> = c
            .prepares
            .iter()
            .filter(|p| {
                p.by != self.primary(pp.view)
                    && self.replicas.contains(&p.by)
                    && p.body
                        == Vote {
                            view: pp.view,
                            seq: pp.seq,
                            digest: pp.digest,
                        }
            })
            .map(|p| p.by)
            .collect();
        signers.len() + 1 >= self.quorum
    }

    fn valid_vc(&self, vc: &Signed<ViewChange>) -> bool {
        self.replicas.contains(&vc.by)
            && vc
                .body
                .prepared
                .iter()
                .all(|c| self.valid_cert(c, vc.body.view))
    }

    /// O: a pre-prepare for view `view` at every sequence number up to the highest in
    /// any certificate of `vcs`, re-issuing the request of the highest-view
    /// certificate, else a null request (§4.4).
    fn new_view_pps(&self, view: u64, vcs: &[Signed<ViewChange>]) -> Vec<PrePrepare> {
        let mut best: BTreeMap<u64, &PrePrepare> = BTreeMap::new();
        for c in vcs.iter().flat_map(|vc| &vc.body.prepared) {
            let pp = &c.pp.body;
            if best.get(&pp.seq).is_none_or(|b| b.view < pp.view) {
                best.insert(pp.seq, pp);
            }
        }
        let max = best.keys().next_back().copied().unwrap_or(0);
        (1..=max)
            .map(|seq| match best.get(&seq) {
                Some(pp) => PrePrepare {
                    view,
                    seq,
                    digest: pp.digest,
                    request: pp.request.clone(),
                },
                None => PrePrepare {
                    view,
                    seq,
                    digest: NULL_DIGEST,
                    request: None,
                },
            })
            .collect()
    }
}

/// What a replica syncs before any message leaves: this (its view, how far it executed),
/// the current view's accepted digests and each prepared certificate under keys of
/// their own, each written only when it changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Durable {
    pub view: u64,
    /// In a view change towards `view` (not yet in it).
    pub changing: bool,
    /// The last view it was in (for the doubling view-change timeout).
    pub normal_view: u64,
    /// The primary's next sequence number.
    pub next_seq: u64,
    /// view -> seq -> the digest it accepted (pre-prepared) there; only the current
    /// view's is kept (stored under its own key).
    #[serde(skip)]
    pub accepted: BTreeMap<u64, BTreeMap<u64, Digest>>,
    /// seq -> its highest-view prepared certificate (each stored under its own key).
    #[serde(skip)]
    pub prepared: BTreeMap<u64, Cert>,
    /// The highest sequence number with a stored certificate.
    pub prepared_upto: u64,
    pub last_exec: u64,
    /// client -> (the last request number executed, its result).
    pub executed: BTreeMap<NodeId, (u64, u64)>,
}

const DURABLE_KEY: &str = "pbft";
const ACCEPTED_KEY: &str = "pbft-accepted";

fn cert_key(seq: u64) -> String {
    format!("pbft-prepared-{seq}")
}

/// Votes and the pre-prepare for one (view, seq).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Slot {
    pub pp: Option<Signed<PrePrepare>>,
    pub prepares: Vec<Signed<Vote>>,
    pub commits: Vec<Signed<Vote>>,
    pub commit_sent: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Replica {
    me: NodeId,
    byz: Option<Byzantine>,
    d: Durable,
    /// The durable state changed since it was last synced.
    dirty: bool,
    /// The current view's accepted digests changed since last synced.
    dirty_accepted: bool,
    /// The certificates that changed since last synced.
    dirty_prepared: BTreeSet<u64>,
    /// client -> t -> the request (the first received under that number).
    requests: BTreeMap<NodeId, BTreeMap<u64, Signed<Req>>>,
    log: BTreeMap<u64, BTreeMap<u64, Slot>>,
    committed: BTreeMap<u64, Option<Signed<Req>>>,
    vcs: BTreeMap<u64, BTreeMap<NodeId, Signed<ViewChange>>>,
    /// The primary: requests pre-prepared in the current view.
    assigned: BTreeSet<(NodeId, u64)>,
    timer_on: bool,
    outbox: Vec<(NodeId, Msg)>,
    /// Pre-prepares, prepares and commits of a view it has not entered yet (they can
    /// overtake the NEW-VIEW): taken when it enters that view.
    early: Vec<(NodeId, Msg)>,
}

/// The most early messages a replica keeps.
const EARLY_MAX: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    me: NodeId,
    byz: Option<Byzantine>,
    t: u64,
    done: bool,
    /// replica -> result, for request `t`.
    replies: BTreeMap<NodeId, u64>,
    /// The highest view any reply named: its primary is the one a `to_primary` client
    /// sends a new request to.
    view: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pbft {
    Replica {
        config: Box<PbftConfig>,
        r: Box<Replica>,
    },
    Client {
        config: Box<PbftConfig>,
        c: Client,
    },
    /// A replica node outside the group (`small-quorum` and `small-cluster` on a cluster
    /// of more than 3f replicas: the first 3f form the group): it takes no part.
    Spare,
}

impl Replica {
    fn send(&mut self, to: NodeId, msg: Msg) {
        self.outbox.push((to, msg));
    }

    /// Syncs what changed, then lets the handler's messages out (none if the sync
    /// failed: they would promise what the disk does not hold). A silent liar sends
    /// nothing.
    fn flush(&mut self, env: E<'_>) {
        let out = std::mem::take(&mut self.outbox);
        if self.dirty || self.dirty_accepted || !self.dirty_prepared.is_empty() {
            if self.dirty {
                env.store(DURABLE_KEY, &self.d);
            }
            if self.dirty_accepted {
                let view = self.d.view;
                env.store(ACCEPTED_KEY, &(view, self.d.accepted.get(&view)));
            }
            for &seq in &self.dirty_prepared {
                env.store(&cert_key(seq), &self.d.prepared[&seq]);
            }
            if env.sync().is_err() {
                return;
            }
            self.dirty = false;
            self.dirty_accepted = false;
            self.dirty_prepared.clear();
        }
        if self.byz == Some(Byzantine::Silent) {
            return;
        }
        for (to, msg) in out {
            env.send(to, msg);
        }
    }

    fn others(&self, config: &PbftConfig) -> Vec<NodeId> {
        config
            .replicas
            .iter()
            .copied()
            .filter(|&r| r != self.me)
            .collect()
    }

    /// The other replicas in two halves (the first the larger), for liars.
    fn halves(&self, config: &PbftConfig, except: NodeId) -> (Vec<NodeId>, Vec<NodeId>) {
        let rest: Vec<NodeId> = self
            .others(config)
            .into_iter()
            .filter(|&r| r != except)
            .collect();
        let cut = rest.len().div_ceil(2);
        (rest[..cut].to_vec(), rest[cut..].to_vec())
    }

    /// Another known request than `d`'s, for an equivocating liar.
    fn alternative(&self, d: Digest) -> Option<Signed<Req>> {
        self.requests
            .values()
            .flat_map(|m| m.values())
            .rev()
            .find(|r| digest(&r.body) != d)
            .cloned()
    }

    fn slot(&mut self, view: u64, seq: u64) -> &mut Slot {
        self.log.entry(view).or_default().entry(seq).or_default()
    }

    fn normal(&self) -> bool {
        !self.d.changing
    }

    fn pending(&self) -> bool {
        self.requests.iter().any(|(c, m)| {
            let done = self.d.executed.get(c).map_or(0, |e| e.0);
            m.keys().next_back().is_some_and(|&t| t > done)
        })
    }

    fn timeout(&self, config: &PbftConfig) -> Duration {
        let k = self.d.view.saturating_sub(self.d.normal_view).min(6) as u32;
        config.view_timeout * 2u32.pow(k)
    }

    /// A backup waiting for a request keeps a timer; one that waits for nothing stops
    /// it (§4.4).
    fn arm(&mut self, config: &PbftConfig, env: E<'_>) {
        if self.d.changing || config.primary(self.d.view) == self.me {
            return;
        }
        if self.pending() {
            if !self.timer_on {
                self.timer_on = true;
                env.set_timer(Timer::View(self.d.view), self.timeout(config));
            }
        } else if self.timer_on {
            self.timer_on = false;
            env.cancel_timer(&Timer::View(self.d.view));
        }
    }

    fn dispatch(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, msg: Msg) {
        let view = match &msg {
            Msg::PrePrepare(pp) => Some(pp.body.view),
            Msg::Prepare(v) | Msg::Commit(v) => Some(v.body.view),
            _ => None,
        };
        if let Some(view) = view {
            if view > self.d.view || (view == self.d.view && self.d.changing) {
                if self.early.len() < EARLY_MAX {
                    self.early.push((from, msg));
                }
                return;
            }
        }
        match msg {
            Msg::Request(req) => self.on_request(config, env, from, req),
            Msg::PrePrepare(pp) => {
                if pp.by == from {
                    self.accept_pp(config, env, pp)
                }
            }
            Msg::Prepare(p) => self.on_prepare(config, env, from, p),
            Msg::Commit(c) => self.on_commit(config, env, from, c),
            Msg::ViewChange(vc) => self.on_view_change(config, env, from, vc),
            Msg::NewView(nv) => self.on_new_view(config, env, from, nv),
            Msg::Reply { .. } => {}
        }
    }

    fn on_request(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, r: Signed<Req>) {
        if r.by != from || !config.valid_request(&r) {
            return;
        }
        let (client, t) = (r.body.client, r.body.t);
        if let Some(&(done, result)) = self.d.executed.get(&client) {
            if t == done {
                let view = self.d.view;
                self.send(client, Msg::Reply { view, t, result });
            }
            if t <= done {
                return;
            }
        }
        self.requests
            .entry(client)
            .or_default()
            .entry(t)
            .or_insert(r);
        self.assign(config, env);
        self.arm(config, env);
    }

    /// The primary pre-prepares every known request not executed nor pre-prepared in
    /// this view.
    fn assign(&mut self, config: &PbftConfig, env: E<'_>) {
        if !self.normal() || config.primary(self.d.view) != self.me {
            return;
        }
        let todo: Vec<Signed<Req>> = self
            .requests
            .iter()
            .flat_map(|(c, m)| {
                let done = self.d.executed.get(c).map_or(0, |e| e.0);
                m.range(done + 1..).map(|(_, r)| r.clone())
            })
            .filter(|r| !self.assigned.contains(&(r.body.client, r.body.t)))
            .collect();
        for r in todo {
            self.assigned.insert((r.body.client, r.body.t));
            self.d.next_seq += 1;
            let seq = self.d.next_seq;
            self.dirty = true;
            self.pre_prepare(config, env, seq, r);
        }
    }

    fn pre_prepare(&mut self, config: &PbftConfig, env: E<'_>, seq: u64, r: Signed<Req>) {
        let view = self.d.view;
        let d = digest(&r.body);
        let pp = |digest: Digest, r: &Signed<Req>, me| {
            sign(
                me,
                PrePrepare {
                    view,
                    seq,
                    digest,
                    request: Some(r.clone()),
                },
            )
        };
        let honest = pp(d, &r, self.me);
        self.accept_pp(config, env, honest.clone());
        match self.byz {
            Some(Byzantine::Equivocate) => {
                let (a, b) = self.halves(config, self.me);
                let alt = self.alternative(d);
                for to in a {
                    self.send(to, Msg::PrePrepare(honest.clone()));
                    self.send(
                        to,
                        Msg::Commit(sign(
                            self.me,
                            Vote {
                                view,
                                seq,
                                digest: d,
                            },
                        )),
                    );
                }
                for to in b {
                    match &alt {
                        Some(alt) => {
                            let ad = digest(&alt.body);
                            self.send(to, Msg::PrePrepare(pp(ad, alt, self.me)));
                            self.send(
                                to,
                                Msg::Commit(sign(
                                    self.me,
                                    Vote {
                                        view,
                                        seq,
                                        digest: ad,
                                    },
                                )),
                            );
                        }
                        None => self.send(to, Msg::PrePrepare(honest.clone())),
                    }
                }
            }
            Some(Byzantine::WrongDigest) => {
                let wrong = pp(d ^ 0xDEAD, &r, self.me);
                for to in self.others(config) {
                    self.send(to, Msg::PrePrepare(wrong.clone()));
                }
            }
            _ => {
                for to in self.others(config) {
                    self.send(to, Msg::PrePrepare(honest.clone()));
                }
            }
        }
    }

    /// Multicasts a prepare or a commit (and takes its own), lying as it must.
    fn vote(&mut self, config: &PbftConfig, env: E<'_>, commit: bool, v: Vote) {
        let wrap = |s: Signed<Vote>| {
            if commit {
                Msg::Commit(s)
            } else {
                Msg::Prepare(s)
            }
        };
        let mine = sign(self.me, v.clone());
        if commit {
            self.on_commit(config, env, self.me, mine.clone());
        } else {
            self.on_prepare(config, env, self.me, mine.clone());
        }
        match self.byz {
            Some(Byzantine::Equivocate) => {
                let (a, b) = self.halves(config, self.me);
                let other = self
                    .alternative(v.digest)
                    .map_or(v.digest ^ 1, |r| digest(&r.body));
                for to in a {
                    self.send(to, wrap(mine.clone()));
                }
                for to in b {
                    let lie = sign(
                        self.me,
                        Vote {
                            digest: other,
                            ..v.clone()
                        },
                    );
                    self.send(to, wrap(lie));
                }
            }
            Some(Byzantine::WrongDigest) => {
                let lie = sign(
                    self.me,
                    Vote {
                        digest: v.digest ^ 0xDEAD,
                        ..v.clone()
                    },
                );
                for to in self.others(config) {
                    self.send(to, wrap(lie.clone()));
                }
            }
            _ => {
                for to in self.others(config) {
                    self.send(to, wrap(mine.clone()));
                }
            }
        }
    }

    /// Takes a pre-prepare: the primary's own, one received, or one of a new view's O.
    fn accept_pp(&mut self, config: &PbftConfig, env: E<'_>, pp: Signed<PrePrepare>) {
        let (view, seq, d) = (pp.body.view, pp.body.seq, pp.body.digest);
        if view != self.d.view || !self.normal() || !config.valid_pp(&pp) {
            return;
        }
        let accepted = self.d.accepted.entry(view).or_default();
        match accepted.get(&seq) {
            Some(&other) if other != d => return, // it accepted another digest there
            Some(_) => {}
            None => {
                accepted.insert(seq, d);
                self.dirty_accepted = true;
            }
        }
        if let Some(r) = &pp.body.request {
            let done = self.d.executed.get(&r.body.client).map_or(0, |e| e.0);
            if r.body.t > done {
                self.requests
                    .entry(r.body.client)
                    .or_default()
                    .entry(r.body.t)
                    .or_insert_with(|| r.clone());
            }
        }
        let slot = self.slot(view, seq);
        if slot.pp.is_some() {
            return;
        }
        slot.pp = Some(pp);
        if config.primary(view) != self.me {
            self.vote(
                config,
                env,
                false,
                Vote {
                    view,
                    seq,
                    digest: d,
                },
            );
        }
        self.progress(config, env, view, seq);
        self.arm(config, env);
    }

    fn on_prepare(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, p: Signed<Vote>) {
        let (view, seq) = (p.body.view, p.body.seq);
        if p.by != from
            || !config.replicas.contains(&from)
            || from == config.primary(view)
            || view != self.d.view
            || !self.normal()
        {
            return;
        }
        let slot = self.slot(view, seq);
        if slot.prepares.contains(&p) {
            return;
        }
        slot.prepares.push(p);
        self.progress(config, env, view, seq);
    }

    fn on_commit(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, c: Signed<Vote>) {
        let (view, seq) = (c.body.view, c.body.seq);
        if c.by != from || !config.replicas.contains(&from) || view != self.d.view {
            return;
        }
        let slot = self.slot(view, seq);
        if slot.commits.contains(&c) {
            return;
        }
        slot.commits.push(c);
        self.progress(config, env, view, seq);
    }

    /// Prepared: commit. Committed-local: execute what is next (§4.2).
    fn progress(&mut self, config: &PbftConfig, env: E<'_>, view: u64, seq: u64) {
        let quorum = config.quorum;
        let primary = config.primary(view);
        let slot = self.slot(view, seq);
        let Some(pp) = slot.pp.clone() else {
            return;
        };
        let d = pp.body.digest;
        let matching = |votes: &[Signed<Vote>], skip: Option<NodeId>| -> Vec<Signed<Vote>> {
            let mut seen = BTreeSet::new();
            votes
                .iter()
                .filter(|v| v.body.digest == d && Some(v.by) != skip && seen.insert(v.by))
                .cloned()
                .collect()
        };
        let prepares = matching(&slot.prepares, Some(primary));
        if prepares.len() + 1 < quorum {
            return;
        }
        if !slot.commit_sent {
            slot.commit_sent = true;
            let cert = Cert {
                pp,
                prepares: prepares[..quorum - 1].to_vec(),
            };
            if self
                .d
                .prepared
                .get(&seq)
                .is_none_or(|c| c.pp.body.view < view)
            {
                self.d.prepared.insert(seq, cert);
                self.dirty_prepared.insert(seq);
                if seq > self.d.prepared_upto {
                    self.d.prepared_upto = seq;
                    self.dirty = true;
                }
            }
            self.vote(
                config,
                env,
                true,
                Vote {
                    view,
                    seq,
                    digest: d,
                },
            );
            return; // voting took its own commit, which came back here
        }
        if self.committed.contains_key(&seq) {
            return;
        }
        let slot = self.slot(view, seq);
        if matching(&slot.commits, None).len() < quorum {
            return;
        }
        let request = slot.pp.as_ref().and_then(|pp| pp.body.request.clone());
        self.committed.insert(seq, request);
        self.execute(config, env);
    }

    fn execute(&mut self, config: &PbftConfig, env: E<'_>) {
        while let Some(request) = self.committed.get(&(self.d.last_exec + 1)).cloned() {
            self.d.last_exec += 1;
            self.dirty = true;
            let seq = self.d.last_exec;
            let Some(r) = request else {
                continue; // a null request
            };
            let Req { client, t, value } = r.body;
            env.observe(Observation::Decides {
                instance: seq,
                value,
            });
            let done = self.d.executed.get(&client).map_or(0, |e| e.0);
            if t > done {
                self.d.executed.insert(client, (t, value));
                let view = self.d.view;
                self.send(
                    client,
                    Msg::Reply {
                        view,
                        t,
                        result: value,
                    },
                );
            }
        }
        self.arm(config, env);
    }

    fn start_view_change(&mut self, config: &PbftConfig, env: E<'_>, view: u64) {
        if view <= self.d.view && (self.d.changing || view < self.d.view) {
            return;
        }
        if self.timer_on {
            env.cancel_timer(&Timer::View(self.d.view));
        }
        if self.normal() {
            self.d.normal_view = self.d.view;
        }
        self.d.view = view;
        self.d.changing = true;
        self.dirty = true;
        let vc = sign(
            self.me,
            ViewChange {
                view,
                prepared: self.d.prepared.values().cloned().collect(),
            },
        );
        for to in self.others(config) {
            self.send(to, Msg::ViewChange(vc.clone()));
        }
        self.timer_on = true;
        env.set_timer(Timer::View(view), self.timeout(config));
        self.on_view_change(config, env, self.me, vc);
    }

    fn on_view_change(
        &mut self,
        config: &PbftConfig,
        env: E<'_>,
        from: NodeId,
        vc: Signed<ViewChange>,
    ) {
        let view = vc.body.view;
        if vc.by != from || view == 0 || !config.valid_vc(&vc) {
            return;
        }
        self.vcs.entry(view).or_default().entry(from).or_insert(vc);
        // f + 1 replicas ask for views above ours: join the smallest (§4.5.2).
        let ours = self.d.view + 1;
        let above: BTreeMap<NodeId, u64> = self
            .vcs
            .range(ours.max(1)..)
            .flat_map(|(&v, m)| m.keys().map(move |&n| (n, v)))
            .filter(|(n, _)| *n != self.me)
            .fold(BTreeMap::new(), |mut acc, (n, v)| {
                acc.entry(n).or_insert(v);
                acc
            });
        if above.len() > config.f as usize {
            let smallest = *above.values().min().expect("not empty");
            self.start_view_change(config, env, smallest);
        }
        self.try_new_view(config, env);
    }

    /// The new primary with `quorum` view-changes (its own among them) starts the view.
    fn try_new_view(&mut self, config: &PbftConfig, env: E<'_>) {
        let view = self.d.view;
        if !self.d.changing || config.primary(view) != self.me {
            return;
        }
        let Some(vcs) = self.vcs.get(&view) else {
            return;
        };
        if vcs.len() < config.quorum || !vcs.contains_key(&self.me) {
            return;
        }
        let vcs: Vec<Signed<ViewChange>> = vcs.values().take(config.quorum).cloned().collect();
        let pps: Vec<Signed<PrePrepare>> = config
            .new_view_pps(view, &vcs)
            .into_iter()
            .map(|pp| sign(self.me, pp))
            .collect();
        let nv = sign(
            self.me,
            NewView {
                view,
                vcs,
                pps: pps.clone(),
            },
        );
        for to in self.others(config) {
            self.send(to, Msg::NewView(nv.clone()));
        }
        self.enter_view(config, env, view, pps);
    }

    fn on_new_view(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, nv: Signed<NewView>) {
        let view = nv.body.view;
        if nv.by != from || from != config.primary(view) {
            return;
        }
        if view < self.d.view || (view == self.d.view && self.normal()) {
            return;
        }
        let signers: BTreeSet<NodeId> = nv
            .body
            .vcs
            .iter()
            .filter(|vc| vc.body.view == view && config.valid_vc(vc))
            .map(|vc| vc.by)
            .collect();
        if signers.len() < config.quorum || signers.len() != nv.body.vcs.len() {
            return;
        }
        let expected = config.new_view_pps(view, &nv.body.vcs);
        let given: Vec<&PrePrepare> = nv.body.pps.iter().map(|pp| &pp.body).collect();
        if given != expected.iter().collect::<Vec<_>>()
            || nv.body.pps.iter().any(|pp| pp.by != from)
        {
            return;
        }
        if self.timer_on {
            env.cancel_timer(&Timer::View(self.d.view));
            self.timer_on = false;
        }
        self.d.view = view;
        self.enter_view(config, env, view, nv.body.pps);
    }

    fn enter_view(
        &mut self,
        config: &PbftConfig,
        env: E<'_>,
        view: u64,
        pps: Vec<Signed<PrePrepare>>,
    ) {
        if self.timer_on {
            env.cancel_timer(&Timer::View(self.d.view));
            self.timer_on = false;
        }
        self.d.changing = false;
        self.d.normal_view = view;
        self.dirty = true;
        self.dirty_accepted = true;
        self.d.accepted.retain(|&v, _| v >= view);
        self.assigned.clear();
        let primary = config.primary(view);
        if primary == self.me {
            self.d.next_seq = pps.len() as u64;
            env.observe(Observation::Leader { term: view });
        } else {
            env.observe(Observation::Follower {
                term: view,
                leader: Some(primary),
            });
        }
        for pp in pps {
            if let Some(r) = &pp.body.request {
                self.assigned.insert((r.body.client, r.body.t));
            }
            self.accept_pp(config, env, pp);
        }
        self.assign(config, env);
        // What arrived for this view before it entered it, now; later views' stay.
        let early = std::mem::take(&mut self.early);
        for (from, msg) in early {
            self.dispatch(config, env, from, msg);
        }
        self.early.retain(|(_, m)| match m {
            Msg::PrePrepare(pp) => pp.body.view > view,
            Msg::Prepare(v) | Msg::Commit(v) => v.body.view > view,
            _ => false,
        });
        self.arm(config, env);
    }

    /// A conflicting-views liar votes for the next two views at once.
    fn lie_about_views(&mut self, config: &PbftConfig, env: E<'_>) {
        let (a, b) = self.halves(config, self.me);
        let base = self.d.view;
        for (to, view) in a
            .into_iter()
            .map(|n| (n, base + 1))
            .chain(b.into_iter().map(|n| (n, base + 2)))
        {
            let vc = sign(
                self.me,
                ViewChange {
                    view,
                    prepared: Vec::new(),
                },
            );
            self.send(to, Msg::ViewChange(vc));
        }
        env.set_timer(Timer::Lie, config.view_timeout);
    }
}

impl Client {
    fn value(&self) -> u64 {
        (u64::from(self.me.0) + 1) * 1_000_000 + self.t
    }

    /// Sends request `t`: to every replica, or with `to_primary` (§4.1) first to the
    /// primary it believes current and to every replica only when it retransmits
    /// (`broadcast`).
    fn send_request(&mut self, config: &PbftConfig, env: E<'_>, broadcast: bool) {
        if self.byz == Some(Byzantine::Silent) {
            return;
        }
        let primary = config.primary(self.view);
        let honest = Req {
            client: self.me,
            t: self.t,
            value: self.value(),
        };
        let half = config.replicas.len().div_ceil(2);
        for (i, &to) in config.replicas.iter().enumerate() {
            if config.to_primary && !broadcast && to != primary {
                continue;
            }
            let body = match self.byz {
                Some(_) if i >= half => Req {
                    value: honest.value + 500_000,
                    ..honest.clone()
                },
                _ => honest.clone(),
            };
            env.send(to, Msg::Request(sign(self.me, body)));
        }
        env.set_timer(Timer::Retry(self.t), config.retry);
    }

    fn next(&mut self, config: &PbftConfig, env: E<'_>) {
        if self.t >= config.requests {
            return;
        }
        self.t += 1;
        self.done = false;
        self.replies.clear();
        if env.store_synced(CLIENT_KEY, &self.t).is_err() {
            self.t -= 1;
            env.set_timer(Timer::Next, config.interval);
            return;
        }
        self.propose(config, env);
    }

    /// Records the current request as proposed and sends it. Also after a restart: the
    /// crash may have come while the number was being synced, before the record (a
    /// record made twice proposes nothing new).
    fn propose(&mut self, config: &PbftConfig, env: E<'_>) {
        env.observe(Observation::Proposes {
            instance: self.t,
            value: self.value(),
        });
        if self.byz.is_some_and(|b| b != Byzantine::Silent) {
            env.observe(Observation::Proposes {
                instance: self.t,
                value: self.value() + 500_000,
            });
        }
        self.send_request(config, env, false);
    }

    fn on_reply(&mut self, config: &PbftConfig, env: E<'_>, from: NodeId, reply: (u64, u64, u64)) {
        let (view, t, result) = reply;
        if !config.replicas.contains(&from) {
            return;
        }
        self.view = self.view.max(view);
        if t != self.t || self.done {
            return;
        }
        self.replies.insert(from, result);
        let matching = self.replies.values().filter(|&&r| r == result).count();
        if matching > config.f as usize {
            self.done = true;
            env.cancel_timer(&Timer::Retry(t));
            env.set_timer(Timer::Next, config.interval);
        }
    }
}

const CLIENT_KEY: &str = "pbft-client";

impl Protocol for Pbft {
    type Msg = Msg;
    type Timer = Timer;
    type Config = PbftConfig;

    fn new(config: &PbftConfig, me: NodeId, _cluster: &Cluster) -> Pbft {
        let config = Box::new(config.clone());
        match config.roles.get(me) {
            PbftRole::Replica if !config.replicas.contains(&me) => Pbft::Spare,
            PbftRole::Replica => Pbft::Replica {
                config,
                r: Box::new(Replica {
                    me,
                    byz: None,
                    d: Durable::default(),
                    dirty: false,
                    dirty_accepted: false,
                    dirty_prepared: BTreeSet::new(),
                    requests: BTreeMap::new(),
                    log: BTreeMap::new(),
                    committed: BTreeMap::new(),
                    vcs: BTreeMap::new(),
                    assigned: BTreeSet::new(),
                    timer_on: false,
                    outbox: Vec::new(),
                    early: Vec::new(),
                }),
            },
            PbftRole::Client => Pbft::Client {
                config,
                c: Client {
                    me,
                    byz: None,
                    t: 0,
                    done: true,
                    replies: BTreeMap::new(),
                    view: 0,
                },
            },
        }
    }

    fn on_start(&mut self, env: E<'_>) {
        match self {
            Pbft::Replica { config, r } => {
                r.d = env.load(DURABLE_KEY).unwrap_or_default();
                let accepted: Option<(u64, Option<BTreeMap<u64, Digest>>)> = env.load(ACCEPTED_KEY);
                if let Some((view, Some(map))) = accepted {
                    if view == r.d.view {
                        r.d.accepted.insert(view, map);
                    }
                }
                for seq in 1..=r.d.prepared_upto {
                    if let Some(cert) = env.load::<Cert>(&cert_key(seq)) {
                        r.d.prepared.insert(seq, cert);
                    }
                }
                let view = r.d.view;
                if r.d.changing {
                    r.timer_on = true;
                    env.set_timer(Timer::View(view), r.timeout(config));
                } else if config.primary(view) == r.me {
                    env.observe(Observation::Leader { term: view });
                } else {
                    env.observe(Observation::Follower {
                        term: view,
                        leader: Some(config.primary(view)),
                    });
                }
            }
            Pbft::Client { config, c } => {
                c.t = env.load(CLIENT_KEY).unwrap_or(0);
                if c.t == 0 {
                    c.next(config, env);
                } else {
                    // Again the request it had sent (the same value: replicas that
                    // executed it answer again).
                    c.done = false;
                    c.propose(config, env);
                }
            }
            Pbft::Spare => {}
        }
    }

    fn on_message(&mut self, env: E<'_>, from: NodeId, msg: Msg) {
        match self {
            Pbft::Replica { config, r } => {
                r.dispatch(config, env, from, msg);
                r.flush(env);
            }
            Pbft::Client { config, c } => {
                if let Msg::Reply { view, t, result } = msg {
                    c.on_reply(config, env, from, (view, t, result));
                }
            }
            Pbft::Spare => {}
        }
    }

    fn on_timer(&mut self, env: E<'_>, timer: Timer) {
        match (self, timer) {
            (Pbft::Replica { config, r }, Timer::View(view)) => {
                if view == r.d.view {
                    r.timer_on = false;
                    if r.d.changing || r.pending() {
                        r.start_view_change(config, env, view + 1);
                    }
                }
                r.flush(env);
            }
            (Pbft::Replica { config, r }, Timer::Lie) => {
                if r.byz == Some(Byzantine::ConflictingViews) {
                    r.lie_about_views(config, env);
                }
                r.flush(env);
            }
            (Pbft::Client { config, c }, Timer::Retry(t)) if t == c.t && !c.done => {
                c.send_request(config, env, true);
            }
            (Pbft::Client { config, c }, Timer::Next) => c.next(config, env),
            _ => {}
        }
    }

    fn on_byzantine(&mut self, env: E<'_>, behaviour: Byzantine) {
        match self {
            Pbft::Replica { config, r } => {
                r.byz = Some(behaviour);
                if behaviour == Byzantine::ConflictingViews {
                    r.lie_about_views(config, env);
                    r.flush(env);
                }
            }
            Pbft::Client { c, .. } => c.byz = Some(behaviour),
            Pbft::Spare => {}
        }
    }
}

impl Configurable for Pbft {
    type Params = PbftParams;
    type Variant = PbftVariant;
    type Role = PbftRole;

    fn info() -> &'static ProtocolInfo {
        &INFO
    }

    fn configure(
        params: PbftParams,
        variant: PbftVariant,
        cluster: &Cluster,
    ) -> Result<PbftConfig, ParamError> {
        let roles: Roles<PbftRole> = Roles::of(cluster)?;
        let of =
            |role| -> Vec<NodeId> { cluster.nodes().filter(|&n| roles.get(n) == role).collect() };
        let (replicas, clients) = (of(PbftRole::Replica), of(PbftRole::Client));
        if params.f == 0 {
            return Err(ParamError::new(
                "f",
                "tolerate at least one Byzantine replica",
            ));
        }
        let f = params.f as usize;
        let n = replicas.len();
        let (want, quorum) = match variant {
            PbftVariant::Correct => (3 * f + 1, 2 * f + 1),
            PbftVariant::SmallQuorum => (3 * f, 2 * f),
            PbftVariant::SmallCluster => (3 * f, 2 * f + 1),
        };
        // `small-quorum` and `small-cluster` are groups of exactly 3f: on a larger
        // cluster (the built-in one has 4 replicas) the first 3f form the group and the
        // others stand by (`Pbft::Spare`), so `--protocol pbft --variant small-quorum`
        // runs the variant.
        let fits = n >= want;
        let mut replicas = replicas;
        if variant != PbftVariant::Correct {
            replicas.truncate(want);
        }
        if !fits {
            return Err(ParamError::new(
                "cluster",
                format!(
                    "pbft/{variant} with f = {f} needs at least {want} replicas; the cluster has {n}"
                ),
            ));
        }
        if clients.is_empty() {
            return Err(ParamError::new("cluster", "pbft needs at least one client"));
        }
        if params.requests == 0 {
            return Err(ParamError::new("requests", "send at least one request"));
        }
        for (name, d) in [
            ("interval", params.interval),
            ("retry", params.retry),
            ("view_timeout", params.view_timeout),
        ] {
            if d.0.is_zero() {
                return Err(ParamError::new(name, "must be above zero"));
            }
        }
        Ok(PbftConfig {
            variant,
            f: params.f,
            quorum,
            requests: params.requests,
            interval: params.interval.0,
            retry: params.retry.0,
            view_timeout: params.view_timeout.0,
            to_primary: params.to_primary,
            roles,
            replicas,
            clients,
        })
    }

    fn promises(_config: &PbftConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        // Safety only (Castro & Liskov §4.5.1 holds whatever the timing); liveness
        // (§4.5.2) needs at most f faulty replicas of any kind, crashed ones included,
        // and this model has no state transfer (see the module's "Left out").
        vec![
            tenure_core::Promise::new("agreement"),
            tenure_core::Promise::new("validity").with("by_value", true),
        ]
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
        const BOUNDS: Bounds = Bounds::DEFAULT
            .with_max_depth(6)
            .with_max_byzantine(1)
            .with_clock(ClockModel::Frozen)
            .with_seen(SeenModel::All)
            .with_timers(TimerModel::Quiet);
        // An equivocating primary splits two quorums of two: 11 steps, all explored.
        const VARIANT_BOUNDS: &[(&str, Bounds)] = &[(
            "small-quorum",
            BOUNDS.with_max_depth(11).with_max_states(10_000_000),
        )];
        Ok(ModelSpec::new(
            "two clients with one request each, sent to the primary first (`to_primary`, \
             as §4.1), and four replicas (the first three form the group of `small-quorum` \
             and `small-cluster`, the fourth stands by: `--roles replica=3` leaves it out), \
             of which the environment may turn one (f = 1, the declared `max-byzantine`) \
             Byzantine at any step, with any of the four behaviours; messages delivered in \
             any order, timers firing when no message is in flight, views up to 1. \
             `small-quorum`'s shortest counterexample (an equivocating primary) is 11 \
             steps, which its own bounds reach: every state to depth 10, 3.9 million \
             of them (about 2.5 minutes and 200 MB in a release build)",
            &[("replica", 4), ("client", 2)],
        )
        .with_out_of_scope(&[(
            "small-cluster",
            "a liveness bug (one silent replica stops every decision): the explorer judges \
             safety only; scenarios/pbft/ and `tenure fuzz --profile byzantine` show it",
        )])
        .with_bounds(BOUNDS)
        .with_variant_bounds(VARIANT_BOUNDS)
        .with_term_key("pbft/view")
        .with_max_term(1)
        .with_checks(&["agreement", "validity"])
        .with_check_params(&[("validity", r#"{"by_value": true}"#)])
        .with_params(r#"{"requests": 1, "to_primary": true}"#)
        .with_walk_params(r#"{"requests": 2, "to_primary": true}"#))
    }

    fn assumptions(config: &PbftConfig) -> tenure_core::Assumptions {
        tenure_core::Assumptions::new().with_max_byzantine(Limit::new(
            config.f,
            format!(
                "f = {}: {} replicas with quorums of {}, any two of which share {} \
                 replica{}, at least one of them honest",
                config.f,
                config.n(),
                config.quorum,
                (2 * config.quorum).saturating_sub(config.n()),
                if (2 * config.quorum).saturating_sub(config.n()) == 1 {
                    ""
                } else {
                    "s"
                }
            ),
        ))
    }
}
