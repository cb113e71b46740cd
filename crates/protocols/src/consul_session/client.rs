//! A lock client of the Consul servers: its session (created with a TTL and a
//! lock-delay, renewed every TTL/2 as the Go API's `RenewPeriodic` does), the lock (a
//! `PUT ?acquire=<session>` of one key: Consul's `api.Lock` without its blocking
//! queries, the workload's backoff standing in for them), and the workload; every
//! request goes to the server it believes leads.

use super::{Answer, ConsulConfig, Msg, Op, SessionId, Timer};
use crate::workload::{LockApi, Workload};
use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{Cluster, Env, LocalTime, NodeId};

type E<'a> = dyn Env<Msg, Timer> + 'a;

/// What the lock tells the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Acquired(u64),
    Lost,
    Failed,
}

/// The session and lock half of a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockClient {
    servers: Vec<NodeId>,
    guess: usize,
    ttl: Duration,
    lock_delay: Duration,
    /// A request unanswered this long goes to the next server.
    retry_after: Duration,
    key: String,
    /// This incarnation's stream: the high 32 bits of every request id (a restarted
    /// client never takes an answer meant for its previous life).
    stream: u64,
    req: u64,
    /// Requests not yet answered: id -> (operation, when and to whom last sent).
    inflight: BTreeMap<u64, (Op, LocalTime, NodeId)>,
    session: Option<SessionId>,
    /// The outstanding create or renew: its request id and first send time.
    session_request: Option<(u64, LocalTime)>,
    /// Until when this client believes its session lives: the send time of the last
    /// renew answered plus the servers' whole timer (TTL x `SessionTTLMultiplier`), by
    /// its own clock. Consul's lock holder learns of an invalidation from the servers
    /// only (`monitorLock`'s blocking query, a renewal answered "not found"); a holder
    /// cut off from them keeps believing for as long as the servers may keep the
    /// session: the time it takes to notice a lost session, which lock-delay covers.
    session_deadline: Option<LocalTime>,
    want: bool,
    /// The outstanding acquire.
    acquiring: Option<u64>,
    holding: bool,
    /// Whether this client stops renewing its session once (the first client, if the
    /// `abandon_session` parameter is on).
    abandons: bool,
    /// The session this incarnation stopped renewing.
    abandoned: Option<SessionId>,
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
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    fn leader(&self) -> NodeId {
        self.servers[self.guess % self.servers.len()]
    }

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

    fn create_session(&mut self, env: &mut E<'_>) {
        let op = Op::CreateSession {
            ttl: self.ttl,
            lock_delay: self.lock_delay,
        };
        let req = self.request(env, op);
        self.session_request = Some((req, env.monotonic()));
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        self.stream = env.range_inclusive(1, u64::from(u32::MAX));
        self.guess = env.range_inclusive(0, self.servers.len() as u64 - 1) as usize;
        self.create_session(env);
        let first = env.duration_between(self.ttl / 8, self.ttl / 2);
        env.set_timer(Timer::Renew, first);
        self.abandoned = None;
        if self.abandons {
            if let Some(after) = crate::util::first_client_stops_renewing(env, self.ttl) {
                env.set_timer(Timer::Abandon, after);
            }
        }
    }

    /// Stop renewing the session, without destroying it. A client without a session yet
    /// abandons the next one: it looks again one renew period later.
    fn on_abandon_timer(&mut self, env: &mut E<'_>) {
        let Some(session) = self.session else {
            env.set_timer(Timer::Abandon, self.ttl / 2);
            return;
        };
        self.abandoned = Some(session);
        if let Some((req, _)) = self.session_request.take() {
            self.inflight.remove(&req);
        }
    }

    /// Every TTL/2: a renew, and requests unanswered for a while go to the next server.
    fn on_renew_timer(&mut self, env: &mut E<'_>) {
        env.set_timer(Timer::Renew, self.ttl / 2);
        let now = env.monotonic();
        let leader = self.leader();
        let stale: Vec<(u64, bool)> = self
            .inflight
            .iter()
            .filter(|(_, (op, sent, _))| {
                !matches!(op, Op::Renew { .. }) && sent.until(now) >= self.retry_after
            })
            .map(|(&req, &(_, _, to))| (req, to == leader))
            .collect();
        let silent_leader = self
            .session_request
            .and_then(|(req, _)| self.inflight.get(&req))
            .is_some_and(|(_, sent, to)| *to == leader && sent.until(now) >= self.retry_after);
        if silent_leader || stale.iter().any(|&(_, to_leader)| to_leader) {
            self.guess += 1;
        }
        for (req, _) in stale {
            self.resend(env, req);
        }
        let Some(session) = self.session else {
            if self.session_request.is_none() {
                self.create_session(env);
            }
            return;
        };
        if self.abandoned == Some(session) {
            return; // no longer renewed: left to the servers' timer
        }
        if let Some((old, _)) = self.session_request.take() {
            self.inflight.remove(&old);
        }
        let req = self.request(env, Op::Renew { session });
        self.session_request = Some((req, now));
    }

    fn good_until(&mut self, env: &mut E<'_>, sent_at: LocalTime, ttl: Duration) {
        let deadline = sent_at + ttl * super::SESSION_TTL_MULTIPLIER;
        self.session_deadline = Some(deadline);
        env.set_timer(Timer::SessionCheck, env.monotonic().until(deadline));
    }

    fn session_valid(&self, env: &E<'_>) -> bool {
        self.session_deadline
            .is_some_and(|deadline| env.monotonic() < deadline)
    }

    fn on_session_check(&mut self, env: &mut E<'_>) -> Option<Change> {
        let deadline = self.session_deadline?;
        if env.monotonic() < deadline {
            return None;
        }
        self.session_lost(env)
    }

    /// The session is gone (or may be): forget it and the lock, and start a new one.
    fn session_lost(&mut self, env: &mut E<'_>) -> Option<Change> {
        self.session = None;
        self.session_deadline = None;
        self.acquiring = None;
        self.inflight
            .retain(|_, (op, _, _)| matches!(op, Op::Release { .. }));
        self.session_request = None;
        env.cancel_timer(&Timer::SessionCheck);
        self.create_session(env);
        if std::mem::take(&mut self.holding) {
            self.want = false;
            Some(Change::Lost)
        } else if std::mem::take(&mut self.want) {
            Some(Change::Failed)
        } else {
            None
        }
    }

    fn acquire(&mut self, env: &mut E<'_>) {
        let Some(session) = self.session else {
            return; // acquire once the session is created
        };
        if self
            .inflight
            .values()
            .any(|(op, _, _)| matches!(op, Op::Release { session: s, .. } if *s == session))
        {
            // `api.Lock.Unlock` returns once its release is done: an acquire before it
            // would find the key still ours (the same session keeps it), and the late
            // release would then free the key under the new hold.
            return; // acquire when the release is answered
        }
        let key = self.key.clone();
        self.acquiring = Some(self.request(env, Op::Acquire { key, session }));
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
                if let Some(p) = hint.filter(|&h| h != from).and_then(|h| self.position(h)) {
                    self.guess = p;
                    self.resend(env, req);
                }
            }
            return None;
        }
        let (op, _, _) = self.inflight.remove(&req)?;
        if let Some(p) = self.position(from) {
            self.guess = p;
        }
        match (op, answer) {
            (_, Answer::Created { session, ttl }) => {
                let (pending, sent_at) = self.session_request?;
                if pending != req || self.session.is_some() {
                    return None; // a late create: that session expires unused
                }
                self.session_request = None;
                self.session = Some(session);
                self.good_until(env, sent_at, ttl);
                if self.want && self.acquiring.is_none() {
                    self.acquire(env);
                }
                None
            }
            (Op::Renew { session }, Answer::Renewed { ttl }) if Some(session) == self.session => {
                let (pending, sent_at) = self.session_request?;
                if pending != req {
                    return None;
                }
                self.session_request = None;
                match ttl {
                    Some(ttl) => {
                        self.good_until(env, sent_at, ttl);
                        None
                    }
                    None => self.session_lost(env),
                }
            }
            (
                Op::Acquire { key, session },
                Answer::Acquired {
                    lock_index,
                    session_gone,
                },
            ) => {
                if self.acquiring != Some(req) || Some(session) != self.session {
                    // A late acquire that took the key after we stopped wanting it.
                    if lock_index.is_some() && Some(session) == self.session {
                        self.request(env, Op::Release { key, session });
                    }
                    return None;
                }
                self.acquiring = None;
                if session_gone {
                    return self.session_lost(env);
                }
                match lock_index {
                    // The answer may come after a pause: act only on a session still
                    // believed alive.
                    Some(_) if !self.session_valid(env) => self.session_lost(env),
                    Some(index) => {
                        self.holding = true;
                        Some(Change::Acquired(index))
                    }
                    None => {
                        self.want = false;
                        Some(Change::Failed)
                    }
                }
            }
            (Op::Release { .. }, Answer::Released) => {
                if self.want && self.acquiring.is_none() {
                    self.acquire(env);
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
        if self.acquiring.is_none() {
            self.acquire(env);
        }
    }

    fn release(&mut self, env: &mut E<'_>) {
        self.want = false;
        if let Some(req) = self.acquiring.take() {
            self.inflight.remove(&req);
        }
        if std::mem::take(&mut self.holding) {
            if let Some(session) = self.session {
                let key = self.key.clone();
                self.request(env, Op::Release { key, session });
            }
        }
    }
}

impl Client {
    pub fn new(config: &ConsulConfig, cluster: &Cluster) -> Client {
        Client {
            lock: LockClient {
                servers: ConsulConfig::servers(cluster),
                guess: 0,
                ttl: config.ttl,
                lock_delay: config.lock_delay,
                retry_after: config.ttl / 2 - Duration::from_millis(1),
                key: format!("service/{}/lock", config.workload.resource),
                stream: 0,
                req: 0,
                inflight: BTreeMap::new(),
                session: None,
                session_request: None,
                session_deadline: None,
                want: false,
                acquiring: None,
                holding: false,
                abandons: config.abandon_session,
                abandoned: None,
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
            Timer::Renew => self.lock.on_renew_timer(env),
            Timer::SessionCheck => {
                let change = self.lock.on_session_check(env);
                self.apply(env, change);
            }
            Timer::Workload(t) => self.workload.on_timer(env, &mut self.lock, t),
            Timer::LostNotice => self.workload.on_lost(env, &mut self.lock),
            Timer::Abandon => self.lock.on_abandon_timer(env),
            _ => {}
        }
    }

    fn apply(&mut self, env: &mut E<'_>, change: Option<Change>) {
        match change {
            None => {}
            Some(Change::Acquired(lock_index)) => {
                self.workload.on_acquired(env, Some(lock_index), None)
            }
            // The notice reaches the work in progress after what is already due.
            Some(Change::Lost) => env.set_timer(Timer::LostNotice, Duration::from_micros(1)),
            Some(Change::Failed) => self.workload.on_acquire_failed(env),
        }
    }
}
