//! `tenure compare --updates`: one contended counter under a lock, a fenced lock,
//! compare-and-set and idempotency keys, side by side.

use crate::common::tenure;

const FILES: [&str; 4] = [
    "scenarios/contention/counter-redis-lock.toml",
    "scenarios/contention/counter-fencing.toml",
    "scenarios/contention/counter-versioned-store.toml",
    "scenarios/contention/counter-idempotency.toml",
];

#[test]
fn updates_show_what_each_approach_costs_and_loses() {
    let mut args = vec!["compare"];
    args.extend(FILES);
    // Seed 15 is one where the pause finds n2 holding the lock.
    args.extend(["--updates", "--seed", "15", "--seeds", "2", "--json"]);
    let o = tenure(&args);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let u = |i: usize| rows[i]["metrics"]["updates"].clone();
    let (lock, fenced, cas, keyed) = (u(0), u(1), u(2), u(3));
    // The unfenced lock loses acknowledged increments, and its check says so.
    assert!(lock["lost"].as_i64().unwrap() > 0, "{lock}");
    assert_eq!(
        rows[0]["violations"],
        serde_json::json!([["no-lost-update", 1]])
    );
    // The same lock with fencing tokens: the same waits, nothing lost (the stale write
    // is refused, so it is not acknowledged either).
    assert_eq!(fenced["lost"], 0);
    let (f, l) = (fenced["completed"].as_i64(), lock["completed"].as_i64());
    assert!(
        f.unwrap().abs_diff(l.unwrap()) <= 2,
        "{fenced} against {lock}"
    );
    assert_eq!(rows[1]["violations"][0][1], 0);
    // Compare-and-set: nothing lost, paid in retries.
    assert_eq!(cas["lost"], 0);
    assert!(cas["retries_per_update"].as_f64().unwrap() > 1.0, "{cas}");
    // Keyed increments the service applies: no contention, nothing doubled, and the
    // zoo's idempotency clients do not record their resends.
    assert_eq!(
        (keyed["lost"].clone(), keyed["duplicated"].clone()),
        (0.into(), 0.into())
    );
    assert!(keyed["per_s"].as_f64().unwrap() > 5.0 * lock["per_s"].as_f64().unwrap());
    assert!(keyed["retries"].is_null());
    // The lock rows have an acquire latency, the others none.
    assert!(rows[0]["metrics"]["locks"]["acquire_latency"]["p50_ms"].is_number());
    assert!(rows[2]["metrics"]["locks"].is_null());
}

#[test]
fn the_updates_table_has_one_row_per_approach_and_excludes_metrics() {
    let mut args = vec!["compare"];
    args.extend(FILES);
    args.extend(["--updates", "--seeds", "1"]);
    let o = tenure(&args);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("scenario") && lines[0].contains("retries/update"));
    assert!(lines[1].starts_with("counter-redis-lock (redis-lock/correct)"));
    assert!(lines[4].contains("not recorded"), "{out}");
    let mut args = vec!["compare"];
    args.extend(FILES);
    args.extend(["--updates", "--metrics"]);
    assert_eq!(tenure(&args).status.code(), Some(2));
}
