//! One verdict on every path: for every protocol of the zoo and every variant, the same
//! (variant, profile, seed) gives the same verdict (pass, or the same violation at the
//! same time in the same words, and the same counts of what each check judged) through
//! `tenure fuzz --protocol`, the file `--print` writes run as `tenure run` runs it, and
//! the library's `Simulation`.

use tenure::cli::Zoo;
use tenure::paths::same_verdict_on_every_path;

/// Seeds per (protocol, variant, profile).
const SEEDS: u64 = 100;

#[test]
fn every_zoo_protocol_gets_one_verdict_on_every_path() {
    let mut compared = 0;
    for protocol in tenure::catalogue_names(&Zoo) {
        for variant in tenure::paths::variants(&Zoo, protocol) {
            // Real code run through an adapter costs about ten times a zoo model's seed
            // (raft-rs: ~16 ms of CPU against ~1.7 ms for the zoo's Raft): fewer seeds.
            let seeds = if protocol == "raft-rs" { 25 } else { SEEDS };
            for profile in ["chaos", "power"] {
                compared +=
                    same_verdict_on_every_path(&Zoo, protocol, Some(variant), profile, 0..seeds)
                        .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    assert!(compared >= 12 * 2 * 2 * SEEDS, "{compared} seeds compared");
}
