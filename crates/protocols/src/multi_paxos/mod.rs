//! Multi-Paxos, sans-IO: a replicated key-value log in which each slot is one Paxos
//! instance, driven by a stable leader that runs phase 1 once per leadership for every
//! slot above its commit point and phase 2 per slot (Lamport, "Paxos Made Simple", 2001,
//! §3 "Implementing a State Machine": the leader's phase 1 "for infinitely many
//! instances" with one short message, the gaps filled with no-ops).
//!
//! **Servers** are proposer, acceptor and learner at once. An acceptor keeps one
//! promise (`promised`, a ballot `(round, id)` as [`crate::paxos::Ballot`]) for all
//! slots and, per slot, the ballot and value it accepted last; both are written and
//! synced before it answers (a promise or an acceptance is a promise about the future,
//! Lamport §2.2). A server that hears no heartbeat from a leader within a timeout drawn
//! from its seeded stream (`election_timeout`) becomes a *candidate*: it picks a ballot
//! above every round it has seen, promises it itself and sends `Prepare { ballot, from }`
//! where `from` is the first slot it has not learned as chosen. Each acceptor that has
//! promised nothing higher promises and reports everything it accepted from `from` on.
//! With promises from a majority the candidate *leads*: for every slot from `from` to
//! the highest slot reported it re-proposes the value of the highest ballot reported
//! (a chosen value is always that one, Lamport P2c), or a no-op where nothing was
//! reported, and puts new client commands after them. Phase 2 is one `Accept` per slot;
//! a majority of `Accepted` (the leader counting itself once its own acceptance is
//! synced) chooses the value, and the leader tells every server `Chosen`. Each server
//! applies chosen slots in order to its key-value state machine. A leader sends
//! heartbeats every `heartbeat_interval`, re-sends accepts not yet acknowledged, and
//! sends a lagging server up to `catch_up` chosen slots per heartbeat (a restarted
//! server learns the whole log again: what it learned is volatile, its acceptor state
//! is not). A leader steps down when an acceptor answers with a higher promise.
//!
//! **Values** carry the ballot of the leader that first proposed them (`origin`): a
//! value re-proposed by a later leader keeps it, so a slot's value (origin and command)
//! is the same wherever it is learned. The observations use it as the entry's term.
//!
//! **Client sessions and reads** are raft-log's (its [`crate::raft_log::Client`],
//! reused): a put carries `(client, session, seq)` and is applied at most once; a get is
//! answered by the leader once a heartbeat round sent after the get arrived is
//! acknowledged by a majority of acceptors that had promised nothing higher (no other
//! leader can have chosen anything since its phase 1 would have needed one of them),
//! and it has applied every slot it had assigned when the get arrived (a phase-1
//! confirmed read, the analogue of Raft's ReadIndex).
//!
//! **Observations.** `Candidate { term }` / `Leader { term }` / `Follower { term,
//! leader }` (the term is the ballot, `round * 1000 + id`); for each slot that joins a
//! server's contiguous chosen prefix, `LogAppend` then `LogApply { index: slot, term:
//! origin ballot, digest }` (so `log-matching` and `state-machine-safety` judge the
//! chosen log); `Serves` when a leader answers a read; the clients' `Invoke`/`Complete`
//! for `linearizability`.
//!
//! **Broken variants.** `skip-phase1` (a new leader adopts reported values only for
//! slots it had seen itself, accepted or learned: a slot it missed, while down or cut
//! off, it takes as free and fills with a no-op, overwriting a value that may already be
//! chosen), `no-sync-accept` (an acceptor answers `Accepted`, or
//! `Promise`, before the fsync of what it reports: a power loss inside that fsync forgets
//! an acceptance the leader counted, and the next leader's phase 1 misses the chosen
//! value).
//!
//! **Sources.** Leslie Lamport, "Paxos Made Simple", ACM SIGACT News 32(4), 2001: §2.2
//! (the two phases; an acceptor must remember its promise and acceptance across a
//! restart), §3 (a sequence of instances, a distinguished leader, phase 1 once for all
//! instances above those it knows chosen, no-ops for gaps).

mod config;
#[cfg(test)]
mod tests;

pub use config::{
    configure, MultiPaxosConfig, MultiPaxosParams, MultiPaxosRole, MultiPaxosVariant,
};

use crate::paxos::Ballot;
use crate::raft_log::{Answer, Client, ClientTimer, ClientWire, Command, Entry, Op, Request};
use crate::util::majority;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use tenure_core::{
    Cluster, Configurable, Env, NodeId, Observation, ParamError, Protocol, ProtocolInfo, StorageExt,
};

/// Storage key of the acceptor's promise.
pub const PROMISED_KEY: &str = "promised";
/// Storage key of the highest slot with an acceptance; slot `s`'s is under `acc/<s>`.
pub const ACC_MAX_KEY: &str = "acc_max";

fn acc_key(slot: u64) -> String {
    format!("acc/{slot}")
}

/// A slot's value: a command and the ballot of the leader that first proposed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Proposal {
    pub origin: Ballot,
    pub command: Command,
}

impl Proposal {
    /// The digest the log checkers compare (raft-log's, of the command).
    pub fn digest(&self) -> u64 {
        Entry {
            term: 0,
            command: self.command,
        }
        .digest()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Msg {
    /// Phase 1a for every slot from `from` on.
    Prepare {
        ballot: Ballot,
        from: u64,
    },
    /// Phase 1b: a promise, with every acceptance from the prepare's `from` on.
    Promise {
        ballot: Ballot,
        accepted: Vec<(u64, Ballot, Proposal)>,
    },
    /// Phase 2a for one slot.
    Accept {
        ballot: Ballot,
        slot: u64,
        value: Proposal,
    },
    /// Phase 2b, to the leader.
    Accepted {
        ballot: Ballot,
        slot: u64,
    },
    /// `ballot` refused: the acceptor promised `promised`.
    Nack {
        ballot: Ballot,
        promised: Ballot,
    },
    /// The leader's heartbeat round.
    Heartbeat {
        ballot: Ballot,
        round: u64,
    },
    /// An acceptor that promised nothing higher acknowledges a round, saying how far it
    /// has learned.
    HeartbeatAck {
        ballot: Ballot,
        round: u64,
        chosen: u64,
    },
    /// A slot's value is chosen (from the leader that saw a majority accept it).
    Chosen {
        slot: u64,
        value: Proposal,
    },
    Request(Request),
    Reply {
        attempt: u64,
        answer: Answer,
    },
}

impl Msg {
    /// The ballot a message carries, as a term.
    pub fn term(&self) -> Option<u64> {
        match self {
            Msg::Prepare { ballot, .. }
            | Msg::Promise { ballot, .. }
            | Msg::Accept { ballot, .. }
            | Msg::Accepted { ballot, .. }
            | Msg::Nack { ballot, .. }
            | Msg::Heartbeat { ballot, .. }
            | Msg::HeartbeatAck { ballot, .. } => Some(ballot.term()),
            Msg::Chosen { .. } | Msg::Request(_) | Msg::Reply { .. } => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    /// No heartbeat from a leader in time (or a candidacy that got nowhere).
    Election,
    /// A leader's next heartbeat round.
    Heartbeat,
    /// A client's next operation.
    Think,
    /// No answer to a client's attempt in time.
    Timeout(u64),
}

/// multi-paxos's messages and timers, for raft-log's client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Wire;

impl ClientWire for Wire {
    type Msg = Msg;
    type Timer = Timer;
    fn request(req: Request) -> Msg {
        Msg::Request(req)
    }
    fn timer(t: ClientTimer) -> Timer {
        match t {
            ClientTimer::Think => Timer::Think,
            ClientTimer::Timeout(a) => Timer::Timeout(a),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Follower,
    Candidate,
    Leader,
}

/// A read waiting at the leader.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PendingRead {
    client: NodeId,
    attempt: u64,
    key: u32,
    round: u64,
    /// Every slot up to here must be applied first.
    index: u64,
}

type E<'a> = dyn Env<Msg, Timer> + 'a;

/// The most puts a leader remembers to answer.
const MAX_PROPOSED: usize = 4096;
/// The most unacknowledged accepts a leader re-sends per heartbeat.
const RESEND: usize = 16;

/// One Multi-Paxos server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Server {
    me: NodeId,
    peers: Vec<NodeId>,
    config: MultiPaxosConfig,

    // acceptor state (on disk), and what of it is written and synced
    promised: Ballot,
    accepted: BTreeMap<u64, (Ballot, Proposal)>,
    stored_promised: Ballot,
    stored_max: u64,
    dirty: BTreeSet<u64>,
    unsynced: bool,

    // proposer state (volatile)
    role: Role,
    ballot: Ballot,
    leader: Option<NodeId>,
    max_round: u64,
    prepare_from: u64,
    promises: BTreeMap<NodeId, Vec<(u64, Ballot, Proposal)>>,
    next_slot: u64,
    /// Slots proposed in this ballot and not yet chosen: who accepted them.
    pending: BTreeMap<u64, BTreeSet<NodeId>>,
    proposed: BTreeMap<u64, (NodeId, u64)>,
    round: u64,
    acked_round: BTreeMap<NodeId, u64>,
    peer_chosen: BTreeMap<NodeId, u64>,
    reads: Vec<PendingRead>,

    // learner and state machine (volatile)
    chosen: BTreeMap<u64, Proposal>,
    chosen_upto: u64,
    kv: BTreeMap<u32, i64>,
    sessions: BTreeMap<(NodeId, u64), u64>,

    announced: Option<Observation>,
}

impl Server {
    fn new(config: &MultiPaxosConfig, me: NodeId) -> Server {
        Server {
            me,
            peers: config
                .servers
                .iter()
                .copied()
                .filter(|&n| n != me)
                .collect(),
            config: config.clone(),
            promised: Ballot::default(),
            accepted: BTreeMap::new(),
            stored_promised: Ballot::default(),
            stored_max: 0,
            dirty: BTreeSet::new(),
            unsynced: false,
            role: Role::Follower,
            ballot: Ballot::default(),
            leader: None,
            max_round: 0,
            prepare_from: 1,
            promises: BTreeMap::new(),
            next_slot: 1,
            pending: BTreeMap::new(),
            proposed: BTreeMap::new(),
            round: 0,
            acked_round: BTreeMap::new(),
            peer_chosen: BTreeMap::new(),
            reads: Vec::new(),
            chosen: BTreeMap::new(),
            chosen_upto: 0,
            kv: BTreeMap::new(),
            sessions: BTreeMap::new(),
            announced: None,
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }
    pub fn ballot(&self) -> Ballot {
        self.ballot
    }
    pub fn promised(&self) -> Ballot {
        self.promised
    }
    /// The contiguous prefix of slots this server knows chosen.
    pub fn chosen_upto(&self) -> u64 {
        self.chosen_upto
    }
    /// The value this server accepted last for `slot`.
    pub fn accepted(&self, slot: u64) -> Option<(Ballot, Proposal)> {
        self.accepted.get(&slot).copied()
    }

    fn variant(&self) -> MultiPaxosVariant {
        self.config.variant
    }

    fn quorum(&self) -> usize {
        majority(self.peers.len() + 1)
    }

    // ----- the disk -----

    /// Writes what changed (promise, acceptances), not yet synced.
    fn write(&mut self, env: &mut E<'_>) {
        if self.stored_promised != self.promised {
            env.store(PROMISED_KEY, &self.promised);
            self.stored_promised = self.promised;
            self.unsynced = true;
        }
        for slot in std::mem::take(&mut self.dirty) {
            env.store(&acc_key(slot), &self.accepted[&slot]);
            if slot > self.stored_max {
                self.stored_max = slot;
                env.store(ACC_MAX_KEY, &slot);
            }
            self.unsynced = true;
        }
    }

    /// Writes and syncs; false if the sync failed (nothing that depends on the new
    /// state may be said).
    fn persist(&mut self, env: &mut E<'_>) -> bool {
        self.write(env);
        if self.unsynced && env.sync().is_ok() {
            self.unsynced = false;
        }
        !self.unsynced
    }

    /// Sends once the acceptor state is durable.
    fn send(&mut self, env: &mut E<'_>, to: NodeId, msg: Msg) {
        if self.persist(env) {
            env.send(to, msg);
        }
    }

    fn broadcast(&mut self, env: &mut E<'_>, msg: &Msg) {
        for k in 0..self.peers.len() {
            let peer = self.peers[k];
            self.send(env, peer, msg.clone());
        }
    }

    fn announce(&mut self, env: &mut E<'_>) {
        let obs = match self.role {
            Role::Leader => Observation::Leader {
                term: self.ballot.term(),
            },
            Role::Candidate => Observation::Candidate {
                term: self.ballot.term(),
            },
            Role::Follower => Observation::Follower {
                term: self.promised.term(),
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

    fn see(&mut self, ballot: Ballot) {
        self.max_round = self.max_round.max(ballot.round);
    }

    // ----- leadership -----

    fn become_follower(&mut self, env: &mut E<'_>, leader: Option<NodeId>) {
        let was = self.role;
        self.role = Role::Follower;
        self.leader = leader;
        self.promises.clear();
        if was == Role::Leader {
            // Puts and reads in flight are forgotten; their clients retry elsewhere.
            self.pending.clear();
            self.proposed.clear();
            self.reads.clear();
            env.cancel_timer(&Timer::Heartbeat);
        }
        if was != Role::Follower {
            self.reset_election_timer(env);
        }
        self.announce(env);
    }

    fn start_phase1(&mut self, env: &mut E<'_>) {
        let round = self.max_round.max(self.promised.round) + 1;
        self.ballot = Ballot {
            round,
            proposer: self.me.0,
        };
        self.see(self.ballot);
        self.promised = self.ballot;
        self.role = Role::Candidate;
        self.leader = None;
        self.prepare_from = self.chosen_upto + 1;
        self.promises.clear();
        self.announce(env);
        self.reset_election_timer(env);
        if !self.persist(env) {
            return; // the disk refused the promise: try again at the next timeout
        }
        let own = self.accepted_from(self.prepare_from);
        self.promises.insert(self.me, own);
        let msg = Msg::Prepare {
            ballot: self.ballot,
            from: self.prepare_from,
        };
        self.broadcast(env, &msg);
        if self.promises.len() >= self.quorum() {
            self.become_leader(env);
        }
    }

    fn accepted_from(&self, from: u64) -> Vec<(u64, Ballot, Proposal)> {
        self.accepted
            .range(from..)
            .map(|(&s, &(b, v))| (s, b, v))
            .collect()
    }

    fn on_prepare(&mut self, env: &mut E<'_>, from: NodeId, ballot: Ballot, first: u64) {
        self.see(ballot);
        if ballot < self.promised {
            let promised = self.promised;
            self.send(env, from, Msg::Nack { ballot, promised });
            return;
        }
        if ballot > self.promised {
            self.promised = ballot;
            if self.role != Role::Follower || self.leader.is_some() {
                self.become_follower(env, None);
            }
            self.announce(env);
        }
        let accepted = self.accepted_from(first);
        let reply = Msg::Promise { ballot, accepted };
        if self.variant() == MultiPaxosVariant::NoSyncAccept {
            // The bug, in phase 1 too: the promise leaves before its fsync.
            self.write(env);
            env.send(from, reply);
            self.persist(env);
        } else {
            // `send` syncs the promise first.
            self.send(env, from, reply);
        }
        self.reset_election_timer(env);
    }

    fn on_promise(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        ballot: Ballot,
        accepted: Vec<(u64, Ballot, Proposal)>,
    ) {
        if self.role != Role::Candidate || ballot != self.ballot {
            return;
        }
        self.promises.insert(from, accepted);
        if self.promises.len() >= self.quorum() {
            self.become_leader(env);
        }
    }

    /// Phase 1 done: re-propose, for each slot from `prepare_from`, the highest-ballot
    /// value reported (a no-op where none was), then lead.
    fn become_leader(&mut self, env: &mut E<'_>) {
        let mut merged: BTreeMap<u64, (Ballot, Proposal)> = BTreeMap::new();
        for reports in std::mem::take(&mut self.promises).into_values() {
            for (slot, b, v) in reports {
                // The bug: a report counts only for a slot this server had seen itself
                // (accepted, or learned chosen); a slot it missed is taken as free.
                if self.variant() == MultiPaxosVariant::SkipPhase1
                    && !self.accepted.contains_key(&slot)
                    && !self.chosen.contains_key(&slot)
                {
                    continue;
                }
                let e = merged.entry(slot).or_insert((b, v));
                if b > e.0 {
                    *e = (b, v);
                }
            }
        }
        self.role = Role::Leader;
        self.leader = Some(self.me);
        env.cancel_timer(&Timer::Election);
        self.announce(env);
        let last = merged
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            .max(self.chosen_upto);
        self.next_slot = last + 1;
        self.pending.clear();
        self.proposed.clear();
        self.reads.clear();
        self.acked_round = self.peers.iter().map(|&p| (p, 0)).collect();
        self.peer_chosen = self.peers.iter().map(|&p| (p, 0)).collect();
        for slot in self.prepare_from..=last {
            if self.chosen.contains_key(&slot) {
                continue;
            }
            let value = merged.get(&slot).map_or(
                Proposal {
                    origin: self.ballot,
                    command: Command::Noop,
                },
                |&(_, v)| v,
            );
            self.propose(env, slot, value);
        }
        if self.config.noop_on_lead {
            let slot = self.next_slot;
            self.next_slot += 1;
            let noop = Proposal {
                origin: self.ballot,
                command: Command::Noop,
            };
            self.propose(env, slot, noop);
        }
        self.heartbeat(env);
    }

    // ----- phase 2 -----

    fn propose(&mut self, env: &mut E<'_>, slot: u64, value: Proposal) {
        self.accepted.insert(slot, (self.ballot, value));
        self.dirty.insert(slot);
        self.pending.insert(slot, BTreeSet::new());
        let msg = Msg::Accept {
            ballot: self.ballot,
            slot,
            value,
        };
        self.broadcast(env, &msg);
        self.check_chosen(env, slot);
    }

    fn on_accept(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        ballot: Ballot,
        slot: u64,
        value: Proposal,
    ) {
        self.see(ballot);
        if ballot < self.promised {
            let promised = self.promised;
            self.send(env, from, Msg::Nack { ballot, promised });
            return;
        }
        self.promised = ballot;
        if self.role != Role::Follower || self.leader != Some(from) {
            self.become_follower(env, Some(from));
        }
        self.announce(env);
        self.reset_election_timer(env);
        self.accepted.insert(slot, (ballot, value));
        self.dirty.insert(slot);
        let reply = Msg::Accepted { ballot, slot };
        if self.variant() == MultiPaxosVariant::NoSyncAccept {
            // The bug: the acknowledgement leaves while the acceptance is only written
            // (in the page cache); the fsync comes after it.
            self.write(env);
            env.send(from, reply);
            self.persist(env);
            return;
        }
        self.send(env, from, reply);
    }

    fn on_accepted(&mut self, env: &mut E<'_>, from: NodeId, ballot: Ballot, slot: u64) {
        if self.role != Role::Leader || ballot != self.ballot {
            return;
        }
        if let Some(acks) = self.pending.get_mut(&slot) {
            acks.insert(from);
            self.check_chosen(env, slot);
        }
    }

    /// A pending slot is chosen once a majority accepted it in this ballot, this
    /// server counting itself once its own acceptance is synced.
    fn check_chosen(&mut self, env: &mut E<'_>, slot: u64) {
        let Some(acks) = self.pending.get(&slot) else {
            return;
        };
        let own = !self.unsynced
            && self.dirty.is_empty()
            && self.accepted.get(&slot).is_some_and(|a| a.0 == self.ballot);
        if acks.len() + usize::from(own) < self.quorum() {
            return;
        }
        self.pending.remove(&slot);
        let value = self.accepted[&slot].1;
        self.learn(env, slot, value);
        let msg = Msg::Chosen { slot, value };
        self.broadcast(env, &msg);
    }

    // ----- learning and applying -----

    fn learn(&mut self, env: &mut E<'_>, slot: u64, value: Proposal) {
        if slot <= self.chosen_upto || self.chosen.contains_key(&slot) {
            return;
        }
        self.chosen.insert(slot, value);
        while let Some(&v) = self.chosen.get(&(self.chosen_upto + 1)) {
            self.chosen_upto += 1;
            self.apply(env, self.chosen_upto, v);
        }
        self.serve_reads(env);
    }

    fn apply(&mut self, env: &mut E<'_>, slot: u64, value: Proposal) {
        let (term, digest) = (value.origin.term(), value.digest());
        env.observe(Observation::LogAppend {
            index: slot,
            term,
            digest,
        });
        if let Command::Put {
            client,
            session,
            seq,
            key,
            value,
        } = value.command
        {
            let last = self.sessions.entry((client, session)).or_insert(0);
            if seq > *last {
                *last = seq;
                self.kv.insert(key, value);
            }
        }
        env.observe(Observation::LogApply {
            index: slot,
            term,
            digest,
        });
        if let Some((client, attempt)) = self.proposed.remove(&slot) {
            let answer = Answer::Ok(None);
            self.send(env, client, Msg::Reply { attempt, answer });
        }
    }

    // ----- heartbeats and reads -----

    fn heartbeat(&mut self, env: &mut E<'_>) {
        self.round += 1;
        // A leader whose own sync failed counts itself once one succeeds.
        if self.persist(env) {
            let slots: Vec<u64> = self.pending.keys().copied().collect();
            for slot in slots {
                self.check_chosen(env, slot);
            }
        }
        if self.role != Role::Leader {
            return;
        }
        let msg = Msg::Heartbeat {
            ballot: self.ballot,
            round: self.round,
        };
        self.broadcast(env, &msg);
        // Accepts lost on the way are sent again.
        let resend: Vec<(u64, BTreeSet<NodeId>)> = self
            .pending
            .iter()
            .take(RESEND)
            .map(|(&s, a)| (s, a.clone()))
            .collect();
        for (slot, acks) in resend {
            let value = self.accepted[&slot].1;
            for k in 0..self.peers.len() {
                let peer = self.peers[k];
                if !acks.contains(&peer) {
                    let msg = Msg::Accept {
                        ballot: self.ballot,
                        slot,
                        value,
                    };
                    self.send(env, peer, msg);
                }
            }
        }
        env.set_timer(Timer::Heartbeat, self.config.heartbeat_interval);
    }

    fn on_heartbeat(&mut self, env: &mut E<'_>, from: NodeId, ballot: Ballot, round: u64) {
        self.see(ballot);
        if ballot < self.promised {
            let promised = self.promised;
            self.send(env, from, Msg::Nack { ballot, promised });
            return;
        }
        if self.role != Role::Follower || self.leader != Some(from) {
            self.become_follower(env, Some(from));
        }
        self.reset_election_timer(env);
        let chosen = self.chosen_upto;
        self.send(
            env,
            from,
            Msg::HeartbeatAck {
                ballot,
                round,
                chosen,
            },
        );
    }

    fn on_heartbeat_ack(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        ballot: Ballot,
        round: u64,
        chosen: u64,
    ) {
        if self.role != Role::Leader || ballot != self.ballot {
            return;
        }
        let acked = self.acked_round.entry(from).or_insert(0);
        *acked = (*acked).max(round);
        self.peer_chosen.insert(from, chosen);
        // A lagging server (a restarted one learns everything again) gets a batch.
        let upto = self.chosen_upto.min(chosen + self.config.catch_up);
        for slot in chosen + 1..=upto {
            if let Some(&value) = self.chosen.get(&slot) {
                self.send(env, from, Msg::Chosen { slot, value });
            }
        }
        self.serve_reads(env);
    }

    fn on_nack(&mut self, env: &mut E<'_>, ballot: Ballot, promised: Ballot) {
        self.see(promised);
        if self.role != Role::Follower && ballot == self.ballot && promised > self.ballot {
            self.become_follower(env, None);
        }
    }

    fn confirmed_round(&self) -> u64 {
        let mut rounds: Vec<u64> = self.acked_round.values().copied().collect();
        rounds.push(self.round);
        rounds.sort_unstable_by(|a, b| b.cmp(a));
        rounds[self.quorum() - 1]
    }

    fn serve_reads(&mut self, env: &mut E<'_>) {
        if self.reads.is_empty() {
            return;
        }
        let confirmed = self.confirmed_round();
        let applied = self.chosen_upto;
        let (due, waiting): (Vec<PendingRead>, Vec<PendingRead>) = std::mem::take(&mut self.reads)
            .into_iter()
            .partition(|r| r.round <= confirmed && r.index <= applied);
        self.reads = waiting;
        for r in due {
            env.observe(Observation::Serves {
                term: self.ballot.term(),
            });
            let answer = Answer::Ok(Some(self.kv.get(&r.key).copied().unwrap_or(0)));
            self.send(
                env,
                r.client,
                Msg::Reply {
                    attempt: r.attempt,
                    answer,
                },
            );
        }
    }

    // ----- client requests -----

    fn on_request(&mut self, env: &mut E<'_>, client: NodeId, req: Request) {
        if self.role != Role::Leader {
            let answer = Answer::NotLeader(self.leader);
            self.send(
                env,
                client,
                Msg::Reply {
                    attempt: req.attempt,
                    answer,
                },
            );
            return;
        }
        match req.op {
            Op::Get { key } => {
                // Every slot assigned so far must be applied, and a round sent from now
                // on acknowledged by a majority that promised nothing higher.
                let index = self.next_slot - 1;
                self.heartbeat(env);
                if self.role != Role::Leader {
                    return;
                }
                self.reads.push(PendingRead {
                    client,
                    attempt: req.attempt,
                    key,
                    round: self.round,
                    index,
                });
                self.serve_reads(env);
            }
            Op::Put { key, value } => {
                let slot = self.next_slot;
                self.next_slot += 1;
                if self.proposed.len() >= MAX_PROPOSED {
                    self.proposed.clear();
                }
                self.proposed.insert(slot, (client, req.attempt));
                let value = Proposal {
                    origin: self.ballot,
                    command: Command::Put {
                        client,
                        session: req.session,
                        seq: req.seq,
                        key,
                        value,
                    },
                };
                self.propose(env, slot, value);
            }
        }
    }

    // ----- the Protocol entry points -----

    fn on_start(&mut self, env: &mut E<'_>) {
        self.promised = env.load(PROMISED_KEY).unwrap_or_default();
        self.stored_promised = self.promised;
        self.max_round = self.promised.round;
        let max: u64 = env.load(ACC_MAX_KEY).unwrap_or(0);
        self.stored_max = max;
        for slot in 1..=max {
            if let Some(a) = env.load::<(Ballot, Proposal)>(&acc_key(slot)) {
                self.accepted.insert(slot, a);
            }
        }
        // What a restarted process reads back may include writes never synced; make
        // them durable before answering anything on their strength.
        self.unsynced = true;
        self.persist(env);
        self.announce(env);
        self.reset_election_timer(env);
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match msg {
            Msg::Prepare {
                ballot,
                from: first,
            } => self.on_prepare(env, from, ballot, first),
            Msg::Promise { ballot, accepted } => self.on_promise(env, from, ballot, accepted),
            Msg::Accept {
                ballot,
                slot,
                value,
            } => self.on_accept(env, from, ballot, slot, value),
            Msg::Accepted { ballot, slot } => self.on_accepted(env, from, ballot, slot),
            Msg::Nack { ballot, promised } => self.on_nack(env, ballot, promised),
            Msg::Heartbeat { ballot, round } => self.on_heartbeat(env, from, ballot, round),
            Msg::HeartbeatAck {
                ballot,
                round,
                chosen,
            } => self.on_heartbeat_ack(env, from, ballot, round, chosen),
            Msg::Chosen { slot, value } => self.learn(env, slot, value),
            Msg::Request(req) => self.on_request(env, from, req),
            Msg::Reply { .. } => {}
        }
        self.persist(env);
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        match timer {
            Timer::Election if self.role != Role::Leader => self.start_phase1(env),
            Timer::Heartbeat if self.role == Role::Leader => self.heartbeat(env),
            _ => {}
        }
        self.persist(env);
    }
}

/// One node: a server or a client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MultiPaxos {
    Server(Box<Server>),
    Client(Box<Client<Wire>>),
}

impl MultiPaxos {
    /// The server, if this node is one.
    pub fn server(&self) -> Option<&Server> {
        match self {
            MultiPaxos::Server(s) => Some(s),
            MultiPaxos::Client(_) => None,
        }
    }
}

impl Protocol for MultiPaxos {
    type Msg = Msg;
    type Timer = Timer;
    type Config = MultiPaxosConfig;

    fn new(config: &MultiPaxosConfig, me: NodeId, _cluster: &Cluster) -> MultiPaxos {
        match config.roles.get(me) {
            MultiPaxosRole::Server => MultiPaxos::Server(Box::new(Server::new(config, me))),
            MultiPaxosRole::Client => MultiPaxos::Client(Box::new(Client::new(
                config.client.clone(),
                me,
                config.servers.clone(),
            ))),
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        match self {
            MultiPaxos::Server(s) => s.on_start(env),
            MultiPaxos::Client(c) => c.on_start(env),
        }
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match self {
            MultiPaxos::Server(s) => s.on_message(env, from, msg),
            MultiPaxos::Client(c) => {
                if let Msg::Reply { attempt, answer } = msg {
                    c.on_reply(env, from, attempt, answer);
                }
            }
        }
    }

    fn on_timer(&mut self, env: &mut E<'_>, timer: Timer) {
        match self {
            MultiPaxos::Server(s) => s.on_timer(env, timer),
            MultiPaxos::Client(c) => match timer {
                Timer::Think => c.on_timer(env, ClientTimer::Think),
                Timer::Timeout(a) => c.on_timer(env, ClientTimer::Timeout(a)),
                _ => {}
            },
        }
    }
}

impl Configurable for MultiPaxos {
    type Params = MultiPaxosParams;
    type Variant = MultiPaxosVariant;
    type Role = MultiPaxosRole;

    fn info() -> &'static ProtocolInfo {
        &config::INFO
    }

    fn configure(
        params: MultiPaxosParams,
        variant: MultiPaxosVariant,
        cluster: &Cluster,
    ) -> Result<MultiPaxosConfig, ParamError> {
        configure(params, variant, cluster)
    }

    fn promises(_config: &MultiPaxosConfig, _cluster: &Cluster) -> Vec<tenure_core::Promise> {
        use tenure_core::Promise;
        vec![
            // a ballot carries its proposer's id: one leader per ballot
            Promise::new("single-leader-per-term"),
            // judged on the chosen log, the term being a value's origin ballot
            Promise::new("log-matching"),
            Promise::new("state-machine-safety"),
            Promise::new("linearizability").with("model", "cas-register"),
        ]
    }

    fn assumptions(config: &MultiPaxosConfig) -> tenure_core::Assumptions {
        use tenure_core::{format_duration as f, Limit};
        let (min, _) = config.election_timeout;
        let slack = min.saturating_sub(config.heartbeat_interval);
        tenure_core::Assumptions::new()
            .with_max_drift(Limit::new(
                0.5,
                "Paxos's safety needs no clock (timers only start phase 1); reads are \
                 confirmed by a heartbeat round, not a lease",
            ))
            .with_max_latency(Limit::new(
                slack / 2,
                format!(
                    "a stable leader needs heartbeats {} apart to reach a server within its \
                     shortest timeout {}: half of the {} between them",
                    f(config.heartbeat_interval),
                    f(min),
                    f(slack)
                ),
            ))
    }

    fn model() -> Result<tenure_core::model::ModelSpec, &'static str> {
        use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel};
        Ok(ModelSpec::new(
            "three servers, no clients: each leader's value is the no-op it proposes on \
             leading (`noop_on_lead`, as a Raft leader's); prepares, promises, accepts \
             and chosen slots, heartbeats and re-sent accepts; messages delivered in any \
             order or never, timers firing at any point, ballots up to round 2",
            &[("server", 3)],
        )
        .with_out_of_scope(&[(
            "no-sync-accept",
            "the explorer crashes processes but never cuts power: every write survives, \
             so an acknowledgement sent before its fsync is never taken back; the \
             simulator's `power` profile finds it",
        )])
        .with_bounds(
            Bounds::DEFAULT
                .with_max_depth(10)
                .with_max_states(20_000_000)
                .with_clock(ClockModel::Frozen)
                .with_seen(SeenModel::All),
        )
        .with_max_term(2)
        .with_term_key("promised/round")
        // A new leader's accepts, then its first heartbeat's re-sends of them.
        .with_copies(2)
        .with_checks(&[
            "single-leader-per-term",
            "log-matching",
            "state-machine-safety",
        ])
        .with_params(r#"{ "noop_on_lead": true }"#)
        .with_walk_params(r#"{ "noop_on_lead": true }"#))
    }

    fn message_term(msg: &Msg) -> Option<u64> {
        msg.term()
    }
}
