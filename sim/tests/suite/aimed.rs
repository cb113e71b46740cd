//! Faults aimed at what nodes believe (issue 33): a `holder` selector hits the node that
//! holds when the event fires, is re-aimed at a waiter when nobody holds, and is skipped
//! (the trace says so) when nobody holds or waits; in a timeline, one that finds nobody
//! of its role waits for one up to the next heal; a `slow-link` slows one direction of
//! one link for its duration only.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol};
use tenure_scenario::{Delay, Fault, NodeSel};
use tenure_sim::{play, Sim, TraceEvent};

/// Node 1 waits for `r` from 100 ms and holds it from 200 ms to 300 ms; every node
/// pings node 0 every 10 ms, and node 0 notes each ping.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Script {
    me: NodeId,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Timer {
    Wait,
    Hold,
    Release,
    Ping,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl Protocol for Script {
    type Msg = u64;
    type Timer = Timer;
    type Config = ();

    fn new(_: &(), me: NodeId, _cluster: &Cluster) -> Self {
        Script { me }
    }

    fn on_start(&mut self, env: &mut dyn Env<u64, Timer>) {
        if self.me == NodeId(1) {
            env.set_timer(Timer::Wait, ms(100));
            env.set_timer(Timer::Hold, ms(200));
            env.set_timer(Timer::Release, ms(300));
        }
        if self.me != NodeId(0) {
            env.set_timer(Timer::Ping, ms(10));
        }
    }

    fn on_message(&mut self, env: &mut dyn Env<u64, Timer>, from: NodeId, sent: u64) {
        let now = env.monotonic().0 as u64;
        env.observe(Observation::Note {
            text: format!("ping from {from} took {}ms", (now - sent) / 1_000_000),
        });
    }

    fn on_timer(&mut self, env: &mut dyn Env<u64, Timer>, timer: Timer) {
        let resource = "r".to_string();
        match timer {
            Timer::Wait => env.observe(Observation::Waiting { resource }),
            Timer::Hold => env.observe(Observation::Holds { resource, token: 1 }),
            Timer::Release => env.observe(Observation::Releases { resource }),
            Timer::Ping => {
                let now = env.monotonic().0 as u64;
                env.send(NodeId(0), now);
                env.set_timer(Timer::Ping, ms(10));
            }
        }
    }
}

fn sim() -> Sim<Script> {
    Sim::<Script>::new(Cluster::uniform("node", 3), (), 1)
        .duration(ms(500))
        .trace(true)
}

fn faults(trace: &[TraceEvent]) -> Vec<(String, Vec<NodeId>, String)> {
    trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Fault {
                kind,
                nodes,
                detail,
                ..
            } => Some((kind.to_string(), nodes.clone(), detail.clone())),
            _ => None,
        })
        .collect()
}

fn pause(node: NodeSel) -> Fault {
    Fault::Pause {
        node,
        duration: ms(5),
    }
}

#[test]
fn a_holder_selector_hits_the_holder_else_a_waiter_else_nothing_and_says_which() {
    let out = sim()
        .at(ms(50), |c| play::apply(c, &pause(NodeSel::Holder)))
        .at(ms(150), |c| play::apply(c, &pause(NodeSel::Holder)))
        .at(ms(250), |c| play::apply(c, &pause(NodeSel::Holder)))
        .at(ms(260), |c| play::apply(c, &pause(NodeSel::Waiter)))
        .at(ms(270), |c| play::apply(c, &pause(NodeSel::Leader)))
        .run();
    let got = faults(out.trace.as_deref().expect("traced"));
    let kinds: Vec<(&str, &[NodeId])> = got
        .iter()
        .filter(|(k, _, _)| k != "resume")
        .map(|(k, n, _)| (k.as_str(), n.as_slice()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("skipped", &[][..]),  // 50 ms: nobody holds or waits
            ("re-aimed", &[][..]), // 150 ms: nobody holds, n1 waits
            ("pause", &[NodeId(1)][..]),
            ("pause", &[NodeId(1)][..]), // 250 ms: n1 holds
            ("re-aimed", &[][..]),       // 260 ms: nobody waits, n1 holds
            ("pause", &[NodeId(1)][..]),
            ("skipped", &[][..]), // 270 ms: nobody leads
        ],
        "{got:?}"
    );
    assert!(
        got[0].2.contains("no node believes it holds or waits"),
        "{got:?}"
    );
    assert!(
        got[1]
            .2
            .contains("re-aimed at n1, the waiter: no node holds"),
        "{got:?}"
    );
    assert!(
        got.last().unwrap().2.contains("no node believes it leads"),
        "{got:?}"
    );
}

#[test]
fn a_slow_link_slows_one_direction_of_one_link_for_its_duration() {
    let slow = Fault::SlowLink {
        from: NodeSel::Id(2),
        node: NodeSel::Id(0),
        latency: Delay::uniform(ms(40), ms(40)),
        duration: ms(100),
    };
    let out = sim().at(ms(100), move |c| play::apply(c, &slow)).run();
    let delays = |from: u32, from_ms: u64, to_ms: u64| -> Vec<String> {
        out.history
            .records
            .iter()
            .filter(|r| {
                let t = r.time.as_duration();
                t >= ms(from_ms) && t < ms(to_ms)
            })
            .filter_map(|r| match &r.obs {
                Observation::Note { text } if text.starts_with(&format!("ping from n{from} ")) => {
                    Some(text.rsplit(' ').next().unwrap().to_string())
                }
                _ => None,
            })
            .collect()
    };
    // n2's pings sent from 100 ms to 200 ms take 40 ms (those received from 141 ms to
    // 200 ms were sent in it); n1's do not; after the end n2's are fast again.
    assert!(
        delays(2, 141, 200).iter().all(|d| d == "40ms"),
        "{:?}",
        delays(2, 141, 200)
    );
    assert!(!delays(2, 141, 200).is_empty());
    assert!(
        delays(1, 141, 200).iter().all(|d| d != "40ms"),
        "{:?}",
        delays(1, 141, 200)
    );
    assert!(
        delays(2, 300, 500).iter().all(|d| d != "40ms"),
        "{:?}",
        delays(2, 300, 500)
    );
    assert!(!delays(2, 300, 500).is_empty());
}

/// The faults of `trace` but resumes, as (time in ms, kind, nodes).
fn timed(trace: &[TraceEvent]) -> Vec<(u64, String, Vec<NodeId>)> {
    trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Fault {
                time, kind, nodes, ..
            } if *kind != "resume" => Some((
                time.as_duration().as_millis() as u64,
                kind.to_string(),
                nodes.clone(),
            )),
            _ => None,
        })
        .collect()
}

fn event(at: u64, fault: Fault) -> tenure_scenario::FaultEvent {
    tenure_scenario::FaultEvent { at: ms(at), fault }
}

#[test]
fn a_holder_or_waiter_fault_that_finds_nobody_waits_for_one_until_the_heal() {
    // n1 waits from 100 ms and holds from 200 ms to 300 ms.
    let timeline = [
        event(50, pause(NodeSel::Holder)),
        event(60, pause(NodeSel::Waiter)),
        // A crash does not wait: skipped at once.
        event(
            70,
            Fault::Crash {
                node: NodeSel::Holder,
            },
        ),
        // After the release nobody holds or waits: it waits to 395 ms (the heal less
        // its 5 ms) and is skipped then.
        event(350, pause(NodeSel::Holder)),
        event(400, Fault::Heal {}),
    ];
    let out = sim().timeline(&timeline).run();
    let trace = out.trace.as_deref().expect("traced");
    let all = timed(trace);
    let got: Vec<(u64, &str, &[NodeId])> = all
        .iter()
        .map(|(t, k, n)| (*t, k.as_str(), n.as_slice()))
        .collect();
    let n1 = &[NodeId(1)][..];
    assert_eq!(
        got,
        vec![
            (50, "waiting", &[][..]),
            (60, "waiting", &[][..]),
            (70, "skipped", &[][..]),
            (100, "pause", n1), // the waiter, the moment n1 waits
            (200, "pause", n1), // the holder, the moment n1 holds
            (350, "waiting", &[][..]),
            (395, "skipped", &[][..]),
            (400, "heal", &[][..]),
        ],
        "{:?}",
        faults(trace)
    );
    let details = faults(trace);
    assert!(
        details[0]
            .2
            .contains("pause aimed at the holder waits for one until 0.395_000s"),
        "{details:?}"
    );
    // Negative control: applied at once (no heal to wait for), the same events skip.
    let out = sim()
        .at(ms(50), |c| play::apply(c, &pause(NodeSel::Holder)))
        .run();
    let kinds: Vec<String> = timed(out.trace.as_deref().expect("traced"))
        .into_iter()
        .map(|(_, k, _)| k)
        .collect();
    assert_eq!(kinds, vec!["skipped"]);
}
