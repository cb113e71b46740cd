//! A small history builder for the unit tests of the models and the search.

use super::history::{pair, Event, EventType, Value};
use super::search::Budget;
use super::{check, Report};

impl From<()> for Value {
    fn from(_: ()) -> Value {
        Value::Nil
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}
impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::Int(i.into())
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.into())
    }
}
impl From<[i32; 2]> for Value {
    fn from(v: [i32; 2]) -> Value {
        Value::List(v.iter().map(|&i| Value::Int(i.into())).collect())
    }
}

/// Events in the order they are added; event `i` is on line `i + 1`.
#[derive(Default)]
pub struct History {
    pub events: Vec<Event>,
}

impl History {
    pub fn new() -> History {
        History::default()
    }

    fn push(
        mut self,
        process: u64,
        kind: EventType,
        f: &str,
        key: Option<Value>,
        value: Value,
    ) -> Self {
        let line = self.events.len() + 1;
        self.events.push(Event {
            process,
            kind,
            f: f.into(),
            key,
            value,
            time: None,
            line,
        });
        self
    }

    pub fn invoke(self, p: u64, f: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Invoke, f, None, v.into())
    }
    pub fn ok(self, p: u64, f: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Ok, f, None, v.into())
    }
    pub fn fail(self, p: u64, f: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Fail, f, None, v.into())
    }
    pub fn info(self, p: u64, f: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Info, f, None, v.into())
    }
    pub fn invoke_k(self, p: u64, f: &str, k: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Invoke, f, Some(k.into()), v.into())
    }
    pub fn ok_k(self, p: u64, f: &str, k: &str, v: impl Into<Value>) -> Self {
        self.push(p, EventType::Ok, f, Some(k.into()), v.into())
    }
}

pub fn check_model(model: &str, h: &History) -> Report {
    let ops = pair(&h.events).expect("a well-formed test history");
    check(model, &ops, &Budget::default()).expect("ops the model understands")
}

pub fn prepare_error(model: &str, h: &History) -> String {
    let ops = pair(&h.events).expect("a well-formed test history");
    check(model, &ops, &Budget::default())
        .expect_err("an op the model rejects")
        .to_string()
}
