//! The simulator drives a real protocol: Raft elects, re-elects after a crash, and the
//! same seed gives the same trace.

use std::time::Duration;
use tenure_core::{Cluster, NodeId, Observation};
use tenure_protocols::raft::{Raft, RaftConfig, RaftVariant};
use tenure_sim::{trace_hash, Sim};

fn raft(seed: u64) -> Sim<Raft> {
    Sim::<Raft>::new(
        Cluster::uniform("server", 5),
        RaftConfig::new(RaftVariant::Correct),
        seed,
    )
    .duration(Duration::from_secs(5))
}

fn leaders(out: &tenure_sim::RunOutput) -> Vec<(u64, NodeId)> {
    out.history
        .records
        .iter()
        .filter_map(|r| match r.obs {
            Observation::Leader { term } => Some((term, r.node)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_calm_cluster_elects_one_leader() {
    let out = raft(1).run();
    let l = leaders(&out);
    assert!(!l.is_empty(), "no leader in 5s: {:?}", out.stats);
    assert!(out.stats.messages_delivered > 100);
}

#[test]
fn same_seed_same_trace() {
    for seed in 0..5 {
        let a = raft(seed).trace(true).run();
        let b = raft(seed).trace(true).run();
        assert_eq!(
            trace_hash(a.trace.as_ref().unwrap()),
            trace_hash(b.trace.as_ref().unwrap()),
            "seed {seed}"
        );
    }
    let a = raft(1).trace(true).run();
    let b = raft(2).trace(true).run();
    assert_ne!(
        trace_hash(a.trace.as_ref().unwrap()),
        trace_hash(b.trace.as_ref().unwrap())
    );
}

#[test]
fn crashing_the_leader_elects_another() {
    let out = raft(3)
        .at(Duration::from_secs(2), |c| {
            let leader = c.leader().expect("a leader by 2s");
            c.crash(leader);
        })
        .at(Duration::from_secs(4), |c| {
            for n in 0..5 {
                c.restart(NodeId(n));
            }
        })
        .run();
    let l = leaders(&out);
    let first = l[0];
    let crashed = out
        .history
        .records
        .iter()
        .find(|r| r.obs == Observation::Crashed)
        .unwrap();
    assert_eq!(crashed.node, first.1);
    assert!(
        l.iter()
            .any(|(term, node)| *term > first.0 && *node != first.1),
        "{l:?}"
    );
    assert!(
        out.history
            .records
            .iter()
            .filter(|r| r.obs == Observation::Started)
            .count()
            == 6
    );
}
