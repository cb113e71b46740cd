//! Limits on what a scenario may ask for (TigerBeetle's rule: put a limit on
//! everything). A file over a limit is rejected like any other bad input: exit 2, an
//! error naming the field, the value and the limit, and how to raise the limit.
//!
//! | limit | default | raised with |
//! |---|---|---|
//! | `duration` (simulated) | 1h | `--max-duration` |
//! | nodes in the cluster | 2,048 | `--max-nodes` |
//! | `[[fault]]` events | 10,000 | `--max-faults` |
//! | clock drift | from -0.99 to 100 | (fixed: a clock 100 times fast is no clock) |
//! | clock offset, jumps | within ±100 days | (fixed) |
//!
//! The process-wide limits are set once by the CLI ([`set_limits`]) and read by
//! [`crate::parse`] and [`crate::Scenario::resolve_cluster`]; code that wants other
//! limits for one call uses [`crate::parse_with`].

use std::sync::OnceLock;
use std::time::Duration;

/// The bounds a scenario must stay within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest `duration` (simulated time).
    pub max_duration: Duration,
    /// The most nodes a cluster may have, all roles together.
    pub max_nodes: u32,
    /// The most `[[fault]]` events in one file.
    pub max_fault_events: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_duration: Duration::from_secs(3600),
        max_nodes: 2048,
        max_fault_events: 10_000,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// The lowest clock drift a scenario may give (a clock at 1% of true speed).
pub const MIN_DRIFT: f64 = -0.99;
/// The highest clock drift a scenario may give (a clock 101 times as fast as true time).
pub const MAX_DRIFT: f64 = 100.0;
/// The largest clock offset or jump, either way: 100 days in nanoseconds.
pub const MAX_CLOCK_STEP_NS: i64 = 100 * 24 * 3600 * 1_000_000_000;

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Sets the process-wide limits (once, before any scenario is read; later calls are
/// ignored and return `false`).
pub fn set_limits(limits: Limits) -> bool {
    LIMITS.set(limits).is_ok()
}

/// The process-wide limits: those given to [`set_limits`], else [`Limits::DEFAULT`].
pub fn limits() -> Limits {
    LIMITS.get().copied().unwrap_or_default()
}
