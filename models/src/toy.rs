//! A toy protocol to show and test the explorer: a one-round majority vote.
//!
//! Each node may campaign once (timer `Campaign`): it votes for itself and asks its
//! peers. A node grants its single vote to the first request it sees, unless it voted
//! already. A majority of votes makes a leader of term 1. The `Forgetful` variant keeps
//! its vote only in memory, so after a restart it votes again: two leaders of term 1.

use std::collections::BTreeSet;
use std::time::Duration;
use tenure_core::{Cluster, Env, NodeId, Observation, Protocol, StorageExt};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Correct,
    Forgetful,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Vote {
    me: NodeId,
    size: usize,
    forgetful: bool,
    voted: Option<NodeId>,
    votes: BTreeSet<NodeId>,
    leader: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    RequestVote,
    Granted,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timer {
    Campaign,
}

type E<'a> = dyn Env<Msg, Timer> + 'a;

impl Vote {
    fn vote_for(&mut self, env: &mut E<'_>, node: NodeId) {
        self.voted = Some(node);
        env.store("voted", &node.0);
    }
}

impl Protocol for Vote {
    type Msg = Msg;
    type Timer = Timer;
    type Config = Variant;

    fn new(config: &Variant, me: NodeId, cluster: &Cluster) -> Self {
        Vote {
            me,
            size: cluster.size(),
            forgetful: *config == Variant::Forgetful,
            voted: None,
            votes: BTreeSet::new(),
            leader: false,
        }
    }

    fn on_start(&mut self, env: &mut E<'_>) {
        if !self.forgetful {
            self.voted = env.load::<u32>("voted").map(NodeId);
        }
        if self.voted.is_none() {
            env.set_timer(Timer::Campaign, Duration::from_millis(10));
        }
    }

    fn on_message(&mut self, env: &mut E<'_>, from: NodeId, msg: Msg) {
        match msg {
            Msg::RequestVote => {
                if self.voted.is_none() {
                    self.vote_for(env, from);
                    env.cancel_timer(&Timer::Campaign);
                    env.send(from, Msg::Granted);
                }
            }
            Msg::Granted => {
                if self.voted == Some(self.me) && !self.leader {
                    self.votes.insert(from);
                    if self.votes.len() * 2 > self.size {
                        self.leader = true;
                        env.observe(Observation::Leader { term: 1 });
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, env: &mut E<'_>, _timer: Timer) {
        if self.voted.is_some() {
            return;
        }
        let me = self.me;
        self.vote_for(env, me);
        self.votes.insert(me);
        env.observe(Observation::Candidate { term: 1 });
        let peers: Vec<NodeId> = env.cluster().peers(me).collect();
        for peer in peers {
            env.send(peer, Msg::RequestVote);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::property::{checker, one_leader_at_a_time, stored_at_most};
    use crate::{Action, Bounds, Explorer, State};

    fn explorer(variant: Variant, bounds: Bounds) -> Explorer<Vote> {
        let cluster = Cluster::uniform("node", 3);
        let per_term = checker("single-leader-per-term", &serde_json::Value::Null, &cluster);
        Explorer::new(variant, cluster, bounds).check(per_term.expect("known checker"))
    }

    fn crashes(n: u32) -> Bounds {
        Bounds::DEFAULT.with_max_crashes(n)
    }

    #[test]
    fn initial_state_starts_every_node_and_sets_its_timer() {
        let cluster = Cluster::uniform("node", 2);
        let (state, records) =
            State::<Vote>::initial(&Variant::Correct, &cluster, &Bounds::default());
        assert_eq!(
            records
                .iter()
                .map(|r| (r.node, r.obs.clone()))
                .collect::<Vec<_>>(),
            vec![
                (NodeId(0), Observation::Started),
                (NodeId(1), Observation::Started)
            ]
        );
        for node in &state.nodes {
            assert_eq!(node.timers, BTreeSet::from([Timer::Campaign]));
            assert_eq!(node.steps, 1);
        }
        assert!(state.in_flight.is_empty());
        assert_eq!(
            state
                .actions(&Bounds::default())
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["n0 timer Campaign fired", "n1 timer Campaign fired"]
        );
    }

    #[test]
    fn actions_respect_the_fault_budgets() {
        let cluster = Cluster::uniform("node", 2);
        let (mut state, _) =
            State::<Vote>::initial(&Variant::Correct, &cluster, &Bounds::default());
        let fire = Action::Fire {
            node: NodeId(0),
            timer: Timer::Campaign,
        };
        let records = state.apply(&Variant::Correct, &cluster, &Bounds::default(), &fire, 1);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].obs, Observation::Candidate { term: 1 });
        assert_eq!(records[0].mono, tenure_core::LocalTime(2_000_000));
        let bounds = Bounds::DEFAULT
            .with_max_crashes(1)
            .with_max_drops(1)
            .with_max_duplicates(1);
        let names: Vec<String> = state
            .actions(&bounds)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            vec![
                "n0 -> n1 RequestVote delivered",
                "message n0 -> n1 RequestVote dropped",
                "message n0 -> n1 RequestVote duplicated",
                "n1 timer Campaign fired",
                "n0 crashed",
                "n1 crashed",
            ]
        );
        let dup = Action::Duplicate {
            from: NodeId(0),
            to: NodeId(1),
            msg: Msg::RequestVote,
        };
        state.apply(&Variant::Correct, &cluster, &Bounds::default(), &dup, 2);
        assert_eq!(
            state.in_flight.values().copied().collect::<Vec<_>>(),
            vec![2]
        );
        let names: Vec<String> = state
            .actions(&bounds)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(!names.iter().any(|n| n.contains("duplicated")));
        state.apply(
            &Variant::Correct,
            &cluster,
            &Bounds::default(),
            &Action::Crash { node: NodeId(1) },
            3,
        );
        let names: Vec<String> = state
            .actions(&bounds)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            vec!["message n0 -> n1 RequestVote dropped", "n1 restarted"],
            "a down node gets no delivery, and the crash budget is spent"
        );
    }

    #[test]
    fn an_isolation_loses_every_message_to_or_from_one_node_in_one_step() {
        // Three nodes: n0 and n2 campaign, so n0 -> n1, n0 -> n2, n2 -> n0 and n2 -> n1
        // are in flight. Isolating n1 loses the two addressed to it and nothing else.
        let cluster = Cluster::uniform("node", 3);
        let bounds = Bounds::DEFAULT.with_max_isolations(1);
        let (mut state, _) = State::<Vote>::initial(&Variant::Correct, &cluster, &bounds);
        let isolations = |state: &State<Vote>| -> Vec<String> {
            state
                .actions(&bounds)
                .iter()
                .filter(|a| matches!(a, Action::Isolate { .. }))
                .map(ToString::to_string)
                .collect()
        };
        assert!(
            isolations(&state).is_empty(),
            "nothing in flight: no isolation is enabled"
        );
        for node in [0, 2] {
            let fire = Action::Fire {
                node: NodeId(node),
                timer: Timer::Campaign,
            };
            state.apply(&Variant::Correct, &cluster, &bounds, &fire, 1);
        }
        assert_eq!(state.in_flight.len(), 4);
        assert_eq!(
            isolations(&state),
            vec![
                "n0 isolated: every message in flight to or from it lost",
                "n1 isolated: every message in flight to or from it lost",
                "n2 isolated: every message in flight to or from it lost",
            ]
        );
        let before = state.fingerprint();
        let records = state.apply(
            &Variant::Correct,
            &cluster,
            &bounds,
            &Action::Isolate { node: NodeId(1) },
            3,
        );
        assert!(records.is_empty(), "no node sees an isolation");
        assert_ne!(state.fingerprint(), before);
        assert_eq!(
            state
                .in_flight
                .keys()
                .map(|(from, to, _)| (from.0, to.0))
                .collect::<Vec<_>>(),
            vec![(0, 2), (2, 0)]
        );
        assert_eq!((state.isolations, state.drops), (1, 0));
        assert!(isolations(&state).is_empty(), "the budget is spent");
    }

    #[test]
    fn correct_vote_passes_exhaustively_with_one_crash() {
        let report = explorer(Variant::Correct, crashes(1)).explore();
        assert!(report.counterexample.is_none(), "{report}");
        assert!(report.complete);
        assert_eq!(report.unique_states, 1_922, "{report}");
        assert_eq!(report.max_depth_reached, 11, "{report}");
    }

    #[test]
    fn forgetful_vote_is_found_with_a_shortest_counterexample() {
        let report = explorer(Variant::Forgetful, crashes(1)).explore();
        let cex = report.counterexample.expect("the planted bug is found");
        println!("{cex}");
        assert_eq!(cex.property, "single-leader-per-term");
        assert_eq!(cex.depth, 8);
        assert_eq!(
            cex.message,
            "n0 and n2 both believed they led term 1 (n0 from 0.003_000s, n2 from 0.008_000s)"
        );
        // n0 wins with n1's vote, crashes, forgets it voted for itself, and votes n2 in.
        assert_eq!(
            cex.steps,
            vec![
                "n0 timer Campaign fired",
                "n0 -> n1 RequestVote delivered",
                "n1 -> n0 Granted delivered",
                "n2 timer Campaign fired",
                "n0 crashed",
                "n0 restarted",
                "n2 -> n0 RequestVote delivered",
                "n0 -> n2 Granted delivered",
            ]
        );
    }

    #[test]
    fn without_crashes_the_forgetful_vote_is_safe() {
        let report = explorer(Variant::Forgetful, crashes(0)).explore();
        assert!(report.counterexample.is_none(), "{report}");
        assert!(report.complete);
    }

    #[test]
    fn state_invariant_sees_two_leaders_at_once() {
        let report =
            Explorer::<Vote>::new(Variant::Forgetful, Cluster::uniform("node", 3), crashes(1))
                .invariant("one-leader-at-a-time", one_leader_at_a_time())
                .explore();
        let cex = report.counterexample.expect("two leaders at once");
        assert_eq!(cex.property, "one-leader-at-a-time");
        assert_eq!(
            cex.message,
            "2 nodes believe they lead at once: n0 (term 1), n2 (term 1)"
        );
        assert_eq!(cex.depth, 8);
    }

    #[test]
    fn max_states_cuts_the_search_short() {
        let report = explorer(
            Variant::Correct,
            Bounds::DEFAULT.with_max_states(100).with_max_crashes(1),
        )
        .explore();
        assert!(!report.complete);
        assert_eq!(report.unique_states, 100);
    }

    #[test]
    fn a_constraint_prunes_states() {
        // "voted" holds a node id: keeping only votes for n0 prunes every other vote.
        let report = explorer(Variant::Correct, crashes(0))
            .within(stored_at_most("voted", 0))
            .explore();
        assert!(report.pruned > 0);
        assert!(report.unique_states < 1_922);
    }

    #[test]
    fn random_walks_find_the_forgetful_vote() {
        let report = explorer(Variant::Forgetful, crashes(1)).walk(0..10_000, 20);
        let failure = report.failure.expect("some seed finds it");
        assert_eq!(failure.counterexample.property, "single-leader-per-term");
        // Same seed, same walk.
        let again =
            explorer(Variant::Forgetful, crashes(1)).walk(failure.seed..failure.seed + 1, 20);
        assert_eq!(
            again.failure.unwrap().counterexample,
            failure.counterexample
        );
        let safe = explorer(Variant::Correct, crashes(1)).walk(0..200, 20);
        assert!(safe.failure.is_none());
        assert_eq!(safe.seeds_run, 200);
    }
}
