//! tenure-protocols
