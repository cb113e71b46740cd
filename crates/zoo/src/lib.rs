//! tenure-zoo: the protocol zoo's one catalogue. The simulator, the model checker and the
//! `tenure` CLI all read this list; adding a protocol to the zoo means one line here
//! (plus the protocol's module, its scenarios and its book page). Real libraries run
//! through adapter crates (`crates/adapters/*`) are listed here too.

use tenure_core::{Catalogue, Visitor};
use tenure_protocols::{
    bully::Bully, etcd_lock::EtcdLock, fencing::Fencing, idempotency::Idempotency,
    leader_lease::LeaderLease, multi_lock::MultiLock, raft::Raft, redis_failover::RedisFailover,
    redis_lock::RedisLock, redlock::Redlock, sharded_lock::ShardedLock,
    versioned_store::VersionedStore, zookeeper::ZooKeeper,
};
use tenure_raft_rs::RaftRs;

/// The zoo, in the order `tenure list` shows it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Zoo;

impl Catalogue for Zoo {
    fn visit<V: Visitor>(&self, v: &mut V) {
        v.visit::<Raft>();
        v.visit::<tenure_protocols::raft_log::RaftLog>();
        v.visit::<Bully>();
        v.visit::<LeaderLease>();
        v.visit::<RedisLock>();
        v.visit::<Redlock>();
        v.visit::<Fencing>();
        v.visit::<EtcdLock>();
        v.visit::<tenure_protocols::etcd_service::EtcdService>();
        v.visit::<tenure_protocols::consul_session::ConsulLock>();
        v.visit::<ZooKeeper>();
        v.visit::<tenure_protocols::zk_ensemble::ZkEnsemble>();
        v.visit::<Idempotency>();
        v.visit::<MultiLock>();
        v.visit::<ShardedLock>();
        v.visit::<VersionedStore>();
        v.visit::<RedisFailover>();
        v.visit::<tenure_protocols::paxos::Paxos>();
        v.visit::<tenure_protocols::pbft::Pbft>();
        v.visit::<tenure_protocols::multi_paxos::MultiPaxos>();
        // Real code: raft-rs 0.7.0 through its adapter (crates/adapters/raft-rs).
        v.visit::<RaftRs>();
    }
}

/// The zoo's protocols that also run as real processes (`tenure node`, `tenure cluster`):
/// those whose messages have a wire encoding (serde). Raft on datagrams (UDP); etcd-lock
/// and zookeeper on their own transport, streams (TCP, with `on_disconnect` when a
/// connection is reset).
impl tenure_core::RealCatalogue for Zoo {
    fn visit_real<V: tenure_core::RealVisitor>(&self, v: &mut V) {
        v.visit::<Raft>();
        v.visit::<EtcdLock>();
        v.visit::<ZooKeeper>();
    }
}

/// The zoo's protocols as the simulator runs them: [`tenure_sim::Protocols::of`] the
/// [`Zoo`].
///
/// Built here, once, rather than by each caller: `Protocols::of` is generic over the
/// catalogue, so every crate, binary and test binary that called it with the zoo compiled
/// the simulator's code for all of the zoo's protocols again (about a minute of CPU
/// each on the 2-core CI machine; issue 38). A caller of this function links that code
/// from this crate instead.
pub fn protocols() -> tenure_sim::Protocols {
    tenure_sim::Protocols::of(&Zoo)
}

/// The zoo's protocols as the model checker explores them: [`tenure_models::Models::of`]
/// the [`Zoo`], built here once (see [`protocols`]).
pub fn models() -> tenure_models::Models {
    tenure_models::Models::of(&Zoo)
}

/// The zoo's protocols that run as real processes: [`tenure_runtime::Launchers::of`] the
/// [`Zoo`], built here once (see [`protocols`]).
pub fn launchers() -> tenure_runtime::Launchers {
    tenure_runtime::Launchers::of(&Zoo)
}
