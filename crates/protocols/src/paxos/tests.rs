//! Single steps of one Paxos node, with the exact effects they must have (no simulator).

use super::*;
use tenure_core::{Effect, RoleSpec, StepHost};

type Effects = Vec<Effect<Msg, Timer>>;

/// Two proposers (n0, n1), three acceptors (n2-n4), two learners (n5, n6).
fn cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role.to_string(), count);
    Cluster::new(vec![
        spec("proposer", 2),
        spec("acceptor", 3),
        spec("learner", 2),
    ])
    .unwrap()
}

fn config(variant: PaxosVariant) -> PaxosConfig {
    let params = PaxosParams {
        instances: 1,
        ..PaxosParams::default()
    };
    Paxos::configure(params, variant, &cluster()).unwrap()
}

/// Node `me` and a host holding its storage.
fn node(variant: PaxosVariant, me: u32) -> (Paxos, StepHost) {
    let cluster = cluster();
    let host = StepHost::new(NodeId(me), &cluster);
    (Paxos::new(&config(variant), NodeId(me), &cluster), host)
}

fn run(p: &mut Paxos, host: &mut StepHost, from: u32, msg: Msg) -> Effects {
    let mut step = host.step();
    p.on_message(&mut step, NodeId(from), msg);
    step.effects
}

fn b(round: u64, proposer: u32) -> Ballot {
    Ballot { round, proposer }
}

fn prepare(instance: u64, ballot: Ballot) -> Msg {
    Msg::Prepare { instance, ballot }
}

fn accept(instance: u64, ballot: Ballot, value: u64) -> Msg {
    Msg::Accept {
        instance,
        ballot,
        value,
    }
}

fn stored(key: &str, state: &AcceptorState) -> Effect<Msg, Timer> {
    Effect::Store {
        key: key.to_string(),
        value: Some(serde_json::to_string(state).unwrap()),
    }
}

fn send(to: u32, msg: Msg) -> Effect<Msg, Timer> {
    Effect::Send {
        to: NodeId(to),
        msg,
    }
}

#[test]
fn an_acceptor_syncs_its_promise_before_it_answers() {
    let (mut a, mut host) = node(PaxosVariant::Correct, 2);
    let promised = AcceptorState {
        promised: Some(b(1, 0)),
        accepted: None,
    };
    assert_eq!(
        run(&mut a, &mut host, 0, prepare(1, b(1, 0))),
        vec![
            stored("instance/1", &promised),
            Effect::Sync { ok: true },
            send(
                0,
                Msg::Promise {
                    instance: 1,
                    ballot: b(1, 0),
                    accepted: None
                }
            ),
        ]
    );
    // A lower ballot is refused, naming the promise; a duplicate of the promised one is
    // answered again.
    assert_eq!(
        run(&mut a, &mut host, 1, prepare(1, b(0, 1))),
        vec![send(
            1,
            Msg::Nack {
                instance: 1,
                ballot: b(0, 1),
                promised: b(1, 0)
            }
        )]
    );
    assert!(matches!(
        run(&mut a, &mut host, 0, prepare(1, b(1, 0)))[..],
        [_, Effect::Sync { ok: true }, Effect::Send { .. }]
    ));
}

#[test]
fn a_failed_sync_sends_no_promise() {
    let (mut a, mut host) = node(PaxosVariant::Correct, 2);
    host.sync_fails = true;
    let effects = run(&mut a, &mut host, 0, prepare(1, b(1, 0)));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Send { .. })),
        "{effects:?}"
    );
}

/// The negative control of `forget-promise`: the same steps, a restart in between.
#[test]
fn a_restarted_acceptor_keeps_its_promise_unless_it_kept_it_in_memory() {
    for (variant, refuses) in [
        (PaxosVariant::Correct, true),
        (PaxosVariant::ForgetPromise, false),
    ] {
        let (mut a, mut host) = node(variant, 3);
        let effects = run(&mut a, &mut host, 1, prepare(1, b(2, 1)));
        assert_eq!(
            effects.iter().any(|e| matches!(e, Effect::Sync { .. })),
            refuses,
            "{variant}: {effects:?}"
        );
        // A new process over the same storage: what a crash and restart leaves.
        let mut restarted = Paxos::new(&config(variant), NodeId(3), &cluster());
        restarted.on_start(&mut host.step());
        let effects = run(&mut restarted, &mut host, 0, accept(1, b(1, 0), 101));
        let nacked = matches!(
            effects[..],
            [Effect::Send {
                msg: Msg::Nack { .. },
                ..
            }]
        );
        assert_eq!(nacked, refuses, "{variant}: {effects:?}");
    }
}

#[test]
fn an_acceptance_is_synced_then_sent_to_the_proposer_and_every_learner() {
    let (mut a, mut host) = node(PaxosVariant::Correct, 4);
    let accepted = AcceptorState {
        promised: Some(b(1, 1)),
        accepted: Some((b(1, 1), 102)),
    };
    let reply = Msg::Accepted {
        instance: 1,
        ballot: b(1, 1),
        value: 102,
    };
    assert_eq!(
        run(&mut a, &mut host, 1, accept(1, b(1, 1), 102)),
        vec![
            stored("instance/1", &accepted),
            Effect::Sync { ok: true },
            send(1, reply.clone()),
            send(5, reply.clone()),
            send(6, reply),
        ]
    );
}

#[test]
fn a_proposer_syncs_its_round_proposes_its_value_and_prepares() {
    let (mut p, mut host) = node(PaxosVariant::Correct, 1);
    let mut step = host.step();
    p.on_start(&mut step);
    let effects = step.effects;
    assert_eq!(
        effects[..3],
        [
            Effect::Observe(Observation::Proposes {
                instance: 1,
                value: 102
            }),
            Effect::Store {
                key: PROPOSER_KEY.to_string(),
                value: Some(r#"{"round":1,"slot":1}"#.to_string())
            },
            Effect::Sync { ok: true },
        ]
    );
    assert_eq!(
        effects[3],
        Effect::Observe(Observation::Candidate { term: 1001 })
    );
    let sent: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Send { to, msg } => Some((to.0, msg.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        sent,
        vec![
            (2, prepare(1, b(1, 1))),
            (3, prepare(1, b(1, 1))),
            (4, prepare(1, b(1, 1)))
        ]
    );
    assert!(matches!(
        effects.last(),
        Some(Effect::SetTimer {
            timer: Timer::Retry(1),
            ..
        })
    ));
}

/// The proposer's rule (P2c) and its negative control, `ignore-accepted`.
#[test]
fn a_proposer_adopts_the_highest_accepted_value_unless_it_ignores_them() {
    for (variant, expected) in [
        (PaxosVariant::Correct, 7),
        (PaxosVariant::IgnoreAccepted, 101),
    ] {
        let (mut p, mut host) = node(variant, 0);
        p.on_start(&mut host.step()); // ballot (1, 0), value 101
        let promise = |accepted| Msg::Promise {
            instance: 1,
            ballot: b(1, 0),
            accepted,
        };
        run(&mut p, &mut host, 2, promise(Some((b(0, 1), 5))));
        let effects = run(&mut p, &mut host, 3, promise(Some((b(0, 2), 7))));
        assert_eq!(
            effects[0],
            Effect::Observe(Observation::Leader { term: 1000 }),
            "{variant}"
        );
        assert_eq!(
            effects[1],
            send(2, accept(1, b(1, 0), expected)),
            "{variant}"
        );
    }
}

#[test]
fn a_proposer_learns_its_value_from_a_majority_of_acceptances() {
    let (mut p, mut host) = node(PaxosVariant::Correct, 0);
    p.on_start(&mut host.step());
    let promise = Msg::Promise {
        instance: 1,
        ballot: b(1, 0),
        accepted: None,
    };
    run(&mut p, &mut host, 2, promise.clone());
    run(&mut p, &mut host, 3, promise);
    let accepted = Msg::Accepted {
        instance: 1,
        ballot: b(1, 0),
        value: 101,
    };
    assert_eq!(run(&mut p, &mut host, 2, accepted.clone()), vec![]);
    assert_eq!(
        run(&mut p, &mut host, 4, accepted),
        vec![
            Effect::Observe(Observation::Decides {
                instance: 1,
                value: 101
            }),
            Effect::Observe(Observation::Follower {
                term: 1000,
                leader: None
            }),
            Effect::CancelTimer {
                timer: Timer::Retry(1)
            },
        ]
    );
}

/// `same-ballot`'s bug: both proposers' first ballots are equal, so an acceptor
/// promises both; with proposer ids it refuses the lower.
#[test]
fn two_proposers_share_a_ballot_only_in_same_ballot() {
    for (variant, second_promised) in [
        (PaxosVariant::Correct, false),
        (PaxosVariant::SameBallot, true),
    ] {
        let ballots: Vec<Ballot> = [0, 1]
            .iter()
            .map(|&me| {
                let (mut p, mut host) = node(variant, me);
                let mut step = host.step();
                p.on_start(&mut step);
                step.effects
                    .iter()
                    .find_map(|e| match e {
                        Effect::Send {
                            msg: Msg::Prepare { ballot, .. },
                            ..
                        } => Some(*ballot),
                        _ => None,
                    })
                    .unwrap()
            })
            .collect();
        assert_eq!(ballots[0] == ballots[1], second_promised, "{variant}");
        let (mut a, mut host) = node(variant, 2);
        run(&mut a, &mut host, 1, prepare(1, ballots[1]));
        let effects = run(&mut a, &mut host, 0, prepare(1, ballots[0]));
        let promised = matches!(
            effects.last(),
            Some(Effect::Send {
                msg: Msg::Promise { .. },
                ..
            })
        );
        assert_eq!(promised, second_promised, "{variant}: {effects:?}");
    }
}

/// `shared-slot`'s bug: instance 2's promise reports what instance 1 accepted.
#[test]
fn an_acceptor_reports_another_instances_value_only_in_shared_slot() {
    for (variant, reported) in [
        (PaxosVariant::Correct, None),
        (PaxosVariant::SharedSlot, Some((b(1, 0), 101))),
    ] {
        let (mut a, mut host) = node(variant, 2);
        run(&mut a, &mut host, 0, accept(1, b(1, 0), 101));
        let effects = run(&mut a, &mut host, 1, prepare(2, b(2, 1)));
        assert_eq!(
            effects.last(),
            Some(&send(
                1,
                Msg::Promise {
                    instance: 2,
                    ballot: b(2, 1),
                    accepted: reported
                }
            )),
            "{variant}"
        );
    }
}

#[test]
fn a_learner_learns_on_a_majority_in_one_ballot_and_again_on_a_different_value() {
    let (mut l, mut host) = node(PaxosVariant::Correct, 5);
    let accepted = |ballot, value| Msg::Accepted {
        instance: 1,
        ballot,
        value,
    };
    // Two acceptances in different ballots are no majority.
    assert_eq!(run(&mut l, &mut host, 2, accepted(b(1, 0), 101)), vec![]);
    assert_eq!(run(&mut l, &mut host, 3, accepted(b(1, 1), 101)), vec![]);
    let decides = |value| vec![Effect::Observe(Observation::Decides { instance: 1, value })];
    assert_eq!(
        run(&mut l, &mut host, 4, accepted(b(1, 1), 101)),
        decides(101)
    );
    // The same value chosen again in a later ballot is not news...
    run(&mut l, &mut host, 2, accepted(b(2, 0), 101));
    assert_eq!(run(&mut l, &mut host, 3, accepted(b(2, 0), 101)), vec![]);
    // ...a different one is (what `agreement` judges).
    run(&mut l, &mut host, 2, accepted(b(3, 1), 102));
    assert_eq!(
        run(&mut l, &mut host, 4, accepted(b(3, 1), 102)),
        decides(102)
    );
}

#[test]
fn a_refused_proposer_retries_at_once_only_without_backoff() {
    for backoff in [true, false] {
        let params = PaxosParams {
            instances: 1,
            backoff,
            ..PaxosParams::default()
        };
        let config = Paxos::configure(params, PaxosVariant::Correct, &cluster()).unwrap();
        let mut p = Paxos::new(&config, NodeId(0), &cluster());
        let mut host = StepHost::new(NodeId(0), &cluster());
        p.on_start(&mut host.step());
        let nack = Msg::Nack {
            instance: 1,
            ballot: b(1, 0),
            promised: b(4, 1),
        };
        run(&mut p, &mut host, 2, nack.clone());
        let effects = run(&mut p, &mut host, 3, nack);
        let prepared: Vec<Ballot> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send {
                    msg: Msg::Prepare { ballot, .. },
                    ..
                } => Some(*ballot),
                _ => None,
            })
            .collect();
        if backoff {
            assert_eq!(prepared, vec![], "waits for its retry timer");
        } else {
            assert_eq!(
                prepared,
                vec![b(5, 0); 3],
                "above the round it was refused for"
            );
        }
    }
}

#[test]
fn distinguished_leaves_every_other_proposer_idle() {
    let params = PaxosParams {
        distinguished: true,
        ..PaxosParams::default()
    };
    let config = Paxos::configure(params, PaxosVariant::Correct, &cluster()).unwrap();
    for (me, active) in [(0, true), (1, false)] {
        let mut p = Paxos::new(&config, NodeId(me), &cluster());
        let mut host = StepHost::new(NodeId(me), &cluster());
        let mut step = host.step();
        p.on_start(&mut step);
        assert_eq!(!step.effects.is_empty(), active, "n{me}");
    }
}

#[test]
fn a_restarted_proposer_proposes_every_started_instance_again_with_a_higher_round() {
    let params = PaxosParams {
        instances: 5,
        ..PaxosParams::default()
    };
    let config = Paxos::configure(params, PaxosVariant::Correct, &cluster()).unwrap();
    let mut p = Paxos::new(&config, NodeId(1), &cluster());
    let mut host = StepHost::new(NodeId(1), &cluster());
    p.on_start(&mut host.step());
    p.on_timer(&mut host.step(), Timer::Next);
    let mut restarted = Paxos::new(&config, NodeId(1), &cluster());
    let mut step = host.step();
    restarted.on_start(&mut step);
    let proposed: Vec<&Observation> = step
        .observed()
        .into_iter()
        .filter(|o| matches!(o, Observation::Proposes { .. }))
        .collect();
    assert_eq!(
        proposed,
        vec![
            &Observation::Proposes {
                instance: 1,
                value: 102
            },
            &Observation::Proposes {
                instance: 2,
                value: 202
            }
        ]
    );
    let rounds: Vec<u64> = step
        .sent()
        .iter()
        .filter_map(|(_, m)| match m {
            Msg::Prepare { ballot, .. } => Some(ballot.round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, vec![3, 3, 3, 4, 4, 4]);
}

#[test]
fn bad_parameters_name_their_field() {
    let bad = |params: PaxosParams| {
        Paxos::configure(params, PaxosVariant::Correct, &cluster())
            .unwrap_err()
            .field
    };
    let d = PaxosParams::default;
    assert_eq!(
        bad(PaxosParams {
            instances: 0,
            ..d()
        }),
        "instances"
    );
    assert_eq!(
        bad(PaxosParams {
            retry: [
                HumanDuration(Duration::from_millis(9)),
                HumanDuration(Duration::from_millis(1))
            ],
            ..d()
        }),
        "retry"
    );
    let only_learners = Cluster::uniform("learner", 3);
    assert_eq!(
        Paxos::configure(d(), PaxosVariant::Correct, &only_learners)
            .unwrap_err()
            .field,
        "cluster"
    );
}

/// The retry timer doubles with every ballot of an instance under back-off (a proposer
/// whose round trips outlast `retry` still completes one); without, it stays fixed.
#[test]
fn the_retry_timer_doubles_with_every_ballot_only_with_backoff() {
    for backoff in [true, false] {
        let params = PaxosParams {
            instances: 1,
            backoff,
            ..PaxosParams::default()
        };
        let config = Paxos::configure(params, PaxosVariant::Correct, &cluster()).unwrap();
        let mut p = Paxos::new(&config, NodeId(0), &cluster());
        let mut host = StepHost::new(NodeId(0), &cluster());
        let retry_of = |effects: &Effects| {
            effects
                .iter()
                .find_map(|e| match e {
                    Effect::SetTimer {
                        timer: Timer::Retry(1),
                        after,
                    } => Some(*after),
                    _ => None,
                })
                .unwrap()
        };
        let mut step = host.step();
        p.on_start(&mut step);
        let mut after = vec![retry_of(&step.effects)];
        for _ in 0..3 {
            let mut step = host.step();
            p.on_timer(&mut step, Timer::Retry(1));
            after.push(retry_of(&step.effects));
        }
        let ms = Duration::from_millis;
        for (i, a) in after.iter().enumerate() {
            let (lo, hi) = if backoff {
                (ms(20) * (1 << i), ms(60) * (1 << i))
            } else {
                (ms(20), ms(20))
            };
            assert!(lo <= *a && *a <= hi, "backoff {backoff}: ballot {i}: {a:?}");
        }
    }
}

#[test]
fn no_backoff_forces_backoff_off_whatever_the_parameter_says() {
    let params = PaxosParams {
        backoff: true,
        ..PaxosParams::default()
    };
    let correct = Paxos::configure(params.clone(), PaxosVariant::Correct, &cluster()).unwrap();
    let broken = Paxos::configure(params, PaxosVariant::NoBackoff, &cluster()).unwrap();
    assert!(correct.backoff);
    assert!(!broken.backoff);
}

#[test]
fn no_liveness_is_promised_even_with_a_distinguished_proposer() {
    for distinguished in [false, true] {
        let params = PaxosParams {
            distinguished,
            ..PaxosParams::default()
        };
        let config = Paxos::configure(params, PaxosVariant::Correct, &cluster()).unwrap();
        let checks: Vec<&str> = Paxos::promises(&config, &cluster())
            .iter()
            .map(|p| p.check)
            .collect();
        assert_eq!(checks, ["agreement", "validity"]);
    }
}
