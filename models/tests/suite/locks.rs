//! The lock zoo explored through the registry: the lesson of the GC pause, shown
//! exhaustively. A time leap with free timer order is a pause: the holder's TTL runs
//! out at the server before the holder's write is delivered.
//!
//! * `fencing` correct: fencing safety and no lost update hold for every behaviour of
//!   one server, two clients (one acquire attempt each), a fenced storage and one leap,
//!   while mutual exclusion of *belief* fails.
//! * `fencing` unfenced: the stale write lands.
//! * `redis-lock` plain-del-release: a late duplicate of a plain `DEL` deletes the next
//!   holder's lock.
//! * `redis-lock` release-before-write: a client acts after its hold ended; only the
//!   actions overlap, and only finishing `mutual-exclusion` at every state shows it.

use crate::zoo;
use serde_json::Value;
use tenure_core::{Record, RunInfo, SimTime};
use tenure_models::{Query, Report};

fn query(protocol: &str, variant: &str) -> Query {
    zoo().query(protocol, variant).expect("a registry query")
}

fn explore(query: &Query) -> Report {
    let report = zoo().check_model(query).expect("the query builds");
    println!("{report}");
    report
}

#[test]
fn fenced_storage_stays_safe_exhaustively() {
    let report = explore(&query("fencing", "correct"));
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
    // 4,469 since the clients record their operations (the explorer tells apart paths
    // that observed different reads).
    // 4,790 since a client remembers its timed-out acquires (a late grant is used or
    // given back).
    assert_eq!(report.unique_states, 4_790);
    assert_eq!(report.max_depth_reached, 21);
}

/// The paused holder: n1 holds token 1, time leaps (its TTL is over at the server), n2
/// gets the lock, and n1 still believes it holds it. The overlap began at step 7 and
/// has lasted a step at step 8, which observes nothing (a read delivered to the
/// storage): a state with no new record is judged again when its parent had an overlap
/// under way (without that, the first state at depth 8 to show it would be one that
/// records something).
#[test]
fn fenced_lock_still_loses_mutual_exclusion_of_belief_under_a_pause() {
    let mut q = query("fencing", "correct");
    q.checks = vec!["mutual-exclusion-belief".into()];
    let cex = explore(&q).counterexample.expect("a paused holder");
    assert_eq!(cex.property, "mutual-exclusion-belief");
    assert_eq!(cex.depth, 8);
    assert_eq!(
        cex.steps[7],
        "n2 -> n3 Resource(Read { resource: \"counter\", op: 1, token: Some(2) }) delivered"
    );
    let step_7 = SimTime::ZERO + tenure_core::model::TICK * 7;
    assert!(
        cex.records.iter().all(|r| r.time <= step_7),
        "step 8 observes nothing"
    );
    assert!(
        cex.message.ends_with(
            "from 0.007_000s for 0.001_000s (still at the end of the run) (n1 with token 1 \
             since 0.003_000s, n2 with token 2 since 0.007_000s; tolerated overlap 0s)"
        ),
        "{}",
        cex.message
    );
    assert_eq!(
        cex.steps[..7],
        [
            "n1 timer Workload(Think) fired",
            "n1 -> n0 Lock(Set { req: 1, key: \"counter\", owner: 4932980744878494312, ttl: Some(2s) }) delivered",
            "n0 -> n1 Lock(SetReply { req: 1, granted: true, token: Some(1) }) delivered",
            "time leaps 1h on every clock",
            "n2 timer Workload(Think) fired",
            "n2 -> n0 Lock(Set { req: 1, key: \"counter\", owner: 480410753986237055, ttl: Some(2s) }) delivered",
            "n0 -> n2 Lock(SetReply { req: 1, granted: true, token: Some(2) }) delivered",
        ]
    );
}

/// Without a leap nothing expires, and even belief is exclusive.
#[test]
fn without_a_leap_the_ttl_never_expires_and_belief_is_exclusive() {
    let mut q = query("fencing", "correct");
    q.checks = vec!["mutual-exclusion-belief".into()];
    q.bounds.max_leaps = 0;
    let report = explore(&q);
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
}

#[test]
fn unfenced_storage_accepts_the_stale_write() {
    // Judged alone: with no-lost-update beside it, the write chain names the same stale
    // write first.
    let mut q = query("fencing", "unfenced");
    q.checks = vec!["fencing-safety".into()];
    let cex = explore(&q).counterexample.expect("unfenced is broken");
    assert_eq!(cex.property, "fencing-safety");
    assert_eq!(
        cex.message,
        "`counter` on n3 accepted token 1 from n1 at 0.015_000s after it had accepted token 2 from n2 at 0.011_000s"
    );
    assert_eq!(cex.depth, 15);
    assert_eq!(cex.steps[3], "time leaps 1h on every clock");
    assert_eq!(
        cex.steps[14],
        "n1 -> n3 Resource(Write { resource: \"counter\", op: 2, token: Some(1), value: 2, based_on: Some(1) }) delivered"
    );
}

/// Judged alone, the lost update is found too (finished at every state: a run may end
/// anywhere).
#[test]
fn unfenced_storage_loses_an_update() {
    let mut q = query("fencing", "unfenced");
    q.checks = vec!["no-lost-update".into()];
    let cex = explore(&q).counterexample.expect("a lost update");
    assert_eq!(cex.property, "no-lost-update");
    assert!(cex
        .steps
        .contains(&"time leaps 1h on every clock".to_string()));
}

#[test]
fn plain_del_release_deletes_the_next_holders_lock() {
    let cex = explore(&query("redis-lock", "plain-del-release"))
        .counterexample
        .expect("plain DEL is broken");
    assert_eq!(cex.property, "mutual-exclusion-belief");
    assert_eq!(cex.depth, 14);
    assert_eq!(
        cex.steps[4],
        "message n1 -> n0 Lock(Del { key: \"counter\" }) duplicated"
    );
    assert_eq!(
        cex.steps[9],
        "n1 -> n0 Lock(Del { key: \"counter\" }) delivered"
    );
}

/// The same duplicate is harmless to the compare-and-delete script. Bounded: three
/// clients and depth 16 (the full space is 369,423 states, about 18 s).
#[test]
fn compare_and_delete_keeps_mutual_exclusion_to_depth_16() {
    let report = explore(&query("redis-lock", "correct"));
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete, "{report}");
    // 80,718 since a client remembers its timed-out acquires.
    assert_eq!(report.unique_states, 80_718);
}

/// The client releases once its read returns and writes after its work: n1 acquires
/// and acts between n2's read and n2's write. Found at the shortest depth, 10, as an
/// interleaving of ACTIONS still open (no client ever holds again, so neither section
/// ends, and `mutual-exclusion` would report it online only once both had ended).
#[test]
fn release_before_write_is_found_as_an_open_overlap_of_actions() {
    let report = explore(&query("redis-lock", "release-before-write"));
    let cex = report
        .counterexample
        .expect("release-before-write is broken");
    assert_eq!(cex.property, "mutual-exclusion");
    assert_eq!(cex.depth, 10);
    assert_eq!(
        cex.message,
        "n2 and n1 both acted on `counter` as its holder: n2 with token 0 from 0.004_000s \
         to 0.010_000s, n1 with token 0 from 0.009_000s to 0.009_000s; their actions \
         interleaved over 0.000_000s (tolerated overlap 0s)"
    );
    assert_eq!(
        cex.steps[6..],
        [
            "n2 -> n0 Lock(DelIfOwner { key: \"counter\", owner: 480410753986237055 }) delivered",
            "n1 -> n0 Lock(Set { req: 1, key: \"counter\", owner: 4932980744878494312, ttl: Some(2s) }) delivered",
            "n0 -> n1 Lock(SetReply { req: 1, granted: true, token: None }) delivered",
            "n2 timer Workload(Work) fired",
        ]
    );
}

/// Negative control: the old judgement, which fed `mutual-exclusion` the path's records
/// and never finished it, passes the very counterexample path; finishing it at the
/// path's last state (depth 10) reports the overlap. The beliefs never overlap on it
/// (`mutual-exclusion-belief` passes even when finished), and with only the belief
/// check the whole search to depth 12 finds nothing.
#[test]
fn release_before_write_is_invisible_without_finishing_and_to_beliefs() {
    let q = query("redis-lock", "release-before-write");
    let cex = explore(&q)
        .counterexample
        .expect("release-before-write is broken");
    let end = SimTime::ZERO + tenure_core::model::TICK * cex.depth as u32;
    let judge = |name: &str, finish: bool| {
        let mut checker = tenure_check::build(name, &Value::Null, &q.cluster).unwrap();
        let online = cex
            .records
            .iter()
            .enumerate()
            .find_map(|(i, r): (usize, &Record)| checker.on_record(i, r));
        online.or_else(|| {
            finish
                .then(|| {
                    checker.finish(&RunInfo {
                        cluster: q.cluster.clone(),
                        seed: 0,
                        end,
                        calm_from: SimTime::ZERO,
                    })
                })
                .flatten()
        })
    };
    assert_eq!(judge("mutual-exclusion", false), None, "records alone");
    let v = judge("mutual-exclusion", true).expect("finished at the last state");
    assert_eq!(v.message, cex.message);
    assert_eq!(judge("mutual-exclusion-belief", true), None);

    let mut beliefs = q.clone();
    beliefs.checks = vec!["mutual-exclusion-belief".into()];
    // Two steps past the interleaving (the default depth 16 takes about 119k states).
    beliefs.bounds.max_depth = 12;
    let report = explore(&beliefs);
    assert!(report.counterexample.is_none(), "{report}");
    assert!(
        report.complete && report.max_depth_reached == 12,
        "{report}"
    );
}

/// Random walks (`check-model --walk --max-depth 60`) find it too, as an overlap of
/// actions, cut to the walk's earliest prefix at whose end it shows: one step shorter
/// and the path passes.
#[test]
fn random_walks_find_release_before_write_at_the_earliest_end() {
    let models = zoo();
    let q = models
        .query_for_walks("redis-lock", "release-before-write")
        .unwrap();
    // 60 steps (the default before walks counted events): its first breaking walk,
    // seed 108, shows the overlap only at its end, which is what this test is about.
    // The default walks find seed 7 first, whose checker sees the overlap when a section
    // closes (step 77), later than the first prefix at whose end it shows: a walk
    // broken on a record is reported at that record, not cut to an earlier end.
    let walk = models.walk_model(&q, 0..1000, 60).unwrap();
    let failure = walk.failure.expect("a walk breaks it");
    assert_eq!(failure.seed, 108);
    let cex = failure.counterexample;
    assert_eq!(cex.property, "mutual-exclusion", "{cex}");
    assert_eq!(cex.steps.len(), cex.depth);
    let finished_at = |depth: usize| {
        let mut checker =
            tenure_check::build("mutual-exclusion", &Value::Null, &q.cluster).unwrap();
        let last = SimTime::ZERO + tenure_core::model::TICK * depth as u32;
        let online = cex
            .records
            .iter()
            .take_while(|r| r.time <= last)
            .enumerate()
            .find_map(|(i, r)| checker.on_record(i, r));
        online.or_else(|| {
            checker.finish(&RunInfo {
                cluster: q.cluster.clone(),
                seed: 0,
                end: last,
                calm_from: SimTime::ZERO,
            })
        })
    };
    assert!(finished_at(cex.depth).is_some(), "{cex}");
    assert!(finished_at(cex.depth - 1).is_none(), "{cex}");
    assert!(cex
        .records
        .iter()
        .all(|r| r.time <= SimTime::ZERO + tenure_core::model::TICK * cex.depth as u32));
}

/// The correct variant passes the same defaults (the actions and the beliefs), with
/// both judged at every state: `compare_and_delete_keeps_mutual_exclusion_to_depth_16`
/// runs them; here, that `mutual-exclusion` is among them.
#[test]
fn redis_lock_judges_actions_by_default() {
    let q = query("redis-lock", "correct");
    assert_eq!(q.checks, ["mutual-exclusion", "mutual-exclusion-belief"]);
}

#[test]
fn idempotency_without_keys_applies_a_retry_twice() {
    let cex = explore(&query("idempotency", "no-key"))
        .counterexample
        .expect("no-key is broken");
    assert_eq!(cex.property, "exactly-once");
    assert_eq!(
        cex.steps,
        [
            "n1 timer Think fired",
            "n1 -> n0 Request { key: \"n1-0\" } delivered",
            "n1 timer Retry fired",
            "n1 -> n0 Request { key: \"n1-0\" } delivered",
        ]
    );
}

#[test]
fn idempotency_key_recorded_after_the_effect_is_lost_in_a_crash() {
    let cex = explore(&query("idempotency", "key-after-effect"))
        .counterexample
        .expect("key-after-effect is broken");
    assert_eq!(cex.property, "exactly-once");
    assert_eq!(cex.depth, 6);
    assert_eq!(cex.steps[3], "n0 crashed");
}

#[test]
fn idempotency_with_keys_applies_once_exhaustively() {
    let report = explore(&query("idempotency", "correct"));
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
    assert_eq!(report.unique_states, 306);
}
