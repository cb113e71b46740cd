//! Actions, not beliefs: the action checks (`lease-safety`, `mutual-exclusion`) fail only
//! when a node really acted on a stale lease or lock; the `-belief` twins show what a
//! paused node kept believing. And the etcd client before v3.5.0 (every 3.4.x) holds alongside the
//! next waiter when its lease expires while it waits; the correct client never does.

use crate::support::{prepare, repo_root};
use tenure_scenario::CheckSpec;
use tenure_sim::RunOptions;

fn checkers_violated(file: &str, variant: Option<&str>, extra: &[&str], seed: u64) -> Vec<String> {
    let mut prepared = prepare(&repo_root().join(file));
    let mut scenario = prepared.scenario.clone();
    if let Some(v) = variant {
        scenario.protocol.variant = v.to_string();
    }
    for name in extra {
        scenario.checks.push(CheckSpec {
            name: name.to_string(),
            params: serde_json::Value::Null,
        });
    }
    prepared = tenure_sim::Prepared::new(scenario, &crate::support::zoo())
        .unwrap_or_else(|e| panic!("{e}"));
    let report = prepared.run(seed, &RunOptions::default());
    report
        .violations
        .iter()
        .map(|v| v.checker.to_string())
        .collect()
}

/// A correct leader paused for twice its lease keeps believing in it (the belief check
/// fails on every seed) but never serves on it after waking (the action check passes
/// on every seed).
#[test]
fn a_paused_correct_leaseholder_believes_but_never_acts_on_its_old_lease() {
    let file = "scenarios/leader-lease/correct-paused-leader.toml";
    for seed in 1..=12 {
        let violated = checkers_violated(file, None, &["lease-safety-belief"], seed);
        assert_eq!(violated, ["lease-safety-belief"], "seed {seed}");
    }
}

/// The Jepsen etcd 3.4.3 finding: two holders with the pre-fix client, never with the
/// correct one, on the same faults and seeds.
#[test]
fn the_pre_fix_etcd_client_holds_twice_and_the_correct_one_never() {
    let file = "scenarios/etcd-lock/waiter-lease-expires-no-key-check.toml";
    let mut found = 0;
    for seed in 1..=12 {
        let broken = checkers_violated(file, None, &[], seed);
        found += usize::from(broken.iter().any(|c| c == "mutual-exclusion"));
        let correct = checkers_violated(file, Some("correct"), &["mutual-exclusion-belief"], seed);
        assert!(
            correct.is_empty(),
            "seed {seed}: the correct client: {correct:?}"
        );
    }
    assert!(
        found >= 6,
        "the pre-fix client held twice on only {found} of 12 seeds"
    );
}
