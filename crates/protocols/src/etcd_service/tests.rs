//! Whole-cluster runs on the testkit's network (leader stall, failover) and single
//! steps of one client. Each broken variant's test runs the same steps on `correct` as
//! its negative control.

use super::*;
use crate::testkit::Net;
use crate::workload::LockApi;
use tenure_core::{
    Effect, LocalTime, Observation, RoleSpec, SplitMix64, Step, StepHost, StorageMap,
};

/// Three servers (n0..n2), three clients (n3..n5), the storage (n6).
fn cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![
        spec("server", 3),
        spec("client", 3),
        spec("storage", 1),
    ])
    .unwrap()
}

fn config(variant: EtcdServiceVariant) -> EtcdServiceConfig {
    let params = EtcdServiceParams {
        work_duration: HumanDuration(Duration::from_millis(300)),
        ..EtcdServiceParams::default()
    };
    EtcdService::configure(params, variant, &cluster()).unwrap()
}

fn leader(net: &Net<EtcdService>) -> u32 {
    let leaders = net.leaders();
    assert_eq!(leaders.len(), 1, "one leader: {leaders:?}");
    leaders[0].0
}

/// Revokes forwarded by a deposed lessor, and leases revoked (by anyone) while their
/// clients' keep-alives were being answered, in a run where the leader stalls 1.5s
/// (longer than a TTL of 1s) at 3s.
fn stall_the_leader(variant: EtcdServiceVariant, seed: u64) -> (usize, usize) {
    let mut net = Net::start(config(variant), cluster(), seed);
    net.run_until(Duration::from_secs(3));
    let old = leader(&net);
    net.pause(old, Duration::from_millis(1500));
    net.run_until(Duration::from_secs(6));
    let forwarded = net.count_sent(0, u64::MAX, |m| matches!(m, Msg::Propose { .. }));
    // A revoke applied by the new leader within 100ms of the resume is the old leader's:
    // every client kept its lease alive at the new leader meanwhile.
    let resume = 4_500_000_000;
    let revoked = net
        .records
        .iter()
        .filter(|(t, n, o)| {
            (resume..resume + 100_000_000).contains(t)
                && n.0 != old
                && matches!(o, Observation::Note { text } if text.contains("revoked"))
        })
        .count();
    assert!(
        net.leaders().iter().all(|l| l.0 != old),
        "a new leader took over"
    );
    (forwarded, revoked)
}

#[test]
fn a_stalled_leader_revokes_live_leases_only_before_the_fix() {
    let (forwarded, revoked) = stall_the_leader(EtcdServiceVariant::RevokeAfterStall, 3);
    assert!(forwarded > 0, "the deposed lessor forwards its revokes");
    assert!(revoked > 0, "the new leader commits them");
    // Negative control: with `ensureLeadership` (PR #16822) nothing is forwarded and no
    // live lease is revoked.
    assert_eq!(
        stall_the_leader(EtcdServiceVariant::Correct, 3),
        (0, 0),
        "the fixed lessor confirms its leadership first"
    );
}

#[test]
fn locks_go_on_across_a_leader_crash() {
    let mut net = Net::start(config(EtcdServiceVariant::Correct), cluster(), 5);
    net.run_until(Duration::from_secs(3));
    let old = leader(&net);
    net.crash(old);
    net.run_until(Duration::from_secs(5));
    let after: Vec<u64> = net
        .records
        .iter()
        .filter(|(t, _, _)| *t > 3_500_000_000)
        .filter_map(|(_, _, o)| match o {
            Observation::Holds { token, .. } => Some(*token),
            _ => None,
        })
        .collect();
    assert!(
        !after.is_empty(),
        "clients hold the lock under the new leader"
    );
    // Tokens (create revisions) only grow across the failover.
    let all: Vec<u64> = net
        .records
        .iter()
        .filter_map(|(_, _, o)| match o {
            Observation::Holds { token, .. } => Some(*token),
            _ => None,
        })
        .collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
}

/// When client n3's lease was revoked (true time, ns), in a run where n3 crashes at 3s
/// and the leader is paused for 600ms (past the election timeout) every 1.5s from 4s
/// to 10s. TTL 2s; `lease-checkpoint` checkpoints every 250ms.
fn churn_after_a_client_crash(variant: EtcdServiceVariant, seed: u64) -> Option<u64> {
    let params = EtcdServiceParams {
        ttl: HumanDuration(Duration::from_secs(2)),
        lease_checkpoint_interval: HumanDuration(Duration::from_millis(250)),
        ..EtcdServiceParams::default()
    };
    let config = EtcdService::configure(params, variant, &cluster()).unwrap();
    let mut net = Net::start(config, cluster(), seed);
    net.run_until(Duration::from_secs(3));
    let lease = match &net.node(3) {
        EtcdService::Client(c) => c.lock.lease().expect("n3 has a lease"),
        _ => unreachable!(),
    };
    net.crash(3);
    for k in 0..5u64 {
        net.run_until(Duration::from_millis(4_000 + 1_500 * k));
        let l = leader(&net);
        net.pause(l, Duration::from_millis(600));
    }
    net.run_until(Duration::from_secs(12));
    net.records.iter().find_map(|(t, _, o)| {
        matches!(o, Observation::LeaseRevoked { lease: l } if *l == lease).then_some(*t)
    })
}

#[test]
fn leader_churn_keeps_a_dead_clients_lease_alive_unless_checkpointed() {
    // etcd #9395: every new leader restarts the TTL; the lease outlives the churn (the
    // last pause ends at 10.6s, its TTL restarts then).
    let revoked = churn_after_a_client_crash(EtcdServiceVariant::Correct, 1);
    assert!(
        revoked.is_none_or(|t| t > 10_600_000_000),
        "revoked at {revoked:?}"
    );
    // Negative control: checkpointing (#9924) keeps the remaining TTL across leaders;
    // the lease is revoked during the churn, before the second pause.
    let revoked = churn_after_a_client_crash(EtcdServiceVariant::LeaseCheckpoint, 1);
    assert!(
        revoked.is_some_and(|t| t < 5_500_000_000),
        "revoked at {revoked:?}"
    );
}

// ----- one client, step by step -----

type Effects = Vec<Effect<Msg, Timer>>;

struct OneClient {
    client: Client,
    host: StepHost,
}

impl OneClient {
    fn new() -> OneClient {
        let cluster = cluster();
        let mut host = StepHost::new(NodeId(3), &cluster);
        host.monotonic = LocalTime(1_000_000_000);
        host.wall = host.monotonic;
        OneClient {
            client: Client::new(&config(EtcdServiceVariant::Correct), &cluster),
            host,
        }
    }

    fn step(&mut self, f: impl FnOnce(&mut Client, &mut Step<'_, Msg, Timer>)) -> Effects {
        let mut step = self.host.step();
        f(&mut self.client, &mut step);
        step.effects
    }

    fn reply(&mut self, from: u32, req: u64, answer: Answer) -> Effects {
        self.step(|c, s| c.on_message(s, NodeId(from), Msg::Reply { req, answer }))
    }
}

fn requests(effects: &Effects) -> Vec<(u64, Op)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send {
                msg: Msg::Request { req, op },
                ..
            } => Some((*req, op.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_put_waits_until_the_delete_of_the_same_key_is_answered() {
    // Regression (found by the scenario revoke-after-stall at seed 11 on `correct`): a
    // release's delete and the next acquire's put, both retried at a new leader, were
    // applied put first (finding the old key) then delete, and the client believed it
    // held a key that was gone: two holders.
    let mut c = OneClient::new();
    let start = c.step(|c, s| c.on_start(s));
    let (grant, _) = requests(&start)[0].clone();
    c.reply(
        0,
        grant,
        Answer::Granted {
            lease: 7,
            ttl: Duration::from_secs(1),
        },
    );
    let acquire = c.step(|c, s| c.lock.start_acquire(s));
    let (put, op) = requests(&acquire)[0].clone();
    assert!(matches!(op, Op::PutIfAbsent { .. }));
    let got = c.reply(
        0,
        put,
        Answer::Put {
            create_revision: Some(9),
        },
    );
    let (pred, _) = requests(&got)[0].clone();
    c.reply(
        0,
        pred,
        Answer::Predecessor {
            key: None,
            revision: 9,
        },
    );
    assert!(c.client.lock.holding());
    let release = c.step(|c, s| c.lock.release(s));
    let (delete, op) = requests(&release)[0].clone();
    assert!(matches!(
        op,
        Op::Delete {
            create_revision: 9,
            ..
        }
    ));
    // The next acquire sends nothing while the delete is unanswered...
    let again = c.step(|c, s| c.lock.start_acquire(s));
    assert_eq!(
        requests(&again),
        vec![],
        "no put while the delete is in flight"
    );
    // ...and puts once it is.
    let done = c.reply(0, delete, Answer::Deleted);
    assert!(
        matches!(requests(&done)[..], [(_, Op::PutIfAbsent { .. })]),
        "{done:?}"
    );
}

#[test]
fn not_the_leader_sends_the_request_to_the_named_leader() {
    let mut c = OneClient::new();
    let start = c.step(|c, s| c.on_start(s));
    let (grant, _) = requests(&start)[0].clone();
    let first = start
        .iter()
        .find_map(|e| match e {
            Effect::Send {
                to,
                msg: Msg::Request { .. },
            } => Some(*to),
            _ => None,
        })
        .unwrap();
    let other = (0..3).map(NodeId).find(|&n| n != first).unwrap();
    let redirected = c.reply(first.0, grant, Answer::NotLeader(Some(other)));
    assert!(
        redirected.iter().any(|e| matches!(e, Effect::Send { to, msg: Msg::Request { req, .. } } if *to == other && *req == grant)),
        "{redirected:?}"
    );
}

#[test]
fn a_restarted_client_never_takes_its_previous_lifes_answer_for_its_own() {
    // Regression (`correct`, lock-liveness: power seed 1351, chaos seeds 507, 642,
    // 1541): a restarted client numbered its requests from 1 again. The server still
    // held the dead incarnation's watch (its request 4) and answered `KeyDeleted` for
    // request 4; the new incarnation took that for the answer to its own request 4 and
    // dropped the real one. Each incarnation now sends on a stream of its own.
    let mut c = OneClient::new();
    let first: Vec<u64> = requests(&c.step(|c, s| c.on_start(s)))
        .into_iter()
        .map(|(req, _)| req)
        .collect();
    // The process dies; a new one starts with the same configuration (the rng goes on,
    // as a node's seeded stream does across a restart).
    c.client = Client::new(&config(EtcdServiceVariant::Correct), &c.host.cluster);
    let start = c.step(|c, s| c.on_start(s));
    let (grant, op) = requests(&start)[0].clone();
    assert!(matches!(op, Op::Grant { .. }));
    assert!(
        !first.contains(&grant),
        "the new incarnation's first request id {grant} is one its previous life used: {first:?}"
    );
    // An answer sent to the previous life's first request changes nothing now...
    let stale = c.reply(
        0,
        first[0],
        Answer::Granted {
            lease: 5,
            ttl: Duration::from_secs(1),
        },
    );
    assert_eq!(c.client.lock.lease(), None, "{stale:?}");
    // ...and the new incarnation's own answer is still taken.
    c.reply(
        0,
        grant,
        Answer::Granted {
            lease: 7,
            ttl: Duration::from_secs(1),
        },
    );
    assert_eq!(c.client.lock.lease(), Some(7));
}

// ----- etcd #20418: linearizable reads through the read loop -----

use super::server::Role;

/// Three servers (n0..n2), a lock client (n3), the storage (n4), three kv-clients
/// (n5..n7).
fn kv_cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![
        spec("server", 3),
        spec("client", 1),
        spec("storage", 1),
        spec("kv-client", 3),
    ])
    .unwrap()
}

/// The servers of [`kv_cluster`], driven by hand: each message and timer is handed over
/// explicitly, so a test holds back what a slow or duplicating network would.
struct Hand {
    cluster: Cluster,
    servers: Vec<Server>,
    storage: Vec<StorageMap>,
    rng: SplitMix64,
    now: i64,
    /// Messages sent and not yet delivered or dropped: (from, to, message).
    wire: Vec<(u32, u32, Msg)>,
}

impl Hand {
    fn new(variant: EtcdServiceVariant) -> Hand {
        let cluster = kv_cluster();
        let config =
            EtcdService::configure(EtcdServiceParams::default(), variant, &cluster).unwrap();
        let servers: Vec<Server> = (0..3)
            .map(|i| Server::new(&config, NodeId(i), &cluster))
            .collect();
        let mut hand = Hand {
            cluster,
            servers,
            storage: (0..3).map(|_| StorageMap::default()).collect(),
            rng: SplitMix64(7),
            now: 0,
            wire: Vec::new(),
        };
        for i in 0..3 {
            hand.on(i, |s, e| s.on_start(e));
        }
        hand
    }

    /// Runs one handler of server `i` 1ms after the last; its sends go on the wire.
    fn on(&mut self, i: u32, f: impl FnOnce(&mut Server, &mut Step<'_, Msg, Timer>)) {
        self.now += 1_000_000;
        let now = LocalTime(self.now);
        let mut step = Step::new(
            NodeId(i),
            &self.cluster,
            now,
            now,
            &mut self.storage[i as usize],
            &mut self.rng,
        );
        f(&mut self.servers[i as usize], &mut step);
        for effect in step.effects {
            if let Effect::Send { to, msg } = effect {
                self.wire.push((i, to.0, msg));
            }
        }
    }

    fn timer(&mut self, i: u32, timer: Timer) {
        self.on(i, |s, e| s.on_timer(e, timer));
    }

    /// Takes the first message on the wire that `pick` wants, without delivering it.
    fn take(&mut self, pick: impl Fn(u32, u32, &Msg) -> bool) -> (u32, u32, Msg) {
        let at = self
            .wire
            .iter()
            .position(|(f, t, m)| pick(*f, *t, m))
            .expect("such a message was sent");
        self.wire.remove(at)
    }

    fn deliver(&mut self, (from, to, msg): (u32, u32, Msg)) {
        if to < 3 {
            self.on(to, |s, e| s.on_message(e, NodeId(from), msg));
        }
    }

    /// Delivers what is on the wire, and what that sends, until nothing is left, except
    /// messages `hold` keeps back (returned) and messages to or from `cut` (dropped).
    fn pump(
        &mut self,
        cut: Option<u32>,
        hold: impl Fn(u32, u32, &Msg) -> bool,
    ) -> Vec<(u32, u32, Msg)> {
        let mut held = Vec::new();
        let mut replies = Vec::new();
        while !self.wire.is_empty() {
            let (from, to, msg) = self.wire.remove(0);
            if Some(from) == cut || Some(to) == cut {
                continue;
            }
            if hold(from, to, &msg) {
                held.push((from, to, msg));
            } else if to >= 3 {
                replies.push((from, to, msg));
            } else {
                self.deliver((from, to, msg));
            }
        }
        self.wire = held;
        replies
    }

    fn kv(&mut self, client: u32, server: u32, attempt: u64, op: crate::raft_log::Op) {
        let req = crate::raft_log::Request {
            attempt,
            session: u64::from(client),
            seq: attempt,
            op,
        };
        self.on(server, |s, e| {
            s.on_message(e, NodeId(client), Msg::KvRequest(req))
        });
    }
}

/// The value a kv-client was answered for `attempt`, if it was.
fn kv_answer(replies: &[(u32, u32, Msg)], attempt: u64) -> Option<crate::raft_log::Answer> {
    replies.iter().find_map(|(_, _, m)| match m {
        Msg::KvReply { attempt: a, answer } if *a == attempt => Some(*answer),
        _ => None,
    })
}

/// etcd-io/raft's `TestReadOnlyDuplicateRequest` (PR #397), through etcd's read loop: a
/// follower's ReadIndex is confirmed, its answer is lost, and the follower's read loop
/// retries; one acknowledgement of the first round and the retry are delayed past an
/// election (held by the network, or behind a pause). A new leader commits a put; a
/// get then reaches the deposed leader, which queues its own ReadIndex. With the ctx
/// reused (before PR #21399) the retry is queued after it under the same ctx, the
/// delayed acknowledgement confirms the retry, and `advance` releases the deposed
/// leader's read too: it answers the get from before the put. With a fresh id per retry
/// (`correct`) nothing confirms it.
fn reused_ctx_run(variant: EtcdServiceVariant) -> Option<crate::raft_log::Answer> {
    use crate::raft_log::{Answer as KvAnswer, Op as KvOp};
    let mut h = Hand::new(variant);
    // n0 leads term 1 and commits its no-op.
    h.timer(0, Timer::Election);
    h.pump(None, |_, _, _| false);
    assert_eq!(h.servers[0].role(), Role::Leader);
    assert_eq!(h.servers[0].commit_index(), 1);
    // A get at n1: its read loop sends ReadIndex(A) to n0, which asks both followers.
    h.kv(5, 1, 1, KvOp::Get { key: 0 });
    h.timer(1, Timer::ReadLoop);
    let read_index = h.take(|f, t, m| f == 1 && t == 0 && matches!(m, Msg::ReadIndex { .. }));
    let Msg::ReadIndex { ctx: a } = read_index.2 else {
        unreachable!()
    };
    h.deliver(read_index);
    // n1's acknowledgement confirms A; n2's is delayed, and so is n0's answer to n1.
    let held = |f: u32, t: u32, m: &Msg| {
        (f == 2 && t == 0 && matches!(m, Msg::AppendEntriesReply { ctx: Some(c), .. } if *c == a))
            || matches!(m, Msg::ReadIndexResp { .. })
    };
    h.pump(None, held);
    let late_ack = h.take(|f, _, m| f == 2 && matches!(m, Msg::AppendEntriesReply { .. }));
    h.wire.clear(); // n0's answer to n1 is lost
                    // No read state for `read_index_retry`: n1's read loop sends its ReadIndex again,
                    // and the network holds it.
    h.timer(1, Timer::ReadRetry);
    let retry = h.take(|f, t, m| f == 1 && t == 0 && matches!(m, Msg::ReadIndex { .. }));
    let Msg::ReadIndex { ctx: again } = retry.2 else {
        unreachable!()
    };
    assert_eq!(again == a, variant.reuses_read_ctx(), "the retry's id");
    // n0 is cut off; n1 leads term 2 and commits a put of 7 to k0, answered.
    h.timer(1, Timer::Election);
    h.pump(Some(0), |_, _, _| false);
    assert_eq!(h.servers[1].role(), Role::Leader);
    h.kv(6, 1, 1, KvOp::Put { key: 0, value: 7 });
    let replies = h.pump(Some(0), |_, _, _| false);
    assert_eq!(kv_answer(&replies, 1), Some(KvAnswer::Ok(None)), "the put");
    // Then a get reaches n0, which still believes it leads term 1: ReadIndex(B).
    h.kv(7, 0, 9, KvOp::Get { key: 0 });
    h.timer(0, Timer::ReadLoop);
    h.wire.clear(); // its heartbeats are cut off
                    // The held retry, then the held acknowledgement of the first round, reach n0.
    h.deliver(retry);
    h.wire.clear();
    h.deliver(late_ack);
    h.timer(0, Timer::ReadLoop);
    let replies = h.pump(Some(99), |_, _, _| false);
    assert_eq!(
        h.servers[0].role(),
        Role::Leader,
        "n0 has heard of no new term"
    );
    kv_answer(&replies, 9)
}

#[test]
fn a_reused_readindex_ctx_lets_a_deposed_leader_answer_a_stale_read() {
    use crate::raft_log::Answer as KvAnswer;
    // The put of 7 was answered before the get began: the get must see 7, or fail.
    assert_eq!(
        reused_ctx_run(EtcdServiceVariant::ReadindexCtxReused),
        Some(KvAnswer::Ok(Some(0))),
        "before PR #21399: a stale read"
    );
    assert_eq!(
        reused_ctx_run(EtcdServiceVariant::StaleRead20418),
        Some(KvAnswer::Ok(Some(0)))
    );
    // Negative controls: a fresh id per retry leaves the delayed acknowledgement nothing
    // to confirm; so with PR #21399 alone (`read-across-leader-change`).
    assert_eq!(reused_ctx_run(EtcdServiceVariant::Correct), None);
    assert_eq!(
        reused_ctx_run(EtcdServiceVariant::ReadAcrossLeaderChange),
        None
    );
}
