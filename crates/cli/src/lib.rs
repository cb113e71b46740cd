//! `tenure`: run, verify and explore coordination-protocol scenarios.
//!
//! The command line is a library: [`main`] takes a [`Catalogue`], so an outside crate
//! gets every command (`run`, `verify`, `fuzz`, `shrink`, `compare`, `check-model`,
//! timelines) for its own protocols with one line in its `src/bin/` (see the tutorial and
//! `examples/my-election`). The `tenure` binary is `main(tenure_zoo::Zoo)`.
//!
//! Exit codes: 0 every check judged and passed (or every scenario met its expectation),
//! 1 a check failed, 2 bad input or usage, 3 internal error (a bug in tenure or a
//! protocol, nondeterminism included), 4 (`fuzz`) stopped by Ctrl-C or SIGTERM with
//! nothing failed, 5 nothing failed but a check was not judged (vacuous, could not
//! fail, too short, undecided): never a pass.

mod cmd_audit;
mod cmd_check_history;
mod cmd_check_model;
mod cmd_check_trace;
mod cmd_cluster;
mod cmd_compare;
mod cmd_experiment;
mod cmd_fuzz;
mod cmd_list;
mod cmd_node;
mod cmd_real;
mod cmd_run;
mod cmd_shrink;
mod cmd_verify;
mod colour;
mod compare_updates;
mod fuzz_report;
mod junit;
mod output;
mod progress;
mod proxy;
mod real_verdict;
mod report;
mod run_metrics;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tenure_core::Catalogue;
use tenure_sim::Protocols;

/// What every command needs to know: the protocols it may run (from the catalogue given
/// to [`main`]) and those the model checker explores.
pub struct Tools {
    pub protocols: Protocols,
    pub models: tenure_models::Models,
    /// The protocols that run as real processes (`node`, `cluster`).
    pub launchers: tenure_runtime::Launchers,
}

impl Tools {
    /// The protocols the simulator runs and those the model checker explores, built
    /// already (e.g. `tenure_zoo_prebuilt::protocols()` and `tenure_zoo_prebuilt::models()`, which compile
    /// them once for every binary that links them); none runs as a real process
    /// ([`Tools::with_launchers`]).
    pub fn new(protocols: Protocols, models: tenure_models::Models) -> Tools {
        Tools {
            protocols,
            models,
            launchers: tenure_runtime::Launchers::default(),
        }
    }

    /// With these protocols runnable as real processes (`node`, `cluster`).
    pub fn with_launchers(mut self, launchers: tenure_runtime::Launchers) -> Tools {
        self.launchers = launchers;
        self
    }

    pub fn of<C: Catalogue>(catalogue: &C) -> Tools {
        Tools {
            protocols: Protocols::of(catalogue),
            models: tenure_models::Models::of(catalogue),
            launchers: tenure_runtime::Launchers::default(),
        }
    }

    /// With the protocols of `real` runnable as real processes too.
    pub fn with_real<R: tenure_core::RealCatalogue>(mut self, real: &R) -> Tools {
        self.launchers = tenure_runtime::Launchers::of(real);
        self
    }
}

/// The heading the scenario and run limits (`--max-*`, global flags) are grouped under
/// in every command's help, after the command's own options.
const LIMITS: &str = "Limits (every command)";

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
    /// Longest simulated `duration` a scenario may ask for (default 1h).
    #[arg(long, global = true, help_heading = LIMITS, value_name = "DURATION", value_parser = parse_duration)]
    max_duration: Option<std::time::Duration>,
    /// Most nodes a scenario's cluster may have (default 2048).
    #[arg(long, global = true, help_heading = LIMITS, value_name = "N")]
    max_nodes: Option<u32>,
    /// Most `[[fault]]` events a scenario may list (default 10000).
    #[arg(long, global = true, help_heading = LIMITS, value_name = "N")]
    max_faults: Option<usize>,
    /// Most messages a run may have in flight at once (default 1000000); a run over it
    /// stops with an error.
    #[arg(long, global = true, help_heading = LIMITS, value_name = "N", value_parser = parse_positive)]
    max_in_flight: Option<usize>,
    /// Most trace events a run keeps for --trace, timelines and determinism checks
    /// (default 2000000, about 200 MB of JSON lines).
    #[arg(long, global = true, help_heading = LIMITS, value_name = "N", value_parser = parse_positive)]
    max_trace_events: Option<usize>,
}

/// A limit: a whole number from 1 up.
fn parse_positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    tenure_core::parse_duration(text)
}

impl Cli {
    /// The scenario limits: the defaults, raised (or lowered) by the flags.
    fn limits(&self) -> tenure_scenario::Limits {
        let d = tenure_scenario::Limits::DEFAULT;
        tenure_scenario::Limits {
            max_duration: self.max_duration.unwrap_or(d.max_duration),
            max_nodes: self.max_nodes.unwrap_or(d.max_nodes),
            max_fault_events: self.max_faults.unwrap_or(d.max_fault_events),
            max_in_flight: self.max_in_flight.unwrap_or(d.max_in_flight),
            max_trace_events: self.max_trace_events.unwrap_or(d.max_trace_events),
        }
    }
}

const EXIT_CODES: &str =
    "Exit codes: 0 every check judged and passed (verify: every scenario met its expectation), 1 a check failed, 2 bad input or usage, 3 internal error (nondeterminism included), 4 (fuzz) stopped by Ctrl-C or SIGTERM with nothing failed, 5 nothing failed but a check was not judged (vacuous, could not fail, too short, undecided): never a pass.\n\
Limits: scenarios may simulate at most 1h on at most 2048 nodes with at most 10000 fault events; \
a file over a limit is refused (exit 2) naming the field and the limit. Raise them with \
--max-duration, --max-nodes, --max-faults. A run may have at most 1000000 messages in flight \
(--max-in-flight: a run over it stops, exit 2) and keeps at most 2000000 trace events \
(--max-trace-events: a --trace over it is not written, exit 2).\n\
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
    /// Check a client history (Jepsen EDN, Porcupine/Jepsen log, JSON lines) for
    /// linearizability against a model: 0 linearizable, 1 not, 3 unknown after --timeout.
    CheckHistory(cmd_check_history::CheckHistoryArgs),
    /// Run one node of a scenario's protocol as a real process (UDP on loopback, the
    /// OS's clocks, storage in a directory): what `tenure cluster` starts.
    Node(cmd_node::NodeArgs),
    /// Run a scenario's cluster as real processes on this machine, apply its crashes,
    /// restarts and pauses for real, and judge the nodes' logs. Not deterministic.
    Cluster(cmd_cluster::ClusterArgs),
    /// Judge the observation logs of a real run (tenure-runtime) with the checkers.
    CheckTrace(cmd_check_trace::CheckTraceArgs),
    /// Run a scenario's lock clients against real servers (redis-server) on loopback,
    /// apply its pauses and crashes for real, and judge the history; or, with --table,
    /// the validation table (simulator and real runs side by side). Not deterministic.
    Real(cmd_real::RealArgs),
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    CheckFailed,
    BadInput,
    Internal,
    /// Stopped by a signal (Ctrl-C, SIGTERM) before the work was done, nothing failed.
    Interrupted,
    /// Nothing failed, but a check was not judged (never a pass).
    NotJudged,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Passed => 0,
            Outcome::CheckFailed => 1,
            Outcome::BadInput => 2,
            Outcome::Internal => 3,
            Outcome::Interrupted => 4,
            Outcome::NotJudged => 5,
        }
    }
}

/// What every error tenure reports starts with, whatever the subcommand (clap's usage
/// errors included): one voice, so a script or a person can spot errors alike.
pub const ERROR_PREFIX: &str = "tenure: ";

/// Reports an error on stderr: [`ERROR_PREFIX`] and the message.
pub fn error(message: impl std::fmt::Display) {
    eprintln!("{ERROR_PREFIX}{message}");
}

/// Reports bad input (see [`error`]); the command then exits 2.
pub fn bad_input(message: impl std::fmt::Display) -> Outcome {
    error(message);
    Outcome::BadInput
}

/// A clap usage error as tenure reports it: with [`ERROR_PREFIX`] instead of clap's
/// `error: `, and without clap's tip to write `-- -5` for a value that starts with a
/// hyphen (after `--` clap takes no more flags, so the tip does not work): tenure's
/// seeds, counts and durations are never negative, so it says that instead.
fn usage_error(e: &clap::Error, args: &[String]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidArg) {
            let negative = value
                .strip_prefix('-')
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
            // clap names `-5` for `-5s` or `-5..2`: find the whole argument.
            let at = args.iter().position(|a| a.starts_with(value.as_str()));
            let flag = at
                .and_then(|i| i.checked_sub(1))
                .map(|i| args[i].as_str())
                .filter(|f| f.starts_with("--"));
            if let (true, Some(flag), Some(at)) = (negative, flag, at) {
                return format!(
                    "{ERROR_PREFIX}{flag} {}: a negative value; seeds, counts and durations \
                     are never negative\n",
                    args[at]
                );
            }
        }
    }
    let text = e.render().to_string();
    match text.strip_prefix("error: ") {
        Some(rest) => format!("{ERROR_PREFIX}{rest}"),
        None => format!("{ERROR_PREFIX}{text}"),
    }
}

/// `message` (an error ending in a list of known names, `...: a, b, c`) with "did you
/// mean" added when one of those names is close to `name`.
pub fn suggest_in(message: &str, name: &str) -> String {
    let list = message.rsplit_once(": ").map_or("", |(_, l)| l);
    let names = list
        .split(", ")
        .map(|n| n.trim_matches(|c: char| c == '`' || c == '.' || c.is_whitespace()));
    format!(
        "{message}{}",
        tenure_scenario::suggest::did_you_mean(name, names)
    )
}

/// The most worker threads `--jobs` may ask for.
pub const MAX_JOBS: usize = 256;

/// `--jobs N`: from 1 to [`MAX_JOBS`] (0 used to mean 1 silently; 100000 threads would
/// only exhaust the machine).
pub fn parse_jobs(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of worker threads"))?;
    match n {
        0 => Err("must be at least 1".to_string()),
        n if n > MAX_JOBS => Err(format!(
            "{n} is more than the limit of {MAX_JOBS} worker threads"
        )),
        n => Ok(n),
    }
}

/// `1 seed`, `2 seeds`: a count with its noun in the right number.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What a process killed by SIGPIPE reports in a shell (128 + 13).
pub const CLOSED_PIPE_EXIT: i32 = 141;

/// Rust ignores SIGPIPE, so when the reader of tenure's output goes away (`tenure run X
/// | head`) the next `println!` panics, which would report an internal error with a
/// backtrace. Like a command-line tool killed by SIGPIPE, tenure instead ends quietly
/// (exit 141). Every other panic goes to the default hook as before.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE_EXIT);
        }
        default(info)
    }));
}

/// The path as the user would type it again (for replay commands).
pub fn shown(path: &std::path::Path) -> String {
    path.display().to_string()
}

/// The `tenure` command line over `catalogue`'s protocols: parses the arguments, runs
/// the command and returns its exit code (0 passed, 1 a check failed, 2 bad input, 3
/// internal error).
/// The command that runs this program, as a replay hint should name it: `tenure` for the
/// zoo's binary, `cargo run -p my-election --` for an outside crate's own command line
/// run by cargo, else the path it was started by.
pub fn program() -> &'static str {
    PROGRAM.get_or_init(detect_program)
}

static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn detect_program() -> String {
    let arg0 = std::env::args_os().next().map(std::path::PathBuf::from);
    let stem = arg0
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "tenure".to_string());
    if stem == "tenure" {
        return stem;
    }
    // Run by cargo (`cargo run -p NAME`, or a test of the package): cargo sets the
    // package's name in the program's environment.
    if let Ok(package) = std::env::var("CARGO_PKG_NAME") {
        let release = arg0
            .as_ref()
            .is_some_and(|p| p.components().any(|c| c.as_os_str() == "release"));
        let bin = if stem == package {
            String::new()
        } else {
            format!(" --bin {stem}")
        };
        return format!(
            "cargo run{} -p {package}{bin} --",
            if release { " --release" } else { "" }
        );
    }
    arg0.map_or(stem, |p| p.display().to_string())
}

pub fn main<C: Catalogue>(catalogue: C) -> ExitCode {
    main_real(catalogue, tenure_core::NoRealProtocols)
}

/// [`main`], with the protocols `real` lists also runnable as real processes (`tenure
/// node`, `tenure cluster`).
pub fn main_real<C: Catalogue, R: tenure_core::RealCatalogue>(catalogue: C, real: R) -> ExitCode {
    Main::new(catalogue).real(real).run()
}

/// The whole `tenure` command line for a crate's own protocols, and its own checkers:
///
/// ```no_run
/// # use tenure_cli::Main;
/// # struct MyProtocols;
/// # impl tenure_core::Catalogue for MyProtocols {
/// #     fn visit<V: tenure_core::Visitor>(&self, _v: &mut V) {}
/// # }
/// # fn my_checker() -> tenure_check::custom::CustomChecker { unimplemented!() }
/// fn main() -> std::process::ExitCode {
///     Main::new(MyProtocols).checker(my_checker()).run()
/// }
/// ```
///
/// A checker given here is [registered](tenure_check::custom::register) before the
/// command runs, so its name works in scenario files, promises, `fuzz`, `shrink`,
/// `check-model`, `check-trace` and `checks` alike. A checker that may not be
/// registered (a built-in's name, or a name taken by another) is refused before any
/// command runs: exit 2, with the reason.
pub struct Main<C, R = tenure_core::NoRealProtocols> {
    catalogue: C,
    real: R,
    checkers: Vec<tenure_check::custom::CustomChecker>,
}

impl<C: Catalogue> Main<C> {
    pub fn new(catalogue: C) -> Main<C> {
        Main {
            catalogue,
            real: tenure_core::NoRealProtocols,
            checkers: Vec::new(),
        }
    }
}

impl<C: Catalogue, R: tenure_core::RealCatalogue> Main<C, R> {
    /// The protocols `real` lists also run as real processes (`node`, `cluster`).
    pub fn real<R2: tenure_core::RealCatalogue>(self, real: R2) -> Main<C, R2> {
        Main {
            catalogue: self.catalogue,
            real,
            checkers: self.checkers,
        }
    }

    /// A checker of the crate's own, by its name everywhere.
    pub fn checker(mut self, checker: tenure_check::custom::CustomChecker) -> Self {
        self.checkers.push(checker);
        self
    }

    /// Parses the command line, runs the command, and returns its exit code.
    pub fn run(self) -> ExitCode {
        for checker in self.checkers {
            let name = checker.info().name;
            if let Err(e) = tenure_check::custom::register(checker) {
                eprintln!("error: this program's checker `{name}` cannot be used: {e}");
                return ExitCode::from(Outcome::BadInput.code());
            }
        }
        let (catalogue, real) = (self.catalogue, self.real);
        run_command_line(&|| Tools::of(&catalogue).with_real(&real))
    }
}

/// The whole `tenure` command line over tools built already ([`Tools::new`]): what the
/// `tenure` binary runs, with the zoo's prebuilt registries, so that it does not compile
/// the simulator for every protocol of the zoo again.
pub fn main_with(tools: Tools) -> ExitCode {
    let tools = std::cell::Cell::new(Some(tools));
    run_command_line(&|| tools.take().expect("the tools are built once"))
}

/// Not generic: the code of every command is compiled once, whatever the catalogue.
fn run_command_line(make_tools: &dyn Fn() -> Tools) -> ExitCode {
    quiet_on_closed_pipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: not errors.
            let _ = e.print();
            return ExitCode::from(Outcome::Passed.code());
        }
        Err(e) => {
            let args: Vec<String> = std::env::args().collect();
            eprint!("{}", usage_error(&e, &args));
            return ExitCode::from(Outcome::BadInput.code());
        }
    };
    tenure_sim::log::init_logging();
    tenure_scenario::set_limits(cli.limits());
    let tools = make_tools();
    let tools = &tools;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match cli.command {
        Command::Run(args) => cmd_run::run(args, tools),
        Command::Verify(args) => cmd_verify::verify(args, tools),
        Command::List(args) => cmd_list::list(args, tools),
        Command::Compare(args) => cmd_compare::compare(args, tools),
        Command::Experiment(args) => cmd_experiment::experiment(args),
        Command::CheckModel(args) => cmd_check_model::check_model(args, tools),
        Command::Fuzz(args) => cmd_fuzz::run(args, tools),
        Command::Shrink(args) => cmd_shrink::run(args, tools),
        Command::CheckHistory(args) => cmd_check_history::run(args),
        Command::Audit(args) => cmd_audit::run(args),
        Command::Node(args) => cmd_node::run(args, tools),
        Command::Cluster(args) => cmd_cluster::run(args, tools),
        Command::CheckTrace(args) => cmd_check_trace::run(args),
        Command::Real(args) => cmd_real::run(args, tools),
    }));
    match result {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(_) => {
            error("internal error (the panic message is above). This is a bug in tenure or in a protocol; please report it with the command you ran.");
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
