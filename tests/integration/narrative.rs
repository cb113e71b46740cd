//! The story `tenure run` tells of a violation (`tenure_timeline::narrative`) explains it:
//! for the zoo's GC-pause, isolation and clock-jump scenarios it lists the fault that
//! caused the violation, nothing after the violation, and a routine observation repeated
//! by one node as one line with a count.
//!
//! The rule checked: every line but an elision (`  ... N more observations`) starts with
//! its marker (`*` = involved) and a true time, and that time is at or before the
//! violation's (`Violation::time`; for an overlap, when it began). Involved records after
//! it (the end of an overlap) are not lines: the checker's message says when it ended.

use crate::support::{prepare, repo_root};
use tenure_core::SimTime;
use tenure_sim::RunOptions;

/// The time a narrative line starts with, after its marker.
fn line_time(line: &str) -> Option<SimTime> {
    let word = line.get(2..)?.split_whitespace().next()?;
    let secs = word.strip_suffix('s')?.replace('_', "");
    let (s, frac) = secs.split_once('.')?;
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()? * 1_000;
    Some(SimTime(ns))
}

/// The narrative of `file`'s expected violation, as `tenure run` prints it, and the
/// violation's time.
fn story(file: &str) -> (Vec<String>, SimTime) {
    let prepared = prepare(&repo_root().join(file));
    let report = prepared.run(
        prepared.scenario.seed,
        &RunOptions {
            trace: true,
            stop_at_first_violation: false,
        },
    );
    let expected = match &prepared.scenario.expect {
        tenure_scenario::Expectation::Violation { checker } => checker.clone(),
        other => panic!("{file} expects {other:?}"),
    };
    let v = report
        .violations
        .iter()
        .find(|v| v.checker == expected)
        .unwrap_or_else(|| panic!("{file} violates {expected}"));
    // The story runs until the violation is complete (the stale action of an overlap).
    let end = tenure_timeline::narrative::window(&report, v).end;
    (tenure_timeline::narrative::lines(&report, v, 16), end)
}

/// Checks the rule of the module's doc and that `cause` is a line; returns the text.
fn check(file: &str, cause: &str) -> String {
    let (lines, at) = story(file);
    let text = lines.join("\n");
    let cause_line = lines
        .iter()
        .find(|l| l.contains(cause))
        .unwrap_or_else(|| panic!("{file}: no `{cause}` line:\n{text}"));
    assert!(line_time(cause_line).is_some_and(|t| t <= at), "{text}");
    for l in &lines {
        if l.starts_with("  ... ") || l.starts_with("  clock n") {
            continue;
        }
        let t = line_time(l).unwrap_or_else(|| panic!("{file}: no time on `{l}`:\n{text}"));
        assert!(
            t <= at,
            "{file}: `{l}` is after the violation at {at}:\n{text}"
        );
    }
    assert!(lines.len() <= 30, "{file}: a story, not a log:\n{text}");
    text
}

#[test]
fn a_gc_pause_story_lists_the_pause_and_nothing_after_the_violation() {
    let text = check("scenarios/redis-lock/gc-pause.toml", "fault pause n1");
    // The paused holder's lock, however old, and the second holder's.
    assert!(
        text.contains("* 0.279_210s  n1   holds resource=counter"),
        "{text}"
    );
    assert!(text.contains("n2   holds resource=counter"), "{text}");
}

#[test]
fn an_isolated_leaders_story_lists_the_isolation_and_its_serves_as_one_line() {
    let text = check("scenarios/raft/leader-isolated.toml", "fault isolate n4");
    // Before, the story ran to n4's last involved serve at 7 s and beyond (n3's serves
    // at 11.5 s); now it ends when n3 first serves.
    assert!(!text.contains("7.013_362s"), "{text}");
    let serves: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("n4   serves term=1"))
        .collect();
    assert!(
        serves
            .iter()
            .any(|l| l.contains(" x") && l.contains(" to ")),
        "the isolated leader's serves collapse to a count:\n{text}"
    );
    assert!(serves.len() <= 2, "{text}");
}

#[test]
fn a_clock_jump_story_lists_the_jump_and_counts_the_serves_around_it() {
    let text = check(
        "scenarios/leader-lease/wall-clock-lease-jump.toml",
        "fault clock-jump n0",
    );
    assert!(text.contains("fault isolate n0"), "{text}");
    // Hundreds of serves of the isolated leaseholder, as one line before the jump and
    // one after it (a fault on the node starts a new run).
    // (n0 leads term 2: the first leader released its lease, the `resign` workload.)
    let serves: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("n0   serves term=2"))
        .collect();
    assert_eq!(serves.len(), 3, "the involved one and two runs:\n{text}");
    assert!(
        serves.iter().filter(|l| l.contains(" x")).count() == 2,
        "{text}"
    );
}

#[test]
fn a_server_clock_jump_story_lists_the_jump() {
    check(
        "scenarios/redis-lock/server-clock-jump.toml",
        "fault clock-jump n0",
    );
}
