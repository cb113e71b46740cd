//! How results are shown: one summary line, the violation with the events that led to
//! it, and the exact command that replays the run.

use tenure_check::verdict::{Overall, Verdict};
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
/// from when the involved nodes were last calm until the violation was complete (the
/// stale action that made an overlap); involved records marked `*`; a routine
/// observation repeated by one node is one line with a count; at most `context` lines
/// of records that are not involved; then the clocks of the involved nodes that are off.
pub fn narrative(report: &Report, v: &Violation, context: usize) -> Vec<String> {
    tenure_timeline::narrative::lines(report, v, context)
}

/// What each check judged, a line each, with its verdict (pass, FAIL, or not judged
/// and why), the parameters it ran with and where each came from (the protocol's
/// promise, with its derivation, or the scenario), so no tolerance or bound is
/// unprinted.
pub fn judged_lines(prepared: &tenure_sim::Prepared, report: &Report) -> Vec<String> {
    let s = &prepared.scenario;
    let mut out = vec![if prepared.checks_from_promises {
        format!(
            "judged (the scenario lists no checks: {}'s promises):",
            s.protocol.name
        )
    } else {
        "judged:".to_string()
    }];
    for (spec, v) in s.checks.iter().zip(&report.verdicts) {
        let promise = prepared.promises.iter().find(|p| p.check == spec.name);
        let verdict = match &v.verdict {
            Verdict::Pass => "pass".to_string(),
            Verdict::Fail(_) => "FAIL".to_string(),
            Verdict::NotJudged(n) => format!(
                "NOT JUDGED ({}{})",
                n.reason,
                if s.expect_vacuous.contains(&v.check) {
                    ", as the scenario expects"
                } else {
                    ""
                }
            ),
        };
        let mut line = format!("  {}: {verdict}: {}", v.check, v.judged.summary);
        let shown = params_text(&s.protocol.name, &spec.params, promise);
        if !shown.is_empty() {
            line += &format!(" [{shown}]");
        }
        out.push(line);
    }
    out
}

/// The checks not judged, a line each with the reason and what the run lacked:
/// `lock-liveness (too short): no wait's deadline fell inside the run ...`.
pub fn not_judged_lines(report: &Report) -> Vec<String> {
    report
        .not_judged()
        .filter_map(|v| {
            let n = v.verdict.not_judged()?;
            Some(format!("{} ({}): {}", v.check, n.reason, n.why))
        })
        .collect()
}

/// The declared assumptions the scenario goes beyond, a line each (empty when within).
pub fn beyond_lines(report: &Report) -> Vec<String> {
    report.beyond.iter().map(|b| b.to_string()).collect()
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

/// The checks not judged that the scenario does not expect, each as a message naming the
/// reason and what the run lacked.
pub fn unexpected_not_judged(prepared: &tenure_sim::Prepared, report: &Report) -> Vec<String> {
    let s = &prepared.scenario;
    report
        .not_judged()
        .filter(|v| !s.expect_vacuous.contains(&v.check))
        .filter_map(|v| {
            let n = v.verdict.not_judged()?;
            Some(format!("NOT JUDGED: {} ({}): {}", v.check, n.reason, n.why))
        })
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
        "outcome": outcome_key(report.overall()),
        "checks": scenario.checks.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        "verdicts": report.verdicts.iter().map(|v| v.to_json()).collect::<Vec<_>>(),
        "violations": report.violations,
        "judged": report.judged,
        "vacuous": report.vacuous().map(|j| j.check.clone()).collect::<Vec<_>>(),
        "not_judged": report.not_judged().map(|v| v.check.clone()).collect::<Vec<_>>(),
        "beyond_assumptions": beyond_lines(report),
        "expectation": expectation,
        "expectation_met": report.expectation_met,
        "simulated_ns": report.history.info.end.as_nanos(),
        "stats": report.stats,
        "replay": replay_command(file, report.seed),
    })
}

/// A run's overall verdict as JSON's `outcome` spells it: `pass`, `violation` (a check
/// failed) or `not-judged`.
pub fn outcome_key(overall: Overall) -> &'static str {
    match overall {
        Overall::Pass => "pass",
        Overall::Fail => "violation",
        Overall::NotJudged => "not-judged",
    }
}

/// The exit a run's verdict gives: 0 every check judged and passed, 1 a check failed, 5
/// nothing failed but a check was not judged (or there was none).
pub fn outcome_of(overall: Overall) -> crate::Outcome {
    match overall {
        Overall::Pass => crate::Outcome::Passed,
        Overall::Fail => crate::Outcome::CheckFailed,
        Overall::NotJudged => crate::Outcome::NotJudged,
    }
}
