//! Random walks over every variant in the registry, cross-checked against what the
//! zoo says each variant breaks (`ProtocolInfo` `breaks`), which the simulator's fuzz
//! acceptance test asserts from its side; `tests/integration/walks_vs_fuzz.rs` compares
//! the two verdicts directly.
//!
//! * A broken variant the model can show failing: some walk within the seed bound
//!   breaks a checker its `breaks` lists, or a model property that stands for one
//!   (`ModelEntry::stands_for`).
//! * A correct variant, or a broken one whose failure needs real timing or is liveness
//!   (`ModelEntry::out_of_scope`): no walk within the bound breaks anything.

use crate::zoo;
use tenure_models::registry::{WALK_DEPTH, WALK_EVENTS};
use tenure_models::WalkDepth;

/// Seeds tried on a variant the walks must break (they stop at the first failure).
const SEEDS_BROKEN: u64 = 5_000;
/// Seeds on which a variant must stay unbroken.
const SEEDS_CLEAN: u64 = 300;

#[test]
fn walks_agree_with_what_each_variant_breaks() {
    let models = zoo();
    for entry in models.entries() {
        let info = entry.info();
        for variant in info.variants {
            let query = zoo().query_for_walks(info.name, variant.name).unwrap();
            let label = format!("{} {}", info.name, variant.name);
            // A variant the walks are declared to miss (`walks_miss`, with its reason)
            // may pass them; if one breaks it, it must break what the variant breaks.
            let walks_miss = entry.walks_miss(variant.name).is_some();
            let expect_failure =
                !variant.breaks.is_empty() && entry.in_scope(variant.name) && !walks_miss;
            let seeds = if expect_failure {
                SEEDS_BROKEN
            } else {
                SEEDS_CLEAN
            };
            let report = zoo().walk_model_to(&query, 0..seeds, WALK_DEPTH).unwrap();
            match (&report.failure, expect_failure) {
                (Some(f), _) if expect_failure || walks_miss => {
                    let property = f.counterexample.property.as_str();
                    let checker = entry.spec().checker_for(property);
                    assert!(
                        variant.breaks.contains(&checker),
                        "{label}: walk seed {} broke {property}, not one of {:?}",
                        f.seed,
                        variant.breaks
                    );
                    println!("{label}: seed {} breaks {property}", f.seed);
                }
                (None, true) => panic!("{label}: no walk in 0..{seeds} found a violation"),
                (Some(f), _) => panic!(
                    "{label}: walk seed {} broke {}:\n{}",
                    f.seed, f.counterexample.property, f.counterexample
                ),
                (None, false) => println!("{label}: {seeds} walks, none broken"),
            }
        }
    }
}

/// Seeds of one command-line run of walks, `check-model --walk 1000`: what "the
/// default walk finds it" means here. (With 300, raft-log's `no-log-check` is left: its
/// first breaking walk is seed 326 at any depth, a rare interleaving, not a deep one.)
const CLI_SEEDS: u64 = 1000;

/// The walks' old default bound, 60 steps of any kind, which timer firings filled.
const OLD_STEPS: usize = 60;

/// Every broken variant the zoo's models can show, and that some of them declare
/// timers (so the depth in events differs from the depth in steps).
fn in_scope_broken() -> Vec<(&'static str, &'static str, &'static [&'static str])> {
    let models = zoo();
    let mut out = Vec::new();
    for entry in models.entries() {
        let info = entry.info();
        for v in info.variants {
            if !v.breaks.is_empty() && entry.in_scope(v.name) && entry.walks_miss(v.name).is_none()
            {
                out.push((info.name, v.name, v.breaks));
            }
        }
    }
    out
}

/// The checker a walk's failure stands for (a model property maps to the checker it
/// stands for).
fn checker_of(protocol: &str, property: &str) -> String {
    let models = zoo();
    let entry = models.lookup(protocol).expect("in the registry");
    entry.spec().checker_for(property).to_string()
}

/// Issue 33, item 5: the default walks count events, not timer firings, so one
/// command line's walks (`--walk 1000`, no `--max-depth`) find every bug the zoo's
/// models can show, on the timer-driven protocols as on the others. The negative
/// control: the old default, 60 steps, misses some of them within the same seeds
/// (a lease protocol's walks spent their steps on timers).
#[test]
fn default_walks_count_events_and_find_every_in_scope_bug_in_one_command_line() {
    let models = zoo();
    let mut missed_by_steps = Vec::new();
    let mut timer_driven = 0;
    for (protocol, variant, breaks) in in_scope_broken() {
        let label = format!("{protocol} {variant}");
        let query = models.query_for_walks(protocol, variant).unwrap();
        let report = models
            .walk_model_to(&query, 0..CLI_SEEDS, WALK_DEPTH)
            .unwrap();
        assert_eq!(report.depth, WalkDepth::Events(WALK_EVENTS));
        assert_eq!(
            report.max_steps,
            WALK_EVENTS * (1 + report.timers_at_start),
            "{label}: the step cap is derived from the events and the timers"
        );
        if report.timers_at_start > 0 {
            timer_driven += 1;
        }
        let failure = report
            .failure
            .unwrap_or_else(|| panic!("{label}: no default walk in 0..{CLI_SEEDS} broke it"));
        let checker = checker_of(protocol, &failure.counterexample.property);
        assert!(
            breaks.contains(&checker.as_str()),
            "{label}: seed {} broke {checker}, not one of {breaks:?}",
            failure.seed
        );
        let old = models.walk_model(&query, 0..CLI_SEEDS, OLD_STEPS).unwrap();
        println!(
            "{label}: default walks find it at seed {} ({} steps); {OLD_STEPS} steps: {}",
            failure.seed,
            failure.counterexample.depth,
            old.failure
                .as_ref()
                .map_or("missed".to_string(), |f| format!("seed {}", f.seed))
        );
        if old.failure.is_none() {
            missed_by_steps.push(label);
        }
    }
    assert!(
        timer_driven >= 5,
        "only {timer_driven} of the models have timers"
    );
    assert!(
        !missed_by_steps.is_empty(),
        "the old {OLD_STEPS}-step walks find every bug too: the test shows nothing"
    );
    println!("missed at {OLD_STEPS} steps: {missed_by_steps:?}");
}

/// An explicit bound in steps walks as before: `Steps(n)` is the old `walk(seeds, n)`,
/// the events are counted but do not end a walk.
#[test]
fn a_bound_in_steps_ends_walks_at_that_many_steps() {
    let models = zoo();
    let query = models.query_for_walks("fencing", "correct").unwrap();
    let steps = models.walk_model(&query, 0..20, 30).unwrap();
    assert_eq!(steps.depth, WalkDepth::Steps(30));
    assert_eq!(steps.max_steps, 30);
    assert!(steps.steps_total <= 20 * 30);
    assert!(steps.events_total <= steps.steps_total);
    let events = models
        .walk_model_to(&query, 0..20, WalkDepth::Events(30))
        .unwrap();
    assert!(events.timers_at_start > 0, "fencing's nodes start timers");
    // Timer firings do not count: the same number of events takes more steps.
    assert!(events.events_total <= 20 * 30);
    assert!(
        events.steps_total > steps.steps_total,
        "{} steps for 30 events a walk, {} for 30 steps",
        events.steps_total,
        steps.steps_total
    );
}
