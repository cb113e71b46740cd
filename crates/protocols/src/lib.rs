//! tenure-protocols: the protocol zoo, one module per system, correct and broken
//! variants.
//!
//! Locks, fencing and idempotency:
//! * [`resource`]: the protected resource (a counter per name, fenced or not) that
//!   lock protocols embed as their `storage` role.
//! * [`workload`]: the lock-client workload (acquire, read-modify-write, release,
//!   think) over a small [`workload::LockApi`] trait.
//! * [`lock_server`]: a Redis-like lock server (`SET NX PX`, compare-and-delete, `DEL`,
//!   fencing tokens).
//! * [`redis_lock`] (`redis-lock`), [`redlock`] (`redlock`), [`fencing`] (`fencing`),
//!   [`idempotency`] (`idempotency`).

pub mod fencing;
pub mod idempotency;
pub mod lock_server;
pub mod redis_lock;
pub mod redlock;
pub mod resource;
pub mod workload;
