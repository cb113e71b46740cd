//! A checker is trusted only once a broken protocol makes it fail. For every checker in
//! the catalog, some scenario runs a *broken variant* and expects that checker's
//! violation (the scenarios test proves the violation happens); and every broken
//! variant is shown failing in some scenario.

use crate::support::scenario_files;
use std::collections::BTreeSet;
use tenure_scenario::{Expectation, Scenario};

fn scenarios() -> Vec<Scenario> {
    scenario_files()
        .iter()
        .map(|p| tenure_scenario::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn is_broken(s: &Scenario) -> bool {
    crate::support::zoo()
        .lookup(&s.protocol.name)
        .and_then(|e| e.info.variant(&s.protocol.variant))
        .is_some_and(|v| !v.breaks.is_empty())
}

#[test]
fn every_checker_is_made_to_fail_by_a_broken_variant() {
    let mut failed: BTreeSet<String> = BTreeSet::new();
    for s in scenarios() {
        if let Expectation::Violation { checker } = &s.expect {
            if is_broken(&s) {
                failed.insert(checker.clone());
            }
        }
    }
    let missing: Vec<&str> = tenure_check::catalog()
        .iter()
        .map(|c| c.name)
        .filter(|n| !failed.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "checkers no broken variant is shown to fail (untrusted): {missing:?}"
    );
}

#[test]
fn every_broken_variant_is_shown_failing_a_checker_it_claims_to_break() {
    let all = scenarios();
    for entry in crate::support::zoo().entries() {
        for v in entry.info.variants.iter().filter(|v| !v.breaks.is_empty()) {
            let shown = all.iter().any(|s| {
                s.protocol.name == entry.info.name
                    && s.protocol.variant == v.name
                    && matches!(&s.expect, Expectation::Violation { checker } if v.breaks.contains(&checker.as_str()))
            });
            assert!(
                shown,
                "{}/{} claims to break {:?} but no scenario shows it",
                entry.info.name, v.name, v.breaks
            );
        }
    }
}

#[test]
fn every_broken_variant_names_known_checkers() {
    let known: BTreeSet<&str> = tenure_check::catalog().iter().map(|c| c.name).collect();
    for entry in crate::support::zoo().entries() {
        // A correct variant comes first (the default of `fuzz --protocol`): `correct` in
        // the zoo's models; real code names its configurations (raft-rs: `defaults`).
        assert!(
            entry.info.variants[0].breaks.is_empty(),
            "{}: a correct variant comes first, not {}",
            entry.info.name,
            entry.info.variants[0].name
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
