//! Two small charts under the lanes of a lock run: how many clients were waiting, and
//! how many messages the lock service (the nodes of role `server`) was sent, per 100ms
//! of true time over the whole run. Static (they do not zoom with the lanes).

use super::html::{esc, LABEL_W, PLOT_W};
use std::collections::BTreeSet;
use std::fmt::Write;
use tenure_core::{NodeId, Observation};
use tenure_sim::Report;

const WINDOW_NS: u64 = 100_000_000;
const CHART_H: f64 = 56.0;

/// The deepest wait queue in each 100ms window: clients between `Waiting` and `Holds`
/// (a crash or restart ends a wait). `None` if no client ever waited.
pub fn wait_queue_depth(report: &Report) -> Option<Vec<u32>> {
    let h = &report.history;
    let windows = h.info.end.as_nanos().div_ceil(WINDOW_NS).max(1) as usize;
    let window = |ns: u64| ((ns / WINDOW_NS) as usize).min(windows - 1);
    let mut depth = vec![0u32; windows];
    let mut waiting: BTreeSet<(NodeId, String)> = BTreeSet::new();
    let (mut since, mut any) = (0u64, false);
    for r in &h.records {
        let before = waiting.len();
        match &r.obs {
            Observation::Waiting { resource } => {
                any = true;
                waiting.insert((r.node, resource.clone()));
            }
            Observation::Holds { resource, .. } => {
                waiting.remove(&(r.node, resource.clone()));
            }
            Observation::Crashed | Observation::Started => waiting.retain(|w| w.0 != r.node),
            _ => continue,
        }
        let now = r.time.as_nanos();
        for d in &mut depth[window(since)..=window(now)] {
            *d = (*d).max(before as u32);
        }
        let d = &mut depth[window(now)];
        *d = (*d).max(waiting.len() as u32);
        since = now;
    }
    for d in &mut depth[window(since)..] {
        *d = (*d).max(waiting.len() as u32);
    }
    any.then_some(depth)
}

/// Messages sent to the nodes of role `server` in each 100ms window.
pub fn coordinator_load(report: &Report) -> Vec<u32> {
    let h = &report.history;
    let windows = h.info.end.as_nanos().div_ceil(WINDOW_NS).max(1) as usize;
    let mut load = vec![0u32; windows];
    for (w, n) in report
        .stats
        .sent_to_role(&h.info.cluster, "server")
        .iter()
        .enumerate()
    {
        load[(w / 10).min(windows - 1)] += n;
    }
    load
}

fn chart(h: &mut String, title: &str, series: &[u32]) {
    let max = series.iter().copied().max().unwrap_or(0).max(1);
    let step = PLOT_W / series.len().max(1) as f64;
    let y = |v: u32| 4.0 + (CHART_H - 8.0) * (1.0 - f64::from(v) / f64::from(max));
    let mut points = String::new();
    for (i, v) in series.iter().enumerate() {
        let x0 = LABEL_W + i as f64 * step;
        let _ = write!(
            points,
            "{x0:.1},{:.1} {:.1},{:.1} ",
            y(*v),
            x0 + step,
            y(*v)
        );
    }
    let _ = writeln!(
        h,
        "<svg class=\"minichart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{CHART_H:.0}\">\
         <text x=\"8\" y=\"16\">{}</text><text x=\"8\" y=\"32\" class=\"role\">max {max}</text>\
         <line x1=\"{LABEL_W}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#c8d0dc\"/>\
         <polyline fill=\"none\" stroke=\"#5b5bd6\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        LABEL_W + PLOT_W + 10.0,
        esc(title),
        CHART_H - 4.0,
        LABEL_W + PLOT_W,
        CHART_H - 4.0,
        points.trim_end()
    );
}

/// The charts' HTML, or nothing for a run without lock clients.
pub fn render(h: &mut String, report: &Report) {
    let Some(depth) = wait_queue_depth(report) else {
        return;
    };
    h.push_str("<div class=\"minicharts\">\n");
    chart(h, "waiting clients (per 100ms)", &depth);
    chart(
        h,
        "messages to the lock service (per 100ms)",
        &coordinator_load(report),
    );
    h.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Cluster, History, LocalTime, Record, RoleSpec, RunInfo, SimTime};
    use tenure_sim::Stats;

    fn report(records: Vec<(u64, u32, Observation)>, stats: Stats) -> Report {
        let cluster =
            Cluster::new(vec![RoleSpec::new("server", 1), RoleSpec::new("client", 2)]).unwrap();
        Report {
            seed: 1,
            violations: Vec::new(),
            history: History {
                info: RunInfo {
                    cluster,
                    seed: 1,
                    end: SimTime(500_000_000),
                    calm_from: SimTime::ZERO,
                },
                records: records
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
            },
            trace: None,
            stats,
            stopped_early: false,
            judged: Vec::new(),
            expectation_met: true,
            verdicts: Vec::new(),
            beyond: Vec::new(),
        }
    }

    fn waiting() -> Observation {
        Observation::Waiting {
            resource: "r".into(),
        }
    }

    #[test]
    fn the_wait_queue_and_the_coordinator_load_per_100ms() {
        // n1 waits 50..250ms, n2 waits 120..130ms and crashes; 5 windows of 100ms.
        let r = report(
            vec![
                (50, 1, waiting()),
                (120, 2, waiting()),
                (130, 2, Observation::Crashed),
                (
                    250,
                    1,
                    Observation::Holds {
                        resource: "r".into(),
                        token: 1,
                    },
                ),
            ],
            Stats {
                sent_to_role_per_10ms: vec![vec![1; 45], vec![9; 45]],
                ..Stats::default()
            },
        );
        assert_eq!(wait_queue_depth(&r), Some(vec![1, 2, 1, 0, 0]));
        // Only n0 (the server) counts: 10 per 100ms, the last window half full.
        assert_eq!(coordinator_load(&r), vec![10, 10, 10, 10, 5]);
        let mut h = String::new();
        render(&mut h, &r);
        assert_eq!(h.matches("<svg class=\"minichart\"").count(), 2);
        assert!(h.contains("waiting clients") && h.contains("max 2"));
        // No lock clients, no charts.
        let mut h = String::new();
        render(&mut h, &report(vec![], Stats::default()));
        assert!(h.is_empty());
    }
}
