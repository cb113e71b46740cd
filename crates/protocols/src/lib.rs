//! tenure-protocols

pub mod leader_lease;
pub mod resource;
pub mod workload;

#[cfg(test)]
mod coord_testkit;
