//! Every protocol the `tenure` tool can run by name. Adding a protocol to the zoo means
//! one line here.

use crate::play::{Playable, Protocolled};
use tenure_core::ProtocolInfo;
use tenure_protocols::{
    bully::Bully, etcd_lock::EtcdLock, fencing::Fencing, idempotency::Idempotency,
    leader_lease::LeaderLease, multi_lock::MultiLock, raft::Raft, redis_lock::RedisLock,
    redlock::Redlock, sharded_lock::ShardedLock, versioned_store::VersionedStore,
    zookeeper::ZooKeeper,
};

/// A protocol of the zoo, type-erased.
pub struct Entry {
    pub info: &'static ProtocolInfo,
    pub(crate) playable: &'static (dyn Playable + Sync),
}

macro_rules! zoo {
    ($($ty:ty),* $(,)?) => {
        /// The zoo, in the order `tenure list` shows it.
        pub fn entries() -> Vec<Entry> {
            vec![$(Entry {
                info: <$ty as tenure_core::Configurable>::info(),
                playable: &Protocolled::<$ty>(std::marker::PhantomData),
            }),*]
        }
    };
}

zoo!(
    Raft,
    Bully,
    LeaderLease,
    RedisLock,
    Redlock,
    Fencing,
    EtcdLock,
    ZooKeeper,
    Idempotency,
    MultiLock,
    ShardedLock,
    VersionedStore
);

pub fn lookup(name: &str) -> Option<Entry> {
    entries().into_iter().find(|e| e.info.name == name)
}

/// The protocol names, for error messages.
pub fn names() -> Vec<&'static str> {
    entries().iter().map(|e| e.info.name).collect()
}
