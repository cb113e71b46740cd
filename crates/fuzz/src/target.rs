//! What a fuzz run fuzzes: a base scenario (a file, or a protocol's built-in default)
//! and a profile. Each seed's case is the base with that seed's drawn schedule written
//! in ([`Target::case`]); the case is what runs, so writing it to a file and running it
//! with the same seed replays the run exactly.

use super::profile::{Draw, Profile, DEFAULT_PROFILE, PROFILE_NAMES};
use std::collections::BTreeSet;
use std::time::Duration;
use tenure_core::{format_duration, Assumptions, Broken, Cluster, Observation, ProtocolInfo};
use tenure_scenario::{
    CheckSpec, ClusterSpec, Expectation, NetworkSpec, ProtocolSpec, Scenario, ScenarioError,
};
use tenure_sim::play::{Prepared, RunOptions};
use tenure_sim::Protocols;

/// A base scenario and the profile its seeds draw faults from.
#[derive(Clone, Debug)]
pub struct Target {
    /// The scenario without its drawn schedule (its own faults, clocks and network stay).
    pub base: Scenario,
    pub profile: Profile,
    pub cluster: Cluster,
    pub info: &'static ProtocolInfo,
    /// The protocols the case may name (the base's among them).
    pub protocols: Protocols,
    /// The environment the base's protocol is designed for (with the base's parameters).
    pub assumptions: Assumptions,
    /// The longest liveness bound the base's checks judge (`within`), if any: the
    /// liveness phase lasts at least twice that, so every bound is judged over a window as
    /// long as itself.
    pub liveness_bound: Option<Duration>,
}

/// How long the default scenario runs before the liveness phase is added.
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

impl Target {
    /// Fuzzes `scenario`: its `[profile]` table (if any) gives the profile; `profile`
    /// (`--profile`) replaces that table's base name and keeps its knobs; neither means
    /// [`DEFAULT_PROFILE`]. Validates the scenario against its protocol.
    pub fn from_scenario(
        protocols: &Protocols,
        mut scenario: Scenario,
        profile: Option<&str>,
    ) -> Result<Target, ScenarioError> {
        if let Some(name) = profile {
            if Profile::named(name).is_none() {
                return Err(ScenarioError {
                    file: "--profile".to_string(),
                    line: None,
                    column: None,
                    field: String::new(),
                    message: format!(
                        "unknown profile `{name}`; known profiles: {}",
                        PROFILE_NAMES.join(", ")
                    ),
                });
            }
            let mut table = scenario
                .profile
                .take()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            table.insert("name".into(), name.into());
            scenario.profile = Some(serde_json::Value::Object(table));
        }
        let profile = match Profile::from_scenario(&scenario)? {
            Some(p) => p,
            None => Profile::named(DEFAULT_PROFILE).expect("the default profile exists"),
        };
        let prepared = Prepared::new(scenario.clone(), protocols)?;
        let liveness_bound = liveness_bound(&scenario, &prepared.promises);
        let scenario = fit_liveness(scenario, liveness_bound);
        Ok(Target {
            liveness_bound,
            assumptions: prepared.assumptions.clone(),
            protocols: protocols.clone(),
            cluster: prepared.cluster.clone(),
            info: prepared.info,
            base: scenario,
            profile,
        })
    }

    /// Fuzzes `protocol`'s `variant` on its default cluster and parameters, checking the
    /// properties the protocol is about (see [`default_scenario`]).
    pub fn for_protocol(
        protocols: &Protocols,
        protocol: &str,
        variant: Option<&str>,
        profile: Option<&str>,
    ) -> Result<Target, ScenarioError> {
        // What the protocol declares reaches the checks unchanged: a tolerance a check
        // needs is the protocol's to declare in its promise, derived from its own
        // parameters, never the profile's to add.
        let scenario = default_scenario(protocols, protocol, variant)?;
        Target::from_scenario(protocols, scenario, profile)
    }

    /// The case seed `seed` runs: the base with the seed's drawn schedule, a default
    /// seed of `seed`, and no `[profile]`. The schedule is drawn within the protocol's
    /// declared assumptions unless the profile says `beyond_assumptions`.
    pub fn case(&self, seed: u64) -> Scenario {
        let drawn = self.draw(seed);
        let mut case = drawn.apply_to(&self.base);
        case.description = Some(format!(
            "drawn by tenure fuzz from profile `{}` for seed {seed}",
            self.profile.name
        ));
        case
    }

    /// The schedule seed `seed` draws (see [`draw`]).
    pub fn draw(&self, seed: u64) -> crate::Drawn {
        draw(
            &self.profile,
            &self.assumptions,
            self.liveness_bound,
            &self.cluster,
            self.info.roles,
            self.base.duration,
            seed,
        )
    }

    /// The case of `seed`, ready to run.
    pub fn prepare(&self, seed: u64) -> Prepared {
        // The base validated and the schedule names only nodes of its cluster, so a
        // case that does not validate is a bug in the drawing.
        Prepared::new(self.case(seed), &self.protocols)
            .unwrap_or_else(|e| panic!("the drawn case of seed {seed} is invalid: {e}"))
    }

    /// `protocol/variant` for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.base.protocol.name, self.base.protocol.variant)
    }
}

/// The longest liveness bound (`within`) `scenario`'s checks judge, with the protocol's
/// promised parameters under the scenario's own.
pub fn liveness_bound(scenario: &Scenario, promises: &[tenure_core::Promise]) -> Option<Duration> {
    scenario
        .checks
        .iter()
        .filter_map(|c| {
            let params = tenure_sim::check_params(&c.name, &c.params, promises);
            let within = params.get("within")?.as_str()?;
            tenure_core::parse_duration(within).ok()
        })
        .max()
}

/// `scenario`, lasting at least twice the liveness bound: a run without faults is calm
/// from its start, and must last the longest bound twice over to judge it.
pub fn fit_liveness(mut scenario: Scenario, bound: Option<Duration>) -> Scenario {
    if let Some(bound) = bound {
        scenario.duration = scenario.duration.max(bound * 2);
    }
    scenario
}

/// The schedule seed `seed` draws from `profile` for a run of `duration` on `cluster`:
/// within `assumptions` (unless the profile says `beyond_assumptions`), with a liveness
/// phase at least twice `liveness_bound`, aimed by what each of the protocol's `roles`
/// declares it is. The one draw every path uses (`tenure fuzz`, `--print`, the
/// library's `Simulation`).
pub fn draw(
    profile: &Profile,
    assumptions: &Assumptions,
    liveness_bound: Option<Duration>,
    cluster: &Cluster,
    roles: &[tenure_core::RoleInfo],
    duration: Duration,
    seed: u64,
) -> crate::Drawn {
    let mut profile = profile.within(assumptions);
    if let Some(bound) = liveness_bound {
        profile.liveness = profile.liveness.max(bound * 2);
    }
    profile.draw_for(seed, cluster, roles, duration)
}

/// The built-in scenario `tenure fuzz --protocol NAME` runs: the default cluster and
/// parameters, 10 s (plus the liveness phase), and the checks the protocol is about: the
/// union of the `breaks` of all its variants, plus `leader-liveness` where nodes elect
/// leaders and `lock-liveness` where clients hold locks (found by a short calm probe run).
/// A protocol none of whose variants breaks anything gets the safety check of what it
/// observes (`single-leader-per-term`, `mutual-exclusion`, `exactly-once`).
pub fn default_scenario(
    protocols: &Protocols,
    protocol: &str,
    variant: Option<&str>,
) -> Result<Scenario, ScenarioError> {
    let bad = |message: String| ScenarioError {
        file: "--protocol".to_string(),
        line: None,
        column: None,
        field: String::new(),
        message,
    };
    let Some(entry) = protocols.lookup(protocol) else {
        return Err(bad(format!(
            "unknown protocol `{protocol}`; known protocols: {}",
            protocols.names().join(", ")
        )));
    };
    let info = entry.info;
    let variant = variant.unwrap_or(info.variants[0].name);
    if info.variant(variant).is_none() {
        let known: Vec<&str> = info.variants.iter().map(|v| v.name).collect();
        return Err(bad(format!(
            "protocol `{protocol}` has no variant `{variant}`; its variants are: {}",
            known.join(", ")
        )));
    }
    let mut scenario = Scenario {
        file: format!("{protocol}-{variant} (built in)"),
        source: String::new(),
        name: format!("{protocol}-{variant}-fuzz"),
        description: None,
        seed: 0,
        duration: DEFAULT_DURATION,
        protocol: ProtocolSpec {
            name: protocol.to_string(),
            variant: variant.to_string(),
            params: serde_json::json!({}),
        },
        cluster: ClusterSpec::default(),
        network: NetworkSpec::default(),
        clocks: Vec::new(),
        disk: Default::default(),
        processing: Default::default(),
        faults: Vec::new(),
        checks: Vec::new(),
        expect: Expectation::Pass,
        expect_vacuous: Vec::new(),
        profile: None,
    };
    // What the protocol promises (with bounds derived from its parameters), plus what
    // this variant is known to break, so a broken variant is judged on its bug.
    let prepared = Prepared::new(scenario.clone(), protocols)?;
    let mut checks: Vec<CheckSpec> = prepared
        .promises
        .iter()
        .map(|p| CheckSpec {
            name: p.check.to_string(),
            params: serde_json::json!({}),
        })
        .collect();
    let declared = !checks.is_empty();
    let mut names: Vec<&str> = Vec::new();
    let this_variant = info.variant(variant).map(|v| v.breaks).unwrap_or(&[]);
    let breaks: Vec<&str> = if declared {
        this_variant.to_vec()
    } else {
        info.variants
            .iter()
            .flat_map(|v| v.breaks.iter().copied())
            .collect()
    };
    for check in breaks {
        if !names.contains(&check) && !checks.iter().any(|c| c.name == check) {
            names.push(check);
        }
    }
    let leader_role = if declared {
        None
    } else {
        // A protocol that declares no promises: what a calm run shows it observes.
        let (seen, leader_role) = probe(protocols, &scenario)?;
        let leads = seen.contains("leader");
        let holds = seen.contains("holds");
        if names.is_empty() {
            if leads {
                names.push("single-leader-per-term");
            }
            if holds {
                names.push("mutual-exclusion");
            }
            if seen.contains("applied") {
                names.push("exactly-once");
            }
        }
        let liveness = [(leads, "leader-liveness"), (holds, "lock-liveness")];
        for (wanted, check) in liveness {
            if wanted && !names.contains(&check) {
                names.push(check);
            }
        }
        leader_role
    };
    if names.is_empty() && checks.is_empty() {
        return Err(bad(format!(
            "protocol `{protocol}` observes nothing tenure can check; fuzz a scenario file with `checks` instead"
        )));
    }
    checks.extend(names.into_iter().map(|name| CheckSpec {
        name: name.to_string(),
        // Leaders are counted among the nodes that elect them, not every node.
        params: match (name, &leader_role) {
            ("leader-liveness", Some(role)) => serde_json::json!({ "role": role }),
            _ => serde_json::json!({}),
        },
    }));
    scenario.checks = checks;
    Ok(scenario)
}

/// What a calm seed-0 run of `scenario` shows: the observation kinds it records, and
/// the role its leaders and followers play when that is one role of a cluster of
/// several (so liveness counts a majority of that role, not of every node).
fn probe(
    protocols: &Protocols,
    scenario: &Scenario,
) -> Result<(BTreeSet<&'static str>, Option<String>), ScenarioError> {
    let prepared = Prepared::new(scenario.clone(), protocols)?;
    let report = prepared.run(0, &RunOptions::default());
    let records = &report.history.records;
    let kinds = records.iter().map(|r| r.obs.kind()).collect();
    let roles: BTreeSet<&str> = records
        .iter()
        .filter(|r| {
            matches!(
                r.obs,
                Observation::Leader { .. } | Observation::Follower { .. }
            )
        })
        .map(|r| prepared.cluster.role_of(r.node))
        .collect();
    let role = match roles.into_iter().collect::<Vec<_>>().as_slice() {
        [one] if prepared.cluster.roles().len() > 1 => Some(one.to_string()),
        _ => None,
    };
    Ok((kinds, role))
}

/// The declared assumptions a scenario's faults go beyond: drifts above `max_drift`,
/// wall-clock steps above `max_wall_jump`, pauses above `max_pause`, and restarts sooner
/// than `min_restart_delay` after a crash. Empty when every fault is within them.
pub fn broken_assumptions(case: &Scenario, assumptions: &Assumptions) -> Vec<Broken> {
    use tenure_scenario::{Fault, NodeSel};
    let who = |n: &NodeSel| match n {
        NodeSel::Id(i) => format!("n{i}"),
        role => format!("the {role}"),
    };
    let mut out = Vec::new();
    for c in &case.clocks {
        out.extend(assumptions.drift(c.drift, format!("drift {} of {}", c.drift, c.node)));
    }
    out.extend(assumptions.latency(
        case.network.latency.max(),
        format!(
            "message delay up to {}",
            format_duration(case.network.latency.max())
        ),
    ));
    for l in &case.network.links {
        if let Some(latency) = &l.latency {
            out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "delay up to {} on the link {} -> {}",
                    format_duration(latency.max()),
                    l.from,
                    l.to
                ),
            ));
        }
    }
    for e in &case.faults {
        match &e.fault {
            Fault::Network {
                latency: Some(latency),
                ..
            } => out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "message delay up to {} from {}",
                    format_duration(latency.max()),
                    format_duration(e.at)
                ),
            )),
            Fault::SlowLink {
                from,
                node,
                latency,
                ..
            } => out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "delay up to {} on the link {} -> {} from {}",
                    format_duration(latency.max()),
                    who(from),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            _ => {}
        }
    }
    let mut crashed: Vec<(String, std::time::Duration)> = Vec::new();
    for e in &case.faults {
        match &e.fault {
            Fault::ClockDrift { node, drift } => out.extend(assumptions.drift(
                *drift,
                format!(
                    "drift {drift} of {} at {}",
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::ClockJump { node, by } => {
                let size = std::time::Duration::from_nanos(by.0.unsigned_abs());
                out.extend(assumptions.wall_jump(
                    size,
                    format!(
                        "wall-clock step {}{} of {} at {}",
                        if by.0 < 0 { "-" } else { "+" },
                        format_duration(size),
                        who(node),
                        format_duration(e.at)
                    ),
                ))
            }
            // A stalled clock stands still while true time runs: for its length, a rate
            // error of 100%, past any declared drift bound.
            Fault::ClockStall { node, duration } => out.extend(assumptions.drift(
                1.0,
                format!(
                    "clock stall {} of {} at {} (its clock stands still: a rate error of 100% for that long)",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            // A slew changes the wall clock's rate by `ppm` and moves it by `by` in all.
            Fault::ClockSlew { node, by, ppm } => {
                let size = std::time::Duration::from_nanos(by.0.unsigned_abs());
                out.extend(assumptions.wall_jump(
                    size,
                    format!(
                        "wall-clock slew {}{} of {} at {}",
                        if by.0 < 0 { "-" } else { "+" },
                        format_duration(size),
                        who(node),
                        format_duration(e.at)
                    ),
                ));
                out.extend(assumptions.drift(
                    ppm / 1e6,
                    format!(
                        "wall-clock slew rate {ppm}ppm of {} at {}",
                        who(node),
                        format_duration(e.at)
                    ),
                ));
            }
            Fault::DiskStall { node, duration } => out.extend(assumptions.pause(
                *duration,
                format!(
                    "disk stall {} of {} at {} (its handlers wait as in a pause)",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::Pause { node, duration } => out.extend(assumptions.pause(
                *duration,
                format!(
                    "pause {} of {} at {}",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::Partition { .. }
            | Fault::Isolate { .. }
            | Fault::Cut { .. }
            | Fault::OneWay { .. }
            | Fault::Bridge { .. } => out.extend(assumptions.network_fault(format!(
                "a {} at {}",
                e.fault.kind(),
                format_duration(e.at)
            ))),
            Fault::Network {
                loss: Some(loss), ..
            } if *loss > 0.0 => out.extend(assumptions.network_fault(format!(
                "message loss {loss} from {}",
                format_duration(e.at)
            ))),
            Fault::Crash { node } => crashed.push((who(node), e.at)),
            Fault::Restart { node } => {
                let name = who(node);
                if let Some(i) = crashed.iter().position(|(n, _)| *n == name) {
                    let (_, at) = crashed.remove(i);
                    let down = e.at.saturating_sub(at);
                    out.extend(assumptions.restart_delay(
                        down,
                        format!(
                            "{name} restarted {} after its crash at {}",
                            format_duration(down),
                            format_duration(at)
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}
