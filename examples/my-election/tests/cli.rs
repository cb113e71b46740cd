//! The whole `tenure` command line for this crate's own protocol (`src/bin/my-election.rs`):
//! `verify` passes on the crate's scenario files, `fuzz` finds the planted bug in
//! `scenarios/planted-bug.toml`, and `shrink` cuts the saved case to at most 3 fault
//! events. As the tutorial shows with `cargo run -p my-election -- ...`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_my-election"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn verify_passes_on_the_crates_own_scenarios() {
    let o = bin().args(["verify", "scenarios"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("my-election"), "{}", text(&o));
}

#[test]
fn list_shows_the_crates_protocol_and_its_variants() {
    let o = bin().arg("list").output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("my-election") && t.contains("vote-twice"), "{t}");
}

#[test]
fn fuzz_finds_the_planted_bug_and_shrink_cuts_it_to_three_faults() {
    let out = out_dir("fuzz-planted");
    let o = bin()
        .args([
            "fuzz",
            "scenarios/planted-bug.toml",
            "--seeds",
            "0..300",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("single-leader-per-term"), "{t}");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    let case = cases.first().expect("a saved case");
    let stem = case.file_stem().unwrap().to_string_lossy().to_string();
    let seed: u64 = stem
        .split("-seed")
        .nth(1)
        .and_then(|s| s.split('-').next())
        .and_then(|s| s.parse().ok())
        .expect("the seed in the case's name");
    let o = bin()
        .args(["shrink"])
        .arg(case)
        .args(["--seed", &seed.to_string()])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let faults = faults_after(&t);
    assert!(faults <= 3, "shrunk to {faults} fault events: {t}");

    // What the tutorial (section 10) says of these commands: the first failing seed is
    // 2, and it shrinks to a cut and a crash.
    let seed2 = out.join("my-election-vote-twice-seed2-single-leader-per-term.toml");
    assert!(seed2.exists(), "no case for seed 2 in {}", out.display());
    assert!(!out
        .join("my-election-vote-twice-seed0-single-leader-per-term.toml")
        .exists());
    assert!(!out
        .join("my-election-vote-twice-seed1-single-leader-per-term.toml")
        .exists());
    let o = bin()
        .args(["shrink"])
        .arg(&seed2)
        .args(["--seed", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(faults_after(&t), 2, "{t}");
    assert!(t.contains("kind = \"cut\", nodes = [3, 4]"), "{t}");
    assert!(t.contains("kind = \"crash\", node = 1"), "{t}");
}

/// The number in a `shrink` output's `after:` line.
fn faults_after(t: &str) -> usize {
    t.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("after:")?;
            rest.split_whitespace().next()?.parse::<usize>().ok()
        })
        .unwrap_or_else(|| panic!("an `after:` line: {t}"))
}

/// Issue: seed 34 of `fuzz --protocol my-election --variant vote-twice --profile
/// crashes` draws node 3 crashing and restarting eleven times within 340 ms, then a
/// leader crash; `shrink` kept 23 events, the loop cycle by cycle, because the failure
/// needed every cycle under its own seed. A node's crash storm now collapses to one
/// cycle, under a nearby seed if need be.
#[test]
fn a_crash_storm_of_one_node_shrinks_to_at_most_three_events() {
    let out = out_dir("fuzz-crash-storm");
    let o = bin()
        .args([
            "fuzz",
            "--protocol",
            "my-election",
            "--variant",
            "vote-twice",
            "--profile",
            "crashes",
            "--seeds",
            "34..35",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let case = out.join("my-election-vote-twice-seed34-single-leader-per-term.toml");
    let drawn = std::fs::read_to_string(&case).unwrap_or_else(|e| panic!("{e}: {t}"));
    let crashes = drawn
        .split("[[fault]]")
        .filter(|f| f.contains("kind = \"crash\"") && f.contains("node = 3\n"))
        .count();
    assert!(crashes >= 9, "node 3 flaps: {crashes} crashes in\n{drawn}");
    let o = bin()
        .args(["shrink"])
        .arg(&case)
        .args(["--seed", "34", "--out"])
        .arg(out.join("shrunk"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(faults_after(&t) <= 3, "{t}");
}

#[test]
fn the_correct_variant_passes_the_same_fuzz() {
    let out = out_dir("fuzz-correct");
    let o = bin()
        .args([
            "fuzz",
            "scenarios/correct-under-chaos.toml",
            "--seeds",
            "0..100",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// A failure found by this crate's own command line names that command in its replay
/// hint and in the file it saves (not the zoo's `tenure`, which has no `my-election`),
/// and the hint works when pasted: everything after `--` run by the binary, from where
/// the fuzz ran, replays the failure.
#[test]
fn the_replay_command_names_this_crate_and_works_when_pasted() {
    let out = out_dir("fuzz-replay");
    let o = bin()
        .args([
            "fuzz",
            "--protocol",
            "my-election",
            "--variant",
            "vote-twice",
            "--seeds",
            "0..300",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let replay = t
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line in:\n{t}"));
    let args = replay
        .strip_prefix("cargo run -p my-election -- ")
        .unwrap_or_else(|| panic!("the replay names this crate's command: {replay}"));
    let saved = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .find(|s| s.contains("# Replay:"))
        .expect("a saved case");
    assert!(
        saved.contains("# Replay: cargo run -p my-election -- run <this file> --seed"),
        "{saved}"
    );
    let o = bin().args(args.split(' ')).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{replay}:\n{t}");
    assert!(t.contains("single-leader-per-term violated"), "{t}");
}

/// `check-model` on the crate's own model (`Configurable::model`: three nodes, terms up
/// to 2): exhaustive search finds the planted double vote with a shortest
/// counterexample, two leaders of term 1 in 6 steps; the correct election passes the
/// same bounds and the default random walks.
#[test]
fn check_model_finds_the_double_vote_in_six_steps() {
    let run = |args: &[&str]| {
        let o = bin()
            .args(["check-model", "--protocol", "my-election"])
            .args(args)
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    let (code, t) = run(&["--variant", "vote-twice"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(
        t.contains("VIOLATION single-leader-per-term at depth 6"),
        "{t}"
    );
    let (code, t) = run(&["--variant", "vote-twice", "--walk", "0..100"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("breaks single-leader-per-term"), "{t}");

    let (code, t) = run(&[]);
    assert_eq!(code, Some(0), "{t}");
    assert!(t.contains("no violation within the bounds"), "{t}");
    let (code, t) = run(&["--walk", "0..300"]);
    assert_eq!(code, Some(0), "{t}");
    assert!(t.contains("no violation in any walk"), "{t}");
}
