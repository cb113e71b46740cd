//! One verdict on every path: the same (variant, profile, seed) gives the same verdict
//! through `cargo run -p k8s-lease -- fuzz --protocol k8s-lease`, the file its `--print` writes
//! run as `run` runs it, and the library's `Simulation`.

use k8s_lease::LeaseProtocols;
use tenure::paths::same_verdict_on_every_path;

#[test]
fn every_variant_gets_one_verdict_on_every_path() {
    // The promises name the crate's own checker: registered, as its command line does.
    tenure::register_checker(k8s_lease::transitions::checker()).unwrap();
    let mut compared = 0;
    for variant in tenure::paths::variants(&LeaseProtocols, "k8s-lease") {
        for profile in ["chaos", "crashes", "power"] {
            compared += same_verdict_on_every_path(
                &LeaseProtocols,
                "k8s-lease",
                Some(variant),
                profile,
                0..100,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(compared >= 600, "{compared} seeds compared");
}
