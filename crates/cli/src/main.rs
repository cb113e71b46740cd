//! `tenure`: run, verify and explore coordination-protocol scenarios.
//!
//! Exit codes: 0 every check passed (or every scenario met its expectation), 1 a check
//! failed, 2 bad input or usage, 3 internal error (a bug in tenure or a protocol,
//! nondeterminism included).

mod cmd_audit;
mod cmd_check_model;
mod cmd_compare;
mod cmd_experiment;
mod cmd_fuzz;
mod cmd_list;
mod cmd_run;
mod cmd_shrink;
mod cmd_verify;
mod report;
mod run_metrics;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Deterministic simulation and verification of leader election, leases, locks,
/// fencing tokens and idempotent retries.
#[derive(Parser, Debug)]
#[command(
    name = "tenure",
    version,
    about = "Deterministic simulation and verification of leader election, leases, locks, fencing tokens and idempotent retries.",
    long_about = None,
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str =
    "Exit codes: 0 all checks passed, 1 a check failed, 2 bad input or usage, 3 internal error.\n\
Logs: set RUST_LOG (e.g. RUST_LOG=info) to see faults and events, stamped with simulated time.";

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario file with one seed and judge its checks.
    Run(cmd_run::RunArgs),
    /// Run scenario files and check each meets its declared expectation.
    Verify(cmd_verify::VerifyArgs),
    /// Compare variants of a protocol (or several scenarios) over the same seeds.
    Compare(cmd_compare::CompareArgs),
    /// List protocols (with roles and variants), checkers and fault kinds.
    List(cmd_list::ListArgs),
    /// Run an experiment: many seeded simulations summarised as a table and plots.
    Experiment(cmd_experiment::ExperimentArgs),
    /// Explore a protocol exhaustively within bounds (or by random walks) with the
    /// model checker, over the same protocol code the simulator runs.
    CheckModel(cmd_check_model::CheckModelArgs),
    /// Run many seeds, each drawing its own faults from a profile; save every failure.
    Fuzz(cmd_fuzz::FuzzArgs),
    /// Cut a failing scenario down to a minimal one that fails the same way.
    Shrink(cmd_shrink::ShrinkArgs),
    /// Check a tamper-evident leadership log written by `tenure run --audit`.
    Audit(cmd_audit::AuditArgs),
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    CheckFailed,
    BadInput,
    Internal,
}

impl Outcome {
    fn code(self) -> u8 {
        match self {
            Outcome::Passed => 0,
            Outcome::CheckFailed => 1,
            Outcome::BadInput => 2,
            Outcome::Internal => 3,
        }
    }
}

/// The path as the user would type it again (for replay commands).
pub fn shown(path: &std::path::Path) -> String {
    path.display().to_string()
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    tenure_sim::log::init_logging();
    let result = std::panic::catch_unwind(|| match cli.command {
        Command::Run(args) => cmd_run::run(args),
        Command::Verify(args) => cmd_verify::verify(args),
        Command::List(args) => cmd_list::list(args),
        Command::Compare(args) => cmd_compare::compare(args),
        Command::Experiment(args) => cmd_experiment::experiment(args),
        Command::CheckModel(args) => cmd_check_model::check_model(args),
        Command::Fuzz(args) => cmd_fuzz::run(args),
        Command::Shrink(args) => cmd_shrink::run(args),
        Command::Audit(args) => cmd_audit::run(args),
    });
    match result {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(_) => {
            eprintln!("tenure: internal error (the panic message is above). This is a bug in tenure or in a protocol; please report it with the command you ran.");
            ExitCode::from(Outcome::Internal.code())
        }
    }
}

/// Every `*.toml` under `paths` (files as given, directories recursively), sorted.
pub fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            collect(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn collect(dir: &std::path::Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    Ok(())
}
