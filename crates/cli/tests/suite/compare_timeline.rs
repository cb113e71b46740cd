//! `tenure compare` and `tenure run --timeline` as a user runs them.

use std::path::Path;

use crate::common::{stdout, tenure};

#[test]
fn compare_shows_prevote_ending_the_flapping() {
    let o = tenure(&[
        "compare",
        "scenarios/raft/partial-partition.toml",
        "--variants",
        "correct,correct+pre_vote+check_quorum",
        "--seeds",
        "2",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let (plain, fixed) = (&rows[0], &rows[1]);
    assert_eq!(plain["label"], "correct");
    assert_eq!(plain["seeds"], serde_json::json!([1, 2]));
    assert_eq!(
        plain["violations"],
        serde_json::json!([["single-leader-per-term", 0], ["leader-liveness", 2]])
    );
    assert!(plain["handovers"].as_u64().unwrap() > 0);
    assert_eq!(
        fixed["violations"],
        serde_json::json!([["single-leader-per-term", 0], ["leader-liveness", 0]])
    );
    assert_eq!(fixed["handovers"], 0);
    assert_eq!(fixed["belief"], "leader");
}

#[test]
fn compare_shows_the_herd_effect_in_messages_per_handover() {
    let o = tenure(&[
        "compare",
        "scenarios/zookeeper/lock-herd.toml",
        "scenarios/zookeeper/lock-no-herd.toml",
        "--seeds",
        "1",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let per = |i: usize| rows[i]["messages_per_handover"].as_f64().unwrap();
    assert!(
        per(0) > 3.0 * per(1),
        "herd {} vs no herd {}",
        per(0),
        per(1)
    );
    assert_eq!(rows[0]["belief"], "holder");
}

#[test]
fn compare_prints_a_markdown_table() {
    let o = tenure(&[
        "compare",
        "scenarios/raft/partial-partition.toml",
        "--params",
        "",
        "--params",
        "pre_vote=true",
        "--seeds",
        "1",
        "--markdown",
    ]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let out = stdout(&o);
    assert!(out.starts_with("| variant | safety violations |"), "{out}");
    assert!(
        out.contains("| as written | none | leader-liveness 1/1 |"),
        "{out}"
    );
    assert!(out.contains("| pre_vote=true | none | none |"), "{out}");
}

#[test]
fn compare_rejects_unknown_variants_and_empty_comparisons() {
    let o = tenure(&[
        "compare",
        "scenarios/raft/partial-partition.toml",
        "--variants",
        "correct,bogus",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no variant `bogus`"), "{err}");
    let o = tenure(&["compare", "scenarios/raft/partial-partition.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to compare"));
}

#[test]
fn run_writes_a_timeline_and_refuses_to_overwrite_its_input() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gc-pause.html");
    let o = tenure(&[
        "run",
        "scenarios/redis-lock/gc-pause.toml",
        "--timeline",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "the scenario fails its check");
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("data-kind=\"pause\" data-node=\"1\""));
    assert!(html.contains("data-kind=\"violation\" data-checker=\"mutual-exclusion-belief\""));
    let o = tenure(&[
        "run",
        "scenarios/redis-lock/gc-pause.toml",
        "--timeline",
        "scenarios/redis-lock/gc-pause.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// compare runs its seeds on the seed pool: the table is the same for any number of jobs.
#[test]
fn compare_gives_the_same_table_for_one_job_and_three() {
    let run = |jobs: &str| {
        let o = tenure(&[
            "compare",
            "scenarios/raft/partial-partition.toml",
            "--variants",
            "correct,correct+pre_vote+check_quorum",
            "--seeds",
            "5",
            "--metrics",
            "--json",
            "--jobs",
            jobs,
        ]);
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        stdout(&o)
    };
    let one = run("1");
    let rows: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(rows[0]["seeds"], serde_json::json!([1, 2, 3, 4, 5]));
    assert_eq!(one, run("3"));
}
