//! Simulator throughput: `cargo bench -p tenure-sim`.
//!
//! * `election/raft-5-chaos-60s`: one seed of a 5-node Raft election, 60 simulated
//!   seconds with faults drawn from the seed by the `chaos` profile (plus its liveness
//!   phase), with the election checkers online (seeds per second).
//! * `scale/raft-N-60s`: 60 simulated seconds of an N-node Raft cluster, no faults,
//!   N from 5 to 101 (cost growth with cluster size).
//! * `large/raft-N-60s`: the same for large clusters, N = 301, 1001 and 2001 (issue 14:
//!   a 2,001-node minute should cost about 20x a 101-node minute, not 100x). Ten
//!   samples of one run each; the summary prints the cost per delivered message, which
//!   stays flat when the cost is linear in the work.
//! * `large/raft-scaled-N-60s`: N = 1001 and 2001 with the election timeout range
//!   scaled to the cluster (150ms to 150ms + 5ms x N, as in issue 14's acceptance
//!   scenarios: with the default range a 2,001-node cluster splits its votes for
//!   seconds, so its messages grow faster than its nodes). The 2,001-node run should
//!   cost at most 2.5x the 1,001-node one.
//!
//! * `fuzz/raft-chaos` and `fuzz/raft-rs-hardened-chaos`: one seed as `tenure fuzz
//!   --protocol raft --profile chaos` (and raft-rs `hardened`) runs it: the same target,
//!   case and checks ([`tenure_fuzz::run_seed`]); seeds per second, and the ratio of the
//!   two in one run (issue 38: raft-rs within 5x of the zoo's Raft).
//! * With `TENURE_BENCH_HUGE=1` (minutes each): `huge/raft-scaled-N-60s` for N = 5001
//!   and 10000 (issue 38: 10,000 nodes under 10 s, the cost per message within 1.5x of
//!   the 1,001-node run), and `huge/redlock-100000-10s` (5 servers, 99,994 clients and
//!   a storage node for 10 simulated seconds; the summary prints its time).
//!
//! The bench allocates with mimalloc, as the `tenure` binary does.
//!
//! Before criterion's measurements, a summary measured directly over a batch of seeds
//! prints seeds/s, simulated seconds per wall second and the all-in wall cost per
//! delivered message (wall time / messages delivered) for each case.
//!
//! Benches do nothing under `cargo test` (only `cargo bench` passes `--bench`).

use criterion::{BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use tenure_core::{Cluster, Configurable, HumanDuration, RoleSpec};
use tenure_fuzz::{run_seed, Draw, Profile, Target};
use tenure_protocols::raft::{Raft, RaftParams};
use tenure_sim::{CheckedRun, Sim};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIMULATED: Duration = Duration::from_secs(60);
const ELECTION_CHECKERS: &[&str] = &["single-leader-per-term", "leader-liveness"];

/// The election timeout range: the default, or (`scaled`) 150ms to 150ms + 5ms per node.
fn params(nodes: u32, scaled: bool) -> RaftParams {
    let mut params = RaftParams::default();
    if scaled {
        params.election_timeout = [
            HumanDuration(Duration::from_millis(150)),
            HumanDuration(Duration::from_millis(150 + 5 * u64::from(nodes))),
        ];
    }
    params
}

fn raft(nodes: u32, seed: u64, faults: bool) -> CheckedRun {
    raft_with(nodes, seed, faults, false)
}

fn raft_with(nodes: u32, seed: u64, faults: bool, scaled: bool) -> CheckedRun {
    let cluster = Cluster::uniform("server", nodes);
    let config =
        Raft::configure_named(params(nodes, scaled), "correct", &cluster).expect("valid params");
    let checkers = ELECTION_CHECKERS
        .iter()
        .map(|n| tenure_check::build(n, &serde_json::Value::Null, &cluster).expect("known"))
        .collect();
    let mut sim = Sim::<Raft>::new(cluster.clone(), config, seed).duration(SIMULATED);
    if faults {
        let chaos = Profile::named("chaos").expect("built in");
        sim = chaos.draw(seed, &cluster, SIMULATED).apply(sim);
    }
    sim.run_checked(checkers, false)
}

/// `tenure fuzz --protocol <protocol> [--variant <variant>] --profile chaos`'s target.
fn fuzz_target(protocol: &str, variant: Option<&str>) -> Target {
    Target::for_protocol(
        &tenure_zoo_prebuilt::protocols(),
        protocol,
        variant,
        Some("chaos"),
    )
    .expect("a zoo protocol")
}

/// 10 simulated seconds of Redlock with 5 servers and `clients` clients (and its
/// storage node), no faults: the thundering herd of issue 38's 100,000-node row.
fn redlock_herd(clients: u32) -> tenure_sim::RunOutput {
    use tenure_protocols::redlock::{Redlock, RedlockParams};
    let cluster = Cluster::new(vec![
        RoleSpec::new("server", 5),
        RoleSpec::new("client", clients),
        RoleSpec::new("storage", 1),
    ])
    .expect("valid roles");
    let config = Redlock::configure_named(RedlockParams::default(), "correct", &cluster)
        .expect("valid params");
    Sim::<Redlock>::new(cluster, config, 1)
        .duration(Duration::from_secs(10))
        .run()
}

/// Runs `seeds` seeds and prints the derived figures. Wall time here only measures the
/// benchmark; it never affects a run.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn summary(name: &str, nodes: u32, faults: bool, seeds: u64) {
    summary_with(name, nodes, faults, false, seeds)
}

#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn summary_with(name: &str, nodes: u32, faults: bool, scaled: bool, seeds: u64) {
    let start = std::time::Instant::now();
    let (mut delivered, mut simulated) = (0u64, 0f64);
    for seed in 0..seeds {
        let run = raft_with(nodes, seed, faults, scaled);
        delivered += run.output.stats.messages_delivered;
        simulated += run.output.history.info.end.as_duration().as_secs_f64();
    }
    let wall = start.elapsed().as_secs_f64();
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

    let mut group = c.benchmark_group("fuzz");
    group.throughput(Throughput::Elements(1));
    for (name, protocol, variant) in FUZZ {
        let target = fuzz_target(protocol, variant);
        let mut seed = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                seed += 1;
                run_seed(&target, seed, false)
            })
        });
    }
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

    let mut group = c.benchmark_group("large");
    group.sample_size(10);
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.throughput(Throughput::Elements(SIMULATED.as_secs()));
    for nodes in LARGE_SCALED {
        group.bench_with_input(
            BenchmarkId::new("raft-scaled-60s", nodes),
            &nodes,
            |b, &n| b.iter(|| raft_with(n, 1, false, true)),
        );
    }
    for nodes in LARGE {
        group.bench_with_input(BenchmarkId::new("raft-60s", nodes), &nodes, |b, &n| {
            b.iter(|| raft(n, 1, false))
        });
    }
    group.finish();

    if huge() {
        let mut group = c.benchmark_group("huge");
        group.sample_size(10);
        group.sampling_mode(criterion::SamplingMode::Flat);
        for nodes in HUGE_SCALED {
            group.bench_with_input(
                BenchmarkId::new("raft-scaled-60s", nodes),
                &nodes,
                |b, &n| b.iter(|| raft_with(n, 1, false, true)),
            );
        }
        group.bench_function("redlock-100000-10s", |b| {
            b.iter(|| redlock_herd(HERD_CLIENTS))
        });
        group.finish();
    }
}

/// `fuzz` group: (bench name, protocol, variant), each under `chaos`.
/// `raft-log` is raft-rs's like-for-like (a log, clients, ReadIndex, transfers);
/// `raft` runs elections only.
const FUZZ: [(&str, &str, Option<&str>); 3] = [
    ("raft-chaos", "raft", None),
    ("raft-log-chaos", "raft-log", None),
    ("raft-rs-hardened-chaos", "raft-rs", Some("hardened")),
];
/// The clusters of the `huge` group (`TENURE_BENCH_HUGE=1`), timeouts scaled.
const HUGE_SCALED: [u32; 2] = [5001, 10000];
/// Clients of `huge/redlock-100000-10s`: with 5 servers and a storage node, 100,000.
const HERD_CLIENTS: u32 = 99_994;

fn huge() -> bool {
    std::env::var_os("TENURE_BENCH_HUGE").is_some_and(|v| v == "1")
}

/// Runs `seeds` seeds of `target` as `tenure fuzz` does and prints seeds/s; returns it.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn fuzz_summary(name: &str, target: &Target, seeds: u64) -> f64 {
    let start = std::time::Instant::now();
    for seed in 0..seeds {
        run_seed(target, seed, false);
    }
    let rate = seeds as f64 / start.elapsed().as_secs_f64();
    println!("{name:<28} {seeds:>4} seeds  {rate:>8.1} seeds/s");
    rate
}

/// Prints the wall time and messages of the 100,000-node herd.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn herd_summary() {
    let start = std::time::Instant::now();
    let out = redlock_herd(HERD_CLIENTS);
    let wall = start.elapsed().as_secs_f64();
    let msgs = out.stats.messages_delivered;
    println!(
        "{:<28} {:>8.1} s  {msgs:>10} msgs delivered  {:>7.3} us/msg",
        "redlock-100000-10s",
        wall,
        wall * 1e6 / msgs.max(1) as f64
    );
}

/// The large clusters of the `large` group.
const LARGE: [u32; 3] = [301, 1001, 2001];
/// The large clusters run with the election timeout range scaled to the cluster.
const LARGE_SCALED: [u32; 2] = [1001, 2001];

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // `cargo test` builds benches; only `cargo bench` runs them
    }
    println!("tenure-sim summary (wall time over a batch of seeds):");
    summary("raft-5-chaos-60s-checked", 5, true, 200);
    for (nodes, seeds) in [(5, 50), (11, 20), (25, 10), (51, 5), (101, 3)] {
        summary(&format!("raft-{nodes}-60s"), nodes, false, seeds);
    }
    for nodes in LARGE {
        summary(&format!("raft-{nodes}-60s"), nodes, false, 1);
    }
    for nodes in LARGE_SCALED {
        summary_with(&format!("raft-scaled-{nodes}-60s"), nodes, false, true, 1);
    }
    let zoo = fuzz_summary("fuzz raft chaos", &fuzz_target("raft", None), 500);
    let log = fuzz_summary("fuzz raft-log chaos", &fuzz_target("raft-log", None), 100);
    let real = fuzz_summary(
        "fuzz raft-rs hardened chaos",
        &fuzz_target("raft-rs", Some("hardened")),
        50,
    );
    println!(
        "raft-rs a seed: {:.1}x the zoo's raft, {:.1}x raft-log",
        zoo / real,
        log / real
    );
    if huge() {
        for nodes in HUGE_SCALED {
            summary_with(&format!("raft-scaled-{nodes}-60s"), nodes, false, true, 1);
        }
        herd_summary();
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
