//! `tenure check-trace DIR...`: judge a real run's observation logs (written by
//! `tenure-runtime`, one `observations.jsonl` per node directory) with the simulator's
//! checkers.

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
tolerance and are never judged on real logs: judge them in the simulator.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input, or a check that judged
nothing or was not judged.";

/// Checks that compare real-time intervals of different nodes and take an overlap
/// tolerance (`max_overlap`): on real logs they are judged with a clock-error bound
/// added to it ([`ClockError`]), and not judged without one.
pub const OVERLAP_CHECKS: &[&str] = &[
    "single-leader-at-a-time",
    "single-leader-at-a-time-belief",
    "mutual-exclusion",
    "mutual-exclusion-belief",
];

/// Checks that compare real-time intervals of different nodes but take no tolerance:
/// never judged on real logs.
pub const NO_TOLERANCE: &[&str] = &["lease-safety", "lease-safety-belief"];

/// A bound on the error between the timestamps of different nodes, and who gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockError {
    pub bound: Duration,
    /// Where the bound came from, as the report says it (`--clock-error`).
    pub source: &'static str,
}

/// A check to judge, with its parameters (the scenario's, or none).
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub params: serde_json::Value,
}

/// Which checks are judged on real logs, with what parameters, and what the report
/// says of the others (`not judged NAME: why`) and of the tolerances it derived.
#[derive(Debug, Default)]
pub struct Plan {
    pub judged: Vec<Check>,
    /// Lines for the report: each tolerance with its derivation.
    pub derivations: Vec<String>,
    pub not_judged: Vec<(String, String)>,
}

/// Splits `checks` into those judged on a real run's logs and those not, adding the
/// clock-error bound (if given) to the overlap checks' tolerance. The user's declared
/// `max_overlap` is kept and the bound added on top, both shown.
pub fn plan(checks: &[Check], clock_error: Option<ClockError>) -> Plan {
    let mut plan = Plan::default();
    for c in checks {
        let name = c.name.as_str();
        if NO_TOLERANCE.contains(&name) {
            plan.not_judged.push((
                c.name.clone(),
                "compares time intervals of different nodes and takes no tolerance for the error between their clocks; judge it in the simulator".into(),
            ));
            continue;
        }
        if !OVERLAP_CHECKS.contains(&name) {
            plan.judged.push(c.clone());
            continue;
        }
        let Some(ce) = clock_error else {
            plan.not_judged.push((
                c.name.clone(),
                "compares time intervals of different nodes, whose real clocks differ by an unknown error; give --clock-error DURATION (a bound on that error, e.g. 1ms) to judge it".into(),
            ));
            continue;
        };
        let mut params = match &c.params {
            serde_json::Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        let declared = params
            .get("max_overlap")
            .and_then(|v| v.as_str())
            .and_then(|t| tenure_core::parse_duration(t).ok());
        let bound = tenure_core::format_duration(ce.bound);
        let source = format!("clock error bound {bound}, given by {}", ce.source);
        let (total, line) = match declared {
            Some(d) => (
                d + ce.bound,
                format!(
                    "{name}: max_overlap {} = {} (declared) + {bound} ({source})",
                    tenure_core::format_duration(d + ce.bound),
                    tenure_core::format_duration(d)
                ),
            ),
            None => (ce.bound, format!("{name}: max_overlap {bound} ({source})")),
        };
        params.insert(
            "max_overlap".into(),
            tenure_core::format_duration(total).into(),
        );
        if name == "single-leader-at-a-time" && !params.contains_key("bound") {
            params.insert("bound".into(), source.into());
        }
        plan.derivations.push(line);
        plan.judged.push(Check {
            name: c.name.clone(),
            params: serde_json::Value::Object(params),
        });
    }
    plan
}

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
    let plan = plan(&checks, clock_error);
    match judge(&history, &plan) {
        // A check the user named and that was not judged is not a pass.
        Outcome::Passed if !plan.not_judged.is_empty() => Outcome::BadInput,
        o => o,
    }
}

/// Judges a real run's history with the plan's checks, printing a line per check
/// (first the tolerances with their derivations, then the checks not judged).
pub fn judge(history: &History, plan: &Plan) -> Outcome {
    let mut checkers = Vec::new();
    for c in &plan.judged {
        match tenure_check::build(&c.name, &c.params, &history.info.cluster) {
            Ok(checker) => checkers.push(checker),
            Err(e) => return bad(format!("--checks {}: {e}", c.name)),
        }
    }
    println!(
        "tenure check-trace: {} records of {} nodes (not deterministic: a real run; the logs are the evidence)",
        history.records.len(),
        history.info.cluster.size()
    );
    for line in &plan.derivations {
        println!("tolerance {line}");
    }
    for (name, why) in &plan.not_judged {
        println!("not judged {name}: {why}");
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, params: serde_json::Value) -> Check {
        Check {
            name: name.into(),
            params,
        }
    }

    #[test]
    fn a_clock_error_bound_is_added_to_a_declared_tolerance_and_stated() {
        let checks = [
            check(
                "mutual-exclusion",
                serde_json::json!({"max_overlap": "30ms"}),
            ),
            check("single-leader-at-a-time", serde_json::json!({})),
            check("lease-safety", serde_json::json!({})),
            check("fencing-safety", serde_json::json!({})),
        ];
        let ce = ClockError {
            bound: Duration::from_millis(1),
            source: "--clock-error",
        };
        let p = plan(&checks, Some(ce));
        let judged: Vec<&str> = p.judged.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            judged,
            [
                "mutual-exclusion",
                "single-leader-at-a-time",
                "fencing-safety"
            ]
        );
        assert_eq!(p.judged[0].params["max_overlap"], "31ms");
        assert_eq!(p.judged[1].params["max_overlap"], "1ms");
        assert_eq!(
            p.judged[1].params["bound"],
            "clock error bound 1ms, given by --clock-error"
        );
        assert_eq!(p.judged[2].params, serde_json::json!({}), "untouched");
        assert_eq!(
            p.derivations[0],
            "mutual-exclusion: max_overlap 31ms = 30ms (declared) + 1ms (clock error bound 1ms, given by --clock-error)"
        );
        assert_eq!(p.not_judged.len(), 1);
        assert_eq!(p.not_judged[0].0, "lease-safety");
        // The judged checks build with those parameters.
        let cluster = tenure_core::Cluster::uniform("node", 2);
        for c in &p.judged {
            tenure_check::build(&c.name, &c.params, &cluster).unwrap();
        }

        // Without a bound: the overlap checks are not judged, the rest are.
        let p = plan(&checks, None);
        let not: Vec<&str> = p.not_judged.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            not,
            [
                "mutual-exclusion",
                "single-leader-at-a-time",
                "lease-safety"
            ]
        );
        assert_eq!(p.judged.len(), 1);
        assert!(p.derivations.is_empty());
    }
}
