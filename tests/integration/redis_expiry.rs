//! Redis expires keys by absolute wall-clock times (issue 10, point 5): the correct
//! redis-lock and redlock servers do too, so a wall step past what they declare breaks
//! them, and the monotonic-expiry contrast does not break.

use std::sync::atomic::AtomicBool;
use tenure_fuzz::{fuzz, FuzzOptions, SeedResult, Target};

/// Kleppmann's clock-jump case drawn at random, beyond Redlock's declared wall steps:
/// servers expiring by the wall clock (the correct variant, as Redis) lose mutual
/// exclusion on some seeds and every such failure names `max-wall-jump`; servers timing
/// TTLs on the monotonic clock never do.
#[test]
fn redlock_wall_steps_beyond_the_bound_break_wall_expiry_not_monotonic_expiry() {
    let file = "scenarios/redlock/fuzz-clock-jumps.toml";
    assert_eq!(
        crate::fuzz::failures(file, "monotonic-expiry", "mutual-exclusion", 300),
        0,
        "{file}: monotonic expiry never expires a key early"
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(file);
    let scenario = tenure_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let target = Target::from_scenario(&crate::support::zoo(), scenario, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let stop = AtomicBool::new(false);
    let mut found = 0;
    fuzz(&target, 0..300, &FuzzOptions::default(), &stop, |o| {
        if let SeedResult::Fail(f) = &o.result {
            assert_eq!(f.checker, "mutual-exclusion", "seed {}", o.seed);
            let beyond = format!("{:?}", f.beyond);
            assert!(
                beyond.contains("max-wall-jump"),
                "seed {}: {beyond}",
                o.seed
            );
            found += 1;
        }
    });
    println!("{file}: correct (wall-clock expiry) fails {found} of 300 seeds");
    assert!(
        found > 0,
        "{file}: wall steps never broke wall-clock expiry"
    );
}

/// Within their declared wall steps, the correct redis-lock and redlock pass the
/// `clocks` profile (wall steps, drift, offsets, partitions) on every seed tried.
#[test]
fn wall_steps_within_the_bound_keep_redis_locks_safe() {
    let zoo = crate::support::zoo();
    for protocol in ["redis-lock", "redlock"] {
        let target = Target::for_protocol(&zoo, protocol, None, Some("clocks")).unwrap();
        let stop = AtomicBool::new(false);
        let mut bad = Vec::new();
        fuzz(&target, 0..100, &FuzzOptions::default(), &stop, |o| {
            if let SeedResult::Fail(f) = &o.result {
                bad.push(format!("seed {}: {} {}", o.seed, f.checker, f.message));
            }
        });
        assert!(bad.is_empty(), "{protocol}: {bad:?}");
    }
}
