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

/// Installs the subscriber: stderr, `RUST_LOG`, simulated time.
///
/// Without `RUST_LOG` the filter is `warn` with madsim muted: its warning about std's
/// HashMap seed does not apply (tenure bans std HashMap in anything that affects a
/// run), and its spans (a `node` and a `task` span, entered on every poll of a task)
/// would cost a large run about a tenth of its time for log lines nothing prints. With
/// `RUST_LOG` set (e.g. `info`), madsim's spans name the node on each line again.
pub fn init_logging() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn,madsim=off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTimer)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
