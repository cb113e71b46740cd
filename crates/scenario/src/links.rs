//! Which directed links a network fault blocks, as the simulator's network does
//! (`sim/src/net.rs`): the one reading of a fault's links for every runner that blocks
//! links itself (`tenure cluster`'s proxy, `tenure real`).

use crate::Fault;
use std::collections::BTreeSet;
use tenure_core::NodeId;

/// Applies `fault` to `blocked`, the set of directed links `(from, to)` that drop
/// everything: a partition blocks every link across its groups (nodes it does not name
/// form one more group), an isolation every link of `node`, a cut one link both ways,
/// a one-way fault each link from its `from` to its `to`, a bridge the groups from each
/// other but not from the bridge `node`, and a heal unblocks every link. `node` is the
/// fault's node, resolved; `nodes` the cluster's size. Other faults change nothing.
pub fn block_links(
    blocked: &mut BTreeSet<(u32, u32)>,
    fault: &Fault,
    node: Option<u32>,
    nodes: u32,
) {
    let mut between = |a: &[u32], b: &[u32]| {
        for &x in a {
            for &y in b {
                if x != y {
                    blocked.insert((x, y));
                    blocked.insert((y, x));
                }
            }
        }
    };
    let all: Vec<u32> = (0..nodes).collect();
    let ids = |g: &[NodeId]| g.iter().map(|n| n.0).collect::<Vec<u32>>();
    let across = |groups: &[Vec<u32>], between: &mut dyn FnMut(&[u32], &[u32])| {
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                between(&groups[i], &groups[j]);
            }
        }
    };
    match fault {
        Fault::Partition { groups } => {
            let mut groups: Vec<Vec<u32>> = groups.iter().map(|g| ids(g)).collect();
            let listed: BTreeSet<u32> = groups.iter().flatten().copied().collect();
            let rest: Vec<u32> = all
                .iter()
                .copied()
                .filter(|n| !listed.contains(n))
                .collect();
            if !rest.is_empty() {
                groups.push(rest);
            }
            across(&groups, &mut between);
        }
        Fault::Isolate { .. } => {
            if let Some(n) = node {
                between(&[n], &all);
            }
        }
        Fault::Cut { nodes } => between(&[nodes[0].0], &[nodes[1].0]),
        Fault::OneWay { from, to } => {
            for f in ids(from) {
                for t in ids(to) {
                    if f != t {
                        blocked.insert((f, t));
                    }
                }
            }
        }
        Fault::Bridge { groups, .. } => {
            let groups: Vec<Vec<u32>> = groups
                .iter()
                .map(|g| ids(g).into_iter().filter(|n| Some(*n) != node).collect())
                .collect();
            across(&groups, &mut between);
        }
        Fault::Heal {} => blocked.clear(),
        _ => {}
    }
}
