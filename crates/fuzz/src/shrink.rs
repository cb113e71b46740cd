//! Shrinking: reduce a failing scenario to a small one that still fails the SAME checker
//! with the same seed.
//!
//! **What it promises.** [`shrink`] returns a scenario with no more fault events, no
//! longer a run and no more nodes than the input, whose run with the seed violates the
//! same checker; the result is a pure function of (scenario, seed). The steps, repeated
//! until none helps: drop whole time windows of the run (halves, quarters, ... of its
//! duration), drop each crash or power loss together with its restart, collapse a
//! node's repeated crash-restart cycles to its last (or first) one or to one outage
//! over them all (a crash point that restarts its node is a cycle too), drop fault events
//! (delta debugging: halves, quarters, ... then one at a time), merge two faults of one
//! kind on one node into one (a clock drift set twice, two jumps, two pauses), aim a
//! fault at `"leader"` instead of a fixed node when that lets another event go, shorten
//! pauses, cut the time before the first fault, shorten the run, and take the last node
//! off a role when the protocol accepts the smaller cluster and the timeline does not
//! name that node (later ids move down by one). The steps that change only the fault
//! events are [`FaultSteps`], over any oracle ([`shrink_faults`]): `tenure::Simulation::
//! shrink` runs the same ones on a profile's draw.
//!
//! For a liveness checker a candidate must leave the cluster healed (no partition
//! without a later heal, no crash without a later restart): otherwise "the cluster never
//! recovered" would be a trivial cause that any variant shares.
//!
//! **How it fails.** A scenario that does not fail with that seed cannot be shrunk
//! ([`ShrinkError::DoesNotFail`]); an invalid one is a [`ShrinkError::Invalid`].
//!
//! **Source.** Zeller & Hildebrandt, "Simplifying and Isolating Failure-Inducing Input"
//! (IEEE TSE 2002), the ddmin algorithm; QuickCheck/Hypothesis-style shrinking of
//! generated cases.

use super::engine::only_check;
use std::time::Duration;
use tenure_core::{Cluster, NodeId, RoleSpec, SignedDuration};
use tenure_scenario::{
    ClockSpec, ClusterSpec, Expectation, Fault, FaultEvent, NodeSel, Scenario, ScenarioError,
};
use tenure_sim::play::{Prepared, RunOptions};
use tenure_sim::Protocols;

/// The size of a scenario, as shrinking counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub faults: usize,
    /// Clock settings that are not zero: each `[[clock]]` offset and each drift counts
    /// one (a clock set off is a fault a scenario carries outside its timeline).
    pub clocks: usize,
    pub duration: Duration,
    pub nodes: usize,
}

impl Size {
    /// Fault events and clock settings together: what a reader of the shrunk case must
    /// take in to see why it fails.
    pub fn events(&self) -> usize {
        self.faults + self.clocks
    }
}

/// How many clock settings (non-zero offsets and drifts) a scenario has.
pub fn clock_settings(clocks: &[ClockSpec]) -> usize {
    clocks
        .iter()
        .map(|c| usize::from(c.offset.0 != 0) + usize::from(c.drift != 0.0))
        .sum()
}

/// A `[[clock]]` as one line: `n2 offset -300ms, drift 0.01`.
pub fn clock_text(c: &ClockSpec) -> String {
    let mut parts = Vec::new();
    if c.offset.0 != 0 {
        parts.push(format!("offset {}", c.offset));
    }
    if c.drift != 0.0 {
        parts.push(format!("drift {}", c.drift));
    }
    if parts.is_empty() {
        parts.push("exact".to_string());
    }
    format!("{} {}", c.node, parts.join(", "))
}

/// A shrunk scenario.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// Checks only `checker`, expects it to fail, and fails it with `seed` (which is
    /// also the scenario's own `seed`).
    pub scenario: Scenario,
    pub checker: String,
    /// The seed the shrunk scenario fails with: the input's, unless shrinking had to
    /// move to a nearby seed to drop an event (see [`shrink`]).
    pub seed: u64,
    pub before: Size,
    pub after: Size,
    /// How many runs shrinking took.
    pub runs: usize,
}

#[derive(Clone, Debug)]
pub enum ShrinkError {
    Invalid(ScenarioError),
    /// The scenario passes every check with this seed.
    DoesNotFail {
        seed: u64,
    },
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Invalid(e) => write!(f, "{e}"),
            ShrinkError::DoesNotFail { seed } => write!(
                f,
                "the scenario does not fail with seed {seed}: every check passes, nothing to shrink"
            ),
        }
    }
}

/// An upper bound on runs, so a pathological input still ends.
pub const MAX_RUNS: usize = 2_000;

/// Above this many fault events, shrinking may move to a nearby seed (see [`shrink`]).
pub const TARGET_FAULTS: usize = 3;

/// How many nearby seeds (`seed + 1 ..= seed + SEED_NEIGHBOURS`) a reseeding step may try.
const SEED_NEIGHBOURS: u64 = 16;

/// How many nearby seeds collapsing a node's crash storm to one cycle may try (see
/// [`FaultSteps`]): at most three candidates per flapping node, once per round.
const STORM_SEEDS: u64 = 64;

/// Shrinks `scenario` run with `seed`. The checker kept is the scenario's expected
/// violation if it fails, else the first checker that fails.
///
/// Every step keeps the seed while it can. But dropping an early event reshuffles every
/// random draw after it (message fates, latencies), so some failures need all their
/// events under their own seed. When more than three events remain and no step that
/// keeps the seed helps any more, shrinking also tries collapsing each node's crash
/// storm to one cycle under up to 64 nearby seeds, then, under a few nearby seeds,
/// dropping each event (or a crash with its restart), merging it with the next of its
/// kind on its node, and (on short timelines) aiming it at the leader with another event
/// dropped: a smaller scenario that fails the same checker with another seed is as good
/// a reproduction, and the result records it.
pub fn shrink(
    protocols: &Protocols,
    scenario: &Scenario,
    seed: u64,
) -> Result<Shrunk, ShrinkError> {
    let prepared = Prepared::new(scenario.clone(), protocols).map_err(ShrinkError::Invalid)?;
    let before = size(scenario, &prepared.cluster);
    let report = prepared.run(
        seed,
        &RunOptions {
            trace: false,
            stop_at_first_violation: false,
        },
    );
    let expected = match &scenario.expect {
        Expectation::Violation { checker } => Some(checker.as_str()),
        Expectation::Pass => None,
    };
    let checker = match report
        .violations
        .iter()
        .find(|v| Some(v.checker) == expected)
        .or_else(|| report.violations.first())
    {
        Some(v) => v.checker.to_string(),
        None => return Err(ShrinkError::DoesNotFail { seed }),
    };
    let within = scenario
        .checks
        .iter()
        .find(|c| c.name == checker)
        .and_then(|c| c.params.get("within"))
        .and_then(|w| w.as_str())
        .and_then(|w| tenure_core::parse_duration(w).ok())
        .unwrap_or(Duration::from_secs(5));
    let mut s = Shrinker {
        protocols: protocols.clone(),
        seed,
        liveness: checker.ends_with("-liveness"),
        judged_after: (checker == "leader-liveness").then_some(within),
        checker,
        runs: 0,
    };
    let mut best = only_check(scenario, &s.checker);
    best.source = String::new();
    assert!(
        s.fails(&best),
        "the scenario failed `{}` a moment ago",
        s.checker
    );
    loop {
        let start = best.clone();
        best = s.cut_after_violation(best);
        best = s.keep_recent(best);
        best = s.fault_steps(best, |steps, faults| steps.pass(faults));
        best = s.shrink_clocks(best);
        best = s.cut_lead_time(best);
        best = s.shorten_run(best);
        best = s.drop_nodes(best);
        // Moving the seed is the last resort: only when no pass that keeps it helps.
        if best == start && best.faults.len() > TARGET_FAULTS {
            best = s.fault_steps(best, |steps, faults| steps.reseed(faults));
        }
        if best == start || s.runs >= MAX_RUNS {
            break;
        }
    }
    best.seed = s.seed;
    let cluster = Prepared::new(best.clone(), protocols)
        .expect("every accepted candidate validated")
        .cluster;
    Ok(Shrunk {
        after: size(&best, &cluster),
        scenario: best,
        checker: s.checker,
        seed: s.seed,
        before,
        runs: s.runs,
    })
}

fn size(s: &Scenario, cluster: &Cluster) -> Size {
    Size {
        faults: s.faults.len(),
        clocks: clock_settings(&s.clocks),
        duration: s.duration,
        nodes: cluster.size(),
    }
}

struct Shrinker {
    protocols: Protocols,
    seed: u64,
    checker: String,
    liveness: bool,
    /// For `leader-liveness`: a run that ends sooner than this after its last fault
    /// fails it trivially (too short to judge), so candidates must run at least as long.
    judged_after: Option<Duration>,
    runs: usize,
}

/// How many times [`shrink_clock_settings`] halves one offset or drift.
pub const MAX_CLOCK_HALVINGS: usize = 8;

/// One of a `[[clock]]`'s two settings.
#[derive(Clone, Copy)]
enum ClockPart {
    Offset,
    Drift,
}

impl ClockPart {
    /// Sets it to zero; false if it was zero already.
    fn set_zero(self, c: &mut ClockSpec) -> bool {
        match self {
            ClockPart::Offset if c.offset.0 != 0 => c.offset = SignedDuration(0),
            ClockPart::Drift if c.drift != 0.0 => c.drift = 0.0,
            _ => return false,
        }
        true
    }

    /// Halves it (offsets rounded to whole milliseconds, drifts to 1e-4); false when
    /// the half rounds to itself or to zero (zero was tried already).
    fn halve(self, c: &mut ClockSpec) -> bool {
        match self {
            ClockPart::Offset => {
                let ms = c.offset.0 / 2 / 1_000_000;
                let half = ms * 1_000_000;
                if half == 0 || half == c.offset.0 {
                    return false;
                }
                c.offset = SignedDuration(half);
            }
            ClockPart::Drift => {
                let half = (c.drift / 2.0 * 10_000.0).trunc() / 10_000.0;
                if half == 0.0 || half == c.drift {
                    return false;
                }
                c.drift = half;
            }
        }
        true
    }
}

/// Shrinks clock settings while `fails` holds: each `[[clock]]` is dropped if the
/// failure does not need it; else its offset and its drift are each tried at zero, then
/// halved while the failure holds (offsets to whole milliseconds, drifts to 1e-4, at
/// most [`MAX_CLOCK_HALVINGS`] times each). `tenure shrink` and the library's
/// `Simulation::shrink` both shrink clocks with it.
pub fn shrink_clock_settings(
    mut best: Vec<ClockSpec>,
    mut fails: impl FnMut(&[ClockSpec]) -> bool,
) -> Vec<ClockSpec> {
    let mut i = 0;
    while i < best.len() {
        let mut candidate = best.clone();
        candidate.remove(i);
        if fails(&candidate) {
            best = candidate;
            continue;
        }
        for part in [ClockPart::Offset, ClockPart::Drift] {
            let mut candidate = best.clone();
            if !part.set_zero(&mut candidate[i]) {
                continue; // already zero
            }
            if fails(&candidate) {
                best = candidate;
                continue;
            }
            for _ in 0..MAX_CLOCK_HALVINGS {
                let mut candidate = best.clone();
                if !part.halve(&mut candidate[i]) || !fails(&candidate) {
                    break;
                }
                best = candidate;
            }
        }
        i += 1;
    }
    best
}

impl Shrinker {
    /// Whether `candidate` is valid and still fails the checker.
    fn fails(&mut self, candidate: &Scenario) -> bool {
        self.violation_time(candidate).is_some()
    }

    /// Runs `step` of [`FaultSteps`] on `best`'s fault events, each candidate being
    /// `best` with other events (and the step's seed).
    fn fault_steps(
        &mut self,
        best: Scenario,
        step: impl FnOnce(&mut FaultSteps<'_>, Vec<FaultEvent>) -> Vec<FaultEvent>,
    ) -> Scenario {
        let base = best.clone();
        let seed = self.seed;
        let mut fails = |seed: u64, faults: &[FaultEvent]| {
            let mut candidate = base.clone();
            candidate.faults = faults.to_vec();
            let kept = self.seed;
            self.seed = seed;
            let failed = self.fails(&candidate);
            self.seed = kept;
            failed
        };
        let mut steps = FaultSteps::new(seed, best.duration, &mut fails);
        let faults = step(&mut steps, best.faults.clone());
        self.seed = steps.seed;
        let mut out = best;
        out.faults = faults;
        out
    }

    /// When `candidate` violates the checker, if it is valid and does.
    fn violation_time(&mut self, candidate: &Scenario) -> Option<Duration> {
        if self.runs >= MAX_RUNS || (self.liveness && !healed(&candidate.faults)) {
            return None;
        }
        if let Some(within) = self.judged_after {
            if candidate.duration < calm_from(&candidate.faults) + within {
                return None;
            }
        }
        let prepared = Prepared::new(candidate.clone(), &self.protocols).ok()?;
        self.runs += 1;
        let report = prepared.run(
            self.seed,
            &RunOptions {
                trace: false,
                stop_at_first_violation: true,
            },
        );
        report
            .violations
            .iter()
            .find(|v| v.checker == self.checker)
            .map(|v| v.time.as_duration())
    }

    /// Clocks shrink too, by [`shrink_clock_settings`] (clock settings draw no
    /// randomness, so the seed's other draws stay as they were).
    fn shrink_clocks(&mut self, mut best: Scenario) -> Scenario {
        let base = best.clone();
        best.clocks = shrink_clock_settings(best.clocks.clone(), |clocks| {
            let mut candidate = base.clone();
            candidate.clocks = clocks.to_vec();
            self.fails(&candidate)
        });
        best
    }

    /// Events after the violation cannot have caused it: drop them, and end the run just
    /// after it. (For liveness, judged at the end, this rarely holds; the run says.)
    fn cut_after_violation(&mut self, best: Scenario) -> Scenario {
        let Some(at) = self.violation_time(&best) else {
            return best;
        };
        let mut candidate = best.clone();
        candidate.faults.retain(|e| e.at <= at);
        let last = candidate.faults.last().map_or(Duration::ZERO, |e| e.at);
        candidate.duration = (round_ms(at) + Duration::from_millis(1))
            .max(last + Duration::from_millis(1))
            .min(best.duration);
        if candidate != best && self.fails(&candidate) {
            candidate
        } else {
            best
        }
    }

    /// Keeps only the faults of the last stretch before the violation: the last 1/64
    /// of the time up to it, then 1/32, ..., until the run still fails. A failure
    /// under a storm of faults is most often made by the few just before it; this finds
    /// them in a handful of runs, where dropping events from the front takes many.
    fn keep_recent(&mut self, best: Scenario) -> Scenario {
        let Some(v) = self.violation_time(&best) else {
            return best;
        };
        let mut w = (v / 64).max(Duration::from_millis(1));
        while w < v {
            let mut candidate = best.clone();
            candidate.faults.retain(|e| e.at + w >= v);
            if candidate.faults.len() < best.faults.len() && self.fails(&candidate) {
                return candidate;
            }
            w *= 2;
        }
        best
    }

    /// Moves the whole timeline earlier (and the end with it): all the way to the first
    /// fault at 0, else half of that, and so on.
    fn cut_lead_time(&mut self, mut best: Scenario) -> Scenario {
        let Some(first) = best.faults.first().map(|e| e.at) else {
            return best;
        };
        let mut cut = first;
        while cut >= Duration::from_millis(10) {
            let mut candidate = best.clone();
            for e in &mut candidate.faults {
                e.at -= cut;
            }
            candidate.duration -= cut;
            if self.fails(&candidate) {
                best = candidate;
                break;
            }
            cut = round_ms(cut / 2);
        }
        best
    }

    /// Halves the time after the last fault while that still fails.
    fn shorten_run(&mut self, mut best: Scenario) -> Scenario {
        loop {
            let last = best.faults.last().map_or(Duration::ZERO, |e| e.at);
            let tail = best.duration - last;
            let shorter = round_ms(tail / 2);
            if shorter < Duration::from_millis(10) {
                return best;
            }
            let mut candidate = best.clone();
            candidate.duration = last + shorter;
            if !self.fails(&candidate) {
                return best;
            }
            best = candidate;
        }
    }

    /// Takes the last node off each role in turn, while the protocol accepts it, the
    /// timeline does not name that node, and the run still fails.
    fn drop_nodes(&mut self, mut best: Scenario) -> Scenario {
        loop {
            let Ok(prepared) = Prepared::new(best.clone(), &self.protocols) else {
                return best;
            };
            let cluster = prepared.cluster;
            let mut shrunk = false;
            for (r, spec) in cluster.roles().iter().enumerate() {
                if spec.count < 2 {
                    continue;
                }
                let removed = cluster
                    .with_role(&spec.role)
                    .last()
                    .expect("a role of two nodes or more");
                let Some(candidate) = without_node(&best, &cluster, r, removed) else {
                    continue;
                };
                if self.fails(&candidate) {
                    best = candidate;
                    shrunk = true;
                    break;
                }
            }
            if !shrunk {
                return best;
            }
        }
    }
}

/// The steps of shrinking that change only the fault events, over any oracle: `fails(seed,
/// faults)` says whether the run with `seed` and those events still breaks the checker.
/// [`shrink`] runs them on a scenario (between the steps that cut its length and its
/// nodes), and `tenure::Simulation::shrink` on a profile's draw, so both shrink alike:
/// drop time windows, crash-restart cycles, a node's repeated cycles but one, chunks
/// and single events (ddmin), a node's every event, merge pairs, aim at the leader,
/// shorten pauses; then, past [`TARGET_FAULTS`] events, the same under nearby seeds.
pub struct FaultSteps<'f> {
    fails: &'f mut dyn FnMut(u64, &[FaultEvent]) -> bool,
    /// The seed candidates are run with (a reseeding step may move it).
    pub seed: u64,
    /// How long the run is: the time windows split this.
    pub span: Duration,
}

/// Shrinks `faults` with the seed-keeping steps of [`FaultSteps`] until none helps, and
/// past [`TARGET_FAULTS`] events lets a step move to a nearby seed (see [`shrink`]).
/// Returns the seed and the events that still fail. `fails` must be true of `(seed,
/// faults)`; it is called once per candidate, and should count its runs and say `false`
/// past a budget of its own, which ends shrinking.
pub fn shrink_faults(
    seed: u64,
    faults: Vec<FaultEvent>,
    span: Duration,
    fails: &mut dyn FnMut(u64, &[FaultEvent]) -> bool,
) -> (u64, Vec<FaultEvent>) {
    let mut steps = FaultSteps { fails, seed, span };
    let mut best = faults;
    loop {
        let start = best.clone();
        best = steps.pass(best);
        if best == start && best.len() > TARGET_FAULTS {
            best = steps.reseed(best);
        }
        if best == start {
            return (steps.seed, best);
        }
    }
}

impl<'f> FaultSteps<'f> {
    pub fn new(
        seed: u64,
        span: Duration,
        fails: &'f mut dyn FnMut(u64, &[FaultEvent]) -> bool,
    ) -> FaultSteps<'f> {
        FaultSteps { fails, seed, span }
    }

    fn fails(&mut self, candidate: &[FaultEvent]) -> bool {
        (self.fails)(self.seed, candidate)
    }

    /// One round of the steps that keep the seed, in order.
    pub fn pass(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        best = self.drop_time_windows(best);
        best = self.drop_crash_cycles(best);
        best = self.collapse_crash_cycles(best);
        best = self.ddmin(best);
        best = self.drop_node_events(best);
        best = self.merge_pairs(best);
        best = self.aim_at_leader(best);
        self.shorten_pauses(best)
    }

    /// The last resort: the steps that may move the seed (see [`shrink`]).
    pub fn reseed(&mut self, best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        self.reduce_reseeding(best)
    }

    /// ddmin over time: split the run into 2, 4, 8, ... equal windows and drop every
    /// event inside a window while that still fails. A crash storm is bursts in time;
    /// this removes a whole burst in one run where event chunks would cut across it.
    fn drop_time_windows(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut windows = 2u32;
        while windows <= 64 && best.len() > 1 {
            let width = self.span / windows;
            if width < Duration::from_millis(1) {
                break;
            }
            for w in 0..windows {
                let (from, to) = (width * w, width * (w + 1));
                let mut candidate = best.clone();
                candidate.retain(|e| e.at < from || e.at >= to);
                if candidate.len() < best.len() && self.fails(&candidate) {
                    best = candidate;
                }
            }
            windows *= 2;
        }
        best
    }

    /// Drops each crash (or power loss) together with the restart that undoes it: one
    /// alone often cannot go (a liveness candidate must end healed, and a restart alone
    /// is a no-op that keeps the pair's timing).
    fn drop_crash_cycles(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut k = 0;
        loop {
            let cycles = crash_cycles(&best);
            let Some(&(down, up)) = cycles.get(k) else {
                return best;
            };
            let mut candidate = best.clone();
            if let Some(up) = up {
                candidate.remove(up);
            }
            candidate.remove(down);
            if self.fails(&candidate) {
                best = candidate; // the same `k` now names the next cycle
            } else {
                k += 1;
            }
        }
    }

    /// A node crashing and restarting again and again: try keeping only its last
    /// cycle, then only its first, then one outage from its first crash to its last
    /// restart, dropping the others in one run (see [`collapsed_cycles`]).
    fn collapse_crash_cycles(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut nodes: Vec<u32> = crash_cycles(&best)
            .iter()
            .filter_map(|(down, _)| fault_node(&best[*down].fault))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            for candidate in collapsed_cycles(&best, node) {
                if self.fails(&candidate) {
                    best = candidate;
                    break;
                }
            }
        }
        best
    }

    /// ddmin over the fault events (Zeller & Hildebrandt): split them into `n` chunks
    /// in time order; keep one chunk alone if that still fails, else drop one chunk,
    /// else split finer, down to single events.
    fn ddmin(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        if !best.is_empty() {
            let mut none = best.clone();
            none.clear();
            if self.fails(&none) {
                return none;
            }
        }
        let mut n = 2usize;
        while best.len() >= 2 {
            let len = best.len();
            let n_eff = n.min(len);
            let chunks: Vec<std::ops::Range<usize>> = (0..n_eff)
                .map(|i| i * len / n_eff..(i + 1) * len / n_eff)
                .collect();
            let mut reduced = false;
            for r in &chunks {
                let candidate = best[r.clone()].to_vec();
                if self.fails(&candidate) {
                    best = candidate;
                    n = 2;
                    reduced = true;
                    break;
                }
            }
            if !reduced && n_eff > 2 {
                for r in &chunks {
                    let mut candidate = best.clone();
                    candidate.drain(r.clone());
                    if self.fails(&candidate) {
                        best = candidate;
                        n = (n_eff - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
            }
            if !reduced {
                if n_eff >= len {
                    break;
                }
                n = (2 * n_eff).min(len);
            }
        }
        best
    }

    /// Drops single events (or a crash with its restart), merges an event with the next
    /// of its kind on its node (see [`merge_pairs`](Self::merge_pairs)), or aims it at
    /// the leader with another event dropped (see [`aim_at_leader`](Self::aim_at_leader)),
    /// letting the seed move to a nearby one when only that makes the smaller scenario
    /// fail the same checker.
    fn reduce_reseeding(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        best = self.collapse_storms_reseeding(best);
        let mut i = 0;
        while i < best.len() && best.len() > TARGET_FAULTS {
            let mut dropped = best.clone();
            dropped.remove(i);
            let mut candidates = vec![dropped];
            // A crash (or power loss) goes with its restart: dropping either alone
            // leaves a node down, or a restart of a running node.
            if let Some(&(down, Some(up))) = crash_cycles(&best)
                .iter()
                .find(|(down, up)| *down == i || *up == Some(i))
            {
                let mut cycle = best.clone();
                cycle.remove(up);
                cycle.remove(down);
                candidates.push(cycle);
            }
            candidates.extend(merge_at(&best, i));
            // Aimed at the leader with another event dropped (see `aim_at_leader`): a
            // pair per other event, so only on short timelines.
            if best.len() <= 2 * TARGET_FAULTS {
                if let Some(fault) = at_leader(&best[i].fault) {
                    for j in (0..best.len()).filter(|&j| j != i) {
                        let mut aimed = best.clone();
                        aimed[i].fault = fault.clone();
                        aimed.remove(j);
                        candidates.push(aimed);
                    }
                }
            }
            match self.first_failing_nearby(candidates, SEED_NEIGHBOURS) {
                Some(candidate) => best = candidate,
                None => i += 1,
            }
        }
        best
    }

    /// The first of `candidates` that still fails under one of the `neighbours` seeds
    /// after the current one (tried in order, each candidate under every seed before
    /// the next candidate): the shrinker moves to that seed. `None`, and the seed
    /// unchanged, if none does.
    fn first_failing_nearby(
        &mut self,
        candidates: Vec<Vec<FaultEvent>>,
        neighbours: u64,
    ) -> Option<Vec<FaultEvent>> {
        let original = self.seed;
        for candidate in candidates {
            for seed in (1..=neighbours).map(|k| original.wrapping_add(k)) {
                self.seed = seed;
                if self.fails(&candidate) {
                    return Some(candidate);
                }
            }
        }
        self.seed = original;
        None
    }

    /// A node's crash storm collapsed to one cycle (see [`collapsed_cycles`]) under one
    /// of [`STORM_SEEDS`] nearby seeds. Each restart of a flapping node draws its timers
    /// afresh, so a failure found after a storm often needs the storm's every cycle under
    /// its own seed: the storm only moved the node's draws to where two timeouts
    /// coincide, and another seed does that without it, though seldom (a few seeds in a
    /// hundred for an election's double vote), hence more seeds than for one event.
    fn collapse_storms_reseeding(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut nodes: Vec<u32> = crash_cycles(&best)
            .iter()
            .filter_map(|(down, _)| fault_node(&best[*down].fault))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            if let Some(candidate) =
                self.first_failing_nearby(collapsed_cycles(&best, node), STORM_SEEDS)
            {
                best = candidate;
            }
        }
        best
    }

    /// Drops every event that names one node (a flapping process's whole crash loop),
    /// node by node: events of one node are not always next to each other in time.
    fn drop_node_events(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut nodes: Vec<u32> = best.iter().filter_map(|e| fault_node(&e.fault)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            let mut candidate = best.clone();
            candidate.retain(|e| fault_node(&e.fault) != Some(node));
            if candidate.len() < best.len() && self.fails(&candidate) {
                best = candidate;
            }
        }
        best
    }

    /// Replaces two faults of one kind on one node by one that does what both did
    /// (see [`merged`]): a node whose clock a failure needs slow by the time it matters
    /// is often drawn fast first and slow later, and one event says it as well. Each
    /// event is tried with the next event of its kind on its node.
    fn merge_pairs(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut i = 0;
        while i < best.len() {
            match merge_at(&best, i) {
                // event `i` may merge with the next one again
                Some(candidate) if self.fails(&candidate) => best = candidate,
                _ => i += 1,
            }
        }
        best
    }

    /// Aims a fault at a fixed node at whichever node leads at that instant instead,
    /// when that lets another event go: a clock drawn slow on a node that later became
    /// the leader, or a pause of the node that happened to lead, often needed other
    /// faults to make that node lead at the right time, and `"leader"` says it without
    /// them. Kept only if some other event can then be dropped (so every accepted step
    /// makes the timeline shorter); a fault aimed at the leader is never aimed back.
    fn aim_at_leader(&mut self, best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        let mut i = 0;
        while i < best.len() && best.len() > 1 {
            let Some(fault) = at_leader(&best[i].fault) else {
                i += 1;
                continue;
            };
            let mut aimed = best.clone();
            aimed[i].fault = fault;
            if !self.fails(&aimed) {
                i += 1;
                continue;
            }
            let mut reduced = None;
            for j in (0..aimed.len()).filter(|&j| j != i) {
                let mut candidate = aimed.clone();
                candidate.remove(j);
                if self.fails(&candidate) {
                    reduced = Some(candidate);
                    break;
                }
            }
            match reduced {
                // The next pass (ddmin) drops whatever else can go.
                Some(candidate) => return candidate,
                None => i += 1,
            }
        }
        best
    }

    /// Halves each pause while that still fails (down to 10 ms).
    fn shorten_pauses(&mut self, mut best: Vec<FaultEvent>) -> Vec<FaultEvent> {
        for i in 0..best.len() {
            while let Fault::Pause { node, duration } = best[i].fault.clone() {
                let shorter = round_ms(duration / 2);
                if shorter < Duration::from_millis(10) {
                    break;
                }
                let mut candidate = best.clone();
                candidate[i].fault = Fault::Pause {
                    node,
                    duration: shorter,
                };
                if !self.fails(&candidate) {
                    break;
                }
                best = candidate;
            }
        }
        best
    }
}

/// `s` with `removed` (the last node of role `r`) taken out: every role written out in
/// cluster order, later node ids one lower. `None` if the timeline, clocks or links
/// name `removed`.
fn without_node(s: &Scenario, cluster: &Cluster, r: usize, removed: NodeId) -> Option<Scenario> {
    let map = |n: NodeId| -> Option<NodeId> {
        match n.0.cmp(&removed.0) {
            std::cmp::Ordering::Less => Some(n),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(NodeId(n.0 - 1)),
        }
    };
    let sel = |n: NodeSel| -> Option<NodeSel> {
        match n {
            NodeSel::Id(id) => map(NodeId(id)).map(|n| NodeSel::Id(n.0)),
            role => Some(role),
        }
    };
    let list = |v: &[NodeId]| -> Option<Vec<NodeId>> { v.iter().map(|n| map(*n)).collect() };
    let groups =
        |g: &[Vec<NodeId>]| -> Option<Vec<Vec<NodeId>>> { g.iter().map(|v| list(v)).collect() };
    let mut out = s.clone();
    let mut roles: Vec<RoleSpec> = cluster.roles().to_vec();
    roles[r].count -= 1;
    out.cluster = ClusterSpec::Roles(roles);
    for c in &mut out.clocks {
        c.node = map(c.node)?;
    }
    for l in &mut out.network.links {
        l.from = map(l.from)?;
        l.to = map(l.to)?;
    }
    for e in &mut out.faults {
        e.fault = match &e.fault {
            Fault::Partition { groups: g } => Fault::Partition { groups: groups(g)? },
            Fault::Isolate { node } => Fault::Isolate { node: sel(*node)? },
            Fault::Cut { nodes } => Fault::Cut {
                nodes: [map(nodes[0])?, map(nodes[1])?],
            },
            Fault::OneWay { from, to } => Fault::OneWay {
                from: list(from)?,
                to: list(to)?,
            },
            Fault::Bridge { node, groups: g } => Fault::Bridge {
                node: sel(*node)?,
                groups: groups(g)?,
            },
            Fault::Crash { node } => Fault::Crash { node: sel(*node)? },
            Fault::Restart { node } => Fault::Restart { node: sel(*node)? },
            Fault::Pause { node, duration } => Fault::Pause {
                node: sel(*node)?,
                duration: *duration,
            },
            Fault::ClockJump { node, by } => Fault::ClockJump {
                node: sel(*node)?,
                by: *by,
            },
            Fault::ClockDrift { node, drift } => Fault::ClockDrift {
                node: sel(*node)?,
                drift: *drift,
            },
            Fault::Request { node, name, arg } => Fault::Request {
                node: sel(*node)?,
                name: name.clone(),
                arg: *arg,
            },
            Fault::Byzantine { node, behaviour } => Fault::Byzantine {
                node: sel(*node)?,
                behaviour: *behaviour,
            },
            Fault::PowerLoss { node, torn } => Fault::PowerLoss {
                node: sel(*node)?,
                torn: *torn,
            },
            Fault::ClockStall { node, duration } => Fault::ClockStall {
                node: sel(*node)?,
                duration: *duration,
            },
            Fault::ClockSlew { node, by, ppm } => Fault::ClockSlew {
                node: sel(*node)?,
                by: *by,
                ppm: *ppm,
            },
            Fault::CrashPoint {
                node,
                at_effect,
                at_sync,
                power,
                restart_after,
            } => Fault::CrashPoint {
                node: sel(*node)?,
                at_effect: *at_effect,
                at_sync: *at_sync,
                power: *power,
                restart_after: *restart_after,
            },
            Fault::DiskStall { node, duration } => Fault::DiskStall {
                node: sel(*node)?,
                duration: *duration,
            },
            Fault::DiskError { node, duration } => Fault::DiskError {
                node: sel(*node)?,
                duration: *duration,
            },
            Fault::Slow {
                node,
                factor,
                duration,
            } => Fault::Slow {
                node: sel(*node)?,
                factor: *factor,
                duration: *duration,
            },
            Fault::SlowLink {
                from,
                node,
                latency,
                duration,
            } => Fault::SlowLink {
                from: sel(*from)?,
                node: sel(*node)?,
                latency: latency.clone(),
                duration: *duration,
            },
            other @ (Fault::Heal {} | Fault::Network { .. }) => other.clone(),
        };
    }
    Some(out)
}

/// Whether the timeline ends healed: every partition-like fault has a heal after it and
/// every crashed node a restart.
pub fn healed(faults: &[FaultEvent]) -> bool {
    let mut split = false;
    let mut down: Vec<NodeSel> = Vec::new();
    for e in faults {
        match &e.fault {
            Fault::Partition { .. }
            | Fault::Isolate { .. }
            | Fault::Cut { .. }
            | Fault::OneWay { .. }
            | Fault::Bridge { .. } => split = true,
            Fault::Heal {} => split = false,
            Fault::Crash { node } | Fault::PowerLoss { node, .. } => down.push(*node),
            // A crashed leader (holder, waiter) is whichever node it was: any restart may
            // be its own.
            Fault::Restart { node } => down.retain(|n| n != node && n.aim().is_none()),
            _ => {}
        }
    }
    !split && down.is_empty()
}

/// Each crash or power loss of a fixed node, with the index of the first restart of that
/// node after it (if any), in time order; a crash point that restarts the node after a
/// while (`restart_after`, a power flap) is a cycle alone, with no restart event.
fn crash_cycles(faults: &[FaultEvent]) -> Vec<(usize, Option<usize>)> {
    let mut out = Vec::new();
    for (i, e) in faults.iter().enumerate() {
        let node = match &e.fault {
            Fault::Crash { node } | Fault::PowerLoss { node, .. } => node,
            // A crash point that restarts the node itself is a whole cycle.
            Fault::CrashPoint {
                node,
                restart_after: Some(_),
                ..
            } => {
                if node.id().is_some() {
                    out.push((i, None));
                }
                continue;
            }
            _ => continue,
        };
        if node.id().is_none() {
            continue;
        }
        let up = faults[i + 1..]
            .iter()
            .position(|r| matches!(&r.fault, Fault::Restart { node: n } if n == node))
            .map(|k| i + 1 + k);
        out.push((i, up));
    }
    out
}

/// `faults` with `node`'s crash-restart cycles (two or more) collapsed to one, each way
/// to try in turn: only its last cycle, only its first, and one outage from its first
/// crash to its last restart. Empty if the node has fewer than two cycles.
fn collapsed_cycles(faults: &[FaultEvent], node: u32) -> Vec<Vec<FaultEvent>> {
    let cycles: Vec<(usize, Option<usize>)> = crash_cycles(faults)
        .into_iter()
        .filter(|(down, _)| fault_node(&faults[*down].fault) == Some(node))
        .collect();
    if cycles.len() < 2 {
        return Vec::new();
    }
    let events = |c: &(usize, Option<usize>)| std::iter::once(c.0).chain(c.1);
    let without = |drop: &[usize]| -> Vec<FaultEvent> {
        faults
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, e)| e.clone())
            .collect()
    };
    let (first, last) = (cycles[0], cycles[cycles.len() - 1]);
    let mut out = Vec::new();
    for kept in [last, first] {
        let drop: Vec<usize> = cycles
            .iter()
            .filter(|c| **c != kept)
            .flat_map(events)
            .collect();
        out.push(without(&drop));
    }
    // One outage spanning the storm: the first crash and the last restart.
    let crash = matches!(
        faults[first.0].fault,
        Fault::Crash { .. } | Fault::PowerLoss { .. }
    );
    if let (true, Some(up)) = (crash, last.1) {
        let drop: Vec<usize> = cycles
            .iter()
            .flat_map(events)
            .filter(|&i| i != first.0 && i != up)
            .collect();
        out.push(without(&drop));
    }
    out.dedup();
    out
}

/// `s` with event `i` merged with the next event of its kind on its node (see
/// [`merged`]), if there is one.
fn merge_at(s: &[FaultEvent], i: usize) -> Option<Vec<FaultEvent>> {
    let (j, fault) = (i + 1..s.len()).find_map(|j| merged(&s[i], &s[j]).map(|f| (j, f)))?;
    let mut out = s.to_vec();
    out[i].fault = fault;
    out.remove(j);
    Some(out)
}

/// One fault, at `a`'s time, standing for `a` followed by `b` when both are of one kind
/// on one node: a drift set twice is `b`'s rate from `a`'s time on, two clock jumps are
/// one jump by their sum, two pauses are one pause from `a`'s start to the later end.
/// `None` for any other pair.
fn merged(a: &FaultEvent, b: &FaultEvent) -> Option<Fault> {
    match (&a.fault, &b.fault) {
        (Fault::ClockDrift { node, .. }, Fault::ClockDrift { node: other, drift })
            if node == other =>
        {
            Some(Fault::ClockDrift {
                node: *node,
                drift: *drift,
            })
        }
        (
            Fault::ClockJump { node, by },
            Fault::ClockJump {
                node: other,
                by: more,
            },
        ) if node == other => Some(Fault::ClockJump {
            node: *node,
            by: SignedDuration(by.0.saturating_add(more.0)),
        }),
        (
            Fault::Pause { node, duration },
            Fault::Pause {
                node: other,
                duration: more,
            },
        ) if node == other => Some(Fault::Pause {
            node: *node,
            duration: (a.at + *duration).max(b.at + *more) - a.at,
        }),
        _ => None,
    }
}

/// `fault` aimed at `"leader"` instead of the fixed node it names, for the faults that
/// undo themselves or need no undoing (a pause, a clock fault, an isolation until the
/// next heal, a slow or failing disk or processor for a while); `None` for any other,
/// and for a fault already aimed at the leader.
fn at_leader(fault: &Fault) -> Option<Fault> {
    let mut out = fault.clone();
    let node = match &mut out {
        Fault::Isolate { node }
        | Fault::Pause { node, .. }
        | Fault::ClockJump { node, .. }
        | Fault::ClockDrift { node, .. }
        | Fault::ClockStall { node, .. }
        | Fault::ClockSlew { node, .. }
        | Fault::DiskStall { node, .. }
        | Fault::DiskError { node, .. }
        | Fault::Slow { node, .. } => node,
        _ => return None,
    };
    if node.aim().is_some() {
        return None;
    }
    *node = NodeSel::Leader;
    Some(out)
}

/// The fixed node a single-node fault names (a client request is not a fault on it).
fn fault_node(fault: &Fault) -> Option<u32> {
    match fault {
        Fault::Request { .. } => None,
        f => f.node()?.id().map(|n| n.0),
    }
}

/// When the last fault of `faults` ends (a pause ends when it resumes).
fn calm_from(faults: &[FaultEvent]) -> Duration {
    faults
        .iter()
        .map(|e| match &e.fault {
            Fault::Pause { duration, .. }
            | Fault::Slow { duration, .. }
            | Fault::SlowLink { duration, .. } => e.at + *duration,
            Fault::Request { .. } => Duration::ZERO,
            _ => e.at,
        })
        .max()
        .unwrap_or(Duration::ZERO)
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64)
}

#[cfg(test)]
mod tests;
