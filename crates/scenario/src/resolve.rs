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
                .map(|r| RoleSpec::new(r.name.to_string(), r.default_count))
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
                let mut specs = vec![RoleSpec::new(first.name.to_string(), *n)];
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
                                "protocol `{}` has no role `{}`; its roles are: {}{}",
                                info.name,
                                spec.role,
                                known.join(", "),
                                crate::suggest::did_you_mean(&spec.role, known.iter().copied())
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
        let total: u64 = specs.iter().map(|r| u64::from(r.count)).sum();
        let max = crate::limits().max_nodes;
        if total > u64::from(max) {
            return Err(self.error_at(
                field,
                format!(
                    "{total} nodes are more than the limit of {max}; raise it with --max-nodes"
                ),
            ));
        }
        Cluster::new(specs).map_err(|e| self.error_at(field, e.to_string()))
    }

    /// Everything that needs the protocol and the cluster: the protocol is `info`, the
    /// variant exists, and every node id (links, clocks, faults) is in the cluster.
    pub fn validate(&self, info: &ProtocolInfo, cluster: &Cluster) -> Result<(), ScenarioError> {
        // `[profile]`: the same checks whatever command reads the scenario.
        crate::profile::Profile::from_scenario(self)?;
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
                    "protocol `{}` has no variant `{}`; its variants are: {}{}",
                    info.name,
                    self.protocol.variant,
                    known.join(", "),
                    crate::suggest::did_you_mean(&self.protocol.variant, known.iter().copied())
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
        for (i, disk) in self.disk.nodes.iter().enumerate() {
            in_range(format!("disk.node[{i}].node"), disk.node)?;
        }
        for (i, p) in self.processing.nodes.iter().enumerate() {
            in_range(format!("processing.node[{i}].node"), p.node)?;
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
        let prefix = format!("check.{}", check.name);
        self.read_json(&check.params, &prefix).map_err(|mut e| {
            // No `[check.<name>]` table: the check's entry in `checks` is the place.
            if !crate::error::is_written(&self.source, &prefix) {
                let at = self.error_at(&format!("checks[{index}]"), "");
                (e.line, e.column) = (at.line, at.column);
            }
            e
        })
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
    // The one node a single-node fault aims at (a bridge's too), then any groups and lists.
    out.extend(
        fault
            .node()
            .and_then(|sel| sel.id())
            .map(|n| ("node".to_string(), n)),
    );
    match fault {
        Fault::Partition { groups: gs } | Fault::Bridge { groups: gs, .. } => groups(&mut out, gs),
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
        Fault::SlowLink { from, .. } => out.extend(from.id().map(|n| ("from".to_string(), n))),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;
    use serde::Deserialize;
    use tenure_core::{HumanDuration, RoleInfo, VariantInfo};

    static LOCKS: ProtocolInfo = ProtocolInfo::new(
        "locks",
        "a lock service and its clients",
        &[
            RoleInfo::new("server", "grants locks", 3),
            RoleInfo::new("client", "takes locks", 2).with_kind(tenure_core::RoleKind::Holder),
            RoleInfo::new("storage", "only when asked for", 0)
                .with_kind(tenure_core::RoleKind::Resource),
        ],
        &[
            VariantInfo::new("correct", "fenced"),
            VariantInfo::new("no-fencing", "trusts the lease").with_breaks(&["fencing-safety"]),
        ],
    );

    fn scenario(rest: &str) -> Scenario {
        let source = format!("duration = \"10s\"\n[protocol]\nname = \"locks\"\n{rest}");
        parse(&source, "dir/bad.toml").unwrap()
    }

    fn roles(cluster: &Cluster) -> Vec<(String, u32)> {
        cluster
            .roles()
            .iter()
            .map(|r| (r.role.clone(), r.count))
            .collect()
    }

    fn assert_error(err: &ScenarioError, line: usize, field: &str, says: &str) {
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("dir/bad.toml:{line}:")),
            "wrong file/line: {text}"
        );
        assert_eq!(err.field, field, "{text}");
        assert!(text.contains(&format!("field `{field}`")), "{text}");
        assert!(text.contains(says), "`{says}` not in: {text}");
    }

    fn pair(role: &str, count: u32) -> (String, u32) {
        (role.to_string(), count)
    }

    #[test]
    fn roles_default_and_nodes_go_to_the_first_role() {
        let c = scenario("").resolve_cluster(&LOCKS).unwrap();
        assert_eq!(roles(&c), [pair("server", 3), pair("client", 2)]);
        let c = scenario("[cluster]\nnodes = 5\n")
            .resolve_cluster(&LOCKS)
            .unwrap();
        assert_eq!(roles(&c), [pair("server", 5), pair("client", 2)]);
    }

    #[test]
    fn written_roles_come_first_in_their_order() {
        let s = scenario("[cluster.roles]\nstorage = 1\nclient = 0\nserver = 5\n");
        let c = s.resolve_cluster(&LOCKS).unwrap();
        assert_eq!(roles(&c), [pair("storage", 1), pair("server", 5)]);
        assert_eq!(c.role_of(NodeId(0)), "storage");
    }

    #[test]
    fn an_unknown_role_is_located() {
        let s = scenario("[cluster.roles]\nserver = 3\nclerk = 2\n");
        let err = s.resolve_cluster(&LOCKS).unwrap_err();
        assert_error(
            &err,
            6,
            "cluster.roles.clerk",
            "no role `clerk`; its roles are: server, client, storage",
        );
    }

    #[test]
    fn a_cluster_above_the_node_limit_is_refused() {
        let s = scenario("[cluster.roles]\nserver = 3000\n");
        let err = s.resolve_cluster(&LOCKS).unwrap_err();
        assert_error(
            &err,
            4,
            "cluster.roles",
            "3002 nodes are more than the limit of 2048",
        );
    }

    #[test]
    fn unknown_variant_lists_the_known_ones() {
        let s = scenario("variant = \"no-fence\"\n");
        let cluster = s.resolve_cluster(&LOCKS).unwrap();
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(
            &err,
            4,
            "protocol.variant",
            "no variant `no-fence`; its variants are: correct, no-fencing; did you mean `no-fencing`?",
        );
        let s = scenario("variant = \"no-fencing\"\n");
        assert_eq!(s.validate(&LOCKS, &cluster), Ok(()));
    }

    #[test]
    fn a_bad_profile_table_fails_validation_naming_its_knob_and_line() {
        // One validation path: whatever command reads the scenario, `validate` checks
        // `[profile]` (issue 14, item 5).
        let s = scenario("[profile]\nname = \"nope\"\n");
        let cluster = s.resolve_cluster(&LOCKS).unwrap();
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 5, "profile.name", "unknown profile `nope`");
        let s = scenario("[profile]\nname = \"pauses\"\npause = 7\n");
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 6, "profile.pause", "7 is not a probability");
        let s = scenario("[profile]\npuase = 0.5\n");
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 5, "profile.puase", "did you mean `pause`?");
        let s = scenario("[profile]\nname = \"pauses\"\npause = 0.5\n");
        assert_eq!(s.validate(&LOCKS, &cluster), Ok(()));
    }

    #[test]
    fn node_ids_out_of_range_are_located() {
        let s = scenario(
            "[[fault]]\nat = \"1s\"\nkind = \"crash\"\nnode = \"leader\"\n\n\
             [[fault]]\nat = \"2s\"\nkind = \"crash\"\nnode = 5\n",
        );
        let cluster = s.resolve_cluster(&LOCKS).unwrap();
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(
            &err,
            12,
            "fault[1].node",
            "node 5 is not in the cluster; its nodes are 0..=4",
        );

        let s = scenario("[[fault]]\nat = \"1s\"\nkind = \"partition\"\ngroups = [[0], [1, 9]]\n");
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 7, "fault[0].groups[1][1]", "node 9");
        let s = scenario("[[clock]]\nnode = 7\n");
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 5, "clock[0].node", "node 7");
        let s = scenario("[[network.link]]\nfrom = 0\nto = 5\n");
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 6, "network.link[0].to", "node 5");
    }

    #[test]
    fn another_protocol_is_an_error() {
        let s = parse(
            "duration = \"1s\"\n[protocol]\nname = \"raft\"\n",
            "dir/bad.toml",
        )
        .unwrap();
        let cluster = Cluster::uniform("server", 3);
        let err = s.validate(&LOCKS, &cluster).unwrap_err();
        assert_error(&err, 3, "protocol.name", "names `raft`");
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, default)]
    struct Params {
        election_timeout: Option<[HumanDuration; 2]>,
        retries: u32,
    }

    #[test]
    fn params_are_read_typed() {
        let s = scenario("[protocol.params]\nelection_timeout = [\"150ms\", \"300ms\"]\n");
        let p: Params = s.params().unwrap();
        assert_eq!(
            p.election_timeout.unwrap()[1].0,
            std::time::Duration::from_millis(300)
        );
        assert_eq!(scenario("").params::<Params>().unwrap(), Params::default());
    }

    #[test]
    fn param_errors_point_into_the_file() {
        let s = scenario(
            "[protocol.params]\nretries = 1\nelection_timeout = [\"150ms\", \"3 parsecs\"]\n",
        );
        let err = s.params::<Params>().unwrap_err();
        assert_error(
            &err,
            6,
            "protocol.params.election_timeout[1]",
            "unknown unit",
        );
        let s = scenario("[protocol.params]\nretries = 1\nretry = 2\n");
        let err = s.params::<Params>().unwrap_err();
        assert_error(&err, 6, "protocol.params.retry", "unknown field `retry`");
        let err = s.param_error(&ParamError::new("retries", "too many"));
        assert_error(&err, 5, "protocol.params.retries", "too many");
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Liveness {
        within: HumanDuration,
    }

    #[test]
    fn check_params_are_read_and_located() {
        let s = parse(
            "duration = \"10s\"\nchecks = [\"safety\", \"leader-liveness\"]\n\
             [protocol]\nname = \"locks\"\n",
            "dir/bad.toml",
        )
        .unwrap();
        let err = s.check_params::<Liveness>(1).unwrap_err();
        assert_error(
            &err,
            2,
            "check.leader-liveness.within",
            "missing field `within`",
        );
        assert_eq!(err.column, Some(21), "at the name in `checks`");
        let s = parse(
            "duration = \"10s\"\nchecks = [\"safety\", \"leader-liveness\"]\n\
             [protocol]\nname = \"locks\"\n[check.leader-liveness]\nwithin = \"-5s\"\n",
            "dir/bad.toml",
        )
        .unwrap();
        let err = s.check_params::<Liveness>(1).unwrap_err();
        assert_error(&err, 6, "check.leader-liveness.within", "negative");
        let s = parse(
            "duration = \"10s\"\nchecks = [\"leader-liveness\"]\n[protocol]\nname = \"locks\"\n\
             [check.leader-liveness]\nwithin = \"5s\"\n",
            "dir/bad.toml",
        )
        .unwrap();
        let p: Liveness = s.check_params(0).unwrap();
        assert_eq!(p.within.0, std::time::Duration::from_secs(5));
    }
}
