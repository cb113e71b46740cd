//! Whole-cluster runs on the test driver: the highest live id leads, and a partition
//! makes two coordinators (split brain, inherent to Bully).

use super::*;
use crate::testkit::Net;

const SECOND: Duration = Duration::from_secs(1);

fn net(seed: u64) -> Net<Bully> {
    Net::start_with_latency(
        BullyConfig::default(),
        Cluster::uniform("node", 5),
        seed,
        Duration::from_millis(5),
    )
}

/// `leader` leads and every other live node follows it.
fn assert_led_by(net: &Net<Bully>, leader: u32) {
    for (node, obs) in net.beliefs() {
        let expected = if node.0 == leader {
            Observation::Leader { term: 0 }
        } else {
            Observation::Follower {
                term: 0,
                leader: Some(NodeId(leader)),
            }
        };
        assert_eq!(obs, expected, "{node}: {:?}", net.beliefs());
    }
}

#[test]
fn the_highest_id_leads() {
    let mut net = net(1);
    net.run(SECOND);
    assert_led_by(&net, 4);
}

#[test]
fn when_the_coordinator_crashes_the_next_highest_takes_over_and_yields_back() {
    let mut net = net(1);
    net.run(SECOND);
    net.crash(4);
    net.run(SECOND);
    assert_led_by(&net, 3);
    net.restart(4);
    net.run(SECOND);
    assert_led_by(&net, 4);
}

#[test]
fn a_partition_makes_two_coordinators_until_the_heal() {
    let mut net = net(1);
    net.run(SECOND);
    net.isolate(4);
    net.run(SECOND);
    assert_eq!(net.leaders(), [NodeId(3), NodeId(4)]);
    net.heal();
    net.run(SECOND);
    assert_led_by(&net, 4);
}
