//! One verdict on every path: for every protocol of the zoo and every variant, the same
//! (variant, profile, seed) gives the same verdict (pass, or the same violation at the
//! same time in the same words, and the same counts of what each check judged) through
//! `tenure fuzz --protocol`, the file `--print` writes run as `tenure run` runs it, and
//! the library's `Simulation`.
//!
//! The suite compares `SEEDS` seeds per (protocol, variant, profile), spread over the
//! machine's cores; `TENURE_ONE_PATH_SEEDS=N` compares N instead (the long run, e.g.
//! `TENURE_ONE_PATH_SEEDS=1000 cargo test --release -p tenure --test suite one_path::`).

use std::sync::Mutex;
use tenure::cli::Zoo;
use tenure::paths::same_verdict_on_every_path;

/// Seeds per (protocol, variant, profile) in the suite: 10 (it was 30; this test was
/// the facade suite's whole cost, about 6 minutes of CI: issue 38).
const SEEDS: u64 = 10;

fn seeds() -> u64 {
    std::env::var("TENURE_ONE_PATH_SEEDS")
        .ok()
        .map(|s| {
            s.parse()
                .expect("TENURE_ONE_PATH_SEEDS is a number of seeds")
        })
        .unwrap_or(SEEDS)
}

#[test]
fn every_zoo_protocol_gets_one_verdict_on_every_path() {
    let seeds = seeds();
    let mut cells = Vec::new();
    for protocol in tenure::catalogue_names(&Zoo) {
        for variant in tenure::paths::variants(&Zoo, protocol) {
            // Real code run through an adapter costs about ten times a zoo model's seed
            // (raft-rs: ~16 ms of CPU against ~1.7 ms for the zoo's Raft): fewer seeds.
            let n = if protocol == "raft-rs" {
                seeds.div_ceil(4)
            } else {
                seeds
            };
            for profile in ["chaos", "power"] {
                cells.push((protocol, variant, profile, n));
            }
        }
    }
    let queue = Mutex::new(cells.into_iter());
    let compared = Mutex::new(0u64);
    let failures = Mutex::new(Vec::<String>::new());
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let next = queue.lock().expect("the queue").next();
                let Some((protocol, variant, profile, n)) = next else {
                    return;
                };
                match same_verdict_on_every_path(&Zoo, protocol, Some(variant), profile, 0..n) {
                    Ok(agreed) => *compared.lock().expect("the count") += agreed,
                    Err(e) => failures.lock().expect("the failures").push(e),
                }
            });
        }
    });
    let failures = failures.into_inner().expect("the failures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let compared = compared.into_inner().expect("the count");
    assert!(compared >= 12 * 2 * 2 * seeds, "{compared} seeds compared");
}
