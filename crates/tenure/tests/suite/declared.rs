//! The library's path for what a protocol or a test declares: `Simulation::new` reads
//! the protocol's `Configurable` declarations (its promised bounds reach the checker
//! with their derivation; a test's own parameters replace them key by key), a protocol
//! that declares nothing can be given assumptions, promises and a transport, and a check
//! that judges nothing is vacuous, never a pass. (The CLI's paths: the tenure-cli test
//! `declared.rs`, with the same sentinels.)

use tenure::prelude::*;
use tenure::serde_json::json;
use tenure::{Assumptions, Configurable, Fault, FaultEvent, Limit, Promise, Transport};
use tenure_protocols::bully::{Bully, BullyParams};
use tenure_protocols::raft::Raft;
use tenure_protocols::redis_lock::RedisLock;

/// Bully with `answer_timeout`, split by a partition from 2s to 8s.
fn split_brain(answer_timeout: &str) -> Simulation<Bully> {
    let cluster = Cluster::uniform("node", 5);
    let params: BullyParams =
        tenure::serde_json::from_value(json!({ "answer_timeout": answer_timeout })).unwrap();
    let config = Bully::configure_named(params, "correct", &cluster).unwrap();
    Simulation::<Bully>::new(cluster, config)
        .duration(secs(12))
        // As data (not closures), so the run's faults are judged against the assumptions.
        .timeline(vec![
            FaultEvent {
                at: secs(2),
                fault: Fault::Partition {
                    groups: vec![
                        vec![NodeId(0), NodeId(1), NodeId(2)],
                        vec![NodeId(3), NodeId(4)],
                    ],
                },
            },
            FaultEvent {
                at: secs(8),
                fault: Fault::Heal {},
            },
        ])
}

#[test]
fn a_protocol_s_declared_bound_reaches_the_checker_with_its_derivation() {
    let sim = split_brain("246ms").check("single-leader-at-a-time");
    assert_eq!(
        sim.check_params("single-leader-at-a-time").unwrap()["max_overlap"],
        "123ms"
    );
    let outcome = sim.run_seed(1);
    let v = &outcome.violations[0];
    assert!(
        v.message.contains(
            "(tolerated overlap 123ms) [bound 123ms = one message delay for the \
             announcement: answer timeout 246ms / 2 (a round trip)]"
        ),
        "{}",
        v.message
    );
    // A partition is beyond bully's assumptions, and the failure says so.
    assert!(
        outcome
            .beyond
            .iter()
            .any(|b| b.contains("reliable-network")),
        "{:?}",
        outcome.beyond
    );
}

#[test]
fn a_test_s_own_tolerance_replaces_the_declared_one_unchanged() {
    let outcome = split_brain("246ms")
        .check_with("single-leader-at-a-time", json!({"max_overlap": "77ms"}))
        .run_seed(1);
    assert!(
        outcome.violations[0]
            .message
            .contains("(tolerated overlap 77ms)"),
        "{}",
        outcome.violations[0].message
    );
}

fn raft() -> (Cluster, <Raft as tenure::Protocol>::Config) {
    let cluster = Cluster::uniform("server", 3);
    let config = Raft::configure_named(Default::default(), "correct", &cluster).unwrap();
    (cluster, config)
}

#[test]
fn a_check_with_nothing_to_judge_is_vacuous_not_passed() {
    let (cluster, config) = raft();
    let sim = Simulation::<Raft>::new(cluster, config)
        .named("vacuous_sweep")
        .duration(secs(3))
        .check("single-leader-per-term")
        .check("mutual-exclusion");
    let outcome = sim.run_seed(1);
    assert!(outcome.violations.is_empty());
    assert!(!outcome.passed(), "a vacuous check has not passed");
    assert_eq!(
        outcome.vacuous_messages(),
        vec![
            "mutual-exclusion judged no actions: raft records no `Acts`; record `Acts { \
             resource, token }` where a client acts on the resource as its lock holder, or \
             check `mutual-exclusion-belief`"
                .to_string()
        ]
    );
    assert_eq!(
        outcome.judged[0].summary,
        "1 leadership in 1 term by 1 node"
    );
    let failure = std::panic::catch_unwind(|| outcome.assert_ok()).unwrap_err();
    let text = failure.downcast_ref::<String>().unwrap();
    assert!(text.contains("not judged (not a pass)"), "{text}");
    // A sweep stops after its first 20 seeds and says why.
    let report = sim.sweep_report(0..1000);
    assert_eq!(report.seeds_run, 20);
    assert!(!report.passed());
    assert!(
        report.vacuous[0].ends_with("(and in every one of the first 20 seeds)"),
        "{:?}",
        report.vacuous
    );
    let count = sim.sweep_count(0..30);
    assert!(!count.passed() && !count.vacuous.is_empty());
}

#[test]
fn a_protocol_that_declares_nothing_can_be_given_its_assumptions_and_transport() {
    let (cluster, config) = raft();
    let max_pause = millis(20);
    let sim = Simulation::<Raft>::undeclared(cluster, config)
        .assumptions(Assumptions::new().with_max_pause(Limit::new(max_pause, "a test's sentinel")))
        .promise(Promise::new("leader-liveness").within(secs(7), "a test's sentinel bound"))
        .transport(Transport::Stream)
        .duration(secs(10))
        .profile("pauses")
        .check("leader-liveness");
    assert_eq!(sim.check_params("leader-liveness").unwrap()["within"], "7s");
    assert_eq!(sim.base().network.mode, Some(tenure_scenario_mode()));
    for seed in 0..20 {
        let outcome = sim.run_seed(seed);
        outcome.assert_ok();
        for e in &outcome.faults {
            if let tenure::Fault::Pause { duration, .. } = e.fault {
                assert!(duration <= max_pause, "seed {seed}: {e}");
            }
        }
    }
}

fn tenure_scenario_mode() -> tenure_scenario::NetworkMode {
    tenure_scenario::NetworkMode::Stream
}

/// `check` judges nothing in a run of `P` on its default cluster: the outcome names the
/// missing observation, and a sweep stops after its first 20 seeds.
fn vacuous_on<P: Configurable>(judged: &str, check: &str, missing: &str) {
    let roles: Vec<tenure::RoleSpec> = P::info()
        .roles
        .iter()
        .map(|r| tenure::RoleSpec::new(r.name.to_string(), r.default_count))
        .collect();
    let cluster = Cluster::new(roles).unwrap();
    let config = P::configure_named(Default::default(), "correct", &cluster).unwrap();
    let sim = Simulation::<P>::new(cluster, config)
        .named("vacuous_on")
        .duration(secs(3))
        .check(judged)
        .check(check);
    let outcome = sim.run_seed(1);
    assert!(outcome.violations.is_empty(), "{:?}", outcome.violations);
    let messages = outcome.vacuous_messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].starts_with(&format!("{check} judged no "))
            && messages[0].contains(&format!("{} records no `{missing}`", P::info().name)),
        "{messages:?}"
    );
    let report = sim.sweep_report(0..1000);
    assert_eq!(report.seeds_run, 20);
    assert_eq!(report.vacuous.len(), 1);
}

#[test]
fn lease_safety_without_serves_mutual_exclusion_without_acts_and_linearizability_without_operations_are_vacuous(
) {
    vacuous_on::<RedisLock>("mutual-exclusion", "lease-safety", "Serves");
    vacuous_on::<Raft>("single-leader-per-term", "mutual-exclusion", "Acts");
    vacuous_on::<Raft>("single-leader-per-term", "linearizability", "Invoke");
}
