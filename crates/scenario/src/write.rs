//! Writing a scenario back as TOML, in one canonical layout, so that fuzz and shrink can
//! save what they generate and `parse(to_toml(s))` gives `s` back (except `file` and
//! `source`).

use crate::model::*;
use crate::serde_util::{json_to_table, json_to_toml};
use tenure_core::format_duration;
use toml_edit::{value, Array, ArrayOfTables, DocumentMut, Item, Table, Value};

impl Scenario {
    /// The scenario as TOML, in canonical layout: top-level keys, then `[protocol]`,
    /// `[cluster]`, `[network]`, `[[clock]]`, `[[fault]]`, `[check.*]`, `[expect]`,
    /// `[profile]`. Defaults are written out, except empty tables and lists.
    pub fn to_toml(&self) -> String {
        let mut doc = DocumentMut::new();
        let root = doc.as_table_mut();
        root.insert("name", value(self.name.as_str()));
        if let Some(description) = &self.description {
            root.insert("description", value(description.as_str()));
        }
        root.insert(
            "seed",
            match i64::try_from(self.seed) {
                Ok(seed) => value(seed),
                Err(_) => value(self.seed.to_string()),
            },
        );
        root.insert("duration", value(format_duration(self.duration)));
        if !self.checks.is_empty() {
            let names: Array = self.checks.iter().map(|c| c.name.as_str()).collect();
            root.insert("checks", value(names));
        }
        root.insert("protocol", Item::Table(self.protocol_table()));
        if let Some(cluster) = self.cluster_table() {
            root.insert("cluster", Item::Table(cluster));
        }
        root.insert("network", Item::Table(network_table(&self.network)));
        if !self.clocks.is_empty() {
            let clocks: ArrayOfTables = self.clocks.iter().map(clock_table).collect();
            root.insert("clock", Item::ArrayOfTables(clocks));
        }
        if !self.processing.is_default() {
            root.insert(
                "processing",
                Item::Table(processing_table(&self.processing)),
            );
        }
        if !self.disk.is_default() {
            root.insert("disk", Item::Table(disk_table(&self.disk)));
        }
        if !self.faults.is_empty() {
            let faults: ArrayOfTables = self.faults.iter().map(fault_table).collect();
            root.insert("fault", Item::ArrayOfTables(faults));
        }
        let mut check = Table::new();
        check.set_implicit(true);
        for spec in &self.checks {
            if spec.params.as_object().is_some_and(|m| !m.is_empty()) {
                check.insert(&spec.name, Item::Table(json_to_table(&spec.params)));
            }
        }
        if !check.is_empty() {
            root.insert("check", Item::Table(check));
        }
        let mut expect = Table::new();
        match &self.expect {
            Expectation::Pass => {
                expect.insert("outcome", value("pass"));
            }
            Expectation::Violation { checker } => {
                expect.insert("outcome", value("violation"));
                expect.insert("checker", value(checker.as_str()));
            }
        }
        if !self.expect_vacuous.is_empty() {
            let mut list = toml_edit::Array::new();
            for name in &self.expect_vacuous {
                list.push(name.as_str());
            }
            expect.insert("vacuous", value(list));
        }
        root.insert("expect", Item::Table(expect));
        if let Some(profile) = &self.profile {
            root.insert("profile", Item::Table(json_to_table(profile)));
        }
        doc.to_string()
    }

    fn protocol_table(&self) -> Table {
        let mut t = Table::new();
        t.insert("name", value(self.protocol.name.as_str()));
        t.insert("variant", value(self.protocol.variant.as_str()));
        if self
            .protocol
            .params
            .as_object()
            .is_some_and(|m| !m.is_empty())
        {
            t.insert("params", Item::Table(json_to_table(&self.protocol.params)));
        }
        t
    }

    fn cluster_table(&self) -> Option<Table> {
        let mut t = Table::new();
        match &self.cluster {
            ClusterSpec::Nodes(n) => {
                t.insert("nodes", value(i64::from(*n)));
            }
            ClusterSpec::Roles(roles) if roles.is_empty() => return None,
            ClusterSpec::Roles(roles) => {
                let mut r = Table::new();
                for spec in roles {
                    r.insert(&spec.role, value(i64::from(spec.count)));
                }
                t.set_implicit(true);
                t.insert("roles", Item::Table(r));
            }
        }
        Some(t)
    }
}

fn latency_value(latency: &Latency) -> Value {
    let a: Array = [format_duration(latency.min), format_duration(latency.max)]
        .into_iter()
        .collect();
    Value::Array(a)
}

/// A delay: its range for a uniform one (as every scenario wrote it before
/// distributions), else an inline table naming its `dist`.
fn delay_value(delay: &crate::Delay) -> Value {
    match delay.as_uniform() {
        Some(l) => latency_value(&l),
        None => json_to_toml(&serde_json::to_value(delay).expect("a delay serializes"))
            .expect("a delay is never null"),
    }
}

fn network_table(network: &NetworkSpec) -> Table {
    let mut t = Table::new();
    t.insert("latency", value(delay_value(&network.latency)));
    t.insert("loss", value(network.loss));
    t.insert("duplicate", value(network.duplicate));
    if let Some(mode) = network.mode {
        t.insert("mode", value(mode.as_str()));
    }
    if let Some(timeout) = network.connection_timeout {
        t.insert("connection_timeout", value(format_duration(timeout.0)));
    }
    if !network.links.is_empty() {
        let links: ArrayOfTables = network
            .links
            .iter()
            .map(|link| {
                let mut l = Table::new();
                l.insert("from", value(i64::from(link.from.0)));
                l.insert("to", value(i64::from(link.to.0)));
                if link.both {
                    l.insert("both", value(true));
                }
                if let Some(latency) = &link.latency {
                    l.insert("latency", value(delay_value(latency)));
                }
                if let Some(loss) = link.loss {
                    l.insert("loss", value(loss));
                }
                if let Some(duplicate) = link.duplicate {
                    l.insert("duplicate", value(duplicate));
                }
                l
            })
            .collect();
        t.insert("link", Item::ArrayOfTables(links));
    }
    t
}

fn disk_table(disk: &DiskSpec) -> Table {
    let mut t = Table::new();
    t.insert("fsync", value(latency_value(&disk.fsync)));
    if !disk.nodes.is_empty() {
        let nodes: ArrayOfTables = disk
            .nodes
            .iter()
            .map(|d| {
                let mut n = Table::new();
                n.insert("node", value(i64::from(d.node.0)));
                n.insert("fsync", value(latency_value(&d.fsync)));
                n
            })
            .collect();
        t.insert("node", Item::ArrayOfTables(nodes));
    }
    t
}

fn processing_table(processing: &ProcessingSpec) -> Table {
    let mut t = Table::new();
    t.insert("time", value(latency_value(&processing.time)));
    if !processing.nodes.is_empty() {
        let nodes: ArrayOfTables = processing
            .nodes
            .iter()
            .map(|d| {
                let mut n = Table::new();
                n.insert("node", value(i64::from(d.node.0)));
                n.insert("time", value(latency_value(&d.time)));
                n
            })
            .collect();
        t.insert("node", Item::ArrayOfTables(nodes));
    }
    if processing.order_after_stall {
        t.insert("order_after_stall", value(true));
    }
    t
}

fn clock_table(clock: &ClockSpec) -> Table {
    let mut t = Table::new();
    t.insert("node", value(i64::from(clock.node.0)));
    t.insert("offset", value(clock.offset.to_string()));
    t.insert("drift", value(clock.drift));
    t
}

/// `at`, `kind`, `node` (if any), then the variant's other fields by name.
fn fault_table(event: &FaultEvent) -> Table {
    let mut t = Table::new();
    t.insert("at", value(format_duration(event.at)));
    t.insert("kind", value(event.fault.kind()));
    let json = serde_json::to_value(&event.fault).expect("a Fault always serializes to JSON");
    let body = json
        .as_object()
        .and_then(|m| m.get(event.fault.kind()))
        .and_then(|b| b.as_object())
        .expect("a Fault serializes as {kind: {fields}}");
    if let Some(node) = body.get("node").and_then(json_to_toml) {
        t.insert("node", value(node));
    }
    for (k, v) in body.iter().filter(|(k, _)| *k != "node") {
        if let Some(v) = json_to_toml(v) {
            t.insert(k, value(v));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse, EXAMPLE};
    use std::time::Duration;
    use tenure_core::{NodeId, Rng, RoleSpec, SignedDuration, SplitMix64};

    /// `parse(to_toml(s))` equals `s` except for `file` and `source`.
    fn assert_round_trips(s: &Scenario) -> String {
        let text = s.to_toml();
        let back = parse(&text, "written.toml")
            .unwrap_or_else(|e| panic!("to_toml wrote a file that does not parse: {e}\n{text}"));
        let expected = Scenario {
            file: back.file.clone(),
            source: back.source.clone(),
            ..s.clone()
        };
        assert_eq!(back, expected, "{text}");
        assert_eq!(back.to_toml(), text, "to_toml is canonical");
        text
    }

    #[test]
    fn the_full_example_round_trips() {
        let s = parse(EXAMPLE, "leader.toml").unwrap();
        let text = assert_round_trips(&s);
        assert!(text.starts_with("name = \"leader crash\"\n"), "{text}");
        assert!(text.contains("[[fault]]\nat = \"5s\"\nkind = \"pause\"\nnode = \"leader\"\n"));
        assert!(text.contains("[cluster.roles]\nserver = 5\n"), "{text}");
        assert!(!text.contains("[cluster]\n"), "{text}");
    }

    #[test]
    fn a_minimal_scenario_writes_its_defaults_out() {
        let s = parse(
            "duration = \"1s\"\n[protocol]\nname = \"bully\"\n",
            "min.toml",
        )
        .unwrap();
        assert_eq!(
            s.to_toml(),
            "name = \"min\"\nseed = 1\nduration = \"1s\"\n\n[protocol]\nname = \"bully\"\n\
             variant = \"correct\"\n\n[network]\nlatency = [\"1ms\", \"5ms\"]\nloss = 0.0\n\
             duplicate = 0.0\n\n[expect]\noutcome = \"pass\"\n"
        );
        assert_round_trips(&s);
    }

    #[test]
    fn seeds_above_i64_max_are_written_as_strings() {
        let mut s = parse(EXAMPLE, "leader.toml").unwrap();
        s.seed = u64::MAX;
        let text = assert_round_trips(&s);
        assert!(text.contains("seed = \"18446744073709551615\""), "{text}");
    }

    fn node(rng: &mut SplitMix64, n: u32) -> NodeId {
        NodeId(rng.range_inclusive(0, u64::from(n) - 1) as u32)
    }

    fn sel(rng: &mut SplitMix64, n: u32) -> NodeSel {
        if rng.chance(0.3) {
            role(rng)
        } else {
            NodeSel::Id(node(rng, n).0)
        }
    }

    fn role(rng: &mut SplitMix64) -> NodeSel {
        [NodeSel::Leader, NodeSel::Holder, NodeSel::Waiter][rng.range_inclusive(0, 2) as usize]
    }

    fn millis(rng: &mut SplitMix64, max: u64) -> Duration {
        Duration::from_millis(rng.range_inclusive(1, max))
    }

    fn latency(rng: &mut SplitMix64) -> Latency {
        let a = millis(rng, 50);
        let b = millis(rng, 50);
        Latency::new(a.min(b), a.max(b))
    }

    /// Any delay distribution, each field in range (for round trips).
    fn delay(rng: &mut SplitMix64) -> crate::Delay {
        use crate::Delay;
        let cap = Duration::from_millis(500);
        match rng.range_inclusive(0, 4) {
            0 => latency(rng).into(),
            1 => Delay::Exponential {
                min: millis(rng, 5),
                mean: millis(rng, 50),
                max: cap,
            },
            2 => Delay::LogNormal {
                min: Duration::ZERO,
                median: millis(rng, 20),
                sigma: probability(rng) * 2.0,
                max: cap,
            },
            3 => Delay::Pareto {
                scale: millis(rng, 10),
                shape: 0.5 + probability(rng) * 2.0,
                max: cap,
            },
            _ => Delay::Spikes {
                base: Box::new(latency(rng).into()),
                probability: probability(rng),
                spike: latency(rng),
            },
        }
    }

    fn probability(rng: &mut SplitMix64) -> f64 {
        rng.range_inclusive(0, 1000) as f64 / 1000.0
    }

    /// Two disjoint non-empty groups out of `n >= 3` nodes, avoiding `except`.
    fn two_groups(rng: &mut SplitMix64, n: u32, except: Option<NodeId>) -> Vec<Vec<NodeId>> {
        let nodes: Vec<NodeId> = (0..n).map(NodeId).filter(|x| Some(*x) != except).collect();
        let split = rng.range_inclusive(1, nodes.len() as u64 - 1) as usize;
        vec![nodes[..split].to_vec(), nodes[split..].to_vec()]
    }

    fn fault(rng: &mut SplitMix64, n: u32) -> Fault {
        match rng.range_inclusive(0, 20) {
            0 => Fault::Partition {
                groups: two_groups(rng, n, None),
            },
            1 => Fault::Isolate { node: sel(rng, n) },
            2 => Fault::Cut {
                nodes: [NodeId(0), NodeId(n - 1)],
            },
            3 => {
                let g = two_groups(rng, n, None);
                Fault::OneWay {
                    from: g[0].clone(),
                    to: g[1].clone(),
                }
            }
            4 => {
                let bridge = node(rng, n);
                Fault::Bridge {
                    node: NodeSel::Id(bridge.0),
                    groups: two_groups(rng, n, Some(bridge)),
                }
            }
            5 => Fault::Heal {},
            6 => Fault::Crash { node: sel(rng, n) },
            7 => Fault::Restart { node: sel(rng, n) },
            8 => Fault::Pause {
                node: sel(rng, n),
                duration: millis(rng, 3000),
            },
            9 => Fault::ClockJump {
                node: sel(rng, n),
                by: SignedDuration(rng.range_inclusive(0, 4_000_000_000) as i64 - 2_000_000_000),
            },
            10 => Fault::ClockDrift {
                node: sel(rng, n),
                drift: probability(rng) - 0.5,
            },
            11 => Fault::Network {
                latency: rng.chance(0.5).then(|| delay(rng)),
                loss: rng.chance(0.5).then(|| probability(rng)),
                duplicate: rng.chance(0.5).then(|| probability(rng)),
            },
            12 => Fault::PowerLoss {
                node: sel(rng, n),
                torn: rng.chance(0.5),
            },
            13 => Fault::CrashPoint {
                node: sel(rng, n),
                at_effect: rng.range_inclusive(0, 9) as u32,
                at_sync: rng.chance(0.5),
                power: rng.chance(0.5),
                restart_after: rng.chance(0.5).then(|| millis(rng, 3000)),
            },
            14 => Fault::DiskStall {
                node: sel(rng, n),
                duration: millis(rng, 3000),
            },
            15 => Fault::DiskError {
                node: sel(rng, n),
                duration: millis(rng, 3000),
            },
            16 => Fault::Slow {
                node: sel(rng, n),
                factor: 1.0 + rng.range_inclusive(0, 99) as f64 / 4.0,
                duration: millis(rng, 3000),
            },
            18 => Fault::ClockStall {
                node: sel(rng, n),
                duration: millis(rng, 3000),
            },
            19 => Fault::ClockSlew {
                node: sel(rng, n),
                by: SignedDuration(rng.range_inclusive(0, 400_000_000) as i64 - 200_000_000),
                ppm: [500.0, 83_333.0][rng.range_inclusive(0, 1) as usize],
            },
            20 => Fault::SlowLink {
                from: NodeSel::Id(node(rng, n).0),
                node: role(rng),
                latency: delay(rng),
                duration: millis(rng, 3000),
            },
            _ => Fault::Request {
                node: sel(rng, n),
                name: format!("op{}", rng.range_inclusive(0, 9)),
                arg: rng.range_inclusive(0, 200) as i64 - 100,
            },
        }
    }

    /// A random but valid scenario: what fuzz and shrink will write.
    fn generate(seed: u64) -> Scenario {
        let mut rng = SplitMix64(seed);
        let n = rng.range_inclusive(3, 7) as u32;
        let stream = rng.chance(0.5);
        let duration = Duration::from_secs(rng.range_inclusive(10, 60));
        let mut at = Duration::ZERO;
        let mut faults = Vec::new();
        for _ in 0..rng.range_inclusive(0, 12) {
            at += millis(&mut rng, 800);
            if at >= duration {
                break;
            }
            faults.push(FaultEvent {
                at,
                fault: fault(&mut rng, n),
            });
        }
        let mut checks = Vec::new();
        for name in ["single-leader-per-term", "leader-liveness"] {
            if rng.chance(0.7) {
                let params = if rng.chance(0.5) {
                    serde_json::json!({"within": "5s", "nested": {"k": [1, 2.5, true]}})
                } else {
                    serde_json::json!({})
                };
                checks.push(CheckSpec {
                    name: name.to_string(),
                    params,
                });
            }
        }
        let expect = match checks.first() {
            Some(c) if rng.chance(0.5) => Expectation::Violation {
                checker: c.name.clone(),
            },
            _ => Expectation::Pass,
        };
        let expect_vacuous = match checks.last() {
            Some(c) if rng.chance(0.3) => vec![c.name.clone()],
            _ => Vec::new(),
        };
        Scenario {
            expect_vacuous,
            file: String::new(),
            source: String::new(),
            name: format!("generated {seed}"),
            description: rng
                .chance(0.5)
                .then(|| "with \"quotes\"\nand a newline".to_string()),
            seed: rng.next_u64(),
            duration,
            protocol: ProtocolSpec {
                name: "raft".into(),
                variant: "correct".into(),
                params: serde_json::json!({"election_timeout": ["150ms", "300ms"], "n": -3}),
            },
            cluster: if rng.chance(0.5) {
                ClusterSpec::Nodes(n)
            } else {
                ClusterSpec::Roles(vec![RoleSpec::new("server", n)])
            },
            network: NetworkSpec {
                latency: delay(&mut rng),
                loss: probability(&mut rng),
                duplicate: probability(&mut rng),
                links: (0..rng.range_inclusive(0, 2))
                    .map(|_| LinkSpec {
                        from: NodeId(0),
                        to: NodeId(1),
                        both: rng.chance(0.5),
                        latency: rng.chance(0.5).then(|| delay(&mut rng)),
                        loss: rng.chance(0.5).then(|| probability(&mut rng)),
                        duplicate: None,
                    })
                    .collect(),
                mode: match rng.range_inclusive(0, 2) {
                    0 => None,
                    _ if stream => Some(NetworkMode::Stream),
                    _ => Some(NetworkMode::Datagram),
                },
                connection_timeout: (stream && rng.chance(0.5)).then(|| {
                    tenure_core::HumanDuration(Duration::from_millis(rng.range_inclusive(1, 5000)))
                }),
            },
            clocks: (0..rng.range_inclusive(0, 2) as u32)
                .map(|i| ClockSpec {
                    node: NodeId(i),
                    offset: SignedDuration(rng.range_inclusive(0, 1_000_000) as i64 - 500_000),
                    drift: probability(&mut rng) / 10.0,
                })
                .collect(),
            disk: DiskSpec {
                fsync: latency(&mut rng),
                nodes: (0..rng.range_inclusive(0, 2) as u32)
                    .map(|i| NodeDiskSpec {
                        node: NodeId(i),
                        fsync: latency(&mut rng),
                    })
                    .collect(),
            },
            processing: ProcessingSpec {
                time: latency(&mut rng),
                nodes: (0..rng.range_inclusive(0, 2) as u32)
                    .map(|i| NodeProcessingSpec {
                        node: NodeId(i),
                        time: latency(&mut rng),
                    })
                    .collect(),
                order_after_stall: rng.chance(0.3),
            },
            faults,
            checks,
            expect,
            profile: rng.chance(0.3).then(|| serde_json::json!({"crash": 0.1})),
        }
    }

    #[test]
    fn generated_scenarios_round_trip() {
        for seed in 0..64 {
            assert_round_trips(&generate(seed));
        }
    }
}

/// A fault event as a scenario writes it, on one line (an inline `[[fault]]` table):
/// `at = "1715ms", kind = "pause", node = 0, duration = "2.987s"`.
impl std::fmt::Display for FaultEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inline = fault_table(self).into_inline_table();
        let text = inline.to_string();
        let text = text.trim();
        let text = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text);
        f.write_str(text.trim())
    }
}

#[cfg(test)]
mod display_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_fault_event_displays_as_the_toml_a_scenario_writes() {
        let event = FaultEvent {
            at: Duration::from_millis(1715),
            fault: Fault::Pause {
                node: NodeSel::Id(0),
                duration: Duration::from_millis(2987),
            },
        };
        assert_eq!(
            event.to_string(),
            r#"at = "1715ms", kind = "pause", node = 0, duration = "2987ms""#
        );
    }
}
