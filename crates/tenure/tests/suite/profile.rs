//! Typed access to fault-profile knobs from the facade (issue 9, item 5): a profile is a
//! struct of documented fields, built from a built-in one; its knobs change what the
//! seeds of a sweep draw; a knob out of range is refused where it is set.

use tenure::fuzz::{Draw, Profile};
use tenure::prelude::*;
use tenure::{Configurable, Fault};
use tenure_protocols::raft::Raft;

fn raft(variant: &str) -> Simulation<Raft> {
    let cluster = Cluster::uniform("server", 5);
    let config = Raft::configure_named(Default::default(), variant, &cluster).unwrap();
    Simulation::<Raft>::new(cluster, config)
        .duration(secs(10))
        .check("single-leader-per-term")
}

/// Crash storms only: every seed crashes nodes, most of them flapping.
fn crash_storms() -> Result<Profile, String> {
    Ok(Profile {
        crash: 1.0,
        flap: 1.0,
        events: [3, 6],
        ..Profile::builtin("calm")?
    })
}

#[test]
fn knobs_change_what_every_seed_draws() -> Result<(), String> {
    let cluster = Cluster::uniform("server", 5);
    let calm = Profile::builtin("calm")?;
    let storms = crash_storms()?;
    for seed in 0..50 {
        assert!(calm.draw(seed, &cluster, secs(10)).faults.is_empty());
        let drawn = storms.draw(seed, &cluster, secs(10)).faults;
        assert!(
            drawn.iter().any(|e| matches!(e.fault, Fault::Crash { .. })),
            "seed {seed}: crash = 1.0 crashes a node"
        );
        assert!(
            drawn
                .iter()
                .all(|e| !matches!(e.fault, Fault::Pause { .. } | Fault::ClockJump { .. })),
            "seed {seed}: the knobs left at calm draw nothing"
        );
    }
    Ok(())
}

#[test]
fn a_sweep_with_changed_knobs_finds_a_vote_forgotten_across_restarts() -> Result<(), String> {
    // The positive control: a correct Raft passes the same seeds.
    let seeds = 0..60;
    let correct = raft("correct").fault_profile(crash_storms()?);
    for seed in seeds.clone() {
        correct.run_seed(seed).assert_ok();
    }
    // A node that forgets its vote when it restarts gives it twice in one term; crash
    // storms find it.
    let broken = raft("forget-vote").fault_profile(crash_storms()?);
    let found = seeds
        .clone()
        .map(|seed| broken.run_seed(seed))
        .find(|o| !o.passed())
        .expect("crash storms find the forgotten vote within 60 seeds");
    assert_eq!(found.violations[0].checker, "single-leader-per-term");
    // The calm profile, knobs untouched, never restarts a node: nothing to find.
    let calm = raft("forget-vote").fault_profile(Profile::builtin("calm")?);
    assert!(seeds.take(10).all(|seed| calm.run_seed(seed).passed()));
    Ok(())
}

#[test]
#[should_panic(expected = "knob `pause`: 1.5 is not a probability")]
fn a_knob_out_of_range_is_refused_where_it_is_set() {
    let _ = raft("correct").fault_profile(Profile {
        pause: 1.5,
        ..Profile::builtin("chaos").unwrap()
    });
}

#[test]
fn an_unknown_built_in_name_lists_the_names() {
    let err = Profile::builtin("chaso").unwrap_err();
    assert!(err.contains("known profiles: calm, partitions"), "{err}");
    assert!(err.ends_with("did you mean `chaos`?"), "{err}");
}
