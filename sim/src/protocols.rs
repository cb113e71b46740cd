//! The protocols a run can name: a [`Catalogue`] turned into type-erased entries that
//! prepare a scenario for running. The engine knows no protocol by name; whoever runs it
//! (the CLI, the facade, the tests) hands it a catalogue.

use crate::play::{Playable, Protocolled};
use std::sync::Arc;
use tenure_core::{Catalogue, Configurable, ProtocolInfo, Visitor};

/// One protocol, type-erased.
pub struct Entry {
    pub info: &'static ProtocolInfo,
    /// Its transport when a scenario does not set `[network] mode`.
    pub transport: tenure_core::Transport,
    pub(crate) playable: Box<dyn Playable + Send + Sync>,
}

/// The protocols of a catalogue, by name. Cheap to clone.
#[derive(Clone)]
pub struct Protocols {
    entries: Arc<Vec<Entry>>,
}

impl std::fmt::Debug for Protocols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Protocols {
    /// Every protocol of `catalogue`, in its order.
    pub fn of<C: Catalogue>(catalogue: &C) -> Protocols {
        struct Build(Vec<Entry>);
        impl Visitor for Build {
            fn visit<P: Configurable>(&mut self) {
                self.0.push(Entry {
                    info: P::info(),
                    transport: P::transport(),
                    playable: Box::new(Protocolled::<P>(std::marker::PhantomData)),
                });
            }
        }
        let mut build = Build(Vec::new());
        catalogue.visit(&mut build);
        let mut names: Vec<&str> = build.0.iter().map(|e| e.info.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a catalogue names a protocol twice");
        Protocols {
            entries: Arc::new(build.0),
        }
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn lookup(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.info.name == name)
    }

    /// The protocol names, for error messages.
    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.info.name).collect()
    }
}
