//! A checker is trusted only once a broken protocol makes it fail: for every checker in
//! the catalog there is a scenario that expects its violation (and the scenarios test
//! proves the violation happens).

use crate::support::scenario_files;
use std::collections::BTreeSet;
use tenure_scenario::Expectation;

#[test]
fn every_checker_is_made_to_fail_by_some_scenario() {
    let mut failed_by_some: BTreeSet<String> = BTreeSet::new();
    for path in scenario_files() {
        let s = tenure_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        if let Expectation::Violation { checker } = s.expect {
            failed_by_some.insert(checker);
        }
    }
    let missing: Vec<&str> = tenure_check::catalog()
        .iter()
        .map(|c| c.name)
        .filter(|n| !failed_by_some.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "checkers no scenario makes fail (untrusted): {missing:?}"
    );
}

#[test]
fn every_broken_variant_names_known_checkers() {
    let known: BTreeSet<&str> = tenure_check::catalog().iter().map(|c| c.name).collect();
    for entry in tenure_sim::registry::entries() {
        assert_eq!(
            entry.info.variants[0].name, "correct",
            "{}: correct comes first",
            entry.info.name
        );
        for v in entry.info.variants {
            for b in v.breaks {
                assert!(
                    known.contains(b),
                    "{}/{} breaks unknown checker {b}",
                    entry.info.name,
                    v.name
                );
            }
        }
    }
}
