//! Determinism is sacred: a run is a pure function of (code, scenario, seed). Each seed
//! runs twice and the two traces (every observation, message, timer and fault) must
//! hash the same.

use crate::support::{prepare, repo_root};
use tenure_sim::{trace_hash, RunOptions};

fn hashes(file: &str, seeds: std::ops::Range<u64>) -> Vec<u64> {
    let prepared = prepare(&repo_root().join(file));
    let options = RunOptions {
        trace: true,
        stop_at_first_violation: false,
    };
    seeds
        .map(|seed| {
            let a = prepared.run(seed, &options);
            let b = prepared.run(seed, &options);
            let (ha, hb) = (
                trace_hash(a.trace.as_ref().unwrap()),
                trace_hash(b.trace.as_ref().unwrap()),
            );
            assert_eq!(ha, hb, "{file} seed {seed} ran differently twice");
            ha
        })
        .collect()
}

#[test]
fn raft_with_crashes_is_deterministic_over_100_seeds() {
    let h = hashes("scenarios/raft/leader-crash.toml", 0..100);
    let distinct: std::collections::BTreeSet<u64> = h.iter().copied().collect();
    assert!(
        distinct.len() > 90,
        "seeds should give different runs, got {} distinct of 100",
        distinct.len()
    );
}

#[test]
fn lock_zoo_with_pauses_and_clock_jumps_is_deterministic() {
    hashes("scenarios/redis-lock/gc-pause.toml", 0..20);
    hashes("scenarios/redlock/clock-jump.toml", 0..20);
    hashes("scenarios/raft/clock-drift-and-jumps.toml", 0..20);
}

#[test]
fn power_losses_crash_points_and_fsync_latency_are_deterministic() {
    let h = hashes("scenarios/raft/reply-before-sync-power-loss.toml", 0..20);
    let distinct: std::collections::BTreeSet<u64> = h.iter().copied().collect();
    assert!(
        distinct.len() > 15,
        "seeds give different runs: {distinct:?}"
    );
    hashes("scenarios/raft/reply-before-sync-crash-point.toml", 0..20);
    hashes("scenarios/raft/vote-synced-power-loss.toml", 0..20);
}

#[test]
fn stream_mode_processing_time_and_slow_nodes_are_deterministic() {
    for file in [
        "scenarios/raft/stream-stale-burst.toml",
        "scenarios/raft/stream-connection-reset.toml",
        "scenarios/raft/slow-leader.toml",
    ] {
        let h = hashes(file, 0..10);
        let distinct: std::collections::BTreeSet<u64> = h.iter().copied().collect();
        assert!(distinct.len() > 7, "{file}: seeds give different runs");
    }
}

#[test]
fn latency_distributions_clock_stalls_slews_and_torn_writes_are_deterministic() {
    for file in [
        "scenarios/raft/field-latency-and-clocks.toml",
        "scenarios/raft/vote-synced-torn-power-loss.toml",
        "scenarios/leader-lease/correct-clock-stall.toml",
    ] {
        hashes(file, 0..10);
    }
    // Heavy-tailed links draw different delays on different seeds.
    let h = hashes("scenarios/raft/field-latency-and-clocks.toml", 0..10);
    let distinct: std::collections::BTreeSet<u64> = h.iter().copied().collect();
    assert!(distinct.len() > 7, "seeds give different runs");
}
