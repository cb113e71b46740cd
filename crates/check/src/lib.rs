//! tenure-check
