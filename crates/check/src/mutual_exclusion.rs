//! # mutual-exclusion
//!
//! **Property:** for each resource, the ACTIONS of two distinct lock clients on it never
//! interleave in true time: no client acts on the resource as its holder (`Acts`: a read
//! or a write sent to it) between two actions another client made under one hold.
//! With `max_overlap` above zero, interleavings whose common span is at most that long
//! are tolerated. With `resource` set, only that resource is judged.
//!
//! A client's *section* runs from its first to its last action under one hold: it ends
//! when the client begins a new hold (a `Holds` while not holding), crashes or restarts,
//! NOT when it releases or its lock expires. A client that wakes from a pause and writes
//! with an expired lock acts under its old hold: that write is in the old section (see
//! `actions.rs` for the exact rule). A client that keeps *believing* but never acts
//! again harms no one and passes; `mutual-exclusion-belief` is the teaching check that
//! flags the belief.
//!
//! **How it fails:** a lease-based lock expires while its holder is paused between its
//! read and its write (GC, VM stall) or its clock runs slow; another client acquires,
//! reads and writes; the first wakes up and writes a value computed from its stale read.
//! Without fencing at the resource, no lease-based lock can prevent that (the resource
//! must refuse the stale write: `fencing-safety`). Also: Redis `SET NX` without
//! expiry semantics done wrong, Redlock under clock jumps, unlocking someone else's lock,
//! a waiter believing it holds a lock whose key was deleted while it waited (etcd clients
//! before v3.5.0).
//!
//! **Source:** Kleppmann, "How to do distributed locking" (2016), the process-pause
//! diagram ("unsafe lock"); seed article 003 ("only one node performs a critical
//! operation at a time").
//!
//! Online: an interleaving is reported once both sections have ended (or at the end of
//! the run), with its true common span.

use crate::actions::{Interleaving, Sections};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;
use tenure_core::{format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo};

pub const NAME: &str = "mutual-exclusion";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two clients ACT on one locked resource with interleaving actions",
    property: "per resource, no client acts on it (Acts) strictly between two actions of \
               another client under one hold (a hold's actions run from its first to its \
               last Acts, across an expiry, until a new hold, crash or restart); \
               interleavings whose common span is at most max_overlap are tolerated",
    source: "Kleppmann 2016, \"How to do distributed locking\"; seed article 003",
    params: "max_overlap (duration, default \"0s\"): interleavings with a common span up \
             to this long are tolerated (0s: none); resource (string, optional): judge \
             only this resource",
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default)]
    pub max_overlap: HumanDuration,
    /// Judge only this resource (default: every resource).
    #[serde(default)]
    pub resource: Option<String>,
}

/// Two clients' actions on one resource interleaved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterleavedHolders {
    pub resource: String,
    pub first: NodeId,
    pub first_token: u64,
    pub first_from: tenure_core::SimTime,
    pub first_to: tenure_core::SimTime,
    pub second: NodeId,
    pub second_token: u64,
    pub second_from: tenure_core::SimTime,
    pub second_to: tenure_core::SimTime,
    /// The length of the common span of the two sections.
    pub common: Duration,
    pub max_overlap: Duration,
    pub records: Vec<usize>,
}

impl InterleavedHolders {
    fn new(i: Interleaving, max_overlap: Duration) -> InterleavedHolders {
        InterleavedHolders {
            common: i.common(),
            records: i.records(),
            resource: i.thing,
            first: i.earlier.node,
            first_token: i.earlier.detail,
            first_from: i.earlier.first,
            first_to: i.earlier.last,
            second: i.later.node,
            second_token: i.later.detail,
            second_from: i.later.first,
            second_to: i.later.last,
            max_overlap,
        }
    }
}

impl fmt::Display for InterleavedHolders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both acted on `{}` as its holder: {} with token {} from {} to {}, \
             {} with token {} from {} to {}; their actions interleaved over {} \
             (tolerated overlap {})",
            self.first,
            self.second,
            self.resource,
            self.first,
            self.first_token,
            self.first_from,
            self.first_to,
            self.second,
            self.second_token,
            self.second_from,
            self.second_to,
            show(self.common),
            format_duration(self.max_overlap)
        )
    }
}

impl From<InterleavedHolders> for Violation {
    fn from(v: InterleavedHolders) -> Violation {
        Violation {
            checker: NAME,
            time: v.second_from,
            nodes: vec![v.first, v.second],
            message: v.to_string(),
            records: v.records,
        }
    }
}

pub struct MutualExclusion {
    max_overlap: Duration,
    only: Option<String>,
    clock: TrueClock,
    sections: Sections,
    /// (resource, node) pairs that believe they hold: a `Holds` outside them begins a
    /// new hold (and a new section).
    holding: BTreeSet<(String, NodeId)>,
}

impl MutualExclusion {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(MutualExclusion {
            max_overlap: params.max_overlap.0,
            only: params.resource,
            clock: TrueClock::default(),
            sections: Sections::new(params.max_overlap.0),
            holding: BTreeSet::new(),
        })
    }

    fn judged(&self, resource: &str) -> bool {
        self.only.as_deref().is_none_or(|r| r == resource)
    }
}

impl Checker for MutualExclusion {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let node = record.node;
        match &record.obs {
            Observation::Acts { resource, token } if self.judged(resource) => {
                self.sections
                    .act(resource, node, record.time, index, *token);
            }
            Observation::Holds { resource, .. } if self.judged(resource) => {
                // A hold while holding none begins a new section.
                let new_belief = self.holding.insert((resource.clone(), node));
                if new_belief {
                    self.sections.end(Some(resource), node);
                }
            }
            Observation::Releases { resource } => {
                self.holding.remove(&(resource.clone(), node));
            }
            Observation::Crashed | Observation::Started => {
                self.holding.retain(|(_, n)| *n != node);
                self.sections.end(None, node);
            }
            _ => {}
        }
        self.sections
            .take_done()
            .map(|i| InterleavedHolders::new(i, self.max_overlap).into())
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        self.sections
            .finish()
            .map(|i| InterleavedHolders::new(i, self.max_overlap).into())
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::{json, Value};
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn taking_turns_passes() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 1)
            .acts("orders", 1)
            .at_ms(40)
            .acts("orders", 1)
            .at_ms(50)
            .node(2)
            .holds("orders", 2) // recorded before n1's release at the same instant
            .acts("orders", 2)
            .node(1)
            .releases("orders")
            .at_ms(80)
            .node(2)
            .acts("orders", 2)
            .releases("orders")
            .end_ms(100)
            .history();
        assert_eq!(judge_with("mutual-exclusion", Value::Null, &h), None);
    }

    /// The GC-pause lesson, told by actions: the paused holder's write after waking
    /// falls in its old section, which the next holder's actions interleave.
    #[test]
    fn a_stale_write_after_a_pause_interleaves_with_the_next_holder() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 33)
            .acts("orders", 33) // read
            .note("paused")
            .at_ms(40)
            .node(2)
            .holds("orders", 34)
            .acts("orders", 34)
            .at_ms(60)
            .acts("orders", 34)
            .releases("orders")
            .at_ms(3000)
            .node(1)
            .releases("orders") // its validity timer, overdue
            .acts("orders", 33) // the stale write
            .end_ms(4000)
            .history();
        let (at, v) = judge_with("mutual-exclusion", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n1 and n2 both acted on `orders` as its holder: n1 with token 33 from 0.010_000s \
             to 3.000_000s, n2 with token 34 from 0.040_000s to 0.060_000s; their actions \
             interleaved over 0.020_000s (tolerated overlap 0s)"
        );
        assert_eq!(v.nodes, vec![NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![1, 4, 5, 8]);
        assert_eq!(v.time, SimTime(40_000_000));
    }

    /// The same pause, but the paused holder never acts again (it checks before acting,
    /// or the pause fell after its write): only its belief overlaps.
    #[test]
    fn a_paused_holder_that_does_not_act_again_passes_but_its_belief_overlaps() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 33)
            .acts("orders", 33)
            .at_ms(20)
            .acts("orders", 33)
            .note("paused")
            .at_ms(40)
            .node(2)
            .holds("orders", 34)
            .acts("orders", 34)
            .at_ms(60)
            .acts("orders", 34)
            .releases("orders")
            .at_ms(3000)
            .node(1)
            .releases("orders")
            .end_ms(4000)
            .history();
        assert_eq!(judge_with("mutual-exclusion", Value::Null, &h), None);
        let (at, v) = judge_with("mutual-exclusion-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(7));
        assert!(
            v.message.starts_with(
                "n1 and n2 both believed they held `orders` from 0.040_000s for 0.020_000s "
            ),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_crash_ends_the_section_and_is_reported_once_both_end() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 1)
            .acts("orders", 1)
            .at_ms(40)
            .node(1)
            .crash()
            .node(2)
            .holds("orders", 2)
            .acts("orders", 2)
            .at_ms(50)
            .node(1)
            .started()
            .end_ms(100)
            .history();
        assert_eq!(judge_with("mutual-exclusion", Value::Null, &h), None);

        // Two clients acting at once, both sections ended by new holds: reported at
        // the record that ends the second, with the full common span.
        let h = H::nodes(3)
            .at_ms(0)
            .node(1)
            .holds("r", 1)
            .acts("r", 1)
            .at_ms(100)
            .node(2)
            .holds("r", 1)
            .acts("r", 1)
            .at_ms(900)
            .node(1)
            .acts("r", 1)
            .releases("r")
            .at_ms(1000)
            .node(2)
            .acts("r", 1)
            .releases("r")
            .at_ms(2000)
            .node(1)
            .holds("r", 2)
            .at_ms(3000)
            .node(2)
            .holds("r", 3)
            .end_ms(4000)
            .history();
        let (at, v) = judge_with("mutual-exclusion", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(9));
        assert!(
            v.message.contains("interleaved over 0.800_000s"),
            "{}",
            v.message
        );
    }

    #[test]
    fn different_resources_do_not_conflict_and_the_filter_skips_others() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .acts("a", 1)
            .node(2)
            .acts("b", 1)
            .at_ms(20)
            .node(0)
            .acts("b", 2)
            .at_ms(30)
            .node(2)
            .acts("b", 1)
            .end_ms(100)
            .history();
        assert_eq!(
            judge_with("mutual-exclusion", json!({"resource": "a"}), &h),
            None
        );
        let (at, v) = judge_with("mutual-exclusion", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert!(
            v.message.starts_with("n2 and n0 both acted on `b`"),
            "{}",
            v.message
        );
    }

    #[test]
    fn an_interleaving_within_the_tolerance_passes() {
        let history = |last_ms: u64| {
            H::nodes(2)
                .at_ms(0)
                .node(0)
                .acts("r", 1)
                .at_ms(100)
                .node(1)
                .acts("r", 2)
                .at_ms(last_ms)
                .node(0)
                .acts("r", 1)
                .node(1)
                .acts("r", 2)
                .end_ms(1000)
                .history()
        };
        let params = json!({"max_overlap": "30ms"});
        assert_eq!(
            judge_with("mutual-exclusion", params.clone(), &history(130)),
            None
        );
        assert!(judge_with("mutual-exclusion", params, &history(131)).is_some());
        assert!(judge_with("mutual-exclusion", Value::Null, &history(130)).is_some());
    }
}
