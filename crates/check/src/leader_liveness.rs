//! # leader-liveness
//!
//! **Property:** once the faults are over, a single leader with a majority behind it
//! emerges within `within` and stays. Precisely: at every instant of true time in
//! `[calm_from + within, end)`, exactly one counted node believes it leads (observed
//! `Leader { term }` and no role change or crash since), and a strict majority of the
//! counted nodes are that leader or believe `Follower { term, leader: Some(that leader) }`
//! for the same term. The counted nodes are those playing `role` (every node if `role`
//! is not set); observations of other nodes are ignored. A crashed node (until it says
//! otherwise after its restart) neither leads nor follows. If `calm_from + within` is
//! after the end of the run, the run is too short to judge and that is a violation too.
//!
//! The state between records is the state after every record at the earlier instant, so
//! zero-length states (two records at one instant) never count.
//!
//! **How it fails:** split votes forever (no randomised election timeout), a node that
//! cannot win (stale log rules done wrong) disrupting elections, a leader that steps down
//! without cause, followers that never learn who leads.
//!
//! **Source:** Ongaro & Ousterhout, Raft (USENIX ATC 2014), §5.2 and §5.6 (timing and
//! availability: a steady leader when broadcastTime << electionTimeout << MTBF); the
//! liveness phase of TigerBeetle's VOPR (heal the faults, then demand convergence).
//!
//! Judged at the end only: `calm_from` is known when the run ends.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;
use tenure_core::{
    format_duration, Cluster, HumanDuration, NodeId, Observation, Record, RunInfo, SimTime,
};

pub const NAME: &str = "leader-liveness";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Liveness,
    summary: "after the faults, one leader with a following majority within a bound",
    property: "at every true instant in [calm_from + within, end) exactly one counted node \
               believes it leads and a strict majority of the counted nodes are that leader or \
               its followers in its term; calm_from + within > end is a violation",
    source: "Raft (Ongaro & Ousterhout 2014) §5.2 and §5.6; TigerBeetle VOPR liveness phase",
    params: "within (duration, default \"5s\"): how long after calm_from a leader is due; \
             role (string, optional): only nodes of this role count; bound (string, \
             optional): how `within` was derived, stated in the report",
};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    #[serde(default = "default_within")]
    pub within: HumanDuration,
    #[serde(default)]
    pub role: Option<String>,
    /// How `within` was derived from the protocol's parameters (for the report).
    #[serde(default)]
    pub bound: Option<String>,
}

fn default_within() -> HumanDuration {
    HumanDuration(Duration::from_secs(5))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            within: default_within(),
            role: None,
            bound: None,
        }
    }
}

/// What was wrong during a gap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GapReason {
    NoLeader,
    TwoLeaders {
        first: NodeId,
        first_term: u64,
        second: NodeId,
        second_term: u64,
    },
    /// `leader` led `term` but only `with` counted nodes (it included) were behind it.
    NoMajority {
        leader: NodeId,
        term: u64,
        with: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaderLivenessViolation {
    /// `calm_from + within` is after the end.
    RunTooShort {
        calm_from: SimTime,
        within: Duration,
        end: SimTime,
    },
    /// From `from` (at or after `calm_from + within`) until `to`, there was no single
    /// leader with a majority.
    Gap {
        reason: GapReason,
        from: SimTime,
        to: SimTime,
        /// `to` is the end of the run.
        to_end: bool,
        calm_from: SimTime,
        within: Duration,
        counted: usize,
        role: Option<String>,
        records: Vec<usize>,
    },
}

impl fmt::Display for LeaderLivenessViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaderLivenessViolation::RunTooShort {
                calm_from,
                within,
                end,
            } => write!(
                f,
                "the run ended at {end}, too short to judge liveness: it was calm from \
                 {calm_from} and a leader was due within {}, by {}",
                format_duration(*within),
                *calm_from + *within
            ),
            LeaderLivenessViolation::Gap {
                reason,
                from,
                to,
                to_end,
                calm_from,
                within,
                counted,
                role,
                ..
            } => {
                let until = if *to_end {
                    format!("until the end at {to}")
                } else {
                    format!("to {to}")
                };
                let nodes = match role {
                    Some(role) => format!("{counted} `{role}` nodes"),
                    None => format!("{counted} nodes"),
                };
                match reason {
                    GapReason::NoLeader => write!(f, "no node believed it led from {from} {until}"),
                    GapReason::TwoLeaders {
                        first,
                        first_term,
                        second,
                        second_term,
                    } => write!(
                        f,
                        "{first} (term {first_term}) and {second} (term {second_term}) both \
                         believed they led from {from} {until}"
                    ),
                    GapReason::NoMajority { leader, term, with } => write!(
                        f,
                        "{leader} led term {term} but only {with} of {nodes} (it included, \
                         {} needed) were behind it from {from} {until}",
                        counted / 2 + 1
                    ),
                }?;
                write!(
                    f,
                    ", though the run had been calm since {calm_from} and a single leader with \
                     a majority was due within {}",
                    format_duration(*within)
                )
            }
        }
    }
}

impl From<LeaderLivenessViolation> for Violation {
    fn from(v: LeaderLivenessViolation) -> Violation {
        let message = v.to_string();
        let (time, nodes, records) = match v {
            LeaderLivenessViolation::RunTooShort { end, .. } => (end, vec![], vec![]),
            LeaderLivenessViolation::Gap {
                reason,
                from,
                records,
                ..
            } => {
                let nodes = match reason {
                    GapReason::NoLeader => vec![],
                    GapReason::TwoLeaders { first, second, .. } => vec![first, second],
                    GapReason::NoMajority { leader, .. } => vec![leader],
                };
                (from, nodes, records)
            }
        };
        Violation {
            checker: NAME,
            time,
            nodes,
            message,
            records,
        }
    }
}

/// What a counted node believes about leadership, and the record that said so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Leader { term: u64 },
    Follower { term: u64, leader: Option<NodeId> },
}

/// A stretch of true time without a single leader with a majority.
#[derive(Clone, Debug)]
struct Gap {
    reason: GapReason,
    from: SimTime,
    to: SimTime,
    records: Vec<usize>,
}

pub struct LeaderLiveness {
    within: Duration,
    role: Option<String>,
    bound: Option<String>,
    counted: BTreeSet<NodeId>,
    clock: TrueClock,
    /// Counted nodes that lead or follow (absent: candidate, crashed, unknown).
    roles: BTreeMap<NodeId, (Role, usize)>,
    /// The leaders among `roles` (node, term, record), and how many of `roles` follow
    /// each (term, leader): kept with `roles` so that `judge` costs O(leaders), not
    /// O(nodes) (issue 38: judged at every record time, the scan made a 10,000-node run
    /// quadratic).
    leaders: BTreeMap<NodeId, (u64, usize)>,
    following: BTreeMap<(u64, Option<NodeId>), usize>,
    /// The last record applied.
    last_index: Option<usize>,
    closed: Vec<Gap>,
    open: Option<Gap>,
    /// Set by `finish` when the leader was due after the end: not judged (too short).
    too_short: Option<crate::verdict::NotJudged>,
}

impl LeaderLiveness {
    pub fn new(params: Params, cluster: &Cluster) -> Result<Self, CheckError> {
        let counted: BTreeSet<NodeId> = match &params.role {
            None => cluster.nodes().collect(),
            Some(role) => cluster.with_role(role).collect(),
        };
        if counted.is_empty() {
            let roles: Vec<&str> = cluster.roles().iter().map(|r| r.role.as_str()).collect();
            return Err(CheckError::new(
                "role",
                format!(
                    "no node plays role `{}`; the cluster's roles are: {}",
                    params.role.unwrap_or_default(),
                    roles.join(", ")
                ),
            ));
        }
        let mut checker = LeaderLiveness {
            within: params.within.0,
            role: params.role,
            bound: params.bound,
            counted,
            clock: TrueClock::default(),
            roles: BTreeMap::new(),
            leaders: BTreeMap::new(),
            following: BTreeMap::new(),
            last_index: None,
            closed: Vec::new(),
            open: None,
            too_short: None,
        };
        checker.settle(SimTime::ZERO);
        Ok(checker)
    }

    /// What is wrong right now, and the records that show it (None: all is well).
    fn judge(&self) -> Option<(GapReason, Vec<usize>)> {
        let mut leaders = self
            .leaders
            .iter()
            .map(|(node, (term, index))| (*node, *term, *index));
        match (leaders.next(), leaders.next()) {
            (None, _) => Some((GapReason::NoLeader, self.last_index.into_iter().collect())),
            (Some((leader, term, index)), None) => {
                let followers = self
                    .following
                    .get(&(term, Some(leader)))
                    .copied()
                    .unwrap_or(0);
                let with = followers + 1;
                if with > self.counted.len() / 2 {
                    return None;
                }
                let mut records = vec![index];
                records.extend(self.last_index.filter(|i| *i != index));
                Some((GapReason::NoMajority { leader, term, with }, records))
            }
            (Some((first, first_term, i)), Some((second, second_term, j))) => Some((
                GapReason::TwoLeaders {
                    first,
                    first_term,
                    second,
                    second_term,
                },
                vec![i.min(j), i.max(j)],
            )),
        }
    }

    /// The state after every record at `at` holds from `at` on: start, continue or end
    /// a gap there.
    fn settle(&mut self, at: SimTime) {
        let now = self.judge();
        if let (Some(open), Some((reason, _))) = (&self.open, &now) {
            if open.reason == *reason {
                return;
            }
        }
        if let Some(mut gap) = self.open.take() {
            gap.to = at;
            if gap.from < gap.to {
                self.closed.push(gap);
            }
        }
        self.open = now.map(|(reason, records)| Gap {
            reason,
            from: at,
            to: at,
            records,
        });
    }
}

impl LeaderLiveness {
    /// The stretches of true time up to `end` without a single leader followed by a
    /// majority, as `[from, to)` (what `lease-expiry` forgives a lease service).
    pub(crate) fn gaps(&mut self, end: SimTime) -> Vec<(SimTime, SimTime)> {
        self.settle(self.clock.now);
        let mut gaps: Vec<(SimTime, SimTime)> =
            self.closed.iter().map(|g| (g.from, g.to)).collect();
        if let Some(open) = &self.open {
            if open.from < end {
                gaps.push((open.from, end));
            }
        }
        gaps
    }
}

impl Checker for LeaderLiveness {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        if record.time > self.clock.now {
            self.settle(self.clock.now);
        }
        self.clock.advance(NAME, index, record.time);
        if !self.counted.contains(&record.node) {
            return None;
        }
        let role = match record.obs {
            Observation::Leader { term } => Some(Role::Leader { term }),
            Observation::Follower { term, leader } => Some(Role::Follower { term, leader }),
            Observation::Candidate { .. } | Observation::Crashed | Observation::Started => None,
            _ => return None,
        };
        let old = match role {
            Some(role) => {
                match role {
                    Role::Leader { term } => {
                        self.leaders.insert(record.node, (term, index));
                    }
                    Role::Follower { term, leader } => {
                        *self.following.entry((term, leader)).or_insert(0) += 1;
                    }
                }
                self.roles.insert(record.node, (role, index))
            }
            None => self.roles.remove(&record.node),
        };
        match old {
            Some((Role::Leader { .. }, _)) if !matches!(role, Some(Role::Leader { .. })) => {
                self.leaders.remove(&record.node);
            }
            Some((Role::Follower { term, leader }, _)) => {
                if let Some(n) = self.following.get_mut(&(term, leader)) {
                    *n -= 1;
                    if *n == 0 {
                        self.following.remove(&(term, leader));
                    }
                }
            }
            _ => {}
        }
        self.last_index = Some(index);
        None
    }

    fn not_judged(&self) -> Option<crate::verdict::NotJudged> {
        self.too_short.clone()
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let mut v = self.judge_end(info)?;
        if let Some(bound) = &self.bound {
            v.message.push_str(&format!(
                " [bound {} = {bound}]",
                format_duration(self.within)
            ));
        }
        Some(v)
    }
}

impl LeaderLiveness {
    fn judge_end(&mut self, info: &RunInfo) -> Option<Violation> {
        let end = info.end.max(self.clock.now);
        self.settle(self.clock.now);
        if let Some(mut gap) = self.open.take() {
            gap.to = end;
            if gap.from < gap.to {
                self.closed.push(gap);
            }
        }
        let due = info.calm_from + self.within;
        if due > end {
            // Not a violation: the run gave the property no time to hold in.
            self.too_short = Some(crate::verdict::NotJudged::new(
                crate::verdict::Reason::TooShort,
                LeaderLivenessViolation::RunTooShort {
                    calm_from: info.calm_from,
                    within: self.within,
                    end,
                }
                .to_string(),
            ));
            return None;
        }
        let gap = self.closed.iter().find(|g| g.to > due)?;
        Some(
            LeaderLivenessViolation::Gap {
                reason: gap.reason.clone(),
                from: gap.from.max(due),
                to: gap.to,
                to_end: gap.to == end,
                calm_from: info.calm_from,
                within: self.within,
                counted: self.counted.len(),
                role: self.role.clone(),
                records: gap.records.clone(),
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{GapReason, LeaderLiveness, Params, Role};
    use crate::testing::{judge_with, At, H};
    use crate::Checker;
    use serde_json::json;
    use tenure_core::{Cluster, NodeId, RoleSpec, SimTime};

    /// Three nodes; n0 leads term 1 from 100ms with both others following.
    fn steady() -> H {
        H::nodes(3)
            .at_ms(100)
            .node(0)
            .leader(1)
            .at_ms(120)
            .node(1)
            .follower(1, Some(0))
            .node(2)
            .follower(1, Some(0))
    }

    /// `judge` as it was before the incremental counts: a scan of every node's role.
    fn judge_by_scan(c: &LeaderLiveness) -> Option<(GapReason, Vec<usize>)> {
        let leaders: Vec<(NodeId, u64, usize)> = c
            .roles
            .iter()
            .filter_map(|(node, (role, index))| match role {
                Role::Leader { term } => Some((*node, *term, *index)),
                Role::Follower { .. } => None,
            })
            .collect();
        match leaders[..] {
            [] => Some((GapReason::NoLeader, c.last_index.into_iter().collect())),
            [(leader, term, index)] => {
                let followers = c
                    .roles
                    .values()
                    .filter(|(role, _)| {
                        *role
                            == Role::Follower {
                                term,
                                leader: Some(leader),
                            }
                    })
                    .count();
                let with = followers + 1;
                if with > c.counted.len() / 2 {
                    return None;
                }
                let mut records = vec![index];
                records.extend(c.last_index.filter(|i| *i != index));
                Some((GapReason::NoMajority { leader, term, with }, records))
            }
            [(first, first_term, i), (second, second_term, j), ..] => Some((
                GapReason::TwoLeaders {
                    first,
                    first_term,
                    second,
                    second_term,
                },
                vec![i.min(j), i.max(j)],
            )),
        }
    }

    #[test]
    fn the_kept_counts_judge_as_the_scan_of_every_node() {
        use tenure_core::{Observation, Record};
        let cluster = Cluster::uniform("server", 5);
        let params: Params = serde_json::from_value(json!({"within": "1s"})).unwrap();
        let mut c = LeaderLiveness::new(params, &cluster).unwrap();
        // A fixed xorshift: roles, terms and leaders drawn over 5 nodes and 3 terms.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut draw = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut differ = 0;
        for i in 0..5000 {
            let node = NodeId(draw(5) as u32);
            let term = 1 + draw(3);
            let obs = match draw(5) {
                0 => Observation::Leader { term },
                1 => Observation::Candidate { term },
                2 => Observation::Crashed,
                _ => Observation::Follower {
                    term,
                    leader: match draw(6) {
                        5 => None,
                        l => Some(NodeId(l as u32)),
                    },
                },
            };
            let t = SimTime::from_duration(std::time::Duration::from_millis(i as u64));
            let local = tenure_core::LocalTime(t.0 as i64);
            let record = Record::new(t, node, local, local, obs);
            assert_eq!(c.on_record(i, &record), None);
            assert_eq!(c.judge(), judge_by_scan(&c), "after record {i}");
            differ += usize::from(c.judge().is_none());
        }
        // Both outcomes were exercised.
        assert!(differ > 0 && differ < 5000, "{differ}");
    }

    #[test]
    fn a_steady_leader_passes() {
        let h = steady().end_ms(1000).history();
        let params = json!({"within": "200ms"});
        assert_eq!(judge_with("leader-liveness", params, &h), None);
    }

    #[test]
    fn a_leader_with_one_follower_of_three_is_enough_but_alone_it_is_not() {
        // At 120ms only n1 follows (2 of 3): enough. At 150ms n2 joins as candidate of
        // term 2 and n1 follows it: n0 alone.
        let h = H::nodes(3)
            .at_ms(100)
            .node(0)
            .leader(1)
            .at_ms(120)
            .node(1)
            .follower(1, Some(0))
            .at_ms(150)
            .node(2)
            .candidate(2)
            .node(1)
            .follower(2, None)
            .end_ms(1000)
            .history();
        let (at, v) = judge_with("leader-liveness", json!({"within": "120ms"}), &h).unwrap();
        assert_eq!(at, At::Finish);
        assert_eq!(
            v.message,
            "n0 led term 1 but only 1 of 3 nodes (it included, 2 needed) were behind it from \
             0.150_000s until the end at 1.000_000s, though the run had been calm since \
             0.000_000s and a single leader with a majority was due within 120ms"
        );
        assert_eq!(v.nodes, vec![NodeId(0)]);
        assert_eq!(v.records, vec![0, 3]);
        assert_eq!(v.time, SimTime(150_000_000));
    }

    #[test]
    fn the_window_starts_exactly_at_calm_plus_within() {
        // Majority at 120ms: due at 120ms passes, due at 119ms fails (from 119ms).
        let h = steady().end_ms(1000).history();
        assert_eq!(
            judge_with("leader-liveness", json!({"within": "120ms"}), &h),
            None
        );
        let (_, v) = judge_with("leader-liveness", json!({"within": "119ms"}), &h).unwrap();
        assert_eq!(v.time, SimTime(119_000_000));
        assert!(
            v.message.starts_with("n0 led term 1 but only 1 of 3"),
            "{}",
            v.message
        );
    }

    #[test]
    fn a_crashed_leader_leaves_no_leader() {
        let h = steady()
            .at_ms(500)
            .node(0)
            .crash()
            .at_ms(700)
            .node(1)
            .leader(2)
            .node(2)
            .follower(2, Some(1))
            .end_ms(1000)
            .history();
        let (_, v) = judge_with("leader-liveness", json!({"within": "200ms"}), &h).unwrap();
        assert_eq!(
            v.message,
            "no node believed it led from 0.500_000s to 0.700_000s, though the run had been \
             calm since 0.000_000s and a single leader with a majority was due within 200ms"
        );
        assert_eq!(v.records, vec![3]);
        // The same gap before the calm is not judged.
        let h = steady()
            .at_ms(500)
            .node(0)
            .crash()
            .at_ms(700)
            .node(1)
            .leader(2)
            .node(2)
            .follower(2, Some(1))
            .calm_ms(500)
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("leader-liveness", json!({"within": "200ms"}), &h),
            None
        );
    }

    #[test]
    fn two_leaders_after_the_calm_fail() {
        let h = steady()
            .at_ms(300)
            .node(2)
            .leader(2)
            .at_ms(400)
            .node(0)
            .follower(2, Some(2))
            .node(1)
            .follower(2, Some(2))
            .end_ms(1000)
            .history();
        let (_, v) = judge_with("leader-liveness", json!({"within": "200ms"}), &h).unwrap();
        assert!(
            v.message.starts_with(
                "n0 (term 1) and n2 (term 2) both believed they led from 0.300_000s to 0.400_000s"
            ),
            "{}",
            v.message
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(2)]);
        assert_eq!(v.records, vec![0, 3]);
    }

    #[test]
    fn a_paused_leader_keeps_leading_and_a_zero_length_state_does_not_count() {
        // n0 steps down and back up at the same instant (two records at 300ms).
        let h = steady()
            .note("paused")
            .at_ms(300)
            .node(0)
            .candidate(2)
            .leader(2)
            .node(1)
            .follower(2, Some(0))
            .end_ms(1000)
            .history();
        assert_eq!(
            judge_with("leader-liveness", json!({"within": "200ms"}), &h),
            None
        );
    }

    #[test]
    fn a_run_too_short_to_judge_is_not_judged_and_not_a_violation() {
        let h = steady().calm_ms(900).end_ms(1000).history();
        assert_eq!(
            judge_with("leader-liveness", json!({"within": "200ms"}), &h),
            None
        );
        let v = crate::testing::verdict_with("leader-liveness", json!({"within": "200ms"}), &h);
        let n = v.verdict.not_judged().expect("not judged");
        assert_eq!(n.reason, crate::verdict::Reason::TooShort);
        assert_eq!(
            n.why,
            "the run ended at 1.000_000s, too short to judge liveness: it was calm from \
             0.900_000s and a leader was due within 200ms, by 1.100_000s"
        );
        // Exactly at the end: an empty window, nothing to judge.
        let h = steady().calm_ms(800).end_ms(1000).history();
        assert_eq!(
            judge_with("leader-liveness", json!({"within": "200ms"}), &h),
            None
        );
    }

    #[test]
    fn only_nodes_of_the_role_count() {
        let cluster =
            Cluster::new(vec![RoleSpec::new("server", 3), RoleSpec::new("client", 2)]).unwrap();
        // 2 of 5 nodes, but 2 of 3 servers: enough with role = server.
        let h = H::new(cluster)
            .at_ms(10)
            .node(0)
            .leader(1)
            .node(1)
            .follower(1, Some(0))
            .node(4)
            .leader(7) // a client's belief is not counted
            .end_ms(1000)
            .history();
        let params = json!({"within": "100ms", "role": "server"});
        assert_eq!(judge_with("leader-liveness", params, &h), None);
        let (_, v) = judge_with("leader-liveness", json!({"within": "100ms"}), &h).unwrap();
        assert!(
            v.message.starts_with("n0 (term 1) and n4 (term 7)"),
            "{}",
            v.message
        );
    }

    #[test]
    fn an_unknown_role_is_an_error_naming_the_field() {
        let err = crate::build(
            "leader-liveness",
            &json!({"role": "srv"}),
            &Cluster::uniform("server", 3),
        )
        .err()
        .unwrap();
        assert_eq!(err.field, "role");
        assert_eq!(
            err.message,
            "no node plays role `srv`; the cluster's roles are: server"
        );
    }
}
