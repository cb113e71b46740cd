//! The `rack` knob's fault: a rack's (or a PDU's) power fails, and a majority of one
//! role's nodes lose power together, each at its next sync (with the writes that sync
//! would make durable still in the page cache), all armed at one instant, all booting
//! again after one outage. More nodes than the role tolerates down at once, on purpose:
//! the profiles keep at most a minority of a role down (`down_budget`), which is what
//! liveness needs, but safety must survive any number of crashes, and a write
//! acknowledged before its fsync is lost only when a majority loses it (the class of
//! etcd #10166 and of ALICE's single-node crash states, across nodes). Drawn from a
//! stream of its own ([`rack_rng`]), so every other draw of a seed, and every profile
//! without the knob, is what it was.

use super::{sync_power_loss, Drawer};
use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use tenure_core::{NodeId, RoleKind};

/// The stream a rack's power failure is drawn from: next to the early faults'
/// (`u64::MAX - 5`).
fn rack_rng(seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(u64::MAX - 6);
    rng
}

impl Drawer<'_> {
    /// With chance `rack` (and crash points allowed): a node drawn as a power loss's is
    /// (any but the protected resource) names the role; if the role has at least 3
    /// nodes, a majority of them, drawn, each get a power loss at their next sync, armed
    /// at one instant in the window, booting again after one outage from
    /// `outage_range`. Returns the nodes, which the heal restarts at the latest.
    pub(super) fn draw_rack(&mut self, heal_at: Duration) -> Vec<NodeId> {
        if self.p.rack <= 0.0 || !self.p.crash_points {
            return Vec::new();
        }
        let outage_range = self.p.outage_range;
        let rack = self.p.rack;
        let main = std::mem::replace(&mut self.rng, rack_rng(self.seed));
        let mut lost = Vec::new();
        if self.chance(rack) {
            let node = self.pick(|kind| u32::from(kind != RoleKind::Resource));
            let role = self.cluster.role_index_of(node);
            let mut ids: Vec<u32> = self.cluster.role_ids(role).collect();
            let at = self.when();
            let restart_after = self.log_between(outage_range);
            if ids.len() >= 3 && at < heal_at {
                // Fisher-Yates: which nodes share the rack.
                for k in (1..ids.len()).rev() {
                    let j = self.rng.gen_range(0..=k);
                    ids.swap(k, j);
                }
                let majority = ids.len() / 2 + 1;
                for &id in &ids[..majority] {
                    self.push(at, sync_power_loss(NodeId(id), restart_after));
                    lost.push(NodeId(id));
                }
            }
        }
        self.rng = main;
        lost
    }
}
