//! Processing time (`Sim::processing`) and the `slow` fault: each handler takes
//! simulated CPU time during which the node's later events wait; `slow` multiplies a
//! node's processing time and fsync latency for a while (gray failure).
//!
//! The protocol under test is `Burst`: node 0 sends five messages to node 1 at once at
//! 1 ms (1 to 5; in a cluster of three, node 2 sends 11 to 15 too); node 1 notes when
//! it handles each, and, with `sync`, writes and syncs it and notes when the sync is
//! done.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, StorageExt as _};
use tenure_sim::{trace_hash, RunOutput, Sim};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Burst {
    me: NodeId,
    sync: bool,
}

impl Protocol for Burst {
    type Msg = u32;
    type Timer = ();
    type Config = bool;

    fn new(sync: &bool, me: NodeId, _cluster: &Cluster) -> Self {
        Burst { me, sync: *sync }
    }

    fn on_start(&mut self, env: &mut dyn Env<u32, ()>) {
        if self.me != NodeId(1) {
            env.set_timer((), ms(1));
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<u32, ()>, _from: NodeId, msg: u32) {
        env.observe(note(format!("got {msg}")));
        if self.sync {
            env.store(&format!("m{msg}"), &msg);
            env.sync().expect("no disk errors here");
            env.observe(note(format!("synced {msg}")));
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<u32, ()>, _timer: ()) {
        let base = if self.me == NodeId(0) { 0 } else { 10 };
        for k in 1..=5 {
            env.send(NodeId(1), base + k);
        }
    }
}

fn note(text: String) -> Observation {
    Observation::Note { text }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn burst(sync: bool) -> Sim<Burst> {
    Sim::<Burst>::new(Cluster::uniform("node", 2), sync, 3)
        .duration(ms(1000))
        .network(tenure_sim::LinkSettings {
            latency: tenure_sim::net::Delay::uniform(ms(2), ms(2)),
            ..Default::default()
        })
        .trace(true)
}

/// True times (ns) of node 1's notes starting with `prefix`.
fn times(out: &RunOutput, prefix: &str) -> Vec<u64> {
    out.history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } if text.starts_with(prefix) => Some(r.time.as_nanos()),
            _ => None,
        })
        .collect()
}

fn gaps(t: &[u64]) -> Vec<u64> {
    t.windows(2).map(|w| (w[1] - w[0]) / 1_000_000).collect()
}

#[test]
fn later_messages_wait_while_a_handler_is_busy() {
    // Without processing time the five are handled at the same instant...
    let got = times(&burst(false).run(), "got");
    assert_eq!(got.len(), 5);
    assert_eq!(gaps(&got), vec![0, 0, 0, 0]);
    // ...with 10 ms each, 10 ms apart.
    let got = times(
        &burst(false).processing(NodeId(1), ms(10), ms(10)).run(),
        "got",
    );
    assert_eq!(gaps(&got), vec![10, 10, 10, 10]);
    // A range: each gap within it, drawn from the seed.
    let got = times(
        &burst(false).processing(NodeId(1), ms(5), ms(20)).run(),
        "got",
    );
    assert!(
        gaps(&got).iter().all(|g| (5..=21).contains(g)),
        "{:?}",
        gaps(&got)
    );
}

#[test]
fn slow_multiplies_processing_time_for_its_duration() {
    let out = burst(false)
        .processing(NodeId(1), ms(10), ms(10))
        .at(Duration::ZERO, |c| c.slow(NodeId(1), 4.0, ms(100)))
        .run();
    let got = times(&out, "got");
    // Handled at 3 ms, then 40 ms apart while slow (until 100 ms), 10 ms after.
    assert_eq!(gaps(&got), vec![40, 40, 10, 10], "{got:?}");
}

#[test]
fn slow_multiplies_fsync_latency_too() {
    let synced = |slow: bool| {
        let mut sim = burst(true).fsync(NodeId(1), ms(5), ms(5));
        if slow {
            sim = sim.at(Duration::ZERO, |c| c.slow(NodeId(1), 3.0, ms(1000)));
        }
        let out = sim.run();
        let got = times(&out, "got");
        let synced = times(&out, "synced");
        (got[0], synced[0] - got[0])
    };
    let (_, normal) = synced(false);
    let (_, slowed) = synced(true);
    assert_eq!((normal / 1_000_000, slowed / 1_000_000), (5, 15));
}

#[test]
fn processing_time_runs_are_byte_identical_for_a_seed() {
    let run = |seed: u64| {
        let out = Sim::<Burst>::new(Cluster::uniform("node", 2), true, seed)
            .duration(ms(500))
            .processing(NodeId(1), ms(1), ms(30))
            .fsync(NodeId(1), ms(1), ms(10))
            .at(ms(2), |c| c.slow(NodeId(1), 2.5, ms(50)))
            .trace(true)
            .run();
        trace_hash(out.trace.as_ref().expect("traced"))
    };
    for seed in 1..=10 {
        assert_eq!(run(seed), run(seed), "seed {seed}");
    }
    assert_ne!(run(1), run(2));
}

/// The order node 1 handled two bursts in (node 0's and node 2's, each sent in order
/// over links of a fixed 2 ms, so each arrives in order), after a 50 ms pause that began
/// before they arrived, and the order the trace says was drawn.
fn order_after_pause(seed: u64) -> (Vec<String>, Vec<String>) {
    let out = Sim::<Burst>::new(Cluster::uniform("node", 3), false, seed)
        .duration(ms(200))
        .network(tenure_sim::LinkSettings {
            latency: tenure_sim::net::Delay::uniform(ms(2), ms(2)),
            ..Default::default()
        })
        .at(ms(1), |c| c.pause(NodeId(1), ms(50)))
        .order_after_stall(true)
        .trace(true)
        .run();
    let handled = out
        .history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let drawn = out
        .trace
        .expect("traced")
        .into_iter()
        .find_map(|e| match e {
            tenure_sim::TraceEvent::Reordered {
                node: NodeId(1),
                order,
                ..
            } => Some(order),
            _ => None,
        })
        .expect("the order after the pause is traced");
    (handled, drawn)
}

/// Each sender's messages keep their arrival order (one connection, read in order);
/// the two senders are raced, so how they interleave is drawn from the seed.
#[test]
fn the_order_after_a_stall_keeps_each_connection_in_order_and_races_the_connections() {
    let got = |ks: std::ops::RangeInclusive<u32>| -> Vec<String> {
        ks.map(|k| format!("got {k}")).collect()
    };
    let mut orders = std::collections::BTreeSet::new();
    for seed in 1..=20 {
        let (handled, drawn) = order_after_pause(seed);
        assert_eq!(handled.len(), 10, "seed {seed}");
        assert_eq!(drawn.len(), 10, "seed {seed}: {drawn:?}");
        assert_eq!(
            order_after_pause(seed),
            (handled.clone(), drawn),
            "seed {seed}"
        );
        let from = |base: u32| -> Vec<String> {
            handled
                .iter()
                .filter(|h| {
                    let k: u32 = h["got ".len()..].parse().unwrap();
                    (base + 1..=base + 5).contains(&k)
                })
                .cloned()
                .collect()
        };
        assert_eq!(from(0), got(1..=5), "seed {seed}: node 0's in order");
        assert_eq!(from(10), got(11..=15), "seed {seed}: node 2's in order");
        orders.insert(handled);
    }
    // 252 interleavings of two runs of five; a race drawn per item gives many.
    assert!(
        orders.len() > 10,
        "only {} orders over 20 seeds",
        orders.len()
    );
}

#[test]
fn without_order_after_stall_the_pile_is_handled_in_arrival_order() {
    let out = Sim::<Burst>::new(Cluster::uniform("node", 2), false, 4)
        .duration(ms(200))
        .at(ms(1), |c| c.pause(NodeId(1), ms(50)))
        .trace(true)
        .run();
    let handled: Vec<String> = out
        .history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let trace = out.trace.expect("traced");
    // Arrival order: by arrival time, then sending order (datagrams reorder on the way).
    let mut arrivals: Vec<(tenure_core::SimTime, u64, String)> = trace
        .iter()
        .filter_map(|e| match e {
            tenure_sim::TraceEvent::Sent {
                id,
                msg,
                deliver_at,
                ..
            } => Some((deliver_at[0], *id, format!("got {msg}"))),
            _ => None,
        })
        .collect();
    arrivals.sort();
    let in_arrival_order: Vec<String> = arrivals.into_iter().map(|a| a.2).collect();
    assert_eq!(handled, in_arrival_order);
    assert!(!trace
        .iter()
        .any(|e| matches!(e, tenure_sim::TraceEvent::Reordered { .. })));
}
