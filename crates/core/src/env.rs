//! The environment a protocol sees, and [`Step`], which records what a handler did.
//!
//! A protocol touches the world only through [`Env`]: its own clock, the network, its
//! timers, its durable storage, seeded randomness, and `observe` for the checkers.
//! [`Step`] implements `Env` by recording every effect as data ([`Effect`]); the
//! simulator and the model explorer apply those effects, and unit tests assert them.

use crate::{Cluster, LocalTime, NodeId, Observation};
use serde::{de::DeserializeOwned, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// The node's own clock. Both readings run at the node's drift rate.
pub trait Clock {
    /// Never goes back. Use it to measure intervals (lease expiry, timeouts).
    fn monotonic(&self) -> LocalTime;
    /// Offset, drift and jumps: what `gettimeofday` says. Can go back.
    fn wall(&self) -> LocalTime;
}

/// Sending is all a node can do; delivery (late, lost, duplicated, reordered, or
/// never) is the environment's business.
pub trait Network<M> {
    fn send(&mut self, to: NodeId, msg: M);
}

/// Timers in the node's own (drifting) monotonic time. Setting a timer that is already
/// set moves it; a crash clears every timer.
pub trait Timers<T> {
    fn set_timer(&mut self, timer: T, after: Duration);
    fn cancel_timer(&mut self, timer: &T);
}

/// Key/value state on the node's disk, with the semantics of a file system.
///
/// A write (`put`, `delete`) reaches the operating system at once: later reads see it
/// and a process crash keeps it. It becomes *durable* only when a later [`sync`]
/// returns `Ok`: a power loss (machine crash) drops every write not yet synced.
/// `sync` takes time (the node's fsync latency): the handler's effects after it (its
/// sends, timers, observations) happen only when the sync completes, so "persist
/// before reply" is `put`, `sync`, then `send`. A sync can fail (a `disk-error`
/// fault): the writes stay unsynced and the protocol must decide what to do.
///
/// [`sync`]: Storage::sync
pub trait Storage {
    fn get(&self, key: &str) -> Option<&str>;
    fn put(&mut self, key: &str, value: String);
    fn delete(&mut self, key: &str);
    /// Makes every write so far durable (fsync). An `Err` means the disk failed: no
    /// write became durable by this call.
    fn sync(&mut self) -> Result<(), SyncError>;
}

/// A failed [`Storage::sync`]: the disk reported an I/O error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SyncError;

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fsync failed: I/O error")
    }
}

impl std::error::Error for SyncError {}

/// Typed access to [`Storage`] (values are stored as JSON text).
pub trait StorageExt: Storage {
    /// Reads a value; a value that does not parse as `T` is a bug and panics.
    fn load<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.get(key).map(|v| {
            serde_json::from_str(v)
                .unwrap_or_else(|e| panic!("stored value of `{key}` does not parse: {e}"))
        })
    }
    fn store<T: Serialize>(&mut self, key: &str, value: &T) {
        let text = serde_json::to_string(value).expect("storable values serialize");
        self.put(key, text);
    }
    /// Writes a value and syncs it (with everything written before it): `store` then
    /// `sync`.
    fn store_synced<T: Serialize>(&mut self, key: &str, value: &T) -> Result<(), SyncError> {
        self.store(key, value);
        self.sync()
    }
}

impl<S: Storage + ?Sized> StorageExt for S {}

/// Seeded randomness: every draw comes from the run's seed.
pub trait Rng {
    fn next_u64(&mut self) -> u64;

    /// Uniform in `lo..=hi` (returns `lo` if `hi <= lo`).
    fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        // Lemire's multiply-shift; the bias is below 2^-64 * span, negligible here.
        lo + ((u128::from(self.next_u64()) * u128::from(span + 1)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`, at nanosecond resolution.
    fn duration_between(&mut self, lo: Duration, hi: Duration) -> Duration {
        let (lo_ns, hi_ns) = (lo.as_nanos() as u64, hi.as_nanos() as u64);
        Duration::from_nanos(self.range_inclusive(lo_ns, hi_ns))
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }
}

/// Records what the node believes or did, for the checkers.
pub trait Observe {
    fn observe(&mut self, obs: Observation);
}

/// Everything a protocol can touch.
pub trait Env<M, T>: Clock + Network<M> + Timers<T> + Storage + Rng + Observe {
    /// This node.
    fn me(&self) -> NodeId;
    /// Who else is in the run and which role each plays.
    fn cluster(&self) -> &Cluster;
}

/// A node's durable storage.
pub type StorageMap = BTreeMap<String, String>;

/// One thing a handler did.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Effect<M, T> {
    Send {
        to: NodeId,
        msg: M,
    },
    SetTimer {
        timer: T,
        after: Duration,
    },
    CancelTimer {
        timer: T,
    },
    /// `value: None` is a delete.
    Store {
        key: String,
        value: Option<String>,
    },
    Observe(Observation),
    /// A call of [`Storage::sync`]: the writes before it become durable when the sync
    /// completes, and the effects after it wait until then. `ok: false` is a failed
    /// sync (the handler saw `Err`).
    Sync {
        ok: bool,
    },
}

/// SplitMix64: a tiny seeded generator for tests and the model explorer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SplitMix64(pub u64);

impl Rng for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// An [`Env`] for one handler call that records its effects as data. Storage writes
/// are applied to the node's storage at once (so later reads in the same handler see
/// them) and are also recorded.
pub struct Step<'a, M, T> {
    me: NodeId,
    cluster: &'a Cluster,
    monotonic: LocalTime,
    wall: LocalTime,
    storage: &'a mut StorageMap,
    rng: &'a mut dyn Rng,
    /// What the handler did, in order.
    pub effects: Vec<Effect<M, T>>,
    /// Whether `sync` fails (the host sets it during a `disk-error` fault).
    pub sync_fails: bool,
    /// Where a successful `sync` copies the storage, if the caller keeps a durable
    /// image itself ([`StepHost`] does; the simulator tracks durability from effects).
    durable: Option<&'a mut StorageMap>,
}

impl<'a, M, T> Step<'a, M, T> {
    pub fn new(
        me: NodeId,
        cluster: &'a Cluster,
        monotonic: LocalTime,
        wall: LocalTime,
        storage: &'a mut StorageMap,
        rng: &'a mut dyn Rng,
    ) -> Self {
        Step {
            me,
            cluster,
            monotonic,
            wall,
            storage,
            rng,
            effects: Vec::new(),
            sync_fails: false,
            durable: None,
        }
    }

    /// Copies the storage into `durable` at every successful `sync`.
    pub fn with_durable(mut self, durable: &'a mut StorageMap) -> Self {
        self.durable = Some(durable);
        self
    }

    /// Whether the handler synced (successfully or not), a test helper.
    pub fn synced(&self) -> bool {
        self.effects
            .iter()
            .any(|e| matches!(e, Effect::Sync { .. }))
    }

    /// The effects, leaving the step empty (for reuse by a host loop).
    pub fn take_effects(&mut self) -> Vec<Effect<M, T>> {
        std::mem::take(&mut self.effects)
    }

    /// The messages sent, in order (a test helper).
    pub fn sent(&self) -> Vec<(NodeId, &M)> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send { to, msg } => Some((*to, msg)),
                _ => None,
            })
            .collect()
    }

    /// The observations made, in order (a test helper).
    pub fn observed(&self) -> Vec<&Observation> {
        self.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Observe(o) => Some(o),
                _ => None,
            })
            .collect()
    }
}

/// A node's storage, seeded randomness and clock readings, kept across handler calls:
/// what a unit test of a protocol needs to build [`Step`]s. Storage survives between
/// steps, as it survives a process crash, so a test can build a fresh process over it
/// to check what a restart remembers; [`StepHost::power_loss`] drops what was not
/// synced, to check what a machine crash leaves.
#[derive(Clone, Debug)]
pub struct StepHost {
    pub me: NodeId,
    pub cluster: Cluster,
    /// What the node wrote (the operating system's view).
    pub storage: StorageMap,
    /// What the last successful sync made durable.
    pub durable: StorageMap,
    /// Whether syncs fail (a disk error).
    pub sync_fails: bool,
    pub rng: SplitMix64,
    /// The clock readings the next steps see (both start at zero).
    pub monotonic: LocalTime,
    pub wall: LocalTime,
}

impl StepHost {
    pub fn new(me: NodeId, cluster: &Cluster) -> StepHost {
        StepHost {
            me,
            cluster: cluster.clone(),
            storage: StorageMap::new(),
            durable: StorageMap::new(),
            sync_fails: false,
            rng: SplitMix64(1),
            monotonic: LocalTime(0),
            wall: LocalTime(0),
        }
    }

    /// An environment for one or more handler calls, recording their effects.
    pub fn step<M, T>(&mut self) -> Step<'_, M, T> {
        let mut step = Step::new(
            self.me,
            &self.cluster,
            self.monotonic,
            self.wall,
            &mut self.storage,
            &mut self.rng,
        )
        .with_durable(&mut self.durable);
        step.sync_fails = self.sync_fails;
        step
    }

    /// The machine loses power: every write not synced is gone.
    pub fn power_loss(&mut self) {
        self.storage = self.durable.clone();
    }
}

impl<M, T> Clock for Step<'_, M, T> {
    fn monotonic(&self) -> LocalTime {
        self.monotonic
    }
    fn wall(&self) -> LocalTime {
        self.wall
    }
}

impl<M, T> Network<M> for Step<'_, M, T> {
    fn send(&mut self, to: NodeId, msg: M) {
        assert!(
            self.cluster.contains(to),
            "{} sent a message to {to}, which is not in the cluster",
            self.me
        );
        self.effects.push(Effect::Send { to, msg });
    }
}

impl<M, T: Clone> Timers<T> for Step<'_, M, T> {
    fn set_timer(&mut self, timer: T, after: Duration) {
        self.effects.push(Effect::SetTimer { timer, after });
    }
    fn cancel_timer(&mut self, timer: &T) {
        self.effects.push(Effect::CancelTimer {
            timer: timer.clone(),
        });
    }
}

impl<M, T> Storage for Step<'_, M, T> {
    fn get(&self, key: &str) -> Option<&str> {
        self.storage.get(key).map(String::as_str)
    }
    fn put(&mut self, key: &str, value: String) {
        self.storage.insert(key.to_string(), value.clone());
        self.effects.push(Effect::Store {
            key: key.to_string(),
            value: Some(value),
        });
    }
    fn delete(&mut self, key: &str) {
        self.storage.remove(key);
        self.effects.push(Effect::Store {
            key: key.to_string(),
            value: None,
        });
    }
    fn sync(&mut self) -> Result<(), SyncError> {
        let ok = !self.sync_fails;
        self.effects.push(Effect::Sync { ok });
        if !ok {
            return Err(SyncError);
        }
        if let Some(durable) = &mut self.durable {
            durable.clone_from(self.storage);
        }
        Ok(())
    }
}

impl<M, T> Rng for Step<'_, M, T> {
    fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

impl<M, T> Observe for Step<'_, M, T> {
    fn observe(&mut self, obs: Observation) {
        self.effects.push(Effect::Observe(obs));
    }
}

impl<M, T: Clone> Env<M, T> for Step<'_, M, T> {
    fn me(&self) -> NodeId {
        self.me
    }
    fn cluster(&self) -> &Cluster {
        self.cluster
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_records_effects_and_storage_is_read_back() {
        let cluster = Cluster::uniform("node", 3);
        let mut storage = StorageMap::new();
        let mut rng = SplitMix64(7);
        let mut step: Step<'_, &str, u8> = Step::new(
            NodeId(0),
            &cluster,
            LocalTime(5),
            LocalTime(9),
            &mut storage,
            &mut rng,
        );
        step.send(NodeId(2), "hello");
        step.set_timer(1, Duration::from_millis(10));
        step.store("term", &3u64);
        assert_eq!(step.load::<u64>("term"), Some(3));
        step.observe(Observation::Leader { term: 3 });
        assert_eq!(
            step.effects,
            vec![
                Effect::Send {
                    to: NodeId(2),
                    msg: "hello"
                },
                Effect::SetTimer {
                    timer: 1,
                    after: Duration::from_millis(10)
                },
                Effect::Store {
                    key: "term".into(),
                    value: Some("3".into())
                },
                Effect::Observe(Observation::Leader { term: 3 }),
            ]
        );
        assert_eq!(storage.get("term").map(String::as_str), Some("3"));
    }

    #[test]
    fn a_step_host_keeps_storage_across_steps() {
        let mut host = StepHost::new(NodeId(1), &Cluster::uniform("node", 2));
        host.monotonic = LocalTime(7);
        {
            let mut step: Step<'_, (), u8> = host.step();
            assert_eq!((step.me(), step.monotonic()), (NodeId(1), LocalTime(7)));
            step.store("term", &2u64);
        }
        let step: Step<'_, (), u8> = host.step();
        assert_eq!(step.load::<u64>("term"), Some(2));
        assert!(step.effects.is_empty(), "a new step starts with no effects");
    }

    #[test]
    fn a_power_loss_loses_exactly_the_unsynced_writes_and_a_crash_keeps_them() {
        let mut host = StepHost::new(NodeId(0), &Cluster::uniform("node", 1));
        let effects = {
            let mut step: Step<'_, (), u8> = host.step();
            step.store("a", &1u64);
            assert_eq!(step.sync(), Ok(()));
            step.store("b", &2u64);
            step.delete("a");
            step.effects
        };
        assert_eq!(
            effects,
            vec![
                Effect::Store {
                    key: "a".into(),
                    value: Some("1".into())
                },
                Effect::Sync { ok: true },
                Effect::Store {
                    key: "b".into(),
                    value: Some("2".into())
                },
                Effect::Store {
                    key: "a".into(),
                    value: None
                },
            ]
        );
        // A process crash keeps what was written (a restart reads `storage`).
        let crashed = host.storage.clone();
        assert_eq!(crashed.get("b").map(String::as_str), Some("2"));
        assert_eq!(crashed.get("a"), None);
        // A power loss keeps only what the sync made durable.
        host.power_loss();
        let expected: StorageMap = [("a".to_string(), "1".to_string())].into();
        assert_eq!(host.storage, expected);
    }

    #[test]
    fn a_failed_sync_makes_nothing_durable() {
        let mut host = StepHost::new(NodeId(0), &Cluster::uniform("node", 1));
        host.sync_fails = true;
        {
            let mut step: Step<'_, (), u8> = host.step();
            assert_eq!(step.store_synced("a", &1u64), Err(SyncError));
            assert!(step.synced());
            assert_eq!(step.effects.last(), Some(&Effect::Sync { ok: false }));
        }
        host.power_loss();
        assert!(host.storage.is_empty());
    }

    #[test]
    fn rng_ranges_stay_in_bounds_and_are_seeded() {
        let mut a = SplitMix64(1);
        let mut b = SplitMix64(1);
        for _ in 0..1000 {
            let x = a.range_inclusive(150, 300);
            assert!((150..=300).contains(&x));
            assert_eq!(x, b.range_inclusive(150, 300));
        }
        assert_eq!(a.range_inclusive(5, 5), 5);
        assert!(!a.chance(0.0));
        assert!(a.chance(1.0));
    }
}
