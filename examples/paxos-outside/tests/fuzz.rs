//! The library path: each planted bug is found by the built-in `power` profile, whose
//! faults strike as the run starts, where this Paxos makes its one decision; a failure
//! of each shrinks to at most four fault events and replays; the correct Paxos passes
//! every built-in profile within its assumptions.
//!
//! Measured (`cargo run --release -p paxos-outside -- fuzz --protocol paxos --variant V
//! --profile P --seeds 0..1000`): `power` finds `promise-in-memory` in 4 of 1,000
//! seeds and `reply-before-sync` in 6; every other built-in profile in at most 1 (with
//! the profiles before issue 33: 1 and 8). A one-shot decision made
//! in the first milliseconds is broken only by faults that land inside its race (a
//! power loss between an answer and its sync, the node back within milliseconds) on a
//! network that reorders the race (slow links, slow disks): rare under random faults.

use paxos_outside::{cluster, Params, Paxos, PaxosVariant};
use tenure::prelude::*;

fn simulation(variant: PaxosVariant, profile: &str) -> Simulation<Paxos> {
    let config = Paxos::configure(Params::default(), variant, &cluster()).expect("default params");
    Simulation::<Paxos>::new(cluster(), config)
        .profile(profile)
        .check("state-machine-safety")
}

/// Sweeps 0..1000 under `profile`, expects failures at `seeds`; each replays; `small`
/// (one of them) shrinks to at most four events (a power flap may keep a few of its
/// cycles: the forgetting acceptor loses power again as the race goes on), and those
/// replay.
fn found_and_shrunk(variant: PaxosVariant, profile: &str, seeds: &[u64], small: u64) {
    let sim = simulation(variant, profile);
    let count = sim.sweep_count(0..1000);
    println!("{variant} under {profile}: {count}");
    assert_eq!(count.failing_seeds, seeds, "{variant} under {profile}");
    for &seed in seeds {
        let failed = sim.run_seed(seed);
        assert_eq!(failed.violations[0].checker, "state-machine-safety");
        assert!(
            failed.beyond.is_empty(),
            "within the assumptions: {:?}",
            failed.beyond
        );
    }
    let shrunk = sim.shrink(small).expect("a failing seed shrinks");
    println!("{shrunk}");
    assert!(shrunk.faults.len() <= 4, "{shrunk}");
    let replay = sim.run_seed_with_faults(shrunk.seed, &shrunk.faults);
    assert!(
        replay
            .violations
            .iter()
            .any(|v| v.checker == "state-machine-safety"),
        "{shrunk}"
    );
}

#[test]
fn promise_in_memory() {
    found_and_shrunk(
        PaxosVariant::PromiseInMemory,
        "power",
        &[267, 279, 446, 705],
        446,
    );
}

#[test]
fn reply_before_sync() {
    found_and_shrunk(
        PaxosVariant::ReplyBeforeSync,
        "power",
        &[181, 496, 579, 631, 972, 996],
        181,
    );
}

/// The correct Paxos: 200 seeds of every built-in profile within its assumptions (the
/// command line's 1,000 of each pass too).
#[test]
fn the_correct_paxos_passes_every_profile() {
    for &profile in tenure::fuzz::WITHIN_PROFILES {
        simulation(PaxosVariant::Correct, profile)
            .named(&format!("correct-{profile}"))
            .sweep(0..200);
    }
}

#[test]
fn the_variant_type_names_the_listed_variants() {
    assert_eq!(
        tenure::variant_mismatches(&paxos_outside::PaxosProtocols),
        Vec::<String>::new()
    );
}
