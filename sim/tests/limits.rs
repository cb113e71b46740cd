//! Run limits (issue 14: a limit on everything): a protocol that floods the network is
//! stopped at `max_in_flight` messages in flight, cleanly (no panic, no memory
//! exhaustion, its world freed), and the trace stops growing at `max_trace_events`
//! while the run goes on. Its own test binary: the limits are process-wide.

use std::sync::Arc;
use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Protocol, SimTime};
use tenure_scenario::{Exceeded, Limits};
use tenure_sim::Sim;

const IN_FLIGHT: usize = 10_000;
const TRACE_EVENTS: usize = 500;

fn limits() {
    tenure_scenario::set_limits(Limits {
        max_in_flight: IN_FLIGHT,
        max_trace_events: TRACE_EVENTS,
        ..Limits::DEFAULT
    });
    assert_eq!(tenure_scenario::limits().max_in_flight, IN_FLIGHT);
}

#[derive(Clone, Debug)]
struct Config {
    /// Every message answered with this many (2: a storm that doubles each round).
    fan_out: u32,
    _token: Arc<()>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Storm {
    me: NodeId,
    peers: Vec<NodeId>,
    fan_out: u32,
}

impl Protocol for Storm {
    type Msg = u32;
    type Timer = u8;
    type Config = Config;

    fn new(config: &Config, me: NodeId, cluster: &Cluster) -> Self {
        Storm {
            me,
            peers: cluster.peers(me).collect(),
            fan_out: config.fan_out,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<u32, u8>) {
        env.set_timer(0, Duration::from_millis(5));
    }

    fn on_message(&mut self, env: &mut dyn Env<u32, u8>, _from: NodeId, msg: u32) {
        for k in 0..self.fan_out {
            let to = self.peers[(msg + k) as usize % self.peers.len()];
            env.send(to, msg.wrapping_add(1));
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<u32, u8>, _timer: u8) {
        env.send(self.peers[0], self.me.0);
    }
}

fn storm(fan_out: u32, token: &Arc<()>) -> Sim<Storm> {
    let config = Config {
        fan_out,
        _token: token.clone(),
    };
    Sim::<Storm>::new(Cluster::uniform("node", 3), config, 7).duration(Duration::from_secs(60))
}

#[test]
fn a_message_storm_stops_at_the_in_flight_limit() {
    limits();
    let token = Arc::new(());
    let out = storm(2, &token).run();
    assert!(out.stopped_early, "the run stops at the limit");
    let Some(Exceeded::InFlight { limit, at }) = out.stats.stopped_by else {
        panic!("stopped by {:?}", out.stats.stopped_by);
    };
    assert_eq!(limit, IN_FLIGHT);
    assert!(at < SimTime::from_duration(Duration::from_secs(60)));
    assert!(out.stats.max_in_flight > IN_FLIGHT);
    assert!(out.stats.max_in_flight < IN_FLIGHT + 10, "it stops at once");
    assert_eq!(Arc::strong_count(&token), 1, "its world is freed");
}

#[test]
fn a_steady_protocol_stays_under_the_limit() {
    limits();
    let token = Arc::new(());
    // One message answered by one: a token passed around, never more than a few in
    // flight.
    let out = storm(1, &token).duration(Duration::from_secs(5)).run();
    assert!(!out.stopped_early);
    assert_eq!(out.stats.stopped_by, None);
    assert!(out.stats.max_in_flight <= 3, "{}", out.stats.max_in_flight);
    assert!(out.stats.messages_delivered > 1000);
}

#[test]
fn the_trace_is_cut_at_its_limit_and_the_run_goes_on() {
    limits();
    let token = Arc::new(());
    let out = storm(1, &token)
        .duration(Duration::from_secs(5))
        .trace(true)
        .run();
    assert!(!out.stopped_early, "a full trace does not stop the run");
    assert_eq!(
        out.history.info.end,
        SimTime::from_duration(Duration::from_secs(5))
    );
    assert_eq!(out.trace.as_ref().map(Vec::len), Some(TRACE_EVENTS));
    assert!(matches!(
        out.stats.trace_cut,
        Some(Exceeded::TraceEvents {
            limit: TRACE_EVENTS,
            ..
        })
    ));
    // Without a trace there is nothing to cut.
    let out = storm(1, &token).duration(Duration::from_secs(5)).run();
    assert_eq!(out.stats.trace_cut, None);
}
