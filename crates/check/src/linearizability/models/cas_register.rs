//! `cas-register`: a register with compare-and-set, Porcupine's etcd model
//! (`porcupine_test.go`, `etcdModel`) and Knossos's `cas-register`. It starts as `nil`.
//!
//! * `read` returns the value (`nil` if never written); a failed or unknown read is left
//!   out (it had no effect and returned nothing).
//! * `write v` sets it; a failed write is left out; an unknown write may take effect at
//!   any point after its invocation, or never.
//! * `cas [from to]` sets it to `to` if it is `from`. An `ok` cas found `from`; a `fail`
//!   cas did not (as in Porcupine's etcd model, where `:fail` is the compare failing);
//!   an unknown cas may have done either.

use crate::linearizability::history::{Op, Outcome, Value};
use crate::linearizability::model::{unknown_f, Model, PrepareResult, Prepared};

pub const NAME: &str = "cas-register";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Read,
    Write(Value),
    Cas { from: Value, to: Value },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A read's value.
    Read(Value),
    /// A write or cas that succeeded.
    Ok,
    /// A cas whose compare failed.
    Failed,
    Unknown,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct CasRegister;

impl Model for CasRegister {
    type State = Value;
    type Input = Input;
    type Output = Output;

    fn name(&self) -> &'static str {
        NAME
    }

    fn init(&self) -> Value {
        Value::Nil
    }

    fn prepare(&self, op: &Op) -> PrepareResult<Input, Output> {
        let key = op.key.clone();
        let prepared = |input, output| {
            Ok(Some(Prepared {
                key: key.clone(),
                input,
                output,
            }))
        };
        match (op.f.as_str(), op.outcome) {
            ("read", Outcome::Ok) => prepared(Input::Read, Output::Read(op.output.clone())),
            ("read", _) | ("write", Outcome::Fail) => Ok(None),
            ("write", Outcome::Ok) => prepared(Input::Write(op.input.clone()), Output::Ok),
            ("write", Outcome::Info) => prepared(Input::Write(op.input.clone()), Output::Unknown),
            ("cas", outcome) => {
                let Value::List(v) = &op.input else {
                    return Err(format!("cas needs [from to], got {}", op.input));
                };
                let [from, to] = v.as_slice() else {
                    return Err(format!("cas needs [from to], got {}", op.input));
                };
                let output = match outcome {
                    Outcome::Ok => Output::Ok,
                    Outcome::Fail => Output::Failed,
                    Outcome::Info => Output::Unknown,
                };
                prepared(
                    Input::Cas {
                        from: from.clone(),
                        to: to.clone(),
                    },
                    output,
                )
            }
            _ => Err(unknown_f(NAME, op, "read, write or cas")),
        }
    }

    fn step(&self, state: &Value, input: &Input, output: &Output) -> Option<Value> {
        match input {
            Input::Read => match output {
                Output::Read(v) if v == state => Some(state.clone()),
                Output::Unknown => Some(state.clone()),
                _ => None,
            },
            Input::Write(v) => Some(v.clone()),
            Input::Cas { from, to } => {
                let matches = from == state;
                match (output, matches) {
                    (Output::Ok | Output::Unknown, true) => Some(to.clone()),
                    (Output::Failed | Output::Unknown, false) => Some(state.clone()),
                    _ => None,
                }
            }
        }
    }

    fn describe_state(&self, state: &Value) -> String {
        state.to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::linearizability::testing::{check_model, History};

    #[test]
    fn a_cas_that_succeeded_must_have_found_its_expected_value() {
        let ok = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [1, 2])
            .ok(1, "cas", [1, 2])
            .invoke(0, "read", ())
            .ok(0, "read", 2);
        assert!(check_model("cas-register", &ok).is_linearizable());
        let bad = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [3, 2])
            .ok(1, "cas", [3, 2]);
        assert!(check_model("cas-register", &bad).is_violation());
    }

    #[test]
    fn a_failed_cas_must_not_have_found_its_expected_value() {
        let bad = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [1, 2])
            .fail(1, "cas", [1, 2]);
        assert!(check_model("cas-register", &bad).is_violation());
        let ok = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [0, 2])
            .fail(1, "cas", [0, 2])
            .invoke(1, "read", ())
            .ok(1, "read", 1);
        assert!(check_model("cas-register", &ok).is_linearizable());
    }

    #[test]
    fn an_unknown_cas_may_or_may_not_have_happened() {
        for seen in [1, 2] {
            let h = History::new()
                .invoke(0, "write", 1)
                .ok(0, "write", 1)
                .invoke(1, "cas", [1, 2])
                .info(1, "cas", ())
                .invoke(0, "read", ())
                .ok(0, "read", seen);
            assert!(check_model("cas-register", &h).is_linearizable(), "{seen}");
        }
    }

    #[test]
    fn a_malformed_cas_is_an_input_error() {
        let h = History::new().invoke(0, "cas", 3).ok(0, "cas", 3);
        let e = crate::linearizability::testing::prepare_error("cas-register", &h);
        assert!(e.contains("[from to]"), "{e}");
    }
}
