//! `check-model` explores the ZooKeeper-like ensemble (`zookeeper-ensemble`) on three
//! servers and two register clients: random walks find `read-without-sync` (a plain read
//! from a follower that has not applied a write another client was told is committed),
//! with a counterexample that breaks `linearizability`, and find nothing in `correct`.

use crate::zoo;
use tenure_models::registry::WALK_DEPTH;

#[test]
fn walks_find_a_stale_plain_read_on_three_servers_and_two_clients() {
    let models = zoo();
    let q = models
        .query_for_walks("zookeeper-ensemble", "read-without-sync")
        .unwrap();
    assert_eq!(q.cluster.count("server"), 3);
    assert_eq!(q.cluster.count("register"), 2);
    let walk = models.walk_model_to(&q, 0..5_000, WALK_DEPTH).unwrap();
    let failure = walk.failure.expect("a walk finds the stale read");
    let cex = failure.counterexample;
    assert_eq!(cex.property, "linearizability", "{cex}");
    assert_eq!(cex.steps.len(), cex.depth);
    // What cannot be linearized is a read.
    assert!(cex.message.contains("read(\"k"), "{cex}");
}

/// The negative control: with `sync` before reading another client's key, no walk
/// breaks linearizability.
#[test]
fn walks_find_nothing_in_the_correct_ensemble() {
    let models = zoo();
    let q = models
        .query_for_walks("zookeeper-ensemble", "correct")
        .unwrap();
    let walk = models.walk_model_to(&q, 0..500, WALK_DEPTH).unwrap();
    assert!(
        walk.failure.is_none(),
        "{:?}",
        walk.failure.map(|f| f.counterexample.to_string())
    );
}
