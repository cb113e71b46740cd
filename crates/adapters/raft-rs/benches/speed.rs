//! raft-rs at speed (issue 38): `cargo bench -p tenure-raft-rs`.
//!
//! One fuzzed seed of `raft-rs` `hardened` under the `chaos` profile beside one of the
//! zoo's `raft` (`correct`: elections only, no clients) and one of the zoo's `raft-log`
//! (`correct`: a log, a key-value state machine, clients, ReadIndex reads and
//! leadership transfers, judged by the same checkers as raft-rs: the like-for-like
//! comparison) under the same profile, each run as `tenure fuzz` runs a seed
//! (`tenure_fuzz::run_seed`: faults drawn from the seed, the protocol's checkers online,
//! the liveness phase), so the ratios are measured in one run on one machine. Issue
//! 38's goal: raft-rs within 5x of the zoo's Raft.
//!
//! Before criterion's measurements, a summary measured directly over the same batch of
//! seeds for both prints seeds/s and the ratio.
//!
//! The bench allocates with mimalloc, as the `tenure` binary does. Benches do nothing
//! under `cargo test` (only `cargo bench` passes `--bench`).

use criterion::{Criterion, Throughput};
use std::sync::OnceLock;
use tenure_fuzz::{run_seed, SeedResult, Target};
use tenure_sim::Protocols;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The targets compared, (protocol, variant), all under `PROFILE`: the zoo's, then
/// raft-rs (last).
const TARGETS: [(&str, &str); 3] = [
    ("raft", "correct"),
    ("raft-log", "correct"),
    ("raft-rs", "hardened"),
];
const PROFILE: &str = "chaos";
/// Seeds per target in the summary (about 10 s of raft-rs on one core).
const SUMMARY_SEEDS: u64 = 200;

fn zoo() -> &'static Protocols {
    static ZOO: OnceLock<Protocols> = OnceLock::new();
    ZOO.get_or_init(tenure_zoo_prebuilt::protocols)
}

fn target(protocol: &str, variant: &str) -> Target {
    Target::for_protocol(zoo(), protocol, Some(variant), Some(PROFILE))
        .unwrap_or_else(|e| panic!("{protocol}/{variant} under {PROFILE}: {e}"))
}

/// Runs one seed and insists it passed (a correct variant under a within-assumptions
/// profile: anything else would make the timing meaningless).
fn seed(t: &Target, name: &str, seed: u64) {
    let outcome = run_seed(t, seed, false);
    assert!(
        matches!(outcome.result, SeedResult::Pass),
        "{name} seed {seed} did not pass"
    );
}

/// Seeds/s of each target over the same seeds, and the ratios to raft-rs. Wall time here only
/// measures the benchmark; it never affects a run.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn summary() {
    let mut rates = Vec::new();
    for (protocol, variant) in TARGETS {
        let name = format!("{protocol}/{variant}");
        let t = target(protocol, variant);
        let start = std::time::Instant::now();
        for s in 0..SUMMARY_SEEDS {
            seed(&t, &name, s);
        }
        let rate = SUMMARY_SEEDS as f64 / start.elapsed().as_secs_f64();
        println!("{name:<20} {PROFILE} {SUMMARY_SEEDS:>4} seeds  {rate:>8.1} seeds/s");
        rates.push(rate);
    }
    let (rs, rs_rate) = (TARGETS[TARGETS.len() - 1], rates[rates.len() - 1]);
    for ((protocol, variant), rate) in TARGETS.iter().zip(&rates).take(TARGETS.len() - 1) {
        println!(
            "{protocol}/{variant} is {:.1}x as fast as {}/{}",
            rate / rs_rate,
            rs.0,
            rs.1
        );
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("fuzz-chaos");
    group.throughput(Throughput::Elements(1));
    for (protocol, variant) in TARGETS {
        let name = format!("{protocol}/{variant}");
        let t = target(protocol, variant);
        let mut s = 0u64;
        group.bench_function(&name, |b| {
            b.iter(|| {
                s += 1;
                seed(&t, &name, s)
            })
        });
    }
    group.finish();
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // `cargo test` builds benches; only `cargo bench` runs them
    }
    println!("raft-rs at speed (wall time over a batch of seeds, one thread):");
    summary();
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
