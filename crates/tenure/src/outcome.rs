//! What a seed or a sweep found, and the message a failure panics with.

use crate::seeds;
use std::fmt::Write as _;
use tenure_check::Violation;
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
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// `TENURE_SEED=<seed> cargo test -p <package> <test>`.
    pub fn replay_command(&self) -> String {
        seeds::replay_command(
            self.seed,
            self.context.package.as_deref(),
            &self.context.test,
        )
    }

    /// The failure in words (checker, violation, seed, replay command); `None` if passed.
    pub fn failure(&self) -> Option<String> {
        let first = self.violations.first()?;
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

    /// Panics with [`Outcome::failure`] if a checker found a violation.
    #[track_caller]
    pub fn assert_ok(&self) {
        if let Some(message) = self.failure() {
            panic!("{message}");
        }
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
}

impl SweepReport {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
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
    pub fn passed(&self) -> bool {
        self.failing_seeds.is_empty()
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
        Ok(())
    }
}
