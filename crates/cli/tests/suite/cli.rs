//! The `tenure` binary's contract: exit codes, error messages that name the file, line
//! and field, JSON output, and never a panic on bad input.

use std::path::{Path, PathBuf};

use crate::common::{tenure, text};

/// Writes `body` to a scratch file named after the test and returns its path.
fn scratch(name: &str, body: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

const GOOD: &str = r#"name = "ok"
seed = 3
duration = "5s"
checks = ["single-leader-per-term"]

[protocol]
name = "raft"

[cluster]
nodes = 3

[[fault]]
at = "1s"
kind = "crash"
node = 2
"#;

fn assert_bad_input(name: &str, body: &str, line: usize, needles: &[&str]) {
    let p = scratch(name, body);
    let o = tenure(&["run", p.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{name}: expected exit 2, got {:?}\n{t}",
        o.status.code()
    );
    assert!(
        t.contains(&format!("{name}:{line}")),
        "{name}: the message should name file and line {line}:\n{t}"
    );
    for n in needles {
        assert!(
            t.contains(n),
            "{name}: the message should mention `{n}`:\n{t}"
        );
    }
    assert!(
        !t.contains("panicked"),
        "{name}: no panics on bad input:\n{t}"
    );
}

#[test]
fn malformed_toml_is_exit_2_with_file_and_line() {
    assert_bad_input(
        "malformed.toml",
        &GOOD.replace("duration = \"5s\"", "duration = \"5s"),
        3,
        &[],
    );
}

#[test]
fn unknown_protocol_names_the_field_and_the_known_ones() {
    assert_bad_input(
        "unknown-protocol.toml",
        &GOOD.replace("name = \"raft\"", "name = \"viewstamped\""),
        7,
        &["protocol.name", "raft", "bully"],
    );
}

#[test]
fn unknown_variant_names_the_field() {
    let body = GOOD.replace(
        "name = \"raft\"",
        "name = \"raft\"\nvariant = \"forget-everything\"",
    );
    assert_bad_input(
        "unknown-variant.toml",
        &body,
        8,
        &["protocol.variant", "forget-vote"],
    );
}

#[test]
fn node_out_of_range_names_the_fault() {
    assert_bad_input(
        "node-range.toml",
        &GOOD.replace("node = 2", "node = 7"),
        15,
        &["fault[0].node", "7"],
    );
}

#[test]
fn negative_duration_is_refused() {
    assert_bad_input(
        "negative.toml",
        &GOOD.replace("duration = \"5s\"", "duration = \"-5s\""),
        3,
        &["duration", "negative"],
    );
}

#[test]
fn unknown_parameter_names_it() {
    let body = GOOD.replace(
        "[cluster]",
        "[protocol.params]\nelection_timeoot = [\"1s\", \"2s\"]\n\n[cluster]",
    );
    assert_bad_input("unknown-param.toml", &body, 10, &["election_timeoot"]);
}

#[test]
fn unknown_checker_names_it() {
    let body = GOOD.replace("single-leader-per-term", "single-leader-per-turn");
    assert_bad_input(
        "unknown-check.toml",
        &body,
        4,
        &["single-leader-per-turn", "single-leader-per-term"],
    );
}

#[test]
fn missing_file_is_exit_2() {
    let o = tenure(&["run", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn usage_errors_are_exit_2_and_help_is_0() {
    assert_eq!(tenure(&["frobnicate"]).status.code(), Some(2));
    let help = tenure(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help).contains("verify"));
}

#[test]
fn a_passing_run_exits_0_and_prints_the_seed() {
    let p = scratch("good.toml", GOOD);
    let o = tenure(&["run", p.to_str().unwrap(), "--seed", "9"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("seed 9"));
}

#[test]
fn a_failing_run_exits_1_with_the_narrative_and_the_replay_command() {
    let o = tenure(&["run", "scenarios/raft/forget-vote-restart.toml"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("single-leader-per-term violated"), "{t}");
    assert!(t.contains("crashed"), "the narrative shows the crash: {t}");
    assert!(
        t.contains("replay: tenure run scenarios/raft/forget-vote-restart.toml --seed 1"),
        "{t}"
    );
}

#[test]
fn json_report_parses_and_trace_is_written() {
    let trace = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests/bully.jsonl");
    let o = tenure(&[
        "run",
        "scenarios/bully/split-brain.toml",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON report");
    assert_eq!(j["outcome"], "violation");
    assert_eq!(j["expectation_met"], true);
    assert_eq!(j["violations"][0]["checker"], "single-leader-at-a-time");
    let lines = std::fs::read_to_string(&trace).unwrap();
    assert!(lines.lines().count() > 100);
    for l in lines.lines() {
        serde_json::from_str::<serde_json::Value>(l).expect("each trace line is JSON");
    }
}

#[test]
fn check_determinism_passes_on_a_real_scenario() {
    let o = tenure(&[
        "run",
        "scenarios/raft/clock-drift-and-jumps.toml",
        "--check-determinism",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("deterministic"));
}

#[test]
fn trace_output_never_overwrites_the_scenario() {
    let p = scratch("keep-me.toml", GOOD);
    let o = tenure(&["run", p.to_str().unwrap(), "--trace", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), GOOD);
}

#[test]
fn verify_of_the_bully_scenarios_exits_0() {
    let o = tenure(&["verify", "scenarios/bully"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn list_shows_protocols_and_checkers() {
    let o = tenure(&["list", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["protocols"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "raft"));
    assert_eq!(
        j["checkers"].as_array().unwrap().len(),
        tenure_check_count()
    );
}

fn tenure_check_count() -> usize {
    tenure_check::catalog().len()
}

// --- check-model ---

#[test]
fn check_model_prints_the_shortest_counterexample_as_steps_and_exits_1() {
    let o = tenure(&[
        "check-model",
        "--protocol",
        "raft",
        "--variant",
        "no-step-down",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("VIOLATION steps-down-on-higher-term at depth 5: n0 leads term 1"),
        "{t}"
    );
    assert!(t.contains("  1. n0 timer Election fired"), "{t}");
    assert!(t.contains("  4. n1 timer Election fired"), "{t}");
    assert!(t.contains("stopped at the first violation"), "{t}");
}

#[test]
fn check_model_passes_with_exit_0_and_a_report_line() {
    let o = tenure(&["check-model", "--protocol", "fencing"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("no violation within the bounds"), "{t}");
    assert!(
        t.contains("explored 4790 states, 4790 unique, depth reached 21, complete"),
        "{t}"
    );
}

/// A search `--max-states` stops before its depth bound judged less than was asked: not
/// judged (undecided, exit 5), never a pass, saying the depth every state passed to.
/// The control: the same search asked only to that depth is complete and passes.
#[test]
fn check_model_cut_by_max_states_is_not_judged_but_says_what_passed() {
    let cut = ["--protocol", "raft-log", "--max-states", "1000"];
    let o = tenure(&[&["check-model"][..], &cut].concat());
    let t = text(&o);
    assert_eq!(o.status.code(), Some(5), "{t}");
    assert!(!t.contains("no violation within the bounds"), "{t}");
    assert!(
        t.contains("cut by max-states at depth 5 (every state to depth 4 judged)"),
        "{t}"
    );
    assert!(
        t.contains(
            "NOT JUDGED (undecided): --max-states 1000 stopped the search at depth 5 of the \
             7 asked; every state to depth 4 passed"
        ),
        "{t}"
    );
    let o = tenure(&[&["check-model"][..], &cut, &["--json"]].concat());
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["verdict"], "not-judged");
    assert_eq!(v["complete"], false);
    assert_eq!(v["judged_depth"], 4);
    assert!(v["undecided"].as_str().is_some(), "{v:#}");

    let o = tenure(&[&["check-model"][..], &cut, &["--max-depth", "4", "--json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["verdict"], "pass");
    assert_eq!(v["complete"], true);
    assert_eq!(v["judged_depth"], 4);
    assert!(v["undecided"].is_null(), "{v:#}");
}

/// raft-log's `commit-old-term` is searched with bounds of its own (quiet timers, three
/// isolations, depth 21), which the header names; its walks say they are not expected
/// to find it, and a walk that finds nothing passes only the walks taken.
#[test]
fn check_model_names_commit_old_terms_bounds_and_that_walks_miss_it() {
    let o = tenure(&[
        "check-model",
        "--protocol",
        "raft-log",
        "--variant",
        "commit-old-term",
        "--walk",
        "0..20",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("terms <= 4,"), "{t}");
    assert!(t.contains("drops <= 0, isolations <= 12,"), "{t}");
    assert!(t.contains("timers quiet"), "{t}");
    assert!(
        t.contains("note: random walks are not expected to find `commit-old-term`'s bug"),
        "{t}"
    );
    assert!(t.contains("no violation in any walk"), "{t}");
    let o = tenure(&[
        "check-model",
        "--protocol",
        "raft-log",
        "--variant",
        "commit-old-term",
        "--walk",
        "0..5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert!(v["walks_miss"].as_str().is_some(), "{v:#}");
    // Other variants: no isolation, and the header does not mention it.
    let o = tenure(&[
        "check-model",
        "--protocol",
        "raft-log",
        "--max-depth",
        "2",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["explored"]["isolations"], 0, "{v:#}");
}

#[test]
fn check_model_json_and_walks() {
    let o = tenure(&[
        "check-model",
        "--protocol",
        "fencing",
        "--variant",
        "unfenced",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    // The same stale write breaks both default checks; the write chain of
    // no-lost-update is judged first.
    assert_eq!(v["violation"]["property"], "no-lost-update");
    assert_eq!(v["violation"]["depth"], 15);
    assert_eq!(v["violation"]["steps"].as_array().unwrap().len(), 15);

    let o = tenure(&[
        "check-model",
        "--protocol",
        "idempotency",
        "--variant",
        "no-key",
        "--walk",
        "0..10",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("walk seed 0 breaks exactly-once"), "{t}");
}

/// Issue 35: PBFT with a Byzantine replica. `small-quorum`'s equivocating primary is
/// found by walks and shrunk to its 11 steps; with no Byzantine node allowed (the
/// negative control of the explorer's Byzantine action) the same walks find nothing;
/// `correct` passes the default exhaustive bounds; the JSON says what was explored.
#[test]
fn check_model_pbft_finds_the_equivocating_primary_with_a_byzantine_replica() {
    let base = [
        "check-model",
        "--protocol",
        "pbft",
        "--variant",
        "small-quorum",
        "--roles",
        "replica=3",
        "--walk",
        "0..100",
    ];
    let mut args = base.to_vec();
    args.push("--shrink");
    let o = tenure(&args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "byzantine <= 1 (replicas; equivocate, wrong-digest, silent, conflicting-views)"
        ),
        "{t}"
    );
    assert!(
        t.contains("walk seed 20 breaks agreement (its 28 steps shrunk to 11):"),
        "{t}"
    );
    assert!(t.contains("VIOLATION agreement at depth 11"), "{t}");
    assert!(t.contains("  1. n0 turned Byzantine (equivocate)"), "{t}");

    let mut args = base.to_vec();
    args.extend(["--byzantine", "0"]);
    let o = tenure(&args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("byzantine <= 0 ("), "{t}");
    assert!(t.contains("no violation in any walk"), "{t}");

    let o = tenure(&["check-model", "--protocol", "pbft", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["verdict"], "pass");
    assert_eq!(v["explored"]["byzantine"], 1);
    assert_eq!(v["explored"]["max_depth"], 6);
    assert_eq!(v["explored"]["max_term"], 1);
    assert_eq!(v["explored"]["roles"]["replica"], 4);
    assert_eq!(
        v["explored"]["byzantine_behaviours"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(v["unique_states"], 24_165);

    let o = tenure(&["check-model", "--protocol", "pbft", "--byzantine", "2"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("--byzantine: pbft/correct: beyond assumption max-byzantine"),
        "{t}"
    );
}

/// Issue 35: Multi-Paxos in the model checker. `skip-phase1` is found by walks and
/// shrunk to a path where the second leader never saw slot 1; `no-sync-accept` (a
/// power loss) is not judged, exit 5, and says why; the header names the ballot bound.
#[test]
fn check_model_multi_paxos_finds_skip_phase1_and_leaves_no_sync_accept_out() {
    let o = tenure(&[
        "check-model",
        "--protocol",
        "multi-paxos",
        "--variant",
        "skip-phase1",
        "--walk",
        "0..100",
        "--shrink",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("on server=3: rounds <= 2, depth <= 60 events"),
        "{t}"
    );
    assert!(
        t.contains("walk seed 40 breaks state-machine-safety (its 27 steps shrunk to 11):"),
        "{t}"
    );

    let o = tenure(&[
        "check-model",
        "--protocol",
        "multi-paxos",
        "--variant",
        "no-sync-accept",
        "--max-depth",
        "4",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(5), "{t}");
    assert!(t.contains("NOT JUDGED (could not fail)"), "{t}");
    assert!(t.contains("never cuts power"), "{t}");
}

#[test]
fn check_model_bad_input_is_exit_2_naming_the_field() {
    for (args, needle) in [
        (
            &["--protocol", "viewstamped"][..],
            "--protocol: unknown protocol `viewstamped`",
        ),
        (
            &["--protocol", "leader-lease"][..],
            "stay with the simulator",
        ),
        (
            &["--protocol", "raft", "--variant", "x"][..],
            "variant: raft has no variant `x`",
        ),
        (
            &["--protocol", "fencing", "--nodes", "3"][..],
            "nodes: fencing has several roles",
        ),
        (
            &["--protocol", "fencing", "--roles", "clients=2"][..],
            "roles: fencing has no role `clients`",
        ),
        (
            &["--protocol", "raft", "--checks", "leader-liveness"][..],
            "checks: leader-liveness judges liveness",
        ),
        (&["--protocol", "raft", "--walk", "ten"][..], "walk: `ten`"),
    ] {
        let mut all = vec!["check-model"];
        all.extend_from_slice(args);
        let o = tenure(&all);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(t.contains(needle), "{args:?}: {t}");
    }
}

/// `[processing] order_after_stall = true`: after the leader's pause, the heartbeat
/// replies and timers that fell due meanwhile are handled in an order drawn from the
/// seed, traced as `reordered`; without it (the default) in arrival order, with no
/// `reordered` line.
#[test]
fn order_after_stall_in_a_scenario_draws_the_order_after_a_pause() {
    let scenario = |on: bool| {
        format!(
            "name = \"order after a stall\"\nseed = 2\nduration = \"3s\"\n\
             checks = [\"single-leader-per-term\"]\n\n[protocol]\nname = \"raft\"\n\n\
             [cluster]\nnodes = 3\n\n[processing]\norder_after_stall = {on}\n\n\
             [[fault]]\nat = \"1s\"\nkind = \"pause\"\nnode = \"leader\"\nduration = \"400ms\"\n"
        )
    };
    let reordered = |on: bool| {
        let name = format!("order-after-stall-{on}");
        let p = scratch(&format!("{name}.toml"), &scenario(on));
        let trace = p.with_extension("jsonl");
        let _ = std::fs::remove_file(&trace);
        let o = tenure(&[
            "run",
            p.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"event\":\"reordered\""))
            .count()
    };
    assert!(reordered(true) >= 1, "the drawn order is traced");
    assert_eq!(
        reordered(false),
        0,
        "arrival order unless the scenario asks"
    );
}
