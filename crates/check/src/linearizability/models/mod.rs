//! The sequential models, one file each.

pub mod cas_register;
pub mod fencing;
pub mod kv;
pub mod mutex;
pub mod register;
