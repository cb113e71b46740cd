//! What needs the protocol: the cluster layout from its roles, the variant, node ids in
//! range, and the typed reading of raw parameter tables. Every error points into the
//! file through [`Scenario::error_at`].

use crate::error::ScenarioError;
use crate::model::*;
use crate::parse::de_error;
use serde::de::DeserializeOwned;
use tenure_core::{Cluster, NodeId, ParamError, ProtocolInfo, RoleSpec};

impl Scenario {
    /// An error at `field_path` (`protocol.variant`, `fault[2].node`,
    /// `check.leader-liveness.within`), on the line where that field is written, or
    /// where its nearest written parent is.
    pub fn error_at(&self, field_path: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at_field(&self.file, &self.source, field_path, message)
    }

    /// A protocol's [`ParamError`] (from `configure`) located at
    /// `protocol.params.<field>`.
    pub fn param_error(&self, error: &ParamError) -> ScenarioError {
        self.error_at(
            &format!("protocol.params.{}", error.field),
            error.message.clone(),
        )
    }

    /// The cluster layout for `info`'s roles: `nodes = N` gives the first role `N` nodes
    /// and every other role its default count; `[cluster.roles]` lays roles out as
    /// written, then the roles not written with their default counts. A count of 0
    /// leaves a role out.
    pub fn resolve_cluster(&self, info: &ProtocolInfo) -> Result<Cluster, ScenarioError> {
        let defaults = |skip: &dyn Fn(&str) -> bool| -> Vec<RoleSpec> {
            info.roles
                .iter()
                .filter(|r| r.default_count > 0 && !skip(r.name))
                .map(|r| RoleSpec {
                    role: r.name.to_string(),
                    count: r.default_count,
                })
                .collect()
        };
        let (specs, field) = match &self.cluster {
            ClusterSpec::Nodes(n) => {
                let Some(first) = info.roles.first() else {
                    return Err(self.error_at(
                        "cluster.nodes",
                        format!("protocol `{}` declares no roles", info.name),
                    ));
                };
                let mut specs = vec![RoleSpec {
                    role: first.name.to_string(),
                    count: *n,
                }];
                specs.extend(defaults(&|r| r == first.name));
                (specs, "cluster.nodes")
            }
            ClusterSpec::Roles(written) => {
                let mut specs = Vec::new();
                for spec in written {
                    if info.role(&spec.role).is_none() {
                        let known: Vec<&str> = info.roles.iter().map(|r| r.name).collect();
                        return Err(self.error_at(
                            &format!("cluster.roles.{}", spec.role),
                            format!(
                                "protocol `{}` has no role `{}`; its roles are: {}",
                                info.name,
                                spec.role,
                                known.join(", ")
                            ),
                        ));
                    }
                    if spec.count > 0 {
                        specs.push(spec.clone());
                    }
                }
                specs.extend(defaults(&|r| written.iter().any(|w| w.role == r)));
                (specs, "cluster.roles")
            }
        };
        Cluster::new(specs).map_err(|e| self.error_at(field, e.to_string()))
    }

    /// Everything that needs the protocol and the cluster: the protocol is `info`, the
    /// variant exists, and every node id (links, clocks, faults) is in the cluster.
    pub fn validate(&self, info: &ProtocolInfo, cluster: &Cluster) -> Result<(), ScenarioError> {
        if self.protocol.name != info.name {
            return Err(self.error_at(
                "protocol.name",
                format!(
                    "validated against protocol `{}`, but the scenario names `{}`",
                    info.name, self.protocol.name
                ),
            ));
        }
        if info.variant(&self.protocol.variant).is_none() {
            let known: Vec<&str> = info.variants.iter().map(|v| v.name).collect();
            return Err(self.error_at(
                "protocol.variant",
                format!(
                    "protocol `{}` has no variant `{}`; its variants are: {}",
                    info.name,
                    self.protocol.variant,
                    known.join(", ")
                ),
            ));
        }
        let in_range = |field: String, node: NodeId| {
            if cluster.contains(node) {
                Ok(())
            } else {
                Err(self.error_at(
                    &field,
                    format!(
                        "node {} is not in the cluster; its nodes are 0..={}",
                        node.0,
                        cluster.size() - 1
                    ),
                ))
            }
        };
        for (i, link) in self.network.links.iter().enumerate() {
            in_range(format!("network.link[{i}].from"), link.from)?;
            in_range(format!("network.link[{i}].to"), link.to)?;
        }
        for (i, clock) in self.clocks.iter().enumerate() {
            in_range(format!("clock[{i}].node"), clock.node)?;
        }
        for (i, event) in self.faults.iter().enumerate() {
            for (field, node) in fault_nodes(&event.fault) {
                in_range(format!("fault[{i}].{field}"), node)?;
            }
        }
        Ok(())
    }

    /// `[protocol.params]` read as `T`; an error names `protocol.params.<path>`.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        self.read_json(&self.protocol.params, "protocol.params")
    }

    /// `[check.<name>]` of `self.checks[index]` read as `T`; an error names
    /// `check.<name>.<path>`. Panics if `index` is out of range (a bug in the caller).
    pub fn check_params<T: DeserializeOwned>(&self, index: usize) -> Result<T, ScenarioError> {
        let check = &self.checks[index];
        self.read_json(&check.params, &format!("check.{}", check.name))
    }

    fn read_json<T: DeserializeOwned>(
        &self,
        value: &serde_json::Value,
        prefix: &str,
    ) -> Result<T, ScenarioError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let (path, inner) = (e.path().clone(), e.into_inner());
            de_error(&self.file, &self.source, prefix, &path, &inner)
        })
    }
}

/// Every fixed node a fault names, with its field path below `fault[i]`.
fn fault_nodes(fault: &Fault) -> Vec<(String, NodeId)> {
    let mut out = Vec::new();
    let groups = |out: &mut Vec<(String, NodeId)>, groups: &[Vec<NodeId>]| {
        for (g, group) in groups.iter().enumerate() {
            for (j, n) in group.iter().enumerate() {
                out.push((format!("groups[{g}][{j}]"), *n));
            }
        }
    };
    match fault {
        Fault::Partition { groups: gs } => groups(&mut out, gs),
        Fault::Bridge { node, groups: gs } => {
            out.extend(node.id().map(|n| ("node".to_string(), n)));
            groups(&mut out, gs);
        }
        Fault::Cut { nodes } => {
            for (k, n) in nodes.iter().enumerate() {
                out.push((format!("nodes[{k}]"), *n));
            }
        }
        Fault::OneWay { from, to } => {
            for (name, list) in [("from", from), ("to", to)] {
                for (k, n) in list.iter().enumerate() {
                    out.push((format!("{name}[{k}]"), *n));
                }
            }
        }
        Fault::Isolate { node }
        | Fault::Crash { node }
        | Fault::Restart { node }
        | Fault::Pause { node, .. }
        | Fault::ClockJump { node, .. }
        | Fault::ClockDrift { node, .. }
        | Fault::Request { node, .. } => {
            out.extend(node.id().map(|n| ("node".to_string(), n)));
        }
        Fault::Heal {} | Fault::Network { .. } => {}
    }
    out
}
