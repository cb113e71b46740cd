//! `tenure cluster` and `tenure check-trace`: the zoo's Raft, unchanged, as five real
//! processes on loopback; its leader cut off by a loopback partition, then killed with
//! SIGKILL (its `crashed` record written for it); the logs judged with the simulator's
//! checker, by `cluster` and `check-trace` alike; nothing left running, even when
//! `cluster` itself is killed; faults a real machine cannot apply refused.
//!
//! Real processes, sockets and clocks: not deterministic. The assertions hold for any
//! run of a correct Raft (one leader per term, a new leader after the old one is
//! killed within the run's seconds of real time, with election timeouts of 150-300ms).

use crate::common::{s, scratch, stdout, tenure, text};

/// The tests that start a real cluster run one at a time: their faults land at moments
/// of real time, which clusters competing for two cores would blur (the forget-vote
/// schedule most of all).
fn one_real_cluster_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static REAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    REAL.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "raft");
    let scenario = dir.join("raft.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("out");
    let o = tenure(&["cluster", s(&scenario), "--out", s(&out)]);
    let t = text(&o);
    // leader-liveness is not judged on real logs: not a pass, exit 5.
    assert_eq!(o.status.code(), Some(5), "{t}");
    assert!(t.contains("not deterministic"), "it says so: {t}");
    assert!(t.contains("pass single-leader-per-term"), "{t}");
    assert!(
        t.contains("not judged leader-liveness"),
        "a check it cannot judge is named, not passed: {t}"
    );
    assert!(!t.contains("pass leader-liveness"), "{t}");
    assert!(
        t.contains("verdict: not judged (1 of 2 checks not judged, 1 passed), exit 5"),
        "{t}"
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
    // The killed node could not say so: its `crashed` record was appended for it,
    // stamped with the kill, after everything it wrote.
    let log: Vec<tenure_core::Record> =
        std::fs::read_to_string(out.join(format!("n{victim}/observations.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let last = log.last().unwrap();
    assert_eq!(last.obs, tenure_core::Observation::Crashed, "{last:?}");
    assert_eq!(
        Some(last.time.0),
        killed["crashed_at_epoch_ns"].as_u64(),
        "{schedule}"
    );
    assert!(log.windows(2).all(|w| w[0].time <= w[1].time));

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

    // The same logs, judged again by check-trace: with the scenario's checks, the same
    // report and exit code as cluster's (one code path); with the judged one alone, a
    // pass.
    let again = tenure(&[
        "check-trace",
        s(&out),
        "--checks",
        "single-leader-per-term,leader-liveness",
    ]);
    assert_eq!(stdout(&again), stdout(&o), "{}", text(&again));
    assert_eq!(again.status.code(), o.status.code());
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

/// A leader killed with SIGKILL and replaced: the checks the simulator passes on this
/// file pass for real too, the overlap checks judged within a stated 1ms clock error.
const LEADER_KILLED: &str = r#"
name = "raft-real-leader-killed"
duration = "5s"
checks = ["single-leader-per-term", "single-leader-at-a-time", "single-leader-at-a-time-belief"]

[protocol]
name = "raft"

[protocol.params]
election_timeout = ["400ms", "800ms"]

[cluster]
nodes = 3

[[fault]]
at = "2500ms"
kind = "crash"
node = "leader"
"#;

const LEADER_KILLED_CHECKS: &str =
    "single-leader-per-term,single-leader-at-a-time,single-leader-at-a-time-belief";

/// The acceptance point: a real cluster whose leader is killed with SIGKILL and replaced
/// passes `--clock-error 1ms` where the simulator passes the same file; `cluster` and
/// `check-trace` agree on it. The kill ends the victim's belief only because `cluster`
/// wrote its `crashed` record: without it (as before), the belief check fails on the
/// same logs.
#[test]
fn a_killed_and_replaced_leader_passes_the_overlap_checks_as_in_the_simulator() {
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "leader-killed");
    let scenario = dir.join("leader-killed.toml");
    std::fs::write(&scenario, LEADER_KILLED).unwrap();
    let sim = tenure(&["run", s(&scenario)]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim));

    let out = dir.join("out");
    let o = tenure(&[
        "cluster",
        s(&scenario),
        "--out",
        s(&out),
        "--clock-error",
        "1ms",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for c in LEADER_KILLED_CHECKS.split(',') {
        assert!(t.contains(&format!("pass {c}: ")), "{c}: {t}");
    }
    assert!(
        t.contains("verdict: pass (3 of 3 checks passed), exit 0"),
        "{t}"
    );
    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    let killed: serde_json::Value = serde_json::from_str(schedule.trim()).unwrap();
    assert!(
        killed["applied"].as_str().unwrap().starts_with("SIGKILL n"),
        "{schedule}"
    );
    let victim = killed["node"].as_u64().unwrap();
    let crashed_at = killed["crashed_at_epoch_ns"].as_u64().unwrap();
    let log =
        |n: u64| std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl"))).unwrap();
    let replaced = (0..3).filter(|n| *n != victim).any(|n| {
        log(n).lines().any(|l| {
            let r: tenure_core::Record = serde_json::from_str(l).unwrap();
            matches!(r.obs, tenure_core::Observation::Leader { .. }) && r.time.0 > crashed_at
        })
    });
    assert!(replaced, "another node led after the kill");

    // check-trace on the same logs: the same report, the same exit code.
    let judge_again = || {
        tenure(&[
            "check-trace",
            s(&out),
            "--checks",
            LEADER_KILLED_CHECKS,
            "--clock-error",
            "1ms",
        ])
    };
    let again = judge_again();
    assert_eq!(stdout(&again), stdout(&o), "{}", text(&again));
    assert_eq!(again.status.code(), Some(0));

    // The negative control: the victim's log as it was before cluster wrote `crashed`
    // for it. The dead leader "believes" to the end, beside its successor.
    let victim_log = out.join(format!("n{victim}/observations.jsonl"));
    let without: String = log(victim)
        .lines()
        .filter(|l| !l.contains("\"kind\":\"crashed\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&victim_log, without).unwrap();
    let again = judge_again();
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(
        stdout(&again).contains("FAIL single-leader-at-a-time-belief"),
        "{}",
        text(&again)
    );
    assert_eq!(processes_mentioning(s(&out)), Vec::<String>::new());
}

/// The pids of the processes whose command line mentions `needle`.
fn pids_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .contains(needle)
                .then_some(pid)
        })
        .collect()
}

/// `tenure cluster` killed with SIGKILL (it can clean nothing up) takes its nodes with
/// it, a node stopped by SIGSTOP in the middle of a pause included. (Before, they ran
/// on, orphaned.) Waits for events; the limits only turn a hang into a failure.
#[test]
#[allow(clippy::disallowed_methods, clippy::disallowed_types)] // waiting for real processes
fn the_nodes_die_with_a_cluster_killed_with_sigkill_paused_ones_too() {
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "orphans");
    let scenario = dir.join("long.toml");
    std::fs::write(
        &scenario,
        r#"
name = "a long run with a long pause"
duration = "10m"
checks = ["single-leader-per-term"]
[protocol]
name = "raft"
[cluster]
nodes = 3
[[fault]]
at = "0s"
kind = "pause"
node = 1
duration = "9m"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let mut cluster = std::process::Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(["cluster", s(&scenario), "--out", s(&out)])
        .current_dir(crate::common::repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let limit = std::time::Duration::from_secs(120);
    let waited = std::time::Instant::now();
    while !std::fs::read_to_string(out.join("schedule.jsonl"))
        .unwrap_or_default()
        .contains("SIGSTOP n1")
    {
        assert!(
            matches!(cluster.try_wait(), Ok(None)),
            "the cluster ended before its pause"
        );
        assert!(waited.elapsed() < limit, "the pause was never applied");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let nodes = pids_mentioning(&format!("node {}", s(&scenario)));
    assert_eq!(nodes.len(), 3, "three node processes");
    std::process::Command::new("kill")
        .args(["-KILL", &cluster.id().to_string()])
        .status()
        .unwrap();
    cluster.wait().unwrap();
    let waited = std::time::Instant::now();
    while !pids_mentioning(s(&out)).is_empty() && waited.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left = pids_mentioning(s(&out));
    for pid in &left {
        // Clean up after a failure: these are this test's own nodes.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert_eq!(left, Vec::<u32>::new(), "nodes outlived the cluster");
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
}

/// Two nodes' hand-written logs: n0 holds and acts on lock `r` from 10ms to 20ms, n1
/// from 15ms to 30ms: their intervals overlap by 5ms of the logs' time.
fn overlapping_logs(dir: &std::path::Path) {
    use tenure_core::{Cluster, LocalTime, NodeId, Observation, Record, SimTime};
    let cluster = Cluster::uniform("client", 2);
    let at = |ms: u64, node: u32, obs: Observation| {
        Record::new(
            SimTime(ms * 1_000_000),
            NodeId(node),
            LocalTime(ms as i64 * 1_000_000),
            LocalTime(ms as i64 * 1_000_000),
            obs,
        )
    };
    let r = || "r".to_string();
    let logs = [
        vec![
            at(0, 0, Observation::Started),
            at(
                10,
                0,
                Observation::Holds {
                    resource: r(),
                    token: 1,
                },
            ),
            at(
                10,
                0,
                Observation::Acts {
                    resource: r(),
                    token: 1,
                },
            ),
            at(
                20,
                0,
                Observation::Acts {
                    resource: r(),
                    token: 1,
                },
            ),
            at(20, 0, Observation::Releases { resource: r() }),
        ],
        vec![
            at(0, 1, Observation::Started),
            at(
                15,
                1,
                Observation::Holds {
                    resource: r(),
                    token: 2,
                },
            ),
            at(
                15,
                1,
                Observation::Acts {
                    resource: r(),
                    token: 2,
                },
            ),
            at(
                30,
                1,
                Observation::Acts {
                    resource: r(),
                    token: 2,
                },
            ),
            at(30, 1, Observation::Releases { resource: r() }),
        ],
    ];
    for (n, log) in logs.iter().enumerate() {
        let node = dir.join(format!("n{n}"));
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(
            node.join("cluster.json"),
            serde_json::to_string(&cluster).unwrap(),
        )
        .unwrap();
        let lines: String = log
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(node.join("observations.jsonl"), lines).unwrap();
    }
}

/// The checks that compare intervals of different nodes are judged only with a bound
/// on the clocks' error, given by --clock-error and stated in the report: a 5ms overlap
/// fails with a 1ms bound, passes with a 10ms one, and without a bound is not judged
/// (never passed: exit 5).
#[test]
fn check_trace_judges_overlaps_within_a_stated_clock_error() {
    let dir = scratch("cluster", "clock-error");
    overlapping_logs(&dir);
    let checks = "mutual-exclusion,mutual-exclusion-belief";

    let o = tenure(&["check-trace", s(&dir), "--checks", checks]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(5), "not judged: {t}");
    for c in ["mutual-exclusion", "mutual-exclusion-belief"] {
        assert!(t.contains(&format!("not judged {c}: ")), "{t}");
        assert!(
            !t.contains(&format!("pass {c}")),
            "not judged is not passed: {t}"
        );
    }
    assert!(
        t.contains("give --clock-error"),
        "says how to judge them: {t}"
    );

    let with_bound = |checks: &str, bound: &str| {
        tenure(&[
            "check-trace",
            s(&dir),
            "--checks",
            checks,
            "--clock-error",
            bound,
        ])
    };
    let o = with_bound(checks, "1ms");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("clock error bound 1ms, given by --clock-error"),
        "{t}"
    );
    assert!(t.contains("FAIL mutual-exclusion:"), "{t}");
    assert!(!t.contains("not judged"), "{t}");

    let o = with_bound(checks, "10ms");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("clock error bound 10ms, given by --clock-error"),
        "{t}"
    );
    assert!(t.contains("pass mutual-exclusion:"), "{t}");
    assert!(t.contains("pass mutual-exclusion-belief:"), "{t}");

    // lease-safety takes no tolerance: never judged on real logs, bound or not.
    let o = with_bound("lease-safety", "1ms");
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(text(&o).contains("not judged lease-safety"), "{}", text(&o));

    // A bound that is not a duration is bad input, said in one voice.
    for bad in ["-1ms", "soon", "5"] {
        let o = tenure(&[
            "check-trace",
            s(&dir),
            "--checks",
            checks,
            "--clock-error",
            bad,
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {t}");
        assert!(
            t.starts_with("tenure: ") && t.contains("--clock-error"),
            "{bad}: {t}"
        );
    }
}

/// Raft's forget-vote variant, as real processes, with the voter killed and restarted
/// between two candidacies of one term: it votes twice and two nodes lead term 1, as in
/// the simulator; the correct variant, with the same schedule, does not.
#[test]
fn forget_vote_restarted_at_the_right_moment_votes_twice_for_real() {
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "forget-vote");
    let source = crate::common::repo().join("scenarios/raft/forget-vote-restarted-voter.toml");
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

/// Whether a node's log says its connection with `peer` was reset (tenure-runtime says
/// so as it happens, in stream mode).
fn reset_with(node_log: &str, peer: u32) -> bool {
    node_log.contains(&format!("the connection with n{peer} was reset"))
}

/// etcd-lock, a stream protocol, as five real processes on TCP through the loopback
/// proxy, from the scenario file the simulator runs too: client n3 cut off for longer
/// than the connection timeout (the proxy resets its connections), client n2 killed
/// with SIGKILL and restarted. Any correct run: the lock's promises hold, mutual
/// exclusion holds within the stated clock-error bound, the reset reached both the cut
/// client and the server, nothing is left running.
#[test]
fn etcd_lock_on_tcp_survives_a_partition_past_the_connection_timeout_and_a_sigkill() {
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "etcd-lock");
    let source = crate::common::repo().join("scenarios/etcd-lock/real-cluster.toml");
    let sim = tenure(&["run", s(&source)]);
    assert_eq!(sim.status.code(), Some(0), "{}", text(&sim));

    let out = dir.join("out");
    let o = tenure(&[
        "cluster",
        s(&source),
        "--out",
        s(&out),
        "--clock-error",
        "1ms",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("on 127.0.0.1:") && t.contains("stream mode: TCP"),
        "{t}"
    );
    assert!(!t.contains("0.0.0.0"), "loopback only: {t}");
    for c in ["fencing-safety", "no-lost-update", "mutual-exclusion"] {
        assert!(t.contains(&format!("pass {c}: ")), "{c}: {t}");
    }
    assert!(
        t.contains("tolerance mutual-exclusion: max_overlap 1ms (clock error bound 1ms, given by --clock-error)"),
        "{t}"
    );
    assert!(!t.contains("not judged"), "{t}");

    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    let applied: Vec<String> = schedule
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["applied"].to_string())
        .collect();
    assert_eq!(applied.len(), 4, "{schedule}");
    assert!(
        applied[0].contains("isolate: 8 links blocked"),
        "{schedule}"
    );
    assert!(applied[2].contains("SIGKILL n2"), "{schedule}");
    assert!(applied[3].contains("restarted n2"), "{schedule}");

    // The proxy reset the cut client's connections, and both ends heard of resets: the
    // cut client n3 and the server n0 (n3's reset, n2's kill).
    let reset: u64 = t
        .lines()
        .find(|l| l.contains("the proxy piped"))
        .and_then(|l| l.split("and reset ").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the proxy's count: {t}"));
    assert!(reset >= 1, "{t}");
    let log = |n: u32| std::fs::read_to_string(out.join(format!("n{n}/node.log"))).unwrap();
    assert!(
        reset_with(&log(3), 0),
        "the cut client was told: {}",
        log(3)
    );
    assert!(reset_with(&log(0), 3), "so was the server: {}", log(0));
    assert!(
        reset_with(&log(0), 2),
        "the server saw the kill: {}",
        log(0)
    );

    // The same logs, judged again; without a bound the overlap check is not judged.
    let again = tenure(&[
        "check-trace",
        s(&out),
        "--checks",
        "fencing-safety,mutual-exclusion",
    ]);
    assert_eq!(again.status.code(), Some(5), "{}", text(&again));
    assert!(
        stdout(&again).contains("pass fencing-safety"),
        "{}",
        text(&again)
    );
    assert!(
        stdout(&again).contains("not judged mutual-exclusion"),
        "{}",
        text(&again)
    );

    assert_eq!(processes_mentioning(s(&out)), Vec::<String>::new());
}

/// On real processes too, a pause aimed at the holder before anyone holds waits for one
/// (up to the next heal, less its duration) and stops the first client to hold: the
/// schedule says it waited, then SIGSTOPs a client (n1..n3), after time zero.
#[test]
fn a_pause_aimed_at_the_holder_waits_for_one_on_real_processes_too() {
    let _one = one_real_cluster_at_a_time();
    let dir = scratch("cluster", "aim-waits");
    let scenario = dir.join("aim-waits.toml");
    std::fs::write(
        &scenario,
        r#"
name = "etcd-lock: a pause aimed at the holder before anyone holds"
seed = 1
duration = "3s"
checks = ["fencing-safety", "no-lost-update"]

[protocol]
name = "etcd-lock"
variant = "correct"

[protocol.params]
ttl = "2s"
resource_mode = "fenced"
work_duration = "200ms"

[cluster.roles]
server = 1
client = 3
storage = 1

[network]
latency = ["1ms", "5ms"]
connection_timeout = "1s"

[[fault]]
at = "0s"
kind = "pause"
node = "holder"
duration = "100ms"

[[fault]]
at = "2s"
kind = "heal"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let o = tenure(&["cluster", s(&scenario), "--out", s(&out)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = schedule
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["waiting_until"], "1900ms", "{schedule}");
    let pause = lines
        .iter()
        .find(|l| l["fault"] == "pause" && l.get("applied").is_some())
        .unwrap_or_else(|| panic!("the pause was applied: {schedule}"));
    let node = pause["node"].as_u64().expect("a node");
    assert!((1..=3).contains(&node), "a client: {schedule}");
    assert!(
        pause["applied"]
            .as_str()
            .unwrap()
            .starts_with(&format!("SIGSTOP n{node} for 100ms")),
        "{schedule}"
    );
    assert_ne!(pause["applied_at"], "0.000s", "{schedule}");
}
