//! Client operation histories with Jepsen's conventions, read from the sources of
//! Jepsen (`jepsen-io/jepsen`, commit `c4c7473d`, `doc/tutorial/03-client.md`: "`:ok` if
//! the operation succeeded, `:fail` if it didn't take place, or `:info` if we're not
//! sure") and Knossos (`jepsen-io/knossos`, commit `9b2c79e9`, 0.3.16-SNAPSHOT:
//! `src/knossos/history.clj`, `complete`, `pairs+`; `src/knossos/model.clj`).
//!
//! Every operation is an `:invoke` event followed, on the same process, by at most one
//! completion:
//!
//! * `:ok`: it took effect, at one instant between the invocation and the completion,
//!   and the completion's value is its result (a read's value; a write or cas repeats its
//!   argument, and a completion without a value keeps the invocation's).
//! * `:fail`: it certainly did not take effect. It constrains nothing: every model leaves
//!   it out before the search, as Knossos does (a failed cas is *not* read as "the
//!   compare came back false": that asserts more than the history says).
//! * `:info`: unknown. It may have taken effect at any instant after its invocation, or
//!   never; its completion's value says nothing. An operation never completed counts as
//!   `:info`.
//!
//! A process runs one operation at a time. A process whose operation failed (or
//! succeeded) may invoke again; a process whose operation ended `:info` (or never
//! ended) never does: Jepsen retires it and goes on with a fresh process number, and
//! Knossos rejects such a history ("already running"). So does [`pair`].

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A value carried by an event: what Jepsen histories carry (`nil`, integers, strings,
/// keywords, vectors such as a CAS's `[from to]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Nil,
    Int(i64),
    Str(String),
    List(Vec<Value>),
}

impl Value {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// `[a b]` of two integers (a CAS's `[from to]`, a fenced write's `[token value]`).
    pub fn as_int_pair(&self) -> Option<(i64, i64)> {
        match self {
            Value::List(v) if v.len() == 2 => Some((v[0].as_int()?, v[1].as_int()?)),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// EDN notation (`nil`, `3`, `"x"`, `[1 2]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => write!(f, "nil"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => write!(f, "{}", edn_string(s)),
            Value::List(v) => {
                write!(f, "[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "]")
            }
        }
    }
}

/// `s` as an EDN (and JSON-compatible) string literal.
pub fn edn_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The four event types of a Jepsen history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    Invoke,
    Ok,
    Fail,
    Info,
}

impl EventType {
    pub fn name(self) -> &'static str {
        match self {
            EventType::Invoke => "invoke",
            EventType::Ok => "ok",
            EventType::Fail => "fail",
            EventType::Info => "info",
        }
    }

    pub fn from_name(s: &str) -> Option<EventType> {
        Some(match s {
            "invoke" => EventType::Invoke,
            "ok" => EventType::Ok,
            "fail" => EventType::Fail,
            "info" => EventType::Info,
            _ => return None,
        })
    }
}

/// One line of a history: a process invokes an operation or learns how it ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub process: u64,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The operation's name: `read`, `write`, `cas`, `get`, `put`, `append`, `lock`...
    pub f: String,
    /// The key the operation is on, if the history has several (a kv store, several
    /// registers or locks). Operations on different keys are checked independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<Value>,
    #[serde(default = "nil")]
    pub value: Value,
    /// When it happened (tenure: true time in nanoseconds). Informative only: the
    /// order of events in the history is what the checker uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
    /// The line of the source file the event came from (0 if none).
    #[serde(skip)]
    pub line: usize,
}

fn nil() -> Value {
    Value::Nil
}

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Fail,
    /// Unknown: it may have taken effect at any time after its invocation, or never.
    Info,
}

/// An invocation paired with its completion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Op {
    /// Index of this operation in the history, in invocation order.
    pub index: usize,
    pub process: u64,
    pub f: String,
    pub key: Option<Value>,
    /// The invocation's value (what a write writes, a CAS's `[from to]`).
    pub input: Value,
    /// The completion's value (what a read returned); `Nil` for an `info`.
    pub output: Value,
    pub outcome: Outcome,
    /// Position of the invocation event in the history.
    pub call: usize,
    /// Position of the completion event; `None` if it never completed (`info`): the
    /// operation then stays concurrent with everything after its invocation.
    #[serde(rename = "return")]
    pub ret: Option<usize>,
    /// Source lines of the invocation and of the completion (0 if none).
    pub line: usize,
    pub ret_line: usize,
    pub time: Option<u64>,
}

/// A history that cannot be paired into operations (file and line in the message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl Op {
    /// The operation's argument as it took effect: an `ok` completion's value if it
    /// has one (Knossos's `complete` puts it in the invocation), else the invocation's.
    /// For reads, whose argument is `nil`, use [`Op::output`].
    pub fn value(&self) -> &Value {
        match (self.outcome, &self.output) {
            (Outcome::Ok, v) if *v != Value::Nil => v,
            _ => &self.input,
        }
    }
}

/// Pairs each invocation with the next completion of the same process.
///
/// Errors: a completion with no open invocation, a process that invokes while its
/// previous operation is still open, or after its previous operation ended `info` (see
/// the module documentation), a completion whose `f` or key differs from its
/// invocation's. An `info` completion leaves the operation open forever.
pub fn pair(events: &[Event]) -> Result<Vec<Op>, HistoryError> {
    let mut ops: Vec<Op> = Vec::new();
    // process -> index in `ops` of its open (not yet completed) operation
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    // process -> index in `ops` of the operation that ended it with `info`
    let mut retired: BTreeMap<u64, usize> = BTreeMap::new();
    for (pos, e) in events.iter().enumerate() {
        match e.kind {
            EventType::Invoke => {
                if let Some(&i) = retired.get(&e.process) {
                    return Err(HistoryError {
                        line: e.line,
                        message: format!(
                            "process {} invokes {} after its {} (invoked at line {}) ended :info; \
                             a process whose operation's outcome is unknown never invokes again \
                             (Jepsen goes on with a new process number)",
                            e.process, e.f, ops[i].f, ops[i].line
                        ),
                    });
                }
                if let Some(&i) = open.get(&e.process) {
                    return Err(HistoryError {
                        line: e.line,
                        message: format!(
                            "process {} invokes {} while its {} invoked at line {} has not completed",
                            e.process, e.f, ops[i].f, ops[i].line
                        ),
                    });
                }
                open.insert(e.process, ops.len());
                ops.push(Op {
                    index: ops.len(),
                    process: e.process,
                    f: e.f.clone(),
                    key: e.key.clone(),
                    input: e.value.clone(),
                    output: Value::Nil,
                    outcome: Outcome::Info,
                    call: pos,
                    ret: None,
                    line: e.line,
                    ret_line: 0,
                    time: e.time,
                });
            }
            kind => {
                let Some(i) = open.remove(&e.process) else {
                    return Err(HistoryError {
                        line: e.line,
                        message: format!(
                            "process {} completes ({}) an operation it never invoked",
                            e.process,
                            kind.name()
                        ),
                    });
                };
                let op = &mut ops[i];
                if op.f != e.f {
                    return Err(HistoryError {
                        line: e.line,
                        message: format!(
                            "process {} invoked {} (line {}) but completes {}",
                            e.process, op.f, op.line, e.f
                        ),
                    });
                }
                if e.key.is_some() && e.key != op.key {
                    return Err(HistoryError {
                        line: e.line,
                        message: format!(
                            "process {} invoked {} on key {} (line {}) but completes it on key {}",
                            e.process,
                            op.f,
                            op.key.as_ref().unwrap_or(&Value::Nil),
                            op.line,
                            e.key.as_ref().unwrap_or(&Value::Nil)
                        ),
                    });
                }
                match kind {
                    EventType::Ok | EventType::Fail => {
                        op.outcome = if kind == EventType::Ok {
                            Outcome::Ok
                        } else {
                            Outcome::Fail
                        };
                        op.output = e.value.clone();
                        op.ret = Some(pos);
                        op.ret_line = e.line;
                    }
                    // Stays open for ever: unknown outcome. The process is retired.
                    _ => {
                        op.ret_line = e.line;
                        retired.insert(e.process, i);
                    }
                }
            }
        }
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(process: u64, kind: EventType, f: &str, value: Value, line: usize) -> Event {
        Event {
            process,
            kind,
            f: f.into(),
            key: None,
            value,
            time: None,
            line,
        }
    }

    #[test]
    fn pairs_invocations_with_completions_and_leaves_info_open() {
        let h = vec![
            ev(0, EventType::Invoke, "write", Value::Int(1), 1),
            ev(1, EventType::Invoke, "read", Value::Nil, 2),
            ev(0, EventType::Info, "write", Value::Nil, 3),
            ev(1, EventType::Ok, "read", Value::Int(1), 4),
        ];
        let ops = pair(&h).unwrap();
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].outcome, Outcome::Info);
        assert_eq!(ops[0].ret, None);
        assert_eq!(ops[1].outcome, Outcome::Ok);
        assert_eq!(ops[1].output, Value::Int(1));
        assert_eq!((ops[1].call, ops[1].ret), (1, Some(3)));
    }

    #[test]
    fn a_completion_without_invocation_names_its_line() {
        let h = vec![ev(3, EventType::Ok, "read", Value::Nil, 7)];
        let e = pair(&h).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(e.message.contains("never invoked"), "{e}");
    }

    #[test]
    fn a_double_invocation_is_an_error() {
        let h = vec![
            ev(0, EventType::Invoke, "read", Value::Nil, 1),
            ev(0, EventType::Invoke, "read", Value::Nil, 2),
        ];
        assert_eq!(pair(&h).unwrap_err().line, 2);
    }

    #[test]
    fn a_process_never_invokes_after_info_but_may_after_fail() {
        let retired = vec![
            ev(0, EventType::Invoke, "write", Value::Int(1), 1),
            ev(0, EventType::Info, "write", Value::Nil, 2),
            ev(0, EventType::Invoke, "read", Value::Nil, 3),
        ];
        let e = pair(&retired).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("ended :info"), "{e}");
        let failed = vec![
            ev(0, EventType::Invoke, "write", Value::Int(1), 1),
            ev(0, EventType::Fail, "write", Value::Int(1), 2),
            ev(0, EventType::Invoke, "read", Value::Nil, 3),
            ev(0, EventType::Ok, "read", Value::Nil, 4),
        ];
        let ops = pair(&failed).unwrap();
        assert_eq!(ops[0].outcome, Outcome::Fail);
        assert_eq!(ops[1].outcome, Outcome::Ok);
    }

    #[test]
    fn an_ok_completions_value_is_the_operations_value() {
        let h = vec![
            ev(0, EventType::Invoke, "write", Value::Int(1), 1),
            ev(0, EventType::Ok, "write", Value::Nil, 2),
            ev(0, EventType::Invoke, "write", Value::Int(2), 3),
            ev(0, EventType::Ok, "write", Value::Int(3), 4),
            ev(0, EventType::Invoke, "write", Value::Int(4), 5),
            ev(
                0,
                EventType::Info,
                "write",
                Value::Str(":timed-out".into()),
                6,
            ),
        ];
        let ops = pair(&h).unwrap();
        let values: Vec<&Value> = ops.iter().map(Op::value).collect();
        assert_eq!(values, [&Value::Int(1), &Value::Int(3), &Value::Int(4)]);
    }

    #[test]
    fn values_print_as_edn() {
        let v = Value::List(vec![Value::Int(1), Value::Str("a\"b".into()), Value::Nil]);
        assert_eq!(v.to_string(), "[1 \"a\\\"b\" nil]");
    }
}
