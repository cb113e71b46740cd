//! # leader-completeness
//!
//! **Property (Leader Completeness):** if a log entry is committed in a given term, that
//! entry is present in the logs of the leaders of all higher-numbered terms.
//!
//! **Observations:** `LogApply { index, term, digest }` says the entry was committed
//! (only committed entries are applied); `LogAppend` says what each node's log holds
//! (as in `log-matching`: the entry at `index` and nothing after it; a `Started` node's
//! log is unknown until it reports it again); `Leader { term }` is the moment a node
//! becomes leader, when its log must already hold every committed entry.
//!
//! **Which leaders must have an entry.** The term an entry was committed in is not
//! observed, only when it was first applied. It was committed by a leader whose
//! `Leader` was recorded before that, so its term is at most the highest leader term
//! recorded until then (the entry's *bound*). Every leader of a term above the bound
//! must hold the entry (exact index, term and content) in its log when it becomes
//! leader. Leaders of lower terms are not judged against it: a stale vote reply may
//! still make a node leader of an old term, and Raft lets that leader lack it (it can
//! commit nothing). An index of the new leader's log that is unknown (reported by no
//! `LogAppend` since it started) is not judged.
//!
//! **How it fails:** a voter that forgot (power loss, a write acknowledged before its
//! fsync) the entries it accepted votes for a candidate whose log lacks them; a
//! candidate that compares only log lengths, or only terms.
//!
//! **Source:** Ongaro & Ousterhout, "In Search of an Understandable Consensus Algorithm"
//! (Raft, USENIX ATC 2014), Figure 3 "Leader Completeness" and §5.4.
//!
//! Online and exact: the violation is reported at the `Leader` that lacks the entry.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "leader-completeness";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "a new leader's log holds every entry committed before its term",
    property: "when a node records Leader { term }, its log (as its LogAppends report it) \
               holds every entry some node applied (LogApply) while the highest leader term \
               recorded was below `term`, at the same index, term and digest",
    source: "Raft (Ongaro & Ousterhout 2014), Figure 3: Leader Completeness, §5.4",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// The first application of a committed entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    pub term: u64,
    pub digest: u64,
    pub node: NodeId,
    pub time: SimTime,
    pub record: usize,
    /// The highest leader term recorded when it was first applied: leaders of higher
    /// terms must hold it.
    pub bound: u64,
}

/// A leader that lacks a committed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderLacksEntry {
    pub leader: NodeId,
    pub term: u64,
    pub time: SimTime,
    pub record: usize,
    pub index: u64,
    pub committed: Committed,
    /// What the leader's log held at `index`: `None` if its log ends before it.
    pub has: Option<(u64, u64)>,
}

impl fmt::Display for LeaderLacksEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.committed;
        write!(
            f,
            "{} became leader of term {} at {} without the committed entry at index {} \
             (term {}, digest {:016x}) that {} applied at {}; ",
            self.leader, self.term, self.time, self.index, c.term, c.digest, c.node, c.time
        )?;
        match self.has {
            None => write!(f, "its log ends before index {}", self.index),
            Some((term, digest)) => write!(
                f,
                "its log holds an entry of term {term} (digest {digest:016x}) there"
            ),
        }
    }
}

impl From<LeaderLacksEntry> for Violation {
    fn from(v: LeaderLacksEntry) -> Violation {
        let mut nodes = vec![v.leader];
        if v.committed.node != v.leader {
            nodes.push(v.committed.node);
        }
        let mut records = vec![v.committed.record, v.record];
        records.sort_unstable();
        Violation {
            checker: NAME,
            time: v.time,
            nodes,
            message: v.to_string(),
            records,
        }
    }
}

pub struct LeaderCompleteness {
    clock: TrueClock,
    /// Per node, its log as last reported: entry `i` at position `i - 1` as
    /// `(term, digest)`, `None` where unknown.
    logs: Vec<Vec<Option<(u64, u64)>>>,
    /// index -> its first application.
    committed: BTreeMap<u64, Committed>,
    /// The highest `Leader` term recorded so far.
    highest_term: u64,
}

impl LeaderCompleteness {
    pub fn new(_params: Params, cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(LeaderCompleteness {
            clock: TrueClock::default(),
            logs: vec![Vec::new(); cluster.size()],
            committed: BTreeMap::new(),
            highest_term: 0,
        })
    }
}

impl Checker for LeaderCompleteness {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let log = &mut self.logs[record.node.index()];
        match record.obs {
            Observation::Started => log.clear(),
            Observation::LogAppend {
                index: at,
                term,
                digest,
            } => {
                assert!(at > 0, "{NAME}: log indices start at 1");
                log.resize((at - 1) as usize, None);
                log.push(Some((term, digest)));
            }
            Observation::LogApply {
                index: at,
                term,
                digest,
            } => {
                let bound = self.highest_term;
                self.committed.entry(at).or_insert(Committed {
                    term,
                    digest,
                    node: record.node,
                    time: record.time,
                    record: index,
                    bound,
                });
            }
            Observation::Leader { term } => {
                self.highest_term = self.highest_term.max(term);
                for (&at, c) in &self.committed {
                    if term <= c.bound {
                        continue;
                    }
                    let has = match log.get((at - 1) as usize) {
                        Some(None) => continue, // unknown since the node started
                        Some(Some(entry)) => Some(*entry),
                        None => None,
                    };
                    if has == Some((c.term, c.digest)) {
                        continue;
                    }
                    return Some(
                        LeaderLacksEntry {
                            leader: record.node,
                            term,
                            time: record.time,
                            record: index,
                            index: at,
                            committed: *c,
                            has,
                        }
                        .into(),
                    );
                }
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;
    use tenure_core::NodeId;

    /// n0 leads term 2 and commits two entries; n2, made leader of term 1 by a stale
    /// vote reply after the commit, lacks them (allowed: its term is not above the
    /// bound); n1, whose log has them, leads term 3; n2 restarts and leads term 4 with
    /// the entries recovered.
    #[test]
    fn leaders_holding_every_committed_entry_pass() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(2)
            .node(0)
            .log_append(1, 2, 0xa)
            .node(0)
            .log_append(2, 2, 0xb)
            .node(1)
            .log_append(1, 2, 0xa)
            .node(1)
            .log_append(2, 2, 0xb)
            .at_ms(20)
            .node(0)
            .log_apply(1, 2, 0xa)
            .node(0)
            .log_apply(2, 2, 0xb)
            .at_ms(30)
            .node(2)
            .leader(1)
            .at_ms(40)
            .node(1)
            .leader(3)
            .node(2)
            .crash()
            .at_ms(50)
            .node(2)
            .started()
            .node(2)
            .log_append(1, 2, 0xa)
            .node(2)
            .log_append(2, 2, 0xb)
            .node(2)
            .leader(4)
            .end_ms(60)
            .history();
        assert_eq!(judge_with("leader-completeness", Value::Null, &h), None);
    }

    #[test]
    fn a_leader_of_a_later_term_without_a_committed_entry_is_caught() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .leader(1)
            .node(0)
            .log_append(1, 1, 0xa)
            .node(1)
            .log_append(1, 1, 0xa)
            .at_ms(20)
            .node(0)
            .log_apply(1, 1, 0xa)
            // n2 never got the entry, yet leads term 2 (a voter forgot it)
            .at_ms(30)
            .node(2)
            .leader(2)
            .history();
        let (at, v) = judge_with("leader-completeness", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(4));
        assert_eq!(
            v.message,
            "n2 became leader of term 2 at 0.030_000s without the committed entry at index 1 \
             (term 1, digest 000000000000000a) that n0 applied at 0.020_000s; its log ends \
             before index 1"
        );
        assert_eq!(v.nodes, vec![NodeId(2), NodeId(0)]);
        assert_eq!(v.records, vec![3, 4]);
    }

    #[test]
    fn a_leader_holding_another_entry_at_a_committed_index_is_caught() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .leader(1)
            .node(0)
            .log_append(1, 1, 0xa)
            .node(0)
            .log_apply(1, 1, 0xa)
            .at_ms(20)
            .node(1)
            .log_append(1, 2, 0xe)
            .node(1)
            .leader(3)
            .history();
        let (_, v) = judge_with("leader-completeness", Value::Null, &h).unwrap();
        assert!(
            v.message
                .ends_with("its log holds an entry of term 2 (digest 000000000000000e) there"),
            "{}",
            v.message
        );
    }
}
