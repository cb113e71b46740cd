//! How results are shown: one summary line, the violation with the events that led to
//! it, and the exact command that replays the run.

use tenure_check::Violation;
use tenure_core::{Observation, Record};
use tenure_scenario::{Expectation, Scenario};
use tenure_sim::{Report, TraceEvent};

/// `raft/forget-vote`
pub fn protocol_label(s: &Scenario) -> String {
    format!("{}/{}", s.protocol.name, s.protocol.variant)
}

pub fn expectation_text(e: &Expectation) -> String {
    match e {
        Expectation::Pass => "pass".to_string(),
        Expectation::Violation { checker } => format!("violation of {checker}"),
    }
}

pub fn replay_command(file: &str, seed: u64) -> String {
    format!("tenure run {file} --seed {seed}")
}

/// `leader term=3`, `holds resource=lock token=7`.
pub fn describe(obs: &Observation) -> String {
    let mut out = obs.kind().to_string();
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(obs) {
        for (k, v) in map {
            if k == "kind" {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => "none".to_string(),
                other => other.to_string(),
            };
            out.push_str(&format!(" {k}={v}"));
        }
    }
    out
}

fn record_line(r: &Record, marked: bool) -> String {
    format!(
        "{} {}  {:<4} {}",
        if marked { "*" } else { " " },
        r.time,
        r.node.to_string(),
        describe(&r.obs)
    )
}

/// The observations and faults that led to `v`: the `context` records before the last
/// record it names, the records it names (marked, however old), and the faults in
/// that window, in true-time order.
pub fn narrative(report: &Report, v: &Violation, context: usize) -> Vec<String> {
    let records = &report.history.records;
    if records.is_empty() {
        return Vec::new();
    }
    let last = v
        .records
        .last()
        .copied()
        .unwrap_or(records.len() - 1)
        .min(records.len() - 1);
    let from = last.saturating_sub(context);
    let mut lines: Vec<(tenure_core::SimTime, u8, String)> = Vec::new();
    for &i in v.records.iter().filter(|i| **i < from) {
        lines.push((records[i].time, 1, record_line(&records[i], true)));
    }
    for (i, r) in records.iter().enumerate().take(last + 1).skip(from) {
        lines.push((r.time, 1, record_line(r, v.records.contains(&i))));
    }
    if let Some(trace) = &report.trace {
        let start = records[from].time;
        let end = records[last].time.max(v.time);
        for e in trace {
            if let TraceEvent::Fault {
                time,
                kind,
                nodes,
                detail,
            } = e
            {
                if *time >= start && *time <= end {
                    let who: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
                    lines.push((
                        *time,
                        0,
                        format!("  {}  fault {kind} {} {detail}", time, who.join(",")),
                    ));
                }
            }
        }
    }
    lines.sort_by_key(|l| (l.0, l.1));
    lines.into_iter().map(|(_, _, l)| l).collect()
}

/// The JSON report of one run.
pub fn json_report(scenario: &Scenario, file: &str, report: &Report) -> serde_json::Value {
    let expectation = match &scenario.expect {
        Expectation::Pass => serde_json::json!("pass"),
        Expectation::Violation { checker } => serde_json::json!({ "violation": checker }),
    };
    serde_json::json!({
        "scenario": file,
        "name": scenario.name,
        "protocol": scenario.protocol.name,
        "variant": scenario.protocol.variant,
        "seed": report.seed,
        "outcome": if report.passed() { "pass" } else { "violation" },
        "checks": scenario.checks.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "violations": report.violations,
        "expectation": expectation,
        "expectation_met": report.expectation_met,
        "simulated_ns": report.history.info.end.as_nanos(),
        "stats": report.stats,
        "replay": replay_command(file, report.seed),
    })
}
