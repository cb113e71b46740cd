//! Single-decree Paxos (issue 35): `forget-promise` (one crash, depth 18) and
//! `shared-slot` (depth 27) have bounds of their own, under which breadth-first search
//! finds their shortest counterexamples.

use crate::{shortest, zoo};

/// The default query of `forget-promise` is the one that reaches its bug: a crash, and
/// the depth of its 18 steps, with room for every state to depth 17. The other
/// variants keep the protocol's bounds, with no crash.
#[test]
fn forget_promise_is_in_scope_with_a_crash_and_the_depth_of_its_counterexample() {
    let models = zoo();
    let entry = models.lookup("paxos").expect("paxos is in the registry");
    assert!(entry.in_scope("forget-promise"));
    let q = models.query("paxos", "forget-promise").unwrap();
    assert_eq!((q.bounds.max_crashes, q.bounds.max_depth), (1, 18));
    assert!(q.bounds.max_states > 28_372_768);
    let q = models.query("paxos", "shared-slot").unwrap();
    assert_eq!((q.bounds.max_crashes, q.bounds.max_depth), (0, 27));
    let q = models.query("paxos", "same-ballot").unwrap();
    assert_eq!((q.bounds.max_crashes, q.bounds.max_depth), (0, 16));
}

/// `shared-slot` with its own bounds: the second decision takes the first's value, a
/// shortest counterexample at depth 27 (about 10 seconds in a release build).
#[test]
#[ignore = "400,000 states: run with --release -- --ignored"]
fn breadth_first_search_finds_shared_slots_shortest_counterexample() {
    let (report, cex) = shortest("paxos", "shared-slot", "validity", 27);
    assert_eq!(report.unique_states, 404_680);
    assert!(cex.message.contains("for instance 2"), "{cex}");
}

/// Breadth-first search to `forget-promise`'s own bounds: every state to depth 17
/// passes, and the first violation is at 18, a shortest counterexample. About 10
/// minutes and 1.1 GB in a release build.
#[test]
#[ignore = "28 million states: run with --release -- --ignored"]
fn breadth_first_search_finds_forget_promises_shortest_counterexample() {
    let (report, cex) = shortest("paxos", "forget-promise", "agreement", 18);
    assert_eq!(report.unique_states, 28_372_768);
    let crash = cex
        .steps
        .iter()
        .position(|s| s.ends_with("crashed"))
        .unwrap();
    assert!(cex.steps[crash + 1].ends_with("restarted"), "{cex}");
}
