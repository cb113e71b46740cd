//! Raft election explored exhaustively on 3 servers: the broken variants are found
//! with a shortest counterexample, the correct one passes within stated bounds.
//!
//! Model: clocks frozen (Raft stores leader-contact readings; see `ClockModel`), only
//! `Leader` observations tell paths apart (what single-leader-per-term judges), at most
//! one copy of each message in flight (heartbeats would otherwise pile up), and terms
//! bounded through the stored `term`.

use crate::zoo;
use tenure_core::Cluster;
use tenure_models::property::{
    checker, copies_in_flight_at_most, steps_down_on_higher_term, stored_at_most,
};
use tenure_models::{Bounds, ClockModel, Explorer, SeenModel};
use tenure_protocols::raft::{Raft, RaftConfig, RaftMsg, RaftVariant, TERM_KEY};

fn bounds(max_crashes: u32, max_depth: usize) -> Bounds {
    Bounds::DEFAULT
        .with_max_crashes(max_crashes)
        .with_max_depth(max_depth)
        .with_clock(ClockModel::Frozen)
        .with_seen(SeenModel::Leaders)
}

fn raft(variant: RaftVariant, bounds: Bounds, max_term: u64) -> Explorer<Raft> {
    let cluster = Cluster::uniform("server", 3);
    let per_term = checker("single-leader-per-term", &serde_json::Value::Null, &cluster);
    Explorer::new(RaftConfig::new(variant), cluster, bounds)
        .check(per_term.expect("known checker"))
        .step_invariant(
            "steps-down-on-higher-term",
            steps_down_on_higher_term(|m: &RaftMsg| Some(m.term())),
        )
        .within(stored_at_most(TERM_KEY, max_term))
        .within(copies_in_flight_at_most(1))
}

/// n0 wins term 1 with n1's vote, crashes, restarts without its vote for itself, and
/// votes n2 in for the same term.
#[test]
fn forget_vote_elects_two_leaders_in_one_term() {
    let report = raft(RaftVariant::ForgetVote, bounds(1, 40), 1).explore();
    let cex = report
        .counterexample
        .clone()
        .expect("forget-vote is broken");
    println!("{report}");
    assert_eq!(cex.property, "single-leader-per-term");
    assert_eq!(
        cex.message,
        "n0 and n2 both believed they led term 1 (n0 from 0.003_000s, n2 from 0.008_000s)"
    );
    assert_eq!(cex.depth, 8);
    assert_eq!(cex.steps[4], "n0 crashed");
    assert_eq!(cex.steps[5], "n0 restarted");
    assert_eq!(
        cex.steps[7],
        "n0 -> n2 RequestVoteReply { term: 1, granted: true, pre_vote: false } delivered"
    );
}

/// Without crashes forget-vote is safe: the bug needs the restart.
#[test]
fn forget_vote_without_crashes_passes() {
    let report = raft(RaftVariant::ForgetVote, bounds(0, 40), 1).explore();
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
}

/// n0 leads term 1; n1 times out and asks n0 for a term-2 vote; n0 keeps leading.
#[test]
fn no_step_down_keeps_leading_past_a_higher_term() {
    let report = raft(RaftVariant::NoStepDown, bounds(0, 40), 2).explore();
    let cex = report
        .counterexample
        .clone()
        .expect("no-step-down is broken");
    println!("{report}");
    assert_eq!(cex.property, "steps-down-on-higher-term");
    assert_eq!(cex.depth, 5);
    assert_eq!(
        cex.steps,
        vec![
            "n0 timer Election fired",
            "n0 -> n1 RequestVote { term: 1, last_log_index: 0, last_log_term: 0, pre_vote: false } delivered",
            "n1 -> n0 RequestVoteReply { term: 1, granted: true, pre_vote: false } delivered",
            "n1 timer Election fired",
            "n1 -> n0 RequestVote { term: 2, last_log_index: 0, last_log_term: 0, pre_vote: false } delivered",
        ]
    );
}

/// Every behaviour with terms up to 1 and one crash: complete, nothing cut by depth.
/// The exact count is pinned so that a change in the state space is noticed.
#[test]
fn correct_raft_passes_terms_1_one_crash_exhaustively() {
    let report = raft(RaftVariant::Correct, bounds(1, 40), 1).explore();
    println!("{report}");
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
    assert_eq!(report.unique_states, 35_177);
    assert_eq!(report.max_depth_reached, 19);
}

/// The registry's default for raft: terms up to 2 and one crash, to depth 8 (the full
/// space at term 2 is beyond a unit test: more than 3 million states).
#[test]
fn correct_raft_passes_the_registry_default_terms_2_one_crash_to_depth_8() {
    let query = zoo().query("raft", "correct").unwrap();
    assert_eq!(
        (
            query.max_term,
            query.bounds.max_crashes,
            query.bounds.max_depth
        ),
        (2, 1, 8)
    );
    let report = zoo().check_model(&query).unwrap();
    println!("{report}");
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete);
    assert_eq!(report.unique_states, 69_959);
}

/// The registry finds both broken variants with its defaults, at the same depths as
/// the hand-built explorers above.
#[test]
fn registry_defaults_find_both_broken_variants() {
    let forget = zoo()
        .check_model(&zoo().query("raft", "forget-vote").unwrap())
        .unwrap();
    let cex = forget.counterexample.expect("forget-vote is broken");
    assert_eq!(
        (cex.property.as_str(), cex.depth),
        ("single-leader-per-term", 8)
    );
    let no_step = zoo()
        .check_model(&zoo().query("raft", "no-step-down").unwrap())
        .unwrap();
    let cex = no_step.counterexample.expect("no-step-down is broken");
    assert_eq!(
        (cex.property.as_str(), cex.depth),
        ("steps-down-on-higher-term", 5)
    );
}

#[test]
fn random_walks_find_forget_vote_and_pass_correct() {
    let broken = raft(RaftVariant::ForgetVote, bounds(1, 40), 3).walk(0..2_000, 40);
    let failure = broken.failure.expect("a walk finds forget-vote");
    assert_eq!(failure.counterexample.property, "single-leader-per-term");
    let correct = raft(RaftVariant::Correct, bounds(1, 40), 3).walk(0..300, 40);
    assert!(correct.failure.is_none());
}
