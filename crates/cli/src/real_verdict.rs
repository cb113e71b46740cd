//! The verdict on a real run's logs (`tenure-runtime`'s observation logs, merged): one
//! function, [`report`], for `tenure cluster` and `tenure check-trace`, so both say the
//! same of the same logs and exit alike.
//!
//! Each check the user asked for ends in one of four ways: passed, failed, judged
//! nothing (vacuous: its observation never appeared), or not judged, with the reason
//! (an overlap check without a clock-error bound, `lease-safety` on real logs, a
//! liveness check). The exit code: 1 if a check failed, else 2 if one judged nothing,
//! else 5 if one was not judged, else 0. A check that was not judged is never reported
//! as passed, and a run none of whose checks was judged does not exit 0.

use crate::Outcome;
use std::time::Duration;
use tenure_core::History;

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

/// How one check ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// What it judged (`412 actions in 9 leases by 3 nodes`).
    Passed(String),
    /// The violation, in words.
    Failed(String),
    /// It judged nothing: what it was told of (its coverage summary).
    Vacuous(String),
    /// Why it was not judged.
    NotJudged(String),
}

/// The verdict on a real run's logs: a line per check, in the order asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// How many records of how many nodes were judged.
    pub records: usize,
    pub nodes: usize,
    /// Each tolerance with its derivation (`mutual-exclusion: max_overlap 31ms = ...`).
    pub derivations: Vec<String>,
    pub checks: Vec<(String, Judgement)>,
}

impl Verdict {
    fn count(&self, f: fn(&Judgement) -> bool) -> usize {
        self.checks.iter().filter(|(_, j)| f(j)).count()
    }

    /// Failed (1) over judged nothing (2) over not judged (5) over passed (0); no
    /// check at all is not a pass either.
    pub fn outcome(&self) -> Outcome {
        if self.count(|j| matches!(j, Judgement::Failed(_))) > 0 {
            Outcome::CheckFailed
        } else if self.count(|j| matches!(j, Judgement::Vacuous(_))) > 0 {
            Outcome::BadInput
        } else if self.checks.is_empty() || self.count(|j| matches!(j, Judgement::NotJudged(_))) > 0
        {
            Outcome::NotJudged
        } else {
            Outcome::Passed
        }
    }

    /// The report, a line each: the tolerances, then every check in the order asked,
    /// then the verdict and its exit code.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "tenure check-trace: {} records of {} nodes (not deterministic: a real run; the logs are the evidence)",
            self.records, self.nodes
        )];
        out.extend(self.derivations.iter().map(|d| format!("tolerance {d}")));
        for (name, j) in &self.checks {
            out.push(match j {
                Judgement::Passed(what) => format!("pass {name}: {what}"),
                Judgement::Failed(v) => format!("FAIL {v}"),
                Judgement::Vacuous(what) => format!("VACUOUS {name}: judged nothing ({what})"),
                Judgement::NotJudged(why) => format!("not judged {name}: {why}"),
            });
        }
        let n = self.checks.len();
        let failed = self.count(|j| matches!(j, Judgement::Failed(_)));
        let vacuous = self.count(|j| matches!(j, Judgement::Vacuous(_)));
        let not_judged = self.count(|j| matches!(j, Judgement::NotJudged(_)));
        let outcome = self.outcome();
        out.push(match outcome {
            Outcome::CheckFailed => format!("verdict: FAIL ({failed} of {n} checks failed)"),
            Outcome::BadInput => {
                format!("verdict: not a pass ({vacuous} of {n} checks judged nothing)")
            }
            _ if n == 0 => "verdict: not judged (no checks to judge)".to_string(),
            Outcome::NotJudged => format!(
                "verdict: not judged ({not_judged} of {n} checks not judged, {} passed)",
                n - not_judged
            ),
            _ => format!("verdict: pass ({n} of {n} checks passed)"),
        });
        if let Some(last) = out.last_mut() {
            last.push_str(&format!(", exit {}", outcome.code()));
        }
        out
    }
}

/// Why `name` is not judged on real logs (with `clock_error`), if it is not.
fn not_judged(name: &str, clock_error: Option<ClockError>) -> Option<String> {
    if NO_TOLERANCE.contains(&name) {
        return Some("compares time intervals of different nodes and takes no tolerance for the error between their clocks; judge it in the simulator".into());
    }
    if tenure_check::kind_of(name) == Some(tenure_check::CheckKind::Liveness) {
        return Some("a liveness check counts from the end of the fault schedule, which real time blurs; judge it in the simulator".into());
    }
    if OVERLAP_CHECKS.contains(&name) && clock_error.is_none() {
        return Some("compares time intervals of different nodes, whose real clocks differ by an unknown error; give --clock-error DURATION (a bound on that error, e.g. 1ms) to judge it".into());
    }
    None
}

/// The parameters `c` is judged with: for an overlap check, the clock-error bound added
/// to its declared `max_overlap` (the declared value kept and both shown), with the
/// derivation line.
fn with_tolerance(c: &Check, ce: Option<ClockError>) -> (serde_json::Value, Option<String>) {
    let name = c.name.as_str();
    let Some(ce) = ce.filter(|_| OVERLAP_CHECKS.contains(&name)) else {
        return (c.params.clone(), None);
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
    (serde_json::Value::Object(params), Some(line))
}

/// Judges `history` (a real run's merged logs) with `checks`. `Err`: a check that does
/// not exist or whose parameters are wrong (bad input), before anything is judged.
pub fn judge(
    history: &History,
    checks: &[Check],
    clock_error: Option<ClockError>,
) -> Result<Verdict, String> {
    let mut verdict = Verdict {
        records: history.records.len(),
        nodes: history.info.cluster.size(),
        derivations: Vec::new(),
        checks: Vec::new(),
    };
    // Every check is built first, so a bad name or parameter is found before judging.
    let mut built = Vec::new();
    for c in checks {
        // An unknown name or a bad parameter, judged or not.
        tenure_check::build(&c.name, &c.params, &history.info.cluster)
            .map_err(|e| format!("check {}: {e}", c.name))?;
        if let Some(why) = not_judged(&c.name, clock_error) {
            built.push((c.name.clone(), Err(why)));
            continue;
        }
        let (params, derivation) = with_tolerance(c, clock_error);
        let checker = tenure_check::build(&c.name, &params, &history.info.cluster)
            .map_err(|e| format!("check {}: {e}", c.name))?;
        verdict.derivations.extend(derivation);
        built.push((c.name.clone(), Ok(checker)));
    }
    for (name, checker) in built {
        let mut c = match checker {
            Ok(c) => c,
            Err(why) => {
                verdict.checks.push((name, Judgement::NotJudged(why)));
                continue;
            }
        };
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
        let j = match violation {
            Some(v) => Judgement::Failed(v.to_string()),
            None if judged.as_ref().is_some_and(|j| j.vacuous.is_some()) => {
                Judgement::Vacuous(what)
            }
            None => Judgement::Passed(what),
        };
        verdict.checks.push((name, j));
    }
    Ok(verdict)
}

/// Judges, prints the report on stdout, and gives the exit code: what `cluster` and
/// `check-trace` both do with a run's logs.
pub fn report(history: &History, checks: &[Check], clock_error: Option<ClockError>) -> Outcome {
    match judge(history, checks, clock_error) {
        Ok(v) => {
            for line in v.lines() {
                println!("{line}");
            }
            v.outcome()
        }
        Err(e) => crate::bad_input(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tenure_core::{Cluster, LocalTime, NodeId, Observation, Record, RunInfo, SimTime};

    fn check(name: &str, params: serde_json::Value) -> Check {
        Check {
            name: name.into(),
            params,
        }
    }

    fn checks(names: &[&str]) -> Vec<Check> {
        names
            .iter()
            .map(|n| check(n, serde_json::json!({})))
            .collect()
    }

    /// n0 leads term 1 and serves from 10ms to 20ms, then n1 leads term 2 from 15ms:
    /// beliefs overlap by 5ms.
    fn history() -> History {
        let at = |ms: u64, node: u32, obs: Observation| {
            Record::new(
                SimTime(ms * 1_000_000),
                NodeId(node),
                LocalTime(ms as i64 * 1_000_000),
                LocalTime(ms as i64 * 1_000_000),
                obs,
            )
        };
        let records = vec![
            at(0, 0, Observation::Started),
            at(0, 1, Observation::Started),
            at(10, 0, Observation::Leader { term: 1 }),
            at(10, 0, Observation::Serves { term: 1 }),
            at(15, 1, Observation::Leader { term: 2 }),
            at(20, 0, Observation::Serves { term: 1 }),
            at(25, 1, Observation::Serves { term: 2 }),
        ];
        History {
            info: RunInfo {
                cluster: Cluster::uniform("server", 2),
                seed: 0,
                end: SimTime(25_000_000),
                calm_from: SimTime(25_000_000),
            },
            records,
        }
    }

    fn ms(n: u64) -> Option<ClockError> {
        Some(ClockError {
            bound: Duration::from_millis(n),
            source: "--clock-error",
        })
    }

    #[test]
    fn a_clock_error_bound_is_added_to_a_declared_tolerance_and_stated() {
        let cs = [
            check(
                "mutual-exclusion",
                serde_json::json!({"max_overlap": "30ms"}),
            ),
            check("single-leader-at-a-time", serde_json::json!({})),
            check("fencing-safety", serde_json::json!({})),
        ];
        let (p, line) = with_tolerance(&cs[0], ms(1));
        assert_eq!(p["max_overlap"], "31ms");
        assert_eq!(
            line.unwrap(),
            "mutual-exclusion: max_overlap 31ms = 30ms (declared) + 1ms (clock error bound 1ms, given by --clock-error)"
        );
        let (p, _) = with_tolerance(&cs[1], ms(1));
        assert_eq!(p["max_overlap"], "1ms");
        assert_eq!(p["bound"], "clock error bound 1ms, given by --clock-error");
        let (p, line) = with_tolerance(&cs[2], ms(1));
        assert_eq!((p, line), (serde_json::json!({}), None), "untouched");
    }

    /// Every way a check can end, and the exit code of each mix: a check not judged is
    /// never a pass, and nothing judged is not a pass either.
    #[test]
    fn not_judged_is_never_a_pass() {
        let h = history();
        let outcome = |names: &[&str], ce| judge(&h, &checks(names), ce).unwrap().outcome();
        assert_eq!(outcome(&["single-leader-per-term"], None), Outcome::Passed);
        // Without a bound an overlap check is not judged, alone or beside a pass.
        for names in [
            &["single-leader-at-a-time-belief"][..],
            &["single-leader-per-term", "single-leader-at-a-time-belief"],
            &["lease-safety"],
            &["leader-liveness"],
            &["single-leader-per-term", "lock-liveness"],
        ] {
            let v = judge(&h, &checks(names), None).unwrap();
            assert_eq!(v.outcome(), Outcome::NotJudged, "{names:?}");
            assert_eq!(v.outcome().code(), 5);
            let lines = v.lines().join("\n");
            assert!(lines.contains("not judged "), "{lines}");
            for n in names.iter().filter(|n| **n != "single-leader-per-term") {
                assert!(!lines.contains(&format!("pass {n}")), "{lines}");
            }
            assert!(lines.ends_with(", exit 5"), "{lines}");
        }
        assert_eq!(outcome(&[], None), Outcome::NotJudged, "no checks, no pass");
        // With a bound: 5ms of overlap fails under 1ms and passes under 10ms.
        assert_eq!(
            outcome(&["single-leader-at-a-time-belief", "lease-safety"], ms(1)),
            Outcome::CheckFailed
        );
        assert_eq!(
            outcome(&["single-leader-at-a-time-belief"], ms(10)),
            Outcome::Passed
        );
        // A check whose observations never appeared judged nothing: exit 2, before 5.
        let v = judge(&h, &checks(&["fencing-safety", "lease-safety"]), None).unwrap();
        assert_eq!(v.outcome(), Outcome::BadInput);
        assert!(v.lines().join("\n").contains("VACUOUS fencing-safety"));
        // An unknown check is bad input, said before anything is judged.
        let e = judge(&h, &checks(&["single-leader-per-tern"]), None).unwrap_err();
        assert!(e.contains("single-leader-per-tern"), "{e}");
    }
}
