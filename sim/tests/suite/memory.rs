//! Nothing of a finished run outlives it (issue 14: constant memory per seed). The
//! protocol's config holds a token; the world holds the config; so the token's count
//! drops back to one exactly when everything that held the world (node tasks, their
//! wakers, timers) is gone.

use std::sync::Arc;
use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Protocol};
use tenure_sim::Sim;

#[derive(Clone, Debug)]
struct Config {
    /// Only held: its count says whether the world is alive.
    _token: Arc<()>,
}

/// Every node pings every other on a timer: tasks sleep, wake on messages and timers,
/// and some are left waiting when the run ends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Ping {
    me: NodeId,
    peers: Vec<NodeId>,
}

impl Protocol for Ping {
    type Msg = u32;
    type Timer = u8;
    type Config = Config;

    fn new(_config: &Config, me: NodeId, cluster: &Cluster) -> Self {
        Ping {
            me,
            peers: cluster.peers(me).collect(),
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<u32, u8>) {
        env.set_timer(0, Duration::from_millis(7 + u64::from(self.me.0)));
    }

    fn on_message(&mut self, env: &mut dyn Env<u32, u8>, from: NodeId, msg: u32) {
        if msg.is_multiple_of(2) {
            env.send(from, msg + 1);
        }
    }

    fn on_timer(&mut self, env: &mut dyn Env<u32, u8>, _timer: u8) {
        for p in self.peers.clone() {
            env.send(p, 0);
        }
        env.set_timer(0, Duration::from_millis(13));
    }
}

#[test]
fn a_finished_run_frees_its_world() {
    let token = Arc::new(());
    let cluster = Cluster::uniform("node", 5);
    for seed in 0..5 {
        let config = Config {
            _token: token.clone(),
        };
        let out = Sim::<Ping>::new(cluster.clone(), config, seed)
            .duration(Duration::from_secs(2))
            .run();
        assert!(out.stats.messages_delivered > 100);
        assert_eq!(
            Arc::strong_count(&token),
            1,
            "seed {seed}: the world of a finished run is still alive"
        );
    }
}

#[test]
fn a_run_stopped_early_frees_its_world_too() {
    let token = Arc::new(());
    let cluster = Cluster::uniform("node", 3);
    let config = Config {
        _token: token.clone(),
    };
    let out = Sim::<Ping>::new(cluster, config, 1)
        .duration(Duration::from_secs(5))
        .on_record(Box::new(|_, _| true)) // the first record stops the run
        .run();
    assert!(out.stopped_early);
    assert_eq!(Arc::strong_count(&token), 1);
}
