//! The real runtime's integration tests on loopback, one test binary (each file a
//! module; CI time, issue 38).

mod common;
mod raft_on_loopback;
mod stream_on_loopback;
