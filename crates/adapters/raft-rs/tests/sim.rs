//! raft-rs under the simulator: runs are deterministic (each seed twice, byte-identical
//! traces), the correct variants pass a few dozen fuzzed seeds, the embedding bugs are
//! found, and a panic inside raft-rs is a violation that replays by seed. Long sweeps
//! are commands (`tenure fuzz --protocol raft-rs ...`), not tests.

use std::sync::OnceLock;
use tenure_fuzz::{run_seed, SeedResult, Target};
use tenure_sim::Protocols;

fn zoo() -> &'static Protocols {
    static ZOO: OnceLock<Protocols> = OnceLock::new();
    ZOO.get_or_init(|| Protocols::of(&tenure_zoo::Zoo))
}

fn target(variant: &str, profile: &str) -> Target {
    Target::for_protocol(zoo(), "raft-rs", Some(variant), Some(profile))
        .unwrap_or_else(|e| panic!("raft-rs/{variant} under {profile}: {e}"))
}

/// Runs `seeds` of `variant` under `profile`; each seed twice when `twice`.
fn results(
    variant: &str,
    profile: &str,
    seeds: std::ops::Range<u64>,
    twice: bool,
) -> Vec<(u64, SeedResult)> {
    let t = target(variant, profile);
    seeds.map(|s| (s, run_seed(&t, s, twice).result)).collect()
}

fn describe(r: &SeedResult) -> String {
    match r {
        SeedResult::Pass => "pass".to_string(),
        SeedResult::Fail(f) => format!("{}: {}", f.checker, f.message),
        SeedResult::Nondeterministic(d) => format!("nondeterministic: {d:?}"),
        SeedResult::Panicked(m) => format!("panicked: {m}"),
        SeedResult::Limit(l) => format!("limit: {l:?}"),
    }
}

#[test]
fn hardened_and_defaults_are_deterministic_and_pass_under_chaos_and_power() {
    for variant in ["hardened", "defaults"] {
        for profile in ["chaos", "power"] {
            for (seed, r) in results(variant, profile, 0..12, true) {
                assert!(
                    matches!(r, SeedResult::Pass),
                    "raft-rs/{variant} under {profile}, seed {seed}: {}",
                    describe(&r)
                );
            }
        }
    }
}

#[test]
fn ack_before_persist_is_found_under_power() {
    let t = target("ack-before-persist", "power");
    let found = (0..200).find_map(|s| match run_seed(&t, s, false).result {
        SeedResult::Fail(f) => Some((s, f)),
        _ => None,
    });
    let (seed, failure) = found.expect("ack-before-persist fails within 200 seeds of power");
    assert!(
        [
            "state-machine-safety",
            "log-matching",
            "single-leader-per-term"
        ]
        .contains(&failure.checker),
        "seed {seed}: {}: {}",
        failure.checker,
        failure.message
    );
    // The case replays with its seed.
    let replay = tenure_sim::Prepared::new(failure.case.clone(), zoo())
        .expect("the case is valid")
        .run(seed, &tenure_sim::RunOptions::default());
    assert!(replay
        .violations
        .iter()
        .any(|v| v.checker == failure.checker));
}

#[test]
fn a_panic_inside_raft_rs_is_a_violation_with_its_message_and_replays() {
    let t = target("stale-ready", "chaos");
    let SeedResult::Fail(f) = run_seed(&t, 3, false).result else {
        panic!("stale-ready must fail")
    };
    assert_eq!(f.checker, "no-panic");
    // raft-rs 0.7.0, RawNode::commit_ready: `assert!(rd_record.number == rd.number)`.
    assert!(
        f.message.contains("rd_record.number == rd.number"),
        "{}",
        f.message
    );
    let again = run_seed(&t, 3, false).result;
    let SeedResult::Fail(g) = again else {
        panic!("replays")
    };
    assert_eq!((g.time, &g.message), (f.time, &f.message));
}
