//! One server of the ensemble: Zab-like leader election, synchronisation and broadcast,
//! the replicated tree, the leader's session tracker, and the client connections
//! (see the module doc of [`crate::zk_ensemble`]).

// A message arm owns its message: a nested `if` ignores it when the condition fails,
// where a match guard would hand it on to the catch-all arm.
#![allow(clippy::collapsible_match)]

use super::{
    epoch_of, zxid, Entry, Origin, SessionId, Tree, Txn, ZkeMsg, ZkeOp, ZkeResult, ZkeTimer,
    ZkeVariant, Zxid,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tenure_core::{Env, LocalTime, NodeId, Observation, StorageExt};

const DURABLE_KEY: &str = "zk-ensemble/server";

type E<'a> = dyn Env<ZkeMsg, ZkeTimer> + 'a;

/// What a server keeps on disk (ZooKeeper's `acceptedEpoch` and `currentEpoch` files, its
/// vote, and its transaction log).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Durable {
    /// The highest election round (proposed epoch) this server has taken part in: it
    /// accepts no proposal of a lower epoch (Zab's `acceptedEpoch`).
    pub round: u64,
    /// Whom it voted for in `round`.
    pub voted: Option<NodeId>,
    /// The epoch of the leader whose history it last adopted (Zab's `currentEpoch`).
    pub epoch: u64,
    /// The transaction log, in zxid order, committed or not.
    pub log: Vec<Entry>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerRole {
    Looking,
    Following(NodeId),
    Leading,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkeServer {
    me: NodeId,
    servers: Vec<NodeId>,
    variant: ZkeVariant,
    /// Zab's `tickTime`: heartbeats, the session tracker's expiry buckets.
    tick: Duration,
    /// A follower that hears nothing from its leader for this long looks for another
    /// (`syncLimit` ticks); a leader not acked by a quorum for half of it steps down.
    leader_timeout: Duration,
    d: Durable,
    role: ServerRole,
    /// The highest zxid known committed.
    committed: Zxid,
    /// The tree with the committed prefix of the log applied (what clients read).
    tree: Tree,
    /// How many log entries `tree` has applied.
    applied: usize,
    /// Leader: the tree with every logged proposal applied (ZooKeeper's
    /// `outstandingChanges`, what `PrepRequestProcessor` checks requests against).
    tip: Tree,
    votes: BTreeSet<NodeId>,
    /// Leader: each synchronised follower's highest acked zxid (itself included).
    acked: BTreeMap<NodeId, Zxid>,
    /// Leader: when each server last answered (itself: always now).
    last_ack: BTreeMap<NodeId, LocalTime>,
    /// A quorum acked the leader's NEWLEADER: it may propose.
    established: bool,
    last_leader: LocalTime,
    /// Leader: session deadlines (volatile: a new leader gives every session a fresh
    /// timeout, as `SessionTrackerImpl` does when it loads them).
    deadlines: BTreeMap<SessionId, LocalTime>,
    /// Leader: `CloseSession` proposed, not yet committed.
    closing: BTreeSet<SessionId>,
    /// Leader: syncs waiting for the proposals outstanding when they came
    /// (`Leader.processSync` queues them in `pendingSyncs`).
    syncs: Vec<(Zxid, NodeId, Origin, u32)>,
    /// Sync answered by the leader, read not yet served: waits for this server to apply
    /// the zxid the leader had committed.
    reads: Vec<(Zxid, Origin, u32)>,
}

impl ZkeServer {
    pub fn new(
        me: NodeId,
        servers: Vec<NodeId>,
        variant: ZkeVariant,
        tick: Duration,
        leader_timeout: Duration,
    ) -> ZkeServer {
        ZkeServer {
            me,
            servers,
            variant,
            tick,
            leader_timeout,
            d: Durable::default(),
            role: ServerRole::Looking,
            committed: 0,
            tree: Tree::default(),
            applied: 0,
            tip: Tree::default(),
            votes: BTreeSet::new(),
            acked: BTreeMap::new(),
            last_ack: BTreeMap::new(),
            established: false,
            last_leader: LocalTime(0),
            deadlines: BTreeMap::new(),
            closing: BTreeSet::new(),
            syncs: Vec::new(),
            reads: Vec::new(),
        }
    }

    pub fn role(&self) -> ServerRole {
        self.role
    }
    pub fn tree(&self) -> &Tree {
        &self.tree
    }
    pub fn durable(&self) -> &Durable {
        &self.d
    }
    pub fn committed(&self) -> Zxid {
        self.committed
    }

    fn quorum(&self) -> usize {
        self.servers.len() / 2 + 1
    }
    fn last_zxid(&self) -> Zxid {
        self.d.log.last().map_or(0, |e| e.zxid)
    }
    fn serving(&self) -> bool {
        match self.role {
            ServerRole::Leading => self.established,
            ServerRole::Following(_) => true,
            ServerRole::Looking => false,
        }
    }

    fn persist(&mut self, env: &mut E<'_>) -> bool {
        env.store_synced(DURABLE_KEY, &self.d).is_ok()
    }

    pub fn on_start(&mut self, env: &mut E<'_>) {
        self.d = env.load(DURABLE_KEY).unwrap_or_default();
        let now = env.monotonic();
        self.last_leader = now;
        // A booting server looks at once (after a random tick or so, so that servers
        // booting together do not split their votes).
        let first = env.duration_between(self.tick, self.tick * 3);
        env.set_timer(ZkeTimer::Elect, first);
        env.set_timer(ZkeTimer::Tick, self.tick);
    }

    fn election_delay(&self, env: &mut E<'_>) -> Duration {
        env.duration_between(self.tick, self.leader_timeout)
    }

    fn observe_role(&self, env: &mut E<'_>) {
        env.observe(match self.role {
            ServerRole::Leading => Observation::Leader { term: self.d.epoch },
            ServerRole::Following(l) => Observation::Follower {
                term: self.d.epoch,
                leader: Some(l),
            },
            ServerRole::Looking => Observation::Candidate { term: self.d.round },
        });
    }

    fn step_down(&mut self, env: &mut E<'_>) {
        if self.role == ServerRole::Looking {
            return;
        }
        self.role = ServerRole::Looking;
        self.established = false;
        self.acked.clear();
        self.deadlines.clear();
        self.closing.clear();
        self.syncs.clear();
        self.reads.clear();
        let d = self.election_delay(env);
        env.set_timer(ZkeTimer::Elect, d);
        self.observe_role(env);
    }

    pub fn on_timer(&mut self, env: &mut E<'_>, timer: ZkeTimer) {
        if timer == ZkeTimer::Elect {
            if self.role == ServerRole::Looking {
                self.start_election(env);
            }
            return;
        }
        if timer != ZkeTimer::Tick {
            return;
        }
        env.set_timer(ZkeTimer::Tick, self.tick);
        let now = env.monotonic();
        match self.role {
            ServerRole::Leading => {
                self.last_ack.insert(self.me, now);
                let recent = self
                    .last_ack
                    .values()
                    .filter(|&&t| t.until(now) <= self.leader_timeout / 2)
                    .count();
                if recent < self.quorum() {
                    // `Leader.lead`: "Not sufficient followers synced, only synced with
                    // sids: ..." after syncLimit: the leader shuts down and looks again.
                    self.step_down(env);
                    return;
                }
                for &s in &self.servers {
                    if s != self.me {
                        env.send(
                            s,
                            ZkeMsg::Heartbeat {
                                epoch: self.d.epoch,
                                commit: self.committed,
                            },
                        );
                    }
                }
                if self.established {
                    self.expire_sessions(env, now);
                }
            }
            ServerRole::Following(_) => {
                if self.last_leader.until(now) > self.leader_timeout {
                    self.step_down(env);
                }
            }
            ServerRole::Looking => {}
        }
    }

    /// `SessionTrackerImpl.run`: sessions whose deadline passed are closed by a
    /// `closeSession` transaction that goes through the log like any other.
    fn expire_sessions(&mut self, env: &mut E<'_>, now: LocalTime) {
        let due: Vec<SessionId> = self
            .deadlines
            .iter()
            .filter(|(s, &t)| t <= now && !self.closing.contains(s))
            .map(|(&s, _)| s)
            .collect();
        for session in due {
            if !self.tip.sessions.contains_key(&session) {
                self.deadlines.remove(&session);
                continue;
            }
            self.closing.insert(session);
            env.observe(Observation::Note {
                text: format!("session {session} expired (leader {})", self.me),
            });
            self.propose(env, Txn::CloseSession { session }, None);
        }
    }

    fn start_election(&mut self, env: &mut E<'_>) {
        self.d.round = self.d.round.max(self.d.epoch) + 1;
        self.d.voted = Some(self.me);
        let d = self.election_delay(env);
        env.set_timer(ZkeTimer::Elect, d);
        if !self.persist(env) {
            return;
        }
        self.votes = BTreeSet::from([self.me]);
        self.observe_role(env);
        for &s in &self.servers {
            if s != self.me {
                env.send(
                    s,
                    ZkeMsg::VoteReq {
                        round: self.d.round,
                        epoch: self.d.epoch,
                        zxid: self.last_zxid(),
                    },
                );
            }
        }
        self.maybe_win(env);
    }

    fn maybe_win(&mut self, env: &mut E<'_>) {
        if self.role != ServerRole::Looking || self.votes.len() < self.quorum() {
            return;
        }
        // Won round r: lead epoch r.
        self.d.epoch = self.d.round;
        if !self.persist(env) {
            return;
        }
        let now = env.monotonic();
        self.role = ServerRole::Leading;
        self.established = false;
        self.acked = BTreeMap::from([(self.me, self.last_zxid())]);
        // Every server gets the full grace from the start of this leadership: a new
        // leader that counted only itself would step down at its first tick whenever
        // NEWLEADER's round trip is longer than a tick (the bug the trust test found:
        // leaders elected over and over, none ever established, waiters starved).
        // ZooKeeper's `LearnerHandler` likewise starts each learner's deadline at
        // `tickOfNextAckDeadline = tick + initLimit + syncLimit`.
        self.last_ack = self.servers.iter().map(|&s| (s, now)).collect();
        self.tip = self.tree.clone();
        for e in &self.d.log[self.applied..] {
            self.tip.apply(e, self.variant);
        }
        self.deadlines = self
            .tip
            .sessions
            .iter()
            .map(|(&s, &(_, t))| (s, now + t))
            .collect();
        self.observe_role(env);
        for &s in &self.servers {
            if s != self.me {
                self.send_new_leader(env, s);
            }
        }
        self.maybe_establish(env);
    }

    /// The synchronisation phase, always by snapshot of the leader's whole log (where
    /// `LearnerHandler.syncFollower` picks DIFF, TRUNC or SNAP).
    fn send_new_leader(&self, env: &mut E<'_>, to: NodeId) {
        env.send(
            to,
            ZkeMsg::NewLeader {
                epoch: self.d.epoch,
                log: self.d.log.clone(),
                commit: self.committed,
            },
        );
    }

    fn maybe_establish(&mut self, env: &mut E<'_>) {
        if self.established || self.acked.len() < self.quorum() {
            return;
        }
        self.established = true;
        // A quorum holds the leader's whole history: all of it is committed.
        self.advance_commit(env);
    }

    pub fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: ZkeMsg) {
        match msg {
            ZkeMsg::VoteReq { round, epoch, zxid } => {
                self.on_vote_req(env, from, round, epoch, zxid)
            }
            ZkeMsg::Vote { round, granted } => {
                if granted && round == self.d.round && self.role == ServerRole::Looking {
                    self.votes.insert(from);
                    self.maybe_win(env);
                }
            }
            ZkeMsg::NewLeader { epoch, log, commit } => {
                self.on_new_leader(env, from, epoch, log, commit)
            }
            ZkeMsg::NewLeaderAck { epoch, zxid } => {
                if self.role == ServerRole::Leading && epoch == self.d.epoch {
                    self.acked.insert(from, zxid);
                    self.last_ack.insert(from, env.monotonic());
                    self.maybe_establish(env);
                    self.advance_commit(env);
                }
            }
            ZkeMsg::Heartbeat { epoch, commit } => {
                if self.follows(env, from, epoch) {
                    self.last_leader = env.monotonic();
                    self.commit_to(env, commit);
                    env.send(
                        from,
                        ZkeMsg::HeartbeatAck {
                            epoch,
                            zxid: self.last_zxid(),
                        },
                    );
                }
            }
            ZkeMsg::HeartbeatAck { epoch, zxid } => {
                if self.role == ServerRole::Leading && epoch == self.d.epoch {
                    self.last_ack.insert(from, env.monotonic());
                    match self.acked.get(&from) {
                        // A follower that lost proposals (or was never synced): send it
                        // the history again.
                        Some(&a) if zxid < a => self.send_new_leader(env, from),
                        None => self.send_new_leader(env, from),
                        _ => {}
                    }
                }
            }
            ZkeMsg::Resync { round } => {
                if round > self.d.round {
                    self.d.round = round;
                    self.d.voted = None;
                    if self.persist(env) {
                        self.step_down(env);
                    }
                } else if self.role == ServerRole::Leading {
                    self.send_new_leader(env, from);
                }
            }
            ZkeMsg::Propose { epoch, prev, entry } => {
                if !self.follows(env, from, epoch) {
                    return;
                }
                self.last_leader = env.monotonic();
                if prev != self.last_zxid() {
                    if entry.zxid > self.last_zxid() {
                        // A gap: the connection lost proposals.
                        env.send(
                            from,
                            ZkeMsg::Resync {
                                round: self.d.round,
                            },
                        );
                    }
                    return;
                }
                let z = entry.zxid;
                self.d.log.push(entry);
                if !self.persist(env) {
                    self.d.log.pop();
                    return;
                }
                env.send(from, ZkeMsg::Ack { epoch, zxid: z });
            }
            ZkeMsg::Ack { epoch, zxid } => {
                if self.role == ServerRole::Leading && epoch == self.d.epoch {
                    self.last_ack.insert(from, env.monotonic());
                    if let Some(a) = self.acked.get_mut(&from) {
                        *a = (*a).max(zxid);
                        self.advance_commit(env);
                    }
                }
            }
            ZkeMsg::Commit { epoch, zxid } => {
                if self.follows(env, from, epoch) {
                    self.last_leader = env.monotonic();
                    self.commit_to(env, zxid);
                }
            }
            ZkeMsg::Forward { origin, op } => {
                if self.role == ServerRole::Leading && self.established {
                    self.prep(env, origin, op);
                }
            }
            ZkeMsg::Touch { session } => self.touch(env, session),
            ZkeMsg::SyncReq { origin, key } => {
                if self.role == ServerRole::Leading && self.established {
                    self.on_sync(env, from, origin, key);
                }
            }
            ZkeMsg::SyncDone { origin, key, zxid } => {
                if matches!(self.role, ServerRole::Following(l) if l == from) {
                    self.reads.push((zxid, origin, key));
                    self.serve_reads(env);
                }
            }
            // From clients.
            ZkeMsg::Connect {
                session,
                last_zxid,
                timeout,
            } => self.on_connect(env, from, session, last_zxid, timeout),
            ZkeMsg::Ping { session } => {
                if !self.serving() {
                    return;
                }
                if !self.tree.sessions.contains_key(&session) {
                    env.send(from, ZkeMsg::SessionExpired { session });
                    return;
                }
                self.forward_touch(env, session);
                env.send(
                    from,
                    ZkeMsg::Pong {
                        session,
                        zxid: self.tree.zxid,
                    },
                );
            }
            ZkeMsg::Request { session, xid, op } => self.on_request(env, from, session, xid, op),
            _ => {}
        }
    }

    /// Whether a message of the leader `from` in `epoch` is for us; a server that hears
    /// from a leader it does not follow asks it for its history.
    fn follows(&mut self, env: &mut E<'_>, from: NodeId, epoch: u64) -> bool {
        if self.role == ServerRole::Following(from) && epoch == self.d.epoch {
            return true;
        }
        if epoch >= self.d.epoch && self.role != ServerRole::Leading {
            env.send(
                from,
                ZkeMsg::Resync {
                    round: self.d.round,
                },
            );
        }
        false
    }

    fn on_vote_req(&mut self, env: &mut E<'_>, from: NodeId, round: u64, epoch: u64, zxid: Zxid) {
        let now = env.monotonic();
        // A server that hears from a live leader (or leads a live quorum) does not help
        // depose it (FastLeaderElection: a FOLLOWING or LEADING server answers with
        // the leader it knows instead of a vote).
        let busy = match self.role {
            ServerRole::Following(_) => self.last_leader.until(now) <= self.leader_timeout,
            ServerRole::Leading => true,
            ServerRole::Looking => false,
        };
        if busy {
            env.send(
                from,
                ZkeMsg::Vote {
                    round,
                    granted: false,
                },
            );
            return;
        }
        if round > self.d.round {
            self.d.round = round;
            self.d.voted = None;
        }
        // FastLeaderElection.totalOrderPredicate: higher epoch, then higher zxid, then
        // higher server id wins.
        let mine = (self.d.epoch, self.last_zxid(), self.me);
        let granted = round == self.d.round
            && self.d.voted.is_none_or(|v| v == from)
            && (epoch, zxid, from) >= mine;
        if granted {
            self.d.voted = Some(from);
        }
        if !self.persist(env) {
            return;
        }
        if granted {
            self.last_leader = now;
            let d = self.election_delay(env);
            env.set_timer(ZkeTimer::Elect, d);
        }
        env.send(from, ZkeMsg::Vote { round, granted });
    }

    fn on_new_leader(
        &mut self,
        env: &mut E<'_>,
        from: NodeId,
        epoch: u64,
        log: Vec<Entry>,
        commit: Zxid,
    ) {
        if epoch < self.d.round || epoch < self.d.epoch {
            // We promised a later round: the sender is deposed.
            env.send(
                from,
                ZkeMsg::Resync {
                    round: self.d.round,
                },
            );
            return;
        }
        if self.role == ServerRole::Leading && epoch == self.d.epoch {
            return;
        }
        let keep = log.len() >= self.applied
            && log[..self.applied]
                .iter()
                .zip(&self.d.log[..self.applied])
                .all(|(a, b)| a.zxid == b.zxid);
        self.d.round = epoch;
        self.d.epoch = epoch;
        self.d.log = log;
        if !self.persist(env) {
            return;
        }
        if !keep {
            self.tree = Tree::default();
            self.applied = 0;
            self.committed = 0;
        }
        let was = self.role;
        self.role = ServerRole::Following(from);
        self.established = false;
        self.deadlines.clear();
        self.syncs.clear();
        self.reads.clear();
        self.last_leader = env.monotonic();
        if was != self.role {
            self.observe_role(env);
        }
        env.send(
            from,
            ZkeMsg::NewLeaderAck {
                epoch,
                zxid: self.last_zxid(),
            },
        );
        self.commit_to(env, commit);
    }

    /// Leader: the highest zxid a quorum has acked is committed.
    fn advance_commit(&mut self, env: &mut E<'_>) {
        if !self.established {
            return;
        }
        self.acked.insert(self.me, self.last_zxid());
        let mut acks: Vec<Zxid> = self.acked.values().copied().collect();
        acks.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&z) = acks.get(self.quorum() - 1) else {
            return;
        };
        if z <= self.committed {
            return;
        }
        for &s in &self.servers {
            if s != self.me && self.acked.contains_key(&s) {
                env.send(
                    s,
                    ZkeMsg::Commit {
                        epoch: self.d.epoch,
                        zxid: z,
                    },
                );
            }
        }
        self.commit_to(env, z);
        // Syncs waiting for this commit are answered.
        let committed = self.committed;
        let (done, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.syncs)
            .into_iter()
            .partition(|(z, ..)| *z <= committed);
        self.syncs = wait;
        for (_, to, origin, key) in done {
            self.answer_sync(env, to, origin, key);
        }
    }

    /// Applies the log up to `z` (bounded by what is logged), replying to the clients
    /// whose requests came through this server.
    fn commit_to(&mut self, env: &mut E<'_>, z: Zxid) {
        let z = z.min(self.last_zxid());
        if z > self.committed {
            self.committed = z;
        }
        while self.applied < self.d.log.len() && self.d.log[self.applied].zxid <= self.committed {
            let e = self.d.log[self.applied].clone();
            self.applied += 1;
            let result = self.tree.apply(&e, self.variant);
            if let Txn::CloseSession { session } = e.txn {
                self.closing.remove(&session);
                self.deadlines.remove(&session);
            }
            if let Some(o) = e.origin {
                if o.server == self.me {
                    let msg = match result {
                        ZkeResult::Connected => ZkeMsg::Connected {
                            session: o.session,
                            zxid: self.tree.zxid,
                        },
                        result => ZkeMsg::Reply {
                            session: o.session,
                            xid: o.xid,
                            zxid: self.tree.zxid,
                            result,
                        },
                    };
                    env.send(o.client, msg);
                }
            }
        }
        self.serve_reads(env);
    }

    fn serve_reads(&mut self, env: &mut E<'_>) {
        let applied = self.tree.zxid;
        let (ready, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.reads)
            .into_iter()
            .partition(|(z, ..)| *z <= applied);
        self.reads = wait;
        for (_, o, key) in ready {
            let result = ZkeResult::Value(self.tree.read(key));
            env.send(
                o.client,
                ZkeMsg::Reply {
                    session: o.session,
                    xid: o.xid,
                    zxid: self.tree.zxid,
                    result,
                },
            );
        }
    }

    /// Leader: `Leader.processSync`: answered at once when no proposal is outstanding,
    /// else once the last outstanding one commits. Not a quorum round: a deposed leader
    /// that does not know it yet answers from its own, stale, state.
    fn on_sync(&mut self, env: &mut E<'_>, from: NodeId, origin: Origin, key: u32) {
        let tip = self.last_zxid();
        if tip <= self.committed {
            self.answer_sync(env, from, origin, key);
        } else {
            self.syncs.push((tip, from, origin, key));
        }
    }

    fn answer_sync(&mut self, env: &mut E<'_>, to: NodeId, origin: Origin, key: u32) {
        let zxid = self.committed;
        if to == self.me {
            self.reads.push((zxid, origin, key));
            self.serve_reads(env);
        } else {
            env.send(to, ZkeMsg::SyncDone { origin, key, zxid });
        }
    }

    fn leader(&self) -> Option<NodeId> {
        match self.role {
            ServerRole::Following(l) => Some(l),
            ServerRole::Leading => Some(self.me),
            ServerRole::Looking => None,
        }
    }

    fn forward_touch(&mut self, env: &mut E<'_>, session: SessionId) {
        match self.leader() {
            Some(l) if l == self.me => self.touch(env, session),
            Some(l) => env.send(l, ZkeMsg::Touch { session }),
            None => {}
        }
    }

    /// Leader: the session was heard from (`SessionTrackerImpl.touchSession`).
    fn touch(&mut self, env: &mut E<'_>, session: SessionId) {
        if self.role != ServerRole::Leading {
            return;
        }
        if let Some(&(_, timeout)) = self.tip.sessions.get(&session) {
            if !self.closing.contains(&session) {
                self.deadlines.insert(session, env.monotonic() + timeout);
            }
        }
    }

    /// `ZooKeeperServer.processConnectRequest`.
    fn on_connect(
        &mut self,
        env: &mut E<'_>,
        client: NodeId,
        session: Option<SessionId>,
        last_zxid: Zxid,
        timeout: Duration,
    ) {
        if !self.serving() {
            // Not in a quorum: ZooKeeper closes the connection.
            return;
        }
        if last_zxid > self.tree.zxid && self.variant != ZkeVariant::ReconnectToOlderZxid {
            // "Refusing session request for client ... as it has seen zxid 0x.. our
            // last zxid is 0x.. client must try another server".
            env.send(
                client,
                ZkeMsg::Refused {
                    zxid: self.tree.zxid,
                },
            );
            return;
        }
        let origin = Origin {
            server: self.me,
            client,
            session: session.unwrap_or(0),
            xid: 0,
        };
        match session {
            Some(s) => {
                if self.tree.sessions.contains_key(&s) {
                    self.forward_touch(env, s);
                    env.send(
                        client,
                        ZkeMsg::Connected {
                            session: s,
                            zxid: self.tree.zxid,
                        },
                    );
                } else {
                    env.send(client, ZkeMsg::SessionExpired { session: s });
                }
            }
            None => self.forward(env, origin, ZkeOp::CreateSession { timeout }),
        }
    }

    fn on_request(
        &mut self,
        env: &mut E<'_>,
        client: NodeId,
        session: SessionId,
        xid: u64,
        op: ZkeOp,
    ) {
        if !self.serving() {
            return;
        }
        if !self.tree.sessions.contains_key(&session) {
            env.send(client, ZkeMsg::SessionExpired { session });
            return;
        }
        self.forward_touch(env, session);
        let origin = Origin {
            server: self.me,
            client,
            session,
            xid,
        };
        let local = |result| ZkeMsg::Reply {
            session,
            xid,
            zxid: self.tree.zxid,
            result,
        };
        match op {
            ZkeOp::Read { key } => env.send(client, local(ZkeResult::Value(self.tree.read(key)))),
            ZkeOp::GetChildren { ref path } => {
                let children = self.tree.children(path);
                env.send(client, local(ZkeResult::Children(children)));
            }
            ZkeOp::SyncRead { key } => match self.leader() {
                Some(l) if l == self.me => self.on_sync(env, l, origin, key),
                Some(l) => env.send(l, ZkeMsg::SyncReq { origin, key }),
                None => {}
            },
            op => self.forward(env, origin, op),
        }
    }

    fn forward(&mut self, env: &mut E<'_>, origin: Origin, op: ZkeOp) {
        match self.leader() {
            Some(l) if l == self.me => {
                if self.established {
                    self.prep(env, origin, op);
                }
            }
            Some(l) => env.send(l, ZkeMsg::Forward { origin, op }),
            None => {}
        }
    }

    /// Leader: `PrepRequestProcessor`: the request becomes a transaction checked against
    /// the outstanding changes (an error is a transaction too, so its reply keeps its
    /// place in zxid order).
    fn prep(&mut self, env: &mut E<'_>, origin: Origin, op: ZkeOp) {
        let txn = self.tip.prep(&op, origin, self.next_zxid());
        if let Txn::CreateSession {
            session, timeout, ..
        } = &txn
        {
            self.deadlines.insert(*session, env.monotonic() + *timeout);
        }
        if matches!(op, ZkeOp::CreateSession { .. }) {
            // The session's id is the zxid that creates it.
            let mut origin = origin;
            origin.session = self.next_zxid();
            self.propose(env, txn, Some(origin));
        } else {
            self.propose(env, txn, Some(origin));
        }
    }

    fn next_zxid(&self) -> Zxid {
        let last = self.last_zxid();
        if epoch_of(last) == self.d.epoch {
            last + 1
        } else {
            zxid(self.d.epoch, 1)
        }
    }

    fn propose(&mut self, env: &mut E<'_>, txn: Txn, origin: Option<Origin>) {
        let prev = self.last_zxid();
        let entry = Entry {
            zxid: self.next_zxid(),
            txn,
            origin,
        };
        self.tip.apply(&entry, self.variant);
        self.d.log.push(entry.clone());
        if !self.persist(env) {
            // A leader whose log cannot be synced stops leading.
            self.d.log.pop();
            self.step_down(env);
            return;
        }
        for &s in &self.servers {
            if s != self.me && self.acked.contains_key(&s) {
                env.send(
                    s,
                    ZkeMsg::Propose {
                        epoch: self.d.epoch,
                        prev,
                        entry: entry.clone(),
                    },
                );
            }
        }
        self.advance_commit(env);
    }
}
