//! `tenure real`: the zoo's redis-lock clients against a real `redis-server` on
//! loopback (Debian's package redis-server; `.ci/run` installs it, so these tests
//! require it and never skip). A short run with a server pause and a client crash and
//! restart passes and leaves no server process and no temporary directory behind, and
//! neither does a run ended by Ctrl-C; a missing server, and faults a real run cannot
//! apply, are bad input naming what is missing.
//!
//! Real processes, sockets and clocks: not deterministic. The run's assertions hold for
//! any run of the correct lock (TTL 2s, work 100ms, no pause of a client past its TTL).

// Real processes and real time: what these tests are about.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use crate::common::{repo, s, scratch, text};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One real run at a time: a fault lands at a moment of real time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
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

/// The temporary directories a `tenure real` process `pid` made (its servers' data).
fn temp_dirs_of(pid: u32) -> Vec<String> {
    let tail = format!("-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("tenure-real-") && n.contains(&tail))
                .collect()
        })
        .unwrap_or_default()
}

fn scenario(duration: &str, faults: &str) -> String {
    format!(
        r#"
name = "redis-lock-real-test"
seed = 3
duration = "{duration}"
checks = ["mutual-exclusion", "no-lost-update"]

[protocol]
name = "redis-lock"
variant = "correct"

[protocol.params]
ttl = "2s"
work_duration = "100ms"

[cluster.roles]
server = 1
client = 3
storage = 1
{faults}
"#
    )
}

/// Runs `tenure real` on `file` into `out`; with `interrupt_after`, SIGINT once the
/// server's log exists and that long has passed. Returns (pid, exit code, output).
fn run_real(
    file: &std::path::Path,
    out: &std::path::Path,
    interrupt_after: Option<Duration>,
) -> (u32, Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(["real", s(file), "--out", s(out)])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tenure runs");
    let pid = child.id();
    if let Some(after) = interrupt_after {
        let t = Instant::now();
        while !out.join("n0/server.log").exists() && t.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(after);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    (pid, o.status.code(), text(&o))
}

/// A run with a server paused (SIGSTOP/SIGCONT) and a client crashed and restarted:
/// every fault applied, the checks judged and passed, the logs kept; afterwards no
/// redis-server of the run is left and its data directory is gone.
#[test]
fn a_real_redis_lock_run_passes_and_leaves_nothing_behind() {
    let _one = one_at_a_time();
    let dir = scratch("real", "run");
    let file = dir.join("s.toml");
    let faults = r#"
[[fault]]
at = "500ms"
kind = "pause"
node = 0
duration = "400ms"

[[fault]]
at = "1200ms"
kind = "crash"
node = 2

[[fault]]
at = "1700ms"
kind = "restart"
node = 2
"#;
    std::fs::write(&file, scenario("3s", faults)).unwrap();
    let out = dir.join("out");
    let (pid, code, said) = run_real(&file, &out, None);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("not deterministic"), "{said}");
    assert!(said.contains("pass mutual-exclusion"), "{said}");
    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    assert_eq!(schedule.matches("\"applied\"").count(), 3, "{schedule}");
    assert!(schedule.contains("SIGSTOP n0"), "{schedule}");
    let server_log = std::fs::read_to_string(out.join("n0/server.log")).unwrap();
    assert!(
        server_log.contains("Ready to accept connections"),
        "{server_log}"
    );
    let n2 = std::fs::read_to_string(out.join("n2/observations.jsonl")).unwrap();
    assert_eq!(n2.matches("\"kind\":\"started\"").count(), 2, "{n2}");
    assert_eq!(n2.matches("\"kind\":\"crashed\"").count(), 1, "{n2}");
    let needle = format!("tenure-real-n0-{pid}-");
    assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
    assert_eq!(temp_dirs_of(pid), Vec::<String>::new());
}

/// The scenario's network in a real run: `[network] latency`, a `slow-link` and a
/// `network` event that loses every message from 1.5s on. Both events are applied,
/// answers arrive before the loss and none after it (a delay drawn before the event is
/// at most 10ms, the slow link's ended at 1s: 100ms of margin), and the lock stays safe.
#[test]
fn network_events_delay_and_lose_a_real_runs_messages() {
    let _one = one_at_a_time();
    let dir = scratch("real", "network");
    let file = dir.join("s.toml");
    let faults = r#"
[network]
latency = ["5ms", "10ms"]

[[fault]]
at = "500ms"
kind = "slow-link"
from = 0
node = 1
latency = ["100ms", "120ms"]
duration = "500ms"

[[fault]]
at = "1500ms"
kind = "network"
loss = 1.0
"#;
    std::fs::write(&file, scenario("3s", faults)).unwrap();
    let out = dir.join("out");
    let (_pid, code, said) = run_real(&file, &out, None);
    assert_eq!(code, Some(0), "{said}");
    let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
    assert!(
        schedule.contains("the link n0 -> n1 slow (uniform) for 500ms"),
        "{schedule}"
    );
    assert!(
        schedule.contains("the network from now on: loss 1"),
        "{schedule}"
    );
    let lost_from = schedule
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fault"] == "network")
        .and_then(|v| v["applied_at_epoch_ns"].as_i64())
        .expect("the network event's time");
    let (mut before, mut after) = (0, 0);
    for n in 1..=3 {
        let obs = std::fs::read_to_string(out.join(format!("n{n}/observations.jsonl"))).unwrap();
        for line in obs.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            // An answer that arrived (a timed-out operation completes `info`, alone).
            if v["obs"]["kind"] == "complete" && v["obs"]["outcome"] == "ok" {
                let t = v["time"].as_i64().unwrap();
                if t < lost_from {
                    before += 1;
                } else if t > lost_from + 100_000_000 {
                    after += 1;
                }
            }
        }
    }
    assert!(before > 0, "answers arrive before the loss");
    assert_eq!(after, 0, "no answer arrives once every message is lost");
}

/// Ctrl-C in the middle of a 60s run: the command ends, judging what it has, and
/// leaves no server and no temporary directory.
#[test]
fn ctrl_c_ends_a_real_run_and_cleans_up() {
    let _one = one_at_a_time();
    let dir = scratch("real", "ctrl-c");
    let file = dir.join("s.toml");
    std::fs::write(&file, scenario("60s", "")).unwrap();
    let out = dir.join("out");
    let (pid, _code, said) = run_real(&file, &out, Some(Duration::from_millis(500)));
    assert!(said.contains("interrupted"), "{said}");
    let needle = format!("tenure-real-n0-{pid}-");
    assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
    assert_eq!(temp_dirs_of(pid), Vec::<String>::new());
}

/// No redis-server on PATH: bad input (exit 2) naming the Debian package, before
/// anything starts.
#[test]
fn a_missing_server_is_bad_input_naming_the_package() {
    let dir = scratch("real", "missing");
    let file = dir.join("s.toml");
    std::fs::write(&file, scenario("2s", "")).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(["real", s(&file), "--out", s(&out)])
        .env("PATH", dir.join("no-such-bin"))
        .current_dir(repo())
        .output()
        .unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("`redis-server` is not on PATH")
            && said.contains("apt-get install -y redis-server"),
        "{said}"
    );
    assert!(!out.exists(), "nothing started");
}

/// A fault a real run cannot apply is refused (exit 2) naming the fault and why: a
/// disk fault, a clock fault other than a server's step,
/// and a step of a client's clock (the clients share this machine's clock).
#[test]
fn faults_a_real_run_cannot_apply_are_refused() {
    let dir = scratch("real", "refused");
    for (kind, extra, why) in [
        (
            "disk-stall",
            "node = 0\nduration = \"1s\"",
            "`disk-stall` cannot be applied to a real run: disk faults need the simulator's disk",
        ),
        (
            "clock-stall",
            "node = 0\nduration = \"1s\"",
            "`clock-stall` cannot be applied to a real run: tenure's clock shim steps",
        ),
        (
            "clock-jump",
            "node = 1\nby = \"5s\"",
            "`clock-jump` is applied to a real server only",
        ),
    ] {
        let file = dir.join(format!("{kind}.toml"));
        let fault = format!("\n[[fault]]\nat = \"1s\"\nkind = \"{kind}\"\n{extra}\n");
        std::fs::write(&file, scenario("2s", &fault)).unwrap();
        let out = dir.join(format!("{kind}-out"));
        let o = crate::common::tenure(&["real", s(&file), "--out", s(&out)]);
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{said}");
        assert!(said.contains(why), "{kind}: {said}");
        assert!(said.contains("fault[0]"), "{said}");
        assert!(!out.exists(), "nothing started");
    }
}

/// A short etcd-lock or ZooKeeper lock scenario: two clients, a TTL (session timeout)
/// of 2s, `faults` appended.
fn lock_scenario(protocol: &str, duration: &str, faults: &str) -> String {
    let (timeout, recipe) = match protocol {
        "zookeeper" => ("session_timeout", "recipe = \"lock\"\n"),
        _ => ("ttl", ""),
    };
    format!(
        r#"
name = "{protocol}-real-test"
seed = 3
duration = "{duration}"
checks = ["mutual-exclusion", "fencing-safety", "no-lost-update"]

[protocol]
name = "{protocol}"
variant = "correct"

[protocol.params]
{recipe}{timeout} = "2s"
work_duration = "100ms"

[cluster.roles]
server = 1
client = 2
storage = 1
{faults}
"#
    )
}

/// A client crash and restart against a real etcd and a real ZooKeeper: the checks
/// judged and passed, the server's own log kept; afterwards no server of the run is
/// left and its data directory is gone.
#[test]
fn real_etcd_and_zookeeper_lock_runs_pass_and_leave_nothing_behind() {
    let _one = one_at_a_time();
    let faults = r#"
[[fault]]
at = "800ms"
kind = "crash"
node = 1

[[fault]]
at = "1200ms"
kind = "restart"
node = 1
"#;
    for (protocol, server_says) in [
        ("etcd-lock", "became leader at term"),
        ("zookeeper", "binding to port"),
    ] {
        let dir = scratch("real", &format!("{protocol}-run"));
        let file = dir.join("s.toml");
        std::fs::write(&file, lock_scenario(protocol, "2500ms", faults)).unwrap();
        let out = dir.join("out");
        let (pid, code, said) = run_real(&file, &out, None);
        assert_eq!(code, Some(0), "{protocol}: {said}");
        assert!(said.contains("pass mutual-exclusion"), "{said}");
        assert!(said.contains("pass fencing-safety"), "{said}");
        let schedule = std::fs::read_to_string(out.join("schedule.jsonl")).unwrap();
        assert_eq!(schedule.matches("\"applied\"").count(), 2, "{schedule}");
        let log = std::fs::read_to_string(out.join("n0/server.log")).unwrap();
        assert!(log.contains(server_says), "{protocol}: {log}");
        let needle = format!("tenure-real-n0-{pid}-");
        assert_eq!(processes_mentioning(&needle), Vec::<String>::new());
        assert_eq!(temp_dirs_of(pid), Vec::<String>::new());
    }
}

/// A server that fails as it starts (a stand-in `etcd` or `java` first on PATH that
/// leaves a child of its own running and exits 1): an internal error (exit 3) naming
/// the server's log; its process group is killed, the child with it, and its data
/// directory removed.
#[test]
fn a_server_failing_to_start_leaves_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let _one = one_at_a_time();
    for (protocol, program) in [("etcd-lock", "etcd"), ("zookeeper", "java")] {
        let dir = scratch("real", &format!("{protocol}-start-error"));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join(program);
        std::fs::write(
            &fake,
            "#!/bin/sh\nsleep 300 &\necho $! >> \"$TENURE_TEST_PIDS\"\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pids = dir.join("pids");
        let file = dir.join("s.toml");
        std::fs::write(&file, lock_scenario(protocol, "2s", "")).unwrap();
        let out = dir.join("out");
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let child = Command::new(env!("CARGO_BIN_EXE_tenure"))
            .args(["real", s(&file), "--out", s(&out)])
            .env("PATH", path)
            .env("TENURE_TEST_PIDS", &pids)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let o = child.wait_with_output().unwrap();
        let said = text(&o);
        assert_eq!(o.status.code(), Some(3), "{protocol}: {said}");
        assert!(said.contains("exited as it started"), "{said}");
        let left = std::fs::read_to_string(&pids).unwrap();
        let left: u32 = left.trim().parse().unwrap();
        // SIGKILL is sent before tenure exits; the kernel may take a moment to end the
        // process (a zombie, or gone, is dead). A child left running stays `S` for 300s.
        let dead = || {
            let stat = std::fs::read_to_string(format!("/proc/{left}/stat")).unwrap_or_default();
            (stat.is_empty() || stat.contains(") Z"), stat)
        };
        let t = Instant::now();
        while !dead().0 && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (is_dead, stat) = dead();
        assert!(
            is_dead,
            "{protocol}: the server's child {left} was left running: {stat}"
        );
        assert_eq!(temp_dirs_of(pid), Vec::<String>::new());
    }
}

/// No etcd, no java: bad input (exit 2) naming the Debian package, before anything
/// starts; and a clock step, which etcd and ZooKeeper (leases and sessions on their
/// monotonic clocks) cannot be given, is refused.
#[test]
fn etcd_and_zookeeper_runs_refuse_what_they_cannot_do() {
    let dir = scratch("real", "etcd-zk-refused");
    for (protocol, package) in [("etcd-lock", "etcd-server"), ("zookeeper", "zookeeperd")] {
        let file = dir.join(format!("{protocol}.toml"));
        std::fs::write(&file, lock_scenario(protocol, "2s", "")).unwrap();
        let out = dir.join(format!("{protocol}-out"));
        let o = Command::new(env!("CARGO_BIN_EXE_tenure"))
            .args(["real", s(&file), "--out", s(&out)])
            .env("PATH", dir.join("no-such-bin"))
            .current_dir(repo())
            .output()
            .unwrap();
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{said}");
        assert!(
            said.contains(&format!("apt-get install -y {package}")),
            "{said}"
        );
        assert!(!out.exists(), "nothing started");
        let jump = "\n[[fault]]\nat = \"1s\"\nkind = \"clock-jump\"\nnode = 0\nby = \"5s\"\n";
        std::fs::write(&file, lock_scenario(protocol, "2s", jump)).unwrap();
        let o = crate::common::tenure(&["real", s(&file), "--out", s(&out)]);
        let said = text(&o);
        assert_eq!(o.status.code(), Some(2), "{said}");
        assert!(
            said.contains("`clock-jump` is applied to redis-server only"),
            "{said}"
        );
        assert!(!out.exists(), "nothing started");
    }
}
