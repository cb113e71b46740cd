//! Running a [`Sim`] with checkers online, and scheduling a timeline of fault events
//! written as data ([`FaultEvent`]s: a scenario's timeline, a fuzz profile's draw, or a
//! proptest strategy's value). This is the one "run a seed with checkers" path: scenario
//! runs ([`crate::play`]), fuzzing and the `tenure` facade all go through
//! [`Sim::run_checked`].

use crate::play;
use crate::run::{RunOutput, Sim};
use std::sync::{Arc, Mutex};
use tenure_check::verdict::{self, CheckVerdict, StoppedAt};
use tenure_check::{Checker, Judged, Violation};
use tenure_core::{Protocol, SimTime};
use tenure_scenario::FaultEvent;

/// A run and what its checkers found.
pub struct CheckedRun {
    pub output: RunOutput,
    /// The first violation of each checker that found one, in checker order.
    pub violations: Vec<Violation>,
    /// What each checker judged, in checker order (a vacuous one judged nothing).
    pub judged: Vec<Judged>,
    /// Each checker's verdict, in checker order: pass, fail, or not judged and why.
    pub verdicts: Vec<CheckVerdict>,
}

impl<P: Protocol> Sim<P> {
    /// Schedules every event of `events` at its time. An event aimed at "the leader"
    /// with no leader at that instant is skipped; one aimed at "the holder" or "the
    /// waiter" when nobody holds or waits waits for one, up to the timeline's next heal
    /// ([`FaultEvent::aim_deadline`]), and is skipped only then. The trace says so.
    pub fn timeline(mut self, events: &[FaultEvent]) -> Self {
        let end = self.duration;
        for (i, event) in events.iter().enumerate() {
            let fault = event.fault.clone();
            let until = FaultEvent::aim_deadline(events, i, end).map(SimTime::from_duration);
            self = self.at(event.at, move |c| {
                play::apply_or_wait(c, &fault, until, None)
            });
        }
        self
    }

    /// Runs the seed with `checkers` fed every record as it is made, then finished at
    /// the end. With `stop_at_first_violation` the run stops at the first violation
    /// (fuzzing: the rest of the run cannot un-break a property), and checkers that
    /// found nothing by then are not finished.
    pub fn run_checked(
        self,
        checkers: Vec<Box<dyn Checker>>,
        stop_at_first_violation: bool,
    ) -> CheckedRun {
        let slots: Vec<Option<Violation>> = checkers.iter().map(|_| None).collect();
        let state = Arc::new(Mutex::new((checkers, slots)));
        let hook_state = state.clone();
        let output = self
            .on_record(Box::new(move |index, record| {
                let mut guard = hook_state.lock().unwrap_or_else(|p| p.into_inner());
                let (checkers, slots) = &mut *guard;
                let mut found = false;
                for (checker, slot) in checkers.iter_mut().zip(slots.iter_mut()) {
                    if slot.is_none() {
                        *slot = checker.on_record(index, record);
                        found |= slot.is_some();
                    }
                }
                found && stop_at_first_violation
            }))
            .run();
        let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
        let (checkers, slots) = &mut *guard;
        if !output.stopped_early {
            for (checker, slot) in checkers.iter_mut().zip(slots.iter_mut()) {
                if slot.is_none() {
                    *slot = checker.finish(&output.history.info);
                }
            }
        }
        let stopped =
            output
                .stopped_early
                .then(|| match slots.iter().flatten().min_by_key(|v| v.time) {
                    Some(first) => StoppedAt {
                        time: first.time,
                        because: format!("{} was violated", first.checker),
                    },
                    None => StoppedAt {
                        time: output.history.info.end,
                        because: output
                            .stats
                            .stopped_by
                            .as_ref()
                            .map_or("stopped".to_string(), |s| s.to_string()),
                    },
                });
        let verdicts = verdict::verdicts(checkers, slots.clone(), stopped.as_ref());
        let judged = verdicts.iter().map(|v| v.judged.clone()).collect();
        let violations = slots.iter_mut().filter_map(Option::take).collect();
        CheckedRun {
            output,
            violations,
            judged,
            verdicts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tenure_core::{Cluster, Configurable, NodeId};
    use tenure_protocols::raft::Raft;
    use tenure_scenario::{Fault, NodeSel};

    fn raft(variant: &str, cluster: &Cluster) -> <Raft as Protocol>::Config {
        Raft::configure_named(Default::default(), variant, cluster).unwrap()
    }

    fn checkers(cluster: &Cluster, names: &[&str]) -> Vec<Box<dyn Checker>> {
        names
            .iter()
            .map(|n| tenure_check::build(n, &serde_json::Value::Null, cluster).unwrap())
            .collect()
    }

    #[test]
    fn a_correct_run_passes_and_finishes_every_checker() {
        let cluster = Cluster::uniform("node", 3);
        let run = Sim::<Raft>::new(cluster.clone(), raft("correct", &cluster), 1)
            .duration(Duration::from_secs(5))
            .run_checked(
                checkers(&cluster, &["single-leader-per-term", "leader-liveness"]),
                true,
            );
        assert!(run.violations.is_empty(), "{:?}", run.violations);
        assert!(!run.output.stopped_early);
        assert!(run.output.stats.messages_delivered > 0);
    }

    #[test]
    fn finish_judges_liveness_when_no_node_ever_runs() {
        // Every node crashes at once and stays down: leader-liveness fails at the end.
        let cluster = Cluster::uniform("node", 3);
        let events: Vec<FaultEvent> = (0..3)
            .map(|n| FaultEvent {
                at: Duration::from_millis(1),
                fault: Fault::Crash {
                    node: NodeSel::Id(n),
                },
            })
            .collect();
        let run = Sim::<Raft>::new(cluster.clone(), raft("correct", &cluster), 1)
            .duration(Duration::from_secs(10))
            .timeline(&events)
            .run_checked(checkers(&cluster, &["leader-liveness"]), true);
        assert_eq!(run.violations.len(), 1);
        assert_eq!(run.violations[0].checker, "leader-liveness");
        let crashed: Vec<NodeId> = run
            .output
            .history
            .records
            .iter()
            .filter(|r| r.obs == tenure_core::Observation::Crashed)
            .map(|r| r.node)
            .collect();
        assert_eq!(crashed, vec![NodeId(0), NodeId(1), NodeId(2)]);
    }
}
