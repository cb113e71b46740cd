//! # single-owner
//!
//! **Property:** in a sharded service, no resource is owned by two coordinators at one
//! instant of true time. Ownership is judged by actions, not beliefs: a coordinator owns
//! a resource from its `Owns { resource }` (it starts granting and serving the
//! resource's lock) until its `Disowns { resource }` (it stops: it handed the resource
//! over) or its crash (`Crashed`, or a fresh `Started`: a process that is down serves
//! nothing). Overlaps of at most `max_overlap` are tolerated; intervals are half-open, so
//! a hand-over at `t` to an owner starting at `t` is not an overlap.
//!
//! **How it fails:** a membership change (a coordinator joins or leaves the hash ring)
//! moves a resource from `a` to `b`, and `b` starts serving as soon as it learns the new
//! ring, without waiting for `a` to stop (to be fenced) and to hand over its lock table.
//! Until `a` learns the change too, both grant the resource's lock; a client holding it
//! from `a` is unknown to `b`, which grants it again.
//!
//! **Source:** Karger et al., "Consistent Hashing and Random Trees" (STOC 1997) for the
//! ring; DeCandia et al., "Dynamo" (SOSP 2007, §4.9 on adding and removing nodes: the
//! old owner hands its keys over); issue 13 ("no resource owned by two coordinators at
//! once, in true time, actions not beliefs").
//!
//! Online: an overlap is reported at the first record after it has lasted longer than
//! `max_overlap`.

use crate::overlap::Beliefs;
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "single-owner";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no resource of a sharded service is served by two coordinators at once",
    property: "per resource, no two distinct coordinators act as its owner (from Owns until \
               Disowns or crash) during one true-time overlap longer than max_overlap",
    source: "Karger et al. 1997 (consistent hashing); DeCandia et al. 2007, Dynamo §4.9 \
             (hand-over on membership change); issue 13",
    params: "max_overlap (duration, default \"0s\"): overlaps up to this long are tolerated",
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default)]
    pub max_overlap: HumanDuration,
}

/// Two coordinators acted as the owner of one resource at the same time, for too long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoOwners {
    pub resource: String,
    pub first: NodeId,
    pub first_epoch: u64,
    pub first_since: SimTime,
    pub first_index: usize,
    pub second: NodeId,
    pub second_epoch: u64,
    pub second_since: SimTime,
    pub second_index: usize,
    pub at_least: Duration,
    pub max_overlap: Duration,
}

impl fmt::Display for TwoOwners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both served `{}` as its owner from {} for at least {} \
             ({} since {} under epoch {}, {} since {} under epoch {}; tolerated overlap {})",
            self.first,
            self.second,
            self.resource,
            self.second_since,
            show(self.at_least),
            self.first,
            self.first_since,
            self.first_epoch,
            self.second,
            self.second_since,
            self.second_epoch,
            format_duration(self.max_overlap)
        )
    }
}

impl From<TwoOwners> for Violation {
    fn from(v: TwoOwners) -> Violation {
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

pub struct SingleOwner {
    max_overlap: Duration,
    clock: TrueClock,
    /// resource -> open ownerships (detail: epoch). No empty entries.
    owners: BTreeMap<String, Beliefs<u64>>,
}

impl SingleOwner {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(SingleOwner {
            max_overlap: params.max_overlap.0,
            clock: TrueClock::default(),
            owners: BTreeMap::new(),
        })
    }

    fn overlong(&self, now: SimTime) -> Option<Violation> {
        let mut best: Option<TwoOwners> = None;
        for (resource, owners) in &self.owners {
            let Some(o) = owners.overlong(now, self.max_overlap) else {
                continue;
            };
            if best.as_ref().is_some_and(|b| b.second_since <= o.from) {
                continue;
            }
            best = Some(TwoOwners {
                resource: resource.clone(),
                first: o.first.node,
                first_epoch: o.first.detail,
                first_since: o.first.since,
                first_index: o.first.index,
                second: o.second.node,
                second_epoch: o.second.detail,
                second_since: o.second.since,
                second_index: o.second.index,
                at_least: now.saturating_sub(o.from),
                max_overlap: self.max_overlap,
            });
        }
        best.map(Violation::from)
    }

    fn disown(&mut self, node: NodeId, resource: &str) {
        if let Some(owners) = self.owners.get_mut(resource) {
            owners.end(node);
            if owners.is_empty() {
                self.owners.remove(resource);
            }
        }
    }
}

impl Checker for SingleOwner {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if let Some(v) = self.overlong(record.time) {
            return Some(v);
        }
        match &record.obs {
            Observation::Owns { resource, epoch } => {
                let owners = self.owners.entry(resource.clone()).or_default();
                match owners.get_mut(record.node) {
                    Some(o) => o.detail = *epoch,
                    None => owners.begin(record.node, record.time, index, *epoch),
                }
            }
            Observation::Disowns { resource, .. } => self.disown(record.node, resource),
            Observation::Crashed | Observation::Started => {
                let owned: Vec<String> = self.owners.keys().cloned().collect();
                for resource in owned {
                    self.disown(record.node, &resource);
                }
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        self.overlong(info.end.max(self.clock.now))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::json;
    use tenure_core::{NodeId, Observation, SimTime};

    fn owns(h: H, r: &str, epoch: u64) -> H {
        h.obs(Observation::Owns {
            resource: r.into(),
            epoch,
        })
    }

    fn disowns(h: H, r: &str, epoch: u64) -> H {
        h.obs(Observation::Disowns {
            resource: r.into(),
            epoch,
        })
    }

    #[test]
    fn a_handover_where_the_old_owner_stops_first_passes() {
        let h = owns(owns(H::nodes(3).at_ms(0).node(1), "r1", 1).node(2), "r2", 1);
        let h = disowns(h.at_ms(100).node(1), "r1", 2);
        // The new owner starts at the same instant: touching, not overlapping.
        let h = owns(h.node(2), "r1", 2).end_ms(1_000).history();
        assert_eq!(judge_with("single-owner", json!({}), &h), None);
    }

    #[test]
    fn a_new_owner_serving_before_the_old_one_stopped_fails_at_the_first_later_record() {
        let h = owns(H::nodes(3).at_ms(0).node(1), "r1", 1);
        let h = owns(h.at_ms(100).node(2), "r1", 2);
        let h = disowns(h.at_ms(103).node(1), "r1", 2)
            .end_ms(1_000)
            .history();
        let (at, v) = judge_with("single-owner", json!({}), &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "n1 and n2 both served `r1` as its owner from 0.100_000s for at least \
             0.003_000s (n1 since 0.000_000s under epoch 1, n2 since 0.100_000s under \
             epoch 2; tolerated overlap 0s)"
        );
        assert_eq!(v.nodes, vec![NodeId(1), NodeId(2)]);
        assert_eq!(v.records, vec![0, 1]);
        assert_eq!(v.time, SimTime(100_000_000));
        // Tolerated when short enough.
        assert_eq!(
            judge_with("single-owner", json!({"max_overlap": "3ms"}), &h),
            None
        );
    }

    #[test]
    fn a_crashed_owner_owns_nothing() {
        let h = owns(H::nodes(3).at_ms(0).node(1), "r1", 1);
        let h = owns(h.at_ms(50).crash().at_ms(100).node(2), "r1", 2)
            .end_ms(1_000)
            .history();
        assert_eq!(judge_with("single-owner", json!({}), &h), None);
    }
}
