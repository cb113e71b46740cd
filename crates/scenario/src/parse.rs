//! Reading a scenario file: TOML -> raw serde structs (with `serde_path_to_error`, so a
//! wrong type or unknown field names its path) -> [`Scenario`], plus every check that
//! needs no protocol (ranges, time order, the expectation naming one of the checks).
//!
//! Fault events are read in a second step: each `[[fault]]` table is taken apart into
//! `at`, `kind` and the rest, and the rest is read as the [`Fault`] variant `kind` names,
//! so errors inside a fault still name `fault[i].<field>`.

use crate::error::ScenarioError;
use crate::model::*;
use crate::serde_util::{human, seed, table_to_json};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use tenure_core::{format_duration, NodeId, RoleSpec};

/// Reads and parses the scenario at `path` (named in errors as given).
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: None,
        column: None,
        field: String::new(),
        message: format!("cannot read the scenario: {e}"),
    })?;
    parse(&source, &file)
}

/// Parses scenario text; `file` names it in errors and gives the default `name`.
pub fn parse(source: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = serde_path_to_error::deserialize(toml::Deserializer::new(source))
        .map_err(|e| {
            let (path, inner) = (e.path().clone(), e.into_inner());
            de_error(file, source, "", &path, &inner)
        })?;
    Reader { file, source }.scenario(raw)
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
                roles.push(RoleSpec { role, count });
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
    for lead in ["unknown field ", "missing field "] {
        if let Some(name) = quoted_after(&message, lead) {
            // serde_path_to_error has already stepped into an unknown key, not into a
            // missing one.
            let last = path.iter().last();
            let field = match last {
                Some(serde_path_to_error::Segment::Map { key }) if key == name => field,
                _ => child(&field, name),
            };
            return ScenarioError::at_field(file, source, &field, message);
        }
    }
    match inner.span() {
        Some(span) => ScenarioError::at_offset(file, source, Some(span.start), &field, message),
        None if field.is_empty() => ScenarioError::at_offset(file, source, None, "", message),
        None => ScenarioError::at_field(file, source, &field, message),
    }
}

struct Reader<'a> {
    file: &'a str,
    source: &'a str,
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
            faults,
            checks,
            expect,
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
            (Some(n), None) => Ok(ClusterSpec::Nodes(n)),
            (None, roles) => Ok(ClusterSpec::Roles(roles.unwrap_or_default())),
        }
    }

    fn network(&self, network: &NetworkSpec) -> Result<(), ScenarioError> {
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
                    format!("unknown fault kind `{kind}`; expected one of: {kinds}"),
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

    /// Checks of one fault that need no cluster: lists non-empty, groups disjoint.
    fn fault_shape(&self, prefix: &str, fault: &Fault) -> Result<(), ScenarioError> {
        match fault {
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
            Fault::Pause { duration, .. } if duration.is_zero() => Err(self.err(
                &format!("{prefix}.duration"),
                "a pause lasts more than zero",
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
