//! The linearizability checker over Porcupine's corpus (vendored in `tests/data/porcupine`):
//! the 102 Jepsen etcd histories (Porcupine: about 1.0 s for them on this machine
//! type), the six kv histories, and the largest history alone. Parsing is outside the
//! timed part, as in Porcupine's benchmarks.

use criterion::{criterion_group, criterion_main, Criterion};
use std::path::PathBuf;
use tenure_check::linearizability::history::{pair, Op};
use tenure_check::linearizability::{check, formats, search::Budget};

fn corpus() -> Vec<(String, &'static str, Vec<Op>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/porcupine");
    let csv = std::fs::read_to_string(root.join("verdicts.csv")).expect("the vendored corpus");
    csv.lines()
        .skip(1)
        .filter_map(|l| l.split_once(','))
        .map(|(name, _)| {
            let (dir, model) = if name.starts_with("etcd_") {
                ("test_data/jepsen", "cas-register")
            } else {
                ("test_data/kv", "kv")
            };
            let text = std::fs::read_to_string(root.join(dir).join(name)).unwrap();
            let events = formats::parse(&text, formats::Format::detect(&text).unwrap()).unwrap();
            (name.to_string(), model, pair(&events).unwrap())
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let all = corpus();
    let etcd: Vec<_> = all.iter().filter(|h| h.1 == "cas-register").collect();
    let kv: Vec<_> = all.iter().filter(|h| h.1 == "kv").collect();
    let largest = all.iter().max_by_key(|h| h.2.len()).unwrap();
    let mut g = c.benchmark_group("linearizability");
    g.sample_size(10);
    g.bench_function("etcd_102_histories", |b| {
        b.iter(|| {
            for (_, m, ops) in &etcd {
                check(m, ops, &Budget::default()).unwrap();
            }
        })
    });
    g.bench_function("kv_6_histories", |b| {
        b.iter(|| {
            for (_, m, ops) in &kv {
                check(m, ops, &Budget::default()).unwrap();
            }
        })
    });
    g.bench_function(
        format!("largest_{}_{}_ops", largest.0, largest.2.len()),
        |b| b.iter(|| check(largest.1, &largest.2, &Budget::default()).unwrap()),
    );
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
