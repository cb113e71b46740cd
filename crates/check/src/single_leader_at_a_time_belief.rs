//! # single-leader-at-a-time-belief
//!
//! A teaching check: it judges what nodes BELIEVE. `single-leader-at-a-time` judges what they DO
//! (`Serves`: reads served, commands issued); a paused node that keeps believing but
//! checks its clock before it acts again fails this check and passes that one.
//!
//! **Property:** at no instant of true time do two distinct nodes believe they lead;
//! overlaps of at most `max_overlap` are tolerated.
//!
//! A node believes it leads from its `Leader { term }` observation until its next
//! `Follower` or `Candidate` observation, or until it crashes (`Crashed`; a `Started`
//! process is fresh and believes nothing). A `Leader` observation of another term while
//! leading continues the same belief (the node never stopped believing it leads), now in
//! that term. A paused node keeps its belief. Beliefs are half-open intervals
//! `[start, end)`: one ending at `t` and another starting at `t` do not overlap.
//!
//! **How it fails:** plain Raft breaks it during a partition: the old leader, cut off
//! from the majority, still believes it leads while the majority elects a new one. That
//! is a lesson, not a bug: Election Safety (one leader *per term*) still holds. CheckQuorum
//! (a leader steps down when it has not heard from a majority for an election timeout)
//! bounds how long the stale belief lasts; it does not remove it, hence `max_overlap`.
//! A GC pause of the leader breaks it under any protocol: the paused node cannot notice.
//!
//! **Source:** Ongaro, "Consensus: Bridging Theory and Practice" (PhD thesis, 2014),
//! §6.2 (a deposed leader may not know it) and §9.6 (CheckQuorum); Kleppmann,
//! "How to do distributed locking" (2016) on process pauses.
//!
//! Online: an overlap is certain at the first record after it has lasted longer than
//! `max_overlap` (before that, the older belief could still end in time); it is
//! reported when one of the two beliefs ends (or at the end of the run), with its true
//! length.

use crate::overlap::{Beliefs, Found};
use crate::{show, CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "single-leader-at-a-time-belief";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "no two nodes believe they lead at one true instant",
    property: "no two distinct nodes believe they lead (from Leader until their next role \
               observation or crash) during one true-time overlap longer than max_overlap",
    source: "Ongaro 2014 (Raft thesis) §6.2 and §9.6 (CheckQuorum); Kleppmann 2016, \
             \"How to do distributed locking\" (process pauses)",
    params: "max_overlap (duration, default \"0s\"): overlaps up to this long are tolerated",
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    /// Overlaps up to this long are tolerated.
    #[serde(default)]
    pub max_overlap: HumanDuration,
}

/// Two nodes believed they led at the same time, for too long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoLeadersAtOnce {
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
    pub max_overlap: Duration,
}

impl fmt::Display for TwoLeadersAtOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} and {} both believed they led from {} for {}{} \
             ({} in term {} since {}, {} in term {} since {}; tolerated overlap {})",
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
            self.second_since,
            format_duration(self.max_overlap)
        )
    }
}

impl From<TwoLeadersAtOnce> for Violation {
    fn from(v: TwoLeadersAtOnce) -> Violation {
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

pub struct SingleLeaderAtATimeBelief {
    max_overlap: Duration,
    clock: TrueClock,
    /// Open leader beliefs; the detail is the current term.
    leaders: Beliefs<u64>,
    /// The first overlap found, waiting for one of its beliefs to end.
    found: Option<Found<u64>>,
}

impl SingleLeaderAtATimeBelief {
    pub fn new(params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(SingleLeaderAtATimeBelief {
            max_overlap: params.max_overlap.0,
            clock: TrueClock::default(),
            leaders: Beliefs::default(),
            found: None,
        })
    }

    fn overlong(&self, now: SimTime) -> Option<Found<u64>> {
        self.leaders.found(now, self.max_overlap)
    }

    fn report(&self, o: Found<u64>, until: SimTime, at_end: bool) -> Violation {
        TwoLeadersAtOnce {
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
            max_overlap: self.max_overlap,
        }
        .into()
    }
}

impl Checker for SingleLeaderAtATimeBelief {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        if self.found.is_none() {
            self.found = self.overlong(record.time);
        }
        match record.obs {
            Observation::Leader { term } => match self.leaders.get_mut(record.node) {
                Some(belief) => belief.detail = term,
                None => self.leaders.begin(record.node, record.time, index, term),
            },
            Observation::Follower { .. }
            | Observation::Candidate { .. }
            | Observation::Crashed
            | Observation::Started => {
                self.leaders.end(record.node);
            }
            _ => {}
        }
        if self
            .found
            .as_ref()
            .is_some_and(|o| !self.leaders.still_open(o))
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
    use serde_json::{json, Value};
    use tenure_core::NodeId;

    #[test]
    fn handover_passes_and_touching_beliefs_do_not_overlap() {
        // n0 steps down at 100ms; n1 leads from 100ms, recorded before n0's step-down.
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(100)
            .node(1)
            .leader(2)
            .node(0)
            .follower(2, Some(1))
            .at_ms(500)
            .node(2)
            .follower(2, Some(1))
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("single-leader-at-a-time-belief", Value::Null, &h),
            None
        );
    }

    #[test]
    fn a_stale_leader_in_a_partition_is_caught_at_the_next_record() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(300)
            .node(1)
            .leader(2)
            .at_ms(300)
            .node(2)
            .follower(2, Some(1))
            .at_ms(450)
            .node(2)
            .note("heartbeat")
            .end_ms(1000)
            .history();
        let (at, v) = judge_with("single-leader-at-a-time-belief", Value::Null, &h).unwrap();
        // Certain at the heartbeat, measured at the end: n0 never learned.
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n0 and n1 both believed they led from 0.300_000s for 0.700_000s (still at the \
             end of the run) (n0 in term 1 since 0.010_000s, n1 in term 2 since 0.300_000s; \
             tolerated overlap 0s)"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1)]);
        assert_eq!(v.records, vec![0, 1]);
        assert_eq!(v.time, tenure_core::SimTime(300_000_000));
    }

    #[test]
    fn a_crash_ends_the_belief() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .leader(1)
            .at_ms(200)
            .node(0)
            .crash()
            .node(1)
            .leader(2)
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("single-leader-at-a-time-belief", Value::Null, &h),
            None
        );
    }

    #[test]
    fn a_pause_does_not_end_the_belief_and_the_end_of_the_run_closes_it() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .leader(1)
            .note("paused")
            .at_ms(200)
            .node(1)
            .leader(2)
            .end_ms(1000)
            .history();
        let (at, v) = judge_with("single-leader-at-a-time-belief", Value::Null, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert!(
            v.message
                .contains("for 0.800_000s (still at the end of the run)"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_new_term_continues_the_belief() {
        // n0 moves from term 1 to term 3 while leading; the overlap with n1 counts from
        // n1's start, not from n0's term change.
        let h = H::nodes(2)
            .at_ms(0)
            .node(0)
            .leader(1)
            .at_ms(100)
            .node(1)
            .leader(2)
            .at_ms(140)
            .node(0)
            .leader(3)
            .at_ms(160)
            .node(0)
            .follower(3, None)
            .end_ms(1000)
            .history();
        let (at, v) = judge_with(
            "single-leader-at-a-time-belief",
            json!({"max_overlap": "50ms"}),
            &h,
        )
        .unwrap();
        // Reported when n0 steps down, with the true length: 60ms.
        assert_eq!(at, At::Record(3));
        assert!(
            v.message.contains("from 0.100_000s for 0.060_000s"),
            "{}",
            v.message
        );
        assert!(
            v.message.contains("n0 in term 3 since 0.000_000s"),
            "{}",
            v.message
        );
    }

    #[test]
    fn an_overlap_exactly_at_the_tolerance_passes_and_one_nanosecond_more_fails() {
        let history = |end_ns: u64| {
            H::nodes(2)
                .at_ms(0)
                .node(0)
                .leader(1)
                .at_ms(100)
                .node(1)
                .leader(2)
                .at(tenure_core::SimTime(end_ns))
                .node(0)
                .follower(2, Some(1))
                .end_ms(1000)
                .history()
        };
        let params = json!({"max_overlap": "50ms"});
        assert_eq!(
            judge_with(
                "single-leader-at-a-time-belief",
                params.clone(),
                &history(150_000_000)
            ),
            None
        );
        let (at, v) = judge_with(
            "single-leader-at-a-time-belief",
            params,
            &history(150_000_001),
        )
        .unwrap();
        assert_eq!(at, At::Record(2));
        assert!(
            v.message.contains("tolerated overlap 50ms"),
            "{}",
            v.message
        );
    }
}
