//! Bad input, output safety and human output (issue 14): output paths are checked before
//! a run and user files are never overwritten; limits are errors naming the field and
//! the limit; `verify` goes on past a bad file; no colour into pipes; typos get a
//! suggestion.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{repo, tenure, text};

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("robust")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SCENARIO: &str = "scenarios/bully/coordinator-crash.toml";

/// The line `run` prints when the run starts (`tenure: FILE (...) seed N`).
fn started(o: &Output) -> bool {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .any(|l| l.starts_with(&format!("tenure: {SCENARIO} (")))
}

#[test]
fn trace_and_timeline_onto_a_user_file_are_refused_before_the_run() {
    let dir = scratch("user-file");
    for flag in ["--trace", "--timeline"] {
        let mine = dir.join("notes.txt");
        std::fs::write(&mine, "my notes\n").unwrap();
        let o = tenure(&["run", SCENARIO, flag, s(&mine)]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("tenure did not write it"), "{}", text(&o));
        assert!(!started(&o), "refused before the run:\n{}", text(&o));
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes\n");
    }
}

#[test]
fn an_unwritable_output_is_reported_before_the_run() {
    let dir = scratch("unwritable");
    let missing = dir.join("no/such/folder/out.jsonl");
    let o = tenure(&["run", SCENARIO, "--trace", s(&missing)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--trace"), "{}", text(&o));
    assert!(text(&o).contains("cannot write"), "{}", text(&o));
    assert!(!started(&o), "{}", text(&o));
    let o = tenure(&["run", SCENARIO, "--timeline", s(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a directory"), "{}", text(&o));
    assert!(!started(&o), "{}", text(&o));
}

#[test]
fn tenure_replaces_its_own_trace_and_timeline() {
    let dir = scratch("own-output");
    let (trace, page) = (dir.join("t.jsonl"), dir.join("t.html"));
    for _ in 0..2 {
        let o = tenure(&[
            "run",
            SCENARIO,
            "--trace",
            s(&trace),
            "--timeline",
            s(&page),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    assert!(std::fs::read_to_string(&trace)
        .unwrap()
        .starts_with("{\"event\":"));
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("tenure timeline"));
}

#[test]
fn verify_reports_every_file_when_one_is_bad() {
    let dir = scratch("verify-mixed");
    for name in ["coordinator-crash.toml", "split-brain.toml"] {
        std::fs::copy(repo().join("scenarios/bully").join(name), dir.join(name)).unwrap();
    }
    std::fs::write(
        dir.join("bad.toml"),
        "duration = \"5s\"\n[protocol]\nname = \"rafft\"\n",
    )
    .unwrap();
    let o = tenure(&["verify", s(&dir)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("coordinator-crash.toml (bully/correct) seed 1: pass, as expected"),
        "{t}"
    );
    assert!(t.contains("split-brain.toml (bully/correct)"), "{t}");
    assert!(t.contains("bad.toml:3:1: field `protocol.name`"), "{t}");
    assert!(t.contains("did you mean `raft`?"), "{t}");
    assert!(t.contains("ERROR "), "{t}");
    assert!(
        t.contains("3 scenarios: 2 met their expectation, 0 did not, 1 invalid"),
        "{t}"
    );
}

#[test]
fn limits_are_errors_naming_the_field_and_the_limit_and_can_be_moved() {
    let dir = scratch("limits");
    let long = dir.join("long.toml");
    std::fs::write(&long, "duration = \"2h\"\n[protocol]\nname = \"raft\"\n").unwrap();
    let o = tenure(&["run", s(&long)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("long.toml:1:1: field `duration`: `2h` is above the limit of `1h` simulated; raise it with --max-duration"),
        "{}",
        text(&o)
    );
    // The flag lowers the limit as well as raising it (raising it would cost a 2h run).
    let o = tenure(&["run", SCENARIO, "--max-duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("above the limit of `1s`"), "{}", text(&o));
    let big = dir.join("big.toml");
    std::fs::write(
        &big,
        "duration = \"1s\"\n[protocol]\nname = \"raft\"\n[cluster]\nnodes = 5000\n",
    )
    .unwrap();
    let o = tenure(&["run", s(&big)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("field `cluster.nodes`: 5000 nodes are more than the limit of 2048"),
        "{}",
        text(&o)
    );
    let o = tenure(&["run", SCENARIO, "--max-nodes", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("more than the limit of 3"),
        "{}",
        text(&o)
    );
}

#[test]
fn malformed_numbers_and_bytes_name_line_and_field() {
    let dir = scratch("malformed");
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "seed.toml",
            b"seed = 18446744073709551615\nduration = \"1s\"\n[protocol]\nname = \"raft\"\n",
            "seed.toml:1:8: field `seed`",
        ),
        (
            "utf8.toml",
            b"duration = \"1s\"\n[protocol]\nname = \"r\xffaft\"\n",
            "utf8.toml:3:10: invalid UTF-8 at byte 36",
        ),
        (
            "drift.toml",
            b"duration = \"1s\"\n[protocol]\nname = \"raft\"\n[[clock]]\nnode = 1\ndrift = 1e300\n",
            "drift.toml:6:9: field `clock[0].drift`",
        ),
        (
            "fault-drift.toml",
            b"duration = \"2s\"\n[protocol]\nname = \"raft\"\n[[fault]]\nat = \"1s\"\nkind = \"clock-drift\"\nnode = 1\ndrift = 9223372036854775807\n",
            "field `fault[0].drift`",
        ),
    ];
    for (name, body, needle) in cases {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        let o = tenure(&["run", s(&p)]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        assert!(text(&o).contains(needle), "{name}: {}", text(&o));
    }
}

#[test]
fn jobs_must_be_sensible_and_fuzz_names_its_two_forms() {
    for jobs in ["0", "100000"] {
        let o = tenure(&[
            "fuzz",
            "--protocol",
            "raft",
            "--seeds",
            "0..1",
            "--jobs",
            jobs,
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("--jobs"), "{}", text(&o));
    }
    let o = tenure(&["fuzz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--protocol"), "{}", text(&o));
}

/// Issue 27: `RUST_LOG=info` into a pipe: no colour codes, no alarming madsim warning
/// about std's HashMap (tenure bans std HashMap where it could affect a run), and each
/// log line once although a failing run used to be simulated twice.
#[test]
fn logs_into_a_pipe_are_plain_quiet_about_std_hashmap_and_printed_once() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(["run", "scenarios/bully/split-brain.toml"])
        .current_dir(repo())
        .env("RUST_LOG", "info")
        .output()
        .expect("tenure runs");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.stderr.contains(&0x1b),
        "colour codes in a pipe:\n{stderr}"
    );
    assert!(!stderr.contains("std random state"), "{stderr}");
    let faults: Vec<&str> = stderr.lines().filter(|l| l.contains("fault")).collect();
    assert!(!faults.is_empty(), "RUST_LOG=info shows faults:\n{stderr}");
    let mut seen = std::collections::BTreeSet::new();
    for line in &faults {
        assert!(seen.insert(*line), "printed twice: {line}\n{stderr}");
    }
}

#[test]
fn pipes_get_no_colour_codes() {
    let o = tenure(&["run", "scenarios/bully/split-brain.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!o.stdout.contains(&0x1b), "{}", text(&o));
    let o = tenure(&["verify", "scenarios/bully"]);
    assert!(!o.stdout.contains(&0x1b), "{}", text(&o));
}

#[test]
fn check_model_limits_nodes_and_memory() {
    let o = tenure(&["check-model", "--protocol", "raft", "--nodes", "10000"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("limit of 16"), "{}", text(&o));
    let o = tenure(&[
        "check-model",
        "--protocol",
        "raft",
        "--nodes",
        "3",
        "--max-states",
        "100000000",
        "--max-memory",
        "16MiB",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("above the limit of 16MiB"),
        "{}",
        text(&o)
    );
}

#[test]
fn shrink_never_writes_into_the_scenario_folder_and_has_out_and_json() {
    let dir = scratch("shrink");
    let folder = dir.join("scenarios");
    std::fs::create_dir_all(&folder).unwrap();
    let input = folder.join("split-brain.toml");
    std::fs::copy(repo().join("scenarios/bully/split-brain.toml"), &input).unwrap();
    let out = dir.join("out");
    let o = tenure(&["shrink", s(&input), "--out", s(&out), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(j["checker"], "single-leader-at-a-time");
    let saved = PathBuf::from(j["saved"].as_str().unwrap());
    assert!(saved.starts_with(&out), "{saved:?}");
    assert!(saved.exists());
    let files: Vec<_> = std::fs::read_dir(&folder).unwrap().collect();
    assert_eq!(
        files.len(),
        1,
        "nothing written beside the hand-written scenario"
    );
    // Without --out a hand-written scenario's result goes to tenure-out/, and a
    // shrunk file (written by tenure) is shrunk again beside itself.
    let o = tenure(&["shrink", s(&saved)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("saved:  {}", out.display())),
        "{}",
        text(&o)
    );
    let o = tenure(&["shrink", s(&input), "--out", s(&input)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is not a directory"), "{}", text(&o));
}

#[test]
fn typos_in_names_get_a_suggestion() {
    let o = tenure(&["fuzz", "--protocol", "rafft", "--seeds", "0..1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("did you mean `raft`?"), "{}", text(&o));
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vot",
        "--seeds",
        "0..1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("did you mean `forget-vote`?"),
        "{}",
        text(&o)
    );
    let o = tenure(&["check-model", "--protocol", "buly"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("did you mean `bully`?"), "{}", text(&o));
    let o = tenure(&["check-model", "--protocol", "viewstamped"]);
    assert!(!text(&o).contains("did you mean"), "{}", text(&o));
}

#[test]
fn experiment_out_onto_a_file_is_bad_input_before_the_trials() {
    let dir = scratch("experiment-out");
    let file = dir.join("plots.svg");
    std::fs::write(&file, "mine").unwrap();
    let o = tenure(&[
        "experiment",
        "election-time",
        "--trials",
        "1",
        "--ranges",
        "150-300",
        "--out",
        s(&file),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a file"), "{}", text(&o));
    assert!(
        !text(&o).contains("trials in") && !text(&o).contains("trial in"),
        "refused before the trials: {}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}

#[test]
fn run_verify_fuzz_and_shrink_reject_a_bad_profile_alike() {
    // Issue 14 item 5: one validation path for `[profile]`.
    let dir = scratch("bad-profile");
    let source = std::fs::read_to_string(repo().join(SCENARIO)).unwrap();
    for (table, field, says) in [
        (
            "[profile]\nname = \"nope\"\n",
            "profile.name",
            "unknown profile `nope`",
        ),
        (
            "[profile]\npause = 7\n",
            "profile.pause",
            "7 is not a probability",
        ),
        (
            "[profile]\npuase = 0.5\n",
            "profile.puase",
            "unknown profile knob `puase`",
        ),
    ] {
        let file = dir.join("bad.toml");
        let contents = format!("{source}\n{table}");
        std::fs::write(&file, &contents).unwrap();
        let line = contents.lines().count(); // the knob is the last line
        let f = s(&file);
        let commands: [Vec<&str>; 4] = [
            vec!["run", f],
            vec!["verify", f],
            vec!["fuzz", f, "--seeds", "0..2", "--out", s(&dir)],
            vec!["shrink", f, "--out", s(&dir)],
        ];
        for args in commands {
            let o = tenure(&args);
            let all = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {all}");
            assert!(
                all.contains(&format!("bad.toml:{line}:")) && all.contains(&format!("`{field}`")),
                "{args:?} does not name line {line} and `{field}`: {all}"
            );
            assert!(all.contains(says), "{args:?}: {all}");
        }
    }
}

#[test]
fn too_many_messages_in_flight_stop_the_run_with_an_error_naming_the_limit() {
    // Issue 14 item 3: a run over --max-in-flight stops cleanly (exit 2), whatever the
    // command; with the default limit the same runs pass.
    let says = |o: &Output| {
        let t = text(o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains("more than 3 messages were in flight") && t.contains("--max-in-flight"),
            "{t}"
        );
    };
    says(&tenure(&["run", SCENARIO, "--max-in-flight", "3"]));
    says(&tenure(&[
        "compare",
        SCENARIO,
        "scenarios/bully/split-brain.toml",
        "--seeds",
        "2",
        "--max-in-flight",
        "3",
    ]));
    let o = tenure(&["verify", SCENARIO, "--max-in-flight", "3"]);
    says(&o);
    assert!(text(&o).contains("ERROR "), "{}", text(&o));
    let dir = scratch("in-flight");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "bully",
        "--seeds",
        "0..3",
        "--max-in-flight",
        "3",
        "--out",
        s(&dir),
    ]);
    says(&o);
    assert!(text(&o).contains("LIMIT seed 0:"), "{}", text(&o));
    assert!(
        text(&o).contains("3 seeds were stopped by a run limit"),
        "{}",
        text(&o)
    );
    // The control: the default limit.
    assert_eq!(tenure(&["run", SCENARIO]).status.code(), Some(0));
    let o = tenure(&[
        "compare",
        SCENARIO,
        "scenarios/bully/split-brain.toml",
        "--seeds",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "bully",
        "--seeds",
        "0..3",
        "--out",
        s(&dir),
    ]);
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn a_trace_over_its_limit_is_not_written_and_says_so() {
    let dir = scratch("trace-limit");
    let trace = dir.join("t.jsonl");
    let o = tenure(&[
        "run",
        SCENARIO,
        "--trace",
        s(&trace),
        "--max-trace-events",
        "10",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("--trace") && t.contains("reached 10 events"),
        "{t}"
    );
    assert!(t.contains("--max-trace-events"), "{t}");
    assert!(t.contains("PASS"), "the verdict is still given: {t}");
    assert!(!trace.exists());
    let o = tenure(&[
        "run",
        SCENARIO,
        "--trace",
        s(&trace),
        "--max-trace-events",
        "1000000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::read_to_string(&trace).unwrap().lines().count() > 10);
}

#[test]
fn fuzz_checks_its_out_folder_before_any_seed_runs() {
    // Issue 14 item 6: an unwritable --out is reported before the run (exit 2).
    let dir = scratch("fuzz-out");
    let file = dir.join("a-file");
    std::fs::write(&file, "mine").unwrap();
    for out in [file.clone(), file.join("cases")] {
        let o = tenure(&[
            "fuzz",
            "--protocol",
            "raft",
            "--seeds",
            "0..5",
            "--out",
            s(&out),
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(t.contains("--out"), "{t}");
        assert!(!t.contains("fuzzed"), "no seed ran: {t}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // A new folder is fine, and the check leaves nothing behind when nothing fails.
    let fresh = dir.join("new/cases");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--seeds",
        "0..5",
        "--out",
        s(&fresh),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!dir.join("new").exists());
}

#[test]
fn fuzz_progress_never_reaches_stdout_nor_a_short_run() {
    let dir = scratch("progress");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--seeds",
        "0..40",
        "--json",
        "--out",
        s(&dir),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(stdout.lines().count(), 40);
    for line in stdout.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("only JSON on stdout");
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("seeds/s"),
        "a short run shows no progress: {stderr}"
    );
    assert!(!stderr.contains('\x1b'), "no bar into a pipe");
}

#[test]
fn a_closed_pipe_ends_tenure_quietly() {
    // `tenure fuzz ... --json | head -1`: the reader goes away. The output (about 170 KB)
    // is more than a pipe holds, so tenure meets the closed pipe whenever the reader
    // leaves (`tenure list` fits in the pipe: it could finish first, and exit 0).
    let out = std::env::temp_dir().join(format!("tenure-closed-pipe-{}", std::process::id()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args([
            "fuzz",
            "--protocol",
            "redis-lock",
            "--seeds",
            "0..1000",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ])
        .current_dir(repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tenure starts");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("tenure ends");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("internal error") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(141), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}
