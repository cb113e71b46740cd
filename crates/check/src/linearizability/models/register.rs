//! `register`: a read/write register (Knossos's `register`, Porcupine's register
//! example). It starts as `nil`. A read returns the last value written.
//!
//! An `:ok` read of `nil` means the register was never written (as in `cas-register`).
//! A failed read or write had no effect and is left out; a write with an unknown
//! outcome may take effect at any point after its invocation, or never; a read with an
//! unknown outcome says nothing and is left out.

use crate::linearizability::history::{Op, Outcome, Value};
use crate::linearizability::model::{unknown_f, Model, PrepareResult, Prepared};

pub const NAME: &str = "register";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Read,
    Write(Value),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Register;

impl Model for Register {
    type State = Value;
    type Input = Input;
    /// What a read returned (`None` for a write).
    type Output = Option<Value>;

    fn name(&self) -> &'static str {
        NAME
    }

    fn init(&self) -> Value {
        Value::Nil
    }

    fn prepare(&self, op: &Op) -> PrepareResult<Input, Option<Value>> {
        let key = op.key.clone();
        Ok(match (op.f.as_str(), op.outcome) {
            ("read", Outcome::Ok) => Some(Prepared {
                key,
                input: Input::Read,
                output: Some(op.output.clone()),
            }),
            ("read", _) => None,
            ("write", Outcome::Fail) => None,
            ("write", _) => Some(Prepared {
                key,
                input: Input::Write(op.value().clone()),
                output: None,
            }),
            _ => return Err(unknown_f(NAME, op, "read or write")),
        })
    }

    fn step(&self, state: &Value, input: &Input, output: &Option<Value>) -> Option<Value> {
        match input {
            Input::Read => (output.as_ref() == Some(state)).then(|| state.clone()),
            Input::Write(v) => Some(v.clone()),
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
    fn a_read_concurrent_with_a_write_may_see_either_value() {
        // Porcupine's TestRegisterModel, first example (6.824 2017 quiz 2, VII).
        let h = History::new()
            .invoke(0, "write", 100)
            .invoke(1, "read", ())
            .invoke(2, "read", ())
            .ok(2, "read", ())
            .ok(1, "read", 100)
            .ok(0, "write", 100);
        assert!(check_model("register", &h).is_linearizable());
    }

    #[test]
    fn a_read_after_a_read_of_the_new_value_cannot_see_the_old_one() {
        // Porcupine's TestRegisterModel, second example.
        let h = History::new()
            .invoke(0, "write", 200)
            .invoke(1, "read", ())
            .ok(1, "read", 200)
            .invoke(2, "read", ())
            .ok(2, "read", ())
            .ok(0, "write", 200);
        let r = check_model("register", &h);
        assert!(r.is_violation(), "{r:?}");
    }

    #[test]
    fn a_failed_write_is_never_seen_and_an_unknown_one_may_be() {
        let failed = History::new()
            .invoke(0, "write", 1)
            .fail(0, "write", 1)
            .invoke(1, "read", ())
            .ok(1, "read", 1);
        assert!(check_model("register", &failed).is_violation());
        let unknown = History::new()
            .invoke(0, "write", 1)
            .info(0, "write", 1)
            .invoke(1, "read", ())
            .ok(1, "read", 1)
            .invoke(1, "read", ())
            .ok(1, "read", 1);
        assert!(check_model("register", &unknown).is_linearizable());
        // ...but once seen, it cannot be unseen.
        let unseen = History::new()
            .invoke(0, "write", 1)
            .info(0, "write", 1)
            .invoke(1, "read", ())
            .ok(1, "read", 1)
            .invoke(1, "read", ())
            .ok(1, "read", ());
        assert!(check_model("register", &unseen).is_violation());
    }
}
