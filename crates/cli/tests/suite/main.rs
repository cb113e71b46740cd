//! The CLI's tests, one test binary (issue 38: each test binary links the simulator, the
//! zoo and the CLI, so nineteen of them cost CI minutes of linking). Each module is
//! what was a test file of its own; run one with `cargo test -p tenure-cli --test suite
//! <module>::` (e.g. `book::` for the book's commands).

mod common;

mod book;
mod check_history;
mod ci_templates;
mod cli;
mod cluster;
mod compare_log;
mod compare_timeline;
mod compare_updates;
mod contention_cli;
mod declared;
mod experiment;
mod fuzz_cli;
mod junit;
mod list;
mod mutation;
mod one_voice;
mod readme;
mod real;
mod robust;
mod run_history;
