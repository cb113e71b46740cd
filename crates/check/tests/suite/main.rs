//! The checkers' integration tests, one test binary (each file a module; CI time, issue
//! 38). `custom.rs` stays a binary of its own: it fills the process-wide registry of
//! custom checkers.

mod differential;
mod knossos;
mod large_history;
mod porcupine_corpus;
