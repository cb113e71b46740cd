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

mod checked;
pub mod clock;
mod control;
mod host;
pub mod log;
pub mod net;
pub mod play;
pub mod protocols;
pub mod rng;
mod run;
pub mod trace;
mod world;

pub use checked::CheckedRun;
pub use control::{Action, Control};
pub use net::{DropReason, LinkOverride, LinkSettings};
pub use play::{apply, build_checkers, judge, simulation, Prepared, Report, RunOptions};
pub use protocols::{Entry, Protocols};
pub use run::{RunOutput, Sim};
pub use trace::{trace_hash, TraceEvent};
pub use world::{RecordHook, Stats, Status};
