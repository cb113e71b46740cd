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

use tenure_models::registry::WALK_DEPTH;

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
            let expect_failure = !variant.breaks.is_empty() && entry.in_scope(variant.name);
            let seeds = if expect_failure {
                SEEDS_BROKEN
            } else {
                SEEDS_CLEAN
            };
            let report = zoo().walk_model(&query, 0..seeds, WALK_DEPTH).unwrap();
            match (&report.failure, expect_failure) {
                (Some(f), true) => {
                    let property = f.counterexample.property.as_str();
                    let stands_for = entry
                        .spec()
                        .stands_for
                        .iter()
                        .find(|(p, _)| *p == property)
                        .map(|(_, checker)| *checker);
                    let checker = stands_for.unwrap_or(property);
                    assert!(
                        variant.breaks.contains(&checker),
                        "{label}: walk seed {} broke {property}, not one of {:?}",
                        f.seed,
                        variant.breaks
                    );
                    println!("{label}: seed {} breaks {property}", f.seed);
                }
                (None, true) => panic!("{label}: no walk in 0..{seeds} found a violation"),
                (Some(f), false) => panic!(
                    "{label}: walk seed {} broke {}:\n{}",
                    f.seed, f.counterexample.property, f.counterexample
                ),
                (None, false) => println!("{label}: {seeds} walks, none broken"),
            }
        }
    }
}

fn zoo() -> tenure_models::Models {
    tenure_zoo_prebuilt::models()
}
