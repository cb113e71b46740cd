//! The whole `tenure` command line for this crate's protocol:
//! `cargo run -p k8s-lease -- fuzz --protocol k8s-lease --variant V --profile P`,
//! `-- verify scenarios`, `-- shrink FILE --seed N`.

fn main() -> std::process::ExitCode {
    tenure::cli::main(k8s_lease::LeaseProtocols)
}
