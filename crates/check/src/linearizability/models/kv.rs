//! `kv`: a key-value map with `get`, `put` and `append` (Porcupine's kv model,
//! `porcupine_test.go`, `kvModel`). Every operation names its key (`:key`); keys are
//! checked independently (P-compositionality), so the state is one key's value.
//!
//! A missing key reads as `nil` or as the empty string (Porcupine's kv histories read
//! `""`). `append s` appends the string `s`. A failed or unknown `get` is left out; a
//! failed `put`/`append` is left out; an unknown one may take effect any time after its
//! invocation, or never.

use crate::linearizability::history::{Op, Outcome, Value};
use crate::linearizability::model::{unknown_f, Model, PrepareResult, Prepared};

pub const NAME: &str = "kv";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Get,
    Put(Value),
    Append(String),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Kv;

fn same(read: &Value, state: &Value) -> bool {
    match (read, state) {
        (Value::Str(s), Value::Nil) | (Value::Nil, Value::Str(s)) => s.is_empty(),
        _ => read == state,
    }
}

impl Model for Kv {
    type State = Value;
    type Input = Input;
    /// What a get returned (`None` for put and append).
    type Output = Option<Value>;

    fn name(&self) -> &'static str {
        NAME
    }

    fn init(&self) -> Value {
        Value::Nil
    }

    fn prepare(&self, op: &Op) -> PrepareResult<Input, Option<Value>> {
        let Some(key) = op.key.clone() else {
            return Err(format!("kv operation {} has no :key", op.f));
        };
        let input = match (op.f.as_str(), op.outcome) {
            ("get", Outcome::Ok) => {
                return Ok(Some(Prepared {
                    key: Some(key),
                    input: Input::Get,
                    output: Some(op.output.clone()),
                }))
            }
            ("get", _) | ("put" | "append", Outcome::Fail) => return Ok(None),
            ("put", _) => Input::Put(op.value().clone()),
            ("append", _) => match op.value() {
                Value::Str(s) => Input::Append(s.clone()),
                v => return Err(format!("append needs a string, got {v}")),
            },
            _ => return Err(unknown_f(NAME, op, "get, put or append")),
        };
        Ok(Some(Prepared {
            key: Some(key),
            input,
            output: None,
        }))
    }

    fn step(&self, state: &Value, input: &Input, output: &Option<Value>) -> Option<Value> {
        match input {
            Input::Get => output
                .as_ref()
                .is_some_and(|v| same(v, state))
                .then(|| state.clone()),
            Input::Put(v) => Some(v.clone()),
            Input::Append(s) => match state {
                Value::Nil => Some(Value::Str(s.clone())),
                Value::Str(old) => Some(Value::Str(format!("{old}{s}"))),
                _ => None,
            },
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
    fn appends_accumulate_per_key() {
        let ok = History::new()
            .invoke_k(0, "append", "a", "x")
            .ok_k(0, "append", "a", "x")
            .invoke_k(1, "append", "b", "y")
            .ok_k(1, "append", "b", "y")
            .invoke_k(0, "append", "a", "z")
            .ok_k(0, "append", "a", "z")
            .invoke_k(1, "get", "a", ())
            .ok_k(1, "get", "a", "xz")
            .invoke_k(1, "get", "c", ())
            .ok_k(1, "get", "c", "");
        assert!(check_model("kv", &ok).is_linearizable());
    }

    #[test]
    fn a_get_that_misses_an_acknowledged_append_is_a_violation() {
        let bad = History::new()
            .invoke_k(0, "append", "a", "x")
            .ok_k(0, "append", "a", "x")
            .invoke_k(1, "get", "a", ())
            .ok_k(1, "get", "a", "");
        let r = check_model("kv", &bad);
        assert!(r.is_violation(), "{r:?}");
        let cx = r.counterexample.unwrap();
        assert_eq!(cx.key, Some("a".into()));
    }

    #[test]
    fn an_operation_without_a_key_is_an_input_error() {
        let h = History::new().invoke(0, "get", ()).ok(0, "get", ());
        let e = crate::linearizability::testing::prepare_error("kv", &h);
        assert!(e.contains(":key"), "{e}");
    }
}
