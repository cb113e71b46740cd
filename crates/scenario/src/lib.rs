//! tenure-scenario
mod error;
mod model;
mod serde_util;
pub use error::{locate, ScenarioError};
pub use model::*;
