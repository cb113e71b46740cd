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
    format!("{} run {file} --seed {seed}", crate::program())
}

/// The observations and faults that led to `v` (see [`tenure_timeline::narrative`]):
/// from when the involved nodes were last calm up to the violation, never after it;
/// involved records marked `*`; a routine observation repeated by one node is one line
/// with a count; at most `context` lines of records that are not involved.
pub fn narrative(report: &Report, v: &Violation, context: usize) -> Vec<String> {
    tenure_timeline::narrative::lines(report, v, context)
}

/// What each check judged, a line each, with the parameters it ran with and where each
/// came from (the protocol's promise, with its derivation, or the scenario), so no
/// tolerance or bound is unprinted.
pub fn judged_lines(prepared: &tenure_sim::Prepared, report: &Report) -> Vec<String> {
    let s = &prepared.scenario;
    let mut out = vec!["judged:".to_string()];
    for (spec, j) in s.checks.iter().zip(&report.judged) {
        let promise = prepared.promises.iter().find(|p| p.check == spec.name);
        let mut line = format!("  {}: {}", j.check, j.summary);
        let shown = params_text(&s.protocol.name, &spec.params, promise);
        if !shown.is_empty() {
            line += &format!(" [{shown}]");
        }
        if j.vacuous.is_some() {
            line += if s.expect_vacuous.contains(&j.check) {
                " (VACUOUS, as the scenario expects)"
            } else {
                " (VACUOUS: judged nothing)"
            };
        }
        out.push(line);
    }
    out
}

/// A check's parameters in words, each with where it came from: `within 7.2s, declared
/// by raft = (10 x ...); max_overlap 20ms, set by the scenario`.
pub fn params_text(
    protocol: &str,
    own: &serde_json::Value,
    promise: Option<&tenure_core::Promise>,
) -> String {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parts = Vec::new();
    let own = own.as_object();
    let promised = promise.and_then(|p| p.params.as_object());
    if let Some(promised) = promised {
        let bound = promised.get("bound").map(text);
        for (k, v) in promised {
            if k == "bound" || own.is_some_and(|o| o.contains_key(k)) {
                continue;
            }
            let derivation = match &bound {
                Some(b) if k == "within" || k == "max_overlap" => format!(" = {b}"),
                _ => String::new(),
            };
            parts.push(format!(
                "{k} {}, declared by {protocol}{derivation}",
                text(v)
            ));
        }
    }
    if let Some(own) = own {
        for (k, v) in own {
            parts.push(format!("{k} {}, set by the scenario", text(v)));
        }
    }
    parts.join("; ")
}

/// The run's durability hints (not failures), a line each, under a heading; empty if
/// none.
pub fn hint_lines(report: &Report) -> Vec<String> {
    let hints = &report.stats.durability_hints;
    if hints.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "durability hints (not failures; {} sent before a sync):",
        crate::plural(report.stats.durability_hint_sends, "message", "messages")
    )];
    out.extend(hints.iter().map(|h| format!("  {h}")));
    out
}

/// The vacuous checks the scenario does not expect, each as a message naming the
/// missing observation and the fix.
pub fn unexpected_vacuity(prepared: &tenure_sim::Prepared, report: &Report) -> Vec<String> {
    let s = &prepared.scenario;
    report
        .vacuous()
        .filter(|j| !s.expect_vacuous.contains(&j.check))
        .filter_map(|j| j.vacuous_message(Some(&s.protocol.name)))
        .map(|m| format!("VACUOUS: {m}"))
        .collect()
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
        "judged": report.judged,
        "vacuous": report.vacuous().map(|j| j.check.clone()).collect::<Vec<_>>(),
        "expectation": expectation,
        "expectation_met": report.expectation_met,
        "simulated_ns": report.history.info.end.as_nanos(),
        "stats": report.stats,
        "replay": replay_command(file, report.seed),
    })
}
