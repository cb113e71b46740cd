//! Logs through `tracing`: `RUST_LOG` filters them; each line is stamped with simulated
//! time and, inside a node's task, madsim's `node` span names the node.

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::EnvFilter;

/// Stamps log lines with the simulated time (or `-` outside a simulation).
pub struct SimTimer;

impl FormatTime for SimTimer {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match madsim::time::TimeHandle::try_current() {
            Some(h) => write!(w, "{}", tenure_core::SimTime::from_duration(h.elapsed())),
            None => write!(w, "-"),
        }
    }
}

/// Installs the subscriber: stderr, `RUST_LOG` (default `warn`; madsim's own warning about std's HashMap seed is muted: tenure bans std HashMap in anything that affects a run), simulated time.
pub fn init_logging() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn,madsim=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTimer)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
