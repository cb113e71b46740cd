//! Every scenario file of this crate's protocols names a known variant, a valid cluster
//! and parameters its protocol accepts. (Until the simulator runs them, this is what
//! keeps their `[protocol]` and `[cluster.roles]` sections honest.)

use std::path::Path;
use tenure_core::{Cluster, Configurable, RoleSpec};
use tenure_protocols::{
    fencing::Fencing, idempotency::Idempotency, redis_lock::RedisLock, redlock::Redlock,
};

fn check<P: Configurable>(file: &Path, scenario: &toml::Value) {
    let protocol = &scenario["protocol"];
    let variant = protocol["variant"].as_str().unwrap();
    let info = P::info();
    assert!(
        info.variant(variant).is_some(),
        "{}: unknown variant {variant}",
        file.display()
    );
    let roles = scenario["cluster"]["roles"].as_table().unwrap();
    let mut specs = Vec::new();
    for role in info.roles {
        let count = roles
            .get(role.name)
            .map_or(role.default_count, |c| c.as_integer().unwrap() as u32);
        specs.push(RoleSpec {
            role: role.name.to_string(),
            count,
        });
    }
    for name in roles.keys() {
        assert!(
            info.role(name).is_some(),
            "{}: unknown role {name}",
            file.display()
        );
    }
    let order: Vec<&String> = roles.keys().collect();
    let expected: Vec<&str> = info
        .roles
        .iter()
        .map(|r| r.name)
        .filter(|r| roles.contains_key(*r))
        .collect();
    assert_eq!(
        order,
        expected,
        "{}: roles out of cluster order",
        file.display()
    );
    let cluster = Cluster::new(specs).unwrap();
    let params = protocol
        .get("params")
        .cloned()
        .unwrap_or(toml::Value::Table(Default::default()));
    let json = serde_json::to_value(params).unwrap();
    let params: P::Params = serde_json::from_value(json)
        .unwrap_or_else(|e| panic!("{}: bad params: {e}", file.display()));
    P::configure(params, variant, &cluster).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
}

#[test]
fn scenario_files_configure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut checked = 0;
    for dir in ["redis-lock", "redlock", "fencing", "idempotency"] {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for file in entries {
            let text = std::fs::read_to_string(&file).unwrap();
            let scenario: toml::Value =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let name = scenario["protocol"]["name"].as_str().unwrap();
            assert_eq!(name, dir, "{}: protocol and folder differ", file.display());
            match name {
                "redis-lock" => check::<RedisLock>(&file, &scenario),
                "redlock" => check::<Redlock>(&file, &scenario),
                "fencing" => check::<Fencing>(&file, &scenario),
                "idempotency" => check::<Idempotency>(&file, &scenario),
                other => panic!("unknown protocol {other}"),
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 11);
}
