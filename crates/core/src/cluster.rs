//! Node ids and the cluster layout (which node plays which role).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A node's id: its index in the cluster, stable across crash and restart.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// How many nodes play one role. Roles are laid out in declaration order: the first
/// role's nodes get the lowest ids. Built with [`RoleSpec::new`]; `#[non_exhaustive]`,
/// so a field added later is not a breaking change.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RoleSpec {
    pub role: String,
    pub count: u32,
}

impl RoleSpec {
    /// `count` nodes playing `role`.
    pub fn new(role: impl Into<String>, count: u32) -> RoleSpec {
        RoleSpec {
            role: role.into(),
            count,
        }
    }
}

/// The layout of a run: every node's role. Node ids are `0..size()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cluster {
    roles: Vec<RoleSpec>,
    /// `role_of[i]` indexes `roles`.
    role_of: Vec<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterError {
    Empty,
    ZeroCount { role: String },
    DuplicateRole { role: String },
    TooLarge { nodes: usize },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Empty => write!(f, "a cluster needs at least one node"),
            ClusterError::ZeroCount { role } => write!(f, "role `{role}` has a count of 0"),
            ClusterError::DuplicateRole { role } => write!(f, "role `{role}` is declared twice"),
            ClusterError::TooLarge { nodes } => {
                write!(
                    f,
                    "{nodes} nodes is more than the {} tenure supports",
                    Cluster::MAX_NODES
                )
            }
        }
    }
}

impl std::error::Error for ClusterError {}

impl Cluster {
    /// A limit on everything: larger clusters are almost surely a typo.
    pub const MAX_NODES: usize = 100_000;

    pub fn new(roles: Vec<RoleSpec>) -> Result<Cluster, ClusterError> {
        let mut role_of = Vec::new();
        for (i, spec) in roles.iter().enumerate() {
            if spec.count == 0 {
                return Err(ClusterError::ZeroCount {
                    role: spec.role.clone(),
                });
            }
            if roles[..i].iter().any(|r| r.role == spec.role) {
                return Err(ClusterError::DuplicateRole {
                    role: spec.role.clone(),
                });
            }
            role_of.extend(std::iter::repeat_n(i as u16, spec.count as usize));
            if role_of.len() > Self::MAX_NODES {
                return Err(ClusterError::TooLarge {
                    nodes: role_of.len(),
                });
            }
        }
        if role_of.is_empty() {
            return Err(ClusterError::Empty);
        }
        Ok(Cluster { roles, role_of })
    }

    /// `n` nodes that all play `role`.
    pub fn uniform(role: &str, n: u32) -> Cluster {
        Cluster::new(vec![RoleSpec::new(role, n)]).expect("uniform cluster of at least one node")
    }

    pub fn size(&self) -> usize {
        self.role_of.len()
    }

    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.role_of.len() as u32).map(NodeId)
    }

    pub fn contains(&self, node: NodeId) -> bool {
        node.index() < self.role_of.len()
    }

    pub fn roles(&self) -> &[RoleSpec] {
        &self.roles
    }

    /// The role `node` plays. Panics if the node is not in the cluster (a bug).
    pub fn role_of(&self, node: NodeId) -> &str {
        &self.roles[self.role_of[node.index()] as usize].role
    }

    /// The index in [`Cluster::roles`] of the role `node` plays. Panics if the node is
    /// not in the cluster (a bug).
    pub fn role_index_of(&self, node: NodeId) -> usize {
        usize::from(self.role_of[node.index()])
    }

    /// The index in [`Cluster::roles`] of `role`, if a node plays it.
    pub fn role_index(&self, role: &str) -> Option<usize> {
        self.roles.iter().position(|r| r.role == role)
    }

    /// Every node playing `role`, in id order (empty if no node plays it).
    pub fn with_role<'a>(&'a self, role: &'a str) -> impl Iterator<Item = NodeId> + 'a {
        let ids = self.role_index(role).map_or(0..0, |i| self.role_ids(i));
        ids.map(NodeId)
    }

    /// The ids of the nodes playing the role of index `role` in [`Cluster::roles`]:
    /// each role's nodes take consecutive ids, in the order the roles are declared
    /// (empty for an index past the last role). A protocol that keeps its peers as this
    /// range instead of a list holds O(1), not O(nodes), per node (issue 38: a
    /// 10,000-node Raft spent 400 MB on its nodes' lists of peers).
    pub fn role_ids(&self, role: usize) -> std::ops::Range<u32> {
        let start: u32 = self.roles.iter().take(role).map(|r| r.count).sum();
        let count = self.roles.get(role).map_or(0, |r| r.count);
        start..start + count
    }

    pub fn count(&self, role: &str) -> usize {
        self.with_role(role).count()
    }

    /// The other nodes playing the same role as `node`.
    pub fn peers(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.role_ids(self.role_index_of(node))
            .map(NodeId)
            .filter(move |n| *n != node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_laid_out_in_order() {
        let c = Cluster::new(vec![RoleSpec::new("server", 3), RoleSpec::new("client", 2)]).unwrap();
        assert_eq!(c.size(), 5);
        assert_eq!(
            c.with_role("server").collect::<Vec<_>>(),
            vec![NodeId(0), NodeId(1), NodeId(2)]
        );
        assert_eq!(
            c.with_role("client").collect::<Vec<_>>(),
            vec![NodeId(3), NodeId(4)]
        );
        assert_eq!(
            c.peers(NodeId(1)).collect::<Vec<_>>(),
            vec![NodeId(0), NodeId(2)]
        );
        assert_eq!(c.role_of(NodeId(4)), "client");
        assert!(!c.contains(NodeId(5)));
    }

    #[test]
    fn role_ids_are_the_nodes_of_the_role() {
        let c = Cluster::new(vec![
            RoleSpec::new("a", 2),
            RoleSpec::new("b", 3),
            RoleSpec::new("c", 1),
        ])
        .unwrap();
        for role in 0..c.roles().len() {
            let scanned: Vec<u32> = c
                .nodes()
                .filter(|n| c.role_index_of(*n) == role)
                .map(|n| n.0)
                .collect();
            assert_eq!(c.role_ids(role).collect::<Vec<_>>(), scanned, "role {role}");
        }
        assert!(c.role_ids(3).is_empty());
        assert_eq!(c.with_role("nobody").count(), 0);
        assert_eq!(c.count("b"), 3);
    }

    #[test]
    fn the_node_limit_is_a_limit() {
        let most = Cluster::MAX_NODES as u32;
        let c = Cluster::new(vec![
            RoleSpec::new("server", 5),
            RoleSpec::new("client", most - 5),
        ])
        .unwrap();
        assert_eq!(c.size(), 100_000);
        assert_eq!(c.peers(NodeId(2)).count(), 4);
        assert_eq!(c.with_role("client").last(), Some(NodeId(most - 1)));
        let over = Cluster::new(vec![
            RoleSpec::new("server", 5),
            RoleSpec::new("client", most - 4),
        ]);
        assert_eq!(over, Err(ClusterError::TooLarge { nodes: 100_001 }));
        assert_eq!(
            over.unwrap_err().to_string(),
            "100001 nodes is more than the 100000 tenure supports"
        );
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert_eq!(Cluster::new(vec![]), Err(ClusterError::Empty));
        let zero = vec![RoleSpec::new("a", 0)];
        assert!(matches!(
            Cluster::new(zero),
            Err(ClusterError::ZeroCount { .. })
        ));
        let dup = vec![RoleSpec::new("a", 1), RoleSpec::new("a", 1)];
        assert!(matches!(
            Cluster::new(dup),
            Err(ClusterError::DuplicateRole { .. })
        ));
    }
}
