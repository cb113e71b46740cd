//! tenure-check: the checkers. They judge what nodes *observed* (the
//! [`Observation`](tenure_core::Observation)s of a [`History`]), never a protocol's
//! internals, and this crate never depends on tenure-protocols: a checker must not share
//! the bugs it looks for.
//!
//! One file per property, each with its own typed violation (who, when, why) that
//! converts into the common [`Violation`]:
//!
//! | checker | file |
//! |---|---|
//! | `single-leader-per-term` | [`single_leader_per_term`] |
//! | `single-leader-at-a-time` | [`single_leader_at_a_time`] (actions) |
//! | `single-leader-at-a-time-belief` | [`single_leader_at_a_time_belief`] |
//! | `leader-liveness` | [`leader_liveness`] |
//! | `mutual-exclusion` | [`mutual_exclusion`] (actions) |
//! | `mutual-exclusion-belief` | [`mutual_exclusion_belief`] |
//! | `lease-safety` | [`lease_safety`] (actions) |
//! | `lease-safety-belief` | [`lease_safety_belief`] |
//! | `fencing-safety` | [`fencing_safety`] |
//! | `no-lost-update` | [`no_lost_update`] |
//! | `exactly-once` | [`exactly_once`] |
//! | `lock-liveness` | [`lock_liveness`] |
//! | `linearizability` | [`linearizability::checker`] |
//!
//! **Actions and beliefs.** `mutual-exclusion`, `lease-safety` and
//! `single-leader-at-a-time` judge what nodes DO on the strength of a lock, lease or
//! leadership (`Acts`, `Serves`: see [`actions`] for the exact rule); their `-belief`
//! twins judge what nodes BELIEVE (`Holds`, `LeaseStart`, `Leader`). A paused holder
//! keeps believing, so the belief checks fail under every long enough pause: they are
//! teaching checks, used on purpose by the GC-pause scenarios. The action checks fail
//! only when a node really acted on a stale lock, lease or leadership.
//! | `deadlock` | [`deadlock`] |
//! | `no-starvation` | [`no_starvation`] |
//! | `single-owner` | [`single_owner`] |
//! | `log-matching` | [`log_matching`] |
//! | `leader-completeness` | [`leader_completeness`] |
//! | `state-machine-safety` | [`state_machine_safety`] |
//! | `no-panic` | [`no_panic`] |
//! | `agreement` | [`agreement`] |
//! | `validity` | [`validity`] |
//! | `decision-liveness` | [`decision_liveness`] |
//! | `lease-expiry` | [`lease_expiry`] |
//!
//! Semantics shared by all of them: beliefs are intervals of TRUE time (the simulator's
//! clock, never a node's reading). A node's belief ends at its next contrary observation
//! or when it crashes (`Crashed`; a `Started` process is fresh and believes nothing
//! either). A paused node records nothing, so it keeps its beliefs. Intervals are
//! half-open, `[start, end)`: a belief ending at `t` and another starting at `t` do not
//! overlap, whatever the order of the two records.
//!
//! Records must arrive in true-time order (a [`History`] is stored that way); a checker
//! asserts it, because out-of-order records are a bug of whoever produced them.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use tenure_core::{Cluster, History, NodeId, Record, RunInfo, SimTime};

mod actions;
pub mod agreement;
pub mod coverage;
pub mod custom;
pub mod deadlock;
pub mod decision_liveness;
pub mod exactly_once;
pub mod fencing_safety;
pub mod leader_completeness;
pub mod leader_liveness;
pub mod lease_expiry;
pub mod lease_safety;
pub mod lease_safety_belief;
pub mod linearizability;
pub mod lock_liveness;
pub mod log_matching;
pub mod mutual_exclusion;
pub mod mutual_exclusion_belief;
pub mod no_lost_update;
pub mod no_panic;
pub mod no_starvation;
mod overlap;
pub mod single_leader_at_a_time;
pub mod single_leader_at_a_time_belief;
pub mod single_leader_per_term;
pub mod single_owner;
pub mod state_machine_safety;
pub mod testing;
pub mod validity;
pub mod verdict;

/// A property judged over a run's records.
///
/// Online use (the simulator): call [`Checker::on_record`] for every record as it is
/// made, then [`Checker::finish`] once at the end. Once a checker has reported a
/// violation the caller stops feeding it (what it returns afterwards is unspecified).
pub trait Checker: Send {
    fn name(&self) -> &'static str;
    /// Online: records arrive in true-time order (`index` = position in
    /// `History.records`). Returns the first violation as soon as it is certain.
    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation>;
    /// End of run: close open intervals at `info.end`, judge liveness.
    fn finish(&mut self, info: &RunInfo) -> Option<Violation>;
    /// What the checker judged so far (see [`coverage`]): every built-in checker counts
    /// the observations it judges, and one that saw none is *vacuous*, not passed. A
    /// checker of your own may say what it judged; `None` reports "not reported".
    fn judged(&self) -> Option<coverage::Judged> {
        None
    }
    /// After [`Checker::finish`] found no violation: `Some` when this run gave the check
    /// nothing to judge, with the reason ([`verdict::Reason`]: too short, undecided,
    /// could not fail) and what the run lacked. `None` (the default) is a pass. Built-in
    /// checkers also say when they were vacuous or could not fail (their
    /// [`coverage::Counter`] does, from the observations).
    fn not_judged(&self) -> Option<verdict::NotJudged> {
        None
    }
}

pub use coverage::{Judged, Vacuous};
pub use verdict::{CheckVerdict, NotJudged, Overall, Reason, Verdict};

/// A broken property: who, when (true time) and why, in words and as data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The checker's name, as in [`catalog`].
    pub checker: &'static str,
    /// The true time at which the property broke (for an overlap: when it began).
    pub time: SimTime,
    /// The nodes at fault or involved, in the order the message names them.
    pub nodes: Vec<NodeId>,
    /// One sentence a person understands: who, when and why.
    pub message: String,
    /// Indices (into `History.records`) of the records involved, in increasing order.
    pub records: Vec<usize>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.checker, self.message)
    }
}

/// What `tenure checks` shows about a checker. Build one for a checker of your own
/// with [`CheckerInfo::new`] and its `with_*` methods (the struct is `non_exhaustive`:
/// a field added later does not break you).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckerInfo {
    pub name: &'static str,
    /// When it can judge, and so where it applies (see [`CheckKind`]).
    pub kind: CheckKind,
    /// One line.
    pub summary: &'static str,
    /// The property, stated precisely.
    pub property: &'static str,
    /// Where the property comes from (paper section, article).
    pub source: &'static str,
    /// The parameters, their types and defaults, in words ("" if none).
    pub params: &'static str,
}

impl CheckerInfo {
    /// A checker's description: its name (lower-case words joined by `-`), its kind and
    /// one line; `property`, `source` and `params` start empty.
    pub const fn new(name: &'static str, kind: CheckKind, summary: &'static str) -> CheckerInfo {
        CheckerInfo {
            name,
            kind,
            summary,
            property: "",
            source: "",
            params: "",
        }
    }

    /// The property, stated precisely.
    pub const fn with_property(mut self, property: &'static str) -> CheckerInfo {
        self.property = property;
        self
    }

    /// Where the property comes from.
    pub const fn with_source(mut self, source: &'static str) -> CheckerInfo {
        self.source = source;
        self
    }

    /// The parameters, their types and defaults, in words.
    pub const fn with_params(mut self, params: &'static str) -> CheckerInfo {
        self.params = params;
        self
    }
}

/// What kind of property a checker judges, which says where it can be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// Something bad never happens: judged online, a violation is final the moment it
    /// is seen (a fuzz run may stop there), and a bounded model path can show it.
    Safety,
    /// A safety property that needs the whole history (e.g. linearizability): judged at
    /// the end of a run.
    AtEnd,
    /// Something good eventually happens, within a bound after the calm: judged at the
    /// end, and never by a bounded model path (its end is not the end of a run).
    Liveness,
}

impl CheckKind {
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Safety => "safety",
            CheckKind::AtEnd => "safety, judged at the end",
            CheckKind::Liveness => "liveness",
        }
    }
}

/// The kind of the checker `name` (built-in or [registered](custom::register)), if it
/// is one.
pub fn kind_of(name: &str) -> Option<CheckKind> {
    CATALOG
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.kind)
        .or_else(|| custom::lookup(name).map(|c| c.info().kind))
}

/// A checker could not be built: an unknown name (`field` is empty) or bad parameters
/// (`field` names the parameter at fault, e.g. `max_overlap`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub field: String,
    pub message: String,
}

impl CheckError {
    pub fn new(field: &str, message: impl Into<String>) -> CheckError {
        CheckError {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for CheckError {}

const CATALOG: &[CheckerInfo] = &[
    single_leader_per_term::INFO,
    single_leader_at_a_time::INFO,
    single_leader_at_a_time_belief::INFO,
    leader_liveness::INFO,
    mutual_exclusion::INFO,
    mutual_exclusion_belief::INFO,
    lease_safety::INFO,
    lease_safety_belief::INFO,
    fencing_safety::INFO,
    no_lost_update::INFO,
    exactly_once::INFO,
    lock_liveness::INFO,
    linearizability::checker::INFO,
    deadlock::INFO,
    no_starvation::INFO,
    single_owner::INFO,
    log_matching::INFO,
    leader_completeness::INFO,
    state_machine_safety::INFO,
    no_panic::INFO,
    agreement::INFO,
    validity::INFO,
    decision_liveness::INFO,
    lease_expiry::INFO,
];

/// Every built-in checker, in a stable order.
pub fn catalog() -> &'static [CheckerInfo] {
    CATALOG
}

/// Every checker a name can pick: the built-in ones, then the ones
/// [registered](custom::register) in this process, in registration order.
pub fn all() -> Vec<CheckerInfo> {
    let mut all = CATALOG.to_vec();
    all.extend(custom::registered());
    all
}

/// Whether `name` is a checker of your own ([registered](custom::register)), not a
/// built-in one.
pub fn is_custom(name: &str) -> bool {
    !CATALOG.iter().any(|c| c.name == name) && custom::lookup(name).is_some()
}

/// Builds the checker `name` with `params` (a JSON object; `Null` means all defaults)
/// for a run on `cluster`: a built-in checker, or one [registered](custom::register).
pub fn build(
    name: &str,
    params: &serde_json::Value,
    cluster: &Cluster,
) -> Result<Box<dyn Checker>, CheckError> {
    if !CATALOG.iter().any(|c| c.name == name) {
        if let Some(custom) = custom::lookup(name) {
            return custom.make(params, cluster);
        }
    }
    let inner = build_bare(name, params, cluster)?;
    Ok(match coverage::judges(name) {
        Some(judges) => Box::new(coverage::Counting {
            counter: coverage::Counter::new(inner.name(), judges),
            inner,
        }),
        None => inner,
    })
}

/// The checker `name` without its [`coverage::Counter`].
fn build_bare(
    name: &str,
    params: &serde_json::Value,
    cluster: &Cluster,
) -> Result<Box<dyn Checker>, CheckError> {
    Ok(match name {
        single_leader_per_term::NAME => Box::new(single_leader_per_term::SingleLeaderPerTerm::new(
            read_params(params)?,
            cluster,
        )?),
        single_leader_at_a_time::NAME => Box::new(
            single_leader_at_a_time::SingleLeaderAtATime::new(read_params(params)?, cluster)?,
        ),
        single_leader_at_a_time_belief::NAME => Box::new(
            single_leader_at_a_time_belief::SingleLeaderAtATimeBelief::new(
                read_params(params)?,
                cluster,
            )?,
        ),
        mutual_exclusion_belief::NAME => Box::new(
            mutual_exclusion_belief::MutualExclusionBelief::new(read_params(params)?, cluster)?,
        ),
        lease_safety_belief::NAME => Box::new(lease_safety_belief::LeaseSafetyBelief::new(
            read_params(params)?,
            cluster,
        )?),
        leader_liveness::NAME => Box::new(leader_liveness::LeaderLiveness::new(
            read_params(params)?,
            cluster,
        )?),
        mutual_exclusion::NAME => Box::new(mutual_exclusion::MutualExclusion::new(
            read_params(params)?,
            cluster,
        )?),
        lease_safety::NAME => Box::new(lease_safety::LeaseSafety::new(
            read_params(params)?,
            cluster,
        )?),
        fencing_safety::NAME => Box::new(fencing_safety::FencingSafety::new(
            read_params(params)?,
            cluster,
        )?),
        no_lost_update::NAME => Box::new(no_lost_update::NoLostUpdate::new(
            read_params(params)?,
            cluster,
        )?),
        exactly_once::NAME => Box::new(exactly_once::ExactlyOnce::new(
            read_params(params)?,
            cluster,
        )?),
        lock_liveness::NAME => Box::new(lock_liveness::LockLiveness::new(
            read_params(params)?,
            cluster,
        )?),
        linearizability::checker::NAME => Box::new(linearizability::checker::Linearizability::new(
            read_params(params)?,
            cluster,
        )?),
        deadlock::NAME => Box::new(deadlock::DeadlockChecker::new(
            read_params(params)?,
            cluster,
        )?),
        no_starvation::NAME => Box::new(no_starvation::NoStarvation::new(
            read_params(params)?,
            cluster,
        )?),
        single_owner::NAME => Box::new(single_owner::SingleOwner::new(
            read_params(params)?,
            cluster,
        )?),
        leader_completeness::NAME => Box::new(leader_completeness::LeaderCompleteness::new(
            read_params(params)?,
            cluster,
        )?),
        log_matching::NAME => Box::new(log_matching::LogMatching::new(
            read_params(params)?,
            cluster,
        )?),
        state_machine_safety::NAME => Box::new(state_machine_safety::StateMachineSafety::new(
            read_params(params)?,
            cluster,
        )?),
        no_panic::NAME => Box::new(no_panic::NoPanic::new(read_params(params)?, cluster)?),
        agreement::NAME => Box::new(agreement::Agreement::new(read_params(params)?, cluster)?),
        validity::NAME => Box::new(validity::Validity::new(read_params(params)?, cluster)?),
        decision_liveness::NAME => Box::new(decision_liveness::DecisionLiveness::new(
            read_params(params)?,
            cluster,
        )?),
        lease_expiry::NAME => Box::new(lease_expiry::LeaseExpiry::new(
            read_params(params)?,
            cluster,
        )?),
        _ => {
            let known: Vec<&str> = all().iter().map(|c| c.name).collect();
            return Err(CheckError::new(
                "",
                format!(
                    "unknown checker `{name}`; known checkers: {}",
                    known.join(", ")
                ),
            ));
        }
    })
}

/// Offline: feeds every record of `history` to every checker, then finishes them.
/// Returns the first violation of each checker that found one, in checker order. A
/// check that found none may still not have been judged: [`verdict::judge_history`]
/// gives each check its verdict.
pub fn check_history(history: &History, checkers: &mut [Box<dyn Checker>]) -> Vec<Violation> {
    run_checkers(history, checkers)
        .into_iter()
        .flatten()
        .collect()
}

/// Feeds every record to every checker and finishes them: each checker's first
/// violation, if any, in checker order.
pub(crate) fn run_checkers(
    history: &History,
    checkers: &mut [Box<dyn Checker>],
) -> Vec<Option<Violation>> {
    let mut found: Vec<Option<Violation>> = checkers.iter().map(|_| None).collect();
    for (index, record) in history.records.iter().enumerate() {
        for (checker, slot) in checkers.iter_mut().zip(found.iter_mut()) {
            if slot.is_none() {
                *slot = checker.on_record(index, record);
            }
        }
    }
    for (checker, slot) in checkers.iter_mut().zip(found.iter_mut()) {
        if slot.is_none() {
            *slot = checker.finish(&history.info);
        }
    }
    found
}

/// Reads a checker's parameters; an error names the field at fault.
fn read_params<P: DeserializeOwned + Default>(params: &serde_json::Value) -> Result<P, CheckError> {
    if params.is_null() {
        return Ok(P::default());
    }
    serde_path_to_error::deserialize(params).map_err(|e| {
        // The path names the field at fault, an unknown one included; "." is the whole
        // parameter object (e.g. a string where an object was expected).
        let path = e.path().to_string();
        CheckError {
            field: if path == "." {
                "params".to_string()
            } else {
                path
            },
            message: e.inner().to_string(),
        }
    })
}

/// Asserts that records arrive in true-time order and remembers the latest time.
#[derive(Clone, Copy, Debug, Default)]
struct TrueClock {
    now: SimTime,
}

impl TrueClock {
    fn advance(&mut self, checker: &str, index: usize, time: SimTime) {
        assert!(
            time >= self.now,
            "{checker}: record {index} at {time} arrived after a record at {}: records must be in true-time order",
            self.now
        );
        self.now = time;
    }
}

/// A duration printed like true time: `1.234_567s`.
fn show(d: std::time::Duration) -> String {
    SimTime::from_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::H;
    use serde_json::json;
    use tenure_core::Observation;

    #[test]
    fn catalog_names_are_unique_and_all_build_with_defaults() {
        let cluster = Cluster::uniform("node", 3);
        let names: std::collections::BTreeSet<&str> = catalog().iter().map(|c| c.name).collect();
        assert_eq!(names.len(), catalog().len());
        assert_eq!(catalog().len(), 24);
        for info in catalog() {
            let checker = build(info.name, &serde_json::Value::Null, &cluster).unwrap();
            assert_eq!(checker.name(), info.name);
            let checker = build(info.name, &json!({}), &cluster).unwrap();
            assert_eq!(checker.name(), info.name);
            assert!(!info.property.is_empty() && !info.source.is_empty());
        }
    }

    #[test]
    fn unknown_checker_lists_the_known_ones() {
        let err = build("single-leader", &json!({}), &Cluster::uniform("node", 3))
            .err()
            .unwrap();
        assert_eq!(err.field, "");
        assert_eq!(
            err.message,
            "unknown checker `single-leader`; known checkers: single-leader-per-term, \
             single-leader-at-a-time, single-leader-at-a-time-belief, leader-liveness, \
             mutual-exclusion, mutual-exclusion-belief, lease-safety, lease-safety-belief, \
             fencing-safety, no-lost-update, exactly-once, lock-liveness, linearizability, \
             deadlock, no-starvation, single-owner, log-matching, leader-completeness, \
             state-machine-safety, \
             no-panic, agreement, validity, decision-liveness, lease-expiry"
        );
    }

    #[test]
    fn unknown_param_names_the_field() {
        let cluster = Cluster::uniform("node", 3);
        let err = build("leader-liveness", &json!({"withn": "5s"}), &cluster)
            .err()
            .unwrap();
        assert_eq!(err.field, "withn");
        assert!(err.message.starts_with("unknown field `withn`"), "{err}");
        let err = build("lease-safety", &json!({"max_overlap": "1s"}), &cluster)
            .err()
            .unwrap();
        assert_eq!(err.field, "max_overlap");
    }

    #[test]
    fn bad_param_value_names_the_field() {
        let cluster = Cluster::uniform("node", 3);
        let err = build("mutual-exclusion", &json!({"max_overlap": "-1s"}), &cluster)
            .err()
            .unwrap();
        assert_eq!(err.field, "max_overlap");
        assert!(err.message.contains("negative"), "{err}");
        let err = build("lock-liveness", &json!({"resource": 7}), &cluster)
            .err()
            .unwrap();
        assert_eq!(err.field, "resource");
        let err = build("lock-liveness", &json!("5s"), &cluster)
            .err()
            .unwrap();
        assert_eq!(err.field, "params");
        assert_eq!(err.to_string(), format!("params: {}", err.message));
    }

    #[test]
    fn check_history_stops_feeding_a_checker_after_its_first_violation_and_finishes_the_rest() {
        let cluster = Cluster::uniform("node", 3);
        // Two double-applies online (only the first is reported), then an end-of-run
        // liveness failure (no leader ever).
        let history = H::new(cluster.clone())
            .at_ms(10)
            .node(0)
            .applied("a")
            .at_ms(20)
            .node(1)
            .applied("a")
            .at_ms(30)
            .node(2)
            .applied("a")
            .end_ms(100)
            .history();
        let mut checkers: Vec<Box<dyn Checker>> = vec![
            build("exactly-once", &serde_json::Value::Null, &cluster).unwrap(),
            build("leader-liveness", &json!({"within": "50ms"}), &cluster).unwrap(),
        ];
        let found = check_history(&history, &mut checkers);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].checker, "exactly-once");
        assert_eq!(found[0].records, vec![0, 1]);
        assert_eq!(found[1].checker, "leader-liveness");
        assert_eq!(found[1].time, SimTime(50_000_000));
        assert!(found[1]
            .message
            .starts_with("no node believed it led from 0.050_000s until the end"));
    }

    #[test]
    fn check_history_reports_the_first_violation_of_each_checker() {
        let cluster = Cluster::uniform("node", 3);
        let history = H::new(cluster.clone())
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(20)
            .node(1)
            .leader(1)
            .at_ms(30)
            .node(2)
            .leader(1)
            .obs(Observation::Applied { key: "k".into() })
            .end_ms(40)
            .history();
        let mut checkers: Vec<Box<dyn Checker>> =
            ["single-leader-per-term", "exactly-once", "lease-safety"]
                .iter()
                .map(|n| build(n, &serde_json::Value::Null, &cluster).unwrap())
                .collect();
        let found = check_history(&history, &mut checkers);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].checker, "single-leader-per-term");
        assert_eq!(found[0].records, vec![0, 1]);
        assert_eq!(
            found[0].to_string(),
            "single-leader-per-term: n0 and n1 both believed they led term 1 \
             (n0 from 0.010_000s, n1 from 0.020_000s)"
        );
    }
}
