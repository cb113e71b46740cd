//! The election-time results as a table, as JSON (one object per range) and as the
//! two CDF plots of the paper's Figure 16.

use super::{range_label, Setup, Trial};
use crate::plot::{cdf_svg, nice_step, Axis, Series};
use crate::summary::{ms, summarize, Summary};
use std::fmt::Write;
use std::time::Duration;
use tenure_protocols::raft::TimeoutRange;

/// The trials of one election timeout range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResult {
    pub range: TimeoutRange,
    pub trials: Vec<Trial>,
}

impl RangeResult {
    pub fn label(&self) -> String {
        range_label(&self.range)
    }

    pub fn downtimes(&self) -> Vec<Option<Duration>> {
        self.trials.iter().map(Trial::downtime).collect()
    }

    pub fn summary(&self) -> Summary {
        summarize(&self.downtimes())
    }

    /// `{"range":"150-300","trials":1000,"no_leader":0,"cap_ms":10000.0,"min":...}`:
    /// one line of JSON, times in milliseconds, `null` where beyond the cap.
    pub fn json(&self, setup: &Setup) -> String {
        let s = self.summary();
        let line = JsonLine {
            range: self.label(),
            trials: s.trials,
            no_leader: s.unfinished,
            cap_ms: ms(setup.cap),
            min: s.min,
            p10: s.p10,
            p25: s.p25,
            median: s.median,
            mean: s.mean,
            p75: s.p75,
            p90: s.p90,
            p99: s.p99,
            max: s.max,
        };
        serde_json::to_string(&line).expect("plain data serializes")
    }
}

/// One range as JSON, fields in table order.
#[derive(serde::Serialize)]
struct JsonLine {
    range: String,
    trials: usize,
    no_leader: usize,
    cap_ms: f64,
    min: Option<f64>,
    p10: Option<f64>,
    p25: Option<f64>,
    median: Option<f64>,
    mean: Option<f64>,
    p75: Option<f64>,
    p90: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
}

/// The results as a plain-text table, in milliseconds.
pub fn table(results: &[RangeResult], setup: &Setup) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Raft election time after a leader crash, in ms ({} servers, one-way latency {}, \
         fsync {}{}, heartbeat = min timeout / 2, cap {})",
        super::SERVERS,
        range_text(setup.latency),
        range_text(setup.fsync),
        if setup.processing.1.is_zero() {
            String::new()
        } else {
            format!(", processing {}", range_text(setup.processing))
        },
        tenure_core::format_duration(setup.cap)
    );
    let _ = write!(out, "{:<10} {:>6} {:>9}", "range", "trials", "no leader");
    for name in [
        "min", "p10", "p25", "median", "mean", "p75", "p90", "p99", "max",
    ] {
        let _ = write!(out, " {name:>7}");
    }
    out.push('\n');
    let beyond = format!(">{}", ms(setup.cap));
    for r in results {
        let s = r.summary();
        let _ = write!(out, "{:<10} {:>6} {:>9}", r.label(), s.trials, s.unfinished);
        for (_, value) in s.fields() {
            match value {
                Some(v) => {
                    let _ = write!(out, " {v:>7.1}");
                }
                None => {
                    let _ = write!(out, " {beyond:>7}");
                }
            }
        }
        out.push('\n');
    }
    out
}

fn range_text((lo, hi): (Duration, Duration)) -> String {
    use tenure_core::format_duration as f;
    format!("{}-{}", f(lo), f(hi))
}

/// The two plots of Figure 16, as (file name, SVG): the top one varies the randomness
/// (ranges starting at 150 ms, log axis), the bottom one scales the minimum (ranges
/// whose maximum is twice the minimum, and any other range; linear axis). A plot with
/// no range is left out.
pub fn plots(results: &[RangeResult], setup: &Setup) -> Vec<(&'static str, String)> {
    let top: Vec<&RangeResult> = results
        .iter()
        .filter(|r| r.range.min == Duration::from_millis(150))
        .collect();
    let bottom: Vec<&RangeResult> = results
        .iter()
        .filter(|r| r.range.max == 2 * r.range.min || r.range.min != Duration::from_millis(150))
        .collect();
    let series = |rs: &[&RangeResult]| -> Vec<Series> {
        rs.iter()
            .map(|r| {
                let s = r.summary();
                let mut label = format!("{} ms", r.label());
                if s.unfinished > 0 {
                    let _ = write!(label, " ({}/{} none)", s.unfinished, s.trials);
                }
                Series {
                    label,
                    values: r.downtimes().iter().map(|d| d.map(ms)).collect(),
                }
            })
            .collect()
    };
    let cap_ms = ms(setup.cap);
    let x_label = "time without leader (ms)";
    let mut out = Vec::new();
    if !top.is_empty() {
        let axis = Axis::Log {
            min: 100.0,
            max: cap_ms.max(1000.0),
        };
        let title = "Election timeout randomness (minimum 150 ms)";
        out.push((
            "randomness.svg",
            cdf_svg(title, x_label, axis, &series(&top)),
        ));
    }
    if !bottom.is_empty() {
        let longest = bottom
            .iter()
            .flat_map(|r| r.downtimes())
            .flatten()
            .map(ms)
            .fold(0.0, f64::max);
        let step = nice_step(longest.max(1.0) / 6.0);
        let axis = Axis::Linear {
            max: (longest / step).ceil().max(1.0) * step,
        };
        let title = "Election timeout scale (maximum = 2 x minimum)";
        out.push((
            "timeout-scale.svg",
            cdf_svg(title, x_label, axis, &series(&bottom)),
        ));
    }
    out
}
