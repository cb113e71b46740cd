//! `fencing`: a fencing-token register, the storage side of Kleppmann's fencing
//! ("How to do distributed locking", 2016): a write carries `[token value]` and is
//! accepted only if its token is at least the highest token the register has seen;
//! a read may carry a token (`read token`, or `read nil`) which, once seen, also fences
//! off lower tokens, as tenure's protected resource does (`resource.rs`).
//!
//! * `write [t v]` `ok`: accepted, so `t` was not below the highest token seen; the
//!   value becomes `v`. `fail`: it did not take effect, and, as every failed operation
//!   (Jepsen's `:fail`), it is left out: a refusal says nothing about the tokens seen.
//!   Unknown: accepted at any instant after its invocation, or never.
//! * `read` returns the value; a failed or unknown read is left out.

use crate::linearizability::history::{Op, Outcome, Value};
use crate::linearizability::model::{unknown_f, Model, PrepareResult, Prepared};

pub const NAME: &str = "fencing";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Read { token: Option<i64> },
    Write { token: i64, value: Value },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Read(Value),
    Accepted,
    Unknown,
}

/// The highest token seen and the value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub highest: Option<i64>,
    pub value: Value,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Fencing;

impl Model for Fencing {
    type State = State;
    type Input = Input;
    type Output = Output;

    fn name(&self) -> &'static str {
        NAME
    }

    fn init(&self) -> State {
        State {
            highest: None,
            value: Value::Nil,
        }
    }

    fn prepare(&self, op: &Op) -> PrepareResult<Input, Output> {
        let key = op.key.clone();
        match op.f.as_str() {
            "read" => {
                if op.outcome != Outcome::Ok {
                    return Ok(None);
                }
                let token = match &op.input {
                    Value::Nil => None,
                    Value::Int(t) => Some(*t),
                    v => return Err(format!("read takes a token or nil, got {v}")),
                };
                Ok(Some(Prepared {
                    key,
                    input: Input::Read { token },
                    output: Output::Read(op.output.clone()),
                }))
            }
            "write" => {
                let (token, value) = match op.value() {
                    Value::List(v) if v.len() == 2 && v[0].as_int().is_some() => {
                        (v[0].as_int().unwrap_or_default(), v[1].clone())
                    }
                    v => return Err(format!("write needs [token value], got {v}")),
                };
                let output = match op.outcome {
                    Outcome::Ok => Output::Accepted,
                    Outcome::Fail => return Ok(None),
                    Outcome::Info => Output::Unknown,
                };
                Ok(Some(Prepared {
                    key,
                    input: Input::Write { token, value },
                    output,
                }))
            }
            _ => Err(unknown_f(NAME, op, "read or write")),
        }
    }

    fn step(&self, state: &State, input: &Input, output: &Output) -> Option<State> {
        match input {
            Input::Read { token } => {
                let Output::Read(v) = output else {
                    return None;
                };
                if *v != state.value {
                    return None;
                }
                Some(State {
                    highest: state.highest.max(*token),
                    value: state.value.clone(),
                })
            }
            Input::Write { token, value } => {
                let fresh = state.highest.is_none_or(|h| h <= *token);
                match (output, fresh) {
                    (Output::Accepted | Output::Unknown, true) => Some(State {
                        highest: Some(*token),
                        value: value.clone(),
                    }),
                    // A stale write was not accepted; an unknown one never took effect.
                    _ => None,
                }
            }
        }
    }

    fn describe_state(&self, state: &State) -> String {
        match state.highest {
            Some(t) => format!("{} (highest token {t})", state.value),
            None => format!("{} (no token yet)", state.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::linearizability::testing::{check_model, History};

    #[test]
    fn a_stale_token_accepted_after_a_newer_one_is_a_violation() {
        let bad = History::new()
            .invoke(1, "write", [2, 20])
            .ok(1, "write", [2, 20])
            .invoke(0, "write", [1, 10])
            .ok(0, "write", [1, 10]);
        assert!(check_model("fencing", &bad).is_violation());
        let ok = History::new()
            .invoke(1, "write", [2, 20])
            .ok(1, "write", [2, 20])
            .invoke(0, "write", [1, 10])
            .fail(0, "write", [1, 10])
            .invoke(0, "read", ())
            .ok(0, "read", 20);
        assert!(check_model("fencing", &ok).is_linearizable());
    }

    #[test]
    fn concurrent_writes_may_land_in_either_order_and_a_rejection_says_nothing() {
        let ok = History::new()
            .invoke(0, "write", [1, 10])
            .invoke(1, "write", [2, 20])
            .fail(0, "write", [1, 10])
            .ok(1, "write", [2, 20]);
        assert!(check_model("fencing", &ok).is_linearizable());
        // A refused write with no newer token in sight: Jepsen's :fail means only that
        // it did not take effect, which is no contradiction.
        let refused = History::new()
            .invoke(0, "write", [1, 10])
            .fail(0, "write", [1, 10])
            .invoke(0, "read", ())
            .ok(0, "read", ());
        assert!(check_model("fencing", &refused).is_linearizable());
        // ...and it cannot be seen.
        let seen = History::new()
            .invoke(0, "write", [1, 10])
            .fail(0, "write", [1, 10])
            .invoke(0, "read", ())
            .ok(0, "read", 10);
        assert!(check_model("fencing", &seen).is_violation());
    }
}
