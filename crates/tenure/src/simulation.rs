//! [`Simulation`]: a protocol, a cluster, faults and checkers; run one seed or sweep many.

use crate::outcome::{
    CheckerFailures, Outcome, SweepCount, SweepReport, TestContext, VacuityProbe,
};
use crate::{regressions, seeds};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tenure_check::Checker;
use tenure_core::{Assumptions, Cluster, Configurable, Promise, Protocol, Transport};
use tenure_fuzz::{Profile, PROFILE_NAMES};
use tenure_scenario::{
    CheckSpec, ClusterSpec, Expectation, FaultEvent, NetworkMode, NetworkSpec, ProtocolSpec,
    Scenario,
};
use tenure_sim::{CheckedRun, Control, LinkSettings};

/// A fault verb run at a time, as a closure over the running cluster.
type Action<P> = Arc<dyn Fn(&mut Control<'_, P>) + Send + Sync>;
/// Builds a fresh checker for one run (checkers keep state).
type CheckerFactory = Arc<dyn Fn(&Cluster) -> Box<dyn Checker> + Send + Sync>;

/// An explicit fault timeline: verbs of [`Control`] at true times.
///
/// ```ignore
/// .faults(|s| s.at(secs(2), |c| c.crash(NodeId(0))).at(secs(4), |c| c.restart(NodeId(0))))
/// ```
pub struct Timeline<P: Protocol> {
    actions: Vec<(Duration, Action<P>)>,
}

impl<P: Protocol> Timeline<P> {
    /// Runs `verb` at true time `at` (on every seed).
    pub fn at(
        mut self,
        at: Duration,
        verb: impl Fn(&mut Control<'_, P>) + Send + Sync + 'static,
    ) -> Self {
        self.actions.push((at, Arc::new(verb)));
        self
    }
}

/// A simulation of your protocol `P`: what to run, which faults, which checkers.
/// Cheap to run many times; every run builds fresh processes and checkers.
pub struct Simulation<P: Protocol> {
    cluster: Cluster,
    config: P::Config,
    duration: Duration,
    network: LinkSettings,
    checks: Vec<(String, serde_json::Value)>,
    checkers: Vec<CheckerFactory>,
    actions: Vec<(Duration, Action<P>)>,
    events: Vec<FaultEvent>,
    profile: Option<Profile>,
    stop_at_first_violation: bool,
    name: Option<String>,
    /// What the protocol declares: the environment it is designed for (profiles draw
    /// within it), its promises (the parameters its checks run with), its transport,
    /// and its name (for messages).
    assumptions: Assumptions,
    promises: Vec<Promise>,
    transport: Transport,
    protocol: String,
    /// What each role is (fault profiles aim at holders and spare the resource).
    roles: &'static [tenure_core::RoleInfo],
}

impl<P: Configurable> Simulation<P>
where
    P::Config: Sync,
{
    /// `cluster` runs `P` built from `config`, for 10 simulated seconds by default, on
    /// the default network (1-5 ms latency, no loss), with no faults and no checkers.
    ///
    /// What `P` declares as a [`Configurable`] applies exactly as it does to a scenario
    /// file and to `tenure fuzz --protocol`: a profile draws within its
    /// [`assumptions`](Configurable::assumptions) (a failure beyond them says which),
    /// each check runs with the parameters its [`promises`](Configurable::promises)
    /// give (under yours, key by key), messages travel on its
    /// [`transport`](Configurable::transport), and the cluster's roles must be its own.
    /// So the same (protocol, variant, profile, seed) gives the same verdict on every
    /// path. Panics at this line if a role of `cluster` is not one of `P`'s.
    #[track_caller]
    pub fn new(cluster: Cluster, config: P::Config) -> Simulation<P> {
        let info = P::info();
        for role in cluster.roles() {
            if !info.roles.iter().any(|r| r.name == role.role) {
                let known: Vec<&str> = info.roles.iter().map(|r| r.name).collect();
                panic!(
                    "tenure: {} has no role `{}`; its roles: {}",
                    info.name,
                    role.role,
                    known.join(", ")
                );
            }
        }
        let assumptions = P::assumptions(&config);
        let promises = P::promises(&config, &cluster);
        Simulation {
            assumptions,
            promises,
            transport: P::transport(),
            protocol: info.name.to_string(),
            roles: info.roles,
            ..Simulation::undeclared(cluster, config)
        }
    }
}

impl<P: Protocol> Simulation<P> {
    /// A protocol that declares nothing (it does not implement [`Configurable`]): no
    /// assumptions (profiles draw anything), no promises (checks run with your
    /// parameters only), datagrams. Declare them with [`Simulation::assumptions`],
    /// [`Simulation::promise`] and [`Simulation::transport`].
    pub fn undeclared(cluster: Cluster, config: P::Config) -> Simulation<P> {
        Simulation {
            cluster,
            config,
            duration: Duration::from_secs(10),
            network: LinkSettings::default(),
            checks: Vec::new(),
            checkers: Vec::new(),
            actions: Vec::new(),
            events: Vec::new(),
            profile: None,
            stop_at_first_violation: true,
            name: None,
            assumptions: Assumptions::default(),
            promises: Vec::new(),
            transport: Transport::Datagram,
            protocol: short_type_name::<P>(),
            roles: &[],
        }
    }

    /// The environment the protocol is designed for: profiles draw within it (unless a
    /// profile says `beyond_assumptions`), and a failure beyond it says which
    /// assumption it broke. Replaces what the protocol declared.
    pub fn assumptions(mut self, assumptions: Assumptions) -> Self {
        self.assumptions = assumptions;
        self
    }

    /// Adds a promise: the parameters a check runs with unless you give your own (e.g.
    /// `Promise::new("leader-liveness").within(secs(4), "2 x election timeout 2s")`,
    /// whose derivation the report prints).
    pub fn promise(mut self, promise: Promise) -> Self {
        self.promises.retain(|p| p.check != promise.check);
        self.promises.push(promise);
        self
    }

    /// How messages travel: datagrams (lost, duplicated and reordered) or streams
    /// (TCP-like connections that reset). Replaces what the protocol declared.
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// What the protocol is declared to assume.
    pub fn declared_assumptions(&self) -> &Assumptions {
        &self.assumptions
    }

    /// The parameters check `name` runs with: the protocol's promise under yours.
    pub fn check_params(&self, name: &str) -> Option<serde_json::Value> {
        let (_, own) = self.checks.iter().find(|(n, _)| n == name)?;
        Some(tenure_sim::check_params(name, own, &self.promises))
    }

    /// Simulated (true) time each seed runs for.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The network's defaults (latency range, loss, duplication).
    pub fn network(mut self, settings: LinkSettings) -> Self {
        self.network = settings;
        self
    }

    /// Draws each seed's faults from a built-in fault profile (`calm`, `partitions`,
    /// `clocks`, `pauses`, `crashes`, `chaos`): which kinds of fault the seed gets, then
    /// the events, then a heal and a liveness phase (the run is extended to fit it).
    /// Panics at this line if the name is unknown (the message lists them).
    #[track_caller]
    pub fn profile(self, name: &str) -> Self {
        match Profile::named(name) {
            Some(p) => self.fault_profile(p),
            None => panic!(
                "tenure: unknown fault profile `{name}`; known profiles: {}{}",
                PROFILE_NAMES.join(", "),
                tenure_scenario::suggest::did_you_mean(name, PROFILE_NAMES.iter().copied())
            ),
        }
    }

    /// Draws each seed's faults from `profile`: a built-in one with knobs changed, each
    /// knob a documented field of [`Profile`] (see [`crate::fuzz`]):
    ///
    /// ```ignore
    /// .fault_profile(Profile { pause: 1.0, pause_range: [millis(500), secs(3)], ..Profile::builtin("chaos")? })
    /// ```
    ///
    /// Panics at this line if a knob is out of range (the message names it).
    #[track_caller]
    pub fn fault_profile(mut self, profile: Profile) -> Self {
        if let Err((knob, message)) = profile.check() {
            panic!(
                "tenure: fault profile `{}`: knob `{knob}`: {message}",
                profile.name
            );
        }
        self.profile = Some(profile);
        self
    }

    /// Adds a checker by name with default parameters: a built-in one (see
    /// [`crate::catalog`]) or one of your own that you [registered](crate::register_checker).
    /// Panics at this line if the name is unknown (the message lists them).
    #[track_caller]
    pub fn check(self, name: &str) -> Self {
        self.check_with(name, serde_json::Value::Null)
    }

    /// Adds a checker by name with parameters, e.g.
    /// `.check_with("leader-liveness", json!({"within": "2s"}))`. Panics at this line if
    /// the name or a parameter is wrong (the message names it).
    #[track_caller]
    pub fn check_with(mut self, name: &str, params: serde_json::Value) -> Self {
        let merged = tenure_sim::check_params(name, &params, &self.promises);
        if let Err(e) = tenure_check::build(name, &merged, &self.cluster) {
            let hint = if e.message.starts_with("unknown checker") {
                let all = tenure_check::all();
                tenure_scenario::suggest::did_you_mean(name, all.iter().map(|c| c.name))
            } else if let Some(rest) = e.message.strip_prefix("unknown field `") {
                // A misspelt parameter: serde lists the checker's own after "expected".
                let field = rest.split('`').next().unwrap_or("");
                let known = e.message.split_once("expected ").map_or("", |(_, l)| l);
                let known = known.split('`').skip(1).step_by(2);
                tenure_scenario::suggest::did_you_mean(field, known)
            } else {
                String::new()
            };
            panic!("tenure: check `{name}`: {e}{hint}");
        }
        self.checks.push((name.to_string(), params));
        self
    }

    /// Adds your own checker, unnamed: `factory` builds a fresh one for each run. Only
    /// this simulation sees it; to name it in promises, scenario files and on the command
    /// line too, [register](crate::register_checker) it and use [`Simulation::check`].
    pub fn checker(
        mut self,
        factory: impl Fn(&Cluster) -> Box<dyn Checker> + Send + Sync + 'static,
    ) -> Self {
        self.checkers.push(Arc::new(factory));
        self
    }

    /// Adds an explicit fault timeline, written with [`Control`]'s verbs.
    pub fn faults(mut self, build: impl FnOnce(Timeline<P>) -> Timeline<P>) -> Self {
        let timeline = build(Timeline {
            actions: Vec::new(),
        });
        self.actions.extend(timeline.actions);
        self
    }

    /// Adds fault events given as data (e.g. a value of `tenure::proptest::timeline`).
    pub fn timeline(mut self, events: Vec<FaultEvent>) -> Self {
        self.events.extend(events);
        self
    }

    /// Runs every seed to its end even after a violation (the default stops at the
    /// first violation, which is what a sweep wants).
    pub fn run_to_end(mut self) -> Self {
        self.stop_at_first_violation = false;
        self
    }

    /// Names the regressions file after `name` instead of the running test (for two
    /// sweeps in one test, or sweeps outside a `#[test]`, where `name` is also what the
    /// replay command filters by).
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    fn context(&self) -> TestContext {
        let mut context = TestContext::current();
        if let Some(name) = &self.name {
            context.key = name.clone();
            if seeds::current_test_name().is_none() {
                context.test = name.clone();
            }
        }
        context
    }

    /// Runs one seed. It does not look at `TENURE_SEED` (a sweep does).
    pub fn run_seed(&self, seed: u64) -> Outcome {
        self.run_in(seed, self.context())
    }

    /// Runs `seed` as [`Simulation::run_seed`] does, but with `faults` in place of the
    /// fault events the profile drew for it (the drawn clocks and links stay): how a
    /// [`Shrunk`] failure is replayed.
    pub fn run_seed_with_faults(&self, seed: u64, faults: &[FaultEvent]) -> Outcome {
        self.run_drawn(seed, self.context(), Some(faults))
    }

    /// Replays a [`Shrunk`] failure: its seed with its fault events and its shrunk clock
    /// settings in place of those the profile drew.
    pub fn replay(&self, shrunk: &Shrunk) -> Outcome {
        let case = self.case_with(shrunk.seed, Some(&shrunk.faults), Some(&shrunk.clocks));
        self.run_case(shrunk.seed, self.context(), case)
    }

    /// Shrinks a failing seed: removes and simplifies the fault events the profile drew
    /// for it with the same steps as `tenure shrink` (time windows, a node's repeated
    /// crash-restart cycles collapsed to one, delta debugging, merges, aiming at the
    /// leader, shorter pauses) while the run still breaks the same checker. Explicit
    /// faults (`.timeline`, `.faults`) are kept. Past three events a step may move to a
    /// nearby seed, which the result records. Then the clocks the profile drew are
    /// shrunk as `tenure shrink` shrinks a case's `[[clock]]`s (each dropped, or its
    /// offset and drift zeroed or halved); replay the result with
    /// [`Simulation::replay`]. `None` if the seed passes or no profile is set.
    pub fn shrink(&self, seed: u64) -> Option<Shrunk> {
        let profile = self.profile.as_ref()?;
        let context = self.context();
        let first = self.run_in(seed, context.clone());
        let checker = first.violations.first()?.checker;
        let _ = profile;
        let drawn = self.drawn(seed)?;
        let before = drawn.faults.len();
        // The same steps as `tenure shrink` (tenure_fuzz::shrink_faults): time windows,
        // crash-restart cycles (a node's repeated cycles collapse to one), ddmin, merges,
        // the leader, shorter pauses, and past three events nearby seeds (the drawn
        // clocks and links are then that seed's); the result records the seed. For a
        // liveness checker a candidate must leave the cluster healed, as there.
        let liveness = checker.ends_with("-liveness");
        let mut runs = 1;
        let mut fails = |seed: u64, faults: &[FaultEvent]| {
            if runs >= tenure_fuzz::shrink::MAX_RUNS || (liveness && !tenure_fuzz::healed(faults)) {
                return false;
            }
            runs += 1;
            let outcome = self.run_drawn(seed, context.clone(), Some(faults));
            outcome.violations.iter().any(|v| v.checker == checker)
        };
        let (shrunk_seed, faults) =
            tenure_fuzz::shrink_faults(seed, drawn.faults, drawn.duration, &mut fails);
        // Then the clocks the profile drew for that seed, as `tenure shrink` does: each
        // dropped, or its offset and drift zeroed or halved, while the checker still
        // breaks (clock settings draw no randomness: the seed's other draws stay).
        let drawn_clocks = self
            .drawn(shrunk_seed)
            .map(|d| d.clocks)
            .unwrap_or_default();
        let clocks_before = tenure_fuzz::shrink::clock_settings(&drawn_clocks);
        let clocks = tenure_fuzz::shrink_clock_settings(drawn_clocks, |clocks| {
            if runs >= tenure_fuzz::shrink::MAX_RUNS {
                return false;
            }
            runs += 1;
            let outcome = self.run_case(
                shrunk_seed,
                context.clone(),
                self.case_with(shrunk_seed, Some(&faults), Some(clocks)),
            );
            outcome.violations.iter().any(|v| v.checker == checker)
        });
        Some(Shrunk {
            seed: shrunk_seed,
            found_seed: seed,
            checker,
            before,
            faults,
            clocks_before,
            clocks,
            runs,
        })
    }

    fn run_in(&self, seed: u64, context: TestContext) -> Outcome {
        self.run_drawn(seed, context, None)
    }

    /// The scenario this simulation is, without a drawn schedule: what a scenario file
    /// for it would say (cluster, duration, network, explicit fault events, checks),
    /// lengthened to judge its liveness bounds as `tenure fuzz` does.
    pub fn base(&self) -> Scenario {
        let mut faults = self.events.clone();
        faults.sort_by_key(|e| e.at);
        let scenario = Scenario {
            file: format!("{} (library)", self.protocol),
            source: String::new(),
            name: self
                .name
                .clone()
                .unwrap_or_else(|| format!("{} simulation", self.protocol)),
            description: None,
            seed: 0,
            duration: self.duration,
            protocol: ProtocolSpec {
                name: self.protocol.clone(),
                variant: "(library)".to_string(),
                params: serde_json::json!({}),
            },
            cluster: ClusterSpec::Roles(self.cluster.roles().to_vec()),
            network: NetworkSpec {
                latency: self.network.latency.clone(),
                loss: self.network.loss,
                duplicate: self.network.duplicate,
                links: Vec::new(),
                mode: Some(match self.transport {
                    Transport::Datagram => NetworkMode::Datagram,
                    Transport::Stream => NetworkMode::Stream,
                }),
                connection_timeout: None,
            },
            clocks: Vec::new(),
            disk: Default::default(),
            processing: Default::default(),
            faults,
            checks: self
                .checks
                .iter()
                .map(|(name, params)| CheckSpec {
                    name: name.clone(),
                    params: if params.is_null() {
                        serde_json::json!({})
                    } else {
                        params.clone()
                    },
                })
                .collect(),
            expect: Expectation::Pass,
            expect_vacuous: Vec::new(),
            profile: None,
        };
        let bound = tenure_fuzz::liveness_bound(&scenario, &self.promises);
        tenure_fuzz::fit_liveness(scenario, bound)
    }

    /// The schedule the profile draws for `seed` (within the declared assumptions, with
    /// a liveness phase that fits the checks' bounds); `None` without a profile.
    pub fn drawn(&self, seed: u64) -> Option<tenure_fuzz::Drawn> {
        let profile = self.profile.as_ref()?;
        let base = self.base();
        let bound = tenure_fuzz::liveness_bound(&base, &self.promises);
        Some(tenure_fuzz::draw(
            profile,
            &self.assumptions,
            bound,
            &self.cluster,
            self.roles,
            base.duration,
            seed,
        ))
    }

    /// The scenario seed `seed` runs: [`Simulation::base`] with the profile's draw for
    /// it written in, its drawn fault events replaced by `drawn_faults` if given. The
    /// same case `tenure fuzz` runs for the same declarations, profile and seed.
    pub fn case(&self, seed: u64, drawn_faults: Option<&[FaultEvent]>) -> Scenario {
        self.case_with(seed, drawn_faults, None)
    }

    /// [`Simulation::case`], with `drawn_clocks` in place of the clock settings the
    /// profile drew for `seed` too (`None`: as drawn).
    fn case_with(
        &self,
        seed: u64,
        drawn_faults: Option<&[FaultEvent]>,
        drawn_clocks: Option<&[tenure_scenario::ClockSpec]>,
    ) -> Scenario {
        let base = self.base();
        let mut case = match self.drawn(seed) {
            Some(mut drawn) => {
                if let Some(faults) = drawn_faults {
                    drawn.faults = faults.to_vec();
                }
                if let Some(clocks) = drawn_clocks {
                    drawn.clocks = clocks.to_vec();
                }
                drawn.apply_to(&base)
            }
            None => base,
        };
        case.seed = seed;
        case
    }

    /// Runs `seed` with the profile's draw for it (its clocks, slow links and duration),
    /// but with `drawn_faults` in place of the fault events it drew (`None`: as drawn).
    /// The run is built from [`Simulation::case`] exactly as `tenure run` builds it
    /// from a scenario file, then your `.faults(..)` closures and checkers are added.
    fn run_drawn(
        &self,
        seed: u64,
        context: TestContext,
        drawn_faults: Option<&[FaultEvent]>,
    ) -> Outcome {
        self.run_case(seed, context, self.case(seed, drawn_faults))
    }

    /// Runs `case` (a [`Simulation::case`]) with `seed`, your `.faults(..)` closures and
    /// checkers added.
    fn run_case(&self, seed: u64, context: TestContext, case: Scenario) -> Outcome {
        let mut sim = tenure_sim::simulation::<P>(&case, &self.cluster, self.config.clone(), seed);
        for (at, action) in &self.actions {
            let action = action.clone();
            sim = sim.at(*at, move |c| action(c));
        }
        let mut checkers: Vec<Box<dyn Checker>> =
            tenure_sim::build_checkers(&case, &self.cluster, &self.promises)
                .expect("checked when added");
        checkers.extend(self.checkers.iter().map(|f| f(&self.cluster)));
        let CheckedRun {
            output,
            violations,
            judged,
            verdicts,
        } = sim.run_checked(checkers, self.stop_at_first_violation);
        // A run stopped by a limit has no verdict: not a pass to report.
        if let Some(limit) = &output.stats.stopped_by {
            panic!("tenure: seed {seed}: {limit} (limits: tenure_scenario::set_limits)");
        }
        let beyond = tenure_fuzz::broken_assumptions(&case, &self.assumptions)
            .iter()
            .map(ToString::to_string)
            .collect();
        Outcome {
            seed,
            violations,
            judged,
            verdicts,
            beyond,
            protocol: self.protocol.clone(),
            history: output.history,
            stats: output.stats,
            stopped_early: output.stopped_early,
            faults: case.faults,
            context,
        }
    }

    /// Runs the regressions file's seeds, then `seeds`, and stops at the first failure,
    /// without panicking and without saving it (for tests that expect a bug).
    /// `TENURE_SEED` / `TENURE_SEEDS` apply as in [`Simulation::sweep`].
    #[track_caller]
    pub fn sweep_report(&self, seeds: Range<u64>) -> SweepReport {
        let context = self.context();
        let plan = seeds::plan_from_env(seeds).unwrap_or_else(|e| panic!("tenure: {e}"));
        let file = regressions::path(&regressions::package_dir(), &context.key);
        let (saved, rest): (Vec<u64>, Box<dyn Iterator<Item = u64>>) = match plan {
            seeds::SeedPlan::One(seed) => (vec![], Box::new(std::iter::once(seed))),
            seeds::SeedPlan::Range(range) => {
                let saved = regressions::load(&file).unwrap_or_else(|e| panic!("tenure: {e}"));
                (saved, Box::new(range))
            }
        };
        let mut seeds_run = 0;
        let first_range = saved.len();
        let mut probe = VacuityProbe::default();
        let mut hinted = false;
        for (i, seed) in saved.into_iter().chain(rest).enumerate() {
            seeds_run += 1;
            let outcome = self.run_in(seed, context.clone());
            if let (false, Some(hint)) = (hinted, outcome.stats.durability_hints.first()) {
                // Once per sweep, on stderr (cargo test shows it with the test's output).
                hinted = true;
                eprintln!("tenure: durability hint (not a failure), seed {seed}: {hint}");
            }
            if !outcome.violations.is_empty() {
                return SweepReport {
                    seeds_run,
                    failure: Some(outcome),
                    from_regressions: i < first_range,
                    vacuous: Vec::new(),
                };
            }
            if let Some(vacuous) = probe.add(&outcome) {
                if !vacuous.is_empty() {
                    return SweepReport {
                        seeds_run,
                        failure: None,
                        from_regressions: false,
                        vacuous,
                    };
                }
            }
        }
        SweepReport {
            seeds_run,
            failure: None,
            from_regressions: false,
            vacuous: probe.conclude(),
        }
    }

    /// Runs every seed of `seeds` (or what `TENURE_SEEDS` / `TENURE_SEED` says) and
    /// counts: how many failed, and per checker the seeds it failed and its first
    /// violation. It never panics and saves nothing (for measuring how often a bug shows,
    /// or comparing two variants). Only the counts and one violation per checker are
    /// kept, so memory does not grow with the seeds' histories.
    #[track_caller]
    pub fn sweep_count(&self, seeds: Range<u64>) -> SweepCount {
        let context = self.context();
        let plan = seeds::plan_from_env(seeds).unwrap_or_else(|e| panic!("tenure: {e}"));
        let seeds: Box<dyn Iterator<Item = u64>> = match plan {
            seeds::SeedPlan::One(seed) => Box::new(std::iter::once(seed)),
            seeds::SeedPlan::Range(range) => Box::new(range),
        };
        let mut count = SweepCount::default();
        let mut probe = VacuityProbe::default();
        for seed in seeds {
            count.seeds_run += 1;
            let outcome = self.run_in(seed, context.clone());
            if let Some(vacuous) = probe.add(&outcome) {
                count.vacuous = vacuous;
            }
            if outcome.violations.is_empty() {
                continue;
            }
            count.failing_seeds.push(seed);
            let mut seen = std::collections::BTreeSet::new();
            for v in outcome.violations {
                if !seen.insert(v.checker) {
                    continue; // one count per (seed, checker)
                }
                let entry = count
                    .by_checker
                    .entry(v.checker)
                    .or_insert_with(|| CheckerFailures {
                        seeds: Vec::new(),
                        first_seed: seed,
                        first: v.clone(),
                    });
                entry.seeds.push(seed);
            }
        }
        if count.seeds_run < tenure_fuzz::VACUITY_PROBE_SEEDS {
            count.vacuous = probe.conclude();
        }
        count
    }

    /// Runs the regressions file's seeds first, then `seeds` (or what `TENURE_SEEDS`
    /// says; `TENURE_SEED` runs only that seed), and panics at the first failure with
    /// the checker, the violation, the seed and the replay command. A new failing seed
    /// is saved to `tenure-regressions/<test name>.txt` first.
    #[track_caller]
    pub fn sweep(&self, seeds: Range<u64>) {
        let report = self.sweep_report(seeds);
        if !report.vacuous.is_empty() {
            panic!(
                "tenure: a check judged nothing, so the sweep proves nothing:\n  {}",
                report.vacuous.join("\n  ")
            );
        }
        let Some(outcome) = &report.failure else {
            return;
        };
        let mut message = outcome.failure().expect("a failure has a violation");
        let plural = if report.seeds_run == 1 { "" } else { "s" };
        message.push_str(&format!("\n({} seed{plural} run", report.seeds_run));
        if report.from_regressions {
            message.push_str("; this seed is in the regressions file");
        } else if std::env::var_os(seeds::SEED_VAR).is_none() {
            let dir = regressions::package_dir();
            let file = regressions::path(&dir, &outcome.context.key);
            let v = &outcome.violations[0];
            match regressions::save(&file, outcome.seed, &v.to_string()) {
                Ok(_) => message.push_str(&format!(
                    "; saved to {} in your package, to be re-run first: say what it pins on its `pinned:` line and commit it",
                    file.strip_prefix(&dir).unwrap_or(&file).display()
                )),
                Err(e) => message.push_str(&format!("; could not save it: {e}")),
            }
        }
        message.push(')');
        panic!("{message}");
    }
}

/// A failing seed cut down to the few drawn fault events, and the smallest drawn clock
/// settings, that still break its checker (see [`Simulation::shrink`]); replay it with
/// [`Simulation::run_seed_with_faults`] (which keeps the seed's drawn clocks: the events
/// were shrunk with them).
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The seed the shrunk faults break the checker with (see [`Simulation::shrink`]).
    pub seed: u64,
    /// The failing seed shrinking started from.
    pub found_seed: u64,
    /// The checker the seed breaks, with all its events and with `faults` alone.
    pub checker: &'static str,
    /// How many fault events the profile drew for the seed.
    pub before: usize,
    /// The drawn events that remain, in time order.
    pub faults: Vec<FaultEvent>,
    /// How many clock settings (non-zero offsets and drifts) the profile drew for
    /// `seed`.
    pub clocks_before: usize,
    /// The drawn clocks that remain, each as small as the failure allows (a clock
    /// setting is a fault a case carries outside its timeline).
    pub clocks: Vec<tenure_scenario::ClockSpec>,
    /// How many runs shrinking took.
    pub runs: usize,
}

impl Shrunk {
    /// Fault events and non-zero clock settings together: what a reader of the shrunk
    /// failure must take in (`tenure shrink` counts the same).
    pub fn events(&self) -> usize {
        self.faults.len() + tenure_fuzz::shrink::clock_settings(&self.clocks)
    }
}

impl std::fmt::Display for Shrunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} breaks {} with {} fault events",
            self.seed,
            self.checker,
            self.faults.len()
        )?;
        if self.seed == self.found_seed {
            writeln!(f, " (of the {} it drew):", self.before)?;
        } else {
            writeln!(
                f,
                " (seed {} drew {} and needed more):",
                self.found_seed, self.before
            )?;
        }
        for e in &self.faults {
            writeln!(f, "  {e}")?;
        }
        if !self.clocks.is_empty() {
            let settings = tenure_fuzz::shrink::clock_settings(&self.clocks);
            writeln!(
                f,
                "and {} of the {} clock settings it drew:",
                settings, self.clocks_before
            )?;
            for c in &self.clocks {
                writeln!(f, "  clock {}", tenure_fuzz::shrink::clock_text(c))?;
            }
        }
        Ok(())
    }
}

/// `MyElection` for `my_election::MyElection`: a protocol's name in messages when it
/// declares none.
fn short_type_name<P>() -> String {
    let full = std::any::type_name::<P>();
    let head = full.split('<').next().unwrap_or(full);
    head.rsplit("::").next().unwrap_or(head).to_string()
}
