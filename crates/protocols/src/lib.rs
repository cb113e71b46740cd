//! tenure-protocols

pub mod etcd_lock;
pub mod leader_lease;
pub mod resource;
pub mod workload;
pub mod zookeeper;

#[cfg(test)]
mod coord_testkit;
