//! What a check judged in a run, and whether that was anything at all.
//!
//! A check that judged nothing has not passed: `lease-safety` over a protocol that never
//! records `Serves` passes every run, the correct lease and a broken one alike. Every
//! built-in checker therefore counts the observations it judges ([`Judged`]), and a
//! check whose judged observation never appeared is *vacuous*: the report says so, with
//! the observation that is missing and the fix, instead of "passed".
//!
//! The counting is the same for every checker ([`Counting`], wrapped around each
//! checker by [`crate::build`]): each checker's [`Judges`] names the observation it
//! judges (the *primary* kind: no such record, nothing judged), what it calls one
//! (`action`, `leadership`), how those group (terms, resources, keys) and, for a few, a
//! second count (`waits`). A checker of your own may report its own [`Judged`] through
//! [`crate::Checker::judged`]; one that does not is "not reported", never vacuous.

use crate::{Checker, Violation};
use serde::Serialize;
use std::collections::BTreeSet;
use tenure_core::{Observation, Record, RunInfo};

/// What a check judged in one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judged {
    /// The check's name.
    pub check: String,
    /// The counts, in the order the summary names them: `[("actions", 412), ("leases",
    /// 9), ("nodes", 3)]`.
    pub counts: Vec<(String, u64)>,
    /// The counts in words: `412 actions in 9 leases by 3 nodes`.
    pub summary: String,
    /// Set when the check judged nothing relevant: why, and what to do about it.
    pub vacuous: Option<Vacuous>,
}

/// A check that judged nothing: the observation it needed and never saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vacuous {
    /// The observation kind the check judges, as a protocol records it (`Serves`).
    pub missing: String,
    /// What to do: record it where the protocol acts, or check something else.
    pub fix: String,
}

impl Judged {
    /// A check that does not say what it judged (a checker of your own that does not
    /// implement [`crate::Checker::judged`]).
    pub fn not_reported(check: &str) -> Judged {
        Judged {
            check: check.to_string(),
            counts: Vec::new(),
            summary: "not reported by the checker".to_string(),
            vacuous: None,
        }
    }

    /// A judged count by name (`actions`), if the check counts it.
    pub fn count(&self, what: &str) -> Option<u64> {
        self.counts.iter().find(|(w, _)| w == what).map(|(_, n)| *n)
    }

    /// `lease-safety judged no actions: no `Serves` was recorded; record ...`, with the
    /// protocol named where the caller knows it.
    pub fn vacuous_message(&self, protocol: Option<&str>) -> Option<String> {
        let v = self.vacuous.as_ref()?;
        let noun = self
            .counts
            .first()
            .map(|(w, _)| w.as_str())
            .unwrap_or("observations");
        let who = protocol.unwrap_or("the protocol");
        Some(format!(
            "{} judged no {noun}: {who} records no `{}`; {}",
            self.check, v.missing, v.fix
        ))
    }
}

/// How a group of judged observations is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    /// By the observation's term (`leaderships in 6 terms`).
    Term(&'static str, &'static str),
    /// By resource or key (`acts in 2 resources`).
    Name(&'static str, &'static str),
    None,
}

/// What one checker judges: its primary observation and how to count it.
#[derive(Clone, Copy, Debug)]
pub struct Judges {
    /// The observation kinds that count as judged (the primary count), as
    /// [`Observation::kind`] names them.
    kinds: &'static [&'static str],
    /// The primary count's noun, singular and plural.
    noun: (&'static str, &'static str),
    group: Group,
    /// A second count shown after the first: kinds and noun.
    also: Option<(&'static [&'static str], (&'static str, &'static str))>,
    /// The observation a protocol must record, as its author writes it.
    missing: &'static str,
    fix: &'static str,
    /// What in a run could have broken the property (see [`Opportunity`]).
    opportunity: Opportunity,
}

/// What could have made a check fail in a run. A check that judged observations but
/// had no such opportunity is not judged ("could not fail"): mutual exclusion over a run
/// in which one client ever acted says nothing about the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opportunity {
    /// Any judged observation could break it (a panic, a double effect, a read).
    Any,
    /// Two nodes recorded one of these kinds (two nodes sought leadership, served a
    /// lease, applied entries). The words say what the run lacked.
    TwoNodes(&'static [&'static str], &'static str),
    /// Two nodes recorded the primary kind on one resource (two holders of one lock).
    TwoNodesOnOne(&'static str),
    /// Two clients wrote to one resource (`Write`'s `client`).
    TwoWritersOnOne,
    /// Two terms among these kinds (a leadership changed hands).
    TwoTerms(&'static [&'static str], &'static str),
    /// Two records of the primary kind in one group (one instance decided twice, by two
    /// learners or by one learner twice): the verb and what the run lacked.
    TwiceInOne(&'static str, &'static str),
}

/// What the built-in checker `name` judges.
pub fn judges(name: &str) -> Option<Judges> {
    let j = |kinds, noun, group, missing, fix| Judges {
        kinds,
        noun,
        group,
        also: None,
        missing,
        fix,
        opportunity: Opportunity::Any,
    };
    let mut found = match name {
        "single-leader-per-term" => j(
            &["leader"],
            ("leadership", "leaderships"),
            Group::Term("term", "terms"),
            "Leader",
            "record `Leader { term }` when a node becomes leader",
        ),
        "single-leader-at-a-time" => j(
            &["serves"],
            ("action", "actions"),
            Group::Term("term", "terms"),
            "Serves",
            "record `Serves { term }` where a leader acts on its leadership (serves a read, \
             issues a command), or check `single-leader-at-a-time-belief`",
        ),
        "single-leader-at-a-time-belief" => j(
            &["leader"],
            ("leadership", "leaderships"),
            Group::Term("term", "terms"),
            "Leader",
            "record `Leader { term }` when a node becomes leader",
        ),
        "leader-liveness" => Judges {
            also: Some((&["follower"], ("following", "followings"))),
            ..j(
                &["leader"],
                ("leadership", "leaderships"),
                Group::Term("term", "terms"),
                "Leader",
                "record `Leader { term }` when a node becomes leader and `Follower` when it follows",
            )
        },
        "mutual-exclusion" => j(
            &["acts"],
            ("action", "actions"),
            Group::Name("resource", "resources"),
            "Acts",
            "record `Acts { resource, token }` where a client acts on the resource as its \
             lock holder, or check `mutual-exclusion-belief`",
        ),
        "mutual-exclusion-belief" => j(
            &["holds"],
            ("holding", "holdings"),
            Group::Name("resource", "resources"),
            "Holds",
            "record `Holds { resource, token }` when a client believes it holds the lock",
        ),
        "lease-safety" => j(
            &["serves"],
            ("action", "actions"),
            Group::Term("lease", "leases"),
            "Serves",
            "record `Serves { term }` where a node acts on its lease, or check \
             `lease-safety-belief`",
        ),
        "lease-safety-belief" => j(
            &["lease-start"],
            ("lease", "leases"),
            Group::Term("term", "terms"),
            "LeaseStart",
            "record `LeaseStart { term }` when a node believes its lease begins",
        ),
        "fencing-safety" => j(
            &["write"],
            ("write", "writes"),
            Group::Name("resource", "resources"),
            "Write",
            "record `Write { .. }` where the protected resource accepts or refuses a write",
        ),
        "no-lost-update" => j(
            &["write", "acked"],
            ("update", "updates"),
            Group::Name("resource", "resources"),
            "Write",
            "record `Write { .. }` at the resource (and `Acked` when a client's update is \
             acknowledged)",
        ),
        "exactly-once" => Judges {
            also: Some((&["completed"], ("completion", "completions"))),
            ..j(
                &["applied"],
                ("effect", "effects"),
                Group::Name("key", "keys"),
                "Applied",
                "record `Applied { key }` where the service applies an effect",
            )
        },
        "lock-liveness" => Judges {
            also: Some((&["waiting"], ("wait", "waits"))),
            ..j(
                &["holds"],
                ("acquisition", "acquisitions"),
                Group::None,
                "Holds",
                "record `Waiting { resource }` when a client starts waiting and `Holds` when \
                 it gets the lock",
            )
        },
        "linearizability" => Judges {
            also: Some((&["complete"], ("completion", "completions"))),
            ..j(
                &["invoke"],
                ("operation", "operations"),
                Group::Name("key", "keys"),
                "Invoke",
                "record client operations (`Invoke` and `Complete`)",
            )
        },
        "deadlock" => Judges {
            also: Some((&["holds"], ("holding", "holdings"))),
            ..j(
                &["waiting"],
                ("wait", "waits"),
                Group::Name("resource", "resources"),
                "Waiting",
                "record `Waiting { resource }` when a client waits for a lock and `Holds` \
                 when it gets it",
            )
        },
        "no-starvation" => Judges {
            also: Some((&["done"], ("unit of work", "units of work"))),
            ..j(
                &["waiting"],
                ("wait", "waits"),
                Group::None,
                "Waiting",
                "record `Waiting` when a client starts waiting and `Done` when it finishes",
            )
        },
        "single-owner" => j(
            &["owns"],
            ("ownership", "ownerships"),
            Group::Name("resource", "resources"),
            "Owns",
            "record `Owns { resource, epoch }` where a coordinator starts acting as owner",
        ),
        "log-matching" => j(
            &["log-append"],
            ("log write", "log writes"),
            Group::Term("term", "terms"),
            "LogAppend",
            "record `LogAppend { index, term, digest }` for every entry a node writes to its \
             log (and its recovered log after it starts)",
        ),
        "leader-completeness" => Judges {
            also: Some((&["leader"], ("leadership", "leaderships"))),
            ..j(
                &["log-apply"],
                ("applied entry", "applied entries"),
                Group::Term("term", "terms"),
                "LogApply",
                "record `LogApply { index, term, digest }` where a node applies a committed \
                 entry, `LogAppend` for every entry it writes and `Leader { term }`",
            )
        },
        "state-machine-safety" => j(
            &["log-apply"],
            ("applied entry", "applied entries"),
            Group::Term("term", "terms"),
            "LogApply",
            "record `LogApply { index, term, digest }` where a node applies a committed entry",
        ),
        "agreement" => j(
            &["decides"],
            ("decision", "decisions"),
            Group::Term("instance", "instances"),
            "Decides",
            "record `Decides { instance, value }` where a learner learns the value chosen",
        ),
        "validity" => Judges {
            also: Some((&["proposes"], ("proposal", "proposals"))),
            ..j(
                &["decides"],
                ("decision", "decisions"),
                Group::Term("instance", "instances"),
                "Decides",
                "record `Proposes { instance, value }` where a proposer puts its own value \
                 forward and `Decides { instance, value }` where a learner learns the value \
                 chosen",
            )
        },
        "decision-liveness" => Judges {
            also: Some((&["decides"], ("decision", "decisions"))),
            ..j(
                &["proposes"],
                ("proposal", "proposals"),
                Group::Term("instance", "instances"),
                "Proposes",
                "record `Proposes { instance, value }` where a proposer puts a value forward \
                 and `Decides { instance, value }` where a learner learns the value chosen",
            )
        },
        "lease-expiry" => Judges {
            also: Some((&["lease-revoked"], ("lease end", "lease ends"))),
            ..j(
                &["lease-renewed"],
                ("lease renewal", "lease renewals"),
                Group::None,
                "LeaseRenewed",
                "record `LeaseRenewed { lease, ttl_ms }` where the service's primary grants or \
                 renews a client lease and `LeaseRevoked { lease }` where the lease ends",
            )
        },
        "no-panic" => j(
            &["started"],
            ("process", "processes"),
            Group::None,
            "Started",
            "the host records `Started` for every process; record `Panicked` where the code \
             under test panics",
        ),
        _ => return None,
    };
    found.opportunity = opportunity_of(name);
    Some(found)
}

/// What could have broken the built-in check `name` in a run.
fn opportunity_of(name: &str) -> Opportunity {
    use Opportunity::*;
    match name {
        // Leadership checks are judged from the first leadership: any node could have
        // claimed the same term or acted beside it. Demanding a leadership change would
        // leave every calm run of an election not judged (a profile question, not a
        // checker's).
        "mutual-exclusion" => TwoNodesOnOne("acted on"),
        "mutual-exclusion-belief" => TwoNodesOnOne("held"),
        "single-owner" => TwoNodesOnOne("owned"),
        "lease-safety" => TwoNodes(
            &["serves"],
            "acted on a lease: two leases overlapping need two nodes acting on one",
        ),
        "lease-safety-belief" => TwoNodes(
            &["lease-start"],
            "held a lease: two leases overlapping need two holders",
        ),
        "fencing-safety" | "no-lost-update" => TwoWritersOnOne,
        "deadlock" => TwoNodes(
            &["waiting"],
            "waited for a lock: a wait-for cycle needs two waiting nodes",
        ),
        "log-matching" => TwoNodes(
            &["log-append"],
            "wrote a log: logs disagree only when two nodes write them",
        ),
        "state-machine-safety" => TwoNodes(
            &["log-apply"],
            "applied entries: state machines disagree only when two nodes apply",
        ),
        // Decisions disagree only when one instance is decided twice (by two learners, or
        // by one learner twice): one decision per instance could not have failed.
        // Validity can fail at any decision: Any.
        "agreement" => TwiceInOne(
            "decided",
            "decisions disagree only when one instance is decided twice",
        ),
        "leader-completeness" => TwoTerms(
            &["leader"],
            "led: a leader missing a committed entry needs a later leader",
        ),
        // Any proposal is owed a decision: one undecided instance breaks it (a run too
        // short for any deadline is not judged by the checker itself: too short).
        "decision-liveness" => Any,
        // A lease is owed its end only once its keep-alives stopped ("no lease stopped its
        // keep-alives"): that needs time, not a kind of record, so the checker itself says
        // *could not fail* when no lease's deadline fell inside the run and none ended.
        "lease-expiry" => Any,
        _ => Any,
    }
}

/// The group of a judged observation: its term, or its resource or key.
enum GroupOf<'a> {
    Term(u64),
    Name(&'a str),
}

fn group_of(obs: &Observation) -> Option<GroupOf<'_>> {
    Some(match obs {
        Observation::Leader { term }
        | Observation::Follower { term, .. }
        | Observation::Serves { term }
        | Observation::LeaseStart { term }
        | Observation::LogAppend { term, .. }
        | Observation::LogApply { term, .. } => GroupOf::Term(*term),
        Observation::Proposes { instance, .. } | Observation::Decides { instance, .. } => {
            GroupOf::Term(*instance)
        }
        Observation::Acts { resource, .. }
        | Observation::Holds { resource, .. }
        | Observation::Waiting { resource }
        | Observation::Write { resource, .. }
        | Observation::Acked { resource, .. }
        | Observation::Owns { resource, .. } => GroupOf::Name(resource),
        Observation::Applied { key }
        | Observation::Completed { key, .. }
        | Observation::Invoke { key, .. } => GroupOf::Name(key),
        _ => return None,
    })
}

/// Counts what one checker judges, record by record.
#[derive(Clone, Debug)]
pub struct Counter {
    check: &'static str,
    judges: Judges,
    primary: u64,
    also: u64,
    /// Terms and names seen (kept apart, so counting allocates only for a new name).
    terms: BTreeSet<u64>,
    names: BTreeSet<String>,
    nodes: BTreeSet<u32>,
    /// Whether the run had an opportunity to break the property, and what of one it
    /// has seen so far (see [`Opportunity`]).
    opportunity_met: bool,
    opportunity_nodes: BTreeSet<u32>,
    opportunity_terms: BTreeSet<u64>,
    /// Per resource: the first node (or writing client) seen on it.
    first_on: std::collections::BTreeMap<String, u32>,
}

impl Counter {
    pub fn new(check: &'static str, judges: Judges) -> Counter {
        Counter {
            check,
            judges,
            primary: 0,
            also: 0,
            terms: BTreeSet::new(),
            names: BTreeSet::new(),
            nodes: BTreeSet::new(),
            opportunity_met: judges.opportunity == Opportunity::Any,
            opportunity_nodes: BTreeSet::new(),
            opportunity_terms: BTreeSet::new(),
            first_on: std::collections::BTreeMap::new(),
        }
    }

    /// Notes what `record` offers to break the property, until the run has offered it.
    fn look_for_opportunity(&mut self, record: &Record, kind: &str) {
        let mut on_one = |resource: &str, who: u32| match self.first_on.get(resource) {
            Some(first) => *first != who,
            None => {
                self.first_on.insert(resource.to_string(), who);
                false
            }
        };
        self.opportunity_met = match self.judges.opportunity {
            Opportunity::Any => true,
            Opportunity::TwoNodes(kinds, _) => {
                kinds.contains(&kind) && {
                    self.opportunity_nodes.insert(record.node.0);
                    self.opportunity_nodes.len() >= 2
                }
            }
            Opportunity::TwoTerms(kinds, _) => {
                kinds.contains(&kind)
                    && match group_of(&record.obs) {
                        Some(GroupOf::Term(t)) => {
                            self.opportunity_terms.insert(t);
                            self.opportunity_terms.len() >= 2
                        }
                        _ => false,
                    }
            }
            Opportunity::TwiceInOne(..) => {
                self.judges.kinds.contains(&kind)
                    && match group_of(&record.obs) {
                        // A group seen before: this is its second record.
                        Some(GroupOf::Term(t)) => !self.opportunity_terms.insert(t),
                        _ => false,
                    }
            }
            Opportunity::TwoNodesOnOne(_) => {
                self.judges.kinds.contains(&kind)
                    && match group_of(&record.obs) {
                        Some(GroupOf::Name(r)) => on_one(r, record.node.0),
                        _ => false,
                    }
            }
            Opportunity::TwoWritersOnOne => match &record.obs {
                tenure_core::Observation::Write {
                    resource, client, ..
                } => on_one(resource, client.0),
                _ => false,
            },
        };
    }

    /// `Some` when the run recorded what the check judges but nothing that could have
    /// broken it: what it lacked, in words.
    pub fn could_not_fail(&self) -> Option<String> {
        if self.opportunity_met || self.primary == 0 {
            return None;
        }
        let nodes = |set: &BTreeSet<u32>| {
            let names: Vec<String> = set.iter().map(|n| format!("n{n}")).collect();
            match names.as_slice() {
                [] => "no node".to_string(),
                [one] => format!("only {one}"),
                many => format!("only {}", many.join(", ")),
            }
        };
        Some(match self.judges.opportunity {
            Opportunity::Any => return None,
            Opportunity::TwoNodes(_, what) => format!("{} {what}", nodes(&self.opportunity_nodes)),
            Opportunity::TwoTerms(_, what) => format!(
                "no leadership changed hands ({}): only one term {what}",
                match self.opportunity_terms.iter().next() {
                    Some(t) => format!("term {t} only"),
                    None => "no term".to_string(),
                }
            ),
            Opportunity::TwiceInOne(verb, what) => format!(
                "no instance was {verb} twice ({}, each {verb} once): {what}",
                match self.opportunity_terms.len() {
                    1 => "1 instance".to_string(),
                    n => format!("{n} instances"),
                }
            ),
            Opportunity::TwoNodesOnOne(verb) => format!(
                "no resource was {verb} by two nodes ({} by {}): it breaks only when two \
                 nodes contend for one",
                self.first_on.keys().cloned().collect::<Vec<_>>().join(", "),
                nodes(&self.first_on.values().copied().collect()),
            ),
            Opportunity::TwoWritersOnOne => format!(
                "no resource was written by two clients ({} by {}): a stale write needs a \
                 second writer",
                self.first_on.keys().cloned().collect::<Vec<_>>().join(", "),
                nodes(&self.first_on.values().copied().collect()),
            ),
        })
    }

    pub fn on_record(&mut self, record: &Record) {
        let kind = record.obs.kind();
        if !self.opportunity_met {
            self.look_for_opportunity(record, kind);
        }
        if self.judges.kinds.contains(&kind) {
            self.primary += 1;
            self.nodes.insert(record.node.0);
            match group_of(&record.obs) {
                Some(GroupOf::Term(t)) => {
                    self.terms.insert(t);
                }
                Some(GroupOf::Name(n)) if !self.names.contains(n) => {
                    self.names.insert(n.to_string());
                }
                _ => {}
            }
        } else if let Some((kinds, _)) = self.judges.also {
            if kinds.contains(&kind) {
                self.also += 1;
            }
        }
    }

    pub fn judged(&self) -> Judged {
        let word =
            |n: u64, (one, many): (&str, &str)| format!("{n} {}", if n == 1 { one } else { many });
        let mut counts = vec![(self.judges.noun.1.to_string(), self.primary)];
        let mut summary = word(self.primary, self.judges.noun);
        if self.primary > 0 {
            let groups = (self.terms.len() + self.names.len()) as u64;
            match self.judges.group {
                Group::Term(one, many) | Group::Name(one, many) => {
                    counts.push((many.to_string(), groups));
                    summary += &format!(" in {}", word(groups, (one, many)));
                }
                Group::None => {}
            }
            let nodes = self.nodes.len() as u64;
            counts.push(("nodes".to_string(), nodes));
            summary += &format!(" by {}", word(nodes, ("node", "nodes")));
        }
        if let Some((_, noun)) = self.judges.also {
            counts.push((noun.1.to_string(), self.also));
            summary += &format!(", {}", word(self.also, noun));
        }
        Judged {
            check: self.check.to_string(),
            counts,
            summary,
            vacuous: (self.primary == 0).then(|| Vacuous {
                missing: self.judges.missing.to_string(),
                fix: self.judges.fix.to_string(),
            }),
        }
    }
}

/// A built-in checker with its [`Counter`]: what [`crate::build`] returns.
pub(crate) struct Counting {
    pub(crate) inner: Box<dyn Checker>,
    pub(crate) counter: Counter,
}

impl Checker for Counting {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.counter.on_record(record);
        self.inner.on_record(index, record)
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        self.inner.finish(info)
    }

    fn judged(&self) -> Option<Judged> {
        Some(self.counter.judged())
    }

    fn not_judged(&self) -> Option<crate::verdict::NotJudged> {
        use crate::verdict::{NotJudged, Reason};
        let judged = self.counter.judged();
        if let Some(v) = &judged.vacuous {
            let noun = judged
                .counts
                .first()
                .map(|(w, _)| w.as_str())
                .unwrap_or("observations");
            return Some(NotJudged::new(
                Reason::Vacuous,
                format!(
                    "judged no {noun}: the protocol records no `{}` in this run; {}",
                    v.missing, v.fix
                ),
            ));
        }
        if let Some(n) = self.inner.not_judged() {
            return Some(n);
        }
        self.counter
            .could_not_fail()
            .map(|why| NotJudged::new(Reason::CouldNotFail, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::H;
    use serde_json::Value;
    use tenure_core::Cluster;

    fn judged(name: &str, history: &tenure_core::History) -> Judged {
        let cluster = history.info.cluster.clone();
        let mut checker = crate::build(name, &Value::Null, &cluster).unwrap();
        for (i, r) in history.records.iter().enumerate() {
            checker.on_record(i, r);
        }
        checker.finish(&history.info);
        checker
            .judged()
            .expect("built-in checkers report what they judged")
    }

    #[test]
    fn every_built_in_checker_says_what_it_judges() {
        for info in crate::catalog() {
            let j = judges(info.name).unwrap_or_else(|| panic!("{} judges nothing", info.name));
            assert!(!j.kinds.is_empty() && !j.fix.is_empty(), "{}", info.name);
        }
    }

    #[test]
    fn actions_are_counted_with_their_leases_and_nodes() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .lease_start(1)
            .serves(1)
            .at_ms(20)
            .serves(1)
            .at_ms(300)
            .node(1)
            .lease_start(2)
            .serves(2)
            .end_ms(400)
            .history();
        let j = judged("lease-safety", &h);
        assert_eq!(j.summary, "3 actions in 2 leases by 2 nodes");
        assert_eq!(j.count("actions"), Some(3));
        assert_eq!(j.vacuous, None);
    }

    #[test]
    fn a_protocol_that_records_only_beliefs_leaves_the_action_checks_vacuous() {
        // Leases believed, never acted on: lease-safety judged nothing.
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .lease_start(1)
            .at_ms(300)
            .node(1)
            .lease_start(2)
            .end_ms(400)
            .history();
        let j = judged("lease-safety", &h);
        assert_eq!(j.summary, "0 actions");
        let v = j.vacuous.as_ref().expect("vacuous");
        assert_eq!(v.missing, "Serves");
        assert_eq!(
            j.vacuous_message(Some("lease-proto")).unwrap(),
            "lease-safety judged no actions: lease-proto records no `Serves`; record \
             `Serves { term }` where a node acts on its lease, or check `lease-safety-belief`"
        );
        // Its belief twin judges the two leases.
        let belief = judged("lease-safety-belief", &h);
        assert_eq!(belief.summary, "2 leases in 2 terms by 2 nodes");
        assert_eq!(belief.vacuous, None);
    }

    #[test]
    fn mutual_exclusion_without_acts_and_linearizability_without_operations_are_vacuous() {
        let h = H::new(Cluster::uniform("client", 2))
            .at_ms(10)
            .node(0)
            .holds("lock", 1)
            .end_ms(100)
            .history();
        let me = judged("mutual-exclusion", &h);
        assert_eq!(me.vacuous.unwrap().missing, "Acts");
        let lin = judged("linearizability", &h);
        assert_eq!(lin.vacuous.unwrap().missing, "Invoke");
        assert_eq!(lin.summary, "0 operations, 0 completions");
    }

    #[test]
    fn a_second_count_follows_the_first() {
        let h = H::new(Cluster::uniform("client", 2))
            .at_ms(10)
            .node(0)
            .waiting("lock")
            .at_ms(20)
            .holds("lock", 1)
            .at_ms(30)
            .node(1)
            .waiting("lock")
            .end_ms(100)
            .history();
        let j = judged("lock-liveness", &h);
        assert_eq!(j.summary, "1 acquisition by 1 node, 2 waits");
        assert_eq!(j.count("waits"), Some(2));
    }

    #[test]
    fn a_checker_of_your_own_is_not_reported_unless_it_says() {
        let j = Judged::not_reported("mine");
        assert_eq!(j.vacuous, None);
        assert_eq!(j.summary, "not reported by the checker");
    }
}
