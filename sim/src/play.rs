//! Running a scenario file: validate it against its protocol and checkers, turn its
//! timeline into fault verbs, run a seed with the checkers online, and judge the result
//! against the scenario's expectation.

use crate::checked::CheckedRun;
use crate::control::Control;
use crate::net::LinkSettings;
use crate::protocols::Protocols;
use crate::run::{RunOutput, Sim};
use crate::trace::TraceEvent;
use crate::world::Stats;
use std::marker::PhantomData;
use tenure_check::verdict::{CheckVerdict, Overall, Verdict};
use tenure_check::{Checker, Judged, Violation};
use tenure_core::{
    Assumptions, Cluster, Configurable, History, NodeId, Promise, Protocol, Request, SimTime,
};
use tenure_scenario::{Expectation, Fault, NodeSel, Scenario, ScenarioError};

/// How to run a seed.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep the full trace (messages, timers, faults).
    pub trace: bool,
    /// Stop the run at the first violation (fuzzing); otherwise run to the end so every
    /// check is judged.
    pub stop_at_first_violation: bool,
}

/// The result of one seed of one scenario.
pub struct Report {
    pub seed: u64,
    /// First violation of each failed check, in the order the checks are listed.
    pub violations: Vec<Violation>,
    pub history: History,
    pub trace: Option<Vec<TraceEvent>>,
    pub stats: Stats,
    pub stopped_early: bool,
    /// What each check judged, in the order the checks are listed.
    pub judged: Vec<Judged>,
    /// Whether the run met the scenario's `[expect]` (its outcome, and which checks it
    /// expects not to be judged).
    pub expectation_met: bool,
    /// Each check's verdict, in the order the checks are listed: pass, fail, or not
    /// judged and why. Every output derives from these.
    pub verdicts: Vec<CheckVerdict>,
    /// The protocol's declared assumptions this scenario's own faults and clocks go
    /// beyond (empty when within them): an annotation of the verdict, never a reason to
    /// withhold one.
    pub beyond: Vec<tenure_core::Broken>,
}

impl Report {
    /// No check failed. A check not judged ([`Report::not_judged`]) did not fail, but
    /// did not pass either: use [`Report::overall`] for the run's verdict.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The run's verdict: fail if a check failed, not judged if a check was not judged
    /// (or there was none), pass otherwise.
    pub fn overall(&self) -> Overall {
        Overall::of(&self.verdicts)
    }

    /// The checks that were not judged in this run, with their reasons.
    pub fn not_judged(&self) -> impl Iterator<Item = &CheckVerdict> {
        self.verdicts
            .iter()
            .filter(|v| matches!(v.verdict, Verdict::NotJudged(_)))
    }

    /// The checks that judged nothing in this run.
    pub fn vacuous(&self) -> impl Iterator<Item = &Judged> {
        self.judged.iter().filter(|j| j.vacuous.is_some())
    }
}

/// Runs one seed of a prepared scenario.
type Runner = Box<dyn Fn(u64, &RunOptions) -> Report + Send + Sync>;

/// A scenario checked against its protocol, ready to run any seed.
pub struct Prepared {
    pub scenario: Scenario,
    pub cluster: Cluster,
    pub info: &'static tenure_core::ProtocolInfo,
    /// What the protocol promises, with bounds derived from this scenario's parameters
    /// (see [`tenure_core::Configurable::promises`]).
    pub promises: Vec<Promise>,
    /// The environment the protocol is designed for, with this scenario's parameters.
    pub assumptions: Assumptions,
    /// The scenario listed no checks, so its checks are the protocol's promises.
    pub checks_from_promises: bool,
    /// The assumptions the scenario's own faults and clocks go beyond.
    pub beyond: Vec<tenure_core::Broken>,
    runner: Runner,
}

impl Prepared {
    /// Validates everything that can be known before running: protocol, variant,
    /// parameters, cluster, node ids, checks and their parameters.
    pub fn new(mut scenario: Scenario, protocols: &Protocols) -> Result<Prepared, ScenarioError> {
        let Some(entry) = protocols.lookup(&scenario.protocol.name) else {
            let msg = format!(
                "unknown protocol `{}`; known protocols: {}{}",
                scenario.protocol.name,
                protocols.names().join(", "),
                tenure_scenario::suggest::did_you_mean(
                    &scenario.protocol.name,
                    protocols.names().iter().copied()
                )
            );
            return Err(scenario.error_at("protocol.name", msg));
        };
        let cluster = scenario.resolve_cluster(entry.info)?;
        scenario.validate(entry.info, &cluster)?;
        // `[network] mode` not written: the protocol's own transport.
        if scenario.network.mode.is_none() {
            use tenure_scenario::NetworkMode;
            let mode = match entry.transport {
                tenure_core::Transport::Datagram => NetworkMode::Datagram,
                tenure_core::Transport::Stream => NetworkMode::Stream,
            };
            if mode == NetworkMode::Datagram && scenario.network.connection_timeout.is_some() {
                return Err(scenario.error_at(
                    "network.connection_timeout",
                    format!(
                        "{} runs on datagrams unless `mode = \"stream\"` is written, and \
                         datagrams have no connections",
                        entry.info.name
                    ),
                ));
            }
            scenario.network.mode = Some(mode);
        }
        // No `checks` line: the protocol's promises are the checks, as `fuzz --protocol`
        // judges (a run with nothing to judge never says PASS).
        let checks_from_promises = scenario.checks.is_empty();
        if checks_from_promises {
            let promises = entry.playable.promises(&scenario, &cluster)?;
            scenario.checks = promises
                .iter()
                .map(|p| tenure_scenario::CheckSpec {
                    name: p.check.to_string(),
                    params: serde_json::Value::Null,
                })
                .collect();
        }
        let Playing {
            runner,
            promises,
            assumptions,
        } = entry.playable.prepare(&scenario, &cluster)?;
        build_checkers(&scenario, &cluster, &promises)?;
        let beyond = crate::broken_assumptions(&scenario, &assumptions);
        Ok(Prepared {
            scenario,
            cluster,
            info: entry.info,
            promises,
            assumptions,
            checks_from_promises,
            beyond,
            runner,
        })
    }

    pub fn run(&self, seed: u64, options: &RunOptions) -> Report {
        (self.runner)(seed, options)
    }
}

/// The parameters a check runs with: the protocol's promise for it (derived bounds), then
/// the scenario's own parameters over it, key by key.
pub fn check_params(
    name: &str,
    own: &serde_json::Value,
    promises: &[Promise],
) -> serde_json::Value {
    let mut params = promises
        .iter()
        .find(|p| p.check == name)
        .map(|p| p.params.clone())
        .unwrap_or_else(|| serde_json::json!({}));
    match (params.as_object_mut(), own.as_object()) {
        (Some(base), Some(own)) => {
            // A scenario's own bound is not the protocol's derivation.
            if own.contains_key("within") {
                base.remove("bound");
            }
            for (k, v) in own {
                base.insert(k.clone(), v.clone());
            }
            params
        }
        (Some(_), None) if own.is_null() => params,
        _ => own.clone(),
    }
}

/// Builds the scenario's checkers afresh (they are stateful: one set per run), each with
/// the protocol's promised parameters under the scenario's own.
pub fn build_checkers(
    scenario: &Scenario,
    cluster: &Cluster,
    promises: &[Promise],
) -> Result<Vec<Box<dyn Checker>>, ScenarioError> {
    scenario
        .checks
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let params = check_params(&spec.name, &spec.params, promises);
            tenure_check::build(&spec.name, &params, cluster).map_err(|e| {
                let path = if e.field.is_empty() {
                    format!("checks[{i}]")
                } else {
                    format!("check.{}.{}", spec.name, e.field)
                };
                let mut message = e.message;
                if message.starts_with("unknown checker") {
                    let all = tenure_check::all();
                    let names = all.iter().map(|c| c.name);
                    message += &tenure_scenario::suggest::did_you_mean(&spec.name, names);
                    if promises.iter().any(|p| p.check == spec.name) {
                        message += &format!(
                            " (the protocol's promises name `{}`: a checker of a crate's \
                             own is named only once it is registered, by the crate's \
                             command line `tenure::cli::Main::new(..).checker(..)` or by \
                             `tenure::register_checker`)",
                            spec.name
                        );
                    }
                } else if let Some(rest) = message.strip_prefix("unknown field `") {
                    // A misspelt parameter: serde lists the checker's own
                    // (`expected `max_overlap` or `bound``).
                    let name = rest.split('`').next().unwrap_or("");
                    let known = message
                        .split_once("expected ")
                        .map(|(_, list)| list.split('`').skip(1).step_by(2).collect::<Vec<_>>())
                        .unwrap_or_default();
                    message += &tenure_scenario::suggest::did_you_mean(name, known);
                }
                scenario.error_at(&path, message)
            })
        })
        .collect()
}

/// A scenario made runnable for its protocol, with what the protocol declares for it.
pub(crate) struct Playing {
    runner: Runner,
    promises: Vec<Promise>,
    assumptions: Assumptions,
}

/// A protocol that can play scenarios (type-erased over `P`).
pub(crate) trait Playable {
    fn prepare(&self, scenario: &Scenario, cluster: &Cluster) -> Result<Playing, ScenarioError>;
    /// What the protocol promises for this scenario's parameters and variant.
    fn promises(
        &self,
        scenario: &Scenario,
        cluster: &Cluster,
    ) -> Result<Vec<Promise>, ScenarioError>;
}

pub(crate) struct Protocolled<P>(pub PhantomData<fn() -> P>);

impl<P: Configurable> Playable for Protocolled<P>
where
    P::Config: Sync,
{
    fn promises(
        &self,
        scenario: &Scenario,
        cluster: &Cluster,
    ) -> Result<Vec<Promise>, ScenarioError> {
        let params: P::Params = scenario.params()?;
        let config = P::configure_named(params, &scenario.protocol.variant, cluster)
            .map_err(|e| scenario.param_error(&e))?;
        Ok(P::promises(&config, cluster))
    }

    fn prepare(&self, scenario: &Scenario, cluster: &Cluster) -> Result<Playing, ScenarioError> {
        let params: P::Params = scenario.params()?;
        let config = P::configure_named(params, &scenario.protocol.variant, cluster)
            .map_err(|e| scenario.param_error(&e))?;
        let promises = P::promises(&config, cluster);
        let assumptions = P::assumptions(&config);
        let scenario = scenario.clone();
        let cluster = cluster.clone();
        let run_promises = promises.clone();
        let run_assumptions = assumptions.clone();
        Ok(Playing {
            runner: Box::new(move |seed, options| {
                play::<P>(
                    &scenario,
                    &cluster,
                    &run_promises,
                    &run_assumptions,
                    config.clone(),
                    seed,
                    options,
                )
            }),
            promises,
            assumptions,
        })
    }
}

/// Builds the simulation a scenario describes (without checkers).
pub fn simulation<P: Protocol>(
    scenario: &Scenario,
    cluster: &Cluster,
    config: P::Config,
    seed: u64,
) -> Sim<P> {
    let net = &scenario.network;
    let mut sim = Sim::<P>::new(cluster.clone(), config, seed)
        .duration(scenario.duration)
        .network(LinkSettings {
            latency: net.latency.clone(),
            loss: net.loss,
            duplicate: net.duplicate,
        });
    for link in &net.links {
        sim = sim.link_spec(link);
    }
    if let Some(timeout) = net.stream_timeout() {
        sim = sim.stream(timeout);
    }
    for c in &scenario.clocks {
        sim = sim.clock(c.node, c.offset.0, c.drift);
    }
    for node in cluster.nodes() {
        let fsync = scenario.disk.fsync_of(node);
        sim = sim.fsync(node, fsync.min, fsync.max);
        let cpu = scenario.processing.time_of(node);
        sim = sim.processing(node, cpu.min, cpu.max);
    }
    sim.order_after_stall(scenario.processing.order_after_stall)
        .timeline(&scenario.faults)
}

fn play<P: Protocol>(
    scenario: &Scenario,
    cluster: &Cluster,
    promises: &[Promise],
    assumptions: &Assumptions,
    config: P::Config,
    seed: u64,
    options: &RunOptions,
) -> Report {
    let checkers = build_checkers(scenario, cluster, promises).expect("checked when prepared");
    let CheckedRun {
        output:
            RunOutput {
                history,
                trace,
                stats,
                stopped_early,
            },
        violations,
        judged,
        verdicts,
    } = simulation::<P>(scenario, cluster, config, seed)
        .trace(options.trace)
        .run_checked(checkers, options.stop_at_first_violation);
    let expectation_met = expectation_met(scenario, &verdicts, stopped_early);
    let beyond = crate::broken_assumptions(scenario, assumptions);
    Report {
        seed,
        violations,
        history,
        trace,
        stats,
        stopped_early,
        judged,
        expectation_met,
        verdicts,
        beyond,
    }
}

/// Whether a run's verdicts meet the scenario's `[expect]`: `pass` when no check failed
/// and exactly the checks the scenario expects not to be judged were not judged;
/// `violation` when the named check FAILED (a check not judged, an undecided search
/// included, never meets it) and no other check failed (unless the run stopped at the
/// first violation), with the same rule for the checks not judged.
pub fn expectation_met(scenario: &Scenario, verdicts: &[CheckVerdict], stopped: bool) -> bool {
    let met = expectation_parts(scenario, verdicts, stopped);
    met.outcome && met.not_judged
}

/// The two halves of an expectation, apart: so a caller can tell a run that missed its
/// expectation only because a check was not judged (`outcome` met, `not_judged` not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectationParts {
    /// The failures are what `[expect] outcome` says.
    pub outcome: bool,
    /// The checks not judged are exactly those `[expect] vacuous` lists.
    pub not_judged: bool,
}

pub fn expectation_parts(
    scenario: &Scenario,
    verdicts: &[CheckVerdict],
    stopped: bool,
) -> ExpectationParts {
    let violations: Vec<&Violation> = verdicts
        .iter()
        .filter_map(|v| v.verdict.violation())
        .collect();
    let outcome = match &scenario.expect {
        Expectation::Pass => violations.is_empty(),
        Expectation::Violation { checker } => {
            violations.iter().any(|v| v.checker == checker)
                && (stopped || violations.iter().all(|v| v.checker == checker))
        }
    };
    ExpectationParts {
        outcome,
        not_judged: not_judged_expected(&scenario.expect_vacuous, verdicts, stopped),
    }
}

/// The checks not judged are exactly those the scenario expects not to be (`[expect]
/// vacuous`); a run stopped early at a violation is judged by its violation alone.
pub fn not_judged_expected(expected: &[String], verdicts: &[CheckVerdict], stopped: bool) -> bool {
    if stopped {
        return true;
    }
    let not_judged: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.verdict.not_judged().is_some())
        .map(|v| v.check.as_str())
        .collect();
    not_judged.iter().all(|v| expected.iter().any(|e| e == v))
        && expected.iter().all(|e| not_judged.contains(&e.as_str()))
}

/// The checks that judged nothing are exactly those the scenario expects to (`[expect]
/// vacuous`); a run stopped early at a violation judges no vacuity.
pub fn vacuity_expected(expected: &[String], judged: &[Judged], stopped_early: bool) -> bool {
    if stopped_early {
        return true;
    }
    let vacuous: Vec<&str> = judged
        .iter()
        .filter(|j| j.vacuous.is_some())
        .map(|j| j.check.as_str())
        .collect();
    vacuous.iter().all(|v| expected.iter().any(|e| e == v))
        && expected.iter().all(|e| vacuous.contains(&e.as_str()))
}

/// `pass`: no check failed. `violation`: the named check failed and every other passed.
pub fn judge(expect: &Expectation, violations: &[Violation], stopped_early: bool) -> bool {
    match expect {
        Expectation::Pass => violations.is_empty(),
        Expectation::Violation { checker } => {
            violations.iter().any(|v| v.checker == checker)
                && (stopped_early || violations.iter().all(|v| v.checker == checker))
        }
    }
}

/// The node `sel` names now: a fixed id, or the node a role selector hits
/// ([`Control::select`], which notes a re-aim or a skip in the trace).
fn resolve<P: Protocol>(
    c: &mut Control<'_, P>,
    sel: NodeSel,
    kind: &'static str,
) -> Option<NodeId> {
    match sel.aim() {
        None => sel.id(),
        Some(aim) => c.select(aim, kind),
    }
}

/// Applies one timeline event. A `leader` selector with no leader at that instant skips
/// the event; a `holder` or `waiter` selector with nobody of its kind is re-aimed at the
/// other kind, and skipped when nobody holds or waits (the trace says which).
pub fn apply<P: Protocol>(c: &mut Control<'_, P>, fault: &Fault) {
    apply_or_wait(c, fault, None, None)
}

/// Applies one timeline event as [`apply`] does, except that a `holder` (`waiter`)
/// selector that finds nobody who holds (waits) waits for one until `until` (see
/// [`tenure_scenario::FaultEvent::aim_deadline`] and [`Control::wait_for_aim`]), and
/// is only then re-aimed at the other role or skipped. `id` is the waiting fault's,
/// when it is aimed again.
pub fn apply_or_wait<P: Protocol>(
    c: &mut Control<'_, P>,
    fault: &Fault,
    until: Option<SimTime>,
    id: Option<u64>,
) {
    if let (Some(until), Some(aim)) = (until, fault.node().and_then(|s| s.aim())) {
        // `until` is `None` for `"leader"` (strict: see `FaultEvent::aim_deadline`).
        if c.now() < until && !c.finds(aim) {
            let (again, last) = (fault.clone(), fault.clone());
            c.wait_for_aim(
                fault.kind(),
                aim,
                until,
                id,
                move |id| {
                    Box::new(move |c: &mut Control<'_, P>| {
                        apply_or_wait(c, &again, Some(until), Some(id))
                    })
                },
                Box::new(move |c: &mut Control<'_, P>| apply(c, &last)),
            );
            return;
        }
    }
    let node = match fault.node() {
        Some(sel) => match resolve(c, *sel, fault.kind()) {
            Some(n) => Some(n),
            None => return,
        },
        None => None,
    };
    let n = || node.expect("resolved above");
    match fault {
        Fault::Partition { groups } => c.partition(groups),
        Fault::Isolate { .. } => c.isolate(n()),
        Fault::Cut { nodes } => c.cut(nodes[0], nodes[1]),
        Fault::OneWay { from, to } => c.one_way(from, to),
        Fault::Bridge { groups, .. } => c.bridge(n(), groups),
        Fault::Heal {} => c.heal(),
        Fault::Crash { .. } => c.crash(n()),
        Fault::Restart { .. } => c.restart(n()),
        Fault::Pause { duration, .. } => c.pause(n(), *duration),
        Fault::ClockJump { by, .. } => c.clock_jump(n(), by.0),
        Fault::ClockDrift { drift, .. } => c.clock_drift(n(), *drift),
        Fault::Network {
            latency,
            loss,
            duplicate,
        } => c.network(latency.clone(), *loss, *duplicate),
        Fault::PowerLoss { torn: false, .. } => c.power_loss(n()),
        Fault::PowerLoss { torn: true, .. } => c.power_loss_torn(n()),
        Fault::ClockStall { duration, .. } => c.clock_stall(n(), *duration),
        Fault::ClockSlew { by, ppm, .. } => c.clock_slew(n(), by.0, *ppm),
        Fault::CrashPoint {
            at_effect,
            at_sync,
            power,
            restart_after,
            ..
        } => c.arm_crash_point(
            n(),
            crate::CrashPoint {
                remaining: *at_effect,
                at_sync: *at_sync,
                power: *power,
                restart_after: *restart_after,
            },
        ),
        Fault::DiskStall { duration, .. } => c.disk_stall(n(), *duration),
        Fault::DiskError { duration, .. } => c.disk_error(n(), *duration),
        Fault::Slow {
            factor, duration, ..
        } => c.slow(n(), *factor, *duration),
        Fault::SlowLink {
            from,
            latency,
            duration,
            ..
        } => {
            if let Some(from) = resolve(c, *from, fault.kind()) {
                c.slow_link(from, n(), latency.clone(), *duration);
            }
        }
        Fault::Byzantine { behaviour, .. } => c.byzantine(n(), *behaviour),
        Fault::Request { name, arg, .. } => c.request(
            n(),
            Request {
                name: name.clone(),
                arg: *arg,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_promise_gives_defaults_and_the_scenario_overrides_them_key_by_key() {
        let promises = vec![Promise::new("lock-liveness")
            .within(std::time::Duration::from_secs(4), "ttl 2s + ...")
            .with("per_waiter", false)];
        let merged = check_params("lock-liveness", &json!({}), &promises);
        assert_eq!(
            merged,
            json!({"within": "4s", "bound": "ttl 2s + ...", "per_waiter": false})
        );
        // The scenario's own bound replaces the derivation, which no longer applies.
        let own = check_params("lock-liveness", &json!({"within": "9s"}), &promises);
        assert_eq!(own, json!({"within": "9s", "per_waiter": false}));
        // A check the protocol does not promise keeps exactly its own parameters.
        assert_eq!(
            check_params("mutual-exclusion", &serde_json::Value::Null, &promises),
            json!({})
        );
    }
}
