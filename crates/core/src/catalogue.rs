//! A catalogue of protocols: the one list the simulator, the model checker and the CLI
//! all read.
//!
//! A catalogue names its protocols by type, through a [`Visitor`]: whoever needs the list
//! (the engine's scenario runner, the explorer, `tenure list`) implements `Visitor`, and
//! builds from each `P` what it needs, type-erased. The zoo is one catalogue
//! (`tenure_zoo::Zoo`); a user's crate writes its own, and `(A, B)` joins two.
//!
//! ```
//! use tenure_core::{Catalogue, Configurable, Visitor};
//! # use tenure_core::ProtocolInfo;
//! struct Names(Vec<&'static str>);
//! impl Visitor for Names {
//!     fn visit<P: Configurable>(&mut self) {
//!         self.0.push(P::info().name);
//!     }
//! }
//! struct Empty;
//! impl Catalogue for Empty {
//!     fn visit<V: Visitor>(&self, _visitor: &mut V) {}
//! }
//! let mut names = Names(Vec::new());
//! Empty.visit(&mut names);
//! assert!(names.0.is_empty());
//! ```

use crate::Configurable;

/// Something built once per protocol of a [`Catalogue`].
pub trait Visitor {
    fn visit<P: Configurable>(&mut self);
}

/// A list of protocols, each visited once, in the order `tenure list` shows them.
pub trait Catalogue: Send + Sync + 'static {
    fn visit<V: Visitor>(&self, visitor: &mut V);
}

/// Two catalogues, one after the other (e.g. the zoo and your own protocols).
impl<A: Catalogue, B: Catalogue> Catalogue for (A, B) {
    fn visit<V: Visitor>(&self, visitor: &mut V) {
        self.0.visit(visitor);
        self.1.visit(visitor);
    }
}

/// Something built once per protocol of a [`RealCatalogue`]: a protocol whose messages
/// can go on a real wire.
pub trait RealVisitor {
    fn visit<P>(&mut self)
    where
        P: Configurable,
        P::Msg: serde::Serialize + serde::de::DeserializeOwned;
}

/// The protocols that can also run as real processes (`tenure node`, `tenure cluster`,
/// the `tenure-runtime` crate): those whose `Msg` is `Serialize + Deserialize`. A
/// catalogue opts in by listing them here as well.
pub trait RealCatalogue: Send + Sync + 'static {
    fn visit_real<V: RealVisitor>(&self, visitor: &mut V);
}

/// No protocol runs for real.
pub struct NoRealProtocols;

impl RealCatalogue for NoRealProtocols {
    fn visit_real<V: RealVisitor>(&self, _visitor: &mut V) {}
}

/// Two real catalogues, one after the other.
impl<A: RealCatalogue, B: RealCatalogue> RealCatalogue for (A, B) {
    fn visit_real<V: RealVisitor>(&self, visitor: &mut V) {
        self.0.visit_real(visitor);
        self.1.visit_real(visitor);
    }
}

/// The names of a catalogue's protocols, in order.
pub fn names<C: Catalogue>(catalogue: &C) -> Vec<&'static str> {
    struct Names(Vec<&'static str>);
    impl Visitor for Names {
        fn visit<P: Configurable>(&mut self) {
            self.0.push(P::info().name);
        }
    }
    let mut v = Names(Vec::new());
    catalogue.visit(&mut v);
    v.0
}

/// Where a catalogue's protocols disagree with themselves: a protocol whose
/// `Configurable::Variant` type does not name exactly the variants its `info()` lists, in
/// the same order, or whose `Configurable::Role` type does not name exactly its roles. Empty when all agree; a protocol's own tests should assert that.
pub fn variant_mismatches<C: Catalogue>(catalogue: &C) -> Vec<String> {
    struct Check(Vec<String>);
    impl Visitor for Check {
        fn visit<P: Configurable>(&mut self) {
            let typed: Vec<String> = <P::Variant as crate::Variant>::all()
                .iter()
                .map(|v| v.to_string())
                .collect();
            let listed: Vec<&str> = P::info().variants.iter().map(|v| v.name).collect();
            if typed != listed {
                self.0.push(format!(
                    "{}: its Variant type names {typed:?}, its info() lists {listed:?}",
                    P::info().name
                ));
            }
            let typed: Vec<String> = <P::Role as crate::Variant>::all()
                .iter()
                .map(|r| r.to_string())
                .collect();
            let listed: Vec<&str> = P::info().roles.iter().map(|r| r.name).collect();
            if typed != listed {
                self.0.push(format!(
                    "{}: its Role type names {typed:?}, its info() lists {listed:?}",
                    P::info().name
                ));
            }
        }
    }
    let mut check = Check(Vec::new());
    catalogue.visit(&mut check);
    check.0
}
