pub mod buggify;
pub mod fs;
pub mod net;
pub mod signal;
pub mod time;

pub use rand;
pub use std::collections;
pub use tokio::{main, task, test};
