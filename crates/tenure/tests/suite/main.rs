//! The `tenure` facade's tests, one test binary (issue 38: each test binary links the
//! simulator and the zoo; five of them cost CI minutes of linking). Each module is what
//! was a test file of its own; run one with `cargo test -p tenure --test suite
//! <module>::` (e.g. `one_path::`). `limits.rs` stays a binary of its own: it sets the
//! process-wide run limits (`tenure_scenario::set_limits`), which would stop the other
//! tests' runs.

mod declared;
mod one_path;
mod profile;
mod simulation;
