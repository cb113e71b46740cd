//! Regressions of `zookeeper-ensemble` found by the trust test (issue 36).

use std::sync::atomic::AtomicBool;
use tenure_fuzz::{fuzz, FuzzOptions, SeedResult, Target};

/// Regression (`zookeeper-ensemble` correct, lock-liveness within its assumptions:
/// `partitions` seed 90, `chaos` seed 188, `power` seeds 77, 121 and 157): a new leader
/// counted only itself as recently acked, so with NEWLEADER's round trip longer than a
/// tick (slow links, no other fault needed: seeds 188, 77, 121 and 157 shrink to none) it
/// stepped down at its first tick; leaders were elected over and over, none was
/// established, and the waiters never got the lock after the calm. A new leader now gives
/// every server the full ack grace from the start of its leadership (ZooKeeper's
/// `LearnerHandler.tickOfNextAckDeadline`). Each of these seeds fails without the fix.
#[test]
fn zk_ensemble_new_leader_stepped_down_before_newleader_acks_seeds_90_188_77_121_157() {
    let cells = [
        ("partitions", 90),
        ("chaos", 188),
        ("power", 77),
        ("power", 121),
        ("power", 157),
    ];
    let bad = crate::support::seeds_not_passing("zookeeper-ensemble", "correct", &cells, None);
    assert_eq!(bad, Vec::<String>::new());
}

/// Regression (`zookeeper-ensemble` correct, linearizability within its assumptions:
/// `partitions` seed 156, found by the release sweep of issue 36): a register client's
/// write of its own key timed out (CONNECTIONLOSS, outcome unknown) but was committed;
/// another client read it after `sync`; the writer, reconnected to a server not yet at
/// that zxid (its last seen zxid never included the write), read its own key plainly and
/// got the older value. "A client sees its own writes" holds only for writes it saw
/// answered: after an unknown write the client now reads its own key with `sync` until
/// one such read succeeds. Fails without the fix.
#[test]
fn zk_ensemble_own_key_read_plainly_after_an_unknown_write_partitions_seed_156() {
    let zoo = crate::support::zoo();
    let target = Target::for_protocol(
        &zoo,
        "zookeeper-ensemble",
        Some("correct"),
        Some("partitions"),
    )
    .unwrap();
    let options = FuzzOptions {
        jobs: 1,
        ..FuzzOptions::default()
    };
    let stop = AtomicBool::new(false);
    let mut bad = Vec::new();
    fuzz(&target, 156..157, &options, &stop, |o| match &o.result {
        SeedResult::Pass => {}
        SeedResult::Fail(f) => bad.push(format!("seed {}: {} {}", o.seed, f.checker, f.message)),
        other => bad.push(format!("seed {}: {other:?}", o.seed)),
    });
    assert_eq!(bad, Vec::<String>::new());
}

/// `reconnect-to-older-zxid` is found by a built-in profile (issue 36): `chaos` seed 24
/// crashes the leader 2.3ms after it answered a register client's write; the COMMIT it
/// had in flight to one follower is lost with its connections. The client sees its
/// connection end and reconnects at once (`ClientCnxn`: "likely server has closed
/// socket"), its next `sync` times out on the dead leader, and it moves on to the
/// follower that never applied its write: the variant accepts it and its read of its own
/// key goes back in time (`linearizability`). The same seed with `correct` passes (that
/// follower refuses the client). Before clients handled the reset of their connection
/// they waited for a reply timeout, and no profile found the variant.
#[test]
fn zk_ensemble_reconnect_to_older_zxid_found_by_chaos_seed_24_and_correct_passes() {
    let zoo = crate::support::zoo();
    let run = |variant: &str| {
        let target =
            Target::for_protocol(&zoo, "zookeeper-ensemble", Some(variant), Some("chaos")).unwrap();
        let options = FuzzOptions {
            jobs: 1,
            ..FuzzOptions::default()
        };
        let stop = AtomicBool::new(false);
        let mut result = None;
        fuzz(&target, 24..25, &options, &stop, |o| {
            result = Some(o.result.clone())
        });
        result.expect("seed 24 ran")
    };
    match run("reconnect-to-older-zxid") {
        SeedResult::Fail(f) => assert_eq!(f.checker, "linearizability", "{}", f.message),
        other => panic!("reconnect-to-older-zxid, chaos seed 24: {other:?}"),
    }
    match run("correct") {
        SeedResult::Pass => {}
        SeedResult::Fail(f) => panic!("correct, chaos seed 24: {} {}", f.checker, f.message),
        other => panic!("correct, chaos seed 24: {other:?}"),
    }
}
