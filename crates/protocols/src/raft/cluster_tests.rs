//! Whole-cluster runs on the test driver: Raft converges, and each variant and option
//! shows its effect.

use super::*;
use crate::testkit::Net;
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

fn net(config: RaftConfig, seed: u64) -> Net<Raft> {
    Net::start_with_latency(
        config,
        Cluster::uniform("server", 5),
        seed,
        Duration::from_millis(5),
    )
}

/// Exactly one leader, and every other node follows it in its term.
fn assert_settled(net: &Net<Raft>) -> (NodeId, u64) {
    let leaders = net.leaders();
    assert_eq!(leaders.len(), 1, "{:?}", net.beliefs());
    let leader = leaders[0];
    let term = net.node(leader.0).term();
    for (node, obs) in net.beliefs() {
        if node != leader {
            let expected = Observation::Follower {
                term,
                leader: Some(leader),
            };
            assert_eq!(obs, expected, "{node}");
        }
    }
    (leader, term)
}

fn assert_one_leader_per_term(net: &Net<Raft>) {
    for (term, leaders) in net.leaders_by_term() {
        assert_eq!(leaders.len(), 1, "term {term}: {leaders:?}");
    }
}

#[test]
fn a_calm_cluster_elects_one_leader() {
    for seed in 0..20 {
        let mut net = net(RaftConfig::new(RaftVariant::Correct), seed);
        net.run(2 * SECOND);
        assert_settled(&net);
        assert_one_leader_per_term(&net);
    }
}

#[test]
fn an_isolated_leader_is_replaced_and_steps_down_after_the_heal() {
    let mut net = net(RaftConfig::new(RaftVariant::Correct), 3);
    net.run(SECOND);
    let (old, old_term) = assert_settled(&net);
    net.isolate(old.0);
    net.run(SECOND);
    // Two nodes believe they lead at once: Raft promises one per term, not per instant.
    assert_eq!(net.leaders().len(), 2);
    net.heal();
    net.run(SECOND);
    let (new, term) = assert_settled(&net);
    assert_ne!(new, old);
    assert!(term > old_term);
    assert_one_leader_per_term(&net);
}

#[test]
fn a_no_step_down_leader_keeps_leading_after_the_heal() {
    let mut net = net(RaftConfig::new(RaftVariant::NoStepDown), 3);
    net.run(SECOND);
    let old = net.leaders()[0];
    net.isolate(old.0);
    net.run(SECOND);
    net.heal();
    net.run(3 * SECOND);
    let leaders = net.leaders();
    assert!(leaders.len() >= 2 && leaders.contains(&old), "{leaders:?}");
}

#[test]
fn check_quorum_steps_an_isolated_leader_down() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.check_quorum = true;
    let mut net = net(config, 3);
    net.run(SECOND);
    let (old, _) = assert_settled(&net);
    net.isolate(old.0);
    net.run(SECOND);
    let leaders = net.leaders();
    assert_eq!(leaders.len(), 1);
    assert_ne!(leaders[0], old);
}

#[test]
fn without_pre_vote_a_returning_follower_deposes_the_leader() {
    let mut net = net(RaftConfig::new(RaftVariant::Correct), 5);
    net.run(SECOND);
    let (leader, term) = assert_settled(&net);
    let follower = (leader.0 + 1) % 5;
    net.isolate(follower);
    net.run(2 * SECOND);
    net.heal();
    net.run(SECOND);
    let (_, new_term) = assert_settled(&net);
    assert!(
        new_term > term,
        "the returning node's inflated term forced an election"
    );
}

#[test]
fn with_pre_vote_a_returning_follower_does_not_disturb_the_leader() {
    let mut config = RaftConfig::new(RaftVariant::Correct);
    config.pre_vote = true;
    let mut net = net(config, 5);
    net.run(SECOND);
    let (leader, term) = assert_settled(&net);
    let follower = (leader.0 + 1) % 5;
    net.isolate(follower);
    net.run(2 * SECOND);
    net.heal();
    net.run(SECOND);
    assert_eq!(assert_settled(&net), (leader, term));
}

#[test]
fn only_nodes_with_up_to_date_logs_can_win() {
    for seed in 0..10 {
        let mut config = RaftConfig::new(RaftVariant::Correct);
        // n1..n3 (a majority) hold [1, 1]: n0 and n4 can gather at most two votes.
        for node in 1..=3 {
            config.logs.insert(NodeId(node), vec![1, 1]);
        }
        config.logs.insert(NodeId(4), vec![1]);
        let mut net = net(config, seed);
        net.run(2 * SECOND);
        let (leader, _) = assert_settled(&net);
        assert!((1..=3).contains(&leader.0), "seed {seed}: {leader}");
    }
}

#[test]
fn a_restarted_node_rejoins_as_a_follower() {
    let mut net = net(RaftConfig::new(RaftVariant::Correct), 8);
    net.run(SECOND);
    let (leader, term) = assert_settled(&net);
    let other = (leader.0 + 2) % 5;
    net.crash(other);
    net.run(SECOND / 2);
    net.restart(other);
    net.run(SECOND);
    assert_eq!(assert_settled(&net), (leader, term));
}
