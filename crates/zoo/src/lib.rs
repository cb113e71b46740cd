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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_is_listed_once() {
        let names = tenure_core::catalogue_names(&Zoo);
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert_eq!(names[0], "raft");
    }

    #[test]
    fn every_variant_type_names_the_listed_variants() {
        assert_eq!(tenure_core::variant_mismatches(&Zoo), Vec::<String>::new());
    }
}
