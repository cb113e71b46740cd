//! Helpers shared by the runtime's tests.

use std::path::{Path, PathBuf};
use tenure_core::Record;

/// A fresh, empty scratch directory `<group>/<name>` under cargo's test temporary dir.
pub fn scratch(group: &str, name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The observations a node wrote in `dir` (lines that do not parse are skipped).
pub fn records(dir: &Path) -> Vec<Record> {
    std::fs::read_to_string(dir.join("observations.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
