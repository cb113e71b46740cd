//! raft-rs's `Storage` over tenure's: an in-memory image of what the node wrote (the
//! operating system's view, which raft-rs reads, including writes not yet synced), kept
//! in step with tenure's `Storage`, whose `sync` decides what is durable.
//!
//! Follows raft 0.7.0's `MemStorage` (`src/storage.rs`: `MemStorageCore::append`,
//! `Storage for MemStorage`) for an uncompacted log starting at index 1: `first_index`
//! is 1, `term(0)` is 0, entries past the last are `Unavailable`, and `entries` panics
//! past `last_index + 1` as `MemStorage` does.
//!
//! On tenure's disk: `hs` (`term,vote,commit`), `last` (the last index) and one key per
//! entry, `e/<index>`, holding the entry's protobuf bytes in hex. An overwrite at index
//! `i <= last` first writes `last = i - 1`, so every prefix of the writes (what a crash
//! point or a power loss leaves) reads back as a valid log.

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

pub(crate) const HARD_STATE_KEY: &str = "hs";
/// The commit index, written on its own whenever only it changed: raft-rs does not ask
/// for it to be durable (`Ready::must_sync` is false when only the commit index moved),
/// so the adapter declares this key not durable (`Protocol::durable`).
pub(crate) const COMMIT_KEY: &str = "commit";
pub(crate) const LAST_KEY: &str = "last";

fn entry_key(index: u64) -> String {
    format!("e/{index}")
}

/// The log and hard state raft-rs reads.
#[derive(Clone, Debug, Default)]
pub struct LogStore {
    pub hard_state: HardState,
    pub conf_state: ConfState,
    /// Entry `i` at position `i - 1`.
    pub entries: Vec<Entry>,
}

impl LogStore {
    /// A bootstrapped store: every node starts with the same voters and an empty log
    /// (as raft-rs's examples and `MemStorage::new_with_conf_state` do).
    pub fn new(voters: Vec<u64>) -> LogStore {
        LogStore {
            conf_state: ConfState::from((voters, vec![])),
            ..LogStore::default()
        }
    }

    pub fn last_index(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Reads the store back from tenure storage (the log as far as `last`).
    pub fn load<S: tenure_core::Storage + ?Sized>(voters: Vec<u64>, storage: &S) -> LogStore {
        let mut store = LogStore::new(voters);
        if let Some(hs) = storage.get(HARD_STATE_KEY) {
            let mut parts = hs.split(',').map(|p| {
                p.parse::<u64>()
                    .unwrap_or_else(|e| panic!("stored hard state `{hs}` does not parse: {e}"))
            });
            let (term, vote, commit) = (
                parts.next().unwrap_or(0),
                parts.next().unwrap_or(0),
                parts.next().unwrap_or(0),
            );
            store.hard_state.term = term;
            store.hard_state.vote = vote;
            store.hard_state.commit = commit;
        }
        if let Some(commit) = storage.get(COMMIT_KEY) {
            let commit: u64 = commit.parse().expect("stored commit index parses");
            store.hard_state.commit = store.hard_state.commit.max(commit);
        }
        let last: u64 = storage
            .get(LAST_KEY)
            .map(|v| v.parse().expect("stored last index parses"))
            .unwrap_or(0);
        for index in 1..=last {
            let hex = storage
                .get(&entry_key(index))
                .unwrap_or_else(|| panic!("entry {index} of {last} is missing on disk"));
            let entry = Entry::parse_from_bytes(&from_hex(hex)).expect("stored entry parses");
            assert_eq!(entry.index, index, "entry {index} stored at its index");
            store.entries.push(entry);
        }
        store
    }

    /// Appends `entries` (replacing the entry at their first index and every later
    /// one) here and on tenure's disk, as `MemStorageCore::append` does.
    pub fn append<S: tenure_core::Storage + ?Sized>(&mut self, entries: &[Entry], storage: &mut S) {
        let Some(first) = entries.first() else {
            return;
        };
        assert!(
            first.index >= 1 && first.index <= self.last_index() + 1,
            "raft logs should be continuous, last index: {}, new appended: {}",
            self.last_index(),
            first.index
        );
        if first.index <= self.last_index() {
            storage.put(LAST_KEY, (first.index - 1).to_string());
        }
        self.entries.truncate((first.index - 1) as usize);
        for e in entries {
            let bytes = e.write_to_bytes().expect("entries encode");
            storage.put(&entry_key(e.index), to_hex(&bytes));
            self.entries.push(e.clone());
        }
        storage.put(LAST_KEY, self.last_index().to_string());
    }

    /// Saves the hard state here and on tenure's disk.
    pub fn set_hard_state<S: tenure_core::Storage + ?Sized>(
        &mut self,
        hs: &HardState,
        storage: &mut S,
    ) {
        let (term, vote) = (self.hard_state.term, self.hard_state.vote);
        self.hard_state = hs.clone();
        if (hs.term, hs.vote) == (term, vote) {
            storage.put(COMMIT_KEY, hs.commit.to_string());
        } else {
            storage.put(
                HARD_STATE_KEY,
                format!("{},{},{}", hs.term, hs.vote, hs.commit),
            );
        }
    }
}

impl raft::Storage for LogStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState {
            hard_state: self.hard_state.clone(),
            conf_state: self.conf_state.clone(),
        })
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < 1 {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        assert!(
            high <= self.last_index() + 1,
            "index out of bound (last: {}, high: {})",
            self.last_index() + 1,
            high
        );
        let mut entries = self.entries[(low - 1) as usize..(high - 1) as usize].to_vec();
        raft::util::limit_size(&mut entries, max_size.into());
        Ok(entries)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx == 0 {
            return Ok(0);
        }
        match self.entries.get((idx - 1) as usize) {
            Some(e) => Ok(e.term),
            None => Err(raft::Error::Store(StorageError::Unavailable)),
        }
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(1)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last_index())
    }

    /// The log is never compacted, so raft-rs never needs a snapshot to catch a
    /// follower up (`RaftLog::entries` never returns `Compacted`).
    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable,
        ))
    }
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

pub(crate) fn from_hex(hex: &str) -> Vec<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => panic!("not a hex digit: {c}"),
    };
    hex.as_bytes()
        .chunks(2)
        .map(|pair| (digit(pair[0]) << 4) | digit(pair[1]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::Storage as _;
    use tenure_core::{Storage as _, StorageMap};

    struct Disk(StorageMap);
    impl tenure_core::Storage for Disk {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(String::as_str)
        }
        fn put(&mut self, key: &str, value: String) {
            self.0.insert(key.to_string(), value);
        }
        fn delete(&mut self, key: &str) {
            self.0.remove(key);
        }
        fn sync(&mut self) -> Result<(), tenure_core::SyncError> {
            Ok(())
        }
    }

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        Entry {
            index,
            term,
            data: data.to_vec().into(),
            ..Entry::default()
        }
    }

    #[test]
    fn hex_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&bytes)), bytes);
    }

    #[test]
    fn an_overwrite_truncates_and_the_disk_reads_back_the_same_log() {
        let mut disk = Disk(StorageMap::new());
        let mut store = LogStore::new(vec![1, 2, 3]);
        store.append(
            &[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")],
            &mut disk,
        );
        store.append(&[entry(2, 2, b"x")], &mut disk);
        let hs = HardState {
            term: 2,
            vote: 3,
            commit: 1,
            ..HardState::default()
        };
        store.set_hard_state(&hs, &mut disk);
        assert_eq!(store.last_index(), 2);
        assert_eq!(store.term(2).unwrap(), 2);
        assert!(store.term(3).is_err());
        let back = LogStore::load(vec![1, 2, 3], &disk);
        assert_eq!(back.entries, store.entries);
        assert_eq!(back.hard_state, hs);
        assert_eq!(disk.get(LAST_KEY), Some("2"));
    }

    #[test]
    fn every_prefix_of_an_overwrite_reads_back_as_a_log_with_increasing_terms() {
        // Record the writes of an overwrite, then replay each prefix of them.
        struct Recorder(Vec<(String, String)>, StorageMap);
        impl tenure_core::Storage for Recorder {
            fn get(&self, key: &str) -> Option<&str> {
                self.1.get(key).map(String::as_str)
            }
            fn put(&mut self, key: &str, value: String) {
                self.0.push((key.to_string(), value.clone()));
                self.1.insert(key.to_string(), value);
            }
            fn delete(&mut self, _key: &str) {}
            fn sync(&mut self) -> Result<(), tenure_core::SyncError> {
                Ok(())
            }
        }
        let mut rec = Recorder(Vec::new(), StorageMap::new());
        let mut store = LogStore::new(vec![1]);
        store.append(
            &[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")],
            &mut rec,
        );
        let before = rec.0.len();
        store.append(&[entry(2, 2, b"x"), entry(3, 2, b"y")], &mut rec);
        for cut in before..=rec.0.len() {
            let mut disk = Disk(StorageMap::new());
            for (k, v) in &rec.0[..cut] {
                disk.put(k, v.clone());
            }
            let log = LogStore::load(vec![1], &disk);
            let terms: Vec<u64> = log.entries.iter().map(|e| e.term).collect();
            assert!(terms.windows(2).all(|w| w[0] <= w[1]), "{cut}: {terms:?}");
        }
    }
}
