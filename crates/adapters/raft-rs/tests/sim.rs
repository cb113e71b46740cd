//! raft-rs under the simulator: runs are deterministic (each seed twice, byte-identical
//! traces), the correct variants pass a few dozen fuzzed seeds, the embedding bugs are
//! found, and a panic inside raft-rs is a violation that replays by seed. Long sweeps
//! are commands (`tenure fuzz --protocol raft-rs ...`), not tests.

use std::sync::OnceLock;
use tenure_fuzz::{run_seed, SeedResult, Target};
use tenure_sim::Protocols;

fn zoo() -> &'static Protocols {
    static ZOO: OnceLock<Protocols> = OnceLock::new();
    ZOO.get_or_init(tenure_zoo_prebuilt::protocols)
}

fn target(variant: &str, profile: &str) -> Target {
    Target::for_protocol(zoo(), "raft-rs", Some(variant), Some(profile))
        .unwrap_or_else(|e| panic!("raft-rs/{variant} under {profile}: {e}"))
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
fn one_hundred_seeds_run_twice_give_byte_identical_traces() {
    // `power`: crashes, power losses, crash points and fsync latency, so the re-drawn
    // election timeouts, recovery from the disk and every Ready path are exercised.
    let t = target("hardened", "power");
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..100 {
        let outcome = run_seed(&t, seed, true);
        assert!(
            !matches!(outcome.result, SeedResult::Nondeterministic(_)),
            "seed {seed}: {}",
            describe(&outcome.result)
        );
        let applied = outcome
            .judged
            .iter()
            .find(|j| j.check == "state-machine-safety")
            .map(|j| j.summary.clone());
        distinct.insert(applied);
    }
    // The seeds give different runs (not one run a hundred times).
    assert!(
        distinct.len() > 20,
        "{} distinct runs of 100",
        distinct.len()
    );
}

#[test]
fn hardened_and_defaults_pass_under_chaos_and_power_and_judge_something() {
    for variant in ["hardened", "defaults"] {
        for profile in ["chaos", "power"] {
            let t = target(variant, profile);
            for seed in 0..12 {
                let outcome = run_seed(&t, seed, false);
                assert!(
                    matches!(outcome.result, SeedResult::Pass),
                    "raft-rs/{variant} under {profile}, seed {seed}: {}",
                    describe(&outcome.result)
                );
                for check in [
                    "log-matching",
                    "leader-completeness",
                    "state-machine-safety",
                    "single-leader-per-term",
                    "linearizability",
                ] {
                    let judged = outcome
                        .judged
                        .iter()
                        .find(|j| j.check == check)
                        .unwrap_or_else(|| panic!("{check} ran"));
                    assert!(
                        judged.vacuous.is_none() && judged.counts[0].1 > 0,
                        "raft-rs/{variant} under {profile}, seed {seed}: {check} judged {}",
                        judged.summary
                    );
                }
            }
        }
    }
}

/// Found under `power` (the only profile with power losses inside fsyncs), shrunk to at
/// most three fault events, and the shrunk case replays with the seed it records.
/// (tests/integration/fuzz.rs leaves this variant to this test: it tries `power` last.)
#[test]
fn ack_before_persist_is_found_under_power_and_shrinks_to_3_faults() {
    let t = target("ack-before-persist", "power");
    let found = (0..200).find_map(|s| match run_seed(&t, s, false).result {
        SeedResult::Fail(f) => Some((s, f)),
        _ => None,
    });
    let (seed, failure) = found.expect("ack-before-persist fails within 200 seeds of power");
    println!(
        "ack-before-persist under power: seed {seed}: {}: {}",
        failure.checker, failure.message
    );
    assert!(
        [
            "state-machine-safety",
            "log-matching",
            "single-leader-per-term",
            "no-panic"
        ]
        .contains(&failure.checker),
        "seed {seed}: {}: {}",
        failure.checker,
        failure.message
    );
    shrink_to_3_and_replay(&failure, seed);
}

/// Shrinks a failure to at most three fault events and replays the shrunk case with the
/// seed it records: it fails the same check. Returns the shrunk case and the replayed
/// violation's message.
fn shrink_to_3_and_replay(
    failure: &tenure_fuzz::Failure,
    seed: u64,
) -> (tenure_fuzz::Shrunk, String) {
    let shrunk = tenure_fuzz::shrink(zoo(), &failure.case, seed).expect("it shrinks");
    assert_eq!(shrunk.checker, failure.checker);
    assert!(
        shrunk.after.faults <= 3,
        "{} fault events:\n{}",
        shrunk.after.faults,
        shrunk.scenario.to_toml()
    );
    let replay = tenure_sim::Prepared::new(shrunk.scenario.clone(), zoo())
        .expect("the shrunk case is valid")
        .run(shrunk.seed, &tenure_sim::RunOptions::default());
    let v = replay
        .violations
        .into_iter()
        .find(|v| v.checker == failure.checker)
        .expect("the shrunk case replays");
    (shrunk, v.message)
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

/// raft-rs 0.7.0's `LeaseBased` reads (etcd-io/raft #166): a leader cut off from its
/// peers keeps answering reads for up to two election timeouts, while they elect a new
/// leader after one. Found by the built-in `partitions` profile within 1,000 seeds,
/// shrunk to at most three fault events; the report names the stale read, the write it
/// missed and both leaders; `hardened` (Safe reads) passes the same shrunk schedule.
#[test]
fn lease_based_reads_are_stale_after_a_partition_and_hardened_is_not() {
    let t = target("lease-reads", "partitions");
    let found = (0..1000).find_map(|s| match run_seed(&t, s, false).result {
        SeedResult::Fail(f) if f.checker == "linearizability" => Some((s, f)),
        _ => None,
    });
    let (seed, failure) = found.expect("a stale read within 1,000 seeds of partitions");
    println!(
        "lease-reads under partitions: seed {seed}: {}",
        failure.message
    );
    let (shrunk, message) = shrink_to_3_and_replay(&failure, seed);
    // A read that cannot be placed, the write it missed, and two nodes that each
    // believed they led when it returned (the deposed one and its successor).
    assert!(message.contains("'s read(\""), "{message}");
    assert!(message.contains("(last placed: "), "{message}");
    let leaders = message
        .split("leading when it returned: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no leaders named: {message}"));
    assert_eq!(leaders.matches("(term ").count(), 2, "{message}");
    // The control: Safe reads (ReadIndex with a quorum round) pass the same schedule.
    let mut control = shrunk.scenario.clone();
    control.protocol.variant = "hardened".to_string();
    let replay = tenure_sim::Prepared::new(control, zoo())
        .expect("valid")
        .run(shrunk.seed, &tenure_sim::RunOptions::default());
    assert!(
        replay.violations.is_empty(),
        "{:?}",
        replay.violations.first().map(|v| &v.message)
    );
}

/// Regression (found by `tenure fuzz --protocol raft-rs --variant hardened --profile
/// power`, seed 1638): the adapter handed raft-rs the log it read back after a crash,
/// unsynced writes included (they survive a crash in the page cache). raft-rs
/// acknowledged them as stable, a power loss then took them, and the leader's next
/// heartbeat made raft-rs panic: "to_commit 98 is out of range [last_index 97]". The
/// adapter now syncs the recovered log before raft-rs sees it.
#[test]
fn recovered_log_is_synced_before_raft_rs_acknowledges_it_hardened_power_seed_1638() {
    let t = target("hardened", "power");
    let outcome = run_seed(&t, 1638, false);
    assert!(
        matches!(outcome.result, SeedResult::Pass),
        "seed 1638: {}",
        describe(&outcome.result)
    );
}

/// The adapter's leaders ask raft-rs for leadership transfers (`RawNode::transfer_leader`)
/// as part of the workload, so a calm run has later leaders and `leader-completeness` is
/// judged; the negative control, `transfer = false`, leaves the same seeds with one
/// leader term ("could not fail").
#[test]
fn leadership_transfers_make_calm_runs_judge_leader_completeness() {
    let with = |transfer: bool| {
        let mut t = target("hardened", "calm");
        t.base.protocol.params["transfer"] = transfer.into();
        Target::from_scenario(zoo(), t.base, Some("calm")).unwrap()
    };
    let (on, off) = (with(true), with(false));
    for seed in 0..3 {
        let o = run_seed(&on, seed, false);
        assert!(
            matches!(o.result, SeedResult::Pass),
            "seed {seed}: {}",
            describe(&o.result)
        );
        let unjudged = |o: &tenure_fuzz::SeedOutcome| {
            o.not_judged
                .iter()
                .any(|(check, _)| check == "leader-completeness")
        };
        let leaderships = o
            .judged
            .iter()
            .filter(|j| j.check == "leader-completeness")
            .flat_map(|j| j.counts.iter())
            .filter(|(k, _)| k.starts_with("leadership"))
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
        assert!(
            !unjudged(&o) && leaderships >= 2,
            "seed {seed}: leader-completeness not judged with transfers ({leaderships} leaderships)"
        );
        let o = run_seed(&off, seed, false);
        assert!(
            matches!(o.result, SeedResult::Pass),
            "seed {seed} without transfers"
        );
        assert!(
            unjudged(&o),
            "seed {seed}: a calm run without transfers had a second leader term"
        );
    }
}
