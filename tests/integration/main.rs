//! Workspace integration tests, one module per topic.

mod checkers_trusted;
mod determinism;
mod scenarios;
mod support;
mod timeline;
