//! `tenure compare --log`: what a replicated log costs, for putting two log protocols
//! (e.g. `raft-log` and `multi-paxos`) side by side on the same seeds and faults, from
//! the observations alone:
//!
//! * **decisions**: the log indices (slots) applied by at least one node, per run;
//! * **messages per decision**: every message the run sent (servers' and clients',
//!   heartbeats included) over its decisions;
//! * **recovery from a leader crash**: from the crash (or power loss) of a node that
//!   believed it led to the first application, anywhere, of an index above every index
//!   applied before the crash (p50 and p99 over every such crash; crashes after which
//!   nothing new was decided are counted apart);
//! * **availability**: the fraction of the clients' invoked operations that completed
//!   `ok` (an operation whose attempts all went unanswered, or still open at the end,
//!   did not).

use super::{percentile, Row};
use serde::Serialize;
use std::collections::BTreeSet;
use tenure_core::{Observation, OpOutcome};
use tenure_sim::Report;

/// A row's log costs, over all its seeds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LogCost {
    pub decisions: u64,
    pub messages: u64,
    pub leader_crashes: u64,
    /// Leader crashes after which no new index was applied before the run ended.
    pub unrecovered: u64,
    pub recovery_p50_ns: Option<u64>,
    pub recovery_p99_ns: Option<u64>,
    pub invoked: u64,
    pub completed_ok: u64,
}

impl LogCost {
    pub fn messages_per_decision(&self) -> Option<f64> {
        (self.decisions > 0).then(|| self.messages as f64 / self.decisions as f64)
    }
    pub fn availability(&self) -> Option<f64> {
        (self.invoked > 0).then(|| self.completed_ok as f64 / self.invoked as f64)
    }
}

/// The log costs of `reports` (one row's seeds).
pub fn of(reports: &[Report]) -> LogCost {
    let mut out = LogCost::default();
    let mut recoveries = Vec::new();
    for r in reports {
        out.messages += r.stats.messages_sent;
        let n = r.history.info.cluster.size();
        let mut leads = vec![false; n];
        let mut applied: BTreeSet<u64> = BTreeSet::new();
        let mut highest = 0u64;
        // Crashes of leaders not yet followed by a new decision: (time, highest index).
        let mut waiting: Vec<(u64, u64)> = Vec::new();
        for rec in &r.history.records {
            let i = rec.node.index();
            match &rec.obs {
                Observation::Crashed => {
                    if leads[i] {
                        out.leader_crashes += 1;
                        waiting.push((rec.time.as_nanos(), highest));
                    }
                    leads[i] = false;
                }
                Observation::Started => leads[i] = false,
                Observation::Leader { .. } => leads[i] = true,
                Observation::Follower { .. } | Observation::Candidate { .. } => leads[i] = false,
                Observation::LogApply { index, .. } => {
                    applied.insert(*index);
                    let t = rec.time.as_nanos();
                    waiting.retain(|&(crash, before)| {
                        if *index > before {
                            recoveries.push(t - crash);
                            false
                        } else {
                            true
                        }
                    });
                    highest = highest.max(*index);
                }
                Observation::Invoke { .. } => out.invoked += 1,
                Observation::Complete {
                    outcome: OpOutcome::Ok,
                    ..
                } => out.completed_ok += 1,
                _ => {}
            }
        }
        out.unrecovered += waiting.len() as u64;
        out.decisions += applied.len() as u64;
    }
    recoveries.sort_unstable();
    out.recovery_p50_ns = percentile(&recoveries, 50.0);
    out.recovery_p99_ns = percentile(&recoveries, 99.0);
    out
}

/// The `--log` table's header and cells.
pub fn table(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let many_files = rows.iter().any(|r| r.scenario != rows[0].scenario);
    let head = [
        if many_files { "scenario" } else { "variant" },
        "decisions/run",
        "msgs/decision",
        "leader crashes",
        "recovery p50",
        "recovery p99",
        "ops ok",
        "violations",
    ]
    .map(String::from)
    .to_vec();
    let body = rows
        .iter()
        .map(|r| {
            let c = r.log.clone().unwrap_or_default();
            let n = r.seeds.len().max(1);
            let v: Vec<String> = r
                .violations
                .iter()
                .filter(|(_, k)| *k > 0)
                .map(|(name, k)| format!("{name} {k}/{n}"))
                .collect();
            vec![
                r.label.clone(),
                format!("{:.0}", c.decisions as f64 / n as f64),
                c.messages_per_decision()
                    .map_or("-".to_string(), |m| format!("{m:.1}")),
                if c.unrecovered > 0 {
                    format!("{} ({} unrecovered)", c.leader_crashes, c.unrecovered)
                } else {
                    c.leader_crashes.to_string()
                },
                super::ms(c.recovery_p50_ns),
                super::ms(c.recovery_p99_ns),
                c.availability()
                    .map_or("-".to_string(), |a| format!("{:.1}%", a * 100.0)),
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                },
            ]
        })
        .collect();
    (head, body)
}
