//! `tenure list` shows what a user can name (issue 27): the fault profiles with what each
//! draws, and for each protocol whether `check-model` explores it.

use crate::common::{stdout, tenure};

#[test]
fn list_shows_the_fault_profiles_and_what_each_draws() {
    let o = tenure(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let (_, profiles) = out
        .split_once("FAULT PROFILES")
        .expect("a FAULT PROFILES section");
    for name in tenure_scenario::profile::PROFILE_NAMES {
        assert!(
            profiles
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{name} "))),
            "profile {name} missing:\n{profiles}"
        );
    }
    assert!(profiles.contains("pauses      pause 1"), "{profiles}");
    assert!(
        profiles.contains("past the target's declared assumptions"),
        "{profiles}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&tenure(&["list", "--json"]))).unwrap();
    let pauses = &json["profiles"][3];
    assert_eq!(pauses["name"], "pauses");
    assert_eq!(pauses["chances"]["pause"], 1.0);
}

#[test]
fn list_says_which_protocols_check_model_explores() {
    let out = stdout(&tenure(&["list"]));
    let model_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("model:"))
        .collect();
    let protocols = out
        .lines()
        .filter(|l| l.trim_start().starts_with("roles:"))
        .count();
    assert_eq!(
        model_lines.len(),
        protocols,
        "one model line per protocol:\n{out}"
    );
    assert!(model_lines
        .iter()
        .any(|l| l.contains("explored by `tenure check-model`") && !l.contains("not")));
    assert!(model_lines
        .iter()
        .any(|l| l.contains("not explored by `tenure check-model`: ")));
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&tenure(&["list", "--json"]))).unwrap();
    let raft = json["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "raft")
        .unwrap();
    assert_eq!(raft["check_model"]["explored"], true);
    let sharded = json["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "sharded-lock")
        .unwrap();
    assert_eq!(sharded["check_model"]["explored"], false);
}
