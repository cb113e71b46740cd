//! tenure-sim
