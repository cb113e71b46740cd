//! The zoo's catalogue (crates/zoo): one entry per protocol, and the catalogue's variant
//! types name the listed variants. Here rather than in the zoo crate, whose test build
//! would compile the simulator for every protocol a second time (crates/zoo/Cargo.toml).

use tenure_zoo::Zoo;

#[test]
fn every_protocol_is_listed_once() {
    let names = tenure_core::catalogue_names(&Zoo);
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "{names:?}");
    assert_eq!(names[0], "raft");
}

#[test]
fn every_variant_type_names_the_listed_variants() {
    assert_eq!(tenure_core::variant_mismatches(&Zoo), Vec::<String>::new());
}

/// The prebuilt registries list the catalogue's protocols, in its order: the simulator
/// all of them, the model checker those it models (each of the others with its reason).
#[test]
fn the_prebuilt_registries_are_the_catalogues() {
    let names = tenure_core::catalogue_names(&Zoo);
    let sim: Vec<&str> = tenure_zoo::protocols()
        .entries()
        .iter()
        .map(|e| e.info.name)
        .collect();
    assert_eq!(sim, names);
    let models = tenure_zoo::models();
    let modelled: Vec<&str> = models.entries().iter().map(|e| e.info().name).collect();
    let not: Vec<&str> = models.not_modelled().iter().map(|(n, _)| *n).collect();
    let expected: Vec<&str> = names.iter().copied().filter(|n| !not.contains(n)).collect();
    assert_eq!(modelled, expected, "not modelled: {not:?}");
    assert_eq!(modelled.len() + not.len(), names.len());
    assert!(!modelled.is_empty());
}
