//! The facade against a protocol of the zoo (Raft), as a user's test would drive it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tenure::prelude::*;
use tenure::{Configurable, Fault, FaultEvent, NodeSel};
use tenure_protocols::raft::Raft;

fn raft(variant: &str) -> Simulation<Raft> {
    let cluster = Cluster::uniform("server", 5);
    let config = Raft::configure_named(Default::default(), variant, &cluster).unwrap();
    Simulation::<Raft>::new(cluster, config).duration(secs(15))
}

/// A deposed leader that ignores higher terms (no-step-down) never lets liveness
/// return once its isolation heals.
fn deposed_leader(sim: Simulation<Raft>) -> Simulation<Raft> {
    sim.check("single-leader-per-term")
        .check_with(
            "leader-liveness",
            tenure::serde_json::json!({"within": "4s"}),
        )
        .faults(|s| {
            s.at(secs(2), |c| {
                if let Some(leader) = c.leader() {
                    c.isolate(leader);
                }
            })
            .at(secs(6), |c| c.heal())
        })
}

#[test]
fn a_correct_protocol_passes_one_seed() {
    let outcome = deposed_leader(raft("correct")).run_seed(42);
    outcome.assert_ok();
    assert_eq!(outcome.seed, 42);
    assert!(outcome.stats.messages_delivered > 0);
    assert!(!outcome.stopped_early);
}

#[test]
fn explicit_faults_happen_at_their_times() {
    let outcome = raft("correct")
        .faults(|s| s.at(secs(1), |c| c.crash(NodeId(3))))
        .timeline(vec![FaultEvent {
            at: millis(1500),
            fault: Fault::Crash {
                node: NodeSel::Id(4),
            },
        }])
        .run_seed(1);
    // (node, true time in whole milliseconds: madsim wakes a few ns past a deadline)
    let crashes: Vec<(NodeId, u64)> = outcome
        .history
        .records
        .iter()
        .filter(|r| r.obs == Observation::Crashed)
        .map(|r| (r.node, r.time.as_nanos() / 1_000_000))
        .collect();
    assert_eq!(crashes, vec![(NodeId(3), 1_000), (NodeId(4), 1_500)]);
    assert_eq!(outcome.faults.len(), 1);
}

#[test]
fn a_sweep_report_stops_at_the_first_failing_seed_and_says_how_to_replay_it() {
    let report = deposed_leader(raft("no-step-down")).sweep_report(0..50);
    let failure = report.expect_failure();
    assert_eq!(report.seeds_run, failure.seed + 1);
    assert!(!report.from_regressions);
    assert_eq!(failure.violations[0].checker, "leader-liveness");
    assert!(failure.stopped_early || failure.violations.len() == 1);
    let message = failure.failure().unwrap();
    assert!(
        message.starts_with(&format!(
            "tenure: seed {} broke leader-liveness\n",
            failure.seed
        )),
        "{message}"
    );
    assert!(message.ends_with(&format!(
        "replay this seed:\n  TENURE_SEED={} cargo test -p tenure \
         simulation::a_sweep_report_stops_at_the_first_failing_seed_and_says_how_to_replay_it",
        failure.seed
    )));
}

#[test]
fn a_counting_sweep_runs_every_seed_and_groups_failures_by_checker() {
    let sim = deposed_leader(raft("no-step-down"));
    let count = sim.sweep_count(0..6);
    assert_eq!(count.seeds_run, 6);
    let first = sim.sweep_report(0..6).expect_failure().seed;
    assert_eq!(count.failing_seeds.first(), Some(&first));
    let liveness = &count.by_checker["leader-liveness"];
    assert_eq!(liveness.first_seed, first);
    assert_eq!(liveness.first.checker, "leader-liveness");
    assert_eq!(count.failures_of("leader-liveness"), liveness.seeds.len());
    // every failing seed is counted under at least one checker, and no seed twice
    for seed in &count.failing_seeds {
        assert!(count.by_checker.values().any(|c| c.seeds.contains(seed)));
    }
    for c in count.by_checker.values() {
        let mut seeds = c.seeds.clone();
        seeds.dedup();
        assert_eq!(seeds, c.seeds);
    }
    let text = count.to_string();
    assert!(
        text.starts_with(&format!(
            "6 seeds, {} failing\n  ",
            count.failing_seeds.len()
        )),
        "{text}"
    );
    assert!(text.contains("leader-liveness: "), "{text}");

    let passing = raft("correct")
        .check("single-leader-per-term")
        .duration(secs(2))
        .sweep_count(0..3);
    assert!(passing.passed());
    assert_eq!(passing.to_string(), "3 seeds, 0 failing");
}

#[test]
fn a_passing_sweep_runs_every_seed() {
    let report = raft("correct")
        .check("single-leader-per-term")
        .duration(secs(2))
        .sweep_report(10..15);
    assert!(report.passed());
    assert_eq!(report.seeds_run, 5);
}

#[test]
fn custom_checkers_are_built_fresh_for_every_run() {
    let built = Arc::new(AtomicUsize::new(0));
    let counter = built.clone();
    struct Never;
    impl Checker for Never {
        fn name(&self) -> &'static str {
            "never"
        }
        fn on_record(&mut self, _: usize, _: &Record) -> Option<Violation> {
            None
        }
        fn finish(&mut self, _: &RunInfo) -> Option<Violation> {
            None
        }
    }
    let sim = raft("correct").duration(secs(1)).checker(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::new(Never)
    });
    sim.sweep(0..3);
    assert_eq!(built.load(Ordering::SeqCst), 3);
}

#[test]
fn run_to_end_judges_every_checker() {
    let stopped = deposed_leader(raft("no-step-down")).run_seed(0);
    let full = deposed_leader(raft("no-step-down"))
        .run_to_end()
        .run_seed(0);
    assert!(!full.stopped_early);
    assert_eq!(full.history.info.end, SimTime(15_000_000_000));
    assert_eq!(stopped.violations[0].checker, full.violations[0].checker);
}

#[test]
#[should_panic(
    expected = "tenure: check `single-leader`: unknown checker `single-leader`; known checkers:"
)]
fn an_unknown_checker_is_named() {
    let _ = raft("correct").check("single-leader");
}

#[test]
#[should_panic(expected = "tenure: check `leader-liveness`: withn: unknown field `withn`")]
fn a_bad_checker_parameter_is_named() {
    let _ = raft("correct").check_with(
        "leader-liveness",
        tenure::serde_json::json!({"withn": "1s"}),
    );
}

#[test]
#[should_panic(expected = "did you mean `single-leader-per-term`?")]
fn a_misspelt_checker_gets_a_suggestion() {
    let _ = raft("correct").check("single-leader-per-trem");
}

#[test]
#[should_panic(expected = "did you mean `within`?")]
fn a_misspelt_checker_parameter_gets_a_suggestion() {
    let _ = raft("correct").check_with(
        "leader-liveness",
        tenure::serde_json::json!({"withn": "1s"}),
    );
}

#[test]
#[should_panic(expected = "did you mean `chaos`?")]
fn a_misspelt_profile_gets_a_suggestion() {
    let _ = raft("correct").profile("chaoss");
}

#[test]
fn a_profile_draws_each_seeds_faults_from_the_seed() {
    let sim = raft("correct")
        .duration(secs(5))
        .profile("chaos")
        .check("single-leader-per-term");
    let outcomes: Vec<_> = (0..4).map(|seed| sim.run_seed(seed)).collect();
    for o in &outcomes {
        o.assert_ok();
        // The run is extended so the liveness phase after the heal fits.
        assert!(o.history.info.end >= SimTime(5_000_000_000));
    }
    assert!(outcomes.iter().any(|o| !o.faults.is_empty()));
    assert_ne!(outcomes[0].faults, outcomes[1].faults);
    let again = sim.run_seed(1);
    assert_eq!(again.faults, outcomes[1].faults);
    assert_eq!(again.history, outcomes[1].history);
}

#[test]
#[should_panic(
    expected = "tenure: unknown fault profile `chaotic`; known profiles: calm, partitions, clocks, pauses, crashes, chaos"
)]
fn an_unknown_profile_is_named() {
    let _ = raft("correct").profile("chaotic");
}

#[test]
fn an_outcome_has_metrics_and_an_audit_log() {
    let outcome = raft("correct")
        .faults(|s| {
            s.at(secs(3), |c| {
                if let Some(leader) = c.leader() {
                    c.crash(leader);
                }
            })
        })
        .run_seed(7);
    let m = outcome.metrics("server");
    let e = m.elections.expect("raft elects");
    assert!(e.terms_with_leader >= 2, "{e:?}");
    assert!(e.leaderless_ms > 0.0);
    assert!(m.locks.is_none());
    let log = outcome.audit_log();
    // The first leader, its crash, the next leader, at least.
    assert!(log.entries.len() >= 3, "{:?}", log.entries);
    let verified = tenure::audit::verify(&log.to_jsonl(), Some(log.head()))
        .expect("a log")
        .expect("untouched");
    assert_eq!(verified.entries, log.entries.len());
}
