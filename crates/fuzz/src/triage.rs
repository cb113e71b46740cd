//! Triage and reports over many seeds: failures grouped by the check that failed and the
//! shape of their shrunk fault schedule, a few examples of each kept, totals and
//! coverage. One function builds the report of a run (`tenure fuzz`) and of many shards'
//! runs merged (`tenure fuzz merge`), from the same JSON lines, so the two agree by
//! construction: a merged report over the shards of a range equals the report of one
//! process over that range.
//!
//! **Which failures are shrunk.** Per check, the first [`Report::keep`] failing seeds
//! in seed order (and every seed re-run from a regression corpus). A run decides this as
//! its seeds come in (outcomes arrive in seed order); a shard shrinks the first of its
//! own block, a superset of what the whole range would shrink, and the report keeps the
//! shrunk signatures of exactly the first `keep` of the whole range. The rest are
//! counted and listed by seed, not shrunk.

use crate::coverage::Coverage;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tenure_scenario::{FaultEvent, NodeSel};

/// How many failing seeds per check a run keeps (saves, shrinks) by default.
pub const DEFAULT_KEEP: usize = 3;

/// The shape of a fault schedule, for grouping failures that are the same bug: each
/// event's kind and the node it aims at, in order, with nodes renamed by first
/// appearance (`A`, `B`, ...) and times and amounts left out: `crash A, restart A`.
/// `the leader` stays a role.
pub fn signature(faults: &[FaultEvent]) -> String {
    let mut names: Vec<u32> = Vec::new();
    let parts: Vec<String> = faults
        .iter()
        .map(|e| {
            let kind = e.fault.kind();
            match e.fault.node() {
                Some(role @ (NodeSel::Leader | NodeSel::Holder | NodeSel::Waiter)) => {
                    format!("{kind} {role}")
                }
                Some(NodeSel::Id(n)) => {
                    let i = names.iter().position(|m| m == n).unwrap_or_else(|| {
                        names.push(*n);
                        names.len() - 1
                    });
                    format!("{kind} {}", letter(i))
                }
                None => kind.to_string(),
            }
        })
        .collect();
    if parts.is_empty() {
        "no faults".to_string()
    } else {
        parts.join(", ")
    }
}

/// `A` .. `Z`, then `N26`, ...
fn letter(i: usize) -> String {
    match u8::try_from(i) {
        Ok(i) if i < 26 => char::from(b'A' + i).to_string(),
        _ => format!("N{i}"),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a shrink of one failing seed came to.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShrunkLine {
    /// [`signature`] of the shrunk schedule.
    pub signature: String,
    /// Fault events left.
    pub faults: usize,
    /// Clock settings left (non-zero `[[clock]]` offsets and drifts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clocks: usize,
    /// The seed the shrunk case fails with (shrinking may move to a nearby one).
    pub seed: u64,
    /// The shrunk case file, as written (a path usable from where the run ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

/// One seed's JSON line, as `tenure fuzz --json` prints it and `tenure fuzz merge` reads
/// it back. Fields a line does not carry take their defaults; fields this does not know
/// are ignored.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SeedLine {
    pub seed: u64,
    /// `pass`, `violation`, `nondeterministic`, `panic` or `limit`.
    pub outcome: String,
    /// `protocol/variant` and the profile: a report is over one of each.
    #[serde(default)]
    pub target: String,
    #[serde(default)]
    pub profile: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default)]
    pub beyond_assumptions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promised: Option<bool>,
    /// Per check, its primary count (`null`: the check has none).
    #[serde(default)]
    pub judged: BTreeMap<String, Option<u64>>,
    /// Per drawn fault kind, whether it landed on a leader or holder.
    #[serde(default)]
    pub landed_on_holder: BTreeMap<String, bool>,
    /// Per drawn fault kind, where it landed (holder, waiter, in flight); absent in
    /// lines written before it was (then `landed_on_holder` stands for it).
    #[serde(default)]
    pub landed: BTreeMap<String, crate::coverage::KindLanded>,
    /// Per role aimed at, the faults aimed, re-aimed and skipped.
    #[serde(default)]
    pub aimed: BTreeMap<String, crate::coverage::AimCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability_hint: Option<String>,
    /// The saved case, as written (a path usable from where the run ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk: Option<ShrunkLine>,
    /// Re-run from the regression corpus (before the range).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub regression: bool,
    /// The checks not judged in this seed (outcome `not-judged`), each with its reason
    /// and what the run lacked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<NotJudgedLine>,
}

/// One check not judged in one seed, as a seed's JSON line carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NotJudgedLine {
    pub check: String,
    pub reason: tenure_check::Reason,
    pub why: String,
}

impl SeedLine {
    /// Not a pass and not "not judged" (no check failed there either).
    fn failed(&self) -> bool {
        self.outcome != "pass" && self.outcome != "not-judged"
    }
}

/// One failing seed as a report lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Example {
    pub seed: u64,
    pub message: String,
    /// The case file (as the run wrote it; merge resolves it under the shard's folder).
    pub case: Option<String>,
    pub timeline: Option<String>,
    pub shrunk: Option<ShrunkLine>,
    pub beyond_assumptions: Vec<String>,
    pub promised: bool,
}

/// Failures of one check whose shrunk schedules have one [`signature`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub checker: String,
    /// `None`: not shrunk (beyond the first `keep` of the check, or shrinking failed).
    pub signature: Option<String>,
    /// Every seed in the group, ascending.
    pub seeds: Vec<u64>,
    /// The seeds with a case file, ascending (a group of unshrunk seeds has none).
    pub examples: Vec<Example>,
}

/// A report over the seeds of one target and profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub target: String,
    pub profile: String,
    /// Failing seeds kept (shrunk) per check.
    pub keep: usize,
    /// Distinct seeds counted.
    pub seeds: u64,
    /// The seeds counted, as maximal ranges `start..end`.
    pub covered: Vec<(u64, u64)>,
    pub failed: u64,
    /// Seeds in which no check failed but some check was not judged (never a pass).
    pub not_judged: u64,
    pub nondeterministic: u64,
    pub panicked: u64,
    pub limited: u64,
    /// Seeds re-run from a regression corpus.
    pub regressions: Vec<u64>,
    pub hint_seeds: u64,
    pub first_hint: Option<(u64, String)>,
    pub coverage: Coverage,
    /// Failures of checks, grouped; in order of each group's first seed.
    pub groups: Vec<Group>,
    /// Panics, nondeterminism and run limits, by seed.
    pub internal: Vec<(u64, String, String)>,
    /// Lines for a seed already counted (overlapping shards, a regression seed inside
    /// the range): skipped.
    pub duplicates: u64,
    /// Per check (in the order first seen), over the seeds in which no check failed: in
    /// how many it ran and in how many it was not judged, per reason, with the lowest
    /// such seed's words. The same counts as [`crate::FuzzSummary::not_judged_by_check`]
    /// over the same seeds, however the lines were sharded.
    pub not_judged_by_check: Vec<crate::engine::NotJudgedCount>,
}

/// Builds a [`Report`] line by line (seeds in any order); only failing lines are kept in
/// memory, so a long `--time` run does not grow with its passing seeds.
#[derive(Clone, Debug)]
pub struct ReportBuilder {
    report: Report,
    /// Covered seeds: start -> end.
    ranges: BTreeMap<u64, u64>,
    failures: Vec<SeedLine>,
}

impl Report {
    /// The checks that failed in some seed.
    pub fn failed_checks(&self) -> Vec<String> {
        self.groups.iter().map(|g| g.checker.clone()).collect()
    }

    /// The checks that ran in some seed, were not judged in any seed they ran in, and
    /// failed in none: the run has no verdict on them (exit 5).
    pub fn never_judged(&self) -> Vec<String> {
        let failed = self.failed_checks();
        self.not_judged_by_check
            .iter()
            .filter(|c| c.seeds > 0 && c.total() == c.seeds && !failed.contains(&c.check))
            .map(|c| c.check.clone())
            .collect()
    }
}

/// Adds a seed in which no check failed to the per-check counts: every check it judged
/// or not (its `judged` keys) ran there; those in `not_judged` were not judged.
fn count_not_judged(counts: &mut Vec<crate::engine::NotJudgedCount>, line: &SeedLine) {
    for check in line.judged.keys() {
        let i = match counts.iter().position(|c| c.check == *check) {
            Some(i) => i,
            None => {
                counts.push(crate::engine::NotJudgedCount {
                    check: check.clone(),
                    ..Default::default()
                });
                counts.len() - 1
            }
        };
        let count = &mut counts[i];
        count.seeds += 1;
        if let Some(n) = line.not_judged.iter().find(|n| n.check == *check) {
            match count.reasons.iter_mut().find(|r| r.0 == n.reason) {
                Some(r) => {
                    r.1 += 1;
                    // The lowest seed's words, whatever order the shards came in.
                    if line.seed < r.2 {
                        r.2 = line.seed;
                        r.3.clone_from(&n.why);
                    }
                }
                None => count.reasons.push((n.reason, 1, line.seed, n.why.clone())),
            }
        }
    }
}

impl ReportBuilder {
    pub fn new(keep: usize) -> ReportBuilder {
        ReportBuilder {
            report: Report {
                target: String::new(),
                profile: String::new(),
                keep,
                seeds: 0,
                covered: Vec::new(),
                failed: 0,
                not_judged: 0,
                nondeterministic: 0,
                panicked: 0,
                limited: 0,
                regressions: Vec::new(),
                hint_seeds: 0,
                first_hint: None,
                coverage: Coverage::default(),
                groups: Vec::new(),
                internal: Vec::new(),
                duplicates: 0,
                not_judged_by_check: Vec::new(),
            },
            ranges: BTreeMap::new(),
            failures: Vec::new(),
        }
    }

    /// The coverage so far.
    pub fn coverage(&self) -> &Coverage {
        &self.report.coverage
    }

    fn contains(&self, seed: u64) -> bool {
        self.ranges
            .range(..=seed)
            .next_back()
            .is_some_and(|(_, end)| seed < *end)
    }

    fn insert(&mut self, seed: u64) {
        let mut start = seed;
        let mut end = seed + 1;
        if let Some((&s, &e)) = self.ranges.range(..=seed).next_back() {
            if e == seed {
                start = s;
                self.ranges.remove(&s);
            }
        }
        if let Some(e) = self.ranges.remove(&end) {
            end = e;
        }
        self.ranges.insert(start, end);
    }

    /// Adds one line. An error if it is of another target or profile than the lines
    /// before it.
    pub fn add(&mut self, line: SeedLine) -> Result<(), String> {
        let r = &mut self.report;
        if r.target.is_empty() && r.profile.is_empty() {
            r.target.clone_from(&line.target);
            r.profile.clone_from(&line.profile);
        } else if (&line.target, &line.profile) != (&r.target, &r.profile) {
            return Err(format!(
                "seed {} is of {} under profile {}, the lines before it of {} under {}",
                line.seed, line.target, line.profile, r.target, r.profile
            ));
        }
        if self.contains(line.seed) {
            self.report.duplicates += 1;
            return Ok(());
        }
        self.insert(line.seed);
        let r = &mut self.report;
        r.seeds += 1;
        if line.regression {
            r.regressions.push(line.seed);
        }
        let violated = (line.outcome == "violation")
            .then_some(line.checker.as_deref())
            .flatten();
        let mut faults = crate::coverage::SeedFaults {
            kinds: line.landed.clone(),
            aims: line.aimed.clone(),
        };
        for (kind, on) in &line.landed_on_holder {
            faults.kinds.entry(kind.clone()).or_default().holder |= *on;
        }
        r.coverage.add_line(&line.judged, violated, &faults);
        if let Some(h) = &line.durability_hint {
            r.hint_seeds += 1;
            match &r.first_hint {
                Some((s, _)) if *s < line.seed => {}
                _ => r.first_hint = Some((line.seed, h.clone())),
            }
        }
        if line.outcome == "pass" || line.outcome == "not-judged" {
            count_not_judged(&mut r.not_judged_by_check, &line);
        }
        match line.outcome.as_str() {
            "pass" => {}
            "not-judged" => r.not_judged += 1,
            "violation" => r.failed += 1,
            "nondeterministic" => r.nondeterministic += 1,
            "panic" => r.panicked += 1,
            "limit" => r.limited += 1,
            other => return Err(format!("seed {}: unknown outcome `{other}`", line.seed)),
        }
        if line.failed() {
            self.failures.push(line);
        }
        Ok(())
    }

    pub fn finish(mut self) -> Report {
        let keep = self.report.keep;
        self.failures.sort_by_key(|l| l.seed);
        self.report.regressions.sort_unstable();
        self.report.covered = self.ranges.into_iter().collect();
        let mut groups: Vec<Group> = Vec::new();
        // Per check, how many of its range seeds have been taken as examples.
        let mut taken: BTreeMap<String, usize> = BTreeMap::new();
        for line in self.failures {
            if line.outcome != "violation" {
                self.report.internal.push((
                    line.seed,
                    line.outcome.clone(),
                    line.message.clone().unwrap_or_default(),
                ));
                continue;
            }
            let checker = line.checker.clone().unwrap_or_default();
            let n = taken.entry(checker.clone()).or_default();
            let example = line.regression || *n < keep;
            if !line.regression && *n < keep {
                *n += 1;
            }
            let signature = if example {
                line.shrunk.as_ref().map(|s| s.signature.clone())
            } else {
                None
            };
            let group = match groups
                .iter_mut()
                .find(|g| g.checker == checker && g.signature == signature)
            {
                Some(g) => g,
                None => {
                    groups.push(Group {
                        checker: checker.clone(),
                        signature: signature.clone(),
                        seeds: Vec::new(),
                        examples: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            group.seeds.push(line.seed);
            if example {
                group.examples.push(Example {
                    seed: line.seed,
                    message: line.message.unwrap_or_default(),
                    case: line.case,
                    timeline: line.timeline,
                    shrunk: line.shrunk,
                    beyond_assumptions: line.beyond_assumptions,
                    promised: line.promised.unwrap_or(true),
                });
            }
        }
        // Shrunk groups first (in order of their first seed), then each check's unshrunk
        // rest.
        groups.sort_by_key(|g| (g.signature.is_none(), g.seeds[0]));
        self.report.groups = groups;
        self.report
    }
}

impl Report {
    /// Builds a report from lines (any order); see [`ReportBuilder`].
    pub fn from_lines(
        lines: impl IntoIterator<Item = SeedLine>,
        keep: usize,
    ) -> Result<Report, String> {
        let mut b = ReportBuilder::new(keep);
        for l in lines {
            b.add(l)?;
        }
        Ok(b.finish())
    }

    /// `0..100, 200..300`
    pub fn covered_text(&self) -> String {
        if self.covered.is_empty() {
            return "none".to_string();
        }
        self.covered
            .iter()
            .map(|(a, b)| format!("{a}..{b}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The report as JSON: everything but where files are (paths differ between a run
    /// and a merge of shards; [`Report::to_json`] adds them).
    pub fn verdict_json(&self) -> serde_json::Value {
        serde_json::json!({
            "target": self.target,
            "profile": self.profile,
            "keep": self.keep,
            "seeds": self.seeds,
            "covered": self.covered.iter().map(|(a, b)| serde_json::json!([a, b])).collect::<Vec<_>>(),
            "failed": self.failed,
            "nondeterministic": self.nondeterministic,
            "panicked": self.panicked,
            "limited": self.limited,
            "regressions": self.regressions,
            "durability_hint_seeds": self.hint_seeds,
            "coverage": self.coverage.to_json(),
            "groups": self.groups.iter().map(|g| serde_json::json!({
                "checker": g.checker,
                "signature": g.signature,
                "seeds": g.seeds,
                "examples": g.examples.iter().map(|e| serde_json::json!({
                    "seed": e.seed,
                    "message": e.message,
                    "shrunk_faults": e.shrunk.as_ref().map(|s| s.faults),
                    "shrunk_seed": e.shrunk.as_ref().map(|s| s.seed),
                    "beyond_assumptions": e.beyond_assumptions,
                    "promised": e.promised,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "internal": self.internal.iter().map(|(s, o, m)| serde_json::json!({
                "seed": s, "outcome": o, "message": m,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tenure_scenario::Fault;

    fn at(ms: u64, fault: Fault) -> FaultEvent {
        FaultEvent {
            at: Duration::from_millis(ms),
            fault,
        }
    }

    #[test]
    fn signatures_name_kinds_and_nodes_by_first_appearance_not_times() {
        let a = [
            at(
                100,
                Fault::Crash {
                    node: NodeSel::Id(3),
                },
            ),
            at(
                900,
                Fault::Restart {
                    node: NodeSel::Id(3),
                },
            ),
            at(
                950,
                Fault::Crash {
                    node: NodeSel::Leader,
                },
            ),
        ];
        let b = [
            at(
                7,
                Fault::Crash {
                    node: NodeSel::Id(1),
                },
            ),
            at(
                8,
                Fault::Restart {
                    node: NodeSel::Id(1),
                },
            ),
            at(
                9,
                Fault::Crash {
                    node: NodeSel::Leader,
                },
            ),
        ];
        assert_eq!(signature(&a), "crash A, restart A, crash leader");
        assert_eq!(signature(&a), signature(&b));
        let c = [
            at(
                7,
                Fault::Crash {
                    node: NodeSel::Id(1),
                },
            ),
            at(
                8,
                Fault::Restart {
                    node: NodeSel::Id(2),
                },
            ),
        ];
        assert_eq!(signature(&c), "crash A, restart B");
        assert_eq!(signature(&[]), "no faults");
    }

    fn line(seed: u64, outcome: &str, checker: Option<&str>, sig: Option<&str>) -> SeedLine {
        SeedLine {
            seed,
            outcome: outcome.into(),
            target: "raft/forget-vote".into(),
            profile: "chaos".into(),
            checker: checker.map(Into::into),
            message: checker.map(|c| format!("{c} at {seed}")),
            judged: [("single-leader-per-term".to_string(), Some(seed % 3))].into(),
            landed_on_holder: [("crash".to_string(), seed.is_multiple_of(2))].into(),
            case: checker.map(|_| format!("out/case{seed}.toml")),
            shrunk: sig.map(|s| ShrunkLine {
                signature: s.into(),
                faults: 2,
                clocks: 0,
                seed,
                case: None,
            }),
            ..SeedLine::default()
        }
    }

    #[test]
    fn failures_group_by_check_and_signature_and_the_rest_are_counted() {
        let c = Some("single-leader-per-term");
        let lines = vec![
            line(0, "pass", None, None),
            line(1, "violation", c, Some("crash A, restart A")),
            line(2, "violation", c, Some("power-loss A")),
            line(3, "violation", c, Some("crash A, restart A")),
            line(4, "violation", c, Some("crash A, restart A")), // beyond keep: not an example
            line(5, "panic", None, None),
        ];
        let r = Report::from_lines(lines, 3).unwrap();
        assert_eq!((r.seeds, r.failed, r.panicked), (6, 4, 1));
        assert_eq!(r.covered, vec![(0, 6)]);
        let g: Vec<(Option<&str>, &[u64], usize)> = r
            .groups
            .iter()
            .map(|g| (g.signature.as_deref(), &g.seeds[..], g.examples.len()))
            .collect();
        assert_eq!(
            g,
            vec![
                (Some("crash A, restart A"), &[1u64, 3][..], 2),
                (Some("power-loss A"), &[2][..], 1),
                (None, &[4][..], 0),
            ]
        );
        assert_eq!(r.internal.len(), 1);
    }

    #[test]
    fn shards_merged_in_any_order_report_as_one_run_and_duplicates_count_once() {
        let c = Some("single-leader-per-term");
        let all: Vec<SeedLine> = (0..40u64)
            .map(|s| {
                if s.is_multiple_of(3) {
                    line(
                        s,
                        "violation",
                        c,
                        Some(if s.is_multiple_of(2) { "x" } else { "y" }),
                    )
                } else {
                    line(s, "pass", None, None)
                }
            })
            .collect();
        let one = Report::from_lines(all.clone(), 3).unwrap();
        // Shard 4 first, shard 1 twice (a re-uploaded artefact).
        let mut shuffled: Vec<SeedLine> = all[30..].to_vec();
        shuffled.extend_from_slice(&all[..10]);
        shuffled.extend_from_slice(&all[10..30]);
        shuffled.extend_from_slice(&all[..10]);
        let merged = Report::from_lines(shuffled, 3).unwrap();
        assert_eq!(merged.duplicates, 10);
        assert_eq!(one.verdict_json(), merged.verdict_json());
    }

    #[test]
    fn lines_of_two_targets_do_not_mix() {
        let mut other = line(1, "pass", None, None);
        other.profile = "calm".into();
        let err = Report::from_lines(vec![line(0, "pass", None, None), other], 3).unwrap_err();
        assert!(err.contains("profile calm"), "{err}");
    }

    #[test]
    fn gaps_show_in_what_was_covered() {
        let lines = [0, 1, 2, 7, 8, 5].map(|s| line(s, "pass", None, None));
        let r = Report::from_lines(lines, 3).unwrap();
        assert_eq!(r.covered, vec![(0, 3), (5, 6), (7, 9)]);
        assert_eq!(r.covered_text(), "0..3, 5..6, 7..9");
    }

    fn not_judged_line(seed: u64, why: Option<&str>) -> SeedLine {
        SeedLine {
            seed,
            outcome: if why.is_some() { "not-judged" } else { "pass" }.into(),
            target: "leader-lease/correct".into(),
            profile: "pauses".into(),
            judged: [
                ("lease-safety".to_string(), Some(1)),
                ("leader-liveness".to_string(), Some(1)),
            ]
            .into(),
            not_judged: why
                .map(|w| NotJudgedLine {
                    check: "lease-safety".into(),
                    reason: tenure_check::Reason::CouldNotFail,
                    why: w.into(),
                })
                .into_iter()
                .collect(),
            ..SeedLine::default()
        }
    }

    #[test]
    fn not_judged_counts_per_check_do_not_depend_on_the_order_of_the_shards() {
        let lines = vec![
            not_judged_line(0, Some("only n0 acted (seed 0)")),
            not_judged_line(1, None),
            not_judged_line(2, Some("only n2 acted (seed 2)")),
            SeedLine {
                outcome: "violation".into(),
                checker: Some("lease-safety".into()),
                not_judged: Vec::new(),
                ..not_judged_line(3, None)
            },
        ];
        let report = |lines: Vec<SeedLine>| {
            let mut b = ReportBuilder::new(2);
            for l in lines {
                b.add(l).unwrap();
            }
            b.finish()
        };
        let forward = report(lines.clone());
        let backward = report(lines.into_iter().rev().collect());
        let counts = |r: &Report| {
            r.not_judged_by_check
                .iter()
                .map(|c| (c.check.clone(), (c.seeds, c.reasons.clone())))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(counts(&forward), counts(&backward));
        let c = &counts(&forward)["lease-safety"];
        // The failing seed is not counted: the check was judged (and failed) there.
        assert_eq!(c.0, 3);
        assert_eq!(
            c.1,
            vec![(
                tenure_check::Reason::CouldNotFail,
                2,
                0,
                "only n0 acted (seed 0)".to_string()
            )]
        );
        assert_eq!(counts(&forward)["leader-liveness"].1, vec![]);
        // Judged in seed 1: the run has a verdict on it.
        assert!(forward.never_judged().is_empty());
        let never = report(vec![
            not_judged_line(0, Some("a")),
            not_judged_line(2, Some("b")),
        ]);
        assert_eq!(never.never_judged(), vec!["lease-safety".to_string()]);
    }
}
