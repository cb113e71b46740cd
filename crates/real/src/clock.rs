//! tenure's clock shim: a real server's wall clock stepped (`clock-jump`), monotonic
//! clocks untouched. `clock_shim.c`, compiled at run time with the system's `cc` into a
//! temporary directory, is preloaded into the server (`LD_PRELOAD`); it answers
//! `CLOCK_REALTIME` (and `_COARSE`), `gettimeofday` and `time` from the kernel by the
//! raw syscall plus an offset it reads from an 8-byte file mapped into its memory,
//! which [`Offset::step`] rewrites in place. (Debian's libfaketime 0.9.10 cannot start
//! Debian's redis-server 7.0.15: "unexpected recursive calls to clock_gettime()".)

use crate::servers::{on_path, TempDir};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the offset file.
pub const OFFSET_ENV: &str = "TENURE_CLOCK_OFFSET_FILE";

/// The shim's source.
pub const SOURCE: &str = include_str!("clock_shim.c");

/// The compiled shim, in a temporary directory removed with it.
pub struct Shim {
    dir: TempDir,
}

impl Shim {
    /// Compiles the shim with `cc`; `Err` (bad input) if there is no `cc` or it fails.
    pub fn build() -> Result<Shim, String> {
        let cc = on_path("cc").ok_or_else(|| {
            "a server `clock-jump` needs tenure's clock shim, compiled at run time with `cc`, which is not on PATH: install Debian's package gcc".to_string()
        })?;
        let dir = TempDir::new("shim").map_err(|e| format!("a temporary directory: {e}"))?;
        let src = dir.path().join("clock_shim.c");
        std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
        let lib = dir.path().join("clock_shim.so");
        let out = std::process::Command::new(cc)
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&lib)
            .arg(&src)
            .output()
            .map_err(|e| format!("cc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cc could not build tenure's clock shim: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Shim { dir })
    }

    pub fn library(&self) -> PathBuf {
        self.dir.path().join("clock_shim.so")
    }
}

/// One server's clock offset file (nanoseconds, little-endian i64).
pub struct Offset {
    file: std::fs::File,
    ns: i64,
}

impl Offset {
    /// A new offset file at `path`, offset zero.
    pub fn create(path: &Path) -> std::io::Result<Offset> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)?;
        file.write_all_at(&0i64.to_le_bytes(), 0)?;
        Ok(Offset { file, ns: 0 })
    }

    /// Steps the clock by `by` nanoseconds, in place (never truncated: the server has
    /// it mapped); returns the offset now.
    pub fn step(&mut self, by: i64) -> std::io::Result<i64> {
        let ns = self.ns.saturating_add(by);
        self.file.write_all_at(&ns.to_le_bytes(), 0)?;
        self.ns = ns;
        Ok(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `date` under the shim reads the wall clock plus the offset: an hour ahead after
    /// a step of an hour, the machine's time at offset zero (the negative control).
    #[test]
    fn the_shim_steps_the_wall_clock_of_a_process_by_the_offset() {
        let shim = Shim::build().expect("cc builds the shim");
        let dir = TempDir::new("shim-test").unwrap();
        let file = dir.path().join("offset");
        let mut offset = Offset::create(&file).unwrap();
        let ahead = |file: &Path| -> i64 {
            let out = std::process::Command::new("date")
                .arg("+%s")
                .env("LD_PRELOAD", shim.library())
                .env(OFFSET_ENV, file)
                .output()
                .unwrap();
            let shown: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            #[allow(clippy::disallowed_methods)] // the machine's clock, to compare with
            let now = std::time::SystemTime::now()
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            shown - now
        };
        assert!(ahead(&file).abs() < 60, "offset zero: the machine's time");
        offset.step(3_600_000_000_000).unwrap();
        let a = ahead(&file);
        assert!((3_540..3_660).contains(&a), "an hour ahead, got {a}s");
        assert_eq!(offset.step(-3_600_000_000_000).unwrap(), 0);
    }
}
