//! # lease-safety-belief
//!
//! A teaching check: it judges what nodes BELIEVE. `lease-safety` judges what they DO
//! (`Serves`: reads served, commands issued); a paused node that keeps believing but
//! checks its clock before it acts again fails this check and passes that one.
//!
//! **Property:** at no instant of true time do two distinct nodes hold what they believe
//! is a valid leader lease. No overlap is tolerated: a lease exists to exclude one.
//!
//! A node believes its lease is valid from `LeaseStart { term }` until `LeaseEnd` for that
//! term or a later one, or until it crashes (`Crashed`; a `Started` process is fresh and
//! believes nothing). A `LeaseStart` while holding continues the belief (in the newer
//! term); a `LeaseEnd` for an older term than the one held is stale and ignored. A paused
//! node keeps its belief. Beliefs are half-open intervals: one ending at `t` and another
//! starting at `t` do not overlap.
//!
//! **How it fails:** the lease is measured on the wall clock, which jumps; the holder's
//! clock drifts slower than the bound the protocol assumed; a new leader does not wait
//! out the old leader's lease before starting its own; the holder is paused past expiry.
//!
//! **Source:** Gray & Cheriton, "Leases" (SOSP 1989); Ongaro 2014 (Raft thesis) §6.4.1,
//! leader leases for reads and their clock-drift bound; seed article 002, "Leader Lease
//! Pattern" (a lease "to prevent split-brain").
//!
//! Online: an overlap is certain at the first record after it began at which it has
//! lasted a positive time; it is reported when one of the two leases ends (or at the
//! end of the run), with its true length.

use crate::overlap::{Beliefs, Found};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::fmt;
use std::time::Duration;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "lease-safety-belief";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes hold a valid lease at one true instant",
    property: "no two distinct nodes believe they hold a valid lease (from LeaseStart until \
               LeaseEnd of that or a later term, or crash) at one true instant",
    source: "Gray & Cheriton 1989, \"Leases\"; Ongaro 2014 (Raft thesis) §6.4.1; \
             seed article 002, \"Leader Lease Pattern\"",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// Two nodes believed they held a valid lease at the same time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoLeases {
    pub first: NodeId,
    pub first_term: u64,
    pub first_since: SimTime,
    pub first_index: usize,
    pub second: NodeId,
    pub second_term: u64,
    pub second_since: SimTime,
    pub second_index: usize,
    /// How long the overlap lasted (until one belief ended, or the end of the run).
    pub lasted: Duration,
    /// The overlap was still going on when the run ended.
    pub at_end: bool,
}

impl fmt::Display for TwoLeases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both believed they held a valid lease from {} for {}{} \
             ({} for term {} since {}, {} for term {} since {})",
            self.first,
            self.second,
            self.second_since,
            show(self.lasted),
            if self.at_end {
                " (still at the end of the run)"
            } else {
                ""
            },
            self.first,
            self.first_term,
            self.first_since,
            self.second,
            self.second_term,
            self.second_since
        )
    }
}

impl From<TwoLeases> for Violation {
    fn from(v: TwoLeases) -> Violation {
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

pub struct LeaseSafetyBelief {
    clock: TrueClock,
    /// Open lease beliefs; the detail is the term.
    leases: Beliefs<u64>,
    /// The first overlap found, waiting for one of its beliefs to end.
    found: Option<Found<u64>>,
}

impl LeaseSafetyBelief {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(LeaseSafetyBelief {
            clock: TrueClock::default(),
            leases: Beliefs::default(),
            found: None,
        })
    }

    fn overlong(&self, now: SimTime) -> Option<Found<u64>> {
        self.leases.found(now, Duration::ZERO)
    }

    fn report(&self, o: Found<u64>, until: SimTime, at_end: bool) -> Violation {
        TwoLeases {
            first: o.first.node,
            first_term: o.first.detail,
            first_since: o.first.since,
            first_index: o.first.index,
            second: o.second.node,
            second_term: o.second.detail,
            second_since: o.second.since,
            second_index: o.second.index,
            lasted: until.saturating_sub(o.from),
            at_end,
        }
        .into()
    }
}

impl Checker for LeaseSafetyBelief {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if self.found.is_none() {
            self.found = self.overlong(record.time);
        }
        match record.obs {
            Observation::LeaseStart { term } => match self.leases.get_mut(record.node) {
                Some(belief) => belief.detail = belief.detail.max(term),
                None => self.leases.begin(record.node, record.time, index, term),
            },
            Observation::LeaseEnd { term }
                if self
                    .leases
                    .get(record.node)
                    .is_some_and(|belief| term >= belief.detail) =>
            {
                self.leases.end(record.node);
            }
            Observation::Crashed | Observation::Started => {
                self.leases.end(record.node);
            }
            _ => {}
        }
        if self
            .found
            .as_ref()
            .is_some_and(|o| !self.leases.still_open(o))
        {
            let o = self.found.take().expect("found");
            return Some(self.report(o, record.time, false));
        }
        None
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        let o = self.found.take().or_else(|| self.overlong(end))?;
        Some(self.report(o, end, true))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;
    use tenure_core::{NodeId, SimTime};

    #[test]
    fn leases_that_touch_pass() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .at_ms(100)
            .node(1)
            .lease_start(2)
            .node(0)
            .lease_end(1)
            .end_ms(500)
            .history();
        assert_eq!(judge_with("lease-safety-belief", Value::Null, &h), None);
    }

    #[test]
    fn a_slow_clock_overlaps_the_next_lease() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .at_ms(100)
            .node(1)
            .lease_start(2)
            .at_ms(101)
            .node(0)
            .lease_end(1)
            .end_ms(500)
            .history();
        let (at, v) = judge_with("lease-safety-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(2));
        assert_eq!(
            v.message,
            "n0 and n1 both believed they held a valid lease from 0.100_000s for \
             0.001_000s (n0 for term 1 since 0.000_000s, n1 for term 2 since 0.100_000s)"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1)]);
        assert_eq!(v.records, vec![0, 1]);
        assert_eq!(v.time, SimTime(100_000_000));
    }

    #[test]
    fn a_crash_ends_the_lease_but_a_stale_lease_end_does_not() {
        let crashed = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .at_ms(100)
            .node(0)
            .crash()
            .node(1)
            .lease_start(2)
            .end_ms(500)
            .history();
        assert_eq!(
            judge_with("lease-safety-belief", Value::Null, &crashed),
            None
        );

        let stale_end = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(3)
            .at_ms(50)
            .node(0)
            .lease_end(2)
            .at_ms(100)
            .node(1)
            .lease_start(4)
            .end_ms(500)
            .history();
        let (at, _) = judge_with("lease-safety-belief", Value::Null, &stale_end).unwrap();
        assert_eq!(at, At::Finish);
    }

    #[test]
    fn a_paused_holder_keeps_its_lease() {
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .lease_start(1)
            .note("paused for 2s")
            .at_ms(100)
            .node(1)
            .lease_start(2)
            .at_ms(2000)
            .node(0)
            .lease_end(1)
            .end_ms(3000)
            .history();
        let (at, v) = judge_with("lease-safety-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(3));
        assert!(
            v.message.contains("from 0.100_000s for 1.900_000s"),
            "{}",
            v.message
        );
    }
}
