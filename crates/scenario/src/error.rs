//! Errors that name the file, the line and the field, and how a field path such as
//! `fault[2].node` is found in the source text (via toml_edit's spans).

use std::fmt;
use std::ops::Range;

/// A bad scenario: where (file, line, column) and what (the field path and a message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    /// 1-based; `None` when the error has no place in the text (e.g. the file could not
    /// be read).
    pub line: Option<usize>,
    /// 1-based, in characters.
    pub column: Option<usize>,
    /// The dotted/indexed field path (`protocol.variant`, `fault[2].node`); empty for
    /// errors about the file as a whole (malformed TOML, unreadable file).
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    /// ``file:line:col: field `x`: message``, leaving out what is unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": ")?;
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error at byte `offset` of `source` (or without a place when `None`).
    pub(crate) fn at_offset(
        file: &str,
        source: &str,
        offset: Option<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = match offset {
            Some(offset) => {
                let (l, c) = line_col(source, offset);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ScenarioError {
            file: file.to_string(),
            line,
            column,
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// An error at `field`, located in `source` by [`locate`].
    pub(crate) fn at_field(
        file: &str,
        source: &str,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        // An empty (or blank) file has no line to point at but its first.
        let offset = locate(source, field).or(source.trim().is_empty().then_some(0));
        ScenarioError::at_offset(file, source, offset, field, message)
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source`.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The field path of the key written on the line holding byte `offset`, read from the
/// text alone (for text that does not parse): the last table header above it
/// (`[[fault]]` headers counted, so `fault[2]`) joined with the line's own key. A header
/// line gives the header's path. `None` when the line has neither.
pub(crate) fn key_at(source: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[offset..]
        .find('\n')
        .map_or(source.len(), |i| offset + i);
    let clean = |k: &str| -> String {
        k.split('.')
            .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\''))
            .collect::<Vec<_>>()
            .join(".")
    };
    let mut table = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in source[..line_end].lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = clean(name);
            let index = match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c - 1
                }
                None => {
                    counts.push((name.clone(), 1));
                    0
                }
            };
            table = format!("{name}[{index}]");
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            table = clean(name);
        }
    }
    let line = source[line_start..line_end].trim();
    if line.starts_with('[') {
        return (!table.is_empty()).then_some(table);
    }
    let key = line.split_once('=').map(|(k, _)| clean(k))?;
    let valid = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    };
    if !valid(&key) {
        return None;
    }
    Some(if table.is_empty() {
        key
    } else {
        format!("{table}.{key}")
    })
}

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PathStep {
    Key(String),
    Index(usize),
}

/// Splits `fault[2].groups[0][1]` into keys and indices. Keys are split at dots, so a
/// quoted TOML key containing a dot is not reachable (the parent is found instead).
pub(crate) fn split_path(path: &str) -> Vec<PathStep> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(PathStep::Key(key.to_string()));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let Some(end) = stripped.find(']') else { break };
            match stripped[..end].parse() {
                Ok(i) => steps.push(PathStep::Index(i)),
                Err(_) => steps.push(PathStep::Key(stripped[..end].to_string())),
            }
            rest = &stripped[end + 1..];
        }
    }
    steps
}

/// The byte offset in `source` where `path` is written: the key of the last step that
/// exists (so `fault[2].node` points at `node = ...`, or at `[[fault]]` number 2 when
/// that table has no `node`). The root, and text that does not parse, give `None`...
/// except that a path whose first key is missing points at the start of the file, where
/// top-level keys belong.
pub fn locate(source: &str, path: &str) -> Option<usize> {
    walk(source, path).map(|(offset, _)| offset)
}

/// Whether every step of `path` is written in `source`.
pub(crate) fn is_written(source: &str, path: &str) -> bool {
    walk(source, path).is_some_and(|(_, exact)| exact)
}

/// [`locate`], and whether the whole path was found.
fn walk(source: &str, path: &str) -> Option<(usize, bool)> {
    if source.trim().is_empty() {
        return None; // a scenario built in code, not read from a file
    }
    let doc = toml_edit::ImDocument::parse(source).ok()?;
    let steps = split_path(path);
    if steps.is_empty() {
        return None;
    }
    let mut best: Option<Range<usize>> = Some(0..0);
    let mut node = Node::Item(doc.as_item());
    let mut found = 0;
    for step in &steps {
        let Some((span, next)) = node.step(step) else {
            break;
        };
        found += 1;
        if span.is_some() {
            best = span;
        }
        node = next;
    }
    best.map(|r| (r.start, found == steps.len()))
}

/// Where the walk is: toml_edit distinguishes items (tables, arrays of tables) from
/// values (inline tables and arrays), and an array of tables hands out bare tables.
enum Node<'a> {
    Item(&'a toml_edit::Item),
    Table(&'a toml_edit::Table),
    Value(&'a toml_edit::Value),
}

impl<'a> Node<'a> {
    /// The span of `step` below this node, and the node it leads to.
    fn step(&self, step: &PathStep) -> Option<(Option<Range<usize>>, Node<'a>)> {
        match (self, step) {
            (Node::Item(toml_edit::Item::Table(t)), _) => Node::Table(t).step(step),
            (Node::Item(toml_edit::Item::Value(v)), _) => Node::Value(v).step(step),
            (Node::Item(toml_edit::Item::ArrayOfTables(a)), PathStep::Index(i)) => {
                let t = a.get(*i)?;
                Some((t.span(), Node::Table(t)))
            }
            (Node::Table(t), PathStep::Key(k)) => {
                let (key, item) = t.get_key_value(k)?;
                Some((key.span().or_else(|| item.span()), Node::Item(item)))
            }
            (Node::Value(toml_edit::Value::InlineTable(t)), PathStep::Key(k)) => {
                let (key, item) = t.get_key_value(k)?;
                Some((key.span().or_else(|| item.span()), Node::Item(item)))
            }
            (Node::Value(toml_edit::Value::Array(a)), PathStep::Index(i)) => {
                let v = a.get(*i)?;
                Some((v.span(), Node::Value(v)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = r#"seed = 3
duration = "20s"

[protocol]
name = "raft"
[protocol.params]
election_timeout = ["150ms", "300ms"]
inner = { a = 1 }

[[fault]]
at = "1s"
kind = "heal"

[[fault]]
at = "2s"
kind = "partition"
groups = [[0, 1], [2]]
"#;

    fn line_of(path: &str) -> Option<usize> {
        locate(SOURCE, path).map(|o| line_col(SOURCE, o).0)
    }

    #[test]
    fn paths_split_into_keys_and_indices() {
        assert_eq!(
            split_path("fault[2].groups[0][1]"),
            vec![
                PathStep::Key("fault".into()),
                PathStep::Index(2),
                PathStep::Key("groups".into()),
                PathStep::Index(0),
                PathStep::Index(1),
            ]
        );
        assert_eq!(
            split_path("check.leader-liveness.within"),
            vec![
                PathStep::Key("check".into()),
                PathStep::Key("leader-liveness".into()),
                PathStep::Key("within".into()),
            ]
        );
    }

    #[test]
    fn fields_are_found_on_their_lines() {
        assert_eq!(line_of("seed"), Some(1));
        assert_eq!(line_of("protocol.name"), Some(5));
        assert_eq!(line_of("protocol.params.election_timeout"), Some(7));
        assert_eq!(line_of("protocol.params.inner.a"), Some(8));
        assert_eq!(line_of("fault[0]"), Some(10));
        assert_eq!(line_of("fault[1].kind"), Some(16));
        assert_eq!(line_of("fault[1].groups[1][0]"), Some(17));
        assert_eq!(
            line_col(SOURCE, locate(SOURCE, "fault[1].groups[1][0]").unwrap()),
            (17, 20)
        );
    }

    #[test]
    fn missing_fields_fall_back_to_the_nearest_parent() {
        assert_eq!(line_of("fault[1].node"), Some(14));
        assert_eq!(line_of("fault[7].node"), Some(10));
        assert_eq!(line_of("protocol.variant"), Some(4));
        assert_eq!(line_of("expect.checker"), Some(1));
        assert_eq!(line_of(""), None);
        assert_eq!(locate("", "seed"), None);
        assert_eq!(locate("not toml = = =", "seed"), None);
        assert!(is_written(SOURCE, "fault[1].groups[0]"));
        assert!(!is_written(SOURCE, "fault[1].node"));
    }

    #[test]
    fn keys_are_found_from_the_text_alone() {
        let key = |needle: &str| key_at(SOURCE, SOURCE.find(needle).unwrap());
        assert_eq!(key("3\n").as_deref(), Some("seed"));
        assert_eq!(
            key("\"150ms\"").as_deref(),
            Some("protocol.params.election_timeout")
        );
        assert_eq!(key("\"2s\"").as_deref(), Some("fault[1].at"));
        assert_eq!(key("[[0, 1]").as_deref(), Some("fault[1].groups"));
        assert_eq!(key("[protocol]").as_deref(), Some("protocol"));
        assert_eq!(key_at("= 1\n", 2), None);
    }

    #[test]
    fn errors_display_what_they_know() {
        let e = ScenarioError::at_field("a.toml", SOURCE, "protocol.name", "boom");
        assert_eq!(e.to_string(), "a.toml:5:1: field `protocol.name`: boom");
        let e = ScenarioError::at_offset("a.toml", SOURCE, None, "", "unreadable");
        assert_eq!(e.to_string(), "a.toml: unreadable");
        assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
    }
}
