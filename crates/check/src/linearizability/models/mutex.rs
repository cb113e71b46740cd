//! `mutex`: a lock with `lock` and `unlock` (Knossos's `mutex`, tracking the holder):
//! `lock` succeeds only when nobody holds it, `unlock` only by the process that holds
//! it. Keys, if the history has them, name independent locks.
//!
//! A failed lock or unlock had no effect and is left out; an unknown one may have taken
//! effect at any point after its invocation, or never.

use crate::linearizability::history::{Op, Outcome};
use crate::linearizability::model::{unknown_f, Model, PrepareResult, Prepared};

pub const NAME: &str = "mutex";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    Lock { process: u64 },
    Unlock { process: u64 },
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Mutex;

impl Model for Mutex {
    /// The holder, if any.
    type State = Option<u64>;
    type Input = Input;
    type Output = ();

    fn name(&self) -> &'static str {
        NAME
    }

    fn init(&self) -> Option<u64> {
        None
    }

    fn prepare(&self, op: &Op) -> PrepareResult<Input, ()> {
        let input = match op.f.as_str() {
            "lock" | "acquire" => Input::Lock {
                process: op.process,
            },
            "unlock" | "release" => Input::Unlock {
                process: op.process,
            },
            _ => return Err(unknown_f(NAME, op, "lock or unlock")),
        };
        if op.outcome == Outcome::Fail {
            return Ok(None);
        }
        Ok(Some(Prepared {
            key: op.key.clone(),
            input,
            output: (),
        }))
    }

    fn step(&self, state: &Option<u64>, input: &Input, _: &()) -> Option<Option<u64>> {
        match (input, state) {
            (Input::Lock { process }, None) => Some(Some(*process)),
            (Input::Unlock { process }, Some(holder)) if holder == process => Some(None),
            _ => None,
        }
    }

    fn describe_state(&self, state: &Option<u64>) -> String {
        match state {
            Some(p) => format!("held by process {p}"),
            None => "free".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::linearizability::testing::{check_model, History};

    #[test]
    fn two_overlapping_holders_are_a_violation() {
        let bad = History::new()
            .invoke(0, "lock", ())
            .ok(0, "lock", ())
            .invoke(1, "lock", ())
            .ok(1, "lock", ())
            .invoke(0, "unlock", ())
            .ok(0, "unlock", ());
        assert!(check_model("mutex", &bad).is_violation());
    }

    #[test]
    fn hand_over_in_order_is_linearizable_even_with_concurrent_calls() {
        let ok = History::new()
            .invoke(0, "lock", ())
            .invoke(1, "lock", ())
            .ok(0, "lock", ())
            .invoke(0, "unlock", ())
            .ok(0, "unlock", ())
            .ok(1, "lock", ())
            .invoke(2, "lock", ())
            .fail(2, "lock", ());
        assert!(check_model("mutex", &ok).is_linearizable());
    }

    #[test]
    fn only_the_holder_may_unlock() {
        let bad = History::new()
            .invoke(0, "lock", ())
            .ok(0, "lock", ())
            .invoke(1, "unlock", ())
            .ok(1, "unlock", ());
        assert!(check_model("mutex", &bad).is_violation());
    }
}
