//! Shared machinery of the ACTION checkers (`mutual-exclusion`, `lease-safety`,
//! `single-leader-at-a-time`): what nodes *do* on the strength of a lock, a lease or a
//! leadership, judged in true time. The belief checkers (`*-belief`, built on
//! [`crate::overlap`]) judge what nodes *believe*; a paused holder keeps believing, but
//! a correct one checks its clock before it acts again, and a belief that is never
//! acted on harms no one.
//!
//! **Sections.** A node's *section* of one thing (a resource, the leadership) is the
//! closed interval of true time from its first action to its latest action under one
//! belief. A section ends when the node begins a *new* belief of that thing (it was not
//! believing before: a fresh `Holds`, `LeaseStart`, `Leader`), crashes or restarts. Giving
//! up the belief (`Releases`, `LeaseEnd`, stepping down) does NOT end the section: a
//! client whose lock expired while it was paused and that writes on waking still acts on
//! the strength of that old hold (the stale write of Kleppmann's GC pause), and that
//! action belongs to the section it started.
//!
//! **Interleaving.** Sections `[a1, a2]` and `[b1, b2]` of two distinct nodes interleave
//! when their common span `[max(a1, b1), min(a2, b2)]` has a positive length, or when
//! one is a single instant strictly inside the other (`a1 < b1 = b2 < a2`: `b` acted
//! between two actions of `a`). Sections that merely touch (`a2 = b1`) do not. With a
//! tolerance `max_overlap > 0`, interleavings whose common span is at most
//! `max_overlap` are tolerated.
//!
//! **Reporting.** An interleaving is certain at the action that makes it one, but its
//! length is not known yet: both sections may go on. It is reported with its TRUE
//! common span once both sections have ended (or at the end of the run, from what was
//! acted by then), so a message never says "at least 4 ms" of an overlap that lasted
//! seconds.

use std::collections::BTreeMap;
use std::time::Duration;
use tenure_core::{NodeId, SimTime};

/// One node's actions under one belief.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Section {
    pub node: NodeId,
    /// What the checker says about it: the token or term of its first action.
    pub detail: u64,
    pub first: SimTime,
    pub first_index: usize,
    pub last: SimTime,
    pub last_index: usize,
    pub actions: usize,
    pub open: bool,
}

impl Section {
    fn is_instant(&self) -> bool {
        self.first == self.last
    }
}

/// Two sections of distinct nodes that interleaved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Interleaving {
    pub thing: String,
    /// The section that began first (ties: lower node id).
    pub earlier: Section,
    pub later: Section,
}

impl Interleaving {
    /// The length of the common span of the two sections (zero when one node acted at a
    /// single instant between two actions of the other).
    pub fn common(&self) -> Duration {
        common(&self.earlier, &self.later)
    }

    /// The records involved (first and last action of each section), sorted, distinct.
    pub fn records(&self) -> Vec<usize> {
        let mut records = vec![
            self.earlier.first_index,
            self.earlier.last_index,
            self.later.first_index,
            self.later.last_index,
        ];
        records.sort_unstable();
        records.dedup();
        records
    }
}

fn common(a: &Section, b: &Section) -> Duration {
    let lo = a.first.max(b.first);
    let hi = a.last.min(b.last);
    hi.saturating_sub(lo)
}

fn interleave(a: &Section, b: &Section) -> bool {
    let lo = a.first.max(b.first);
    let hi = a.last.min(b.last);
    let strictly_inside =
        |p: &Section, q: &Section| p.is_instant() && q.first < p.first && p.first < q.last;
    lo < hi || strictly_inside(a, b) || strictly_inside(b, a)
}

/// The sections of every thing, and the first interleaving found.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sections {
    max_overlap: Duration,
    /// thing -> sections that may still interleave with a future action: every open
    /// one (at most one per node) and the closed ones that end after some open one
    /// began.
    by_thing: BTreeMap<String, Vec<Section>>,
    /// The first interleaving, kept up to date until both its sections end.
    found: Option<Interleaving>,
}

impl Sections {
    pub fn new(max_overlap: Duration) -> Sections {
        Sections {
            max_overlap,
            by_thing: BTreeMap::new(),
            found: None,
        }
    }

    /// `node` acts on `thing` at `time` (record `index`); `detail` is its token or term.
    pub fn act(&mut self, thing: &str, node: NodeId, time: SimTime, index: usize, detail: u64) {
        let sections = self.by_thing.entry(thing.to_string()).or_default();
        let mine = match sections.iter().position(|s| s.node == node && s.open) {
            Some(i) => {
                let s = &mut sections[i];
                assert!(time >= s.last, "actions out of true-time order");
                s.last = time;
                s.last_index = index;
                s.actions += 1;
                i
            }
            None => {
                sections.push(Section {
                    node,
                    detail,
                    first: time,
                    first_index: index,
                    last: time,
                    last_index: index,
                    actions: 1,
                    open: true,
                });
                sections.len() - 1
            }
        };
        if let Some(found) = &mut self.found {
            for s in [&mut found.earlier, &mut found.later] {
                if found.thing == thing && s.node == node && s.open {
                    s.last = time;
                    s.last_index = index;
                    s.actions += 1;
                }
            }
            return;
        }
        let me = &sections[mine];
        let mut best: Option<&Section> = None;
        for other in sections.iter() {
            if other.node == node || !interleave(me, other) {
                continue;
            }
            if !self.max_overlap.is_zero() && common(me, other) <= self.max_overlap {
                continue;
            }
            if best.is_none_or(|b| (other.first, other.node) < (b.first, b.node)) {
                best = Some(other);
            }
        }
        if let Some(other) = best {
            let (earlier, later) = if (other.first, other.node) <= (me.first, me.node) {
                (other.clone(), me.clone())
            } else {
                (me.clone(), other.clone())
            };
            self.found = Some(Interleaving {
                thing: thing.to_string(),
                earlier,
                later,
            });
        }
    }

    /// `node`'s section of `thing` (of every thing if `None`) ends: it began a new
    /// belief, crashed or restarted.
    pub fn end(&mut self, thing: Option<&str>, node: NodeId) {
        if let Some(found) = &mut self.found {
            if thing.is_none_or(|t| t == found.thing) {
                for s in [&mut found.earlier, &mut found.later] {
                    if s.node == node {
                        s.open = false;
                    }
                }
            }
        }
        for (name, sections) in self.by_thing.iter_mut() {
            if thing.is_some_and(|t| t != name) {
                continue;
            }
            for s in sections.iter_mut() {
                if s.node == node {
                    s.open = false;
                }
            }
            // A closed section that ended before every open one began cannot
            // interleave with anything acted from now on.
            let oldest_open = sections.iter().filter(|s| s.open).map(|s| s.first).min();
            sections.retain(|s| s.open || oldest_open.is_some_and(|o| s.last > o));
        }
        self.by_thing.retain(|_, sections| !sections.is_empty());
    }

    /// The interleaving found, once both its sections have ended (its length is final).
    pub fn take_done(&mut self) -> Option<Interleaving> {
        if self
            .found
            .as_ref()
            .is_some_and(|f| !f.earlier.open && !f.later.open)
        {
            return self.found.take();
        }
        None
    }

    /// End of run: the interleaving found, if any, measured from what was acted.
    pub fn finish(&mut self) -> Option<Interleaving> {
        self.found.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> SimTime {
        SimTime(n * 1_000_000)
    }

    #[test]
    fn touching_and_disjoint_sections_do_not_interleave() {
        let mut s = Sections::new(Duration::ZERO);
        s.act("r", NodeId(0), ms(0), 0, 1);
        s.act("r", NodeId(0), ms(10), 1, 1);
        s.act("r", NodeId(1), ms(10), 2, 2);
        s.end(Some("r"), NodeId(0));
        s.act("r", NodeId(1), ms(20), 3, 2);
        s.end(None, NodeId(1));
        s.act("r", NodeId(0), ms(30), 4, 3);
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn one_action_between_two_of_another_node_interleaves() {
        let mut s = Sections::new(Duration::ZERO);
        s.act("r", NodeId(0), ms(0), 0, 1);
        s.act("r", NodeId(1), ms(5), 1, 2);
        s.end(Some("r"), NodeId(1));
        assert_eq!(s.take_done(), None);
        // n0 acts again on its old section: the stale action.
        s.act("r", NodeId(0), ms(9), 2, 1);
        assert_eq!(s.take_done(), None, "n0's section is still open");
        s.act("r", NodeId(0), ms(12), 3, 1);
        s.end(Some("r"), NodeId(0));
        let found = s.take_done().unwrap();
        assert_eq!(
            (found.earlier.node, found.later.node),
            (NodeId(0), NodeId(1))
        );
        assert_eq!(found.later.first, ms(5));
        assert_eq!(found.common(), Duration::ZERO);
        assert_eq!(found.earlier.last, ms(12));
        assert_eq!(found.records(), vec![0, 1, 3]);
    }

    #[test]
    fn the_common_span_is_reported_in_full_and_tolerance_applies_to_it() {
        let run = |tolerance_ms: u64| {
            let mut s = Sections::new(Duration::from_millis(tolerance_ms));
            s.act("r", NodeId(0), ms(0), 0, 1);
            s.act("r", NodeId(1), ms(100), 1, 2);
            s.act("r", NodeId(0), ms(150), 2, 1);
            s.act("r", NodeId(0), ms(2500), 3, 1);
            s.act("r", NodeId(1), ms(3000), 4, 2);
            s.finish()
        };
        let found = run(0).unwrap();
        assert_eq!(found.common(), Duration::from_millis(2400));
        assert!(run(2399).is_some());
        assert_eq!(run(2400), None);
    }

    #[test]
    fn a_crash_ends_the_section_and_old_sections_are_forgotten() {
        let mut s = Sections::new(Duration::ZERO);
        s.act("r", NodeId(0), ms(0), 0, 1);
        s.end(None, NodeId(0));
        s.act("r", NodeId(1), ms(5), 1, 2);
        s.act("r", NodeId(0), ms(7), 2, 3);
        s.act("r", NodeId(0), ms(8), 3, 3);
        assert!(s.by_thing["r"].iter().all(|x| x.open), "{:?}", s.by_thing);
        // n0's new section [7, 8] began after n1's single action: no interleaving.
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn different_things_never_interleave() {
        let mut s = Sections::new(Duration::ZERO);
        s.act("a", NodeId(0), ms(0), 0, 1);
        s.act("b", NodeId(1), ms(5), 1, 1);
        s.act("a", NodeId(0), ms(9), 2, 1);
        assert_eq!(s.finish(), None);
    }
}
