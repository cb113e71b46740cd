//! The `byzantine` knob's faults: nodes that lie from a drawn instant on, as many as the
//! target declares it tolerates (`max-byzantine`, carried into the profile by
//! `Profile::within` as `byzantine_max`). Drawn from a stream of their own
//! ([`byzantine_rng`]) and only when the knob is on and the target tolerates one, so
//! every other profile, and every other protocol under this one, draws exactly what it
//! drew before they existed.

use super::Drawer;
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tenure_core::{Byzantine, NodeId};
use tenure_scenario::{Fault, NodeSel};

/// The stream Byzantine nodes are drawn from: next to the field faults' (`u64::MAX -
/// 16`).
pub(super) fn byzantine_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 17);
    rng
}

/// The behaviours, in the order a draw indexes them.
const BEHAVIOURS: [Byzantine; 4] = [
    Byzantine::Equivocate,
    Byzantine::WrongDigest,
    Byzantine::Silent,
    Byzantine::ConflictingViews,
];

impl Drawer<'_> {
    /// Draws the Byzantine nodes into the timeline: from 1 to `byzantine_max` distinct
    /// nodes of the cluster's first role, each turned at time zero (half the time: a
    /// liar from the start, as Castro & Liskov's f faulty replicas) or in the fault
    /// window, with one behaviour each.
    pub(super) fn draw_byzantine(&mut self) {
        let p = self.p.clone();
        if p.byzantine <= 0.0 || p.byzantine_max == 0 {
            return;
        }
        let main = std::mem::replace(&mut self.rng, byzantine_rng(self.seed));
        if self.chance(p.byzantine) {
            let first = &self.cluster.roles()[0].role;
            let mut candidates: Vec<NodeId> = self.cluster.with_role(first).collect();
            let most = (p.byzantine_max as usize).min(candidates.len());
            let count = self.rng.gen_range(1..=most);
            for _ in 0..count {
                let node = candidates.remove(self.rng.gen_range(0..candidates.len()));
                let behaviour = BEHAVIOURS[self.rng.gen_range(0..BEHAVIOURS.len())];
                let at = if self.rng.gen_bool(0.5) {
                    std::time::Duration::ZERO
                } else {
                    self.when()
                };
                self.push(
                    at,
                    Fault::Byzantine {
                        node: NodeSel::Id(node.0),
                        behaviour,
                    },
                );
            }
        }
        self.rng = main;
    }
}
