//! tenure-protocols

pub mod lock_server;
pub mod resource;
pub mod workload;
