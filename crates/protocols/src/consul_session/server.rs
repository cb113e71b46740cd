//! A Consul server: Raft with a log (the rules of [`crate::raft_log`], in its plain form
//! plus the leader's step-down when a majority has not answered within the lease timeout,
//! as hashicorp/raft's `LeaderLeaseTimeout` does), the state store (sessions, the KV
//! store with each key's `Session`, `LockIndex` and `ModifyIndex`) applied from the log,
//! the leader's session timers and every server's in-memory lock-delays.

use super::{Answer, ConsulConfig, ConsulVariant, Msg, Op, SessionId, Timer};
use crate::util::majority;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{Cluster, Env, LocalTime, NodeId, Observation, StorageExt};

type E<'a> = dyn Env<Msg, Timer> + 'a;

const TERM_KEY: &str = "term";
const VOTED_FOR_KEY: &str = "voted_for";
const LOG_LEN_KEY: &str = "log_len";

/// A TTL in whole milliseconds, as `LeaseRenewed` states it (rounded up).
fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

fn entry_key(index: u64) -> String {
    format!("log/{index}")
}

/// Consul's `structs.SessionTTLMultiplier`: the leader's timer for a session runs
/// twice its TTL ("to give a client a grace period and to compensate for network and
/// processing delays", `session_ttl.go`).
pub const SESSION_TTL_MULTIPLIER: u32 = 2;

/// What a log entry asks the state store to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Cmd {
    /// A new leader's first entry (Raft §8; hashicorp/raft's barrier in
    /// `establishLeadership`).
    Noop,
    /// `Session.Apply` create: the session's id is this entry's index.
    SessionCreate {
        client: NodeId,
        ttl: Duration,
        lock_delay: Duration,
    },
    /// `Session.Apply` destroy (the leader's `invalidateSession` on TTL expiry): the
    /// session's locks are released and each key gets the session's lock-delay.
    SessionDestroy { session: SessionId },
    /// `KVS.Apply` with `?acquire=<session>` (`kvsLockTxn`).
    Acquire { key: String, session: SessionId },
    /// `KVS.Apply` with `?release=<session>` (`kvsUnlockTxn`).
    Release { key: String, session: SessionId },
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entry {
    pub term: u64,
    pub cmd: Cmd,
}

impl Entry {
    /// FNV-1a of the command's encoding (what `log-matching` and friends compare).
    pub fn digest(&self) -> u64 {
        let text = format!("{:?}", self.cmd);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

/// A session in the state store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionState {
    pub client: NodeId,
    pub ttl: Duration,
    pub lock_delay: Duration,
    /// The keys it holds.
    pub keys: BTreeSet<String>,
}

/// A KV entry: who holds it and its indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyState {
    pub session: Option<SessionId>,
    /// Incremented on every acquisition by a new session (the sequencer's number).
    pub lock_index: u64,
    pub modify_index: u64,
}

/// The state store every server applies the log to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    pub sessions: BTreeMap<SessionId, SessionState>,
    pub kv: BTreeMap<String, KeyState>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
}

/// How many answers a server keeps per client to answer duplicates with (see
/// `Server::answered`): a client has at most a session request and a lock request in
/// flight at once, so a few cover every duplicate the network can still deliver.
pub const ANSWERED_PER_CLIENT: usize = 8;

/// One Consul server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    me: NodeId,
    peers: Vec<NodeId>,
    config: ConsulConfig,

    term: u64,
    voted_for: Option<NodeId>,
    log: Vec<Entry>,
    stored: (u64, Option<NodeId>),
    stored_len: u64,
    dirty_from: Option<u64>,
    unsynced: bool,
    durable_len: u64,

    role: Role,
    leader: Option<NodeId>,
    votes: BTreeSet<NodeId>,
    commit: u64,
    applied: u64,
    state: State,

    next_index: BTreeMap<NodeId, u64>,
    match_index: BTreeMap<NodeId, u64>,
    acked_round: BTreeMap<NodeId, u64>,
    round: u64,
    /// Requests this leader appended, by index: the client and request id to answer.
    proposed: BTreeMap<u64, (NodeId, u64)>,
    /// The answers this server gave to requests it applied, by (client, request id): the
    /// last [`ANSWERED_PER_CLIENT`] of each client. Consul's clients talk HTTP over TCP,
    /// which never delivers one request twice; tenure's datagram network may, so a
    /// duplicate of an applied request is answered from here instead of applied again
    /// (a duplicated release applied after its client took the lock again would release
    /// the new hold: `consul-lock/correct`, seed 1377 of `field`), and one still in the
    /// log is left to its first answer. Kept per server, as a TCP connection is: a
    /// duplicate reaches the server its original was sent to.
    answered: BTreeMap<(NodeId, u64), Answer>,
    /// When each peer last answered this leader (the leader lease: step down without a
    /// majority's answer within the lease timeout).
    last_ack: BTreeMap<NodeId, LocalTime>,
    leader_since: Option<LocalTime>,

    /// The leader's session timers (`sessionTimers`): each session's invalidation time
    /// by this server's monotonic clock.
    timers: BTreeMap<SessionId, LocalTime>,
    /// Sessions whose destroy this leader has proposed.
    invalidating: BTreeSet<SessionId>,
    /// The lock-delays (`lockDelay`, in memory, not in the log): key -> until when, by
    /// this server's monotonic clock, set when this server applied the invalidation.
    lock_delays: BTreeMap<String, LocalTime>,

    announced: Option<Observation>,
}

impl Server {
    pub fn new(config: &ConsulConfig, me: NodeId, cluster: &Cluster) -> Server {
        Server {
            me,
            peers: ConsulConfig::servers(cluster)
                .into_iter()
                .filter(|&n| n != me)
                .collect(),
            config: config.clone(),
            term: 0,
            voted_for: None,
            log: Vec::new(),
            stored: (0, None),
            stored_len: 0,
            dirty_from: None,
            unsynced: false,
            durable_len: 0,
            role: Role::Follower,
            leader: None,
            votes: BTreeSet::new(),
            commit: 0,
            applied: 0,
            state: State::default(),
            next_index: BTreeMap::new(),
            match_index: BTreeMap::new(),
            acked_round: BTreeMap::new(),
            round: 0,
            proposed: BTreeMap::new(),
            answered: BTreeMap::new(),
            last_ack: BTreeMap::new(),
            leader_since: None,
            timers: BTreeMap::new(),
            invalidating: BTreeSet::new(),
            lock_delays: BTreeMap::new(),
            announced: None,
        }
    }

    pub fn term(&self) -> u64 {
        self.term
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn state(&self) -> &State {
        &self.state
    }
    pub fn log(&self) -> &[Entry] {
        &self.log
    }
    pub fn commit_index(&self) -> u64 {
        self.commit
    }
    /// The lock-delay this server holds for `key`, if any (by its monotonic clock).
    pub fn lock_delay_until(&self, key: &str) -> Option<LocalTime> {
        self.lock_delays.get(key).copied()
    }

    fn quorum(&self) -> usize {
        majority(self.peers.len() + 1)
    }
    fn last_index(&self) -> u64 {
        self.log.len() as u64
    }
    fn term_at(&self, index: u64) -> Option<u64> {
        match index {
            0 => Some(0),
            i => self.log.get(i as usize - 1).map(|e| e.term),
        }
    }
    fn last_term(&self) -> u64 {
        self.log.last().map_or(0, |e| e.term)
    }

    // ----- the disk -----

    fn persist(&mut self, env: &mut E<'_>) -> bool {
        if let Some(from) = self.dirty_from.take() {
            for i in from..=self.last_index() {
                env.store(&entry_key(i), &self.log[i as usize - 1]);
            }
            for i in self.last_index() + 1..=self.stored_len {
                env.delete(&entry_key(i));
            }
            env.store(LOG_LEN_KEY, &self.last_index());
            self.stored_len = self.last_index();
            self.unsynced = true;
        }
        if self.stored != (self.term, self.voted_for) {
            env.store(TERM_KEY, &self.term);
            env.store(VOTED_FOR_KEY, &self.voted_for);
            self.stored = (self.term, self.voted_for);
            self.unsynced = true;
        }
        if self.unsynced && env.sync().is_ok() {
            self.unsynced = false;
            self.durable_len = self.last_index();
        }
        !self.unsynced
    }

    fn write_from(&mut self, env: &mut E<'_>, index: u64, entries: &[Entry]) {
        self.log.truncate(index as usize - 1);
        self.durable_len = self.durable_len.min(index - 1);
        for (k, e) in entries.iter().enumerate() {
            self.log.push(e.clone());
            env.observe(Observation::LogAppend {
                index: index + k as u64,
                term: e.term,
                digest: e.digest(),
            });
        }
        self.dirty_from = Some(self.dirty_from.map_or(index, |d| d.min(index)));
    }

    fn send(&mut self, env: &mut E<'_>, to: NodeId, msg: Msg) {
        if self.persist(env) {
            env.send(to, msg);
        }
    }

    fn reply(&mut self, env: &mut E<'_>, to: NodeId, req: u64, answer: Answer) {
        self.send(env, to, Msg::Reply { req, answer });
    }

    fn announce(&mut self, env: &mut E<'_>) {
        let obs = match self.role {
            Role::Leader => Observation::Leader { term: self.term },
            Role::Candidate => Observation::Candidate { term: self.term },
            Role::Follower => Observation::Follower {
                term: self.term,
                leader: self.leader,
            },
        };
        if self.announced.as_ref() != Some(&obs) {
            env.observe(obs.clone());
            self.announced = Some(obs);
        }
    }

    fn reset_election_timer(&mut self, env: &mut E<'_>) {
        let (min, max) = self.config.election_timeout;
        let after = env.duration_between(min, max);
        env.set_timer(Timer::Election, after);
    }

    // ----- elections -----

    fn become_follower(&mut self, env: &mut E<'_>, leader: Option<NodeId>) {
        let was_leader = self.role == Role::Leader;
        self.role = Role::Follower;
        self.leader = leader;
        self.votes.clear();
        if was_leader {
            self.proposed.clear();
            // `revokeLeadership`: `clearAllSessionTimers`.
            self.timers.clear();
            self.invalidating.clear();
            self.leader_since = None;
            env.cancel_timer(&Timer::Heartbeat);
            self.reset_election_timer(env);
        }
        self.announce(env);
    }

    fn catch_up_term(&mut self, env: &mut E<'_>, term: u64, leader: Option<NodeId>) {
        if term > self.term {
            self.term = term;
            self.voted_for = None;
            self.become_follower(env, leader);
        }
    }

    fn start_election(&mut self, env: &mut E<'_>) {
        self.term += 1;
        self.voted_for = Some(self.me);
        self.role = Role::Candidate;
        self.leader = None;
        self.votes = BTreeSet::from([self.me]);
        self.announce(env);
        self.reset_election_timer(env);
        let msg = Msg::RequestVote {
            term: self.term,
            last_log_index: self.last_index(),
            last_log_term: self.last_term(),
        };
        for k in 0..self.peers.len() {
            let peer = self.peers[k];
            self.send(env, peer, msg.clone());
        }
        if self.votes.len() >= self.quorum() {
            self.become_leader(env);
        }
    }

    fn become_leader(&mut self, env: &mut E<'_>) {
        self.role = Role::Leader;
        self.leader = Some(self.me);
        self.votes.clear();
        env.cancel_timer(&Timer::Election);
        self.announce(env);
        self.timers.clear();
        self.invalidating.clear();
        let now = env.monotonic();
        self.leader_since = Some(now);
        self.last_ack = self.peers.iter().map(|&p| (p, now)).collect();
        let index = self.last_index() + 1;
        self.write_from(
            env,
            index,
            &[Entry {
                term: self.term,
                cmd: Cmd::Noop,
            }],
        );
        self.next_index = self.peers.iter().map(|&p| (p, index)).collect();
        self.match_index = self.peers.iter().map(|&p| (p, 0)).collect();
        self.acked_round = self.peers.iter().map(|&p| (p, 0)).collect();
        if self.persist(env) {
            self.advance_commit(env);
        }
        self.heartbeat(env);
    }

    fn on_request_vote(&mut self, env: &mut E<'_>, from: NodeId, term: u64, last: (u64, u64)) {
        self.catch_up_term(env, term, None);
        let free = self.voted_for.is_none() || self.voted_for == Some(from);
        let up_to_date = (last.0, last.1) >= (self.last_term(), self.last_index());
        let granted = term == self.term && free && up_to_date;
        if granted {
            self.voted_for = Some(from);
        }
        let reply = Msg::RequestVoteReply {
            term: self.term,
            granted,
        };
        self.send(env, from, reply);
        if granted {
            self.reset_election_timer(env);
        }
    }

    fn on_vote_reply(&mut self, env: &mut E<'_>, from: NodeId, term: u64, granted: bool) {
        self.catch_up_term(env, term, None);
        if self.role == Role::Candidate && term == self.term && granted {
            self.votes.insert(from);
            if self.votes.len() >= self.quorum() {
                self.become_leader(env);
            }
        }
    }

    // ----- replication -----

    fn heartbeat(&mut self, env: &mut E<'_>) {
        self.round += 1;
        for k in 0..self.peers.len() {
            let peer = self.peers[k];
            self.replicate(env, peer);
        }
        env.set_timer(Timer::Heartbeat, self.config.heartbeat_interval);
    }

    fn replicate(&mut self, env: &mut E<'_>, peer: NodeId) {
        let next = self.next_index.get(&peer).copied().unwrap_or(1).max(1);
        let prev_log_index = (next - 1).min(self.last_index());
        let prev_log_term = self.term_at(prev_log_index).unwrap_or(0);
        let from = prev_log_index as usize;
        let to = (from + 8).min(self.log.len());
        let msg = Msg::AppendEntries {
            term: self.term,
            prev_log_index,
            prev_log_term,
            entries: self.log[from..to].to_vec(),
            leader_commit: self.commit,
            round: self.round,
        };
        self.send(env, peer, msg);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_append_entries(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        term: u64,
        (prev_log_index, prev_log_term): (u64, u64),
        entries: Vec<Entry>,
        leader_commit: u64,
        round: u64,
    ) {
        self.catch_up_term(env, term, Some(from));
        let refuse = |s: &Server| Msg::AppendEntriesReply {
            term: s.term,
            success: false,
            match_index: prev_log_index,
            last_index: s.last_index(),
            round,
        };
        if term < self.term || self.role == Role::Leader {
            let reply = refuse(self);
            self.send(env, from, reply);
            return;
        }
        self.become_follower(env, Some(from));
        self.reset_election_timer(env);
        if self.term_at(prev_log_index) != Some(prev_log_term) {
            let reply = refuse(self);
            self.send(env, from, reply);
            return;
        }
        let mut index = prev_log_index + 1;
        let mut k = 0;
        while k < entries.len() && self.term_at(index) == Some(entries[k].term) {
            index += 1;
            k += 1;
        }
        if k < entries.len() {
            self.write_from(env, index, &entries[k..]);
        }
        let last_new = prev_log_index + entries.len() as u64;
        if leader_commit > self.commit {
            self.commit = leader_commit.min(last_new).max(self.commit);
        }
        let reply = Msg::AppendEntriesReply {
            term: self.term,
            success: true,
            match_index: last_new,
            last_index: self.last_index(),
            round,
        };
        self.send(env, from, reply);
        self.apply_committed(env);
    }

    fn on_append_entries_reply(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        term: u64,
        success: bool,
        (match_index, last_index): (u64, u64),
        round: u64,
    ) {
        self.catch_up_term(env, term, None);
        if self.role != Role::Leader || term != self.term {
            return;
        }
        self.last_ack.insert(from, env.monotonic());
        let acked = self.acked_round.entry(from).or_insert(0);
        *acked = (*acked).max(round);
        let next = self.next_index.get(&from).copied().unwrap_or(1);
        if success {
            let m = self.match_index.entry(from).or_insert(0);
            let advanced = match_index > *m;
            *m = (*m).max(match_index);
            let m = *m;
            self.next_index.insert(from, next.max(m + 1));
            self.advance_commit(env);
            if advanced && m < self.last_index() {
                self.replicate(env, from);
            }
        } else if match_index + 1 == next && next > 1 {
            let back = (next - 1).min(last_index + 1).max(1);
            self.next_index.insert(from, back);
            self.replicate(env, from);
        }
    }

    /// Raft §5.4.2: commit the highest index a majority holds, if of the current term.
    fn advance_commit(&mut self, env: &mut E<'_>) {
        let mut held: Vec<u64> = self.match_index.values().copied().collect();
        held.push(self.durable_len);
        held.sort_unstable_by(|a, b| b.cmp(a));
        let n = held[self.quorum() - 1];
        if n > self.commit && self.term_at(n) == Some(self.term) {
            self.commit = n;
            self.apply_committed(env);
        }
    }

    fn apply_committed(&mut self, env: &mut E<'_>) {
        while self.applied < self.commit.min(self.last_index()) {
            self.applied += 1;
            let index = self.applied;
            let entry = self.log[index as usize - 1].clone();
            let answer = self.apply(env, index, &entry.cmd);
            env.observe(Observation::LogApply {
                index,
                term: entry.term,
                digest: entry.digest(),
            });
            if let Some((client, req)) = self.proposed.remove(&index) {
                if let Some(answer) = answer {
                    self.remember(client, req, answer.clone());
                    self.reply(env, client, req, answer);
                }
            }
        }
    }

    /// Applies one command; the answer for the client that asked, if any.
    /// Applies one command; the answer for the client that asked, if any.
    fn apply(&mut self, env: &mut E<'_>, index: u64, cmd: &Cmd) -> Option<Answer> {
        match cmd {
            Cmd::Noop => {
                // `establishLeadership` after the barrier: `initializeSessionTimers`
                // resets every session's timer to its full TTL (x the multiplier): "the
                // TTL is renewed ... on leader failover".
                if self.role == Role::Leader && self.term_at(index) == Some(self.term) {
                    let now = env.monotonic();
                    self.timers = self
                        .state
                        .sessions
                        .iter()
                        .map(|(&id, s)| (id, now + s.ttl * SESSION_TTL_MULTIPLIER))
                        .collect();
                    self.invalidating.clear();
                }
                None
            }
            Cmd::SessionCreate {
                client,
                ttl,
                lock_delay,
            } => {
                self.state.sessions.insert(
                    index,
                    SessionState {
                        client: *client,
                        ttl: *ttl,
                        lock_delay: *lock_delay,
                        keys: BTreeSet::new(),
                    },
                );
                if self.role == Role::Leader {
                    // `Session.Apply` create: `resetSessionTimer` on the leader.
                    let at = env.monotonic() + *ttl * SESSION_TTL_MULTIPLIER;
                    self.timers.insert(index, at);
                    if self.proposed.contains_key(&index) {
                        env.observe(Observation::LeaseRenewed {
                            lease: index,
                            ttl_ms: ttl_ms(*ttl),
                        });
                    }
                }
                Some(Answer::Created {
                    session: index,
                    ttl: *ttl,
                })
            }
            Cmd::SessionDestroy { session } => {
                self.timers.remove(session);
                self.invalidating.remove(session);
                let s = self.state.sessions.remove(session)?;
                env.observe(Observation::Note {
                    text: format!("session {session} of {} invalidated", s.client),
                });
                if self.role == Role::Leader {
                    env.observe(Observation::LeaseRevoked { lease: *session });
                }
                // `deleteSessionTxn`, behavior "release": each held key loses its
                // session (its LockIndex stays) and gets the session's lock-delay, by
                // this server's clock as it applies the entry.
                let delay = match self.config.variant {
                    ConsulVariant::NoLockDelay => Duration::ZERO,
                    _ => s.lock_delay,
                };
                let now = env.monotonic();
                for key in &s.keys {
                    if let Some(kv) = self.state.kv.get_mut(key) {
                        kv.session = None;
                        kv.modify_index = index;
                    }
                    if !delay.is_zero() {
                        self.lock_delays.insert(key.clone(), now + delay);
                    }
                }
                None
            }
            Cmd::Acquire { key, session } => {
                // `kvsLockTxn`: the session must exist; a key held by another session
                // is not taken; the holder acquiring again keeps its LockIndex.
                let Some(s) = self.state.sessions.get_mut(session) else {
                    return Some(Answer::Acquired {
                        lock_index: None,
                        session_gone: true,
                    });
                };
                let kv = self.state.kv.entry(key.clone()).or_default();
                let lock_index = match kv.session {
                    Some(other) if other != *session => None,
                    Some(_) => Some(kv.lock_index),
                    None => {
                        kv.lock_index += 1;
                        kv.session = Some(*session);
                        kv.modify_index = index;
                        s.keys.insert(key.clone());
                        Some(kv.lock_index)
                    }
                };
                Some(Answer::Acquired {
                    lock_index,
                    session_gone: false,
                })
            }
            Cmd::Release { key, session } => {
                // `kvsUnlockTxn`: only the holding session releases.
                if let Some(kv) = self.state.kv.get_mut(key) {
                    if kv.session == Some(*session) {
                        kv.session = None;
                        kv.modify_index = index;
                        if let Some(s) = self.state.sessions.get_mut(session) {
                            s.keys.remove(key);
                        }
                    }
                }
                Some(Answer::Released)
            }
        }
    }

    // ----- the leader's lease and session timers -----

    /// hashicorp/raft's `checkLeaderLease`: a leader that has not heard from a majority
    /// within the lease timeout steps down (and with it `clearAllSessionTimers`).
    fn check_leader_lease(&mut self, env: &mut E<'_>) {
        let Some(since) = self.leader_since else {
            return;
        };
        let now = env.monotonic();
        let lease = self.config.leader_lease_timeout;
        if since.until(now) < lease {
            return;
        }
        let contacted = 1 + self
            .last_ack
            .values()
            .filter(|&&at| at.until(now) < lease)
            .count();
        if contacted < self.quorum() {
            env.observe(Observation::Note {
                text: "leader lease expired: stepping down".to_string(),
            });
            self.become_follower(env, None);
        }
    }

    /// The session timers (run first in every handler): while leader, each session past
    /// its time is invalidated (`invalidateSession`: a destroy through the log).
    fn session_tick(&mut self, env: &mut E<'_>) {
        if self.role != Role::Leader || self.timers.is_empty() {
            return;
        }
        let now = env.monotonic();
        let due: Vec<SessionId> = self
            .timers
            .iter()
            .filter(|&(id, &at)| at <= now && !self.invalidating.contains(id))
            .map(|(&id, _)| id)
            .collect();
        for session in due {
            self.invalidating.insert(session);
            self.propose(env, Cmd::SessionDestroy { session }, None);
        }
    }

    /// Appends `cmd` as a leader (to be answered to `client`'s `req` once applied).
    fn propose(&mut self, env: &mut E<'_>, cmd: Cmd, client: Option<(NodeId, u64)>) {
        let index = self.last_index() + 1;
        let entry = Entry {
            term: self.term,
            cmd,
        };
        self.write_from(env, index, &[entry]);
        if let Some(c) = client {
            if self.proposed.len() >= 4096 {
                self.proposed.clear();
            }
            self.proposed.insert(index, c);
        }
        if self.persist(env) {
            self.advance_commit(env);
            for k in 0..self.peers.len() {
                let peer = self.peers[k];
                if self.next_index.get(&peer) == Some(&index) {
                    self.replicate(env, peer);
                }
            }
        }
    }

    /// This leader has applied everything committed, its own term's first entry
    /// included (the barrier of `establishLeadership`).
    fn ready(&self) -> bool {
        self.term_at(self.commit) == Some(self.term) && self.applied == self.commit
    }

    // ----- client requests -----

    /// Records `answer` to `client`'s request `req`, keeping that client's last
    /// [`ANSWERED_PER_CLIENT`] (request ids grow within a client's incarnation).
    fn remember(&mut self, client: NodeId, req: u64, answer: Answer) {
        self.answered.insert((client, req), answer);
        let of_client = (client, 0)..=(client, u64::MAX);
        let kept = self.answered.range(of_client.clone()).count();
        if kept > ANSWERED_PER_CLIENT {
            let drop: Vec<(NodeId, u64)> = self
                .answered
                .range(of_client)
                .take(kept - ANSWERED_PER_CLIENT)
                .map(|(k, _)| *k)
                .collect();
            for k in drop {
                self.answered.remove(&k);
            }
        }
    }

    fn on_request(&mut self, env: &mut E<'_>, client: NodeId, req: u64, op: Op) {
        // A duplicate (see `answered`): answered again, or left to the first.
        if let Some(answer) = self.answered.get(&(client, req)) {
            let answer = answer.clone();
            self.reply(env, client, req, answer);
            return;
        }
        if self.proposed.values().any(|&c| c == (client, req)) {
            return;
        }
        if self.role != Role::Leader {
            // A follower forwards RPCs to the leader; here it names the leader instead.
            let leader = self.leader;
            self.reply(env, client, req, Answer::NotLeader(leader));
            return;
        }
        match op {
            Op::CreateSession { ttl, lock_delay } => self.propose(
                env,
                Cmd::SessionCreate {
                    client,
                    ttl,
                    lock_delay,
                },
                Some((client, req)),
            ),
            Op::Renew { session } => {
                // `Session.Renew` at the leader, not through the log: `resetSessionTimer`.
                if !self.ready() {
                    return; // the client asks again
                }
                let ttl = self.state.sessions.get(&session).map(|s| s.ttl);
                let answer = match ttl {
                    // A session whose destroy is in flight is as good as gone.
                    Some(ttl) if !self.invalidating.contains(&session) => {
                        let at = env.monotonic() + ttl * SESSION_TTL_MULTIPLIER;
                        self.timers.insert(session, at);
                        env.observe(Observation::LeaseRenewed {
                            lease: session,
                            ttl_ms: ttl_ms(ttl),
                        });
                        Some(ttl)
                    }
                    _ => None,
                };
                self.reply(env, client, req, Answer::Renewed { ttl: answer });
            }
            Op::Acquire { key, session } => {
                // `kvsPreApply`: the lock-delay is enforced before the log, by the
                // leader's clock; a leader that has not applied its barrier yet may not
                // know of a delay, and refuses too (the client retries). `kvsPreApply`
                // reads the applied state: an acquire that comes while the holder's
                // destroy is in flight finds no delay yet and is ordered after the
                // destroy, which frees the key: granted with no delay at all (found by
                // this module's tests, a waiter retrying 3ms after the invalidation was
                // proposed). Consul's `api.Lock` retries only once its blocking query
                // shows the key free, after the destroy applied; the model's waiters
                // retry on a timer, so the leader also refuses a key whose holder it is
                // invalidating.
                let now = env.monotonic();
                let invalidating = self
                    .state
                    .kv
                    .get(&key)
                    .and_then(|kv| kv.session)
                    .is_some_and(|holder| self.invalidating.contains(&holder));
                let delayed =
                    invalidating || self.lock_delays.get(&key).is_some_and(|&until| until > now);
                if delayed || !self.ready() {
                    let answer = Answer::Acquired {
                        lock_index: None,
                        session_gone: false,
                    };
                    // A duplicate arriving after the delay must not take the lock for
                    // a client that was told no.
                    self.remember(client, req, answer.clone());
                    self.reply(env, client, req, answer);
                    return;
                }
                self.propose(env, Cmd::Acquire { key, session }, Some((client, req)));
            }
            Op::Release { key, session } => {
                self.propose(env, Cmd::Release { key, session }, Some((client, req)))
            }
        }
    }

    // ----- entry points -----

    pub fn on_start(&mut self, env: &mut E<'_>) {
        self.term = env.load(TERM_KEY).unwrap_or(0);
        self.voted_for = env.load(VOTED_FOR_KEY).flatten();
        self.stored = (self.term, self.voted_for);
        let len: u64 = env.load(LOG_LEN_KEY).unwrap_or(0);
        self.log = (1..=len)
            .map(|i| {
                env.load(&entry_key(i))
                    .unwrap_or_else(|| panic!("log entry {i} of {len} missing"))
            })
            .collect();
        self.stored_len = len;
        for (k, e) in self.log.iter().enumerate() {
            env.observe(Observation::LogAppend {
                index: k as u64 + 1,
                term: e.term,
                digest: e.digest(),
            });
        }
        self.unsynced = true;
        self.persist(env);
        self.announce(env);
        self.reset_election_timer(env);
    }

    pub fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        self.session_tick(env);
        match msg {
            Msg::RequestVote {
                term,
                last_log_index,
                last_log_term,
            } => self.on_request_vote(env, from, term, (last_log_term, last_log_index)),
            Msg::RequestVoteReply { term, granted } => self.on_vote_reply(env, from, term, granted),
            Msg::AppendEntries {
                term,
                prev_log_index,
                prev_log_term,
                entries,
                leader_commit,
                round,
            } => self.on_append_entries(
                env,
                from,
                term,
                (prev_log_index, prev_log_term),
                entries,
                leader_commit,
                round,
            ),
            Msg::AppendEntriesReply {
                term,
                success,
                match_index,
                last_index,
                round,
            } => self.on_append_entries_reply(
                env,
                from,
                term,
                success,
                (match_index, last_index),
                round,
            ),
            Msg::Request { req, op } => self.on_request(env, from, req, op),
            Msg::Reply { .. } | Msg::Resource(_) => {}
        }
        self.persist(env);
    }

    pub fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        self.session_tick(env);
        match timer {
            Timer::Election if self.role != Role::Leader => self.start_election(env),
            Timer::Heartbeat if self.role == Role::Leader => {
                self.check_leader_lease(env);
                if self.role == Role::Leader {
                    if self.persist(env) {
                        self.advance_commit(env);
                    }
                    self.heartbeat(env);
                }
            }
            _ => {}
        }
        self.persist(env);
    }
}
