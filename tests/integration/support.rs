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
    Prepared::new(scenario, &zoo()).unwrap_or_else(|e| panic!("{e}"))
}

/// Real code run through an adapter: a seed costs about ten times a zoo model's (raft-rs:
/// ~16 ms of CPU against ~1.7 ms for the zoo's Raft, 5 nodes under `chaos`).
const REAL_CODE: &[&str] = &["raft-rs"];

/// How many of `seeds` the catalogue-wide sweeps run for `protocol`: at most 25 for real
/// code (CI time), whose crate's own tests and the sweeps its book page reports cover it
/// further.
pub fn seeds_for(protocol: &str, seeds: u64) -> u64 {
    if REAL_CODE.contains(&protocol) {
        seeds.min(25)
    } else {
        seeds
    }
}

/// The zoo's protocols, as the `tenure` binary sees them.
pub fn zoo() -> tenure_sim::Protocols {
    static ZOO: std::sync::OnceLock<tenure_sim::Protocols> = std::sync::OnceLock::new();
    ZOO.get_or_init(tenure_zoo_prebuilt::protocols).clone()
}

/// The zoo as the model checker sees it.
pub fn models() -> tenure_models::Models {
    tenure_zoo_prebuilt::models()
}

/// Fuzzes each (profile, seed) of `protocol`'s `variant` alone and says, in words, every
/// seed that did not pass, and every one where `judged` (a check) was not judged.
pub fn seeds_not_passing(
    protocol: &str,
    variant: &str,
    cells: &[(&str, u64)],
    judged: Option<&str>,
) -> Vec<String> {
    use tenure_fuzz::{fuzz, FuzzOptions, SeedResult, Target};
    let zoo = zoo();
    let mut bad = Vec::new();
    for &(profile, seed) in cells {
        let target = Target::for_protocol(&zoo, protocol, Some(variant), Some(profile))
            .unwrap_or_else(|e| panic!("{protocol}/{variant} {profile}: {e}"));
        let options = FuzzOptions {
            jobs: 1,
            ..FuzzOptions::default()
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        fuzz(&target, seed..seed + 1, &options, &stop, |o| {
            match &o.result {
                SeedResult::Pass => {
                    if let Some((check, why)) = o
                        .not_judged
                        .iter()
                        .find(|(c, _)| Some(c.as_str()) == judged)
                    {
                        bad.push(format!("{variant} {profile} seed {seed}: {check} {why:?}"));
                    }
                }
                SeedResult::Fail(f) => bad.push(format!(
                    "{variant} {profile} seed {seed}: {} at {}: {}",
                    f.checker, f.time, f.message
                )),
                other => bad.push(format!("{variant} {profile} seed {seed}: {other:?}")),
            }
        });
    }
    bad
}
