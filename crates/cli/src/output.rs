//! Output files are checked before a run, so a bad path costs nothing and the verdict is
//! never lost to a write error at the end: not an input, not a file the user wrote,
//! and writable (the file or its directory).
//!
//! One rule for every output flag (`--trace`, `--timeline`, `--history`, `--audit`): a
//! new or empty file is written; tenure's own earlier output of the same flag
//! (recognised by its content) is replaced, and tenure says so; any other file is
//! refused, before the run.

use std::fs::OpenOptions;
use std::path::Path;

/// What kind of output a path is for, to recognise tenure's own earlier files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--trace`: JSON lines of trace events (`{"event":...}`).
    Trace,
    /// `--timeline`: the HTML page (`<title>... — tenure timeline</title>`).
    Timeline,
    /// `--audit`: a hash-chained leadership log (`{"seq":0,...,"hash":...}`).
    Audit,
    /// `--history`: a Jepsen EDN history, one map a line (`{:process ...}`).
    History,
}

impl Kind {
    fn flag(self) -> &'static str {
        match self {
            Kind::Trace => "--trace",
            Kind::Timeline => "--timeline",
            Kind::Audit => "--audit",
            Kind::History => "--history",
        }
    }

    /// Whether `text` (the start of an existing file) is this kind of tenure output.
    fn is_ours(self, text: &str) -> bool {
        match self {
            Kind::Trace => text.starts_with("{\"event\":"),
            Kind::Timeline => {
                text.starts_with("<!DOCTYPE html>") && text.contains(" — tenure timeline</title>")
            }
            Kind::Audit => text.starts_with("{\"seq\":0,") && text.contains("\"hash\":"),
            Kind::History => text.starts_with("{:process "),
        }
    }
}

/// Checks that `out` may be written: it is none of `inputs`, it is not a file that
/// tenure did not write, and it (or, when new, its directory) is writable. Creates
/// nothing that stays: a probe file for a new path is removed at once. `Ok(true)` when
/// the write will replace tenure's own earlier output (the caller says so).
pub fn check(out: &Path, kind: Kind, inputs: &[&Path]) -> Result<bool, String> {
    let flag = kind.flag();
    let shown = out.display();
    for input in inputs {
        if std::fs::canonicalize(out)
            .ok()
            .is_some_and(|o| std::fs::canonicalize(input).ok() == Some(o))
        {
            return Err(format!(
                "{flag} {shown}: refusing to write over the input file {}",
                input.display()
            ));
        }
    }
    match std::fs::metadata(out) {
        Ok(meta) if meta.is_dir() => {
            Err(format!("{flag} {shown}: is a directory; give a file name"))
        }
        Ok(meta) => {
            let head = read_head(out).map_err(|e| format!("{flag} {shown}: cannot read: {e}"))?;
            if meta.len() > 0 && !kind.is_ours(&head) {
                return Err(format!(
                    "{flag} {shown}: the file exists and tenure did not write it; refusing to overwrite it (remove it or choose another name)"
                ));
            }
            OpenOptions::new()
                .append(true)
                .open(out)
                .map(|_| meta.len() > 0)
                .map_err(|e| format!("{flag} {shown}: cannot write: {e}"))
        }
        Err(_) => {
            let probe = OpenOptions::new().write(true).create_new(true).open(out);
            match probe {
                Ok(f) => {
                    drop(f);
                    let _ = std::fs::remove_file(out);
                    Ok(false)
                }
                Err(e) => Err(format!("{flag} {shown}: cannot write: {e}")),
            }
        }
    }
}

/// The first few kilobytes of `path`, as text (lossy).
fn read_head(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut buf = vec![0; 4096];
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tenure-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_path_is_fine_and_left_absent() {
        let d = dir("new");
        let out = d.join("t.jsonl");
        check(&out, Kind::Trace, &[]).unwrap();
        assert!(!out.exists());
    }

    #[test]
    fn a_user_file_is_refused_and_kept() {
        let d = dir("user");
        let out = d.join("notes.html");
        std::fs::write(&out, "my notes").unwrap();
        let err = check(&out, Kind::Timeline, &[]).unwrap_err();
        assert!(err.contains("tenure did not write it"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "my notes");
    }

    #[test]
    fn tenure_output_and_empty_files_may_be_replaced() {
        let d = dir("ours");
        let trace = d.join("t.jsonl");
        std::fs::write(&trace, "{\"event\":\"observed\"}\n").unwrap();
        assert_eq!(check(&trace, Kind::Trace, &[]), Ok(true));
        let page = d.join("t.html");
        std::fs::write(&page, "<!DOCTYPE html>\n<title>x — tenure timeline</title>").unwrap();
        assert_eq!(check(&page, Kind::Timeline, &[]), Ok(true));
        let empty = d.join("e.html");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(check(&empty, Kind::Timeline, &[]), Ok(false));
        // A trace is not a timeline.
        assert!(check(&trace, Kind::Timeline, &[]).is_err());
        let history = d.join("h.edn");
        std::fs::write(&history, "{:process 4, :type :invoke, :f :write}\n").unwrap();
        assert_eq!(check(&history, Kind::History, &[]), Ok(true));
        let audit = d.join("a.jsonl");
        std::fs::write(
            &audit,
            "{\"seq\":0,\"event\":\"elected\",\"hash\":\"ab\"}\n",
        )
        .unwrap();
        assert_eq!(check(&audit, Kind::Audit, &[]), Ok(true));
        // Each kind only its own.
        assert!(check(&audit, Kind::History, &[]).is_err());
        assert!(check(&history, Kind::Trace, &[]).is_err());
    }

    #[test]
    fn inputs_directories_and_unwritable_paths_are_refused() {
        let d = dir("bad");
        let input = d.join("s.toml");
        std::fs::write(&input, "x").unwrap();
        let err = check(&input, Kind::Trace, &[&input]).unwrap_err();
        assert!(err.contains("input file"), "{err}");
        let err = check(&d, Kind::Trace, &[]).unwrap_err();
        assert!(err.contains("is a directory"), "{err}");
        let err = check(&d.join("no/such/dir/t.jsonl"), Kind::Trace, &[]).unwrap_err();
        assert!(err.contains("cannot write"), "{err}");
    }
}
