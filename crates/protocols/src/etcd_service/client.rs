//! A lock client of the replicated service: its lease, the `client/v3/concurrency`
//! `Mutex` recipe (as [`crate::etcd_lock`]'s client, v3.5.0+ with the own-key check),
//! and the workload; every request goes to the server it believes leads.

use super::{Answer, EtcdServiceConfig, LeaseId, Msg, Op, Timer};
use crate::workload::{LockApi, Workload};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{Cluster, Env, LocalTime, NodeId};

type E<'a> = dyn Env<Msg, Timer> + 'a;

/// What the recipe tells the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Acquired(u64),
    Lost,
    Failed,
}

/// The lease and lock half of a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockClient {
    servers: Vec<NodeId>,
    guess: usize,
    ttl: Duration,
    /// A request unanswered this long goes to the next server: one keep-alive period.
    retry_after: Duration,
    prefix: String,
    /// This incarnation's stream: the high 32 bits of every request id it sends, drawn
    /// at start. In etcd a watch (and every other call) lives on a gRPC stream that dies
    /// with the client process; a restarted client opens new streams and never receives
    /// an answer meant for its previous life. Numbering requests from 1 again in one id
    /// space let a dead incarnation's watch answer (`KeyDeleted` for its request 4) pass
    /// for the new incarnation's request 4, whose real answer was then dropped: the
    /// client waited for ever (`lock-liveness`, power seed 1351 of `correct`).
    stream: u64,
    req: u64,
    /// Requests not yet answered: id -> (operation, when and to whom last sent).
    inflight: BTreeMap<u64, (Op, LocalTime, NodeId)>,
    lease: Option<LeaseId>,
    /// The outstanding grant or keep-alive: its request id and first send time.
    lease_request: Option<(u64, LocalTime)>,
    lease_deadline: Option<LocalTime>,
    want: bool,
    key: Option<(String, u64)>,
    /// The outstanding put or predecessor request.
    pending: Option<u64>,
    /// The predecessor watched, and the watch's request id.
    watching: Option<(String, u64)>,
    holding: bool,
    waited: bool,
    checking: Option<u64>,
    /// Whether this client orphans its session once (the first client, if the
    /// `orphan_session` parameter is on).
    orphans: bool,
    /// The lease this incarnation orphaned: no more keep-alives for it.
    orphaned: Option<LeaseId>,
}

/// A client node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    pub lock: LockClient,
    pub workload: Workload,
}

impl LockClient {
    pub fn holding(&self) -> bool {
        self.holding
    }
    pub fn lease(&self) -> Option<LeaseId> {
        self.lease
    }

    fn leader(&self) -> NodeId {
        self.servers[self.guess % self.servers.len()]
    }

    /// Sends a new request to the server we believe leads.
    fn request(&mut self, env: &mut E<'_>, op: Op) -> u64 {
        self.req += 1;
        let req = self.stream << 32 | self.req;
        let to = self.leader();
        self.inflight.insert(req, (op.clone(), env.monotonic(), to));
        env.send(to, Msg::Request { req, op });
        req
    }

    fn resend(&mut self, env: &mut E<'_>, req: u64) {
        let now = env.monotonic();
        let to = self.leader();
        if let Some((op, sent, server)) = self.inflight.get_mut(&req) {
            *sent = now;
            *server = to;
            env.send(
                to,
                Msg::Request {
                    req,
                    op: op.clone(),
                },
            );
        }
    }

    /// A watch lives on the member that took it: when we move to another member, the
    /// watch moves with us (an etcd client re-opens its watch stream on a new endpoint).
    fn follow_watch(&mut self, env: &mut E<'_>) {
        let leader = self.leader();
        if let Some((_, watch)) = &self.watching {
            let watch = *watch;
            if self
                .inflight
                .get(&watch)
                .is_some_and(|(_, _, to)| *to != leader)
            {
                self.resend(env, watch);
            }
        }
    }

    fn grant(&mut self, env: &mut E<'_>) {
        let req = self.request(env, Op::Grant { ttl: self.ttl });
        self.lease_request = Some((req, env.monotonic()));
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        self.stream = env.range_inclusive(1, u64::from(u32::MAX));
        self.guess = env.range_inclusive(0, self.servers.len() as u64 - 1) as usize;
        self.grant(env);
        // Processes start at different moments: keep-alive periods have their own phase.
        let first = env.duration_between(self.ttl / 12, self.ttl / 3);
        env.set_timer(Timer::KeepAlive, first);
        self.orphaned = None;
        if self.orphans {
            if let Some(after) = crate::util::first_client_stops_renewing(env, self.ttl) {
                env.set_timer(Timer::Orphan, after);
            }
        }
    }

    /// `Session.Orphan()`: stop keeping the lease alive, without revoking it. A client
    /// without a lease yet orphans the next one it is granted: it looks again one
    /// keep-alive period later.
    fn on_orphan_timer(&mut self, env: &mut E<'_>) {
        let Some(lease) = self.lease else {
            env.set_timer(Timer::Orphan, self.ttl / 3);
            return;
        };
        self.orphaned = Some(lease);
        if let Some((req, _)) = self.lease_request.take() {
            self.inflight.remove(&req);
        }
    }

    /// Every TTL/3: a keep-alive, and requests unanswered since the last tick go to the
    /// next server (the leader we knew may be gone).
    fn on_keepalive_timer(&mut self, env: &mut E<'_>) {
        env.set_timer(Timer::KeepAlive, self.ttl / 3);
        let now = env.monotonic();
        let leader = self.leader();
        let stale: Vec<(u64, bool)> = self
            .inflight
            .iter()
            .filter(|(_, (op, sent, _))| {
                !matches!(op, Op::KeepAlive { .. } | Op::WatchDelete { .. })
                    && sent.until(now) >= self.retry_after
            })
            .map(|(&req, &(_, _, to))| (req, to == leader))
            .collect();
        // The last keep-alive unanswered for a whole period: is the leader gone?
        let silent_leader = self
            .lease_request
            .and_then(|(req, _)| self.inflight.get(&req))
            .is_some_and(|(_, sent, to)| *to == leader && sent.until(now) >= self.retry_after);
        // A watch that has reported nothing for a TTL may have died with its server:
        // look again (etcd clients resume their watch streams).
        if let Some((_, watch)) = self.watching.clone() {
            let quiet = self
                .inflight
                .get(&watch)
                .is_some_and(|(_, sent, _)| sent.until(now) >= self.ttl);
            if quiet && self.pending.is_none() {
                self.inflight.remove(&watch);
                self.watching = None;
                self.look_for_predecessor(env);
            }
        }
        // Requests unanswered by the server we believe leads: try the next one.
        if silent_leader || stale.iter().any(|&(_, to_leader)| to_leader) {
            self.guess += 1;
        }
        for (req, _) in stale {
            self.resend(env, req);
        }
        self.follow_watch(env);
        let Some(lease) = self.lease else {
            if self.lease_request.is_none() {
                self.grant(env);
            }
            return;
        };
        if self.orphaned == Some(lease) {
            return; // orphaned: left to expire
        }
        if let Some((old, _)) = self.lease_request.take() {
            self.inflight.remove(&old);
        }
        let req = self.request(env, Op::KeepAlive { lease });
        self.lease_request = Some((req, now));
    }

    fn lease_good_until(&mut self, env: &mut E<'_>, sent_at: LocalTime, ttl: Duration) {
        let deadline = sent_at + ttl;
        self.lease_deadline = Some(deadline);
        env.set_timer(Timer::LeaseCheck, env.monotonic().until(deadline));
    }

    fn on_lease_check(&mut self, env: &mut E<'_>) -> Option<Change> {
        let deadline = self.lease_deadline?;
        if env.monotonic() < deadline {
            return None;
        }
        self.lease_lost(env)
    }

    fn lease_lost(&mut self, env: &mut E<'_>) -> Option<Change> {
        self.waited = false;
        self.checking = None;
        self.lease = None;
        self.lease_deadline = None;
        self.key = None;
        self.pending = None;
        self.watching = None;
        self.inflight
            .retain(|_, (op, _, _)| matches!(op, Op::Delete { .. }));
        self.lease_request = None;
        env.cancel_timer(&Timer::LeaseCheck);
        self.grant(env);
        if std::mem::take(&mut self.holding) {
            self.want = false;
            Some(Change::Lost)
        } else if std::mem::take(&mut self.want) {
            Some(Change::Failed)
        } else {
            None
        }
    }

    fn put(&mut self, env: &mut E<'_>) {
        let Some(lease) = self.lease else {
            return;
        };
        if self
            .inflight
            .values()
            .any(|(op, _, _)| matches!(op, Op::Delete { .. }))
        {
            // `Unlock` returns once its delete is done: a put racing a retried delete
            // of the same key could find the old key, then lose it to the delete.
            return; // put when the delete is answered
        }
        let key = format!("{}/{lease:x}", self.prefix);
        self.pending = Some(self.request(env, Op::PutIfAbsent { key, lease }));
    }

    fn look_for_predecessor(&mut self, env: &mut E<'_>) {
        let (_, before) = self.key.clone().expect("we have a key");
        let prefix = self.prefix.clone();
        self.pending = Some(self.request(env, Op::GetPredecessor { prefix, before }));
    }

    fn position(&self, server: NodeId) -> Option<usize> {
        self.servers.iter().position(|&s| s == server)
    }

    fn on_reply(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        req: u64,
        answer: Answer,
    ) -> Option<Change> {
        if let Answer::NotLeader(hint) = answer {
            if self.inflight.contains_key(&req) {
                // No leader known: the request is retried after its timeout.
                if let Some(p) = hint.filter(|&h| h != from).and_then(|h| self.position(h)) {
                    self.guess = p;
                    self.resend(env, req);
                    self.follow_watch(env);
                }
            }
            return None;
        }
        let (op, _, _) = self.inflight.remove(&req)?;
        if let Some(p) = self.position(from) {
            self.guess = p;
        }
        match (op, answer) {
            (_, Answer::Granted { lease, ttl }) => {
                let (pending, sent_at) = self.lease_request?;
                if pending != req || self.lease.is_some() {
                    return None; // a late grant: that lease expires unused
                }
                self.lease_request = None;
                self.lease = Some(lease);
                self.lease_good_until(env, sent_at, ttl);
                if self.want && self.key.is_none() {
                    self.put(env);
                }
                None
            }
            (Op::KeepAlive { lease }, Answer::KeepAlive { ttl }) if Some(lease) == self.lease => {
                let (pending, sent_at) = self.lease_request?;
                if pending != req {
                    return None;
                }
                self.lease_request = None;
                match ttl {
                    Some(ttl) => {
                        self.lease_good_until(env, sent_at, ttl);
                        None
                    }
                    None => self.lease_lost(env),
                }
            }
            (Op::PutIfAbsent { key, .. }, Answer::Put { create_revision }) => {
                if self.pending != Some(req) {
                    if let Some(create_revision) = create_revision {
                        if self.key.as_ref().map(|(k, _)| k) != Some(&key) {
                            self.request(
                                env,
                                Op::Delete {
                                    key,
                                    create_revision,
                                },
                            );
                        }
                    }
                    return None;
                }
                self.pending = None;
                let Some(revision) = create_revision else {
                    return self.lease_lost(env);
                };
                self.key = Some((key, revision));
                self.waited = false;
                self.look_for_predecessor(env);
                None
            }
            (Op::GetPredecessor { .. }, Answer::Predecessor { key, revision })
                if self.pending == Some(req) =>
            {
                self.pending = None;
                match key {
                    None => {
                        let (key, revision) = self.key.clone().expect("we asked with our key");
                        if self.waited {
                            // v3.5.0+: is our key still there?
                            self.checking = Some(self.request(env, Op::Get { key }));
                            return None;
                        }
                        self.holding = true;
                        Some(Change::Acquired(revision))
                    }
                    Some(predecessor) => {
                        self.waited = true;
                        let watch = self.request(
                            env,
                            Op::WatchDelete {
                                key: predecessor.clone(),
                                revision,
                            },
                        );
                        self.watching = Some((predecessor, watch));
                        None
                    }
                }
            }
            (Op::Get { key }, Answer::Get { create_revision }) if self.checking == Some(req) => {
                self.checking = None;
                let (ours, revision) = self.key.clone().expect("we checked our key");
                if key == ours && create_revision == Some(revision) {
                    self.holding = true;
                    return Some(Change::Acquired(revision));
                }
                // ErrSessionExpired.
                self.lease_lost(env)
            }
            (Op::Delete { .. }, Answer::Deleted) => {
                if self.want && self.key.is_none() && self.pending.is_none() {
                    self.put(env);
                }
                None
            }
            (Op::WatchDelete { key, .. }, Answer::KeyDeleted) => {
                if self.watching.as_ref() == Some(&(key, req)) {
                    self.watching = None;
                    self.look_for_predecessor(env);
                }
                None
            }
            _ => None,
        }
    }
}

impl LockApi<Msg, Timer> for LockClient {
    fn start_acquire(&mut self, env: &mut E<'_>) {
        self.want = true;
        if self.key.is_none() && self.pending.is_none() {
            self.put(env);
        }
    }

    fn release(&mut self, env: &mut E<'_>) {
        self.want = false;
        self.holding = false;
        self.waited = false;
        for req in [self.pending.take(), self.checking.take()]
            .into_iter()
            .flatten()
            .chain(self.watching.take().map(|(_, r)| r))
        {
            self.inflight.remove(&req);
        }
        if let Some((key, create_revision)) = self.key.take() {
            self.request(
                env,
                Op::Delete {
                    key,
                    create_revision,
                },
            );
        }
    }
}

impl Client {
    pub fn new(config: &EtcdServiceConfig, cluster: &Cluster) -> Client {
        Client {
            lock: LockClient {
                servers: EtcdServiceConfig::servers(cluster),
                guess: 0,
                ttl: config.ttl,
                retry_after: config.ttl / 3 - Duration::from_millis(1),
                prefix: format!("/lock/{}", config.workload.resource),
                stream: 0,
                req: 0,
                inflight: BTreeMap::new(),
                lease: None,
                lease_request: None,
                lease_deadline: None,
                want: false,
                key: None,
                pending: None,
                watching: None,
                holding: false,
                waited: false,
                checking: None,
                orphans: config.orphan_session,
                orphaned: None,
            },
            workload: Workload::new(config.workload.clone()),
        }
    }

    pub fn on_start(&mut self, env: &mut E<'_>) {
        self.lock.on_start(env);
        self.workload.on_start(env);
    }

    pub fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Resource(m) => self.workload.on_resource_reply(env, &mut self.lock, m),
            Msg::Reply { req, answer } => {
                let change = self.lock.on_reply(env, from, req, answer);
                self.apply(env, change);
            }
            _ => {}
        }
    }

    pub fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        match timer {
            Timer::KeepAlive => self.lock.on_keepalive_timer(env),
            Timer::LeaseCheck => {
                let change = self.lock.on_lease_check(env);
                self.apply(env, change);
            }
            Timer::Orphan => self.lock.on_orphan_timer(env),
            Timer::Workload(t) => self.workload.on_timer(env, &mut self.lock, t),
            _ => {}
        }
    }

    fn apply(&mut self, env: &mut E<'_>, change: Option<Change>) {
        match change {
            None => {}
            Some(Change::Acquired(revision)) => {
                self.workload.on_acquired(env, Some(revision), None)
            }
            Some(Change::Lost) => self.workload.on_lost(env, &mut self.lock),
            Some(Change::Failed) => self.workload.on_acquire_failed(env),
        }
    }
}
