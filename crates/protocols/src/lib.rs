//! tenure-protocols: the protocol zoo, one module per system, each with its correct
//! version and its known-broken variants (see each module's `info()`), written sans-IO
//! against [`tenure_core::Env`].
//!
//! Elections and leases:
//! * [`raft`]: Raft leader election (terms, votes, the up-to-date rule), with optional
//!   PreVote and CheckQuorum.
//! * [`bully`]: the Bully algorithm (highest id wins).
//! * [`leader_lease`] (`leader-lease`): a leader holding a majority-granted lease that
//!   a successor waits out.
//! * [`paxos`]: single-decree Paxos (proposers, acceptors, learners), one decision per
//!   instance.
//!
//! Shared pieces: [`backoff`], the retry policies (none, constant, exponential, the
//! three jitters of Brooker 2015, adaptive AIMD) that lock clients and elections use.
//!
//! Locks, fencing and idempotency:
//! * [`resource`]: the protected resource (a counter per name, fenced or not) that
//!   lock protocols embed as their `storage` role.
//! * [`workload`]: the lock-client workload (acquire, read-modify-write, release,
//!   think) over a small [`workload::LockApi`] trait.
//! * [`lock_server`]: a Redis-like lock server (`SET NX PX`, compare-and-delete, `DEL`,
//!   fencing tokens).
//! * [`multi_lock`] (`multi-lock`): clients that need k of m locks at once (hold and
//!   wait or try-lock, in a global order or not), for deadlocks and contention.
//! * [`sharded_lock`] (`sharded-lock`): a lock service sharded by a consistent-hash
//!   ring with virtual nodes; join/leave hand ownership over (fenced or not).
//! * [`versioned_store`] (`versioned-store`): optimistic concurrency, read-modify-write
//!   with compare-and-set on a versioned store, the alternative to locks.
//! * [`redis_lock`] (`redis-lock`), [`redlock`] (`redlock`), [`fencing`] (`fencing`),
//!   [`idempotency`] (`idempotency`).
//! * [`zookeeper`] (`zookeeper`): sessions, ephemeral sequential znodes and watches, with
//!   the election and lock recipes; [`etcd_lock`] (`etcd-lock`): leases, revisions as
//!   fencing tokens.

pub mod backoff;
pub mod bully;
pub mod consul_session;
pub mod etcd_lock;
pub mod etcd_service;
pub mod fencing;
pub mod idempotency;
pub mod leader_lease;
pub mod lock_server;
pub mod multi_lock;
pub mod multi_paxos;
pub mod paxos;
pub mod pbft;
pub mod promises;
pub mod raft;
pub mod raft_log;
pub mod redis_failover;
pub mod redis_lock;
pub mod redlock;
pub mod resource;
pub mod sharded_lock;
pub mod util;
pub mod versioned_store;
pub mod workload;
pub mod zk_ensemble;
pub mod zookeeper;

#[cfg(test)]
mod testkit;
