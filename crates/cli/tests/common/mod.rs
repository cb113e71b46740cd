//! What the CLI tests share: the repository root, and the built `tenure` binary run from
//! it as a user runs it.
#![allow(dead_code)] // each test binary uses its own part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root (scenario paths in the tests are relative to it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the built `tenure` with `args` from the repository's root.
pub fn tenure(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("tenure runs")
}

/// Its standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its standard output, then its standard error.
pub fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr))
}
