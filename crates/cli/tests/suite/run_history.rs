//! `tenure run --history OUT.edn`: the run's client history, written as Jepsen EDN, is
//! read back by `tenure check-history` with the same verdict and the same operation
//! that cannot be placed; an existing file is never overwritten.

use std::path::{Path, PathBuf};

use crate::common::{repo, tenure, text};

fn out_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run-history-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// Runs `scenario` with `--history`, checks the EDN with `check-history`, and returns
/// (the run's stuck operation, check-history's), both as `process N: f(...) -> r`.
fn round_trip(scenario: &str, name: &str) -> (Option<String>, Option<String>) {
    let edn = out_path(name);
    let edn_s = edn.to_str().unwrap();
    let run = tenure(&["run", scenario, "--history", edn_s]);
    let run_text = text(&run);
    assert!(
        run.status.code() == Some(0) || run.status.code() == Some(1),
        "{run_text}"
    );
    let body = std::fs::read_to_string(&edn).unwrap();
    assert!(body.starts_with("{:process "), "{body}");
    let check = tenure(&["check-history", edn_s, "--model", "cas-register"]);
    let check_text = text(&check);
    // The run's verdict: a linearizability violation, or none.
    let run_stuck = run_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("n").and_then(|r| r.split_once("'s ")))
        .map(|(p, rest)| {
            let op = rest.split(" (invoked at").next().unwrap();
            format!("process {p}: {op}")
        });
    let violated = run_text.contains("linearizability violated");
    assert_eq!(violated, run_stuck.is_some(), "{run_text}");
    assert_eq!(
        check.status.code(),
        Some(if violated { 1 } else { 0 }),
        "run:\n{run_text}\ncheck-history:\n{check_text}"
    );
    let check_stuck = check_text
        .lines()
        .find_map(|l| l.strip_prefix("cannot be placed after it: "))
        .map(|s| s.split(" (line").next().unwrap().to_string());
    (run_stuck, check_stuck)
}

#[test]
fn a_violating_run_and_its_history_agree_on_the_verdict_and_the_stuck_operation() {
    for (scenario, name) in [
        (
            "scenarios/redis-lock/work-outlives-ttl-linearizability.toml",
            "redis.edn",
        ),
        (
            "scenarios/fencing/unfenced-gc-pause-linearizability.toml",
            "unfenced.edn",
        ),
    ] {
        let (run, check) = round_trip(scenario, name);
        assert!(run.is_some(), "{scenario}: the run finds a violation");
        assert_eq!(run, check, "{scenario}");
    }
}

#[test]
fn the_books_history_file_is_what_the_run_writes() {
    let edn = out_path("book.edn");
    let o = tenure(&[
        "run",
        "scenarios/redis-lock/work-outlives-ttl-linearizability.toml",
        "--history",
        edn.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let book = repo().join("book/src/linearizability/redis-lock-work-outlives-ttl.edn");
    assert_eq!(
        std::fs::read_to_string(&edn).unwrap(),
        std::fs::read_to_string(&book).unwrap(),
        "regenerate {} with tenure run ... --history",
        book.display()
    );
}

#[test]
fn a_linearizable_run_gives_a_linearizable_history() {
    let (run, check) = round_trip(
        "scenarios/fencing/heavy-faults-linearizable.toml",
        "heavy.edn",
    );
    assert_eq!((run, check), (None, None));
}

#[test]
fn history_refuses_a_user_file_and_replaces_its_own_saying_so() {
    // The one rule every output follows (issue 27).
    let edn = out_path("existing.edn");
    std::fs::write(&edn, "keep me\n").unwrap();
    let run = || {
        tenure(&[
            "run",
            "scenarios/fencing/heavy-faults-linearizable.toml",
            "--history",
            edn.to_str().unwrap(),
        ])
    };
    let o = run();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("tenure did not write it"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&edn).unwrap(), "keep me\n");
    std::fs::remove_file(&edn).unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("replacing it"), "{}", text(&o));
    let first = std::fs::read_to_string(&edn).unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("tenure's own earlier output: replacing it"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&edn).unwrap(), first);
}
