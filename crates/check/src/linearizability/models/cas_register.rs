//! `cas-register`: a register with compare-and-set, Knossos's `cas-register`
//! (`src/knossos/model.clj`, `CASRegister`, commit `9b2c79e9`) and Porcupine's etcd model
//! (`porcupine_test.go`, `etcdModel`). It starts as `nil`.
//!
//! What a completed operation means (see [`crate::linearizability::history`] for the
//! event types):
//!
//! * `read`, `:ok` with value `v`: the register held `v` at one instant of the read's
//!   interval. `nil` means it held nothing: it had never been written (Porcupine's
//!   reading of etcd's "key not found"). Knossos's model instead accepts a `nil` read
//!   anywhere, because Knossos fills a read's unknown result in as `nil`; tenure keeps
//!   "unknown" for `:info`, so a `nil` that a client saw is a value. A failed or unknown
//!   read is left out (it had no effect and returned nothing).
//! * `write v`, `:ok`: set the register to `v`. Failed: left out. Unknown: may set it at
//!   any instant after its invocation, or never.
//! * `cas [from to]`, `:ok`: found `from` and set `to`. Failed: left out, like every
//!   failed operation (it did not take effect; it says nothing about what the register
//!   held). Unknown: may have found `from` and set `to` at any instant after its
//!   invocation, or never taken effect.

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
    /// A write or cas whose outcome is unknown (`:info`).
    Unknown,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct CasRegister;

/// A write's or cas's output: it took effect, or it may have.
fn done(outcome: Outcome) -> Output {
    match outcome {
        Outcome::Ok => Output::Ok,
        _ => Output::Unknown,
    }
}

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
            // Returned nothing (info) or did not take effect (fail).
            ("read", _) | ("write", Outcome::Fail) => Ok(None),
            ("write", outcome) => prepared(Input::Write(op.value().clone()), done(outcome)),
            ("cas", outcome) => {
                let (from, to) = match op.value() {
                    Value::List(v) if v.len() == 2 => (v[0].clone(), v[1].clone()),
                    v => return Err(format!("cas needs [from to], got {v}")),
                };
                if outcome == Outcome::Fail {
                    return Ok(None); // it did not take effect; it says nothing more
                }
                prepared(Input::Cas { from, to }, done(outcome))
            }
            _ => Err(unknown_f(NAME, op, "read, write or cas")),
        }
    }

    fn step(&self, state: &Value, input: &Input, output: &Output) -> Option<Value> {
        match input {
            Input::Read => match output {
                Output::Read(v) if v == state => Some(state.clone()),
                _ => None,
            },
            Input::Write(v) => Some(v.clone()),
            // Ok: it found `from`. Unknown: if it took effect it found `from`; if it
            // never did, it is never placed (the search may leave it out).
            Input::Cas { from, to } => (from == state).then(|| to.clone()),
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
    fn a_failed_cas_did_not_happen_and_constrains_nothing() {
        // Jepsen's :fail: the cas took no effect. Even though the register held 1, the
        // compare "failing" is no contradiction: the op is dropped.
        let h = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [1, 2])
            .fail(1, "cas", [1, 2])
            .invoke(1, "read", ())
            .ok(1, "read", 1);
        assert!(check_model("cas-register", &h).is_linearizable());
        // Nor can it explain a read of its new value.
        let seen = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "cas", [1, 2])
            .fail(1, "cas", [1, 2])
            .invoke(1, "read", ())
            .ok(1, "read", 2);
        assert!(check_model("cas-register", &seen).is_violation());
    }

    #[test]
    fn a_history_whose_only_unplaceable_op_is_a_failed_cas_is_linearizable() {
        // Knossos's mongodb-v0-ack-rollback shape: `process 9: cas([3 4]) -> fail`
        // while the register provably holds 3, then a read of 3 after it. Read as
        // "the compare came back false", no order places the cas; Jepsen's :fail
        // asserts nothing, so the history is linearizable.
        let h = History::new()
            .invoke(0, "write", 3)
            .ok(0, "write", 3)
            .invoke(9, "cas", [3, 4])
            .fail(9, "cas", [3, 4])
            .invoke(0, "read", ())
            .ok(0, "read", 3);
        let r = check_model("cas-register", &h);
        assert!(r.is_linearizable(), "{}", r.text());
        // The same cas acknowledged is the one operation that cannot be placed.
        let mut ok = History::new()
            .invoke(0, "write", 3)
            .ok(0, "write", 3)
            .invoke(9, "cas", [3, 4])
            .ok(9, "cas", [3, 4])
            .invoke(0, "read", ())
            .ok(0, "read", 3);
        let r = check_model("cas-register", &ok);
        assert!(r.is_violation(), "{}", r.text());
        // A failed process may invoke again.
        ok = ok.invoke(9, "cas", [3, 5]).fail(9, "cas", [3, 5]);
        assert!(check_model("cas-register", &ok).is_violation());
    }

    #[test]
    fn a_failed_malformed_cas_is_still_an_input_error() {
        let h = History::new().invoke(0, "cas", 3).fail(0, "cas", 3);
        let e = crate::linearizability::testing::prepare_error("cas-register", &h);
        assert!(e.contains("[from to]"), "{e}");
    }

    #[test]
    fn a_read_of_nil_means_the_register_was_never_written() {
        let h = History::new()
            .invoke(0, "write", 1)
            .ok(0, "write", 1)
            .invoke(1, "read", ())
            .ok(1, "read", ());
        assert!(check_model("cas-register", &h).is_violation());
        let before = History::new()
            .invoke(1, "read", ())
            .ok(1, "read", ())
            .invoke(0, "write", 1)
            .ok(0, "write", 1);
        assert!(check_model("cas-register", &before).is_linearizable());
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
