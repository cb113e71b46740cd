//! A tiny history builder for tests, here and in other crates:
//!
//! ```
//! use tenure_check::testing::H;
//! let history = H::nodes(3)
//!     .at_ms(10).node(1).leader(2)
//!     .at_ms(25).node(1).crash()
//!     .end_ms(100)
//!     .history();
//! assert_eq!(history.records.len(), 2);
//! ```
//!
//! Records get true time from [`H::at_ms`] and the current node from [`H::node`]; their
//! clock readings equal true time (a perfect clock). The run ends at the last record
//! unless [`H::end_ms`] says otherwise, and is calm from 0 unless [`H::calm_ms`] says so.

use crate::{Checker, Violation};
use tenure_core::{Cluster, History, LocalTime, NodeId, Observation, Record, RunInfo, SimTime};

/// A history under construction.
#[derive(Clone, Debug)]
pub struct H {
    cluster: Cluster,
    now: SimTime,
    node: NodeId,
    end: Option<SimTime>,
    calm_from: SimTime,
    records: Vec<Record>,
}

impl H {
    pub fn new(cluster: Cluster) -> H {
        H {
            cluster,
            now: SimTime::ZERO,
            node: NodeId(0),
            end: None,
            calm_from: SimTime::ZERO,
            records: Vec::new(),
        }
    }

    /// `n` nodes, all of role `node`.
    pub fn nodes(n: u32) -> H {
        H::new(Cluster::uniform("node", n))
    }

    /// Moves true time to `ms` milliseconds (never backwards).
    pub fn at_ms(self, ms: u64) -> H {
        self.at(SimTime(ms * 1_000_000))
    }

    /// Moves true time to `time` (never backwards).
    pub fn at(mut self, time: SimTime) -> H {
        assert!(
            time >= self.now,
            "test history goes back in time: {time} after {}",
            self.now
        );
        self.now = time;
        self
    }

    /// The node the next observations come from.
    pub fn node(mut self, n: u32) -> H {
        assert!(
            self.cluster.contains(NodeId(n)),
            "n{n} is not in the cluster"
        );
        self.node = NodeId(n);
        self
    }

    /// The current node observes `obs` now.
    pub fn obs(mut self, obs: Observation) -> H {
        self.records.push(Record::new(
            self.now,
            self.node,
            LocalTime(self.now.0 as i64),
            LocalTime(self.now.0 as i64),
            obs,
        ));
        self
    }

    /// The index the next record will get.
    pub fn next_index(&self) -> usize {
        self.records.len()
    }

    pub fn end_ms(mut self, ms: u64) -> H {
        self.end = Some(SimTime(ms * 1_000_000));
        self
    }

    pub fn calm_ms(mut self, ms: u64) -> H {
        self.calm_from = SimTime(ms * 1_000_000);
        self
    }

    pub fn history(self) -> History {
        let end = self.end.unwrap_or(self.now);
        assert!(end >= self.now, "the run ends before its last record");
        History {
            info: RunInfo {
                cluster: self.cluster,
                seed: 0,
                end,
                calm_from: self.calm_from,
            },
            records: self.records,
        }
    }

    // --- domain verbs ---

    pub fn started(self) -> H {
        self.obs(Observation::Started)
    }
    pub fn crash(self) -> H {
        self.obs(Observation::Crashed)
    }
    pub fn leader(self, term: u64) -> H {
        self.obs(Observation::Leader { term })
    }
    pub fn follower(self, term: u64, leader: Option<u32>) -> H {
        self.obs(Observation::Follower {
            term,
            leader: leader.map(NodeId),
        })
    }
    pub fn candidate(self, term: u64) -> H {
        self.obs(Observation::Candidate { term })
    }
    pub fn lease_start(self, term: u64) -> H {
        self.obs(Observation::LeaseStart { term })
    }
    pub fn lease_end(self, term: u64) -> H {
        self.obs(Observation::LeaseEnd { term })
    }
    /// The current node serves a read or issues a command as leader of `term`.
    pub fn serves(self, term: u64) -> H {
        self.obs(Observation::Serves { term })
    }
    /// The current node acts on `resource` as its holder, with `token`.
    pub fn acts(self, resource: &str, token: u64) -> H {
        self.obs(Observation::Acts {
            resource: resource.into(),
            token,
        })
    }
    pub fn waiting(self, resource: &str) -> H {
        self.obs(Observation::Waiting {
            resource: resource.into(),
        })
    }
    pub fn holds(self, resource: &str, token: u64) -> H {
        self.obs(Observation::Holds {
            resource: resource.into(),
            token,
        })
    }
    pub fn releases(self, resource: &str) -> H {
        self.obs(Observation::Releases {
            resource: resource.into(),
        })
    }
    pub fn gives_up(self, resource: &str) -> H {
        self.obs(Observation::GivesUp {
            resource: resource.into(),
        })
    }
    pub fn done(self) -> H {
        self.obs(Observation::Done)
    }
    /// The current node (the resource's server) got a write from `client`.
    pub fn write(
        self,
        resource: &str,
        client: u32,
        token: Option<u64>,
        accepted: bool,
        value: i64,
    ) -> H {
        self.obs(Observation::Write {
            resource: resource.into(),
            client: NodeId(client),
            token,
            accepted,
            value,
            based_on: None,
        })
    }
    pub fn acked(self, resource: &str, amount: i64) -> H {
        self.obs(Observation::Acked {
            resource: resource.into(),
            amount,
        })
    }
    pub fn requested(self, key: &str) -> H {
        self.obs(Observation::Requested { key: key.into() })
    }
    pub fn applied(self, key: &str) -> H {
        self.obs(Observation::Applied { key: key.into() })
    }
    pub fn completed(self, key: &str, ok: bool) -> H {
        self.obs(Observation::Completed {
            key: key.into(),
            ok,
        })
    }
    /// A pause leaves no observation of its own; a note marks it for people.
    /// `LogAppend { index, term, digest }`.
    pub fn log_append(self, index: u64, term: u64, digest: u64) -> H {
        self.obs(Observation::LogAppend {
            index,
            term,
            digest,
        })
    }
    /// `LogApply { index, term, digest }`.
    pub fn log_apply(self, index: u64, term: u64, digest: u64) -> H {
        self.obs(Observation::LogApply {
            index,
            term,
            digest,
        })
    }
    /// `Proposes { instance, value }`.
    pub fn proposes(self, instance: u64, value: u64) -> H {
        self.obs(Observation::Proposes { instance, value })
    }
    /// `Decides { instance, value }`.
    pub fn decides(self, instance: u64, value: u64) -> H {
        self.obs(Observation::Decides { instance, value })
    }
    pub fn note(self, text: &str) -> H {
        self.obs(Observation::Note { text: text.into() })
    }
}

impl From<H> for History {
    fn from(h: H) -> History {
        h.history()
    }
}

/// When a checker reported: at a record (online) or at the end of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    Record(usize),
    Finish,
}

/// Feeds `history` to `checker` the way the simulator does online and returns where it
/// first reported and what; `None` if the history passes.
pub fn judge(checker: &mut dyn Checker, history: &History) -> Option<(At, Violation)> {
    for (index, record) in history.records.iter().enumerate() {
        if let Some(v) = checker.on_record(index, record) {
            return Some((At::Record(index), v));
        }
    }
    checker.finish(&history.info).map(|v| (At::Finish, v))
}

/// Builds checker `name` from JSON `params` for `history`'s cluster and judges it; panics
/// if the checker cannot be built (a broken test).
pub fn judge_with(
    name: &str,
    params: serde_json::Value,
    history: &History,
) -> Option<(At, Violation)> {
    let mut checker = crate::build(name, &params, &history.info.cluster)
        .unwrap_or_else(|e| panic!("cannot build {name}: {e}"));
    judge(checker.as_mut(), history)
}

/// Builds checker `name` from JSON `params` and gives its verdict over `history` (pass,
/// fail, or not judged and why); panics if the checker cannot be built.
pub fn verdict_with(
    name: &str,
    params: serde_json::Value,
    history: &History,
) -> crate::verdict::CheckVerdict {
    let checker = crate::build(name, &params, &history.info.cluster)
        .unwrap_or_else(|e| panic!("cannot build {name}: {e}"));
    let mut checkers = vec![checker];
    crate::verdict::judge_history(history, &mut checkers)
        .pop()
        .expect("one checker, one verdict")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_stamps_time_and_node() {
        let h = H::nodes(2)
            .at_ms(5)
            .node(1)
            .leader(3)
            .calm_ms(2)
            .end_ms(9)
            .history();
        assert_eq!(h.records.len(), 1);
        let r = &h.records[0];
        assert_eq!((r.time, r.node), (SimTime(5_000_000), NodeId(1)));
        assert_eq!(r.obs, Observation::Leader { term: 3 });
        assert_eq!(r.mono, LocalTime(5_000_000));
        assert_eq!(h.info.end, SimTime(9_000_000));
        assert_eq!(h.info.calm_from, SimTime(2_000_000));
    }

    #[test]
    #[should_panic(expected = "back in time")]
    fn builder_refuses_to_go_back_in_time() {
        let _ = H::nodes(1).at_ms(5).at_ms(4);
    }
}
