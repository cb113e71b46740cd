//! `tenure compare --log`: Multi-Paxos beside Raft on the same seeds and faults
//! (scenarios/multi-paxos/beside-raft-*.toml, the book's multi-paxos page).

use crate::common::tenure;

const FILES: [&str; 2] = [
    "scenarios/multi-paxos/beside-raft-multi-paxos.toml",
    "scenarios/multi-paxos/beside-raft-raft-log.toml",
];

#[test]
fn the_log_table_puts_multi_paxos_beside_raft_on_the_same_crashes() {
    let mut args = vec!["compare"];
    args.extend(FILES);
    args.extend(["--log", "--seeds", "2", "--json"]);
    let o = tenure(&args);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["protocol"], "multi-paxos/correct");
    assert_eq!(rows[1]["protocol"], "raft-log/correct");
    for row in [&rows[0], &rows[1]] {
        let log = &row["log"];
        // Two leader crashes per run, each followed by a new decision.
        assert_eq!(log["leader_crashes"], 4, "{row}");
        assert_eq!(log["unrecovered"], 0, "{row}");
        let p50 = log["recovery_p50_ns"].as_u64().unwrap();
        // At least one election timeout (150 ms), well under the 500 ms outage.
        assert!((150_000_000..500_000_000).contains(&p50), "{row}");
        assert!(log["decisions"].as_u64().unwrap() > 100, "{row}");
        let ok = log["completed_ok"].as_f64().unwrap() / log["invoked"].as_f64().unwrap();
        assert!(ok > 0.8 && ok < 1.0, "{row}");
        assert!(row["metrics"].is_null(), "{row}");
    }
    // Multi-Paxos tells every server each chosen slot in a message of its own; Raft
    // carries the commit index on the next AppendEntries.
    let per = |i: usize| {
        rows[i]["log"]["messages"].as_f64().unwrap() / rows[i]["log"]["decisions"].as_f64().unwrap()
    };
    assert!(per(0) > per(1), "{} vs {}", per(0), per(1));
}

#[test]
fn a_run_without_a_leader_crash_counts_none_and_no_recovery() {
    let o = tenure(&[
        "compare",
        "scenarios/multi-paxos/skip-phase1-overwrite-control.toml",
        "scenarios/multi-paxos/beside-raft-multi-paxos.toml",
        "--log",
        "--seeds",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // A partition and a heal, no crash: nothing to recover from.
    assert_eq!(rows[0]["log"]["leader_crashes"], 0);
    assert!(rows[0]["log"]["recovery_p50_ns"].is_null());
    // The other file's crashes are counted in its own row only.
    assert_eq!(rows[1]["log"]["leader_crashes"], 2);
}

#[test]
fn the_log_table_says_what_it_measured_and_over_how_many_seeds() {
    let mut args = vec!["compare"];
    args.extend(FILES);
    args.extend(["--log", "--seeds", "1"]);
    let o = tenure(&args);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("msgs/decision"), "{out}");
    assert!(out.contains("recovery p50"), "{out}");
    assert!(out.contains("(1 seeds)") || out.contains("1 seed"), "{out}");
    assert!(
        out.contains("beside-raft-raft-log (raft-log/correct)"),
        "{out}"
    );
    // --log and --metrics are two different tables.
    let mut args = vec!["compare"];
    args.extend(FILES);
    args.extend(["--log", "--metrics"]);
    assert_eq!(tenure(&args).status.code(), Some(2));
}
