//! tenure-models: bounded exhaustive exploration of the *same* protocol code the
//! simulator runs.
//!
//! Random simulation finds likely bugs; exhaustive exploration shows that a small
//! configuration has no merely possible ones. [`Explorer`] drives any
//! [`tenure_core::Protocol`] through [`tenure_core::Step`] (effects as data): it never
//! needs a second, hand-written model of the protocol.
//!
//! * A [`State`] is every node's protocol value (or down), storage, pending timers, the
//!   multiset of in-flight messages, the observations made so far and the fault
//!   budget used. See [`state`] for what is abstracted (timing, clocks, randomness).
//! * From a state the environment may deliver, drop or duplicate any in-flight message,
//!   fire any pending timer, crash a live node or restart a crashed one ([`Action`]),
//!   with drops, duplicates and crashes bounded by [`Bounds`].
//! * [`Explorer::explore`] runs a breadth-first search with deduplication and returns a
//!   [`Report`] with, on failure, a shortest [`Counterexample`] as numbered steps.
//!   [`Explorer::walk`] takes seeded random walks for cheap deep runs.
//! * Properties are the simulator's checkers run over each path's records
//!   ([`property::Checker`]), state invariants such as
//!   [`property::one_leader_at_a_time`], and constraints that bound the state space
//!   such as [`property::stored_at_most`] (Raft's term).
//!
//! Timing-based properties (leases, single leader at a true instant under clock drift)
//! stay with the simulator: here timers fire in any order and clocks are step counters,
//! so no real duration means anything.

mod action;
mod explorer;
pub mod property;
pub mod state;

pub use action::Action;
pub use explorer::{Bounds, Counterexample, Explorer, Report, WalkFailure, WalkReport};
pub use state::{NodeState, State};
pub mod toy;
