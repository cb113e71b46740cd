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
//!   fire any pending timer, crash a live node or restart a crashed one, isolate a node
//!   for an instant (every message in flight to or from it lost at once), let time
//!   leap past every deadline, or turn a live node of the cluster's first role Byzantine
//!   (`Protocol::on_byzantine`, with one of [`Bounds::behaviours`]) ([`Action`]), with
//!   drops, duplicates, crashes, isolations, leaps and Byzantine nodes bounded by [`Bounds`] (the
//!   registry allows no more Byzantine nodes than the protocol declares it tolerates,
//!   `max-byzantine`).
//! * [`Explorer::explore`] runs a breadth-first search with deduplication and returns a
//!   [`Report`] with, on failure, a shortest [`Counterexample`] as numbered steps.
//!   [`Explorer::walk`] takes seeded random walks for cheap deep runs; with
//!   [`Explorer::shrinking`] a walk's counterexample is shrunk to a locally minimal one.
//! * Properties are the simulator's checkers run over each path's records
//!   ([`property::Checker`]), every safety checker also finished at every state as if
//!   the run ended there (so an overlap of actions still under way is seen; see
//!   [`property`]), state invariants such as
//!   [`property::one_leader_at_a_time`], and constraints that bound the state space
//!   such as [`property::stored_at_most`] (Raft's term).
//!
//! * [`registry`]: the zoo by name with the model settings under which exploring each
//!   protocol means something; [`check_model`] / [`walk_model`] run a [`Query`]
//!   (what `tenure check-model` calls). `cargo run --release -p tenure-models --example
//!   zoo` explores every registry variant with its defaults.
//!
//! Timing-based properties (leases, single leader at a true instant under clock drift)
//! stay with the simulator: here timers fire in any order (or, with
//! [`TimerModel::Quiet`], only when the network is quiet) and clocks are step counters
//! or frozen ([`ClockModel`]), so no real duration means anything.
//!
//! # Measured (2-core shared machine, `--release`, one thread)
//!
//! | configuration | unique states | max depth | time | states/s |
//! |---|---|---|---|---|
//! | Raft correct, 3 servers, terms ≤ 1, 1 crash (complete) | 35,177 | 19 | 0.58 s | ≈61k |
//! | Raft correct, 3 servers, terms ≤ 2, 1 crash, depth ≤ 8 | 69,959 | 8 | 1.5 s (test profile) | ≈48k |
//! | Raft forget-vote found (shortest) | 3,536 | 8 | 0.09 s | |
//! | Raft no-step-down found (shortest) | 268 | 5 | 0.01 s | |
//! | Bully, 3 nodes, quiet timers, no loss (complete, safe) | 268 | 18 | < 0.01 s | |
//! | toy vote, 4 nodes, 1 crash, 1 drop (complete) | 380,642 | 18 | 6.2 s | ≈61k |
//! | fencing correct, 2 clients, 1 leap (complete, safe) | 4,357 | 21 | 0.08 s | ≈52k |
//! | fencing unfenced found (shortest) | 3,104 | 15 | 0.05 s | |
//! | redis-lock correct, 3 clients, 1 duplicate, depth ≤ 16 | 74,455 | 16 | 1.9 s | ≈39k |
//! | redis-lock correct, same, no depth bound (complete) | 369,423 | 33 | 18 s | ≈21k |
//! | redis-lock plain-del-release found (shortest) | 38,084 | 14 | 0.9 s | |
//! | redis-lock release-before-write found (shortest) | 12,367 | 10 | 0.2 s | |
//! | etcd-lock correct, quiet timers, depth ≤ 20 | 70,170 | 20 | 1.2 s | ≈57k |
//! | zookeeper correct (lock), quiet timers, depth ≤ 40 | 54,382 | 40 | 0.9 s | ≈59k |
//! | idempotency correct, 1 crash, 1 duplicate (complete) | 306 | 16 | < 0.01 s | |
//! | PBFT correct, 4 replicas, 2 clients, 1 Byzantine, views <= 1, depth <= 6 | 24,165 | 6 | 1.6 s, 0.5 GiB | ≈16k |
//! | PBFT small-quorum, 3 replicas, same, depth <= 7 | 58,526 | 7 | 7.2 s, 1.2 GiB | ≈8k |
//! | PBFT small-quorum found by walks, shrunk 28 -> 11 steps (seed 20) | | 11 | 0.02 s | |
//! | PBFT small-quorum found (shortest), 4 replicas, its own bounds | 3,947,013 | 11 | 139 s, 192 MB | ≈28k |
//! | Paxos forget-promise found (shortest), 1 crash, its own bounds | 28,372,768 | 18 | 582 s, 1.1 GB | ≈49k |
//!
//! The search keeps each state as a 12-byte entry (its parent and the number of the
//! step from it) and a fingerprint, and rebuilds a state from its parent's when it
//! expands it, so memory grows by about 40 bytes a state whatever the state's size
//! (PBFT's are about 20 KiB: every replica's log, certificates and stored JSON). Before
//! it kept every frontier state whole: PBFT ran out of 8 GiB at depth 9 and Paxos with
//! a crash held 2.1 million states in 14 GiB.
//!
//! Raft with terms ≤ 2 and no depth bound is beyond 3 million states.
//!
//! # Why not stateright
//!
//! `models/compare-stateright` (its own workspace, so stateright never enters tenure's
//! lock file) drives stateright 0.30's BFS checker over the very same `State::actions` /
//! `State::apply`. Both find exactly the same unique-state counts (a cross-check), and
//! single-threaded speed is close: on the Raft configuration above 61k vs 63k unique
//! states/s; on the 4-node toy 61k vs 74–103k (noisy machine). The cost is in running
//! handlers and cloning/hashing states, which both share. What stateright would add is
//! multi-threaded search; what it lacks for tenure: properties are `fn` pointers over a
//! single state (no path checkers fed `Record`s, which is how the simulator's checkers
//! judge), no fault budgets or constraints beyond `within_boundary`, and a dependency
//! tree (dashmap, tiny_http, crossbeam...) for a loop of about 100 lines.

mod action;
mod explorer;
pub mod property;
pub mod registry;
pub mod state;

pub use action::Action;
pub use explorer::{
    Counterexample, Explorer, Progress, Report, WalkDepth, WalkFailure, WalkReport, PROGRESS_EVERY,
};
pub use registry::{ModelEntry, ModelError, Models, Query};
pub use state::{NodeState, State};
pub use tenure_core::model::{Bounds, ClockModel, ModelSpec, SeenModel, TimerModel};
pub mod toy;
