//! `tenure check-trace DIR...`: judge a real run's observation logs (written by
//! `tenure-runtime`, one `observations.jsonl` per node directory) with the simulator's
//! checkers.

use crate::real_verdict::{Check, ClockError};
use crate::{shown, Outcome};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tenure_core::{Cluster, History, Record, RunInfo, SimTime};

const AFTER_HELP: &str = "\
Each DIR is a node's directory (holding observations.jsonl and cluster.json, as
tenure-runtime writes them) or a folder of such directories. The records of every node
are merged by their real timestamps and judged as a simulated history is.

A real run is not deterministic: the logs are the evidence, kept as they were written.
Checks that need no common clock (single-leader-per-term, fencing-safety, exactly-once,
...) are judged as in the simulator.

Checks that compare time intervals of different nodes (single-leader-at-a-time,
mutual-exclusion and their belief forms) judge timestamps taken by different processes
from real clocks, which are only as good as the bound on their error. With
--clock-error DURATION they are judged, two intervals counting as overlapping only if
they overlap by more than the bound (the checks' max_overlap tolerance, plus any the
check declares); the report states the bound and that --clock-error gave it. Without
--clock-error they are listed as not judged. lease-safety and its belief form take no
tolerance and are never judged on real logs, nor are the liveness checks (they count
from the end of the fault schedule, which real time blurs): judge them in the simulator.

A node killed with SIGKILL cannot say so: `tenure cluster` appends its `crashed` record
to its log, stamped with the moment of the kill (or with the node's last record, if
that is later), so every belief it held ends there.

`tenure cluster` judges its logs with this same code: the two give the same verdict and
exit code on the same logs.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input or a check that judged
nothing (vacuous: not a pass), 5 no check failed but at least one was not judged (never
a pass), 3 internal error.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct CheckTraceArgs {
    /// Node directories, or folders of them.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The checks to judge, comma-separated (see `tenure list`).
    #[arg(long, value_name = "A,B", value_delimiter = ',', required = true)]
    checks: Vec<String>,
    /// A bound on the error between the nodes' clocks (e.g. 1ms): judges the checks
    /// that compare time intervals of different nodes, tolerating overlaps up to it.
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    clock_error: Option<Duration>,
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
    let history = match load(&args.dirs) {
        Ok(h) => h,
        Err(e) => return bad(e),
    };
    let checks: Vec<Check> = args
        .checks
        .iter()
        .map(|name| Check {
            name: name.clone(),
            params: serde_json::json!({}),
        })
        .collect();
    let clock_error = args.clock_error.map(|bound| ClockError {
        bound,
        source: "--clock-error",
    });
    crate::real_verdict::report(&history, &checks, clock_error)
}
