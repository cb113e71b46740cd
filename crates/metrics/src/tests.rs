use super::*;
use tenure_core::{Cluster, LocalTime, Record, RunInfo};

/// A history from `(ms, node, observation)` triples, ending at `end_ms`.
fn history(end_ms: u64, events: Vec<(u64, u32, Observation)>) -> History {
    History {
        info: RunInfo {
            cluster: Cluster::uniform("node", 4),
            seed: 1,
            end: SimTime(end_ms * 1_000_000),
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

fn waiting() -> Observation {
    Observation::Waiting {
        resource: "r".into(),
    }
}
fn holds() -> Observation {
    Observation::Holds {
        resource: "r".into(),
        token: 0,
    }
}
fn releases() -> Observation {
    Observation::Releases {
        resource: "r".into(),
    }
}
fn retry(attempt: u32) -> Observation {
    Observation::Retry {
        what: "r".into(),
        attempt,
    }
}

#[test]
fn acquire_latency_hold_time_retries_and_queue_depth() {
    // n1 waits 0..10ms, holds 10..40ms; n2 waits 5..40ms with two retries, holds
    // 40..50ms; n3 waits from 45ms and never gets it.
    let h = history(
        1000,
        vec![
            (0, 1, waiting()),
            (5, 2, waiting()),
            (10, 1, holds()),
            (20, 2, retry(1)),
            (30, 2, retry(2)),
            (40, 1, releases()),
            (40, 2, holds()),
            (45, 3, waiting()),
            (50, 2, releases()),
        ],
    );
    let m = compute(&h, &Traffic::default());
    let l = m.locks.expect("lock metrics");
    assert_eq!(l.acquisitions, 2);
    assert_eq!(l.unfinished_waits, 1);
    let lat = l.acquire_latency.unwrap();
    assert_eq!(lat.count, 2);
    assert!((lat.max_ms - 35.0).abs() < 0.1, "{lat:?}");
    assert!((lat.p50_ms - 10.0).abs() < 0.1, "{lat:?}");
    let hold = l.hold_time.unwrap();
    assert!((hold.max_ms - 30.0).abs() < 0.1 && (hold.p50_ms - 10.0).abs() < 0.1);
    assert_eq!(l.retries, 2);
    assert_eq!(l.retries_per_acquisition, 1.0);
    assert_eq!(l.wait_queue.max, 2);
    // Depth 1 for 5ms, 2 for 5ms, 1 for 30ms, 0 for 5ms, then 1 for 955ms.
    let mean = (5.0 + 10.0 + 30.0 + 955.0) / 1000.0;
    assert!(
        (l.wait_queue.mean - mean).abs() < 1e-9,
        "{}",
        l.wait_queue.mean
    );
    assert_eq!(l.wait_queue.depth.len(), 10);
    assert_eq!(l.wait_queue.depth[0], 2);
    assert_eq!(l.wait_queue.depth[9], 1);
    assert!((l.acquisitions_per_s - 2.0).abs() < 1e-9);
    // n1 and n2 got one grant each, n3 none: (2)^2 / (3 * 2).
    assert!((l.fairness - 4.0 / 6.0).abs() < 1e-9);
    assert_eq!(l.clients, 3);
    assert!(l.coordinator.is_none());
    assert!(m.elections.is_none());
}

#[test]
fn a_crash_ends_a_wait_and_a_hold() {
    let h = history(
        300,
        vec![
            (0, 1, waiting()),
            (10, 1, holds()),
            (30, 1, Observation::Crashed),
            (31, 2, waiting()),
            (40, 2, Observation::Crashed),
        ],
    );
    let l = compute(&h, &Traffic::default()).locks.unwrap();
    assert!((l.hold_time.unwrap().max_ms - 20.0).abs() < 0.1);
    assert_eq!(l.unfinished_waits, 1);
    assert_eq!(l.wait_queue.depth, vec![1, 0, 0]);
}

#[test]
fn jain_is_one_when_equal_and_one_over_n_when_one_takes_all() {
    assert_eq!(jain(&[3, 3, 3]), 1.0);
    assert!((jain(&[9, 0, 0]) - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(jain(&[]), 1.0);
}

#[test]
fn coordinator_load_sums_the_coordinators_per_second() {
    let h = history(2500, vec![(0, 1, waiting()), (10, 1, holds())]);
    // The coordinators n0 and n2: 11 messages in the first 10ms, 30 spread over the
    // second second, 5 at the end (n1, not a coordinator, is not counted).
    let mut load = vec![0u32; 250];
    load[0] = 11;
    for w in &mut load[100..130] {
        *w = 1;
    }
    load[249] = 5;
    let traffic = Traffic {
        to_coordinators_per_10ms: load,
        max_to_node_in_1ms: vec![7, 100, 1],
        coordinators: vec![NodeId(0), NodeId(2)],
    };
    let c = compute(&h, &traffic).locks.unwrap().coordinator.unwrap();
    assert_eq!(c.messages, 46);
    assert_eq!(c.per_second, vec![11, 30, 5]);
    assert_eq!(c.peak_per_s, 30);
    assert_eq!(c.burst_per_s, 1100);
    assert_eq!(c.max_in_1ms, 7);
    assert!((c.per_s - 46.0 / 2.5).abs() < 1e-9);
}

#[test]
fn elections_terms_leaderless_time_and_split_votes() {
    let h = history(
        1000,
        vec![
            (100, 0, Observation::Candidate { term: 1 }),
            (100, 1, Observation::Candidate { term: 1 }),
            // Term 1 is split: nobody wins.
            (300, 1, Observation::Candidate { term: 2 }),
            (310, 1, Observation::Leader { term: 2 }),
            (
                310,
                0,
                Observation::Follower {
                    term: 2,
                    leader: Some(NodeId(1)),
                },
            ),
            (500, 1, Observation::Crashed),
            (700, 0, Observation::Candidate { term: 3 }),
            (710, 0, Observation::Leader { term: 3 }),
            (
                720,
                2,
                Observation::Retry {
                    what: "election".into(),
                    attempt: 1,
                },
            ),
        ],
    );
    let e = compute(&h, &Traffic::default()).elections.unwrap();
    assert_eq!(e.elections, 3);
    assert_eq!(e.terms_with_leader, 2);
    assert_eq!(e.max_term, 3);
    assert_eq!(e.split_votes, 1);
    assert_eq!(e.leader_changes, 2);
    assert_eq!(e.retries, 1);
    assert_eq!(e.first_leader_ms, Some(310.0));
    // Leaderless 0..310 and 500..710.
    assert!(
        (e.leaderless_ms - 520.0).abs() < 1e-6,
        "{}",
        e.leaderless_ms
    );
    let lines = text(&compute(&h, &Traffic::default()));
    assert!(lines[0].contains("3 started") && lines[0].contains("1 split votes"));
}

#[test]
fn termless_elections_count_leader_changes() {
    let h = history(
        100,
        vec![
            (10, 0, Observation::Leader { term: 0 }),
            (50, 0, Observation::Crashed),
            (60, 3, Observation::Leader { term: 0 }),
        ],
    );
    let e = compute(&h, &Traffic::default()).elections.unwrap();
    assert_eq!((e.elections, e.leader_changes, e.split_votes), (2, 2, 0));
}

#[test]
fn a_run_without_locks_or_elections_says_so() {
    let h = history(10, vec![(1, 0, Observation::Started)]);
    let m = compute(&h, &Traffic::default());
    assert!(m.locks.is_none() && m.elections.is_none());
    assert_eq!(text(&m).len(), 1);
    // It serializes (the JSON report carries it).
    assert!(serde_json::to_string(&m)
        .unwrap()
        .contains("\"locks\":null"));
}

#[test]
fn several_runs_share_one_histogram_and_sum_their_counts() {
    let a = history(
        1000,
        vec![(0, 1, waiting()), (10, 1, holds()), (20, 1, retry(1))],
    );
    let b = history(
        1000,
        vec![(0, 2, waiting()), (30, 2, holds()), (40, 2, releases())],
    );
    let traffic = Traffic {
        to_coordinators_per_10ms: vec![4],
        max_to_node_in_1ms: vec![2],
        coordinators: vec![NodeId(0)],
    };
    let m = compute_all(&[(&a, &traffic), (&b, &traffic)]);
    assert_eq!(m.duration_s, 2.0);
    let l = m.locks.unwrap();
    assert_eq!(l.acquisitions, 2);
    assert_eq!(l.acquire_latency.unwrap().count, 2);
    assert!((l.acquire_latency.unwrap().max_ms - 30.0).abs() < 0.1);
    assert_eq!(l.retries, 1);
    assert!((l.acquisitions_per_s - 1.0).abs() < 1e-9);
    let c = l.coordinator.unwrap();
    assert_eq!(
        (
            c.messages,
            c.peak_per_s,
            c.burst_per_s,
            c.per_second.clone()
        ),
        (8, 4, 400, vec![4])
    );
    assert!((c.per_s - 4.0).abs() < 1e-9);
}

fn acked() -> Observation {
    Observation::Acked {
        resource: "r".into(),
        amount: 1,
    }
}

fn accepted(value: i64) -> Observation {
    Observation::Write {
        resource: "r".into(),
        client: NodeId(0),
        token: None,
        accepted: true,
        value,
        based_on: None,
    }
}

fn invoke() -> Observation {
    Observation::Invoke {
        f: "read".into(),
        key: "r".into(),
        value: tenure_core::OpValue::Nil,
    }
}

#[test]
fn an_update_runs_from_its_first_attempt_to_its_ack_and_lost_ones_are_counted() {
    // n1 (a lock client) waits at 0, retries, is acked at 30ms; n2 (optimistic) reads
    // at 10ms, is refused and retries, reads again, is acked at 50ms; n3 starts at 60ms
    // and crashes. The resource ends at 1 although 2 increments were acknowledged.
    let h = history(
        1000,
        vec![
            (0, 1, waiting()),
            (5, 1, retry(1)),
            (10, 2, invoke()),
            (12, 1, holds()),
            (20, 1, accepted(1)),
            (30, 1, acked()),
            (35, 2, retry(1)),
            (40, 2, invoke()),
            (45, 2, accepted(1)),
            (50, 2, acked()),
            (60, 3, waiting()),
            (70, 3, Observation::Crashed),
        ],
    );
    let u = compute(&h, &Traffic::default()).updates.unwrap();
    assert_eq!((u.completed, u.abandoned), (2, 1));
    assert_eq!(u.per_s, 2.0);
    let lat = u.latency.unwrap();
    // 3 significant digits: within 0.1% of the recorded values.
    assert!((lat.p50_ms - 30.0).abs() < 0.05, "{lat:?}");
    assert!((lat.max_ms - 40.0).abs() < 0.05, "{lat:?}");
    assert_eq!((u.retries, u.retries_per_update), (Some(2), Some(1.0)));
    assert_eq!((u.lost, u.duplicated), (1, 0));
}

#[test]
fn keyed_requests_count_duplicates_and_their_unrecorded_retries_are_unknown() {
    let req = |k: &str| Observation::Requested { key: k.into() };
    let applied = |k: &str| Observation::Applied { key: k.into() };
    let done = |k: &str, ok| Observation::Completed { key: k.into(), ok };
    let h = history(
        2000,
        vec![
            (0, 1, req("a")),
            (3, 0, applied("a")),
            (4, 0, applied("a")),
            (10, 1, done("a", true)),
            (20, 2, req("b")),
            (30, 2, done("b", true)),
            (40, 3, req("c")),
            (50, 3, done("c", false)),
        ],
    );
    let u = compute(&h, &Traffic::default()).updates.unwrap();
    assert_eq!((u.completed, u.abandoned), (2, 1));
    // b was acknowledged and never applied: lost; a was applied twice.
    assert_eq!((u.lost, u.duplicated), (1, 1));
    assert_eq!((u.retries, u.retries_per_update), (None, None));
    assert!((u.latency.unwrap().max_ms - 10.0).abs() < 0.05);
}

#[test]
fn a_run_without_acknowledged_updates_has_no_update_metrics() {
    let h = history(100, vec![(0, 1, waiting()), (10, 1, holds())]);
    assert_eq!(compute(&h, &Traffic::default()).updates, None);
}
