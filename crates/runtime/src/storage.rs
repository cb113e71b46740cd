//! A node's [`Storage`] in a directory, with the semantics the simulator gives it: a write
//! reaches the operating system at once (later reads see it, and it survives the
//! process being killed), and becomes durable only when `sync` returns `Ok`; a power
//! loss keeps what the last successful sync made durable, never less.
//!
//! Layout (every file is replaced whole by a rename, so a killed process never leaves
//! half of one):
//! - `node.json`: whose directory this is (`{"node": 3, "protocol": "raft"}`), written
//!   and synced when the directory is first used; another node's directory, or another
//!   protocol's, is refused.
//! - `storage.json`: the durable image, every key and value as of the last successful
//!   sync. Only `sync` replaces it: it writes `storage.json.tmp`, fsyncs it, renames it
//!   over `storage.json`, removes `storage.unsynced.json` and fsyncs the directory. (A
//!   rename of a file whose data was never fsynced can come back empty after a power
//!   loss, on ext4 without `auto_da_alloc` and on XFS: hence the fsync before it.)
//! - `storage.unsynced.json`: every key and value as of the latest write, when it is
//!   newer than the durable image. Each write replaces it (written, then renamed over it)
//!   without fsync: the operating system keeps it when the process dies, a power loss may
//!   not. Opening prefers it; one that does not parse (torn by a power loss) is
//!   ignored, with a line on stderr, and the durable image is used, as the simulator's
//!   power loss keeps only the durable writes.
//!
//! Errors, as the simulator's disk gives them: a write the OS refuses (a full disk) is
//! said on stderr and leaves the unsynced file behind the node's map; every `sync`
//! writes the whole map afresh, so the next sync fails while the disk still refuses and
//! succeeds once a rewrite gets through, never by fsyncing an older file. A sync that
//! fails leaves the writes unsynced (as the simulator's `disk-error` does), and the next
//! sync writes a new file rather than fsync again the one whose fsync failed (after a
//! failed fsync Linux may have dropped its dirty pages and report the next fsync as a
//! success).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tenure_core::{NodeId, Storage, SyncError};

/// The durable image.
const DURABLE: &str = "storage.json";
/// The latest writes, when newer than the durable image.
const UNSYNCED: &str = "storage.unsynced.json";

/// Why a directory cannot be a node's storage.
#[derive(Debug)]
pub enum StorageError {
    Io(PathBuf, io::Error),
    /// The directory belongs to another node (or protocol).
    Other {
        dir: PathBuf,
        found: String,
        wanted: String,
    },
    /// A file in it does not parse: a disk that corrupted it, or a hand edit.
    Corrupt(PathBuf, String),
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            StorageError::Other { dir, found, wanted } => write!(
                f,
                "{}: this directory belongs to {found}, not {wanted}: give each node its own directory",
                dir.display()
            ),
            StorageError::Corrupt(p, e) => write!(
                f,
                "{}: corrupt ({e}); tenure will not guess what it held: move it away to start that node empty",
                p.display()
            ),
        }
    }
}

impl std::error::Error for StorageError {}

#[derive(serde::Serialize, serde::Deserialize, PartialEq, Eq, Debug)]
struct Owner {
    node: u32,
    protocol: String,
}

/// The file operations storage is made of: the operating system's ([`OsFs`]), or in
/// tests a model disk whose page cache a power loss empties.
pub(crate) trait Fs: Send + std::fmt::Debug {
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()>;
    /// The whole file (`NotFound` if there is none).
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Creates (or truncates) `path` and writes `bytes`; fsyncs it if `sync`.
    fn write(&mut self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()>;
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes `path`; one that does not exist is not an error.
    fn remove(&mut self, path: &Path) -> io::Result<()>;
    /// fsync of a directory: the renames and removals in it become durable.
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()>;
}

/// The operating system's files.
#[derive(Debug)]
pub(crate) struct OsFs;

impl Fs for OsFs {
    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }
    fn read(&self, path: &Path) -> io::Result<String> {
        fs::read_to_string(path)
    }
    fn write(&mut self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
        let mut f = File::create(path)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        Ok(())
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }
    fn remove(&mut self, path: &Path) -> io::Result<()> {
        match fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }
    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Storage in a directory.
#[derive(Debug)]
pub struct DirStorage {
    dir: PathBuf,
    map: BTreeMap<String, String>,
    /// The map holds writes the durable image does not (written since the last
    /// successful sync, or read back from the unsynced file): the next sync has work.
    unsynced: bool,
    /// Set by the host to make every `sync` fail (an injected disk error).
    pub sync_fails: bool,
    fs: Box<dyn Fs>,
    /// Broken on purpose, to show that the tests notice (negative controls).
    #[cfg(test)]
    broken: tests::Broken,
}

fn io_at(p: &Path) -> impl Fn(io::Error) -> StorageError + '_ {
    move |e| StorageError::Io(p.to_path_buf(), e)
}

fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

impl DirStorage {
    /// Opens (or starts) node `me`'s storage of `protocol` in `dir`.
    pub fn open(dir: &Path, me: NodeId, protocol: &str) -> Result<DirStorage, StorageError> {
        DirStorage::open_on(Box::new(OsFs), dir, me, protocol)
    }

    pub(crate) fn open_on(
        mut fs: Box<dyn Fs>,
        dir: &Path,
        me: NodeId,
        protocol: &str,
    ) -> Result<DirStorage, StorageError> {
        fs.create_dir_all(dir).map_err(io_at(dir))?;
        let owner_path = dir.join("node.json");
        let wanted = Owner {
            node: me.0,
            protocol: protocol.to_string(),
        };
        match fs.read(&owner_path) {
            Ok(text) => {
                let found: Owner = serde_json::from_str(&text)
                    .map_err(|e| StorageError::Corrupt(owner_path.clone(), e.to_string()))?;
                if found != wanted {
                    return Err(StorageError::Other {
                        dir: dir.to_path_buf(),
                        found: format!("node {} of {}", found.node, found.protocol),
                        wanted: format!("node {} of {}", wanted.node, wanted.protocol),
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let text = serde_json::to_string(&wanted).expect("serializes");
                replace_durably(&mut *fs, dir, "node.json", &text, true, true)
                    .map_err(io_at(&owner_path))?;
            }
            Err(e) => return Err(StorageError::Io(owner_path, e)),
        }
        let path = dir.join(DURABLE);
        let durable = match fs.read(&path) {
            Ok(text) => parse(&text).map_err(|e| StorageError::Corrupt(path.clone(), e))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(StorageError::Io(path, e)),
        };
        let path = dir.join(UNSYNCED);
        let unsynced = match fs.read(&path) {
            Ok(text) => match parse(&text) {
                Ok(map) => Some(map),
                Err(e) => {
                    eprintln!(
                        "tenure-runtime: {}: unreadable ({e}): writes that were never synced, lost (a power loss?); reading {DURABLE}, the last synced state",
                        path.display()
                    );
                    None
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(StorageError::Io(path, e)),
        };
        Ok(DirStorage {
            dir: dir.to_path_buf(),
            unsynced: unsynced.is_some(),
            map: unsynced.unwrap_or(durable),
            sync_fails: false,
            fs,
            #[cfg(test)]
            broken: tests::Broken::default(),
        })
    }

    fn text(&self) -> String {
        serde_json::to_string(&self.map).expect("strings serialize")
    }

    /// Hands the map to the operating system (the unsynced file), without fsync.
    fn write_through(&mut self) {
        self.unsynced = true;
        let text = self.text();
        // A write the OS refuses (a full disk) is as if the process had died before it:
        // the protocol sees the write in memory, a restart does not, and the next sync
        // writes everything again (and fails if the disk still refuses). Said on stderr.
        if let Err(e) = replace_durably(&mut *self.fs, &self.dir, UNSYNCED, &text, false, false) {
            eprintln!(
                "tenure-runtime: cannot write {}: {e}",
                self.dir.join(UNSYNCED).display()
            );
        }
    }

    /// Makes the map the durable image: a new file, fsynced, renamed over the old one,
    /// the unsynced file removed, the directory fsynced.
    fn make_durable(&mut self) -> io::Result<()> {
        #[cfg(test)]
        if self.broken.sync_does_nothing {
            return Ok(());
        }
        #[cfg(test)]
        let (sync_file, sync_dir) = (!self.broken.no_file_fsync, !self.broken.no_dir_fsync);
        #[cfg(not(test))]
        let (sync_file, sync_dir) = (true, true);
        let text = self.text();
        replace_durably(&mut *self.fs, &self.dir, DURABLE, &text, sync_file, false)?;
        self.fs.remove(&self.dir.join(UNSYNCED))?;
        if sync_dir {
            self.fs.sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

/// Replaces `dir/name` whole with `text`: a temporary file (fsynced if `sync_file`)
/// renamed over it, then the directory fsynced if `sync_dir`.
fn replace_durably(
    fs: &mut dyn Fs,
    dir: &Path,
    name: &str,
    text: &str,
    sync_file: bool,
    sync_dir: bool,
) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    fs.write(&tmp, text.as_bytes(), sync_file)?;
    fs.rename(&tmp, &dir.join(name))?;
    if sync_dir {
        fs.sync_dir(dir)?;
    }
    Ok(())
}

impl Storage for DirStorage {
    fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    fn put(&mut self, key: &str, value: String) {
        self.map.insert(key.to_string(), value);
        self.write_through();
    }

    fn delete(&mut self, key: &str) {
        if self.map.remove(key).is_some() {
            self.write_through();
        }
    }

    fn sync(&mut self) -> Result<(), SyncError> {
        if self.sync_fails {
            return Err(SyncError);
        }
        if !self.unsynced {
            return Ok(());
        }
        match self.make_durable() {
            Ok(()) => {
                self.unsynced = false;
                Ok(())
            }
            // The writes stay unsynced: the next sync writes them all again.
            Err(e) => {
                eprintln!(
                    "tenure-runtime: sync of {} failed: {e}",
                    self.dir.join(DURABLE).display()
                );
                Err(SyncError)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Ways to break `sync`, each of which a test below must notice.
    #[derive(Clone, Copy, Debug, Default)]
    pub(super) struct Broken {
        /// `sync` returns `Ok` and does nothing.
        pub sync_does_nothing: bool,
        /// The new durable image is renamed over the old one without an fsync of its own.
        pub no_file_fsync: bool,
        /// The directory is not fsynced after the rename.
        pub no_dir_fsync: bool,
    }

    /// One file's contents: what the page cache holds, and what is on the platter.
    #[derive(Debug, Default)]
    struct Inode {
        cached: Vec<u8>,
        durable: Vec<u8>,
    }

    /// A model disk: files (inodes) and names, each with a cached and a durable state.
    /// A power loss keeps only the durable states; it keeps the names as of the last
    /// directory fsync, or (`keep_renames`: the journal committed the metadata of
    /// renames whose data was never written, as ext4 without `auto_da_alloc` and XFS
    /// may) as they are.
    #[derive(Debug, Default)]
    struct Disk {
        inodes: Vec<Inode>,
        names: BTreeMap<PathBuf, usize>,
        durable_names: BTreeMap<PathBuf, usize>,
        fail_writes: bool,
        fail_fsyncs: bool,
    }

    #[derive(Clone, Debug, Default)]
    struct ModelFs(Arc<Mutex<Disk>>);

    fn injected() -> io::Error {
        io::Error::other("injected I/O error")
    }

    impl ModelFs {
        fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
            self.0.lock().unwrap()
        }
        fn power_loss(&self, keep_renames: bool) {
            let mut d = self.disk();
            if !keep_renames {
                d.names = d.durable_names.clone();
            }
            for i in &mut d.inodes {
                i.cached = i.durable.clone();
            }
        }
    }

    impl Fs for ModelFs {
        fn create_dir_all(&mut self, _: &Path) -> io::Result<()> {
            Ok(())
        }
        fn read(&self, path: &Path) -> io::Result<String> {
            let d = self.disk();
            let i = *d.names.get(path).ok_or(io::ErrorKind::NotFound)?;
            Ok(String::from_utf8_lossy(&d.inodes[i].cached).into_owned())
        }
        fn write(&mut self, path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
            let mut d = self.disk();
            if d.fail_writes {
                return Err(injected());
            }
            let i = match d.names.get(path) {
                Some(i) => *i,
                None => {
                    d.inodes.push(Inode::default());
                    let i = d.inodes.len() - 1;
                    d.names.insert(path.to_path_buf(), i);
                    i
                }
            };
            d.inodes[i].cached = bytes.to_vec();
            if sync {
                if d.fail_fsyncs {
                    return Err(injected());
                }
                d.inodes[i].durable = bytes.to_vec();
            }
            Ok(())
        }
        fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
            let mut d = self.disk();
            let i = d.names.remove(from).ok_or(io::ErrorKind::NotFound)?;
            d.names.insert(to.to_path_buf(), i);
            Ok(())
        }
        fn remove(&mut self, path: &Path) -> io::Result<()> {
            self.disk().names.remove(path);
            Ok(())
        }
        fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
            let mut d = self.disk();
            if d.fail_fsyncs {
                return Err(injected());
            }
            let under = |p: &Path| p.parent() == Some(dir);
            d.durable_names.retain(|p, _| !under(p));
            let now: Vec<(PathBuf, usize)> = d
                .names
                .iter()
                .filter(|(p, _)| under(p))
                .map(|(p, i)| (p.clone(), *i))
                .collect();
            d.durable_names.extend(now);
            Ok(())
        }
    }

    fn model_open(disk: &ModelFs) -> Result<DirStorage, StorageError> {
        DirStorage::open_on(Box::new(disk.clone()), Path::new("/n0"), NodeId(0), "raft")
    }

    /// The durability check: a synced write survives a power loss (both kinds), before
    /// and after later writes that were never synced, and after a second sync.
    /// `Err` says what was lost.
    fn synced_writes_survive_power_loss(broken: Broken) -> Result<(), String> {
        for keep_renames in [false, true] {
            let disk = ModelFs::default();
            let reopen = |why: &str| -> Result<DirStorage, String> {
                disk.power_loss(keep_renames);
                let mut s = model_open(&disk).map_err(|e| format!("{why}: {e}"))?;
                s.broken = broken;
                Ok(s)
            };
            let mut s = model_open(&disk).unwrap();
            s.broken = broken;
            s.put("term", "7".into());
            assert_eq!(s.sync(), Ok(()));
            s.put("vote", "3".into()); // never synced
            let mut s = reopen("after the first sync")?;
            if s.get("term") != Some("7") {
                return Err(format!(
                    "term 7 was synced, then lost in a power loss (keep_renames {keep_renames}): read {:?}",
                    s.get("term")
                ));
            }
            s.put("term", "8".into());
            assert_eq!(s.sync(), Ok(()));
            s.put("term", "9".into()); // never synced
            let s = reopen("after the second sync")?;
            if s.get("term") != Some("8") {
                return Err(format!(
                    "term 8 was synced, then lost in a power loss (keep_renames {keep_renames}): read {:?}",
                    s.get("term")
                ));
            }
        }
        Ok(())
    }

    #[test]
    fn a_synced_write_survives_a_power_loss() {
        assert_eq!(synced_writes_survive_power_loss(Broken::default()), Ok(()));
    }

    /// The negative controls: the durability check fails when `sync` does nothing, when
    /// the new image is renamed over the old one without its own fsync (it comes back
    /// empty), and when the directory is not fsynced after the rename.
    #[test]
    fn the_durability_check_catches_a_sync_that_does_not_make_writes_durable() {
        for broken in [
            Broken {
                sync_does_nothing: true,
                ..Broken::default()
            },
            Broken {
                no_file_fsync: true,
                ..Broken::default()
            },
            Broken {
                no_dir_fsync: true,
                ..Broken::default()
            },
        ] {
            let found = synced_writes_survive_power_loss(broken);
            assert!(
                found
                    .as_ref()
                    .is_err_and(|e| e.contains("lost") || e.contains("corrupt")),
                "{broken:?} went unnoticed: {found:?}"
            );
        }
    }

    #[test]
    fn a_process_crash_keeps_writes_that_were_never_synced() {
        let disk = ModelFs::default();
        let mut s = model_open(&disk).unwrap();
        s.put("term", "7".into());
        assert_eq!(s.sync(), Ok(()));
        s.put("term", "8".into());
        s.put("vote", "2".into());
        s.delete("vote");
        // The process dies; the operating system (the page cache) keeps every write.
        let mut s = model_open(&disk).unwrap();
        assert_eq!(s.get("term"), Some("8"));
        assert_eq!(s.get("vote"), None);
        // Read back from the unsynced file, they are still not durable: a sync has work.
        assert_eq!(s.sync(), Ok(()));
        disk.power_loss(false);
        assert_eq!(model_open(&disk).unwrap().get("term"), Some("8"));
    }

    /// A write the disk refused fails the next sync, and every sync after it, until a
    /// rewrite gets through; then the write is durable. (Before: the sync fsynced the
    /// older file and returned Ok.)
    #[test]
    fn a_failed_write_fails_the_sync_until_a_rewrite_succeeds() {
        let disk = ModelFs::default();
        let mut s = model_open(&disk).unwrap();
        s.put("term", "7".into());
        assert_eq!(s.sync(), Ok(()));
        disk.disk().fail_writes = true;
        s.put("term", "8".into());
        assert_eq!(s.get("term"), Some("8"), "the node reads its own write");
        assert_eq!(s.sync(), Err(SyncError));
        assert_eq!(s.sync(), Err(SyncError), "still failing");
        disk.disk().fail_writes = false;
        assert_eq!(s.sync(), Ok(()));
        disk.power_loss(true);
        assert_eq!(model_open(&disk).unwrap().get("term"), Some("8"));
    }

    /// A failed fsync leaves the writes unsynced (as the simulator's `disk-error` does);
    /// the next sync writes them all again and makes them durable.
    #[test]
    fn a_failed_fsync_leaves_the_writes_for_the_next_sync() {
        let disk = ModelFs::default();
        let mut s = model_open(&disk).unwrap();
        s.put("term", "7".into());
        disk.disk().fail_fsyncs = true;
        assert_eq!(s.sync(), Err(SyncError));
        disk.disk().fail_fsyncs = false;
        assert_eq!(s.sync(), Ok(()));
        disk.power_loss(true);
        assert_eq!(model_open(&disk).unwrap().get("term"), Some("7"));
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tenure-runtime-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn writes_are_read_back_after_a_reopen_and_a_sync_keeps_them() {
        let dir = scratch("reopen");
        let mut s = DirStorage::open(&dir, NodeId(2), "raft").unwrap();
        s.put("term", "7".into());
        s.put("vote", "3".into());
        s.delete("vote");
        assert_eq!(s.sync(), Ok(()));
        assert!(dir.join(DURABLE).is_file() && !dir.join(UNSYNCED).exists());
        s.put("term", "8".into());
        let s = DirStorage::open(&dir, NodeId(2), "raft").unwrap();
        assert_eq!(s.get("term"), Some("8"));
        assert_eq!(s.get("vote"), None);
        // A torn unsynced file (a power loss) is passed over for the durable image.
        fs::write(dir.join(UNSYNCED), "").unwrap();
        let s = DirStorage::open(&dir, NodeId(2), "raft").unwrap();
        assert_eq!(s.get("term"), Some("7"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_nodes_directory_and_a_corrupt_one_are_refused() {
        let dir = scratch("owner");
        DirStorage::open(&dir, NodeId(1), "raft").unwrap();
        let e = DirStorage::open(&dir, NodeId(2), "raft").unwrap_err();
        assert!(
            e.to_string()
                .contains("belongs to node 1 of raft, not node 2 of raft"),
            "{e}"
        );
        let e = DirStorage::open(&dir, NodeId(1), "bully").unwrap_err();
        assert!(e.to_string().contains("not node 1 of bully"), "{e}");
        fs::write(dir.join("storage.json"), "{not json").unwrap();
        let e = DirStorage::open(&dir, NodeId(1), "raft").unwrap_err();
        assert!(e.to_string().contains("storage.json: corrupt"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_injected_disk_error_fails_the_sync() {
        let dir = scratch("diskerr");
        let mut s = DirStorage::open(&dir, NodeId(0), "raft").unwrap();
        s.put("k", "v".into());
        s.sync_fails = true;
        assert_eq!(s.sync(), Err(SyncError));
        fs::remove_dir_all(&dir).unwrap();
    }
}
