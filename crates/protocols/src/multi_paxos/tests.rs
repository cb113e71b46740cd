//! Single steps of one multi-paxos server, with the effects they must have. Each broken
//! variant's test runs the same steps on `correct` as its negative control.

use super::*;
use tenure_core::{Effect, LocalTime, RoleSpec, SplitMix64, Step, StorageMap};

type Effects = Vec<Effect<Msg, Timer>>;

/// Three servers (n0, n1, n2) and one client (n3).
fn cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![spec("server", 3), spec("client", 1)]).unwrap()
}

/// One server under test with its storage and rng: a tiny host.
struct Node {
    node: MultiPaxos,
    config: MultiPaxosConfig,
    cluster: Cluster,
    storage: StorageMap,
    rng: SplitMix64,
}

impl Node {
    fn started(variant: MultiPaxosVariant, me: u32) -> Node {
        let cluster = cluster();
        let config = configure(MultiPaxosParams::default(), variant, &cluster).unwrap();
        let mut node = Node {
            node: MultiPaxos::new(&config, NodeId(me), &cluster),
            config,
            cluster,
            storage: StorageMap::new(),
            rng: SplitMix64(7),
        };
        node.step(|n, s| n.on_start(s));
        node
    }

    fn step(&mut self, f: impl FnOnce(&mut MultiPaxos, &mut Step<'_, Msg, Timer>)) -> Effects {
        let me = self.server().me;
        let now = LocalTime(1_000_000_000);
        let mut step = Step::new(
            me,
            &self.cluster,
            now,
            now,
            &mut self.storage,
            &mut self.rng,
        );
        f(&mut self.node, &mut step);
        step.effects
    }

    fn recv(&mut self, from: u32, msg: Msg) -> Effects {
        self.step(|n, s| n.on_message(s, NodeId(from), msg))
    }

    fn fire(&mut self, timer: Timer) -> Effects {
        self.step(|n, s| n.on_timer(s, timer))
    }

    fn server(&self) -> &Server {
        self.node.server().unwrap()
    }

    fn restart(&mut self) -> Effects {
        let me = self.server().me;
        self.node = MultiPaxos::new(&self.config, me, &self.cluster);
        self.step(|n, s| n.on_start(s))
    }
}

fn ballot(round: u64, proposer: u32) -> Ballot {
    Ballot { round, proposer }
}

fn put(origin: Ballot, seq: u64, value: i64) -> Proposal {
    Proposal {
        origin,
        command: Command::Put {
            client: NodeId(3),
            session: 1,
            seq,
            key: 0,
            value,
        },
    }
}

fn sends(effects: &Effects) -> Vec<(NodeId, Msg)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { to, msg } => Some((*to, msg.clone())),
            _ => None,
        })
        .collect()
}

/// Where in `effects` the first send matching `pred` and the first successful sync are.
fn send_and_sync(effects: &Effects, pred: impl Fn(&Msg) -> bool) -> (usize, usize) {
    let send = effects
        .iter()
        .position(|e| matches!(e, Effect::Send { msg, .. } if pred(msg)))
        .expect("a matching send");
    let sync = effects
        .iter()
        .position(|e| matches!(e, Effect::Sync { ok: true }))
        .expect("a sync");
    (send, sync)
}

#[test]
fn an_acceptor_syncs_its_acceptance_before_it_answers() {
    let value = put(ballot(1, 1), 1, 7);
    let accept = Msg::Accept {
        ballot: ballot(1, 1),
        slot: 1,
        value,
    };
    let mut n = Node::started(MultiPaxosVariant::Correct, 0);
    let e = n.recv(1, accept.clone());
    let (send, sync) = send_and_sync(&e, |m| matches!(m, Msg::Accepted { .. }));
    assert!(sync < send, "correct: the sync comes first: {e:?}");
    assert_eq!(n.server().accepted(1), Some((ballot(1, 1), value)));

    // Negative control: no-sync-accept answers first, syncs after.
    let mut n = Node::started(MultiPaxosVariant::NoSyncAccept, 0);
    let e = n.recv(1, accept);
    let (send, sync) = send_and_sync(&e, |m| matches!(m, Msg::Accepted { .. }));
    assert!(
        send < sync,
        "no-sync-accept: the answer leaves first: {e:?}"
    );
}

#[test]
fn a_promise_and_acceptances_survive_a_restart_and_refuse_lower_ballots() {
    let mut n = Node::started(MultiPaxosVariant::Correct, 0);
    n.recv(
        1,
        Msg::Accept {
            ballot: ballot(2, 1),
            slot: 3,
            value: put(ballot(2, 1), 1, 5),
        },
    );
    n.restart();
    assert_eq!(n.server().promised(), ballot(2, 1));
    assert_eq!(
        n.server().accepted(3),
        Some((ballot(2, 1), put(ballot(2, 1), 1, 5)))
    );
    // A lower ballot is refused, naming the promise.
    let e = n.recv(
        2,
        Msg::Prepare {
            ballot: ballot(1, 2),
            from: 1,
        },
    );
    assert_eq!(
        sends(&e),
        vec![(
            NodeId(2),
            Msg::Nack {
                ballot: ballot(1, 2),
                promised: ballot(2, 1)
            }
        )]
    );
    // A higher one is promised, with the acceptance reported.
    let e = n.recv(
        2,
        Msg::Prepare {
            ballot: ballot(3, 2),
            from: 1,
        },
    );
    assert_eq!(
        sends(&e),
        vec![(
            NodeId(2),
            Msg::Promise {
                ballot: ballot(3, 2),
                accepted: vec![(3, ballot(2, 1), put(ballot(2, 1), 1, 5))]
            }
        )]
    );
}

/// n0 (which saw nothing) runs phase 1; n1 reports a value accepted at slot 1.
fn elect_with_a_report(variant: MultiPaxosVariant) -> (Node, Effects) {
    let mut n = Node::started(variant, 0);
    n.fire(Timer::Election);
    assert_eq!(n.server().role(), Role::Candidate);
    let b = n.server().ballot();
    let e = n.recv(
        1,
        Msg::Promise {
            ballot: b,
            accepted: vec![(1, ballot(0, 1), put(ballot(0, 1), 1, 9))],
        },
    );
    assert_eq!(n.server().role(), Role::Leader);
    (n, e)
}

fn accepts_of_slot_1(e: &Effects) -> Vec<Proposal> {
    sends(e)
        .into_iter()
        .filter_map(|(_, m)| match m {
            Msg::Accept { slot: 1, value, .. } => Some(value),
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_leader_re_proposes_the_value_a_promise_reports() {
    let (_, e) = elect_with_a_report(MultiPaxosVariant::Correct);
    let values = accepts_of_slot_1(&e);
    assert!(!values.is_empty(), "{e:?}");
    assert!(
        values.iter().all(|v| *v == put(ballot(0, 1), 1, 9)),
        "{values:?}"
    );

    // Negative control: skip-phase1 takes slot 1 (which it never saw) as free, and
    // the next client put goes there.
    let (mut n, e) = elect_with_a_report(MultiPaxosVariant::SkipPhase1);
    assert!(accepts_of_slot_1(&e).is_empty(), "{e:?}");
    let req = Request {
        attempt: 5,
        session: 2,
        seq: 1,
        op: Op::Put { key: 0, value: 4 },
    };
    let e = n.recv(3, Msg::Request(req));
    let values = accepts_of_slot_1(&e);
    assert!(!values.is_empty(), "{e:?}");
    assert!(
        values.iter().all(|v| v.command
            == Command::Put {
                client: NodeId(3),
                session: 2,
                seq: 1,
                key: 0,
                value: 4
            }),
        "{values:?}"
    );
}

#[test]
fn a_read_waits_for_a_round_a_majority_acknowledged() {
    let (mut n, _) = elect_with_a_report(MultiPaxosVariant::Correct);
    let b = n.server().ballot();
    // Slot 1 chosen (n1 accepts it).
    n.recv(1, Msg::Accepted { ballot: b, slot: 1 });
    assert_eq!(n.server().chosen_upto(), 1);
    let get = Request {
        attempt: 42,
        session: 1,
        seq: 0,
        op: Op::Get { key: 0 },
    };
    let e = n.recv(3, Msg::Request(get));
    assert!(
        !sends(&e).iter().any(|(to, _)| *to == NodeId(3)),
        "no answer before the round is acknowledged: {e:?}"
    );
    let round = sends(&e)
        .into_iter()
        .find_map(|(_, m)| match m {
            Msg::Heartbeat { round, .. } => Some(round),
            _ => None,
        })
        .expect("a heartbeat round for the read");
    // An acknowledgement of an older round does not do.
    let e = n.recv(
        2,
        Msg::HeartbeatAck {
            ballot: b,
            round: round - 1,
            chosen: 1,
        },
    );
    assert!(!sends(&e).iter().any(|(to, _)| *to == NodeId(3)), "{e:?}");
    let e = n.recv(
        2,
        Msg::HeartbeatAck {
            ballot: b,
            round,
            chosen: 1,
        },
    );
    assert_eq!(
        sends(&e),
        vec![(
            NodeId(3),
            Msg::Reply {
                attempt: 42,
                answer: Answer::Ok(Some(9))
            }
        )]
    );
}

#[test]
fn a_leader_steps_down_on_a_higher_promise() {
    let (mut n, _) = elect_with_a_report(MultiPaxosVariant::Correct);
    let b = n.server().ballot();
    n.recv(
        1,
        Msg::Nack {
            ballot: b,
            promised: ballot(b.round + 1, 1),
        },
    );
    assert_eq!(n.server().role(), Role::Follower);
    // Its next candidacy is above what it was told.
    n.fire(Timer::Election);
    assert_eq!(n.server().ballot(), ballot(b.round + 2, 0));
}
