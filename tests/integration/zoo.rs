//! The zoo's prebuilt registries (crates/zoo-prebuilt, which has no tests of its own: its
//! test build would compile the simulator for every protocol a second time).

use tenure_zoo::Zoo;

/// The prebuilt registries list the catalogue's protocols, in its order: the simulator
/// all of them, the model checker those it models (each of the others with its reason).
#[test]
fn the_prebuilt_registries_are_the_catalogues() {
    let names = tenure_core::catalogue_names(&Zoo);
    let sim: Vec<&str> = tenure_zoo_prebuilt::protocols()
        .entries()
        .iter()
        .map(|e| e.info.name)
        .collect();
    assert_eq!(sim, names);
    let models = tenure_zoo_prebuilt::models();
    let modelled: Vec<&str> = models.entries().iter().map(|e| e.info().name).collect();
    let not: Vec<&str> = models.not_modelled().iter().map(|(n, _)| *n).collect();
    let expected: Vec<&str> = names.iter().copied().filter(|n| !not.contains(n)).collect();
    assert_eq!(modelled, expected, "not modelled: {not:?}");
    assert_eq!(modelled.len() + not.len(), names.len());
    assert!(!modelled.is_empty());
}
