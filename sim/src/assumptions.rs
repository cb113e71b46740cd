//! The declared assumptions a scenario goes beyond: `tenure run` names them before and in
//! its verdict, and `fuzz` for the schedules it draws, through this one function.

use tenure_core::{format_duration, Assumptions, Broken};
use tenure_scenario::Scenario;

/// The declared assumptions a scenario's faults go beyond: drifts above `max_drift`,
/// wall-clock steps above `max_wall_jump`, pauses above `max_pause`, and restarts sooner
/// than `min_restart_delay` after a crash. Empty when every fault is within them.
pub fn broken_assumptions(case: &Scenario, assumptions: &Assumptions) -> Vec<Broken> {
    use tenure_scenario::{Fault, NodeSel};
    let who = |n: &NodeSel| match n {
        NodeSel::Id(i) => format!("n{i}"),
        role => format!("the {role}"),
    };
    let mut out = Vec::new();
    for c in &case.clocks {
        out.extend(assumptions.drift(c.drift, format!("drift {} of {}", c.drift, c.node)));
    }
    out.extend(assumptions.latency(
        case.network.latency.max(),
        format!(
            "message delay up to {}",
            format_duration(case.network.latency.max())
        ),
    ));
    for l in &case.network.links {
        if let Some(latency) = &l.latency {
            out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "delay up to {} on the link {} -> {}",
                    format_duration(latency.max()),
                    l.from,
                    l.to
                ),
            ));
        }
    }
    out.extend(assumptions.fsync(
        case.disk.fsync.max,
        format!("disk syncs up to {}", format_duration(case.disk.fsync.max)),
    ));
    for d in &case.disk.nodes {
        out.extend(assumptions.fsync(
            d.fsync.max,
            format!(
                "syncs up to {} on the disk of {}",
                format_duration(d.fsync.max),
                d.node
            ),
        ));
    }
    for e in &case.faults {
        match &e.fault {
            Fault::Network {
                latency: Some(latency),
                ..
            } => out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "message delay up to {} from {}",
                    format_duration(latency.max()),
                    format_duration(e.at)
                ),
            )),
            Fault::SlowLink {
                from,
                node,
                latency,
                ..
            } => out.extend(assumptions.latency(
                latency.max(),
                format!(
                    "delay up to {} on the link {} -> {} from {}",
                    format_duration(latency.max()),
                    who(from),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            _ => {}
        }
    }
    // Byzantine nodes count by who they are, however often each is turned.
    let mut byzantine: Vec<String> = Vec::new();
    for e in &case.faults {
        if let Fault::Byzantine { node, .. } = &e.fault {
            let name = who(node);
            if !byzantine.contains(&name) {
                byzantine.push(name);
            }
        }
    }
    if !byzantine.is_empty() {
        out.extend(assumptions.byzantine(
            u32::try_from(byzantine.len()).unwrap_or(u32::MAX),
            format!(
                "{} Byzantine node{} ({})",
                byzantine.len(),
                if byzantine.len() == 1 { "" } else { "s" },
                byzantine.join(", ")
            ),
        ));
    }
    let mut crashed: Vec<(String, std::time::Duration)> = Vec::new();
    for e in &case.faults {
        match &e.fault {
            Fault::ClockDrift { node, drift } => out.extend(assumptions.drift(
                *drift,
                format!(
                    "drift {drift} of {} at {}",
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::ClockJump { node, by } => {
                let (size, signed) = wall_step(by.0);
                out.extend(assumptions.wall_jump(
                    size,
                    format!("wall-clock step {signed} of {} at {}", who(node), format_duration(e.at)),
                ))
            }
            // A stalled clock stands still while true time runs: for its length, a rate
            // error of 100%, past any declared drift bound.
            Fault::ClockStall { node, duration } => out.extend(assumptions.drift(
                1.0,
                format!(
                    "clock stall {} of {} at {} (its clock stands still: a rate error of 100% for that long)",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            // A slew changes the wall clock's rate by `ppm` and moves it by `by` in all.
            Fault::ClockSlew { node, by, ppm } => {
                let (size, signed) = wall_step(by.0);
                out.extend(assumptions.wall_jump(
                    size,
                    format!("wall-clock slew {signed} of {} at {}", who(node), format_duration(e.at)),
                ));
                out.extend(assumptions.drift(
                    ppm / 1e6,
                    format!(
                        "wall-clock slew rate {ppm}ppm of {} at {}",
                        who(node),
                        format_duration(e.at)
                    ),
                ));
            }
            Fault::DiskStall { node, duration } => out.extend(assumptions.pause(
                *duration,
                format!(
                    "disk stall {} of {} at {} (its handlers wait as in a pause)",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::Pause { node, duration } => out.extend(assumptions.pause(
                *duration,
                format!(
                    "pause {} of {} at {}",
                    format_duration(*duration),
                    who(node),
                    format_duration(e.at)
                ),
            )),
            Fault::Partition { .. }
            | Fault::Isolate { .. }
            | Fault::Cut { .. }
            | Fault::OneWay { .. }
            | Fault::Bridge { .. } => out.extend(assumptions.network_fault(format!(
                "a {} at {}",
                e.fault.kind(),
                format_duration(e.at)
            ))),
            Fault::Network {
                loss: Some(loss), ..
            } if *loss > 0.0 => out.extend(assumptions.network_fault(format!(
                "message loss {loss} from {}",
                format_duration(e.at)
            ))),
            Fault::Crash { node } => crashed.push((who(node), e.at)),
            Fault::Restart { node } => {
                let name = who(node);
                if let Some(i) = crashed.iter().position(|(n, _)| *n == name) {
                    let (_, at) = crashed.remove(i);
                    let down = e.at.saturating_sub(at);
                    out.extend(assumptions.restart_delay(
                        down,
                        format!(
                            "{name} restarted {} after its crash at {}",
                            format_duration(down),
                            format_duration(at)
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// A wall-clock step of `by` nanoseconds: its size, and in words with its sign (`+1m`).
fn wall_step(by: i64) -> (std::time::Duration, String) {
    let size = std::time::Duration::from_nanos(by.unsigned_abs());
    let sign = if by < 0 { "-" } else { "+" };
    (size, format!("{sign}{}", format_duration(size)))
}
