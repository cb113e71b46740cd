//! The simulator's integration tests, one test binary (each file a module; CI time,
//! issue 38). `limits.rs` stays a binary of its own: it sets the process-wide limits.

mod aimed;
mod disk;
mod durability_hints;
mod light;
mod memory;
mod processing;
mod raft_on_sim;
mod stream;
mod time_zero;
