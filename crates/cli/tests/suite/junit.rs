//! `--junit` on `tenure fuzz` and `tenure verify`: files that validate against the JUnit
//! schema (tests/data/junit/junit-10.xsd, with xmllint), a failure that carries its replay
//! command, exit codes as without --junit, and no file overwritten.

use crate::common::{repo, s, scratch, tenure, text, validate_junit};

#[test]
fn a_fuzz_failure_is_a_junit_failure_with_its_replay_command() {
    let dir = scratch("junit", "fuzz");
    let junit = dir.join("fuzz.xml");
    let out = dir.join("out");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--seeds",
        "50..53",
        "--out",
        s(&out),
        "--junit",
        s(&junit),
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "exit code as without --junit: {}",
        text(&o)
    );
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let case = out.join("raft-forget-vote-seed51-single-leader-per-term.toml");
    assert!(
        xml.contains(&format!("replay: tenure run {} --seed 51", s(&case))),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<failure type="single-leader-per-term""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase name="leader-liveness" classname="raft.forget-vote.chaos">"#),
        "a passing check is a passing test case: {xml}"
    );
    assert!(
        xml.contains(r#"tests="2" failures="1" errors="0""#),
        "{xml}"
    );

    // An existing file is never overwritten: refused before any seed runs.
    let again = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--seeds",
        "0..2",
        "--out",
        s(&out),
        "--junit",
        s(&junit),
    ]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("exists"), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&junit).unwrap(), xml);
}

#[test]
fn a_passing_fuzz_run_is_a_green_suite() {
    let dir = scratch("junit", "pass");
    let junit = dir.join("fuzz.xml");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--seeds",
        "0..20",
        "--out",
        s(&dir.join("out")),
        "--junit",
        s(&junit),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"failures="0" errors="0""#), "{xml}");
    assert!(xml.contains("judged something in 20 of 20 seeds"), "{xml}");
}

#[test]
fn verify_writes_a_test_case_per_scenario_and_a_failure_names_its_replay() {
    let dir = scratch("junit", "verify");
    let source = std::fs::read_to_string(repo().join("scenarios/raft/leader-crash.toml")).unwrap();
    let wrong = source.replace(
        "[expect]\noutcome = \"pass\"",
        "[expect]\noutcome = \"violation\"\nchecker = \"single-leader-per-term\"",
    );
    assert_ne!(wrong, source);
    std::fs::write(dir.join("wrong.toml"), wrong).unwrap();
    std::fs::write(dir.join("right.toml"), &source).unwrap();
    let junit = dir.join("verify.xml");
    let o = tenure(&["verify", s(&dir), "--junit", s(&junit)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    validate_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"tests="2" failures="1""#), "{xml}");
    let wrong = dir.join("wrong.toml");
    assert!(
        xml.contains(&format!("replay: tenure run {} --seed", s(&wrong))),
        "{xml}"
    );
    assert!(
        xml.contains("expected violation of single-leader-per-term"),
        "{xml}"
    );
}
