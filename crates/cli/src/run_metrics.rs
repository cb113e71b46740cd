//! Glue between a run's report and tenure-metrics: the lock service's nodes (role
//! `server`) and the simulator's per-node message counts.

use tenure_metrics::{Metrics, Traffic};
use tenure_sim::Report;

/// The traffic of a run, with the nodes of role `server` as the coordinators.
pub fn traffic(report: &Report) -> Traffic {
    Traffic {
        to_coordinators_per_10ms: report
            .stats
            .sent_to_role(&report.history.info.cluster, "server"),
        max_to_node_in_1ms: report.stats.max_sent_to_in_1ms.clone(),
        coordinators: report.history.info.cluster.with_role("server").collect(),
    }
}

/// The metrics of one run.
pub fn of(report: &Report) -> Metrics {
    tenure_metrics::compute(&report.history, &traffic(report))
}

/// The metrics of several runs together.
pub fn of_all(reports: &[Report]) -> Metrics {
    let traffics: Vec<Traffic> = reports.iter().map(traffic).collect();
    let runs: Vec<_> = reports
        .iter()
        .zip(&traffics)
        .map(|(r, t)| (&r.history, t))
        .collect();
    tenure_metrics::compute_all(&runs)
}
