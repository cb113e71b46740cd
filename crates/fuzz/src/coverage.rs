//! Coverage of a fuzz run: in how many seeds each check judged anything, and in how many
//! seeds each drawn kind of fault landed while a leader or lock holder existed (a pause
//! that never hits a holder tests nothing).
//!
//! A fault *lands on a holder* when, at the instant it is applied, a node believed it
//! led, held a lease, held a lock or owned a resource (from the run's own
//! observations), and, for a fault aimed at one node, that node was such a holder (a
//! fault aimed at `"leader"` lands when there was one). Heals, network resets and
//! requests are not faults that can land.

use std::collections::{BTreeMap, BTreeSet};
use tenure_check::Judged;
use tenure_core::{History, NodeId, Observation, SimTime};
use tenure_scenario::{Fault, FaultEvent, NodeSel};

/// A check judged in fewer than this share of seeds is flagged.
pub const LOW_CHECK_SHARE: f64 = 0.5;
/// A fault kind that landed on a holder in fewer than this share of the seeds that drew
/// it is flagged.
pub const LOW_FAULT_SHARE: f64 = 0.1;

/// One drawn fault of a seed: its kind, and whether it landed on a holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landed {
    pub kind: &'static str,
    pub on_holder: bool,
}

/// Who holds something (a leadership, a lease, a lock, an owned resource) as the
/// records go by.
#[derive(Default)]
struct Holders {
    leads: BTreeSet<NodeId>,
    leases: BTreeSet<NodeId>,
    locks: BTreeMap<NodeId, BTreeSet<String>>,
    owns: BTreeMap<NodeId, BTreeSet<String>>,
}

impl Holders {
    fn apply(&mut self, node: NodeId, obs: &Observation) {
        match obs {
            Observation::Started | Observation::Crashed => {
                self.leads.remove(&node);
                self.leases.remove(&node);
                self.locks.remove(&node);
                self.owns.remove(&node);
            }
            Observation::Leader { .. } => {
                self.leads.insert(node);
            }
            Observation::Follower { .. } | Observation::Candidate { .. } => {
                self.leads.remove(&node);
            }
            Observation::LeaseStart { .. } => {
                self.leases.insert(node);
            }
            Observation::LeaseEnd { .. } => {
                self.leases.remove(&node);
            }
            Observation::Holds { resource, .. } => {
                self.locks.entry(node).or_default().insert(resource.clone());
            }
            Observation::Releases { resource } => {
                if let Some(set) = self.locks.get_mut(&node) {
                    set.remove(resource);
                }
            }
            Observation::Owns { resource, .. } => {
                self.owns.entry(node).or_default().insert(resource.clone());
            }
            Observation::Disowns { resource, .. } => {
                if let Some(set) = self.owns.get_mut(&node) {
                    set.remove(resource);
                }
            }
            _ => {}
        }
    }

    fn holds(&self, node: NodeId) -> bool {
        self.leads.contains(&node)
            || self.leases.contains(&node)
            || self.locks.get(&node).is_some_and(|s| !s.is_empty())
            || self.owns.get(&node).is_some_and(|s| !s.is_empty())
    }

    fn any(&self) -> bool {
        !self.leads.is_empty()
            || !self.leases.is_empty()
            || self.locks.values().any(|s| !s.is_empty())
            || self.owns.values().any(|s| !s.is_empty())
    }
}

/// The node a fault is aimed at, if it is aimed at one (`None` inside: "the leader").
fn aimed_at(fault: &Fault) -> Option<Option<NodeId>> {
    Some(match fault.node()? {
        NodeSel::Id(n) => Some(NodeId(*n)),
        NodeSel::Leader => None,
    })
}

/// Whether a fault can land at all (a heal, a network reset back to calm, a restart or
/// a client request is not a fault aimed at anyone).
fn counts(fault: &Fault) -> bool {
    !matches!(
        fault,
        Fault::Heal {} | Fault::Restart { .. } | Fault::Request { .. }
    )
}

/// Where each of `faults` landed in the run that `history` records. Faults the run
/// never reached (it stopped early at a violation) are left out, and so is every fault
/// of a run in which nothing was ever held (a protocol with no leaders, leases, locks
/// or owners: there is no holder to land on).
pub fn landed(faults: &[FaultEvent], history: &History) -> Vec<Landed> {
    let mut ever = Holders::default();
    if !history.records.iter().any(|r| {
        ever.apply(r.node, &r.obs);
        ever.any()
    }) {
        return Vec::new();
    }
    let mut order: Vec<&FaultEvent> = faults.iter().filter(|e| counts(&e.fault)).collect();
    order.sort_by_key(|e| e.at);
    let mut holders = Holders::default();
    let mut records = history.records.iter().peekable();
    let mut out = Vec::new();
    for e in order {
        let at = SimTime::from_duration(e.at);
        if at > history.info.end {
            break;
        }
        // Records made before the fault (at the same instant: the fault comes first,
        // as the supervisor applies it before the nodes run).
        while let Some(r) = records.next_if(|r| r.time < at) {
            holders.apply(r.node, &r.obs);
        }
        let on_holder = match aimed_at(&e.fault) {
            Some(Some(node)) => holders.holds(node),
            Some(None) => !holders.leads.is_empty() || holders.any(),
            None => holders.any(),
        };
        out.push(Landed {
            kind: e.fault.kind(),
            on_holder,
        });
    }
    out
}

/// `1 seed`, `3 seeds`.
fn seeds(n: u64) -> String {
    format!("{n} seed{}", if n == 1 { "" } else { "s" })
}

/// Coverage counts over many seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Seeds counted.
    pub seeds: u64,
    /// Per check (in the order first seen): seeds in which it judged anything.
    pub checks: Vec<(String, u64)>,
    /// Per fault kind (sorted): seeds that drew it, and seeds in which it landed on a
    /// holder at least once.
    pub faults: BTreeMap<String, (u64, u64)>,
}

impl Coverage {
    /// Adds one seed: what its checks judged (a check that found a violation judged
    /// something) and where its faults landed.
    pub fn add(&mut self, judged: &[Judged], violated: &[&str], landed: &[Landed]) {
        self.seeds += 1;
        for j in judged {
            let any = violated.contains(&j.check.as_str())
                || j.counts.first().is_some_and(|(_, n)| *n > 0)
                || j.counts.is_empty();
            match self.checks.iter_mut().find(|(c, _)| *c == j.check) {
                Some((_, n)) => *n += u64::from(any),
                None => self.checks.push((j.check.clone(), u64::from(any))),
            }
        }
        let mut kinds: BTreeMap<&'static str, bool> = BTreeMap::new();
        for l in landed {
            *kinds.entry(l.kind).or_default() |= l.on_holder;
        }
        for (kind, on) in kinds {
            let e = self.faults.entry(kind.to_string()).or_default();
            e.0 += 1;
            e.1 += u64::from(on);
        }
    }

    /// Adds one seed from its JSON line (see [`crate::triage::SeedLine`]): per check, its
    /// primary count (`None`: a check with no counts judges whenever it runs); the check
    /// that failed, if any; per drawn fault kind, whether it landed on a holder. Counts the
    /// same as [`Coverage::add`] of the outcome the line was made from, except that checks
    /// come in name order (a JSON object's order).
    pub fn add_line(
        &mut self,
        judged: &BTreeMap<String, Option<u64>>,
        violated: Option<&str>,
        landed: &BTreeMap<String, bool>,
    ) {
        self.seeds += 1;
        for (check, count) in judged {
            let any = violated == Some(check.as_str()) || count.is_none_or(|n| n > 0);
            match self.checks.iter_mut().find(|(c, _)| c == check) {
                Some((_, n)) => *n += u64::from(any),
                None => self.checks.push((check.clone(), u64::from(any))),
            }
        }
        for (kind, on) in landed {
            let e = self.faults.entry(kind.clone()).or_default();
            e.0 += 1;
            e.1 += u64::from(*on);
        }
    }

    /// Checks that judged nothing in any seed counted.
    pub fn never_judged(&self) -> Vec<&str> {
        self.checks
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(c, _)| c.as_str())
            .collect()
    }

    /// The summary in words, a line each, low coverage flagged.
    pub fn lines(&self) -> Vec<String> {
        let pct = |n: u64, of: u64| {
            if of == 0 {
                0.0
            } else {
                n as f64 * 100.0 / of as f64
            }
        };
        let mut out = Vec::new();
        for (check, n) in &self.checks {
            let share = pct(*n, self.seeds);
            let low = if (*n as f64) < LOW_CHECK_SHARE * self.seeds as f64 {
                format!("  LOW: under {:.0}% of seeds", LOW_CHECK_SHARE * 100.0)
            } else {
                String::new()
            };
            out.push(format!(
                "check {check}: judged something in {n} of {} ({share:.0}%){low}",
                seeds(self.seeds)
            ));
        }
        for (kind, (drawn, on)) in &self.faults {
            let share = pct(*on, *drawn);
            let low = if (*on as f64) < LOW_FAULT_SHARE * *drawn as f64 {
                format!(
                    "  LOW: under {:.0}% of the seeds that drew it",
                    LOW_FAULT_SHARE * 100.0
                )
            } else {
                String::new()
            };
            out.push(format!(
                "fault {kind}: drawn in {}, landed on a leader or holder in {on} ({share:.0}%){low}",
                seeds(*drawn)
            ));
        }
        out
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "seeds": self.seeds,
            "checks": self.checks.iter().map(|(c, n)| serde_json::json!({
                "check": c,
                "judged_seeds": n,
                "low": (*n as f64) < LOW_CHECK_SHARE * self.seeds as f64,
            })).collect::<Vec<_>>(),
            "faults": self.faults.iter().map(|(k, (d, o))| serde_json::json!({
                "kind": k,
                "drawn_seeds": d,
                "landed_on_holder_seeds": o,
                "low": (*o as f64) < LOW_FAULT_SHARE * *d as f64,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tenure_core::{Cluster, Record, RunInfo};

    fn history(records: Vec<(u64, u32, Observation)>, end_ms: u64) -> History {
        let cluster = Cluster::uniform("node", 3);
        History {
            records: records
                .into_iter()
                .map(|(ms, n, obs)| Record {
                    time: SimTime::from_duration(Duration::from_millis(ms)),
                    node: NodeId(n),
                    obs,
                    mono: tenure_core::LocalTime(0),
                    wall: tenure_core::LocalTime(0),
                })
                .collect(),
            info: RunInfo {
                end: SimTime::from_duration(Duration::from_millis(end_ms)),
                calm_from: SimTime::ZERO,
                seed: 0,
                cluster,
            },
        }
    }

    fn at(ms: u64, fault: Fault) -> FaultEvent {
        FaultEvent {
            at: Duration::from_millis(ms),
            fault,
        }
    }

    #[test]
    fn a_pause_lands_only_on_a_node_that_holds_something() {
        let h = history(
            vec![
                (100, 0, Observation::Leader { term: 1 }),
                (
                    500,
                    0,
                    Observation::Follower {
                        term: 2,
                        leader: None,
                    },
                ),
            ],
            1000,
        );
        let pause = |n, ms| {
            at(
                ms,
                Fault::Pause {
                    node: NodeSel::Id(n),
                    duration: Duration::from_millis(10),
                },
            )
        };
        let got = landed(
            &[pause(0, 50), pause(0, 200), pause(1, 200), pause(0, 600)],
            &h,
        );
        let on: Vec<bool> = got.iter().map(|l| l.on_holder).collect();
        assert_eq!(on, vec![false, true, false, false]);
        // A partition lands while anyone leads.
        let cut = at(
            300,
            Fault::Partition {
                groups: vec![vec![NodeId(0)]],
            },
        );
        assert!(landed(&[cut], &h)[0].on_holder);
        // A heal is no fault that lands.
        assert!(landed(&[at(300, Fault::Heal {})], &h).is_empty());
    }

    #[test]
    fn coverage_counts_seeds_and_flags_low_ones() {
        let judged = |n: u64| Judged {
            check: "lease-safety".into(),
            counts: vec![("actions".into(), n)],
            summary: String::new(),
            vacuous: None,
        };
        let mut c = Coverage::default();
        c.add(
            &[judged(3)],
            &[],
            &[Landed {
                kind: "pause",
                on_holder: false,
            }],
        );
        c.add(
            &[judged(0)],
            &[],
            &[Landed {
                kind: "pause",
                on_holder: false,
            }],
        );
        c.add(&[judged(0)], &["lease-safety"], &[]);
        assert_eq!(c.checks, vec![("lease-safety".to_string(), 2)]);
        assert_eq!(c.faults["pause"], (2, 0));
        let lines = c.lines();
        assert_eq!(
            lines[0],
            "check lease-safety: judged something in 2 of 3 seeds (67%)"
        );
        assert!(
            lines[1].ends_with("LOW: under 10% of the seeds that drew it"),
            "{}",
            lines[1]
        );
        assert!(c.never_judged().is_empty());
    }
}
