//! # linearizability
//!
//! **Property:** the client operations recorded in a run ([`Observation::Invoke`] /
//! [`Observation::Complete`], one process per node) form a linearizable history of the
//! sequential model named by the `model` parameter (default `cas-register`): every
//! operation appears to take effect at one instant between its invocation and its
//! completion, in an order the model allows. Judged at the end of the run by the
//! Wing-Gong-Lowe search of [`crate::linearizability`].
//!
//! **How the run's records become a Jepsen history** ([`client_history`]): each `Invoke`
//! is an `:invoke` and each `Complete` an `:ok`, `:fail` or `:info` of the node's process,
//! with Jepsen's meanings (see [`crate::linearizability::history`]): a failed operation
//! (a fenced storage rejected the write) took no effect and constrains nothing. An
//! operation still open when its node crashes or restarts gets an `:info` there (its
//! outcome is unknown), one open at the end stays open (unknown). Two conventions:
//! * The zoo's resource starts at 0, not `nil`: every key begins with a `write 0` by
//!   process `N` (the cluster size: no node), before any client operation.
//! * Node `n` is process `n` until one of its operations ends `:info`; then, as in
//!   Jepsen, that process is retired and the node goes on as process `n + (N + 1)`, then
//!   `n + 2(N + 1)`, and so on (so `process mod (N + 1)` is the node).
//!
//! **How it fails:** a lock client whose lock ran out (a GC pause, work longer than the
//! lease) writes a value computed from a stale read: its `cas [seen new]` cannot be placed.
//! The overlap checkers judge beliefs; this one judges what clients saw.
//!
//! **Source:** Herlihy and Wing, "Linearizability: a correctness condition for
//! concurrent objects" (TOPLAS 1990); Jepsen's history conventions (knossos); Porcupine's
//! search (Athalye).

use super::formats::to_edn;
use super::history::{pair, Event, EventType, Value};
use super::search::Budget;
use super::{check, MODELS};
use crate::{CheckError, Checker, CheckerInfo, Violation};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use tenure_core::{
    Cluster, History, NodeId, Observation, OpOutcome, OpValue, Record, RunInfo, SimTime,
};

pub const NAME: &str = "linearizability";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::AtEnd,
    summary: "the clients' operations form a linearizable history of the model",
    property: "the Invoke/Complete records (process = node) have a linearization: each \
               operation takes effect at one instant between its invocation and its \
               completion, in an order the sequential model allows; unknown outcomes may \
               take effect or not",
    source: "Herlihy & Wing, \"Linearizability\" (TOPLAS 1990); Jepsen/Knossos history \
             conventions; Porcupine's WGL search",
    params: "model: register | cas-register | kv | mutex | fencing (default cas-register); \
             max_steps: search steps before the verdict is \"undecided\" (default 10000000)",
};

/// `[check.linearizability]` parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    pub model: String,
    pub max_steps: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            model: "cas-register".into(),
            max_steps: 10_000_000,
        }
    }
}

/// Collects a run's client history from its records.
#[derive(Clone, Debug)]
pub struct Collector {
    /// The process of the initial writes (the cluster size: no node).
    init_process: u64,
    events: Vec<Event>,
    /// Record index of each event (`None` for the initial writes).
    records: Vec<Option<usize>>,
    times: Vec<SimTime>,
    /// node -> (f, key) of its open operation.
    open: BTreeMap<u64, (String, String)>,
    /// node -> its current process (the node's number until an operation ends `:info`).
    process: BTreeMap<u64, u64>,
}

impl Collector {
    pub fn new(cluster: &Cluster) -> Collector {
        Collector {
            init_process: cluster.size() as u64,
            events: Vec::new(),
            records: Vec::new(),
            times: Vec::new(),
            open: BTreeMap::new(),
            process: BTreeMap::new(),
        }
    }

    /// The node a process of this history belongs to (`None`: the initial writes).
    pub fn node_of(&self, process: u64) -> Option<NodeId> {
        let stride = self.init_process + 1;
        (process != self.init_process).then(|| NodeId((process % stride) as u32))
    }

    fn push(
        &mut self,
        index: usize,
        record: &Record,
        kind: EventType,
        f: &str,
        key: &str,
        value: Value,
    ) {
        let node = record.node.0 as u64;
        let process = *self.process.get(&node).unwrap_or(&node);
        if kind == EventType::Info {
            // Jepsen retires a process whose operation's outcome is unknown.
            self.process.insert(node, process + self.init_process + 1);
        }
        self.events.push(Event {
            process,
            kind,
            f: f.to_string(),
            key: Some(Value::Str(key.to_string())),
            value,
            time: Some(record.time.as_nanos()),
            line: index + 1,
        });
        self.records.push(Some(index));
        self.times.push(record.time);
    }

    pub fn on_record(&mut self, index: usize, record: &Record) {
        let process = record.node.0 as u64;
        match &record.obs {
            Observation::Invoke { f, key, value } => {
                if self.open.contains_key(&process) {
                    // A protocol bug: one operation at a time per process.
                    panic!("{NAME}: record {index}: n{process} invokes {f} with an operation still open");
                }
                self.open.insert(process, (f.clone(), key.clone()));
                self.push(index, record, EventType::Invoke, f, key, value_of(*value));
            }
            Observation::Complete {
                f,
                key,
                outcome,
                value,
            } => {
                // A completion with nothing open (already closed by a crash) is ignored.
                let Some(_) = self.open.remove(&process) else {
                    return;
                };
                let kind = match outcome {
                    OpOutcome::Ok => EventType::Ok,
                    OpOutcome::Fail => EventType::Fail,
                    OpOutcome::Info => EventType::Info,
                };
                self.push(index, record, kind, f, key, value_of(*value));
            }
            Observation::Crashed | Observation::Started => {
                let Some((f, key)) = self.open.remove(&process) else {
                    return;
                };
                self.push(index, record, EventType::Info, &f, &key, Value::Nil);
            }
            _ => {}
        }
    }

    /// The history: the initial writes, then the events. With each event, the index of
    /// its record (`None` for the initial writes).
    pub fn history(&self) -> (Vec<Event>, Vec<Option<usize>>, Vec<SimTime>) {
        let keys: BTreeSet<&Value> = self.events.iter().filter_map(|e| e.key.as_ref()).collect();
        let mut events = Vec::new();
        let mut records = Vec::new();
        let mut times = Vec::new();
        for key in keys {
            for kind in [EventType::Invoke, EventType::Ok] {
                events.push(Event {
                    process: self.init_process,
                    kind,
                    f: "write".into(),
                    key: Some(key.clone()),
                    value: Value::Int(0),
                    time: Some(0),
                    line: 0,
                });
                records.push(None);
                times.push(SimTime::ZERO);
            }
        }
        events.extend(self.events.iter().cloned());
        records.extend(self.records.iter().copied());
        times.extend(self.times.iter().copied());
        (events, records, times)
    }
}

fn value_of(v: OpValue) -> Value {
    match v {
        OpValue::Nil => Value::Nil,
        OpValue::Int(i) => Value::Int(i),
        OpValue::Pair(a, b) => Value::List(vec![Value::Int(a), Value::Int(b)]),
    }
}

/// A run's client history as Jepsen events (see the module documentation).
pub fn client_history(history: &History) -> Vec<Event> {
    let mut c = Collector::new(&history.info.cluster);
    for (i, r) in history.records.iter().enumerate() {
        c.on_record(i, r);
    }
    c.history().0
}

/// A run's client history as Jepsen EDN, one map per line.
pub fn client_history_edn(history: &History) -> String {
    to_edn(&client_history(history))
}

/// The checker.
pub struct Linearizability {
    params: Params,
    collector: Collector,
    /// Every change of a node's belief about leading: (record index, time, node, the
    /// term it leads, `None` when it stops or never did), to name the leaders of the
    /// moment a replicated service answered wrongly.
    roles: Vec<(usize, SimTime, NodeId, Option<u64>)>,
    /// Set by `finish` when the search ran out of its budget: not judged (undecided).
    undecided: Option<crate::verdict::NotJudged>,
}

impl Linearizability {
    pub fn new(params: Params, cluster: &Cluster) -> Result<Linearizability, CheckError> {
        if !MODELS.iter().any(|m| m.0 == params.model) {
            return Err(CheckError::new(
                "model",
                format!(
                    "unknown model `{}`; known models: {}",
                    params.model,
                    MODELS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if params.max_steps == 0 {
            return Err(CheckError::new("max_steps", "must be at least 1"));
        }
        Ok(Linearizability {
            params,
            collector: Collector::new(cluster),
            roles: Vec::new(),
            undecided: None,
        })
    }
}

impl Checker for Linearizability {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.collector.on_record(index, record);
        let leads = match record.obs {
            Observation::Leader { term } => Some(term),
            Observation::Follower { .. }
            | Observation::Candidate { .. }
            | Observation::Crashed
            | Observation::Started => None,
            _ => return None,
        };
        self.roles.push((index, record.time, record.node, leads));
        None
    }

    fn not_judged(&self) -> Option<crate::verdict::NotJudged> {
        self.undecided.clone()
    }

    fn finish(&mut self, info: &RunInfo) -> Option<Violation> {
        let (events, records, times) = self.collector.history();
        let ops = match pair(&events) {
            Ok(ops) => ops,
            // The collector pairs every event itself: a failure is a bug here.
            Err(e) => panic!("{NAME}: the recorded client history does not pair: {e}"),
        };
        let budget = Budget {
            max_steps: Some(self.params.max_steps),
            cancel: None,
        };
        let report = match check(&self.params.model, &ops, &budget) {
            Ok(r) => r,
            Err(e) => {
                return Some(Violation {
                    checker: NAME,
                    time: info.end,
                    nodes: Vec::new(),
                    message: format!(
                        "the client history does not fit the model {}: {}",
                        self.params.model, e.message
                    ),
                    records: Vec::new(),
                })
            }
        };
        if report.is_linearizable() {
            return None;
        }
        let Some(cx) = report.counterexample.as_ref() else {
            // Unknown: undecided within the budget. Not a proof of a violation, and the
            // property was not shown either: not judged (Jepsen's :unknown), never a
            // failure.
            self.undecided = Some(crate::verdict::NotJudged::new(
                crate::verdict::Reason::Undecided,
                format!(
                    "the search ran out of its {} steps over {} operations (raise max_steps)",
                    self.params.max_steps, report.operations
                ),
            ));
            return None;
        };
        let c = &self.collector;
        // A process's node ("n3"); the initial writes' process shows as its number.
        let who = |p: u64| c.node_of(p).map_or(p, |n| u64::from(n.0));
        let mut nodes = Vec::new();
        let mut recs = BTreeSet::new();
        let mut time = info.end;
        let mut message = String::new();
        if let Some(stuck) = &cx.stuck {
            nodes.extend(c.node_of(stuck.process));
            for pos in [Some(stuck.call), stuck.ret].into_iter().flatten() {
                if let Some(r) = records[pos] {
                    recs.insert(r);
                }
            }
            time = times[stuck.ret.unwrap_or(stuck.call)];
            message =
                format!(
                "n{}'s {} (invoked at {}, returned at {}) cannot be linearized ({} model): after \
                 the longest linearizable prefix ({} operations) the state is {}",
                who(stuck.process),
                stuck.op,
                times[stuck.call],
                stuck.ret.map_or("never".to_string(), |r| times[r].to_string()),
                self.params.model,
                cx.prefix.len(),
                cx.state
            );
            // Who left that state: the last operation placed, when it is a node's (the
            // write a stale read missed).
            if let Some(last) = cx.prefix.last().filter(|o| c.node_of(o.process).is_some()) {
                let returned = last.ret.map_or("never returned".to_string(), |r| {
                    format!("returned at {}", times[r])
                });
                message.push_str(&format!(
                    " (last placed: n{}'s {}, {returned})",
                    who(last.process),
                    last.op
                ));
                for pos in [Some(last.call), last.ret].into_iter().flatten() {
                    if let Some(r) = records[pos] {
                        recs.insert(r);
                    }
                }
            }
            // Who believed they led when it returned (a stale read from a deposed leader
            // shows two).
            if let Some(until) = stuck.ret.and_then(|r| records[r]) {
                let mut now: BTreeMap<NodeId, (usize, SimTime, Option<u64>)> = BTreeMap::new();
                for &(i, t, n, leads) in self.roles.iter().take_while(|r| r.0 <= until) {
                    now.insert(n, (i, t, leads));
                }
                let leaders: Vec<String> = now
                    .iter()
                    .filter_map(|(n, &(i, t, leads))| {
                        let term = leads?;
                        recs.insert(i);
                        Some(format!("{n} (term {term}, since {t})"))
                    })
                    .collect();
                if !leaders.is_empty() {
                    message.push_str(&format!(
                        "; leading when it returned: {}",
                        leaders.join(", ")
                    ));
                }
            }
        }
        if message.is_empty() {
            message = format!(
                "no operation can be placed after the longest linearizable prefix ({} operations, state {})",
                cx.prefix.len(),
                cx.state
            );
        }
        if !cx.concurrent.is_empty() {
            let shown: Vec<String> = cx
                .concurrent
                .iter()
                .map(|o| format!("n{} {}", who(o.process), o.op))
                .collect();
            message.push_str(&format!("; concurrent: {}", shown.join(", ")));
            for o in &cx.concurrent {
                if let Some(n) = c.node_of(o.process) {
                    if !nodes.contains(&n) {
                        nodes.push(n);
                    }
                }
            }
        }
        Some(Violation {
            checker: NAME,
            time,
            nodes,
            message,
            records: recs.into_iter().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::H;

    fn invoke(f: &str, value: OpValue) -> Observation {
        Observation::Invoke {
            f: f.into(),
            key: "r".into(),
            value,
        }
    }

    fn complete(f: &str, outcome: OpOutcome, value: OpValue) -> Observation {
        Observation::Complete {
            f: f.into(),
            key: "r".into(),
            outcome,
            value,
        }
    }

    fn run(h: &History) -> Option<Violation> {
        let mut c = Linearizability::new(Params::default(), &h.info.cluster).unwrap();
        for (i, r) in h.records.iter().enumerate() {
            assert!(c.on_record(i, r).is_none());
        }
        c.finish(&h.info)
    }

    /// Two read-modify-writes from 0 to 1, one after the other: the second is a lost
    /// update (it read 0 before the first wrote 1, wrote 1 after it).
    fn lost_update(second_ok: OpOutcome) -> History {
        H::new(Cluster::uniform("node", 3))
            .at_ms(10)
            .node(0)
            .obs(invoke("read", OpValue::Nil))
            .at_ms(11)
            .obs(complete("read", OpOutcome::Ok, OpValue::Int(0)))
            .at_ms(12)
            .node(1)
            .obs(invoke("read", OpValue::Nil))
            .at_ms(13)
            .obs(complete("read", OpOutcome::Ok, OpValue::Int(0)))
            .at_ms(20)
            .obs(invoke("cas", OpValue::Pair(0, 1)))
            .at_ms(21)
            .obs(complete("cas", OpOutcome::Ok, OpValue::Pair(0, 1)))
            .at_ms(30)
            .node(0)
            .obs(invoke("cas", OpValue::Pair(0, 1)))
            .at_ms(31)
            .obs(complete("cas", second_ok, OpValue::Pair(0, 1)))
            .end_ms(100)
            .history()
    }

    #[test]
    fn a_lost_update_is_not_linearizable_and_names_the_stale_write() {
        let v = run(&lost_update(OpOutcome::Ok)).expect("a violation");
        assert_eq!(v.checker, NAME);
        assert_eq!(v.nodes, vec![NodeId(0)]);
        // the stale write, and the write it missed (the last operation placed)
        assert_eq!(v.records, vec![4, 5, 6, 7]);
        assert_eq!(v.time, SimTime(31_000_000));
        assert!(
            v.message
                .starts_with("n0's cas(\"r\", [0 1]) -> ok (invoked at 0.030_000s"),
            "{}",
            v.message
        );
        assert!(
            v.message
                .contains("the state is 1 (last placed: n1's cas(\"r\", [0 1]) -> ok, returned at 0.021_000s)"),
            "{}",
            v.message
        );
    }

    /// A deposed leader (n0, term 1) answers a read after the new leader (n1, term 2)
    /// has answered a write: the report names the stale read, the write it missed and
    /// both leaders.
    #[test]
    fn a_stale_read_names_both_leaders_of_its_moment() {
        let h = H::new(Cluster::uniform("node", 3))
            .at_ms(1)
            .node(0)
            .leader(1)
            .at_ms(50)
            .node(1)
            .leader(2)
            .at_ms(60)
            .node(2)
            .obs(invoke("write", OpValue::Int(5)))
            .at_ms(61)
            .obs(complete("write", OpOutcome::Ok, OpValue::Int(5)))
            .at_ms(70)
            .node(0)
            .obs(invoke("read", OpValue::Nil))
            .at_ms(71)
            .obs(complete("read", OpOutcome::Ok, OpValue::Int(0)))
            .at_ms(80)
            .node(0)
            .follower(2, Some(1))
            .end_ms(100)
            .history();
        let v = run(&h).expect("a violation");
        assert_eq!(
            v.message,
            "n0's read(\"r\") -> 0 (invoked at 0.070_000s, returned at 0.071_000s) cannot be \
             linearized (cas-register model): after the longest linearizable prefix (2 \
             operations) the state is 5 (last placed: n2's write(\"r\", 5) -> ok, returned at \
             0.061_000s); leading when it returned: n0 (term 1, since 0.001_000s), n1 (term 2, \
             since 0.050_000s)"
        );
        assert_eq!(v.records, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_rejected_stale_write_constrains_nothing_and_the_history_is_linearizable() {
        let h = lost_update(OpOutcome::Fail);
        assert_eq!(run(&h), None);
        // The history written keeps it, as Jepsen's :fail (it did not take effect).
        let edn = client_history_edn(&h);
        assert!(
            edn.lines()
                .any(|l| l.contains(":process 0, :type :fail, :f :cas")),
            "{edn}"
        );
        // An unknown outcome may never have taken effect.
        assert_eq!(run(&lost_update(OpOutcome::Info)), None);
    }

    #[test]
    fn a_crash_closes_the_open_operation_as_unknown() {
        let h = H::new(Cluster::uniform("node", 2))
            .at_ms(10)
            .node(0)
            .obs(invoke("cas", OpValue::Pair(0, 5)))
            .at_ms(20)
            .obs(Observation::Crashed)
            .at_ms(30)
            .obs(Observation::Started)
            .obs(invoke("read", OpValue::Nil))
            .at_ms(31)
            .obs(complete("read", OpOutcome::Ok, OpValue::Int(5)))
            .end_ms(40)
            .history();
        assert_eq!(run(&h), None);
        let edn = client_history_edn(&h);
        let lines: Vec<&str> = edn.lines().collect();
        assert_eq!(lines.len(), 6, "{edn}");
        assert!(
            lines[0].contains(":process 2") && lines[0].contains(":invoke"),
            "{edn}"
        );
        assert!(
            lines[3].contains(":process 0") && lines[3].contains(":info"),
            "{edn}"
        );
        // As in Jepsen, the crashed process is retired: node 0 goes on as process 3
        // (0 + the cluster size + 1), and the history pairs.
        assert!(
            lines[4].contains(":process 3") && lines[4].contains(":invoke"),
            "{edn}"
        );
        pair(&client_history(&h)).expect("a well-formed Jepsen history");
        // A read of 6 cannot be explained.
        let mut bad = h.clone();
        if let Observation::Complete { value, .. } = &mut bad.records[4].obs {
            *value = OpValue::Int(6);
        }
        let v = run(&bad).expect("a violation");
        // the read, and the crashed write placed last (its outcome unknown)
        assert_eq!(v.records, vec![0, 3, 4]);
        assert_eq!(v.nodes, vec![NodeId(0)]);
        assert!(v.message.starts_with("n0's read("), "{}", v.message);
    }

    #[test]
    fn an_unknown_model_names_the_field() {
        let params = Params {
            model: "queue".into(),
            ..Params::default()
        };
        let err = Linearizability::new(params, &Cluster::uniform("node", 2))
            .err()
            .unwrap();
        assert_eq!(err.field, "model");
    }
}
