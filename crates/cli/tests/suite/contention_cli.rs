//! `tenure run --metrics` / `--audit`, `tenure audit verify` and `tenure compare
//! --backoff`: their output and exit codes, from the built binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{repo, tenure, text};

fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contention-cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a leadership log of `scenarios/raft/leader-crash.toml` to `name` and returns
/// its path and its lines.
fn audit_log(name: &str) -> (PathBuf, Vec<String>) {
    let out = scratch_dir().join(name);
    // tenure never writes over an existing log (a log is evidence): start afresh.
    let _ = std::fs::remove_file(&out);
    let o = tenure(&[
        "run",
        "scenarios/raft/leader-crash.toml",
        "--audit",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("leadership transitions to"),
        "{}",
        text(&o)
    );
    let lines = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect::<Vec<_>>();
    assert!(lines.len() >= 3, "{lines:?}");
    (out, lines)
}

fn verify(path: &Path) -> Output {
    tenure(&["audit", "verify", path.to_str().unwrap()])
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

#[test]
fn an_untouched_audit_log_verifies_and_its_head_is_checked() {
    let (path, lines) = audit_log("untouched.jsonl");
    let o = verify(&path);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains(&format!("OK {}", path.display())));
    // The head the run printed catches a cut at the end.
    let head = lines.last().unwrap();
    let head = &head[head.find("\"hash\":\"").unwrap() + 8..][..64];
    let o = tenure(&["audit", "verify", path.to_str().unwrap(), "--head", head]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let cut = scratch_dir().join("cut.jsonl");
    write_lines(&cut, &lines[..lines.len() - 1]);
    assert_eq!(verify(&cut).status.code(), Some(0));
    let o = tenure(&["audit", "verify", cut.to_str().unwrap(), "--head", head]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("published head"), "{}", text(&o));
}

#[test]
fn edited_removed_and_reordered_entries_are_rejected_by_line() {
    let (_, lines) = audit_log("original.jsonl");
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "edited.jsonl",
            {
                let mut l = lines.clone();
                l[1] = l[1].replace("\"node\":", "\"node\":1");
                l
            },
            "line 2: entry 1 was edited",
        ),
        (
            "removed.jsonl",
            {
                let mut l = lines.clone();
                l.remove(1);
                l
            },
            "line 2: entry 1 is missing",
        ),
        (
            "reordered.jsonl",
            {
                let mut l = lines.clone();
                l.swap(0, 1);
                l
            },
            "line 1: entries are out of order",
        ),
    ];
    for (name, tampered, expected) in cases {
        let path = scratch_dir().join(name);
        write_lines(&path, &tampered);
        let o = verify(&path);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o));
        assert!(text(&o).contains("TAMPERED"), "{name}: {}", text(&o));
        assert!(text(&o).contains(expected), "{name}: {}", text(&o));
    }
}

#[test]
fn a_file_that_is_not_a_log_is_bad_input() {
    let path = scratch_dir().join("garbage.jsonl");
    std::fs::write(&path, "{\"seq\": 0}\n").unwrap();
    let o = verify(&path);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("garbage.jsonl:1:"), "{}", text(&o));
    let o = verify(&scratch_dir().join("no-such-file.jsonl"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = tenure(&["audit", "verify", path.to_str().unwrap(), "--head", "xyz"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn audit_output_is_refused_over_the_scenario() {
    let o = tenure(&[
        "run",
        "scenarios/raft/leader-crash.toml",
        "--audit",
        "scenarios/raft/leader-crash.toml",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn run_metrics_print_lock_numbers_and_go_into_the_json() {
    let o = tenure(&["run", "scenarios/contention/hot-lock.toml", "--metrics"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    for needle in [
        "acquire latency: p50",
        "retries:",
        "Jain's index",
        "coordinator:",
        "wait queue:",
    ] {
        assert!(t.contains(needle), "no `{needle}` in {t}");
    }
    let o = tenure(&[
        "run",
        "scenarios/contention/hot-lock.toml",
        "--metrics",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let locks = &json["metrics"]["locks"];
    assert!(locks["acquisitions"].as_u64().unwrap() > 0);
    assert!(locks["retries"].as_u64().unwrap() > 0);
    assert!(locks["coordinator"]["per_s"].as_f64().unwrap() > 0.0);
    assert!(json["metrics"]["elections"].is_null());
    // Without --metrics the JSON report is as before.
    let o = tenure(&["run", "scenarios/contention/hot-lock.toml", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json.get("metrics").is_none());
}

#[test]
fn compare_backoff_shows_the_storm_without_backoff() {
    let o = tenure(&[
        "compare",
        "scenarios/contention/hot-lock.toml",
        "--backoff",
        "none,full-jitter",
        "--seeds",
        "2",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let load = |i: usize| {
        rows[i]["metrics"]["locks"]["coordinator"]["per_s"]
            .as_f64()
            .unwrap()
    };
    let retries = |i: usize| {
        rows[i]["metrics"]["locks"]["retries_per_acquisition"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(rows[0]["label"], "none");
    assert_eq!(rows[1]["label"], "full-jitter");
    // No backoff: the waiting clients poll as fast as the network answers.
    assert!(load(0) > 5.0 * load(1), "{} vs {}", load(0), load(1));
    assert!(retries(0) > 5.0 * retries(1));
    let o = tenure(&[
        "compare",
        "scenarios/contention/hot-lock.toml",
        "--backoff",
        "jittery",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("unknown policy `jittery`"));
}

#[test]
fn a_bad_backoff_in_a_scenario_names_the_field() {
    let src = std::fs::read_to_string(repo().join("scenarios/contention/hot-lock.toml")).unwrap();
    let bad = src.replace("policy = \"full-jitter\"", "policy = \"fast\"");
    let path = scratch_dir().join("bad-backoff.toml");
    std::fs::write(&path, bad).unwrap();
    let o = tenure(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("backoff.policy"), "{}", text(&o));
}
