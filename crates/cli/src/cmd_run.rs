//! `tenure run FILE`: one scenario, one seed.

use crate::report::{expectation_text, json_report, narrative, protocol_label, replay_command};
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
    /// Knossos, Elle or Porcupine. Refuses to overwrite an existing file.
    #[arg(long, value_name = "OUT.edn")]
    history: Option<PathBuf>,
    /// Print a JSON report on stdout instead of text.
    #[arg(long)]
    json: bool,
    /// Run the seed twice and fail (exit 3) on any difference in the trace.
    #[arg(long)]
    check_determinism: bool,
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

/// Refuses to write an output over an input.
pub fn check_output(out: &std::path::Path, inputs: &[&std::path::Path]) -> Result<(), Outcome> {
    for input in inputs {
        if std::fs::canonicalize(out)
            .ok()
            .is_some_and(|o| std::fs::canonicalize(input).ok() == Some(o))
        {
            eprintln!(
                "tenure: refusing to write {} over the input file {}",
                out.display(),
                input.display()
            );
            return Err(Outcome::BadInput);
        }
    }
    Ok(())
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
    for out in args.trace.iter().chain(&args.timeline) {
        if let Err(o) = check_output(out, &[&args.file]) {
            return o;
        }
    }
    if let Some(out) = &args.history {
        if out.exists() {
            eprintln!(
                "tenure: refusing to overwrite {}: --history writes a new file",
                out.display()
            );
            return Outcome::BadInput;
        }
    }
    let file = shown(&args.file);
    let s: &Scenario = &prepared.scenario;
    let seed = args.seed.unwrap_or(s.seed);
    eprintln!(
        "tenure: {file} ({}, {} nodes, {} simulated) seed {seed}",
        protocol_label(s),
        prepared.cluster.size(),
        tenure_core::format_duration(s.duration)
    );
    let options = RunOptions {
        trace: true,
        stop_at_first_violation: false,
    };
    let report = prepared.run(seed, &options);

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
            "tenure: deterministic: two runs gave identical traces ({} events)",
            a.len()
        );
    }

    if let (Some(out), Some(trace)) = (&args.trace, &report.trace) {
        if let Err(o) = write_trace(out, trace) {
            return o;
        }
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

    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json_report(s, &file, &report)).expect("json")
        );
    } else {
        let label = protocol_label(s);
        let names: Vec<&str> = s.checks.iter().map(|c| c.name.as_str()).collect();
        let stats = &report.stats;
        if report.passed() {
            println!(
                "PASS {file} ({label}) seed {seed}: {} check{} passed [{}]; {} simulated, {} messages",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                tenure_core::format_duration(s.duration),
                stats.messages_sent
            );
        } else {
            for v in &report.violations {
                println!(
                    "FAIL {file} ({label}) seed {seed}: {} violated at {}",
                    v.checker, v.time
                );
                println!("  {}", v.message);
                println!("  events leading to it (* = involved):");
                for line in narrative(&report, v, 10) {
                    println!("  {line}");
                }
            }
            let passed: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| !report.violations.iter().any(|v| v.checker == *n))
                .collect();
            if !passed.is_empty() {
                println!("  passed: {}", passed.join(", "));
            }
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
    }
    if report.passed() {
        Outcome::Passed
    } else {
        Outcome::CheckFailed
    }
}
