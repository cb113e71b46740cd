//! The timeline picture of a run (`tenure run --timeline OUT.html`, and one per failure
//! in `tenure fuzz`): one self-contained HTML file, no network access needed.
//!
//! True time runs left to right; each node has a lane labelled with its id and role.
//! Drawn in: role beliefs (leader, candidate, follower) and lock beliefs (`Holds` until
//! `Releases` or a crash), leases and waits as bars; pauses and down time as bands;
//! crashes, restarts, writes at the resource and clock steps as marks; partitions on a
//! network lane; each node's clock offset (its readings minus true time, from the
//! records' stamps) as a label and sparkline; messages as arrows from send to handling
//! (dropped or lost ones end in a red ×, those that waited for a paused receiver are
//! orange), drawn as per-lane counts wherever they are too dense; each violation as a
//! vertical line at its true time with the records it names ringed, and its explanation.
//!
//! Every element placed in time carries `data-kind`, `data-node` and `data-start-ns` /
//! `data-end-ns` (intervals) or `data-t-ns` (instants), so tests and tools can read the
//! picture back. The output is a pure function of the report: same run, same bytes.
//! All text is escaped. Zoom and scroll (wheel, drag, buttons, a range slider) are a
//! few lines of plain JavaScript; without it the page still shows the whole run.

mod charts;
mod html;
mod model;
pub mod narrative;

pub use html::{esc, ticks, MAX_MESSAGES};
pub use model::{build, Bar, BarKind, ClockTrack, Fate, Mark, Message, Model, NetSegment};

use tenure_core::Cluster;
use tenure_sim::play::Report;

/// The timeline of one run as a complete HTML document.
pub fn render(scenario_name: &str, cluster: &Cluster, report: &Report) -> String {
    let model = model::build(report);
    html::page(scenario_name, cluster, report, &model)
}

#[cfg(test)]
mod tests;
