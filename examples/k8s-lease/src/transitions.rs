//! # lease-transitions: a checker of this crate's own
//!
//! **Property:** the Lease's `leaseTransitions` counts the changes of holder: every write
//! the API server commits carries the previous write's count plus one when the holder
//! changed, and the same count when it did not (a renewal). Kubernetes API reference,
//! `coordination.k8s.io/v1` `LeaseSpec.leaseTransitions`: "the number of transitions of a
//! lease between holders"; client-go's `tryAcquireOrRenew` sets
//! `LeaderTransitions = oldLeaderElectionRecord.LeaderTransitions + 1` when the holder
//! identity changes, and keeps it otherwise.
//!
//! **What it judges:** what the API server *committed*, not what a candidate believed:
//! the `lease-write` record the API server makes for each write it made durable
//! (`Observation::Structured` with fields `holder` and `transitions`), in the order it
//! committed them.
//!
//! **Not judged** when the run had fewer than two writes: the count is judged between
//! one write and the next.
//!
//! Registered with the crate's command line (`src/bin/k8s-lease.rs`:
//! `tenure::cli::Main::new(..).checker(checker())`) it is named like a built-in check:
//! in the protocol's promises, in scenario files, by `fuzz`, `shrink` and `check-model`;
//! in the library, after [`tenure::register_checker`].

use tenure::prelude::*;
use tenure::{CheckKind, CheckerInfo, CustomChecker, NotJudged, Reason};

pub const NAME: &str = "lease-transitions";

/// What `tenure checks` shows.
pub const INFO: CheckerInfo = CheckerInfo::new(
    NAME,
    CheckKind::Safety,
    "the Lease's leaseTransitions counts its changes of holder",
)
.with_property(
    "each write the API server commits carries the previous write's leaseTransitions \
     plus one if the holder changed, unchanged if not",
)
.with_source(
    "Kubernetes API coordination.k8s.io/v1 LeaseSpec.leaseTransitions; client-go \
     leaderelection.go tryAcquireOrRenew",
);

/// The record the API server makes for a committed write (`lease-write`).
pub const WRITE: &str = "lease-write";

/// The checker, for [`tenure::register_checker`] or `tenure::cli::Main::checker`.
pub fn checker() -> CustomChecker {
    CustomChecker::without_params(INFO, |_cluster| Box::new(LeaseTransitions::default()))
}

/// The last committed write (holder, transitions, record index) and how many were judged.
#[derive(Default)]
pub struct LeaseTransitions {
    last: Option<(i64, i64, usize)>,
    writes: u64,
}

impl Checker for LeaseTransitions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        let Observation::Structured { name, .. } = &record.obs else {
            return None;
        };
        if name != WRITE {
            return None;
        }
        let field = |f: &str| record.obs.field(f).and_then(|v| v.as_int());
        let (Some(holder), Some(transitions)) = (field("holder"), field("transitions")) else {
            return None;
        };
        self.writes += 1;
        let last = self.last.replace((holder, transitions, index));
        let (was, count, at) = last?;
        let (expected, why) = if holder != was {
            (
                count + 1,
                format!("n{was} to n{holder}: a change of holder adds one"),
            )
        } else {
            (count, format!("a renewal by n{holder} adds none"))
        };
        (transitions != expected).then(|| Violation {
            checker: NAME,
            time: record.time,
            nodes: vec![record.node],
            message: format!(
                "{} committed leaseTransitions {transitions} after {count} ({why}, so {expected})",
                record.node
            ),
            records: vec![at, index],
        })
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }

    fn not_judged(&self) -> Option<NotJudged> {
        match self.writes {
            0 => Some(NotJudged::new(
                Reason::Vacuous,
                "the API server committed no write of the Lease",
            )),
            1 => Some(NotJudged::new(
                Reason::CouldNotFail,
                "the API server committed one write of the Lease: the count is judged \
                 between two",
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(at: usize, holder: i64, transitions: i64) -> Record {
        Record::new(
            SimTime(at as u64),
            NodeId(0),
            LocalTime(0),
            LocalTime(0),
            Observation::structured(WRITE)
                .with("holder", holder)
                .with("transitions", transitions),
        )
    }

    #[test]
    fn renewals_keep_the_count_and_takeovers_add_one() {
        let mut c = LeaseTransitions::default();
        assert_eq!(c.not_judged().unwrap().reason, Reason::Vacuous);
        for (i, (h, t)) in [(1, 0), (1, 0), (2, 1), (2, 1), (3, 2)]
            .into_iter()
            .enumerate()
        {
            assert_eq!(c.on_record(i, &write(i, h, t)), None, "write {i}");
        }
        assert_eq!(c.not_judged(), None);
    }

    #[test]
    fn a_renewal_that_counts_is_a_violation_and_so_is_an_uncounted_takeover() {
        let mut c = LeaseTransitions::default();
        c.on_record(0, &write(0, 1, 0));
        assert_eq!(c.not_judged().unwrap().reason, Reason::CouldNotFail);
        let v = c.on_record(1, &write(1, 1, 1)).expect("a renewal counted");
        assert_eq!(
            v.message,
            "n0 committed leaseTransitions 1 after 0 (a renewal by n1 adds none, so 0)"
        );
        assert_eq!(v.records, vec![0, 1]);

        let mut c = LeaseTransitions::default();
        c.on_record(0, &write(0, 1, 4));
        let v = c
            .on_record(1, &write(1, 2, 4))
            .expect("a takeover not counted");
        assert!(v
            .message
            .contains("n1 to n2: a change of holder adds one, so 5"));
    }
}
