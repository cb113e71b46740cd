//! A sequential specification: the object the history is judged against.

use super::history::{Op, Value};
use std::fmt::Debug;
use std::hash::Hash;

/// An operation of the history in the model's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared<I, O> {
    /// Operations on different keys are independent (P-compositionality: a history is
    /// linearizable iff each per-key sub-history is, Herlihy & Wing 1990, theorem 1).
    /// `None`: the model's single object.
    pub key: Option<Value>,
    pub input: I,
    /// What the caller saw, including "unknown" for an `info` completion.
    pub output: O,
}

/// What [`Model::prepare`] makes of an operation: `None` leaves it out.
pub type PrepareResult<I, O> = Result<Option<Prepared<I, O>>, String>;

/// A sequential object: a state, and which (input, output) steps it allows from it.
pub trait Model: Sync {
    type State: Clone + Eq + Hash + Debug;
    type Input: Debug;
    type Output: Debug;

    /// The name users give with `--model`.
    fn name(&self) -> &'static str;
    fn init(&self) -> Self::State;
    /// The operation in the model's terms, `Ok(None)` to leave it out (an operation
    /// that certainly had no effect and whose result says nothing, e.g. a failed read),
    /// or an error naming what is wrong with it (unknown `f`, malformed value).
    fn prepare(&self, op: &Op) -> PrepareResult<Self::Input, Self::Output>;
    /// The state after `input` returned `output` in `state`, or `None` if the object
    /// cannot return that there.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> Option<Self::State>;
    fn describe_state(&self, state: &Self::State) -> String;
}

/// `op.f` is not one of `expected`.
pub(crate) fn unknown_f(model: &str, op: &Op, expected: &str) -> String {
    format!(
        "model {model} has no operation `{}` (expected {expected})",
        op.f
    )
}
