//! `tenure list`: what can be run and checked.

use crate::Outcome;
use crate::Tools;
use clap::Args;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

/// What a protocol declares with its default parameters: its promises (checks, with
/// derived bounds) and its assumptions, in words.
fn declared(tools: &Tools, name: &str) -> (Vec<String>, Vec<String>) {
    let prepared = tenure_fuzz::default_scenario(&tools.protocols, name, None)
        .ok()
        .and_then(|s| tenure_sim::Prepared::new(s, &tools.protocols).ok());
    let Some(p) = prepared else {
        return (Vec::new(), Vec::new());
    };
    let promises = p
        .promises
        .iter()
        .map(
            |pr| match pr.params.get("within").and_then(|w| w.as_str()) {
                Some(within) => format!(
                    "{} within {within} ({})",
                    pr.check,
                    pr.params
                        .get("bound")
                        .and_then(|b| b.as_str())
                        .unwrap_or_default()
                ),
                None => pr.check.to_string(),
            },
        )
        .collect();
    (promises, p.assumptions.describe())
}

pub fn list(args: ListArgs, tools: &Tools) -> Outcome {
    let entries = tools.protocols.entries();
    if args.json {
        let protocols: Vec<serde_json::Value> = entries
            .iter()
            .map(|e| {
                let (promises, assumptions) = declared(tools, e.info.name);
                serde_json::json!({
                    "name": e.info.name,
                    "promises": promises,
                    "assumptions": assumptions,
                    "summary": e.info.summary,
                    "roles": e.info.roles.iter().map(|r| serde_json::json!({"name": r.name, "default_count": r.default_count, "summary": r.summary})).collect::<Vec<_>>(),
                    "variants": e.info.variants.iter().map(|v| serde_json::json!({"name": v.name, "summary": v.summary, "breaks": v.breaks})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let checkers: Vec<serde_json::Value> = tenure_check::catalog()
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "kind": c.kind, "summary": c.summary, "property": c.property, "source": c.source, "params": c.params}))
            .collect();
        let out = serde_json::json!({"protocols": protocols, "checkers": checkers, "fault_kinds": tenure_scenario::Fault::KINDS});
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
        return Outcome::Passed;
    }
    println!("PROTOCOLS");
    for e in entries {
        println!("  {:<14} {}", e.info.name, e.info.summary);
        let roles: Vec<String> = e
            .info
            .roles
            .iter()
            .map(|r| format!("{} (default {})", r.name, r.default_count))
            .collect();
        println!("    roles:    {}", roles.join(", "));
        for v in e.info.variants {
            let breaks = if v.breaks.is_empty() {
                String::new()
            } else {
                format!("  [breaks {}]", v.breaks.join(", "))
            };
            println!("    variant:  {:<20} {}{breaks}", v.name, v.summary);
        }
        let (promises, assumptions) = declared(tools, e.info.name);
        for p in promises {
            println!("    promises: {p}");
        }
        for a in assumptions {
            println!("    assumes:  {a}");
        }
    }
    println!("\nCHECKERS");
    for c in tenure_check::catalog() {
        println!("  {:<32} {} ({})", c.name, c.summary, c.kind.name());
        if !c.params.is_empty() {
            println!("  {:<32} params: {}", "", c.params);
        }
    }
    println!(
        "\nFAULT KINDS\n  {}",
        tenure_scenario::Fault::KINDS.join(", ")
    );
    Outcome::Passed
}
