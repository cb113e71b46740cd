//! tenure-audit: a tamper-evident log of leadership transitions.
//!
//! [`leadership_log`] reads a run's [`History`] and writes one [`Entry`] per transition:
//! a node starts believing it leads a term (`elected`), or stops (`ended`: it stepped
//! down, stood for a new election, or crashed), with the true time and a reason derived
//! from what the other nodes believed at that instant. Each entry holds the SHA-256 hash
//! of the previous entry (`prev`; 64 zeros for the first) and its own hash over all its
//! other fields, so the entries form a hash chain (the construction of Haber and
//! Stornetta, "How to time-stamp a digital document", J. Cryptology 1991, and of
//! Crosby and Wallach, "Efficient Data Structures for Tamper-Evident Logging", USENIX
//! Security 2009, without their Merkle trees).
//!
//! The file is JSON lines, one entry a line. [`verify`] recomputes every hash and
//! follows the chain; it reports the first entry that was edited (its content no longer
//! matches its hash), rewritten (its hash was recomputed, so the next entry's `prev` no
//! longer matches), removed (a gap in `seq`) or moved (an entry whose `seq` appears
//! elsewhere in the file). What a chain cannot show alone is a cut at the end: the last
//! entries removed leave a valid shorter chain. The writer therefore reports the head
//! (the last hash and the entry count); [`verify`] checks it when given one, as a
//! published head or a signed checkpoint would be checked in practice.
//!
//! SHA-256 comes from the RustCrypto `sha2` crate.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use tenure_core::{format_duration, History, NodeId, Observation, SimTime};

/// The `prev` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What happened to a node's leadership.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    /// The node started believing it leads `term`.
    Elected,
    /// The node stopped believing it leads `term`.
    Ended,
}

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// 0, 1, 2, ... in log order.
    pub seq: u64,
    /// True time of the transition, in nanoseconds.
    pub time_ns: u64,
    pub event: Event,
    pub node: u32,
    pub term: u64,
    pub reason: String,
    /// The hash of the previous entry ([`GENESIS`] for the first).
    pub prev: String,
    /// SHA-256 over every other field (see [`Entry::compute_hash`]), lowercase hex.
    pub hash: String,
}

/// The hashed fields, in a fixed order.
#[derive(Serialize)]
struct Body<'a> {
    seq: u64,
    time_ns: u64,
    event: Event,
    node: u32,
    term: u64,
    reason: &'a str,
    prev: &'a str,
}

impl Entry {
    /// SHA-256 of the entry's fields other than `hash`, serialized as compact JSON in
    /// declaration order.
    pub fn compute_hash(&self) -> String {
        let body = Body {
            seq: self.seq,
            time_ns: self.time_ns,
            event: self.event,
            node: self.node,
            term: self.term,
            reason: &self.reason,
            prev: &self.prev,
        };
        let bytes = serde_json::to_vec(&body).expect("the body serializes");
        hex(&Sha256::digest(&bytes))
    }

    /// The entry as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an entry serializes")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Appends entries, chaining their hashes.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub entries: Vec<Entry>,
}

impl Log {
    /// Appends a transition and returns its entry.
    pub fn append(
        &mut self,
        time: SimTime,
        event: Event,
        node: NodeId,
        term: u64,
        reason: String,
    ) -> &Entry {
        let mut e = Entry {
            seq: self.entries.len() as u64,
            time_ns: time.as_nanos(),
            event,
            node: node.0,
            term,
            reason,
            prev: self.head().to_string(),
            hash: String::new(),
        };
        e.hash = e.compute_hash();
        self.entries.push(e);
        self.entries.last().expect("just pushed")
    }

    /// The hash of the last entry ([`GENESIS`] when empty).
    pub fn head(&self) -> &str {
        self.entries.last().map_or(GENESIS, |e| e.hash.as_str())
    }

    /// The log as JSON lines.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            out.push_str(&e.to_line());
            out.push('\n');
        }
        out
    }
}

/// The leadership transitions of a run, as a hash-chained log.
pub fn leadership_log(history: &History) -> Log {
    let mut log = Log::default();
    // Who believes it leads, and which term.
    let mut leading: BTreeMap<NodeId, u64> = BTreeMap::new();
    // The last leadership that ended: who, which term, why.
    let mut last_end: Option<(NodeId, u64, String)> = None;
    for r in &history.records {
        let ended = |why: String| (r.node, why);
        let (node, why) = match &r.obs {
            Observation::Leader { term } => {
                if leading.get(&r.node) == Some(term) {
                    continue;
                }
                let others: Vec<String> = leading
                    .iter()
                    .filter(|(n, _)| **n != r.node)
                    .map(|(n, t)| format!("{n} (term {t})"))
                    .collect();
                let reason = if !others.is_empty() {
                    format!("while {} still believed it led", others.join(" and "))
                } else if let Some((n, t, why)) = &last_end {
                    format!("after {n} (term {t}) {why}")
                } else {
                    "first leader of the run".to_string()
                };
                leading.insert(r.node, *term);
                log.append(r.time, Event::Elected, r.node, *term, reason);
                continue;
            }
            Observation::Follower { term, leader } => ended(match leader {
                Some(l) => format!("stepped down to follow {l} in term {term}"),
                None => format!("stepped down in term {term}, no leader known"),
            }),
            Observation::Candidate { term } => ended(format!("stood for election in term {term}")),
            Observation::Crashed => ended("crashed".to_string()),
            _ => continue,
        };
        if let Some(term) = leading.remove(&node) {
            log.append(r.time, Event::Ended, node, term, why.clone());
            last_end = Some((node, term, why));
        }
    }
    log
}

/// Why a log does not verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The entry's content does not match its own hash: it was edited.
    Edited { line: usize, seq: u64 },
    /// The entry's `prev` is not the hash of the entry before it, though both are
    /// consistent in themselves: the entry before was rewritten (hash recomputed) or
    /// replaced.
    Rewritten { line: usize, seq: u64 },
    /// Entries `from..=to` (by `seq`) are not in the file.
    Missing { line: usize, from: u64, to: u64 },
    /// The entry with `seq` expected at this line is elsewhere in the file.
    Reordered {
        line: usize,
        expected: u64,
        found: u64,
    },
    /// The chain is intact but does not end at the published head: entries were cut
    /// from the end (or appended).
    HeadMismatch {
        entries: usize,
        head: String,
        expected: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Edited { line, seq } => write!(
                f,
                "line {line}: entry {seq} was edited: its content does not match its hash"
            ),
            Problem::Rewritten { line, seq } => write!(
                f,
                "line {line}: entry {seq} does not chain to the entry before it (its `prev` is not that entry's hash): line {} was rewritten or replaced",
                line - 1
            ),
            Problem::Missing { line, from, to } if from == to => {
                write!(f, "line {line}: entry {from} is missing before this line")
            }
            Problem::Missing { line, from, to } => write!(
                f,
                "line {line}: entries {from} to {to} are missing before this line"
            ),
            Problem::Reordered {
                line,
                expected,
                found,
            } => write!(
                f,
                "line {line}: entries are out of order: expected entry {expected} here, found entry {found}"
            ),
            Problem::HeadMismatch {
                entries,
                head,
                expected,
            } => write!(
                f,
                "the chain of {entries} entries ends at {head}, not at the published head {expected}: entries were removed from (or added at) the end"
            ),
        }
    }
}

/// A file that is not a leadership log at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadInput {
    pub line: usize,
    pub message: String,
}

/// A log that verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub entries: usize,
    pub head: String,
}

/// Checks a log's text: every hash, every link, `seq` in order, and (if given) the
/// head. `Ok(Err(problem))` is the first problem found; `Err` is text that is not a log.
pub fn verify(text: &str, head: Option<&str>) -> Result<Result<Verified, Problem>, BadInput> {
    let mut entries = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            return Err(BadInput {
                line,
                message: "empty line (a leadership log has one JSON entry per line)".into(),
            });
        }
        let e: Entry = serde_json::from_str(raw).map_err(|e| BadInput {
            line,
            message: format!("not a leadership-log entry: {e}"),
        })?;
        if e.hash.len() != 64 || !e.hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BadInput {
                line,
                message: "field `hash`: expected 64 hexadecimal digits".into(),
            });
        }
        entries.push((line, e));
    }
    let mut prev = GENESIS.to_string();
    for (k, (line, e)) in entries.iter().enumerate() {
        let line = *line;
        // The entry at position k must be entry k.
        let expected = k as u64;
        if e.compute_hash() != e.hash {
            return Ok(Err(Problem::Edited { line, seq: e.seq }));
        }
        if e.seq != expected {
            let later = entries[k + 1..].iter().any(|(_, x)| x.seq == expected);
            let earlier = e.seq < expected;
            return Ok(Err(if later || earlier {
                Problem::Reordered {
                    line,
                    expected,
                    found: e.seq,
                }
            } else {
                Problem::Missing {
                    line,
                    from: expected,
                    to: e.seq - 1,
                }
            }));
        }
        if e.prev != prev {
            return Ok(Err(Problem::Rewritten { line, seq: e.seq }));
        }
        prev = e.hash.clone();
    }
    if let Some(h) = head {
        if !h.eq_ignore_ascii_case(&prev) {
            return Ok(Err(Problem::HeadMismatch {
                entries: entries.len(),
                head: prev,
                expected: h.to_string(),
            }));
        }
    }
    Ok(Ok(Verified {
        entries: entries.len(),
        head: prev,
    }))
}

/// One line per entry for people: `0.152_483s  n0 elected term 1: first leader`.
pub fn describe(e: &Entry) -> String {
    format!(
        "{}  n{} {} term {}: {}",
        format_duration(std::time::Duration::from_nanos(e.time_ns)),
        e.node,
        match e.event {
            Event::Elected => "elected",
            Event::Ended => "ended",
        },
        e.term,
        e.reason
    )
}

#[cfg(test)]
mod tests;
