//! What a protocol or a scenario declares reaches the checker unchanged, on every path:
//! `tenure run` of a scenario file, `tenure fuzz` of it, `fuzz --print` then `run`, and
//! `fuzz --protocol` (the library's path is in `crates/tenure/tests/suite/declared.rs`). The
//! sentinels are values no default has: a scenario's own `max_overlap = "77ms"`, and
//! bully's declared overlap bound derived from `answer_timeout = "246ms"` (123ms, with
//! its derivation printed). And a check that judges nothing is vacuous, never passed, on
//! every command.

use crate::common::{repo, tenure, text};
use std::path::PathBuf;

/// A scratch folder under the target dir, fresh for each call.
fn scratch(name: &str) -> PathBuf {
    let dir = repo()
        .join("target")
        .join(format!("declared-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Bully split by a partition from 2s to 8s, with `extra` appended.
fn split_brain(extra: &str) -> String {
    format!(
        "name = \"sentinel\"\nseed = 1\nduration = \"12s\"\nchecks = [\"single-leader-at-a-time\"]\n\
         [protocol]\nname = \"bully\"\n{extra}\n[cluster]\nnodes = 5\n\
         [[fault]]\nat = \"2s\"\nkind = \"partition\"\ngroups = [[0, 1, 2], [3, 4]]\n\
         [[fault]]\nat = \"8s\"\nkind = \"heal\"\n"
    )
}

/// Runs the four paths on `scenario` and returns each one's output.
fn every_path(name: &str, scenario: &str) -> Vec<(String, String)> {
    let dir = scratch(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, scenario).unwrap();
    let file = file.to_str().unwrap().to_string();
    let out = dir.join("out");
    let run = tenure(&["run", &file]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let fuzz = tenure(&[
        "fuzz",
        &file,
        "--profile",
        "calm",
        "--seeds",
        "1..2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(fuzz.status.code(), Some(1), "{}", text(&fuzz));
    let printed = tenure(&["fuzz", &file, "--profile", "calm", "--print", "1"]);
    let printed_file = dir.join("printed.toml");
    std::fs::write(&printed_file, &printed.stdout).unwrap();
    let replayed = tenure(&["run", printed_file.to_str().unwrap(), "--seed", "1"]);
    assert_eq!(replayed.status.code(), Some(1), "{}", text(&replayed));
    let _ = std::fs::remove_dir_all(&dir);
    vec![
        ("run".into(), text(&run)),
        ("fuzz".into(), text(&fuzz)),
        ("--print + run".into(), text(&replayed)),
    ]
}

#[test]
fn a_scenario_s_own_tolerance_reaches_the_checker_on_every_path() {
    let scenario = split_brain("") + "[check.single-leader-at-a-time]\nmax_overlap = \"77ms\"\n";
    for (path, out) in every_path("own", &scenario) {
        assert!(
            out.contains("(tolerated overlap 77ms)"),
            "{path}: the declared 77ms did not reach the checker:\n{out}"
        );
    }
}

#[test]
fn a_protocol_s_declared_bound_reaches_the_checker_with_its_derivation_on_every_path() {
    let scenario = split_brain("[protocol.params]\nanswer_timeout = \"246ms\"\n");
    for (path, out) in every_path("promised", &scenario) {
        assert!(
            out.contains(
                "(tolerated overlap 123ms) [bound 123ms = one message delay for the \
                 announcement: answer timeout 246ms / 2 (a round trip)]"
            ),
            "{path}: bully's declared bound did not reach the checker:\n{out}"
        );
    }
    // `tenure run` also says where the parameter came from.
    let dir = scratch("promised-run");
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        split_brain("[protocol.params]\nanswer_timeout = \"246ms\"\n"),
    )
    .unwrap();
    let run = tenure(&["run", file.to_str().unwrap()]);
    assert!(
        text(&run).contains("[max_overlap 123ms, declared by bully = one message delay"),
        "{}",
        text(&run)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fuzz_protocol_judges_the_declared_bound_not_one_of_its_own() {
    // Beyond bully's assumptions (partitions): split brain, judged against the bound
    // bully declares from its default answer timeout, never a profile's outage length.
    let dir = scratch("protocol");
    let out = tenure(&[
        "fuzz",
        "--protocol",
        "bully",
        "--profile",
        "beyond",
        "--seeds",
        "0..200",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("(tolerated overlap 50ms) [bound 50ms = one message delay for the announcement: answer timeout 100ms / 2 (a round trip)]"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 3-second run of `protocol` checking `judged` (which it gives something to judge)
/// and `check` (which it does not).
fn scenario_with(protocol: &str, judged: &str, check: &str, expect_vacuous: bool) -> String {
    format!(
        "name = \"vacuous\"\nseed = 1\nduration = \"3s\"\nchecks = [\"{judged}\", \"{check}\"]\n\
         [protocol]\nname = \"{protocol}\"\n{}",
        if expect_vacuous {
            format!("[expect]\nvacuous = [\"{check}\"]\n")
        } else {
            String::new()
        }
    )
}

#[test]
fn a_check_with_nothing_to_judge_is_vacuous_on_run_verify_and_fuzz() {
    // redis-lock's clients act on a lock but no node serves as leader; raft's leaders
    // serve but nobody acts on a lock or runs client operations.
    let cases = [
        ("redis-lock", "mutual-exclusion", "lease-safety", "Serves"),
        ("raft", "single-leader-per-term", "mutual-exclusion", "Acts"),
        (
            "raft",
            "single-leader-per-term",
            "linearizability",
            "Invoke",
        ),
    ];
    for (protocol, judged, check, missing) in cases {
        let dir = scratch(check);
        let file = dir.join("s.toml");
        std::fs::write(&file, scenario_with(protocol, judged, check, false)).unwrap();
        let file = file.to_str().unwrap();
        let want = format!("NOT JUDGED: {check} (vacuous): judged no ");
        // run: exit 5 (not judged), naming the missing observation.
        let run = tenure(&["run", file]);
        let t = text(&run);
        assert_eq!(run.status.code(), Some(5), "{t}");
        assert!(!t.contains("PASS"), "{t}");
        assert!(
            t.contains(&want) && t.contains(&format!("records no `{missing}`")),
            "{t}"
        );
        // verify: exit 5, the same words.
        let verify = tenure(&["verify", file]);
        let t = text(&verify);
        assert_eq!(verify.status.code(), Some(5), "{t}");
        assert!(t.contains(&want), "{t}");
        // fuzz: exit 5 after the first 20 seeds, not 1,000.
        let fuzz = tenure(&[
            "fuzz",
            file,
            "--seeds",
            "0..1000",
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        let t = text(&fuzz);
        assert_eq!(fuzz.status.code(), Some(5), "{t}");
        assert!(
            t.contains(&format!("{check} judged no "))
                && t.contains("it judged nothing in any of the first 20 seeds"),
            "{t}"
        );
        assert!(t.contains("fuzzed 20 seeds"), "{t}");
        // Expected by the scenario: `verify` meets it (exit 0); `run` still never calls
        // the run a pass (exit 5), and says the scenario expects it.
        std::fs::write(
            dir.join("s.toml"),
            scenario_with(protocol, judged, check, true),
        )
        .unwrap();
        let run = tenure(&["run", file]);
        let t = text(&run);
        assert_eq!(run.status.code(), Some(5), "{t}");
        assert!(!t.contains("PASS"), "{t}");
        assert!(t.contains("(vacuous, as the scenario expects)"), "{t}");
        let verify = tenure(&["verify", file]);
        assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
