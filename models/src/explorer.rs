//! Breadth-first exhaustive exploration with deduplication by state fingerprint, and
//! seeded random walks over the same transitions.
//!
//! BFS visits states in order of depth, so the first path found to a broken state is a
//! shortest one; parent pointers rebuild it as a numbered list of steps.

use crate::property::{judge, CheckerFactory, Constraint, Invariant, StepInvariant};
use crate::state::TICK;
use crate::{Action, Bounds, State};
use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::ops::Range;
use tenure_check::Checker;
use tenure_core::{Cluster, Protocol, Record, Rng, RunInfo, SimTime, SplitMix64};

/// A shortest path to a broken property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The checker or invariant that broke.
    pub property: String,
    pub message: String,
    /// Number of steps from the initial state.
    pub depth: usize,
    /// One line per step, in order.
    pub steps: Vec<String>,
    /// Every observation made along the path.
    pub records: Vec<Record>,
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} violated at depth {}: {}",
            self.property, self.depth, self.message
        )?;
        writeln!(f, "  0. every node started")?;
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  {}. {step}", i + 1)?;
        }
        Ok(())
    }
}

/// What an exploration did.
#[derive(Clone, Debug)]
pub struct Report {
    /// States taken from the queue and expanded.
    pub states_explored: u64,
    /// Distinct states kept (after deduplication, not counting pruned ones).
    pub unique_states: u64,
    /// Transitions computed (including those to already-seen states).
    pub transitions: u64,
    /// Transitions into states a constraint drops.
    pub pruned: u64,
    pub max_depth_reached: usize,
    /// States at `max_depth` that were not expanded. Zero means the depth bound cut
    /// nothing: every behaviour within the other bounds and constraints was explored.
    pub depth_cut: u64,
    /// False if `max_states` cut the search short.
    pub complete: bool,
    /// Every state at this depth or less was reached and judged: `max_depth_reached`
    /// for a complete search; for one cut by `max_states`, the depth it was expanding
    /// (the next depth was only partly reached). What a search that found nothing can
    /// say passed.
    pub judged_depth: usize,
    pub elapsed_seconds: f64,
    pub unique_states_per_second: f64,
    pub counterexample: Option<Counterexample>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} unique states ({} explored, {} transitions, {} pruned), max depth {} ({} cut there), {}, {:.3}s, {:.0} states/s",
            self.unique_states,
            self.states_explored,
            self.transitions,
            self.pruned,
            self.max_depth_reached,
            self.depth_cut,
            if self.complete {
                "complete".to_string()
            } else {
                format!("incomplete (max_states; every state to depth {} judged)", self.judged_depth)
            },
            self.elapsed_seconds,
            self.unique_states_per_second
        )?;
        match &self.counterexample {
            Some(c) => write!(f, "{c}"),
            None => writeln!(f, "no violation"),
        }
    }
}

/// Where a running exploration is, handed to a progress callback every
/// [`PROGRESS_EVERY`] expanded states (the callback decides whether to show it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub states_explored: u64,
    pub unique_states: u64,
    /// The depth of the state being expanded (BFS: the frontier's depth).
    pub depth: usize,
}

/// How many expanded states between two progress callbacks.
pub const PROGRESS_EVERY: u64 = 1024;

/// A random walk that broke a property.
#[derive(Clone, Debug)]
pub struct WalkFailure {
    pub seed: u64,
    pub counterexample: Counterexample,
    /// With [`Explorer::shrinking`]: how many steps the walk's own counterexample had
    /// before shrinking (`counterexample` is the shrunk one).
    pub walked_depth: Option<usize>,
}

/// How far each random walk goes ([`Explorer::walk_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkDepth {
    /// At most this many steps of any kind (what `check-model --max-depth` asks for).
    Steps(usize),
    /// At most this many events, an event being any step but a timer firing (a
    /// delivery, a drop, a duplicate, a crash, a restart, a leap, a Byzantine turn),
    /// and at most `events x (1 + timers)` steps in all, `timers` the number of timers
    /// pending once every node has started ([`WalkReport::timers_at_start`]).
    ///
    /// Why: a timer-driven protocol spends most of a walk's steps on timers (any
    /// pending timer may fire before any delivery), so a bound in steps leaves a
    /// lease protocol a few events deep while a protocol without timers goes the
    /// whole way. Counting events gives both the same reach. The step cap ends walks
    /// whose timers re-arm themselves without anything else happening (a retry timer
    /// with nothing to retry), and lets each timer pending at the start fire about
    /// once between two events.
    Events(usize),
}

/// What a batch of random walks did.
#[derive(Clone, Debug)]
pub struct WalkReport {
    pub seeds_run: u64,
    pub steps_total: u64,
    /// Steps other than timer firings, over every walk.
    pub events_total: u64,
    /// The bound each walk had.
    pub depth: WalkDepth,
    /// Timers pending once every node has started (what [`WalkDepth::Events`] scales
    /// its step cap by).
    pub timers_at_start: usize,
    /// The most steps a walk could take: `n` for [`WalkDepth::Steps`]`(n)`,
    /// `events x (1 + timers_at_start)` for [`WalkDepth::Events`].
    pub max_steps: usize,
    pub failure: Option<WalkFailure>,
}

/// Explores every behaviour of a protocol on a small cluster, within [`Bounds`].
pub struct Explorer<P: Protocol> {
    config: P::Config,
    cluster: Cluster,
    bounds: Bounds,
    /// Each path checker, and whether it is finished at every state, as if the run
    /// ended there ([`property::finished_at_every_state`](crate::property::finished_at_every_state)).
    checks: Vec<(CheckerFactory, bool)>,
    invariants: Vec<(String, Invariant<P>)>,
    step_invariants: Vec<(String, StepInvariant<P>)>,
    constraints: Vec<Constraint<P>>,
    /// Shrink a walk's counterexample ([`Explorer::shrinking`]).
    shrink: bool,
}

/// One state the breadth-first search kept: 12 bytes, so that tens of millions fit.
/// The state itself, its path and its records are rebuilt from the chain of entries
/// when needed ([`Rebuilder`], [`Explorer::counterexample`]).
#[derive(Clone, Copy)]
struct Entry {
    /// The parent's index ([`ROOT`] for the initial state).
    parent: u32,
    /// The step from the parent: an index into the parent's [`State::actions`].
    action: u32,
    /// A checker finished at every state passed here but would report at a later end
    /// with no new record (an overlap under way, not yet longer than tolerated): a
    /// successor that adds no record is judged again, at its own later time.
    pending: bool,
}

/// The parent of the initial state's entry.
const ROOT: u32 = u32::MAX;

/// The most entries a search keeps (indices are `u32`, and [`ROOT`] is taken).
const MAX_ENTRIES: usize = (u32::MAX - 1) as usize;

/// What judging one state found.
struct Judged {
    broken: Option<(String, String)>,
    /// See [`Entry::pending`].
    pending: bool,
}

/// Rebuilds a state of the breadth-first search, with its path's records, from its
/// entry: its parent's (rebuilt the same way) with the entry's action applied. States
/// are pure functions of their path (handlers see only the state; randomness and clocks
/// come from it), so a rebuilt state equals the one first computed. One cached state
/// per depth makes this cheap: the queue holds a level's states in the order of their
/// parents, so a parent is rebuilt once for all its children.
struct Rebuilder<P: Protocol> {
    /// `cache[d]`: the entry last rebuilt at depth `d`.
    cache: Vec<Option<Rebuilt<P>>>,
}

/// An entry index, with its state and its path's records.
type Rebuilt<P> = (usize, State<P>, Vec<Record>);

impl<P: Protocol> Rebuilder<P> {
    fn new(initial: State<P>, records: Vec<Record>) -> Self {
        Rebuilder {
            cache: vec![Some((0, initial, records))],
        }
    }

    fn state(
        &mut self,
        explorer: &Explorer<P>,
        entries: &[Entry],
        index: usize,
        depth: usize,
    ) -> (State<P>, Vec<Record>) {
        if let Some(Some((cached, state, records))) = self.cache.get(depth) {
            if *cached == index {
                return (state.clone(), records.clone());
            }
        }
        let entry = entries[index];
        assert!(entry.parent != ROOT, "the initial state is always cached");
        let (mut state, mut records) =
            self.state(explorer, entries, entry.parent as usize, depth - 1);
        explorer.replay_step(&mut state, &mut records, entry, depth);
        if self.cache.len() <= depth {
            self.cache.resize_with(depth + 1, || None);
        }
        self.cache[depth] = Some((index, state.clone(), records.clone()));
        (state, records)
    }
}

impl<P: Protocol> Explorer<P> {
    pub fn new(config: P::Config, cluster: Cluster, bounds: Bounds) -> Self {
        Explorer {
            config,
            cluster,
            bounds,
            checks: Vec::new(),
            invariants: Vec::new(),
            step_invariants: Vec::new(),
            constraints: Vec::new(),
            shrink: false,
        }
    }

    /// With `true`, a random walk's counterexample is shrunk before it is reported:
    /// steps are taken out one at a time, from the last to the first, for as long as
    /// the path that is left is still enabled step by step, kept by the constraints and
    /// still breaks a property (the search restarts after every removal that worked).
    /// The result is locally minimal, no single step can go, not necessarily a shortest
    /// counterexample (only breadth-first search finds that).
    pub fn shrinking(mut self, shrink: bool) -> Self {
        self.shrink = shrink;
        self
    }

    /// Judges every path with a fresh checker from `factory`. A safety checker of
    /// tenure-check's catalog is also finished at every state, since a run may end
    /// anywhere: an overlap of actions still open, which `mutual-exclusion` reports
    /// online only once both sections have ended, is reported there (see
    /// [`property`](crate::property)). Liveness checkers and checkers the catalog does
    /// not know are only fed records.
    pub fn check(mut self, factory: CheckerFactory) -> Self {
        let at_end = crate::property::finished_at_every_state(factory().name());
        self.checks.push((factory, at_end));
        self
    }

    /// Judges every state with `invariant`.
    pub fn invariant(mut self, name: &str, invariant: Invariant<P>) -> Self {
        self.invariants.push((name.to_string(), invariant));
        self
    }

    /// Judges every transition with `invariant`.
    pub fn step_invariant(mut self, name: &str, invariant: StepInvariant<P>) -> Self {
        self.step_invariants.push((name.to_string(), invariant));
        self
    }

    fn step_violation(
        &self,
        before: &State<P>,
        action: &Action<P>,
        after: &State<P>,
    ) -> Option<(String, String)> {
        self.step_invariants
            .iter()
            .find_map(|(name, inv)| inv(before, action, after).map(|m| (name.clone(), m)))
    }

    /// Keeps only states for which `constraint` holds.
    pub fn within(mut self, constraint: Constraint<P>) -> Self {
        self.constraints.push(constraint);
        self
    }

    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    fn kept(&self, state: &State<P>) -> bool {
        self.constraints.iter().all(|c| c(state))
    }

    /// Judges `state` at `depth`, reached by a path whose records are `records()` (of
    /// which the last `new_records` are new in this step; `parent_pending`: the parent's
    /// [`Entry::pending`]). The records are only gathered if some checker must look.
    ///
    /// Every check is fed the path's records; each one finished at every state is then
    /// finished as if the run ended at this state's logical time. A state that adds no
    /// record differs from its parent only in that time, and a safety verdict can only
    /// get worse as the end of a run moves later with nothing new observed (an overlap
    /// grows, a settled one stays): so it is judged again only if its parent was
    /// pending, which a state with new records finds out by also finishing its checkers
    /// at the deepest end the bounds allow.
    fn judge_state(
        &self,
        state: &State<P>,
        depth: usize,
        new_records: usize,
        parent_pending: bool,
        records: impl FnOnce() -> Vec<Record>,
    ) -> Judged {
        for (name, invariant) in &self.invariants {
            if let Some(message) = invariant(state) {
                return Judged {
                    broken: Some((name.clone(), message)),
                    pending: false,
                };
            }
        }
        let passed = |pending| Judged {
            broken: None,
            pending,
        };
        if self.checks.is_empty() || (new_records == 0 && !parent_pending) {
            // Nothing new to judge: the parent's verdict stands.
            return passed(false);
        }
        let records = records();
        let end = logical_time(depth);
        if new_records == 0 {
            // Only time moved on, and the parent was pending: finish again, later.
            let broken = self
                .checks
                .iter()
                .filter(|(_, at_end)| *at_end)
                .find_map(|(f, _)| judge(f, Some(end), &records, &self.cluster));
            return Judged {
                pending: broken.is_none(),
                broken,
            };
        }
        let latest = end_info(
            &self.cluster,
            logical_time(depth.max(self.bounds.max_depth)),
        );
        let mut pending = false;
        for (factory, at_end) in &self.checks {
            let mut checker = factory();
            let online = records.iter().enumerate().find_map(|(i, r)| {
                checker
                    .on_record(i, r)
                    .map(|v| (v.checker.to_string(), v.message))
            });
            if online.is_some() {
                return Judged {
                    broken: online,
                    pending: false,
                };
            }
            // Would it report at any end this path can still reach without a record?
            // Only then is its verdict at this very end worth a second replay.
            if *at_end && checker.finish(&latest).is_some() {
                match judge(factory, Some(end), &records, &self.cluster) {
                    Some(broken) => {
                        return Judged {
                            broken: Some(broken),
                            pending: false,
                        }
                    }
                    None => pending = true,
                }
            }
        }
        passed(pending)
    }

    /// Breadth-first search of every state within the bounds; stops at the first
    /// violation, which is then a shortest counterexample.
    pub fn explore(&self) -> Report {
        self.explore_with(&mut |_| {})
    }

    /// [`Explorer::explore`], calling `progress` every [`PROGRESS_EVERY`] expanded
    /// states. The callback only observes: it cannot change the search.
    pub fn explore_with(&self, progress: &mut dyn FnMut(&Progress)) -> Report {
        // Wall time is read for the report only; it never affects the exploration.
        #[allow(clippy::disallowed_methods, clippy::disallowed_types)]
        let started = std::time::Instant::now();
        let mut report = Report {
            states_explored: 0,
            unique_states: 0,
            transitions: 0,
            pruned: 0,
            max_depth_reached: 0,
            depth_cut: 0,
            complete: true,
            judged_depth: 0,
            elapsed_seconds: 0.0,
            unique_states_per_second: 0.0,
            counterexample: None,
        };
        let (initial, records) = State::<P>::initial(&self.config, &self.cluster, &self.bounds);
        // A BTreeSet of fingerprints: measured against a std HashSet of u64 at ~10⁵
        // states, the difference was within noise next to running the handlers.
        let mut visited: BTreeSet<u64> = BTreeSet::new();
        visited.insert(initial.fingerprint());
        // Debug builds check rebuilt states against the fingerprint of the state first
        // computed (the tests run this way).
        let mut first_computed: Vec<u64> = Vec::new();
        if cfg!(debug_assertions) {
            first_computed.push(initial.fingerprint());
        }
        let mut entries: Vec<Entry> = vec![Entry {
            parent: ROOT,
            action: 0,
            pending: false,
        }];
        report.unique_states = 1;
        let judged = self.judge_state(&initial, 0, records.len(), false, || records.clone());
        entries[0].pending = judged.pending;
        if let Some((property, message)) = judged.broken {
            report.counterexample = Some(self.counterexample(&entries, 0, property, message, 0));
        }
        // The queue holds entry indices, not states: a state is rebuilt from its
        // parent's when it is expanded (see `Rebuilder`), so a frontier of millions of
        // states costs a few bytes each instead of a whole `State` each.
        let mut queue: VecDeque<(usize, usize)> = VecDeque::new();
        if report.counterexample.is_none() && self.kept(&initial) {
            queue.push_back((0, 0));
        }
        let mut rebuilder = Rebuilder::new(initial, records);
        'search: while let Some((index, depth)) = queue.pop_front() {
            let (state, path) = rebuilder.state(self, &entries, index, depth);
            // One state in eight: a rebuild that goes wrong goes wrong for many.
            if cfg!(debug_assertions) && index % 8 == 0 {
                assert_eq!(
                    state.fingerprint(),
                    first_computed[index],
                    "entry {index} at depth {depth} rebuilt to another state"
                );
            }
            report.states_explored += 1;
            if report.states_explored.is_multiple_of(PROGRESS_EVERY) {
                progress(&Progress {
                    states_explored: report.states_explored,
                    unique_states: report.unique_states,
                    depth,
                });
            }
            report.max_depth_reached = report.max_depth_reached.max(depth);
            let actions = state.actions(&self.bounds);
            if depth >= self.bounds.max_depth {
                if !actions.is_empty() {
                    report.depth_cut += 1;
                }
                continue;
            }
            for (number, action) in actions.into_iter().enumerate() {
                report.transitions += 1;
                let mut next = state.clone();
                let new = next.apply(
                    &self.config,
                    &self.cluster,
                    &self.bounds,
                    &action,
                    depth + 1,
                );
                // A transition into a known state can still break a step invariant.
                let step_broken = self.step_violation(&state, &action, &next);
                // Constraints first: they are cheaper than a fingerprint.
                if step_broken.is_none() && !self.kept(&next) {
                    report.pruned += 1;
                    continue;
                }
                if step_broken.is_none() && !visited.insert(next.fingerprint()) {
                    continue;
                }
                report.unique_states += 1;
                let new_len = new.len();
                let parent_pending = entries[index].pending;
                entries.push(Entry {
                    parent: index as u32,
                    action: number as u32,
                    pending: false,
                });
                let child = entries.len() - 1;
                if cfg!(debug_assertions) {
                    first_computed.push(next.fingerprint());
                }
                let found = if step_broken.is_some() {
                    step_broken
                } else {
                    let judged =
                        self.judge_state(&next, depth + 1, new_len, parent_pending, || {
                            let mut records = path.clone();
                            records.extend(new.iter().cloned());
                            records
                        });
                    entries[child].pending = judged.pending;
                    judged.broken
                };
                if let Some((property, message)) = found {
                    report.max_depth_reached = report.max_depth_reached.max(depth + 1);
                    report.counterexample =
                        Some(self.counterexample(&entries, child, property, message, depth + 1));
                    break 'search;
                }
                if report.unique_states >= self.bounds.max_states.min(MAX_ENTRIES) as u64 {
                    report.complete = false;
                    report.judged_depth = depth;
                    break 'search;
                }
                queue.push_back((child, depth + 1));
            }
        }
        if report.complete {
            report.judged_depth = report.max_depth_reached;
        }
        report.elapsed_seconds = started.elapsed().as_secs_f64();
        report.unique_states_per_second =
            report.unique_states as f64 / report.elapsed_seconds.max(1e-9);
        report
    }

    /// Takes `entry`'s step from its parent's `state` (which becomes the entry's, at
    /// `depth`), adding the step's records to `records`; returns the step.
    fn replay_step(
        &self,
        state: &mut State<P>,
        records: &mut Vec<Record>,
        entry: Entry,
        depth: usize,
    ) -> Action<P> {
        let action = state
            .actions(&self.bounds)
            .swap_remove(entry.action as usize);
        records.extend(state.apply(&self.config, &self.cluster, &self.bounds, &action, depth));
        action
    }

    /// The path to entry `index`, replayed from the initial state for its steps and
    /// records.
    fn counterexample(
        &self,
        entries: &[Entry],
        index: usize,
        property: String,
        message: String,
        depth: usize,
    ) -> Counterexample {
        let mut chain = Vec::new();
        let mut at = index as u32;
        while at != ROOT {
            chain.push(entries[at as usize]);
            at = entries[at as usize].parent;
        }
        // The initial state's entry is not a step.
        chain.pop();
        chain.reverse();
        assert_eq!(chain.len(), depth, "a path's length is its depth");
        let (mut state, mut records) =
            State::<P>::initial(&self.config, &self.cluster, &self.bounds);
        let mut steps = Vec::new();
        for (i, entry) in chain.iter().enumerate() {
            let action = self.replay_step(&mut state, &mut records, *entry, i + 1);
            steps.push(action.to_string());
        }
        Counterexample {
            property,
            message,
            depth,
            steps,
            records,
        }
    }

    /// Random walks, one per seed: from the initial state, take a uniformly chosen
    /// enabled action whose successor the constraints keep (drawn from
    /// `SplitMix64(seed)`) until `max_depth` steps or no such action is left. Records are
    /// judged as they are made; the end of a walk is the end of a run, where every
    /// safety checker is finished, and a violation found there is reported at the
    /// walk's earliest prefix that shows it (as if each step had been judged as an
    /// end). Faults use the same budgets as exploration. Returns at the first seed that
    /// breaks a property.
    pub fn walk(&self, seeds: Range<u64>, max_depth: usize) -> WalkReport {
        self.walk_to(seeds, WalkDepth::Steps(max_depth))
    }

    /// Random walks as [`Explorer::walk`] takes them, each as deep as `depth` allows.
    /// `WalkDepth::Steps(n)` walks exactly as `walk(seeds, n)` does.
    pub fn walk_to(&self, seeds: Range<u64>, depth: WalkDepth) -> WalkReport {
        let (start, _) = State::<P>::initial(&self.config, &self.cluster, &self.bounds);
        let timers_at_start: usize = start.nodes.iter().map(|n| n.timers.len()).sum();
        let (max_events, max_steps) = match depth {
            WalkDepth::Steps(n) => (n, n),
            WalkDepth::Events(e) => (e, e.saturating_mul(1 + timers_at_start)),
        };
        let mut report = WalkReport {
            seeds_run: 0,
            steps_total: 0,
            events_total: 0,
            depth,
            timers_at_start,
            max_steps,
            failure: None,
        };
        for seed in seeds {
            report.seeds_run += 1;
            let (broken, steps_taken, events) = self.walk_one(seed, max_events, max_steps);
            report.steps_total += steps_taken;
            report.events_total += events;
            if let Some((counterexample, actions)) = broken {
                let (counterexample, walked_depth) = if self.shrink {
                    let walked = counterexample.depth;
                    let shrunk = self.shrink_path(actions).unwrap_or(counterexample);
                    (shrunk, Some(walked))
                } else {
                    (counterexample, None)
                };
                report.failure = Some(WalkFailure {
                    seed,
                    counterexample,
                    walked_depth,
                });
                break;
            }
        }
        report
    }

    /// One random walk of at most `max_events` events and `max_steps` steps: the
    /// counterexample (with its actions) if it broke a property, its length, and how
    /// many of its steps were events (not timer firings).
    #[allow(clippy::type_complexity)]
    fn walk_one(
        &self,
        seed: u64,
        max_events: usize,
        max_steps: usize,
    ) -> (Option<(Counterexample, Vec<Action<P>>)>, u64, u64) {
        let mut rng = SplitMix64(seed);
        let mut events = 0;
        let (found, length) = self.run_path(max_steps, &mut |state, depth| {
            if events >= max_events {
                return None;
            }
            let step = self.random_step(state, &mut rng, depth)?;
            if !matches!(step.0, Action::Fire { .. }) {
                events += 1;
            }
            Some(step)
        });
        (found, length, events as u64)
    }

    /// Replays `actions` from the initial state: the counterexample if the path is
    /// enabled and kept step by step and breaks a property (at its earliest prefix
    /// that does); `None` otherwise.
    fn replay(&self, actions: &[Action<P>]) -> Option<Counterexample> {
        let mut invalid = false;
        let (found, _) = self.run_path(actions.len(), &mut |state, depth| {
            let action = actions.get(depth)?;
            if !state.actions(&self.bounds).contains(action) {
                invalid = true;
                return None;
            }
            let mut next = state.clone();
            let new = next.apply(&self.config, &self.cluster, &self.bounds, action, depth + 1);
            if !self.kept(&next) {
                invalid = true;
                return None;
            }
            Some((action.clone(), next, new))
        });
        if invalid {
            return None;
        }
        found.map(|(c, _)| c)
    }

    /// A walk's counterexample shrunk (see [`Explorer::shrinking`]), from its actions.
    fn shrink_path(&self, mut actions: Vec<Action<P>>) -> Option<Counterexample> {
        let mut best = self.replay(&actions)?;
        actions.truncate(best.depth);
        let mut i = actions.len();
        while i > 0 {
            i -= 1;
            let mut shorter = actions.clone();
            shorter.remove(i);
            if let Some(found) = self.replay(&shorter) {
                shorter.truncate(found.depth);
                best = found;
                actions = shorter;
                // Start over from the end: a step kept before may go now.
                i = actions.len();
            }
        }
        Some(best)
    }

    /// One path from the initial state, each step chosen by `choose` (given the state
    /// and the steps taken so far; `None` ends the path) for at most `max_depth` steps,
    /// judged as a walk is: the counterexample with its actions, and the path's length.
    #[allow(clippy::type_complexity)]
    fn run_path(
        &self,
        max_depth: usize,
        choose: &mut dyn FnMut(&State<P>, usize) -> Option<(Action<P>, State<P>, Vec<Record>)>,
    ) -> (Option<(Counterexample, Vec<Action<P>>)>, u64) {
        let (mut state, mut records) =
            State::<P>::initial(&self.config, &self.cluster, &self.bounds);
        let mut checkers: Vec<_> = self.checks.iter().map(|(f, _)| f()).collect();
        let mut steps: Vec<String> = Vec::new();
        let mut taken: Vec<Action<P>> = Vec::new();
        // marks[k]: how many records the first k steps made (with the start's).
        let mut marks = vec![records.len()];
        let mut judged = 0;
        let mut step_broken = None;
        loop {
            let mut broken = step_broken.take().or_else(|| {
                self.invariants
                    .iter()
                    .find_map(|(name, inv)| inv(&state).map(|m| (name.clone(), m)))
            });
            while broken.is_none() && judged < records.len() {
                broken = checkers.iter_mut().find_map(|c| {
                    c.on_record(judged, &records[judged])
                        .map(|v| (v.checker.to_string(), v.message))
                });
                judged += 1;
            }
            let next = if broken.is_none() && steps.len() < max_depth {
                choose(&state, steps.len())
            } else {
                None
            };
            let Some((action, next, new)) = next else {
                // The walk ends here: so does the run.
                let length = steps.len();
                let found = match broken {
                    Some(broken) => Some((broken, length)),
                    None => self.finish_at_end(&mut checkers, length).map(|broken| {
                        self.earliest_end(&records, &marks)
                            .unwrap_or((broken, length))
                    }),
                };
                let found = found.map(|((property, message), depth)| {
                    steps.truncate(depth);
                    taken.truncate(depth);
                    records.truncate(marks[depth]);
                    let c = Counterexample {
                        property,
                        message,
                        depth,
                        steps,
                        records,
                    };
                    (c, taken)
                });
                return (found, length as u64);
            };
            let before = std::mem::replace(&mut state, next);
            records.extend(new);
            marks.push(records.len());
            steps.push(action.to_string());
            step_broken = self.step_violation(&before, &action, &state);
            taken.push(action);
        }
    }

    /// A uniformly drawn enabled action whose successor the constraints keep, with the
    /// successor and its records; `None` if there is no such action.
    fn random_step(
        &self,
        state: &State<P>,
        rng: &mut SplitMix64,
        depth: usize,
    ) -> Option<(Action<P>, State<P>, Vec<Record>)> {
        let mut actions = state.actions(&self.bounds);
        while !actions.is_empty() {
            let pick = rng.range_inclusive(0, actions.len() as u64 - 1) as usize;
            let action = actions.swap_remove(pick);
            let mut next = state.clone();
            let new = next.apply(
                &self.config,
                &self.cluster,
                &self.bounds,
                &action,
                depth + 1,
            );
            if self.kept(&next) {
                return Some((action, next, new));
            }
        }
        None
    }

    /// The end-of-run verdicts of the checkers finished at every state, fed every
    /// record of a path of `depth` steps, with the run ending there.
    fn finish_at_end(
        &self,
        checkers: &mut [Box<dyn Checker>],
        depth: usize,
    ) -> Option<(String, String)> {
        let info = end_info(&self.cluster, logical_time(depth));
        self.checks
            .iter()
            .zip(checkers.iter_mut())
            .filter(|((_, at_end), _)| *at_end)
            .find_map(|(_, c)| c.finish(&info).map(|v| (v.checker.to_string(), v.message)))
    }

    /// The first prefix of a walk (`marks[k]`: the records of its first k steps) at
    /// whose end a checker finished there reports a violation, with its length. Only
    /// run once a walk's end showed one, so the cost of judging every prefix afresh is
    /// paid by failing walks alone.
    fn earliest_end(
        &self,
        records: &[Record],
        marks: &[usize],
    ) -> Option<((String, String), usize)> {
        marks.iter().enumerate().find_map(|(depth, mark)| {
            self.checks
                .iter()
                .filter(|(_, at_end)| *at_end)
                .find_map(|(f, _)| {
                    judge(
                        f,
                        Some(logical_time(depth)),
                        &records[..*mark],
                        &self.cluster,
                    )
                })
                .map(|broken| (broken, depth))
        })
    }
}

/// The logical time of a state `depth` steps from the start (records made by the step
/// into it are stamped with it).
fn logical_time(depth: usize) -> SimTime {
    SimTime::ZERO + TICK * depth as u32
}

/// What a checker needs to know when a run ends at logical time `end`.
pub(crate) fn end_info(cluster: &Cluster, end: SimTime) -> RunInfo {
    RunInfo {
        cluster: cluster.clone(),
        seed: 0,
        end,
        calm_from: SimTime::ZERO,
    }
}
