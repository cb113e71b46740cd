//! The model checker's integration tests, one test binary (each file a module; CI time,
//! issue 38).

mod bully;
mod locks;
mod multi_paxos;
mod paxos;
mod pbft;
mod raft;
mod raft_log;
mod registry;
mod walks;
mod zk_ensemble;

use tenure_models::{Counterexample, Models, Report};

/// The zoo's model registry, which every module explores.
fn zoo() -> Models {
    tenure_zoo_prebuilt::models()
}

/// Breadth-first search of `protocol`'s `variant` with its default (its own) bounds:
/// the report, and its counterexample, which must break `property` at `depth`; the
/// search is complete to the level below, so no shorter counterexample exists.
fn shortest(
    protocol: &str,
    variant: &str,
    property: &str,
    depth: usize,
) -> (Report, Counterexample) {
    let models = zoo();
    let q = models.query(protocol, variant).unwrap();
    let report = models.check_model(&q).unwrap();
    println!("{report}");
    let cex = report
        .counterexample
        .clone()
        .unwrap_or_else(|| panic!("{protocol}/{variant}: no violation within {:?}", q.bounds));
    assert_eq!(
        (cex.property.as_str(), cex.depth),
        (property, depth),
        "{cex}"
    );
    assert!(report.complete, "{report}");
    (report, cex)
}
