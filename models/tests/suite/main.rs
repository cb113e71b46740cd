//! The model checker's integration tests, one test binary (each file a module; CI time,
//! issue 38).

mod bully;
mod locks;
mod multi_paxos;
mod paxos;
mod pbft;
mod raft;
mod registry;
mod walks;
mod zk_ensemble;
