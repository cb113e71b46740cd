//! `tenure run FILE`: one scenario, one seed.

use crate::output::Kind;
use crate::report::{
    beyond_lines, expectation_text, json_report, judged_lines, narrative, not_judged_lines,
    outcome_of, protocol_label, replay_command, unexpected_not_judged,
};
use crate::Tools;
use crate::{shown, Outcome};
use clap::Args;
use std::path::PathBuf;
use tenure_scenario::Scenario;
use tenure_sim::{Prepared, RunOptions, TraceEvent};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (TOML).
    file: PathBuf,
    /// The seed (default: the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the full trace (observations, messages, timers, faults) as JSON lines.
    #[arg(long, value_name = "OUT.jsonl")]
    trace: Option<PathBuf>,
    /// Write a self-contained HTML timeline of the run (lanes per node over true time).
    #[arg(long, value_name = "OUT.html")]
    timeline: Option<PathBuf>,
    /// Write the run's client history (the clients' operations: invoke, then ok / fail
    /// / info) as a Jepsen EDN history, one map per line, for `tenure check-history`,
    /// Knossos, Elle or Porcupine. Like every output: replaces tenure's own earlier
    /// history, refuses any other existing file.
    #[arg(long, value_name = "OUT.edn")]
    history: Option<PathBuf>,
    /// Print a JSON report on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Run the seed twice and fail (exit 3) on any difference in the trace.
    #[arg(long)]
    check_determinism: bool,
    /// Print the run's metrics: acquire latency, hold time, wait queue, throughput,
    /// retries, fairness, coordinator load; elections, leaderless time, split votes
    /// (with --json: a `metrics` object).
    #[arg(long)]
    metrics: bool,
    /// Write the leadership transitions as a tamper-evident (hash-chained) log, JSON
    /// lines; check it with `tenure audit verify`.
    #[arg(long, value_name = "OUT.jsonl")]
    audit: Option<PathBuf>,
}

/// Loads and validates a scenario, printing the error (exit 2) if it is bad.
pub fn prepare(file: &std::path::Path, tools: &Tools) -> Result<Prepared, Outcome> {
    let scenario = tenure_scenario::load(file).map_err(|e| {
        eprintln!("tenure: {e}");
        Outcome::BadInput
    })?;
    Prepared::new(scenario, &tools.protocols).map_err(|e| {
        eprintln!("tenure: {e}");
        Outcome::BadInput
    })
}

pub fn write_trace(path: &std::path::Path, trace: &[TraceEvent]) -> Result<(), Outcome> {
    let mut text = String::with_capacity(trace.len() * 96);
    for e in trace {
        text.push_str(&e.to_json_line());
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| {
        eprintln!("tenure: cannot write {}: {e}", path.display());
        Outcome::BadInput
    })
}

pub fn run(args: RunArgs, tools: &Tools) -> Outcome {
    let prepared = match prepare(&args.file, tools) {
        Ok(p) => p,
        Err(o) => return o,
    };
    // Output errors come before the run, so a bad path costs nothing and the verdict
    // is never lost to a write error at the end.
    let outputs = [
        (&args.trace, Kind::Trace),
        (&args.timeline, Kind::Timeline),
        (&args.audit, Kind::Audit),
        (&args.history, Kind::History),
    ];
    for (out, kind) in outputs {
        if let Some(out) = out {
            match crate::output::check(out, kind, &[&args.file]) {
                Ok(true) => eprintln!(
                    "tenure: {} is tenure's own earlier output: replacing it",
                    out.display()
                ),
                Ok(false) => {}
                Err(e) => return crate::bad_input(e),
            }
        }
    }
    let file = shown(&args.file);
    let s: &Scenario = &prepared.scenario;
    let seed = args.seed.unwrap_or(s.seed);
    eprintln!(
        "tenure: {file} ({}, {}, {} simulated) seed {seed}",
        protocol_label(s),
        crate::plural(prepared.cluster.size() as u64, "node", "nodes"),
        tenure_core::format_duration(s.duration)
    );
    if prepared.checks_from_promises {
        let names: Vec<&str> = s.checks.iter().map(|c| c.name.as_str()).collect();
        eprintln!(
            "tenure: {file} lists no checks: judging {}'s promises ({})",
            s.protocol.name,
            if names.is_empty() {
                "it promises none".to_string()
            } else {
                names.join(", ")
            }
        );
    }
    // The declared assumptions the scenario's own faults and clocks go beyond: named
    // before the run and in the verdict, as `fuzz` names them for drawn faults.
    for b in &prepared.beyond {
        eprintln!(
            "tenure: {file} goes beyond {}'s declared assumptions: {b}",
            s.protocol.name
        );
    }
    // The full trace (every message and timer) costs memory in proportion to the run:
    // keep it only when an output needs it. A failing run is played again with it, for
    // the narrative's dropped-messages line (a run is a pure function of the seed).
    // With RUST_LOG set the trace is kept from the start: a replay would print every
    // log line a second time.
    let logging = std::env::var_os("RUST_LOG").is_some();
    let options = RunOptions {
        trace: args.trace.is_some() || args.timeline.is_some() || args.check_determinism || logging,
        stop_at_first_violation: false,
    };
    let mut report = prepared.run(seed, &options);
    if !report.passed() && !options.trace && report.stats.stopped_by.is_none() {
        report = prepared.run(
            seed,
            &RunOptions {
                trace: true,
                ..options
            },
        );
    }
    // A run stopped by a limit has no verdict: it is bad input (exit 2).
    if let Some(limit) = &report.stats.stopped_by {
        eprintln!("tenure: {file} seed {seed}: {limit}");
        return Outcome::BadInput;
    }

    if args.check_determinism {
        let again = prepared.run(seed, &options);
        let (a, b) = (
            report.trace.as_deref().unwrap_or(&[]),
            again.trace.as_deref().unwrap_or(&[]),
        );
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            eprintln!("tenure: NONDETERMINISM in {file} seed {seed}: the two runs differ first at trace event {i}:");
            eprintln!(
                "  first run:  {}",
                a.get(i)
                    .map_or("(end of trace)".to_string(), |e| e.to_json_line())
            );
            eprintln!(
                "  second run: {}",
                b.get(i)
                    .map_or("(end of trace)".to_string(), |e| e.to_json_line())
            );
            return Outcome::Internal;
        }
        eprintln!(
            "tenure: deterministic: two runs gave identical traces ({})",
            crate::plural(a.len() as u64, "event", "events")
        );
    }

    // A trace cut at its limit is not written as if it were whole.
    let mut trace_refused = false;
    if let (Some(out), Some(trace)) = (&args.trace, &report.trace) {
        if let Some(cut) = &report.stats.trace_cut {
            eprintln!("tenure: --trace {}: not written: {cut}", out.display());
            trace_refused = true;
        } else if let Err(o) = write_trace(out, trace) {
            return o;
        }
    }
    if let (Some(cut), Some(_), false) = (&report.stats.trace_cut, &args.timeline, trace_refused) {
        eprintln!("tenure: the timeline shows messages and timers up to the trace's limit: {cut}");
    }

    if let Some(out) = &args.history {
        let edn = tenure_check::linearizability::checker::client_history_edn(&report.history);
        if let Err(e) = std::fs::write(out, &edn) {
            eprintln!("tenure: cannot write {}: {e}", out.display());
            return Outcome::BadInput;
        }
        eprintln!(
            "tenure: wrote the client history ({} events) to {}",
            edn.lines().count(),
            out.display()
        );
    }

    if let Some(out) = &args.timeline {
        let html = tenure_timeline::render(&s.name, &prepared.cluster, &report);
        if let Err(e) = std::fs::write(out, html) {
            eprintln!("tenure: cannot write {}: {e}", out.display());
            return Outcome::BadInput;
        }
        eprintln!("tenure: wrote the timeline to {}", out.display());
    }

    if let Some(out) = &args.audit {
        let log = tenure_audit::leadership_log(&report.history);
        if let Err(e) = std::fs::write(out, log.to_jsonl()) {
            eprintln!("tenure: cannot write {}: {e}", out.display());
            return Outcome::BadInput;
        }
        eprintln!(
            "tenure: wrote {} leadership transition{} to {}; head {}",
            log.entries.len(),
            if log.entries.len() == 1 { "" } else { "s" },
            out.display(),
            log.head()
        );
    }

    let metrics = args.metrics.then(|| crate::run_metrics::of(&report));
    if args.json {
        let mut json = json_report(s, &file, &report);
        if let Some(m) = &metrics {
            json["metrics"] = serde_json::to_value(m).expect("metrics serialize");
        }
        println!("{}", serde_json::to_string_pretty(&json).expect("json"));
    } else {
        let label = protocol_label(s);
        let stats = &report.stats;
        let overall = report.overall();
        let tally = tenure_check::verdict::Tally::of(&report.verdicts);
        let names = |pick: fn(&tenure_check::Verdict) -> bool| -> Vec<&str> {
            report
                .verdicts
                .iter()
                .filter(|v| pick(&v.verdict))
                .map(|v| v.check.as_str())
                .collect()
        };
        match overall {
            tenure_check::Overall::Fail => {
                for v in &report.violations {
                    anstream::println!(
                        "{} {file} ({label}) seed {seed}: {} violated at {}",
                        crate::colour::fail("FAIL"),
                        v.checker,
                        v.time
                    );
                    println!("  {}", v.message);
                    println!("  events leading to it (* = involved):");
                    for line in narrative(&report, v, 16) {
                        println!("  {line}");
                    }
                }
            }
            tenure_check::Overall::Pass => anstream::println!(
                "{} {file} ({label}) seed {seed}: {} passed [{}]; {} simulated, {}",
                crate::colour::pass("PASS"),
                crate::plural(tally.passed, "check", "checks"),
                names(|v| v.is_pass()).join(", "),
                tenure_core::format_duration(s.duration),
                crate::plural(stats.messages_sent, "message", "messages")
            ),
            tenure_check::Overall::NotJudged => anstream::println!(
                "{} {file} ({label}) seed {seed}: {}; {} simulated, {}",
                crate::colour::fail("NOT JUDGED"),
                tally.words(),
                tenure_core::format_duration(s.duration),
                crate::plural(stats.messages_sent, "message", "messages")
            ),
        }
        if overall != tenure_check::Overall::Pass {
            let passed = names(|v| v.is_pass());
            if !passed.is_empty() {
                println!("  passed: {}", passed.join(", "));
            }
        }
        if s.checks.is_empty() {
            println!(
                "  not judged: the scenario lists no checks and {} promises none: nothing \
                 was judged",
                s.protocol.name
            );
        }
        for line in not_judged_lines(&report) {
            println!("  not judged: {line}");
        }
        println!(
            "  the scenario expects {}: {}",
            expectation_text(&s.expect),
            if report.expectation_met {
                "met"
            } else {
                "NOT met"
            }
        );
        if !report.passed() {
            println!("  replay: {}", replay_command(&file, seed));
        }
        let beyond = beyond_lines(&report);
        if !beyond.is_empty() {
            println!(
                "  beyond {}'s declared assumptions (the verdict stands, outside what it \
                 was designed for):",
                s.protocol.name
            );
            for line in beyond {
                println!("    {line}");
            }
        }
        if let Some(m) = &metrics {
            println!("metrics:");
            for line in tenure_metrics::text(m) {
                println!("  {line}");
            }
        }
        // Last, so the verdict and its story come first: what each check judged (a
        // check that judged nothing has not passed) and the durability hints.
        for line in judged_lines(&prepared, &report) {
            println!("{line}");
        }
        for line in crate::report::hint_lines(&report) {
            println!("{line}");
        }
    }
    for line in unexpected_not_judged(&prepared, &report) {
        eprintln!("tenure: {file} seed {seed}: {line}");
    }
    if trace_refused {
        Outcome::BadInput
    } else {
        outcome_of(report.overall())
    }
}
