//! How results are shown: one summary line, the violation with the events that led to
//! it, and the exact command that replays the run.

use tenure_check::Violation;
use tenure_scenario::{Expectation, Scenario};
use tenure_sim::Report;

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

/// The observations and faults that led to `v` (see [`tenure_timeline::narrative`]):
/// from when the involved nodes were last calm up to the violation, never after it;
/// involved records marked `*`; a routine observation repeated by one node is one line
/// with a count; at most `context` lines of records that are not involved.
pub fn narrative(report: &Report, v: &Violation, context: usize) -> Vec<String> {
    tenure_timeline::narrative::lines(report, v, context)
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
