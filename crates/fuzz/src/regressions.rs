//! The regressions file: seeds that once failed, committed to the user's repository and
//! re-run first on every sweep (as proptest does with its `proptest-regressions`).
//!
//! `tenure-regressions/<test name>.txt` under the package's directory; one seed a line,
//! `#` starts a comment. Beside each seed, the violation it found (written by the sweep)
//! and, on the `pinned:` line under it, what it pins: the bug and its fix, written by
//! the person who commits it (the sweep leaves [`PINNED_PLACEHOLDER`] there, and
//! [`unexplained`] finds the seeds still without it):
//!
//! ```text
//! # Seeds that failed a tenure sweep; re-run first on every sweep. Commit this file.
//! # Under each seed, `pinned:` says what it pins: the bug it found and the fix.
//! 17 # single-leader-per-term: n0 and n1 both believed they led term 3 (...)
//! #   pinned: a restarted node forgot its vote; fixed by syncing the vote before replying
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const HEADER: &str =
    "# Seeds that failed a tenure sweep; re-run first on every sweep. Commit this file.\n\
     # Under each seed, `pinned:` says what it pins: the bug it found and the fix.\n";

/// What the sweep writes on a new seed's `pinned:` line, for a person to replace.
pub const PINNED_PLACEHOLDER: &str =
    "(say what this seed pins: the bug it found and its fix, then commit)";

/// The seeds of a regressions file's text whose `pinned:` line is missing or still the
/// placeholder: a committed file should explain every seed.
pub fn unexplained(text: &str) -> Vec<u64> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.split('#').next().unwrap_or("").trim();
        let Ok(seed) = body.parse::<u64>() else {
            continue;
        };
        let pinned = lines[i + 1..]
            .iter()
            .take_while(|l| l.trim_start().starts_with('#'))
            .find_map(|l| {
                l.trim_start()
                    .trim_start_matches('#')
                    .trim()
                    .strip_prefix("pinned:")
            });
        if pinned.is_none_or(|p| p.trim().is_empty() || p.trim() == PINNED_PLACEHOLDER) {
            out.push(seed);
        }
    }
    out
}

/// Where `test`'s seeds live under `package_dir`. Characters other than letters,
/// digits, `-` and `_` become `_` (`tests::finds_it` -> `tests__finds_it.txt`).
pub fn path(package_dir: &Path, test: &str) -> PathBuf {
    let file: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    package_dir
        .join("tenure-regressions")
        .join(format!("{file}.txt"))
}

/// The package's directory: `CARGO_MANIFEST_DIR` (cargo sets it when running tests),
/// else the current directory (where cargo runs tests from).
pub fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The seeds of a regressions file's text, in order. A line that is not a seed is an
/// error naming its line number.
pub fn parse(text: &str) -> Result<Vec<u64>, String> {
    let mut seeds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body = line.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let seed = body.parse::<u64>().map_err(|_| {
            format!(
                "line {}: `{body}` is not a seed (one whole number a line, `#` starts a comment)",
                i + 1
            )
        })?;
        seeds.push(seed);
    }
    Ok(seeds)
}

/// The seeds saved at `path` (none if the file does not exist).
pub fn load(path: &Path) -> Result<Vec<u64>, String> {
    match fs::read_to_string(path) {
        Ok(text) => parse(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Appends `seed` with `comment` (one line) unless the file already holds it; creates
/// the file (with its header) and its folder as needed. True if the seed was added.
pub fn save(path: &Path, seed: u64, comment: &str) -> Result<bool, String> {
    let at = |e: io::Error| format!("{}: {e}", path.display());
    let mut text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => HEADER.to_string(),
        Err(e) => return Err(at(e)),
    };
    let seeds = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if seeds.contains(&seed) {
        return Ok(false);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let comment = comment.replace(['\n', '\r'], " ");
    text.push_str(&format!(
        "{seed} # {comment}\n#   pinned: {PINNED_PLACEHOLDER}\n"
    ));
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(at)?;
    }
    fs::write(path, text).map_err(at)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the target directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "tenure-regressions-test-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn file_names_are_the_test_path_made_safe() {
        assert_eq!(
            path(Path::new("/p"), "tests::finds_it"),
            PathBuf::from("/p/tenure-regressions/tests__finds_it.txt")
        );
        assert_eq!(
            path(Path::new("/p"), "sweep-7"),
            PathBuf::from("/p/tenure-regressions/sweep-7.txt")
        );
    }

    #[test]
    fn seeds_are_read_with_comments_and_blank_lines() {
        let text = "# header\n\n17 # single-leader-per-term: two leaders\n  4\n";
        assert_eq!(parse(text), Ok(vec![17, 4]));
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(
            parse("# h\n17\nseventeen # oops\n"),
            Err(
                "line 3: `seventeen` is not a seed (one whole number a line, `#` starts a comment)"
                    .into()
            )
        );
    }

    #[test]
    fn save_creates_the_file_appends_once_and_load_reads_it_back() {
        let dir = scratch("save");
        let file = path(&dir, "t");
        assert_eq!(load(&file), Ok(vec![]));
        assert_eq!(save(&file, 17, "checker: two\nlines"), Ok(true));
        assert_eq!(save(&file, 17, "again"), Ok(false));
        assert_eq!(save(&file, 4, "another"), Ok(true));
        assert_eq!(load(&file), Ok(vec![17, 4]));
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            format!(
                "{HEADER}17 # checker: two lines\n#   pinned: {PINNED_PLACEHOLDER}\n\
                 4 # another\n#   pinned: {PINNED_PLACEHOLDER}\n"
            )
        );
        let text = fs::read_to_string(&file).unwrap();
        assert_eq!(unexplained(&text), vec![17, 4]);
        let explained = text.replacen(PINNED_PLACEHOLDER, "a lost vote; fixed by a sync", 1);
        assert_eq!(unexplained(&explained), vec![4]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
