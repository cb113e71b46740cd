//! The `tenure` binary: the whole command line over the zoo's catalogue.

/// mimalloc rather than the system allocator: a large cluster's run touches every node's
/// small objects at each heartbeat, and mimalloc keeps them denser (a 2,001-node Raft
/// minute took 2.44x the 1,001-node one with it, 2.75x without; see issue 14). Which
/// allocator is used never changes a run's results.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The zoo's registries come prebuilt from tenure-zoo (`protocols()`, `models()`,
/// `launchers()`): `tenure_cli::main_real(Zoo, Zoo)` would run the same, but compile the
/// simulator and the model checker for every protocol of the zoo again in this binary.
fn main() -> std::process::ExitCode {
    let tools = tenure_cli::Tools::new(
        tenure_zoo_prebuilt::protocols(),
        tenure_zoo_prebuilt::models(),
    )
    .with_launchers(tenure_zoo_prebuilt::launchers());
    tenure_cli::main_with(tools)
}
