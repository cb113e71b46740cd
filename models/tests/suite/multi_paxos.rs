//! Multi-Paxos (issue 35) on three servers with no clients, each leader proposing a
//! no-op on leading: breadth-first search finds `skip-phase1`'s shortest
//! counterexample (10 steps), `correct` passes the same bounds, and random walks find
//! `skip-phase1` too.

use crate::{shortest, zoo};
use tenure_models::registry::WALK_DEPTH;

/// The default query: three servers, depth 10, ballots up to round 2, two copies of a
/// message in flight (a new leader's accepts and its first heartbeat's re-sends), the
/// no-op on leading; `no-sync-accept` is out of scope (a power loss).
#[test]
fn multi_paxos_declares_its_model_and_skip_phase1_is_found_by_walks() {
    let models = zoo();
    let entry = models
        .lookup("multi-paxos")
        .expect("multi-paxos is in the registry");
    assert!(entry.in_scope("skip-phase1"));
    assert!(!entry.in_scope("no-sync-accept"));
    assert_eq!(entry.spec().copies, 2);
    let q = models.query("multi-paxos", "skip-phase1").unwrap();
    assert_eq!((q.bounds.max_depth, q.max_term), (10, 2));
    assert_eq!(q.params["noop_on_lead"], serde_json::json!(true));

    let q = models
        .query_for_walks("multi-paxos", "skip-phase1")
        .unwrap();
    let report = models.walk_model_to(&q, 0..200, WALK_DEPTH).unwrap();
    let failure = report.failure.expect("a walk finds skip-phase1");
    assert_eq!(failure.counterexample.property, "state-machine-safety");
}

/// Every state to depth 9 passes and a state at depth 10 breaks state-machine-safety:
/// a shortest counterexample, in which the second leader never saw slot 1. About 5
/// seconds in a release build.
#[test]
#[ignore = "376,006 states: run with --release -- --ignored"]
fn breadth_first_search_finds_skip_phase1s_shortest_counterexample() {
    let (report, cex) = shortest("multi-paxos", "skip-phase1", "state-machine-safety", 10);
    assert_eq!(report.unique_states, 376_006);
    assert!(
        cex.steps.iter().any(|s| s == "n2 timer Election fired"),
        "{cex}"
    );
}

/// The negative control: `correct` re-proposes what the promises report, and every
/// state to depth 10 passes (1.4 million states, about 30 seconds in a release build).
#[test]
#[ignore = "1.4 million states: run with --release -- --ignored"]
fn breadth_first_search_passes_correct_multi_paxos_to_the_same_depth() {
    let models = zoo();
    let q = models.query("multi-paxos", "correct").unwrap();
    let report = models.check_model(&q).unwrap();
    println!("{report}");
    assert!(report.counterexample.is_none(), "{report}");
    assert_eq!(report.unique_states, 1_412_335);
}
