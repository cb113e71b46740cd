//! # lease-expiry
//!
//! **Property:** a client lease whose keep-alives stopped ends within its TTL plus a
//! bound. Precisely: a lease is renewed at every `LeaseRenewed { lease, ttl_ms }` record
//! (the service's primary granted it or answered a keep-alive; a leader change is not a
//! renewal) and ends at its first `LeaseRevoked { lease }` record (by any node). From
//! `s`, its last renewal or, if later, the calm (`calm_from`, when the last fault
//! ended; with `during_faults = true`, the renewal itself), its deadline is the first
//! instant `d` with
//!
//! ```text
//! d = s + ttl + within + per_leader * (leaders elected in (s, d]) + (leaderless time in [s, d])
//! ```
//!
//! where a leader is elected at each `Leader { term }` record of a counted node (every
//! node, or only those playing `role`), and leaderless time is the true time without a
//! single leader that a majority of the counted nodes follow, exactly as
//! `leader-liveness` counts its gaps (its code does). A lease must end at or before its
//! deadline, and must not be renewed after it (a lease renewed again after its deadline
//! was alive when it should have ended); a lease whose deadline is after the end of the
//! run and that has not ended is not judged.
//!
//! Judged from the calm by default, like the other liveness checks: during faults a
//! quorum can be lost to a member that is paused or cut off while the others still
//! believe in their leader, and no observation shows it. `during_faults = true` judges
//! from the renewal (a schedule whose faults are all visible: leader changes, crashes).
//!
//! Without a leader no lease service can revoke anything, so leaderless time is
//! forgiven; each new leader is allowed `per_leader` (what one leader change may cost a
//! lease: the election, and the part of the TTL the new leader cannot know was spent).
//! With `per_leader` below the TTL, a service whose every new leader restarts the full
//! TTL (etcd without lease checkpointing, etcd #9395) fails as soon as one leader change
//! comes late in a stopped lease's TTL, and never ends a lease while changes keep coming.
//!
//! Not judged: *vacuous* when no lease was renewed; *could not fail* when no lease
//! stopped its keep-alives (none ended, and every deadline is after the end).
//!
//! **How it fails:** a new leader that restarts every lease's TTL (etcd #9395; lease
//! checkpointing, etcd #9924, keeps the remaining TTL across leader changes); a lessor
//! that forgets a lease; a revoke proposed and never committed or retried.
//!
//! **Source:** etcd `server/lease/lessor.go` (v3.5.x: `Promote`, `Checkpoint`,
//! `RemainingTTL`), etcd #9395 and #9924; the TTL contract of etcd's `LeaseGrant`
//! ("the lease expires if the server does not receive a keepAlive within a given time to
//! live period").
//!
//! Judged at the end only.

use crate::leader_liveness::LeaderLiveness;
use crate::verdict::{NotJudged, Reason};
use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "lease-expiry";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "a client lease whose keep-alives stopped ends within its TTL plus a bound",
    property: "every lease ends (LeaseRevoked), and is not renewed, after its deadline d = s + \
               ttl + within + per_leader * leaders elected in (s, d] + leaderless time in \
               [s, d], s = max(last LeaseRenewed, calm_from) (the renewal itself with \
               during_faults), judged when d is at or before the end",
    source: "etcd server/lease/lessor.go (v3.5.x Promote, Checkpoint); etcd #9395, #9924",
    params: "within (duration, default \"1s\"): the slack after the TTL; per_leader \
             (duration, default \"0s\"): the allowance for each leader elected after the last \
             renewal; during_faults (bool, default false): count from the renewal, not from \
             the calm; role (string, optional): only leaders and followers of this role count; \
             bound (string, optional): how within and per_leader were derived, stated in the \
             report",
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_within")]
    pub within: HumanDuration,
    #[serde(default)]
    pub per_leader: Option<HumanDuration>,
    /// Judge from the last renewal even while faults last (default: from the calm, as
    /// the other liveness checks do). Leaderless time is forgiven either way, but a
    /// quorum lost to a paused or cut-off member that still believes in its leader is
    /// not visible in the observations.
    #[serde(default)]
    pub during_faults: bool,
    #[serde(default)]
    pub role: Option<String>,
    /// How `within` and `per_leader` were derived (for the report).
    #[serde(default)]
    pub bound: Option<String>,
}

fn default_within() -> HumanDuration {
    HumanDuration(Duration::from_secs(1))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            within: default_within(),
            per_leader: None,
            during_faults: false,
            role: None,
            bound: None,
        }
    }
}

/// A lease that outlived its deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outlived {
    pub lease: u64,
    /// Its last renewal: when, by which node, which record.
    pub renewed: SimTime,
    pub renewed_by: NodeId,
    pub renewed_index: usize,
    pub ttl: Duration,
    pub deadline: SimTime,
    pub leaders: usize,
    pub leaderless: Duration,
    pub within: Duration,
    pub per_leader: Duration,
    /// What came after the deadline: its end, a renewal, or nothing before the end.
    pub after: After,
    pub end: SimTime,
    pub bound: Option<String>,
}

impl fmt::Display for Outlived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} was last renewed at {} (by {}, TTL {}) and had not ended by {} (TTL + \
             within {}",
            self.lease,
            self.renewed,
            self.renewed_by,
            format_duration(self.ttl),
            self.deadline,
            format_duration(self.within),
        )?;
        if self.leaders > 0 {
            write!(
                f,
                " + {} for each of the {} leader{} elected since",
                format_duration(self.per_leader),
                self.leaders,
                if self.leaders == 1 { "" } else { "s" }
            )?;
        }
        if !self.leaderless.is_zero() {
            write!(f, " + {} without a leader", crate::show(self.leaderless))?;
        }
        match self.after {
            After::Revoked(time, _) => write!(f, "); it ended only at {time}"),
            After::Renewed(time, _) => {
                write!(f, "); it was still alive and renewed again at {time}")
            }
            After::Nothing => write!(f, "); it had still not ended at the end, {}", self.end),
        }?;
        if let Some(bound) = &self.bound {
            write!(f, " [bound: {bound}]")?;
        }
        Ok(())
    }
}

impl From<Outlived> for Violation {
    fn from(v: Outlived) -> Violation {
        let mut records = vec![v.renewed_index];
        if let After::Revoked(_, index) | After::Renewed(_, index) = v.after {
            records.push(index);
        }
        Violation {
            checker: NAME,
            time: v.deadline,
            nodes: vec![v.renewed_by],
            message: v.to_string(),
            records,
        }
    }
}

/// What became of a lease that outlived its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// It ended (`LeaseRevoked`) at this time and record.
    Revoked(SimTime, usize),
    /// It was renewed again, alive past its deadline, at this time and record.
    Renewed(SimTime, usize),
    /// Neither before the end of the run.
    Nothing,
}

/// One lease: its last renewal (time, node, record), TTL and end, and the stretches
/// between two renewals longer than TTL + within (renewed again when it may already have
/// been due to end: judged at the finish, when the calm is known).
/// A renewal: when, by whom, which record.
type Renewal = (SimTime, NodeId, usize);

#[derive(Clone, Debug)]
struct Lease {
    renewed: Renewal,
    ttl: Duration,
    revoked: Option<(SimTime, usize)>,
    late: Vec<(Renewal, Duration, (SimTime, usize))>,
}

pub struct LeaseExpiry {
    within: Duration,
    per_leader: Duration,
    during_faults: bool,
    bound: Option<String>,
    counted: BTreeSet<NodeId>,
    clock: TrueClock,
    /// `leader-liveness`, fed the same records: its gaps are the leaderless time.
    leadership: LeaderLiveness,
    leases: BTreeMap<u64, Lease>,
    /// When a counted node became leader.
    elected: Vec<SimTime>,
    not_judged: Option<NotJudged>,
}

impl LeaseExpiry {
    pub fn new(params: Params, cluster: &Cluster) -> Result<Self, CheckError> {
        let leadership = LeaderLiveness::new(
            crate::leader_liveness::Params {
                role: params.role.clone(),
                ..Default::default()
            },
            cluster,
        )?;
        let counted: BTreeSet<NodeId> = match &params.role {
            None => cluster.nodes().collect(),
            Some(role) => cluster.with_role(role).collect(),
        };
        Ok(LeaseExpiry {
            within: params.within.0,
            per_leader: params.per_leader.map_or(Duration::ZERO, |d| d.0),
            during_faults: params.during_faults,
            bound: params.bound,
            counted,
            clock: TrueClock::default(),
            leadership,
            leases: BTreeMap::new(),
            elected: Vec::new(),
            not_judged: None,
        })
    }

    /// The deadline of a lease renewed at `renewed` (counted from the calm unless
    /// `during_faults`): the least fixpoint of the formula, found by iterating from
    /// `from + ttl + within` (it only grows), with the leaders and leaderless time
    /// counted. `None` once it passes `end`.
    fn deadline(
        &self,
        renewed: SimTime,
        ttl: Duration,
        gaps: &[(SimTime, SimTime)],
        calm_from: SimTime,
        end: SimTime,
    ) -> Option<(SimTime, usize, Duration)> {
        let from = if self.during_faults {
            renewed
        } else {
            renewed.max(calm_from)
        };
        let base = from + ttl + self.within;
        let mut due = base;
        loop {
            if due > end {
                return None;
            }
            let leaders = self
                .elected
                .iter()
                .filter(|&&t| t > from && t <= due)
                .count();
            let leaderless: Duration = gaps
                .iter()
                .map(|&(a, b)| b.min(due).saturating_sub(a.max(from)))
                .sum();
            let next = base + self.per_leader * leaders as u32 + leaderless;
            if next <= due {
                return Some((due, leaders, leaderless));
            }
            due = next;
        }
    }

    /// The lease renewed at `renewed` if it outlived a deadline before what came next
    /// (`next`: its end, a renewal, or nothing by the end of the run).
    #[allow(clippy::too_many_arguments)]
    fn outlived(
        &self,
        id: u64,
        (renewed, renewed_by, renewed_index): (SimTime, NodeId, usize),
        ttl: Duration,
        next: After,
        gaps: &[(SimTime, SimTime)],
        calm_from: SimTime,
        end: SimTime,
    ) -> Option<Outlived> {
        let until = match next {
            After::Renewed(t, _) => t,
            After::Revoked(..) | After::Nothing => end,
        };
        let (deadline, leaders, leaderless) =
            self.deadline(renewed, ttl, gaps, calm_from, until)?;
        match next {
            After::Revoked(t, _) if t <= deadline => return None,
            After::Renewed(t, _) if t <= deadline => return None,
            _ => {}
        }
        Some(Outlived {
            lease: id,
            renewed,
            renewed_by,
            renewed_index,
            ttl,
            deadline,
            leaders,
            leaderless,
            within: self.within,
            per_leader: self.per_leader,
            after: next,
            end,
            bound: self.bound.clone(),
        })
    }
}

impl Checker for LeaseExpiry {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        self.leadership.on_record(index, record);
        match record.obs {
            Observation::Leader { .. } if self.counted.contains(&record.node) => {
                self.elected.push(record.time);
            }
            Observation::LeaseRenewed { lease, ttl_ms } => {
                let renewed = (record.time, record.node, index);
                let ttl = Duration::from_millis(ttl_ms);
                let within = self.within;
                let entry = self.leases.entry(lease).or_insert(Lease {
                    renewed,
                    ttl,
                    revoked: None,
                    late: Vec::new(),
                });
                if entry.revoked.is_none() {
                    if record.time > entry.renewed.0 + entry.ttl + within {
                        entry
                            .late
                            .push((entry.renewed, entry.ttl, (record.time, index)));
                    }
                    entry.renewed = renewed;
                    entry.ttl = ttl;
                }
            }
            Observation::LeaseRevoked { lease } => {
                // A lease ends once: a renewal of an ended lease (a deposed primary that
                // has not heard yet) does not bring it back.
                let l = self.leases.entry(lease).or_insert(Lease {
                    renewed: (record.time, record.node, index),
                    ttl: Duration::ZERO,
                    revoked: None,
                    late: Vec::new(),
                });
                l.revoked.get_or_insert((record.time, index));
            }
            _ => {}
        }
        None
    }

    fn not_judged(&self) -> Option<NotJudged> {
        self.not_judged.clone()
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        let calm = info.calm_from;
        let gaps = self.leadership.gaps(end);
        let mut judged = 0;
        let mut worst: Option<Outlived> = None;
        for (&id, lease) in &self.leases {
            let last = match lease.revoked {
                Some((t, i)) => After::Revoked(t, i),
                None => After::Nothing,
            };
            let due = self.deadline(lease.renewed.0, lease.ttl, &gaps, calm, end);
            if lease.revoked.is_some() || due.is_some() || !lease.late.is_empty() {
                judged += 1;
            }
            let stretches = lease
                .late
                .iter()
                .map(|&(renewed, ttl, (t, i))| (renewed, ttl, After::Renewed(t, i)))
                .chain([(lease.renewed, lease.ttl, last)]);
            for (renewed, ttl, next) in stretches {
                let Some(v) = self.outlived(id, renewed, ttl, next, &gaps, calm, end) else {
                    continue;
                };
                if worst.as_ref().is_some_and(|w| w.deadline <= v.deadline) {
                    continue;
                }
                worst = Some(v);
            }
        }
        self.not_judged = if self.leases.is_empty() {
            Some(NotJudged::new(
                Reason::Vacuous,
                "no lease was renewed: only a lease whose keep-alives stopped is owed its end",
            ))
        } else if judged == 0 {
            Some(NotJudged::new(
                Reason::CouldNotFail,
                format!(
                    "no lease stopped its keep-alives: none of the {} leases ended, and each \
                     was renewed within its TTL + bound of the end at {end}",
                    self.leases.len()
                ),
            ))
        } else {
            None
        };
        worst.map(Violation::from)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, verdict_with, At, H};
    use crate::verdict::Reason;
    use serde_json::json;
    use tenure_core::{Observation, SimTime};

    fn renewed(h: H, lease: u64, ttl_ms: u64) -> H {
        h.obs(Observation::LeaseRenewed { lease, ttl_ms })
    }
    fn revoked(h: H, lease: u64) -> H {
        h.obs(Observation::LeaseRevoked { lease })
    }

    /// n0 leads term 1 from 10ms with both others following; lease 7 (TTL 100ms) is
    /// renewed by n0 at 20ms and 50ms.
    fn steady() -> H {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .node(1)
            .follower(1, Some(0))
            .node(2)
            .follower(1, Some(0));
        let h = renewed(h.at_ms(20).node(0), 7, 100);
        renewed(h.at_ms(50).node(0), 7, 100)
    }

    #[test]
    fn a_lease_that_ends_within_its_ttl_and_bound_passes() {
        let params = json!({"within": "20ms"});
        // Due at 50 + 100 + 20 = 170ms; exactly then is in time.
        for ms in [150, 170] {
            let h = revoked(steady().at_ms(ms).node(1), 7)
                .end_ms(1000)
                .history();
            assert_eq!(judge_with("lease-expiry", params.clone(), &h), None, "{ms}");
        }
    }

    /// The negative control: the same history with the revoke one millisecond later,
    /// or never, fails.
    #[test]
    fn a_lease_that_outlives_its_deadline_fails() {
        let params = json!({"within": "20ms", "bound": "test"});
        let h = revoked(steady().at_ms(171).node(1), 7)
            .end_ms(1000)
            .history();
        let (at, v) = judge_with("lease-expiry", params.clone(), &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "lease 7 was last renewed at 0.050_000s (by n0, TTL 100ms) and had not ended by \
             0.170_000s (TTL + within 20ms); it ended only at 0.171_000s [bound: test]"
        );
        assert_eq!(v.time, SimTime(170_000_000));
        let h = steady().end_ms(1000).history();
        let (_, v) = judge_with("lease-expiry", params, &h).unwrap();
        assert!(v
            .message
            .ends_with("it had still not ended at the end, 1.000_000s [bound: test]"));
    }

    /// etcd #9395 in miniature: a new leader at 140ms restarts the TTL, and the lease
    /// ends at 245ms. Allowed 100ms per leader it passes; allowed 50ms it fails.
    #[test]
    fn each_new_leader_is_allowed_per_leader_and_leaderless_time_is_forgiven() {
        let churn = steady()
            .at_ms(130)
            .node(0)
            .crash()
            .at_ms(140)
            .node(1)
            .leader(2)
            .node(2)
            .follower(2, Some(1));
        let h = revoked(churn.at_ms(245).node(1), 7).end_ms(1000).history();
        // Due: 50 + 100 + 20 + 10 leaderless (130..140) + per_leader.
        assert_eq!(
            judge_with(
                "lease-expiry",
                json!({"within": "20ms", "per_leader": "100ms"}),
                &h
            ),
            None
        );
        let (_, v) = judge_with(
            "lease-expiry",
            json!({"within": "20ms", "per_leader": "50ms"}),
            &h,
        )
        .unwrap();
        assert_eq!(
            v.message,
            "lease 7 was last renewed at 0.050_000s (by n0, TTL 100ms) and had not ended by \
             0.230_000s (TTL + within 20ms + 50ms for each of the 1 leader elected since + \
             0.010_000s without a leader); it ended only at 0.245_000s"
        );
    }

    /// A lease renewed again after its deadline outlived it (it should have ended first).
    /// Renewed just in time, it passes.
    #[test]
    fn a_lease_renewed_after_its_deadline_fails() {
        let params = json!({"within": "20ms"});
        let h = renewed(steady().at_ms(170).node(0), 7, 100)
            .end_ms(200)
            .history();
        assert_eq!(judge_with("lease-expiry", params.clone(), &h), None);
        let h = renewed(steady().at_ms(171).node(0), 7, 100)
            .end_ms(200)
            .history();
        let (at, v) = judge_with("lease-expiry", params, &h).unwrap();
        assert_eq!(at, At::Finish);
        assert!(
            v.message
                .ends_with("it was still alive and renewed again at 0.171_000s"),
            "{}",
            v.message
        );
    }

    /// Faults until 500ms: by default the lease is owed its end from the calm (due at
    /// 620ms, it ends at 600ms); judged from its renewal (`during_faults`) it is late.
    #[test]
    fn by_default_the_deadline_counts_from_the_calm() {
        let h = revoked(steady().at_ms(600).node(0), 7)
            .calm_ms(500)
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("lease-expiry", json!({"within": "20ms"}), &h),
            None
        );
        let (_, v) = judge_with(
            "lease-expiry",
            json!({"within": "20ms", "during_faults": true}),
            &h,
        )
        .unwrap();
        assert_eq!(v.time, SimTime(170_000_000));
    }

    /// A deposed primary "renews" a lease the new leader already revoked (seed 73 of
    /// `pauses`): the lease stays ended. Without the revoke the same renewal is owed an end.
    #[test]
    fn a_renewal_after_the_end_does_not_revive_a_lease() {
        let led = || {
            H::nodes(3)
                .at_ms(10)
                .node(1)
                .leader(2)
                .node(0)
                .follower(2, Some(1))
                .node(2)
                .follower(2, Some(1))
        };
        let ended = revoked(led().at_ms(15).node(1), 9);
        let h = renewed(ended.at_ms(20).node(0), 9, 100)
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("lease-expiry", json!({"within": "20ms"}), &h),
            None
        );
        let h = renewed(led().at_ms(20).node(0), 9, 100)
            .end_ms(1000)
            .history();
        assert!(judge_with("lease-expiry", json!({"within": "20ms"}), &h).is_some());
    }

    #[test]
    fn a_lease_still_kept_alive_at_the_end_could_not_fail() {
        let h = steady().end_ms(100).history();
        let v = verdict_with("lease-expiry", json!({"within": "20ms"}), &h);
        assert_eq!(
            v.verdict.not_judged().map(|n| n.reason),
            Some(Reason::CouldNotFail)
        );
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .end_ms(100)
            .history();
        let v = verdict_with("lease-expiry", json!({}), &h);
        assert_eq!(
            v.verdict.not_judged().map(|n| n.reason),
            Some(Reason::Vacuous)
        );
    }
}
