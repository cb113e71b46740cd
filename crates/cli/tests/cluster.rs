//! `tenure cluster` and `tenure check-trace`: the zoo's Raft, unchanged, as five real
//! processes on loopback; its leader cut off by a loopback partition, then killed with
//! SIGKILL; the logs judged with the simulator's checker; nothing left running; faults a
//! real machine cannot apply refused.
//!
//! Real processes, sockets and clocks: not deterministic. The assertions hold for any
//! run of a correct Raft (one leader per term, a new leader after the old one is
//! killed within the run's seconds of real time, with election timeouts of 150-300ms).

mod common;
use common::{s, scratch, stdout, tenure, text};

/// Processes whose command line mentions `needle` (Linux: /proc).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

const SCENARIO: &str = r#"
name = "raft-real"
duration = "5s"
checks = ["single-leader-per-term", "leader-liveness"]

[protocol]
name = "raft"

[cluster]
nodes = 5

[[fault]]
at = "1500ms"
kind = "isolate"
node = "leader"

[[fault]]
at = "2500ms"
kind = "heal"

[[fault]]
at = "3500ms"
kind = "crash"
node = "leader"
"#;

#[test]
fn five_real_raft_processes_survive_a_partition_and_a_sigkill_of_their_leader() {
    let dir = scratch("cluster", "raft");
    let scenario = dir.join("raft.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("out");
    let o = tenure(&["cluster", s(&scenario), "--out", s(&out)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("not deterministic"), "it says so: {t}");
    assert!(t.contains("pass single-leader-per-term"), "{t}");
    assert!(
        t.contains("not judged leader-liveness"),
        "a check it cannot judge is named, not passed: {t}"
    );

    // The schedule: the leader was isolated, the network healed, a leader killed.
    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = schedule
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{schedule}");
    assert!(
        lines[0]["applied"]
            .as_str()
            .unwrap()
            .starts_with("isolate: 8 links blocked"),
        "{schedule}"
    );
    assert!(t.contains("dropped"), "{t}");
    let killed = &lines[2];
    assert!(
        killed["applied"].as_str().unwrap().starts_with("SIGKILL n"),
        "{schedule}"
    );
    let victim = killed["node"].as_u64().unwrap();

    // Every node's log; the victim led before the kill, another node after it.
    let mut leaders = std::collections::BTreeSet::new();
    for n in 0..5 {
        let log = std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl"))).unwrap();
        if log.contains("\"kind\":\"leader\"") {
            leaders.insert(n as u64);
        }
    }
    assert!(
        leaders.contains(&victim),
        "the killed node led: {leaders:?}"
    );
    assert!(
        leaders.iter().any(|n| *n != victim),
        "another node led after the kill: {leaders:?}"
    );

    // The same logs, judged again by check-trace.
    let again = tenure(&["check-trace", s(&out), "--checks", "single-leader-per-term"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(stdout(&again).contains("pass single-leader-per-term"));

    // Nothing left running, and only the --out folder written.
    assert_eq!(processes_mentioning(s(&out)), Vec::<String>::new());
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    written.sort();
    assert_eq!(written, ["out", "raft.toml"]);
}

#[test]
fn faults_a_real_machine_cannot_apply_are_refused_before_anything_starts() {
    let dir = scratch("cluster", "refused");
    let scenario = dir.join("drift.toml");
    std::fs::write(
        &scenario,
        SCENARIO.replace(
            "kind = \"crash\"\nnode = \"leader\"",
            "kind = \"clock-drift\"\nnode = 1\ndrift = 0.1",
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = tenure(&["cluster", s(&scenario), "--out", s(&out)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("drift.toml:21:1: field `fault[2]`"),
        "names the file, line and field: {t}"
    );
    assert!(
        t.contains("`clock-drift` cannot be applied to real processes"),
        "{t}"
    );
    assert!(!out.exists(), "nothing started, nothing written");

    // An --out that exists is never written over.
    std::fs::create_dir_all(&out).unwrap();
    let ok = dir.join("ok.toml");
    std::fs::write(&ok, SCENARIO).unwrap();
    let o = tenure(&["cluster", s(&ok), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("exists"), "{}", text(&o));

    // A protocol without a wire encoding says which ones have one.
    let bully = dir.join("bully.toml");
    std::fs::write(
        &bully,
        SCENARIO.replace("name = \"raft\"", "name = \"bully\""),
    )
    .unwrap();
    let o = tenure(&["cluster", s(&bully), "--out", s(&dir.join("b"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("does not run as real nodes") && text(&o).contains("raft"),
        "{}",
        text(&o)
    );
}

#[test]
fn check_trace_refuses_what_it_cannot_judge() {
    let dir = scratch("cluster", "trace");
    let o = tenure(&["check-trace", s(&dir), "--checks", "single-leader-per-term"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no observations.jsonl"), "{}", text(&o));
    let o = tenure(&["check-trace", s(&dir), "--checks", "mutual-exclusion"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bound on their error"), "{}", text(&o));
}

/// Raft's forget-vote variant, as real processes, with the voter killed and restarted
/// between two candidacies of one term: it votes twice and two nodes lead term 1, as in
/// the simulator; the correct variant, with the same schedule, does not.
#[test]
fn forget_vote_restarted_at_the_right_moment_votes_twice_for_real() {
    let dir = scratch("cluster", "forget-vote");
    let source = common::repo().join("scenarios/raft/forget-vote-restarted-voter.toml");
    let o = tenure(&["cluster", s(&source), "--out", s(&dir.join("broken"))]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL single-leader-per-term: n0 and n1 both believed they led term 1"),
        "{t}"
    );
    // The same file in the simulator finds the same two leaders.
    let sim = tenure(&["run", s(&source)]);
    assert!(
        stdout(&sim).contains("n0 and n1 both believed they led term 1"),
        "{}",
        text(&sim)
    );

    let correct = dir.join("correct.toml");
    std::fs::write(
        &correct,
        std::fs::read_to_string(&source)
            .unwrap()
            .replace("variant = \"forget-vote\"", "variant = \"correct\"")
            .replace(
                "outcome = \"violation\"\nchecker = \"single-leader-per-term\"",
                "outcome = \"pass\"",
            ),
    )
    .unwrap();
    let o = tenure(&["cluster", s(&correct), "--out", s(&dir.join("correct"))]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("pass single-leader-per-term"),
        "{}",
        text(&o)
    );
}
