//! Reading a scenario file: TOML -> raw serde structs (with `serde_path_to_error`, so a
//! wrong type or unknown field names its path) -> [`Scenario`], plus every check that
//! needs no protocol (ranges, time order, the expectation naming one of the checks).
//!
//! Fault events are read in a second step: each `[[fault]]` table is taken apart into
//! `at`, `kind` and the rest, and the rest is read as the [`Fault`] variant `kind` names,
//! so errors inside a fault still name `fault[i].<field>`.

use crate::error::ScenarioError;
use crate::limits::{limits, Limits, MAX_CLOCK_STEP_NS};
use crate::model::*;
use crate::serde_util::{human, seed, table_to_json};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use tenure_core::{format_duration, NodeId, RoleSpec};

/// Reads and parses the scenario at `path` (named in errors as given).
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: None,
        column: None,
        field: String::new(),
        message: format!("cannot read the scenario: {e}"),
    })?;
    let source = text(&bytes, &file)?;
    parse(source, &file)
}

/// `bytes` as UTF-8 text, or an error naming the byte offset and line of the first
/// invalid byte.
pub fn text<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, ScenarioError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let before = &bytes[..offset];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        ScenarioError {
            file: file.to_string(),
            line: Some(line),
            column: Some(column),
            field: String::new(),
            message: format!(
                "invalid UTF-8 at byte {offset} (0x{:02x}); scenario files are UTF-8 text",
                bytes[offset]
            ),
        }
    })
}

/// Parses scenario text; `file` names it in errors and gives the default `name`.
/// The process-wide [`limits`] apply.
pub fn parse(source: &str, file: &str) -> Result<Scenario, ScenarioError> {
    parse_with(source, file, &limits())
}

/// [`parse`] within the given limits.
pub fn parse_with(source: &str, file: &str, limits: &Limits) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = serde_path_to_error::deserialize(toml::Deserializer::new(source))
        .map_err(|e| {
            let (path, inner) = (e.path().clone(), e.into_inner());
            de_error(file, source, "", &path, &inner)
        })?;
    Reader {
        file,
        source,
        limits,
    }
    .scenario(raw)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    #[serde(default = "default_seed", deserialize_with = "seed")]
    seed: u64,
    #[serde(deserialize_with = "human::deserialize")]
    duration: Duration,
    protocol: RawProtocol,
    #[serde(default)]
    cluster: RawCluster,
    #[serde(default)]
    network: NetworkSpec,
    #[serde(default)]
    clock: Vec<ClockSpec>,
    #[serde(default)]
    disk: DiskSpec,
    #[serde(default)]
    processing: ProcessingSpec,
    #[serde(default)]
    fault: Vec<toml::Table>,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    check: toml::Table,
    #[serde(default)]
    expect: RawExpect,
    profile: Option<toml::Table>,
}

fn default_seed() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProtocol {
    name: String,
    #[serde(default = "default_variant")]
    variant: String,
    #[serde(default)]
    params: toml::Table,
}

fn default_variant() -> String {
    "correct".to_string()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    nodes: Option<u32>,
    #[serde(default, deserialize_with = "ordered_roles")]
    roles: Option<Vec<RoleSpec>>,
}

/// `[cluster.roles]` in the order written (toml keeps document order for tables).
fn ordered_roles<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<RoleSpec>>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<RoleSpec>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a table of role = count")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut roles = Vec::new();
            while let Some((role, count)) = map.next_entry::<String, u32>()? {
                roles.push(RoleSpec::new(role, count));
            }
            Ok(roles)
        }
    }
    d.deserialize_map(Visitor).map(Some)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    outcome: Outcome,
    checker: Option<String>,
    /// Checks expected not to be judged (any reason: vacuous, could not fail, too short,
    /// undecided); `not_judged` is the same list under its newer name.
    #[serde(default)]
    vacuous: Vec<String>,
    #[serde(default)]
    not_judged: Vec<String>,
}

#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Outcome {
    #[default]
    Pass,
    Violation,
}

/// What a deserializer error offers: a message, and maybe a byte span.
pub(crate) trait DeError {
    fn message(&self) -> String;
    fn span(&self) -> Option<std::ops::Range<usize>>;
}

impl DeError for toml::de::Error {
    fn message(&self) -> String {
        toml::de::Error::message(self).to_string()
    }
    fn span(&self) -> Option<std::ops::Range<usize>> {
        toml::de::Error::span(self)
    }
}

impl DeError for serde_json::Error {
    fn message(&self) -> String {
        self.to_string()
    }
    fn span(&self) -> Option<std::ops::Range<usize>> {
        None
    }
}

/// `prefix` followed by a serde path, written the way [`crate::locate`] reads it.
pub(crate) fn join_path(prefix: &str, path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = prefix.to_string();
    for segment in path {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

fn child(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The name in "unknown field `x`" / "missing field `x`" messages.
fn quoted_after<'a>(message: &'a str, lead: &str) -> Option<&'a str> {
    let rest = message.strip_prefix(lead)?.strip_prefix('`')?;
    Some(&rest[..rest.find('`')?])
}

/// A deserializer error at `prefix` + `path`, located in `source`: unknown and missing
/// fields at their own name (or nearest parent), other errors at the span the
/// deserializer gave (the bad value) or else at the path.
pub(crate) fn de_error(
    file: &str,
    source: &str,
    prefix: &str,
    path: &serde_path_to_error::Path,
    inner: &dyn DeError,
) -> ScenarioError {
    let field = join_path(prefix, path);
    // toml's syntax errors span several lines ("invalid string\nexpected ...").
    let message = inner
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let message = if message.is_empty() {
        // toml says nothing for some syntax errors (`key =` with no value).
        "this is not valid TOML here (a value is missing or malformed)".to_string()
    } else {
        message
    };
    // serde's "unknown variant `x`, expected one of `a`, `b`": in tenure a variant is a
    // protocol's variant, so the value is named by its field (`unknown outcome
    // `violated``), with the values it may take and a suggestion.
    let message = match quoted_after(&message, "unknown variant ") {
        Some(value) => {
            let expected: Vec<&str> = message
                .split_once("expected ")
                .map(|(_, list)| list.split('`').skip(1).step_by(2).collect())
                .unwrap_or_default();
            let what = field.rsplit('.').next().unwrap_or("value");
            let what = what.split('[').next().unwrap_or(what);
            let what = if what.is_empty() { "value" } else { what };
            format!(
                "unknown {what} `{value}`; expected one of: {}{}",
                expected.join(", "),
                crate::suggest::did_you_mean(value, expected.iter().copied())
            )
        }
        None => message,
    };
    let message = match quoted_after(&message, "unknown field ") {
        Some(name) => {
            let expected: Vec<&str> = message
                .split_once("expected ")
                .map(|(_, list)| list.split('`').skip(1).step_by(2).collect())
                .unwrap_or_default();
            let hint = crate::suggest::did_you_mean(name, expected);
            format!("{message}{hint}")
        }
        None => message,
    };
    for lead in ["unknown field ", "missing field "] {
        if let Some(name) = quoted_after(&message, lead) {
            // serde_path_to_error has already stepped into an unknown key, not into a
            // missing one.
            let last = path.iter().next_back();
            let field = match last {
                Some(serde_path_to_error::Segment::Map { key }) if key == name => field,
                _ => child(&field, name),
            };
            return ScenarioError::at_field(file, source, &field, message);
        }
    }
    match inner.span() {
        Some(span) if field.is_empty() => {
            // toml refuses some values before serde sees a path (an integer above
            // i64::MAX): name the key written on that line.
            let field = crate::error::key_at(source, span.start).unwrap_or_default();
            let message = if field == "seed" && message.contains("too large") {
                format!("{message}; write a seed above {} as a string, e.g. seed = \"18446744073709551615\"", i64::MAX)
            } else {
                message
            };
            ScenarioError::at_offset(file, source, Some(span.start), &field, message)
        }
        Some(span) => ScenarioError::at_offset(file, source, Some(span.start), &field, message),
        None if field.is_empty() => ScenarioError::at_offset(file, source, None, "", message),
        None => ScenarioError::at_field(file, source, &field, message),
    }
}

struct Reader<'a> {
    file: &'a str,
    source: &'a str,
    limits: &'a Limits,
}

impl Reader<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at_field(self.file, self.source, field, message)
    }

    fn json(&self, prefix: &str, t: &toml::Table) -> Result<serde_json::Value, ScenarioError> {
        table_to_json(t).map_err(|(path, m)| self.err(&format!("{prefix}{path}"), m))
    }

    fn scenario(&self, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        if raw.duration.is_zero() {
            return Err(self.err("duration", "must be more than zero"));
        }
        if raw.duration > self.limits.max_duration {
            return Err(self.err(
                "duration",
                format!(
                    "`{}` is above the limit of `{}` simulated; raise it with --max-duration",
                    format_duration(raw.duration),
                    format_duration(self.limits.max_duration)
                ),
            ));
        }
        if raw.fault.len() > self.limits.max_fault_events {
            return Err(self.err(
                &format!("fault[{}]", self.limits.max_fault_events),
                format!(
                    "{} fault events are more than the limit of {}; raise it with --max-faults",
                    raw.fault.len(),
                    self.limits.max_fault_events
                ),
            ));
        }
        let name = match raw.name {
            Some(name) => name,
            None => Path::new(self.file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let protocol = ProtocolSpec {
            name: raw.protocol.name,
            variant: raw.protocol.variant,
            params: self.json("protocol.params", &raw.protocol.params)?,
        };
        let cluster = self.cluster(raw.cluster)?;
        self.network(&raw.network)?;
        self.clocks(&raw.clock)?;
        let mut faults = Vec::with_capacity(raw.fault.len());
        for (i, table) in raw.fault.iter().enumerate() {
            let event = self.fault(i, table)?;
            let field = format!("fault[{i}].at");
            if event.at >= raw.duration {
                return Err(self.err(
                    &field,
                    format!(
                        "`{}` is not before the end of the run (duration `{}`)",
                        format_duration(event.at),
                        format_duration(raw.duration)
                    ),
                ));
            }
            if let Some(prev) = faults.last().map(|e: &FaultEvent| e.at) {
                if event.at < prev {
                    return Err(self.err(
                        &field,
                        format!(
                            "`{}` is before the previous event's `{}`; list events in time order",
                            format_duration(event.at),
                            format_duration(prev)
                        ),
                    ));
                }
            }
            faults.push(event);
        }
        let checks = self.checks(&raw.checks, &raw.check)?;
        let mut expected_not_judged = raw.expect.vacuous.clone();
        expected_not_judged.extend(raw.expect.not_judged.iter().cloned());
        for name in &expected_not_judged {
            if !raw.checks.contains(name) {
                return Err(self.err(
                    "expect.vacuous",
                    format!(
                        "`{name}` is not one of the checks [{}]",
                        raw.checks.join(", ")
                    ),
                ));
            }
        }
        let expect_vacuous = expected_not_judged;
        let expect = self.expect(raw.expect, &raw.checks)?;
        let profile = match &raw.profile {
            Some(t) => Some(self.json("profile", t)?),
            None => None,
        };
        Ok(Scenario {
            file: self.file.to_string(),
            source: self.source.to_string(),
            name,
            description: raw.description,
            seed: raw.seed,
            duration: raw.duration,
            protocol,
            cluster,
            network: raw.network,
            clocks: raw.clock,
            disk: raw.disk,
            processing: raw.processing,
            faults,
            checks,
            expect,
            expect_vacuous,
            profile,
        })
    }

    fn cluster(&self, raw: RawCluster) -> Result<ClusterSpec, ScenarioError> {
        match (raw.nodes, raw.roles) {
            (Some(_), Some(_)) => Err(self.err(
                "cluster.nodes",
                "write either `nodes` or `[cluster.roles]`, not both",
            )),
            (Some(0), None) => Err(self.err("cluster.nodes", "a cluster needs at least one node")),
            (Some(n), None) if n > self.limits.max_nodes => Err(self.err(
                "cluster.nodes",
                format!(
                    "{n} nodes are more than the limit of {}; raise it with --max-nodes",
                    self.limits.max_nodes
                ),
            )),
            (Some(n), None) => Ok(ClusterSpec::Nodes(n)),
            (None, roles) => Ok(ClusterSpec::Roles(roles.unwrap_or_default())),
        }
    }

    fn network(&self, network: &NetworkSpec) -> Result<(), ScenarioError> {
        if let Some(timeout) = network.connection_timeout {
            if network.mode == Some(crate::model::NetworkMode::Datagram) {
                return Err(self.err(
                    "network.connection_timeout",
                    "a connection timeout applies only with mode = \"stream\" (datagrams have no connections)",
                ));
            }
            if timeout.0.is_zero() {
                return Err(self.err(
                    "network.connection_timeout",
                    "a connection timeout must be more than zero",
                ));
            }
        }
        for (i, link) in network.links.iter().enumerate() {
            if link.from == link.to {
                return Err(self.err(
                    &format!("network.link[{i}].to"),
                    format!(
                        "a link joins two different nodes; both ends are {}",
                        link.to.0
                    ),
                ));
            }
        }
        Ok(())
    }

    fn clocks(&self, clocks: &[ClockSpec]) -> Result<(), ScenarioError> {
        for (i, clock) in clocks.iter().enumerate() {
            if clocks[..i].iter().any(|c| c.node == clock.node) {
                return Err(self.err(
                    &format!("clock[{i}].node"),
                    format!("node {} already has a [[clock]]", clock.node.0),
                ));
            }
            self.clock_step(&format!("clock[{i}].offset"), clock.offset.0)?;
        }
        Ok(())
    }

    fn fault(&self, i: usize, table: &toml::Table) -> Result<FaultEvent, ScenarioError> {
        let prefix = format!("fault[{i}]");
        let mut rest = table.clone();
        let at = rest.remove("at").ok_or_else(|| {
            self.err(
                &format!("{prefix}.at"),
                "missing field `at` (when it happens, e.g. \"5s\")",
            )
        })?;
        let at = human::deserialize(at)
            .map_err(|e: toml::de::Error| self.err(&format!("{prefix}.at"), e.message()))?;
        let kinds = Fault::KINDS.join(", ");
        let kind = match rest.remove("kind") {
            Some(toml::Value::String(kind)) if Fault::KINDS.contains(&kind.as_str()) => kind,
            Some(toml::Value::String(kind)) => {
                return Err(self.err(
                    &format!("{prefix}.kind"),
                    format!(
                        "unknown fault kind `{kind}`; expected one of: {kinds}{}",
                        crate::suggest::did_you_mean(&kind, Fault::KINDS.iter().copied())
                    ),
                ))
            }
            Some(_) => {
                return Err(self.err(
                    &format!("{prefix}.kind"),
                    format!("expected a string, one of: {kinds}"),
                ))
            }
            None => {
                return Err(self.err(
                    &format!("{prefix}.kind"),
                    format!("missing field `kind`, one of: {kinds}"),
                ))
            }
        };
        let body = self.json(&prefix, &rest)?;
        let tagged = serde_json::Value::Object([(kind, body)].into_iter().collect());
        let fault: Fault = serde_path_to_error::deserialize(tagged).map_err(|e| {
            let (path, inner) = (e.path().clone(), e.into_inner());
            de_error(self.file, self.source, &prefix, &path, &inner)
        })?;
        self.fault_shape(&prefix, &fault)?;
        Ok(FaultEvent { at, fault })
    }

    /// A clock offset or jump within [`MAX_CLOCK_STEP_NS`] either way.
    fn clock_step(&self, field: &str, ns: i64) -> Result<(), ScenarioError> {
        if ns.checked_abs().is_some_and(|a| a <= MAX_CLOCK_STEP_NS) {
            return Ok(());
        }
        Err(self.err(
            field,
            format!(
                "`{}` is out of range; clock offsets and jumps are within 100 days either way",
                tenure_core::SignedDuration(ns)
            ),
        ))
    }

    /// Checks of one fault that need no cluster: lists non-empty, groups disjoint.
    fn fault_shape(&self, prefix: &str, fault: &Fault) -> Result<(), ScenarioError> {
        match fault {
            Fault::ClockJump { by, .. } | Fault::ClockSlew { by, .. } => {
                self.clock_step(&format!("{prefix}.by"), by.0)
            }
            Fault::ClockStall { duration, .. } if duration.is_zero() => Err(self.err(
                &format!("{prefix}.duration"),
                "a clock stall lasts more than zero",
            )),
            Fault::Partition { groups } => {
                self.groups(&format!("{prefix}.groups"), groups, 1, None)
            }
            Fault::Bridge { node, groups } => {
                self.groups(&format!("{prefix}.groups"), groups, 2, node.id())
            }
            Fault::Cut { nodes: [a, b] } if a == b => Err(self.err(
                &format!("{prefix}.nodes"),
                format!("a cut needs two different nodes; both are {}", a.0),
            )),
            Fault::OneWay { from, to } => {
                for (name, list) in [("from", from), ("to", to)] {
                    if list.is_empty() {
                        return Err(self.err(&format!("{prefix}.{name}"), "list at least one node"));
                    }
                }
                if let Some(n) = from.iter().find(|n| to.contains(n)) {
                    return Err(self.err(
                        &format!("{prefix}.to"),
                        format!("node {} is on both sides", n.0),
                    ));
                }
                Ok(())
            }
            Fault::Slow { factor, .. } if !(1.0..=MAX_SLOW_FACTOR).contains(factor) => Err(self
                .err(
                    &format!("{prefix}.factor"),
                    format!(
                    "{factor} is out of range; a slowdown factor is from 1 to {MAX_SLOW_FACTOR}"
                ),
                )),
            Fault::Slow { duration, .. } if duration.is_zero() => Err(self.err(
                &format!("{prefix}.duration"),
                "a slowdown lasts more than zero",
            )),
            Fault::Pause { duration, .. } if duration.is_zero() => Err(self.err(
                &format!("{prefix}.duration"),
                "a pause lasts more than zero",
            )),
            Fault::SlowLink { duration, .. } if duration.is_zero() => Err(self.err(
                &format!("{prefix}.duration"),
                "a slow link lasts more than zero",
            )),
            Fault::SlowLink {
                from: NodeSel::Id(a),
                node: NodeSel::Id(b),
                ..
            } if a == b => Err(self.err(
                &format!("{prefix}.node"),
                format!("a link needs two different nodes; both are {a}"),
            )),
            Fault::Request { name, .. } if name.is_empty() => {
                Err(self.err(&format!("{prefix}.name"), "a request needs a name"))
            }
            _ => Ok(()),
        }
    }

    /// `min` non-empty groups, no node twice (nor `outside`, a bridge's own node).
    fn groups(
        &self,
        field: &str,
        groups: &[Vec<NodeId>],
        min: usize,
        outside: Option<NodeId>,
    ) -> Result<(), ScenarioError> {
        if groups.len() < min {
            return Err(self.err(field, format!("list at least {min} group(s) of nodes")));
        }
        let mut seen: Vec<NodeId> = outside.into_iter().collect();
        for (g, group) in groups.iter().enumerate() {
            if group.is_empty() {
                return Err(self.err(&format!("{field}[{g}]"), "a group needs at least one node"));
            }
            for (j, n) in group.iter().enumerate() {
                if seen.contains(n) {
                    return Err(self.err(
                        &format!("{field}[{g}][{j}]"),
                        format!("node {} appears twice (or is the bridge node)", n.0),
                    ));
                }
                seen.push(*n);
            }
        }
        Ok(())
    }

    fn checks(
        &self,
        names: &[String],
        params: &toml::Table,
    ) -> Result<Vec<CheckSpec>, ScenarioError> {
        let mut checks = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(self.err(&format!("checks[{i}]"), format!("`{name}` is listed twice")));
            }
            let params = match params.get(name) {
                None => serde_json::Value::Object(serde_json::Map::new()),
                Some(toml::Value::Table(t)) => self.json(&format!("check.{name}"), t)?,
                Some(_) => {
                    return Err(self.err(
                        &format!("check.{name}"),
                        "expected a table of parameters, `[check.<name>]`",
                    ))
                }
            };
            checks.push(CheckSpec {
                name: name.clone(),
                params,
            });
        }
        if let Some(name) = params.keys().find(|k| !names.contains(k)) {
            return Err(self.err(
                &format!("check.{name}"),
                format!("`{name}` has parameters but is not in `checks`; add it there"),
            ));
        }
        Ok(checks)
    }

    fn expect(&self, raw: RawExpect, checks: &[String]) -> Result<Expectation, ScenarioError> {
        let listed = || format!("[{}]", checks.join(", "));
        match (raw.outcome, raw.checker) {
            (Outcome::Pass, None) => Ok(Expectation::Pass),
            (Outcome::Pass, Some(_)) => Err(self.err(
                "expect.checker",
                "only `outcome = \"violation\"` names a checker",
            )),
            (Outcome::Violation, None) => Err(self.err(
                "expect.checker",
                format!(
                    "`outcome = \"violation\"` needs `checker`, one of the checks {}",
                    listed()
                ),
            )),
            (Outcome::Violation, Some(checker)) if !checks.contains(&checker) => Err(self.err(
                "expect.checker",
                format!("`{checker}` is not one of the checks {}", listed()),
            )),
            (Outcome::Violation, Some(checker)) => Ok(Expectation::Violation { checker }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EXAMPLE;

    const HEAD: &str = "duration = \"10s\"\n[protocol]\nname = \"raft\"\n";

    /// Parses `HEAD` + `rest` as `bad.toml` and expects an error on `line` at `field`.
    fn error(rest: &str) -> ScenarioError {
        let source = format!("{HEAD}{rest}");
        parse(&source, "dir/bad.toml").expect_err("the scenario should be rejected")
    }

    fn assert_error(err: &ScenarioError, line: usize, field: &str, says: &str) {
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("dir/bad.toml:{line}:")),
            "wrong file/line: {text}"
        );
        assert_eq!(err.line, Some(line), "{text}");
        assert_eq!(err.field, field, "{text}");
        if !field.is_empty() {
            assert!(text.contains(&format!("field `{field}`")), "{text}");
        }
        assert!(text.contains(says), "`{says}` not in: {text}");
    }

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let s = parse(HEAD, "dir/leader-crash.toml").unwrap();
        assert_eq!(s.name, "leader-crash");
        assert_eq!(s.file, "dir/leader-crash.toml");
        assert_eq!(s.source, HEAD);
        assert_eq!(s.description, None);
        assert_eq!(s.seed, 1);
        assert_eq!(s.duration, Duration::from_secs(10));
        assert_eq!(s.protocol.variant, "correct");
        assert_eq!(s.protocol.params, serde_json::json!({}));
        assert_eq!(s.cluster, ClusterSpec::Roles(vec![]));
        assert_eq!(s.network, NetworkSpec::default());
        assert!(s.clocks.is_empty() && s.faults.is_empty() && s.checks.is_empty());
        assert_eq!(s.expect, Expectation::Pass);
        assert_eq!(s.profile, None);
    }

    /// The fields the parser accepts where `zz` is written (after `HEAD`): the list in
    /// its "unknown field `zz`, expected ..." error.
    fn fields_at(table: &str) -> Vec<String> {
        let text = error(&format!("{table}\nzz = 1\n")).to_string();
        assert!(text.contains("unknown field `zz`"), "{table}: {text}");
        let list = text
            .split_once("unknown field `zz`, expected ")
            .map_or("", |(_, l)| l);
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    /// Issue 27: `example.toml` is "a scenario file with every field". The fields come
    /// from the parser itself (each table's unknown-field error lists them, each fault
    /// kind's too), so a field added to the format fails this test until the example
    /// shows it. A field may be shown in a comment (`# connection_timeout = "1s"`) where
    /// it cannot be written beside the others (`nodes` beside `[cluster.roles]`).
    #[test]
    fn example_has_every_field() {
        let example: toml::Table = EXAMPLE.parse().unwrap();
        let in_comment = |field: &str| {
            EXAMPLE.lines().any(|l| {
                l.split_once('#')
                    .is_some_and(|(_, c)| c.contains(&format!("{field} =")))
            })
        };
        let mut missing = Vec::new();
        let check = |what: &str, tables: Vec<&toml::Table>, fields: Vec<String>| {
            assert!(!fields.is_empty(), "{what}: no fields found");
            fields
                .into_iter()
                .filter(|f| !tables.iter().any(|t| t.contains_key(f)) && !in_comment(f))
                .map(|f| format!("{what}: {f}"))
                .collect::<Vec<_>>()
        };
        let table = |v: Option<&toml::Value>| v.and_then(toml::Value::as_table).cloned();
        let array = |v: Option<&toml::Value>| -> Vec<toml::Table> {
            v.and_then(toml::Value::as_array)
                .map(|a| a.iter().filter_map(|t| t.as_table().cloned()).collect())
                .unwrap_or_default()
        };
        // The top level (`HEAD` has `[protocol]` open: probe it with a fresh file).
        let top = parse("zz = 1\n", "dir/bad.toml").unwrap_err().to_string();
        let top: Vec<String> = top
            .split_once("expected ")
            .map_or("", |(_, l)| l)
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        missing.extend(check("top level", vec![&example], top));
        let protocol = table(example.get("protocol")).unwrap_or_default();
        // `HEAD` leaves `[protocol]` open.
        missing.extend(check("[protocol]", vec![&protocol], fields_at("")));
        let cluster = table(example.get("cluster")).unwrap_or_default();
        missing.extend(check("[cluster]", vec![&cluster], fields_at("[cluster]")));
        for (name, node) in [
            ("network", "link"),
            ("disk", "node"),
            ("processing", "node"),
        ] {
            let t = table(example.get(name)).unwrap_or_default();
            let fields = fields_at(&format!("[{name}]"));
            missing.extend(check(&format!("[{name}]"), vec![&t], fields));
            let rows = array(t.get(node));
            let what = format!("[[{name}.{node}]]");
            missing.extend(check(&what, rows.iter().collect(), fields_at(&what)));
        }
        let clocks = array(example.get("clock"));
        missing.extend(check(
            "[[clock]]",
            clocks.iter().collect(),
            fields_at("[[clock]]"),
        ));
        let expect = table(example.get("expect")).unwrap_or_default();
        missing.extend(check("[expect]", vec![&expect], fields_at("[expect]")));
        let faults = array(example.get("fault"));
        for kind in Fault::KINDS {
            let of_kind: Vec<&toml::Table> = faults
                .iter()
                .filter(|f| f.get("kind").and_then(toml::Value::as_str) == Some(kind))
                .collect();
            if of_kind.is_empty() {
                missing.push(format!("[[fault]]: kind {kind}"));
                continue;
            }
            let fields = fields_at(&format!("[[fault]]\nat = \"1s\"\nkind = \"{kind}\""));
            if fields.is_empty() {
                continue; // heal: no fields
            }
            missing.extend(check(&format!("[[fault]] {kind}"), of_kind, fields));
        }
        assert!(
            missing.is_empty(),
            "example.toml leaves out: {}",
            missing.join("; ")
        );
    }

    #[test]
    fn the_full_example_parses_as_written() {
        let s = parse(EXAMPLE, "leader.toml").unwrap();
        assert_eq!(s.name, "leader crash");
        assert_eq!(
            s.cluster,
            ClusterSpec::Roles(vec![RoleSpec::new("server", 5)])
        );
        assert_eq!(s.network.loss, 0.01);
        assert_eq!(
            s.network.links,
            vec![LinkSpec {
                from: NodeId(1),
                to: NodeId(2),
                both: true,
                latency: Some(Delay::uniform(
                    Duration::from_millis(20),
                    Duration::from_millis(20)
                )),
                loss: Some(0.5),
                duplicate: Some(0.0),
            }]
        );
        assert_eq!(
            s.clocks,
            vec![ClockSpec {
                node: NodeId(2),
                offset: tenure_core::SignedDuration(-3_000_000_000),
                drift: 0.01,
            }]
        );
        assert_eq!(s.faults.len(), 24);
        assert_eq!(
            s.faults[23].fault,
            Fault::Byzantine {
                node: NodeSel::Id(2),
                behaviour: tenure_core::Byzantine::Equivocate,
            }
        );
        assert_eq!(
            s.faults[2],
            FaultEvent {
                at: Duration::from_secs(5),
                fault: Fault::Pause {
                    node: NodeSel::Leader,
                    duration: Duration::from_millis(1500)
                },
            }
        );
        assert_eq!(
            s.faults[7].fault,
            Fault::Request {
                node: NodeSel::Id(4),
                name: "put".into(),
                arg: 7
            }
        );
        let names: Vec<&str> = s.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "single-leader-per-term",
                "single-leader-at-a-time",
                "leader-liveness"
            ]
        );
        assert_eq!(s.checks[0].params, serde_json::json!({}));
        assert_eq!(s.checks[2].params, serde_json::json!({"within": "5s"}));
        assert_eq!(
            s.protocol.params,
            serde_json::json!({"election_timeout": ["150ms", "300ms"], "heartbeat_interval": "50ms"})
        );
    }

    #[test]
    fn malformed_toml_names_file_and_line() {
        let err = error("variant = = \"x\"\n");
        assert_error(&err, 4, "protocol.variant", "invalid string");
        assert_eq!(err.column, Some(11));
    }

    #[test]
    fn a_key_without_a_value_has_a_reason() {
        // At the end of the file (no newline), toml's own message is empty.
        let err = error("variant =");
        assert_error(&err, 4, "protocol.variant", "not valid TOML");
    }

    #[test]
    fn a_seed_above_i64_names_the_field_and_the_way_to_write_it() {
        let err = parse(
            &format!("seed = 18446744073709551615\n{HEAD}"),
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(&err, 1, "seed", "as a string");
        let s = parse(
            &format!("seed = \"18446744073709551615\"\n{HEAD}"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(s.seed, u64::MAX);
        let err = parse(&format!("seed = -1\n{HEAD}"), "dir/bad.toml").unwrap_err();
        assert_error(&err, 1, "seed", "negative");
    }

    #[test]
    fn invalid_utf8_names_the_byte_and_line() {
        let bytes = b"duration = \"1s\"\n[protocol]\nname = \"r\xffaft\"\n";
        let err = text(bytes, "dir/bad.toml").unwrap_err();
        assert_eq!(err.line, Some(3));
        assert_eq!(err.column, Some(10));
        assert!(
            err.to_string()
                .starts_with("dir/bad.toml:3:10: invalid UTF-8 at byte 36"),
            "{err}"
        );
    }

    #[test]
    fn limits_name_the_field_and_the_limit() {
        let err = parse(
            "duration = \"2h\"\n[protocol]\nname = \"x\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(&err, 1, "duration", "above the limit of `1h`");
        assert!(err.message.contains("--max-duration"), "{err}");
        let longer = Limits {
            max_duration: Duration::from_secs(7200),
            ..Limits::DEFAULT
        };
        parse_with(
            "duration = \"2h\"\n[protocol]\nname = \"x\"\n",
            "x.toml",
            &longer,
        )
        .unwrap();
        let err = error("[cluster]\nnodes = 100000\n");
        assert_error(&err, 5, "cluster.nodes", "more than the limit of 2048");
        let few = Limits {
            max_fault_events: 2,
            ..Limits::DEFAULT
        };
        let faults = "[[fault]]\nat = \"1s\"\nkind = \"heal\"\n".repeat(3);
        let err = parse_with(&format!("{HEAD}{faults}"), "dir/bad.toml", &few).unwrap_err();
        assert_error(
            &err,
            10,
            "fault[2]",
            "3 fault events are more than the limit of 2",
        );
        let err = error("[[clock]]\nnode = 1\noffset = \"-200000h\"\n");
        assert_error(&err, 6, "clock[0].offset", "within 100 days");
        let err =
            error("[[fault]]\nat = \"1s\"\nkind = \"clock-jump\"\nnode = 0\nby = \"3000h\"\n");
        assert_error(&err, 8, "fault[0].by", "within 100 days");
        let err = error("[[clock]]\nnode = 1\ndrift = 1e300\n");
        assert_error(&err, 6, "clock[0].drift", "out of range");
    }

    #[test]
    fn unknown_fields_suggest_the_close_one() {
        let err = error("varient = \"broken\"\n");
        assert!(err.message.ends_with("did you mean `variant`?"), "{err}");
        let err = error("zzz = 1\n");
        assert!(!err.message.contains("did you mean"), "{err}");
    }

    #[test]
    fn unknown_top_level_field() {
        let err = parse(
            "duration = \"1s\"\nbogus = 1\n[protocol]\nname = \"x\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(
            &err,
            2,
            "bogus",
            "unknown field `bogus`, expected one of `name`",
        );
    }

    #[test]
    fn unknown_nested_field() {
        let err = error("varient = \"broken\"\n");
        assert_error(
            &err,
            4,
            "protocol.varient",
            "expected one of `name`, `variant`",
        );
    }

    #[test]
    fn negative_duration() {
        let err = parse(
            "\n\nduration = \"-5s\"\n[protocol]\nname = \"x\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(&err, 3, "duration", "negative");
        let err = parse(
            "duration = \"0s\"\n[protocol]\nname = \"x\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(&err, 1, "duration", "more than zero");
    }

    #[test]
    fn missing_duration() {
        let err = parse("seed = 3\n[protocol]\nname = \"x\"\n", "dir/bad.toml").unwrap_err();
        assert_error(&err, 1, "duration", "missing field `duration`");
    }

    #[test]
    fn loss_above_one() {
        let err = error("[network]\nlatency = [\"1ms\", \"2ms\"]\nloss = 1.5\n");
        assert_error(&err, 6, "network.loss", "1.5 is not a probability");
        let err = error("[[network.link]]\nfrom = 0\nto = 1\nduplicate = -0.1\n");
        assert_error(&err, 7, "network.link[0].duplicate", "not a probability");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"network\"\nloss = 2\n");
        assert_error(&err, 7, "fault[0].loss", "not a probability");
    }

    #[test]
    fn stream_mode_and_its_connection_timeout() {
        let s = parse(
            &format!("{HEAD}[network]\nmode = \"stream\"\nconnection_timeout = \"3s\"\n"),
            "ok.toml",
        )
        .unwrap();
        assert_eq!(s.network.mode, Some(NetworkMode::Stream));
        assert_eq!(s.network.stream_timeout(), Some(Duration::from_secs(3)));
        let s = parse(&format!("{HEAD}[network]\nmode = \"stream\"\n"), "ok.toml").unwrap();
        assert_eq!(
            s.network.stream_timeout(),
            Some(NetworkSpec::DEFAULT_CONNECTION_TIMEOUT)
        );
        assert_eq!(NetworkSpec::default().stream_timeout(), None);
        let err = error("[network]\nmode = \"tcp\"\n");
        assert_error(
            &err,
            5,
            "network.mode",
            "unknown mode `tcp`; expected one of: datagram, stream",
        );
        let err = error("[network]\nmode = \"datagram\"\nconnection_timeout = \"2s\"\n");
        assert_error(
            &err,
            6,
            "network.connection_timeout",
            "only with mode = \"stream\"",
        );
        // Without a mode, the protocol's transport decides (checked when prepared).
        let s = parse(
            &format!("{HEAD}[network]\nconnection_timeout = \"2s\"\n"),
            "ok.toml",
        );
        assert_eq!(s.unwrap().network.mode, None);
        let err = error("[network]\nmode = \"stream\"\nconnection_timeout = \"0s\"\n");
        assert_error(&err, 6, "network.connection_timeout", "more than zero");
    }

    #[test]
    fn processing_time_and_slow() {
        let s = parse(
            &format!(
                "{HEAD}[cluster]\nnodes = 3\n[processing]\ntime = [\"1ms\", \"2ms\"]\n\
                 [[processing.node]]\nnode = 2\ntime = [\"5ms\", \"5ms\"]\n\
                 [[fault]]\nat = \"1s\"\nkind = \"slow\"\nnode = 1\nfactor = 10\nduration = \"2s\"\n"
            ),
            "ok.toml",
        )
        .unwrap();
        assert_eq!(
            s.processing.time_of(NodeId(0)),
            Latency::new(Duration::from_millis(1), Duration::from_millis(2))
        );
        assert_eq!(
            s.processing.time_of(NodeId(2)).min,
            Duration::from_millis(5)
        );
        assert_eq!(
            s.faults[0].fault,
            Fault::Slow {
                node: NodeSel::Id(1),
                factor: 10.0,
                duration: Duration::from_secs(2)
            }
        );
        assert!(ProcessingSpec::default().is_default());
        assert!(!s.processing.order_after_stall, "off unless written");
        let on = parse(
            &format!("{HEAD}[processing]\norder_after_stall = true\n"),
            "ok.toml",
        )
        .unwrap();
        assert!(on.processing.order_after_stall);
        assert!(!on.processing.is_default());
        let err = error("[processing]\norder_after_stall = \"yes\"\n");
        assert!(err.to_string().contains("order_after_stall"), "{err}");
        let err = error(
            "[[fault]]\nat = \"1s\"\nkind = \"slow\"\nnode = 1\nfactor = 0.5\nduration = \"1s\"\n",
        );
        assert_error(&err, 8, "fault[0].factor", "from 1 to 1000");
        let err = error(
            "[[fault]]\nat = \"1s\"\nkind = \"slow\"\nnode = 1\nfactor = 2\nduration = \"0s\"\n",
        );
        assert_error(&err, 9, "fault[0].duration", "more than zero");
        let err = error("[processing]\ntime = [\"5ms\", \"1ms\"]\n");
        assert_error(&err, 5, "processing.time", "above the maximum");
    }

    #[test]
    fn latency_minimum_above_maximum() {
        let err = error("[network]\nlatency = [\"5ms\", \"1ms\"]\n");
        assert_error(&err, 5, "network.latency", "above the maximum");
    }

    #[test]
    fn unsorted_fault_times() {
        let err = error(
            "[[fault]]\nat = \"5s\"\nkind = \"heal\"\n\n[[fault]]\nat = \"4s\"\nkind = \"heal\"\n",
        );
        assert_error(&err, 9, "fault[1].at", "before the previous event's `5s`");
    }

    #[test]
    fn fault_after_the_end() {
        let err = error("[[fault]]\nat = \"10s\"\nkind = \"heal\"\n");
        assert_error(&err, 5, "fault[0].at", "not before the end of the run");
    }

    #[test]
    fn unknown_fault_kind_lists_the_kinds() {
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"explode\"\n");
        assert_error(&err, 6, "fault[0].kind", "unknown fault kind `explode`");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"pasue\"\nnode = 1\n");
        assert_error(&err, 6, "fault[0].kind", "did you mean `pause`?");
        assert!(
            err.message.contains("partition, isolate, cut, one-way"),
            "{err}"
        );
    }

    #[test]
    fn fault_fields_are_named() {
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"crash\"\nnode = \"boss\"\n");
        assert_error(
            &err,
            7,
            "fault[0].node",
            "\"leader\", \"holder\" or \"waiter\"",
        );
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"crash\"\nnodes = 1\n");
        assert_error(&err, 7, "fault[0].nodes", "unknown field `nodes`");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"pause\"\nnode = 1\n");
        assert_error(&err, 4, "fault[0].duration", "missing field `duration`");
        let err = error("[[fault]]\nkind = \"heal\"\n");
        assert_error(&err, 4, "fault[0].at", "missing field `at`");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"partition\"\ngroups = [[0, 1], [1]]\n");
        assert_error(&err, 7, "fault[0].groups[1][0]", "node 1 appears twice");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"clock-drift\"\nnode = 1\ndrift = -1.5\n");
        assert_error(&err, 8, "fault[0].drift", "drift -1.5 is out of range");
        let err = error("[[fault]]\nat = \"1s\"\nkind = \"cut\"\nnodes = [2, 2]\n");
        assert_error(&err, 7, "fault[0].nodes", "two different nodes");
    }

    #[test]
    fn violation_naming_a_checker_not_in_checks() {
        let err = parse(
            "duration = \"1s\"\nchecks = [\"a\"]\n[protocol]\nname = \"x\"\n[expect]\n\
             outcome = \"violation\"\nchecker = \"b\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(
            &err,
            7,
            "expect.checker",
            "`b` is not one of the checks [a]",
        );
        let err = error("[expect]\noutcome = \"violation\"\n");
        assert_error(&err, 4, "expect.checker", "needs `checker`");
        let err = error("[expect]\noutcome = \"maybe\"\n");
        assert_error(&err, 5, "expect.outcome", "unknown outcome `maybe`");
        let err = error("[expect]\noutcome = \"violated\"\n");
        assert_error(
            &err,
            5,
            "expect.outcome",
            "unknown outcome `violated`; expected one of: pass, violation; did you mean `violation`?",
        );
    }

    #[test]
    fn check_parameters_need_a_listed_check() {
        let err = error("[check.liveness]\nwithin = \"1s\"\n");
        assert_error(&err, 4, "check.liveness", "not in `checks`");
        let err = parse(
            "duration = \"1s\"\nchecks = [\"a\", \"a\"]\n[protocol]\nname = \"x\"\n",
            "dir/bad.toml",
        )
        .unwrap_err();
        assert_error(&err, 2, "checks[1]", "listed twice");
    }

    #[test]
    fn cluster_is_nodes_or_roles() {
        let err = error("[cluster]\nnodes = 3\n[cluster.roles]\nserver = 3\n");
        assert_error(&err, 5, "cluster.nodes", "not both");
        let err = error("[cluster]\nnodes = 0\n");
        assert_error(&err, 5, "cluster.nodes", "at least one node");
        let err = error("[cluster.roles]\nserver = -1\n");
        assert_error(&err, 5, "cluster.roles.server", "expected u32");
    }

    #[test]
    fn clocks_and_links_are_checked() {
        let err = error("[[clock]]\nnode = 1\ndrift = -1\n");
        assert_error(&err, 6, "clock[0].drift", "out of range");
        let err = error("[[clock]]\nnode = 1\n[[clock]]\nnode = 1\n");
        assert_error(&err, 7, "clock[1].node", "already has a [[clock]]");
        let err = error("[[network.link]]\nfrom = 1\nto = 1\n");
        assert_error(&err, 6, "network.link[0].to", "two different nodes");
    }

    #[test]
    fn non_finite_parameters_are_errors() {
        let err = error("[protocol.params]\nx = [1.0, nan]\n");
        assert_error(&err, 5, "protocol.params.x[1]", "not a finite number");
    }

    #[test]
    fn an_unreadable_file_is_an_error_without_a_line() {
        let err = load(Path::new("/nonexistent/x.toml")).unwrap_err();
        assert_eq!(err.line, None);
        assert!(
            err.to_string()
                .starts_with("/nonexistent/x.toml: cannot read the scenario"),
            "{err}"
        );
    }

    /// Whatever the input, parsing returns; it never panics.
    #[test]
    fn no_input_makes_the_parser_panic() {
        let mut inputs: Vec<String> = (0..=EXAMPLE.len())
            .filter(|i| EXAMPLE.is_char_boundary(*i))
            .map(|i| EXAMPLE[..i].to_string())
            .collect();
        let lines: Vec<&str> = EXAMPLE.lines().collect();
        for skip in 0..lines.len() {
            let mut without = lines.clone();
            without.remove(skip);
            inputs.push(without.join("\n"));
        }
        let mut parsed = 0;
        for input in &inputs {
            let result = std::panic::catch_unwind(|| parse(input, "fuzz.toml"));
            match result {
                Ok(Ok(_)) => parsed += 1,
                Ok(Err(e)) => assert_eq!(e.file, "fuzz.toml"),
                Err(_) => panic!("parse panicked on:\n{input}"),
            }
        }
        assert!(parsed > 0, "some line deletions leave a valid file");
    }
}
