//! Experiments: many seeded simulations of one setup, summarised as numbers and plots.
//!
//! * [`election_time`]: the Raft paper's leader-election measurement (Ongaro and
//!   Ousterhout, "In Search of an Understandable Consensus Algorithm (Extended
//!   Version)", §9.3 and Figure 16; Ongaro's thesis, chapter 9): crash the leader of
//!   five servers and time how long the cluster is without one, for several election
//!   timeout ranges.
//! * [`summary`]: percentiles of a set of trials (trials that never finished count as
//!   longer than any that did), as a table and as JSON.
//! * [`plot`]: cumulative distribution plots as self-contained SVG.
//!
//! Every trial is a seeded simulation whose seed is derived from the experiment's
//! parameters and the trial's index, so the output is the same on every run and for
//! any number of worker threads.

pub mod election_time;
pub mod plot;
pub mod summary;
