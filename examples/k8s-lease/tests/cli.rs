//! The crate's own command line (`src/bin/k8s-lease.rs`, `tenure::cli::main`): `verify`
//! meets every scenario's expectation, `fuzz --protocol k8s-lease --variant V --profile P`
//! finds each planted bug at the seed the library finds it, `shrink` cuts the saved case
//! to at most three fault events, and the correct elector passes the same fuzz.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_k8s-lease"));
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

/// The number in a `shrink` output's `after:` line.
fn faults_after(t: &str) -> usize {
    t.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("after:")?;
            rest.split_whitespace().next()?.parse::<usize>().ok()
        })
        .unwrap_or_else(|| panic!("an `after:` line: {t}"))
}

/// `fuzz --protocol k8s-lease --variant V --profile P --seeds 0..1000`: exit 1, the first
/// failure at `seed` breaking `checker`; then `shrink` of its saved case: at most 3.
fn fuzz_finds_and_shrinks(variant: &str, profile: &str, seed: u64, checker: &str) {
    let out = out_dir(&format!("fuzz-{variant}-{profile}"));
    let o = bin()
        .args(["fuzz", "--protocol", "k8s-lease", "--variant", variant])
        .args(["--profile", profile, "--seeds", "0..1000", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let first = t
        .lines()
        .find(|l| l.starts_with("FAIL seed"))
        .unwrap_or_else(|| panic!("a failure: {t}"));
    assert!(
        first.starts_with(&format!("FAIL seed {seed}: {checker} violated")),
        "{first}"
    );
    assert!(
        t.contains("within the protocol's declared assumptions"),
        "{t}"
    );
    let case = out.join(format!("k8s-lease-{variant}-seed{seed}-{checker}.toml"));
    let o = bin()
        .arg("shrink")
        .arg(&case)
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(out.join("shrunk"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(faults_after(&t) <= 3, "{t}");
}

#[test]
fn cli_renew_deadline_too_long() {
    fuzz_finds_and_shrinks(
        "renew-deadline-too-long",
        "partitions",
        3,
        "single-leader-at-a-time",
    );
}

#[test]
fn cli_act_after_failed_renew() {
    fuzz_finds_and_shrinks(
        "act-after-failed-renew",
        "pauses",
        0,
        "single-leader-at-a-time",
    );
}

#[test]
fn cli_wall_clock_observed_time() {
    fuzz_finds_and_shrinks(
        "wall-clock-observed-time",
        "clocks",
        13,
        "single-leader-at-a-time",
    );
}

/// Without the compare-and-swap a stale write lands: the crate's own checker sees the
/// miscounted `leaseTransitions` (at 3.41 s) before the two leaders of one term.
#[test]
fn cli_no_resource_version() {
    fuzz_finds_and_shrinks("no-resource-version", "partitions", 13, "lease-transitions");
}

/// Without a pause: a holder that acts after a failed renewal, under `partitions`.
#[test]
fn cli_act_after_failed_renew_under_partitions() {
    fuzz_finds_and_shrinks(
        "act-after-failed-renew",
        "partitions",
        3,
        "single-leader-at-a-time",
    );
}

#[test]
fn cli_renew_deadline_too_long_under_crashes() {
    fuzz_finds_and_shrinks(
        "renew-deadline-too-long",
        "crashes",
        316,
        "single-leader-at-a-time",
    );
}

#[test]
fn verify_meets_every_scenarios_expectation() {
    let o = bin().args(["verify", "scenarios"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("6 met their expectation"), "{t}");
}

#[test]
fn list_shows_the_protocol_its_variants_promises_and_assumptions() {
    let o = bin().arg("list").output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for needle in [
        "k8s-lease",
        "renew-deadline-too-long",
        "act-after-failed-renew",
        "wall-clock-observed-time",
        "no-resource-version",
        "promises: leader-liveness within",
        "assumes:  clock drift at most 0.1",
    ] {
        assert!(t.contains(needle), "{needle}: {t}");
    }
}

/// The correct elector under the profiles that found the bugs, a hundred seeds each
/// (2,000 of every profile pass too: see the crate's report).
#[test]
fn the_correct_elector_passes_the_same_fuzz() {
    for profile in ["partitions", "pauses", "clocks", "crashes", "power"] {
        let out = out_dir(&format!("fuzz-correct-{profile}"));
        let o = bin()
            .args(["fuzz", "--protocol", "k8s-lease", "--profile", profile])
            .args(["--seeds", "0..100", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{profile}: {t}");
        assert!(t.contains("0 failed"), "{t}");
    }
}

/// `check-model` through the crate's own command line, with the model the crate
/// declares (`Configurable::model`): exhaustive search finds the leader that keeps
/// acting after its lease ran out (its renew deadline passed) as an interleaving of
/// actions still open (neither section has ended), the shortest such path; random walks
/// find the takeover without a compare-and-swap; a variant whose bug needs one clock
/// to move alone is not judged (exit 5), never passed; the correct elector passes the
/// walks.
#[test]
fn check_model_finds_the_leader_acting_after_its_lease_ran_out() {
    let run = |args: &[&str]| {
        let o = bin()
            .args(["check-model", "--protocol", "k8s-lease"])
            .args(args)
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    let (code, t) = run(&["--variant", "act-after-failed-renew"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(
        t.contains("VIOLATION single-leader-at-a-time at depth 13"),
        "{t}"
    );
    assert!(t.contains("time leaps 1h on every clock"), "{t}");

    let (code, t) = run(&["--variant", "no-resource-version", "--walk", "100"]);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("breaks lease-transitions"), "{t}");

    let (code, t) = run(&["--variant", "wall-clock-observed-time", "--max-depth", "6"]);
    assert_eq!(code, Some(5), "{t}");
    assert!(t.contains("NOT JUDGED (could not fail)"), "{t}");

    let (code, t) = run(&["--walk", "200"]);
    assert_eq!(code, Some(0), "{t}");
    assert!(t.contains("no violation in any walk"), "{t}");
    // The default depth counts events: the candidates' retry timers fire between them
    // (2 timers pending at the start: at most 60 x 3 steps a walk).
    assert!(
        t.contains("depth <= 60 events (walk default), at most 180 steps = 60 x (1 + 2 timers pending at the start)"),
        "{t}"
    );

    // Every planted bug the model can show falls to the default walks.
    for (variant, breaks) in [
        ("act-after-failed-renew", "single-leader-at-a-time"),
        ("transitions-on-renewal", "lease-transitions"),
    ] {
        let (code, t) = run(&["--variant", variant, "--walk", "100"]);
        assert_eq!(code, Some(1), "{variant}: {t}");
        assert!(t.contains(&format!("breaks {breaks}")), "{variant}: {t}");
    }
}

/// A failure caused by clocks, not by fault events: the leader's clock runs 30% slow
/// and another candidate's 30% fast, beyond the drift the elector declares. `shrink`
/// minimises the `[[clock]]` settings with the events (six settings to at most two) and
/// lists those that remain: the story of a clock bug is its clocks.
#[test]
fn shrink_minimises_and_lists_the_clocks() {
    let dir = out_dir("shrink-clocks");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("slow-leader-clock.toml");
    std::fs::write(
        &file,
        r#"name = "k8s-lease: a slow leader clock, fast contenders"
seed = 2
duration = "12s"
checks = ["single-leader-at-a-time"]

[protocol]
name = "k8s-lease"
variant = "correct"

[cluster]
roles = { apiserver = 1, candidate = 3 }

[[clock]]
node = 1
drift = -0.3
offset = "2s"

[[clock]]
node = 2
drift = 0.3
offset = "-700ms"

[[clock]]
node = 3
drift = 0.3
offset = "5s"

[[fault]]
at = "1s"
kind = "pause"
node = 0
duration = "50ms"

[[fault]]
at = "3s"
kind = "isolate"
node = "leader"

[[fault]]
at = "7s"
kind = "heal"

[expect]
outcome = "violation"
checker = "single-leader-at-a-time"
"#,
    )
    .unwrap();
    let o = bin()
        .args(["shrink"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("before: 3 fault events, 6 clock settings"),
        "{t}"
    );
    let after = t.lines().find(|l| l.trim().starts_with("after:")).unwrap();
    let count = |what: &str| {
        let words: Vec<&str> = after.split_whitespace().collect();
        let i = words.iter().position(|w| w.starts_with(what)).unwrap();
        words[i - 1].parse::<usize>().unwrap()
    };
    let (faults, clocks) = (count("fault"), count("clock"));
    assert!(clocks >= 1, "a clock bug keeps a clock: {t}");
    assert!(faults + clocks <= 3, "{t}");
    // Each clock that remains is listed, with what is left of it.
    let listed = t.lines().filter(|l| l.contains(" drift ")).count();
    assert_eq!(listed, clocks, "{t}");
    assert!(t.contains("clocks: n1 drift -0.3"), "{t}");
}

/// This crate's own checker, `lease-transitions` (`src/transitions.rs`), registered by
/// its command line (`tenure::cli::Main::checker`) and named in the protocol's
/// promises: `checks` lists it as the program's own; `fuzz --protocol` judges the
/// planted `transitions-on-renewal` by it (and the correct elector passes it); `shrink`
/// keeps it as the checker to reproduce; exhaustive `check-model` finds the shortest
/// path to it; a scenario file names it like a built-in check.
#[test]
fn a_custom_checker_judges_fuzz_shrink_check_model_and_scenarios() {
    let o = bin().arg("list").output().unwrap();
    let t = text(&o);
    assert!(
        t.contains("lease-transitions") && t.contains("this program's own"),
        "{t}"
    );
    assert!(t.contains("promises: lease-transitions"), "{t}");

    let out = out_dir("fuzz-custom-checker");
    let o = bin()
        .args(["fuzz", "--protocol", "k8s-lease", "--variant"])
        .args([
            "transitions-on-renewal",
            "--profile",
            "calm",
            "--seeds",
            "0..5",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL seed 0: lease-transitions violated"), "{t}");
    assert!(t.contains("(a renewal by n"), "{t}");
    let case = out.join("k8s-lease-transitions-on-renewal-seed0-lease-transitions.toml");
    let saved = std::fs::read_to_string(&case).unwrap();
    assert!(saved.contains("lease-transitions"), "{saved}");

    let o = bin()
        .arg("shrink")
        .arg(&case)
        .args(["--seed", "0", "--out"])
        .arg(out.join("shrunk"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("lease-transitions"), "{t}");
    assert_eq!(faults_after(&t), 0, "no fault needed: {t}");

    let o = bin()
        .args(["check-model", "--protocol", "k8s-lease"])
        .args(["--variant", "transitions-on-renewal"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("VIOLATION lease-transitions at depth"), "{t}");

    // The correct elector: judged by it, and passes it.
    let o = bin()
        .args(["fuzz", "--protocol", "k8s-lease", "--profile", "crashes"])
        .args(["--seeds", "0..20", "--json"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("lease-transitions"), "{t}");

    // A scenario file names it like any check.
    let dir = out_dir("custom-check-scenario");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("custom.toml");
    std::fs::write(
        &file,
        "name = \"k8s-lease: renewals counted\"\nseed = 1\nduration = \"3s\"\n\
         checks = [\"lease-transitions\"]\n\n[protocol]\nname = \"k8s-lease\"\n\
         variant = \"transitions-on-renewal\"\n\n[expect]\noutcome = \"violation\"\n\
         checker = \"lease-transitions\"\n",
    )
    .unwrap();
    let o = bin().arg("verify").arg(&file).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
}

/// A checker of your own may not take a built-in checker's name: the library refuses
/// it, naming the clash.
#[test]
fn a_custom_checker_never_shadows_a_built_in_one() {
    let clash = tenure::CheckerInfo::new("mutual-exclusion", tenure::CheckKind::Safety, "mine");
    let err = tenure::register_checker(tenure::CustomChecker::without_params(clash, |_| {
        Box::new(k8s_lease::transitions::LeaseTransitions::default())
    }))
    .unwrap_err();
    assert!(err.to_string().contains("built-in checker's name"), "{err}");
}
