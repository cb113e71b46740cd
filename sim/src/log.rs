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
///
/// With `RUST_LOG` too, madsim's "failed to initialize std random state, std HashMap
/// will not be deterministic" is muted (unless `RUST_LOG` names `madsim::sim::rand`):
/// madsim warns that it could not seed std's `RandomState` on this platform, which would
/// matter only to code iterating a std `HashMap`, and tenure bans those types where they
/// could affect a run (`clippy.toml`), so determinism does not rest on that seed.
/// Colour only on a terminal (and without `NO_COLOR`), never into a pipe or a file.
pub fn init_logging() {
    let from_env = std::env::var("RUST_LOG").ok();
    let mut filter = from_env
        .as_deref()
        .and_then(|text| EnvFilter::try_new(text).ok())
        .unwrap_or_else(|| EnvFilter::new("warn,madsim=off"));
    if !from_env.is_some_and(|text| text.contains("madsim::sim::rand")) {
        if let Ok(mute) = "madsim::sim::rand=error".parse() {
            filter = filter.add_directive(mute);
        }
    }
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTimer)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(colour)
        .try_init();
}
