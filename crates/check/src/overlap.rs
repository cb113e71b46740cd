//! Shared machinery of the "no two nodes believe X at one true instant" checkers
//! (single-leader-at-a-time-belief, mutual-exclusion-belief, lease-safety-belief): the open beliefs of one
//! thing (leadership, one lock, the lease) and the overlaps between them.
//!
//! Beliefs are half-open intervals `[since, end)` of true time. An overlap of two beliefs
//! is certain to exceed `max_overlap` at the first record whose time `now` satisfies
//! `now - max(since_a, since_b) > max_overlap` while both are still open: every record
//! before `now` has been applied, so both held throughout, and records at `now` itself
//! cannot shorten the overlap below `now - start`. Checking before applying each record
//! (and at the end of the run) therefore finds every overlap longer than the tolerance,
//! at the earliest record that makes it certain, and never flags beliefs that merely
//! touch (`A` ends at `t`, `B` starts at `t`).

use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{NodeId, SimTime};

/// One node's open belief.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Belief<D> {
    pub node: NodeId,
    pub since: SimTime,
    /// The record that began it.
    pub index: usize,
    /// What the checker wants to say about it (a term, a token).
    pub detail: D,
}

/// Two beliefs that have overlapped for longer than tolerated.
#[derive(Debug)]
pub(crate) struct Overlap<'a, D> {
    /// The belief that began first (ties: lower node id).
    pub first: &'a Belief<D>,
    pub second: &'a Belief<D>,
    /// When the overlap began: `second.since`.
    pub from: SimTime,
}

/// An overlap found but not yet measured: it is reported once one of its two beliefs
/// ends (or at the end of the run), with its TRUE length, not the lower bound it had
/// when it became certain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found<D> {
    pub first: Belief<D>,
    pub second: Belief<D>,
    /// When the overlap began: `second.since`.
    pub from: SimTime,
}

#[derive(Clone, Debug)]
pub(crate) struct Beliefs<D> {
    open: BTreeMap<NodeId, Belief<D>>,
}

impl<D> Default for Beliefs<D> {
    fn default() -> Self {
        Beliefs {
            open: BTreeMap::new(),
        }
    }
}

impl<D> Beliefs<D> {
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub fn get(&self, node: NodeId) -> Option<&Belief<D>> {
        self.open.get(&node)
    }

    pub fn get_mut(&mut self, node: NodeId) -> Option<&mut Belief<D>> {
        self.open.get_mut(&node)
    }

    /// `node` starts believing at `since`; it must not already believe.
    pub fn begin(&mut self, node: NodeId, since: SimTime, index: usize, detail: D) {
        let previous = self.open.insert(
            node,
            Belief {
                node,
                since,
                index,
                detail,
            },
        );
        assert!(previous.is_none(), "{node} began a belief it already held");
    }

    /// `node` stops believing (no-op if it did not believe).
    pub fn end(&mut self, node: NodeId) -> Option<Belief<D>> {
        self.open.remove(&node)
    }

    /// Like [`Beliefs::overlong`], as an owned [`Found`] to be measured later.
    pub fn found(&self, now: SimTime, max_overlap: Duration) -> Option<Found<D>>
    where
        D: Clone,
    {
        self.overlong(now, max_overlap).map(|o| Found {
            first: o.first.clone(),
            second: o.second.clone(),
            from: o.from,
        })
    }

    /// Whether both beliefs of `found` are still open (the same beliefs, not new ones).
    pub fn still_open(&self, found: &Found<D>) -> bool {
        [&found.first, &found.second].iter().all(|b| {
            self.open
                .get(&b.node)
                .is_some_and(|open| open.index == b.index)
        })
    }

    /// The overlap that began earliest among those that, at `now`, have lasted longer
    /// than `max_overlap` (ties: lowest node ids).
    pub fn overlong(&self, now: SimTime, max_overlap: Duration) -> Option<Overlap<'_, D>> {
        let mut best: Option<Overlap<'_, D>> = None;
        let all: Vec<&Belief<D>> = self.open.values().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                let (first, second) = if (b.since, b.node) < (a.since, a.node) {
                    (*b, *a)
                } else {
                    (*a, *b)
                };
                let from = second.since;
                let at_least = now.saturating_sub(from);
                if at_least <= max_overlap {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some(o) => {
                        (from, first.node, second.node) < (o.from, o.first.node, o.second.node)
                    }
                };
                if better {
                    best = Some(Overlap {
                        first,
                        second,
                        from,
                    });
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> SimTime {
        SimTime(n * 1_000_000)
    }

    #[test]
    fn touching_beliefs_do_not_overlap() {
        let mut b: Beliefs<()> = Beliefs::default();
        b.begin(NodeId(0), ms(0), 0, ());
        b.begin(NodeId(1), ms(10), 1, ());
        // At 10ms itself the overlap has lasted 0: node 0 may still end at 10ms.
        assert!(b.overlong(ms(10), Duration::ZERO).is_none());
        b.end(NodeId(0));
        assert!(b.overlong(ms(20), Duration::ZERO).is_none());
    }

    #[test]
    fn overlap_is_found_once_it_exceeds_the_tolerance() {
        let mut b: Beliefs<u64> = Beliefs::default();
        b.begin(NodeId(2), ms(0), 0, 7);
        b.begin(NodeId(1), ms(10), 1, 8);
        assert!(b.overlong(ms(15), Duration::from_millis(5)).is_none());
        let o = b.overlong(ms(16), Duration::from_millis(5)).unwrap();
        assert_eq!((o.first.node, o.second.node), (NodeId(2), NodeId(1)));
        assert_eq!(o.from, ms(10));
    }

    #[test]
    fn the_earliest_overlap_wins() {
        let mut b: Beliefs<()> = Beliefs::default();
        b.begin(NodeId(0), ms(0), 0, ());
        b.begin(NodeId(3), ms(5), 1, ());
        b.begin(NodeId(1), ms(9), 2, ());
        let o = b.overlong(ms(20), Duration::ZERO).unwrap();
        assert_eq!(
            (o.first.node, o.second.node, o.from),
            (NodeId(0), NodeId(3), ms(5))
        );
    }
}
