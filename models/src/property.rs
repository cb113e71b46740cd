//! What the explorer judges.
//!
//! * **Path checks**: the simulator's checkers (tenure-check), run over the records of
//!   a path (every `Observe` effect, plus the host's `Started`/`Crashed`), stamped with
//!   logical time = depth × 1ms (so `0.003_000s` in a message means step 3). Checkers
//!   are stateful and not `Clone`, so the explorer builds a fresh one per new state and
//!   replays the path's records (cheap at model sizes).
//! * **Every state is a possible end of the run.** A run may stop anywhere, so every
//!   safety checker ([`tenure_check::CheckKind::Safety`] and
//!   [`tenure_check::CheckKind::AtEnd`]) is also *finished* at every state the search
//!   keeps, with the run's end at that state's logical time (its depth × 1ms): what
//!   `finish` reports is what the simulator would report had the run ended there. That
//!   is how an overlap still open is seen: `mutual-exclusion`, `lease-safety` and
//!   `single-leader-at-a-time` report an interleaving of actions online only once both
//!   sections have ended, which a bounded path (a client making one attempt) may never
//!   reach; their `finish` reports it as soon as it is certain. A belief overlap still
//!   open is measured up to that time, like at the end of a simulated run. Liveness
//!   checkers are never finished (a bounded path is not the end of a run, and
//!   "eventually" cannot be judged on it; the registry refuses them), nor is a checker
//!   whose kind tenure-check does not know (a user's own: its `finish` may judge
//!   liveness). A random walk judges its records as it goes and finishes at the end of
//!   its path; when that finds a violation, the walk's earliest prefix that shows one
//!   is the counterexample.
//! * **State invariants**: predicates over a single state, for properties that need
//!   "at the same moment" (two nodes both believe they lead), which a path of logical
//!   steps expresses exactly.

use crate::State;
use tenure_core::{Cluster, Protocol, Record, SimTime};

pub use tenure_check::{CheckError, Checker, Violation};

/// Builds a fresh checker for each path to judge.
pub type CheckerFactory = Box<dyn Fn() -> Box<dyn Checker> + Send + Sync>;

/// A factory for the tenure-check checker `name` with `params` (JSON; `Null` for the
/// defaults), as the simulator builds it. The parameters are checked here, once.
pub fn checker(
    name: &str,
    params: &serde_json::Value,
    cluster: &Cluster,
) -> Result<CheckerFactory, CheckError> {
    tenure_check::build(name, params, cluster)?;
    let (name, params, cluster) = (name.to_string(), params.clone(), cluster.clone());
    Ok(Box::new(move || {
        tenure_check::build(&name, &params, &cluster)
            .expect("parameters checked when the factory was made")
    }))
}

/// A predicate on one state: `Some(message)` when it is broken.
pub type Invariant<P> = Box<dyn Fn(&State<P>) -> Option<String> + Send + Sync>;

/// A predicate on one transition (before, action, after): `Some(message)` when the
/// step breaks a rule that only a transition can show (Raft §5.1: a leader that
/// learns of a higher term steps down at once).
pub type StepInvariant<P> =
    Box<dyn Fn(&State<P>, &crate::Action<P>, &State<P>) -> Option<String> + Send + Sync>;

/// A predicate that keeps a state in the model (`false` prunes it: it is neither
/// judged further nor expanded), like a TLA+ state constraint.
pub type Constraint<P> = Box<dyn Fn(&State<P>) -> bool + Send + Sync>;

/// Whether the explorer finishes checker `name` at every state (see the module docs):
/// the safety checkers of tenure-check's catalog ([`tenure_check::CheckKind::Safety`],
/// [`tenure_check::CheckKind::AtEnd`]); never liveness checkers, nor checkers the
/// catalog does not know.
pub fn finished_at_every_state(name: &str) -> bool {
    matches!(
        tenure_check::kind_of(name),
        Some(tenure_check::CheckKind::Safety | tenure_check::CheckKind::AtEnd)
    )
}

/// Runs a fresh checker over `records`, then, if `at_end` is `Some(end)`, finishes it
/// as if the run ended at logical time `end`; the first violation, if any.
pub(crate) fn judge(
    factory: &CheckerFactory,
    at_end: Option<SimTime>,
    records: &[Record],
    cluster: &Cluster,
) -> Option<(String, String)> {
    let mut checker = factory();
    let online = records.iter().enumerate().find_map(|(i, r)| {
        checker
            .on_record(i, r)
            .map(|v| (v.checker.to_string(), v.message))
    });
    online.or_else(|| {
        at_end
            .and_then(|end| checker.finish(&crate::explorer::end_info(cluster, end)))
            .map(|v| (v.checker.to_string(), v.message))
    })
}

/// Invariant: at most one node believes it leads at any one state (the logical-time
/// form of "single leader at a time"). Beliefs come from observations: `Leader` sets
/// one, `Follower`, `Candidate` and `Crashed` end it.
pub fn one_leader_at_a_time<P: Protocol>() -> Invariant<P> {
    Box::new(|state: &State<P>| {
        let leaders = state.leaders();
        (leaders.len() > 1).then(|| {
            let who: Vec<String> = leaders
                .iter()
                .map(|(n, term)| format!("{n} (term {term})"))
                .collect();
            format!(
                "{} nodes believe they lead at once: {}",
                leaders.len(),
                who.join(", ")
            )
        })
    })
}

/// Constraint: every node's stored `key` (a JSON number), if any, is at most `bound`.
/// Bounds unbounded counters such as Raft's term. `key/field` reads the number field
/// `field` of a JSON object stored under `key` (PBFT's view: `pbft/view`).
pub fn stored_at_most<P: Protocol>(key: &'static str, bound: u64) -> Constraint<P> {
    let (key, field) = match key.split_once('/') {
        Some((key, field)) => (key, Some(field)),
        None => (key, None),
    };
    Box::new(move |state: &State<P>| {
        (0..state.nodes.len()).all(|i| {
            let node = tenure_core::NodeId(i as u32);
            let value = match field {
                None => state.stored::<u64>(node, key),
                Some(field) => state
                    .stored::<serde_json::Value>(node, key)
                    .and_then(|v| v.get(field).and_then(serde_json::Value::as_u64)),
            };
            value.is_none_or(|v| v <= bound)
        })
    })
}

/// Constraint: no message has more than `copies` copies in flight. Bounds protocols
/// that resend on a timer (heartbeats), whose in-flight multiset would otherwise grow
/// with every firing. Give it `1 + max_duplicates`, or the states a duplicate makes
/// are pruned (the registry does).
pub fn copies_in_flight_at_most<P: Protocol>(copies: u32) -> Constraint<P> {
    Box::new(move |state: &State<P>| state.in_flight.values().all(|c| *c <= copies))
}

/// Step invariant (Raft §5.1, "if a candidate or leader discovers that its term is out
/// of date, it immediately reverts to follower state"): a node that believes it leads
/// term `t` and is delivered a message that `term_of` says carries a higher term no
/// longer believes it leads afterwards. Beliefs come from observations; `term_of` is
/// the protocol's accessor for a message's term.
pub fn steps_down_on_higher_term<P: Protocol>(
    term_of: fn(&P::Msg) -> Option<u64>,
) -> StepInvariant<P> {
    Box::new(
        move |before: &State<P>, action: &crate::Action<P>, after: &State<P>| {
            let crate::Action::Deliver { from, to, msg } = action else {
                return None;
            };
            let led = before.nodes[to.index()].leads?;
            let term = term_of(msg)?;
            let still = after.nodes[to.index()].leads?;
            (term > led).then(|| {
            format!(
                "{to} leads term {led}, got {msg:?} of term {term} from {from}, and still leads term {still}"
            )
        })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::finished_at_every_state;

    /// Safety checkers (online and end-judged) are finished at every state; liveness
    /// checkers and names the catalog does not know never are.
    #[test]
    fn which_checkers_are_finished_at_every_state() {
        for name in [
            "mutual-exclusion",
            "lease-safety",
            "single-leader-at-a-time",
            "mutual-exclusion-belief",
            "no-lost-update",
            "exactly-once",
            "linearizability",
        ] {
            assert!(finished_at_every_state(name), "{name}");
        }
        for name in [
            "lock-liveness",
            "leader-liveness",
            "deadlock",
            "my-own-check",
        ] {
            assert!(!finished_at_every_state(name), "{name}");
        }
    }
}
