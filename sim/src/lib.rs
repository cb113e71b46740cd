//! tenure-sim: runs sans-IO protocols on madsim, one madsim node per protocol node.
//!
//! * Every node has its own clock ([`clock::NodeClock`]): offset, drift, wall jumps.
//!   Timers fire when the node's *own* monotonic clock reaches them.
//! * The network ([`net::Network`]) decides each message's fate at send time: latency
//!   from a range, loss, duplication, partitions of every shape.
//! * Faults are verbs on [`Control`], scheduled at true times with [`Sim::at`].
//! * Each node task sleeps until its next due item (a per-node delivery heap and its
//!   timers) or until its doorbell rings; see ARCHITECTURE.md for why this transport
//!   and not madsim's `Endpoint`.
//!
//! This is the only crate that knows madsim, and it is the engine only: it knows no
//! protocol by name (a [`Protocols`] built from a catalogue says which exist) and nothing
//! of fuzzing, timelines or experiments, which live above it (`tenure-fuzz`,
//! `tenure-timeline`, `tenure-experiment`) and use this public API.

// One clear error instead of hundreds deep inside: the simulator runs on madsim's
// simulated runtime, which is selected by `--cfg madsim`.
#[cfg(not(madsim))]
compile_error!(
    "tenure's simulator must be built with `--cfg madsim`. Add to your workspace's \
     .cargo/config.toml:\n\n[build]\nrustflags = [\"--cfg\", \"madsim\"]\n"
);

#[cfg(madsim)]
mod assumptions;
mod checked;
#[cfg(madsim)]
pub mod clock;
#[cfg(madsim)]
mod control;
#[cfg(madsim)]
mod host;
#[cfg(madsim)]
pub mod log;
#[cfg(madsim)]
pub mod net;
#[cfg(madsim)]
pub mod play;
#[cfg(madsim)]
pub mod protocols;
#[cfg(madsim)]
pub mod rng;
#[cfg(madsim)]
mod run;
#[cfg(madsim)]
pub mod trace;
#[cfg(madsim)]
mod world;

#[cfg(madsim)]
pub use assumptions::broken_assumptions;
pub use checked::CheckedRun;
#[cfg(madsim)]
pub use control::{Action, Control};
#[cfg(madsim)]
pub use net::{DropReason, LinkOverride, LinkSettings};
#[cfg(madsim)]
pub use play::{
    apply, build_checkers, check_params, judge, simulation, Prepared, Report, RunOptions,
};
#[cfg(madsim)]
pub use protocols::{Entry, Protocols};
#[cfg(madsim)]
pub use run::{RunOutput, Sim};
#[cfg(madsim)]
pub use trace::{trace_hash, TraceEvent};
#[cfg(madsim)]
pub use world::{CrashPoint, DurabilityHint, RecordHook, Stats, Status, MAX_DURABILITY_HINTS};
