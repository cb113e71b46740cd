//! tenure-zoo-prebuilt: the zoo's catalogue ([`tenure_zoo::Zoo`]) turned, once, into the
//! registries the simulator, the model checker and the real runtime read.
//!
//! `Protocols::of`, `Models::of` and `Launchers::of` are generic over the catalogue, so
//! every crate, binary and test binary that called them with the zoo compiled the
//! simulator and the model checker for every zoo protocol again: about a minute of CPU
//! each on the 2-core CI machine, nearly three for the `tenure` binary (issue 38). Their
//! callers link this crate's one copy instead. The catalogue itself (tenure-zoo) stays a
//! list that runs nothing (`.ci/check-deps`); this crate has no tests of its own, since
//! its test build would compile everything a second time (its test is
//! `tests/integration/zoo.rs`).

/// The zoo's protocols as the simulator runs them: [`tenure_sim::Protocols::of`] the
/// [`Zoo`](tenure_zoo::Zoo).
///
/// Built here, once, rather than by each caller: `Protocols::of` is generic over the
/// catalogue, so every crate, binary and test binary that called it with the zoo compiled
/// the simulator's code for all of the zoo's protocols again (about a minute of CPU
/// each on the 2-core CI machine; issue 38). A caller of this function links that code
/// from this crate instead.
pub fn protocols() -> tenure_sim::Protocols {
    tenure_sim::Protocols::of(&tenure_zoo::Zoo)
}

/// The zoo's protocols as the model checker explores them: [`tenure_models::Models::of`]
/// the [`Zoo`](tenure_zoo::Zoo), built here once (see [`protocols`]).
pub fn models() -> tenure_models::Models {
    tenure_models::Models::of(&tenure_zoo::Zoo)
}

/// The zoo's protocols that run as real processes: [`tenure_runtime::Launchers::of`] the
/// [`Zoo`](tenure_zoo::Zoo), built here once (see [`protocols`]).
pub fn launchers() -> tenure_runtime::Launchers {
    tenure_runtime::Launchers::of(&tenure_zoo::Zoo)
}
