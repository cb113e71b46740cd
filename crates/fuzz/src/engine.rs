//! The fuzz loop: run a range of seeds of a [`Target`] on worker threads (each seed is
//! its own madsim runtime), stop each seed at its first violation, and hand the
//! outcomes to the caller **in seed order**, so what is printed, written and counted is
//! the same whatever the number of threads.
//!
//! A stop flag (Ctrl-C, a time budget) makes workers take no new seed; seeds in flight
//! finish and every outcome already computed is still handed over (in seed order, with
//! gaps where a seed never ran).

use super::target::Target;
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use tenure_core::SimTime;
use tenure_scenario::{CheckSpec, Expectation, Scenario};
use tenure_sim::play::{Prepared, RunOptions};
use tenure_sim::trace::TraceEvent;

/// How to fuzz.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Run each seed twice with the full trace and report the first difference.
    pub check_determinism: bool,
    /// Stop after this many failing seeds (in seed order); `None` runs the whole range.
    pub max_failures: Option<usize>,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        FuzzOptions {
            jobs: 1,
            check_determinism: false,
            max_failures: None,
        }
    }
}

/// What one seed did.
#[derive(Clone, Debug)]
pub struct SeedOutcome {
    pub seed: u64,
    pub result: SeedResult,
    /// What each check judged in this seed (empty if it never ran to a report).
    pub judged: Vec<tenure_check::Judged>,
    /// The checks not judged in this seed, with why (none when a check failed: the run
    /// stopped there, so the others were not judged to the end, which says nothing).
    pub not_judged: Vec<(String, tenure_check::NotJudged)>,
    /// Where each drawn fault landed (see [`crate::coverage`]).
    pub landed: Vec<crate::coverage::Landed>,
    /// The seed's first durability hint (a message sent before a write was synced), if
    /// any: not a failure.
    pub hint: Option<String>,
    /// The true time the seed's run covered (to its end, or to where it stopped; zero
    /// if it panicked): what progress reports add up as simulated time.
    pub simulated: SimTime,
}

#[derive(Clone, Debug)]
pub enum SeedResult {
    /// No check failed (some may not have been judged: [`SeedOutcome::not_judged`]).
    Pass,
    /// A check failed.
    Fail(Box<Failure>),
    /// Two runs of the seed differed (`--check-determinism`).
    Nondeterministic(Divergence),
    /// The run panicked: a bug in tenure or in the protocol.
    Panicked(String),
    /// The run went over a run limit (`--max-in-flight`) and was stopped: no verdict.
    Limit(tenure_scenario::Exceeded),
}

/// A failing seed: the first violation and the case that replays it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub checker: &'static str,
    pub time: SimTime,
    pub message: String,
    /// The seed's case, expecting this violation: write it and `tenure run` it with the
    /// seed to replay.
    pub case: Scenario,
    /// The declared assumptions the case's faults broke, in words (empty: the failure
    /// is within the protocol's assumptions, so a correct variant has a bug).
    pub beyond: Vec<String>,
    /// Set when the failed check is neither promised by the protocol nor known to be
    /// broken by the variant: the scenario checks it to show a lesson (e.g. the
    /// GC-pause lesson on a lock that promises only fencing), so the failure is not a
    /// bug. Says so in words.
    pub not_promised: Option<String>,
}

/// Why `checker` failing is no bug of `prepared`'s variant, if it is not: the protocol
/// does not promise it and the variant is not known to break it.
fn not_promised(prepared: &Prepared, checker: &str) -> Option<String> {
    if prepared.promises.iter().any(|p| p.check == checker) {
        return None;
    }
    let variant = &prepared.scenario.protocol.variant;
    let known_breaks = variant
        .split('+')
        .filter_map(|v| prepared.info.variant(v))
        .any(|v| v.breaks.contains(&checker));
    if known_breaks {
        return None;
    }
    let promises: Vec<&str> = prepared.promises.iter().map(|p| p.check).collect();
    let promises = if promises.is_empty() {
        "nothing".to_string()
    } else {
        promises.join(", ")
    };
    Some(format!(
        "not a promise of {}: it promises {promises}; the scenario checks {checker} to show a lesson, not a bug",
        prepared.info.name
    ))
}

/// The first trace event at which two runs of one seed differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    pub index: usize,
    /// The event of each run at `index` as a JSON line (`None`: that trace ended).
    pub first: Option<String>,
    pub second: Option<String>,
}

impl SeedOutcome {
    /// One JSON line about this seed; the same for a seed whatever else ran.
    pub fn to_json(&self) -> serde_json::Value {
        let mut line = self.result_json();
        if matches!(self.result, SeedResult::Pass) && !self.not_judged.is_empty() {
            // No check failed, but not every check was judged: never "pass".
            line["outcome"] = "not-judged".into();
            line["not_judged"] = self
                .not_judged
                .iter()
                .map(|(c, n)| serde_json::json!({"check": c, "reason": n.reason.key(), "why": n.why}))
                .collect();
        }
        // Coverage, per seed (so shards can be merged): each check's primary count and
        // where each fault kind landed.
        let judged: serde_json::Map<String, serde_json::Value> = self
            .judged
            .iter()
            .map(|j| {
                let n = j
                    .counts
                    .first()
                    .map_or(serde_json::Value::Null, |(_, n)| (*n).into());
                (j.check.clone(), n)
            })
            .collect();
        let faults = crate::coverage::SeedFaults::of(&self.landed);
        if let Some(map) = line.as_object_mut() {
            map.insert("judged".into(), judged.into());
            map.insert(
                "landed_on_holder".into(),
                serde_json::json!(faults.on_holder()),
            );
            map.insert("landed".into(), serde_json::json!(faults.kinds));
            if !faults.aims.is_empty() {
                map.insert("aimed".into(), serde_json::json!(faults.aims));
            }
            if let Some(h) = &self.hint {
                map.insert("durability_hint".into(), h.clone().into());
            }
        }
        line
    }

    fn result_json(&self) -> serde_json::Value {
        match &self.result {
            SeedResult::Pass => serde_json::json!({"seed": self.seed, "outcome": "pass"}),
            SeedResult::Fail(f) => serde_json::json!({
                "seed": self.seed,
                "outcome": "violation",
                "checker": f.checker,
                "time_ns": f.time.as_nanos(),
                "message": f.message,
                "faults": f.case.faults.len(),
                "beyond_assumptions": f.beyond,
                "promised": f.not_promised.is_none(),
            }),
            SeedResult::Nondeterministic(d) => serde_json::json!({
                "seed": self.seed,
                "outcome": "nondeterministic",
                "trace_event": d.index,
                "first": d.first,
                "second": d.second,
            }),
            SeedResult::Panicked(message) => serde_json::json!({
                "seed": self.seed,
                "outcome": "panic",
                "message": message,
            }),
            SeedResult::Limit(limit) => serde_json::json!({
                "seed": self.seed,
                "outcome": "limit",
                "message": limit.to_string(),
            }),
        }
    }
}

/// Counts over the seeds that ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuzzSummary {
    /// Seeds handed over (run to an outcome).
    pub seeds: u64,
    pub failed: u64,
    pub nondeterministic: u64,
    pub panicked: u64,
    /// Seeds stopped by a run limit (`--max-in-flight`).
    pub limited: u64,
    /// Seeds in which no check failed but some check was not judged.
    pub not_judged: u64,
    /// Per check (in the order first seen): in how many seeds it was not judged, per
    /// reason, with the first seed's words for each reason.
    pub not_judged_by_check: Vec<NotJudgedCount>,
    /// True if the stop flag, `max_failures` or a vacuous check ended the run before the
    /// range did.
    pub stopped: bool,
    /// Per check, in how many seeds it judged anything; per fault kind, where it landed.
    pub coverage: crate::coverage::Coverage,
    /// Set when a check judged nothing in every one of the first
    /// [`VACUITY_PROBE_SEEDS`] seeds that ran to their end: the run stopped there, and
    /// these say which checks and why (a verdict on them would be vacuous).
    pub vacuous: Vec<String>,
    /// Seeds with a durability hint, and the first seed's first hint.
    pub hint_seeds: u64,
    pub first_hint: Option<(u64, String)>,
}

/// How often one check was not judged over a fuzz run's seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotJudgedCount {
    pub check: String,
    /// Seeds in which the check ran to the end (judged or not).
    pub seeds: u64,
    /// Per reason: seeds, and the first such seed with its words.
    pub reasons: Vec<(tenure_check::Reason, u64, u64, String)>,
}

impl NotJudgedCount {
    /// Seeds in which the check was not judged, whatever the reason.
    pub fn total(&self) -> u64 {
        self.reasons.iter().map(|r| r.1).sum()
    }

    /// `not judged in 12 of 300 seeds (10 too short, e.g. seed 4: ...; 2 could not fail)`.
    pub fn words(&self) -> String {
        let parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(reason, n, seed, why)| format!("{n} {reason}, e.g. seed {seed}: {why}"))
            .collect();
        format!(
            "not judged in {} of {} seeds ({})",
            self.total(),
            self.seeds,
            parts.join("; ")
        )
    }
}

/// How many seeds a fuzz run looks at before it concludes a check judges nothing.
pub const VACUITY_PROBE_SEEDS: u64 = 20;

/// `range` split into `count` contiguous blocks; block `index` (0-based). The blocks
/// cover the range with no overlap, in order.
pub fn shard(range: Range<u64>, index: u64, count: u64) -> Range<u64> {
    assert!(count > 0 && index < count, "shard {index} of {count}");
    let len = u128::from(range.end.saturating_sub(range.start));
    let at = |k: u64| range.start + (len * u128::from(k) / u128::from(count)) as u64;
    at(index)..at(index + 1)
}

/// Runs one seed of `target` (stopping at the first violation).
pub fn run_seed(target: &Target, seed: u64, check_determinism: bool) -> SeedOutcome {
    // What the run learns is written into `out` as it goes, so a seed that panics still
    // reports what it had.
    let mut out = SeedOutcome {
        seed,
        result: SeedResult::Pass,
        judged: Vec::new(),
        not_judged: Vec::new(),
        landed: Vec::new(),
        hint: None,
        simulated: SimTime::ZERO,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        seed_result(target, seed, check_determinism, &mut out)
    }))
    .unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_string());
        SeedResult::Panicked(message)
    });
    out.result = result;
    out
}

fn seed_result(
    target: &Target,
    seed: u64,
    check_determinism: bool,
    out: &mut SeedOutcome,
) -> SeedResult {
    let prepared = target.prepare(seed);
    let options = RunOptions {
        trace: check_determinism,
        stop_at_first_violation: true,
    };
    let report = prepared.run(seed, &options);
    out.simulated = report.history.info.end;
    out.judged.clone_from(&report.judged);
    if report.violations.is_empty() {
        out.not_judged = report
            .not_judged()
            .filter_map(|v| Some((v.check.clone(), v.verdict.not_judged()?.clone())))
            .collect();
    }
    out.landed = crate::coverage::landed(&prepared.scenario.faults, &report.history);
    out.hint = report
        .stats
        .durability_hints
        .first()
        .map(ToString::to_string);
    if let Some(limit) = report.stats.stopped_by {
        return SeedResult::Limit(limit);
    }
    if check_determinism {
        let again = prepared.run(seed, &options);
        let (a, b) = (
            report.trace.as_deref().unwrap_or(&[]),
            again.trace.as_deref().unwrap_or(&[]),
        );
        if let Some(index) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            let line = |e: Option<&TraceEvent>| e.map(TraceEvent::to_json_line);
            return SeedResult::Nondeterministic(Divergence {
                index,
                first: line(a.get(index)),
                second: line(b.get(index)),
            });
        }
    }
    let Some(v) = report.violations.first() else {
        return SeedResult::Pass;
    };
    let mut case = prepared.scenario.clone();
    case.expect = Expectation::Violation {
        checker: v.checker.to_string(),
    };
    let beyond = tenure_sim::broken_assumptions(&case, &prepared.assumptions)
        .iter()
        .map(ToString::to_string)
        .collect();
    SeedResult::Fail(Box::new(Failure {
        checker: v.checker,
        time: v.time,
        message: v.message.clone(),
        case,
        beyond,
        not_promised: not_promised(&prepared, v.checker),
    }))
}

/// Fuzzes `seeds` of `target`, calling `emit` with each outcome in seed order, on the
/// calling thread. `stop` (set by Ctrl-C or a timer) ends the run early.
pub fn fuzz(
    target: &Target,
    seeds: Range<u64>,
    options: &FuzzOptions,
    stop: &AtomicBool,
    mut emit: impl FnMut(&SeedOutcome),
) -> FuzzSummary {
    let mut summary = FuzzSummary::default();
    // Per check: seeds that ran to their end with it vacuous, and seeds it judged in.
    let mut vacuity: Vec<(String, u64, u64, Option<tenure_check::Judged>)> = Vec::new();
    let protocol = target.base.protocol.name.clone();
    // The one seed pool (tenure-pool): outcomes come back in seed order whatever
    // `--jobs` is; a stop hands over what finished, with gaps.
    tenure_pool::run(
        seeds.clone(),
        options.jobs,
        stop,
        |seed| run_seed(target, seed, options.check_determinism),
        |_, o| {
            summary.seeds += 1;
            if matches!(o.result, SeedResult::Pass) {
                if !o.not_judged.is_empty() {
                    summary.not_judged += 1;
                }
                for j in &o.judged {
                    let i = match summary
                        .not_judged_by_check
                        .iter()
                        .position(|c| c.check == j.check)
                    {
                        Some(i) => i,
                        None => {
                            summary.not_judged_by_check.push(NotJudgedCount {
                                check: j.check.clone(),
                                ..Default::default()
                            });
                            summary.not_judged_by_check.len() - 1
                        }
                    };
                    let count = &mut summary.not_judged_by_check[i];
                    count.seeds += 1;
                    if let Some((_, n)) = o.not_judged.iter().find(|(c, _)| *c == j.check) {
                        match count.reasons.iter_mut().find(|r| r.0 == n.reason) {
                            Some(r) => r.1 += 1,
                            None => count.reasons.push((n.reason, 1, o.seed, n.why.clone())),
                        }
                    }
                }
            }
            match o.result {
                SeedResult::Pass => {}
                SeedResult::Fail(_) => summary.failed += 1,
                SeedResult::Nondeterministic(_) => summary.nondeterministic += 1,
                SeedResult::Panicked(_) => summary.panicked += 1,
                SeedResult::Limit(_) => summary.limited += 1,
            }
            let violated: Vec<&str> = match &o.result {
                SeedResult::Fail(f) => vec![f.checker],
                _ => Vec::new(),
            };
            summary.coverage.add(&o.judged, &violated, &o.landed);
            if let Some(h) = &o.hint {
                summary.hint_seeds += 1;
                summary
                    .first_hint
                    .get_or_insert_with(|| (o.seed, h.clone()));
            }
            for j in &o.judged {
                let i = match vacuity.iter().position(|(c, ..)| *c == j.check) {
                    Some(i) => i,
                    None => {
                        vacuity.push((j.check.clone(), 0, 0, None));
                        vacuity.len() - 1
                    }
                };
                let slot = &mut vacuity[i];
                if j.vacuous.is_some() {
                    slot.1 += 1;
                    slot.3.get_or_insert_with(|| j.clone());
                } else if violated.contains(&j.check.as_str())
                    || j.counts.first().is_some_and(|(_, n)| *n > 0)
                {
                    slot.2 += 1;
                }
            }
            emit(&o);
            if summary.seeds == VACUITY_PROBE_SEEDS.min(seeds.end.saturating_sub(seeds.start)) {
                summary.vacuous = vacuity
                    .iter()
                    .filter(|(_, vacuous, judged, _)| *vacuous > 0 && *judged == 0)
                    .filter_map(|(_, _, _, j)| j.as_ref()?.vacuous_message(Some(&protocol)))
                    .map(|m| {
                        format!(
                            "{m} (it judged nothing in any of the first {} seeds)",
                            summary.seeds
                        )
                    })
                    .collect();
                if !summary.vacuous.is_empty() {
                    return tenure_pool::Flow::Halt;
                }
            }
            let failures = summary.failed + summary.nondeterministic + summary.panicked;
            if options
                .max_failures
                .is_some_and(|max| failures >= max as u64)
            {
                tenure_pool::Flow::Halt
            } else {
                tenure_pool::Flow::Continue
            }
        },
    );
    let all = seeds.end.saturating_sub(seeds.start);
    summary.stopped = summary.seeds < all;
    summary
}

/// The file name a failing case is saved under: `<protocol>-<variant>-seed<N>-<checker>`.
pub fn case_stem(case: &Scenario, seed: u64, checker: &str) -> String {
    format!(
        "{}-{}-seed{seed}-{checker}",
        case.protocol.name, case.protocol.variant
    )
}

/// `case` reduced to the one check that failed (with its parameters), expecting it to
/// fail. Shrinking starts from this.
pub fn only_check(case: &Scenario, checker: &str) -> Scenario {
    let mut s = case.clone();
    let spec: Vec<CheckSpec> = s
        .checks
        .iter()
        .filter(|c| c.name == checker)
        .cloned()
        .collect();
    s.checks = spec;
    s.expect = Expectation::Violation {
        checker: checker.to_string(),
    };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_a_range_in_order_without_overlap() {
        for (range, n) in [(0..10, 3), (5..6, 4), (0..0, 2), (100..1100, 7)] {
            let blocks: Vec<Range<u64>> = (0..n).map(|k| shard(range.clone(), k, n)).collect();
            assert_eq!(blocks[0].start, range.start);
            assert_eq!(blocks[n as usize - 1].end, range.end);
            for w in blocks.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
        }
        assert_eq!(shard(0..10, 0, 3), 0..3);
        assert_eq!(shard(0..10, 2, 3), 6..10);
        assert_eq!(shard(0..u64::MAX, 1, 2), u64::MAX / 2..u64::MAX);
    }

    fn target(variant: &str) -> Target {
        Target::for_protocol(&crate::zoo(), "redis-lock", Some(variant), Some("pauses")).unwrap()
    }

    #[test]
    fn outcomes_come_in_seed_order_whatever_the_threads() {
        let t = target("correct");
        let run = |jobs| {
            let mut seen = Vec::new();
            let options = FuzzOptions {
                jobs,
                ..FuzzOptions::default()
            };
            let summary = fuzz(&t, 0..8, &options, &AtomicBool::new(false), |o| {
                seen.push(o.to_json())
            });
            (seen, summary)
        };
        let (one, s1) = run(1);
        let (three, s3) = run(3);
        assert_eq!(one, three);
        assert_eq!(s1, s3);
        assert_eq!(s1.seeds, 8);
        let seeds: Vec<u64> = one.iter().map(|j| j["seed"].as_u64().unwrap()).collect();
        assert_eq!(seeds, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn max_failures_stops_at_the_first_failing_seed_in_order() {
        // Pauses past the TTL are beyond redis-lock's assumptions: `beyond` draws them,
        // and a paused holder that wakes acts on a lock the server gave away.
        let t = Target::for_protocol(&crate::zoo(), "redis-lock", None, Some("beyond")).unwrap();
        let options = FuzzOptions {
            jobs: 2,
            max_failures: Some(1),
            ..FuzzOptions::default()
        };
        let mut last = None;
        let summary = fuzz(&t, 0..200, &options, &AtomicBool::new(false), |o| {
            last = Some(o.clone())
        });
        assert_eq!(summary.failed, 1);
        assert!(summary.stopped);
        let last = last.unwrap();
        assert_eq!(
            last.seed + 1,
            summary.seeds,
            "every seed before the failure was handed over"
        );
        let SeedResult::Fail(f) = last.result else {
            panic!("ends with the failure")
        };
        assert_eq!(f.case.seed, last.seed);
        assert_eq!(
            f.case.expect,
            Expectation::Violation {
                checker: f.checker.to_string()
            }
        );
    }

    #[test]
    fn a_failed_check_that_is_neither_promised_nor_a_known_break_is_a_lesson() {
        let prepared = |variant: &str| {
            let zoo = crate::zoo();
            let scenario =
                crate::target::default_scenario(&zoo, "etcd-lock", Some(variant)).unwrap();
            Prepared::new(scenario, &zoo).unwrap()
        };
        // etcd's lock promises fencing, not exclusive actions: a holder paused between
        // its check and its write is the GC-pause lesson.
        let correct = prepared("correct");
        let why = not_promised(&correct, "mutual-exclusion").expect("not promised");
        assert!(why.starts_with("not a promise of etcd-lock: it promises fencing-safety"));
        assert_eq!(not_promised(&correct, "fencing-safety"), None);
        // The pre-3.5 (3.4.x) client is known to break mutual exclusion: a finding, no lesson.
        assert_eq!(
            not_promised(&prepared("no-key-check"), "mutual-exclusion"),
            None
        );
    }

    #[test]
    fn a_set_stop_flag_runs_nothing() {
        let summary = fuzz(
            &target("correct"),
            0..100,
            &FuzzOptions::default(),
            &AtomicBool::new(true),
            |_| {},
        );
        assert_eq!(summary.seeds, 0);
        assert!(summary.stopped);
    }
}
