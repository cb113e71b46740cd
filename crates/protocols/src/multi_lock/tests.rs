use super::*;
use crate::redis_lock::tests::run_in;
use crate::testkit::Net;
use tenure_core::{Effect, Rng, RoleSpec, SplitMix64};

type Effects = Vec<Effect<Msg, Timer>>;

const SERVER: NodeId = NodeId(0);
const CLIENT: NodeId = NodeId(1);

fn cluster(clients: u32) -> Cluster {
    Cluster::new(vec![
        RoleSpec::new("server", 1),
        RoleSpec::new("client", clients),
    ])
    .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn hd(n: u64) -> HumanDuration {
    HumanDuration(ms(n))
}

/// Two resources, both needed: every request is [r0, r1] when ordered.
fn params() -> MultiLockParams {
    MultiLockParams {
        resources: 2,
        k: 2,
        ..MultiLockParams::default()
    }
}

fn client(p: MultiLockParams, variant: &str) -> Client {
    let config = MultiLock::configure_named(p, variant, &cluster(2)).unwrap();
    Client::new(config.client)
}

fn step(
    c: &mut Client,
    seed: u64,
    f: impl FnOnce(&mut Client, &mut dyn Env<Msg, Timer>),
) -> Effects {
    run_in(&cluster(2), c, CLIENT, 0, seed, f)
}

fn set(req: u64, key: &str, owner: u64, ttl: Option<Duration>) -> Effect<Msg, Timer> {
    Effect::Send {
        to: SERVER,
        msg: LockMsg::Set {
            req,
            key: key.into(),
            owner,
            ttl,
        },
    }
}

fn obs(o: Observation) -> Effect<Msg, Timer> {
    Effect::Observe(o)
}

fn waiting(r: &str) -> Effect<Msg, Timer> {
    obs(Observation::Waiting { resource: r.into() })
}

fn holds(r: &str) -> Effect<Msg, Timer> {
    obs(Observation::Holds {
        resource: r.into(),
        token: 0,
    })
}

fn acts(r: &str) -> Effect<Msg, Timer> {
    obs(Observation::Acts {
        resource: r.into(),
        token: 0,
    })
}

fn releases(r: &str) -> Effect<Msg, Timer> {
    obs(Observation::Releases { resource: r.into() })
}

fn timer(t: Timer, after: Duration) -> Effect<Msg, Timer> {
    Effect::SetTimer { timer: t, after }
}

fn cancel(t: Timer) -> Effect<Msg, Timer> {
    Effect::CancelTimer { timer: t }
}

fn del(key: &str, owner: u64) -> Effect<Msg, Timer> {
    Effect::Send {
        to: SERVER,
        msg: LockMsg::DelIfOwner {
            key: key.into(),
            owner,
        },
    }
}

/// The owner value of the step's first `SET` after a draw of two resources out of two
/// with seed `seed` (two weighted draws come first).
fn owner_after_draw(seed: u64) -> u64 {
    let mut rng = SplitMix64(seed);
    rng.range_inclusive(0, 1_999_999);
    rng.range_inclusive(0, 999_999);
    rng.next_u64()
}

/// A client that has drawn [r0, r1] (ordered) and sent its first `SET` for r0 (req 1).
fn acquiring(p: MultiLockParams) -> (Client, u64) {
    let mut c = client(p, "correct");
    step(&mut c, 7, |c, env| c.on_timer(env, Timer::Think));
    (c, owner_after_draw(7))
}

/// As [`acquiring`], then r0 granted: it now asks for r1 (req 2, owner from seed 8).
fn holding_r0(p: MultiLockParams) -> (Client, u64, u64) {
    let (mut c, o1) = acquiring(p);
    step(&mut c, 8, |c, env| c.on_set_reply(env, 1, true));
    (c, o1, SplitMix64(8).next_u64())
}

#[test]
fn think_over_draws_the_request_in_global_order_and_asks_for_the_first_lock() {
    let mut c = client(params(), "correct");
    let effects = step(&mut c, 7, |c, env| c.on_timer(env, Timer::Think));
    assert_eq!(c.request(), ["r0", "r1"]);
    assert_eq!(c.phase(), Phase::Acquiring);
    assert_eq!(
        effects,
        vec![
            waiting("r0"),
            set(1, "r0", owner_after_draw(7), None),
            timer(Timer::Reply, ms(500)),
        ]
    );
}

#[test]
fn a_grant_is_held_and_the_next_lock_asked_for_and_the_acquire_timeout_armed() {
    let p = MultiLockParams {
        acquire_timeout: Some(hd(300)),
        ttl: Some(hd(2_000)),
        ..params()
    };
    let (mut c, _) = acquiring(p);
    let effects = step(&mut c, 8, |c, env| c.on_set_reply(env, 1, true));
    assert_eq!(
        effects,
        vec![
            cancel(Timer::Reply),
            cancel(Timer::AcquireTimeout),
            holds("r0"),
            acts("r0"),
            waiting("r1"),
            timer(Timer::AcquireTimeout, ms(300)),
            set(2, "r1", SplitMix64(8).next_u64(), Some(ms(2_000))),
            timer(Timer::Reply, ms(500)),
        ]
    );
}

#[test]
fn hold_and_wait_polls_a_refused_lock_while_keeping_the_granted_one() {
    let (mut c, _, _) = holding_r0(params());
    let effects = step(&mut c, 9, |c, env| c.on_set_reply(env, 2, false));
    assert_eq!(
        effects,
        vec![cancel(Timer::Reply), timer(Timer::Poll, ms(20))]
    );
    let effects = step(&mut c, 10, |c, env| c.on_timer(env, Timer::Poll));
    assert_eq!(
        effects,
        vec![
            set(3, "r1", SplitMix64(10).next_u64(), None),
            timer(Timer::Reply, ms(500)),
        ]
    );
    // Granted at last: all held, hold for hold_time.
    let effects = step(&mut c, 11, |c, env| c.on_set_reply(env, 3, true));
    assert_eq!(
        effects,
        vec![
            cancel(Timer::Reply),
            cancel(Timer::AcquireTimeout),
            holds("r1"),
            acts("r1"),
            timer(Timer::Hold, ms(200)),
        ]
    );
    assert_eq!(c.phase(), Phase::Holding);
}

#[test]
fn the_hold_ends_by_writing_every_resource_then_releasing_everything_in_reverse_and_observing_done()
{
    let (mut c, o1, o2) = holding_r0(params());
    step(&mut c, 9, |c, env| c.on_set_reply(env, 2, true));
    let effects = step(&mut c, 12, |c, env| c.on_timer(env, Timer::Hold));
    let think = SplitMix64(12).range_inclusive(50_000_000, 150_000_000);
    assert_eq!(
        effects,
        vec![
            acts("r0"),
            acts("r1"),
            del("r1", o2),
            releases("r1"),
            del("r0", o1),
            releases("r0"),
            obs(Observation::Done),
            timer(Timer::Think, Duration::from_nanos(think)),
        ]
    );
    assert_eq!(c.phase(), Phase::Thinking);
}

#[test]
fn an_acquire_timeout_gives_up_releases_all_and_backs_off_then_retries_the_same_request() {
    let p = MultiLockParams {
        acquire_timeout: Some(hd(300)),
        ..params()
    };
    let (mut c, o1, o2) = holding_r0(p);
    let effects = step(&mut c, 13, |c, env| c.on_timer(env, Timer::AcquireTimeout));
    // First failure: the ceiling is the base (20ms), equal jitter in [10ms, 20ms].
    let backoff = SplitMix64(13).range_inclusive(10_000_000, 20_000_000);
    assert_eq!(
        effects,
        vec![
            cancel(Timer::Poll),
            cancel(Timer::Reply),
            cancel(Timer::AcquireTimeout),
            obs(Observation::GivesUp {
                resource: "r1".into()
            }),
            del("r0", o1),
            releases("r0"),
            timer(Timer::Backoff, Duration::from_nanos(backoff)),
        ]
    );
    assert_eq!(c.phase(), Phase::BackingOff);
    // The abandoned SET for r1 (req 2) is granted late: it is deleted at once.
    let effects = step(&mut c, 14, |c, env| c.on_set_reply(env, 2, true));
    assert_eq!(effects, vec![del("r1", o2)]);
    // The backoff ends: the same request again, from its first lock.
    let effects = step(&mut c, 15, |c, env| c.on_timer(env, Timer::Backoff));
    assert_eq!(
        effects,
        vec![
            waiting("r0"),
            timer(Timer::AcquireTimeout, ms(300)),
            set(3, "r0", SplitMix64(15).next_u64(), None),
            timer(Timer::Reply, ms(500)),
        ]
    );
}

#[test]
fn try_lock_gives_up_at_the_first_refusal() {
    let p = MultiLockParams {
        strategy: Strategy::TryLock,
        ..params()
    };
    let (mut c, o1, _) = holding_r0(p);
    let effects = step(&mut c, 16, |c, env| c.on_set_reply(env, 2, false));
    let backoff = SplitMix64(16).range_inclusive(10_000_000, 20_000_000);
    assert_eq!(
        effects,
        vec![
            cancel(Timer::Reply),
            cancel(Timer::Poll),
            cancel(Timer::Reply),
            cancel(Timer::AcquireTimeout),
            obs(Observation::GivesUp {
                resource: "r1".into()
            }),
            del("r0", o1),
            releases("r0"),
            timer(Timer::Backoff, Duration::from_nanos(backoff)),
        ]
    );
}

#[test]
fn backoff_doubles_from_the_base_up_to_the_cap_and_is_never_zero() {
    use crate::backoff::{Backoff, BackoffPolicy};
    let ranges = [
        (1, 10, 20),
        (2, 20, 40),
        (3, 40, 80),
        (7, 500, 1_000),
        (40, 500, 1_000),
    ];
    for seed in 0..20 {
        let (base, cap) = (ms(20), ms(1_000));
        let mut backoff = Backoff::new(BackoffPolicy::EqualJitter { base, cap });
        let mut rng = SplitMix64(seed);
        for failures in 1..=40 {
            let d = backoff.on_failure(&mut rng);
            if let Some((_, lo, hi)) = ranges.iter().find(|(n, _, _)| *n == failures) {
                assert!(d >= ms(*lo) && d <= ms(*hi), "{failures}: {d:?}");
            }
        }
    }
}

#[test]
fn unordered_requests_come_in_either_order_and_skew_makes_r0_hot() {
    let mut firsts = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let mut c = client(params(), "unordered");
        step(&mut c, seed, |c, env| c.on_timer(env, Timer::Think));
        let mut sorted = c.request().to_vec();
        sorted.sort();
        assert_eq!(sorted, ["r0", "r1"]);
        firsts.insert(c.request()[0].clone());
    }
    assert_eq!(firsts.len(), 2);
    // One of ten resources, skew 2: r0 weighs 1, r9 weighs 1/100.
    let p = MultiLockParams {
        resources: 10,
        k: 1,
        skew: 2.0,
        ..params()
    };
    let hot = (0..200)
        .filter(|seed| {
            let mut c = client(p.clone(), "correct");
            step(&mut c, *seed, |c, env| c.on_timer(env, Timer::Think));
            c.request() == ["r0"]
        })
        .count();
    // r0's share is 1 / (1 + 1/4 + ... + 1/100) ≈ 0.65.
    assert!((100..160).contains(&hot), "{hot}");
}

#[test]
fn bad_parameters_name_the_field() {
    let err =
        |p: MultiLockParams| MultiLock::configure_named(p, "correct", &cluster(2)).unwrap_err();
    assert_eq!(err(MultiLockParams { k: 3, ..params() }).field, "k");
    assert_eq!(err(MultiLockParams { k: 0, ..params() }).field, "k");
    assert_eq!(
        err(MultiLockParams {
            skew: -1.0,
            ..params()
        })
        .field,
        "skew"
    );
    assert_eq!(
        err(MultiLockParams {
            strategy: Strategy::TryLock,
            acquire_timeout: Some(hd(100)),
            ..params()
        })
        .field,
        "acquire_timeout"
    );
    assert_eq!(
        err(MultiLockParams {
            backoff: [hd(100), hd(50)],
            ..params()
        })
        .field,
        "backoff"
    );
    let two_servers = Cluster::new(vec![RoleSpec::new("server", 2)]).unwrap();
    assert_eq!(
        MultiLock::configure_named(params(), "correct", &two_servers)
            .unwrap_err()
            .field,
        "cluster.roles.server"
    );
}

/// Completed requests per client in true time `from_ms..to_ms`.
fn done_between(net: &Net<MultiLock>, from_ms: u64, to_ms: u64) -> BTreeMap<NodeId, usize> {
    let mut done = BTreeMap::new();
    for (t, node, o) in &net.records {
        if *o == Observation::Done && (from_ms * 1_000_000..to_ms * 1_000_000).contains(t) {
            *done.entry(*node).or_default() += 1;
        }
    }
    done
}

fn contended() -> MultiLockParams {
    MultiLockParams {
        resources: 3,
        k: 2,
        hold_time: hd(100),
        think_time: [hd(10), hd(50)],
        ..MultiLockParams::default()
    }
}

#[test]
fn unordered_hold_and_wait_deadlocks_and_ordered_does_not() {
    let config = |variant| MultiLock::configure_named(contended(), variant, &cluster(3)).unwrap();
    let mut unordered = Net::start(config("unordered"), cluster(3), 1);
    unordered.run_until(ms(30_000));
    // Stuck: nobody finishes anything in the last 20 seconds.
    assert_eq!(done_between(&unordered, 10_000, 30_000), BTreeMap::new());
    let stuck = (1..=3)
        .filter(|i| match unordered.node(*i) {
            MultiLock::Client(c) => c.phase() == Phase::Acquiring,
            MultiLock::Server(_) => false,
        })
        .count();
    assert!(stuck >= 2, "{stuck} clients stuck acquiring");

    let mut ordered = Net::start(config("correct"), cluster(3), 1);
    ordered.run_until(ms(30_000));
    let done = done_between(&ordered, 10_000, 30_000);
    assert_eq!(done.len(), 3, "every client makes progress: {done:?}");
    assert!(done.values().all(|n| *n >= 10), "{done:?}");
}

#[test]
fn an_acquire_timeout_or_try_lock_gets_unordered_clients_out_of_the_deadlock() {
    for p in [
        MultiLockParams {
            acquire_timeout: Some(hd(300)),
            ..contended()
        },
        MultiLockParams {
            strategy: Strategy::TryLock,
            ..contended()
        },
    ] {
        let config = MultiLock::configure_named(p.clone(), "unordered", &cluster(3)).unwrap();
        let mut net = Net::start(config, cluster(3), 1);
        net.run_until(ms(30_000));
        let done = done_between(&net, 10_000, 30_000);
        assert_eq!(done.len(), 3, "{p:?}: {done:?}");
        let gave_up = net
            .records
            .iter()
            .filter(|(_, _, o)| matches!(o, Observation::GivesUp { .. }))
            .count();
        assert!(
            gave_up > 0,
            "{p:?}: the contention never made anyone give up"
        );
    }
}
