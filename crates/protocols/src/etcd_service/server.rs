//! An etcd member: Raft with a log (the rules of [`crate::raft_log`], in its plain form:
//! no PreVote, no CheckQuorum), the KV state machine with revisions and leases applied
//! from the log, and the leader's lessor.

use super::{Answer, EtcdServiceConfig, EtcdServiceVariant, LeaseId, Msg, Op, Timer};
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

/// What a log entry asks the state machine to do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Cmd {
    /// A new leader's first entry (Raft §8).
    Noop,
    /// `LeaseGrant`: the lease's id is this entry's index.
    Grant {
        client: NodeId,
        ttl: Duration,
    },
    /// `LeaseRevoke`: the lease and its keys go, in one revision.
    Revoke {
        lease: LeaseId,
    },
    /// `LeaseCheckpoint` (`lease-checkpoint`, etcd #9924): the lease's remaining TTL as
    /// the leader saw it, which a later leader's `Promote` starts from; zero clears it
    /// (a keep-alive came).
    Checkpoint {
        lease: LeaseId,
        remaining: Duration,
    },
    PutIfAbsent {
        key: String,
        lease: LeaseId,
    },
    Delete {
        key: String,
        create_revision: u64,
    },
    /// A kv-client's put of a register (its session and the put's number in it).
    KvPut {
        key: u32,
        value: i64,
        session: u64,
        seq: u64,
    },
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

/// A lease in the state machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LeaseState {
    pub client: NodeId,
    pub ttl: Duration,
    pub keys: BTreeSet<String>,
    /// The last checkpointed remaining TTL (etcd's `remainingTTL`; `None`: the full TTL).
    pub remaining: Option<Duration>,
}

impl LeaseState {
    /// etcd's `RemainingTTL()`: the checkpointed remaining TTL, or the whole TTL.
    pub fn remaining_ttl(&self) -> Duration {
        self.remaining.unwrap_or(self.ttl)
    }
}

/// A key: its create revision and lease.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyState {
    pub create_revision: u64,
    pub lease: LeaseId,
}

/// The state machine every member applies the log to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    /// The revision of the last change.
    pub revision: u64,
    pub leases: BTreeMap<LeaseId, LeaseState>,
    pub kv: BTreeMap<String, KeyState>,
    /// The kv-clients' registers (0 until written).
    pub registers: BTreeMap<u32, i64>,
    /// The last put applied of each kv-client session: a duplicated or retried put
    /// applies once (Raft §6.3).
    pub sessions: BTreeMap<u64, u64>,
}

impl State {
    /// The key under `prefix` with the highest create revision below `before`.
    pub fn predecessor(&self, prefix: &str, before: u64) -> Option<String> {
        let dir = format!("{prefix}/");
        self.kv
            .range(dir.clone()..)
            .take_while(|(k, _)| k.starts_with(&dir))
            .filter(|(_, kv)| kv.create_revision < before)
            .max_by_key(|(_, kv)| kv.create_revision)
            .map(|(k, _)| k.clone())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
}

/// A linearizable read waiting at the leader (ReadIndex).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PendingRead {
    client: NodeId,
    req: u64,
    op: Op,
    round: u64,
    index: Option<u64>,
}

/// etcd-raft's `readOnly` (`read_only.go`, ReadOnlySafe, etcd v3.5.x `raft/` and
/// etcd-io/raft before PR #397): the leader's pending ReadIndex requests keyed by their
/// ctx, in arrival order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct ReadOnly {
    pending: BTreeMap<u64, ReadIndexStatus>,
    queue: Vec<u64>,
}

/// `readIndexStatus`: the commit index when the request came, who asked, who acked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ReadIndexStatus {
    index: u64,
    from: NodeId,
    acks: BTreeSet<NodeId>,
}

impl ReadOnly {
    /// `addRequest`: a ctx already pending is not added again (its first index stays).
    fn add_request(&mut self, index: u64, ctx: u64, from: NodeId) {
        if self.pending.contains_key(&ctx) {
            return;
        }
        self.pending.insert(
            ctx,
            ReadIndexStatus {
                index,
                from,
                acks: BTreeSet::new(),
            },
        );
        self.queue.push(ctx);
    }

    /// `recvAck`: the acknowledgements of `ctx` so far (none if it is not pending).
    fn recv_ack(&mut self, id: NodeId, ctx: u64) -> usize {
        self.pending.get_mut(&ctx).map_or(0, |rs| {
            rs.acks.insert(id);
            rs.acks.len()
        })
    }

    /// `advance`: every request queued up to and including `ctx`, released.
    fn advance(&mut self, ctx: u64) -> Vec<(u64, ReadIndexStatus)> {
        let Some(at) = self.queue.iter().position(|&c| c == ctx) else {
            return Vec::new();
        };
        self.queue
            .drain(..=at)
            .collect::<Vec<u64>>()
            .into_iter()
            .filter_map(|c| self.pending.remove(&c).map(|rs| (c, rs)))
            .collect()
    }

    /// `lastPendingRequestCtx`: what a periodic heartbeat carries.
    fn last_pending(&self) -> Option<u64> {
        self.queue.last().copied()
    }
}

/// A kv-client's get waiting for the read loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct KvRead {
    client: NodeId,
    attempt: u64,
    key: u32,
}

/// One turn of etcd's `linearizableReadLoop` (`requestCurrentIndex`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Iteration {
    /// The reads this turn answers (`nr`: those that came before it began).
    batch: Vec<KvRead>,
    /// The request id last sent.
    id: u64,
    /// Every request id sent this turn (PR #21399 accepts a read state for any).
    ids: BTreeSet<u64>,
    /// The leader changed since the turn began (its `leaderChangedNotifier` closed).
    leader_changed: bool,
    /// The read index confirmed, waiting to be applied.
    confirmed: Option<u64>,
}

/// etcd's read loop (`server/etcdserver/v3_server.go`, v3.5.x): its channels and turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct ReadLoop {
    /// Reads for the next turn (`readNotifier`, swapped at a turn's start).
    waiting: Vec<KvRead>,
    current: Option<Iteration>,
    /// `readStateC`: read states raft handed over, (ctx, index).
    read_states: Vec<(u64, u64)>,
    /// `reqIDGen`'s next id (0: not started).
    next_id: u64,
}

/// One etcd member.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    me: NodeId,
    peers: Vec<NodeId>,
    config: EtcdServiceConfig,

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
    /// Deletion watches this member serves: key -> (watcher, request id).
    watches: BTreeMap<String, BTreeSet<(NodeId, u64)>>,

    next_index: BTreeMap<NodeId, u64>,
    match_index: BTreeMap<NodeId, u64>,
    acked_round: BTreeMap<NodeId, u64>,
    round: u64,
    /// Requests this leader appended, by index: the client and request id to answer.
    proposed: BTreeMap<u64, (NodeId, u64)>,
    reads: Vec<PendingRead>,

    // the lessor (primary on the leader only)
    /// Each lease's expiry by this member's monotonic clock, while primary.
    expiry: BTreeMap<LeaseId, LocalTime>,
    /// Leases whose revoke this lessor has asked for (not asked again while primary).
    revoking: BTreeSet<LeaseId>,
    /// `correct`: expired leases waiting for the leadership check (the round that must
    /// be acknowledged, in this term).
    to_confirm: Vec<(LeaseId, u64, u64)>,
    /// `revoke-after-stall`: revokes the lessor asked for, handed to the raft half when
    /// `Timer::Revoke` fires (after what was already waiting).
    proposals: Vec<LeaseId>,
    /// `lease-checkpoint`: each lease's next checkpoint by this member's monotonic clock,
    /// while primary (etcd's `leaseCheckpointHeap`).
    checkpoints: BTreeMap<LeaseId, LocalTime>,
    /// The length of the log this member recovered at its start (`checkpoint-unpersisted`:
    /// what it had applied before, in etcd its backend, without the remaining TTLs).
    recovered: u64,

    announced: Option<Observation>,

    // linearizable reads as etcd serves them (the kv-clients' gets)
    read_only: ReadOnly,
    /// ReadIndex requests a leader holds until it commits in its term
    /// (`pendingReadIndexMessages`).
    postponed_reads: Vec<(NodeId, u64)>,
    /// Kv puts this leader appended, by index: the client and attempt to answer.
    kv_proposed: BTreeMap<u64, (NodeId, u64)>,
    read_loop: ReadLoop,
    /// The leader raft last reported (`rh.getLead()`): a new one closes the read
    /// loop's `leaderChanged` channel.
    last_lead: Option<NodeId>,
}

impl Server {
    pub fn new(config: &EtcdServiceConfig, me: NodeId, cluster: &Cluster) -> Server {
        Server {
            me,
            peers: EtcdServiceConfig::servers(cluster)
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
            watches: BTreeMap::new(),
            next_index: BTreeMap::new(),
            match_index: BTreeMap::new(),
            acked_round: BTreeMap::new(),
            round: 0,
            proposed: BTreeMap::new(),
            reads: Vec::new(),
            expiry: BTreeMap::new(),
            revoking: BTreeSet::new(),
            to_confirm: Vec::new(),
            proposals: Vec::new(),
            checkpoints: BTreeMap::new(),
            recovered: 0,
            announced: None,
            read_only: ReadOnly::default(),
            postponed_reads: Vec::new(),
            kv_proposed: BTreeMap::new(),
            read_loop: ReadLoop::default(),
            last_lead: None,
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
        // etcd's raftNode: `newLeader := SoftState.Lead != None && getLead() != Lead`
        // closes `leaderChanged` (v3.5.x `server/etcdserver/raft.go`, `server.go`).
        if self.leader != self.last_lead {
            if self.leader.is_some() {
                if let Some(it) = self.read_loop.current.as_mut() {
                    it.leader_changed = true;
                    env.set_timer(Timer::ReadLoop, Duration::from_micros(1));
                }
            }
            self.last_lead = self.leader;
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
            self.reads.clear();
            self.proposed.clear();
            // etcd-raft `reset(term)`: a new `readOnly`.
            self.read_only = ReadOnly::default();
            self.postponed_reads.clear();
            self.kv_proposed.clear();
            // `Demote`: the lessor is no longer primary.
            self.expiry.clear();
            self.revoking.clear();
            self.to_confirm.clear();
            self.checkpoints.clear();
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
        self.expiry.clear();
        self.revoking.clear();
        self.to_confirm.clear();
        self.checkpoints.clear();
        self.read_only = ReadOnly::default();
        self.postponed_reads.clear();
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

    /// A round to every peer; it carries the last pending ReadIndex ctx, as etcd-raft's
    /// `bcastHeartbeat` does.
    fn heartbeat(&mut self, env: &mut E<'_>) {
        let ctx = self.read_only.last_pending();
        self.heartbeat_with(env, ctx);
    }

    /// A round carrying `ctx` (`bcastHeartbeatWithCtx`).
    fn heartbeat_with(&mut self, env: &mut E<'_>, ctx: Option<u64>) {
        self.round += 1;
        for k in 0..self.peers.len() {
            let peer = self.peers[k];
            self.replicate_with(env, peer, ctx);
        }
        env.set_timer(Timer::Heartbeat, self.config.heartbeat_interval);
    }

    fn replicate(&mut self, env: &mut E<'_>, peer: NodeId) {
        self.replicate_with(env, peer, None);
    }

    fn replicate_with(&mut self, env: &mut E<'_>, peer: NodeId, ctx: Option<u64>) {
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
            ctx,
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
        (round, ctx): (u64, Option<u64>),
    ) {
        self.catch_up_term(env, term, Some(from));
        let refuse = |s: &Server| Msg::AppendEntriesReply {
            term: s.term,
            success: false,
            match_index: prev_log_index,
            last_index: s.last_index(),
            round,
            ctx,
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
            ctx,
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
        (round, ctx): (u64, Option<u64>),
    ) {
        self.catch_up_term(env, term, None);
        if self.role != Role::Leader || term != self.term {
            return;
        }
        // `MsgHeartbeatResp` with a context: `recvAck`, and once a majority has acked
        // it, `advance` releases every request queued up to it.
        if let Some(ctx) = ctx {
            if self.read_only.recv_ack(from, ctx) >= self.quorum() {
                for (ctx, rs) in self.read_only.advance(ctx) {
                    self.respond_read_index(env, rs.from, ctx, rs.index);
                }
            }
        }
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
        self.serve_reads(env);
        self.revoke_confirmed(env);
    }

    /// Raft §5.4.2: commit the highest index a majority holds, if of the current term.
    fn advance_commit(&mut self, env: &mut E<'_>) {
        let mut held: Vec<u64> = self.match_index.values().copied().collect();
        held.push(self.durable_len);
        held.sort_unstable_by(|a, b| b.cmp(a));
        let n = held[self.quorum() - 1];
        if n > self.commit && self.term_at(n) == Some(self.term) {
            self.commit = n;
            for read in self.reads.iter_mut().filter(|r| r.index.is_none()) {
                read.index = Some(n);
            }
            self.apply_committed(env);
            // `releasePendingReadIndexMessages`: the first commit of this term.
            for (from, ctx) in std::mem::take(&mut self.postponed_reads) {
                self.step_read_index(env, from, ctx);
            }
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
                    self.reply(env, client, req, answer);
                }
            }
            if let Some((client, attempt)) = self.kv_proposed.remove(&index) {
                if matches!(entry.cmd, Cmd::KvPut { .. }) {
                    let answer = crate::raft_log::Answer::Ok(None);
                    self.send(env, client, Msg::KvReply { attempt, answer });
                }
            }
        }
        // The read loop waits for its read index to be applied (`applyWait`).
        if self
            .read_loop
            .current
            .as_ref()
            .and_then(|it| it.confirmed)
            .is_some_and(|i| i <= self.applied)
        {
            env.set_timer(Timer::ReadLoop, Duration::from_micros(1));
        }
    }

    /// Applies one command; the answer for the client that asked, if any.
    fn apply(&mut self, env: &mut E<'_>, index: u64, cmd: &Cmd) -> Option<Answer> {
        match cmd {
            Cmd::Noop => {
                // etcd promotes its lessor when the leader applies the empty entry of its
                // term (`applyEntryNormal`), having applied everything before it.
                if self.role == Role::Leader && self.term_at(index) == Some(self.term) {
                    self.promote(env);
                }
                None
            }
            Cmd::Grant { client, ttl } => {
                self.state.revision += 1;
                self.state.leases.insert(
                    index,
                    LeaseState {
                        client: *client,
                        ttl: *ttl,
                        keys: BTreeSet::new(),
                        remaining: None,
                    },
                );
                if self.role == Role::Leader {
                    self.expiry.insert(index, env.monotonic() + *ttl);
                    self.schedule_checkpoint(env, index);
                    // A grant this leader answers (not one it applies again after a
                    // restart, or applies for its predecessor: no client asked it).
                    if self.proposed.contains_key(&index) {
                        env.observe(Observation::LeaseRenewed {
                            lease: index,
                            ttl_ms: ttl_ms(*ttl),
                        });
                    }
                }
                Some(Answer::Granted {
                    lease: index,
                    ttl: *ttl,
                })
            }
            Cmd::Revoke { lease } => {
                self.expiry.remove(lease);
                self.revoking.remove(lease);
                let l = self.state.leases.remove(lease)?;
                self.state.revision += 1;
                env.observe(Observation::Note {
                    text: format!("lease {lease} of {} revoked", l.client),
                });
                if self.role == Role::Leader {
                    // The primary lessor's `Revoke` (once per lease: the leader that
                    // applies it; a later leader applies what its predecessor did not).
                    env.observe(Observation::LeaseRevoked { lease: *lease });
                }
                for key in &l.keys {
                    self.remove_key(env, key);
                }
                None
            }
            Cmd::Checkpoint { lease, remaining } => {
                // `lessor.Checkpoint`: only the remaining TTL changes (a later
                // `Promote` applies it); the primary schedules the next checkpoint.
                if self.config.variant == EtcdServiceVariant::CheckpointUnpersisted
                    && index <= self.recovered
                {
                    // Before #13508 the remaining TTL lived in memory only: a restarted
                    // member's backend has the lease without it, and the entries it had
                    // applied are not applied again.
                    return None;
                }
                if let Some(l) = self.state.leases.get_mut(lease) {
                    l.remaining = (!remaining.is_zero()).then_some(*remaining);
                    if self.role == Role::Leader {
                        self.schedule_checkpoint(env, *lease);
                    }
                }
                None
            }
            Cmd::PutIfAbsent { key, lease } => {
                let create_revision = if let Some(kv) = self.state.kv.get(key) {
                    Some(kv.create_revision)
                } else if let Some(l) = self.state.leases.get_mut(lease) {
                    self.state.revision += 1;
                    l.keys.insert(key.clone());
                    self.state.kv.insert(
                        key.clone(),
                        KeyState {
                            create_revision: self.state.revision,
                            lease: *lease,
                        },
                    );
                    Some(self.state.revision)
                } else {
                    None
                };
                Some(Answer::Put { create_revision })
            }
            Cmd::KvPut {
                key,
                value,
                session,
                seq,
            } => {
                if self.state.sessions.get(session).is_some_and(|s| s >= seq) {
                    return None; // applied before
                }
                self.state.sessions.insert(*session, *seq);
                self.state.revision += 1;
                self.state.registers.insert(*key, *value);
                None
            }
            Cmd::Delete {
                key,
                create_revision,
            } => {
                if self
                    .state
                    .kv
                    .get(key)
                    .is_some_and(|kv| kv.create_revision == *create_revision)
                {
                    self.state.revision += 1;
                    self.remove_key(env, key);
                }
                Some(Answer::Deleted)
            }
        }
    }

    fn remove_key(&mut self, env: &mut E<'_>, key: &str) {
        let Some(kv) = self.state.kv.remove(key) else {
            return;
        };
        if let Some(lease) = self.state.leases.get_mut(&kv.lease) {
            lease.keys.remove(key);
        }
        for (client, req) in self.watches.remove(key).unwrap_or_default() {
            self.reply(env, client, req, Answer::KeyDeleted);
        }
    }

    // ----- reads (ReadIndex) -----

    fn confirmed_round(&self) -> u64 {
        let mut rounds: Vec<u64> = self.acked_round.values().copied().collect();
        rounds.push(self.round);
        rounds.sort_unstable_by(|a, b| b.cmp(a));
        rounds[self.quorum() - 1]
    }

    fn serve_reads(&mut self, env: &mut E<'_>) {
        let confirmed = self.confirmed_round();
        let applied = self.applied;
        let (due, waiting): (Vec<PendingRead>, Vec<PendingRead>) = std::mem::take(&mut self.reads)
            .into_iter()
            .partition(|r| r.round <= confirmed && r.index.is_some_and(|i| i <= applied));
        self.reads = waiting;
        for r in due {
            env.observe(Observation::Serves { term: self.term });
            let answer = self.read(&r.op);
            self.reply(env, r.client, r.req, answer);
        }
    }

    fn read(&self, op: &Op) -> Answer {
        match op {
            Op::GetPredecessor { prefix, before } => Answer::Predecessor {
                key: self.state.predecessor(prefix, *before),
                revision: self.state.revision,
            },
            Op::Get { key } => Answer::Get {
                create_revision: self.state.kv.get(key).map(|kv| kv.create_revision),
            },
            _ => unreachable!("only reads wait for a read index"),
        }
    }

    // ----- the lessor -----

    /// The lessor's tick (etcd's `runLoop` goroutine, here run first in every handler):
    /// while primary, the leases past their expiry by this member's clock are to be
    /// revoked.
    fn lessor_tick(&mut self, env: &mut E<'_>) {
        if self.role != Role::Leader {
            return;
        }
        self.checkpoint_scheduled(env);
        let now = env.monotonic();
        let expired: Vec<LeaseId> = self
            .expiry
            .iter()
            .filter(|&(id, &at)| at <= now && !self.revoking.contains(id))
            .map(|(&id, _)| id)
            .collect();
        if expired.is_empty() {
            return;
        }
        for &id in &expired {
            self.revoking.insert(id);
        }
        match self.config.variant {
            EtcdServiceVariant::RevokeAfterStall => {
                // `revokeExpiredLeases` proposes from a goroutine of its own: the
                // proposal reaches raft after raft has handled what already waits for it.
                self.proposals.extend(expired);
                env.set_timer(Timer::Revoke, Duration::from_micros(1));
            }
            _ => {
                // `ensureLeadership` (PR #16822): a linearizable read first, i.e. a
                // round acknowledged by a majority in this term.
                self.heartbeat(env);
                let (round, term) = (self.round, self.term);
                self.to_confirm
                    .extend(expired.into_iter().map(|id| (id, round, term)));
            }
        }
    }

    /// `Promote`: every lease this member knows of gets `RemainingTTL()` from now: the
    /// full TTL (etcd without checkpointing, its default: #9395), or the last
    /// checkpointed remaining TTL (`lease-checkpoint`, #9924).
    fn promote(&mut self, env: &mut E<'_>) {
        let now = env.monotonic();
        self.expiry = self
            .state
            .leases
            .iter()
            .map(|(&id, l)| (id, now + l.remaining_ttl()))
            .collect();
        self.revoking.clear();
        self.to_confirm.clear();
        self.checkpoints.clear();
        let ids: Vec<LeaseId> = self.state.leases.keys().copied().collect();
        for id in ids {
            self.schedule_checkpoint(env, id);
        }
    }

    /// The checkpoint interval, when this member checkpoints (`lease-checkpoint`).
    fn checkpoint_interval(&self) -> Option<Duration> {
        matches!(
            self.config.variant,
            EtcdServiceVariant::LeaseCheckpoint | EtcdServiceVariant::CheckpointUnpersisted
        )
        .then_some(self.config.lease_checkpoint_interval)
    }

    /// `scheduleCheckpointIfNeeded`: a lease whose remaining TTL is longer than the
    /// interval is checkpointed one interval from now (a shorter one never is).
    fn schedule_checkpoint(&mut self, env: &mut E<'_>, lease: LeaseId) {
        let Some(interval) = self.checkpoint_interval() else {
            return;
        };
        if self
            .state
            .leases
            .get(&lease)
            .is_some_and(|l| l.remaining_ttl() > interval)
        {
            let at = env.monotonic() + interval;
            self.checkpoints.entry(lease).or_insert(at);
        }
    }

    /// `checkpointScheduledLeases` (`findDueScheduledCheckpoints`): each due lease that
    /// has not expired and has less than its TTL left gets its remaining TTL proposed.
    fn checkpoint_scheduled(&mut self, env: &mut E<'_>) {
        if self.checkpoints.is_empty() {
            return;
        }
        let now = env.monotonic();
        let due: Vec<LeaseId> = self
            .checkpoints
            .iter()
            .filter(|&(_, &at)| at <= now)
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            self.checkpoints.remove(&id);
            let (Some(&expiry), Some(lease)) = (self.expiry.get(&id), self.state.leases.get(&id))
            else {
                continue;
            };
            if now >= expiry {
                continue;
            }
            let remaining = now.until(expiry);
            if remaining >= lease.ttl {
                continue;
            }
            self.propose(
                env,
                Cmd::Checkpoint {
                    lease: id,
                    remaining,
                },
                None,
            );
        }
    }

    /// `correct`: revokes whose leadership check came back (a majority acknowledged the
    /// round, in the term it was sent in, and we still lead).
    fn revoke_confirmed(&mut self, env: &mut E<'_>) {
        if self.to_confirm.is_empty() || self.role != Role::Leader {
            return;
        }
        let confirmed = self.confirmed_round();
        let term = self.term;
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.to_confirm)
            .into_iter()
            .partition(|&(_, round, t)| round <= confirmed && t == term);
        self.to_confirm = waiting;
        for (lease, _, _) in due {
            self.propose(env, Cmd::Revoke { lease }, None);
        }
    }

    /// The revoke goroutine's proposals reach the raft half. A leader appends
    /// them; a follower forwards them to the leader it knows (etcd raft forwards
    /// `MsgProp`), which is the bug when the lessor asked as a leader now deposed.
    fn hand_over_proposals(&mut self, env: &mut E<'_>) {
        for lease in std::mem::take(&mut self.proposals) {
            let cmd = Cmd::Revoke { lease };
            match (self.role, self.leader) {
                (Role::Leader, _) => self.propose(env, cmd, None),
                (_, Some(leader)) => {
                    env.observe(Observation::Note {
                        text: format!("deposed lessor forwards the revoke of lease {lease}"),
                    });
                    self.send(env, leader, Msg::Propose { cmd });
                }
                (_, None) => {} // dropped (`ErrProposalDropped`)
            }
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

    // ----- client requests -----

    fn on_request(&mut self, env: &mut E<'_>, client: NodeId, req: u64, op: Op) {
        if self.role != Role::Leader {
            let leader = self.leader;
            self.reply(env, client, req, Answer::NotLeader(leader));
            return;
        }
        match op {
            Op::Grant { ttl } => self.propose(env, Cmd::Grant { client, ttl }, Some((client, req))),
            Op::PutIfAbsent { key, lease } => {
                self.propose(env, Cmd::PutIfAbsent { key, lease }, Some((client, req)))
            }
            Op::Delete {
                key,
                create_revision,
            } => self.propose(
                env,
                Cmd::Delete {
                    key,
                    create_revision,
                },
                Some((client, req)),
            ),
            Op::KeepAlive { lease } => {
                // `LeaseRenew` at the leader, not through the log; only once this leader
                // has applied everything committed (etcd waits for its applied index).
                let ready =
                    self.term_at(self.commit) == Some(self.term) && self.applied == self.commit;
                if !ready {
                    return; // the client asks again
                }
                let ttl = self.state.leases.get(&lease).map(|l| l.ttl);
                if let Some(ttl) = ttl {
                    if self.revoking.contains(&lease) {
                        // etcd: a lease being revoked is not renewed (`ErrLeaseNotFound`
                        // once the revoke applies); no answer until then.
                        return;
                    }
                    // `Renew` clears a checkpointed remaining TTL through the log first.
                    let checkpointed = self.state.leases.get(&lease).and_then(|l| l.remaining);
                    if self.checkpoint_interval().is_some() && checkpointed.is_some() {
                        let clear = Cmd::Checkpoint {
                            lease,
                            remaining: Duration::ZERO,
                        };
                        self.propose(env, clear, None);
                    }
                    self.expiry.insert(lease, env.monotonic() + ttl);
                    env.observe(Observation::LeaseRenewed {
                        lease,
                        ttl_ms: ttl_ms(ttl),
                    });
                }
                self.reply(env, client, req, Answer::KeepAlive { ttl });
            }
            Op::WatchDelete { key, revision } => {
                let unchanged = self
                    .state
                    .kv
                    .get(&key)
                    .is_some_and(|kv| kv.create_revision <= revision);
                if unchanged {
                    let watchers = self.watches.entry(key).or_default();
                    watchers.retain(|(w, _)| *w != client);
                    watchers.insert((client, req));
                } else {
                    self.reply(env, client, req, Answer::KeyDeleted);
                }
            }
            op @ (Op::GetPredecessor { .. } | Op::Get { .. }) => {
                let index = (self.term_at(self.commit) == Some(self.term)).then_some(self.commit);
                self.heartbeat(env);
                let round = self.round;
                self.reads.push(PendingRead {
                    client,
                    req,
                    op,
                    round,
                    index,
                });
                self.serve_reads(env);
            }
        }
    }

    // ----- linearizable reads as etcd serves them (kv-clients) -----

    /// A kv-client's attempt: a put goes through the log at the leader; a get, at any
    /// member, waits for the read loop (`linearizableReadNotify`).
    fn on_kv_request(&mut self, env: &mut E<'_>, client: NodeId, req: crate::raft_log::Request) {
        use crate::raft_log::{Answer as KvAnswer, Op as KvOp};
        match req.op {
            KvOp::Put { key, value } => {
                if self.role != Role::Leader {
                    let answer = KvAnswer::NotLeader(self.leader);
                    let attempt = req.attempt;
                    self.send(env, client, Msg::KvReply { attempt, answer });
                    return;
                }
                if self.kv_proposed.len() >= 4096 {
                    self.kv_proposed.clear();
                }
                let index = self.last_index() + 1;
                self.kv_proposed.insert(index, (client, req.attempt));
                let cmd = Cmd::KvPut {
                    key,
                    value,
                    session: req.session,
                    seq: req.seq,
                };
                self.propose(env, cmd, None);
            }
            KvOp::Get { key } => {
                self.read_loop.waiting.push(KvRead {
                    client,
                    attempt: req.attempt,
                    key,
                });
                // `readwaitc`: an idle loop wakes and takes this read at once, before
                // raft handles its next message (the loop goroutine scheduled first:
                // after a stall, a get that piled up may so send its ReadIndex between
                // two peers' messages, as in etcd #20418). A busy loop takes it on its
                // next turn.
                if self.read_loop.current.is_none() {
                    self.run_read_loop(env);
                }
            }
        }
    }

    /// etcd-raft's `MsgReadIndex` (v3.5.x `raft/raft.go`): a leader that has committed
    /// in its term records its commit index for `ctx` (`addRequest`), acks it itself
    /// and sends a heartbeat round carrying `ctx`; one that has not yet holds it
    /// (`pendingReadIndexMessages`). A follower forwards its own to the leader it knows,
    /// or drops it ("no leader ... dropping index reading msg").
    fn step_read_index(&mut self, env: &mut E<'_>, from: NodeId, ctx: u64) {
        if self.role != Role::Leader {
            if from == self.me && self.role == Role::Follower {
                if let Some(leader) = self.leader {
                    self.send(env, leader, Msg::ReadIndex { ctx });
                }
            }
            return;
        }
        if self.peers.is_empty() {
            let commit = self.commit;
            self.respond_read_index(env, from, ctx, commit);
            return;
        }
        if self.term_at(self.commit) != Some(self.term) {
            self.postponed_reads.push((from, ctx));
            return;
        }
        self.read_only.add_request(self.commit, ctx, from);
        self.read_only.recv_ack(self.me, ctx);
        self.heartbeat_with(env, Some(ctx));
    }

    /// `responseToReadIndexReq`: a read state for this member's own read loop, or a
    /// `MsgReadIndexResp` to the member that asked.
    fn respond_read_index(&mut self, env: &mut E<'_>, to: NodeId, ctx: u64, index: u64) {
        if to == self.me {
            self.read_state(env, ctx, index);
        } else {
            let term = self.term;
            self.send(env, to, Msg::ReadIndexResp { term, ctx, index });
        }
    }

    /// Raft hands a read state to the read loop (`readStateC`).
    fn read_state(&mut self, env: &mut E<'_>, ctx: u64, index: u64) {
        if self.read_loop.current.is_none() {
            return; // nobody waits: the loop would skip it as out of date
        }
        self.read_loop.read_states.push((ctx, index));
        env.set_timer(Timer::ReadLoop, Duration::from_micros(1));
    }

    /// `reqIDGen.Next()`: ids unique to this member and, as etcd's generator seeds
    /// itself from the clock at start, to this incarnation.
    fn next_read_id(&mut self, env: &mut E<'_>) -> u64 {
        if self.read_loop.next_id == 0 {
            let millis = u64::try_from(env.wall().as_nanos() / 1_000_000).unwrap_or(0);
            self.read_loop.next_id =
                (u64::from(self.me.0) + 1) << 48 | (millis & 0xFF_FFFF_FFFF) << 8;
        }
        self.read_loop.next_id += 1;
        self.read_loop.next_id
    }

    /// The read loop goroutine (`linearizableReadLoop` and `requestCurrentIndex`,
    /// etcd v3.5.x `server/etcdserver/v3_server.go`). Woken by a read state, a leader
    /// change or an applied index, it runs after raft has handled what was already
    /// waiting, so a read state and a leader change can both be ready when it looks;
    /// woken by a get while idle, it runs at once (`on_kv_request`).
    fn run_read_loop(&mut self, env: &mut E<'_>) {
        loop {
            let Some(it) = self.read_loop.current.as_mut() else {
                if self.read_loop.waiting.is_empty() {
                    self.read_loop.read_states.clear();
                    return;
                }
                self.start_read_turn(env);
                continue;
            };
            if let Some(index) = it.confirmed {
                if self.applied < index {
                    return; // `applyWait.Wait(confirmedIndex)`
                }
                let done = self.read_loop.current.take().expect("a turn");
                self.answer_reads(env, done.batch);
                continue;
            }
            let state_ready = !self.read_loop.read_states.is_empty();
            if !state_ready && !it.leader_changed {
                return;
            }
            // Go's `select` picks at random among ready cases; PR #21375 looks at the
            // leader change again after taking a read state.
            let take_state = state_ready
                && (!it.leader_changed
                    || (self.config.variant.reads_across_leader_change()
                        && env.range_inclusive(0, 1) == 0));
            if state_ready && !take_state && !self.config.variant.reads_across_leader_change() {
                self.read_loop.read_states.remove(0); // taken, then the leader change wins
            }
            if !take_state {
                // `ErrLeaderChanged`
                let failed = self.read_loop.current.take().expect("a turn");
                self.fail_reads(env, failed.batch);
                continue;
            }
            let (ctx, index) = self.read_loop.read_states.remove(0);
            let own = if self.config.variant.reuses_read_ctx() {
                ctx == it.id
            } else {
                it.ids.contains(&ctx)
            };
            if own {
                it.confirmed = Some(index);
                env.cancel_timer(&Timer::ReadRetry);
                env.cancel_timer(&Timer::ReadError);
            }
            // else: "ignored out-of-date read index response"
        }
    }

    /// A turn begins: the reads so far are its batch; its first ReadIndex goes out.
    fn start_read_turn(&mut self, env: &mut E<'_>) {
        let id = self.next_read_id(env);
        self.read_loop.read_states.clear();
        self.read_loop.current = Some(Iteration {
            batch: std::mem::take(&mut self.read_loop.waiting),
            id,
            ids: BTreeSet::from([id]),
            leader_changed: false,
            confirmed: None,
        });
        env.set_timer(Timer::ReadRetry, self.config.read_index_retry);
        env.set_timer(Timer::ReadError, self.config.read_timeout);
        self.step_read_index(env, self.me, id);
    }

    /// `retryTimer`: the ReadIndex again: with the same id before PR #21399, with a
    /// new one (also accepted) after it.
    fn on_read_retry(&mut self, env: &mut E<'_>) {
        let reuse = self.config.variant.reuses_read_ctx();
        let Some(it) = self.read_loop.current.as_ref() else {
            return;
        };
        if it.confirmed.is_some() {
            return;
        }
        let id = if reuse {
            it.id
        } else {
            let id = self.next_read_id(env);
            let it = self.read_loop.current.as_mut().expect("a turn");
            it.id = id;
            it.ids.insert(id);
            id
        };
        env.set_timer(Timer::ReadRetry, self.config.read_index_retry);
        self.step_read_index(env, self.me, id);
    }

    /// `errorTimer`: `ErrTimeout` to the turn's reads; the next turn begins.
    fn on_read_error(&mut self, env: &mut E<'_>) {
        if self
            .read_loop
            .current
            .as_ref()
            .is_some_and(|it| it.confirmed.is_none())
        {
            let failed = self.read_loop.current.take().expect("a turn");
            env.cancel_timer(&Timer::ReadRetry);
            self.fail_reads(env, failed.batch);
            self.run_read_loop(env);
        }
    }

    /// `nr.notify(nil)`: each read is served from this member's state machine.
    fn answer_reads(&mut self, env: &mut E<'_>, batch: Vec<KvRead>) {
        self.reply_reads(env, batch, |s, r| {
            let value = s.state.registers.get(&r.key).copied().unwrap_or(0);
            crate::raft_log::Answer::Ok(Some(value))
        });
    }

    /// `nr.notify(err)`: the reads fail (nothing done), naming the leader we know.
    fn fail_reads(&mut self, env: &mut E<'_>, batch: Vec<KvRead>) {
        env.cancel_timer(&Timer::ReadRetry);
        env.cancel_timer(&Timer::ReadError);
        self.reply_reads(env, batch, |s, _| {
            crate::raft_log::Answer::NotLeader(s.leader)
        });
    }

    /// Sends each read of `batch` its answer, in order.
    fn reply_reads(
        &mut self,
        env: &mut E<'_>,
        batch: Vec<KvRead>,
        answer: impl Fn(&Self, &KvRead) -> crate::raft_log::Answer,
    ) {
        for r in batch {
            let answer = answer(self, &r);
            let reply = Msg::KvReply {
                attempt: r.attempt,
                answer,
            };
            self.send(env, r.client, reply);
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
        self.recovered = len;
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
        self.lessor_tick(env);
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
                ctx,
            } => self.on_append_entries(
                env,
                from,
                term,
                (prev_log_index, prev_log_term),
                entries,
                leader_commit,
                (round, ctx),
            ),
            Msg::AppendEntriesReply {
                term,
                success,
                match_index,
                last_index,
                round,
                ctx,
            } => self.on_append_entries_reply(
                env,
                from,
                term,
                success,
                (match_index, last_index),
                (round, ctx),
            ),
            Msg::ReadIndex { ctx } => self.step_read_index(env, from, ctx),
            Msg::ReadIndexResp { term, ctx, index } => {
                // etcd-raft drops a message of an older term.
                self.catch_up_term(env, term, None);
                if term == self.term {
                    self.read_state(env, ctx, index);
                }
            }
            Msg::KvRequest(req) => self.on_kv_request(env, from, req),
            Msg::Propose { cmd } => {
                if self.role == Role::Leader {
                    self.propose(env, cmd, None);
                }
            }
            Msg::Request { req, op } => self.on_request(env, from, req, op),
            Msg::Reply { .. } | Msg::KvReply { .. } | Msg::Resource(_) => {}
        }
        self.persist(env);
    }

    pub fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        self.lessor_tick(env);
        match timer {
            Timer::Election if self.role != Role::Leader => self.start_election(env),
            Timer::Heartbeat if self.role == Role::Leader => {
                if self.persist(env) {
                    self.advance_commit(env);
                }
                self.heartbeat(env);
            }
            Timer::Revoke => self.hand_over_proposals(env),
            Timer::ReadLoop => self.run_read_loop(env),
            Timer::ReadRetry => self.on_read_retry(env),
            Timer::ReadError => self.on_read_error(env),
            _ => {}
        }
        self.persist(env);
    }
}
