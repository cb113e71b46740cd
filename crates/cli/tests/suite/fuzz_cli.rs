//! `tenure fuzz` and `tenure shrink` as a user runs them: saved cases that replay,
//! shards that add up to the whole range, Ctrl-C that loses nothing, clear help.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{repo, s, scratch, stdout, tenure, text};

#[test]
fn fuzz_saves_each_failure_as_a_case_that_replays_and_shrinks() {
    let out = scratch("fuzz-cli", "saves");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--seeds",
        "50..53",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let case = out.join("raft-forget-vote-seed51-single-leader-per-term.toml");
    let t = stdout(&o);
    assert!(
        t.contains("FAIL seed 51: single-leader-per-term violated"),
        "{t}"
    );
    assert!(
        t.contains(&format!("replay: tenure run {} --seed 51", s(&case))),
        "{t}"
    );
    assert!(
        t.contains("fuzzed 3 seeds of raft/forget-vote (50..53)"),
        "{t}"
    );
    // Each saved failure comes with its timeline, violation marked.
    let timeline = case.with_extension("html");
    assert!(t.contains(&format!("timeline: {}", s(&timeline))), "{t}");
    let html = std::fs::read_to_string(&timeline).expect("the timeline is written");
    assert!(
        html.contains("single-leader-per-term"),
        "the violation is on the timeline"
    );

    // The saved case replays the very violation the fuzz run printed.
    let verdict = t
        .lines()
        .find_map(|l| l.strip_prefix("FAIL seed 51: "))
        .expect("the FAIL line")
        .to_string();
    let replay = tenure(&["run", s(&case), "--seed", "51"]);
    assert_eq!(replay.status.code(), Some(1));
    assert!(stdout(&replay).contains(&verdict), "{verdict}");
    assert!(stdout(&replay).contains("expects violation of single-leader-per-term: met"));

    let shrunk = tenure(&["shrink", s(&case), "--seed", "51"]);
    assert_eq!(shrunk.status.code(), Some(0), "{}", text(&shrunk));
    let t = stdout(&shrunk);
    let before: usize = t
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("before:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("a before: line");
    let after: usize = t
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("after:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("an after: line");
    assert!(before > after && after <= 3, "{t}");
    // The shrunk case replays with the seed shrink reports (it may move to a nearby one).
    let replay_line = t
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: tenure "))
        .expect("a replay line")
        .to_string();
    let args: Vec<&str> = replay_line.split_whitespace().collect();
    // `tenure fuzz` shrank the case already (the first few of each check are):
    // `tenure shrink` writes next to it, never over it, and finds the same scenario.
    let by_fuzz = out.join("raft-forget-vote-seed51-single-leader-per-term.shrunk.toml");
    let small = out.join("raft-forget-vote-seed51-single-leader-per-term.shrunk-2.toml");
    assert_eq!(args[1], s(&small), "{t}");
    let replay = tenure(&args);
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    let body = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .skip_while(|l| l.starts_with('#') || l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&by_fuzz), body(&small), "fuzz and shrink shrink alike");

    let again = tenure(&["shrink", s(&case), "--seed", "51"]);
    assert_eq!(again.status.code(), Some(0));
    let third = out.join("raft-forget-vote-seed51-single-leader-per-term.shrunk-3.toml");
    assert_eq!(
        std::fs::read_to_string(&third).unwrap(),
        std::fs::read_to_string(&small).unwrap(),
        "the same input shrinks to the same output, saved under a new name"
    );

    // A rerun finds the same case and keeps the file it wrote: no `-2` copy.
    let files = |dir: &Path| {
        let mut f: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        f.sort();
        f
    };
    let before = files(&out);
    let rerun = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--seeds",
        "51..52",
        "--out",
        s(&out),
    ]);
    assert!(
        stdout(&rerun).contains(&format!("saved: {}", s(&case))),
        "{}",
        text(&rerun)
    );
    assert_eq!(files(&out), before, "nothing new, nothing overwritten");
}

#[test]
fn shrink_says_when_a_scenario_does_not_fail() {
    let o = tenure(&["shrink", "scenarios/raft/leader-crash.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout(&o).contains("does not fail with seed 1"),
        "{}",
        text(&o)
    );
    let o = tenure(&["shrink", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2));
}

fn json_lines(args: &[&str], out: &Path) -> Vec<String> {
    let mut all = vec![
        "fuzz",
        "--protocol",
        "redis-lock",
        "--profile",
        "beyond",
        "--json",
        "--out",
        s(out),
    ];
    all.extend_from_slice(args);
    let o = tenure(&all);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    stdout(&o).lines().map(str::to_string).collect()
}

/// A line without what depends on the run rather than the seed: which failures a run
/// keeps (the first --keep of each check in its own range) and their files.
fn seed_verdict(line: &str) -> serde_json::Value {
    let mut j: serde_json::Value = serde_json::from_str(line).unwrap();
    for k in ["case", "shrunk", "timeline"] {
        j.as_object_mut().unwrap().remove(k);
    }
    j
}

#[test]
fn shards_concatenated_are_the_whole_range_whatever_the_jobs() {
    let out = scratch("fuzz-cli", "shards");
    let whole = json_lines(&["--seeds", "40..90", "--jobs", "2"], &out);
    let mut shards = json_lines(
        &["--seeds", "40..90", "--shard", "1/2", "--jobs", "1"],
        &out,
    );
    shards.extend(json_lines(
        &["--seeds", "40..90", "--shard", "2/2", "--jobs", "3"],
        &out,
    ));
    assert_eq!(whole.len(), 50);
    let verdicts = |lines: &[String]| lines.iter().map(|l| seed_verdict(l)).collect::<Vec<_>>();
    assert_eq!(verdicts(&shards), verdicts(&whole));
    let case = whole
        .iter()
        .find_map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["case"]
                .as_str()
                .map(str::to_string)
        })
        .expect("some seeds fail and are saved");
    assert!(
        repo().join(&case).exists(),
        "a case's path is usable from where the command ran: {case}"
    );
}

/// `tenure ARGS` started from the repository's root, stdout piped (read line by line).
fn spawn_tenure(args: &[&str], stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(args)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("tenure starts")
}

/// Sends `sig` (`-INT`, `-TERM`) to `child`, as a terminal or a CI runner would.
fn signal(child: &std::process::Child, sig: &str) {
    let kill = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
}

#[test]
fn ctrl_c_loses_no_failure_found_before_it() {
    let out = scratch("fuzz-cli", "interrupt");
    let mut child = spawn_tenure(
        &[
            "fuzz",
            "--protocol",
            "redis-lock",
            "--profile",
            "beyond",
            "--seeds",
            "0..1000000",
            "--jobs",
            "2",
            "--out",
            s(&out),
        ],
        Stdio::null(),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let first = line.starts_with("FAIL seed");
        seen.push(line);
        if first {
            break;
        }
    }
    signal(&child, "-INT");
    seen.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "a failure was found: exit 1, not 130"
    );
    let listed: Vec<&str> = seen
        .iter()
        .filter_map(|l| l.trim().strip_prefix("saved: "))
        .collect();
    assert!(!listed.is_empty(), "{seen:#?}");
    assert!(
        seen.iter().any(|l| l.starts_with("interrupted: fuzzed ")),
        "the summary says the run was interrupted: {seen:#?}"
    );
    let summary = seen
        .iter()
        .position(|l| l.starts_with("failing seeds by check"))
        .expect("a closing list");
    for file in &listed {
        let scenario = tenure_scenario::load(&repo().join(file)).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            seen[summary..].iter().any(|l| l.contains(file)),
            "{file} is in the closing list"
        );
        assert_eq!(scenario.protocol.name, "redis-lock");
    }
    let saved = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
                && !e
                    .as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".shrunk")
        })
        .count();
    assert_eq!(saved, listed.len(), "every saved case is listed");
}

#[test]
fn help_explains_profiles_shards_replay_and_shrinking() {
    let fuzz = text(&tenure(&["fuzz", "--help"]));
    for needle in [
        "--protocol",
        "--shard",
        "K/N",
        "chaos",
        "tenure run <file> --seed N",
        "Ctrl-C",
        "Exit codes",
    ] {
        assert!(fuzz.contains(needle), "fuzz --help lacks {needle}:\n{fuzz}");
    }
    let shrink = text(&tenure(&["shrink", "--help"]));
    for needle in ["same checker", ".shrunk.toml", "Exit codes"] {
        assert!(
            shrink.contains(needle),
            "shrink --help lacks {needle}:\n{shrink}"
        );
    }
}

#[test]
fn bad_fuzz_input_is_exit_2_with_the_reason() {
    for (args, reason) in [
        (
            vec!["fuzz", "--protocol", "nope"],
            "unknown protocol `nope`",
        ),
        (
            vec!["fuzz", "--protocol", "raft", "--variant", "nope"],
            "no variant `nope`",
        ),
        (
            vec!["fuzz", "--protocol", "raft", "--seeds", "9..3"],
            "start is above the end",
        ),
        (
            vec!["fuzz", "--protocol", "raft", "--shard", "3/2"],
            "--shard `3/2`",
        ),
        (
            vec!["fuzz", "--protocol", "raft", "--profile", "wild"],
            "unknown profile `wild`",
        ),
        (
            vec!["fuzz", "--protocol", "raft", "--time", "soon"],
            "--time",
        ),
        (vec!["fuzz"], "required"),
    ] {
        let o = tenure(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(reason), "{args:?}: {}", text(&o));
    }
}

#[test]
fn a_printed_seed_is_a_scenario_that_replays_that_run() {
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--print",
        "51",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let file = scratch("fuzz-cli", "printed").join("seed51.toml");
    std::fs::write(&file, &o.stdout).unwrap();
    let replay = tenure(&["run", s(&file), "--seed", "51"]);
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    // The same violation at the same instant as `tenure fuzz` finds for seed 51.
    let fuzzed = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--seeds",
        "51..52",
        "--out",
        s(&scratch("fuzz-cli", "printed-fuzz")),
    ]);
    let verdict = stdout(&fuzzed)
        .lines()
        .find_map(|l| l.strip_prefix("FAIL seed 51: ").map(str::to_string))
        .expect("fuzzing finds seed 51");
    assert!(
        stdout(&replay).contains(&verdict),
        "{verdict}\n{}",
        text(&replay)
    );
}

#[test]
fn an_empty_seed_range_is_an_error_not_a_green_run_of_nothing() {
    let o = tenure(&["fuzz", "--protocol", "raft", "--seeds", "5..5"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--seeds `5..5`: the range is empty"),
        "{}",
        text(&o)
    );
}

#[test]
fn max_failures_stops_at_the_first_failure_and_names_the_seeds_covered() {
    let out = scratch("fuzz-cli", "max-failures");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "raft",
        "--variant",
        "forget-vote",
        "--seeds",
        "0..1000",
        "--max-failures",
        "1",
        "--out",
        s(&out),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert_eq!(t.matches("FAIL seed").count(), 1, "{t}");
    assert!(
        t.contains("stopped early: fuzzed 52 seeds of raft/forget-vote (0..1000; covered 0..52)"),
        "{t}"
    );
}

#[test]
fn sigterm_during_a_time_budget_writes_a_partial_report_and_exits_4() {
    let out = scratch("fuzz-cli", "sigterm");
    let mut child = spawn_tenure(
        &[
            "fuzz",
            "--protocol",
            "raft",
            "--time",
            "10m",
            "--jobs",
            "1",
            "--json",
            "--out",
            s(&out),
        ],
        Stdio::piped(),
    );
    // Wait until seeds have been handed over (a JSON line each on stdout).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a seed's line").unwrap();
    let first: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["seed"], 0, "{first}");
    signal(&child, "-TERM");
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(4),
        "interrupted with nothing failed: exit 4\n{stderr}"
    );
    assert!(
        stderr.contains("interrupted: finishing the seeds in flight"),
        "{stderr}"
    );
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("interrupted: fuzzed "))
        .unwrap_or_else(|| panic!("a partial report: {stderr}"));
    let covered = 1 + rest.len();
    assert!(
        summary.contains(&format!(
            "fuzzed {covered} seed{} of raft/correct (0..; covered 0..{covered})",
            if covered == 1 { "" } else { "s" }
        )),
        "the report names exactly the seeds whose lines were written: {summary}"
    );
    let last = stderr.lines().last().unwrap();
    let json: serde_json::Value = serde_json::from_str(last).expect("the JSON summary last");
    assert_eq!(json["summary"]["interrupted"], true);
    assert_eq!(json["summary"]["seeds"], covered as u64);
}

#[test]
fn a_regression_corpus_is_run_first_and_grows_by_one_seed_per_new_failure_group() {
    let dir = scratch("fuzz-cli", "corpus");
    std::fs::create_dir_all(dir.join("tenure-regressions")).unwrap();
    let fuzz = |seeds: &str, extra: &[&str]| {
        let mut args = vec![
            "fuzz",
            "--protocol",
            "raft",
            "--variant",
            "forget-vote",
            "--seeds",
            seeds,
        ];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_tenure"))
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let o = fuzz("50..53", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let file = dir.join("tenure-regressions/raft-forget-vote-chaos.txt");
    let corpus = std::fs::read_to_string(&file).expect("the corpus file is written");
    assert!(
        corpus
            .lines()
            .any(|l| l.starts_with("51 # single-leader-per-term [")),
        "{corpus}"
    );
    assert!(
        stdout(&o).contains(
            "regression corpus: 1 seed added to tenure-regressions/raft-forget-vote-chaos.txt"
        ),
        "{}",
        text(&o)
    );

    // A later run over other seeds re-runs 51 first, and fails for it.
    let o = fuzz("0..5", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "and first 1 regression seed from tenure-regressions/raft-forget-vote-chaos.txt"
        ),
        "{t}"
    );
    assert!(
        t.contains("FAIL regression seed 51: single-leader-per-term violated"),
        "{t}"
    );
    assert!(
        t.contains(
            "fuzzed 5 seeds of raft/forget-vote (0..5), and 1 regression seed from the corpus"
        ),
        "{t}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        corpus,
        "51 is not added twice"
    );

    // --no-regressions leaves it alone.
    let o = fuzz("0..5", &["--no-regressions"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn merge_refuses_what_is_not_a_shard_with_the_file_and_line() {
    let dir = scratch("fuzz-cli", "merge-bad");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = tenure(&["fuzz", "merge", s(&empty)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no *.jsonl file"), "{}", text(&o));

    let o = tenure(&["fuzz", "merge", s(&dir.join("missing"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a folder"), "{}", text(&o));

    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("seeds.jsonl"),
        "{\"seed\":0,\"outcome\":\"pass\",\"target\":\"raft/correct\",\"profile\":\"chaos\"}\nnot json\n",
    )
    .unwrap();
    let o = tenure(&["fuzz", "merge", s(&bad)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "{}:2: not a seed's JSON line",
            s(&bad.join("seeds.jsonl"))
        )),
        "{}",
        text(&o)
    );

    let o = tenure(&["fuzz", "merge"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a folder is required: {}",
        text(&o)
    );
}

/// Runs `tenure fuzz ARGS --shard K/2 --json --out DIR/K` for K = 1, 2 (each must exit
/// with `exit`) and saves each shard's JSON lines in its folder, as the CI templates do.
fn write_two_shards(dir: &Path, args: &[&str], exit: i32) {
    for k in 1..=2 {
        let out = dir.join(k.to_string());
        let shard = format!("{k}/2");
        let o = Command::new(env!("CARGO_BIN_EXE_tenure"))
            .arg("fuzz")
            .args(args)
            .args(["--shard", &shard, "--json", "--out", s(&out)])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(exit), "{}", text(&o));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("seeds.jsonl"), &o.stdout).unwrap();
    }
}

#[test]
fn a_merge_of_passing_shards_passes_and_names_what_it_covered() {
    let dir = scratch("fuzz-cli", "merge-pass");
    write_two_shards(&dir, &["--protocol", "raft", "--seeds", "0..30"], 0);
    let o = tenure(&["fuzz", "merge", s(&dir.join("1")), s(&dir.join("2"))]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("merged 30 seeds of raft/correct under profile chaos from 2 folders (2 files; covered 0..30): 0 failed"),
        "{t}"
    );
    assert!(
        t.contains(
            "coverage: check single-leader-per-term: judged something in 30 of 30 seeds (100%)"
        ),
        "{t}"
    );
    // Only one shard: the gap shows.
    let o = tenure(&["fuzz", "merge", s(&dir.join("2"))]);
    assert!(text(&o).contains("covered 15..30"), "{}", text(&o));
}

#[test]
fn a_merge_of_shards_that_judged_nothing_is_not_a_pass() {
    // leader-lease without its `resign` workload under `calm`: no fault, so no leader
    // change, so no second node ever acts on a lease: `lease-safety` could not fail in
    // any seed. Each shard says so (exit 5), and so must their merge, per check, with
    // the reason (it said "0 failed" and exited 0 before).
    let dir = scratch("fuzz-cli", "merge-not-judged");
    let file = dir.join("steady.toml");
    std::fs::write(
        &file,
        "name = \"leader-lease-steady\"\nduration = \"14s\"\n\n[protocol]\n\
         name = \"leader-lease\"\n\n[protocol.params]\nresign = false\n",
    )
    .unwrap();
    let args = [s(&file), "--profile", "calm", "--seeds", "0..4"];
    write_two_shards(&dir, &args, 5);
    let o = tenure(&["fuzz", "merge", s(&dir.join("1")), s(&dir.join("2"))]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(5), "{t}");
    assert!(
        t.contains("  lease-safety: not judged in 4 of 4 seeds (4 could not fail, e.g. seed 0: "),
        "{t}"
    );
    assert!(
        t.contains("NOT JUDGED in any seed: lease-safety (no verdict over this run: exit 5)"),
        "{t}"
    );
    let o = tenure(&[
        "fuzz",
        "merge",
        s(&dir.join("2")),
        s(&dir.join("1")),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON line");
    assert_eq!(
        j["summary"]["never_judged"],
        serde_json::json!(["lease-safety"])
    );
    let first = j["summary"]["not_judged"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "lease-safety")
        .expect("lease-safety counted")
        .clone();
    assert_eq!(first["seeds"], 4);
    // The lowest seed's words, whichever shard came first.
    assert_eq!(first["reasons"][0]["first_seed"], 0);
}

#[test]
fn failures_of_one_shape_collapse_to_one_entry() {
    let out = scratch("fuzz-cli", "collapse");
    let o = tenure(&[
        "fuzz",
        "--protocol",
        "redis-lock",
        "--profile",
        "beyond",
        "--seeds",
        "0..300",
        "--keep",
        "6",
        "--out",
        s(&out),
    ]);
    let t = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // Six seeds whose failures shrink to one paused holder (aimed at the holder since
    // issue 33): one entry, six seeds.
    assert!(
        t.contains("  mutual-exclusion after [pause holder] (6 seeds: 2, 5, 9, 10, 14, 15)"),
        "{t}"
    );
    let entries = t
        .lines()
        .filter(|l| l.starts_with("  mutual-exclusion after [pause holder]"))
        .count();
    assert_eq!(entries, 1, "{t}");
    // One timeline per group, not per failure.
    let timelines = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "html")
        })
        .count();
    let groups = t
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(" after ["))
        .count();
    assert_eq!(timelines, groups, "{t}");
}
