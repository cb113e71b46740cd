//! Crash-heavy failures shrink to a few fault events without changing seed (issue 11,
//! item 7): broken variants found under `chaos`, each with at least 30 drawn fault
//! events (crash storms: flapping processes, leader crashes and their restarts).

use tenure_fuzz::{shrink, Target};
use tenure_sim::{Prepared, RunOptions};

/// `(protocol, variant, chaos seed, checker)`: chaos finds with at least 30 drawn
/// events, most of them crashes and restarts. Re-derive with
/// `tenure fuzz --protocol P --variant V --profile chaos` and `--print SEED`.
const CASES: &[(&str, &str, u64, &str)] = &[
    ("raft", "no-step-down", 78, "leader-liveness"),
    ("raft", "no-step-down", 35, "leader-liveness"),
];

#[test]
fn crash_heavy_chaos_failures_shrink_to_three_events_with_their_own_seed() {
    let zoo = crate::support::zoo();
    for &(protocol, variant, seed, checker) in CASES {
        let label = format!("{protocol}/{variant} seed {seed}");
        let target = Target::for_protocol(&zoo, protocol, Some(variant), Some("chaos"))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let case = target.case(seed);
        let crashes = case
            .faults
            .iter()
            .filter(|e| {
                matches!(
                    e.fault,
                    tenure_scenario::Fault::Crash { .. }
                        | tenure_scenario::Fault::Restart { .. }
                        | tenure_scenario::Fault::PowerLoss { .. }
                        | tenure_scenario::Fault::CrashPoint { .. }
                )
            })
            .count();
        assert!(
            case.faults.len() >= 30 && crashes * 2 >= case.faults.len(),
            "{label}: a crash-heavy case ({} events, {crashes} crashes and restarts)",
            case.faults.len()
        );
        let shrunk = shrink(&zoo, &case, seed).unwrap_or_else(|e| panic!("{label}: {e}"));
        println!(
            "{label}: {} -> {} fault events in {} runs, seed {}",
            shrunk.before.faults, shrunk.after.faults, shrunk.runs, shrunk.seed
        );
        assert_eq!(shrunk.checker, checker, "{label}");
        assert_eq!(shrunk.seed, seed, "{label}: the same seed");
        assert!(
            shrunk.after.faults <= 3,
            "{label}: shrunk to {} events:\n{}",
            shrunk.after.faults,
            shrunk.scenario.to_toml()
        );
        let replay = Prepared::new(shrunk.scenario.clone(), &zoo)
            .unwrap_or_else(|e| panic!("{label}: {e}"))
            .run(seed, &RunOptions::default());
        assert!(
            replay.violations.iter().any(|v| v.checker == checker),
            "{label}: the shrunk case fails {checker} with seed {seed}"
        );
    }
}
