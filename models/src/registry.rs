//! A catalogue as the explorer sees it ([`Models`]): protocols by name, each with the
//! model settings it declares ([`tenure_core::Configurable::model`]: the bounds under
//! which exploring it means something, a bounded workload, its default checks), and
//! [`Models::check_model`] / [`Models::walk_model`] to run a [`Query`] against it.
//!
//! The zoo is listed once (tenure-zoo); this crate names no protocol. What each protocol
//! can and cannot show here is written in its spec ([`ModelSpec::scope`],
//! [`ModelSpec::out_of_scope`]). Protocols whose promises are statements about
//! durations and clock drift (`leader-lease`, `redlock`) declare no spec and say why:
//! here timers fire in any order and clocks only leap, so a lease that is safe *because*
//! its holder stops in time cannot be told from one that is not.

use crate::property::{
    checker, copies_in_flight_at_most, one_leader_at_a_time, steps_down_on_higher_term,
    stored_at_most,
};
use crate::{Bounds, Explorer, Progress, Report, WalkDepth, WalkReport};
use std::fmt;
use std::ops::Range;
use tenure_core::model::ModelSpec;
use tenure_core::{Catalogue, Cluster, Configurable, ProtocolInfo, RoleSpec, Visitor};

/// What to explore: a protocol variant on a cluster, with parameters, bounds and the
/// properties to judge. [`Query::new`] fills in the registry's defaults.
#[derive(Clone, Debug)]
pub struct Query {
    pub protocol: String,
    pub variant: String,
    pub cluster: Cluster,
    /// The protocol's parameters (JSON, as a scenario's `[protocol.params]`).
    pub params: serde_json::Value,
    pub bounds: Bounds,
    /// Protocols with terms (raft): states in which a node stored a term above this are
    /// pruned. Other protocols ignore it.
    pub max_term: u64,
    /// The stored key that `max_term` bounds (the model's `ModelSpec::term_key`), if
    /// the protocol has terms.
    pub term_key: Option<&'static str>,
    /// tenure-check checker names, or the model's own properties
    /// ([`MODEL_PROPERTIES`]).
    pub checks: Vec<String>,
    /// The protocol's declared default roles (for `set_nodes`/`set_roles`).
    pub roles: &'static [(&'static str, u32)],
    /// Random walks: shrink the counterexample found ([`Explorer::shrinking`]).
    pub shrink: bool,
}

/// The model's own properties (not tenure-check checkers): a state invariant and a
/// step invariant. See [`crate::property`].
pub const MODEL_PROPERTIES: &[&str] = &["one-leader-at-a-time", "steps-down-on-higher-term"];

/// A query the registry cannot run: `field` names what is wrong (`protocol`,
/// `variant`, `roles`, `nodes`, `checks`, `params.<name>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    pub field: String,
    pub message: String,
}

impl ModelError {
    fn new(field: &str, message: impl Into<String>) -> ModelError {
        ModelError {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ModelError {}

/// A protocol the explorer can run, with the model settings it declares
/// ([`tenure_core::Configurable::model`]).
pub struct ModelEntry {
    info: &'static ProtocolInfo,
    spec: ModelSpec,
    explore: ExploreFn,
    walk: WalkFn,
}

type ExploreFn = fn(&Query, &mut dyn FnMut(&Progress)) -> Result<Report, ModelError>;
type WalkFn = fn(&Query, Range<u64>, WalkDepth) -> Result<WalkReport, ModelError>;

/// Random walks take this many events by default ([`WALK_DEPTH`]): steps other than
/// timer firings.
pub const WALK_EVENTS: usize = 60;

/// How deep random walks go by default ([`Models::query_for_walks`],
/// `check-model --walk` without `--max-depth`): [`WALK_EVENTS`] events, and at most
/// `WALK_EVENTS x (1 + timers pending at the start)` steps in all (see
/// [`WalkDepth::Events`] for why events and not steps). Before, the default was 60
/// steps of any kind, which left a protocol whose timers fire between every two
/// events (a lease renewed by a heartbeat, a client's retry) only a few events deep.
pub const WALK_DEPTH: WalkDepth = WalkDepth::Events(WALK_EVENTS);

/// Random walks multiply the exhaustive fault budgets by this ([`Query::for_walks`]).
pub const WALK_BUDGET_FACTOR: u32 = 4;

impl ModelEntry {
    /// The protocol's name, roles and variants.
    pub fn info(&self) -> &'static ProtocolInfo {
        self.info
    }

    /// The settings the protocol declares.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// The checks judged by default.
    pub fn default_checks(&self) -> &'static [&'static str] {
        self.spec.checks
    }

    /// Whether the model can show `variant` failing (see [`ModelSpec::out_of_scope`]).
    pub fn in_scope(&self, variant: &str) -> bool {
        self.out_of_scope(variant).is_none()
    }

    /// Why random walks are not expected to find `variant`'s failure though the search
    /// shows it, if the model declared so (see [`ModelSpec::walks_miss`]).
    pub fn walks_miss(&self, variant: &str) -> Option<&'static str> {
        reason_for(self.spec.walks_miss, variant)
    }

    /// Why the model cannot show `variant` failing, if it declared so.
    pub fn out_of_scope(&self, variant: &str) -> Option<&'static str> {
        reason_for(self.spec.out_of_scope, variant)
    }
}

/// The reason a (variant, reason) list gives `variant`, if it lists it.
fn reason_for(list: &[(&str, &'static str)], variant: &str) -> Option<&'static str> {
    list.iter()
        .find(|(v, _)| *v == variant)
        .map(|(_, why)| *why)
}

/// The protocols of a catalogue as the explorer sees them: those that declare model
/// settings, and for the others the reason they give.
pub struct Models {
    entries: Vec<ModelEntry>,
    not_modelled: Vec<(&'static str, &'static str)>,
}

impl Models {
    pub fn of<C: Catalogue>(catalogue: &C) -> Models {
        struct Build(Models);
        impl Visitor for Build {
            fn visit<P: Configurable>(&mut self) {
                match P::model() {
                    Ok(spec) => self.0.entries.push(ModelEntry {
                        info: P::info(),
                        spec,
                        explore: explore::<P>,
                        walk: walk::<P>,
                    }),
                    Err(why) => self.0.not_modelled.push((P::info().name, why)),
                }
            }
        }
        let mut build = Build(Models {
            entries: Vec::new(),
            not_modelled: Vec::new(),
        });
        catalogue.visit(&mut build);
        build.0
    }

    /// Every protocol the explorer runs, in catalogue order.
    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    /// Every protocol of the catalogue, explored or not, in catalogue order of each kind.
    pub fn protocol_names(&self) -> Vec<&'static str> {
        let explored = self.entries.iter().map(|e| e.info.name);
        explored
            .chain(self.not_modelled.iter().map(|(n, _)| *n))
            .collect()
    }

    /// The protocols that declare no model settings, each with the reason it gives.
    pub fn not_modelled(&self) -> &[(&'static str, &'static str)] {
        &self.not_modelled
    }

    /// The entry for `protocol`, if the explorer runs it.
    pub fn lookup(&self, protocol: &str) -> Option<&ModelEntry> {
        self.entries.iter().find(|e| e.info.name == protocol)
    }

    fn entry(&self, protocol: &str) -> Result<&ModelEntry, ModelError> {
        self.lookup(protocol).ok_or_else(|| {
            let modelled: Vec<&str> = self.entries.iter().map(|e| e.info.name).collect();
            match self.not_modelled.iter().find(|(n, _)| *n == protocol) {
                // A real protocol without model settings: say so, not "unknown".
                Some((_, why)) => ModelError::new(
                    "protocol",
                    format!(
                        "`{protocol}` is a protocol the model checker does not explore: {why}; \
                         `tenure fuzz --protocol {protocol}` simulates it. {}",
                        if modelled.is_empty() {
                            "No protocol of this catalogue declares model settings (a protocol \
                             declares them in `Configurable::model`; the book's author guide \
                             shows how)"
                                .to_string()
                        } else {
                            format!("The model checker explores: {}", modelled.join(", "))
                        }
                    ),
                ),
                None => ModelError::new(
                    "protocol",
                    format!(
                        "unknown protocol `{protocol}`; known protocols: {}",
                        self.protocol_names().join(", ")
                    ),
                ),
            }
        })
    }

    /// Explores `query` exhaustively (BFS within its bounds); the first violation found
    /// is a shortest counterexample.
    pub fn check_model(&self, query: &Query) -> Result<Report, ModelError> {
        self.check_model_with(query, &mut |_| {})
    }

    /// [`Models::check_model`] with a progress callback (see [`Explorer::explore_with`]).
    pub fn check_model_with(
        &self,
        query: &Query,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Report, ModelError> {
        (self.entry(&query.protocol)?.explore)(query, progress)
    }

    /// Random walks of `query`, one per seed, each at most `max_depth` steps.
    pub fn walk_model(
        &self,
        query: &Query,
        seeds: Range<u64>,
        max_depth: usize,
    ) -> Result<WalkReport, ModelError> {
        self.walk_model_to(query, seeds, WalkDepth::Steps(max_depth))
    }

    /// Random walks of `query`, one per seed, each as deep as `depth` allows (the
    /// default: [`WALK_DEPTH`]).
    pub fn walk_model_to(
        &self,
        query: &Query,
        seeds: Range<u64>,
        depth: WalkDepth,
    ) -> Result<WalkReport, ModelError> {
        (self.entry(&query.protocol)?.walk)(query, seeds, depth)
    }

    /// `variant` of `protocol` with the protocol's declared defaults: its default
    /// cluster, bounds, parameters and checks.
    pub fn query(&self, protocol: &str, variant: &str) -> Result<Query, ModelError> {
        let entry = self.entry(protocol)?;
        if entry.info().variant(variant).is_none() {
            let names: Vec<&str> = entry.info().variants.iter().map(|v| v.name).collect();
            return Err(ModelError::new(
                "variant",
                format!(
                    "{protocol} has no variant `{variant}`; known: {}",
                    names.join(", ")
                ),
            ));
        }
        let spec = &entry.spec;
        let roles = spec
            .roles
            .iter()
            .map(|(role, count)| RoleSpec::new(role.to_string(), *count))
            .collect();
        Ok(Query {
            protocol: protocol.to_string(),
            variant: variant.to_string(),
            cluster: Cluster::new(roles).map_err(|e| {
                ModelError::new("roles", format!("the declared default roles: {e}"))
            })?,
            params: json_params(spec.params)?,
            bounds: spec.bounds_for(variant).clone(),
            max_term: spec.max_term,
            term_key: spec.term_key,
            checks: spec.checks.iter().map(|c| c.to_string()).collect(),
            roles: spec.roles,
            shrink: false,
        })
    }

    /// Like [`Models::query`], sized for random walks: depth [`WALK_EVENTS`] (events:
    /// [`Models::walk_model_to`] with [`WALK_DEPTH`] walks this query by default), every fault
    /// budget the exhaustive default has multiplied by [`WALK_BUDGET_FACTOR`] (a zero
    /// budget stays zero), and a longer workload (more acquire attempts or
    /// operations). A walk samples one path, so it can afford what exhaustive search
    /// cannot; the extra room is what lets it reach the rarer interleavings.
    pub fn query_for_walks(&self, protocol: &str, variant: &str) -> Result<Query, ModelError> {
        let mut query = self.query(protocol, variant)?;
        let b = &mut query.bounds;
        b.max_depth = WALK_EVENTS;
        b.max_crashes *= WALK_BUDGET_FACTOR;
        b.max_drops *= WALK_BUDGET_FACTOR;
        b.max_duplicates *= WALK_BUDGET_FACTOR;
        b.max_leaps *= WALK_BUDGET_FACTOR;
        b.max_isolations *= WALK_BUDGET_FACTOR;
        query.params = json_params(self.entry(protocol)?.spec.walk_params)?;
        Ok(query)
    }
}

fn json_params(text: &str) -> Result<serde_json::Value, ModelError> {
    serde_json::from_str(text)
        .map_err(|e| ModelError::new("params", format!("the declared model parameters: {e}")))
}

impl Query {
    /// `n` nodes of the protocol's only role.
    pub fn set_nodes(&mut self, n: u32) -> Result<(), ModelError> {
        let [(role, _)] = self.roles else {
            return Err(ModelError::new(
                "nodes",
                format!(
                    "{} has several roles ({}); give --roles instead",
                    self.protocol,
                    role_names(self.roles)
                ),
            ));
        };
        self.cluster = Cluster::new(vec![RoleSpec::new(role.to_string(), n)])
            .map_err(|e| ModelError::new("nodes", e.to_string()))?;
        Ok(())
    }

    /// Role counts as `role=count,...` (e.g. `server=1,client=2,storage=1`); roles left
    /// out keep their default count.
    pub fn set_roles(&mut self, spec: &str) -> Result<(), ModelError> {
        let mut counts: Vec<(&str, u32)> = self.roles.to_vec();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (role, count) = part.split_once('=').ok_or_else(|| {
                ModelError::new("roles", format!("`{part}` is not of the form role=count"))
            })?;
            let count: u32 = count.trim().parse().map_err(|_| {
                ModelError::new("roles", format!("`{count}` (for {role}) is not a count"))
            })?;
            let slot = counts
                .iter_mut()
                .find(|(r, _)| *r == role.trim())
                .ok_or_else(|| {
                    ModelError::new(
                        "roles",
                        format!(
                            "{} has no role `{role}`; its roles: {}",
                            self.protocol,
                            role_names(self.roles)
                        ),
                    )
                })?;
            slot.1 = count;
        }
        let roles = counts
            .iter()
            .map(|(role, count)| RoleSpec::new(role.to_string(), *count))
            .collect();
        self.cluster = Cluster::new(roles).map_err(|e| ModelError::new("roles", e.to_string()))?;
        Ok(())
    }
}

fn role_names(roles: &[(&str, u32)]) -> String {
    let names: Vec<&str> = roles.iter().map(|(r, _)| *r).collect();
    names.join(", ")
}

fn explore<P: Configurable>(
    query: &Query,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Report, ModelError> {
    Ok(build::<P>(query)?.explore_with(progress))
}

fn walk<P: Configurable>(
    query: &Query,
    seeds: Range<u64>,
    depth: WalkDepth,
) -> Result<WalkReport, ModelError> {
    Ok(build::<P>(query)?
        .shrinking(query.shrink)
        .walk_to(seeds, depth))
}

/// The explorer for `query`: parameters read and checked as a scenario's would be,
/// constraints (one copy of each message in flight beyond the duplicate budget, the
/// term bound) and the checks.
fn build<P: Configurable>(query: &Query) -> Result<Explorer<P>, ModelError> {
    let info = P::info();
    if info.variant(&query.variant).is_none() {
        return Err(ModelError::new(
            "variant",
            format!("{} has no variant `{}`", info.name, query.variant),
        ));
    }
    for spec in query.cluster.roles() {
        if info.role(&spec.role).is_none() {
            return Err(ModelError::new(
                "roles",
                format!("{} has no role `{}`", info.name, spec.role),
            ));
        }
    }
    let params: P::Params = serde_json::from_value(query.params.clone())
        .map_err(|e| ModelError::new("params", e.to_string()))?;
    let config = P::configure_named(params, &query.variant, &query.cluster).map_err(|e| {
        let field = if e.field.starts_with("cluster.") {
            "roles".to_string()
        } else {
            format!("params.{}", e.field)
        };
        ModelError::new(&field, e.message)
    })?;
    if query.checks.is_empty() {
        return Err(ModelError::new("checks", "give at least one check"));
    }
    // Byzantine nodes only within what the protocol declares it tolerates: beyond it,
    // a violation would say nothing about the protocol (the simulator judges such a
    // run beyond its assumptions).
    let byzantine = query.bounds.max_byzantine;
    if byzantine > 0 {
        if let Some(broken) = P::assumptions(&config).byzantine(
            byzantine,
            format!(
                "{byzantine} Byzantine node{}",
                if byzantine == 1 { "" } else { "s" }
            ),
        ) {
            return Err(ModelError::new(
                "byzantine",
                format!(
                    "{}/{}: {broken}; the model checker explores only within a protocol's \
                     assumptions (a scenario with `byzantine` fault events goes beyond them \
                     in the simulator, which says so)",
                    info.name, query.variant
                ),
            ));
        }
        if query.bounds.behaviours.is_empty() {
            return Err(ModelError::new(
                "byzantine",
                "a Byzantine budget needs at least one behaviour",
            ));
        }
    }
    let copies = P::model().map_or(1, |spec| spec.copies) + query.bounds.max_duplicates;
    let mut explorer = Explorer::<P>::new(config, query.cluster.clone(), query.bounds.clone())
        .within(copies_in_flight_at_most(copies));
    if let Some(key) = P::model().ok().and_then(|spec| spec.term_key) {
        explorer = explorer.within(stored_at_most(key, query.max_term));
    }
    for name in &query.checks {
        explorer = match name.as_str() {
            "one-leader-at-a-time" => explorer.invariant(name, one_leader_at_a_time()),
            "steps-down-on-higher-term" => {
                let has_terms = P::model().ok().and_then(|spec| spec.term_key).is_some();
                let term_of = has_terms.then_some(P::message_term).ok_or_else(|| {
                    ModelError::new(
                        "checks",
                        format!(
                            "steps-down-on-higher-term needs terms, which {} has not",
                            info.name
                        ),
                    )
                })?;
                explorer.step_invariant(name, steps_down_on_higher_term(term_of))
            }
            liveness
                if tenure_check::kind_of(liveness) == Some(tenure_check::CheckKind::Liveness) =>
            {
                return Err(ModelError::new(
                    "checks",
                    format!(
                        "{liveness} judges liveness, which a bounded path cannot (it is not \
                         the end of a run); use the simulator (`tenure run`)"
                    ),
                ))
            }
            other => {
                // The parameters the protocol's model declares for it (its promise's), if any.
                let params = match P::model().ok().and_then(|spec| {
                    spec.check_params
                        .iter()
                        .find(|(c, _)| *c == other)
                        .map(|(_, p)| *p)
                }) {
                    Some(text) => serde_json::from_str(text).map_err(|e| {
                        ModelError::new(
                            "checks",
                            format!("the declared parameters of {other}: {e}"),
                        )
                    })?,
                    None => serde_json::Value::Null,
                };
                let factory = checker(other, &params, &query.cluster).map_err(|e| {
                    ModelError::new(
                        "checks",
                        format!("{e} (the model also knows {})", MODEL_PROPERTIES.join(", ")),
                    )
                })?;
                explorer.check(factory)
            }
        };
    }
    Ok(explorer)
}
