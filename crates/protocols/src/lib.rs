//! tenure-protocols

pub mod fencing;
pub mod idempotency;
pub mod lock_server;
pub mod redis_lock;
pub mod redlock;
pub mod resource;
pub mod workload;
