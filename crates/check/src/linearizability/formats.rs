//! Histories in and out:
//!
//! * `jepsen-log`: the Jepsen etcd logs of Porcupine's test data
//!   (`INFO  jepsen.util - 3 :invoke :cas [1 4]`, fields separated by tabs or
//!   spaces); other log lines and the nemesis's are skipped.
//! * `edn`: Jepsen EDN histories: operation maps one per line
//!   (`{:process 0, :type :invoke, :f :write, :value 3}`, as Jepsen's `history.edn`, also
//!   Porcupine's kv histories, which add `:key`), or one vector `[...]` or list `(...)`
//!   of them (Knossos's test data), with `;` comments anywhere, extra keys (`:time`,
//!   `:index`, `:node`, `:error`) ignored, keyword or string `:type` and `:f`, and
//!   `#jepsen.independent/tuple [k v]` values split into a key and a value. The maps are
//!   read with the `edn-rs` crate; this module only finds where each map starts, so that
//!   errors name their line.
//! * `jsonl`: tenure's own JSON lines, one [`Event`] per line
//!   (`{"process":0,"type":"invoke","f":"write","value":3}`).
//!
//! Keywords become strings with their colon (`:timed-out` -> `":timed-out"`); the
//! operation name `:f` and the type `:type` lose it.

use super::history::{edn_string, Event, EventType, Value};
use edn_rs::Edn;
use std::fmt;

/// A history file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    JepsenLog,
    Edn,
    Jsonl,
}

impl Format {
    /// The names `--format` accepts.
    pub const NAMES: &'static [&'static str] = &["jepsen-log", "edn", "jsonl"];

    pub fn from_name(s: &str) -> Option<Format> {
        Some(match s {
            "jepsen-log" | "porcupine" => Format::JepsenLog,
            "edn" => Format::Edn,
            "jsonl" | "json" => Format::Jsonl,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::JepsenLog => "jepsen-log",
            Format::Edn => "edn",
            Format::Jsonl => "jsonl",
        }
    }

    /// The format of `text`, from its first meaningful line.
    pub fn detect(text: &str) -> Result<Format, FormatError> {
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if t.is_empty() || t.starts_with(';') {
                continue;
            }
            if t.contains("jepsen.util") {
                return Ok(Format::JepsenLog);
            }
            if let Some(rest) = t.strip_prefix('{') {
                return Ok(if rest.trim_start().starts_with('"') {
                    Format::Jsonl
                } else {
                    Format::Edn
                });
            }
            if t.starts_with('[') || t.starts_with('(') || t.starts_with('#') {
                return Ok(Format::Edn);
            }
            return Err(FormatError {
                line: i + 1,
                message: format!(
                    "cannot tell the history's format from this line; give --format ({})",
                    Format::NAMES.join(", ")
                ),
            });
        }
        Ok(Format::Jsonl)
    }
}

/// A history that cannot be read: the line and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn err(line: usize, message: impl Into<String>) -> FormatError {
    FormatError {
        line,
        message: message.into(),
    }
}

/// Reads the events of a history in `format`.
pub fn parse(text: &str, format: Format) -> Result<Vec<Event>, FormatError> {
    match format {
        Format::JepsenLog => parse_jepsen_log(text),
        Format::Edn => parse_edn(text),
        Format::Jsonl => parse_jsonl(text),
    }
}

/// Porcupine's Jepsen logs: `INFO  jepsen.util - PROCESS :TYPE :F VALUE`, fields
/// separated by tabs or spaces.
pub fn parse_jepsen_log(text: &str) -> Result<Vec<Event>, FormatError> {
    const MARK: &str = "jepsen.util - ";
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let Some(at) = line.find(MARK) else {
            continue; // another logger's line
        };
        let rest = line[at + MARK.len()..].trim();
        let fields = token(rest).and_then(|(p, r)| {
            let (k, r) = token(r)?;
            let (f, r) = token(r)?;
            Some((p, k, f, r.trim()))
        });
        let Some((process, kind, f, value)) = fields else {
            return Err(err(
                n,
                "expected PROCESS :TYPE :F VALUE after `jepsen.util - `",
            ));
        };
        let value = if value.is_empty() { "nil" } else { value };
        if process.starts_with(':') {
            continue; // :nemesis
        }
        let process: u64 = process
            .parse()
            .map_err(|_| err(n, format!("process: expected a number, got `{process}`")))?;
        let kind = kind
            .strip_prefix(':')
            .and_then(EventType::from_name)
            .ok_or_else(|| {
                err(
                    n,
                    format!("type: expected :invoke, :ok, :fail or :info, got `{kind}`"),
                )
            })?;
        let f = f.trim_start_matches(':').to_string();
        let edn: Edn = value
            .parse()
            .map_err(|e| err(n, format!("value: not EDN ({e}): `{value}`")))?;
        let value = to_value(&edn).map_err(|m| err(n, format!("value: {m}")))?;
        events.push(Event {
            process,
            kind,
            f,
            key: None,
            value,
            time: None,
            line: n,
        });
    }
    Ok(events)
}

/// The first whitespace-separated token of `s` and the rest.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn to_value(e: &Edn) -> Result<Value, String> {
    Ok(match e {
        Edn::Nil => Value::Nil,
        Edn::Int(i) => Value::Int(*i),
        Edn::UInt(u) => Value::Int(i64::try_from(*u).map_err(|_| format!("{u} is too large"))?),
        Edn::Str(s) => Value::Str(s.clone()),
        Edn::Key(k) => Value::Str(k.clone()),
        Edn::Symbol(s) => Value::Str(s.clone()),
        Edn::Bool(b) => Value::Str(b.to_string()),
        Edn::Vector(v) => Value::List(
            v.clone()
                .to_vec()
                .iter()
                .map(to_value)
                .collect::<Result<_, _>>()?,
        ),
        Edn::List(v) => Value::List(
            v.clone()
                .to_vec()
                .iter()
                .map(to_value)
                .collect::<Result<_, _>>()?,
        ),
        Edn::Tagged(_, inner) => to_value(inner)?,
        other => {
            return Err(format!(
                "unsupported value {other:?} (nil, integers, strings, keywords and vectors are)"
            ))
        }
    })
}

/// `text` with every `;` comment outside a string blanked out (newlines kept), so
/// that byte offsets and line numbers stay those of the file.
fn blank_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut in_comment = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
                out.push(c);
            } else {
                // Same byte length, so offsets are kept.
                out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            }
            continue;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ';' {
            in_comment = true;
            out.push(' ');
            continue;
        }
        out.push(c);
    }
    out
}

/// Where each operation map of an EDN history starts (line) and its text. The history is
/// maps one after another (one per line, as Jepsen's `history.edn`), or one vector
/// `[...]` or list `(...)` of them (as Knossos's test data), with `;` comments anywhere;
/// a map may be tagged (`#jepsen.history.Op{...}`).
fn edn_forms(text: &str) -> Result<Vec<(usize, String)>, FormatError> {
    let clean = blank_comments(text);
    let bytes = clean.as_bytes();
    let mut forms = Vec::new();
    let mut line = 1;
    // Open brackets, each with the line it opened on.
    let mut stack: Vec<(u8, usize)> = Vec::new();
    // Depth of the operation maps: 1 inside a top-level vector or list, else 0. Set at
    // the first bracket.
    let mut base: Option<usize> = None;
    // A whole top-level vector or list has been closed: nothing may follow.
    let mut closed = false;
    let mut start: Option<(usize, usize)> = None;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
        }
        if in_string {
            match c {
                b'\\' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        line += 1;
                    }
                    i += 1;
                }
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        let depth = stack.len();
        let at_top = start.is_none() && depth == base.unwrap_or(0);
        if c.is_ascii_whitespace() || c == b',' {
            i += 1;
            continue;
        }
        if closed {
            return Err(err(
                line,
                "unexpected text after the history's closing bracket",
            ));
        }
        match c {
            b'"' => {
                if at_top {
                    return Err(err(line, "expected an operation map `{...}`"));
                }
                in_string = true;
            }
            b'{' | b'[' | b'(' => {
                if base.is_none() {
                    base = Some(usize::from(c != b'{'));
                }
                if start.is_none() && depth == base.unwrap_or(0) {
                    if c != b'{' {
                        return Err(err(line, "expected an operation map `{...}`"));
                    }
                    start = Some((line, i));
                }
                stack.push((c, line));
            }
            b'}' | b']' | b')' => {
                let open = match c {
                    b'}' => b'{',
                    b']' => b'[',
                    _ => b'(',
                };
                match stack.pop() {
                    Some((o, _)) if o == open => {}
                    Some((o, l)) => {
                        return Err(err(
                            line,
                            format!(
                                "`{}` closes the `{}` opened at line {l}",
                                c as char, o as char
                            ),
                        ))
                    }
                    None => return Err(err(line, format!("unbalanced `{}`", c as char))),
                }
                if stack.len() == base.unwrap_or(0) {
                    if let Some((l, s)) = start.take() {
                        forms.push((l, clean[s..=i].to_string()));
                    }
                }
                if stack.is_empty() && base == Some(1) {
                    closed = true;
                }
            }
            b'#' if at_top => {
                base.get_or_insert(0);
                start = Some((line, i)); // a tagged map: #jepsen.history.Op{...}
            }
            _ if at_top => {
                return Err(err(line, "expected an operation map `{...}`"));
            }
            _ => {}
        }
        i += 1;
    }
    if in_string {
        let l = start.map_or(line, |(l, _)| l);
        return Err(err(l, "unterminated string at the end of the file"));
    }
    if let Some((o, l)) = stack.last() {
        let l = start.map_or(*l, |(s, _)| s);
        return Err(err(
            l,
            format!("unterminated `{}` at the end of the file", *o as char),
        ));
    }
    Ok(forms)
}

/// The tag Jepsen gives the `[key value]` tuples of `jepsen.independent` (a multi-key
/// history of a single-key model: each key is checked on its own).
const INDEPENDENT_TUPLE: &str = "jepsen.independent/tuple";

/// Jepsen EDN: operation maps, one per line, or in one vector or list (see
/// [`edn_forms`]). Keys other than `:process`, `:type`, `:f`, `:value`, `:key` and `:time`
/// (`:index`, `:node`, `:error`...) are ignored. `:type` and `:f` may be keywords or
/// strings. A `:value` tagged `#jepsen.independent/tuple [k v]` is the value `v` on key
/// `k`. Operations of a process that is not a number (`:nemesis`) are skipped.
pub fn parse_edn(text: &str) -> Result<Vec<Event>, FormatError> {
    let mut events = Vec::new();
    for (line, form) in edn_forms(text)? {
        // A tagged map (`#jepsen.history.Op{...}`): the map alone.
        let map_text = form.find('{').map_or(form.as_str(), |at| &form[at..]);
        let edn: Edn = map_text
            .parse()
            .map_err(|e| err(line, format!("not an EDN map: {e}")))?;
        let Edn::Map(map) = edn else {
            return Err(err(line, "expected an operation map `{...}`"));
        };
        let map = map.to_map();
        let field = |k: &str| map.get(k);
        let name = |e: Option<&Edn>| match e {
            Some(Edn::Key(k)) => Some(k.trim_start_matches(':').to_string()),
            Some(Edn::Str(s) | Edn::Symbol(s)) => Some(s.clone()),
            _ => None,
        };
        let process = match field(":process") {
            Some(Edn::UInt(u)) => *u,
            Some(Edn::Int(i)) if *i >= 0 => *i as u64,
            Some(Edn::Key(_)) => continue, // :nemesis
            Some(other) => {
                return Err(err(
                    line,
                    format!(":process: expected a number, got {other:?}"),
                ))
            }
            None => return Err(err(line, "missing :process")),
        };
        let kind = name(field(":type"))
            .and_then(|t| EventType::from_name(&t))
            .ok_or_else(|| err(line, ":type: expected :invoke, :ok, :fail or :info"))?;
        let f = name(field(":f"))
            .ok_or_else(|| err(line, ":f: expected the operation's name, e.g. :write"))?;
        let mut key = match field(":key") {
            Some(v) => Some(to_value(v).map_err(|m| err(line, format!(":key: {m}")))?),
            None => None,
        };
        let value = match field(":value") {
            Some(Edn::Tagged(tag, inner)) if tag == INDEPENDENT_TUPLE => {
                let pair = to_value(inner).map_err(|m| err(line, format!(":value: {m}")))?;
                match pair {
                    Value::List(mut kv) if kv.len() == 2 && key.is_none() => {
                        let v = kv.pop().unwrap_or(Value::Nil);
                        key = kv.pop();
                        v
                    }
                    other => {
                        return Err(err(
                            line,
                            format!(
                                ":value: #{INDEPENDENT_TUPLE} needs [key value] (and no :key), got {other}"
                            ),
                        ))
                    }
                }
            }
            Some(v) => to_value(v).map_err(|m| err(line, format!(":value: {m}")))?,
            None => Value::Nil,
        };
        let time = match field(":time") {
            Some(Edn::UInt(u)) => Some(*u),
            Some(Edn::Int(i)) if *i >= 0 => Some(*i as u64),
            // Jepsen's times are nanoseconds since the test began; anything else is
            // informative only and dropped.
            _ => None,
        };
        events.push(Event {
            process,
            kind,
            f,
            key,
            value,
            time,
            line,
        });
    }
    Ok(events)
}

/// tenure's JSON lines: one [`Event`] per line; blank lines are skipped.
pub fn parse_jsonl(text: &str) -> Result<Vec<Event>, FormatError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let de = &mut serde_json::Deserializer::from_str(line);
        let mut e: Event = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                err(i + 1, e.inner().to_string())
            } else {
                err(i + 1, format!("{path}: {}", e.inner()))
            }
        })?;
        e.line = i + 1;
        events.push(e);
    }
    Ok(events)
}

/// One event as a Jepsen EDN map.
pub fn event_to_edn(e: &Event) -> String {
    let mut s = format!(
        "{{:process {}, :type :{}, :f :{}",
        e.process,
        e.kind.name(),
        keyword_name(&e.f)
    );
    if let Some(k) = &e.key {
        s.push_str(&format!(", :key {}", edn_value(k)));
    }
    s.push_str(&format!(", :value {}", edn_value(&e.value)));
    if let Some(t) = e.time {
        s.push_str(&format!(", :time {t}"));
    }
    s.push('}');
    s
}

fn keyword_name(f: &str) -> String {
    f.chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.*+!?<>=/".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A value in EDN: strings that were keywords (`":x"`) become keywords again.
fn edn_value(v: &Value) -> String {
    match v {
        Value::Str(s) if s.len() > 1 && s.starts_with(':') && !s.contains(char::is_whitespace) => {
            s.clone()
        }
        Value::Str(s) => edn_string(s),
        Value::List(l) => format!(
            "[{}]",
            l.iter().map(edn_value).collect::<Vec<_>>().join(" ")
        ),
        v => v.to_string(),
    }
}

/// A history as Jepsen EDN, one map per line.
pub fn to_edn(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        s.push_str(&event_to_edn(e));
        s.push('\n');
    }
    s
}

/// A history as tenure's JSON lines.
pub fn to_jsonl(events: &[Event]) -> String {
    let mut s = String::new();
    for e in events {
        s.push_str(&serde_json::to_string(e).expect("events serialize"));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_porcupine_jepsen_log_lines_with_tabs_or_spaces() {
        let text = "INFO  jepsen.util - 2\t:invoke\t:cas\t[3 0]\n\
                    INFO  jepsen.util - 2   :fail   :cas    [3 0]\n\
                    INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n\
                    INFO  jepsen.util - 4\t:info\t:write\t:timed-out\n";
        let ev = parse(text, Format::detect(text).unwrap()).unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].f, "cas");
        assert_eq!(ev[0].value, Value::List(vec![Value::Int(3), Value::Int(0)]));
        assert_eq!(ev[1].kind, EventType::Fail);
        assert_eq!(ev[2].value, Value::Str(":timed-out".into()));
        assert_eq!(ev[2].line, 4);
    }

    #[test]
    fn reads_edn_maps_per_line_and_in_one_vector() {
        let per_line = "{:process 0, :type :invoke, :f :get, :key \"7\", :value nil}\n\
                        {:process 0, :type :ok, :f :get, :key \"7\", :value \"x}\"}\n";
        let vector = format!("[{}]", per_line);
        for text in [per_line.to_string(), vector] {
            let ev = parse(&text, Format::detect(&text).unwrap()).unwrap();
            assert_eq!(ev.len(), 2, "{text}");
            assert_eq!(ev[1].value, Value::Str("x}".into()));
            assert_eq!(ev[1].key, Some(Value::Str("7".into())));
            assert_eq!(ev[1].line, 2);
        }
    }

    #[test]
    fn edn_errors_name_the_line_and_field() {
        let text = "{:process 0, :type :invoke, :f :read}\n\n{:process 0, :type :done, :f :read}\n";
        let e = parse_edn(text).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains(":type"), "{e}");
        let e = parse_edn("{:process 0, :type :invoke, :f :read}\n{:process 1, :type :ok\n")
            .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse_edn("{:type :invoke, :f :read}").unwrap_err();
        assert!(e.message.contains(":process"), "{e}");
    }

    #[test]
    fn reads_an_edn_list_with_comments_between_operations() {
        // Knossos's rethink-fail-minimal.edn, shortened: a list, `;` comments between
        // the maps and inside one, a `;` inside a string that is no comment.
        let text = "; a history\n\
                    ({:type :invoke, :f :write, :value 0, :process 0}\n\
                    {:type :ok, :f :write, :value 0, :process 0}\n\
                    ; Value is 0, then we concurrently write 4, read 3.\n\
                    {:type :invoke, :f :read, :value nil, :process 1 ; inside\n\
                    }\n\
                    {:type :ok, :f :read, :value \"3;x\", :process 1}\n\
                    )\n";
        assert_eq!(Format::detect(text).unwrap(), Format::Edn);
        let ev = parse(text, Format::Edn).unwrap();
        assert_eq!(ev.len(), 4);
        assert_eq!(
            ev.iter().map(|e| e.line).collect::<Vec<_>>(),
            [2, 3, 5, 7],
            "each event names the line its map starts on"
        );
        assert_eq!(ev[3].value, Value::Str("3;x".into()));
    }

    #[test]
    fn an_error_inside_an_edn_list_names_its_line() {
        let text = "(\n\
                    {:type :invoke, :f :read, :process 1}\n\
                    ; a comment\n\
                    {:type :okay, :f :read, :value 3, :process 1}\n\
                    )\n";
        let e = parse_edn(text).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains(":type"), "{e}");
        // A bare value between the maps, an unclosed list, a mismatched bracket.
        let e = parse_edn("(\n{:type :invoke, :f :read, :process 1}\n3\n)").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = parse_edn("(\n{:type :invoke, :f :read, :process 1}\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.contains("unterminated `(`"), "{e}");
        let e = parse_edn("(\n{:type :invoke, :f :read, :process 1}\n]").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("opened at line 1"), "{e}");
        let e = parse_edn("[{:type :invoke, :f :read, :process 1}]\n{:x 1}").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn reads_a_jepsen_history_edn_with_extra_keys_and_string_names() {
        // As a real Jepsen test run writes history.edn: one map per line, :index, :time,
        // :node, :error (a vector or a map), nemesis operations; some tools write :type
        // and :f as strings.
        let text = "{:index 0, :time 14083245, :type :invoke, :process 0, :f :read, :value nil}\n\
                    {:index 1, :time 15000000, :type :info, :process :nemesis, :f :start, :value nil}\n\
                    {:index 2, :time 20083245, :type :ok, :process 0, :f :read, :value 3, :node \"n1\"}\n\
                    {:index 3, :time 30083245, :type :invoke, :process 1, :f :cas, :value [3 4]}\n\
                    {:index 4, :time 40083245, :type :fail, :process 1, :f :cas, :value [3 4], :error [:cas-failed \"expected 3\"]}\n\
                    {:index 5, :time 50000000, :type \"invoke\", :process 1, :f \"write\", :value 1, :error {:why :none}}\n\
                    #jepsen.history.Op{:index 6, :time 60000000, :type :ok, :process 1, :f :write, :value 1}\n";
        let ev = parse(text, Format::detect(text).unwrap()).unwrap();
        assert_eq!(ev.len(), 6);
        assert_eq!(ev[1].value, Value::Int(3));
        assert_eq!(ev[1].time, Some(20083245));
        assert_eq!(ev[3].kind, EventType::Fail);
        assert_eq!((ev[4].kind, ev[4].f.as_str()), (EventType::Invoke, "write"));
        assert_eq!((ev[5].kind, ev[5].line), (EventType::Ok, 7));
    }

    #[test]
    fn independent_tuples_become_key_and_value() {
        let text =
            "{:process 0, :type :invoke, :f :cas, :value #jepsen.independent/tuple [7 [1 2]]}\n\
                    {:process 0, :type :ok, :f :cas, :value #jepsen.independent/tuple [7 [1 2]]}\n";
        let ev = parse_edn(text).unwrap();
        assert_eq!(ev[0].key, Some(Value::Int(7)));
        assert_eq!(ev[1].value, Value::List(vec![Value::Int(1), Value::Int(2)]));
        let e = parse_edn(
            "{:process 0, :type :invoke, :f :read, :value #jepsen.independent/tuple [7]}",
        )
        .unwrap_err();
        assert!(e.message.contains("[key value]"), "{e}");
    }

    #[test]
    fn jsonl_errors_name_the_field() {
        let e = parse_jsonl("{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"}\n{\"process\":\"x\",\"type\":\"ok\",\"f\":\"read\"}").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("process"), "{e}");
    }

    #[test]
    fn edn_and_jsonl_round_trip() {
        let text = "{:process 3, :type :invoke, :f :cas, :value [1 2], :time 10}\n\
                    {:process 3, :type :info, :f :cas, :value :timed-out}\n\
                    {:process 1, :type :invoke, :f :put, :key \"k\", :value \"a \\\"b\\\"\"}\n";
        let ev = parse_edn(text).unwrap();
        assert_eq!(to_edn(&ev), text);
        let back = parse_jsonl(&to_jsonl(&ev)).unwrap();
        assert_eq!(to_edn(&back), text);
    }

    #[test]
    fn an_unknown_first_line_asks_for_a_format() {
        let e = Format::detect("\nhello\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("--format"));
    }
}
