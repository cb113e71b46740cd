//! A node's [`Storage`] in a directory, with the semantics the simulator gives it: a write
//! reaches the operating system at once (later reads see it, and it survives the
//! process being killed), and becomes durable only when `sync` (fsync) returns.
//!
//! Layout (crash-safe: every file is replaced whole by a rename):
//! - `node.json`: whose directory this is (`{"node": 3, "protocol": "raft"}`), written
//!   and synced when the directory is first used; another node's directory, or another
//!   protocol's, is refused.
//! - `storage.json`: every key and value. A write replaces it (write `storage.json.tmp`,
//!   rename over it) without fsync; `sync` fsyncs the file and the directory.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tenure_core::{NodeId, Storage, SyncError};

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

/// Storage in a directory.
#[derive(Debug)]
pub struct DirStorage {
    dir: PathBuf,
    map: BTreeMap<String, String>,
    /// Set by the host to make every `sync` fail (an injected disk error).
    pub sync_fails: bool,
}

fn io_at(p: &Path) -> impl Fn(io::Error) -> StorageError + '_ {
    move |e| StorageError::Io(p.to_path_buf(), e)
}

/// fsync a directory, so a rename in it is durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl DirStorage {
    /// Opens (or starts) node `me`'s storage of `protocol` in `dir`.
    pub fn open(dir: &Path, me: NodeId, protocol: &str) -> Result<DirStorage, StorageError> {
        fs::create_dir_all(dir).map_err(io_at(dir))?;
        let owner_path = dir.join("node.json");
        let wanted = Owner {
            node: me.0,
            protocol: protocol.to_string(),
        };
        match fs::read_to_string(&owner_path) {
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
                replace(dir, "node.json", &text, true).map_err(io_at(&owner_path))?;
            }
            Err(e) => return Err(StorageError::Io(owner_path, e)),
        }
        let path = dir.join("storage.json");
        let map = match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| StorageError::Corrupt(path.clone(), e.to_string()))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(StorageError::Io(path, e)),
        };
        Ok(DirStorage {
            dir: dir.to_path_buf(),
            map,
            sync_fails: false,
        })
    }

    fn write_through(&self) {
        let text = serde_json::to_string(&self.map).expect("strings serialize");
        // A write the OS refuses (a full disk) is as if the process had died before it:
        // the protocol sees the write in memory, a restart does not. Said on stderr.
        if let Err(e) = replace(&self.dir, "storage.json", &text, false) {
            eprintln!("tenure-runtime: cannot write {}: {e}", self.dir.display());
        }
    }
}

/// Replaces `dir/name` whole with `text` (write a temporary file, rename it over), with
/// fsync of both (and the directory) if `durable`.
fn replace(dir: &Path, name: &str, text: &str, durable: bool) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    if durable {
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(name))?;
    if durable {
        sync_dir(dir)?;
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
        let path = self.dir.join("storage.json");
        let result = match File::open(&path) {
            Ok(f) => f.sync_all().and_then(|()| sync_dir(&self.dir)),
            // Nothing written yet: nothing to make durable.
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        result.map_err(|_| SyncError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = DirStorage::open(&dir, NodeId(2), "raft").unwrap();
        assert_eq!(s.get("term"), Some("7"));
        assert_eq!(s.get("vote"), None);
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
