//! The public API of the crates outside authors build against (`tenure`, the facade,
//! and `tenure-core`) is a committed listing (`api/*.txt`): one line per public item,
//! with its signature (functions and methods), its public fields (structs) and its
//! variants (enums). This test lists the sources again and fails when the listing
//! differs, naming each line added and removed, so a change to the public surface is
//! never made by accident: update the listing (`TENURE_BLESS_API=1 cargo test -p
//! tenure-tests --test integration public_api`) and say what changed, and how to
//! migrate, in CHANGELOG.md. `.ci/check-changelog` makes CI fail when `api/` changed
//! since the previous commit and CHANGELOG.md did not.
//!
//! The listing is read from the source with `syn`, not from rustdoc (whose JSON output
//! needs a nightly compiler): every `pub` item of every file, in its module path,
//! `#[cfg(test)]` items left out. Re-exports are listed as written (`pub use ...`).

use quote::ToTokens;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::{Attribute, Fields, ImplItem, Item, TraitItem, Visibility};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Token text with the spacing `quote` gives it, squeezed a little for reading.
fn text(t: &impl ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    s.replace(" :: ", "::")
        .replace(" ,", ",")
        .replace("& ", "&")
        .replace(" < ", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" (", "(")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ;", ";")
        .replace(" : ", ": ")
}

fn is_pub(v: &Visibility) -> bool {
    matches!(v, Visibility::Public(_))
}

fn cfg_test(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.to_token_stream().to_string().contains("test"))
}

fn non_exhaustive(attrs: &[Attribute]) -> &'static str {
    if attrs.iter().any(|a| a.path().is_ident("non_exhaustive")) {
        "#[non_exhaustive] "
    } else {
        ""
    }
}

fn fields(out: &mut BTreeSet<String>, at: &str, f: &Fields) {
    for (i, field) in f.iter().enumerate() {
        if is_pub(&field.vis) {
            let name = field
                .ident
                .as_ref()
                .map_or(i.to_string(), ToString::to_string);
            out.insert(format!("{at}.{name}: {}", text(&field.ty)));
        }
    }
}

fn items(out: &mut BTreeSet<String>, module: &str, list: &[Item], dir: &Path) {
    for item in list {
        match item {
            Item::Fn(f) if is_pub(&f.vis) && !cfg_test(&f.attrs) => {
                out.insert(format!("{module}::{}", text(&f.sig)));
            }
            Item::Struct(s) if is_pub(&s.vis) && !cfg_test(&s.attrs) => {
                let at = format!("{module}::{}", s.ident);
                out.insert(format!(
                    "{}struct {at}{}",
                    non_exhaustive(&s.attrs),
                    text(&s.generics)
                ));
                fields(out, &at, &s.fields);
            }
            Item::Enum(e) if is_pub(&e.vis) && !cfg_test(&e.attrs) => {
                let at = format!("{module}::{}", e.ident);
                out.insert(format!(
                    "{}enum {at}{}",
                    non_exhaustive(&e.attrs),
                    text(&e.generics)
                ));
                for v in &e.variants {
                    let shape = match &v.fields {
                        Fields::Unit => String::new(),
                        f => text(f),
                    };
                    out.insert(format!("{at}::{}{shape}", v.ident));
                }
            }
            Item::Trait(t) if is_pub(&t.vis) && !cfg_test(&t.attrs) => {
                let at = format!("{module}::{}", t.ident);
                let supertraits = if t.supertraits.is_empty() {
                    String::new()
                } else {
                    format!(": {}", text(&t.supertraits))
                };
                out.insert(format!("trait {at}{}{supertraits}", text(&t.generics)));
                for ti in &t.items {
                    match ti {
                        TraitItem::Fn(f) => {
                            let default = if f.default.is_some() {
                                " (default)"
                            } else {
                                ""
                            };
                            out.insert(format!("{at}::{}{default}", text(&f.sig)));
                        }
                        TraitItem::Type(ty) => {
                            out.insert(format!("{at}::type {}{}", ty.ident, text(&ty.bounds)));
                        }
                        TraitItem::Const(c) => {
                            out.insert(format!("{at}::const {}: {}", c.ident, text(&c.ty)));
                        }
                        _ => {}
                    }
                }
            }
            Item::Type(t) if is_pub(&t.vis) => {
                out.insert(format!("type {module}::{} = {}", t.ident, text(&t.ty)));
            }
            Item::Const(c) if is_pub(&c.vis) => {
                out.insert(format!("const {module}::{}: {}", c.ident, text(&c.ty)));
            }
            Item::Static(s) if is_pub(&s.vis) => {
                out.insert(format!("static {module}::{}: {}", s.ident, text(&s.ty)));
            }
            Item::Use(u) if is_pub(&u.vis) && !cfg_test(&u.attrs) => {
                out.insert(format!("{module}: pub use {}", text(&u.tree)));
            }
            Item::Impl(i) if !cfg_test(&i.attrs) => {
                let of = match &i.trait_ {
                    Some((_, path, _)) => format!("impl {} for {}", text(path), text(&i.self_ty)),
                    None => format!("impl {}", text(&i.self_ty)),
                };
                // A trait impl is public as a whole (its methods are the trait's).
                if i.trait_.is_some() {
                    out.insert(format!("{module}: {of}"));
                    continue;
                }
                for ii in &i.items {
                    if let ImplItem::Fn(f) = ii {
                        if is_pub(&f.vis) && !cfg_test(&f.attrs) {
                            out.insert(format!("{module}: {of}::{}", text(&f.sig)));
                        }
                    }
                    if let ImplItem::Const(c) = ii {
                        if is_pub(&c.vis) {
                            out.insert(format!(
                                "{module}: {of}::const {}: {}",
                                c.ident,
                                text(&c.ty)
                            ));
                        }
                    }
                }
            }
            Item::Mod(m) if !cfg_test(&m.attrs) => {
                let name = m.ident.to_string();
                let path = format!("{module}::{name}");
                match &m.content {
                    Some((_, inner)) => items(out, &path, inner, dir),
                    None => {
                        // `mod x;`: x.rs or x/mod.rs beside this file's module folder.
                        let file = [
                            dir.join(format!("{name}.rs")),
                            dir.join(&name).join("mod.rs"),
                        ]
                        .into_iter()
                        .find(|p| p.exists());
                        if let Some(file) = file {
                            let sub_dir = dir.join(&name);
                            parse_file(out, &path, &file, &sub_dir);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn parse_file(out: &mut BTreeSet<String>, module: &str, file: &Path, dir: &Path) {
    let src = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&src).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    items(out, module, &parsed.items, dir);
}

/// The listing of the crate whose `lib.rs` is at `src`, named `name`.
fn listing(name: &str, src: &str) -> String {
    let lib = root().join(src);
    let dir = lib.parent().expect("src").to_path_buf();
    let mut out = BTreeSet::new();
    parse_file(&mut out, name, &lib, &dir);
    let mut text = format!(
        "# The public API of `{name}`, listed by tests/integration/public_api.rs.\n\
         # A change here needs a CHANGELOG.md entry (with its migration).\n"
    );
    for line in out {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

fn check(name: &str, src: &str) {
    let listed = listing(name, src);
    let file = root().join("api").join(format!("{name}.txt"));
    if std::env::var_os("TENURE_BLESS_API").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &listed).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    if committed == listed {
        return;
    }
    let old: BTreeSet<&str> = committed.lines().collect();
    let new: BTreeSet<&str> = listed.lines().collect();
    let mut diff = String::new();
    for l in old.difference(&new) {
        diff.push_str(&format!("- {l}\n"));
    }
    for l in new.difference(&old) {
        diff.push_str(&format!("+ {l}\n"));
    }
    panic!(
        "the public API of `{name}` changed ({} listed):\n{diff}\n\
         If this is meant: TENURE_BLESS_API=1 cargo test -p tenure-tests --test integration public_api, \
         and add a CHANGELOG.md entry saying what changed and how outside crates migrate.",
        file.display()
    );
}

#[test]
fn public_api_of_tenure_core_is_the_committed_listing() {
    check("tenure-core", "crates/core/src/lib.rs");
}

#[test]
fn public_api_of_the_tenure_facade_is_the_committed_listing() {
    check("tenure", "crates/tenure/src/lib.rs");
}

/// The lister sees what it must: a negative control on a made-up crate.
#[test]
fn the_lister_sees_fields_variants_signatures_and_skips_test_code() {
    let src = r#"
        pub struct A { pub x: u32, y: u32 }
        pub enum E { One, Two(u8) }
        pub fn f(a: &A) -> u32 { a.x }
        fn private() {}
        impl A { pub fn new() -> A { A { x: 0, y: 0 } } fn hidden(&self) {} }
        pub trait T { fn must(&self); fn may(&self) {} }
        #[cfg(test)] pub fn only_in_tests() {}
    "#;
    let parsed = syn::parse_file(src).unwrap();
    let mut out = BTreeSet::new();
    items(&mut out, "k", &parsed.items, Path::new("."));
    let all: Vec<&str> = out.iter().map(String::as_str).collect();
    for want in [
        "struct k::A",
        "k::A.x: u32",
        "enum k::E",
        "k::E::One",
        "k::E::Two(u8)",
        "k::fn f(a: &A) -> u32",
        "k: impl A::fn new() -> A",
        "trait k::T",
        "k::T::fn must(&self)",
        "k::T::fn may(&self) (default)",
    ] {
        assert!(all.contains(&want), "{want} not in {all:#?}");
    }
    assert!(!all
        .iter()
        .any(|l| l.contains("private") || l.contains("hidden")));
    assert!(!all
        .iter()
        .any(|l| l.contains(".y") || l.contains("only_in_tests")));
}
