//! Stream mode (`Sim::stream`): FIFO per link, messages held across a partition shorter
//! than the connection timeout and delivered in order at the heal, connections reset
//! (queued messages lost, both ends told through `on_disconnect`) by a longer partition
//! or a crash; every run byte-identical for its seed.
//!
//! The protocol under test is `Ticker`: node 0 sends `1, 2, 3, ...` to node 1 every
//! 2 ms; node 1 notes each number it gets. Every node notes each disconnect.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, SimTime};
use tenure_sim::{trace_hash, DropReason, LinkSettings, RunOutput, Sim, TraceEvent};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ticker {
    me: NodeId,
    next: u32,
}

const TICK: Duration = Duration::from_millis(2);

impl Protocol for Ticker {
    type Msg = u32;
    type Timer = ();
    type Config = ();

    fn new(_: &(), me: NodeId, _cluster: &Cluster) -> Self {
        Ticker { me, next: 0 }
    }

    fn on_start(&mut self, env: &mut dyn Env<u32, ()>) {
        if self.me == NodeId(0) {
            env.set_timer((), TICK);
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<u32, ()>, from: NodeId, msg: u32) {
        env.observe(note(format!("got {msg} from {}", from.0)));
    }

    fn on_timer(&mut self, env: &mut dyn Env<u32, ()>, _timer: ()) {
        self.next += 1;
        env.send(NodeId(1), self.next);
        env.set_timer((), TICK);
    }

    fn on_disconnect(&mut self, env: &mut dyn Env<u32, ()>, peer: NodeId) {
        env.observe(note(format!("disconnected from {}", peer.0)));
    }
}

fn note(text: String) -> Observation {
    Observation::Note { text }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Two nodes, one-way latency 1-40 ms (wide, so datagrams reorder), 1 s.
fn ticker(seed: u64) -> Sim<Ticker> {
    Sim::<Ticker>::new(Cluster::uniform("node", 2), (), seed)
        .duration(ms(1000))
        .network(LinkSettings {
            latency: tenure_sim::net::Delay::uniform(ms(1), ms(40)),
            ..LinkSettings::default()
        })
        .trace(true)
}

/// Node 1's received numbers with the true time each was handled.
fn received(out: &RunOutput) -> Vec<(SimTime, u32)> {
    out.history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } => text
                .strip_prefix("got ")
                .and_then(|t| t.strip_suffix(" from 0"))
                .map(|n| (r.time, n.parse().expect("a number"))),
            _ => None,
        })
        .collect()
}

/// (true time in whole ms, node, note) of every disconnect noted, sorted.
fn disconnects(out: &RunOutput) -> Vec<(u64, u32, String)> {
    let mut all: Vec<(u64, u32, String)> = out
        .history
        .records
        .iter()
        .filter_map(|r| match &r.obs {
            Observation::Note { text } if text.starts_with("disconnected") => {
                Some((r.time.as_nanos() / 1_000_000, r.node.0, text.clone()))
            }
            _ => None,
        })
        .collect();
    all.sort();
    all
}

fn in_order(got: &[(SimTime, u32)]) -> bool {
    got.windows(2).all(|w| w[0].1 < w[1].1)
}

fn lost_to_reset(out: &RunOutput) -> usize {
    out.trace
        .as_ref()
        .expect("traced")
        .iter()
        .filter(|e| {
            matches!(
                e,
                TraceEvent::Lost {
                    reason: DropReason::Reset,
                    ..
                }
            )
        })
        .count()
}

#[test]
fn stream_mode_is_fifo_per_link_where_datagrams_reorder() {
    for seed in 1..=5 {
        let got = received(&ticker(seed).stream(ms(500)).run());
        assert!(got.len() > 400, "seed {seed}: {} received", got.len());
        assert!(in_order(&got), "seed {seed}: out of order in stream mode");
        let numbers: Vec<u32> = got.iter().map(|g| g.1).collect();
        let all: Vec<u32> = (1..=numbers.len() as u32).collect();
        assert_eq!(numbers, all, "seed {seed}: nothing lost, nothing doubled");
    }
    // Negative control: the same network in datagram mode reorders.
    let got = received(&ticker(1).run());
    assert!(
        !in_order(&got),
        "datagrams with 1-40 ms latency should reorder"
    );
}

#[test]
fn a_short_partition_delays_messages_and_delivers_them_in_order_at_the_heal() {
    let out = ticker(3)
        .stream(ms(500))
        .at(ms(100), |c| c.isolate(NodeId(1)))
        .at(ms(300), |c| c.heal())
        .run();
    let got = received(&out);
    assert!(in_order(&got));
    let numbers: Vec<u32> = got.iter().map(|g| g.1).collect();
    let all: Vec<u32> = (1..=numbers.len() as u32).collect();
    assert_eq!(numbers, all, "every message arrives, once, in order");
    assert!(disconnects(&out).is_empty(), "{:?}", disconnects(&out));
    // Nothing is handled while the link is blocked (after the last one in flight)...
    let quiet = got.iter().filter(|(t, _)| {
        *t > SimTime::from_duration(ms(141)) && *t < SimTime::from_duration(ms(300))
    });
    assert_eq!(quiet.count(), 0);
    // ...then the stale burst: the ~100 messages sent during the partition arrive within
    // the latency range after the heal.
    let burst = got
        .iter()
        .filter(|(t, _)| {
            *t >= SimTime::from_duration(ms(300)) && *t <= SimTime::from_duration(ms(341))
        })
        .count();
    assert!(burst >= 95, "burst of {burst}");
    let trace = out.trace.as_ref().expect("traced");
    let held = trace
        .iter()
        .filter(|e| matches!(e, TraceEvent::Held { .. }))
        .count();
    let released = trace
        .iter()
        .filter(|e| matches!(e, TraceEvent::Released { .. }))
        .count();
    assert!(
        held >= 95 && held == released,
        "held {held}, released {released}"
    );

    // Negative control: datagrams sent during the partition are dropped.
    let out = ticker(3)
        .at(ms(100), |c| c.isolate(NodeId(1)))
        .at(ms(300), |c| c.heal())
        .run();
    let numbers: Vec<u32> = received(&out).iter().map(|g| g.1).collect();
    assert!(numbers.len() as u32 + 90 < *numbers.iter().max().expect("some"));
}

#[test]
fn a_long_partition_resets_the_connection_and_tells_both_ends() {
    let out = ticker(4)
        .stream(ms(200))
        .at(ms(100), |c| c.isolate(NodeId(1)))
        .at(ms(600), |c| c.heal())
        .run();
    let at = SimTime::from_duration(ms(300));
    assert_eq!(
        disconnects(&out),
        vec![
            (300, 0, "disconnected from 1".to_string()),
            (300, 1, "disconnected from 0".to_string())
        ]
    );
    // The ~100 messages held when the connection timed out are lost with it; sends
    // after the reset fail at once (dropped, partition) until the heal.
    let lost = lost_to_reset(&out);
    assert!((95..=101).contains(&lost), "{lost} lost to the reset");
    let got = received(&out);
    assert!(in_order(&got));
    let before: Vec<u32> = got.iter().filter(|(t, _)| *t < at).map(|g| g.1).collect();
    let after: Vec<u32> = got.iter().filter(|(t, _)| *t >= at).map(|g| g.1).collect();
    assert!(
        after.first().is_some_and(|a| *a >= 299),
        "after the heal, new messages only: {:?}",
        after.first()
    );
    assert!(before.last().is_some_and(|b| *b <= 50));
    let trace = out.trace.as_ref().expect("traced");
    assert!(trace.iter().any(|e| matches!(
        e,
        TraceEvent::Sent {
            dropped: Some(DropReason::Partition),
            ..
        }
    )));
}

#[test]
fn a_crash_resets_the_connections_and_the_peer_is_told() {
    let out = ticker(5)
        .stream(ms(500))
        .at(ms(100), |c| c.crash(NodeId(1)))
        .at(ms(150), |c| c.restart(NodeId(1)))
        .run();
    assert_eq!(
        disconnects(&out),
        vec![(100, 0, "disconnected from 1".to_string())],
        "the crashed node is down; the restarted one starts with no connection"
    );
    let got = received(&out);
    assert!(in_order(&got));
    // Messages in flight at the crash die with the connection; the new incarnation gets
    // only what was sent after it started.
    let after: Vec<u32> = got
        .iter()
        .filter(|(t, _)| *t >= SimTime::from_duration(ms(100)))
        .map(|g| g.1)
        .collect();
    assert!(
        after.first().is_some_and(|a| *a >= 75),
        "{:?}",
        after.first()
    );
    assert!(lost_to_reset(&out) >= 1);

    // The sender crashing: the receiver is told.
    let out = ticker(5)
        .stream(ms(500))
        .at(ms(100), |c| c.power_loss(NodeId(0)))
        .run();
    assert_eq!(
        disconnects(&out),
        vec![(100, 1, "disconnected from 0".to_string())]
    );
}

#[test]
fn stream_runs_are_byte_identical_for_a_seed() {
    let run = |seed| {
        let out = ticker(seed)
            .stream(ms(150))
            .at(ms(100), |c| c.isolate(NodeId(1)))
            .at(ms(200), |c| c.heal())
            .at(ms(300), |c| c.cut(NodeId(0), NodeId(1)))
            .at(ms(600), |c| c.heal())
            .at(ms(700), |c| c.crash(NodeId(0)))
            .at(ms(720), |c| c.restart(NodeId(0)))
            .run();
        trace_hash(out.trace.as_ref().expect("traced"))
    };
    for seed in 1..=10 {
        assert_eq!(run(seed), run(seed), "seed {seed}");
    }
    assert_ne!(run(1), run(2), "the seed matters");
}
