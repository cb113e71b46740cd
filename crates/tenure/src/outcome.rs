//! What a seed or a sweep found, and the message a failure panics with.

use crate::seeds;
use std::fmt::Write as _;
use tenure_check::verdict::{CheckVerdict, Overall};
use tenure_check::{Judged, Violation};
use tenure_core::History;
use tenure_scenario::FaultEvent;
use tenure_sim::Stats;

/// Which test ran a seed and in which package: what a replay command needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestContext {
    /// The test's name as `cargo test` filters it (`tests::finds_it`).
    pub test: String,
    /// The regressions file's name: the test's, or what `Simulation::named` says.
    pub key: String,
    /// The package (`-p`), when cargo said (`CARGO_PKG_NAME` at run time).
    pub package: Option<String>,
}

impl TestContext {
    /// The running test's, from the harness's thread name and cargo's environment.
    pub fn current() -> TestContext {
        let test = seeds::current_test_name().unwrap_or_else(|| "<test name>".to_string());
        TestContext {
            key: test.clone(),
            test,
            package: std::env::var("CARGO_PKG_NAME").ok(),
        }
    }
}

/// One seed's run.
pub struct Outcome {
    pub seed: u64,
    /// The first violation of each checker that found one, in the order they were added.
    pub violations: Vec<Violation>,
    /// What each checker judged, in the order they were added (built-in checks first,
    /// then your own). A vacuous check judged nothing: see [`Outcome::vacuous`].
    pub judged: Vec<Judged>,
    /// Each check's verdict, in the order they were added: pass, fail, or not judged and
    /// why (vacuous, could not fail, too short, undecided).
    pub verdicts: Vec<CheckVerdict>,
    /// The declared assumptions the run's faults went beyond, in words (empty: within
    /// them, so a failure of a correct protocol is a bug, not a lesson).
    pub beyond: Vec<String>,
    /// The protocol's name, as it declares it.
    pub protocol: String,
    pub history: History,
    pub stats: Stats,
    /// True if the run stopped at its first violation.
    pub stopped_early: bool,
    /// The fault events given as data (`.timeline(..)`) and drawn from the profile, in
    /// time order; faults scheduled as closures with `.faults(..)` are not listed.
    pub faults: Vec<FaultEvent>,
    pub context: TestContext,
}

impl Outcome {
    /// Every check was judged and passed: a check not judged (vacuous, could not fail,
    /// too short, undecided) has not passed.
    pub fn passed(&self) -> bool {
        self.overall() == Overall::Pass
    }

    /// The run's verdict: fail, not judged, or pass (see [`Overall::of`]).
    pub fn overall(&self) -> Overall {
        Overall::of(&self.verdicts)
    }

    /// The checks not judged in this run, with why.
    pub fn not_judged(&self) -> impl Iterator<Item = &CheckVerdict> {
        self.verdicts
            .iter()
            .filter(|v| v.verdict.not_judged().is_some())
    }

    /// The checks that judged nothing in this run (none when it stopped at a violation).
    pub fn vacuous(&self) -> impl Iterator<Item = &Judged> {
        self.judged.iter().filter(|j| j.vacuous.is_some())
    }

    /// Why each vacuous check judged nothing, and what to do about it.
    pub fn vacuous_messages(&self) -> Vec<String> {
        self.vacuous()
            .filter_map(|j| j.vacuous_message(Some(&self.protocol)))
            .collect()
    }

    /// `TENURE_SEED=<seed> cargo test -p <package> <test>`.
    pub fn replay_command(&self) -> String {
        let command = seeds::replay_command(
            self.seed,
            self.context.package.as_deref(),
            &self.context.test,
        );
        // An `#[ignore]`d test runs only when asked: the command asks too.
        let ignored = std::env::args().any(|a| a == "--ignored" || a == "--include-ignored");
        if ignored {
            format!("{command} -- --ignored")
        } else {
            command
        }
    }

    /// The failure in words (checker, violation, seed, replay command); `None` if no
    /// check failed. A run whose checks judged nothing says so instead.
    pub fn failure(&self) -> Option<String> {
        let Some(first) = self.violations.first() else {
            let not_judged: Vec<String> = self
                .not_judged()
                .filter_map(|v| Some(format!("{}: {}", v.check, v.verdict.not_judged()?)))
                .collect();
            if not_judged.is_empty() && !self.verdicts.is_empty() {
                return None;
            }
            let mut m = format!("tenure: seed {}: not judged (not a pass)\n", self.seed);
            if self.verdicts.is_empty() {
                let _ = writeln!(m, "  no checks: add one with .check(..) or .checker(..)");
            }
            for v in not_judged {
                let _ = writeln!(m, "  {v}");
            }
            let _ = write!(m, "replay this seed:\n  {}", self.replay_command());
            return Some(m);
        };
        let mut m = format!("tenure: seed {} broke {}\n", self.seed, first.checker);
        for v in &self.violations {
            let nodes: Vec<String> = v.nodes.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                m,
                "  {}: {} (at {}; nodes {})",
                v.checker,
                v.message,
                v.time,
                nodes.join(", ")
            );
        }
        if self.beyond.is_empty() {
            let _ = writeln!(m, "  within the protocol's declared assumptions");
        }
        for b in &self.beyond {
            let _ = writeln!(m, "  {b}");
        }
        let _ = write!(m, "replay this seed:\n  {}", self.replay_command());
        Some(m)
    }

    /// The run's metrics (acquire latency, hold time, wait queue, throughput, retries,
    /// fairness; elections, leaderless time, split votes), with the nodes of role
    /// `coordinator_role` as the lock service whose load is measured.
    pub fn metrics(&self, coordinator_role: &str) -> tenure_metrics::Metrics {
        let traffic = tenure_metrics::Traffic {
            to_coordinators_per_10ms: self
                .stats
                .sent_to_role(&self.history.info.cluster, coordinator_role),
            max_to_node_in_1ms: self.stats.max_sent_to_in_1ms.clone(),
            coordinators: self
                .history
                .info
                .cluster
                .with_role(coordinator_role)
                .collect(),
        };
        tenure_metrics::compute(&self.history, &traffic)
    }

    /// The run's leadership transitions as a tamper-evident, hash-chained log.
    pub fn audit_log(&self) -> tenure_audit::Log {
        tenure_audit::leadership_log(&self.history)
    }

    /// Panics with [`Outcome::failure`] if a checker found a violation or a check was not
    /// judged.
    #[track_caller]
    pub fn assert_ok(&self) {
        if let Some(message) = self.failure() {
            panic!("{message}");
        }
    }
}

/// Whether a sweep's checks judge anything: a check not judged in every one of the first
/// [`tenure_fuzz::VACUITY_PROBE_SEEDS`] seeds that ran to their end (vacuous, could not
/// fail, too short, undecided) is judged in none, and the sweep fails, as `tenure fuzz`
/// stops (exit 5).
#[derive(Default)]
pub(crate) struct VacuityProbe {
    seeds: u64,
    /// Per check: seeds it was not judged in, seeds it judged in, its first message.
    per: Vec<(String, u64, u64, Option<String>)>,
    concluded: bool,
}

impl VacuityProbe {
    /// Adds a seed; once the probe's seeds have run, the vacuous checks' messages (empty
    /// if every check judged something), once.
    pub(crate) fn add(&mut self, outcome: &Outcome) -> Option<Vec<String>> {
        if self.concluded {
            return None;
        }
        self.seeds += 1;
        // A run stopped at a violation judged its failing check; the others say nothing.
        let stopped = !outcome.violations.is_empty();
        for v in &outcome.verdicts {
            let i = match self.per.iter().position(|(c, ..)| *c == v.check) {
                Some(i) => i,
                None => {
                    self.per.push((v.check.clone(), 0, 0, None));
                    self.per.len() - 1
                }
            };
            let slot = &mut self.per[i];
            match v.verdict.not_judged() {
                Some(n) if !stopped => {
                    slot.1 += 1;
                    if slot.3.is_none() {
                        slot.3 = Some(format!("{} was not judged: {n}", v.check));
                    }
                }
                Some(_) => {}
                None => slot.2 += 1,
            }
        }
        (self.seeds >= tenure_fuzz::VACUITY_PROBE_SEEDS).then(|| self.conclude())
    }

    /// The vacuous checks' messages over the seeds seen so far (at the end of a sweep
    /// shorter than the probe).
    pub(crate) fn conclude(&mut self) -> Vec<String> {
        if self.concluded {
            return Vec::new();
        }
        self.concluded = true;
        let seeds = self.seeds;
        self.per
            .iter()
            .filter(|(_, vacuous, judged, _)| *vacuous > 0 && *judged == 0)
            .filter_map(|(_, _, _, m)| m.clone())
            .map(|m| format!("{m} (and in every one of the first {seeds} seeds)"))
            .collect()
    }
}

/// What a sweep found: it stops at the first failing seed.
pub struct SweepReport {
    /// How many seeds ran (regression seeds included).
    pub seeds_run: u64,
    /// The first failing seed, if any.
    pub failure: Option<Outcome>,
    /// True if that seed came from the regressions file.
    pub from_regressions: bool,
    /// Checks that judged nothing in any of the sweep's first seeds, with why: the
    /// sweep stopped there (see [`tenure_fuzz::VACUITY_PROBE_SEEDS`]).
    pub vacuous: Vec<String>,
}

impl SweepReport {
    /// No seed failed and every check judged something.
    pub fn passed(&self) -> bool {
        self.failure.is_none() && self.vacuous.is_empty()
    }

    /// The failing seed's outcome; panics (with how many seeds passed) if none failed.
    #[track_caller]
    pub fn expect_failure(&self) -> &Outcome {
        match &self.failure {
            Some(o) => o,
            None => panic!(
                "tenure: expected a failing seed, but all {} seeds passed",
                self.seeds_run
            ),
        }
    }
}

/// What a counting sweep ([`Simulation::sweep_count`](crate::Simulation::sweep_count))
/// found: every seed ran, and the failures are grouped by checker.
#[derive(Clone, Debug, Default)]
pub struct SweepCount {
    pub seeds_run: u64,
    /// The failing seeds, in the order they ran.
    pub failing_seeds: Vec<u64>,
    /// Per checker that failed (sorted by name): its seeds and its first violation.
    pub by_checker: std::collections::BTreeMap<&'static str, CheckerFailures>,
    /// Checks that judged nothing in any of the sweep's first seeds, with why.
    pub vacuous: Vec<String>,
}

/// One checker's failures in a counting sweep.
#[derive(Clone, Debug)]
pub struct CheckerFailures {
    /// The seeds this checker failed (a seed counts once however many violations it had).
    pub seeds: Vec<u64>,
    /// The first of them, and its first violation.
    pub first_seed: u64,
    pub first: Violation,
}

impl SweepCount {
    /// No seed failed and every check judged something.
    pub fn passed(&self) -> bool {
        self.failing_seeds.is_empty() && self.vacuous.is_empty()
    }

    /// How many seeds `checker` failed (0 if none or unknown).
    pub fn failures_of(&self, checker: &str) -> usize {
        self.by_checker.get(checker).map_or(0, |c| c.seeds.len())
    }
}

impl std::fmt::Display for SweepCount {
    /// `200 seeds, 7 failing` and a line per checker: `  single-leader-per-term: 5 seeds
    /// (first: seed 12: ...)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: u64, one: &str, many: &str| {
            if n == 1 {
                format!("{n} {one}")
            } else {
                format!("{n} {many}")
            }
        };
        write!(
            f,
            "{}, {} failing",
            plural(self.seeds_run, "seed", "seeds"),
            self.failing_seeds.len()
        )?;
        for (checker, c) in &self.by_checker {
            write!(
                f,
                "\n  {checker}: {} (first: seed {}: {})",
                plural(c.seeds.len() as u64, "seed", "seeds"),
                c.first_seed,
                c.first.message
            )?;
        }
        for v in &self.vacuous {
            write!(f, "\n  VACUOUS: {v}")?;
        }
        Ok(())
    }
}
