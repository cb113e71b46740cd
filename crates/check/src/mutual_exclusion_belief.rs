//! # mutual-exclusion-belief
//!
//! A teaching check: it judges what clients BELIEVE. `mutual-exclusion` judges what they
//! DO (their actions on the resource); a paused holder that keeps believing but never
//! acts again fails this check and passes that one.
//!
//! **Property:** for each resource, at no instant of true time do two distinct nodes
//! believe they hold its lock; overlaps of at most `max_overlap` are tolerated. With
//! `resource` set, only that resource is judged.
//!
//! A node believes it holds a resource from its `Holds { resource }` observation until
//! its `Releases { resource }` or until it crashes (`Crashed`; a `Started` process is
//! fresh and believes nothing). A repeated `Holds` continues the belief (with the new
//! token). A paused node keeps its belief. Beliefs are half-open intervals: one ending at
//! `t` and another starting at `t` do not overlap.
//!
//! **How it fails:** a lease-based lock expires while its holder is paused (GC, VM
//! stall) or its clock runs slow; another client acquires it; the first wakes up still
//! believing it holds the lock. Under a pause *every* lease-based lock fails this
//! property: mutual exclusion of belief cannot be had, only fencing at the resource
//! (see `fencing-safety`) keeps the resource safe. Also: Redis `SET NX` without `PX`
//! semantics done wrong, Redlock under clock jumps, unlocking someone else's lock.
//!
//! **Source:** Kleppmann, "How to do distributed locking" (2016), the process-pause
//! diagram ("unsafe lock"); seed article 003 ("only one node performs a critical
//! operation at a time").
//!
//! Online: an overlap is certain at the first record after it has lasted longer than
//! `max_overlap`; it is reported when one of the two beliefs ends (or at the end of the
//! run), with its true length.

use crate::overlap::{Beliefs, Found};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "mutual-exclusion-belief";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes BELIEVE they hold one lock at one true instant (teaching check)",
    property: "per resource, no two distinct nodes believe they hold it (from Holds until \
               Releases or crash) during one true-time overlap longer than max_overlap",
    source: "Kleppmann 2016, \"How to do distributed locking\"; seed article 003",
    params: "max_overlap (duration, default \"0s\"): overlaps up to this long are tolerated; \
             resource (string, optional): judge only this resource",
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

/// Two nodes believed they held one resource at the same time, for too long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoHolders {
    pub resource: String,
    pub first: NodeId,
    pub first_token: u64,
    pub first_since: SimTime,
    pub first_index: usize,
    pub second: NodeId,
    pub second_token: u64,
    pub second_since: SimTime,
    pub second_index: usize,
    /// How long the overlap lasted (until one belief ended, or the end of the run).
    pub lasted: Duration,
    /// The overlap was still going on when the run ended.
    pub at_end: bool,
    pub max_overlap: Duration,
}

impl fmt::Display for TwoHolders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both believed they held `{}` from {} for {}{} \
             ({} with token {} since {}, {} with token {} since {}; tolerated overlap {})",
            self.first,
            self.second,
            self.resource,
            self.second_since,
            show(self.lasted),
            if self.at_end {
                " (still at the end of the run)"
            } else {
                ""
            },
            self.first,
            self.first_token,
            self.first_since,
            self.second,
            self.second_token,
            self.second_since,
            format_duration(self.max_overlap)
        )
    }
}

impl From<TwoHolders> for Violation {
    fn from(v: TwoHolders) -> Violation {
        let mut records = vec![v.first_index, v.second_index];
        records.sort_unstable();
        Violation {
            checker: NAME,
            time: v.second_since,
            nodes: vec![v.first, v.second],
            message: v.to_string(),
            records,
        }
    }
}

pub struct MutualExclusionBelief {
    max_overlap: Duration,
    only: Option<String>,
    clock: TrueClock,
    /// resource -> open holder beliefs (detail: token). No empty entries.
    holders: BTreeMap<String, Beliefs<u64>>,
    /// The first overlap found, its resource, waiting for one of its beliefs to end.
    found: Option<(String, Found<u64>)>,
}

impl MutualExclusionBelief {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(MutualExclusionBelief {
            max_overlap: params.max_overlap.0,
            only: params.resource,
            clock: TrueClock::default(),
            holders: BTreeMap::new(),
            found: None,
        })
    }

    fn judged(&self, resource: &str) -> bool {
        self.only.as_deref().is_none_or(|r| r == resource)
    }

    /// The earliest overlap longer than tolerated at `now`, if any.
    fn overlong(&self, now: SimTime) -> Option<(String, Found<u64>)> {
        let mut best: Option<(String, Found<u64>)> = None;
        for (resource, beliefs) in &self.holders {
            let Some(o) = beliefs.found(now, self.max_overlap) else {
                continue;
            };
            if best.as_ref().is_some_and(|(_, b)| b.from <= o.from) {
                continue;
            }
            best = Some((resource.clone(), o));
        }
        best
    }

    fn report(&self, resource: String, o: Found<u64>, until: SimTime, at_end: bool) -> Violation {
        TwoHolders {
            resource,
            first: o.first.node,
            first_token: o.first.detail,
            first_since: o.first.since,
            first_index: o.first.index,
            second: o.second.node,
            second_token: o.second.detail,
            second_since: o.second.since,
            second_index: o.second.index,
            lasted: until.saturating_sub(o.from),
            at_end,
            max_overlap: self.max_overlap,
        }
        .into()
    }

    fn release(&mut self, node: NodeId, resource: &str) {
        if let Some(beliefs) = self.holders.get_mut(resource) {
            beliefs.end(node);
            if beliefs.is_empty() {
                self.holders.remove(resource);
            }
        }
    }
}

impl Checker for MutualExclusionBelief {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if self.found.is_none() {
            self.found = self.overlong(record.time);
        }
        match &record.obs {
            Observation::Holds { resource, token } if self.judged(resource) => {
                let beliefs = self.holders.entry(resource.clone()).or_default();
                match beliefs.get_mut(record.node) {
                    Some(belief) => belief.detail = *token,
                    None => beliefs.begin(record.node, record.time, index, *token),
                }
            }
            Observation::Releases { resource } => self.release(record.node, resource),
            Observation::Crashed | Observation::Started => {
                let held: Vec<String> = self.holders.keys().cloned().collect();
                for resource in held {
                    self.release(record.node, &resource);
                }
            }
            _ => {}
        }
        let ended = self.found.as_ref().is_some_and(|(resource, o)| {
            !self
                .holders
                .get(resource)
                .is_some_and(|beliefs| beliefs.still_open(o))
        });
        if ended {
            let (resource, o) = self.found.take().expect("found");
            return Some(self.report(resource, o, record.time, false));
        }
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        let found = self.found.take().or_else(|| self.overlong(end))?;
        Some(self.report(found.0, found.1, end, true))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::{json, Value};
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn taking_turns_passes_and_touching_holds_do_not_overlap() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 1)
            .at_ms(50)
            .node(2)
            .holds("orders", 2) // recorded before n1's release at the same instant
            .node(1)
            .releases("orders")
            .at_ms(80)
            .node(2)
            .releases("orders")
            .end_ms(100)
            .history();
        assert_eq!(judge_with("mutual-exclusion-belief", Value::Null, &h), None);
    }

    #[test]
    fn a_paused_holder_overlaps_the_next_one() {
        // n1 holds, is paused (keeps its belief), its lease expires, n2 acquires.
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 33)
            .note("paused")
            .at_ms(40)
            .node(2)
            .holds("orders", 34)
            .at_ms(45)
            .node(0)
            .note("unrelated")
            .at_ms(60)
            .node(1)
            .releases("orders")
            .end_ms(100)
            .history();
        let (at, v) = judge_with("mutual-exclusion-belief", Value::Null, &h).unwrap();
        // Certain at 45ms, reported when n1 releases at 60ms with the true length.
        assert_eq!(at, At::Record(4));
        assert_eq!(
            v.message,
            "n1 and n2 both believed they held `orders` from 0.040_000s for 0.020_000s \
             (n1 with token 33 since 0.010_000s, n2 with token 34 since 0.040_000s; \
             tolerated overlap 0s)"
        );
        assert_eq!(v.nodes, vec![NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![0, 2]);
        assert_eq!(v.time, SimTime(40_000_000));
    }

    #[test]
    fn a_crash_ends_the_hold() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("orders", 1)
            .at_ms(40)
            .node(1)
            .crash()
            .node(2)
            .holds("orders", 2)
            .end_ms(100)
            .history();
        assert_eq!(judge_with("mutual-exclusion-belief", Value::Null, &h), None);
    }

    #[test]
    fn different_resources_do_not_conflict_and_the_filter_skips_others() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(1)
            .holds("a", 1)
            .node(2)
            .holds("b", 1)
            .at_ms(20)
            .node(0)
            .holds("b", 2)
            .end_ms(100)
            .history();
        assert_eq!(
            judge_with("mutual-exclusion-belief", json!({"resource": "a"}), &h),
            None
        );
        let (at, v) = judge_with("mutual-exclusion-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert!(
            v.message
                .starts_with("n2 and n0 both believed they held `b`"),
            "{}",
            v.message
        );
    }

    #[test]
    fn an_overlap_exactly_at_the_tolerance_passes() {
        let history = |release_ms: u64| {
            H::nodes(2)
                .at_ms(0)
                .node(0)
                .holds("r", 1)
                .at_ms(100)
                .node(1)
                .holds("r", 2)
                .at_ms(release_ms)
                .node(0)
                .releases("r")
                .end_ms(1000)
                .history()
        };
        let params = json!({"max_overlap": "30ms"});
        assert_eq!(
            judge_with("mutual-exclusion-belief", params.clone(), &history(130)),
            None
        );
        let (at, _) = judge_with("mutual-exclusion-belief", params, &history(131)).unwrap();
        assert_eq!(at, At::Record(2));
    }
}
