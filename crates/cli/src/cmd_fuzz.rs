//! `tenure fuzz`: many seeds of a scenario (or a protocol's built-in default), each
//! drawing its own faults from a profile; every failure saved as a replayable file.

use crate::progress::{Mode, Progress};
use crate::report::replay_command;
use crate::Tools;
use crate::{shown, Outcome};
use clap::Args;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tenure_fuzz::{
    case_stem, fuzz, shard, FuzzOptions, ReportBuilder, SeedLine, SeedOutcome, SeedResult,
    ShrunkLine, Target, DEFAULT_KEEP, PROFILE_NAMES,
};

const AFTER_HELP: &str = "\
Each seed draws its own fault rates from the profile (swarm testing), then an explicit
timeline of faults inside the fault window, a heal, and a liveness phase. Profiles: calm,
partitions, clocks, pauses, crashes, chaos (the default), beyond, field, power, byzantine. A
scenario's [profile] table (name = \"chaos\" plus any knob) overrides the profile's knobs.

Outcomes are reported in seed order, so they are the same whatever --jobs is, and the
JSON lines of --shard 1/N ... N/N concatenated are those of the whole range (except that
each run keeps the first --keep failures of each check in its own seeds).

Triage: the first --keep (3) failing seeds of each check are saved under --out as
<protocol>-<variant>-seed<N>-<checker>.toml and shrunk (<same>.shrunk.toml), and grouped
by check and shrunk fault schedule; the first of each group gets an HTML timeline
(--timelines). Later failures of that check are listed by seed (--print SEED draws any).
A rerun that finds the same case keeps the file it wrote; a different file is never
overwritten. Replay and shrink any saved case:
    tenure run <file> --seed N      replays it exactly
    tenure shrink <file> --seed N   cuts it down to the faults that matter

Regression corpus: when tenure-regressions/ exists (or with --regressions DIR), the seeds
in its <protocol>-<variant>-<profile>.txt run first, and the first seed of each new
failure group is added to it. Commit the folder; the book's CI page shows how.

CI: --junit FILE writes JUnit XML; `tenure fuzz merge DIR...` combines shards' --out
folders (each with its --json lines saved as a *.jsonl file) into one report. Templates
for GitHub Actions and Kubernetes: templates/ in the repository.

Stopping: --time, --max-failures, Ctrl-C or SIGTERM (what a CI timeout sends) stop
cleanly: seeds in flight finish, every failure found is saved, and the report covers
what ran and names the seeds covered. Progress goes to stderr: a bar on a terminal, a
line every 10 s in a log.

Examples:
    tenure fuzz --protocol raft --variant forget-vote --seeds 0..200
    tenure fuzz scenarios/raft/leader-crash.toml --profile partitions --time 60s
    tenure fuzz --protocol redlock --seeds 0..100000 --shard 3/8 --json --out out/3 > out/3/seeds.jsonl
    tenure fuzz merge out/*/ --junit fuzz.xml

After the seeds, the coverage: per check, in how many seeds it judged anything (a check
that judged nothing has not passed); per drawn fault kind, in how many seeds it landed
while a leader or lock holder existed. Low coverage is flagged. A check that judges
nothing in any of the first 20 seeds stops the run (exit 2).

Exit codes: 0 no seed failed, 1 a seed failed, 2 bad input or a check that judges
nothing, 3 nondeterminism or a panic, 4 stopped by Ctrl-C or SIGTERM before the range
was covered, with no seed failed.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
// One of FILE and --protocol, so that an error names both.
#[command(group(clap::ArgGroup::new("what").required(true).args(["file", "protocol"])))]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct FuzzArgs {
    /// The scenario file to fuzz (or use --protocol).
    #[arg(conflicts_with = "protocol")]
    file: Option<PathBuf>,
    /// Fuzz a zoo protocol's built-in scenario: its default cluster and parameters,
    /// checking what its broken variants break, plus liveness.
    #[arg(long, value_name = "NAME")]
    protocol: Option<String>,
    /// The variant to fuzz (default: the protocol's `correct`, or the scenario's).
    #[arg(long, value_name = "V")]
    variant: Option<String>,
    /// The fault profile: calm, partitions, clocks, pauses, crashes, chaos, beyond, field
    /// or power.
    #[arg(long, value_name = "P")]
    profile: Option<String>,
    /// The seeds to run, A..B (B excluded). Default 0..1000, or 0.. with --time.
    #[arg(long, value_name = "A..B")]
    seeds: Option<String>,
    /// Run seeds for this long of real time (e.g. 60s, 10m) instead of a fixed range.
    #[arg(long, value_name = "DURATION")]
    time: Option<String>,
    /// Worker threads (default: the available cores).
    #[arg(long, value_name = "N", value_parser = crate::parse_jobs)]
    jobs: Option<usize>,
    /// Run only block K of N contiguous blocks of the seed range (K from 1).
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// One JSON object per seed on stdout, each with its coverage; the summary goes to
    /// stderr, its last line a JSON object (`{"summary": ...}`).
    #[arg(long)]
    json: bool,
    /// Where failing cases are written.
    #[arg(long, value_name = "DIR", default_value = "tenure-out")]
    out: PathBuf,
    /// Run every seed twice and fail (exit 3) at the first trace difference.
    #[arg(long)]
    check_determinism: bool,
    /// Stop after this many failing seeds (in seed order; 1 stops at the first).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_failures: Option<u64>,
    /// Print the scenario file that seed SEED draws (its explicit fault timeline) on
    /// stdout and run nothing: `tenure run` of that file with that seed is that run.
    #[arg(long, value_name = "SEED")]
    print: Option<u64>,
    /// Failing seeds kept per check, in seed order: saved as cases, shrunk, grouped by
    /// shrunk fault schedule. The rest are listed by seed (`--print SEED` draws any).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_KEEP, value_parser = parse_keep)]
    keep: usize,
    /// HTML timelines: of the first kept case of each group, of every kept case, or none.
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = Timelines::First)]
    timelines: Timelines,
    /// Also write a JUnit XML report here for CI test tabs (never over an existing file).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// The regression corpus folder: seeds listed in its file for this protocol,
    /// variant and profile run first, and the first seed of each new failure group is
    /// added. Default: tenure-regressions/, when that folder exists.
    #[arg(long, value_name = "DIR")]
    regressions: Option<PathBuf>,
    /// Neither read nor add to a regression corpus.
    #[arg(long, conflicts_with = "regressions")]
    no_regressions: bool,
    #[command(subcommand)]
    command: Option<FuzzCommand>,
}

/// `A..B` as a range.
pub fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("--seeds `{text}`: write a range such as 0..1000"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| match s.trim().bytes().all(|b| b.is_ascii_digit()) {
                true if !s.trim().is_empty() => format!(
                    "--seeds `{text}`: `{s}` is too large: seeds go up to {}",
                    u64::MAX
                ),
                _ => format!("--seeds `{text}`: `{s}` is not a seed (a whole number)"),
            })
    };
    let (a, b) = (num(a)?, num(b)?);
    if a > b {
        return Err(format!("--seeds `{text}`: the start is above the end"));
    }
    if a == b {
        return Err(format!(
            "--seeds `{text}`: the range is empty (B is excluded): write A..B with A < B, e.g. {a}..{}",
            a.saturating_add(1)
        ));
    }
    Ok(a..b)
}

/// `K/N` as a 0-based block index and a count.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--shard `{text}`: write K/N with 1 <= K <= N, e.g. 2/8");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || k > n {
        return Err(bad());
    }
    Ok((k - 1, n))
}

/// Real seconds since the first call: for progress lines, throughput and `--time` only.
/// It never affects a run.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
pub(crate) fn wall_seconds() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
}

/// Replays a saved case with the full trace and writes its HTML timeline next to it
/// (`<case>.html`), unless a file of that name exists already (then that one is the
/// timeline). The path, if there is one.
fn write_timeline(
    protocols: &tenure_sim::Protocols,
    case_path: &Path,
    case: &tenure_scenario::Scenario,
    seed: u64,
) -> Option<PathBuf> {
    let out = case_path.with_extension("html");
    if out.exists() {
        // The timeline of this very case (its name follows the case's, and a case file
        // is reused only when its contents are the same).
        return Some(out);
    }
    let prepared = tenure_sim::Prepared::new(case.clone(), protocols).ok()?;
    let report = prepared.run(
        seed,
        &tenure_sim::RunOptions {
            trace: true,
            stop_at_first_violation: false,
        },
    );
    let html = tenure_timeline::render(&case.name, &prepared.cluster, &report);
    std::fs::write(&out, html).ok()?;
    Some(out)
}

/// Writes `contents` to `dir/<stem>.toml`, or `<stem>-2.toml`, ... : never over a file.
pub fn write_new(dir: &Path, stem: &str, suffix: &str, contents: &str) -> std::io::Result<PathBuf> {
    write_named(dir, stem, suffix, contents, false)
}

/// `dir/<stem><suffix>.toml`, then `-2`, `-3`, ...: the first name that is free (then
/// `contents` is written there) or, with `reuse`, that holds exactly `contents` already.
fn write_named(
    dir: &Path,
    stem: &str,
    suffix: &str,
    contents: &str,
    reuse: bool,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for n in 1u32.. {
        let name = if n == 1 {
            format!("{stem}{suffix}.toml")
        } else {
            format!("{stem}{suffix}-{n}.toml")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(contents.as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if reuse && std::fs::read(&path).is_ok_and(|old| old == contents.as_bytes()) {
                    return Ok(path);
                }
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("u32 names run out")
}

/// Checks before any seed runs that failing cases can be written into `dir`: it is a
/// folder or can be made one, and a file can be created in it. Leaves nothing behind:
/// folders made for the check and the probe file are removed again.
pub fn check_out_dir(dir: &Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {shown}: is a file; --out names the folder failing cases go into"
        ));
    }
    // The folders the check makes, outermost last.
    let made: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .map(Path::to_path_buf)
        .collect();
    let result = std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {shown}: cannot create: {e}"))
        .and_then(|()| {
            let probe = dir.join(format!(".tenure-probe-{}", std::process::id()));
            std::fs::write(&probe, "")
                .and_then(|()| std::fs::remove_file(&probe))
                .map_err(|e| format!("--out {shown}: cannot write: {e}"))
        });
    for folder in &made {
        let _ = std::fs::remove_dir(folder); // only if still empty
    }
    result
}

fn bad(message: impl std::fmt::Display) -> Outcome {
    eprintln!("tenure: {message}");
    Outcome::BadInput
}

fn target(args: &FuzzArgs, tools: &Tools) -> Result<(Target, String), Outcome> {
    let profile = args.profile.as_deref();
    if let Some(p) = profile {
        if !PROFILE_NAMES.contains(&p) {
            return Err(bad(crate::suggest_in(
                &format!(
                    "--profile: unknown profile `{p}`; known profiles: {}",
                    PROFILE_NAMES.join(", ")
                ),
                p,
            )));
        }
    }
    match (&args.file, &args.protocol) {
        (Some(file), None) => {
            let mut scenario = tenure_scenario::load(file).map_err(bad)?;
            if let Some(v) = &args.variant {
                scenario.protocol.variant = v.clone();
            }
            let target = Target::from_scenario(&tools.protocols, scenario, profile).map_err(bad)?;
            Ok((target, shown(file)))
        }
        (None, Some(protocol)) => {
            let target =
                Target::for_protocol(&tools.protocols, protocol, args.variant.as_deref(), profile)
                    .map_err(|e| {
                        let name = match &args.variant {
                            Some(v) if !e.message.starts_with("unknown protocol") => v,
                            _ => protocol,
                        };
                        bad(crate::suggest_in(&e.message, name))
                    })?;
            let label = format!("{} (built in)", target.label());
            Ok((target, label))
        }
        _ => Err(bad("give a scenario file or --protocol NAME (not both)")),
    }
}

/// Which HTML timelines a run writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Timelines {
    /// The first kept case of each group (check and shrunk fault schedule).
    First,
    /// Every kept case.
    All,
    /// None (`tenure run CASE --seed N --timeline OUT.html` draws one later).
    None,
}

/// `tenure fuzz merge`.
#[derive(clap::Subcommand, Debug)]
pub enum FuzzCommand {
    /// Combine the outputs of shards (their --out folders, each holding the shard's
    /// `--json` lines saved as a *.jsonl file) into one report.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
#[command(after_help = MERGE_HELP)]
pub struct MergeArgs {
    /// The shards' folders.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The report as one JSON object per protocol/profile cell on stdout
    /// (`{"summary": ...}`, as `tenure fuzz --json` ends).
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report (never over an existing file).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Failing seeds per check shown as shrunk examples: the shards' --keep.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_KEEP, value_parser = parse_keep)]
    keep: usize,
}

const MERGE_HELP: &str = "\
Each DIR is one shard's --out folder with that shard's JSON lines saved in it:
    tenure fuzz --protocol raft --seeds 0..40000 --shard 3/8 --json --out out/3 > out/3/seeds.jsonl
Every *.jsonl file directly in a DIR is read. Lines are grouped by protocol/variant and
profile (one report each); a seed given twice (overlapping shards, a re-uploaded
artefact) counts once. Failures are grouped by check and shrunk fault schedule exactly
as one process over all the seeds groups them, and case paths are found under the DIR
they came with.

Exit codes: 0 no seed failed, 1 a seed failed, 2 bad input (no lines, a line that is not
a seed's JSON), 3 a panic or nondeterminism in some shard.";

fn parse_keep(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1 (the first failure of each check is always kept)".into()),
        Ok(n) if n > 1000 => Err(format!("{n} is more than 1000 kept cases per check")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// Writes `contents` to `dir/<stem><suffix>.toml` unless a file of that name holds
/// exactly `contents` already (a rerun finds the same case: no `-2` copy); else
/// `<stem><suffix>-2.toml`, ... : never over a different file.
pub fn write_new_or_same(
    dir: &Path,
    stem: &str,
    suffix: &str,
    contents: &str,
) -> std::io::Result<PathBuf> {
    write_named(dir, stem, suffix, contents, true)
}

/// The regression corpus file of `target` under `dir`: `<protocol or scenario>-<variant>-<profile>.txt`.
fn corpus_file(dir: &Path, args: &FuzzArgs, target: &Target) -> PathBuf {
    let what = match &args.file {
        Some(f) => f
            .file_stem()
            .map_or("scenario".to_string(), |s| s.to_string_lossy().to_string()),
        None => target.base.protocol.name.clone(),
    };
    let name = format!(
        "{what}-{}-{}",
        target.base.protocol.variant, target.profile.name
    );
    let file: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{file}.txt"))
}

/// The command that prints any seed's case of this run (`--print SEED` appended).
fn print_command(args: &FuzzArgs, target: &Target) -> String {
    let what = match &args.file {
        Some(f) => shown(f),
        None => format!("--protocol {}", target.base.protocol.name),
    };
    format!(
        "{} fuzz {what} --variant {} --profile {}",
        crate::program(),
        target.base.protocol.variant,
        target.profile.name
    )
}

/// Shrinks a kept failure and saves the result next to its case.
fn shrink_kept(
    tools: &Tools,
    f: &tenure_fuzz::Failure,
    seed: u64,
    case_path: &Path,
    out: &Path,
) -> Option<ShrunkLine> {
    let shrunk = tenure_fuzz::shrink(&tools.protocols, &f.case, seed).ok()?;
    let stem = case_path
        .file_stem()
        .map_or("case".to_string(), |s| s.to_string_lossy().to_string());
    let header = format!(
        "# Shrunk by `tenure fuzz` from {} (seed {seed}) in {} runs: still violates {}.\n\
         # Replay: {} run <this file> --seed {}\n\n",
        case_path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().to_string()),
        shrunk.runs,
        shrunk.checker,
        crate::program(),
        shrunk.seed
    );
    let path = write_new_or_same(
        out,
        &stem,
        ".shrunk",
        &format!("{header}{}", shrunk.scenario.to_toml()),
    )
    .ok();
    let clocks = &shrunk.scenario.clocks;
    let signature = tenure_fuzz::signature(&shrunk.scenario.faults);
    let signature = match shrunk.after.clocks {
        0 => signature,
        _ => {
            // Clocks set off are part of the schedule: `clock n1, clock n3` after it.
            let nodes: Vec<String> = clocks
                .iter()
                .filter(|c| c.offset.0 != 0 || c.drift != 0.0)
                .map(|c| format!("clock {}", c.node))
                .collect();
            match signature.as_str() {
                "no faults" => nodes.join(", "),
                _ => format!("{signature}, {}", nodes.join(", ")),
            }
        }
    };
    Some(ShrunkLine {
        signature,
        faults: shrunk.after.faults,
        clocks: shrunk.after.clocks,
        seed: shrunk.seed,
        case: path.map(|p| shown(&p)),
    })
}

pub fn run(args: FuzzArgs, tools: &Tools) -> Outcome {
    let mut args = args;
    if let Some(FuzzCommand::Merge(m)) = args.command.take() {
        return merge(m);
    }
    let (target, source) = match target(&args, tools) {
        Ok(t) => t,
        Err(o) => return o,
    };
    if let Some(seed) = args.print {
        print!(
            "# Drawn by `tenure fuzz` ({source}, profile {}) for seed {seed}.\n\
             # Replay: {} run <this file> --seed {seed}\n\n{}",
            target.profile.name,
            crate::program(),
            target.case(seed).to_toml()
        );
        return Outcome::Passed;
    }
    let time_budget = match args.time.as_deref().map(tenure_core::parse_duration) {
        None => None,
        Some(Ok(d)) if !d.is_zero() => Some(d),
        Some(Ok(_)) => return bad("--time must be longer than zero"),
        Some(Err(e)) => return bad(format!("--time: {e}")),
    };
    let mut seeds = match args.seeds.as_deref().map(parse_seeds) {
        None if time_budget.is_some() => 0..u64::MAX,
        None => 0..1000,
        Some(Ok(r)) => r,
        Some(Err(e)) => return bad(e),
    };
    if let Some(text) = &args.shard {
        if time_budget.is_some() && args.seeds.is_none() {
            return bad("--shard splits a seed range: give --seeds A..B with it");
        }
        match parse_shard(text) {
            Ok((k, n)) => seeds = shard(seeds, k, n),
            Err(e) => return bad(e),
        }
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let options = FuzzOptions {
        jobs,
        check_determinism: args.check_determinism,
        max_failures: args.max_failures.map(|n| n as usize),
    };
    // An unwritable --out or an existing --junit is found before any seed runs, not at
    // the end.
    if let Err(e) = check_out_dir(&args.out) {
        return bad(e);
    }
    if let Some(j) = &args.junit {
        if let Err(e) = crate::junit::check_path(j) {
            return bad(e);
        }
    }
    // The regression corpus: --regressions DIR, or tenure-regressions/ if it exists.
    let corpus_dir = match (&args.regressions, args.no_regressions) {
        (_, true) => None,
        (Some(d), false) => Some(d.clone()),
        (None, false) => Some(PathBuf::from(REGRESSIONS_DIR)).filter(|d| d.is_dir()),
    };
    let corpus = corpus_dir.map(|d| corpus_file(&d, &args, &target));
    let regression_seeds: Vec<u64> = match &corpus {
        Some(file) => match tenure_fuzz::regressions::load(file) {
            // Seeds inside the range run in their place.
            Ok(list) => list.into_iter().filter(|s| !seeds.contains(s)).collect(),
            Err(e) => return bad(format!("--regressions: {e}")),
        },
        None => Vec::new(),
    };

    let stop = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let (stop, interrupted) = (stop.clone(), interrupted.clone());
        // Ctrl-C, SIGTERM (what a CI timeout sends) and SIGHUP.
        let _ = ctrlc::set_handler(move || {
            interrupted.store(true, Ordering::SeqCst);
            if stop.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "\ntenure: interrupted again; quitting now (every failure found is saved)"
                );
                std::process::exit(i32::from(Outcome::Interrupted.code()));
            }
            eprintln!(
                "\ntenure: interrupted: finishing the seeds in flight, then the report of what ran (interrupt again to quit now)"
            );
        });
    }
    let range_text = if seeds.end == u64::MAX {
        format!("{}..", seeds.start)
    } else {
        format!("{}..{}", seeds.start, seeds.end)
    };
    eprintln!(
        "tenure fuzz: {source}, profile {}, seeds {range_text}{}{}, {jobs} job{}; failing cases go to {}",
        target.profile.name,
        time_budget.map_or(String::new(), |d| format!(" for {}", tenure_core::format_duration(d))),
        match (&corpus, regression_seeds.len()) {
            (Some(f), n) if n > 0 => format!(
                ", and first {} from {}",
                crate::plural(n as u64, "regression seed", "regression seeds"),
                shown(f)
            ),
            _ => String::new(),
        },
        if jobs == 1 { "" } else { "s" },
        shown(&args.out)
    );

    let started = wall_seconds();
    let total =
        (seeds.end != u64::MAX).then(|| seeds.end - seeds.start + regression_seeds.len() as u64);
    let mut progress = Progress::new("tenure fuzz", Mode::of_stderr(), total, started);
    let mut report = ReportBuilder::new(args.keep);
    // Per check, range seeds kept so far; the groups (check, signature) seen.
    let mut kept: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut groups_seen: BTreeSet<(&'static str, Option<String>)> = BTreeSet::new();
    let mut added_to_corpus: Vec<u64> = Vec::new();
    // The highest seed handed over (outcomes come in seed order): with a stop, what the
    // run actually covered.
    let mut last_seed: Option<u64> = None;
    let mut failed_writes = false;
    let print_one = print_command(&args, &target);
    let mut handle = |o: &SeedOutcome, regression: bool, progress: &mut Progress| {
        if !regression {
            last_seed = Some(o.seed);
        }
        let mut line = o.to_json();
        line["target"] = serde_json::json!(target.label());
        line["profile"] = serde_json::json!(target.profile.name);
        if regression {
            line["regression"] = serde_json::json!(true);
        }
        // What this seed prints on stdout (text mode), printed with the bar out of the way.
        let mut text: Vec<String> = Vec::new();
        match &o.result {
            SeedResult::Pass => {}
            SeedResult::Fail(f) => {
                let n = kept.entry(f.checker).or_default();
                let keep = regression || *n < args.keep;
                if keep && !regression {
                    *n += 1;
                }
                let what = if regression {
                    "regression seed"
                } else {
                    "seed"
                };
                if !keep {
                    text.push(format!(
                        "FAIL seed {}: {} violated at {} (not kept: the first {} of this check are; --keep N)",
                        o.seed, f.checker, f.time, args.keep
                    ));
                } else {
                    let stem = case_stem(&f.case, o.seed, f.checker);
                    let program = crate::program();
                    let header = format!(
                        "# Found by `tenure fuzz` ({source}, profile {}, seed {}): {} violated at {}.\n\
                         # {}\n\
                         # Replay: {program} run <this file> --seed {}   Shrink: {program} shrink <this file> --seed {}\n\n",
                        target.profile.name,
                        o.seed,
                        f.checker,
                        f.time,
                        f.message.replace('\n', " "),
                        o.seed,
                        o.seed
                    );
                    let contents = format!("{header}{}", f.case.to_toml());
                    match write_new_or_same(&args.out, &stem, "", &contents) {
                        Ok(path) => {
                            let file = shown(&path);
                            line["case"] = serde_json::json!(file);
                            let shrunk = shrink_kept(tools, f, o.seed, &path, &args.out);
                            let signature = shrunk.as_ref().map(|s| s.signature.clone());
                            let new_group = groups_seen.insert((f.checker, signature.clone()));
                            let timeline = match args.timelines {
                                Timelines::All => true,
                                Timelines::First => new_group,
                                Timelines::None => false,
                            }
                            .then(|| write_timeline(&tools.protocols, &path, &f.case, o.seed))
                            .flatten();
                            if let Some(t) = &timeline {
                                line["timeline"] = serde_json::json!(shown(t));
                            }
                            text.push(format!(
                                "FAIL {what} {}: {} violated at {}",
                                o.seed, f.checker, f.time
                            ));
                            text.push(format!("  {}", f.message));
                            if let Some(why) = &f.not_promised {
                                text.push(format!("  {why}"));
                            } else if f.beyond.is_empty() {
                                text.push("  within the protocol's declared assumptions".into());
                            }
                            for b in &f.beyond {
                                text.push(format!("  {b}"));
                            }
                            text.push(format!("  saved: {file}"));
                            text.push(format!("  replay: {}", replay_command(&file, o.seed)));
                            if let Some(s) = &shrunk {
                                if let Some(c) = &s.case {
                                    text.push(format!(
                                        "  shrunk to [{}]: {}",
                                        s.signature,
                                        replay_command(c, s.seed)
                                    ));
                                }
                                line["shrunk"] = serde_json::to_value(s).unwrap_or_default();
                            }
                            if let Some(t) = &timeline {
                                text.push(format!("  timeline: {}", shown(t)));
                            }
                            if let (Some(file), true, false) = (&corpus, new_group, regression) {
                                let note = format!(
                                    "{} [{}]: {}",
                                    f.checker,
                                    signature.as_deref().unwrap_or("not shrunk"),
                                    f.message
                                );
                                match tenure_fuzz::regressions::save(file, o.seed, &note) {
                                    Ok(true) => added_to_corpus.push(o.seed),
                                    Ok(false) => {}
                                    Err(e) => progress.print(|| eprintln!("tenure: {e}")),
                                }
                            }
                        }
                        Err(e) => {
                            failed_writes = true;
                            progress.print(|| {
                                eprintln!(
                                    "tenure: cannot write the case of seed {} under {}: {e}",
                                    o.seed,
                                    shown(&args.out)
                                )
                            });
                        }
                    }
                }
            }
            SeedResult::Nondeterministic(d) => {
                text.push(format!(
                    "NONDETERMINISM seed {}: the two runs differ first at trace event {}",
                    o.seed, d.index
                ));
                text.push(format!(
                    "  first run:  {}",
                    d.first.as_deref().unwrap_or("(end of trace)")
                ));
                text.push(format!(
                    "  second run: {}",
                    d.second.as_deref().unwrap_or("(end of trace)")
                ));
            }
            SeedResult::Panicked(message) => {
                text.push(format!("PANIC seed {}: {message}", o.seed));
                text.push(format!(
                    "  a bug in tenure or in the protocol; the case: re-run with --seeds {}..{}",
                    o.seed,
                    o.seed + 1
                ));
            }
            SeedResult::Limit(limit) => {
                text.push(format!("LIMIT seed {}: {limit}", o.seed));
            }
        }
        match serde_json::from_value::<SeedLine>(line.clone()) {
            Ok(l) => {
                if let Err(e) = report.add(l) {
                    progress.print(|| eprintln!("tenure: {e}"));
                }
            }
            Err(e) => progress.print(|| eprintln!("tenure: seed {}: {e}", o.seed)),
        }
        if args.json {
            progress.print(|| println!("{line}"));
        } else if !text.is_empty() {
            progress.print(|| {
                for l in &text {
                    println!("{l}");
                }
            });
        }
        let failed = !matches!(o.result, SeedResult::Pass);
        let coverage = report.coverage();
        if let Some((check, n)) = coverage.checks.iter().min_by_key(|(_, n)| *n) {
            progress.set_note(format!(
                "lowest check coverage {check} {:.0}%",
                *n as f64 * 100.0 / coverage.seeds.max(1) as f64
            ));
        }
        progress.seed_done(wall_seconds(), o.simulated.as_duration(), failed);
    };

    // The regression corpus first, one seed after another.
    for &seed in &regression_seeds {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let o = tenure_fuzz::run_seed(&target, seed, args.check_determinism);
        handle(&o, true, &mut progress);
    }
    let finished = AtomicBool::new(false);
    let summary = std::thread::scope(|scope| {
        if let Some(budget) = time_budget {
            let (stop, finished) = (&stop, &finished);
            scope.spawn(move || {
                while !finished.load(Ordering::SeqCst) {
                    if wall_seconds() - started >= budget.as_secs_f64() {
                        stop.store(true, Ordering::SeqCst);
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
        let summary = if stop.load(Ordering::SeqCst) {
            tenure_fuzz::FuzzSummary {
                stopped: true,
                ..Default::default()
            }
        } else {
            fuzz(
                &target,
                seeds.clone(),
                &options,
                &stop,
                |o: &SeedOutcome| handle(o, false, &mut progress),
            )
        };
        finished.store(true, Ordering::SeqCst);
        summary
    });
    progress.finish();
    let report = report.finish();
    let elapsed = wall_seconds() - started;
    let interrupted = interrupted.load(Ordering::SeqCst);
    let mut out: Box<dyn Write> = if args.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    // After --time, a signal, --max-failures or a vacuous check: the seeds covered.
    let range_text = match (summary.stopped, last_seed) {
        (true, Some(last)) => format!("{range_text}; covered {}..{}", seeds.start, last + 1),
        (true, None) => format!("{range_text}; covered none"),
        _ => range_text,
    };
    let regressions = if report.regressions.is_empty() {
        String::new()
    } else {
        format!(
            ", and {} from the corpus",
            crate::plural(
                report.regressions.len() as u64,
                "regression seed",
                "regression seeds"
            )
        )
    };
    let _ = writeln!(
        out,
        "{}fuzzed {} seed{} of {} ({range_text}){regressions} in {elapsed:.1}s: {} failed{}{}{}",
        if interrupted {
            "interrupted: "
        } else if summary.stopped && time_budget.is_none() {
            "stopped early: "
        } else {
            ""
        },
        summary.seeds,
        if summary.seeds == 1 { "" } else { "s" },
        target.label(),
        report.failed,
        if report.not_judged > 0 {
            format!(", {} not judged", report.not_judged)
        } else {
            String::new()
        },
        if report.nondeterministic > 0 {
            format!(", {} NONDETERMINISTIC", report.nondeterministic)
        } else {
            String::new()
        },
        if report.panicked > 0 {
            format!(", {} PANICKED", report.panicked)
        } else {
            String::new()
        },
    );
    if !summary.vacuous.is_empty() {
        for v in &summary.vacuous {
            eprintln!("tenure: {v}");
        }
        eprintln!(
            "tenure: stopped after {} seeds: a check that judges nothing would pass every seed \
             (not judged: exit 5); fix the protocol's observations or the checks",
            summary.seeds
        );
    }
    // Per check: the seeds in which nothing failed but it was not judged, with why. A
    // check judged in no seed at all has no verdict over the run (exit 5).
    let never_judged = crate::fuzz_report::print_not_judged(&mut *out, &report);
    if report.limited > 0 {
        let _ = writeln!(
            out,
            "{} stopped by a run limit (no verdict; see the LIMIT lines)",
            crate::plural(report.limited, "seed was", "seeds were")
        );
    }
    let same = |p: &str| p.to_string();
    crate::fuzz_report::print_findings(&mut *out, &report, &same, &print_one);
    crate::fuzz_report::print_coverage(&mut *out, &report);
    if let (Some(file), false) = (&corpus, added_to_corpus.is_empty()) {
        let _ = writeln!(
            out,
            "regression corpus: {} added to {} (re-run first next time; commit it)",
            crate::plural(added_to_corpus.len() as u64, "seed", "seeds"),
            shown(file)
        );
    }
    if interrupted {
        let _ = writeln!(
            out,
            "interrupted before the range was covered: exit {} unless a seed failed",
            Outcome::Interrupted.code()
        );
    }
    // With --json, stdout holds one line per seed (so shards concatenate into the whole
    // range, and each line carries its seed's coverage); the summary goes to stderr as
    // its last line, a JSON object of its own.
    if args.json {
        let mut j = crate::fuzz_report::report_json(&report, &same);
        j["stopped"] = serde_json::json!(summary.stopped);
        j["interrupted"] = serde_json::json!(interrupted);
        j["vacuous"] = serde_json::json!(summary.vacuous);
        j["not_judged_seeds"] = serde_json::json!(summary.not_judged);
        eprintln!("{}", serde_json::json!({ "summary": j }));
    }
    if let Some(path) = &args.junit {
        let suite = crate::fuzz_report::junit_suite(&report, Some(elapsed), &same);
        if let Err(e) = crate::junit::write(path, "tenure fuzz", &[suite]) {
            eprintln!("tenure: {e}");
            failed_writes = true;
        }
    }
    if report.nondeterministic > 0 || report.panicked > 0 {
        Outcome::Internal
    } else if report.limited > 0 {
        Outcome::BadInput
    } else if report.failed > 0 || failed_writes {
        Outcome::CheckFailed
    } else if interrupted {
        Outcome::Interrupted
    } else if !summary.vacuous.is_empty() || !never_judged.is_empty() {
        Outcome::NotJudged
    } else {
        Outcome::Passed
    }
}

/// The folder `tenure fuzz` reads its regression corpus from when it exists.
pub const REGRESSIONS_DIR: &str = "tenure-regressions";

/// `tenure fuzz merge DIR...`.
fn merge(args: MergeArgs) -> Outcome {
    if let Some(j) = &args.junit {
        if let Err(e) = crate::junit::check_path(j) {
            return bad(e);
        }
    }
    // Per (target, profile), in order of first appearance: a builder, and per seed the
    // folder its line came from (to find its files).
    let mut cells: Vec<(String, String, ReportBuilder)> = Vec::new();
    let mut origin: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut files = 0usize;
    for dir in &args.dirs {
        if !dir.is_dir() {
            return bad(format!(
                "{}: not a folder (give each shard's --out folder)",
                shown(dir)
            ));
        }
        let mut jsonl: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect(),
            Err(e) => return bad(format!("{}: {e}", shown(dir))),
        };
        jsonl.sort();
        if jsonl.is_empty() {
            return bad(format!(
                "{}: no *.jsonl file: save each shard's `tenure fuzz --json` output in its --out folder, e.g. > {}/seeds.jsonl",
                shown(dir),
                shown(dir)
            ));
        }
        for file in jsonl {
            files += 1;
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => return bad(format!("{}: {e}", shown(&file))),
            };
            for (i, raw) in text.lines().enumerate() {
                if raw.trim().is_empty() {
                    continue;
                }
                let line: SeedLine = match serde_json::from_str(raw) {
                    Ok(l) => l,
                    Err(e) => {
                        return bad(format!(
                            "{}:{}: not a seed's JSON line from `tenure fuzz --json`: {e}",
                            shown(&file),
                            i + 1
                        ))
                    }
                };
                for p in [&line.case, &line.timeline]
                    .into_iter()
                    .flatten()
                    .chain(line.shrunk.as_ref().and_then(|s| s.case.as_ref()))
                {
                    origin.insert(p.clone(), dir.clone());
                }
                let cell = match cells
                    .iter_mut()
                    .find(|(t, p, _)| *t == line.target && *p == line.profile)
                {
                    Some(c) => c,
                    None => {
                        cells.push((
                            line.target.clone(),
                            line.profile.clone(),
                            ReportBuilder::new(args.keep),
                        ));
                        cells.last_mut().expect("just pushed")
                    }
                };
                if let Err(e) = cell.2.add(line) {
                    return bad(format!("{}:{}: {e}", shown(&file), i + 1));
                }
            }
        }
    }
    if cells.is_empty() {
        return bad("no seed lines in the *.jsonl files given");
    }
    // A path as a shard wrote it, found under the folder it came with.
    let resolve = |p: &str| -> String {
        let Some(dir) = origin.get(p) else {
            return p.to_string();
        };
        match Path::new(p).file_name() {
            Some(name) if dir.join(name).exists() => shown(&dir.join(name)),
            _ => p.to_string(),
        }
    };
    let mut suites = Vec::new();
    let (mut failed, mut internal, mut never_judged) = (false, false, false);
    let stdout = std::io::stdout();
    for (_, _, builder) in cells {
        let report = builder.finish();
        failed |= report.failed > 0;
        internal |= report.nondeterministic > 0 || report.panicked > 0;
        if args.json {
            println!(
                "{}",
                serde_json::json!({ "summary": crate::fuzz_report::report_json(&report, &resolve) })
            );
        } else {
            let mut out = stdout.lock();
            let _ = writeln!(
                out,
                "merged {} seed{} of {} under profile {} from {} folder{} ({} file{}; covered {}){}: {} failed{}",
                report.seeds,
                if report.seeds == 1 { "" } else { "s" },
                report.target,
                report.profile,
                args.dirs.len(),
                if args.dirs.len() == 1 { "" } else { "s" },
                files,
                if files == 1 { "" } else { "s" },
                report.covered_text(),
                if report.duplicates > 0 {
                    format!(", {} duplicate lines counted once", report.duplicates)
                } else {
                    String::new()
                },
                report.failed,
                if report.not_judged > 0 {
                    format!(", {} not judged (no check failed; not a pass)", report.not_judged)
                } else {
                    String::new()
                }
            );
            let print_one = format!(
                "{} fuzz --protocol {} --variant {} --profile {}",
                crate::program(),
                report.target.split('/').next().unwrap_or(""),
                report.target.split('/').nth(1).unwrap_or("correct"),
                report.profile
            );
            crate::fuzz_report::print_not_judged(&mut out, &report);
            crate::fuzz_report::print_findings(&mut out, &report, &resolve, &print_one);
            crate::fuzz_report::print_coverage(&mut out, &report);
        }
        never_judged |= !report.never_judged().is_empty();
        suites.push(crate::fuzz_report::junit_suite(&report, None, &resolve));
    }
    if let Some(path) = &args.junit {
        if let Err(e) = crate::junit::write(path, "tenure fuzz merge", &suites) {
            return bad(e);
        }
    }
    // As `tenure fuzz` over the same seeds: a check judged in none of a cell's seeds
    // leaves that cell without a verdict (exit 5), never a pass.
    if internal {
        Outcome::Internal
    } else if failed {
        Outcome::CheckFailed
    } else if never_judged {
        Outcome::NotJudged
    } else {
        Outcome::Passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_and_shards_parse() {
        assert_eq!(parse_seeds("0..1000"), Ok(0..1000));
        assert_eq!(parse_seeds(" 5 .. 7 "), Ok(5..7));
        assert!(parse_seeds("7..5").unwrap_err().contains("start is above"));
        assert!(parse_seeds("5..5")
            .unwrap_err()
            .contains("the range is empty"));
        assert!(parse_seeds("5").unwrap_err().contains("write a range"));
        assert!(parse_seeds("a..5").unwrap_err().contains("not a seed"));
        assert_eq!(parse_shard("1/2"), Ok((0, 2)));
        assert_eq!(parse_shard("8/8"), Ok((7, 8)));
        for bad in ["0/2", "3/2", "1", "x/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn new_files_never_replace_old_ones() {
        let dir = std::env::temp_dir().join(format!("tenure-write-new-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = write_new(&dir, "case", "", "one").unwrap();
        let b = write_new(&dir, "case", "", "two").unwrap();
        let c = write_new(&dir, "case", ".shrunk", "three").unwrap();
        assert_eq!(a.file_name().unwrap(), "case.toml");
        assert_eq!(b.file_name().unwrap(), "case-2.toml");
        assert_eq!(c.file_name().unwrap(), "case.shrunk.toml");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "one");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
