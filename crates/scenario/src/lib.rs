//! tenure-scenario
