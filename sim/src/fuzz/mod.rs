//! Fuzzing: fault profiles drawn from the seed ([`profile`]).

pub mod profile;

pub use profile::{fuzz_rng, Drawn, Profile, DEFAULT_PROFILE, PROFILE_NAMES};
