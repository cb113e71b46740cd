//! tenure-core: the vocabulary every other tenure crate speaks.
//!
//! * [`NodeId`] and [`Cluster`]: who is in the run and which role each node plays.
//! * [`SimTime`] (true time, known only to the simulator) and [`LocalTime`] (what a
//!   node's own clock reads).
//! * The environment a protocol sees ([`Env`]: [`Clock`], [`Network`], [`Timers`],
//!   [`Storage`], [`Rng`], [`Observe`]) and [`Step`], the environment that records a
//!   handler's effects as data, used by the simulator, the model explorer and unit tests.
//! * The sans-IO [`Protocol`] trait.
//! * The [`Observation`] vocabulary that checkers judge, and the [`History`] of a run.
//!
//! Nothing here reads a real clock, opens a socket or draws from a global RNG.

mod assumptions;
mod beliefs;
#[cfg(test)]
mod builders_tests;
mod catalogue;
mod cluster;
mod env;
pub mod model;
mod observation;
mod protocol;
mod time;

pub use assumptions::{Assumptions, Broken, Limit, Promise};
pub use beliefs::{Aim, Beliefs, Selected};
pub use catalogue::{
    names as catalogue_names, variant_mismatches, Catalogue, NoRealProtocols, RealCatalogue,
    RealVisitor, Visitor,
};
pub use cluster::{Cluster, ClusterError, NodeId, RoleSpec};
pub use env::{
    Clock, Effect, Env, Network, Observe, Rng, SplitMix64, Step, StepHost, Storage, StorageExt,
    StorageMap, SyncError, Timers,
};
pub use observation::{FieldValue, History, Observation, OpOutcome, OpValue, Record, RunInfo};
pub use protocol::{
    roles, Byzantine, Configurable, ParamError, Protocol, ProtocolInfo, Request, RoleInfo,
    RoleKind, Roles, Transport, Variant, VariantInfo,
};
pub use time::{
    format_duration, parse_duration, HumanDuration, LocalTime, SignedDuration, SimTime,
};
