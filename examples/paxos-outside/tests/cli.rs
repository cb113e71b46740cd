//! The crate's own command line (`src/bin/paxos-outside.rs`, `tenure::cli::main`):
//! `verify` meets every scenario's expectation (each planted bug breaks agreement in a
//! hand-written schedule, and the correct Paxos passes the same power loss), and `fuzz`
//! finds each planted bug at the seed the library finds it.

use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_paxos-outside"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn verify_meets_every_scenarios_expectation() {
    let o = bin().args(["verify", "scenarios"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("3 met their expectation"), "{t}");
}

#[test]
fn fuzz_finds_each_planted_bug_at_the_librarys_seed() {
    for (variant, seed) in [("promise-in-memory", 181), ("reply-before-sync", 181)] {
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{variant}"));
        let _ = std::fs::remove_dir_all(&out);
        let o = bin()
            .args(["fuzz", "--protocol", "paxos", "--variant", variant])
            .args(["--profile", "power", "--seeds", "0..1000", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        let first = t.lines().find(|l| l.starts_with("FAIL seed")).unwrap_or("");
        assert!(
            first.starts_with(&format!("FAIL seed {seed}: state-machine-safety violated")),
            "{variant}: {first}\n{t}"
        );
    }
}

/// The command line fuzzes the repeated decision (`sweeps/forty-decisions.toml`) to the
/// seeds the library finds (`tests/fuzz.rs`, `reply_before_sync_with_forty_decisions`).
#[test]
fn fuzz_of_forty_decisions_finds_reply_before_sync_at_the_librarys_seeds() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-forty");
    let _ = std::fs::remove_dir_all(&out);
    let o = bin()
        .args([
            "fuzz",
            "sweeps/forty-decisions.toml",
            "--variant",
            "reply-before-sync",
        ])
        .args([
            "--profile",
            "power",
            "--seeds",
            "0..1000",
            "--json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let mut failing: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("\"outcome\":\"violation\""))
        .map(|l| {
            let at = l.find("\"seed\":").expect("a seed") + 7;
            let digits: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap()
        })
        .collect();
    failing.sort_unstable();
    assert_eq!(
        failing,
        [37, 170, 181, 215, 216, 376, 435, 539, 579, 603, 631, 705, 914, 958, 972, 996],
        "{t}"
    );
}

/// `check-model` through the crate's own command line, with the model the crate
/// declares (`Configurable::model`: two proposers, three acceptors, one crash): the
/// default random walks find the promise kept only in memory; the answer sent before
/// its fsync needs a power loss, which the explorer never draws, so it is not judged
/// (exit 5) and says why; the correct Paxos passes the same walks.
#[test]
fn check_model_walks_find_the_forgotten_promise_and_name_the_power_loss_bug() {
    let run = |args: &[&str]| {
        let o = bin()
            .args(["check-model", "--protocol", "paxos"])
            .args(args)
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    let (code, t) = run(&["--variant", "promise-in-memory", "--walk", "0..100"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("walk seed 7 breaks state-machine-safety"), "{t}");
    assert!(t.contains("crashed") && t.contains("restarted"), "{t}");

    let (code, t) = run(&["--variant", "reply-before-sync", "--max-depth", "4"]);
    assert_eq!(code, Some(5), "{t}");
    assert!(t.contains("NOT JUDGED (could not fail)"), "{t}");
    assert!(t.contains("never cuts power"), "{t}");

    let (code, t) = run(&["--walk", "0..300"]);
    assert_eq!(code, Some(0), "{t}");
    assert!(t.contains("no violation in any walk"), "{t}");
}
