//! The model explorer's random walks and the simulator's fuzzer judge the same zoo by
//! different means (free interleavings without time vs. timed runs under drawn faults).
//! For every broken variant both can show, their verdicts must agree: each finds a
//! violation, of a checker the variant claims to break (or, for the walks, of the model
//! property that stands for it).

use std::sync::atomic::AtomicBool;
use tenure_models::registry::WALK_DEPTH;

use tenure_fuzz::{fuzz, FuzzOptions, SeedResult, Target};

const WALK_SEEDS: u64 = 5_000;
const FUZZ_SEEDS: u64 = 1_000;

/// The checker the fuzzer's first failing seed violates, if any within the bound. A
/// protocol that tolerates Byzantine nodes is fuzzed under the `byzantine` profile, the
/// one built-in profile that draws liars (up to its declared `max-byzantine`), as the
/// walks turn nodes Byzantine up to it; the others under the default profile.
fn fuzz_verdict(protocol: &str, variant: &str, breaks: &[&str]) -> Option<String> {
    let zoo = crate::support::zoo();
    let mut target =
        Target::for_protocol(&zoo, protocol, Some(variant), None).expect("a zoo protocol");
    if target.assumptions.max_byzantine.is_some() {
        target = Target::for_protocol(&zoo, protocol, Some(variant), Some("byzantine"))
            .expect("a zoo protocol");
    }
    let mut found = None;
    let stop = AtomicBool::new(false);
    fuzz(
        &target,
        0..FUZZ_SEEDS,
        &FuzzOptions::default(),
        &stop,
        |o| {
            if let (None, SeedResult::Fail(f)) = (&found, &o.result) {
                if breaks.contains(&f.checker) {
                    found = Some(f.checker.to_string());
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
        },
    );
    found
}

#[test]
fn walks_and_fuzzing_agree_on_every_broken_variant_both_can_show() {
    let mut compared = 0;
    let models = crate::support::models();
    for entry in models.entries() {
        let info = entry.info();
        for variant in info
            .variants
            .iter()
            // Those the walks are declared to miss (`walks_miss`) are the
            // breadth-first search's to show, not the walks'.
            .filter(|v| {
                !v.breaks.is_empty() && entry.in_scope(v.name) && entry.walks_miss(v.name).is_none()
            })
        {
            let label = format!("{}/{}", info.name, variant.name);
            let query = models
                .query_for_walks(info.name, variant.name)
                .expect("in the registry");
            let walk = models
                .walk_model_to(&query, 0..WALK_SEEDS, WALK_DEPTH)
                .expect("walks run");
            let walked = walk.failure.map(|f| {
                entry
                    .spec()
                    .checker_for(&f.counterexample.property)
                    .to_string()
            });
            let fuzzed = fuzz_verdict(info.name, variant.name, variant.breaks);
            println!("{label}: walks -> {walked:?}, fuzz -> {fuzzed:?}");
            assert!(
                walked
                    .as_deref()
                    .is_some_and(|c| variant.breaks.contains(&c)),
                "{label}: the walks found {walked:?}, not one of {:?}",
                variant.breaks
            );
            assert!(
                fuzzed.is_some(),
                "{label}: the walks found {walked:?} but fuzzing found nothing"
            );
            compared += 1;
        }
    }
    assert!(
        compared >= 6,
        "only {compared} variants compared: the registries shrank"
    );
}
