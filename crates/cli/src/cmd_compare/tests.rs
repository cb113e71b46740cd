use super::*;
use tenure_core::{Cluster, History, LocalTime, NodeId, Record, RunInfo};
use tenure_sim::Stats;

const MS: u64 = 1_000_000;

fn rec(ms: u64, node: u32, obs: Observation) -> Record {
    Record::new(
        SimTime(ms * MS),
        NodeId(node),
        LocalTime((ms * MS) as i64),
        LocalTime((ms * MS) as i64),
        obs,
    )
}

fn report(end_ms: u64, records: Vec<Record>) -> Report {
    Report {
        seed: 1,
        violations: Vec::new(),
        history: History {
            info: RunInfo {
                cluster: Cluster::uniform("node", 3),
                seed: 1,
                end: SimTime(end_ms * MS),
                calm_from: SimTime::ZERO,
            },
            records,
        },
        trace: None,
        stats: Stats::default(),
        stopped_early: false,
        judged: Vec::new(),
        expectation_met: true,
        verdicts: Vec::new(),
        beyond: Vec::new(),
    }
}

#[test]
fn variants_take_flags_and_values() {
    let a = parse_variant("correct+pre_vote+check_quorum").unwrap();
    assert_eq!(a.variant.as_deref(), Some("correct"));
    assert_eq!(
        a.params,
        vec![
            ("pre_vote".to_string(), serde_json::json!(true)),
            ("check_quorum".to_string(), serde_json::json!(true)),
        ]
    );
    let b = parse_variant("+ttl=\"3s\"+retries=4+mode=fast").unwrap();
    assert_eq!(b.variant, None);
    assert_eq!(
        b.params,
        vec![
            ("ttl".to_string(), serde_json::json!("3s")),
            ("retries".to_string(), serde_json::json!(4)),
            ("mode".to_string(), serde_json::json!("fast")),
        ]
    );
    assert!(parse_variant("correct+")
        .unwrap_err()
        .contains("name=value"));
    let p = parse_params("pre_vote=true; check_quorum=true").unwrap();
    assert_eq!(p.variant, None);
    assert_eq!(p.params.len(), 2);
    assert_eq!(parse_params("").unwrap().label, "as written");
}

#[test]
fn alternatives_change_the_variant_and_merge_parameters() {
    let s = tenure_scenario::parse(
        "duration = \"1s\"\n[protocol]\nname = \"raft\"\n[protocol.params]\npre_vote = false\n",
        "x.toml",
    )
    .unwrap();
    let a = apply(
        &s,
        &parse_variant("no-step-down+pre_vote+check_quorum").unwrap(),
    );
    assert_eq!(a.protocol.variant, "no-step-down");
    assert_eq!(
        a.protocol.params,
        serde_json::json!({"pre_vote": true, "check_quorum": true})
    );
    assert_eq!(apply(&s, &parse_params("").unwrap()), s);
}

#[test]
fn gaps_run_from_the_last_believer_to_the_next() {
    let r = report(
        100,
        vec![
            rec(10, 0, Observation::Leader { term: 1 }),
            rec(20, 1, Observation::Leader { term: 2 }), // overlap: no gap
            rec(
                25,
                0,
                Observation::Follower {
                    term: 2,
                    leader: None,
                },
            ),
            rec(30, 1, Observation::Crashed), // nobody leads from 30
            rec(45, 2, Observation::Leader { term: 3 }),
            rec(90, 2, Observation::Candidate { term: 4 }), // never regained
        ],
    );
    let g = gaps(&r, Belief::Leader);
    assert_eq!(
        g.gaps,
        vec![
            (SimTime(30 * MS), Some(SimTime(45 * MS))),
            (SimTime(90 * MS), None)
        ]
    );
    assert_eq!(g.covered_ns, (20 + 45) * MS);
    assert_eq!(g.end_ns, 100 * MS);
}

#[test]
fn holders_count_per_resource_and_hold_to_the_end() {
    let holds = |r: &str| Observation::Holds {
        resource: r.into(),
        token: 0,
    };
    let r = report(
        100,
        vec![
            rec(10, 0, holds("a")),
            rec(20, 0, holds("b")),
            rec(
                30,
                0,
                Observation::Releases {
                    resource: "a".into(),
                },
            ),
            rec(
                40,
                0,
                Observation::Releases {
                    resource: "b".into(),
                },
            ),
            rec(40, 1, holds("a")),           // a handover at one instant
            rec(50, 1, Observation::Started), // a fresh process believes nothing
            rec(70, 2, holds("a")),
        ],
    );
    let g = gaps(&r, Belief::Holder);
    assert_eq!(
        g.gaps,
        vec![
            (SimTime(40 * MS), Some(SimTime(40 * MS))),
            (SimTime(50 * MS), Some(SimTime(70 * MS)))
        ]
    );
    assert_eq!(g.covered_ns, (40 + 30) * MS);
    assert_eq!(gaps(&r, Belief::Leader).gaps, vec![]);
}

#[test]
fn percentiles_are_nearest_rank() {
    let v: Vec<u64> = (1..=100).collect();
    assert_eq!(percentile(&v, 50.0), Some(50));
    assert_eq!(percentile(&v, 99.0), Some(99));
    assert_eq!(percentile(&[7], 99.0), Some(7));
    assert_eq!(percentile(&[], 50.0), None);
}

#[test]
fn tables_align_and_escape() {
    let head = vec!["variant".to_string(), "n".to_string()];
    let body = vec![
        vec!["a|b".to_string(), "1".to_string()],
        vec!["long name".to_string(), "100".to_string()],
    ];
    assert_eq!(
        plain(&head, &body),
        "variant      n\na|b          1\nlong name  100\n"
    );
    assert_eq!(
        markdown(&head, &body),
        "| variant | n |\n|---|---:|\n| a\\|b | 1 |\n| long name | 100 |\n"
    );
}
