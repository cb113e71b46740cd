//! `tenure check-trace DIR...`: judge a real run's observation logs (written by
//! `tenure-runtime`, one `observations.jsonl` per node directory) with the simulator's
//! checkers.

use crate::{shown, Outcome};
use clap::Args;
use std::path::{Path, PathBuf};
use tenure_core::{Cluster, History, Record, RunInfo, SimTime};

const AFTER_HELP: &str = "\
Each DIR is a node's directory (holding observations.jsonl and cluster.json, as
tenure-runtime writes them) or a folder of such directories. The records of every node
are merged by their real timestamps and judged as a simulated history is.

A real run is not deterministic: the logs are the evidence, kept as they were written.
Checks that compare time intervals across nodes (single-leader-at-a-time, lease-safety,
mutual-exclusion and their belief forms) would need a bound on the error between the
nodes' clocks; they are refused here until they take one. Checks that need no common
clock (single-leader-per-term, fencing-safety, exactly-once, ...) are judged as in the
simulator.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input or a check that judged
nothing.";

/// Checks that compare real-time intervals of different nodes: with real clocks their
/// verdict depends on a clock-error bound this command does not take yet.
pub const NEEDS_COMMON_CLOCK: &[&str] = &[
    "single-leader-at-a-time",
    "single-leader-at-a-time-belief",
    "lease-safety",
    "lease-safety-belief",
    "mutual-exclusion",
    "mutual-exclusion-belief",
];

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct CheckTraceArgs {
    /// Node directories, or folders of them.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The checks to judge, comma-separated (see `tenure list`).
    #[arg(long, value_name = "A,B", value_delimiter = ',', required = true)]
    checks: Vec<String>,
}

fn bad(message: impl std::fmt::Display) -> Outcome {
    eprintln!("tenure: {message}");
    Outcome::BadInput
}

/// The node directories under `dir` (itself, if it is one).
fn node_dirs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    if dir.join("observations.jsonl").is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", shown(dir)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("observations.jsonl").is_file())
        .collect();
    if subs.is_empty() {
        return Err(format!(
            "{}: no observations.jsonl in it or in its folders (is it a node directory of a real run?)",
            shown(dir)
        ));
    }
    subs.sort();
    out.extend(subs);
    Ok(())
}

/// A real run's history: every node's records, merged by time (a node's own records
/// keep their order).
pub fn load(dirs: &[PathBuf]) -> Result<History, String> {
    let mut nodes = Vec::new();
    for d in dirs {
        node_dirs(d, &mut nodes)?;
    }
    let mut cluster: Option<(Cluster, PathBuf)> = None;
    let mut records: Vec<(SimTime, usize, Record)> = Vec::new();
    for dir in &nodes {
        let cpath = dir.join("cluster.json");
        let text =
            std::fs::read_to_string(&cpath).map_err(|e| format!("{}: {e}", shown(&cpath)))?;
        let c: Cluster = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a cluster: {e}", shown(&cpath)))?;
        match &cluster {
            None => cluster = Some((c, cpath)),
            Some((first, at)) if *first != c => {
                return Err(format!(
                    "{} and {} describe different clusters: these directories are not of one run",
                    shown(at),
                    shown(&cpath)
                ))
            }
            Some(_) => {}
        }
        let path = dir.join("observations.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", shown(&path)))?;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(r) => records.push((r.time, records.len(), r)),
                // A process killed mid-write leaves a partial last line: not evidence.
                Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
                Err(e) => {
                    return Err(format!(
                        "{}:{}: not an observation record: {e}",
                        shown(&path),
                        i + 1
                    ))
                }
            }
        }
    }
    let Some((cluster, _)) = cluster else {
        return Err("no node directories".into());
    };
    records.sort_by_key(|(t, i, _)| (*t, *i));
    let end = records.last().map_or(SimTime::ZERO, |(t, _, _)| *t);
    Ok(History {
        info: RunInfo {
            cluster,
            seed: 0,
            end,
            calm_from: end,
        },
        records: records.into_iter().map(|(_, _, r)| r).collect(),
    })
}

pub fn run(args: CheckTraceArgs) -> Outcome {
    if let Some(c) = args
        .checks
        .iter()
        .find(|c| NEEDS_COMMON_CLOCK.contains(&c.as_str()))
    {
        return bad(format!(
            "--checks {c}: compares time intervals of different nodes, which real clocks cannot do without a bound on their error; check-trace does not take one yet"
        ));
    }
    let history = match load(&args.dirs) {
        Ok(h) => h,
        Err(e) => return bad(e),
    };
    judge(&history, &args.checks)
}

/// Judges a real run's history with the named checks (default parameters), printing a
/// line per check.
pub fn judge(history: &History, checks: &[String]) -> Outcome {
    let mut checkers = Vec::new();
    for name in checks {
        match tenure_check::build(name, &serde_json::json!({}), &history.info.cluster) {
            Ok(c) => checkers.push(c),
            Err(e) => return bad(format!("--checks {name}: {e}")),
        }
    }
    println!(
        "tenure check-trace: {} records of {} nodes (not deterministic: a real run; the logs are the evidence)",
        history.records.len(),
        history.info.cluster.size()
    );
    let mut failed = false;
    let mut vacuous = false;
    for mut c in checkers {
        let mut violation = None;
        for (i, r) in history.records.iter().enumerate() {
            if let Some(v) = c.on_record(i, r) {
                violation = Some(v);
                break;
            }
        }
        if violation.is_none() {
            violation = c.finish(&history.info);
        }
        let judged = c.judged();
        let what = judged
            .as_ref()
            .map_or("not reported".to_string(), |j| j.summary.clone());
        match violation {
            Some(v) => {
                failed = true;
                println!("FAIL {v}");
            }
            None if judged.as_ref().is_some_and(|j| j.vacuous.is_some()) => {
                vacuous = true;
                println!("VACUOUS {}: judged nothing ({what})", c.name());
            }
            None => println!("pass {}: {what}", c.name()),
        }
    }
    if failed {
        Outcome::CheckFailed
    } else if vacuous {
        Outcome::BadInput
    } else {
        Outcome::Passed
    }
}
