//! tenure-protocols

pub mod resource;
pub mod workload;
