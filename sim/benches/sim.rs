//! Simulator throughput: `cargo bench -p tenure-sim`.
//!
//! * `election/raft-5-chaos-60s`: one seed of a 5-node Raft election, 60 simulated
//!   seconds under chaos faults, with the election checkers online (seeds per second).
//! * `scale/raft-N-60s`: 60 simulated seconds of an N-node Raft cluster, no faults,
//!   N from 5 to 101 (cost growth with cluster size).
//!
//! Before criterion's measurements, a summary measured directly over a batch of seeds
//! prints seeds/s, simulated seconds per wall second and the all-in wall cost per
//! delivered message (wall time / messages delivered) for each case.
//!
//! Benches do nothing under `cargo test` (only `cargo bench` passes `--bench`).

use criterion::{BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use tenure_core::{Cluster, Configurable, NodeId, Rng, SplitMix64};
use tenure_protocols::raft::Raft;
use tenure_scenario::{Fault, FaultEvent, NodeSel};
use tenure_sim::{CheckedRun, Sim};

const SIMULATED: Duration = Duration::from_secs(60);
const ELECTION_CHECKERS: &[&str] = &["single-leader-per-term", "leader-liveness"];

/// A chaos-like timeline drawn from the seed: every 2-6 s one of crash+restart, an
/// isolated or partitioned minority healed later, a pause, or a wall-clock jump;
/// everything heals by 45 s so liveness is judged over the last 15 s.
fn chaos(seed: u64, nodes: u32) -> Vec<FaultEvent> {
    let mut rng = SplitMix64(seed ^ 0x5eed_c4a0_5eed_c4a0);
    let mut events = Vec::new();
    let ms = Duration::from_millis;
    let mut t = ms(1_000);
    let node = |rng: &mut SplitMix64| rng.range_inclusive(0, u64::from(nodes) - 1) as u32;
    while t < Duration::from_secs(40) {
        let length = rng.duration_between(ms(300), ms(3_000));
        match rng.range_inclusive(0, 4) {
            0 => {
                let n = NodeSel::Leader;
                events.push(FaultEvent {
                    at: t,
                    fault: Fault::Crash { node: n },
                });
                for id in 0..nodes {
                    let restart = Fault::Restart {
                        node: NodeSel::Id(id),
                    };
                    events.push(FaultEvent {
                        at: t + length,
                        fault: restart,
                    });
                }
            }
            1 => {
                let n = NodeSel::Id(node(&mut rng));
                events.push(FaultEvent {
                    at: t,
                    fault: Fault::Isolate { node: n },
                });
                events.push(FaultEvent {
                    at: t + length,
                    fault: Fault::Heal {},
                });
            }
            2 => {
                let minority: Vec<NodeId> = (0..nodes / 2).map(NodeId).collect();
                let fault = Fault::Partition {
                    groups: vec![minority],
                };
                events.push(FaultEvent { at: t, fault });
                events.push(FaultEvent {
                    at: t + length,
                    fault: Fault::Heal {},
                });
            }
            3 => {
                let n = NodeSel::Id(node(&mut rng));
                let fault = Fault::Pause {
                    node: n,
                    duration: length,
                };
                events.push(FaultEvent { at: t, fault });
            }
            _ => {
                let n = NodeSel::Id(node(&mut rng));
                let by = tenure_core::SignedDuration(
                    rng.range_inclusive(0, 4_000_000_000) as i64 - 2_000_000_000,
                );
                events.push(FaultEvent {
                    at: t,
                    fault: Fault::ClockJump { node: n, by },
                });
            }
        }
        t += length + rng.duration_between(ms(2_000), ms(6_000));
    }
    events.push(FaultEvent {
        at: Duration::from_secs(45),
        fault: Fault::Heal {},
    });
    events.sort_by_key(|e| e.at);
    events
}

fn raft(nodes: u32, seed: u64, faults: bool) -> CheckedRun {
    let cluster = Cluster::uniform("server", nodes);
    let config = Raft::configure(Default::default(), "correct", &cluster).expect("defaults");
    let events = if faults {
        chaos(seed, nodes)
    } else {
        Vec::new()
    };
    let checkers = ELECTION_CHECKERS
        .iter()
        .map(|n| tenure_check::build(n, &serde_json::Value::Null, &cluster).expect("known"))
        .collect();
    Sim::<Raft>::new(cluster, config, seed)
        .duration(SIMULATED)
        .timeline(&events)
        .run_checked(checkers, false)
}

/// Runs `seeds` seeds and prints the derived figures. Wall time here only measures the
/// benchmark; it never affects a run.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn summary(name: &str, nodes: u32, faults: bool, seeds: u64) {
    let start = std::time::Instant::now();
    let mut delivered = 0u64;
    for seed in 0..seeds {
        delivered += raft(nodes, seed, faults).output.stats.messages_delivered;
    }
    let wall = start.elapsed().as_secs_f64();
    let simulated = SIMULATED.as_secs_f64() * seeds as f64;
    println!(
        "{name:<28} {seeds:>4} seeds  {:>8.1} seeds/s  {:>9.0} sim-s/wall-s  {:>9} msgs/seed  {:>7.3} us/msg  {:>8.3} s/seed",
        seeds as f64 / wall,
        simulated / wall,
        delivered / seeds,
        wall * 1e6 / delivered as f64,
        wall / seeds as f64,
    );
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("election");
    group.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    group.bench_function("raft-5-chaos-60s", |b| {
        b.iter(|| {
            seed += 1;
            raft(5, seed, true)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SIMULATED.as_secs()));
    for nodes in [5u32, 11, 25, 51, 101] {
        group.bench_with_input(BenchmarkId::new("raft-60s", nodes), &nodes, |b, &n| {
            b.iter(|| raft(n, 1, false))
        });
    }
    group.finish();
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // `cargo test` builds benches; only `cargo bench` runs them
    }
    println!("tenure-sim summary (wall time over a batch of seeds):");
    summary("raft-5-chaos-60s-checked", 5, true, 200);
    for (nodes, seeds) in [(5, 50), (11, 20), (25, 10), (51, 5), (101, 3)] {
        summary(&format!("raft-{nodes}-60s"), nodes, false, seeds);
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
