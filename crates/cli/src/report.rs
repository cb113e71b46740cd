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
    // Retries are noise in a story of how a violation came about (a waiting client
    // may retry hundreds of times): they are left out unless involved.
    let shown = |i: usize| {
        v.records.contains(&i) || !matches!(records[i].obs, tenure_core::Observation::Retry { .. })
    };
    let from = (0..=last)
        .rev()
        .filter(|&i| shown(i))
        .nth(context)
        .unwrap_or(0);
    let mut lines: Vec<(tenure_core::SimTime, u8, String)> = Vec::new();
    for &i in v.records.iter().filter(|i| **i < from) {
        lines.push((records[i].time, 1, record_line(&records[i], true)));
    }
    for (i, r) in records.iter().enumerate().take(last + 1).skip(from) {
        if shown(i) {
            lines.push((r.time, 1, record_line(r, v.records.contains(&i))));
        }
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
                        format!("  {}  fault {kind} {} {detail}", time, who.join(","))
                            .trim_end()
                            .to_string(),
                    ));
                }
            }
        }
    }
    if let Some(trace) = &report.trace {
        let start = records[from].time;
        let end = records[last].time.max(v.time);
        if let Some(line) = drops_line(trace, start, end) {
            lines.push(line);
        }
    }
    lines.sort_by_key(|l| (l.0, l.1));
    lines.into_iter().map(|(_, _, l)| l).collect()
}

/// One line summing up the messages dropped (partition, loss) or lost (receiver down)
/// in `[start, end]`, at the time of the first: who to whom, most frequent links first.
fn drops_line(
    trace: &[TraceEvent],
    start: tenure_core::SimTime,
    end: tenure_core::SimTime,
) -> Option<(tenure_core::SimTime, u8, String)> {
    use std::collections::BTreeMap;
    let mut senders: BTreeMap<u64, tenure_core::NodeId> = BTreeMap::new();
    // reason -> (from, to) -> count
    let mut by: BTreeMap<&'static str, BTreeMap<(String, String), u64>> = BTreeMap::new();
    let mut first = None;
    let mut total = 0u64;
    for e in trace {
        let (time, from, to, reason) = match e {
            TraceEvent::Sent {
                id,
                from,
                to,
                time,
                dropped,
                ..
            } => {
                senders.insert(*id, *from);
                match dropped {
                    Some(r) => (*time, Some(*from), *to, drop_reason(*r)),
                    None => continue,
                }
            }
            TraceEvent::Lost {
                time,
                id,
                to,
                reason,
            } => (*time, senders.get(id).copied(), *to, drop_reason(*reason)),
            _ => continue,
        };
        if time < start || time > end {
            continue;
        }
        first.get_or_insert(time);
        total += 1;
        let from = from.map_or("?".to_string(), |f| f.to_string());
        *by.entry(reason)
            .or_default()
            .entry((from, to.to_string()))
            .or_default() += 1;
    }
    let first = first?;
    let parts: Vec<String> = by
        .iter()
        .map(|(reason, links)| {
            let mut links: Vec<(&(String, String), &u64)> = links.iter().collect();
            links.sort_by_key(|(link, k)| (std::cmp::Reverse(**k), (*link).clone()));
            let n: u64 = links.iter().map(|(_, k)| **k).sum();
            let mut shown: Vec<String> = links
                .iter()
                .take(3)
                .map(|((f, t), k)| format!("{f}->{t} x{k}"))
                .collect();
            if links.len() > 3 {
                shown.push("...".to_string());
            }
            format!("{n} by {reason} ({})", shown.join(", "))
        })
        .collect();
    Some((
        first,
        0,
        format!(
            "  {first}  dropped {total} message{} up to {end}: {}",
            if total == 1 { "" } else { "s" },
            parts.join("; ")
        ),
    ))
}

fn drop_reason(r: tenure_sim::DropReason) -> &'static str {
    match r {
        tenure_sim::DropReason::Partition => "partition",
        tenure_sim::DropReason::Loss => "loss",
        tenure_sim::DropReason::Down => "receiver down",
        tenure_sim::DropReason::Reset => "connection reset",
    }
}

/// What each check judged, a line each, with the parameters it ran with and where each
/// came from (the protocol's promise, with its derivation, or the scenario), so no
/// tolerance or bound is unprinted.
pub fn judged_lines(prepared: &tenure_sim::Prepared, report: &Report) -> Vec<String> {
    let s = &prepared.scenario;
    let mut out = vec!["  judged:".to_string()];
    for (spec, j) in s.checks.iter().zip(&report.judged) {
        let promise = prepared.promises.iter().find(|p| p.check == spec.name);
        let mut line = format!("    {}: {}", j.check, j.summary);
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
        "  durability hints (not failures; {} sent before a sync):",
        crate::plural(report.stats.durability_hint_sends, "message", "messages")
    )];
    out.extend(hints.iter().map(|h| format!("    {h}")));
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
