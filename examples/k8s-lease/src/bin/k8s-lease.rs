//! The whole `tenure` command line for this crate's protocol and its own checker
//! (`lease-transitions`, which its promises name):
//! `cargo run -p k8s-lease -- fuzz --protocol k8s-lease --variant V --profile P`,
//! `-- verify scenarios`, `-- shrink FILE --seed N`, `-- check-model --protocol k8s-lease`.

fn main() -> std::process::ExitCode {
    tenure::cli::Main::new(k8s_lease::LeaseProtocols)
        .checker(k8s_lease::transitions::checker())
        .run()
}
