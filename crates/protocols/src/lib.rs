//! tenure-protocols

pub mod leader_lease;

#[cfg(test)]
mod coord_testkit;
