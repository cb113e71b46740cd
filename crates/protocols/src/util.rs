//! Small helpers shared by the protocols.

/// The smallest number of nodes that is more than half of `n`.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// When a session client stops renewing its session (etcd `Session.Orphan()`, a Consul
/// client that stops its renew loop) without ending it: the cluster's first client only,
/// once per incarnation, at a time drawn in `[ttl, 2 x ttl]` after it starts, so that a
/// held session is past its first renewals; `None` for every other client (no draw).
/// Shared by `etcd-service` (`orphan_session`) and `consul-lock` (`abandon_session`).
pub(crate) fn first_client_stops_renewing<M, T>(
    env: &mut (dyn tenure_core::Env<M, T> + '_),
    ttl: std::time::Duration,
) -> Option<std::time::Duration> {
    let first = env.cluster().with_role("client").next() == Some(env.me());
    first.then(|| env.duration_between(ttl, ttl * 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majority_is_more_than_half() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(2), 2);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(4), 3);
        assert_eq!(majority(5), 3);
    }
}
