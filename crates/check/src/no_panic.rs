//! # no-panic
//!
//! **Property:** the code under test never panics. A panic inside a node (an internal
//! assertion, an `unwrap` on an unexpected state, raft-rs's `fatal!`) is a finding: the
//! host or adapter catches it and records `Panicked { message, input }`, and the node
//! handles nothing more until it restarts.
//!
//! **How it fails:** a library reaches a state its authors assert cannot happen (an
//! upstream bug), or an embedding misuses the library's API.
//!
//! **Source:** the fuzzing tradition (a crash is a bug); raft-rs reports internal errors
//! as panics (`fatal!` in `raft` 0.7.0's `src/lib.rs`).
//!
//! Online: the violation is reported at the `Panicked` record.

use crate::{CheckError, Checker, CheckerInfo, TrueClock, Violation};
use serde::Deserialize;
use tenure_core::{Cluster, Observation, Record, RunInfo};

pub const NAME: &str = "no-panic";

pub const INFO: CheckerInfo = CheckerInfo {
    name: NAME,
    kind: crate::CheckKind::Safety,
    summary: "the code under test never panics",
    property: "no node records Panicked",
    source: "a crash is a bug (fuzzing); raft-rs reports internal errors as panics (fatal!)",
    params: "",
};

/// No parameters.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

pub struct NoPanic {
    clock: TrueClock,
}

impl NoPanic {
    pub fn new(_params: Params, _cluster: &Cluster) -> Result<Self, CheckError> {
        Ok(NoPanic {
            clock: TrueClock::default(),
        })
    }
}

impl Checker for NoPanic {
    fn name(&self) -> &'static str {
        NAME
    }

    fn on_record(&mut self, index: usize, record: &Record) -> Option<Violation> {
        self.clock.advance(NAME, index, record.time);
        let Observation::Panicked { message, input } = &record.obs else {
            return None;
        };
        Some(Violation {
            checker: NAME,
            time: record.time,
            nodes: vec![record.node],
            message: format!(
                "{} panicked at {} handling {input}: {message}",
                record.node, record.time
            ),
            records: vec![index],
        })
    }

    fn finish(&mut self, _info: &RunInfo) -> Option<Violation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{judge_with, At, H};
    use serde_json::Value;
    use tenure_core::Observation;

    #[test]
    fn a_run_without_panics_passes() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(0)
            .started()
            .node(0)
            .leader(1)
            .end_ms(20)
            .history();
        assert_eq!(judge_with("no-panic", Value::Null, &h), None);
    }

    #[test]
    fn a_panic_is_a_violation_with_its_message_and_input() {
        let h = H::nodes(2)
            .at_ms(10)
            .node(1)
            .started()
            .at_ms(12)
            .node(1)
            .obs(Observation::Panicked {
                message: "invalid transition [follower -> leader]".into(),
                input: "tick".into(),
            })
            .history();
        let (at, v) = judge_with("no-panic", Value::Null, &h).unwrap();
        assert_eq!(at, At::Record(1));
        assert_eq!(
            v.message,
            "n1 panicked at 0.012_000s handling tick: invalid transition [follower -> leader]"
        );
    }
}
