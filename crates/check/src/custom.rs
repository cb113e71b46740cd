//! Checkers of your own, by name, on every path.
//!
//! A crate that writes its own [`Checker`] registers it once with [`register`] (its
//! command line does it for you: `tenure::cli::Main::new(..).checker(..)`), and from then
//! on the name works wherever a built-in check's name does: a scenario's `checks`, a
//! protocol's promises, `fuzz`, `shrink`, `check-model`, `check-trace`, `tenure checks`
//! and the library's `Simulation::check`. Every one of them builds checkers through
//! [`crate::build`], which looks up the built-in checkers first and the registered ones
//! after, so none of them can treat yours differently.
//!
//! **No shadowing.** A name that a built-in checker already has is refused (yours would
//! silently replace, or be replaced by, a check other people read about in the book),
//! and so is a second, different registration of one name. Registering the same checker
//! twice (the same [`CheckerInfo`]) is allowed: a test may start the command line twice.
//!
//! **Why a registry, not a parameter.** The names are read in a dozen places (scenario
//! validation, promises, the explorer's choice of which checks to finish at every state,
//! `tenure checks`, suggestions for a misspelt name) across crates that do not know one
//! another; one process-wide list keeps them all in agreement. It is written once, at
//! start-up, before any run, and read in registration order, so it cannot make a run
//! depend on anything but the seed.

use crate::{CheckError, Checker, CheckerInfo};
use std::sync::{Arc, RwLock};
use tenure_core::Cluster;

type Build =
    dyn Fn(&serde_json::Value, &Cluster) -> Result<Box<dyn Checker>, CheckError> + Send + Sync;

/// A checker of your own: what `tenure checks` shows about it, and how to build one for
/// a run (a fresh one per run: checkers are stateful).
#[derive(Clone)]
pub struct CustomChecker {
    info: CheckerInfo,
    build: Arc<Build>,
}

impl std::fmt::Debug for CustomChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomChecker")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl CustomChecker {
    /// A checker that takes parameters: `build` gets the check's parameters (a JSON
    /// object, or `Null` for none given) and the run's cluster, and refuses bad ones
    /// with a [`CheckError`] naming the field.
    pub fn new(
        info: CheckerInfo,
        build: impl Fn(&serde_json::Value, &Cluster) -> Result<Box<dyn Checker>, CheckError>
            + Send
            + Sync
            + 'static,
    ) -> CustomChecker {
        CustomChecker {
            info,
            build: Arc::new(build),
        }
    }

    /// A checker without parameters: any given (other than an empty table) is refused.
    pub fn without_params(
        info: CheckerInfo,
        make: impl Fn(&Cluster) -> Box<dyn Checker> + Send + Sync + 'static,
    ) -> CustomChecker {
        let name = info.name;
        CustomChecker::new(info, move |params, cluster| {
            match params {
                serde_json::Value::Null => {}
                serde_json::Value::Object(m) if m.is_empty() => {}
                serde_json::Value::Object(m) => {
                    let field = m.keys().next().cloned().unwrap_or_default();
                    return Err(CheckError::new(
                        &field,
                        format!("unknown field `{field}`: `{name}` takes no parameters"),
                    ));
                }
                _ => {
                    return Err(CheckError::new(
                        "params",
                        format!("`{name}` takes no parameters"),
                    ))
                }
            }
            Ok(make(cluster))
        })
    }

    pub fn info(&self) -> &CheckerInfo {
        &self.info
    }

    pub(crate) fn make(
        &self,
        params: &serde_json::Value,
        cluster: &Cluster,
    ) -> Result<Box<dyn Checker>, CheckError> {
        let checker = (self.build)(params, cluster)?;
        if checker.name() != self.info.name {
            return Err(CheckError::new(
                "",
                format!(
                    "the checker registered as `{}` builds a checker named `{}`: its \
                     `Checker::name` must return the name it is registered under",
                    self.info.name,
                    checker.name()
                ),
            ));
        }
        Ok(checker)
    }
}

static REGISTERED: RwLock<Vec<CustomChecker>> = RwLock::new(Vec::new());

/// Makes `checker` available by its name everywhere (see the module docs). Refused: an
/// empty or badly spelt name (lower-case words joined by `-`), the name of a built-in
/// checker, or a name registered before with a different [`CheckerInfo`].
pub fn register(checker: CustomChecker) -> Result<(), CheckError> {
    let name = checker.info.name;
    let well_formed = !name.is_empty()
        && name.split('-').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !well_formed {
        return Err(CheckError::new(
            "",
            format!(
                "checker name `{name}`: use lower-case words and digits joined by `-` \
                 (e.g. `my-crate-terms`), as the built-in names are"
            ),
        ));
    }
    if crate::CATALOG.iter().any(|c| c.name == name) {
        return Err(CheckError::new(
            "",
            format!(
                "checker `{name}` is a built-in checker's name; a checker of your own \
                 may not shadow it: name yours differently (e.g. `mycrate-{name}`)"
            ),
        ));
    }
    let mut all = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    match all.iter().position(|c| c.info.name == name) {
        Some(i) if all[i].info == checker.info => {
            // The same checker again: keep the newer factory (same description).
            all[i] = checker;
            Ok(())
        }
        Some(_) => Err(CheckError::new(
            "",
            format!("checker `{name}` is registered already, with another description"),
        )),
        None => {
            all.push(checker);
            Ok(())
        }
    }
}

/// The registered checkers' descriptions, in registration order.
pub fn registered() -> Vec<CheckerInfo> {
    REGISTERED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|c| c.info)
        .collect()
}

/// The registered checker `name`, if any.
pub(crate) fn lookup(name: &str) -> Option<CustomChecker> {
    REGISTERED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|c| c.info.name == name)
        .cloned()
}
