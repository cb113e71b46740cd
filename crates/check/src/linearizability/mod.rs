//! Linearizability of client operation histories (Herlihy & Wing, 1990): every
//! operation appears to take effect at one instant between its invocation and its
//! completion, in an order that a sequential object (the model) allows.
//!
//! * [`history`]: Jepsen's events (`invoke`, then `ok` / `fail` / `info`, with Jepsen's
//!   and Knossos's meanings: a failed operation did not happen and is dropped, an
//!   unknown one may happen any time after its invocation or never) paired into
//!   operations.
//! * [`search`]: the Wing-Gong-Lowe search with Porcupine's memoisation of (linearized
//!   set, state); histories are split by key first (P-compositionality).
//! * [`models`]: one file per sequential model: `register`, `cas-register`, `kv`,
//!   `mutex`, `fencing`.
//! * [`formats`]: Porcupine's Jepsen etcd logs, Jepsen EDN (maps per line, or one
//!   vector or list, `;` comments), tenure's JSON lines; EDN out.
//!
//! On a violation the [`Report`] names the longest linearizable prefix found, the
//! operation that could not be placed after it and the operations concurrent with it.

pub mod checker;
pub mod formats;
pub mod history;
pub mod model;
pub mod models;
pub mod search;
#[cfg(test)]
pub(crate) mod testing;

use history::{Op, Outcome, Value};
use model::Model;
use search::{Budget, Item};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The model names `--model` accepts, with one line each.
pub const MODELS: &[(&str, &str)] = &[
    (
        models::register::NAME,
        "read/write register (read, write)",
    ),
    (
        models::cas_register::NAME,
        "register with compare-and-set (read, write, cas [from to]): Porcupine's etcd model, Knossos's cas-register",
    ),
    (
        models::kv::NAME,
        "key-value map (get, put, append), one independent register per :key",
    ),
    (
        models::mutex::NAME,
        "lock (lock, unlock by the holder)",
    ),
    (
        models::fencing::NAME,
        "fencing-token register (write [token value] accepted iff token >= highest seen, read)",
    ),
];

/// What the search concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Linearizable,
    NotLinearizable,
    /// The budget (steps or time) ran out first.
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Linearizable => "linearizable",
            Verdict::NotLinearizable => "not linearizable",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One operation as a report shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpView {
    /// Index of the operation in the history (invocation order).
    pub index: usize,
    pub process: u64,
    /// `write(3) -> ok`, `read() -> 4`, `cas([1 2]) -> fail`, `lock() -> unknown`.
    pub op: String,
    pub outcome: Outcome,
    /// Positions of its invocation and completion among the history's events.
    pub call: usize,
    #[serde(rename = "return")]
    pub ret: Option<usize>,
    /// Source lines of its invocation and completion (0: none).
    pub line: usize,
    pub ret_line: usize,
}

impl OpView {
    pub fn of(op: &Op) -> OpView {
        OpView {
            index: op.index,
            process: op.process,
            op: describe(op),
            outcome: op.outcome,
            call: op.call,
            ret: op.ret,
            line: op.line,
            ret_line: op.ret_line,
        }
    }

    fn text(&self) -> String {
        let lines = match (self.line, self.ret_line) {
            (0, _) => String::new(),
            (l, 0) => format!(" (line {l}, never returned)"),
            (l, r) => format!(" (lines {l}-{r})"),
        };
        format!("process {}: {}{lines}", self.process, self.op)
    }
}

/// `f(input) -> output`, with the key first if there is one.
pub fn describe(op: &Op) -> String {
    let arg = match &op.input {
        Value::Nil => String::new(),
        v => v.to_string(),
    };
    let reads = op.f == "read" || op.f == "get";
    let result = match op.outcome {
        // Jepsen's completions repeat a write's value: only a read's says something.
        Outcome::Ok if !reads && (op.output == Value::Nil || op.output == op.input) => {
            "ok".to_string()
        }
        Outcome::Ok => op.output.to_string(),
        Outcome::Fail => "fail".into(),
        Outcome::Info => "unknown".into(),
    };
    let args = match (&op.key, arg.is_empty()) {
        (Some(k), true) => k.to_string(),
        (Some(k), false) => format!("{k}, {arg}"),
        (None, _) => arg,
    };
    format!("{}({args}) -> {result}", op.f)
}

/// Why a history is not linearizable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counterexample {
    /// The key of the sub-history that fails (`None`: the model's single object).
    pub key: Option<Value>,
    /// The longest linearizable prefix the search found, in linearization order.
    pub prefix: Vec<OpView>,
    /// The model's state after that prefix.
    pub state: String,
    /// The operation that cannot be placed after the prefix: it returned before any
    /// order of the remaining operations could include it.
    pub stuck: Option<OpView>,
    /// The operations concurrent with it (invoked before it returned, not returned
    /// before it was invoked), in invocation order.
    pub concurrent: Vec<OpView>,
}

/// The verdict on a history, with the evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    pub model: &'static str,
    pub verdict: Verdict,
    /// Operations in the history (before failed reads and the like are left out).
    pub operations: usize,
    /// Independent sub-histories (keys).
    pub partitions: usize,
    /// Search steps taken.
    pub steps: u64,
    pub counterexample: Option<Counterexample>,
}

impl Report {
    pub fn is_linearizable(&self) -> bool {
        self.verdict == Verdict::Linearizable
    }

    pub fn is_violation(&self) -> bool {
        self.verdict == Verdict::NotLinearizable
    }

    /// The report in words, for people.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{} (model {}, {} operations, {} partition{}, {} search steps)\n",
            self.verdict.as_str(),
            self.model,
            self.operations,
            self.partitions,
            if self.partitions == 1 { "" } else { "s" },
            self.steps
        );
        let Some(cx) = &self.counterexample else {
            return s;
        };
        if let Some(k) = &cx.key {
            let _ = writeln!(s, "key {k}:");
        }
        let _ = writeln!(
            s,
            "longest linearizable prefix: {} operation{}, leaving the state {}",
            cx.prefix.len(),
            if cx.prefix.len() == 1 { "" } else { "s" },
            cx.state
        );
        const SHOWN: usize = 8;
        if cx.prefix.len() > SHOWN {
            let _ = writeln!(s, "  ... {} earlier", cx.prefix.len() - SHOWN);
        }
        for op in cx.prefix.iter().skip(cx.prefix.len().saturating_sub(SHOWN)) {
            let _ = writeln!(s, "  {}", op.text());
        }
        match &cx.stuck {
            Some(op) => {
                let _ = writeln!(s, "cannot be placed after it: {}", op.text());
            }
            None => {
                let _ = writeln!(s, "no operation can be placed after it");
            }
        }
        if !cx.concurrent.is_empty() {
            let _ = writeln!(s, "concurrent with it:");
            for op in &cx.concurrent {
                let _ = writeln!(s, "  {}", op.text());
            }
        }
        s
    }
}

/// An operation the model cannot read (unknown `f`, malformed value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// Source line of the operation's invocation (0: none).
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Checks `ops` against the model named `model` (see [`MODELS`]).
pub fn check(model: &str, ops: &[Op], budget: &Budget<'_>) -> Result<Report, ModelError> {
    match model {
        models::register::NAME => check_with(&models::register::Register, ops, budget),
        models::cas_register::NAME => check_with(&models::cas_register::CasRegister, ops, budget),
        models::kv::NAME => check_with(&models::kv::Kv, ops, budget),
        models::mutex::NAME => check_with(&models::mutex::Mutex, ops, budget),
        models::fencing::NAME => check_with(&models::fencing::Fencing, ops, budget),
        _ => Err(ModelError {
            line: 0,
            message: format!(
                "unknown model `{model}`; known models: {}",
                MODELS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Checks `ops` against `model`: splits them by key and searches each sub-history,
/// stopping at the first one that is not linearizable.
pub fn check_with<M: Model>(
    model: &M,
    ops: &[Op],
    budget: &Budget<'_>,
) -> Result<Report, ModelError> {
    let mut prepared = Vec::with_capacity(ops.len());
    for op in ops {
        match model.prepare(op) {
            Ok(Some(p)) => prepared.push((op.index, p)),
            Ok(None) => {}
            Err(message) => {
                return Err(ModelError {
                    line: op.line,
                    message,
                })
            }
        }
    }
    // P-compositionality: one sub-history per key, keys in order.
    type Partition<'p, I, O> = Vec<Item<'p, I, O>>;
    let mut partitions: BTreeMap<Option<&Value>, Partition<'_, M::Input, M::Output>> =
        BTreeMap::new();
    for (index, p) in &prepared {
        let op = &ops[*index];
        partitions.entry(p.key.as_ref()).or_default().push(Item {
            op: *index,
            input: &p.input,
            output: &p.output,
            call: op.call,
            ret: op.ret,
        });
    }
    let mut report = Report {
        model: model.name(),
        verdict: Verdict::Linearizable,
        operations: ops.len(),
        partitions: partitions.len(),
        steps: 0,
        counterexample: None,
    };
    let keys: Vec<Option<&Value>> = partitions.keys().copied().collect();
    let slices: Vec<&[Item<'_, M::Input, M::Output>]> =
        partitions.values().map(Vec::as_slice).collect();
    let (failed, outcome) = search::check_partitions(model, &slices, budget, &mut report.steps);
    match outcome {
        search::Outcome::Linearizable => {}
        search::Outcome::Unknown => report.verdict = Verdict::Unknown,
        search::Outcome::Illegal { prefix, stuck } => {
            report.verdict = Verdict::NotLinearizable;
            report.counterexample = Some(counterexample(
                model,
                ops,
                &prepared,
                keys[failed].cloned(),
                &prefix,
                stuck,
            ));
        }
    }
    Ok(report)
}

/// A prepared operation with its index in the history.
type Numbered<M> = (
    usize,
    model::Prepared<<M as Model>::Input, <M as Model>::Output>,
);

fn counterexample<M: Model>(
    model: &M,
    ops: &[Op],
    prepared: &[Numbered<M>],
    key: Option<Value>,
    prefix: &[usize],
    stuck: Option<usize>,
) -> Counterexample {
    // Replay the prefix for the state it leaves.
    let by_index: BTreeMap<usize, &model::Prepared<M::Input, M::Output>> =
        prepared.iter().map(|(i, p)| (*i, p)).collect();
    let mut state = model.init();
    for i in prefix {
        let p = by_index[i];
        state = model
            .step(&state, &p.input, &p.output)
            .expect("the search's prefix replays step by step");
    }
    let concurrent = match stuck {
        Some(s) => {
            let so = &ops[s];
            let end = so.ret.unwrap_or(usize::MAX);
            prepared
                .iter()
                .filter(|(i, p)| {
                    let o = &ops[*i];
                    *i != s && p.key == key && o.call < end && o.ret.is_none_or(|r| r > so.call)
                })
                .map(|(i, _)| OpView::of(&ops[*i]))
                .collect()
        }
        None => Vec::new(),
    };
    Counterexample {
        key,
        prefix: prefix.iter().map(|i| OpView::of(&ops[*i])).collect(),
        state: model.describe_state(&state),
        stuck: stuck.map(|s| OpView::of(&ops[s])),
        concurrent,
    }
}

/// Bad input: the line of the history at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

/// Reads a history (`format` detected if `None`), pairs its events and checks it
/// against `model`.
pub fn check_text(
    text: &str,
    format: Option<formats::Format>,
    model: &str,
    budget: &Budget<'_>,
) -> Result<Report, InputError> {
    let format = match format {
        Some(f) => f,
        None => formats::Format::detect(text).map_err(|e| InputError {
            line: e.line,
            message: e.message,
        })?,
    };
    let events = formats::parse(text, format).map_err(|e| InputError {
        line: e.line,
        message: e.message,
    })?;
    let ops = history::pair(&events).map_err(|e| InputError {
        line: e.line,
        message: e.message,
    })?;
    check(model, &ops, budget).map_err(|e| InputError {
        line: e.line,
        message: e.message,
    })
}

#[cfg(test)]
mod tests {
    use super::testing::{check_model, History};
    use super::*;

    /// The book's stale read: write 1, write 2, then a read of 1 while a write of 3 of
    /// unknown outcome is in flight.
    fn stale_read() -> History {
        History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "write", 2)
            .invoke(3, "write", 3)
            .ok(1, "write", 2)
            .invoke(2, "read", ())
            .info(3, "write", ())
            .ok(2, "read", 1)
    }

    #[test]
    fn a_violation_names_the_prefix_the_stuck_operation_and_its_concurrent_ones() {
        let r = check_model("register", &stale_read());
        assert_eq!(r.verdict, Verdict::NotLinearizable);
        let cx = r.counterexample.as_ref().unwrap();
        let stuck = cx.stuck.as_ref().unwrap();
        assert_eq!((stuck.process, stuck.op.as_str()), (2, "read() -> 1"));
        assert_eq!((stuck.line, stuck.ret_line), (6, 8));
        let concurrent: Vec<&str> = cx.concurrent.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(concurrent, ["write(3) -> unknown"]);
        // write 1 and write 2 must both precede the read; the prefix has them in order.
        let prefix: Vec<&str> = cx.prefix.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(prefix[..2], ["write(1) -> ok", "write(2) -> ok"]);
        let text = r.text();
        assert!(text.contains("cannot be placed after it: process 2: read() -> 1 (lines 6-8)"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["verdict"], "not-linearizable");
        assert_eq!(json["counterexample"]["stuck"]["process"], 2);
    }

    #[test]
    fn the_same_history_with_a_fresh_read_is_linearizable() {
        let mut h = stale_read();
        h.events.last_mut().unwrap().value = Value::Int(3);
        assert!(check_model("register", &h).is_linearizable());
        h.events.last_mut().unwrap().value = Value::Int(2);
        assert!(check_model("register", &h).is_linearizable());
    }

    #[test]
    fn a_cheap_refutation_on_one_key_is_found_despite_an_expensive_key() {
        // Key "a": twelve concurrent appends of different strings, then a get that no
        // order explains: refuting it means trying every order (12! states). Key "b"
        // (searched after "a" if keys went one by one) is refuted in a few steps.
        const DIGITS: [&str; 12] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b"];
        let mut h = History::new();
        for (p, d) in DIGITS.iter().enumerate() {
            h = h.invoke_k(p as u64, "append", "a", *d);
        }
        for (p, d) in DIGITS.iter().enumerate() {
            h = h.ok_k(p as u64, "append", "a", *d);
        }
        h = h
            .invoke_k(30, "get", "a", ())
            .ok_k(30, "get", "a", "zz")
            .invoke_k(20, "put", "b", 1)
            .ok_k(20, "put", "b", 1)
            .invoke_k(21, "get", "b", ())
            .ok_k(21, "get", "b", 2);
        let ops = history::pair(&h.events).unwrap();
        let budget = Budget {
            max_steps: Some(search::SLICE * 4),
            cancel: None,
        };
        let r = check("kv", &ops, &budget).unwrap();
        assert_eq!(r.verdict, Verdict::NotLinearizable, "{}", r.text());
        assert_eq!(r.counterexample.unwrap().key, Some(Value::Str("b".into())));
        // Key "a" alone runs out of that budget: the search really is expensive there.
        let only_a: Vec<_> = ops
            .iter()
            .filter(|o| o.key == Some("a".into()))
            .cloned()
            .collect();
        assert_eq!(
            check("kv", &only_a, &budget).unwrap().verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn an_unknown_model_is_named_with_the_known_ones() {
        let e = check("queue", &[], &Budget::default()).unwrap_err();
        assert!(e
            .message
            .contains("register, cas-register, kv, mutex, fencing"));
    }
}
