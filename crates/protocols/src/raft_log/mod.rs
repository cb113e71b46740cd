//! Raft with a log, sans-IO: the election of [`crate::raft`] (copied here in its plain
//! form: no PreVote, no CheckQuorum) plus log replication, commitment, a key-value state
//! machine with client sessions, and linearizable reads. A teaching model: each rule of
//! the paper is one place in this file, so a broken variant breaks exactly one rule.
//!
//! **The rules** (Ongaro & Ousterhout 2014, Figure 2 unless said otherwise):
//! * **AppendEntries** carries `prevLogIndex`/`prevLogTerm`; a follower whose log has no
//!   entry at `prevLogIndex` with that term refuses (§5.3, the *log check*). Otherwise an
//!   existing entry that conflicts with a new one (same index, different term) is
//!   deleted with everything after it (*truncation*), and the new entries are appended.
//!   A refused leader moves `nextIndex` back (to the follower's log end + 1 at most) and
//!   tries again.
//! * **Commitment** (§5.4.2, Figure 8): a leader advances `commitIndex` to `N` only if a
//!   majority holds the entry at `N` *and it is of the leader's current term*; earlier
//!   entries commit with it, indirectly. Counting replicas of an earlier term's entry is
//!   not enough: a later leader may still overwrite it (Figure 8). A new leader appends
//!   a no-op of its term at once (§8), so it can commit (and serve reads) soon.
//! * **Persistence before the messages that depend on it**: term, vote and log are
//!   written and synced before any message leaves (a follower acknowledges entries only
//!   once they are durable), and a leader counts itself toward a majority only for
//!   entries it has synced. A restarted server syncs the log it recovered before trusting
//!   it (a crash keeps unsynced writes in the page cache; a later power loss would not).
//! * **Client sessions** (§6.3): each put carries `(client, session, seq)`; the state
//!   machine applies each at most once and answers a duplicate (a retry that also got
//!   committed) from its session table, so clients may retry safely.
//! * **ReadIndex** (§6.4): a leader that has committed an entry of its term records its
//!   commit index as the read's index, confirms it still leads with a heartbeat round
//!   acknowledged by a majority, waits until it has applied up to the read index, then
//!   answers from its state machine.
//! * **Lease reads** (§6.4.1, variant `lease-reads`): a round a majority acknowledged
//!   gives the leader a lease of `min election timeout × (1 - ρ) / (1 + ρ)` from the
//!   round's sending (its own clock), during which it answers reads without a round. It
//!   holds only because followers refuse to vote for `min election timeout` (their own
//!   clocks) after they last heard from a leader (thesis §4.2.3; a restarted server
//!   counts its start as such contact), and only while no clock runs more than ρ (5%)
//!   fast or slow: an assumption, declared.
//! * **Leadership transfer** (thesis §3.10, part of the workload): a new leader draws
//!   from its seeded rng how long it leads (`transfer_after`, 1 to 2 s by default) and
//!   then hands its leadership to a peer drawn at random, as an operator's
//!   `etcdctl move-leader` does (etcd's `MoveLeader`, etcd-raft's `TransferLeader`). It
//!   stops accepting client requests, brings the target's log up to its own with
//!   AppendEntries, and sends it `TimeoutNow` once the target's `matchIndex` is its last
//!   index (etcd-raft `stepLeader`, `MsgTransferLeader`: `MsgTimeoutNow` at once if
//!   `pr.Match == r.raftLog.lastIndex()`, else after the append catches it up); the target
//!   starts an election at once (term + 1), which the ordinary voting rules decide. A
//!   transfer not done within the leader's longest election timeout is given up and the
//!   leader resumes (§3.10), drawing a later transfer. So every run, calm ones included,
//!   has later leaders that must hold what earlier ones committed (`leader-completeness`
//!   judged at each `Leader { term }`). `transfer = false` turns it off (the model does:
//!   its timers fire at any point, so a transfer timer would only widen its search).
//!
//! **Observations.** `Leader`/`Follower`/`Candidate` on every change; `LogAppend` for
//! every entry written (and the whole recovered log after a start); `LogApply` for every
//! entry applied; `Serves { term }` when a leader answers a read; the clients' `Invoke`
//! / `Complete` (`read`/`write` on registers `k0`, `k1`..., 0 until written, for
//! `linearizability`'s `cas-register` model).
//!
//! **Broken variants**, one rule each: `commit-old-term` (commits by counting replicas of
//! any term: Figure 8), `no-log-check` (appends without comparing the term at
//! `prevLogIndex`), `no-truncate` (keeps conflicting entries, appends past its end only),
//! `read-without-readindex` (a leader answers reads from its own state at once),
//! `ack-before-fsync` (a server sends its vote or its acknowledgement of entries before
//! the fsync of what it reports, so a power loss inside the fsync forgets a vote or
//! entries already counted: the symptom of etcd #14140, Jepsen's stale read with loss of
//! un-fsynced writes on etcd 3.5.3),
//! `single-voter-read-index` (etcd-io/raft v3.6 with etcd's apply loop: the commit index
//! is persisted after the answers it backs, and a single voter answers ReadIndex with
//! it at once, so after a restart that lost it a read misses acknowledged puts:
//! etcd-io/raft PR #105; `single-voter-read-index-105` is that PR's fix).
//!
//! **Sources.** Ongaro and Ousterhout, "In Search of an Understandable Consensus
//! Algorithm" (USENIX ATC 2014): Figure 2, §5.3 (log replication), §5.4.2 and Figure 8
//! (committing entries from previous terms), §8 (client interaction: the no-op, reads);
//! Ongaro, "Consensus: Bridging Theory and Practice" (2014): §6.3 (client sessions),
//! §6.4 (ReadIndex), §6.4.1 (leases), §4.2.3 (refusing votes while a leader is heard),
//! §3.10 (leadership transfer); etcd-io/raft `raft.go` (`stepLeader`'s
//! `MsgTransferLeader` and `MsgAppResp` cases, `stepFollower`'s `MsgTimeoutNow`,
//! `abortLeaderTransfer` at an election timeout).

mod config;
pub(crate) use config::check_client_params;
#[cfg(test)]
mod tests;

pub use config::{
    configure, RaftLogConfig, RaftLogParams, RaftLogRole, RaftLogVariant, MAX_ATTEMPTS,
};

use crate::util::majority;
use std::collections::{BTreeMap, BTreeSet};
use tenure_core::{
    Cluster, Configurable, Env, LocalTime, NodeId, Observation, OpOutcome, OpValue, ParamError,
    Protocol, ProtocolInfo, StorageExt,
};

/// Storage key of `currentTerm`.
pub const TERM_KEY: &str = "term";
/// Storage key of `votedFor`.
pub const VOTED_FOR_KEY: &str = "voted_for";
/// Storage key of the log's length; entry `i` is under `log/<i>`.
pub const LOG_LEN_KEY: &str = "log_len";
/// Storage key of the commit index (etcd's `HardState.Commit`); written only by the
/// `single-voter-read-index` variants (Raft's own commit index is volatile).
pub const COMMIT_KEY: &str = "commit";

fn entry_key(index: u64) -> String {
    format!("log/{index}")
}

/// A client's operation.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Op {
    Get { key: u32 },
    Put { key: u32, value: i64 },
}

impl Op {
    fn key(self) -> u32 {
        match self {
            Op::Get { key } | Op::Put { key, .. } => key,
        }
    }
    /// The operation as the history records it (`cas-register` model).
    fn f(self) -> &'static str {
        match self {
            Op::Get { .. } => "read",
            Op::Put { .. } => "write",
        }
    }
    fn value(self) -> OpValue {
        match self {
            Op::Get { .. } => OpValue::Nil,
            Op::Put { value, .. } => OpValue::Int(value),
        }
    }
}

/// What a log entry asks the state machine to do.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Command {
    /// A new leader's first entry (§8).
    Noop,
    /// A client's put, with its session number (§6.3).
    Put {
        client: NodeId,
        session: u64,
        seq: u64,
        key: u32,
        value: i64,
    },
}

/// One log entry: the term of the leader that created it, and its command.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Entry {
    pub term: u64,
    pub command: Command,
}

impl Entry {
    /// FNV-1a of the command (what `log-matching` and friends compare).
    pub fn digest(&self) -> u64 {
        let words: [u64; 5] = match self.command {
            Command::Noop => [0; 5],
            Command::Put {
                client,
                session,
                seq,
                key,
                value,
            } => [
                u64::from(client.0) + 1,
                session,
                seq,
                u64::from(key),
                value as u64,
            ],
        };
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in words.iter().flat_map(|w| w.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

/// A client's request: one attempt at an operation.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Request {
    /// Unique per attempt.
    pub attempt: u64,
    /// The client's session and the put's number in it (the same for every attempt).
    pub session: u64,
    pub seq: u64,
    pub op: Op,
}

/// How a server answered an attempt.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Answer {
    /// Done: a get's value (a register never written reads 0), or a put's `None`.
    Ok(Option<i64>),
    /// Not the leader (naming the leader it knows of); nothing done.
    NotLeader(Option<NodeId>),
}

/// Messages. Raft's carry the sender's term (Figure 2).
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum RaftLogMsg {
    RequestVote {
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
    },
    RequestVoteReply {
        term: u64,
        granted: bool,
    },
    AppendEntries {
        term: u64,
        prev_log_index: u64,
        prev_log_term: u64,
        entries: Vec<Entry>,
        leader_commit: u64,
        /// The leader's heartbeat round (ReadIndex and leases count acknowledged rounds).
        round: u64,
    },
    AppendEntriesReply {
        term: u64,
        success: bool,
        /// On success: the index up to which the follower's log matches the leader's; on
        /// a refusal: the `prevLogIndex` refused.
        match_index: u64,
        /// The follower's last log index (where a refused leader should look next).
        last_index: u64,
        round: u64,
    },
    /// Leadership transfer (thesis §3.10): the leader has brought the recipient's log up
    /// to date with its own; the recipient starts an election at once.
    TimeoutNow {
        term: u64,
    },
    Request(Request),
    Reply {
        attempt: u64,
        answer: Answer,
    },
}

impl RaftLogMsg {
    /// The Raft term a message carries (client messages carry none).
    pub fn term(&self) -> Option<u64> {
        match self {
            RaftLogMsg::RequestVote { term, .. }
            | RaftLogMsg::RequestVoteReply { term, .. }
            | RaftLogMsg::AppendEntries { term, .. }
            | RaftLogMsg::AppendEntriesReply { term, .. }
            | RaftLogMsg::TimeoutNow { term } => Some(*term),
            RaftLogMsg::Request(_) | RaftLogMsg::Reply { .. } => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RaftLogTimer {
    /// A follower or candidate has heard nothing for too long.
    Election,
    /// A leader's next AppendEntries round.
    Heartbeat,
    /// A leader's time to hand its leadership over (thesis §3.10).
    Transfer,
    /// A transfer not completed within an election timeout: the leader resumes (§3.10).
    TransferAbort,
    /// A client's thinking is over: its next operation.
    Think,
    /// No answer to a client's attempt (by its id) in time.
    Timeout(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
}

/// A read waiting at the leader (§6.4).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PendingRead {
    client: NodeId,
    attempt: u64,
    key: u32,
    /// The heartbeat round that must be acknowledged by a majority (0: none needed).
    round: u64,
    /// The commit index to apply up to; `None` until an entry of this term commits.
    index: Option<u64>,
}

type E<'a> = dyn Env<RaftLogMsg, RaftLogTimer> + 'a;

/// One Raft server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    me: NodeId,
    peers: Vec<NodeId>,
    config: RaftLogConfig,

    // persistent state (Figure 2), and what of it is on disk
    term: u64,
    voted_for: Option<NodeId>,
    /// Entry `i` (from 1) is `log[i - 1]`.
    log: Vec<Entry>,
    stored: (u64, Option<NodeId>),
    /// The log length written to storage, and the first index whose stored entry is
    /// stale (written since the last store).
    stored_len: u64,
    dirty_from: Option<u64>,
    unsynced: bool,
    /// How much of the log is known durable: the leader counts itself up to here.
    durable_len: u64,
    /// The commit index written to storage (`single-voter-read-index` variants only).
    stored_commit: u64,

    // volatile state
    role: Role,
    leader: Option<NodeId>,
    votes: BTreeSet<NodeId>,
    commit: u64,
    applied: u64,
    /// When this server last heard from a leader of its term (the lease's vote guard).
    leader_contact: Option<LocalTime>,

    // the state machine
    kv: BTreeMap<u32, i64>,
    /// (client, session) -> the last put's seq applied (§6.3).
    sessions: BTreeMap<(NodeId, u64), u64>,

    // leader state
    next_index: BTreeMap<NodeId, u64>,
    match_index: BTreeMap<NodeId, u64>,
    /// The newest round each peer acknowledged.
    acked_round: BTreeMap<NodeId, u64>,
    round: u64,
    /// When each round not yet acknowledged by a majority was sent (lease reads).
    round_sent: BTreeMap<u64, LocalTime>,
    /// The end of the lease (on this server's clock), `lease-reads` only.
    lease_until: Option<LocalTime>,
    /// Puts this leader appended, by index: the client and attempt to answer.
    proposed: BTreeMap<u64, (NodeId, u64)>,
    reads: Vec<PendingRead>,
    /// The peer this leader is handing its leadership to (thesis §3.10), and whether
    /// `TimeoutNow` went to it.
    transferee: Option<NodeId>,
    timeout_now_sent: bool,

    announced: Option<Observation>,
}

impl Server {
    fn new(config: &RaftLogConfig, me: NodeId, cluster: &Cluster) -> Server {
        Server {
            me,
            peers: RaftLogConfig::servers(cluster)
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
            stored_commit: 0,
            role: Role::Follower,
            leader: None,
            votes: BTreeSet::new(),
            commit: 0,
            applied: 0,
            leader_contact: None,
            kv: BTreeMap::new(),
            sessions: BTreeMap::new(),
            next_index: BTreeMap::new(),
            match_index: BTreeMap::new(),
            acked_round: BTreeMap::new(),
            round: 0,
            round_sent: BTreeMap::new(),
            lease_until: None,
            proposed: BTreeMap::new(),
            reads: Vec::new(),
            transferee: None,
            timeout_now_sent: false,
            announced: None,
        }
    }

    pub fn term(&self) -> u64 {
        self.term
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn log(&self) -> &[Entry] {
        &self.log
    }
    pub fn commit_index(&self) -> u64 {
        self.commit
    }

    fn variant(&self) -> RaftLogVariant {
        self.config.variant
    }

    fn quorum(&self) -> usize {
        majority(self.peers.len() + 1)
    }

    fn last_index(&self) -> u64 {
        self.log.len() as u64
    }

    /// The term of the entry at `index` (0 for index 0); `None` past the log's end.
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

    /// Writes what changed (term, vote, log) and syncs it; false if the sync failed,
    /// when nothing that depends on the new state may be said.
    fn persist(&mut self, env: &mut E<'_>) -> bool {
        self.write(env);
        if self.unsynced && env.sync().is_ok() {
            self.unsynced = false;
            self.durable_len = self.last_index();
        }
        !self.unsynced
    }

    /// Writes what changed (term, vote, log) to storage, not yet synced.
    fn write(&mut self, env: &mut E<'_>) {
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
    }

    /// Writes `entries` into the log from `index` on, replacing what was there and
    /// everything after it, and observes each.
    fn write_from(&mut self, env: &mut E<'_>, index: u64, entries: &[Entry]) {
        self.log.truncate(index as usize - 1);
        self.durable_len = self.durable_len.min(index - 1);
        for (k, e) in entries.iter().enumerate() {
            self.log.push(*e);
            env.observe(Observation::LogAppend {
                index: index + k as u64,
                term: e.term,
                digest: e.digest(),
            });
        }
        self.dirty_from = Some(self.dirty_from.map_or(index, |d| d.min(index)));
    }

    /// Sends once term, vote and log are durable (Figure 2: respond only after updating
    /// stable storage).
    fn send(&mut self, env: &mut E<'_>, to: NodeId, msg: RaftLogMsg) {
        if self.variant() == RaftLogVariant::AckBeforeFsync {
            // The bug: the message leaves while the term, vote and entries it reports are
            // only written (in the page cache); the fsync comes after it. A power loss
            // inside that fsync forgets a vote or entries already acknowledged.
            self.write(env);
            env.send(to, msg);
            self.persist(env);
            return;
        }
        if self.persist(env) {
            env.send(to, msg);
        }
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
        let (min, max) = self.config.election_timeout_of(self.me);
        let after = env.duration_between(min, max);
        env.set_timer(RaftLogTimer::Election, after);
    }

    // ----- elections (as `crate::raft`, without PreVote and CheckQuorum) -----

    fn become_follower(&mut self, env: &mut E<'_>, leader: Option<NodeId>) {
        let was_leader = self.role == Role::Leader;
        self.role = Role::Follower;
        self.leader = leader;
        self.votes.clear();
        if was_leader {
            // Reads and puts in flight are forgotten; their clients retry elsewhere.
            self.reads.clear();
            self.proposed.clear();
            self.round_sent.clear();
            self.lease_until = None;
            self.transferee = None;
            self.timeout_now_sent = false;
            env.cancel_timer(&RaftLogTimer::Heartbeat);
            env.cancel_timer(&RaftLogTimer::Transfer);
            env.cancel_timer(&RaftLogTimer::TransferAbort);
            self.reset_election_timer(env);
        }
        self.announce(env);
    }

    /// Any message with a higher term makes us a follower of that term (§5.1).
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
        let msg = RaftLogMsg::RequestVote {
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
        env.cancel_timer(&RaftLogTimer::Election);
        self.announce(env);
        // §8: a no-op of the new term, so that something of this term can commit.
        let index = self.last_index() + 1;
        self.write_from(
            env,
            index,
            &[Entry {
                term: self.term,
                command: Command::Noop,
            }],
        );
        self.next_index = self.peers.iter().map(|&p| (p, index)).collect();
        self.match_index = self.peers.iter().map(|&p| (p, 0)).collect();
        self.acked_round = self.peers.iter().map(|&p| (p, 0)).collect();
        self.round_sent.clear();
        self.lease_until = None;
        self.transferee = None;
        self.timeout_now_sent = false;
        self.schedule_transfer(env);
        if self.persist(env) && !self.variant().is_single_voter_read_index() {
            self.advance_commit(env); // a cluster of one commits at once
        }
        // (etcd-io/raft v3.6's leader acknowledges its own append with a message that
        // arrives once the append is persisted, a step later: the heartbeat tick counts
        // it, below.)
        self.heartbeat(env);
    }

    /// §5.4.1: the candidate's log is at least as up to date as ours.
    fn log_ok(&self, last_log_term: u64, last_log_index: u64) -> bool {
        (last_log_term, last_log_index) >= (self.last_term(), self.last_index())
    }

    /// `lease-reads` only: heard from a leader (or started) within the minimum election
    /// timeout, so no vote may be given (thesis §4.2.3), or a leader's lease could be
    /// outlived by a new leader's writes.
    fn refuses_votes(&self, now: LocalTime) -> bool {
        self.variant() == RaftLogVariant::LeaseReads
            && (self.role == Role::Leader
                || self
                    .leader_contact
                    .is_some_and(|t| t.until(now) < self.config.vote_guard))
    }

    fn on_request_vote(&mut self, env: &mut E<'_>, from: NodeId, term: u64, last: (u64, u64)) {
        if self.refuses_votes(env.monotonic()) {
            let reply = RaftLogMsg::RequestVoteReply {
                term: self.term,
                granted: false,
            };
            self.send(env, from, reply);
            return;
        }
        self.catch_up_term(env, term, None);
        let free = self.voted_for.is_none() || self.voted_for == Some(from);
        let granted = term == self.term && free && self.log_ok(last.0, last.1);
        if granted {
            self.voted_for = Some(from);
        }
        let reply = RaftLogMsg::RequestVoteReply {
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

    // ----- leadership transfer (thesis §3.10) -----

    /// A new leader (or one whose transfer failed) draws when it will hand over.
    fn schedule_transfer(&mut self, env: &mut E<'_>) {
        if let Some((min, max)) = self.config.transfer_after {
            if !self.peers.is_empty() {
                let after = env.duration_between(min, max);
                env.set_timer(RaftLogTimer::Transfer, after);
            }
        }
    }

    /// Step 1 of §3.10: pick the target (a peer drawn at random, as an operator's
    /// `etcdctl move-leader` names one), stop accepting client requests, and bring the
    /// target's log up to date; the transfer is given up after an election timeout.
    fn start_transfer(&mut self, env: &mut E<'_>) {
        if self.role != Role::Leader || self.transferee.is_some() || self.peers.is_empty() {
            return;
        }
        let k = env.range_inclusive(0, self.peers.len() as u64 - 1) as usize;
        let target = self.peers[k];
        self.transferee = Some(target);
        self.timeout_now_sent = false;
        env.set_timer(
            RaftLogTimer::TransferAbort,
            self.config.election_timeout_of(self.me).1,
        );
        if !self.send_timeout_now(env) {
            self.replicate(env, target);
        }
    }

    /// Step 2 of §3.10: once the target holds the leader's whole log, `TimeoutNow`.
    /// True if it was sent (now or before).
    fn send_timeout_now(&mut self, env: &mut E<'_>) -> bool {
        let Some(target) = self.transferee else {
            return false;
        };
        if self.timeout_now_sent {
            return true;
        }
        if self.match_index.get(&target).copied().unwrap_or(0) < self.last_index() {
            return false;
        }
        self.timeout_now_sent = true;
        let msg = RaftLogMsg::TimeoutNow { term: self.term };
        self.send(env, target, msg);
        true
    }

    /// §3.10: a transfer not done within an election timeout is aborted; the leader
    /// accepts client requests again (and draws a later transfer).
    fn abort_transfer(&mut self, env: &mut E<'_>) {
        if self.role == Role::Leader && self.transferee.take().is_some() {
            self.timeout_now_sent = false;
            self.schedule_transfer(env);
        }
    }

    /// The target of a transfer: an election at once, as if its timeout had fired
    /// (etcd-raft `MsgTimeoutNow`: `campaign(campaignTransfer)`).
    fn on_timeout_now(&mut self, env: &mut E<'_>, from: NodeId, term: u64) {
        self.catch_up_term(env, term, Some(from));
        if term == self.term && self.role == Role::Follower {
            self.start_election(env);
        }
    }

    // ----- replication -----

    /// A new round: AppendEntries to every peer (with entries from its nextIndex).
    fn heartbeat(&mut self, env: &mut E<'_>) {
        self.round += 1;
        if self.variant() == RaftLogVariant::LeaseReads {
            self.round_sent.insert(self.round, env.monotonic());
        }
        for k in 0..self.peers.len() {
            let peer = self.peers[k];
            self.replicate(env, peer);
        }
        env.set_timer(RaftLogTimer::Heartbeat, self.config.heartbeat_interval);
    }

    /// AppendEntries to `peer`: up to `max_entries` entries from its nextIndex.
    fn replicate(&mut self, env: &mut E<'_>, peer: NodeId) {
        let next = self.next_index.get(&peer).copied().unwrap_or(1).max(1);
        let prev_log_index = (next - 1).min(self.last_index());
        let prev_log_term = self.term_at(prev_log_index).unwrap_or(0);
        let from = prev_log_index as usize;
        let to = (from + self.config.max_entries).min(self.log.len());
        let msg = RaftLogMsg::AppendEntries {
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
        prev: (u64, u64),
        entries: Vec<Entry>,
        leader_commit: u64,
        round: u64,
    ) {
        self.catch_up_term(env, term, Some(from));
        let refuse = |s: &Server| RaftLogMsg::AppendEntriesReply {
            term: s.term,
            success: false,
            match_index: prev.0,
            last_index: s.last_index(),
            round,
        };
        if term < self.term || self.role == Role::Leader {
            let reply = refuse(self);
            self.send(env, from, reply);
            return;
        }
        self.leader_contact = Some(env.monotonic());
        self.become_follower(env, Some(from));
        self.reset_election_timer(env);
        let (prev_log_index, prev_log_term) = prev;
        // §5.3, the log check: our entry at prevLogIndex must have prevLogTerm.
        let matches = match self.term_at(prev_log_index) {
            None => false,
            // The bug: an entry at prevLogIndex is enough, whatever its term.
            Some(_) if self.variant() == RaftLogVariant::NoLogCheck => true,
            Some(t) => t == prev_log_term,
        };
        if !matches {
            let reply = refuse(self);
            self.send(env, from, reply);
            return;
        }
        // Skip the entries we already hold; the first conflicting one (same index,
        // different term) is where our log is cut and the leader's written.
        let mut index = prev_log_index + 1;
        let mut k = 0;
        while k < entries.len() {
            match self.term_at(index) {
                Some(t) if t == entries[k].term => {}
                // The bug: an entry we hold is kept even though it conflicts.
                Some(_) if self.variant() == RaftLogVariant::NoTruncate => {}
                _ => break,
            }
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
        let reply = RaftLogMsg::AppendEntriesReply {
            term: self.term,
            success: true,
            match_index: last_new,
            last_index: self.last_index(),
            round,
        };
        // `send` syncs first: the acknowledgement leaves only once the entries are durable
        // (`ack-before-fsync`: after).
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
            if self.transferee == Some(from) {
                self.send_timeout_now(env);
            }
            // More to send: do not wait for the next round. Only on news, so that a
            // duplicated or late reply does not start a second stream of AppendEntries.
            if advanced && m < self.last_index() {
                self.replicate(env, from);
            }
        } else if match_index + 1 == next && next > 1 {
            // A refusal of the current probe (not a duplicate or a late one): back off.
            let back = (next - 1).min(last_index + 1).max(1);
            self.next_index.insert(from, back);
            self.replicate(env, from);
        }
        self.confirm_rounds();
        self.serve_reads(env);
    }

    /// §5.4.2: the highest index a majority holds (the leader counting what it synced),
    /// committed only if its entry is of the current term (Figure 8).
    fn advance_commit(&mut self, env: &mut E<'_>) {
        let mut held: Vec<u64> = self.match_index.values().copied().collect();
        held.push(self.durable_len);
        held.sort_unstable_by(|a, b| b.cmp(a));
        let n = held[self.quorum() - 1];
        let current = self.term_at(n) == Some(self.term);
        // The bug (Figure 8): a majority holding an entry of an earlier term is taken
        // as committed.
        let counts = current || self.variant() == RaftLogVariant::CommitOldTerm;
        if n > self.commit && counts {
            self.commit = n;
            if self.term_at(self.commit) == Some(self.term) {
                for read in self.reads.iter_mut().filter(|r| r.index.is_none()) {
                    read.index = Some(self.commit);
                }
            }
            self.apply_committed(env);
        }
    }

    /// Applies the committed entries not yet applied, answering the puts this leader
    /// proposed.
    fn apply_committed(&mut self, env: &mut E<'_>) {
        while self.applied < self.commit.min(self.last_index()) {
            self.applied += 1;
            let entry = self.log[self.applied as usize - 1];
            if let Command::Put {
                client,
                session,
                seq,
                key,
                value,
            } = entry.command
            {
                // §6.3: each (client, session, seq) applied at most once; a duplicate is
                // answered as the first was.
                let last = self.sessions.entry((client, session)).or_insert(0);
                if seq > *last {
                    *last = seq;
                    self.kv.insert(key, value);
                }
            }
            env.observe(Observation::LogApply {
                index: self.applied,
                term: entry.term,
                digest: entry.digest(),
            });
            if let Some((client, attempt)) = self.proposed.remove(&self.applied) {
                let answer = Answer::Ok(None);
                self.send(env, client, RaftLogMsg::Reply { attempt, answer });
            }
        }
        if self.variant().is_single_voter_read_index() && self.stored_commit < self.commit {
            // etcd applies committed entries (and answers their clients) while it saves
            // the HardState that carries the commit index: written after the answers,
            // synced after them (etcd-io/raft PR #105's premise).
            env.store(COMMIT_KEY, &self.commit);
            self.stored_commit = self.commit;
            self.unsynced = true;
        }
    }

    // ----- reads -----

    /// The newest round a majority (self included) acknowledged; with leases, the lease
    /// it gives.
    fn confirm_rounds(&mut self) {
        let confirmed = self.confirmed_round();
        if self.variant() == RaftLogVariant::LeaseReads {
            if let Some(&sent) = self.round_sent.get(&confirmed) {
                let until = sent + self.config.lease;
                self.lease_until = Some(self.lease_until.map_or(until, |u| u.max(until)));
            }
        }
        self.round_sent.retain(|&r, _| r > confirmed);
    }

    fn confirmed_round(&self) -> u64 {
        let mut rounds: Vec<u64> = self.acked_round.values().copied().collect();
        rounds.push(self.round);
        rounds.sort_unstable_by(|a, b| b.cmp(a));
        rounds[self.quorum() - 1]
    }

    fn on_get(&mut self, env: &mut E<'_>, client: NodeId, attempt: u64, key: u32) {
        if self.variant() == RaftLogVariant::ReadWithoutReadindex {
            // The bug: answered from local state, with no check that we still lead.
            self.answer_read(env, client, attempt, key);
            return;
        }
        if self.variant().is_single_voter_read_index() && self.peers.is_empty() {
            // etcd-io/raft `stepLeader`, `MsgReadIndex`: "only one voting member (the
            // leader) in the cluster" answers at once with `raftLog.committed`, before the
            // check that an entry of this term is committed. PR #105 takes the larger of
            // that and the index this voter has persisted (`prs.Committed()`).
            let index = match self.variant() {
                RaftLogVariant::SingleVoterReadIndex105 => self.commit.max(self.durable_len),
                _ => self.commit,
            };
            self.reads.push(PendingRead {
                client,
                attempt,
                key,
                round: 0,
                index: Some(index),
            });
            self.serve_reads(env);
            return;
        }
        // §6.4: the read index is the commit index, once an entry of this term is
        // committed (before, this leader may not know what is committed).
        let index = (self.term_at(self.commit) == Some(self.term)).then_some(self.commit);
        let leased = self.lease_until.is_some_and(|u| env.monotonic() < u);
        let round = if leased && index.is_some() {
            0
        } else {
            self.heartbeat(env);
            self.round
        };
        self.reads.push(PendingRead {
            client,
            attempt,
            key,
            round,
            index,
        });
        self.serve_reads(env);
    }

    /// Answers the reads whose round is confirmed and whose index is applied.
    fn serve_reads(&mut self, env: &mut E<'_>) {
        let confirmed = self.confirmed_round();
        let applied = self.applied;
        let (due, waiting): (Vec<PendingRead>, Vec<PendingRead>) = std::mem::take(&mut self.reads)
            .into_iter()
            .partition(|r| r.round <= confirmed && r.index.is_some_and(|i| i <= applied));
        self.reads = waiting;
        for r in due {
            self.answer_read(env, r.client, r.attempt, r.key);
        }
    }

    fn answer_read(&mut self, env: &mut E<'_>, client: NodeId, attempt: u64, key: u32) {
        env.observe(Observation::Serves { term: self.term });
        let answer = Answer::Ok(Some(self.kv.get(&key).copied().unwrap_or(0)));
        self.send(env, client, RaftLogMsg::Reply { attempt, answer });
    }

    // ----- client requests -----

    fn on_request(&mut self, env: &mut E<'_>, client: NodeId, req: Request) {
        // §3.10: a leader handing over accepts no new requests (the client retries
        // elsewhere after its timeout, by when the target should lead).
        if self.role != Role::Leader || self.transferee.is_some() {
            // (While handing over, the leader names no leader: the client's next try
            // goes to the next server after its timeout.)
            let leader = self.leader.filter(|_| self.transferee.is_none());
            let answer = Answer::NotLeader(leader);
            let reply = RaftLogMsg::Reply {
                attempt: req.attempt,
                answer,
            };
            self.send(env, client, reply);
            return;
        }
        match req.op {
            Op::Get { key } => self.on_get(env, client, req.attempt, key),
            Op::Put { key, value } => {
                let index = self.last_index() + 1;
                let entry = Entry {
                    term: self.term,
                    command: Command::Put {
                        client,
                        session: req.session,
                        seq: req.seq,
                        key,
                        value,
                    },
                };
                self.write_from(env, index, &[entry]);
                if self.proposed.len() >= MAX_PROPOSED {
                    self.proposed.clear(); // never committed; their clients gave up
                }
                self.proposed.insert(index, (client, req.attempt));
                // The leader counts itself only once the entry is synced (and, as
                // etcd-io/raft v3.6, only a step later: at the heartbeat tick).
                if self.persist(env) {
                    if !self.variant().is_single_voter_read_index() {
                        self.advance_commit(env);
                    }
                    for k in 0..self.peers.len() {
                        let peer = self.peers[k];
                        if self.next_index.get(&peer) == Some(&index) {
                            self.replicate(env, peer);
                        }
                    }
                }
            }
        }
    }

    // ----- the Protocol entry points -----

    fn on_start(&mut self, env: &mut E<'_>) {
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
        if self.variant().is_single_voter_read_index() {
            // etcd restarts raft at `HardState.Commit` and replays the entries up to it.
            let commit: u64 = env.load(COMMIT_KEY).unwrap_or(0);
            self.commit = commit.min(len);
            self.stored_commit = commit;
            self.apply_committed(env);
        }
        // What a restarted process reads back may include writes never synced; make
        // them durable before acknowledging anything on their strength.
        self.unsynced = true;
        self.persist(env);
        if self.variant() == RaftLogVariant::LeaseReads {
            self.leader_contact = Some(env.monotonic());
        }
        self.announce(env);
        self.reset_election_timer(env);
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: RaftLogMsg) {
        match msg {
            RaftLogMsg::RequestVote {
                term,
                last_log_index,
                last_log_term,
            } => self.on_request_vote(env, from, term, (last_log_term, last_log_index)),
            RaftLogMsg::RequestVoteReply { term, granted } => {
                self.on_vote_reply(env, from, term, granted)
            }
            RaftLogMsg::AppendEntries {
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
            RaftLogMsg::AppendEntriesReply {
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
            RaftLogMsg::TimeoutNow { term } => self.on_timeout_now(env, from, term),
            RaftLogMsg::Request(req) => self.on_request(env, from, req),
            RaftLogMsg::Reply { .. } => {}
        }
        self.persist(env);
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: RaftLogTimer) {
        match timer {
            RaftLogTimer::Election if self.role != Role::Leader => self.start_election(env),
            RaftLogTimer::Heartbeat if self.role == Role::Leader => {
                // A leader whose own sync failed counts itself once it succeeds.
                if self.persist(env) {
                    self.advance_commit(env);
                    if self.variant().is_single_voter_read_index() {
                        // Its own acknowledgement may be what a read waited for.
                        self.serve_reads(env);
                    }
                }
                self.heartbeat(env);
            }
            RaftLogTimer::Transfer => self.start_transfer(env),
            RaftLogTimer::TransferAbort => self.abort_transfer(env),
            _ => {}
        }
        self.persist(env);
    }
}

/// The most puts a leader remembers to answer.
const MAX_PROPOSED: usize = 4096;

/// The operation a client has open.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Open {
    op: Op,
    seq: u64,
    attempts: Vec<u64>,
    /// The server the last attempt went to.
    to: NodeId,
}

/// What a client needs of the run's parameters (raft-log's, or another log's that
/// reuses this client, such as multi-paxos).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    pub keys: u8,
    pub key_period: std::time::Duration,
    pub reads: u8,
    pub think: std::time::Duration,
    pub request_timeout: std::time::Duration,
    pub max_attempts: u32,
    /// Gets go to the servers in turn, starting from the first guess: etcd's clientv3
    /// dials with gRPC's `round_robin` policy (v3.5.27
    /// `client/v3/internal/resolver/resolver.go`), each RPC to the next endpoint, and
    /// any member serves a linearizable get through its read loop. Puts still go to the
    /// server believed to lead. Off: every operation goes to the server believed to
    /// lead.
    pub round_robin_gets: bool,
}

impl From<&RaftLogConfig> for ClientConfig {
    fn from(c: &RaftLogConfig) -> ClientConfig {
        ClientConfig {
            keys: c.keys,
            key_period: c.key_period,
            reads: c.reads,
            think: c.think,
            request_timeout: c.request_timeout,
            max_attempts: c.max_attempts,
            round_robin_gets: false,
        }
    }
}

/// A client's own timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientTimer {
    /// Its thinking is over: its next operation.
    Think,
    /// No answer to an attempt (by its id) in time.
    Timeout(u64),
}

/// How a protocol that reuses [`Client`] carries its requests and timers.
pub trait ClientWire: Clone + std::fmt::Debug + PartialEq + Eq + std::hash::Hash {
    type Msg;
    type Timer: Clone;
    fn request(req: Request) -> Self::Msg;
    fn timer(t: ClientTimer) -> Self::Timer;
}

/// raft-log's own messages and timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RaftWire;

impl ClientWire for RaftWire {
    type Msg = RaftLogMsg;
    type Timer = RaftLogTimer;
    fn request(req: Request) -> RaftLogMsg {
        RaftLogMsg::Request(req)
    }
    fn timer(t: ClientTimer) -> RaftLogTimer {
        match t {
            ClientTimer::Think => RaftLogTimer::Think,
            ClientTimer::Timeout(a) => RaftLogTimer::Timeout(a),
        }
    }
}

impl RaftWire {
    fn client_timer(t: &RaftLogTimer) -> Option<ClientTimer> {
        match t {
            RaftLogTimer::Think => Some(ClientTimer::Think),
            RaftLogTimer::Timeout(a) => Some(ClientTimer::Timeout(*a)),
            _ => None,
        }
    }
}

type CE<'a, W> = dyn Env<<W as ClientWire>::Msg, <W as ClientWire>::Timer> + 'a;

/// A client: one operation at a time, to the server it believes leads, retried on the
/// next server after a timeout, on the named leader after "not the leader".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<W: ClientWire = RaftWire> {
    me: NodeId,
    servers: Vec<NodeId>,
    config: ClientConfig,
    guess: usize,
    /// The server the last get went to, with [`ClientConfig::round_robin_gets`].
    home: usize,
    session: u64,
    seq: u64,
    open: Option<Open>,
    wire: std::marker::PhantomData<W>,
}

impl<W: ClientWire> Client<W> {
    /// A client of `servers`.
    pub fn new(config: ClientConfig, me: NodeId, servers: Vec<NodeId>) -> Client<W> {
        Client {
            me,
            servers,
            config,
            guess: 0,
            home: 0,
            session: 0,
            seq: 0,
            open: None,
            wire: std::marker::PhantomData,
        }
    }

    /// This client's node.
    pub fn me(&self) -> NodeId {
        self.me
    }

    pub fn on_start(&mut self, env: &mut CE<'_, W>) {
        // A new process is a new session (§6.3); the guess starts anywhere.
        self.session = env.next_u64() | 1;
        self.guess = env.range_inclusive(0, self.servers.len() as u64 - 1) as usize;
        self.home = self.guess;
        env.set_timer(W::timer(ClientTimer::Think), self.config.think);
    }

    /// The next operation: a get or a put of one of the current registers.
    fn next_operation(&mut self, env: &mut CE<'_, W>) {
        let period = self.config.key_period.as_nanos().max(1) as i64;
        let generation = env.wall().as_nanos().max(0).div_euclid(period);
        let first = u32::try_from(generation)
            .unwrap_or(u32::MAX / 32)
            .saturating_mul(u32::from(self.config.keys));
        let key = first + env.range_inclusive(0, u64::from(self.config.keys) - 1) as u32;
        let op = if env.range_inclusive(0, 99) < u64::from(self.config.reads) {
            if self.config.round_robin_gets {
                self.home = (self.home + 1) % self.servers.len();
                self.guess = self.home;
            }
            Op::Get { key }
        } else {
            self.seq += 1;
            Op::Put {
                key,
                value: (env.next_u64() % 1_000_000) as i64 + 1,
            }
        };
        self.start(env, op);
    }

    /// Starts `op` now on `server` (a scenario's scripted `request`), unless an
    /// operation is open.
    pub fn invoke(&mut self, env: &mut CE<'_, W>, op: Op, server: NodeId) {
        if self.open.is_some() {
            return;
        }
        self.guess = self.position(server);
        if matches!(op, Op::Put { .. }) {
            self.seq += 1;
        }
        self.start(env, op);
    }

    /// Records `op`'s invocation, opens it and sends its first attempt.
    fn start(&mut self, env: &mut CE<'_, W>, op: Op) {
        env.observe(Observation::Invoke {
            f: op.f().to_string(),
            key: format!("k{}", op.key()),
            value: op.value(),
        });
        self.open = Some(Open {
            op,
            seq: self.seq,
            attempts: Vec::new(),
            to: self.me,
        });
        self.attempt(env);
    }

    fn attempt(&mut self, env: &mut CE<'_, W>) {
        let to = self.servers[self.guess % self.servers.len()];
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if open.attempts.len() as u32 >= self.config.max_attempts {
            // Every attempt went over the network: any of them may still take effect.
            self.complete(env, OpOutcome::Info, None);
            return;
        }
        let attempt = env.next_u64();
        open.attempts.push(attempt);
        open.to = to;
        env.set_timer(
            W::timer(ClientTimer::Timeout(attempt)),
            self.config.request_timeout,
        );
        let req = Request {
            attempt,
            session: self.session,
            seq: open.seq,
            op: open.op,
        };
        env.send(to, W::request(req));
    }

    fn complete(&mut self, env: &mut CE<'_, W>, outcome: OpOutcome, read: Option<Option<i64>>) {
        let Some(open) = self.open.take() else {
            return;
        };
        for a in &open.attempts {
            env.cancel_timer(&W::timer(ClientTimer::Timeout(*a)));
        }
        let value = match read {
            Some(v) => v.map_or(OpValue::Nil, OpValue::Int),
            None => open.op.value(),
        };
        env.observe(Observation::Complete {
            f: open.op.f().to_string(),
            key: format!("k{}", open.op.key()),
            outcome,
            value,
        });
        env.set_timer(W::timer(ClientTimer::Think), self.config.think);
    }

    pub fn on_reply(&mut self, env: &mut CE<'_, W>, from: NodeId, attempt: u64, answer: Answer) {
        let Some(open) = &self.open else {
            return;
        };
        if !open.attempts.contains(&attempt) {
            return; // an answer to an operation that already ended
        }
        let last = open.attempts.last() == Some(&attempt);
        let is_get = matches!(open.op, Op::Get { .. });
        match answer {
            Answer::Ok(v) => {
                self.guess = self.position(from);
                self.complete(env, OpOutcome::Ok, is_get.then_some(v));
            }
            Answer::NotLeader(hint) if last => {
                if let Some(leader) = hint.filter(|&l| l != from) {
                    self.guess = self.position(leader);
                    env.cancel_timer(&W::timer(ClientTimer::Timeout(attempt)));
                    self.attempt(env);
                }
                // No leader known: the next server when this attempt times out.
            }
            Answer::NotLeader(_) => {}
        }
    }

    fn position(&self, server: NodeId) -> usize {
        self.servers.iter().position(|&s| s == server).unwrap_or(0)
    }

    pub fn on_timer(&mut self, env: &mut CE<'_, W>, timer: ClientTimer) {
        match timer {
            ClientTimer::Think if self.open.is_none() => self.next_operation(env),
            ClientTimer::Timeout(attempt) => {
                let Some(open) = &self.open else {
                    return;
                };
                if open.attempts.last() == Some(&attempt) {
                    self.guess = self.position(open.to) + 1;
                    self.attempt(env);
                }
            }
            _ => {}
        }
    }
}

/// One node: a server or a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RaftLog {
    Server(Box<Server>),
    Client(Box<Client>),
}

impl RaftLog {
    /// The server, if this node is one.
    pub fn server(&self) -> Option<&Server> {
        match self {
            RaftLog::Server(s) => Some(s),
            RaftLog::Client(_) => None,
        }
    }
}

impl Protocol for RaftLog {
    type Msg = RaftLogMsg;
    type Timer = RaftLogTimer;
    type Config = RaftLogConfig;

    fn new(config: &RaftLogConfig, me: NodeId, cluster: &Cluster) -> RaftLog {
        match config.roles.get(me) {
            RaftLogRole::Server => RaftLog::Server(Box::new(Server::new(config, me, cluster))),
            RaftLogRole::Client => RaftLog::Client(Box::new(Client::new(
                ClientConfig::from(config),
                me,
                RaftLogConfig::servers(cluster),
            ))),
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        match self {
            RaftLog::Server(s) => s.on_start(env),
            RaftLog::Client(c) => c.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: RaftLogMsg) {
        match self {
            RaftLog::Server(s) => s.on_message(env, from, msg),
            RaftLog::Client(c) => {
                if let RaftLogMsg::Reply { attempt, answer } = msg {
                    c.on_reply(env, from, attempt, answer);
                }
            }
        }
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: RaftLogTimer) {
        match self {
            RaftLog::Server(s) => s.on_timer(env, timer),
            RaftLog::Client(c) => {
                if let Some(t) = RaftWire::client_timer(&timer) {
                    c.on_timer(env, t);
                }
            }
        }
    }
}

impl Configurable for RaftLog {
    type Params = RaftLogParams;
    type Variant = RaftLogVariant;
    type Role = RaftLogRole;

    fn info() -> &'static ProtocolInfo {
        &config::INFO
    }

    fn configure(
        params: RaftLogParams,
        variant: RaftLogVariant,
        cluster: &Cluster,
    ) -> Result<RaftLogConfig, ParamError> {
        configure(params, variant, cluster)
    }

    fn promises(_config: &RaftLogConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::Promise;
        vec![
            Promise::new("single-leader-per-term"),
            Promise::new("log-matching"),
            Promise::new("leader-completeness"),
            Promise::new("state-machine-safety"),
            // one register per key, 0 until written: puts and gets
            Promise::new("linearizability").with("model", "cas-register"),
        ]
    }

    fn assumptions(config: &RaftLogConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        let (min, _) = config.election_timeout;
        let slack = min.saturating_sub(config.heartbeat_interval);
        let lease = config.variant == RaftLogVariant::LeaseReads;
        let rho = f64::from(config.lease_drift_ppm) / 1e6;
        tenure_core::Assumptions::new()
            .with_max_drift(if lease {
                Limit::new(
                    rho,
                    format!(
                        "lease reads: a leader's lease of {} (its clock) must end before \
                         followers, refusing votes for {} of theirs, can elect another: \
                         lease / (1 - drift) <= min election timeout / (1 + drift)",
                        f(config.lease),
                        f(config.vote_guard)
                    ),
                )
            } else {
                Limit::new(
                    0.5,
                    "the log's safety needs no clock (timers only start elections)",
                )
            })
            .with_max_latency(Limit::new(
                slack / 2,
                format!(
                    "a stable leader needs broadcast time << election timeout (Raft §5.6): \
                     heartbeats {} apart must reach a follower within its shortest timeout {}; \
                     half of the {} between them",
                    f(config.heartbeat_interval),
                    f(min),
                    f(slack)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
        // Figure 8 on three servers: three leaders with diverging logs, each one's
        // appends kept from the others. Timers fire only when the network is quiet (one
        // interleaving of each election instead of every one), and what a leader sent
        // is lost by isolating it for an instant (one step for all its messages, where
        // drops take one each). Breadth-first search then reaches the shortest
        // counterexample: 21 steps, 12.5 million states, about 3 minutes in a release
        // build. With free timers the states grow about fivefold a level (3.3 million at
        // depth 10), out of reach of a 21-step path.
        const VARIANT_BOUNDS: &[(&str, Bounds)] = &[(
            "commit-old-term",
            Bounds::DEFAULT
                .with_max_depth(21)
                .with_max_states(20_000_000)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::All)
                .with_timers(TimerModel::Quiet)
                .with_max_isolations(3),
        )];
        Ok(ModelSpec::new(
            "three servers, no clients: each leader's entry is its no-op (§8); votes, \
             AppendEntries one entry at a time, commits; messages delivered in any \
             order or never, timers firing at any point (for commit-old-term: only when \
             no message is in flight, with up to three isolations, each losing every \
             message in flight to or from one server)",
            &[("server", 3)],
        )
        .with_out_of_scope(&[
            (
                "read-without-readindex",
                "a stale read needs clients, whose operations the model leaves out",
            ),
            (
                "lease-reads",
                "leases are about clock rates, which the model leaves free",
            ),
            (
                "ack-before-fsync",
                "the explorer crashes processes but never cuts power: every write survives",
            ),
            (
                "single-voter-read-index",
                "a stale read needs clients, whose operations the model leaves out",
            ),
        ])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(7)
                .with_max_states(200_000)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::All),
        )
        .with_variant_bounds(VARIANT_BOUNDS)
        .with_walks_miss(&[(
            "commit-old-term",
            "three leaders each isolated at the right step, and the old entry sent \
             to the one server without the others' entries: none of 100,000 walks \
             draws it",
        )])
        .with_max_term(4)
        .with_term_key(TERM_KEY)
        .with_checks(&[
            "leader-completeness",
            "state-machine-safety",
            "log-matching",
            "single-leader-per-term",
        ])
        .with_params(r#"{ "max_entries": 1, "transfer": false }"#)
        .with_walk_params(r#"{ "max_entries": 1, "transfer": false }"#))
    }

    fn message_term(msg: &RaftLogMsg) -> Option<u64> {
        msg.term()
    }
}
