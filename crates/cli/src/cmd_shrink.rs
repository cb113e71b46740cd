//! `tenure shrink FILE`: a failing scenario cut down to the faults that matter.

use crate::cmd_fuzz::write_new;
use crate::report::replay_command;
use crate::Tools;
use crate::{shown, Outcome};
use clap::Args;
use std::path::PathBuf;
use tenure_fuzz::shrink::clock_text;
use tenure_fuzz::{shrink, ShrinkError, Size};

const AFTER_HELP: &str = "\
The result fails the same checker with the same seed: the scenario's expected violation
if it has one, else the first checker that fails. Shrinking tries, until nothing helps:
dropping fault events (halves, quarters, ... then one at a time), dropping every event of
one node, merging two faults of one kind on one node into one, aiming a fault at the
leader when that lets another go, shortening pauses, moving the timeline earlier,
shortening the run, and taking the last node off a role. Every candidate is run and kept only if it still fails that
checker. The result checks only that checker and expects it to fail. Same input, same
output.

The result is written as <stem>.shrunk.toml (never over an existing file:
<stem>.shrunk-2.toml, ...) into --out: by default next to FILE when tenure wrote FILE (a
case saved by `tenure fuzz`, or an earlier shrink), else into tenure-out/. It never goes
into the folder of a hand-written scenario, where `tenure verify` would count it.

Exit codes: 0 shrunk, 1 the scenario does not fail with that seed, 2 bad input.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ShrinkArgs {
    /// The failing scenario file (e.g. one `tenure fuzz` saved).
    file: PathBuf,
    /// The seed that fails (default: the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the shrunk scenario goes (default: next to FILE if tenure wrote it, else
    /// tenure-out).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the result as one JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// Whether `source` is a scenario tenure wrote (a fuzz case, a drawn seed, a shrink).
fn written_by_tenure(source: &str) -> bool {
    [
        "# Found by `tenure fuzz`",
        "# Drawn by `tenure fuzz`",
        "# Shrunk by `tenure shrink`",
        "# Shrunk by `tenure fuzz`",
    ]
    .iter()
    .any(|h| source.starts_with(h))
}

/// `--out`, or the default: FILE's folder when tenure wrote FILE, else `tenure-out`.
fn out_dir(args: &ShrinkArgs, source: &str) -> PathBuf {
    match &args.out {
        Some(dir) => dir.clone(),
        None if written_by_tenure(source) => args
            .file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(PathBuf::from("."), |p| p.to_path_buf()),
        None => PathBuf::from("tenure-out"),
    }
}

/// Checks before the shrink that `dir` is (or can be made) a writable folder.
fn check_dir(dir: &std::path::Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--out {}: is not a directory", dir.display()));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot create: {e}", dir.display()))?;
    let probe = dir.join(format!(".tenure-probe-{}", std::process::id()));
    std::fs::write(&probe, "")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {}: cannot write: {e}", dir.display()))
}

/// `3 fault events, 2 clock settings, 658ms simulated, 5 nodes` (clocks only when set).
fn size_text(s: &Size) -> String {
    let clocks = match s.clocks {
        0 => String::new(),
        1 => ", 1 clock setting".to_string(),
        n => format!(", {n} clock settings"),
    };
    format!(
        "{} fault event{}{clocks}, {} simulated, {} node{}",
        s.faults,
        if s.faults == 1 { "" } else { "s" },
        tenure_core::format_duration(s.duration),
        s.nodes,
        if s.nodes == 1 { "" } else { "s" }
    )
}

fn size_json(s: &Size) -> serde_json::Value {
    serde_json::json!({
        "fault_events": s.faults,
        "clock_settings": s.clocks,
        "simulated": tenure_core::format_duration(s.duration),
        "nodes": s.nodes,
    })
}

pub fn run(args: ShrinkArgs, tools: &Tools) -> Outcome {
    let scenario = match tenure_scenario::load(&args.file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
    };
    let seed = args.seed.unwrap_or(scenario.seed);
    let file = shown(&args.file);
    let dir = out_dir(&args, &scenario.source);
    if let Err(e) = check_dir(&dir) {
        eprintln!("tenure: {e}");
        return Outcome::BadInput;
    }
    eprintln!("tenure shrink: {file} seed {seed}");
    let shrunk = match shrink(&tools.protocols, &scenario, seed) {
        Ok(s) => s,
        Err(ShrinkError::Invalid(e)) => {
            eprintln!("tenure: {e}");
            return Outcome::BadInput;
        }
        Err(e @ ShrinkError::DoesNotFail { .. }) => {
            println!("NOT FAILING {file}: {e}");
            return Outcome::CheckFailed;
        }
    };
    let result = shrunk.scenario.clone();
    let moved = if shrunk.seed == seed {
        String::new()
    } else {
        format!(
            " with seed {} (seed {seed} needed more events)",
            shrunk.seed
        )
    };
    let stem = args
        .file
        .file_stem()
        .map_or("scenario".to_string(), |s| s.to_string_lossy().to_string());
    let header = format!(
        "# Shrunk by `tenure shrink` from {file} (seed {seed}) in {} runs: still violates {}{moved}.\n\
         # Before: {}.\n# After: {}.\n\n",
        shrunk.runs,
        shrunk.checker,
        size_text(&shrunk.before),
        size_text(&shrunk.after)
    );
    let path = match write_new(
        &dir,
        &stem,
        ".shrunk",
        &format!("{header}{}", result.to_toml()),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tenure: cannot write into {}: {e}", dir.display());
            return Outcome::BadInput;
        }
    };
    let out = shown(&path);
    if args.json {
        let j = serde_json::json!({
            "scenario": file,
            "seed": seed,
            "checker": shrunk.checker,
            "shrunk_seed": shrunk.seed,
            "runs": shrunk.runs,
            "before": size_json(&shrunk.before),
            "after": size_json(&shrunk.after),
            "faults": result.faults.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            "clocks": result.clocks.iter().map(clock_text).collect::<Vec<_>>(),
            "saved": out,
            "replay": replay_command(&out, shrunk.seed),
        });
        println!("{j:#}");
        return Outcome::Passed;
    }
    println!(
        "SHRUNK {file} seed {seed}: still violates {}{moved}",
        shrunk.checker
    );
    println!("  before: {}", size_text(&shrunk.before));
    println!("  after:  {}", size_text(&shrunk.after));
    // The events that survived: the story of the failure, without opening the file.
    for (i, e) in result.faults.iter().enumerate() {
        let lead = if i == 0 { "  faults:" } else { "         " };
        println!("{lead} {e}");
    }
    // The clocks that survived are part of the story: a wall-clock bug may need no
    // fault event at all.
    for (i, c) in result.clocks.iter().enumerate() {
        let lead = if i == 0 { "  clocks:" } else { "         " };
        println!("{lead} {}", clock_text(c));
    }
    println!("  saved:  {out}");
    println!("  replay: {}", replay_command(&out, shrunk.seed));
    Outcome::Passed
}
