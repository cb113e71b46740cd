//! The faults of the `field` profile's knobs (`heavy_tail`, `clock_stall`,
//! `clock_slew`, `torn`): heavy-tailed and spiky links, clock stalls, NTP slews and torn
//! power losses. Drawn from a stream of their own ([`field_rng`]) and only when a knob
//! is on, so every other profile draws exactly what it drew before they existed.

use super::{client_weight, ms, round_ms, Drawer};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use tenure_core::{NodeId, SignedDuration};
use tenure_scenario::{Delay, Fault, Latency, LinkSpec, NodeSel};

/// The stream the field faults are drawn from: far from the schedule's (`u64::MAX`)
/// and the power losses' (`u64::MAX - 1`), leaving room for more.
pub(super) fn field_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 16);
    rng
}

impl Drawer<'_> {
    /// Draws the field faults into the timeline; returns the heavy-tailed links (for
    /// the whole run) and the nodes a torn power loss left down, for the heal to
    /// restart (none: each is paired with its restart).
    pub(super) fn draw_field(&mut self, heal_at: Duration) -> Vec<LinkSpec> {
        let p = self.p.clone();
        if p.heavy_tail <= 0.0 && p.clock_stall <= 0.0 && p.clock_slew <= 0.0 && p.torn <= 0.0 {
            return Vec::new();
        }
        let main = std::mem::replace(&mut self.rng, field_rng(self.seed));
        let mut links = Vec::new();
        if self.chance(p.heavy_tail) {
            let cap = p.latency_range[1];
            let nodes: Vec<NodeId> = self.cluster.nodes().collect();
            for (i, a) in nodes.iter().enumerate() {
                for b in &nodes[i + 1..] {
                    if self.rng.gen_bool(0.6) {
                        let latency = self.heavy_delay(cap);
                        links.push(LinkSpec {
                            from: *a,
                            to: *b,
                            both: true,
                            latency: Some(latency),
                            loss: None,
                            duplicate: None,
                        });
                    }
                }
            }
        }
        if self.chance(p.clock_stall) {
            for _ in 0..self.count() {
                let at = self.when();
                let node = self.clock_target();
                let duration = self.log_between(p.stall_range).min(heal_at - at);
                if duration >= ms(1) {
                    self.push(at, Fault::ClockStall { node, duration });
                }
            }
        }
        if self.chance(p.clock_slew) {
            for _ in 0..self.count() {
                let at = self.when();
                let node = self.clock_target();
                let by = self.log_between(p.slew_range).as_nanos() as i64;
                let by = SignedDuration(by * self.sign() as i64);
                self.push(
                    at,
                    Fault::ClockSlew {
                        node,
                        by,
                        ppm: tenure_scenario::DEFAULT_SLEW_PPM,
                    },
                );
            }
        }
        if self.chance(p.torn) {
            for _ in 0..self.count() {
                let at = self.when();
                // As with power losses: the protected resource is not a participant.
                let node = self.pick(|kind| {
                    if kind == tenure_core::RoleKind::Resource {
                        0
                    } else {
                        client_weight(kind)
                    }
                });
                let end = (at + self.log_between(p.outage_range)).min(heal_at);
                if end > at && end - at >= p.outage_range[0] && self.may_go_down(node, at, end) {
                    // Sometimes aimed at whoever holds or waits then (see `aim`).
                    if let Some(sel) = self.reaim_fixed() {
                        if self.may_crash_aimed(at, end) {
                            let fault = Fault::PowerLoss {
                                node: sel,
                                torn: true,
                            };
                            self.crash_aimed(at, end, fault);
                            continue;
                        }
                    }
                    self.down.push((node, at, end));
                    let node = NodeSel::Id(node.0);
                    self.push(at, Fault::PowerLoss { node, torn: true });
                    self.push(end, Fault::Restart { node });
                }
            }
        }
        self.rng = main;
        links
    }

    /// A heavy-tailed or spiky delay for one link, never above `cap`: a base of
    /// 1ms to an eighth of the cap, and a tail up to the cap.
    fn heavy_delay(&mut self, cap: Duration) -> Delay {
        let floor = ms(1).min(cap);
        let base = round_ms(Duration::from_secs_f64(
            self.rng
                .gen_range(floor.as_secs_f64()..=(cap / 8).max(floor).as_secs_f64()),
        ))
        .max(floor);
        match self.rng.gen_range(0..4) {
            0 => Delay::Exponential {
                min: Duration::ZERO,
                mean: base.max(ms(1)),
                max: cap,
            },
            1 => Delay::LogNormal {
                min: Duration::ZERO,
                median: base.max(ms(1)),
                sigma: (self.rng.gen_range(0.3..=1.5f64) * 100.0).round() / 100.0,
                max: cap,
            },
            2 => Delay::Pareto {
                scale: base.max(ms(1)).min(cap),
                shape: (self.rng.gen_range(1.1..=2.5f64) * 100.0).round() / 100.0,
                max: cap,
            },
            _ => {
                // A uniform base with rare spikes that reach up to the cap.
                let spike_max = cap.saturating_sub(base);
                let probability = (self.rng.gen_range(0.001..=0.05f64) * 1000.0).round() / 1000.0;
                Delay::Spikes {
                    base: Box::new(Delay::uniform(floor.min(base), base)),
                    probability,
                    spike: Latency::new(spike_max / 4, spike_max),
                }
            }
        }
    }
}
