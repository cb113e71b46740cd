//! Bully explored on 3 nodes. Bully's safety rests on timeouts being right, so with
//! free timing split brain is found at once; with `TimerModel::Quiet` (timeouts longer
//! than any round trip) it is safe unless a message is lost.

use crate::zoo;
use tenure_core::Cluster;
use tenure_models::property::{copies_in_flight_at_most, one_leader_at_a_time};
use tenure_models::{Bounds, Explorer, Report, TimerModel};
use tenure_protocols::bully::{Bully, BullyConfig};

fn explore(max_drops: u32, timers: TimerModel) -> Report {
    let bounds = Bounds::DEFAULT
        .with_max_drops(max_drops)
        .with_timers(timers);
    Explorer::<Bully>::new(BullyConfig::default(), Cluster::uniform("node", 3), bounds)
        .invariant("one-leader-at-a-time", one_leader_at_a_time())
        .within(copies_in_flight_at_most(1))
        .explore()
}

#[test]
fn quiet_timers_and_a_reliable_network_keep_one_coordinator() {
    let report = explore(0, TimerModel::Quiet);
    assert!(report.counterexample.is_none(), "{report}");
    assert!(report.complete && report.depth_cut == 0, "{report}");
    assert_eq!(report.unique_states, 268);
}

#[test]
fn one_lost_message_gives_split_brain() {
    let report = explore(1, TimerModel::Quiet);
    println!("{report}");
    let cex = report.counterexample.clone().expect("split brain");
    assert_eq!(cex.property, "one-leader-at-a-time");
    assert_eq!(cex.depth, 14);
    assert!(cex.steps[12].ends_with("dropped"), "{cex}");
    assert!(cex.steps[13].ends_with("timer AnswerWait fired"), "{cex}");
}

#[test]
fn free_timing_gives_split_brain_without_any_loss() {
    let cex = explore(0, TimerModel::Free)
        .counterexample
        .expect("a timeout that fires early is a wrong failure detector");
    assert_eq!(cex.depth, 1);
    assert_eq!(cex.steps, vec!["n0 timer AnswerWait fired"]);
}

/// The same through the registry (as `tenure check-model --protocol bully --drops 1`).
#[test]
fn registry_finds_split_brain_with_one_lost_message() {
    let mut query = zoo().query("bully", "correct").unwrap();
    assert!(zoo().check_model(&query).unwrap().counterexample.is_none());
    query.bounds.max_drops = 1;
    let cex = zoo()
        .check_model(&query)
        .unwrap()
        .counterexample
        .expect("split brain");
    assert_eq!(
        (cex.property.as_str(), cex.depth),
        ("one-leader-at-a-time", 14)
    );
}
