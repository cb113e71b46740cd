//! Raft leader election, sans-IO.
//!
//! **Promises.** At most one leader per term (election safety, Raft §5.2): a node votes
//! at most once per term, and its term and vote are on disk before its reply leaves; a
//! leader needs a majority. Only a candidate whose log is at least as up to date as a
//! majority's can win (§5.4.1). When the network is calm a leader is elected and stays,
//! because randomized timeouts make split votes rare and heartbeats keep followers
//! quiet. With `pre_vote` (Ongaro thesis §9.6) a node that was cut off cannot inflate
//! the term and depose a healthy leader when it comes back. With `check_quorum`
//! (thesis §6.2) a leader that lost its majority steps down instead of believing it
//! leads forever. With either, a follower that heard from a live leader within the
//! minimum election timeout ignores RequestVote (thesis §4.2.3).
//!
//! **How it fails.** Two nodes can believe they lead at the same true instant (an old
//! leader in a minority does not know it was replaced): Raft promises one leader per
//! *term*, not per instant. The broken variants:
//! * `forget-vote`: `votedFor` is not persisted, so a node that crashes after voting
//!   can vote again in the same term, and two candidates can win the same term.
//! * `no-step-down`: a leader ignores higher terms, so a deposed leader keeps leading
//!   next to the new one and the cluster never settles.
//! * `reply-before-sync`: term and vote are written and the reply sent before the
//!   fsync: a power loss inside the fsync window forgets a vote already given, and two
//!   candidates can win the same term (the correct variant syncs, then replies).
//! * `etcd-8334` (etcd raft before PR #8334, raft-rs before 0.3.1): a pre-candidate
//!   keeps the leader it knew and, its election tick having just restarted, counts
//!   itself in that leader's lease (etcd's `inLease`, with `vote_rules = "etcd"` and
//!   CheckQuorum), so pre-candidates ignore each other's pre-votes; with close timeouts
//!   no one ever wins one. `correct` with the same parameters is the fix.
//! * `hashicorp-609` (hashicorp/raft `requestPreVote` on main between PR #605 and PR
//!   #609, August 2024; with `vote_rules = "hashicorp"`): granting a pre-vote restarts
//!   the voter's election timer (`setLastContact`), so a former leader that pre-votes
//!   more often than the others time out (a low election timeout) and never wins (it
//!   hears no replies) keeps the rest from ever electing. `correct` is the fix.
//!
//! **Scope.** Only election: logs are the fixed initial ones given in the parameters
//! (to make some nodes ineligible); heartbeats are AppendEntries with no entries, and
//! followers skip the log consistency check.
//!
//! **Sources.** Ongaro and Ousterhout, "In Search of an Understandable Consensus
//! Algorithm" (2014) §5.2, §5.4.1, Figure 2; Ongaro, "Consensus: Bridging Theory and
//! Practice" (2014) §4.2.3, §6.2, §9.6.

#[cfg(test)]
mod cluster_tests;
mod config;
#[cfg(test)]
mod tests;

pub use config::{configure, RaftConfig, RaftParams, RaftVariant, TimeoutRange, VoteRules};

use crate::util::majority;
use std::collections::{BTreeMap, BTreeSet};
use tenure_core::{
    Cluster, Configurable, Env, LocalTime, NodeId, Observation, ParamError, Protocol, ProtocolInfo,
    StorageExt,
};

/// Storage key of `currentTerm`.
pub const TERM_KEY: &str = "term";
/// Storage key of `votedFor`.
pub const VOTED_FOR_KEY: &str = "voted_for";

/// Raft's messages. Terms are the sender's, as in the paper's Figure 2. Serde gives them
/// a wire encoding, so Raft also runs as real processes (tenure-runtime).
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum RaftMsg {
    /// A candidate asks for a vote. With `pre_vote`, `term` is the term it *would*
    /// stand in (its own plus one), and neither side changes its term or vote.
    RequestVote {
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
        pre_vote: bool,
    },
    /// `term` is the voter's term; for a granted pre-vote, the term asked about.
    RequestVoteReply {
        term: u64,
        granted: bool,
        pre_vote: bool,
    },
    /// A heartbeat from the leader of `term` (no entries: there is no replication).
    AppendEntries {
        term: u64,
    },
    AppendEntriesReply {
        term: u64,
        success: bool,
    },
}

impl RaftMsg {
    pub fn term(&self) -> u64 {
        match self {
            RaftMsg::RequestVote { term, .. }
            | RaftMsg::RequestVoteReply { term, .. }
            | RaftMsg::AppendEntries { term }
            | RaftMsg::AppendEntriesReply { term, .. } => *term,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RaftTimer {
    /// A follower or candidate has heard nothing for too long.
    Election,
    /// A leader's next heartbeat (and CheckQuorum check).
    Heartbeat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower,
    /// A follower collecting pre-votes (thesis §9.6); to others it is still a follower.
    PreCandidate,
    Candidate,
    Leader,
}

/// What is on disk (so `persist` writes only what changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Persisted {
    term: u64,
    voted_for: Option<NodeId>,
}

/// One Raft server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Raft {
    me: NodeId,
    /// The ids of the servers, this one included ([`Cluster::role_ids`]): a range, not a
    /// list, so a node holds O(1) of them (a list of peers per node was O(nodes²)).
    servers: std::ops::Range<u32>,
    variant: RaftVariant,
    election_timeout: TimeoutRange,
    heartbeat_interval: std::time::Duration,
    pre_vote: bool,
    check_quorum: bool,
    vote_rules: VoteRules,
    /// The terms of this node's log entries (fixed: there is no replication).
    log: Vec<u64>,

    term: u64,
    voted_for: Option<NodeId>,
    role: Role,
    leader: Option<NodeId>,
    /// Votes (or pre-votes) collected in the current (pre-)candidacy, self included.
    votes: BTreeSet<NodeId>,
    /// When this node last heard from a leader of its current term.
    leader_contact: Option<LocalTime>,
    /// Leader only: when each peer last answered in this term (CheckQuorum).
    heard_from: BTreeMap<NodeId, LocalTime>,
    persisted: Persisted,
    /// Written to storage but not yet synced.
    unsynced: bool,
    /// The last role observation made, so only changes are observed.
    announced: Option<Observation>,
}

impl Raft {
    pub fn term(&self) -> u64 {
        self.term
    }
    pub fn voted_for(&self) -> Option<NodeId> {
        self.voted_for
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn leader(&self) -> Option<NodeId> {
        self.leader
    }

    /// The other servers, in id order.
    fn peers(&self) -> impl Iterator<Item = NodeId> + use<> {
        let me = self.me;
        self.servers.clone().map(NodeId).filter(move |n| *n != me)
    }

    fn quorum(&self) -> usize {
        majority(self.servers.len())
    }

    fn last_log(&self) -> (u64, u64) {
        (self.log.last().copied().unwrap_or(0), self.log.len() as u64)
    }

    /// §5.4.1: the candidate's log is at least as up to date as ours.
    fn log_ok(&self, last_log_term: u64, last_log_index: u64) -> bool {
        (last_log_term, last_log_index) >= self.last_log()
    }

    /// Heard from a live leader within the minimum election timeout (a leader counts
    /// itself). Used by PreVote and by the RequestVote guard of thesis §4.2.3.
    fn leader_is_fresh(&self, now: LocalTime) -> bool {
        self.role == Role::Leader
            || self
                .leader_contact
                .is_some_and(|t| t.until(now) < self.election_timeout.min)
    }

    /// etcd's `inLease`: with CheckQuorum, a node that knows a leader (itself included)
    /// and heard from it within the minimum election timeout ignores votes and
    /// pre-votes for later terms. Without CheckQuorum there is no lease.
    fn in_etcd_lease(&self, now: LocalTime) -> bool {
        self.check_quorum && self.leader.is_some() && self.leader_is_fresh(now)
    }

    // ----- effects -----

    /// Writes what changed in term and vote and syncs it. Called before every send, so
    /// state is on disk before any reply that depends on it leaves (Figure 2: "respond
    /// to RPCs" only after updating stable storage). Returns false if the sync failed:
    /// then nothing that depends on the new state may be said, and the next call tries
    /// again.
    fn persist(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) -> bool {
        self.write(env);
        self.sync(env)
    }

    fn write(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        if self.persisted.term != self.term {
            env.store(TERM_KEY, &self.term);
            self.persisted.term = self.term;
            self.unsynced = true;
        }
        let keep_vote = self.variant != RaftVariant::ForgetVote;
        if keep_vote && self.persisted.voted_for != self.voted_for {
            env.store(VOTED_FOR_KEY, &self.voted_for);
            self.persisted.voted_for = self.voted_for;
            self.unsynced = true;
        }
    }

    fn sync(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) -> bool {
        if self.unsynced && env.sync().is_ok() {
            self.unsynced = false;
        }
        !self.unsynced
    }

    fn send(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>, to: NodeId, msg: RaftMsg) {
        if self.variant == RaftVariant::ReplyBeforeSync {
            // The bug: the reply leaves while term and vote are only in the OS cache.
            self.write(env);
            env.send(to, msg);
            self.sync(env);
            return;
        }
        if self.persist(env) {
            env.send(to, msg);
        }
    }

    fn broadcast(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>, msg: RaftMsg) {
        // The range is cloned, not borrowed: `send` needs `&mut self`.
        for peer in self.peers() {
            self.send(env, peer, msg.clone());
        }
    }

    /// Observes the (role, term, leader) triple if it changed.
    fn announce(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        let obs = match self.role {
            Role::Leader => Observation::Leader { term: self.term },
            Role::Candidate => Observation::Candidate { term: self.term },
            Role::Follower | Role::PreCandidate => Observation::Follower {
                term: self.term,
                leader: self.leader,
            },
        };
        if self.announced.as_ref() != Some(&obs) {
            env.observe(obs.clone());
            self.announced = Some(obs);
        }
    }

    fn reset_election_timer(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        let after = env.duration_between(self.election_timeout.min, self.election_timeout.max);
        env.set_timer(RaftTimer::Election, after);
    }

    // ----- transitions -----

    /// Becomes a follower (of `leader`, if known) in the current term.
    fn become_follower(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>, leader: Option<NodeId>) {
        let was_leader = self.role == Role::Leader;
        self.role = Role::Follower;
        self.leader = leader;
        self.votes.clear();
        self.heard_from.clear();
        self.announce(env);
        if was_leader {
            env.cancel_timer(&RaftTimer::Heartbeat);
            self.reset_election_timer(env);
        }
    }

    /// Any message with a higher term makes us a follower of that term (§5.1), of
    /// `leader` if the message comes from the term's leader.
    /// Returns false if the message must be dropped (a `no-step-down` leader).
    fn catch_up_term(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        term: u64,
        leader: Option<NodeId>,
    ) -> bool {
        if term <= self.term {
            return true;
        }
        if self.role == Role::Leader && self.variant == RaftVariant::NoStepDown {
            return false; // the bug: a leader that never hears it was replaced
        }
        self.term = term;
        self.voted_for = None;
        self.leader_contact = None;
        self.become_follower(env, leader);
        true
    }

    fn start_pre_vote(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        self.role = Role::PreCandidate;
        if self.variant == RaftVariant::Etcd8334 {
            // The bug (etcd raft.go before PR #8334): `becomePreCandidate` leaves `r.lead`
            // set, and the election tick that fired has just zeroed `electionElapsed`,
            // so `inLease` holds again: this pre-candidate ignores pre-votes for a while.
            self.leader_contact = Some(env.monotonic());
        } else {
            self.leader = None;
        }
        self.votes = BTreeSet::from([self.me]);
        self.announce(env);
        self.reset_election_timer(env);
        let (last_log_term, last_log_index) = self.last_log();
        let msg = RaftMsg::RequestVote {
            term: self.term + 1,
            last_log_index,
            last_log_term,
            pre_vote: true,
        };
        self.broadcast(env, msg);
        if self.votes.len() >= self.quorum() {
            self.start_election(env);
        }
    }

    fn start_election(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        self.term += 1;
        self.voted_for = Some(self.me);
        self.role = Role::Candidate;
        self.leader = None;
        self.votes = BTreeSet::from([self.me]);
        self.announce(env);
        self.reset_election_timer(env);
        let (last_log_term, last_log_index) = self.last_log();
        let msg = RaftMsg::RequestVote {
            term: self.term,
            last_log_index,
            last_log_term,
            pre_vote: false,
        };
        self.broadcast(env, msg);
        if self.votes.len() >= self.quorum() {
            self.become_leader(env);
        }
    }

    fn become_leader(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        self.role = Role::Leader;
        self.leader = Some(self.me);
        self.votes.clear();
        let now = env.monotonic();
        // CheckQuorum's grace period: every peer counts as heard from at the start.
        self.heard_from = self.peers().map(|p| (p, now)).collect();
        self.announce(env);
        env.cancel_timer(&RaftTimer::Election);
        self.send_heartbeats(env);
    }

    /// The leader acts as such: it replicates (here: empty) commands to its followers,
    /// observed as `Serves`. A deposed leader cut off from the others goes on doing so
    /// until it learns of the higher term (or CheckQuorum steps it down); its commands
    /// cannot commit, but it *acts*: `single-leader-at-a-time` judges these actions.
    fn send_heartbeats(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        env.observe(Observation::Serves { term: self.term });
        let msg = RaftMsg::AppendEntries { term: self.term };
        self.broadcast(env, msg);
        env.set_timer(RaftTimer::Heartbeat, self.heartbeat_interval);
    }

    /// CheckQuorum: peers heard from within the minimum election timeout, plus self.
    fn has_quorum(&self, now: LocalTime) -> bool {
        let active = self
            .heard_from
            .values()
            .filter(|t| t.until(now) < self.election_timeout.min)
            .count();
        active + 1 >= self.quorum()
    }

    // ----- message handlers -----

    fn on_request_vote(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
        last_log: (u64, u64),
    ) {
        match self.vote_rules {
            VoteRules::Thesis | VoteRules::Hashicorp => {
                let guarded = self.pre_vote || self.check_quorum;
                if guarded && self.leader_is_fresh(env.monotonic()) {
                    // Thesis §4.2.3: we have a live leader; do not even update the term.
                    self.send(env, from, vote_reply(self.term, false, false));
                    return;
                }
            }
            VoteRules::Etcd => {
                if term > self.term && self.in_etcd_lease(env.monotonic()) {
                    return; // etcd `Step`: ignored in the lease, no reply
                }
            }
        }
        if !self.catch_up_term(env, term, None) {
            return;
        }
        let free = match self.vote_rules {
            VoteRules::Thesis | VoteRules::Hashicorp => {
                self.voted_for.is_none() || self.voted_for == Some(from)
            }
            // etcd `canVote`: a repeat of our vote, or no vote and no known leader
            VoteRules::Etcd => {
                self.voted_for == Some(from) || (self.voted_for.is_none() && self.leader.is_none())
            }
        };
        let granted = term == self.term && free && self.log_ok(last_log.0, last_log.1);
        if granted {
            self.voted_for = Some(from);
        }
        self.send(env, from, vote_reply(self.term, granted, false));
        if granted {
            self.reset_election_timer(env);
        }
    }

    fn on_pre_vote_request(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
        last_log: (u64, u64),
    ) {
        // A pre-vote changes neither our term nor our vote.
        let granted = match self.vote_rules {
            VoteRules::Thesis => {
                term > self.term
                    && self.log_ok(last_log.0, last_log.1)
                    && !self.leader_is_fresh(env.monotonic())
            }
            VoteRules::Hashicorp => {
                // hashicorp/raft `requestPreVote` (v1.7.1): "rejecting pre-vote request
                // since we have a leader", unless that leader is the candidate.
                let other_leader = self.leader.is_some_and(|l| l != from);
                !other_leader && term > self.term && self.log_ok(last_log.0, last_log.1)
            }
            VoteRules::Etcd => {
                if term > self.term && self.in_etcd_lease(env.monotonic()) {
                    return; // etcd `Step`: ignored in the lease, no reply
                }
                let can_vote = term > self.term
                    || (term == self.term
                        && (self.voted_for == Some(from)
                            || (self.voted_for.is_none() && self.leader.is_none())));
                can_vote && self.log_ok(last_log.0, last_log.1)
            }
        };
        let reply_term = if granted { term } else { self.term };
        self.send(env, from, vote_reply(reply_term, granted, true));
        if granted && self.variant == RaftVariant::Hashicorp609 && self.role != Role::Leader {
            // The bug (hashicorp/raft v1.7.0 `requestPreVote`, removed by PR #609): a
            // granted pre-vote calls `setLastContact`, which the follower's heartbeat
            // timeout reads as contact with a leader: its election waits again.
            self.reset_election_timer(env);
        }
    }

    fn on_vote_reply(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
        granted: bool,
    ) {
        if !self.catch_up_term(env, term, None) {
            return;
        }
        if self.role == Role::Candidate && term == self.term && granted {
            self.votes.insert(from);
            if self.votes.len() >= self.quorum() {
                self.become_leader(env);
            }
        }
    }

    fn on_pre_vote_reply(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
        granted: bool,
    ) {
        if !granted {
            // A refusal carries the voter's term; a higher one means we are behind.
            self.catch_up_term(env, term, None);
            return;
        }
        if self.role == Role::PreCandidate && term == self.term + 1 {
            self.votes.insert(from);
            if self.votes.len() >= self.quorum() {
                self.start_election(env);
            }
        }
    }

    fn on_append_entries(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
    ) {
        if !self.catch_up_term(env, term, Some(from)) {
            return;
        }
        if term < self.term || self.role == Role::Leader {
            // A stale leader, or (broken variants only) a second leader of our term.
            let reply = RaftMsg::AppendEntriesReply {
                term: self.term,
                success: false,
            };
            self.send(env, from, reply);
            return;
        }
        self.leader_contact = Some(env.monotonic());
        self.become_follower(env, Some(from));
        let reply = RaftMsg::AppendEntriesReply {
            term: self.term,
            success: true,
        };
        self.send(env, from, reply);
        self.reset_election_timer(env);
    }

    fn on_append_entries_reply(
        &mut self,
        env: &mut dyn Env<RaftMsg, RaftTimer>,
        from: NodeId,
        term: u64,
    ) {
        if !self.catch_up_term(env, term, None) {
            return;
        }
        if self.role == Role::Leader && term == self.term {
            self.heard_from.insert(from, env.monotonic());
        }
    }

    // ----- timer handlers -----

    fn on_election_timeout(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        if self.role == Role::Leader {
            return; // cancelled when we became leader; a stale firing
        }
        if self.pre_vote {
            self.start_pre_vote(env);
        } else {
            self.start_election(env);
        }
    }

    fn on_heartbeat_tick(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        if self.role != Role::Leader {
            return;
        }
        if self.check_quorum && !self.has_quorum(env.monotonic()) {
            self.become_follower(env, None);
            return;
        }
        self.send_heartbeats(env);
    }
}

fn vote_reply(term: u64, granted: bool, pre_vote: bool) -> RaftMsg {
    RaftMsg::RequestVoteReply {
        term,
        granted,
        pre_vote,
    }
}

impl Protocol for Raft {
    type Msg = RaftMsg;
    type Timer = RaftTimer;
    type Config = RaftConfig;

    fn new(config: &RaftConfig, me: NodeId, cluster: &Cluster) -> Raft {
        Raft {
            me,
            servers: cluster.role_ids(cluster.role_index_of(me)),
            variant: config.variant,
            election_timeout: config.election_timeout_of(me),
            heartbeat_interval: config.heartbeat_interval,
            pre_vote: config.pre_vote,
            check_quorum: config.check_quorum,
            vote_rules: config.vote_rules,
            log: config.log_of(me).to_vec(),
            term: 0,
            voted_for: None,
            role: Role::Follower,
            leader: None,
            votes: BTreeSet::new(),
            leader_contact: None,
            heard_from: BTreeMap::new(),
            persisted: Persisted {
                term: 0,
                voted_for: None,
            },
            unsynced: false,
            announced: None,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>) {
        let stored_term: u64 = env.load(TERM_KEY).unwrap_or(0);
        let voted_for: Option<NodeId> = env.load(VOTED_FOR_KEY).flatten();
        self.persisted = Persisted {
            term: stored_term,
            voted_for,
        };
        // A node's term is never below the terms in its log (Figure 2's invariant).
        self.term = stored_term.max(self.last_log().0);
        self.voted_for = if self.term == stored_term {
            voted_for
        } else {
            None
        };
        self.persist(env);
        self.announce(env);
        self.reset_election_timer(env);
    }

    fn on_message(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>, from: NodeId, msg: RaftMsg) {
        match msg {
            RaftMsg::RequestVote {
                term,
                last_log_index,
                last_log_term,
                pre_vote,
            } => {
                let last_log = (last_log_term, last_log_index);
                if pre_vote {
                    self.on_pre_vote_request(env, from, term, last_log);
                } else {
                    self.on_request_vote(env, from, term, last_log);
                }
            }
            RaftMsg::RequestVoteReply {
                term,
                granted,
                pre_vote: true,
            } => self.on_pre_vote_reply(env, from, term, granted),
            RaftMsg::RequestVoteReply {
                term,
                granted,
                pre_vote: false,
            } => self.on_vote_reply(env, from, term, granted),
            RaftMsg::AppendEntries { term } => self.on_append_entries(env, from, term),
            RaftMsg::AppendEntriesReply { term, .. } => {
                self.on_append_entries_reply(env, from, term)
            }
        }
        self.persist(env);
    }

    fn on_timer(&mut self, env: &mut dyn Env<RaftMsg, RaftTimer>, timer: RaftTimer) {
        match timer {
            RaftTimer::Election => self.on_election_timeout(env),
            RaftTimer::Heartbeat => self.on_heartbeat_tick(env),
        }
        self.persist(env);
    }
}

impl Configurable for Raft {
    type Params = RaftParams;
    type Variant = RaftVariant;
    type Role = tenure_core::roles::Server;

    fn info() -> &'static ProtocolInfo {
        &config::INFO
    }

    fn configure(
        params: RaftParams,
        variant: RaftVariant,
        cluster: &Cluster,
    ) -> Result<RaftConfig, ParamError> {
        configure(params, variant, cluster)
    }

    fn promises(config: &RaftConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::{format_duration as f, Promise};
        let max = config
            .timeouts
            .values()
            .map(|t| t.max)
            .chain([config.election_timeout.max])
            .max()
            .unwrap_or(config.election_timeout.max);
        // After the calm a follower times out within one election timeout; a split vote
        // costs one more. Ten rounds: a split lasting ten randomised rounds is
        // vanishingly rare. Clocks may run up to 50% slow (the drift the profiles draw
        // within Raft's assumptions), which doubles every timeout.
        let within = (max * 10 + config.heartbeat_interval) * 2;
        let bound = format!(
            "(10 x election timeout max {} + heartbeat {}) / (1 - max drift 0.5)",
            f(max),
            f(config.heartbeat_interval)
        );
        let mut promises = vec![
            Promise::new("single-leader-per-term"),
            Promise::new("leader-liveness").within(within, bound),
        ];
        // With CheckQuorum a leader cut off from its majority steps down at the first
        // heartbeat tick after it has heard from no majority for the minimum election
        // timeout (thesis §6.2), so it acts at most that long (plus one heartbeat, on a
        // clock up to 2x slow) after the others could elect a new leader. Without it a
        // deposed leader acts for as long as it stays cut off: plain Raft promises one
        // leader per term, not one at a time.
        if config.check_quorum {
            let min = config
                .timeouts
                .values()
                .map(|t| t.min)
                .chain([config.election_timeout.min])
                .max()
                .unwrap_or(config.election_timeout.min);
            let overlap = (min + config.heartbeat_interval) * 2;
            promises.push(Promise::new("single-leader-at-a-time").overlap(
                overlap,
                format!(
                    "CheckQuorum: (election timeout min {} + heartbeat {}) / (1 - max drift 0.5)",
                    f(min),
                    f(config.heartbeat_interval)
                ),
            ));
        }
        promises
    }

    fn assumptions(config: &RaftConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        // §5.6's timing requirement, broadcastTime << electionTimeout: a follower must
        // hear the next heartbeat before its shortest election timeout, and two arrivals
        // are at most a heartbeat interval plus the delay's spread apart. Half the slack
        // leaves room for the clocks' drift.
        let min_timeout = config
            .timeouts
            .values()
            .map(|t| t.min)
            .chain([config.election_timeout.min])
            .min()
            .unwrap_or(config.election_timeout.min);
        let slack = min_timeout.saturating_sub(config.heartbeat_interval);
        tenure_core::Assumptions::new()
            .with_max_drift(Limit::new(
                0.5,
                "election safety needs no clock; the liveness bound allows timers up to 2x slow",
            ))
            .with_max_latency(Limit::new(
                slack / 2,
                format!(
                    "a stable leader needs broadcast time << election timeout (Raft §5.6): \
                     heartbeats {} apart must reach a follower within its shortest timeout {}; \
                     half of the {} between them",
                    f(config.heartbeat_interval),
                    f(min_timeout),
                    f(slack)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel};
        Ok(ModelSpec::new(
            "elections with votes, terms and crashes; messages delivered, lost or \
             duplicated in any order, election timers firing at any point",
            &[("server", 3)],
        )
        .with_out_of_scope(&[
            (
                "reply-before-sync",
                "the explorer crashes processes but never cuts power: every write survives",
            ),
            (
                "etcd-8334",
                "its failure is a liveness one (no leader ever), which the explorer does \
                 not judge, and needs PreVote, CheckQuorum and etcd's rules",
            ),
            (
                "hashicorp-609",
                "its failure is a liveness one (no leader ever), which the explorer does \
                 not judge, and needs PreVote and hashicorp's rules",
            ),
        ])
        .with_stands_for(&[("steps-down-on-higher-term", "single-leader-at-a-time")])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(8)
                .with_max_crashes(1)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::Leaders),
        )
        .with_max_term(2)
        .with_term_key(TERM_KEY)
        .with_checks(&["single-leader-per-term", "steps-down-on-higher-term"]))
    }

    fn message_term(msg: &RaftMsg) -> Option<u64> {
        Some(msg.term())
    }
}
