//! Which protocols can run as real nodes, type-erased for the command line.
//!
//! A protocol runs for real when its messages can go on the wire (`Msg: Serialize +
//! Deserialize`). A [`tenure_core::RealCatalogue`] lists those protocols, as a
//! [`tenure_core::Catalogue`] lists every protocol for the simulator; [`Launchers::of`]
//! turns it into one launcher per protocol name, which `tenure node` and `tenure
//! cluster` look up by the scenario's protocol.

use crate::{NodeSpec, RuntimeError, Stats};
use serde::{de::DeserializeOwned, Serialize};
use std::sync::atomic::AtomicBool;
use tenure_core::{Cluster, Configurable, ProtocolInfo, RealCatalogue, RealVisitor, Transport};

type RunFn = fn(
    params: &serde_json::Value,
    variant: &str,
    spec: &NodeSpec,
    stop: &AtomicBool,
) -> Result<Stats, RuntimeError>;

type CheckFn =
    fn(params: &serde_json::Value, variant: &str, cluster: &Cluster) -> Result<(), String>;

/// One protocol's way to run a node.
#[derive(Clone, Copy)]
pub struct Launcher {
    pub name: &'static str,
    pub info: &'static ProtocolInfo,
    /// Configures the protocol from a scenario's parameters and variant (an error names
    /// the field), then runs the node until `stop`.
    pub run: RunFn,
    /// The configuration alone: to refuse a bad scenario before any process starts.
    pub check: CheckFn,
    /// The protocol's own transport (`Configurable::transport`): what a scenario that
    /// does not write `[network] mode` runs on.
    pub transport: fn() -> Transport,
}

fn configure<P: Configurable>(
    params: &serde_json::Value,
    variant: &str,
    cluster: &Cluster,
) -> Result<P::Config, String> {
    let params: P::Params =
        serde_json::from_value(params.clone()).map_err(|e| format!("[protocol.params]: {e}"))?;
    P::configure_named(params, variant, cluster).map_err(|e| e.to_string())
}

fn run<P>(
    params: &serde_json::Value,
    variant: &str,
    spec: &NodeSpec,
    stop: &AtomicBool,
) -> Result<Stats, RuntimeError>
where
    P: Configurable,
    P::Msg: Serialize + DeserializeOwned,
{
    let config = configure::<P>(params, variant, &spec.cluster).map_err(RuntimeError::Spec)?;
    crate::run::<P>(&config, spec, stop)
}

fn check<P: Configurable>(
    params: &serde_json::Value,
    variant: &str,
    cluster: &Cluster,
) -> Result<(), String> {
    configure::<P>(params, variant, cluster).map(|_| ())
}

/// The launchers of a real catalogue, by protocol name.
#[derive(Clone, Default)]
pub struct Launchers(pub Vec<Launcher>);

impl Launchers {
    pub fn of<C: RealCatalogue>(catalogue: &C) -> Launchers {
        struct Collect(Vec<Launcher>);
        impl RealVisitor for Collect {
            fn visit<P>(&mut self)
            where
                P: Configurable,
                P::Msg: Serialize + DeserializeOwned,
            {
                self.0.push(Launcher {
                    name: P::info().name,
                    info: P::info(),
                    run: run::<P>,
                    check: check::<P>,
                    transport: P::transport,
                });
            }
        }
        let mut c = Collect(Vec::new());
        catalogue.visit_real(&mut c);
        Launchers(c.0)
    }

    pub fn get(&self, name: &str) -> Option<&Launcher> {
        self.0.iter().find(|l| l.name == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|l| l.name).collect()
    }
}
