//! JUnit XML for CI test tabs (GitHub, GitLab, Jenkins): `tenure fuzz --junit`, `tenure
//! fuzz merge --junit` and `tenure verify --junit`.
//!
//! The elements and attributes are those of the JUnit schema Jenkins validates against
//! (`junit-10.xsd` of the xunit plugin, the Maven Surefire format): `<testsuites>` with
//! `name`, `tests`, `failures`, `errors`, `time`; `<testsuite>` with `name`, `tests`,
//! `failures`, `errors`, `skipped`, `time` and `<properties>`; `<testcase>` with `name`,
//! `classname`, `time`, and at most one `<failure>`, `<error>` or `<skipped>` (`message`,
//! `type`, text). The test suite validates written files against that schema (vendored
//! in `crates/cli/tests/data/junit/`). Written with quick-xml, which escapes.

use quick_xml::events::BytesText;
use quick_xml::Writer;
use std::io;
use std::path::Path;

/// How one test case ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Passed,
    /// A check failed (`type` names the check).
    Failure {
        ty: String,
        message: String,
        text: String,
    },
    /// No verdict: a panic, nondeterminism, a run limit, bad input.
    Error {
        ty: String,
        message: String,
        text: String,
    },
    /// Judged nothing, so neither passed nor failed.
    Skipped {
        message: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub seconds: Option<f64>,
    pub verdict: Verdict,
    /// Printed under the case (`<system-out>`): what it judged, replay commands.
    pub out: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub name: String,
    pub seconds: Option<f64>,
    pub properties: Vec<(String, String)>,
    pub cases: Vec<Case>,
}

impl Suite {
    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.verdict)).count()
    }
    fn failures(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Failure { .. }))
    }
    fn errors(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Error { .. }))
    }
    fn skipped(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Skipped { .. }))
    }
}

/// `12.345`: seconds as Surefire writes them.
fn secs(s: f64) -> String {
    format!("{:.3}", s.max(0.0))
}

/// The document, as text.
pub fn render(name: &str, suites: &[Suite]) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let errors: usize = suites.iter().map(Suite::errors).sum();
    // A sum that starts at 0.0 (an empty `sum()` of f64 is -0.0, which Surefire's time
    // pattern refuses).
    let seconds = suites
        .iter()
        .filter_map(|s| s.seconds)
        .fold(0.0_f64, |a, b| a + b.max(0.0));
    let result: io::Result<()> = (|| {
        w.write_event(quick_xml::events::Event::Decl(
            quick_xml::events::BytesDecl::new("1.0", Some("UTF-8"), None),
        ))?;
        w.create_element("testsuites")
            .with_attributes([
                ("name", name),
                ("tests", &tests.to_string()),
                ("failures", &failures.to_string()),
                ("errors", &errors.to_string()),
                ("time", &secs(seconds)),
            ])
            .write_inner_content(|w| {
                for s in suites {
                    suite(w, s)?;
                }
                Ok(())
            })?;
        Ok(())
    })();
    result.expect("writing into memory does not fail");
    let mut text = String::from_utf8(w.into_inner()).expect("quick-xml writes UTF-8");
    text.push('\n');
    text
}

fn suite(w: &mut Writer<Vec<u8>>, s: &Suite) -> io::Result<()> {
    let mut attrs = vec![
        ("name".to_string(), s.name.clone()),
        ("tests".into(), s.cases.len().to_string()),
        ("failures".into(), s.failures().to_string()),
        ("errors".into(), s.errors().to_string()),
        ("skipped".into(), s.skipped().to_string()),
    ];
    if let Some(t) = s.seconds {
        attrs.push(("time".into(), secs(t)));
    }
    w.create_element("testsuite")
        .with_attributes(attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .write_inner_content(|w| {
            if !s.properties.is_empty() {
                w.create_element("properties").write_inner_content(|w| {
                    for (k, v) in &s.properties {
                        w.create_element("property")
                            .with_attributes([("name", k.as_str()), ("value", v.as_str())])
                            .write_empty()?;
                    }
                    Ok(())
                })?;
            }
            for c in &s.cases {
                case(w, c)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn case(w: &mut Writer<Vec<u8>>, c: &Case) -> io::Result<()> {
    let mut attrs = vec![
        ("name".to_string(), c.name.clone()),
        ("classname".into(), c.classname.clone()),
    ];
    if let Some(t) = c.seconds {
        attrs.push(("time".into(), secs(t)));
    }
    let el = w
        .create_element("testcase")
        .with_attributes(attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if c.verdict == Verdict::Passed && c.out.is_none() {
        el.write_empty()?;
        return Ok(());
    }
    el.write_inner_content(|w| {
        match &c.verdict {
            Verdict::Passed => {}
            Verdict::Failure { ty, message, text } | Verdict::Error { ty, message, text } => {
                let tag = if matches!(c.verdict, Verdict::Failure { .. }) {
                    "failure"
                } else {
                    "error"
                };
                w.create_element(tag)
                    .with_attributes([("type", ty.as_str()), ("message", message.as_str())])
                    .write_text_content(BytesText::new(text))?;
            }
            Verdict::Skipped { message } => {
                w.create_element("skipped")
                    .with_attribute(("message", message.as_str()))
                    .write_empty()?;
            }
        }
        if let Some(out) = &c.out {
            w.create_element("system-out")
                .write_text_content(BytesText::new(out))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Checks before any work that `path` can be written: it does not exist (nothing the
/// user has is overwritten) and its folder exists or can be made.
pub fn check_path(path: &Path) -> Result<(), String> {
    let shown = path.display();
    if path.exists() {
        return Err(format!(
            "--junit {shown}: exists; tenure does not overwrite files: remove it or name another"
        ));
    }
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("--junit {shown}: cannot create its folder: {e}")),
        _ => Ok(()),
    }
}

/// Writes the document to `path` (a new file).
pub fn write(path: &Path, name: &str, suites: &[Suite]) -> Result<(), String> {
    use std::io::Write;
    let text = render(name, suites);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("--junit {}: cannot write: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_escapes() {
        let suites = [Suite {
            name: "raft/forget-vote under chaos".into(),
            seconds: Some(1.5),
            properties: vec![("seeds".into(), "0..300".into())],
            cases: vec![
                Case {
                    name: "leader-liveness".into(),
                    classname: "raft.forget-vote".into(),
                    seconds: None,
                    verdict: Verdict::Passed,
                    out: None,
                },
                Case {
                    name: "single-leader-per-term [crash A, restart A]".into(),
                    classname: "raft.forget-vote".into(),
                    seconds: None,
                    verdict: Verdict::Failure {
                        ty: "single-leader-per-term".into(),
                        message: "n0 & n1 <both> led".into(),
                        text: "replay: tenure run a.toml --seed 51".into(),
                    },
                    out: None,
                },
            ],
        }];
        let xml = render("tenure fuzz", &suites);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
        assert!(
            xml.contains(
                r#"<testsuites name="tenure fuzz" tests="2" failures="1" errors="0" time="1.500">"#
            ),
            "{xml}"
        );
        assert!(
            xml.contains(r#"message="n0 &amp; n1 &lt;both&gt; led""#),
            "{xml}"
        );
        assert!(
            xml.contains("replay: tenure run a.toml --seed 51</failure>"),
            "{xml}"
        );
    }
}
