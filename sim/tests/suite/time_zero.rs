//! Faults at time zero apply before the protocol's first actions (issue 33): the node
//! tasks wait at a gate until the supervisor has applied every event of time zero, so a
//! crash point armed at zero fires inside `on_start`, a pause at zero holds a node
//! before it starts, and a partition at zero sees the first messages. Without the gate,
//! madsim's seeded scheduler ran some nodes' `on_start` before the supervisor and some
//! after, so a fault "at 0ms" landed after the first actions on some seeds only.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, Request};
use tenure_sim::{RunOutput, Sim};

/// Each node notes its start, greets every other node and notes each greeting it gets.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Greeter;

fn note(text: String) -> Observation {
    Observation::Note { text }
}

impl Protocol for Greeter {
    type Msg = ();
    type Timer = ();
    type Config = ();

    fn new(_: &(), _me: NodeId, _cluster: &Cluster) -> Self {
        Greeter
    }

    fn on_start(&mut self, env: &mut dyn Env<(), ()>) {
        env.observe(note("start".into()));
        let me = env.me();
        for n in 0..3 {
            if n != me.0 {
                env.send(NodeId(n), ());
            }
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<(), ()>, from: NodeId, _msg: ()) {
        env.observe(note(format!("hello from {from}")));
    }

    fn on_timer(&mut self, _env: &mut dyn Env<(), ()>, _timer: ()) {}

    fn on_request(&mut self, env: &mut dyn Env<(), ()>, request: &Request) {
        env.observe(note(format!("request {}", request.name)));
    }
}

fn sim(seed: u64) -> Sim<Greeter> {
    Sim::<Greeter>::new(Cluster::uniform("node", 3), (), seed).duration(Duration::from_millis(100))
}

fn notes(out: &RunOutput, node: u32) -> Vec<String> {
    out.history
        .records
        .iter()
        .filter(|r| r.node == NodeId(node))
        .filter_map(|r| match &r.obs {
            Observation::Note { text } => Some(text.clone()),
            Observation::Crashed => Some("crashed".into()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_crash_point_armed_at_zero_fires_inside_on_start_on_every_seed() {
    for seed in 0..40 {
        // Crash after one more effect: the `start` note, before any greeting is sent.
        let out = sim(seed)
            .at(Duration::ZERO, |c| c.crash_point(NodeId(1), 1, false))
            .run();
        assert_eq!(notes(&out, 1), vec!["start", "crashed"], "seed {seed}");
        for other in [0, 2] {
            assert!(
                !notes(&out, other).contains(&"hello from n1".to_string()),
                "seed {seed}: n1 greeted n{other} before its crash point: {:?}",
                notes(&out, other)
            );
        }
    }
}

#[test]
fn a_pause_at_zero_holds_the_node_before_it_starts() {
    for seed in 0..20 {
        let out = sim(seed)
            .at(Duration::ZERO, |c| {
                c.pause(NodeId(2), Duration::from_millis(30))
            })
            .run();
        let started = out
            .history
            .records
            .iter()
            .find(|r| r.node == NodeId(2) && r.obs == Observation::Started)
            .expect("n2 starts after its pause");
        assert!(
            started.time.as_duration() >= Duration::from_millis(30),
            "seed {seed}: n2 started at {}",
            started.time
        );
    }
}

#[test]
fn a_partition_at_zero_sees_the_first_messages_and_a_request_at_zero_waits_for_the_start() {
    for seed in 0..20 {
        let out = sim(seed)
            .at(Duration::ZERO, |c| c.isolate(NodeId(0)))
            .at(Duration::ZERO, |c| {
                c.request(
                    NodeId(1),
                    Request {
                        name: "first".into(),
                        arg: 0,
                    },
                )
            })
            .run();
        for other in [1, 2] {
            assert!(
                !notes(&out, other).contains(&"hello from n0".to_string()),
                "seed {seed}: n0's first message crossed a partition made at zero"
            );
        }
        assert!(
            notes(&out, 1).contains(&"request first".to_string()),
            "seed {seed}: {:?}",
            notes(&out, 1)
        );
    }
}
