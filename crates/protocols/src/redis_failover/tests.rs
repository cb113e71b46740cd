use super::*;
use crate::redis_lock::tests::run_in;
use tenure_core::{Effect, Observation, RoleSpec, SplitMix64, Step, StorageMap};

const P: NodeId = NodeId(0);
const R1: NodeId = NodeId(1);
const R2: NodeId = NodeId(2);
const S3: NodeId = NodeId(3);
const S4: NodeId = NodeId(4);
const C6: NodeId = NodeId(6);
const C7: NodeId = NodeId(7);
const TOKENS: NodeId = NodeId(10);

fn cluster() -> Cluster {
    let spec = |role: &str, count| RoleSpec::new(role, count);
    Cluster::new(vec![
        spec("redis", 3),
        spec("sentinel", 3),
        spec("client", 3),
        spec("storage", 1),
        spec("tokens", 1),
    ])
    .unwrap()
}

fn config(variant: &str) -> FailoverConfig {
    RedisFailover::configure_named(FailoverParams::default(), variant, &cluster()).unwrap()
}

type Effects = Vec<Effect<Msg, Timer>>;

fn at(node: &mut RedisFailover, me: NodeId, ms: i64, from: NodeId, msg: Msg) -> Effects {
    // Each step its own random stream (a promotion draws a new replication id).
    run_in(&cluster(), node, me, ms, ms as u64 + 1, |n, env| {
        n.on_message(env, from, msg)
    })
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

fn set(req: u64, owner: u64) -> Msg {
    Msg::Set {
        req,
        key: "counter".into(),
        owner,
        ttl: Duration::from_secs(2),
    }
}

fn granted(req: u64, token: Option<u64>) -> Msg {
    Msg::SetReply {
        req,
        granted: true,
        token,
        not_primary: false,
    }
}

/// A node of `variant` with `role`, started at time 0.
fn started(variant: &str, me: NodeId) -> RedisFailover {
    let mut n = RedisFailover::new(&config(variant), me, &cluster());
    run_in(&cluster(), &mut n, me, 0, 1, |n, env| n.on_start(env));
    n
}

/// A primary whose two replicas have synced (their acks answered with a full sync).
fn primary_with_replicas(variant: &str) -> (RedisFailover, u64) {
    let mut p = started(variant, P);
    let RedisFailover::Redis(r) = &p else {
        unreachable!()
    };
    let replid = r.replid;
    for replica in [R1, R2] {
        at(
            &mut p,
            P,
            1,
            replica,
            Msg::Ack {
                replid: 7,
                offset: 0,
            },
        );
        at(&mut p, P, 2, replica, Msg::Ack { replid, offset: 0 });
    }
    (p, replid)
}

fn redis(n: &RedisFailover) -> &RedisNode {
    let RedisFailover::Redis(r) = n else {
        panic!("not a redis node")
    };
    r
}

/// The lesson's window: the primary answers the client first and only then feeds the
/// replicas, so a crash between the two effects (or a lost replication message)
/// leaves the replicas without the key the client was granted.
#[test]
fn a_primary_replies_to_the_client_before_it_replicates_the_set() {
    let (mut p, replid) = primary_with_replicas("no-fencing");
    let effects = at(&mut p, P, 10, C6, set(1, 42));
    let lock = Value::Lock {
        owner: 42,
        expires_at: 2_010_000_000,
    };
    let repl = Msg::Repl {
        replid,
        offset: 1,
        cmd: Cmd::Set {
            key: "counter".into(),
            value: lock,
        },
    };
    assert_eq!(
        effects,
        vec![
            Effect::Send {
                to: C6,
                msg: granted(1, None)
            },
            Effect::Send {
                to: R1,
                msg: repl.clone()
            },
            Effect::Send { to: R2, msg: repl },
        ]
    );
    // A second SET NX is refused while the key lives.
    assert_eq!(
        sends(&at(&mut p, P, 20, C7, set(1, 43))),
        vec![(
            C7,
            Msg::SetReply {
                req: 1,
                granted: false,
                token: None,
                not_primary: false
            }
        )]
    );
}

#[test]
fn a_replica_refuses_writes_with_readonly() {
    let mut r = started("no-fencing", R1);
    assert_eq!(
        sends(&at(&mut r, R1, 5, C6, set(1, 42))),
        vec![(
            C6,
            Msg::SetReply {
                req: 1,
                granted: false,
                token: None,
                not_primary: true
            }
        )]
    );
}

/// A replica that synced from the primary, then was promoted: it grants the lock when
/// the primary's SET never reached it, and refuses it when it did (the control).
#[test]
fn a_promoted_replica_grants_the_lock_it_never_received() {
    let promoted = |replicated: bool| {
        let (mut p, _) = primary_with_replicas("no-fencing");
        let fed = sends(&at(&mut p, P, 10, C6, set(1, 42)));
        let mut r = started("no-fencing", R1);
        // The primary's full sync (empty), then the SET if it arrives.
        let RedisFailover::Redis(pr) = &p else {
            unreachable!()
        };
        let sync = Msg::FullSync {
            replid: pr.replid,
            offset: 0,
            data: Vec::new(),
        };
        at(&mut r, R1, 3, P, sync);
        if replicated {
            let (_, repl) = fed.into_iter().find(|(to, _)| *to == R1).unwrap();
            at(&mut r, R1, 12, P, repl);
        }
        at(&mut r, R1, 500, S3, Msg::ReplicaOf { primary: None });
        assert_eq!(redis(&r).role, None);
        sends(&at(&mut r, R1, 600, C7, set(1, 43)))[0].clone()
    };
    assert_eq!(promoted(false), (C7, granted(1, None)));
    assert_eq!(
        promoted(true),
        (
            C7,
            Msg::SetReply {
                req: 1,
                granted: false,
                token: None,
                not_primary: false
            }
        )
    );
}

/// A demoted primary with writes its successor never got cannot continue the new
/// history (PSYNC2 continues only a prefix): it is sent a full sync and loses them.
#[test]
fn a_demoted_primary_with_unreplicated_writes_is_fully_resynced() {
    let (mut old, old_replid) = primary_with_replicas("no-fencing");
    at(&mut old, P, 10, C6, set(1, 42));
    // R1 never got offset 1; promoted at offset 0.
    let mut new = started("no-fencing", R1);
    at(
        &mut new,
        R1,
        3,
        P,
        Msg::FullSync {
            replid: old_replid,
            offset: 0,
            data: Vec::new(),
        },
    );
    at(&mut new, R1, 500, S3, Msg::ReplicaOf { primary: None });
    let effects = at(&mut old, P, 900, S3, Msg::ReplicaOf { primary: Some(R1) });
    let ack = sends(&effects)
        .into_iter()
        .find(|(to, _)| *to == R1)
        .unwrap()
        .1;
    assert_eq!(
        ack,
        Msg::Ack {
            replid: old_replid,
            offset: 1
        }
    );
    let reply = sends(&at(&mut new, R1, 902, P, ack));
    assert!(
        matches!(&reply[..], [(to, Msg::FullSync { offset: 0, data, .. })] if *to == P && data.is_empty()),
        "{reply:?}"
    );
    // Control: a replica at offset 0 of the old history continues with +CONTINUE.
    let reply = sends(&at(
        &mut new,
        R1,
        903,
        R2,
        Msg::Ack {
            replid: old_replid,
            offset: 0,
        },
    ));
    assert!(matches!(reply[0], (R2, Msg::Continue { .. })), "{reply:?}");
}

/// WAIT blocks until a replica acks the client's write offset; with no ack it times
/// out with a count of 0.
#[test]
fn wait_counts_replica_acks_of_the_clients_offset() {
    let (mut p, replid) = primary_with_replicas("wait");
    at(&mut p, P, 10, C6, set(1, 42));
    let wait = Msg::Wait {
        req: 1,
        replicas: 1,
        timeout: Duration::from_millis(100),
    };
    let effects = at(&mut p, P, 11, C6, wait.clone());
    assert_eq!(
        effects,
        vec![
            Effect::SetTimer {
                timer: Timer::WaitTimeout(C6),
                after: Duration::from_millis(100)
            },
            Effect::Send {
                to: R1,
                msg: Msg::GetAck
            },
            Effect::Send {
                to: R2,
                msg: Msg::GetAck
            },
        ]
    );
    let mut blocked = p.clone();
    let effects = at(&mut p, P, 14, R2, Msg::Ack { replid, offset: 1 });
    assert_eq!(
        effects,
        vec![
            Effect::CancelTimer {
                timer: Timer::WaitTimeout(C6)
            },
            Effect::Send {
                to: C6,
                msg: Msg::WaitReply { req: 1, acked: 1 }
            },
        ]
    );
    // Control: no ack, the timeout answers 0.
    let effects = run_in(&cluster(), &mut blocked, P, 111, 1, |n, env| {
        n.on_timer(env, Timer::WaitTimeout(C6))
    });
    assert_eq!(
        sends(&effects),
        vec![(C6, Msg::WaitReply { req: 1, acked: 0 })]
    );
}

/// The `wait` client acts only once WAIT counted a replica; `no-fencing` acts on the
/// grant itself.
#[test]
fn the_wait_client_acts_only_after_a_replica_acked() {
    let client_after_grant = |variant: &str| {
        let mut c = started(variant, C6);
        run_in(&cluster(), &mut c, C6, 0, 1, |n, env| {
            n.on_timer(env, Timer::Workload(WorkloadTimer::Think))
        });
        at(
            &mut c,
            C6,
            1,
            S3,
            Msg::PrimaryIs(Config {
                epoch: 0,
                primary: P,
            }),
        );
        let effects = at(&mut c, C6, 3, P, granted(1, None));
        (c, effects)
    };
    let holds = |e: &Effects| {
        e.iter()
            .any(|e| matches!(e, Effect::Observe(Observation::Holds { .. })))
    };
    let (_, effects) = client_after_grant("no-fencing");
    assert!(holds(&effects));
    let (mut c, effects) = client_after_grant("wait");
    assert!(!holds(&effects));
    assert_eq!(
        sends(&effects),
        vec![(
            P,
            Msg::Wait {
                req: 1,
                replicas: 1,
                timeout: Duration::from_millis(100)
            }
        )]
    );
    let mut refused = c.clone();
    assert!(holds(&at(
        &mut c,
        C6,
        5,
        P,
        Msg::WaitReply { req: 1, acked: 1 }
    )));
    // No replica acked: the client gives the key back and does not act.
    let effects = at(
        &mut refused,
        C6,
        105,
        P,
        Msg::WaitReply { req: 1, acked: 0 },
    );
    assert!(!holds(&effects));
    assert!(sends(&effects)
        .iter()
        .any(|(to, m)| *to == P && matches!(m, Msg::DelIfOwner { .. })));
}

/// Tokens from the primary's INCR are replicated like the lock: a replica promoted
/// without the last INCR hands the same token out again.
#[test]
fn primary_tokens_repeat_after_a_promotion_that_missed_the_incr() {
    let (mut p, replid) = primary_with_replicas("primary-tokens");
    let first = sends(&at(&mut p, P, 10, C6, set(1, 42)));
    assert_eq!(first[0], (C6, granted(1, Some(1))));
    let mut r = started("primary-tokens", R1);
    at(
        &mut r,
        R1,
        3,
        P,
        Msg::FullSync {
            replid,
            offset: 0,
            data: Vec::new(),
        },
    );
    at(&mut r, R1, 500, S3, Msg::ReplicaOf { primary: None });
    let again = sends(&at(&mut r, R1, 600, C7, set(1, 43)));
    assert_eq!(again[0], (C7, granted(1, Some(1))));
}

/// The consensus-tokens client asks the token service after the grant and holds only
/// with its token; the service syncs each token before it answers.
#[test]
fn consensus_tokens_come_from_the_durable_counter() {
    let mut c = started("consensus-tokens", C6);
    run_in(&cluster(), &mut c, C6, 0, 1, |n, env| {
        n.on_timer(env, Timer::Workload(WorkloadTimer::Think))
    });
    at(
        &mut c,
        C6,
        1,
        S4,
        Msg::PrimaryIs(Config {
            epoch: 0,
            primary: P,
        }),
    );
    let effects = at(&mut c, C6, 3, P, granted(1, None));
    assert_eq!(sends(&effects), vec![(TOKENS, Msg::Token { req: 1 })]);
    let effects = at(&mut c, C6, 5, TOKENS, Msg::TokenReply { req: 1, token: 9 });
    assert!(effects.contains(&Effect::Observe(Observation::Holds {
        resource: "counter".into(),
        token: 9
    })));

    let cluster = cluster();
    let mut storage = StorageMap::new();
    let mut rng = SplitMix64(1);
    let mut t = RedisFailover::new(&config("consensus-tokens"), TOKENS, &cluster);
    let mut step = |t: &mut RedisFailover,
                    storage: &mut StorageMap,
                    f: &dyn Fn(&mut RedisFailover, &mut dyn Env<Msg, Timer>)| {
        let mut s: Step<'_, Msg, Timer> = Step::new(
            TOKENS,
            &cluster,
            LocalTime(0),
            LocalTime(0),
            storage,
            &mut rng,
        );
        f(t, &mut s);
        s.effects
    };
    step(&mut t, &mut storage, &|t, env| t.on_start(env));
    let effects = step(&mut t, &mut storage, &|t, env| {
        t.on_message(env, C6, Msg::Token { req: 1 })
    });
    assert_eq!(
        effects,
        vec![
            Effect::Store {
                key: TOKENS_KEY.into(),
                value: Some("1".into())
            },
            Effect::Sync { ok: true },
            Effect::Send {
                to: C6,
                msg: Msg::TokenReply { req: 1, token: 1 }
            },
        ]
    );
    // Restarted: the counter is read back, the next token is 2, never 1 again.
    let mut t = RedisFailover::new(&config("consensus-tokens"), TOKENS, &cluster);
    step(&mut t, &mut storage, &|t, env| t.on_start(env));
    let effects = step(&mut t, &mut storage, &|t, env| {
        t.on_message(env, C7, Msg::Token { req: 4 })
    });
    assert_eq!(
        effects[2],
        Effect::Send {
            to: C7,
            msg: Msg::TokenReply { req: 4, token: 2 }
        }
    );
}

/// `sentinelVoteLeader`: one vote per epoch, to the first candidate that asks.
#[test]
fn a_sentinel_votes_once_per_epoch() {
    let mut s = started("no-fencing", S4);
    let ask = |candidate, epoch| Msg::IsDown {
        primary: P,
        epoch,
        candidate: Some(candidate),
    };
    let reply = |e: Effects| sends(&e)[0].1.clone();
    assert_eq!(
        reply(at(&mut s, S4, 10, S3, ask(S3, 1))),
        Msg::IsDownReply {
            down: false,
            leader: Some((S3, 1))
        }
    );
    assert_eq!(
        reply(at(&mut s, S4, 11, NodeId(5), ask(NodeId(5), 1))),
        Msg::IsDownReply {
            down: false,
            leader: Some((S3, 1))
        }
    );
    // A higher epoch gets a new vote.
    assert_eq!(
        reply(at(&mut s, S4, 12, NodeId(5), ask(NodeId(5), 2))),
        Msg::IsDownReply {
            down: false,
            leader: Some((NodeId(5), 2))
        }
    );
}

#[test]
fn params_and_roles_are_checked() {
    let p = FailoverParams {
        quorum: 4,
        ..FailoverParams::default()
    };
    assert_eq!(
        RedisFailover::configure_named(p, "consensus-tokens", &cluster())
            .unwrap_err()
            .field,
        "quorum"
    );
    let spec = |role: &str, count| RoleSpec::new(role, count);
    let no_tokens = Cluster::new(vec![
        spec("redis", 2),
        spec("sentinel", 3),
        spec("client", 2),
        spec("storage", 1),
    ])
    .unwrap();
    assert_eq!(
        RedisFailover::configure_named(FailoverParams::default(), "consensus-tokens", &no_tokens)
            .unwrap_err()
            .field,
        "cluster.roles.tokens"
    );
    assert!(
        RedisFailover::configure_named(FailoverParams::default(), "no-fencing", &no_tokens).is_ok()
    );
    let info = RedisFailover::info();
    assert!(info.variants[0].breaks.is_empty());
    assert_eq!(
        info.variant("no-fencing").unwrap().breaks,
        ["mutual-exclusion"]
    );
}
