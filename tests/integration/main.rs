//! Workspace integration tests, one module per topic.

mod actions_vs_beliefs;
mod author_guide;
mod checkers_trusted;
mod determinism;
mod etcd_service;
mod fuzz;
mod lease_opportunities;
mod narrative;
mod public_api;
mod redis_expiry;
mod scenarios;
mod shrink_same_seed;
mod support;
mod timeline;
mod trust;
mod walks_vs_fuzz;
mod zk_ensemble;
mod zoo;
