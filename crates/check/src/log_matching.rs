//! # log-matching
//!
//! **Property (Log Matching):** if two logs contain an entry with the same index and
//! term, then the logs are identical in all entries up through that index. Judged
//! across time as well as across nodes: every entry ever written with a given
//! `(index, term)` has the same content, and the same log before it, as the first one
//! seen (a leader creates at most one entry per index in its term, and an entry is
//! written only after the one before it matches).
//!
//! **Observations:** `LogAppend { index, term, digest }` means the node's log now holds
//! that entry at `index` and nothing after it. A `Started` node's log is unknown until
//! it reports it again (from index 1), since a power loss may have cut it; `Crashed`
//! changes nothing the checker keeps. An entry whose predecessor the node never
//! reported is compared by content only.
//!
//! **How it fails:** a leader that forgot (power loss) the entries or the vote of its
//! term writes a second, different entry at an index of that term; a follower that
//! appends without checking the previous entry's term.
//!
//! **Source:** Ongaro & Ousterhout, "In Search of an Understandable Consensus Algorithm"
//! (Raft, USENIX ATC 2014), Figure 3 "Log Matching" and §5.3.
//!
//! Online and exact: the violation is reported at the first differing `LogAppend`.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{Cluster, NodeId, Observation, Record, RunInfo, SimTime};

pub const NAME: &str = "log-matching";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "entries with the same index and term have the same content and prefix",
    property: "every LogAppend with a given (index, term), at any node and time, carries the \
               same digest and follows the same log as the first one seen",
    source: "Raft (Ongaro & Ousterhout 2014), Figure 3: Log Matching, §5.3",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

/// One write of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub node: NodeId,
    pub digest: u64,
    /// A hash of the whole log up to and including this entry, if the node's log before
    /// it is known.
    pub prefix: Option<u64>,
    pub time: SimTime,
    pub record: usize,
}

/// Two entries with the same index and term that differ, in content or in the log
/// before them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogsDiverge {
    pub index: u64,
    pub term: u64,
    pub first: Written,
    pub second: Written,
    /// Whether the entries themselves differ (else only the logs before them do).
    pub content_differs: bool,
}

impl fmt::Display for LogsDiverge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (&self.first, &self.second);
        if self.content_differs {
            write!(
                f,
                "{} wrote an entry at index {} of term {} (digest {:016x}) at {}, and {} wrote a \
                 different entry with the same index and term (digest {:016x}) at {}",
                a.node, self.index, self.term, a.digest, a.time, b.node, b.digest, b.time
            )
        } else {
            write!(
                f,
                "{} (at {}) and {} (at {}) hold the same entry at index {} of term {}, but their \
                 logs before it differ",
                a.node, a.time, b.node, b.time, self.index, self.term
            )
        }
    }
}

impl From<LogsDiverge> for Violation {
    fn from(v: LogsDiverge) -> Violation {
        let mut nodes = vec![v.first.node];
        if v.second.node != v.first.node {
            nodes.push(v.second.node);
        }
        Violation {
            checker: NAME,
            time: v.second.time,
            nodes,
            message: v.to_string(),
            records: vec![v.first.record, v.second.record],
        }
    }
}

/// The hash of a log whose prefix hashes to `prev` extended by one entry (FNV-1a over
/// the three numbers' bytes).
fn extend(prev: u64, term: u64, digest: u64) -> u64 {
    let mut h = prev;
    for b in term.to_le_bytes().into_iter().chain(digest.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const EMPTY_LOG: u64 = 0xcbf2_9ce4_8422_2325;

pub struct LogMatching {
    clock: TrueClock,
    /// Per node, its log as last reported: entry `i` at position `i - 1`, as the prefix
    /// hash through it (`None` where unknown).
    logs: Vec<Vec<Option<u64>>>,
    /// (index, term) -> the first write of it seen.
    entries: BTreeMap<(u64, u64), Written>,
}

impl LogMatching {
    pub fn new(_params: Params, cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(LogMatching {
            clock: TrueClock::default(),
            logs: vec![Vec::new(); cluster.size()],
            entries: BTreeMap::new(),
        })
    }
}

impl Checker for LogMatching {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let log = &mut self.logs[record.node.index()];
        let (at, term, digest) = match record.obs {
            Observation::Started => {
                log.clear();
                return None;
            }
            Observation::LogAppend {
                index,
                term,
                digest,
            } => (index, term, digest),
            _ => return None,
        };
        assert!(at > 0, "{NAME}: log indices start at 1");
        let position = (at - 1) as usize;
        let prev = match position {
            0 => Some(EMPTY_LOG),
            p => log.get(p - 1).copied().flatten(),
        };
        let prefix = prev.map(|p| extend(p, term, digest));
        log.resize(position, None);
        log.push(prefix);
        let this = Written {
            node: record.node,
            digest,
            prefix,
            time: record.time,
            record: index,
        };
        let first = self.entries.entry((at, term)).or_insert(this);
        let content_differs = first.digest != digest;
        let prefix_differs = matches!((first.prefix, prefix), (Some(a), Some(b)) if a != b);
        if !content_differs && !prefix_differs {
            if first.prefix.is_none() {
                first.prefix = prefix;
            }
            return None;
        }
        Some(
            LogsDiverge {
                index: at,
                term,
                first: *first,
                second: this,
                content_differs,
            }
            .into(),
        )
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

    /// Three nodes replicate the same log; n2's stale entry is overwritten by the
    /// leader's, and n1 restarts and reports its log again.
    #[test]
    fn matching_logs_overwrites_and_restarts_pass() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .log_append(1, 1, 0xa)
            .node(0)
            .log_append(2, 1, 0xb)
            .node(1)
            .log_append(1, 1, 0xa)
            .node(1)
            .log_append(2, 1, 0xb)
            // n2 had an entry of term 2 at index 2 (from a leader that lost), then takes
            // the log of the leader of term 3.
            .node(2)
            .log_append(1, 1, 0xa)
            .node(2)
            .log_append(2, 2, 0xe)
            .at_ms(20)
            .node(0)
            .log_append(3, 3, 0xc)
            .node(2)
            .log_append(2, 1, 0xb)
            .node(2)
            .log_append(3, 3, 0xc)
            .node(1)
            .crash()
            .at_ms(30)
            .node(1)
            .started()
            .node(1)
            .log_append(1, 1, 0xa)
            .node(1)
            .log_append(2, 1, 0xb)
            .node(1)
            .log_append(3, 3, 0xc)
            .end_ms(40)
            .history();
        assert_eq!(judge_with("log-matching", Value::Null, &h), None);
    }

    #[test]
    fn two_different_entries_with_one_index_and_term_are_caught() {
        let h = H::nodes(3)
            .at_ms(10)
            .node(0)
            .log_append(1, 1, 0xa)
            .at_ms(15)
            .node(1)
            .log_append(1, 1, 0xf)
            .history();
        let (at, v) = judge_with("log-matching", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(1));
        assert_eq!(
            v.message,
            "n0 wrote an entry at index 1 of term 1 (digest 000000000000000a) at 0.010_000s, and \
             n1 wrote a different entry with the same index and term (digest 000000000000000f) \
             at 0.015_000s"
        );
        assert_eq!(v.nodes, vec![NodeId(0), NodeId(1)]);
    }

    #[test]
    fn the_same_entry_after_different_logs_is_caught() {
        // n1 appends entry (2, term 2) after a different entry 1 than n0 has: a follower
        // that skipped the consistency check.
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .log_append(1, 1, 0xa)
            .node(0)
            .log_append(2, 2, 0xb)
            .node(1)
            .log_append(1, 2, 0xc)
            .node(1)
            .log_append(2, 2, 0xb)
            .history();
        let (at, v) = judge_with("log-matching", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(3));
        assert_eq!(
            v.message,
            "n0 (at 0.010_000s) and n1 (at 0.010_000s) hold the same entry at index 2 of term 2, \
             but their logs before it differ"
        );
    }

    #[test]
    fn after_a_start_the_log_is_unknown_until_reported_again() {
        // n1 restarts and reports only its entry 2 (its entry 1 unknown): compared by
        // content only, so no false alarm from the forgotten prefix.
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .log_append(1, 1, 0xa)
            .node(0)
            .log_append(2, 1, 0xb)
            .node(1)
            .log_append(1, 5, 0xd)
            .at_ms(20)
            .node(1)
            .started()
            .node(1)
            .log_append(2, 1, 0xb)
            .end_ms(30)
            .history();
        assert_eq!(judge_with("log-matching", Value::Null, &h), None);
    }
}
