//! Verdicts mean what they say (issue 10): within its declared assumptions a correct
//! variant never fails, under every profile that draws within them; and every failure a
//! profile finds beyond them names the assumption it broke.
//!
//! The suite runs `SEEDS_PER_CELL` seeds per (protocol, profile) cell, or
//! `TENURE_TRUST_SEEDS` (e.g. `TENURE_TRUST_SEEDS=2000 cargo test --release -p
//! tenure-tests --test integration trust::`). The long run is a command, not a test
//! (every release sweeps every correct variant, 1,000 seeds a cell or more, and its note
//! reports them): `SEEDS=2000 TENURE=target/release/tenure .ci/sweep OUT`.

use std::sync::atomic::AtomicBool;
use tenure_fuzz::{fuzz, FuzzOptions, SeedResult, Target, WITHIN_PROFILES};

/// Seeds per cell in the suite (the closing note reports the long run, made by hand):
/// 50, a quarter of what it was, for CI time (issue 38: this test was the suite's
/// largest cost, about 13 of its 25 minutes at 200).
const SEEDS_PER_CELL: u64 = 50;

fn seeds_per_cell() -> u64 {
    std::env::var("TENURE_TRUST_SEEDS")
        .ok()
        .map(|s| s.parse().expect("TENURE_TRUST_SEEDS is a number of seeds"))
        .unwrap_or(SEEDS_PER_CELL)
}

/// Cells where a correct variant is known to fail within its assumptions: open bugs of
/// the models, listed so the suite says exactly what is not yet trustworthy. Runs are
/// deterministic, so a listed cell fails on the same seeds every time; the test fails if
/// a listed cell starts passing (take it off) or an unlisted one fails.
/// None at present: every cell passes.
const KNOWN_OPEN: &[(&str, &str)] = &[];

/// The most seeds of a (protocol, profile) cell whose promises may go unjudged (issue 32:
/// "not judged" in at most 10% of a cell's seeds; a profile whose seeds cannot judge the
/// promise has lost its teeth), in percent.
const MAX_NOT_JUDGED_PERCENT: u64 = 10;

/// Cells whose seeds still leave a promise unjudged in more than
/// `MAX_NOT_JUDGED_PERCENT` of the suite's seeds: the run gives the check no opportunity
/// (no second leader term, no lease that stopped its keep-alives, no second holder). The
/// test fails if a listed cell falls to the bound (take it off) or an unlisted one rises
/// above it. Measured at `SEEDS_PER_CELL` seeds; a long run
/// (`TENURE_TRUST_SEEDS=1000`) reports every cell's figure and checks only unlisted ones.
const KNOWN_MOSTLY_NOT_JUDGED: &[(&str, &str)] = &[];

fn failures(target: &Target, seeds: std::ops::Range<u64>) -> Vec<String> {
    run_cell(target, seeds).0
}

/// What a cell found: its failures, how many of its seeds left a promise not judged
/// (with the first few reasons), and where its faults landed.
struct Cell {
    failures: Vec<String>,
    not_judged: u64,
    why: Vec<String>,
    coverage: tenure_fuzz::Coverage,
}

/// A cell's failures, and how many of its seeds left a promise not judged (with the
/// first few reasons).
fn run_cell(target: &Target, seeds: std::ops::Range<u64>) -> (Vec<String>, u64, Vec<String>) {
    let c = run_cell_covered(target, seeds);
    (c.failures, c.not_judged, c.why)
}

/// [`run_cell`], with where the cell's faults landed.
fn run_cell_covered(target: &Target, seeds: std::ops::Range<u64>) -> Cell {
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let options = FuzzOptions {
        jobs,
        ..FuzzOptions::default()
    };
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    let mut not_judged = 0;
    let mut why = Vec::new();
    let mut coverage = tenure_fuzz::Coverage::default();
    fuzz(target, seeds, &options, &stop, |o| match &o.result {
        SeedResult::Pass => {
            coverage.add(&o.judged, &[], &o.landed);
            if !o.not_judged.is_empty() {
                not_judged += 1;
                if why.len() < 3 {
                    let (check, nj) = &o.not_judged[0];
                    why.push(format!("seed {}: {check}: {nj}", o.seed));
                }
            }
        }
        SeedResult::Fail(f) => out.push(format!(
            "seed {}: {} at {}: {} {:?}",
            o.seed, f.checker, f.time, f.message, f.beyond
        )),
        other => out.push(format!("seed {}: {other:?}", o.seed)),
    });
    Cell {
        failures: out,
        not_judged,
        why,
        coverage,
    }
}

/// Issue 33: for every lock protocol (a role of lock clients, `RoleKind::Holder`), in
/// every profile, a process fault (crash, pause, power loss, crash point) lands on a
/// holder in at least half of the seeds that drew one (`tenure fuzz`'s coverage flags
/// `LOW` under that). Cells that drew process faults in fewer than 10 seeds are too
/// small to judge.
const MIN_SEEDS_FOR_SHARE: u64 = 10;

#[test]
fn correct_variants_pass_every_profile_within_their_assumptions() {
    let zoo = crate::support::zoo();
    let mut bad = Vec::new();
    let mut unjudged = Vec::new();
    let mut figures = Vec::new();
    let mut missed = Vec::new();
    for entry in zoo.entries() {
        for profile in WITHIN_PROFILES {
            let target = Target::for_protocol(&zoo, entry.info.name, None, Some(profile))
                .unwrap_or_else(|e| panic!("{}: {e}", entry.info.name));
            // A target that tolerates no Byzantine node gets none from `byzantine`, whose
            // other faults (crashes, partitions, pauses, loss) `chaos` draws: CI time.
            if target.profile.byzantine > 0.0 && target.profile.byzantine_max == 0 {
                continue;
            }
            let seeds = crate::support::seeds_for(entry.info.name, seeds_per_cell());
            let Cell {
                failures: found,
                not_judged,
                why,
                coverage,
            } = run_cell_covered(&target, 0..seeds);
            let name = entry.info.name;
            let locks = entry
                .info
                .roles
                .iter()
                .any(|r| r.kind == tenure_core::RoleKind::Holder);
            let (drawn, on_holder) = coverage.process;
            if locks && drawn >= MIN_SEEDS_FOR_SHARE {
                figures.push(format!(
                    "{name} / {profile}: process faults on a holder in {on_holder} of {drawn} seeds"
                ));
                if on_holder * 2 < drawn {
                    missed.push(format!(
                        "{name} / {profile}: process faults landed on a holder in {on_holder} \
                         of the {drawn} seeds that drew one"
                    ));
                }
            }
            let percent = not_judged * 100 / seeds.max(1);
            figures.push(format!(
                "{name} / {profile}: {not_judged}/{seeds} not judged"
            ));
            let listed = KNOWN_MOSTLY_NOT_JUDGED.contains(&(name, profile));
            let over = not_judged * 100 > MAX_NOT_JUDGED_PERCENT * seeds;
            if over && !listed {
                unjudged.push(format!(
                    "{name} / {profile}: {not_judged} of {seeds} seeds ({percent}%) left a \
                     promise not judged, e.g. {}",
                    why.join("; ")
                ));
            } else if listed && !over && seeds_per_cell() == SEEDS_PER_CELL {
                unjudged.push(format!(
                    "{name} / {profile}: {not_judged} of {seeds} seeds not judged, within \
                     {MAX_NOT_JUDGED_PERCENT}%: take it off KNOWN_MOSTLY_NOT_JUDGED"
                ));
            }
            let known = KNOWN_OPEN.contains(&(entry.info.name, profile));
            if known {
                assert!(
                    !found.is_empty(),
                    "{} / {profile} passes now: take it off KNOWN_OPEN",
                    entry.info.name
                );
                continue;
            }
            for f in found {
                bad.push(format!("{} / {profile}: {f}", entry.info.name));
            }
        }
    }
    eprintln!("not judged, per cell:\n{}", figures.join("\n"));
    assert!(
        bad.is_empty(),
        "correct variants failed within their assumptions:\n{}",
        bad.join("\n")
    );
    assert!(
        unjudged.is_empty(),
        "cells whose seeds leave promises not judged (over {MAX_NOT_JUDGED_PERCENT}%):\n{}",
        unjudged.join("\n")
    );
    assert!(
        missed.is_empty(),
        "lock protocols whose process faults miss the holder in over half the seeds:\n{}",
        missed.join("\n")
    );
}

#[test]
fn a_failure_beyond_the_assumptions_names_the_assumption_it_broke() {
    // redis-lock declares that a holder's pauses stay under its TTL margin; the `beyond`
    // profile draws longer ones, and every failure it finds must say which assumption
    // its faults broke (a correct variant has no other way to fail).
    let zoo = crate::support::zoo();
    let target = Target::for_protocol(&zoo, "redis-lock", None, Some("beyond")).unwrap();
    let found = failures(&target, 0..200);
    assert!(
        !found.is_empty(),
        "beyond-assumption faults break the unfenced lock"
    );
    for f in &found {
        assert!(f.contains("beyond assumption"), "{f}");
    }
}

/// Regression (etcd-lock under `power`, seed 1405, found when `power` began drawing
/// disk stalls): the etcd server's fsync stalled for 1.7 s, its clients retried, and
/// one client's key was deleted and put again between another waiter's read of it (as
/// its predecessor) and its watch. The model's watch took the new key for the old one,
/// and three waiters watched each other's new keys until a re-check broke the cycle,
/// past the lock-liveness bound. etcd's `waitDelete` watches from the read's revision
/// (`WithRev(resp.Header.Revision)`), so the delete is seen at once; the model's
/// `WatchDelete` now carries that revision.
#[test]
fn etcd_lock_watched_a_recreated_predecessor_power_seed_1405() {
    let text = r#"
name = "etcd-lock-power"
duration = "10s"
checks = ["fencing-safety", "no-lost-update", "lock-liveness"]

[protocol]
name = "etcd-lock"
variant = "correct"

[network]
latency = ["1ms", "5ms"]

[profile]
name = "power"
# the draws of before issue 33 (faults from time zero, crashes aimed at the holder):
# the case the regression was found with
early = 0
holder = 0
"#;
    let scenario = tenure_scenario::parse(text, "etcd-lock-power.toml").unwrap();
    let target = Target::from_scenario(&crate::support::zoo(), scenario, None).unwrap();
    let case = target.case(1405).to_toml();
    let stall = "at = \"7017ms\"\nkind = \"disk-stall\"\nnode = 0\nduration = \"1716ms\"";
    assert!(
        case.contains(stall),
        "seed 1405 draws the server's stall:\n{case}"
    );
    assert_eq!(failures(&target, 1405..1406), Vec::<String>::new());
}

/// Regression (sharded-lock under `crashes` with `disk = 1`, seed 1307): a coordinator
/// crashed inside the fsync of a new epoch, read it back from the page cache when it
/// restarted, acknowledged it unsynced (so nobody resent it), then lost power at its next
/// sync and came back on the older ring for good: lock-liveness failed. A restarted
/// coordinator now syncs what it read back before acting on it. The seed's case still
/// holds that crash and that power loss; the correct variant passes it. The same three
/// faults, hand-placed: `scenarios/sharded-lock/power-loss-after-restart.toml`.
#[test]
fn sharded_lock_acknowledged_an_epoch_it_read_back_unsynced_crashes_disk_seed_1307() {
    let text = r#"
name = "sharded-lock-crashes-disk"
duration = "10s"
checks = ["single-owner", "lock-liveness"]

[protocol]
name = "sharded-lock"
variant = "correct"

[network]
latency = ["1ms", "5ms"]

[profile]
name = "crashes"
disk = 1
# the draws of before issue 33 (aims at holders and waiters, faults from time zero):
# this seed's case is the one the regression was found with
holder = 0
waiter = 0
early = 0
"#;
    let scenario = tenure_scenario::parse(text, "sharded-lock-crashes-disk.toml").unwrap();
    let target = Target::from_scenario(&crate::support::zoo(), scenario, None).unwrap();
    let case = target.case(1307).to_toml();
    for fault in [
        "kind = \"crash\"\nnode = 2",
        "kind = \"crash-point\"\nnode = 2\nat_effect = 0\nat_sync = true\npower = true",
    ] {
        assert!(case.contains(fault), "seed 1307 draws {fault:?}:\n{case}");
    }
    assert_eq!(failures(&target, 1307..1308), Vec::<String>::new());
}

/// Regression (the 2,000-seed sweep: `consul-lock/correct` under `field`, seed 1377):
/// the network duplicated a client's release; the duplicate reached the leader after the
/// client had taken the lock again with the same session and freed that new hold, so the
/// next waiter acted beside it (`mutual-exclusion`). A server now answers a duplicate of
/// a request it applied from its first answer (Consul's clients use TCP, which never
/// delivers a request twice). The seed's case still duplicates messages; the correct
/// variant passes it. The server-level steps: `consul_session::tests::
/// a_duplicated_release_is_answered_again_not_applied_to_the_next_hold`.
#[test]
fn consul_lock_applied_a_duplicated_release_to_the_next_hold_field_seed_1377() {
    let zoo = crate::support::zoo();
    let target = Target::for_protocol(&zoo, "consul-lock", Some("correct"), Some("field"))
        .expect("a zoo protocol");
    let case = target.case(1377).to_toml();
    assert!(
        case.contains("kind = \"network\"\nduplicate = 0.15"),
        "seed 1377 duplicates messages:\n{case}"
    );
    assert_eq!(failures(&target, 1377..1378), Vec::<String>::new());
}
