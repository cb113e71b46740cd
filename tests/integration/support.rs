//! Shared helpers: where the repository's files are, and loading scenarios.

use std::path::{Path, PathBuf};
use tenure_sim::Prepared;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repo root")
        .to_path_buf()
}

/// Every scenario file under `scenarios/`, sorted.
pub fn scenario_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable scenarios dir") {
            let p = entry.expect("dir entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "toml") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root().join("scenarios"), &mut out);
    out.sort();
    out
}

pub fn prepare(path: &Path) -> Prepared {
    let scenario = tenure_scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
    Prepared::new(scenario).unwrap_or_else(|e| panic!("{e}"))
}
