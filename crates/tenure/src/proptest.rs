//! A proptest [`Strategy`] for fault timelines (feature `proptest`), for those who want
//! proptest's own shrinking: it shrinks towards fewer, shorter, earlier episodes.
//!
//! ```ignore
//! proptest! {
//!     #[test]
//!     fn one_leader_per_term(faults in tenure::proptest::timeline(&cluster(), secs(20))) {
//!         simulation().timeline(faults).run_seed(1).assert_ok();
//!     }
//! }
//! ```

use proptest::prelude::*;
use std::time::Duration;
use tenure_core::{Cluster, NodeId, SignedDuration};
use tenure_scenario::{Fault, FaultEvent, NodeSel};

/// One fault and, for those that last, its end.
#[derive(Clone, Debug)]
enum Episode {
    /// Crash, restart `length` later.
    Crash,
    /// Isolate, heal `length` later.
    Isolate,
    /// Pause for `length`.
    Pause,
    /// Step the wall clock by `length` forward or back.
    ClockJump { back: bool },
    /// Cut the link to `other`, heal `length` later.
    Cut { other: u32 },
}

/// Up to 8 fault episodes (crash and restart, isolation, a cut link, a pause, a clock
/// jump) on `cluster`'s nodes, each starting in the first three quarters of `duration`
/// and lasting up to a quarter of it; events in time order.
pub fn timeline(cluster: &Cluster, duration: Duration) -> impl Strategy<Value = Vec<FaultEvent>> {
    let nodes = cluster.size() as u32;
    let span_ms = (duration.as_millis() as u64).max(4);
    let episode = (
        0..span_ms * 3 / 4,
        1..=span_ms / 4,
        0..nodes,
        prop_oneof![
            Just(Episode::Crash),
            Just(Episode::Isolate),
            Just(Episode::Pause),
            any::<bool>().prop_map(|back| Episode::ClockJump { back }),
            (0..nodes).prop_map(|other| Episode::Cut { other }),
        ],
    );
    proptest::collection::vec(episode, 0..8).prop_map(move |episodes| {
        let mut events = Vec::new();
        for (start_ms, length_ms, node, episode) in episodes {
            let at = Duration::from_millis(start_ms);
            let end = Duration::from_millis(start_ms + length_ms);
            let length = Duration::from_millis(length_ms);
            let sel = NodeSel::Id(node);
            let mut push = |at, fault| events.push(FaultEvent { at, fault });
            match episode {
                Episode::Crash => {
                    push(at, Fault::Crash { node: sel });
                    push(end, Fault::Restart { node: sel });
                }
                Episode::Isolate => {
                    push(at, Fault::Isolate { node: sel });
                    push(end, Fault::Heal {});
                }
                Episode::Pause => push(
                    at,
                    Fault::Pause {
                        node: sel,
                        duration: length,
                    },
                ),
                Episode::ClockJump { back } => {
                    let ns = length.as_nanos() as i64;
                    let by = SignedDuration(if back { -ns } else { ns });
                    push(at, Fault::ClockJump { node: sel, by });
                }
                Episode::Cut { other } if other != node => {
                    push(
                        at,
                        Fault::Cut {
                            nodes: [NodeId(node), NodeId(other)],
                        },
                    );
                    push(end, Fault::Heal {});
                }
                Episode::Cut { .. } => {} // a node cannot be cut from itself
            }
        }
        events.sort_by_key(|e| e.at);
        events
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn timelines_are_in_order_on_cluster_nodes_within_the_run() {
        let cluster = Cluster::uniform("node", 3);
        let strategy = timeline(&cluster, Duration::from_secs(20));
        let mut runner = TestRunner::deterministic();
        for _ in 0..100 {
            let events = strategy.new_tree(&mut runner).unwrap().current();
            assert!(events.windows(2).all(|w| w[0].at <= w[1].at));
            for e in &events {
                assert!(e.at < Duration::from_secs(20), "{e:?}");
                if let Fault::Crash { node } | Fault::Restart { node } | Fault::Isolate { node } =
                    &e.fault
                {
                    assert!(node.id().is_some_and(|n| cluster.contains(n)), "{e:?}");
                }
            }
        }
    }
}
