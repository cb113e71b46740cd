//! What the CLI tests share: the repository root, and the built `tenure` binary run from
//! it as a user runs it.

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

/// A fresh scratch directory for one test: `<target tmp>/<group>/<name>`, emptied.
pub fn scratch(group: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// Its standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Its standard output, then its standard error.
pub fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr))
}

/// Validates a JUnit XML file against the JUnit schema Jenkins uses (vendored in
/// tests/data/junit/) with `xmllint --schema` (Debian: libxml2-utils; `.ci/run` installs
/// it and sets TENURE_REQUIRE_XMLLINT=1, so CI never skips this). Without xmllint, and
/// not required, the file is still read as XML and its root checked, and a note says the
/// schema was not checked.
pub fn validate_junit(file: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit/junit-10.xsd");
    match Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(file)
        .output()
    {
        Ok(o) => assert!(
            o.status.success(),
            "{} does not validate against the JUnit schema:\n{}",
            file.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            assert!(
                std::env::var_os("TENURE_REQUIRE_XMLLINT").is_none(),
                "xmllint is required here (TENURE_REQUIRE_XMLLINT) but cannot run: {e}"
            );
            eprintln!(
                "note: xmllint not found ({e}); {} read as XML, not checked against the schema \
                 (install libxml2-utils to check it)",
                file.display()
            );
            let text = std::fs::read_to_string(file).unwrap();
            let mut reader = quick_xml::Reader::from_str(&text);
            let mut root = None;
            loop {
                match reader.read_event() {
                    Ok(quick_xml::events::Event::Start(e)) if root.is_none() => {
                        root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                    }
                    Ok(quick_xml::events::Event::Eof) => break,
                    Ok(_) => {}
                    Err(e) => panic!("{}: not XML: {e}", file.display()),
                }
            }
            assert_eq!(root.as_deref(), Some("testsuites"));
        }
    }
}
