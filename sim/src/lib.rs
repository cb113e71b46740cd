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
//! This is the only crate that knows madsim.

mod checked;
pub mod clock;
mod control;
pub mod experiment;
pub mod fuzz;
mod host;
pub mod log;
pub mod net;
pub mod play;
pub mod registry;
pub mod rng;
mod run;
pub mod timeline;
pub mod trace;
mod world;

pub use checked::CheckedRun;
pub use control::{Action, Control};
pub use net::{DropReason, LinkOverride, LinkSettings};
pub use play::{judge, simulation, Prepared, Report, RunOptions};
pub use run::{RunOutput, Sim};
pub use trace::{trace_hash, TraceEvent};
pub use world::{RecordHook, Stats, Status};
