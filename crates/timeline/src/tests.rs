use super::*;
use tenure_check::Violation;
use tenure_core::{History, LocalTime, NodeId, Observation, Record, RunInfo, SimTime};
use tenure_sim::net::DropReason;
use tenure_sim::trace::TraceEvent;
use tenure_sim::Stats;

const MS: u64 = 1_000_000;

fn n(i: u32) -> NodeId {
    NodeId(i)
}

fn rec(ms: u64, node: u32, obs: Observation) -> Record {
    Record::new(
        SimTime(ms * MS),
        n(node),
        LocalTime((ms * MS) as i64),
        LocalTime((ms * MS) as i64),
        obs,
    )
}

fn holds(res: &str, token: u64) -> Observation {
    Observation::Holds {
        resource: res.into(),
        token,
    }
}

fn fault(ms: u64, kind: &'static str, nodes: &[u32], detail: &str) -> TraceEvent {
    TraceEvent::Fault {
        time: SimTime(ms * MS),
        kind,
        nodes: nodes.iter().map(|i| n(*i)).collect(),
        detail: detail.into(),
    }
}

fn report(n_nodes: u32, end_ms: u64, records: Vec<Record>, extra: Vec<TraceEvent>) -> Report {
    let mut trace: Vec<TraceEvent> = records.iter().cloned().map(TraceEvent::Observed).collect();
    trace.extend(extra);
    trace.sort_by_key(|e| e.time());
    Report {
        seed: 7,
        violations: Vec::new(),
        history: History {
            info: RunInfo {
                cluster: Cluster::uniform("node", n_nodes),
                seed: 7,
                end: SimTime(end_ms * MS),
                calm_from: SimTime::ZERO,
            },
            records,
        },
        trace: Some(trace),
        stats: Stats::default(),
        stopped_early: false,
        judged: Vec::new(),
        expectation_met: true,
        verdicts: Vec::new(),
        beyond: Vec::new(),
    }
}

fn span(b: &Bar) -> (u32, BarKind, u64, u64, bool) {
    (b.node.0, b.kind, b.start.0 / MS, b.end.0 / MS, b.open)
}

#[test]
fn beliefs_become_bars_that_end_at_release_crash_or_the_end_of_the_run() {
    let r = report(
        2,
        100,
        vec![
            rec(0, 0, Observation::Started),
            rec(0, 1, Observation::Started),
            rec(5, 0, Observation::Candidate { term: 1 }),
            rec(10, 0, Observation::Leader { term: 1 }),
            rec(10, 1, holds("x", 3)),
            rec(
                20,
                1,
                Observation::Releases {
                    resource: "x".into(),
                },
            ),
            rec(30, 1, holds("x", 4)),
            rec(40, 1, Observation::Crashed),
            rec(50, 1, Observation::Started),
        ],
        vec![fault(40, "crash", &[1], ""), fault(50, "restart", &[1], "")],
    );
    let m = build(&r);
    let bars: Vec<_> = m.bars.iter().map(span).collect();
    assert_eq!(
        bars,
        vec![
            (0, BarKind::Candidate, 5, 10, false),
            (0, BarKind::Leader, 10, 100, true),
            (1, BarKind::Holds, 10, 20, false),
            (1, BarKind::Holds, 30, 40, false),
            (1, BarKind::Down, 40, 50, false),
        ]
    );
    assert_eq!(m.bars[1].label, "leader t1");
    assert_eq!(m.bars[2].label, "holds x #3");
    let marks: Vec<(String, u64)> = m
        .marks
        .iter()
        .map(|k| (k.kind.clone(), k.time.0 / MS))
        .collect();
    assert_eq!(
        marks,
        vec![("crash".to_string(), 40), ("restart".to_string(), 50)]
    );
}

#[test]
fn pauses_and_partitions_come_from_the_trace() {
    let r = report(
        3,
        100,
        vec![rec(0, 0, Observation::Started), rec(0, 2, holds("x", 1))],
        vec![
            fault(10, "pause", &[2], "20ms"),
            fault(30, "resume", &[2], ""),
            fault(40, "cut", &[0, 1], ""),
            fault(50, "isolate", &[2], ""),
            fault(60, "heal", &[], ""),
            fault(70, "pause", &[1], "1s"),
            fault(80, "crash", &[1], ""),
            fault(90, "partition", &[0, 1, 2], "[[n0], [n1, n2]]"),
        ],
    );
    let m = build(&r);
    let bands: Vec<_> = m
        .bars
        .iter()
        .filter(|b| b.kind == BarKind::Pause)
        .map(span)
        .collect();
    assert_eq!(
        bands,
        vec![
            (1, BarKind::Pause, 70, 80, false),
            (2, BarKind::Pause, 10, 30, false)
        ]
    );
    let net: Vec<(u64, u64, &str)> = m
        .net
        .iter()
        .map(|s| (s.start.0 / MS, s.end.0 / MS, s.label.as_str()))
        .collect();
    assert_eq!(
        net,
        vec![
            (40, 50, "cut n0,n1"),
            (50, 60, "cut n0,n1; isolate n2"),
            (90, 100, "partition [[n0], [n1, n2]]"),
        ]
    );
    assert_eq!(m.net[1].nodes, vec![n(0), n(1), n(2)]);
}

fn sent(
    ms: u64,
    id: u64,
    from: u32,
    to: u32,
    at: &[u64],
    dropped: Option<DropReason>,
) -> TraceEvent {
    TraceEvent::Sent {
        time: SimTime(ms * MS),
        id,
        from: n(from),
        to: n(to),
        msg: format!("Ping({id})"),
        deliver_at: at.iter().map(|a| SimTime(a * MS)).collect(),
        dropped,
    }
}

fn delivered(ms: u64, id: u64, from: u32, to: u32) -> TraceEvent {
    TraceEvent::Delivered {
        time: SimTime(ms * MS),
        id,
        from: n(from),
        to: n(to),
    }
}

#[test]
fn every_message_copy_gets_its_fate() {
    let r = report(
        3,
        100,
        vec![
            rec(0, 0, Observation::Started),
            rec(30, 2, Observation::Crashed),
        ],
        vec![
            sent(1, 1, 0, 1, &[3], None),
            delivered(3, 1, 0, 1),
            sent(2, 2, 0, 1, &[], Some(DropReason::Partition)),
            sent(4, 3, 0, 1, &[9, 6], None), // duplicated
            delivered(6, 3, 0, 1),
            delivered(20, 3, 0, 1), // the receiver was paused: handled late
            sent(25, 4, 0, 2, &[35], None), // arrives while n2 is down for good
            sent(95, 5, 0, 1, &[120], None), // still in flight at the end
        ],
    );
    let m = build(&r);
    let fates: Vec<(u64, Option<u64>, Fate)> = m
        .messages
        .iter()
        .map(|x| (x.id, x.arrived.map(|a| a.0 / MS), x.fate))
        .collect();
    assert_eq!(
        fates,
        vec![
            (
                1,
                Some(3),
                Fate::Delivered {
                    handled: SimTime(3 * MS)
                }
            ),
            (2, None, Fate::Dropped(DropReason::Partition)),
            (
                3,
                Some(6),
                Fate::Delivered {
                    handled: SimTime(6 * MS)
                }
            ),
            (
                3,
                Some(9),
                Fate::Delivered {
                    handled: SimTime(20 * MS)
                }
            ),
            (4, Some(35), Fate::LostDown),
            (5, Some(120), Fate::InFlight),
        ]
    );
    assert_eq!(m.messages[3].end(), SimTime(20 * MS));
}

#[test]
fn clock_offsets_are_readings_minus_true_time() {
    let mut a = rec(10, 0, Observation::Started);
    a.mono = LocalTime(a.mono.0 + 5);
    a.wall = LocalTime(a.wall.0 - 3_000_000_000);
    let mut b = rec(20, 0, Observation::Note { text: "x".into() });
    b.mono = LocalTime(b.mono.0 + 5);
    b.wall = LocalTime(b.wall.0 - 3_000_000_000);
    let r = report(2, 100, vec![a, b, rec(30, 1, Observation::Started)], vec![]);
    let m = build(&r);
    assert_eq!(
        m.clocks[0].points,
        vec![(SimTime(10 * MS), 5, -3_000_000_000)],
        "an unchanged offset is kept once"
    );
    assert!(!m.clocks[0].is_exact());
    assert!(m.clocks[1].is_exact());
}

fn violating_report() -> Report {
    let mut r = report(
        2,
        100,
        vec![
            rec(0, 0, Observation::Started),
            rec(10, 0, holds("<b>", 1)),
            rec(40, 1, holds("<b>", 2)),
        ],
        vec![
            fault(20, "pause", &[0], "50ms"),
            fault(70, "resume", &[0], ""),
            sent(41, 9, 1, 0, &[45], None),
            delivered(70, 9, 1, 0),
        ],
    );
    r.violations.push(Violation {
        checker: "mutual-exclusion",
        time: SimTime(40 * MS),
        nodes: vec![n(0), n(1)],
        message: "n0 and n1 both held `<b>` & more".into(),
        records: vec![1, 2],
    });
    r
}

#[test]
fn the_page_marks_pauses_holders_and_the_violation_with_data_attributes() {
    let html = render(
        "a <script>alert(1)</script> name",
        &Cluster::uniform("node", 2),
        &violating_report(),
    );
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(
        "data-kind=\"pause\" data-node=\"0\" data-start-ns=\"20000000\" data-end-ns=\"70000000\""
    ));
    assert!(html.contains(
        "data-kind=\"holds\" data-node=\"0\" data-start-ns=\"10000000\" data-end-ns=\"100000000\" data-record=\"1\""
    ));
    assert!(html.contains("data-kind=\"holds\" data-node=\"1\" data-start-ns=\"40000000\""));
    assert!(html.contains(
        "data-kind=\"violation\" data-checker=\"mutual-exclusion\" data-t-ns=\"40000000\""
    ));
    assert!(html.contains("data-kind=\"involved\" data-record=\"2\" data-node=\"1\""));
    assert!(html.contains("class=\"ts bar holds involved\""));
    // Text is escaped everywhere, in the markup and in the embedded data.
    assert!(!html.contains("<script>alert"));
    assert!(html.contains("a &lt;script&gt;alert(1)&lt;/script&gt; name"));
    assert!(html.contains("both held `&lt;b&gt;` &amp; more"));
    assert!(!html.contains("<b>"));
    assert_eq!(html.matches("<script").count(), 2, "the data and the code");
    // No network access: nothing is fetched.
    assert_eq!(
        html.matches("http://").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "the only URL is the SVG namespace"
    );
    assert!(!html.contains("https://") && !html.contains(" src=") && !html.contains("<link"));
}

#[test]
fn the_page_is_a_pure_function_of_the_report() {
    let c = Cluster::uniform("node", 2);
    assert_eq!(
        render("x", &c, &violating_report()),
        render("x", &c, &violating_report())
    );
}

#[test]
fn messages_are_embedded_with_send_arrival_and_handling_times() {
    let html = render("x", &Cluster::uniform("node", 2), &violating_report());
    // [sent us, arrived us, handled us, from, to, fate, text index]
    assert!(
        html.contains("\"msgs\":[[41000,45000,70000,1,0,0,0]]"),
        "{html}"
    );
    assert!(html.contains("\"texts\":[\"Ping(9)\"]"));
}

#[test]
fn ticks_are_round_numbers() {
    let t = ticks(SimTime::ZERO, SimTime(20_000 * MS), 1100.0);
    let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        labels,
        ["0s", "2s", "4s", "6s", "8s", "10s", "12s", "14s", "16s", "18s", "20s"]
    );
    let t = ticks(SimTime(1_000 * MS), SimTime(1_010 * MS), 550.0);
    assert_eq!(t[0].1, "1.000s");
    assert_eq!(t[1].1, "1.002s");
}

#[test]
fn client_operations_become_bars_and_the_one_that_cannot_be_placed_is_outlined() {
    use tenure_core::{OpOutcome, OpValue};
    let invoke = |f: &str, value| Observation::Invoke {
        f: f.into(),
        key: "counter".into(),
        value,
    };
    let complete = |f: &str, outcome, value| Observation::Complete {
        f: f.into(),
        key: "counter".into(),
        outcome,
        value,
    };
    let mut r = report(
        2,
        100,
        vec![
            rec(10, 0, invoke("read", OpValue::Nil)),
            rec(12, 0, complete("read", OpOutcome::Ok, OpValue::Int(0))),
            rec(20, 1, invoke("cas", OpValue::Pair(0, 1))),
            rec(25, 1, complete("cas", OpOutcome::Ok, OpValue::Pair(0, 1))),
            rec(30, 0, invoke("cas", OpValue::Pair(0, 1))),
            rec(35, 0, complete("cas", OpOutcome::Ok, OpValue::Pair(0, 1))),
            rec(40, 1, invoke("read", OpValue::Nil)),
            rec(50, 1, Observation::Crashed),
        ],
        vec![],
    );
    let m = model::build(&r);
    let ops: Vec<(u32, u64, u64, &str)> = m
        .bars
        .iter()
        .filter(|b| b.kind == BarKind::Op)
        .map(|b| (b.node.0, b.start.0 / MS, b.end.0 / MS, b.label.as_str()))
        .collect();
    assert_eq!(
        ops,
        vec![
            (0, 10, 12, "read → 0"),
            (0, 30, 35, "cas [0 1] ok"),
            (1, 20, 25, "cas [0 1] ok"),
            (1, 40, 50, "read → unknown"),
        ]
    );
    // Operations are bars, not point marks.
    assert!(!m
        .marks
        .iter()
        .any(|k| k.kind == "invoke" || k.kind == "complete"));
    r.violations.push(Violation {
        checker: "linearizability",
        time: SimTime(35 * MS),
        nodes: vec![n(0)],
        message: "n0's cas cannot be linearized".into(),
        records: vec![4, 5],
    });
    let html = render("ops", &Cluster::uniform("node", 2), &r);
    assert!(html.contains(
        "class=\"ts bar op involved\" data-kind=\"op\" data-node=\"0\" data-start-ns=\"30000000\""
    ));
    assert!(html.contains("class=\"ts bar op\" data-kind=\"op\" data-node=\"1\""));
}

#[test]
fn stream_mode_held_released_reset_and_disconnects() {
    let r = report(
        2,
        100,
        vec![rec(0, 0, Observation::Started)],
        vec![
            // Held at 10 ms, released at the heal (30 ms), handled at 33 ms.
            sent(10, 1, 0, 1, &[], None),
            TraceEvent::Held {
                time: SimTime(10 * MS),
                id: 1,
                from: n(0),
                to: n(1),
            },
            TraceEvent::Released {
                time: SimTime(30 * MS),
                id: 1,
                deliver_at: SimTime(33 * MS),
            },
            delivered(33, 1, 0, 1),
            // Held at 40 ms, lost when the connection resets at 60 ms.
            sent(40, 2, 0, 1, &[], None),
            TraceEvent::Lost {
                time: SimTime(60 * MS),
                id: 2,
                to: n(1),
                reason: DropReason::Reset,
            },
            // Held at 70 ms and still held at the end.
            sent(70, 3, 0, 1, &[], None),
            TraceEvent::Disconnected {
                time: SimTime(60 * MS),
                node: n(1),
                peer: n(0),
            },
        ],
    );
    let m = build(&r);
    let fates: Vec<(u64, Option<u64>, Fate)> = m
        .messages
        .iter()
        .map(|x| (x.id, x.arrived.map(|a| a.0 / MS), x.fate))
        .collect();
    assert_eq!(
        fates,
        vec![
            (
                1,
                Some(33),
                Fate::Delivered {
                    handled: SimTime(33 * MS)
                }
            ),
            (2, None, Fate::Dropped(DropReason::Reset)),
            (3, None, Fate::InFlight),
        ]
    );
    let mark = m
        .marks
        .iter()
        .find(|k| k.kind == "disconnect")
        .expect("a disconnect mark");
    assert_eq!(
        (mark.node, mark.time, mark.label.as_str()),
        (Some(n(1)), SimTime(60 * MS), "connection to n0 reset")
    );
    // The page renders (fate 5: reset).
    let html = render("stream", &Cluster::uniform("node", 2), &r);
    assert!(
        html.contains("connection to n0 reset"),
        "the mark is on the page"
    );
}

/// A Raft-like story: n0 leads term 1 and serves every 50 ms until 12 s; n0 is isolated
/// at 3 s; n1 leads term 2 from 4.4 s and serves at 4.497 s (the violation, which names
/// n0's first serve, n1's serve and n0's serve at 7 s, when the overlap ended).
fn isolated_leader_report() -> Report {
    let mut records = vec![rec(100, 0, Observation::Leader { term: 1 })];
    let mut t = 100;
    while t <= 12_000 {
        records.push(rec(t, 0, Observation::Serves { term: 1 }));
        t += 50;
    }
    records.push(rec(4_400, 1, Observation::Leader { term: 2 }));
    records.push(rec(4_497, 1, Observation::Serves { term: 2 }));
    records.push(rec(
        4_497,
        2,
        Observation::Follower {
            term: 2,
            leader: Some(n(1)),
        },
    ));
    records.sort_by_key(|r| r.time);
    let mut r = report(3, 12_000, records, vec![fault(3_000, "isolate", &[0], "")]);
    let find = |r: &Report, ms: u64, node: u32, term: u64| {
        r.history
            .records
            .iter()
            .position(|x| {
                x.time == SimTime(ms * MS)
                    && x.node == n(node)
                    && x.obs == Observation::Serves { term }
            })
            .expect("the record")
    };
    let involved = vec![
        find(&r, 100, 0, 1),
        find(&r, 4_497, 1, 2),
        find(&r, 7_000, 0, 1),
    ];
    r.violations.push(Violation {
        checker: "single-leader-at-a-time",
        time: SimTime(4_497 * MS),
        nodes: vec![n(0), n(1)],
        message: "n0 and n1 both acted as leader".into(),
        records: involved,
    });
    r
}

/// The time a narrative line starts with (after the `*` or blank marker).
fn line_time(line: &str) -> Option<SimTime> {
    let word = line.get(2..)?.split_whitespace().next()?;
    let secs = word.strip_suffix('s')?.replace('_', "");
    let (s, frac) = secs.split_once('.')?;
    let ns = s.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()? * 1_000;
    Some(SimTime(ns))
}

#[test]
fn a_narrative_starts_at_the_fault_that_disturbed_the_involved_nodes_and_ends_where_the_overlap_ends(
) {
    let r = isolated_leader_report();
    let v = &r.violations[0];
    // To n0's serve at 4.5 s, its first action after n1's: the interleaving complete.
    assert_eq!(
        narrative::window(&r, v),
        narrative::Window {
            start: SimTime(3_000 * MS),
            end: SimTime(4_500 * MS)
        }
    );
    let lines = narrative::lines(&r, v, 10);
    let text = lines.join("\n");
    assert!(
        lines.iter().any(|l| l.contains("fault isolate n0")),
        "{text}"
    );
    for l in &lines {
        let t = line_time(l).unwrap_or_else(|| panic!("a time on `{l}`:\n{text}"));
        assert!(
            t <= SimTime(4_500 * MS),
            "`{l}` is after the interleaving was complete:\n{text}"
        );
    }
    // The involved serve long before the window is there, marked; the one at 7 s, after
    // the interleaving was complete, is not.
    assert!(
        lines[0].starts_with("* 0.100_000s  n0   serves term=1"),
        "{text}"
    );
    assert!(!text.contains("7.000_000s"), "{text}");
    // n0's serves from the isolation to its first after n1's are one line.
    assert!(
        lines.contains(&"  3.000_000s  n0   serves term=1  x31 to 4.500_000s".to_string()),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.contains("n1   leader term=2")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("* 4.497_000s  n1   serves term=2")),
        "{text}"
    );
    assert_eq!(lines.len(), 6, "{text}");
}

#[test]
fn without_a_fault_the_narrative_starts_at_the_first_involved_record() {
    let mut r = isolated_leader_report();
    r.trace = Some(Vec::new());
    let v = r.violations[0].clone();
    assert_eq!(narrative::window(&r, &v).start, SimTime(100 * MS));
    // n0's serves from 0.15 s to 4.5 s are one line; its first serve, involved, is not.
    let lines = narrative::lines(&r, &v, 10);
    let text = lines.join("\n");
    assert!(
        lines.contains(&"  0.150_000s  n0   serves term=1  x88 to 4.500_000s".to_string()),
        "{text}"
    );
}

#[test]
fn a_story_starts_after_the_last_calm_moment_and_a_fault_on_a_node_breaks_its_run() {
    // n0 serves every 100 ms (not while paused, 0.6-0.8 s); n1 is isolated from 1 s on;
    // n0's clock jumps at 1.7 s; a violation at 2 s names n0 and n1.
    let mut records: Vec<Record> = (0..20)
        .filter(|k| !(6..8).contains(k))
        .map(|k| rec(k * 100 + 5, 0, Observation::Serves { term: 1 }))
        .collect();
    records.push(rec(2_000, 1, Observation::Serves { term: 2 }));
    let n_records = records.len();
    let mut r = report(
        2,
        3_000,
        records,
        vec![
            fault(300, "clock-jump", &[1], "+1s"),
            fault(500, "heal", &[], ""),
            fault(600, "pause", &[0], "200ms"),
            fault(800, "resume", &[0], ""),
            fault(1_000, "isolate", &[1], ""),
            fault(1_700, "clock-jump", &[0], "+1s"),
        ],
    );
    r.violations.push(Violation {
        checker: "single-leader-at-a-time",
        time: SimTime(2_000 * MS),
        nodes: vec![n(0), n(1)],
        message: "two leaders".into(),
        records: vec![n_records - 1],
    });
    let v = r.violations[0].clone();
    // Calm from the resume at 0.8 s to the isolation at 1 s; the jump at 1.7 s is part
    // of the stretch the isolation began.
    assert_eq!(narrative::window(&r, &v).start, SimTime(1_000 * MS));
    let lines = narrative::lines(&r, &v, 10);
    let text = lines.join("\n");
    assert_eq!(
        lines,
        vec![
            "  1.000_000s  fault isolate n1",
            "  1.005_000s  n0   serves term=1  x7 to 1.605_000s",
            "  1.700_000s  fault clock-jump n0 +1s",
            "  1.705_000s  n0   serves term=1  x3 to 1.905_000s",
            "* 2.000_000s  n1   serves term=2",
        ],
        "{text}"
    );
}

#[test]
fn past_its_context_a_story_keeps_its_first_and_last_plain_lines() {
    // Five nodes take turns leading (hand-overs, never collapsed) after a pause of n0.
    let mut records: Vec<Record> = (0..40)
        .map(|k| {
            rec(
                1_000 + k * 10,
                (k % 4 + 1) as u32,
                Observation::Leader { term: k },
            )
        })
        .collect();
    records.push(rec(2_000, 0, Observation::Serves { term: 0 }));
    let last = records.len() - 1;
    let mut r = report(5, 3_000, records, vec![fault(500, "pause", &[0], "1s")]);
    r.violations.push(Violation {
        checker: "single-leader-at-a-time",
        time: SimTime(2_000 * MS),
        nodes: vec![n(0)],
        message: "two leaders".into(),
        records: vec![last],
    });
    let v = r.violations[0].clone();
    let lines = narrative::lines(&r, &v, 9);
    let text = lines.join("\n");
    assert_eq!(lines.len(), 1 + 3 + 1 + 6 + 1, "{text}");
    assert_eq!(lines[0], "  0.500_000s  fault pause n0 1s", "{text}");
    assert_eq!(lines[1], "  1.000_000s  n1   leader term=0", "{text}");
    assert_eq!(
        lines[4], "  ... 31 more observations (not involved)",
        "{text}"
    );
    assert_eq!(lines[10], "  1.390_000s  n4   leader term=39", "{text}");
    assert_eq!(lines[11], "* 2.000_000s  n0   serves term=0", "{text}");
}

fn story_report(violation: bool) -> Report {
    let mut r = report(
        2,
        10_000,
        vec![
            rec(1_000, 0, holds("lock", 1)),
            rec(4_000, 1, holds("lock", 2)),
        ],
        vec![
            fault(3_000, "pause", &[0], "5s"),
            fault(8_000, "resume", &[0], ""),
        ],
    );
    if violation {
        r.violations.push(Violation {
            checker: "mutual-exclusion-belief",
            time: SimTime(4_000 * MS),
            nodes: vec![n(0), n(1)],
            message: "n0 and n1 both believed they held `lock`".into(),
            records: vec![0, 1],
        });
    }
    r
}

#[test]
fn a_violating_run_opens_zoomed_on_its_story_and_a_passing_run_on_the_whole_run() {
    let c = Cluster::uniform("node", 2);
    // The story is 3 s (the pause) to 4 s (the violation); a fifth of it on each side.
    let failing = story_report(true);
    assert_eq!(
        build(&failing).view,
        (SimTime(2_800 * MS), SimTime(4_200 * MS))
    );
    let html = render("x", &c, &failing);
    assert!(
        html.contains("data-view-start-ns=\"2800000000\" data-view-end-ns=\"4200000000\""),
        "the svg carries the view"
    );
    assert!(
        html.contains("\"view\":[2800000000,4200000000]"),
        "and the script's data"
    );
    // The whole run is one click away.
    assert!(html.contains("data-act=\"fit\">whole run</button>"));

    let passing = story_report(false);
    assert_eq!(build(&passing).view, (SimTime::ZERO, SimTime(10_000 * MS)));
    let html = render("x", &c, &passing);
    assert!(html.contains("data-view-start-ns=\"0\" data-view-end-ns=\"10000000000\""));
    assert!(html.contains("\"view\":[0,10000000000]"));
}

#[test]
fn a_burst_at_one_instant_is_one_line_and_other_resources_are_left_out() {
    let owns = |r: &str| Observation::Owns {
        resource: r.into(),
        epoch: 2,
    };
    let records = vec![
        rec(500, 5, holds("r42", 0)),
        rec(600, 6, holds("r1", 0)),
        rec(
            2_000,
            3,
            Observation::Note {
                text: "n3 joins".into(),
            },
        ),
        rec(2_000, 3, owns("r1")),
        rec(2_000, 3, owns("r3")),
        rec(2_000, 3, owns("r4")),
        rec(2_000, 3, owns("r5")),
    ];
    let mut r = report(7, 3_000, records, vec![fault(400, "isolate", &[3], "")]);
    r.violations.push(Violation {
        checker: "single-owner",
        time: SimTime(2_000 * MS),
        nodes: vec![n(3)],
        message: "two owners of r1".into(),
        records: vec![3],
    });
    let v = r.violations[0].clone();
    let lines = narrative::lines(&r, &v, 10);
    assert_eq!(
        lines,
        vec![
            "  0.400_000s  fault isolate n3",
            "  0.600_000s  n6   holds resource=r1 token=0",
            "  2.000_000s  n3   note text=n3 joins",
            "* 2.000_000s  n3   owns epoch=2 resource=r1",
            "  2.000_000s  n3   owns epoch=2 resource=r3  (+2 more owns)",
        ]
    );
}

/// Issue 27: a crash is not drawn as a dropped message's red ×; the legend names the
/// clock marks and sparklines; a long clock label is squeezed into the label column.
#[test]
fn crashes_clocks_and_long_clock_labels_are_told_apart_and_fit() {
    let mut a = rec(10, 0, Observation::Started);
    a.mono = LocalTime(a.mono.0 + 1_234_567);
    a.wall = LocalTime(a.wall.0 - 3_456_789_012);
    let mut b = rec(50, 0, Observation::Note { text: "x".into() });
    b.mono = LocalTime(b.mono.0 + 9_876_543);
    b.wall = LocalTime(b.wall.0 + 7_654_321_098);
    let r = report(
        2,
        100,
        vec![
            a,
            rec(30, 1, Observation::Started),
            rec(40, 1, Observation::Crashed),
            b,
        ],
        vec![fault(40, "crash", &[1], "")],
    );
    let html = render("x", &Cluster::uniform("node", 2), &r);
    let crash = html
        .split("data-kind=\"crash\"")
        .nth(1)
        .expect("a crash mark");
    let crash = &crash[..crash.find("</g>").unwrap()];
    assert!(crash.contains("class=\"crash\""), "{crash}");
    assert!(
        !crash.contains("M-6,-6L6,6"),
        "a crash drawn as an ×: {crash}"
    );
    let legend = &html[html.find("class=\"legend\"").unwrap()..];
    assert!(legend.contains("▼</b>crash"), "{legend}");
    assert!(legend.contains("×</b>dropped / lost"), "{legend}");
    assert!(legend.contains("clock jump"), "{legend}");
    assert!(legend.contains("sw spark"), "{legend}");
    let label = html
        .lines()
        .find(|l| l.contains("<text class=\"clock\"") && l.contains("wall"))
        .expect("node 0's clock label");
    assert!(
        label.contains("textLength="),
        "a long label is fitted: {label}"
    );
}

#[test]
fn the_story_shows_the_clocks_of_the_involved_nodes_that_are_off() {
    let mut r = isolated_leader_report();
    // n0's clock runs 30% slow from a 250 ms offset; n1's is exact.
    for rec in r.history.records.iter_mut().filter(|x| x.node == n(0)) {
        let t = rec.time.as_nanos() as f64;
        let local = LocalTime((250.0 * MS as f64 + 0.7 * t) as i64);
        rec.mono = local;
        rec.wall = local;
    }
    let v = r.violations[0].clone();
    let lines = narrative::lines(&r, &v, 10);
    let text = lines.join("\n");
    let clocks: Vec<&String> = lines.iter().filter(|l| l.contains("clock n")).collect();
    assert_eq!(clocks.len(), 1, "only n0's clock is off:\n{text}");
    assert_eq!(
        clocks[0],
        "  clock n0: monotonic -1100ms off true time, running 30.0% slow (at 4.500_000s)",
        "{text}"
    );
    // Exact clocks say nothing.
    let exact = isolated_leader_report();
    let lines = narrative::lines(&exact, &exact.violations[0], 10);
    assert!(!lines.iter().any(|l| l.contains("clock n")), "{lines:?}");
}
