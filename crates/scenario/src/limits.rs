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
//! | messages in flight at once (the engine's delivery queues) | 1,000,000 | `--max-in-flight` |
//! | trace events kept (`--trace`, timelines, determinism checks) | 2,000,000 | `--max-trace-events` |
//!
//! The process-wide limits are set once by the CLI ([`set_limits`]) and read by
//! [`crate::parse`] and [`crate::Scenario::resolve_cluster`]; code that wants other
//! limits for one call uses [`crate::parse_with`].
//!
//! The last two bound what a *run* holds, not what a file says, so the engine reads
//! them when a run starts. A run with more messages in flight than the limit stops
//! there (a protocol sending faster than it delivers floods the network: without the
//! limit it would fill memory); the trace stops growing at its limit and says so (the
//! run goes on, its verdict is whole). Either is reported as [`Exceeded`]: bad input,
//! exit 2, naming the flag and the limit.

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
    /// The most messages (and client requests) queued for delivery at once, over all
    /// nodes: sent and not yet handled, dropped or lost.
    pub max_in_flight: usize,
    /// The most trace events a run keeps (about 100 bytes each as a JSON line).
    pub max_trace_events: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_duration: Duration::from_secs(3600),
        max_nodes: 2048,
        max_fault_events: 10_000,
        max_in_flight: 1_000_000,
        max_trace_events: 2_000_000,
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

/// A run limit reached during a run (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    /// More than `limit` messages were in flight at once, at true time `at`: the run
    /// stopped there.
    InFlight {
        limit: usize,
        at: tenure_core::SimTime,
    },
    /// The trace reached `limit` events at true time `at` and was cut there; the run
    /// went on.
    TraceEvents {
        limit: usize,
        at: tenure_core::SimTime,
    },
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::InFlight { limit, at } => write!(
                f,
                "more than {limit} messages were in flight at once at {at}, the limit \
                 (--max-in-flight); the run was stopped there. A protocol that sends faster \
                 than it delivers floods the network; raise the limit with --max-in-flight \
                 if that load is meant"
            ),
            Exceeded::TraceEvents { limit, at } => write!(
                f,
                "the trace reached {limit} events at {at}, the limit (--max-trace-events), \
                 and was cut there; raise the limit with --max-trace-events or shorten \
                 `duration`"
            ),
        }
    }
}
