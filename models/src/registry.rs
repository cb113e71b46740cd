//! The zoo as the explorer sees it: protocols by name, each with the model settings
//! under which exploring it means something, and [`check_model`] / [`walk_model`] to
//! run a [`Query`] against it.
//!
//! tenure-models may not depend on tenure-sim, so this is its own small name -> type
//! table; protocols are configured through [`tenure_core::Configurable::configure`],
//! with their default parameters except for what bounds the workload (one acquire
//! attempt per lock client, one operation per idempotency client).
//!
//! What each entry can and cannot tell apart is written down in the entry
//! ([`ModelEntry::scope`], [`ModelEntry::out_of_scope`]). Left out of the registry:
//! `leader-lease` and `redlock`, whose promises (lease safety; a majority of clocks
//! agreeing on an expiry) are statements about durations and clock drift. Here timers
//! fire in any order and clocks only leap, so a lease that is safe *because* its
//! holder stops in time cannot be told from one that is not: those stay with the
//! simulator, which models true time, drift and skew.

use crate::property::{
    checker, copies_in_flight_at_most, one_leader_at_a_time, steps_down_on_higher_term,
    stored_at_most,
};
use crate::{Bounds, ClockModel, Explorer, Progress, Report, SeenModel, TimerModel, WalkReport};
use serde_json::json;
use std::fmt;
use std::ops::Range;
use tenure_core::{Cluster, Configurable, ProtocolInfo, RoleSpec};
use tenure_protocols::{
    bully::Bully,
    etcd_lock::EtcdLock,
    fencing::Fencing,
    idempotency::Idempotency,
    raft::{Raft, RaftMsg, TERM_KEY},
    redis_lock::RedisLock,
    zookeeper::ZooKeeper,
};

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
    /// tenure-check checker names, or the model's own properties
    /// ([`MODEL_PROPERTIES`]).
    pub checks: Vec<String>,
}

/// The model's own properties (not tenure-check checkers): a state invariant and a
/// step invariant. See [`crate::property`].
pub const MODEL_PROPERTIES: &[&str] = &["one-leader-at-a-time", "steps-down-on-higher-term"];

/// Checkers that judge liveness ("eventually"), which a bounded path cannot.
const LIVENESS: &[&str] = &["leader-liveness", "lock-liveness"];

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

/// A protocol of the zoo the explorer can run, with its model settings.
pub struct ModelEntry {
    info: fn() -> &'static ProtocolInfo,
    /// What the model covers for this protocol, in a sentence or two.
    pub scope: &'static str,
    /// Broken variants whose failure the model cannot show, and why (they need real
    /// timing, or their property is liveness).
    pub out_of_scope: &'static [(&'static str, &'static str)],
    /// Model properties that stand for a simulator checker, as (property, checker):
    /// where the true-time checker cannot be judged without timing, the property that
    /// catches the same bug.
    pub stands_for: &'static [(&'static str, &'static str)],
    /// The default cluster, as (role, count).
    pub roles: &'static [(&'static str, u32)],
    defaults: fn() -> Defaults,
    explore: ExploreFn,
    walk: WalkFn,
}

type ExploreFn = fn(&Query, &mut dyn FnMut(&Progress)) -> Result<Report, ModelError>;
type WalkFn = fn(&Query, Range<u64>, usize) -> Result<WalkReport, ModelError>;

struct Defaults {
    bounds: Bounds,
    max_term: u64,
    checks: &'static [&'static str],
    params: serde_json::Value,
    /// Parameters for random walks, which are cheap and go deep: a longer workload.
    walk_params: serde_json::Value,
}

/// Random walks go this deep by default ([`Query::for_walks`]).
pub const WALK_DEPTH: usize = 60;

/// Random walks multiply the exhaustive fault budgets by this ([`Query::for_walks`]).
pub const WALK_BUDGET_FACTOR: u32 = 4;

impl ModelEntry {
    /// The protocol's name, roles and variants.
    pub fn info(&self) -> &'static ProtocolInfo {
        (self.info)()
    }

    /// The checks judged by default.
    pub fn default_checks(&self) -> &'static [&'static str] {
        (self.defaults)().checks
    }

    /// Whether the model can show `variant` failing (see [`ModelEntry::out_of_scope`]).
    pub fn in_scope(&self, variant: &str) -> bool {
        !self.out_of_scope.iter().any(|(v, _)| *v == variant)
    }
}

/// A protocol with what the explorer needs beyond [`Configurable`].
trait Modelled: Configurable {
    /// The stored key holding the node's term, bounded by [`Query::max_term`].
    const TERM_KEY: Option<&'static str> = None;
    /// The term a message carries, for `steps-down-on-higher-term`.
    const TERM_OF: Option<fn(&Self::Msg) -> u64> = None;
}

impl Modelled for Raft {
    const TERM_KEY: Option<&'static str> = Some(TERM_KEY);
    const TERM_OF: Option<fn(&RaftMsg) -> u64> = Some(RaftMsg::term);
}
impl Modelled for Bully {}
impl Modelled for RedisLock {}
impl Modelled for Fencing {}
impl Modelled for EtcdLock {}
impl Modelled for ZooKeeper {}
impl Modelled for Idempotency {}

fn lock_bounds(max_leaps: u32, max_duplicates: u32, max_depth: usize) -> Bounds {
    Bounds {
        max_depth,
        max_leaps,
        max_duplicates,
        clock: ClockModel::Frozen,
        ..Bounds::default()
    }
}

/// Timers only when the network is quiet: for the session/lease protocols whose
/// keep-alives otherwise interleave with everything.
fn quiet_lock_bounds(max_depth: usize) -> Bounds {
    Bounds {
        timers: TimerModel::Quiet,
        max_states: 300_000,
        ..lock_bounds(1, 0, max_depth)
    }
}

static ENTRIES: &[ModelEntry] = &[
    ModelEntry {
        info: Raft::info,
        scope: "elections with votes, terms and crashes; messages delivered, lost or \
                duplicated in any order, election timers firing at any point",
        out_of_scope: &[],
        stands_for: &[("steps-down-on-higher-term", "single-leader-at-a-time")],
        roles: &[("server", 3)],
        defaults: || Defaults {
            bounds: Bounds {
                max_depth: 8,
                max_crashes: 1,
                clock: ClockModel::Frozen,
                seen: SeenModel::Leaders,
                ..Bounds::default()
            },
            max_term: 2,
            checks: &["single-leader-per-term", "steps-down-on-higher-term"],
            params: json!({}),
            walk_params: json!({}),
        },
        explore: explore::<Raft>,
        walk: walk::<Raft>,
    },
    ModelEntry {
        info: Bully::info,
        scope: "elections with timeouts that are longer than any round trip (timers fire \
                only when no message is in flight); a lost message or a free timer \
                order makes a wrong failure detector",
        out_of_scope: &[],
        stands_for: &[],
        roles: &[("node", 3)],
        defaults: || Defaults {
            bounds: Bounds {
                timers: TimerModel::Quiet,
                ..Bounds::default()
            },
            max_term: 0,
            checks: &["one-leader-at-a-time"],
            params: json!({}),
            walk_params: json!({}),
        },
        explore: explore::<Bully>,
        walk: walk::<Bully>,
    },
    ModelEntry {
        info: RedisLock::info,
        scope: "one lock server, clients making one acquire attempt each; no time leap by \
                default (a TTL never expires), a duplicated message can arrive late",
        out_of_scope: &[(
            "no-ttl",
            "lock-liveness is liveness: a bounded path cannot show `never`",
        )],
        // Timing is left free in a model, so actions at one logical instant cannot
        // interleave in true time: the model judges the belief, which the actions
        // follow here (a client acts right after it believes it holds).
        stands_for: &[("mutual-exclusion-belief", "mutual-exclusion")],
        roles: &[("server", 1), ("client", 3), ("storage", 1)],
        defaults: || Defaults {
            bounds: lock_bounds(0, 1, 16),
            max_term: 0,
            checks: &["mutual-exclusion-belief"],
            params: json!({ "max_attempts": 1 }),
            walk_params: json!({ "max_attempts": 6 }),
        },
        explore: explore::<RedisLock>,
        walk: walk::<RedisLock>,
    },
    ModelEntry {
        info: Fencing::info,
        scope: "one lock server issuing tokens, a fenced (or unfenced) storage, clients \
                making one acquire attempt each; time may leap once, which pauses \
                whoever does not run past the TTL",
        out_of_scope: &[],
        stands_for: &[],
        roles: &[("server", 1), ("client", 2), ("storage", 1)],
        defaults: || Defaults {
            bounds: lock_bounds(1, 0, 40),
            max_term: 0,
            checks: &["fencing-safety", "no-lost-update"],
            params: json!({ "max_attempts": 1 }),
            walk_params: json!({ "max_attempts": 6 }),
        },
        explore: explore::<Fencing>,
        walk: walk::<Fencing>,
    },
    ModelEntry {
        info: EtcdLock::info,
        scope: "one KV server with leases and revisions, clients making one acquire \
                attempt each, a fenced storage; time may leap once (lease expiry); \
                keep-alives make the space grow with depth, so it is depth-bounded",
        out_of_scope: &[
            (
                "no-keepalive",
                "its lease expires because the work outlasts the TTL; with free timing the \
             correct client is paused past its TTL just the same, so only the \
             simulator's durations tell the two apart",
            ),
            (
                "no-key-check",
                "two holders need a waiter's lease to expire while it waits, a third client \
             queued behind it, and the holder's release after that: three clients and \
             more depth than these bounds (two clients, depth 20); the simulator's \
             scenario and fuzzing show it",
            ),
        ],
        stands_for: &[],
        roles: &[("server", 1), ("client", 2), ("storage", 1)],
        defaults: || Defaults {
            bounds: quiet_lock_bounds(20),
            max_term: 0,
            checks: &["fencing-safety", "no-lost-update"],
            params: json!({ "max_attempts": 1 }),
            walk_params: json!({ "max_attempts": 6 }),
        },
        explore: explore::<EtcdLock>,
        walk: walk::<EtcdLock>,
    },
    ModelEntry {
        info: ZooKeeper::info,
        scope: "the lock recipe on one server with sessions and ephemeral sequential \
                znodes, clients making one acquire attempt each, a fenced storage; time \
                may leap once (session expiry); pings make the space grow with depth, so \
                it is depth-bounded",
        out_of_scope: &[],
        stands_for: &[],
        roles: &[("server", 1), ("client", 2), ("storage", 1)],
        defaults: || Defaults {
            bounds: quiet_lock_bounds(40),
            max_term: 0,
            checks: &["fencing-safety", "no-lost-update"],
            params: json!({ "recipe": "lock", "max_attempts": 1 }),
            walk_params: json!({ "recipe": "lock", "max_attempts": 6 }),
        },
        explore: explore::<ZooKeeper>,
        walk: walk::<ZooKeeper>,
    },
    ModelEntry {
        info: Idempotency::info,
        scope: "one service, one client issuing one operation and retrying on its timer; \
                a crash of the service and a duplicated message",
        out_of_scope: &[],
        stands_for: &[],
        roles: &[("service", 1), ("client", 1)],
        defaults: || Defaults {
            bounds: Bounds {
                max_depth: 40,
                max_crashes: 1,
                max_duplicates: 1,
                clock: ClockModel::Frozen,
                ..Bounds::default()
            },
            max_term: 0,
            checks: &["exactly-once"],
            params: json!({ "operations": 1 }),
            walk_params: json!({ "operations": 3 }),
        },
        explore: explore::<Idempotency>,
        walk: walk::<Idempotency>,
    },
];

/// Every protocol the explorer runs, in the order `tenure list` shows the zoo.
pub fn entries() -> &'static [ModelEntry] {
    ENTRIES
}

/// The entry for `protocol`, if the explorer runs it.
pub fn lookup(protocol: &str) -> Option<&'static ModelEntry> {
    ENTRIES.iter().find(|e| e.info().name == protocol)
}

fn entry(protocol: &str) -> Result<&'static ModelEntry, ModelError> {
    lookup(protocol).ok_or_else(|| {
        let names: Vec<&str> = ENTRIES.iter().map(|e| e.info().name).collect();
        let why = match protocol {
            "leader-lease" | "redlock" => " (its promises are about durations and clock \
                 drift; they stay with the simulator: `tenure run`)"
                .to_string(),
            _ => String::new(),
        };
        ModelError::new(
            "protocol",
            format!(
                "`{protocol}` is not explored by the model{why}; known: {}",
                names.join(", ")
            ),
        )
    })
}

impl Query {
    /// `variant` of `protocol` with the registry's defaults: its default cluster,
    /// bounds, parameters and checks.
    pub fn new(protocol: &str, variant: &str) -> Result<Query, ModelError> {
        let entry = entry(protocol)?;
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
        let defaults = (entry.defaults)();
        let roles = entry
            .roles
            .iter()
            .map(|(role, count)| RoleSpec {
                role: role.to_string(),
                count: *count,
            })
            .collect();
        Ok(Query {
            protocol: protocol.to_string(),
            variant: variant.to_string(),
            cluster: Cluster::new(roles).expect("the registry's default roles are valid"),
            params: defaults.params,
            bounds: defaults.bounds,
            max_term: defaults.max_term,
            checks: defaults.checks.iter().map(|c| c.to_string()).collect(),
        })
    }

    /// Like [`Query::new`], sized for random walks: depth [`WALK_DEPTH`], every fault
    /// budget the exhaustive default has multiplied by [`WALK_BUDGET_FACTOR`] (a zero
    /// budget stays zero), and a longer workload (more acquire attempts or
    /// operations). A walk samples one path, so it can afford what exhaustive search
    /// cannot; the extra room is what lets it reach the rarer interleavings.
    pub fn for_walks(protocol: &str, variant: &str) -> Result<Query, ModelError> {
        let mut query = Query::new(protocol, variant)?;
        let b = &mut query.bounds;
        b.max_depth = WALK_DEPTH;
        b.max_crashes *= WALK_BUDGET_FACTOR;
        b.max_drops *= WALK_BUDGET_FACTOR;
        b.max_duplicates *= WALK_BUDGET_FACTOR;
        b.max_leaps *= WALK_BUDGET_FACTOR;
        query.params = (entry(protocol)?.defaults)().walk_params;
        Ok(query)
    }

    /// `n` nodes of the protocol's only role.
    pub fn set_nodes(&mut self, n: u32) -> Result<(), ModelError> {
        let entry = entry(&self.protocol)?;
        let [(role, _)] = entry.roles else {
            return Err(ModelError::new(
                "nodes",
                format!(
                    "{} has several roles ({}); give --roles instead",
                    self.protocol,
                    role_names(entry)
                ),
            ));
        };
        self.cluster = Cluster::new(vec![RoleSpec {
            role: role.to_string(),
            count: n,
        }])
        .map_err(|e| ModelError::new("nodes", e.to_string()))?;
        Ok(())
    }

    /// Role counts as `role=count,...` (e.g. `server=1,client=2,storage=1`); roles left
    /// out keep their default count.
    pub fn set_roles(&mut self, spec: &str) -> Result<(), ModelError> {
        let entry = entry(&self.protocol)?;
        let mut counts: Vec<(&str, u32)> = entry.roles.to_vec();
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
                            role_names(entry)
                        ),
                    )
                })?;
            slot.1 = count;
        }
        let roles = counts
            .iter()
            .map(|(role, count)| RoleSpec {
                role: role.to_string(),
                count: *count,
            })
            .collect();
        self.cluster = Cluster::new(roles).map_err(|e| ModelError::new("roles", e.to_string()))?;
        Ok(())
    }
}

fn role_names(entry: &ModelEntry) -> String {
    let names: Vec<&str> = entry.roles.iter().map(|(r, _)| *r).collect();
    names.join(", ")
}

/// Explores `query` exhaustively (BFS within its bounds); the first violation found is
/// a shortest counterexample.
pub fn check_model(query: &Query) -> Result<Report, ModelError> {
    check_model_with(query, &mut |_| {})
}

/// [`check_model`] with a progress callback (see [`Explorer::explore_with`]).
pub fn check_model_with(
    query: &Query,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Report, ModelError> {
    (entry(&query.protocol)?.explore)(query, progress)
}

/// Random walks of `query`, one per seed, each at most `max_depth` steps.
pub fn walk_model(
    query: &Query,
    seeds: Range<u64>,
    max_depth: usize,
) -> Result<WalkReport, ModelError> {
    (entry(&query.protocol)?.walk)(query, seeds, max_depth)
}

fn explore<P: Modelled>(
    query: &Query,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Report, ModelError> {
    Ok(build::<P>(query)?.explore_with(progress))
}

fn walk<P: Modelled>(
    query: &Query,
    seeds: Range<u64>,
    max_depth: usize,
) -> Result<WalkReport, ModelError> {
    Ok(build::<P>(query)?.walk(seeds, max_depth))
}

/// The explorer for `query`: parameters read and checked as a scenario's would be,
/// constraints (one copy of each message in flight beyond the duplicate budget, the
/// term bound) and the checks.
fn build<P: Modelled>(query: &Query) -> Result<Explorer<P>, ModelError> {
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
    let config = P::configure(params, &query.variant, &query.cluster).map_err(|e| {
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
    let copies = 1 + query.bounds.max_duplicates;
    let mut explorer = Explorer::<P>::new(config, query.cluster.clone(), query.bounds.clone())
        .within(copies_in_flight_at_most(copies));
    if let Some(key) = P::TERM_KEY {
        explorer = explorer.within(stored_at_most(key, query.max_term));
    }
    for name in &query.checks {
        explorer = match name.as_str() {
            "one-leader-at-a-time" => explorer.invariant(name, one_leader_at_a_time()),
            "steps-down-on-higher-term" => {
                let term_of = P::TERM_OF.ok_or_else(|| {
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
            liveness if LIVENESS.contains(&liveness) => {
                return Err(ModelError::new(
                    "checks",
                    format!(
                        "{liveness} judges liveness, which a bounded path cannot (it is not \
                         the end of a run); use the simulator (`tenure run`)"
                    ),
                ))
            }
            other => {
                let factory =
                    checker(other, &serde_json::Value::Null, &query.cluster).map_err(|e| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_a_zoo_protocol_and_its_defaults_build() {
        let names: Vec<&str> = entries().iter().map(|e| e.info().name).collect();
        assert_eq!(
            names,
            [
                "raft",
                "bully",
                "redis-lock",
                "fencing",
                "etcd-lock",
                "zookeeper",
                "idempotency"
            ]
        );
        for e in entries() {
            for v in e.info().variants {
                let q = Query::new(e.info().name, v.name).unwrap();
                build_any(&q);
            }
            for (variant, _) in e.out_of_scope {
                assert!(e.info().variant(variant).is_some(), "{variant}");
            }
        }
    }

    fn build_any(q: &Query) {
        // A walk of zero steps builds the explorer and judges the initial state.
        let report = walk_model(q, 0..1, 0).unwrap();
        assert_eq!(report.seeds_run, 1);
    }

    #[test]
    fn bad_queries_name_the_field() {
        let err = |r: Result<Query, ModelError>| r.unwrap_err().field;
        assert_eq!(err(Query::new("paxos", "correct")), "protocol");
        let lease = Query::new("leader-lease", "correct").unwrap_err();
        assert!(lease.message.contains("stay with the simulator"), "{lease}");
        assert_eq!(err(Query::new("raft", "forgetful")), "variant");

        let mut q = Query::new("fencing", "correct").unwrap();
        assert_eq!(q.set_nodes(3).unwrap_err().field, "nodes");
        assert_eq!(q.set_roles("client=two").unwrap_err().field, "roles");
        assert_eq!(q.set_roles("clients=2").unwrap_err().field, "roles");
        q.set_roles("client=3").unwrap();
        assert_eq!(q.cluster.count("client"), 3);
        assert_eq!(q.cluster.count("server"), 1);
        q.set_roles("server=2").unwrap();
        assert_eq!(check_model(&q).unwrap_err().field, "roles");

        let mut q = Query::new("raft", "correct").unwrap();
        q.set_nodes(0).unwrap_err();
        q.checks = vec!["leader-liveness".into()];
        let e = check_model(&q).unwrap_err();
        assert_eq!(e.field, "checks");
        assert!(e.message.contains("liveness"), "{e}");
        q.checks = vec!["single-leader-per-trem".into()];
        assert_eq!(check_model(&q).unwrap_err().field, "checks");

        let mut q = Query::new("bully", "correct").unwrap();
        q.checks = vec!["steps-down-on-higher-term".into()];
        assert_eq!(check_model(&q).unwrap_err().field, "checks");

        let mut q = Query::new("fencing", "correct").unwrap();
        q.params = json!({ "max_attempts": 0 });
        assert_eq!(check_model(&q).unwrap_err().field, "params.max_attempts");
        q.params = json!({ "max_atempts": 1 });
        assert_eq!(check_model(&q).unwrap_err().field, "params");
    }
}
