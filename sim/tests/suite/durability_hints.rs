//! Durability hints: a node that sends a message after writing to storage and before
//! the next successful sync is reported (the shape of "reply before persist"), naming
//! the node, keys, handler and message; a sync before the send, or a key the protocol
//! declares not durable, gives none.

use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Protocol, StorageExt as _};
use tenure_sim::Sim;

/// n0 writes `vote` (and `cache`) every 10 ms and sends n1 a `Vote`; `sync_first` syncs
/// the write before the send; `only_cache` writes only `cache`, which it declares not
/// durable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Voter {
    me: NodeId,
    mode: Mode,
    term: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mode {
    SendFirst,
    SyncFirst,
    OnlyCache,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Msg {
    Vote { term: u64 },
}

impl Protocol for Voter {
    type Msg = Msg;
    type Timer = ();
    type Config = Mode;

    fn new(mode: &Mode, me: NodeId, _cluster: &Cluster) -> Self {
        Voter {
            me,
            mode: *mode,
            term: 0,
        }
    }

    fn on_start(&mut self, env: &mut dyn Env<Msg, ()>) {
        if self.me == NodeId(0) {
            env.set_timer((), Duration::from_millis(10));
        }
    }

    fn on_message(&mut self, _env: &mut dyn Env<Msg, ()>, _from: NodeId, _msg: Msg) {}

    fn on_timer(&mut self, env: &mut dyn Env<Msg, ()>, _timer: ()) {
        self.term += 1;
        match self.mode {
            Mode::OnlyCache => env.store("cache", &self.term),
            Mode::SendFirst => env.store("vote", &self.term),
            Mode::SyncFirst => {
                let _ = env.store_synced("vote", &self.term);
            }
        }
        env.send(NodeId(1), Msg::Vote { term: self.term });
        env.set_timer((), Duration::from_millis(10));
    }

    fn durable(key: &str) -> bool {
        key != "cache"
    }
}

fn run(mode: Mode) -> tenure_sim::Stats {
    Sim::<Voter>::new(Cluster::uniform("node", 2), mode, 3)
        .duration(Duration::from_millis(100))
        .run()
        .stats
}

#[test]
fn a_send_before_the_sync_is_a_hint_naming_node_keys_handler_and_message() {
    let stats = run(Mode::SendFirst);
    assert_eq!(stats.durability_hints.len(), 1, "one hint per kind of send");
    let h = &stats.durability_hints[0];
    assert_eq!(h.node, NodeId(0));
    assert_eq!(h.keys, vec!["vote".to_string()]);
    assert_eq!(h.handler, "on_timer ()");
    assert_eq!(h.message, "Vote { term: 1 }");
    assert_eq!(h.to, NodeId(1));
    assert_eq!(h.sends, stats.durability_hint_sends);
    assert!(h.sends >= 9, "{}", h.sends);
    assert!(
        h.to_string().contains("n0 sent Vote { term: 1 } to n1 in on_timer () after writing `vote` and before syncing it"),
        "{h}"
    );
}

#[test]
fn a_sync_first_or_a_key_declared_not_durable_gives_no_hint() {
    for mode in [Mode::SyncFirst, Mode::OnlyCache] {
        let stats = run(mode);
        assert!(
            stats.durability_hints.is_empty(),
            "{mode:?}: {:?}",
            stats.durability_hints
        );
        assert_eq!(stats.durability_hint_sends, 0);
    }
}
