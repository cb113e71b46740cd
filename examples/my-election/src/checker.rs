//! # terms-never-go-back
//!
//! **Property:** a node's term never decreases, not even across a crash and restart
//! (the term is durable state; Raft, Ongaro & Ousterhout 2014, Figure 2, "Persistent
//! state on all servers: currentTerm").
//!
//! **How it fails:** a node that keeps its term only in memory comes back from a crash
//! in term 0 and can vote again in a term it already voted in.
//!
//! A checker of your own: it implements `tenure::Checker` and judges observations only.

use std::collections::BTreeMap;
use tenure::prelude::*;

pub const NAME: &str = "terms-never-go-back";

/// The highest term each node has observed itself in.
#[derive(Default)]
pub struct TermsNeverGoBack {
    highest: BTreeMap<NodeId, (u64, usize)>,
}

fn term_of(obs: &Observation) -> Option<u64> {
    match obs {
        Observation::Leader { term }
        | Observation::Candidate { term }
        | Observation::Follower { term, .. } => Some(*term),
        _ => None,
    }
}

impl Checker for TermsNeverGoBack {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        let term = term_of(&record.obs)?;
        let node = record.node;
        match self.highest.get(&node) {
            Some(&(highest, at)) if term < highest => Some(Violation {
                checker: NAME,
                time: record.time,
                nodes: vec![node],
                message: format!("{node} went back from term {highest} to term {term}"),
                records: vec![at, index],
            }),
            _ => {
                self.highest.insert(node, (term, index));
                None
            }
        }
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(node: u32, obs: Observation) -> Record {
        Record::new(
            SimTime(node as u64),
            NodeId(node),
            LocalTime(0),
            LocalTime(0),
            obs,
        )
    }

    #[test]
    fn a_term_going_back_is_a_violation() {
        let mut c = TermsNeverGoBack::default();
        assert_eq!(
            c.on_record(0, &record(1, Observation::Candidate { term: 3 })),
            None
        );
        assert_eq!(c.on_record(1, &record(1, Observation::Crashed)), None);
        let v = c
            .on_record(
                2,
                &record(
                    1,
                    Observation::Follower {
                        term: 0,
                        leader: None,
                    },
                ),
            )
            .expect("term 3 -> 0");
        assert_eq!(v.message, "n1 went back from term 3 to term 0");
        assert_eq!(v.records, vec![0, 2]);
    }

    #[test]
    fn the_same_or_a_higher_term_is_fine() {
        let mut c = TermsNeverGoBack::default();
        assert_eq!(
            c.on_record(0, &record(0, Observation::Leader { term: 2 })),
            None
        );
        assert_eq!(
            c.on_record(
                1,
                &record(
                    0,
                    Observation::Follower {
                        term: 2,
                        leader: None
                    }
                )
            ),
            None
        );
        assert_eq!(
            c.on_record(2, &record(0, Observation::Candidate { term: 5 })),
            None
        );
    }
}
