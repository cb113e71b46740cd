//! A lock client: its lease, the etcd `Mutex` recipe, and the workload.

use super::{EtcdConfig, EtcdMsg, EtcdTimer, EtcdVariant, LeaseId};
use crate::workload::{LockApi, Workload};
use std::time::Duration;
use tenure_core::{Cluster, Env, LocalTime, NodeId};

type EtcdEnv<'a> = dyn Env<EtcdMsg, EtcdTimer> + 'a;

/// What the recipe tells the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// No key has a lower create revision: we hold the lock with this token.
    Acquired(u64),
    /// We held the lock and our lease is gone (or ran out by our clock).
    Lost,
    /// We were waiting and our lease (and with it our key) is gone.
    Failed,
}

/// The lease and lock half of a client (the lock API the workload drives).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdLockClient {
    server: NodeId,
    ttl: Duration,
    /// `/lock/<resource>`.
    prefix: String,
    no_keepalive: bool,
    /// etcd clients before v3.5.0 (every 3.4.x): no own-key check after waiting, and a waiter ignores its session.
    no_key_check: bool,
    req: u64,
    lease: Option<LeaseId>,
    /// The outstanding lease grant or keep-alive: its request id and send time.
    lease_request: Option<(u64, LocalTime)>,
    /// When our lease runs out by our clock: `ttl` after sending the last answered
    /// grant or keep-alive.
    lease_deadline: Option<LocalTime>,
    /// Whether we want the lock (between start_acquire and release).
    want: bool,
    /// Our key and its create revision.
    key: Option<(String, u64)>,
    /// The outstanding put or predecessor request.
    pending: Option<u64>,
    /// The predecessor we watch, and the watch's request id.
    watching: Option<(String, u64)>,
    holding: bool,
    /// We had to wait (watched a predecessor) since our put: before holding, check that
    /// our own key still exists.
    waited: bool,
    /// The outstanding own-key check (a `Get`), by request id.
    checking: Option<u64>,
    /// When we last heard anything about our lock (a put, predecessor or deletion
    /// answer). Requests and watch events can be lost: a waiter that hears nothing for
    /// a whole TTL asks again, as an etcd client retries a call and resumes its watch.
    last_heard: Option<LocalTime>,
}

/// A client node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EtcdClient {
    pub lock: EtcdLockClient,
    pub workload: Workload,
}

impl EtcdLockClient {
    pub fn lease(&self) -> Option<LeaseId> {
        self.lease
    }
    pub fn holding(&self) -> bool {
        self.holding
    }
    pub fn key(&self) -> Option<&str> {
        self.key.as_ref().map(|(k, _)| k.as_str())
    }

    fn keepalive_interval(&self) -> Duration {
        self.ttl / 3
    }

    fn next_req(&mut self) -> u64 {
        self.req += 1;
        self.req
    }

    fn grant(&mut self, env: &mut EtcdEnv<'_>) {
        let req = self.next_req();
        self.lease_request = Some((req, env.monotonic()));
        env.send(self.server, EtcdMsg::LeaseGrant { req, ttl: self.ttl });
    }

    fn on_start(&mut self, env: &mut EtcdEnv<'_>) {
        self.grant(env);
        env.set_timer(EtcdTimer::KeepAlive, self.keepalive_interval());
    }

    fn on_keepalive_timer(&mut self, env: &mut EtcdEnv<'_>) {
        env.set_timer(EtcdTimer::KeepAlive, self.keepalive_interval());
        let Some(lease) = self.lease else {
            self.grant(env); // the last grant may have been lost
            return;
        };
        if self.no_keepalive && self.holding {
            return; // the bug: "the work is short, the lease will do"
        }
        let req = self.next_req();
        self.lease_request = Some((req, env.monotonic()));
        env.send(self.server, EtcdMsg::KeepAlive { req, lease });
        self.resync_if_silent(env);
    }

    /// A waiter that has heard nothing about its lock for a TTL re-asks where it stands:
    /// its put (idempotent for its lease's key) or its predecessor (and re-watches it;
    /// the server keeps one watch per watcher and key, so nothing is reported twice).
    fn resync_if_silent(&mut self, env: &mut EtcdEnv<'_>) {
        if !self.want || self.holding {
            return;
        }
        let now = env.monotonic();
        let last = *self.last_heard.get_or_insert(now);
        if last.until(now) < self.ttl {
            return;
        }
        self.last_heard = Some(now);
        self.watching = None;
        match self.key {
            None => self.put(env),
            Some(_) => self.look_for_predecessor(env),
        }
    }

    /// The server answered a grant or keep-alive sent at `sent_at`: the lease is good
    /// until `sent_at + ttl` by our clock.
    fn lease_good_until(&mut self, env: &mut EtcdEnv<'_>, sent_at: LocalTime, ttl: Duration) {
        let deadline = sent_at + ttl;
        self.lease_deadline = Some(deadline);
        env.set_timer(EtcdTimer::LeaseCheck, env.monotonic().until(deadline));
    }

    fn on_lease_check(&mut self, env: &mut EtcdEnv<'_>) -> Option<Change> {
        let deadline = self.lease_deadline?;
        if self.no_keepalive && self.holding {
            return None; // nor does it watch its lease while it works
        }
        if env.monotonic() < deadline {
            return None;
        }
        self.lease_lost(env)
    }

    /// Our lease is gone (by the server's word or our clock): drop everything tied to
    /// it and ask for a new one.
    fn lease_lost(&mut self, env: &mut EtcdEnv<'_>) -> Option<Change> {
        if self.no_key_check && self.want && !self.holding && self.key.is_some() {
            // The pre-3.5 (3.4.x) `Lock` blocks in `waitDeletes` and never looks at its
            // session: the lease is gone, the wait goes on with the (deleted) key.
            self.lease = None;
            self.lease_deadline = None;
            env.cancel_timer(&EtcdTimer::LeaseCheck);
            self.grant(env);
            return None;
        }
        self.waited = false;
        self.checking = None;
        self.lease = None;
        self.lease_deadline = None;
        self.key = None;
        self.pending = None;
        self.watching = None;
        env.cancel_timer(&EtcdTimer::LeaseCheck);
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

    fn put(&mut self, env: &mut EtcdEnv<'_>) {
        let Some(lease) = self.lease else {
            return; // done when the lease is granted
        };
        let req = self.next_req();
        self.pending = Some(req);
        env.send(
            self.server,
            EtcdMsg::PutIfAbsent {
                req,
                key: format!("{}/{lease:x}", self.prefix),
                lease,
            },
        );
    }

    fn look_for_predecessor(&mut self, env: &mut EtcdEnv<'_>) {
        let (_, revision) = self.key.clone().expect("we have a key");
        let req = self.next_req();
        self.pending = Some(req);
        env.send(
            self.server,
            EtcdMsg::GetPredecessor {
                req,
                prefix: self.prefix.clone(),
                before: revision,
            },
        );
    }

    fn on_message(&mut self, env: &mut EtcdEnv<'_>, msg: EtcdMsg) -> Option<Change> {
        if matches!(
            msg,
            EtcdMsg::PutReply { .. }
                | EtcdMsg::Predecessor { .. }
                | EtcdMsg::KeyDeleted { .. }
                | EtcdMsg::GetReply { .. }
        ) {
            self.last_heard = Some(env.monotonic());
        }
        match msg {
            EtcdMsg::LeaseGranted { req, lease, ttl } => {
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
            EtcdMsg::KeepAliveReply { req, lease, ttl } if Some(lease) == self.lease => {
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
            EtcdMsg::PutReply {
                req,
                key,
                create_revision,
            } => {
                if self.pending != Some(req) {
                    if create_revision.is_some() && self.key() != Some(key.as_str()) {
                        // A key we no longer want: do not leave it blocking others.
                        let req = self.next_req();
                        env.send(self.server, EtcdMsg::Delete { req, key });
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
            EtcdMsg::Predecessor { req, key, revision } if self.pending == Some(req) => {
                self.pending = None;
                match key {
                    None => {
                        let (key, revision) = self.key.clone().expect("we asked with our key");
                        if self.waited && !self.no_key_check {
                            // etcd v3.5.0 client and later: is our session alive and our key still there?
                            let req = self.next_req();
                            self.checking = Some(req);
                            env.send(self.server, EtcdMsg::Get { req, key });
                            return None;
                        }
                        self.holding = true;
                        Some(Change::Acquired(revision))
                    }
                    Some(predecessor) => {
                        self.waited = true;
                        let req = self.next_req();
                        self.watching = Some((predecessor.clone(), req));
                        env.send(
                            self.server,
                            EtcdMsg::WatchDelete {
                                req,
                                key: predecessor,
                                revision,
                            },
                        );
                        None
                    }
                }
            }
            EtcdMsg::GetReply {
                req,
                key,
                create_revision,
            } if self.checking == Some(req) => {
                self.checking = None;
                let (ours, revision) = self.key.clone().expect("we checked our key");
                if key == ours && create_revision == Some(revision) {
                    self.holding = true;
                    return Some(Change::Acquired(revision));
                }
                // ErrSessionExpired: our key went with our lease while we waited.
                self.key = None;
                self.waited = false;
                self.watching = None;
                if self.lease.is_some() {
                    return self.lease_lost(env);
                }
                Some(Change::Failed).filter(|_| std::mem::take(&mut self.want))
            }
            EtcdMsg::KeyDeleted { req, key } => {
                if self.watching == Some((key, req)) {
                    self.watching = None;
                    self.look_for_predecessor(env);
                }
                None
            }
            _ => None,
        }
    }
}

impl LockApi<EtcdMsg, EtcdTimer> for EtcdLockClient {
    fn start_acquire(&mut self, env: &mut EtcdEnv<'_>) {
        self.want = true;
        self.last_heard = Some(env.monotonic());
        if self.key.is_none() && self.pending.is_none() {
            self.put(env);
        }
    }

    fn release(&mut self, env: &mut EtcdEnv<'_>) {
        self.want = false;
        self.holding = false;
        self.watching = None;
        self.pending = None;
        self.checking = None;
        self.waited = false;
        if let Some((key, _)) = self.key.take() {
            let req = self.next_req();
            env.send(self.server, EtcdMsg::Delete { req, key });
        }
    }
}

impl EtcdClient {
    pub fn new(config: &EtcdConfig, _me: NodeId, cluster: &Cluster) -> EtcdClient {
        let server = cluster
            .with_role("server")
            .next()
            .expect("configure checked there is a server");
        EtcdClient {
            lock: EtcdLockClient {
                server,
                ttl: config.ttl,
                prefix: format!("/lock/{}", config.workload.resource),
                no_keepalive: config.variant == EtcdVariant::NoKeepalive,
                no_key_check: config.variant == EtcdVariant::NoKeyCheck,
                req: 0,
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
                last_heard: None,
            },
            workload: Workload::new(config.workload.clone()),
        }
    }

    pub fn on_start(&mut self, env: &mut EtcdEnv<'_>) {
        self.lock.on_start(env);
        self.workload.on_start(env);
    }

    pub fn on_message(&mut self, env: &mut EtcdEnv<'_>, msg: EtcdMsg) {
        if let EtcdMsg::Resource(m) = msg {
            self.workload.on_resource_reply(env, &mut self.lock, m);
            return;
        }
        let change = self.lock.on_message(env, msg);
        self.apply(env, change);
    }

    pub fn on_timer(&mut self, env: &mut EtcdEnv<'_>, timer: EtcdTimer) {
        match timer {
            EtcdTimer::KeepAlive => self.lock.on_keepalive_timer(env),
            EtcdTimer::LeaseCheck => {
                let change = self.lock.on_lease_check(env);
                self.apply(env, change);
            }
            EtcdTimer::Workload(t) => self.workload.on_timer(env, &mut self.lock, t),
            EtcdTimer::LeaseExpire(_) => {}
        }
    }

    fn apply(&mut self, env: &mut EtcdEnv<'_>, change: Option<Change>) {
        match change {
            None => {}
            Some(Change::Acquired(revision)) => {
                self.workload.on_acquired(env, Some(revision), None)
            }
            // `Session.Done()` fired: stop acting on the lock (see `Workload::on_lost`).
            Some(Change::Lost) => self.workload.on_lost(env, &mut self.lock),
            Some(Change::Failed) => self.workload.on_acquire_failed(env),
        }
    }
}
