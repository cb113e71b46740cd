//! tenure-protocols: the protocol zoo.
//!
//! Each module is one system, written sans-IO against [`tenure_core::Env`], with its
//! correct version and its known-broken variants (see each module's `info()`):
//!
//! * [`raft`]: Raft leader election (terms, votes, the up-to-date rule), with optional
//!   PreVote and CheckQuorum.
//! * [`bully`]: the Bully algorithm (highest id wins).

pub mod bully;
pub mod raft;
pub mod util;
