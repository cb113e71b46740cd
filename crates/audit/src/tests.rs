use super::*;
use tenure_core::{Cluster, LocalTime, Record, RunInfo};

fn history(events: Vec<(u64, u32, Observation)>) -> History {
    History {
        info: RunInfo {
            cluster: Cluster::uniform("node", 3),
            seed: 1,
            end: SimTime(10_000_000_000),
            calm_from: SimTime::ZERO,
        },
        records: events
            .into_iter()
            .map(|(ms, node, obs)| {
                Record::new(
                    SimTime(ms * 1_000_000),
                    NodeId(node),
                    LocalTime(0),
                    LocalTime(0),
                    obs,
                )
            })
            .collect(),
    }
}

/// n0 leads term 1, is deposed by n1 in term 2 while it still believes, steps down,
/// n1 crashes, n2 wins term 3.
fn sample() -> Log {
    leadership_log(&history(vec![
        (10, 0, Observation::Candidate { term: 1 }),
        (12, 0, Observation::Leader { term: 1 }),
        (12, 0, Observation::Leader { term: 1 }),
        (50, 1, Observation::Candidate { term: 2 }),
        (55, 1, Observation::Leader { term: 2 }),
        (
            60,
            0,
            Observation::Follower {
                term: 2,
                leader: Some(NodeId(1)),
            },
        ),
        (90, 1, Observation::Crashed),
        (120, 2, Observation::Candidate { term: 3 }),
        (125, 2, Observation::Leader { term: 3 }),
    ]))
}

fn lines(log: &Log) -> Vec<String> {
    log.entries.iter().map(Entry::to_line).collect()
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn problem(lines: &[String]) -> Problem {
    verify(&text(lines), None).unwrap().unwrap_err()
}

#[test]
fn transitions_come_from_the_history_with_reasons() {
    let log = sample();
    let described: Vec<String> = log.entries.iter().map(describe).collect();
    assert_eq!(
        described,
        vec![
            "12ms  n0 elected term 1: first leader of the run",
            "55ms  n1 elected term 2: while n0 (term 1) still believed it led",
            "60ms  n0 ended term 1: stepped down to follow n1 in term 2",
            "90ms  n1 ended term 2: crashed",
            "125ms  n2 elected term 3: after n1 (term 2) crashed",
        ]
    );
    assert_eq!(log.entries[0].prev, GENESIS);
    for w in log.entries.windows(2) {
        assert_eq!(w[1].prev, w[0].hash);
    }
    // Deterministic: the same history, the same chain.
    assert_eq!(log.head(), sample().head());
}

#[test]
fn an_untouched_log_verifies_with_its_head() {
    let log = sample();
    let v = verify(&log.to_jsonl(), Some(log.head())).unwrap().unwrap();
    assert_eq!(v.entries, 5);
    assert_eq!(v.head, log.head());
    // An empty log is a valid (empty) chain.
    assert_eq!(verify("", Some(GENESIS)).unwrap().unwrap().entries, 0);
}

#[test]
fn an_edited_entry_is_named() {
    let mut l = lines(&sample());
    l[2] = l[2].replace("follow n1", "follow n2");
    assert_eq!(problem(&l), Problem::Edited { line: 3, seq: 2 });
    // Editing a number (the time) is caught as well.
    let mut l = lines(&sample());
    l[1] = l[1].replace("\"time_ns\":55000000", "\"time_ns\":56000000");
    assert_eq!(problem(&l), Problem::Edited { line: 2, seq: 1 });
}

#[test]
fn an_edited_entry_with_a_recomputed_hash_breaks_the_next_link() {
    let log = sample();
    let mut e = log.entries[1].clone();
    e.node = 2;
    e.hash = e.compute_hash();
    let mut l = lines(&log);
    l[1] = e.to_line();
    let p = problem(&l);
    assert_eq!(p, Problem::Rewritten { line: 3, seq: 2 });
    assert!(p.to_string().contains("line 2 was rewritten"));
}

#[test]
fn a_removed_entry_is_named() {
    let mut l = lines(&sample());
    l.remove(2);
    let p = problem(&l);
    assert_eq!(
        p,
        Problem::Missing {
            line: 3,
            from: 2,
            to: 2
        }
    );
    assert_eq!(p.to_string(), "line 3: entry 2 is missing before this line");
    let mut l = lines(&sample());
    l.drain(0..2);
    assert_eq!(
        problem(&l),
        Problem::Missing {
            line: 1,
            from: 0,
            to: 1
        }
    );
}

#[test]
fn reordered_entries_are_named() {
    let mut l = lines(&sample());
    l.swap(1, 2);
    assert_eq!(
        problem(&l),
        Problem::Reordered {
            line: 2,
            expected: 1,
            found: 2
        }
    );
    // Moved to the end.
    let mut l = lines(&sample());
    let e = l.remove(0);
    l.push(e);
    assert_eq!(
        problem(&l),
        Problem::Reordered {
            line: 1,
            expected: 0,
            found: 1
        }
    );
}

#[test]
fn a_cut_at_the_end_needs_the_head() {
    let log = sample();
    let mut l = lines(&log);
    l.pop();
    // Without the head the shorter chain is valid: that is what the head is for.
    assert!(verify(&text(&l), None).unwrap().is_ok());
    let p = verify(&text(&l), Some(log.head())).unwrap().unwrap_err();
    assert!(matches!(p, Problem::HeadMismatch { entries: 4, .. }));
}

#[test]
fn text_that_is_not_a_log_is_bad_input() {
    let e = verify("hello\n", None).unwrap_err();
    assert_eq!(e.line, 1);
    let mut l = lines(&sample());
    l[1] = l[1].replace("\"seq\"", "\"sequence\"");
    assert_eq!(verify(&text(&l), None).unwrap_err().line, 2);
    let mut l = lines(&sample());
    l.insert(1, String::new());
    assert_eq!(verify(&text(&l), None).unwrap_err().line, 2);
}
