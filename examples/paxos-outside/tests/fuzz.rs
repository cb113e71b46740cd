//! The library path: each planted bug is found by the built-in `power` profile, whose
//! faults strike as the run starts, where this Paxos makes its one decision; a failure
//! of each shrinks to at most four fault events and replays; the correct Paxos passes
//! every built-in profile within its assumptions.
//!
//! Measured (`cargo run --release -p paxos-outside -- fuzz --protocol paxos --variant V
//! --profile P --seeds 0..1000`): `power` finds `promise-in-memory` in 3 of 1,000
//! seeds and `reply-before-sync` in 9; `chaos` finds `promise-in-memory` in 1; no other
//! built-in profile finds either. With the decision repeated (`instances = 40`, one every
//! 200 ms: a scenario's `[protocol.params]`), `power` finds `reply-before-sync` in 16 of
//! 1,000 seeds (1.6%) and `promise-in-memory` in 5. A one-shot decision made in the first
//! milliseconds is broken only by faults that land inside its race (a power loss between
//! an answer and its sync, the node back within milliseconds) on a network that reorders
//! the race (slow links, slow disks): rare under random faults. `power`'s flaps and its
//! early crash points strike the first decision; later ones meet only its faults drawn at
//! random times, which mostly fall between two races.
//!
//! How rare the first bug is, measured (`power` with every fault kind off but its slow
//! links, forced on, and one crash point placed by hand where the bug needs it:
//! acceptor 3 crashes right after its second promise): with a reboot 1 ms later,
//! agreement breaks in 33 of 1,000 seeds; 5 ms, 22; 10 ms, none. The lower ballot's
//! accept must reach the rebooted acceptor, and a second acceptor must take it before
//! the higher ballot's prepare arrives: three messages outrunning one, which only some
//! slow-link draws allow. `power` itself finds it in 10 of 3,000 seeds (0.33%): under
//! issue 33's bar of 1%, and 100 decisions every 80 ms do not help (4 of 1,000). The
//! zoo's `paxos/forget-promise` (two proposers) meets the bar on that denser workload:
//! 13 of 1,000 (`scenarios/paxos/hundred-decisions.toml`, tests/integration/fuzz.rs).
//!
//! Before the proposers backed off (doubling their retry with every ballot), slow links
//! left 144 of 2,000 `power` seeds, 365 of `chaos` and 518 of `field` with nothing decided
//! (not judged: dueling proposers); now none.

use paxos_outside::{cluster, Params, Paxos, PaxosVariant};
use tenure::prelude::*;

fn simulation(variant: PaxosVariant, profile: &str) -> Simulation<Paxos> {
    simulation_with(Params::default(), variant, profile)
}

fn simulation_with(params: Params, variant: PaxosVariant, profile: &str) -> Simulation<Paxos> {
    let config = Paxos::configure(params, variant, &cluster()).expect("valid params");
    Simulation::<Paxos>::new(cluster(), config)
        .profile(profile)
        .check("state-machine-safety")
}

/// Sweeps 0..1000 under `profile`, expects failures at `seeds`; each replays; `small`
/// (one of them) shrinks to at most four events (a power flap may keep a few of its
/// cycles: the forgetting acceptor loses power again as the race goes on), and those
/// replay.
fn found_and_shrunk(variant: PaxosVariant, profile: &str, seeds: &[u64], small: u64) {
    found_and_shrunk_in(simulation(variant, profile), variant, profile, seeds, small);
}

fn found_and_shrunk_in(
    sim: Simulation<Paxos>,
    variant: PaxosVariant,
    profile: &str,
    seeds: &[u64],
    small: u64,
) {
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
        &[181, 279, 307],
        307,
    );
}

#[test]
fn reply_before_sync() {
    found_and_shrunk(
        PaxosVariant::ReplyBeforeSync,
        "power",
        &[181, 215, 237, 376, 435, 579, 631, 972, 996],
        181,
    );
}

/// The decision repeated 40 times (one every 200 ms): `power` finds `reply-before-sync`
/// in more than 1% of 1,000 seeds (issue 33's bar for a one-shot decision's planted
/// bug), each within the assumptions, and one shrinks and replays.
#[test]
fn reply_before_sync_with_forty_decisions() {
    let params = Params {
        instances: Some(40),
        ..Params::default()
    };
    let variant = PaxosVariant::ReplyBeforeSync;
    let seeds = [
        37, 170, 181, 215, 216, 376, 435, 539, 579, 603, 631, 705, 914, 958, 972, 996,
    ];
    assert!(seeds.len() >= 10, "at least 1% of 1,000 seeds");
    found_and_shrunk_in(
        simulation_with(params, variant, "power"),
        variant,
        "power",
        &seeds,
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
