//! The zoo as the explorer sees it: which protocols declare model settings, and errors
//! that name the field at fault.

use crate::zoo;
use serde_json::json;
use tenure_models::{ModelError, Query};

#[test]
fn every_entry_is_a_zoo_protocol_and_its_defaults_build() {
    let names: Vec<&str> = zoo().entries().iter().map(|e| e.info().name).collect();
    assert_eq!(
        names,
        [
            "raft",
            "raft-log",
            "bully",
            "redis-lock",
            "fencing",
            "etcd-lock",
            "zookeeper",
            "zookeeper-ensemble",
            "idempotency",
            "paxos",
            "pbft",
            "multi-paxos"
        ]
    );
    let models = zoo();
    for e in models.entries() {
        for v in e.info().variants {
            let q = zoo().query(e.info().name, v.name).unwrap();
            build_any(&q);
        }
        for (variant, _) in e.spec().out_of_scope {
            assert!(e.info().variant(variant).is_some(), "{variant}");
        }
    }
}

fn build_any(q: &Query) {
    // A walk of zero steps builds the explorer and judges the initial state.
    let report = zoo().walk_model(q, 0..1, 0).unwrap();
    assert_eq!(report.seeds_run, 1);
}

#[test]
fn bad_queries_name_the_field() {
    let err = |r: Result<Query, ModelError>| r.unwrap_err().field;
    assert_eq!(err(zoo().query("viewstamped", "correct")), "protocol");
    let lease = zoo().query("leader-lease", "correct").unwrap_err();
    assert!(lease.message.contains("stay with the simulator"), "{lease}");
    assert_eq!(err(zoo().query("raft", "forgetful")), "variant");

    let mut q = zoo().query("fencing", "correct").unwrap();
    assert_eq!(q.set_nodes(3).unwrap_err().field, "nodes");
    assert_eq!(q.set_roles("client=two").unwrap_err().field, "roles");
    assert_eq!(q.set_roles("clients=2").unwrap_err().field, "roles");
    q.set_roles("client=3").unwrap();
    assert_eq!(q.cluster.count("client"), 3);
    assert_eq!(q.cluster.count("server"), 1);
    q.set_roles("server=2").unwrap();
    assert_eq!(zoo().check_model(&q).unwrap_err().field, "roles");

    let mut q = zoo().query("raft", "correct").unwrap();
    q.set_nodes(0).unwrap_err();
    q.checks = vec!["leader-liveness".into()];
    let e = zoo().check_model(&q).unwrap_err();
    assert_eq!(e.field, "checks");
    assert!(e.message.contains("liveness"), "{e}");
    q.checks = vec!["single-leader-per-trem".into()];
    assert_eq!(zoo().check_model(&q).unwrap_err().field, "checks");

    let mut q = zoo().query("bully", "correct").unwrap();
    q.checks = vec!["steps-down-on-higher-term".into()];
    assert_eq!(zoo().check_model(&q).unwrap_err().field, "checks");

    let mut q = zoo().query("fencing", "correct").unwrap();
    q.params = json!({ "max_attempts": 0 });
    assert_eq!(
        zoo().check_model(&q).unwrap_err().field,
        "params.max_attempts"
    );
    q.params = json!({ "max_atempts": 1 });
    assert_eq!(zoo().check_model(&q).unwrap_err().field, "params");
}
