//! `tenure compare FILE... [--variants a,b+flag] [--params 'k=v;k=v']... [--seeds N]`:
//! the same scenario and the same seeds under several variants of its protocol (or
//! several scenario files, e.g. different lock protocols under the same pauses), side by
//! side: safety and liveness violations (which checker, in how many seeds), availability
//! (the fraction of true time some node believed it led, or held a lock), the time from
//! losing leadership or the lock to the next `Leader`/`Holds` (p50, p99), and the
//! messages sent in those gaps.
//!
//! With `--metrics` the table shows the runs' metrics instead (tenure-metrics, over
//! all seeds of a row): acquire latency p50/p99/max, coordinator messages per second
//! (mean and busiest second), retries per acquisition, grants per second, Jain's
//! fairness; for elections, elections, split votes and leaderless time.
//! `--backoff none,exponential,full-jitter` compares backoff policies on the scenario
//! (each row sets `backoff = { policy = ... }`, keeping the scenario's `base` and `cap`
//! unless `--backoff-base`/`--backoff-cap` say otherwise) and implies `--metrics`.
//!
//! `--log` shows what a replicated log costs (`cmd_compare/log_cost.rs`): decisions per
//! run, messages per decision, the time from a leader's crash to the next decision, and
//! the fraction of client operations that completed; give it scenarios of two log
//! protocols with the same faults, e.g. `scenarios/multi-paxos/beside-raft-*.toml`.
//!
//! `--updates` shows, per row, what the clients' updates cost (tenure-metrics'
//! `updates`): completed updates per second, update latency p50/p99 (from the first
//! attempt to the acknowledgement), acquire latency p50/p99 where there is a lock,
//! retries per completed update, lost updates, duplicated effects and violations. Give
//! it scenarios that put the same contention on different approaches (a lock, fencing,
//! compare-and-set, idempotency keys), e.g. `scenarios/contention/counter-*.toml`.
//!
//! Availability and handovers are judged on beliefs, like the checkers: a paused holder
//! still counts as holding. A gap starts when the last node stops believing and ends at
//! the next belief; the first acquisition of the run is not a handover. Gaps still open
//! at the end are counted apart (`open at end`).

use crate::report::protocol_label;
use crate::Tools;
use crate::{shown, Outcome};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use tenure_core::{Observation, SimTime};
use tenure_scenario::Scenario;
use tenure_sim::{Prepared, Report, RunOptions, TraceEvent};

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Scenario files (TOML). With several, each is compared (protocols may differ).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Variants to compare, comma-separated. `+flag` sets a boolean protocol parameter
    /// to true and `+key=value` sets any parameter: `correct,correct+pre_vote`.
    #[arg(long, value_delimiter = ',', value_name = "VARIANT[+PARAM]...")]
    variants: Vec<String>,
    /// A parameter alternative on the scenario's own variant, `key=value;key=value`
    /// (repeatable; `''` is the scenario as written).
    #[arg(long = "params", value_name = "K=V;K=V")]
    params: Vec<String>,
    /// Backoff policies to compare, comma-separated (none, constant, uniform,
    /// exponential, full-jitter, equal-jitter, decorrelated-jitter, adaptive); implies
    /// --metrics.
    #[arg(long, value_delimiter = ',', value_name = "POLICY")]
    backoff: Vec<String>,
    /// The backoff policies' `base` (default: the scenario's, else 10ms).
    #[arg(long, value_name = "DURATION", requires = "backoff")]
    backoff_base: Option<String>,
    /// The backoff policies' `cap` (default: the scenario's, else 1s).
    #[arg(long, value_name = "DURATION", requires = "backoff")]
    backoff_cap: Option<String>,
    /// Show the runs' metrics (latency, coordinator load, retries, fairness; elections)
    /// instead of availability and handovers.
    #[arg(long)]
    metrics: bool,
    /// Show what the clients' updates cost instead: completed updates/s, update latency
    /// p50/p99, acquire latency p50/p99, retries per update, lost updates, duplicated
    /// effects (to compare locks, optimistic concurrency and idempotency keys).
    #[arg(long, conflicts_with_all = ["metrics", "backoff"])]
    updates: bool,
    /// Show what a replicated log costs instead: decisions per run, messages per
    /// decision, recovery from a leader crash (to the next decision) p50/p99, and the
    /// fraction of client operations that completed (for raft-log beside multi-paxos).
    #[arg(long, conflicts_with_all = ["metrics", "backoff", "updates"])]
    log: bool,
    /// How many seeds, from the first seed upward.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// The first seed (default: each scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: one per core). The table is the same for any number.
    #[arg(long, value_name = "N", value_parser = crate::parse_jobs)]
    jobs: Option<usize>,
    /// Print a Markdown table.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// One alternative: a variant (or the scenario's own) and parameters to set.
#[derive(Clone, Debug, PartialEq)]
pub struct Alternative {
    pub label: String,
    pub variant: Option<String>,
    pub params: Vec<(String, serde_json::Value)>,
}

fn param(text: &str) -> Result<(String, serde_json::Value), String> {
    let (k, v) = match text.split_once('=') {
        Some((k, v)) => (
            k.trim(),
            serde_json::from_str(v.trim())
                .unwrap_or_else(|_| serde_json::Value::String(v.trim().to_string())),
        ),
        None => (text.trim(), serde_json::Value::Bool(true)),
    };
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`{text}`: a parameter is written `name` or `name=value`"
        ));
    }
    Ok((k.to_string(), v))
}

/// `correct+pre_vote+check_quorum`, `+pre_vote`, `no-step-down`.
pub fn parse_variant(spec: &str) -> Result<Alternative, String> {
    let mut parts = spec.split('+');
    let variant = parts.next().unwrap_or("").trim();
    let params = parts.map(param).collect::<Result<Vec<_>, _>>()?;
    Ok(Alternative {
        label: spec.trim().to_string(),
        variant: (!variant.is_empty()).then(|| variant.to_string()),
        params,
    })
}

/// `pre_vote=true;check_quorum=true` (empty: the scenario as written).
pub fn parse_params(spec: &str) -> Result<Alternative, String> {
    let params = spec
        .split(';')
        .filter(|p| !p.trim().is_empty())
        .map(param)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Alternative {
        label: if params.is_empty() {
            "as written".to_string()
        } else {
            spec.trim().to_string()
        },
        variant: None,
        params,
    })
}

/// The scenario with the alternative applied.
pub fn apply(scenario: &Scenario, alt: &Alternative) -> Scenario {
    let mut s = scenario.clone();
    if let Some(v) = &alt.variant {
        s.protocol.variant = v.clone();
    }
    if !alt.params.is_empty() {
        if !s.protocol.params.is_object() {
            s.protocol.params = serde_json::json!({});
        }
        let map = s.protocol.params.as_object_mut().expect("an object");
        for (k, v) in &alt.params {
            // A table (e.g. `backoff`) set over a table updates its fields.
            match (map.get_mut(k), v) {
                (Some(serde_json::Value::Object(old)), serde_json::Value::Object(new)) => {
                    for (nk, nv) in new {
                        old.insert(nk.clone(), nv.clone());
                    }
                }
                _ => {
                    map.insert(k.clone(), v.clone());
                }
            }
        }
    }
    s
}

/// What "available" means for a run: some node leads, or some node holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Belief {
    Leader,
    Holder,
}

/// The gaps of one run: when the last believer stopped and when the next began (none if
/// the run ended first), and what fraction of the run someone believed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gaps {
    pub covered_ns: u64,
    pub end_ns: u64,
    pub gaps: Vec<(SimTime, Option<SimTime>)>,
}

/// Sweeps a run's records for `belief`.
pub fn gaps(report: &Report, belief: Belief) -> Gaps {
    let info = &report.history.info;
    let n = info.cluster.size();
    // What each node believes: leads (one bit) or the resources it holds.
    let mut leads = vec![false; n];
    let mut held: Vec<std::collections::BTreeSet<&str>> = vec![Default::default(); n];
    let mut count = 0usize;
    let mut since = SimTime::ZERO;
    let mut out = Gaps {
        end_ns: info.end.as_nanos(),
        ..Gaps::default()
    };
    let mut lost: Option<SimTime> = None;
    for r in &report.history.records {
        let i = r.node.index();
        let before = match belief {
            Belief::Leader => leads[i],
            Belief::Holder => !held[i].is_empty(),
        };
        match (&r.obs, belief) {
            (Observation::Started | Observation::Crashed, _) => {
                leads[i] = false;
                held[i].clear();
            }
            (Observation::Leader { .. }, Belief::Leader) => leads[i] = true,
            (Observation::Follower { .. } | Observation::Candidate { .. }, Belief::Leader) => {
                leads[i] = false
            }
            (Observation::Holds { resource, .. }, Belief::Holder) => {
                held[i].insert(resource);
            }
            (Observation::Releases { resource }, Belief::Holder) => {
                held[i].remove(resource.as_str());
            }
            _ => continue,
        }
        let after = match belief {
            Belief::Leader => leads[i],
            Belief::Holder => !held[i].is_empty(),
        };
        if before == after {
            continue;
        }
        if after {
            if count == 0 {
                since = r.time;
                if let Some(l) = lost.take() {
                    out.gaps.push((l, Some(r.time)));
                }
            }
            count += 1;
        } else {
            count -= 1;
            if count == 0 {
                out.covered_ns += r.time.as_nanos() - since.as_nanos();
                lost = Some(r.time);
            }
        }
    }
    if count > 0 {
        out.covered_ns += info.end.as_nanos().saturating_sub(since.as_nanos());
    }
    if let Some(l) = lost {
        out.gaps.push((l, None));
    }
    out
}

/// Messages sent in `[from, to)` (the trace is in true-time order).
fn messages_between(sent: &[SimTime], from: SimTime, to: SimTime) -> u64 {
    (sent.partition_point(|t| *t < to) - sent.partition_point(|t| *t < from)) as u64
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub label: String,
    pub scenario: String,
    pub protocol: String,
    pub seeds: Vec<u64>,
    /// Per check, in the scenario's order: how many seeds violated it.
    pub violations: Vec<(String, u64)>,
    pub belief: Option<Belief>,
    /// Fraction of true time with a leader (or a holder), over all seeds.
    pub availability: Option<f64>,
    /// Gaps closed by a new leader or holder, over all seeds.
    pub handovers: u64,
    /// Gaps still open at the end of a run.
    pub unrecovered: u64,
    pub handover_p50_ns: Option<u64>,
    pub handover_p99_ns: Option<u64>,
    /// Mean messages sent during a closed gap.
    pub messages_per_handover: Option<f64>,
    /// Mean messages per run.
    pub messages_per_run: f64,
    /// What the log cost (with `--log`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<log_cost::LogCost>,
    /// The runs' metrics together (with `--metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<tenure_metrics::Metrics>,
    /// A seed stopped by a run limit (`--max-in-flight`), in words: the row has no
    /// verdict.
    #[serde(skip)]
    pub stopped_by_limit: Option<String>,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Runs every seed of one alternative on `jobs` threads (the seed pool, `tenure-pool`)
/// and sums it up, calling `each` with every run in seed order (progress).
pub fn measure(
    label: String,
    file: &str,
    prepared: &Prepared,
    seeds: std::ops::Range<u64>,
    jobs: usize,
    each: &mut dyn FnMut(&Report),
) -> Row {
    let options = RunOptions {
        trace: true,
        stop_at_first_violation: false,
    };
    let mut reports: Vec<Report> = Vec::with_capacity((seeds.end - seeds.start) as usize);
    tenure_pool::run(
        seeds.clone(),
        jobs,
        &std::sync::atomic::AtomicBool::new(false),
        |seed| prepared.run(seed, &options),
        |_, report| {
            each(&report);
            reports.push(report);
            tenure_pool::Flow::Continue
        },
    );
    let seeds: Vec<u64> = seeds.collect();
    let has = |f: &dyn Fn(&Observation) -> bool| {
        reports
            .iter()
            .any(|r| r.history.records.iter().any(|x| f(&x.obs)))
    };
    let belief = if has(&|o| matches!(o, Observation::Leader { .. })) {
        Some(Belief::Leader)
    } else if has(&|o| matches!(o, Observation::Holds { .. })) {
        Some(Belief::Holder)
    } else {
        None
    };
    let violations = prepared
        .scenario
        .checks
        .iter()
        .map(|c| {
            let k = reports
                .iter()
                .filter(|r| r.violations.iter().any(|v| v.checker == c.name))
                .count() as u64;
            (c.name.clone(), k)
        })
        .collect();
    let (mut covered, mut total) = (0u64, 0u64);
    let (mut durations, mut msgs) = (Vec::new(), Vec::new());
    let mut unrecovered = 0;
    let mut all_messages = 0u64;
    for r in &reports {
        all_messages += r.stats.messages_sent;
        let Some(b) = belief else { continue };
        let g = gaps(r, b);
        covered += g.covered_ns;
        total += g.end_ns;
        let sent: Vec<SimTime> = r
            .trace
            .iter()
            .flatten()
            .filter_map(|e| match e {
                TraceEvent::Sent { time, .. } => Some(*time),
                _ => None,
            })
            .collect();
        for (lost, regained) in g.gaps {
            match regained {
                Some(t) => {
                    durations.push(t.as_nanos() - lost.as_nanos());
                    msgs.push(messages_between(&sent, lost, t));
                }
                None => unrecovered += 1,
            }
        }
    }
    durations.sort_unstable();
    Row {
        label,
        scenario: file.to_string(),
        protocol: protocol_label(&prepared.scenario),
        seeds,
        violations,
        belief,
        availability: (belief.is_some() && total > 0).then(|| covered as f64 / total as f64),
        handovers: durations.len() as u64,
        unrecovered,
        handover_p50_ns: percentile(&durations, 50.0),
        handover_p99_ns: percentile(&durations, 99.0),
        messages_per_handover: (!msgs.is_empty())
            .then(|| msgs.iter().sum::<u64>() as f64 / msgs.len() as f64),
        messages_per_run: all_messages as f64 / reports.len().max(1) as f64,
        log: Some(log_cost::of(&reports)),
        metrics: Some(crate::run_metrics::of_all(&reports)),
        stopped_by_limit: reports.iter().find_map(|r| {
            r.stats
                .stopped_by
                .map(|limit| format!("{file} seed {}: {limit}", r.seed))
        }),
    }
}

pub fn compare(args: CompareArgs, tools: &Tools) -> Outcome {
    if args.seeds == 0 {
        eprintln!("tenure: --seeds must be at least 1");
        return Outcome::BadInput;
    }
    let mut alts = Vec::new();
    for v in args.variants.iter().filter(|v| !v.trim().is_empty()) {
        match parse_variant(v) {
            Ok(a) => alts.push(a),
            Err(e) => {
                eprintln!("tenure: --variants: {e}");
                return Outcome::BadInput;
            }
        }
    }
    for policy in args.backoff.iter().filter(|p| !p.trim().is_empty()) {
        let policy = policy.trim();
        if !tenure_protocols_policy_known(policy) {
            let message = format!(
                "--backoff: unknown policy `{policy}`; known policies: {}",
                BACKOFF_POLICIES.join(", ")
            );
            return crate::bad_input(crate::suggest_in(&message, policy));
        }
        let mut table = serde_json::Map::new();
        table.insert("policy".into(), policy.into());
        for (key, value) in [("base", &args.backoff_base), ("cap", &args.backoff_cap)] {
            if let Some(v) = value {
                if let Err(e) = tenure_core::parse_duration(v) {
                    eprintln!("tenure: --backoff-{key}: {e}");
                    return Outcome::BadInput;
                }
                table.insert(key.into(), v.clone().into());
            }
        }
        alts.push(Alternative {
            label: policy.to_string(),
            variant: None,
            params: vec![("backoff".to_string(), serde_json::Value::Object(table))],
        });
    }
    let show_metrics = args.metrics || !args.backoff.is_empty() || args.updates;
    for p in &args.params {
        match parse_params(p) {
            Ok(a) => alts.push(a),
            Err(e) => {
                eprintln!("tenure: --params: {e}");
                return Outcome::BadInput;
            }
        }
    }
    let many_files = args.files.len() > 1;
    if alts.is_empty() && !many_files {
        eprintln!(
            "tenure: nothing to compare: give --variants (e.g. --variants correct,correct+pre_vote), --params, or several files"
        );
        return Outcome::BadInput;
    }
    // Load and validate everything before running anything.
    let mut plans = Vec::new();
    for path in &args.files {
        let file = shown(path);
        let scenario = match tenure_scenario::load(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("tenure: {e}");
                return Outcome::BadInput;
            }
        };
        let stem = path
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().to_string());
        let file_alts = if alts.is_empty() {
            vec![Alternative {
                label: String::new(),
                variant: None,
                params: Vec::new(),
            }]
        } else {
            alts.clone()
        };
        for alt in file_alts {
            let label = match (many_files, alt.label.is_empty()) {
                (true, true) => format!("{stem} ({})", protocol_label(&scenario)),
                (true, false) => format!("{stem} {}", alt.label),
                (false, _) => alt.label.clone(),
            };
            let prepared = match Prepared::new(apply(&scenario, &alt), &tools.protocols) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("tenure: {label}: {e}");
                    return Outcome::BadInput;
                }
            };
            let first = args.seed.unwrap_or(scenario.seed);
            // The seed range ends before `end` (so the last seed is at most u64::MAX - 1).
            let Some(end) = first.checked_add(args.seeds) else {
                eprintln!(
                    "tenure: --seed {first} plus --seeds {} overflows",
                    args.seeds
                );
                return Outcome::BadInput;
            };
            plans.push((label, file.clone(), prepared, first..end));
        }
    }
    eprintln!(
        "tenure: comparing {} alternative{} × {} seed{}",
        plans.len(),
        if plans.len() == 1 { "" } else { "s" },
        args.seeds,
        if args.seeds == 1 { "" } else { "s" }
    );
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Progress on stderr for a long comparison (see `crate::progress`).
    let runs: u64 = plans.iter().map(|p| p.3.end - p.3.start).sum();
    let mut progress = crate::progress::Progress::new(
        "tenure compare",
        crate::progress::Mode::of_stderr(),
        Some(runs),
        crate::cmd_fuzz::wall_seconds(),
    )
    .counting("run");
    let mut rows: Vec<Row> = plans
        .into_iter()
        .map(|(label, file, prepared, seeds)| {
            measure(label, &file, &prepared, seeds, jobs, &mut |report| {
                progress.seed_done(
                    crate::cmd_fuzz::wall_seconds(),
                    report.history.info.end.as_duration(),
                    !report.passed(),
                )
            })
        })
        .collect();
    progress.finish();
    // A run stopped by a limit has no verdict: the comparison is bad input (exit 2).
    if let Some(limit) = rows.iter().find_map(|r| r.stopped_by_limit.as_ref()) {
        eprintln!("tenure: {limit}");
        return Outcome::BadInput;
    }
    if !show_metrics {
        for r in &mut rows {
            r.metrics = None;
        }
    }
    if !args.log {
        for r in &mut rows {
            r.log = None;
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
    } else {
        let (head, body) = if args.log {
            log_cost::table(&rows)
        } else if args.updates {
            crate::compare_updates::table(&rows)
        } else if show_metrics {
            metrics_table(&rows)
        } else {
            table(&rows)
        };
        if args.markdown {
            print!("{}", markdown(&head, &body));
        } else {
            print!("{}", plain(&head, &body));
        }
        let seeds = &rows[0].seeds;
        if args.log {
            println!(
                "seeds {}..={} per row ({} seeds); decisions = log indices applied by some node; msgs/decision = every message sent (clients' and heartbeats included) / decisions; recovery = a leader's crash to the next new index applied; ops ok = client operations completed ok / invoked",
                seeds[0],
                seeds[seeds.len() - 1],
                seeds.len()
            );
        } else if args.updates {
            println!(
                "seeds {}..={} per row; an update runs from its first attempt to its acknowledgement; lost = acknowledged but not in the final value (or never applied)",
                seeds[0],
                seeds[seeds.len() - 1]
            );
        } else if show_metrics {
            let locks = rows
                .iter()
                .any(|r| r.metrics.as_ref().is_some_and(|m| m.locks.is_some()));
            println!(
                "seeds {}..={} per row; {}",
                seeds[0],
                seeds[seeds.len() - 1],
                if locks {
                    "latencies over every acquisition of every seed; coordinator = the `server` nodes"
                } else {
                    "elections and split votes summed over the seeds, leaderless time per run"
                }
            );
        } else {
            println!(
                "seeds {}..={} per row; availability and handovers are judged on beliefs (a paused holder still holds)",
                seeds[0],
                seeds[seeds.len() - 1]
            );
        }
    }
    Outcome::Passed
}

fn ms(ns: Option<u64>) -> String {
    match ns {
        None => "-".to_string(),
        Some(ns) if ns >= 10_000_000_000 => format!("{:.1}s", ns as f64 / 1e9),
        Some(ns) if ns >= 10_000_000 => format!("{:.0}ms", ns as f64 / 1e6),
        Some(ns) => format!("{:.1}ms", ns as f64 / 1e6),
    }
}

/// Whether a checker judges progress (something good eventually happens) rather than
/// safety: the `*-liveness` checks, `deadlock` and `no-starvation`.
fn is_liveness(checker: &str) -> bool {
    checker.contains("liveness") || matches!(checker, "deadlock" | "no-starvation")
}

fn violations_cell(row: &Row, liveness: bool) -> String {
    let n = row.seeds.len();
    let parts: Vec<String> = row
        .violations
        .iter()
        .filter(|(name, k)| *k > 0 && is_liveness(name) == liveness)
        .map(|(name, k)| format!("{name} {k}/{n}"))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

/// The table's header and cells.
pub fn table(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let many_files = rows.iter().any(|r| r.scenario != rows[0].scenario);
    let head = [
        if many_files { "scenario" } else { "variant" },
        "safety violations",
        "liveness violations",
        "available",
        "handovers",
        "handover p50",
        "handover p99",
        "msgs/handover",
    ]
    .map(String::from)
    .to_vec();
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                violations_cell(r, false),
                violations_cell(r, true),
                match (r.availability, r.belief) {
                    (Some(a), Some(b)) => format!(
                        "{:.1}% {}",
                        a * 100.0,
                        match b {
                            Belief::Leader => "led",
                            Belief::Holder => "held",
                        }
                    ),
                    _ => "-".to_string(),
                },
                if r.unrecovered > 0 {
                    format!("{} (+{} open at end)", r.handovers, r.unrecovered)
                } else {
                    r.handovers.to_string()
                },
                ms(r.handover_p50_ns),
                ms(r.handover_p99_ns),
                r.messages_per_handover
                    .map_or("-".to_string(), |m| format!("{m:.1}")),
            ]
        })
        .collect();
    (head, body)
}

/// The backoff policies `--backoff` accepts (those of `tenure_protocols::backoff`).
const BACKOFF_POLICIES: [&str; 8] = [
    "none",
    "constant",
    "uniform",
    "exponential",
    "full-jitter",
    "equal-jitter",
    "decorrelated-jitter",
    "adaptive",
];

fn tenure_protocols_policy_known(name: &str) -> bool {
    BACKOFF_POLICIES.contains(&name)
}

/// The metrics table's header and cells: lock columns when any row has lock metrics,
/// election columns when any has election metrics.
pub fn metrics_table(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let many_files = rows.iter().any(|r| r.scenario != rows[0].scenario);
    let locks = rows
        .iter()
        .any(|r| r.metrics.as_ref().is_some_and(|m| m.locks.is_some()));
    let elections = rows
        .iter()
        .any(|r| r.metrics.as_ref().is_some_and(|m| m.elections.is_some()));
    let mut head = vec![if many_files { "scenario" } else { "variant" }];
    if locks {
        head.extend([
            "acquire p50",
            "acquire p99",
            "acquire max",
            "coord msgs/s",
            "coord peak/s",
            "coord max/1ms",
            "retries/acq",
            "grants/s",
            "fairness",
        ]);
    }
    if elections {
        head.extend(["elections", "split votes", "leaderless/run"]);
    }
    head.push("violations");
    let dash = || "-".to_string();
    let msf = |v: f64| {
        if v >= 10_000.0 {
            format!("{:.1}s", v / 1000.0)
        } else if v >= 10.0 {
            format!("{v:.0}ms")
        } else {
            format!("{v:.1}ms")
        }
    };
    let body = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.label.clone()];
            let m = r.metrics.as_ref();
            if locks {
                match m.and_then(|m| m.locks.as_ref()) {
                    Some(l) => {
                        let lat = l.acquire_latency;
                        cells.push(lat.map_or_else(dash, |p| msf(p.p50_ms)));
                        cells.push(lat.map_or_else(dash, |p| msf(p.p99_ms)));
                        cells.push(lat.map_or_else(dash, |p| msf(p.max_ms)));
                        match &l.coordinator {
                            Some(c) => {
                                cells.push(format!("{:.1}", c.per_s));
                                cells.push(c.peak_per_s.to_string());
                                cells.push(c.max_in_1ms.to_string());
                            }
                            None => cells.extend([dash(), dash(), dash()]),
                        }
                        cells.push(format!("{:.2}", l.retries_per_acquisition));
                        cells.push(format!("{:.2}", l.acquisitions_per_s));
                        cells.push(format!("{:.3}", l.fairness));
                    }
                    None => cells.extend((0..9).map(|_| dash())),
                }
            }
            if elections {
                match m.and_then(|m| m.elections.as_ref()) {
                    Some(e) => {
                        cells.push(e.elections.to_string());
                        cells.push(e.split_votes.to_string());
                        cells.push(msf(e.leaderless_ms / r.seeds.len().max(1) as f64));
                    }
                    None => cells.extend([dash(), dash(), dash()]),
                }
            }
            let n = r.seeds.len();
            let v: Vec<String> = r
                .violations
                .iter()
                .filter(|(_, k)| *k > 0)
                .map(|(name, k)| format!("{name} {k}/{n}"))
                .collect();
            cells.push(if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            });
            cells
        })
        .collect();
    (head.into_iter().map(String::from).collect(), body)
}

pub fn plain(head: &[String], body: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..head.len())
        .map(|c| {
            body.iter()
                .map(|r| r[c].chars().count())
                .chain([head[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if i == 0 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str("  ");
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head);
    for r in body {
        out.push_str(&line(r));
    }
    out
}

pub fn markdown(head: &[String], body: &[Vec<String>]) -> String {
    let esc = |c: &str| c.replace('|', "\\|");
    let mut out = format!(
        "| {} |\n|{}\n",
        head.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "),
        head.iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
            .collect::<String>()
    );
    for r in body {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

mod log_cost;
#[cfg(test)]
mod tests;
