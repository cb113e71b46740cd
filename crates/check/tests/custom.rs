//! Checkers of your own (`tenure_check::custom`): registered once, then built by name
//! like a built-in one; never shadowing a built-in. A process of its own (an integration
//! test), because the registry is process-wide.

use serde_json::{json, Value};
use tenure_check::custom::{register, CustomChecker};
use tenure_check::{CheckKind, Checker, CheckerInfo, Violation};
use tenure_core::{Cluster, Observation, Record, RunInfo};

/// Fails on the first `Custom { name: "bad", .. }` record.
struct NoBad;

const INFO: CheckerInfo = CheckerInfo::new("test-no-bad", CheckKind::Safety, "no `bad` record")
    .with_property("no node records `Custom { name: \"bad\" }`")
    .with_source("this test");

impl Checker for NoBad {
    fn name(&self) -> &'static str {
        INFO.name
    }
    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        matches!(&record.obs, Observation::Custom { name, .. } if name == "bad").then(|| {
            Violation {
                checker: INFO.name,
                time: record.time,
                nodes: vec![record.node],
                message: "a bad record".into(),
                records: vec![index],
            }
        })
    }
    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }
}

#[test]
fn a_registered_checker_is_built_by_name_and_refuses_parameters_it_does_not_take() {
    let cluster = Cluster::uniform("node", 3);
    let before = tenure_check::build(INFO.name, &Value::Null, &cluster)
        .err()
        .expect("not registered yet");
    assert!(
        before.message.starts_with("unknown checker `test-no-bad`"),
        "{before}"
    );
    assert_eq!(tenure_check::kind_of(INFO.name), None);

    register(CustomChecker::without_params(INFO, |_| Box::new(NoBad))).unwrap();
    // Twice, the same: fine (a command line started twice in one test process).
    register(CustomChecker::without_params(INFO, |_| Box::new(NoBad))).unwrap();

    let checker = tenure_check::build(INFO.name, &Value::Null, &cluster).unwrap();
    assert_eq!(checker.name(), "test-no-bad");
    assert_eq!(tenure_check::kind_of(INFO.name), Some(CheckKind::Safety));
    assert!(tenure_check::is_custom(INFO.name));
    assert!(!tenure_check::is_custom("mutual-exclusion"));
    assert!(tenure_check::all().iter().any(|c| c.name == INFO.name));
    assert!(!tenure_check::catalog().iter().any(|c| c.name == INFO.name));
    let err = tenure_check::build(INFO.name, &json!({"within": "1s"}), &cluster)
        .err()
        .unwrap();
    assert_eq!(err.field, "within");
    // An unknown name lists the registered ones with the built-in ones.
    let err = tenure_check::build("test-no-good", &Value::Null, &cluster)
        .err()
        .unwrap();
    assert!(
        err.message.contains(", validity, ") && err.message.contains("test-no-bad"),
        "{err}"
    );

    // It judges like any other checker.
    let mut checker = tenure_check::build(INFO.name, &json!({}), &cluster).unwrap();
    let record = Record::new(
        tenure_core::SimTime(5),
        tenure_core::NodeId(1),
        tenure_core::LocalTime(0),
        tenure_core::LocalTime(0),
        Observation::Custom {
            name: "bad".into(),
            value: 0,
        },
    );
    assert_eq!(
        checker.on_record(0, &record).unwrap().checker,
        "test-no-bad"
    );
}

#[test]
fn a_checker_of_your_own_never_shadows_a_built_in_one_nor_another_of_the_same_name() {
    let shadow = CheckerInfo::new("mutual-exclusion", CheckKind::Safety, "mine");
    let err = register(CustomChecker::without_params(shadow, |_| Box::new(NoBad)))
        .expect_err("a built-in name is refused");
    assert!(err.message.contains("built-in checker's name"), "{err}");
    assert!(err.message.contains("mycrate-mutual-exclusion"), "{err}");

    let first = CheckerInfo::new("test-twice", CheckKind::Safety, "one");
    let second = CheckerInfo::new("test-twice", CheckKind::Liveness, "another");
    register(CustomChecker::without_params(first, |_| Box::new(NoBad))).unwrap();
    let err = register(CustomChecker::without_params(second, |_| Box::new(NoBad)))
        .expect_err("a second, different registration is refused");
    assert!(err.message.contains("registered already"), "{err}");
    assert_eq!(
        tenure_check::kind_of("test-twice"),
        Some(CheckKind::Safety),
        "the first one stays"
    );

    for bad in ["", "Upper", "under_score", "-lead", "trail-", "a--b"] {
        let info = CheckerInfo::new(bad, CheckKind::Safety, "bad name");
        assert!(
            register(CustomChecker::without_params(info, |_| Box::new(NoBad))).is_err(),
            "`{bad}` accepted"
        );
    }
}

#[test]
fn a_checker_whose_name_differs_from_its_registration_is_refused_when_built() {
    let info = CheckerInfo::new("test-misnamed", CheckKind::Safety, "builds NoBad");
    register(CustomChecker::without_params(info, |_| Box::new(NoBad))).unwrap();
    let err = tenure_check::build("test-misnamed", &Value::Null, &Cluster::uniform("n", 2))
        .err()
        .unwrap();
    assert!(err.message.contains("must return the name"), "{err}");
}
