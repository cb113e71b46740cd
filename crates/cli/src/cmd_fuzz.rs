//! `tenure fuzz`: many seeds of a scenario (or a protocol's built-in default), each
//! drawing its own faults from a profile; every failure saved as a replayable file.

use crate::progress::{Mode, Progress};
use crate::report::replay_command;
use crate::Tools;
use crate::{shown, Outcome};
use clap::Args;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tenure_fuzz::{
    case_stem, fuzz, shard, FuzzOptions, SeedOutcome, SeedResult, Target, PROFILE_NAMES,
};

const AFTER_HELP: &str = "\
Each seed draws its own fault rates from the profile (swarm testing), then an explicit
timeline of faults inside the fault window, a heal, and a liveness phase. Profiles: calm,
partitions, clocks, pauses, crashes, chaos (the default), beyond, field, power. A
scenario's [profile] table (name = \"chaos\" plus any knob) overrides the profile's knobs.

Outcomes are reported in seed order, so they are the same whatever --jobs is, and the
JSON lines of --shard 1/N ... N/N concatenated are those of the whole range.

Each failing seed is saved under --out as <protocol>-<variant>-seed<N>-<checker>.toml, with
its HTML timeline next to it as <same name>.html (an existing file is never overwritten),
and listed with its replay command:
    tenure run <file> --seed N      replays it exactly
    tenure shrink <file> --seed N   cuts it down to the faults that matter

Ctrl-C stops cleanly: seeds in flight finish, every failure found is already saved, and
the summary names the seeds covered (as after --time or --max-failures).

Examples:
    tenure fuzz --protocol raft --variant forget-vote --seeds 0..200
    tenure fuzz scenarios/raft/leader-crash.toml --profile partitions --time 60s
    tenure fuzz --protocol redlock --seeds 0..100000 --shard 3/8 --json

After the seeds, the coverage: per check, in how many seeds it judged anything (a check
that judged nothing has not passed); per drawn fault kind, in how many seeds it landed
while a leader or lock holder existed. Low coverage is flagged. A check that judges
nothing in any of the first 20 seeds stops the run (exit 2).

Exit codes: 0 no seed failed, 1 a seed failed, 2 bad input or a check that judges
nothing, 3 nondeterminism or a panic.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
// One of FILE and --protocol, so that an error names both.
#[command(group(clap::ArgGroup::new("what").required(true).args(["file", "protocol"])))]
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
/// (`<case>.html`), unless a file of that name exists already. The path, if written.
fn write_timeline(
    protocols: &tenure_sim::Protocols,
    case_path: &Path,
    case: &tenure_scenario::Scenario,
    seed: u64,
) -> Option<PathBuf> {
    let out = case_path.with_extension("html");
    if out.exists() {
        return None;
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
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
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

/// What was found, for the closing list.
struct Found {
    seed: u64,
    checker: String,
    file: String,
}

pub fn run(args: FuzzArgs, tools: &Tools) -> Outcome {
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
    // An unwritable --out is found before any seed runs, not at the first failure.
    if let Err(e) = check_out_dir(&args.out) {
        return bad(e);
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "\ntenure: interrupted again; quitting now (every failure found is saved)"
                );
                std::process::exit(1);
            }
            eprintln!(
                "\ntenure: interrupted: finishing the seeds in flight (Ctrl-C again to quit now)"
            );
        });
    }
    let range_text = if seeds.end == u64::MAX {
        format!("{}..", seeds.start)
    } else {
        format!("{}..{}", seeds.start, seeds.end)
    };
    eprintln!(
        "tenure fuzz: {source}, profile {}, seeds {range_text}{}, {jobs} job{}; failing cases go to {}",
        target.profile.name,
        time_budget.map_or(String::new(), |d| format!(" for {}", tenure_core::format_duration(d))),
        if jobs == 1 { "" } else { "s" },
        shown(&args.out)
    );

    let started = wall_seconds();
    let total = (seeds.end != u64::MAX).then(|| seeds.end - seeds.start);
    let mut progress = Progress::new("tenure fuzz", Mode::of_stderr(), total, started);
    let mut found: Vec<Found> = Vec::new();
    // The highest seed handed over (outcomes come in seed order): with a stop, what the
    // run actually covered.
    let mut last_seed: Option<u64> = None;
    let mut failed_writes = false;
    let mut internal = false;
    let mut limited = false;
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
        let summary = fuzz(
            &target,
            seeds.clone(),
            &options,
            &stop,
            |o: &SeedOutcome| {
                last_seed = Some(o.seed);
                let mut line = o.to_json();
                // What this seed prints on stdout (text mode), printed with the bar
                // out of the way.
                let mut text: Vec<String> = Vec::new();
                match &o.result {
                    SeedResult::Pass => {}
                    SeedResult::Fail(f) => {
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
                        match write_new(&args.out, &stem, "", &contents) {
                            Ok(path) => {
                                let file = shown(&path);
                                let name =
                                    path.file_name().map(|n| n.to_string_lossy().to_string());
                                line["case"] = serde_json::json!(name);
                                let timeline =
                                    write_timeline(&tools.protocols, &path, &f.case, o.seed);
                                if let Some(t) = &timeline {
                                    line["timeline"] = serde_json::json!(t
                                        .file_name()
                                        .map(|n| n.to_string_lossy().to_string()));
                                }
                                text.push(format!(
                                    "FAIL seed {}: {} violated at {}",
                                    o.seed, f.checker, f.time
                                ));
                                text.push(format!("  {}", f.message));
                                if let Some(why) = &f.not_promised {
                                    text.push(format!("  {why}"));
                                } else if f.beyond.is_empty() {
                                    text.push(
                                        "  within the protocol's declared assumptions".into(),
                                    );
                                }
                                for b in &f.beyond {
                                    text.push(format!("  {b}"));
                                }
                                text.push(format!("  saved: {file}"));
                                text.push(format!("  replay: {}", replay_command(&file, o.seed)));
                                if let Some(t) = &timeline {
                                    text.push(format!("  timeline: {}", shown(t)));
                                }
                                found.push(Found {
                                    seed: o.seed,
                                    checker: f.checker.to_string(),
                                    file,
                                });
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
                    SeedResult::Nondeterministic(d) => {
                        internal = true;
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
                        internal = true;
                        text.push(format!("PANIC seed {}: {message}", o.seed));
                        text.push(format!("  a bug in tenure or in the protocol; the case: re-run with --seeds {}..{}", o.seed, o.seed + 1));
                    }
                    SeedResult::Limit(limit) => {
                        limited = true;
                        text.push(format!("LIMIT seed {}: {limit}", o.seed));
                    }
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
                progress.seed_done(wall_seconds(), o.simulated.as_duration(), failed);
            },
        );
        finished.store(true, Ordering::SeqCst);
        summary
    });
    progress.finish();
    let elapsed = wall_seconds() - started;
    let mut out: Box<dyn Write> = if args.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    // After --time, Ctrl-C, --max-failures or a vacuous check: the seeds covered.
    let range_text = match (summary.stopped, last_seed) {
        (true, Some(last)) => format!("{range_text}; covered {}..{}", seeds.start, last + 1),
        (true, None) => format!("{range_text}; covered none"),
        _ => range_text,
    };
    let _ = writeln!(
        out,
        "{}fuzzed {} seed{} of {} ({range_text}) in {elapsed:.1}s: {} failed{}{}",
        if summary.stopped && time_budget.is_none() {
            "stopped early: "
        } else {
            ""
        },
        summary.seeds,
        if summary.seeds == 1 { "" } else { "s" },
        target.label(),
        summary.failed,
        if summary.nondeterministic > 0 {
            format!(", {} NONDETERMINISTIC", summary.nondeterministic)
        } else {
            String::new()
        },
        if summary.panicked > 0 {
            format!(", {} PANICKED", summary.panicked)
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
             (exit 2); fix the protocol's observations or the checks",
            summary.seeds
        );
    }
    if summary.limited > 0 {
        let _ = writeln!(
            out,
            "{} stopped by a run limit (no verdict; see the LIMIT lines)",
            crate::plural(summary.limited, "seed was", "seeds were")
        );
    }
    if !found.is_empty() {
        let _ = writeln!(out, "failing cases:");
        for f in &found {
            let _ = writeln!(
                out,
                "  seed {} {}: {}",
                f.seed,
                f.checker,
                replay_command(&f.file, f.seed)
            );
        }
    }
    for line in summary.coverage.lines() {
        let _ = writeln!(out, "coverage: {line}");
    }
    if let Some((seed, hint)) = &summary.first_hint {
        let _ = writeln!(
            out,
            "durability hint (not a failure) in {} of {} seeds; first, seed {seed}: {hint}",
            summary.hint_seeds, summary.seeds
        );
    }
    // With --json, stdout holds one line per seed (so shards concatenate into the whole
    // range, and each line carries its seed's coverage); the summary goes to stderr as
    // its last line, a JSON object of its own.
    if args.json {
        eprintln!(
            "{}",
            serde_json::json!({
                "summary": {
                    "target": target.label(),
                    "profile": target.profile.name,
                    "seeds": summary.seeds,
                    "failed": summary.failed,
                    "nondeterministic": summary.nondeterministic,
                    "panicked": summary.panicked,
                    "limited": summary.limited,
                    "stopped": summary.stopped,
                    "vacuous": summary.vacuous,
                    "durability_hint_seeds": summary.hint_seeds,
                    "coverage": summary.coverage.to_json(),
                }
            })
        );
    }
    if internal {
        Outcome::Internal
    } else if limited || !summary.vacuous.is_empty() {
        Outcome::BadInput
    } else if summary.failed > 0 || failed_writes {
        Outcome::CheckFailed
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
