//! Who believes what right now, as a run's observations go by: which node leads, which
//! holds a lock or a lease, which waits for one, which has an operation in flight.
//!
//! The simulator resolves the fault selectors `leader`, `holder` and `waiter` with it
//! (a fault aimed at "the holder" lands on whoever holds at that instant), the fuzzer's
//! coverage replays a history through it to say where each fault landed, and `tenure
//! cluster` resolves the same selectors from real nodes' logs: one definition for all
//! three.
//!
//! * **leads**: the node's last election record is `Leader` (not followed by
//!   `Follower`, `Candidate`, a crash or a restart).
//! * **holds**: it holds a lock (`Holds` not followed by `Releases`), a lease
//!   (`LeaseStart` not followed by `LeaseEnd`), or owns a resource (`Owns` not followed by
//!   `Disowns`); or it leads.
//! * **waits**: it waits for a lock (`Waiting` not followed by `Holds` or `GivesUp` for
//!   that resource) or stands for election (`Candidate`, until `Leader` or `Follower`).
//! * **in flight**: it waits (above), or has a client operation open (`Invoke` not yet
//!   `Complete`d; `Requested` not yet `Completed`).
//!
//! `Started` and `Crashed` end every belief of the node.

use crate::{NodeId, Observation};
use std::collections::BTreeSet;

/// One node's current beliefs. `since` values are the sequence number of the record that
/// began the belief (larger: more recent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NodeBeliefs {
    /// The term it believes it leads, and since when.
    leading: Option<(u64, u64)>,
    /// The locks it believes it holds, and since when it last began holding one.
    locks: BTreeSet<String>,
    locks_since: u64,
    /// Since when it holds a lease.
    lease: Option<u64>,
    /// The resources it owns, and since when it last began owning one.
    owns: BTreeSet<String>,
    owns_since: u64,
    /// The locks it waits for, and since when it has waited (without a break).
    waiting: BTreeSet<String>,
    waiting_since: u64,
    /// Since when it stands for election.
    candidate: Option<u64>,
    /// Whether it has a client operation open (`Invoke` not yet `Complete`d: one at a
    /// time per node).
    invoking: bool,
    /// The idempotency keys it requested and has not yet seen `Completed`.
    requests: BTreeSet<String>,
}

impl NodeBeliefs {
    fn holds_lock_or_lease(&self) -> Option<u64> {
        let lock = (!self.locks.is_empty()).then_some(self.locks_since);
        lock.max(self.lease)
    }

    fn waits(&self) -> Option<u64> {
        let lock = (!self.waiting.is_empty()).then_some(self.waiting_since);
        match (lock, self.candidate) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Every node's current beliefs (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Beliefs {
    nodes: Vec<NodeBeliefs>,
    seq: u64,
}

/// What a fault selector aims at (see [`Beliefs::select`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Aim {
    /// The node that believes it leads the highest term.
    Leader,
    /// A node that believes it holds a lock, a lease, a resource or a leadership.
    Holder,
    /// A node waiting for a lock or standing for election.
    Waiter,
}

impl Aim {
    /// As written in scenario files and traces.
    pub fn name(self) -> &'static str {
        match self {
            Aim::Leader => "leader",
            Aim::Holder => "holder",
            Aim::Waiter => "waiter",
        }
    }
}

/// Where a selector landed: the node, and whether it was re-aimed at the other kind
/// because nobody was of the kind asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selected {
    pub node: NodeId,
    /// `Some(kind)` when the node is of that kind instead of the one asked for.
    pub reaimed: Option<Aim>,
}

impl Beliefs {
    /// No beliefs yet, for a cluster of `nodes` nodes.
    pub fn new(nodes: usize) -> Beliefs {
        Beliefs {
            nodes: vec![NodeBeliefs::default(); nodes],
            seq: 0,
        }
    }

    fn slot(&mut self, node: NodeId) -> &mut NodeBeliefs {
        let i = node.index();
        if i >= self.nodes.len() {
            self.nodes.resize(i + 1, NodeBeliefs::default());
        }
        &mut self.nodes[i]
    }

    /// Takes in one observation of `node`.
    pub fn apply(&mut self, node: NodeId, obs: &Observation) {
        self.seq += 1;
        let seq = self.seq;
        let b = self.slot(node);
        match obs {
            Observation::Started | Observation::Crashed => *b = NodeBeliefs::default(),
            Observation::Leader { term } => {
                b.leading = Some((*term, seq));
                b.candidate = None;
            }
            Observation::Follower { .. } => {
                b.leading = None;
                b.candidate = None;
            }
            Observation::Candidate { .. } => {
                b.leading = None;
                if b.candidate.is_none() {
                    b.candidate = Some(seq);
                }
            }
            Observation::LeaseStart { .. } => b.lease = Some(seq),
            Observation::LeaseEnd { .. } => b.lease = None,
            Observation::Waiting { resource } => {
                if b.waiting.is_empty() {
                    b.waiting_since = seq;
                }
                b.waiting.insert(resource.clone());
            }
            Observation::Holds { resource, .. } => {
                b.waiting.remove(resource);
                b.locks.insert(resource.clone());
                b.locks_since = seq;
            }
            Observation::Releases { resource } => {
                b.locks.remove(resource);
            }
            Observation::GivesUp { resource } => {
                b.waiting.remove(resource);
            }
            Observation::Owns { resource, .. } => {
                b.owns.insert(resource.clone());
                b.owns_since = seq;
            }
            Observation::Disowns { resource, .. } => {
                b.owns.remove(resource);
            }
            Observation::Invoke { .. } => b.invoking = true,
            Observation::Complete { .. } => b.invoking = false,
            Observation::Requested { key } => {
                b.requests.insert(key.clone());
            }
            Observation::Completed { key, .. } => {
                b.requests.remove(key);
            }
            _ => {}
        }
    }

    /// The node that believes it leads the highest term (lowest id on a tie), if any.
    pub fn leader(&self) -> Option<NodeId> {
        self.leader_where(|_| true)
    }

    fn leader_where(&self, ok: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        let mut best: Option<(u64, NodeId)> = None;
        for (i, b) in self.nodes.iter().enumerate() {
            let node = NodeId(i as u32);
            if let Some((term, _)) = b.leading {
                if ok(node) && best.is_none_or(|(t, _)| term > t) {
                    best = Some((term, node));
                }
            }
        }
        best.map(|(_, n)| n)
    }

    /// Whether `node` believes it leads.
    pub fn leads(&self, node: NodeId) -> bool {
        self.nodes
            .get(node.index())
            .is_some_and(|b| b.leading.is_some())
    }

    /// Whether `node` holds anything: a lock, a lease, a resource or a leadership.
    pub fn holds(&self, node: NodeId) -> bool {
        self.nodes.get(node.index()).is_some_and(|b| {
            b.leading.is_some() || b.holds_lock_or_lease().is_some() || !b.owns.is_empty()
        })
    }

    /// Whether `node` waits for a lock or stands for election.
    pub fn waits(&self, node: NodeId) -> bool {
        self.nodes
            .get(node.index())
            .is_some_and(|b| b.waits().is_some())
    }

    /// Whether `node` has an operation in flight: it waits (see [`Beliefs::waits`]) or
    /// has a client operation open.
    pub fn in_flight(&self, node: NodeId) -> bool {
        self.nodes
            .get(node.index())
            .is_some_and(|b| b.waits().is_some() || b.invoking || !b.requests.is_empty())
    }

    /// Whether any node holds anything.
    pub fn any_holder(&self) -> bool {
        (0..self.nodes.len()).any(|i| self.holds(NodeId(i as u32)))
    }

    /// Whether any node has an operation in flight.
    pub fn any_in_flight(&self) -> bool {
        (0..self.nodes.len()).any(|i| self.in_flight(NodeId(i as u32)))
    }

    /// The holder a fault aimed at "the holder" hits, among nodes `ok` accepts: the node
    /// that most recently began holding a lock or a lease it still holds; else the
    /// leader (as [`Beliefs::leader`]); else the node that most recently began owning a
    /// resource it still owns. Lowest id on a tie.
    pub fn holder(&self, ok: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        let freshest = |since: &dyn Fn(&NodeBeliefs) -> Option<u64>| {
            let mut best: Option<(u64, NodeId)> = None;
            for (i, b) in self.nodes.iter().enumerate() {
                let node = NodeId(i as u32);
                if let Some(s) = since(b) {
                    if ok(node) && best.is_none_or(|(t, _)| s > t) {
                        best = Some((s, node));
                    }
                }
            }
            best.map(|(_, n)| n)
        };
        freshest(&|b| b.holds_lock_or_lease())
            .or_else(|| self.leader_where(&ok))
            .or_else(|| freshest(&|b| (!b.owns.is_empty()).then_some(b.owns_since)))
    }

    /// The waiter a fault aimed at "the waiter" hits, among nodes `ok` accepts: the node
    /// that has waited longest for a lock, else the one that has stood longest for
    /// election. Lowest id on a tie.
    pub fn waiter(&self, ok: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        let longest = |since: &dyn Fn(&NodeBeliefs) -> Option<u64>| {
            let mut best: Option<(u64, NodeId)> = None;
            for (i, b) in self.nodes.iter().enumerate() {
                let node = NodeId(i as u32);
                if let Some(s) = since(b) {
                    if ok(node) && best.is_none_or(|(t, _)| s < t) {
                        best = Some((s, node));
                    }
                }
            }
            best.map(|(_, n)| n)
        };
        longest(&|b| (!b.waiting.is_empty()).then_some(b.waiting_since))
            .or_else(|| longest(&|b| b.candidate))
    }

    /// The node of the role `aim` names among the nodes `ok` accepts, without re-aiming
    /// at the other role: the leader ([`Beliefs::leader`]), the holder
    /// ([`Beliefs::holder`]), the waiter ([`Beliefs::waiter`]). What a fault aimed at a
    /// role that finds none waits for.
    pub fn of_role(&self, aim: Aim, ok: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        match aim {
            Aim::Leader => self.leader_where(&ok),
            Aim::Holder => self.holder(ok),
            Aim::Waiter => self.waiter(ok),
        }
    }

    /// Whether `node` is of the role `aim` names: it leads, holds ([`Beliefs::holds`])
    /// or waits ([`Beliefs::waits`]).
    pub fn is(&self, node: NodeId, aim: Aim) -> bool {
        match aim {
            Aim::Leader => self.leads(node),
            Aim::Holder => self.holds(node),
            Aim::Waiter => self.waits(node),
        }
    }

    /// The node `aim` selects among the nodes `ok` accepts. `leader` is strict; a
    /// `holder` that finds none is re-aimed at a waiter (the next holder), and a
    /// `waiter` that finds none at a holder (what the waiters wait for), so a fault
    /// aimed at a role is skipped only when nobody holds or waits.
    pub fn select(&self, aim: Aim, ok: impl Fn(NodeId) -> bool) -> Option<Selected> {
        let plain = |node| Selected {
            node,
            reaimed: None,
        };
        let other = |node, kind| Selected {
            node,
            reaimed: Some(kind),
        };
        let found = self.of_role(aim, &ok).map(plain);
        match aim {
            Aim::Leader => found,
            Aim::Holder => found.or_else(|| self.waiter(&ok).map(|n| other(n, Aim::Waiter))),
            Aim::Waiter => found.or_else(|| self.holder(&ok).map(|n| other(n, Aim::Holder))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(r: &str) -> Observation {
        Observation::Holds {
            resource: r.into(),
            token: 0,
        }
    }

    fn waiting(r: &str) -> Observation {
        Observation::Waiting { resource: r.into() }
    }

    #[test]
    fn the_holder_is_the_freshest_lock_or_lease_holder_then_the_leader() {
        let mut b = Beliefs::new(4);
        assert_eq!(b.holder(|_| true), None);
        b.apply(NodeId(0), &Observation::Leader { term: 3 });
        assert_eq!(b.holder(|_| true), Some(NodeId(0)), "a leader holds");
        b.apply(NodeId(1), &holds("r"));
        b.apply(NodeId(2), &holds("s"));
        assert_eq!(b.holder(|_| true), Some(NodeId(2)), "the freshest lock");
        assert_eq!(b.holder(|n| n != NodeId(2)), Some(NodeId(1)));
        b.apply(
            NodeId(2),
            &Observation::Releases {
                resource: "s".into(),
            },
        );
        assert_eq!(b.holder(|_| true), Some(NodeId(1)));
        b.apply(NodeId(1), &Observation::Crashed);
        assert_eq!(b.holder(|_| true), Some(NodeId(0)), "back to the leader");
        b.apply(NodeId(3), &Observation::LeaseStart { term: 4 });
        assert_eq!(b.holder(|_| true), Some(NodeId(3)));
        b.apply(NodeId(3), &Observation::LeaseEnd { term: 4 });
        assert!(!b.holds(NodeId(3)));
        assert_eq!(b.holder(|_| true), Some(NodeId(0)));
        assert_eq!(b.leader(), Some(NodeId(0)));
    }

    #[test]
    fn the_waiter_is_the_longest_waiting_and_holding_ends_waiting() {
        let mut b = Beliefs::new(3);
        b.apply(NodeId(2), &waiting("r"));
        b.apply(NodeId(1), &waiting("r"));
        assert_eq!(b.waiter(|_| true), Some(NodeId(2)));
        assert!(b.in_flight(NodeId(1)));
        b.apply(NodeId(2), &holds("r"));
        assert_eq!(b.waiter(|_| true), Some(NodeId(1)));
        assert!(!b.waits(NodeId(2)) && b.holds(NodeId(2)));
        b.apply(
            NodeId(1),
            &Observation::GivesUp {
                resource: "r".into(),
            },
        );
        assert_eq!(b.waiter(|_| true), None);
        // Candidates wait for a leadership.
        b.apply(NodeId(0), &Observation::Candidate { term: 2 });
        b.apply(NodeId(0), &Observation::Candidate { term: 3 });
        assert_eq!(b.waiter(|_| true), Some(NodeId(0)));
        b.apply(NodeId(0), &Observation::Leader { term: 3 });
        assert_eq!(b.waiter(|_| true), None);
    }

    #[test]
    fn a_selector_nobody_fits_is_re_aimed_at_the_other_kind_and_leader_is_strict() {
        let mut b = Beliefs::new(3);
        assert_eq!(b.select(Aim::Holder, |_| true), None);
        b.apply(NodeId(1), &waiting("r"));
        assert_eq!(
            b.select(Aim::Holder, |_| true),
            Some(Selected {
                node: NodeId(1),
                reaimed: Some(Aim::Waiter)
            })
        );
        assert_eq!(b.select(Aim::Leader, |_| true), None);
        b.apply(NodeId(1), &holds("r"));
        assert_eq!(
            b.select(Aim::Waiter, |_| true),
            Some(Selected {
                node: NodeId(1),
                reaimed: Some(Aim::Holder)
            })
        );
        assert_eq!(
            b.select(Aim::Holder, |_| true),
            Some(Selected {
                node: NodeId(1),
                reaimed: None
            })
        );
    }

    #[test]
    fn of_role_is_strict_and_is_says_which_role_a_node_has() {
        let mut b = Beliefs::new(3);
        b.apply(NodeId(1), &waiting("r"));
        assert_eq!(b.of_role(Aim::Holder, |_| true), None, "no re-aim");
        assert_eq!(b.of_role(Aim::Waiter, |_| true), Some(NodeId(1)));
        assert_eq!(b.of_role(Aim::Waiter, |n| n != NodeId(1)), None);
        assert!(b.is(NodeId(1), Aim::Waiter) && !b.is(NodeId(1), Aim::Holder));
        b.apply(NodeId(2), &Observation::Leader { term: 2 });
        assert_eq!(b.of_role(Aim::Leader, |_| true), Some(NodeId(2)));
        assert_eq!(
            b.of_role(Aim::Holder, |_| true),
            Some(NodeId(2)),
            "a leader holds"
        );
        assert!(b.is(NodeId(2), Aim::Leader) && b.is(NodeId(2), Aim::Holder));
    }

    #[test]
    fn open_operations_are_in_flight_until_they_complete() {
        let mut b = Beliefs::new(1);
        b.apply(NodeId(0), &Observation::Requested { key: "k".into() });
        assert!(b.in_flight(NodeId(0)) && b.any_in_flight());
        b.apply(
            NodeId(0),
            &Observation::Completed {
                key: "k".into(),
                ok: true,
            },
        );
        assert!(!b.any_in_flight());
    }
}
