//! Coverage of a fuzz run: in how many seeds each check judged anything, and where each
//! drawn kind of fault landed: on a leader or lock holder, on a waiter, while an
//! operation was in flight (a pause that never hits a holder tests nothing).
//!
//! A fault *lands on a holder* when, at the instant it is applied, the node it hits
//! believed it led, held a lease, held a lock or owned a resource (from the run's own
//! observations, through [`tenure_core::Beliefs`], the simulator's own definition); a
//! fault aimed at a role (`"leader"`, `"holder"`, `"waiter"`) is resolved as the
//! simulator resolves it, re-aimed or skipped alike; a fault of the network (a
//! partition, a cut, a network change) lands on a holder when anyone holds. It lands *on
//! a waiter* when the node hit waited for a lock or stood for election, and *while an
//! operation was in flight* when the node hit (for a network fault: any node) waited or
//! had a client operation open. Heals, restarts and requests are not faults that land.
//!
//! Every fault aimed at a role is counted by what became of it: it hit a node of its
//! role, it was re-aimed at the other role (nobody held, or nobody waited), or it was
//! skipped (nobody held or waited, or nobody led): never silently.

use std::collections::BTreeMap;
use tenure_check::Judged;
use tenure_core::{Aim, Beliefs, History, NodeId, SimTime};
use tenure_scenario::{Fault, FaultEvent};

/// A check judged in fewer than this share of seeds is flagged.
pub const LOW_CHECK_SHARE: f64 = 0.5;
/// A fault kind that landed on a holder in fewer than this share of the seeds that drew
/// it is flagged.
pub const LOW_FAULT_SHARE: f64 = 0.1;
/// Process faults that landed on a holder in fewer than this share of the seeds that
/// drew one are flagged (issue 33: at least half for every lock protocol).
pub const LOW_PROCESS_SHARE: f64 = 0.5;

/// The fault kinds that stop or kill a process: what breaks a lock holder.
pub const PROCESS_KINDS: &[&str] = &["crash", "pause", "power-loss", "crash-point"];

/// What became of a fault aimed at a role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aimed {
    /// It hit a node of the role it was aimed at.
    Hit,
    /// Nobody was of its role: it hit a node of the other (a holder's fault a waiter).
    Reaimed,
    /// Nobody held or waited (nobody led, for `"leader"`): it was skipped.
    Skipped,
    /// Nobody of its role when it fired: it waited for one, up to the timeline's next
    /// heal ([`FaultEvent::aim_deadline`]), and hit the first node that became one.
    Waited,
}

/// One drawn fault of a seed: its kind, and where it landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Landed {
    pub kind: &'static str,
    pub on_holder: bool,
    /// The node it hit waited for a lock or stood for election.
    pub on_waiter: bool,
    /// It landed while an operation was in flight (see the module documentation).
    pub in_flight: bool,
    /// The role it was aimed at and what became of it; `None` for a fixed node or none.
    pub aimed: Option<(Aim, Aimed)>,
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
    let size = history.info.cluster.size();
    let mut ever = Beliefs::new(size);
    if !history.records.iter().any(|r| {
        ever.apply(r.node, &r.obs);
        ever.any_holder()
    }) {
        return Vec::new();
    }
    let end = history.info.end.as_duration();
    let mut order: Vec<(usize, &FaultEvent)> = faults
        .iter()
        .enumerate()
        .filter(|(_, e)| counts(&e.fault))
        .collect();
    order.sort_by_key(|(_, e)| e.at);
    let mut beliefs = Beliefs::new(size);
    let records = &history.records;
    let mut next = 0;
    let mut out = Vec::new();
    for (i, e) in order {
        let at = SimTime::from_duration(e.at);
        if at > history.info.end {
            break;
        }
        // Records made before the fault (at the same instant: the fault comes first,
        // as the supervisor applies it before the nodes run).
        while next < records.len() && records[next].time < at {
            beliefs.apply(records[next].node, &records[next].obs);
            next += 1;
        }
        let mut waited: Option<Beliefs> = None;
        let (node, aimed): (Option<NodeId>, Option<(Aim, Aimed)>) = match e.fault.node() {
            None => (None, None),
            Some(sel) => match sel.aim() {
                None => (sel.id(), None),
                Some(aim) => {
                    // A holder (waiter) fault that finds no holder (waiter) waits for
                    // one up to its deadline (none for "leader"), then is aimed as
                    // without the wait.
                    let wait = FaultEvent::aim_deadline(faults, i, end)
                        .filter(|_| beliefs.of_role(aim, |_| true).is_none());
                    let found = match wait {
                        Some(until) => {
                            let (then, found) =
                                wait_for_aim(&beliefs, &records[next..], aim, until);
                            waited = Some(then);
                            found
                        }
                        None => false,
                    };
                    match waited.as_ref().unwrap_or(&beliefs).select(aim, |_| true) {
                        Some(s) if found => (Some(s.node), Some((aim, Aimed::Waited))),
                        Some(s) if s.reaimed.is_some() => {
                            (Some(s.node), Some((aim, Aimed::Reaimed)))
                        }
                        Some(s) => (Some(s.node), Some((aim, Aimed::Hit))),
                        None => (None, Some((aim, Aimed::Skipped))),
                    }
                }
            },
        };
        let beliefs = waited.as_ref().unwrap_or(&beliefs);
        let skipped = matches!(aimed, Some((_, Aimed::Skipped)));
        let (on_holder, on_waiter, in_flight) = match node {
            Some(n) => (beliefs.holds(n), beliefs.waits(n), beliefs.in_flight(n)),
            None if skipped => (false, false, false),
            None => (beliefs.any_holder(), false, beliefs.any_in_flight()),
        };
        out.push(Landed {
            kind: e.fault.kind(),
            on_holder,
            on_waiter,
            in_flight,
            aimed,
        });
    }
    out
}

/// What the nodes believe when a fault that waits for a holder (a waiter) is applied,
/// from `records` (those after the fault's time): at the first record whose node then
/// holds (waits), with `true`; else at `until`, with `false` (as `Control::wait_for_aim`
/// in `tenure-sim` does).
fn wait_for_aim(
    beliefs: &Beliefs,
    records: &[tenure_core::Record],
    aim: Aim,
    until: std::time::Duration,
) -> (Beliefs, bool) {
    let until = SimTime::from_duration(until);
    let mut then = beliefs.clone();
    for r in records.iter().take_while(|r| r.time < until) {
        then.apply(r.node, &r.obs);
        if then.is(r.node, aim) {
            return (then, true);
        }
    }
    (then, false)
}

/// `1 seed`, `3 seeds`.
fn seeds(n: u64) -> String {
    format!("{n} seed{}", if n == 1 { "" } else { "s" })
}

/// Where one fault kind landed in one seed (at least once): the per-seed summary a
/// JSON line carries, so shards merge to the same counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KindLanded {
    pub holder: bool,
    #[serde(default)]
    pub waiter: bool,
    #[serde(default)]
    pub in_flight: bool,
}

/// Faults aimed at one role, counted as events: how many were aimed, re-aimed, skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AimCounts {
    pub aimed: u64,
    pub reaimed: u64,
    pub skipped: u64,
    /// Found nobody of their role when they fired, waited for one and hit it.
    #[serde(default)]
    pub waited: u64,
}

/// One seed's coverage of faults, as its JSON line carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeedFaults {
    /// Per fault kind drawn.
    pub kinds: BTreeMap<String, KindLanded>,
    /// Per role aimed at (`leader`, `holder`, `waiter`).
    pub aims: BTreeMap<String, AimCounts>,
}

impl SeedFaults {
    /// The summary of one seed's faults.
    pub fn of(landed: &[Landed]) -> SeedFaults {
        let mut out = SeedFaults::default();
        for l in landed {
            let k = out.kinds.entry(l.kind.to_string()).or_default();
            k.holder |= l.on_holder;
            k.waiter |= l.on_waiter;
            k.in_flight |= l.in_flight;
            if let Some((aim, what)) = l.aimed {
                let a = out.aims.entry(aim.name().to_string()).or_default();
                a.aimed += 1;
                a.reaimed += u64::from(what == Aimed::Reaimed);
                a.skipped += u64::from(what == Aimed::Skipped);
                a.waited += u64::from(what == Aimed::Waited);
            }
        }
        out
    }

    /// Per kind, whether it landed on a holder (the JSON line's `landed_on_holder`).
    pub fn on_holder(&self) -> BTreeMap<String, bool> {
        self.kinds
            .iter()
            .map(|(k, l)| (k.clone(), l.holder))
            .collect()
    }
}

/// Seeds that drew a kind of fault, and where it landed at least once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCoverage {
    pub drawn: u64,
    pub on_holder: u64,
    pub on_waiter: u64,
    pub in_flight: u64,
}

/// Coverage counts over many seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Seeds counted.
    pub seeds: u64,
    /// Per check (in the order first seen): seeds in which it judged anything.
    pub checks: Vec<(String, u64)>,
    /// Per fault kind (sorted): seeds that drew it, and seeds in which it landed on a
    /// holder (a waiter, while an operation was in flight) at least once.
    pub faults: BTreeMap<String, KindCoverage>,
    /// Process faults ([`PROCESS_KINDS`]): seeds that drew one, and seeds in which one
    /// landed on a holder.
    pub process: (u64, u64),
    /// Per role aimed at: the faults aimed at it, re-aimed and skipped.
    pub aims: BTreeMap<String, AimCounts>,
}

impl Coverage {
    /// Adds one seed: what its checks judged (a check that found a violation judged
    /// something) and where its faults landed.
    pub fn add(&mut self, judged: &[Judged], violated: &[&str], landed: &[Landed]) {
        let judged: Vec<(String, bool)> = judged
            .iter()
            .map(|j| {
                let any = violated.contains(&j.check.as_str())
                    || j.counts.first().is_some_and(|(_, n)| *n > 0)
                    || j.counts.is_empty();
                (j.check.clone(), any)
            })
            .collect();
        self.add_seed(&judged, &SeedFaults::of(landed));
    }

    /// Adds one seed from its JSON line (see [`crate::triage::SeedLine`]): per check, its
    /// primary count (`None`: a check with no counts judges whenever it runs); the check
    /// that failed, if any; where its faults landed. Counts the same as
    /// [`Coverage::add`] of the outcome the line was made from, except that checks come
    /// in name order (a JSON object's order).
    pub fn add_line(
        &mut self,
        judged: &BTreeMap<String, Option<u64>>,
        violated: Option<&str>,
        faults: &SeedFaults,
    ) {
        let judged: Vec<(String, bool)> = judged
            .iter()
            .map(|(check, count)| {
                let any = violated == Some(check.as_str()) || count.is_none_or(|n| n > 0);
                (check.clone(), any)
            })
            .collect();
        self.add_seed(&judged, faults);
    }

    fn add_seed(&mut self, judged: &[(String, bool)], faults: &SeedFaults) {
        self.seeds += 1;
        for (check, any) in judged {
            match self.checks.iter_mut().find(|(c, _)| c == check) {
                Some((_, n)) => *n += u64::from(*any),
                None => self.checks.push((check.clone(), u64::from(*any))),
            }
        }
        let (mut process, mut process_on_holder) = (false, false);
        for (kind, l) in &faults.kinds {
            let e = self.faults.entry(kind.clone()).or_default();
            e.drawn += 1;
            e.on_holder += u64::from(l.holder);
            e.on_waiter += u64::from(l.waiter);
            e.in_flight += u64::from(l.in_flight);
            if PROCESS_KINDS.contains(&kind.as_str()) {
                process = true;
                process_on_holder |= l.holder;
            }
        }
        self.process.0 += u64::from(process);
        self.process.1 += u64::from(process_on_holder);
        for (aim, c) in &faults.aims {
            let e = self.aims.entry(aim.clone()).or_default();
            e.aimed += c.aimed;
            e.reaimed += c.reaimed;
            e.skipped += c.skipped;
            e.waited += c.waited;
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
        for (kind, c) in &self.faults {
            let share = pct(c.on_holder, c.drawn);
            let low = if (c.on_holder as f64) < LOW_FAULT_SHARE * c.drawn as f64 {
                format!(
                    "  LOW: under {:.0}% of the seeds that drew it",
                    LOW_FAULT_SHARE * 100.0
                )
            } else {
                String::new()
            };
            let mut more = String::new();
            if c.on_waiter > 0 {
                more.push_str(&format!(", on a waiter in {}", c.on_waiter));
            }
            if c.in_flight > 0 {
                more.push_str(&format!(
                    ", while an operation was in flight in {}",
                    c.in_flight
                ));
            }
            out.push(format!(
                "fault {kind}: drawn in {}, landed on a leader or holder in {} ({share:.0}%){more}{low}",
                seeds(c.drawn),
                c.on_holder
            ));
        }
        let (drawn, on) = self.process;
        if drawn > 0 {
            let low = if (on as f64) < LOW_PROCESS_SHARE * drawn as f64 {
                format!(
                    "  LOW: under {:.0}% of the seeds that drew one",
                    LOW_PROCESS_SHARE * 100.0
                )
            } else {
                String::new()
            };
            out.push(format!(
                "process faults ({}): drawn in {}, one landed on a leader or holder in {on} ({:.0}%){low}",
                PROCESS_KINDS.join(", "),
                seeds(drawn),
                pct(on, drawn)
            ));
        }
        for (aim, c) in &self.aims {
            let nobody = if aim == "leader" {
                "nobody led"
            } else {
                "nobody held or waited"
            };
            let other = match aim.as_str() {
                "holder" => " (at a waiter: nobody held)",
                "waiter" => " (at a holder: nobody waited)",
                _ => "",
            };
            let mut what = format!(
                "aimed at the {aim}: {} fault{}",
                c.aimed,
                if c.aimed == 1 { "" } else { "s" }
            );
            if c.reaimed > 0 {
                what.push_str(&format!(", {} re-aimed{other}", c.reaimed));
            }
            if c.waited > 0 {
                let (one, none) = match aim.as_str() {
                    "holder" => ("a holder", "nobody held"),
                    _ => ("a waiter", "nobody waited"),
                };
                what.push_str(&format!(
                    ", {} waited for {one} ({none} when they fired)",
                    c.waited
                ));
            }
            what.push_str(&format!(", {} skipped ({nobody})", c.skipped));
            out.push(what);
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
            "faults": self.faults.iter().map(|(k, c)| serde_json::json!({
                "kind": k,
                "drawn_seeds": c.drawn,
                "landed_on_holder_seeds": c.on_holder,
                "landed_on_waiter_seeds": c.on_waiter,
                "landed_in_flight_seeds": c.in_flight,
                "low": (c.on_holder as f64) < LOW_FAULT_SHARE * c.drawn as f64,
            })).collect::<Vec<_>>(),
            "process_faults": {
                "kinds": PROCESS_KINDS,
                "drawn_seeds": self.process.0,
                "landed_on_holder_seeds": self.process.1,
                "low": self.process.0 > 0
                    && (self.process.1 as f64) < LOW_PROCESS_SHARE * self.process.0 as f64,
            },
            "aimed": self.aims.iter().map(|(a, c)| serde_json::json!({
                "at": a,
                "faults": c.aimed,
                "reaimed": c.reaimed,
                "skipped": c.skipped,
                "waited": c.waited,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tenure_core::{Cluster, Observation, Record, RunInfo};
    use tenure_scenario::NodeSel;

    fn history(records: Vec<(u64, u32, Observation)>, end_ms: u64) -> History {
        let cluster = Cluster::uniform("node", 3);
        History {
            records: records
                .into_iter()
                .map(|(ms, n, obs)| {
                    Record::new(
                        SimTime::from_duration(Duration::from_millis(ms)),
                        NodeId(n),
                        tenure_core::LocalTime(0),
                        tenure_core::LocalTime(0),
                        obs,
                    )
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
    fn a_fault_aimed_at_a_role_hits_it_is_re_aimed_or_is_skipped_and_says_so() {
        let holds = Observation::Holds {
            resource: "r".into(),
            token: 1,
        };
        let h = history(
            vec![
                (
                    100,
                    1,
                    Observation::Waiting {
                        resource: "r".into(),
                    },
                ),
                (200, 1, holds),
                (
                    300,
                    2,
                    Observation::Waiting {
                        resource: "r".into(),
                    },
                ),
                (
                    400,
                    1,
                    Observation::Releases {
                        resource: "r".into(),
                    },
                ),
                (
                    500,
                    2,
                    Observation::GivesUp {
                        resource: "r".into(),
                    },
                ),
            ],
            1000,
        );
        let pause = |node, ms| {
            at(
                ms,
                Fault::Pause {
                    node,
                    duration: Duration::from_millis(10),
                },
            )
        };
        let events = [
            pause(NodeSel::Holder, 150), // nobody holds: it waits, n1 holds at 200
            pause(NodeSel::Holder, 250), // n1 holds
            pause(NodeSel::Waiter, 350), // n2 waits
            pause(NodeSel::Waiter, 450), // nobody holds, n2 waits
            pause(NodeSel::Holder, 600), // nobody holds or waits, nor will by 990
            pause(NodeSel::Leader, 250), // nobody leads
            pause(NodeSel::Id(2), 350),  // a fixed node that waits
        ];
        let got = landed(&events, &h);
        let what: Vec<_> = got
            .iter()
            .map(|l| (l.on_holder, l.on_waiter, l.in_flight, l.aimed))
            .collect();
        use Aimed::*;
        assert_eq!(
            what,
            vec![
                (true, false, false, Some((Aim::Holder, Waited))),
                (true, false, false, Some((Aim::Holder, Hit))),
                (false, false, false, Some((Aim::Leader, Skipped))),
                (false, true, true, Some((Aim::Waiter, Hit))),
                (false, true, true, None),
                (false, true, true, Some((Aim::Waiter, Hit))),
                (false, false, false, Some((Aim::Holder, Skipped))),
            ]
        );
        // With a heal at 155 ms the first has no time to wait (its 10 ms would end
        // after the heal): it is re-aimed at once at n1, who waits.
        let mut healed = events.to_vec();
        healed.push(at(155, Fault::Heal {}));
        let first = landed(&healed, &h)[0].clone();
        assert_eq!(
            (first.on_holder, first.on_waiter, first.aimed),
            (false, true, Some((Aim::Holder, Reaimed)))
        );
        let faults = SeedFaults::of(&got);
        assert_eq!(
            faults.aims["holder"],
            AimCounts {
                aimed: 3,
                reaimed: 0,
                skipped: 1,
                waited: 1,
            }
        );
        let mut c = Coverage::default();
        c.add(&[], &[], &got);
        let lines = c.lines();
        assert!(
            lines.contains(&"aimed at the holder: 3 faults, 1 waited for a holder (nobody held when they fired), 1 skipped (nobody held or waited)".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"process faults (crash, pause, power-loss, crash-point): drawn in 1 seed, one landed on a leader or holder in 1 (100%)".to_string()),
            "{lines:?}"
        );
        // A JSON line carries the same counts (shards merge to the whole).
        let mut merged = Coverage::default();
        merged.add_line(&BTreeMap::new(), None, &faults);
        assert_eq!(merged, c);
    }

    #[test]
    fn process_faults_that_miss_every_holder_are_flagged() {
        let h = history(vec![(100, 0, Observation::Leader { term: 1 })], 1000);
        let crash = at(
            50,
            Fault::Crash {
                node: NodeSel::Id(1),
            },
        );
        let mut c = Coverage::default();
        c.add(&[], &[], &landed(&[crash], &h));
        assert_eq!(c.process, (1, 0));
        assert!(
            c.lines()
                .last()
                .unwrap()
                .ends_with("LOW: under 50% of the seeds that drew one"),
            "{:?}",
            c.lines()
        );
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
        let pause = Landed {
            kind: "pause",
            on_holder: false,
            on_waiter: false,
            in_flight: false,
            aimed: None,
        };
        c.add(&[judged(3)], &[], std::slice::from_ref(&pause));
        c.add(&[judged(0)], &[], &[pause]);
        c.add(&[judged(0)], &["lease-safety"], &[]);
        assert_eq!(c.checks, vec![("lease-safety".to_string(), 2)]);
        assert_eq!(
            c.faults["pause"],
            KindCoverage {
                drawn: 2,
                ..KindCoverage::default()
            }
        );
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
