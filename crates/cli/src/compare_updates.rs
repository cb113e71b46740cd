//! The `tenure compare --updates` table: what the clients' updates cost under each
//! approach (a lock, fencing, compare-and-set, idempotency keys), from tenure-metrics'
//! `updates` and `locks` over every seed of a row.

use crate::cmd_compare::Row;

fn ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0}ms")
    } else {
        format!("{v:.1}ms")
    }
}

/// The header and cells: one row per alternative.
pub fn table(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let many_files = rows.iter().any(|r| r.scenario != rows[0].scenario);
    let head = [
        if many_files { "scenario" } else { "variant" },
        "updates/s",
        "update p50",
        "update p99",
        "acquire p50",
        "acquire p99",
        "retries/update",
        "lost",
        "duplicated",
        "violations",
    ]
    .map(String::from)
    .to_vec();
    let dash = || "-".to_string();
    let body = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.label.clone()];
            let m = r.metrics.as_ref();
            match m.and_then(|m| m.updates.as_ref()) {
                Some(u) => {
                    cells.push(format!("{:.2}", u.per_s));
                    cells.push(u.latency.map_or_else(dash, |p| ms(p.p50_ms)));
                    cells.push(u.latency.map_or_else(dash, |p| ms(p.p99_ms)));
                }
                None => cells.extend([format!("{:.2}", 0.0), dash(), dash()]),
            }
            let acquire = m
                .and_then(|m| m.locks.as_ref())
                .and_then(|l| l.acquire_latency);
            cells.push(acquire.map_or_else(dash, |p| ms(p.p50_ms)));
            cells.push(acquire.map_or_else(dash, |p| ms(p.p99_ms)));
            match m.and_then(|m| m.updates.as_ref()) {
                Some(u) => {
                    cells.push(
                        u.retries_per_update
                            .map_or_else(|| "not recorded".to_string(), |x| format!("{x:.2}")),
                    );
                    cells.push(u.lost.to_string());
                    cells.push(u.duplicated.to_string());
                }
                None => cells.extend([dash(), dash(), dash()]),
            }
            let n = r.seeds.len();
            let v: Vec<String> = r
                .violations
                .iter()
                .filter(|(_, k)| *k > 0)
                .map(|(name, k)| format!("{name} {k}/{n}"))
                .collect();
            cells.push(if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            });
            cells
        })
        .collect();
    (head, body)
}
