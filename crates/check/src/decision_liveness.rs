//! # decision-liveness
//!
//! **Property:** once the faults are over, every instance that was proposed is decided
//! within a bound. Precisely: an instance is proposed at its first `Proposes { instance,
//! .. }` record (by any node) and decided at its first `Decides { instance, .. }` record
//! by a counted node (every node, or only those playing `role`). Its deadline is
//! `max(proposed, calm_from) + within`, where `calm_from` is when the last fault healed
//! (as `leader-liveness` and `lock-liveness` count it). Every instance whose deadline is
//! at or before the end of the run must be decided at or before that deadline; instances
//! whose deadline is after the end are not judged. A decision made before the calm meets
//! any deadline (a chosen value stays chosen: that is `agreement`'s business).
//!
//! Not judged: *vacuous* when nothing was proposed; *too short* when no proposed
//! instance's deadline fell inside the run.
//!
//! **How it fails:** dueling proposers that pre-empt each other for ever (two proposers
//! with no back-off, whose prepares keep overtaking each other's accepts: Lamport's
//! "Paxos Made Simple" §2.4 scenario, and FLP's warning); a leader that never re-proposes
//! a slot it lost; a learner that misses the acceptances and never asks again.
//!
//! **Source:** Lamport, "Paxos Made Simple" (2001), §2.4 progress ("it's easy to construct
//! a scenario in which two proposers each keep issuing a sequence of proposals with
//! increasing numbers, none of which are ever chosen"; a distinguished proposer restores
//! progress "if enough of the system ... is working properly"); the liveness phase of
//! TigerBeetle's VOPR (heal the faults, then demand progress).
//!
//! With `by_value = true` the unit is a proposed value instead of an instance: every
//! value some `Proposes` put forward must be decided (in any instance) by its deadline
//! (state machine replication, where clients propose and a primary orders: PBFT); the
//! report's "instance" is then the value. Honest nodes only: a node's `Proposes` and
//! `Decides` after its `Byzantine` record are ignored.
//!
//! Judged at the end only: `calm_from` is known when the run ends.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;
use tenure_core::{format_duration, Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "decision-liveness";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "after the faults, every proposed instance is decided within a bound",
    property: "every instance with a Proposes record is Decided (by a counted node) by \
               max(its first proposal, calm_from) + within, judged when that deadline is at \
               or before the end",
    source: "Lamport, \"Paxos Made Simple\" (2001), §2.4 progress; TigerBeetle VOPR liveness \
             phase",
    params: "within (duration, default \"5s\"): how long after the calm (or the proposal, if \
             later) a decision is due; role (string, optional): only decisions of nodes of \
             this role count; bound (string, optional): how `within` was derived, stated in \
             the report; by_value (bool, default false): every proposed value, decided in \
             any instance",
};

/// `leader-liveness`'s parameters (`within`, `role`, `bound`), and `by_value`.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_within")]
    pub within: tenure_core::HumanDuration,
    #[serde(default)]
    pub role: Option<String>,
    /// How `within` was derived from the protocol's parameters (for the report).
    #[serde(default)]
    pub bound: Option<String>,
    /// The unit is a proposed value, decided in any instance.
    #[serde(default)]
    pub by_value: bool,
}

fn default_within() -> tenure_core::HumanDuration {
    tenure_core::HumanDuration(Duration::from_secs(5))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            within: default_within(),
            role: None,
            bound: None,
            by_value: false,
        }
    }
}

/// An instance proposed and not decided by its deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    pub instance: u64,
    pub proposed: SimTime,
    pub proposed_index: usize,
    pub deadline: SimTime,
    pub calm_from: SimTime,
    pub within: Duration,
    /// When a counted node decided it, if ever (after the deadline).
    pub decided: Option<(SimTime, usize)>,
    pub end: SimTime,
    pub role: Option<String>,
    pub bound: Option<String>,
}

impl fmt::Display for Undecided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let by = match &self.role {
            Some(role) => format!("by a `{role}`"),
            None => "by any node".to_string(),
        };
        write!(
            f,
            "instance {} was proposed at {} and not decided {by} by {} (within {} of ",
            self.instance,
            self.proposed,
            self.deadline,
            format_duration(self.within)
        )?;
        if self.proposed >= self.calm_from {
            write!(f, "its proposal")?;
        } else {
            write!(f, "the calm at {}", self.calm_from)?;
        }
        match self.decided {
            Some((time, _)) => write!(f, "); it was decided only at {time}"),
            None => write!(f, "); it was still undecided at the end, {}", self.end),
        }?;
        if let Some(bound) = &self.bound {
            write!(f, " [bound {} = {bound}]", format_duration(self.within))?;
        }
        Ok(())
    }
}

impl From<Undecided> for Violation {
    fn from(v: Undecided) -> Violation {
        let mut records = vec![v.proposed_index];
        if let Some((_, index)) = v.decided {
            records.push(index);
        }
        Violation {
            checker: NAME,
            time: v.deadline,
            nodes: vec![],
            message: v.to_string(),
            records,
        }
    }
}

pub struct DecisionLiveness {
    within: Duration,
    role: Option<String>,
    bound: Option<String>,
    /// Whose decisions count (`None`: everyone's).
    counted: Option<BTreeSet<NodeId>>,
    clock: TrueClock,
    /// instance -> first proposal (time, record).
    proposed: BTreeMap<u64, (SimTime, usize)>,
    /// instance -> first decision by a counted node (time, record).
    decided: BTreeMap<u64, (SimTime, usize)>,
    by_value: bool,
    /// Nodes turned Byzantine so far: ignored.
    byzantine: BTreeSet<NodeId>,
    /// Set by `finish` when nothing could be judged.
    not_judged: Option<crate::verdict::NotJudged>,
}

impl DecisionLiveness {
    pub fn new(params: Params, cluster: &Cluster) -> Result<Self, CheckError> {
        let counted = match &params.role {
            None => None,
            Some(role) => {
                let nodes: BTreeSet<NodeId> = cluster.with_role(role).collect();
                if nodes.is_empty() {
                    let roles: Vec<&str> =
                        cluster.roles().iter().map(|r| r.role.as_str()).collect();
                    return Err(CheckError::new(
                        "role",
                        format!(
                            "no node plays role `{role}`; the cluster's roles are: {}",
                            roles.join(", ")
                        ),
                    ));
                }
                Some(nodes)
            }
        };
        Ok(DecisionLiveness {
            within: params.within.0,
            role: params.role,
            bound: params.bound,
            counted,
            clock: TrueClock::default(),
            proposed: BTreeMap::new(),
            decided: BTreeMap::new(),
            by_value: params.by_value,
            byzantine: BTreeSet::new(),
            not_judged: None,
        })
    }
}

impl Checker for DecisionLiveness {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if let Observation::Byzantine { .. } = record.obs {
            self.byzantine.insert(record.node);
        }
        if self.byzantine.contains(&record.node) {
            return None;
        }
        let by_value = self.by_value;
        let key = |instance: &u64, value: &u64| if by_value { *value } else { *instance };
        match &record.obs {
            Observation::Proposes { instance, value } => {
                self.proposed
                    .entry(key(instance, value))
                    .or_insert((record.time, index));
            }
            Observation::Decides { instance, value }
                if self
                    .counted
                    .as_ref()
                    .is_none_or(|c| c.contains(&record.node)) =>
            {
                self.decided
                    .entry(key(instance, value))
                    .or_insert((record.time, index));
            }
            _ => {}
        }
        None
    }

    fn not_judged(&self) -> Option<crate::verdict::NotJudged> {
        self.not_judged.clone()
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        use crate::verdict::{NotJudged, Reason};
        let end = info.end.max(self.clock.now);
        let deadline = |proposed: SimTime| proposed.max(info.calm_from) + self.within;
        let first_due = self.proposed.values().map(|(t, _)| deadline(*t)).min();
        self.not_judged = match first_due {
            None => Some(NotJudged::new(
                Reason::Vacuous,
                "nothing was proposed: decision liveness is owed only to a proposed instance"
                    .to_string(),
            )),
            Some(due) => (due > end).then(|| {
                NotJudged::new(
                    Reason::TooShort,
                    format!(
                        "no proposed instance's deadline fell inside the run: the earliest, \
                         at {due} (max(first proposal, calm from {}) + within {}), is after \
                         the end at {end}",
                        info.calm_from,
                        format_duration(self.within)
                    ),
                )
            }),
        };
        let (instance, (proposed, proposed_index), due) = self
            .proposed
            .iter()
            .map(|(i, p)| (*i, *p, deadline(p.0)))
            .filter(|(i, _, due)| *due <= end && self.decided.get(i).is_none_or(|(t, _)| *t > *due))
            .min_by_key(|(i, _, due)| (*due, *i))?;
        Some(
            Undecided {
                instance,
                proposed,
                proposed_index,
                deadline: due,
                calm_from: info.calm_from,
                within: self.within,
                decided: self.decided.get(&instance).copied(),
                end,
                role: self.role.clone(),
                bound: self.bound.clone(),
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use crate::verdict::Reason;
    use serde_json::json;
    use tenure_core::SimTime;

    fn history(decided_ms: Option<u64>) -> tenure_core::History {
        let h = H::nodes(3).at_ms(10).node(0).proposes(1, 101);
        let h = match decided_ms {
            Some(ms) => h.at_ms(ms).node(1).decides(1, 101),
            None => h,
        };
        h.end_ms(1000).history()
    }

    #[test]
    fn an_instance_decided_in_time_passes() {
        let params = json!({"within": "50ms"});
        assert_eq!(
            judge_with("decision-liveness", params.clone(), &history(Some(20))),
            None
        );
        // Exactly at the deadline is in time.
        assert_eq!(
            judge_with("decision-liveness", params, &history(Some(60))),
            None
        );
    }

    #[test]
    fn an_instance_never_decided_fails() {
        let (at, v) = judge_with(
            "decision-liveness",
            json!({"within": "50ms", "bound": "retry 50ms"}),
            &history(None),
        )
        .unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "instance 1 was proposed at 0.010_000s and not decided by any node by 0.060_000s \
             (within 50ms of its proposal); it was still undecided at the end, 1.000_000s \
             [bound 50ms = retry 50ms]"
        );
        assert_eq!(v.records, vec![0]);
        assert_eq!(v.time, SimTime(60_000_000));
    }

    #[test]
    fn a_late_decision_fails_and_names_it() {
        let (_, v) = judge_with(
            "decision-liveness",
            json!({"within": "50ms"}),
            &history(Some(61)),
        )
        .unwrap();
        assert!(
            v.message.ends_with("it was decided only at 0.061_000s"),
            "{}",
            v.message
        );
        assert_eq!(v.records, vec![0, 1]);
    }

    #[test]
    fn only_decisions_of_the_role_count() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .proposes(1, 101)
            .at_ms(20)
            .node(0)
            .decides(1, 101)
            .end_ms(1000)
            .history();
        // H's nodes all play `node`: a role nobody plays is an error.
        let err = crate::build(
            "decision-liveness",
            &json!({"role": "learner"}),
            &h.info.cluster,
        )
        .err()
        .unwrap();
        assert_eq!(err.field, "role");
        assert_eq!(
            judge_with(
                "decision-liveness",
                json!({"within": "50ms", "role": "node"}),
                &h
            ),
            None
        );
    }

    #[test]
    fn the_deadline_counts_from_the_calm_and_a_short_run_is_not_judged() {
        let h = |end: u64| {
            H::nodes(2)
                .at_ms(10)
                .node(0)
                .proposes(1, 101)
                .at_ms(400)
                .node(1)
                .note("heal")
                .calm_ms(300)
                .end_ms(end)
                .history()
        };
        // Deadline 300 + 100 = 400 <= 500: undecided at the end fails.
        let (_, v) = judge_with("decision-liveness", json!({"within": "100ms"}), &h(500)).unwrap();
        assert!(
            v.message.contains("within 100ms of the calm at 0.300_000s"),
            "{}",
            v.message
        );
        // Deadline 300 + 250 = 550 > 500: not judged (too short), not failed.
        let params = json!({"within": "250ms"});
        assert_eq!(
            judge_with("decision-liveness", params.clone(), &h(500)),
            None
        );
        let nj = not_judged(params, &h(500)).expect("too short");
        assert_eq!(nj.reason, Reason::TooShort);
        assert!(nj.why.contains("after the end at 0.500_000s"), "{}", nj.why);
    }

    #[test]
    fn nothing_proposed_is_vacuous() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .note("x")
            .end_ms(1000)
            .history();
        let nj = not_judged(json!({"within": "50ms"}), &h).expect("vacuous");
        assert_eq!(nj.reason, Reason::Vacuous);
        // A judged run is judged.
        assert_eq!(
            not_judged(json!({"within": "50ms"}), &history(Some(20))),
            None
        );
    }

    fn not_judged(
        params: serde_json::Value,
        h: &tenure_core::History,
    ) -> Option<crate::verdict::NotJudged> {
        let mut c = crate::build("decision-liveness", &params, &h.info.cluster).unwrap();
        for (i, r) in h.records.iter().enumerate() {
            assert!(c.on_record(i, r).is_none());
        }
        assert!(c.finish(&h.info).is_none());
        c.not_judged()
    }

    /// Issue 35: with `by_value`, a proposed value decided in another instance is
    /// decided; without it, its instance is not. A Byzantine node's decision does not
    /// count.
    #[test]
    fn by_value_judges_values_and_a_byzantine_decision_does_not_count() {
        let h = |liar: bool| {
            let h = H::nodes(3).at_ms(10).node(0).proposes(1, 5001);
            let h = if liar {
                h.node(1).obs(tenure_core::Observation::Byzantine {
                    behaviour: tenure_core::Byzantine::Silent,
                })
            } else {
                h
            };
            h.at_ms(20).node(1).decides(3, 5001).end_ms(1000).history()
        };
        let by_value = json!({"within": "100ms", "by_value": true});
        assert_eq!(
            judge_with("decision-liveness", by_value.clone(), &h(false)),
            None
        );
        assert!(judge_with("decision-liveness", json!({"within": "100ms"}), &h(false)).is_some());
        assert!(judge_with("decision-liveness", by_value, &h(true)).is_some());
    }
}
