//! One verdict on every path: the same (variant, profile, seed) gives the same verdict
//! through `cargo run -p my-election -- fuzz --protocol my-election`, the file its `--print` writes
//! run as `run` runs it, and the library's `Simulation`.

use my_election::MyProtocols;
use tenure::paths::same_verdict_on_every_path;

#[test]
fn every_variant_gets_one_verdict_on_every_path() {
    let mut compared = 0;
    for variant in tenure::paths::variants(&MyProtocols, "my-election") {
        for profile in ["chaos", "crashes", "power"] {
            compared += same_verdict_on_every_path(
                &MyProtocols,
                "my-election",
                Some(variant),
                profile,
                0..100,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(compared >= 600, "{compared} seeds compared");
}
