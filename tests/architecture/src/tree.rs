//! The module tree of one crate: every module file, found by following the
//! `mod x;` items from the crate root, and what each module (and each inline
//! `mod x { ... }` block) defines and imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::Error;

/// An index into [`Tree::scopes`].
pub(crate) type ScopeId = usize;

/// The root module's scope.
pub(crate) const ROOT: ScopeId = 0;

/// What one leaf of a `use` tree binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// A name (`use a::B;`, `use a::B as C;`, `use a::{self}`).
    Name(String),
    /// Every name its target holds (`use a::*;`).
    Glob,
    /// Nothing (`use a::Trait as _;`).
    Nothing,
}

/// One leaf of a `use` tree, flattened: `use a::{b, c as d}` has two.
#[derive(Clone, Debug)]
pub(crate) struct UseLeaf {
    /// The name it binds.
    pub bound: Bound,
    /// Its full path as written (for a glob, the path before `::*`).
    pub path: Vec<String>,
    /// Its line in its file.
    pub line: usize,
    /// The leaf as text, `crate::a::B as C`.
    pub text: String,
}

/// A module: one with its own file, or an inline `mod x { ... }` block.
#[derive(Debug)]
pub(crate) struct Scope {
    /// Its path from the crate root, `crate::a::b`.
    pub path: String,
    /// The module with a file of its own that holds it (itself, unless it
    /// is an inline block): a node of the graph.
    pub module: String,
    /// The module it is declared in.
    pub parent: Option<ScopeId>,
    /// The directory its child modules' files are in.
    dir: PathBuf,
    /// Its child modules, by name.
    pub children: BTreeMap<String, ScopeId>,
    /// The names it defines: functions, types, traits, constants, statics,
    /// `macro_rules!` macros.
    pub items: BTreeSet<String>,
    /// Its `use` items.
    pub uses: Vec<UseLeaf>,
    /// The `use` items inside its functions' bodies: they name things for
    /// that code only, and nothing outside the module can reach them.
    pub local_uses: Vec<UseLeaf>,
}

/// A parsed module file.
pub(crate) struct SourceFile {
    /// Its module.
    pub scope: ScopeId,
    /// Where it is.
    pub path: PathBuf,
    /// Its syntax tree.
    pub ast: syn::File,
}

/// Every module of a crate, and its files.
pub(crate) struct Tree {
    /// The modules; [`ROOT`] first.
    pub scopes: Vec<Scope>,
    /// The files, in the order they were found.
    pub files: Vec<SourceFile>,
    /// The names `extern crate self as name;` gives the crate itself.
    pub self_names: Vec<String>,
    /// Whether `#[cfg(test)]` modules are left out.
    skip_tests: bool,
}

impl Tree {
    /// The modules of the crate whose root file is `root`.
    pub(crate) fn load(root: &Path, skip_tests: bool) -> Result<Self, Error> {
        let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut tree = Self {
            scopes: Vec::new(),
            files: Vec::new(),
            self_names: Vec::new(),
            skip_tests,
        };
        tree.scopes.push(Scope {
            path: "crate".into(),
            module: "crate".into(),
            parent: None,
            dir,
            children: BTreeMap::new(),
            items: BTreeSet::new(),
            uses: Vec::new(),
            local_uses: Vec::new(),
        });
        tree.load_file(ROOT, root)?;
        Ok(tree)
    }

    /// Parses `file`, the code of `scope`, and everything it declares.
    fn load_file(&mut self, scope: ScopeId, file: &Path) -> Result<(), Error> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Error::new(format!("{}: {e}", file.display())))?;
        let ast =
            syn::parse_file(&text).map_err(|e| Error::new(format!("{}: {e}", file.display())))?;
        self.add_items(scope, &ast.items, file)?;
        self.files.push(SourceFile {
            scope,
            path: file.to_path_buf(),
            ast,
        });
        Ok(())
    }

    /// A child module `name` of `parent` (the one already there, for a
    /// module declared twice under different `cfg`s).
    fn child(&mut self, parent: ScopeId, name: &str, own_file: bool) -> (ScopeId, bool) {
        if let Some(&id) = self.scopes[parent].children.get(name) {
            return (id, false);
        }
        let up = &self.scopes[parent];
        let path = format!("{}::{name}", up.path);
        let module = if own_file {
            path.clone()
        } else {
            up.module.clone()
        };
        let dir = up.dir.join(name);
        let id = self.scopes.len();
        self.scopes.push(Scope {
            path,
            module,
            parent: Some(parent),
            dir,
            children: BTreeMap::new(),
            items: BTreeSet::new(),
            uses: Vec::new(),
            local_uses: Vec::new(),
        });
        self.scopes[parent].children.insert(name.to_string(), id);
        (id, true)
    }

    /// Records what `items` (the code of `scope`, in `file`) define,
    /// import and declare, loading the files of declared modules.
    fn add_items(&mut self, scope: ScopeId, items: &[syn::Item], file: &Path) -> Result<(), Error> {
        for item in items {
            let name = match item {
                syn::Item::Mod(m) => {
                    if !(self.skip_tests && is_test_only(&m.attrs)) {
                        self.add_module(scope, m, file)?;
                    }
                    continue;
                }
                syn::Item::Use(u) => {
                    if u.leading_colon.is_none() {
                        self.scopes[scope].uses.extend(use_leaves(&u.tree));
                    }
                    continue;
                }
                syn::Item::Fn(f) => Some(&f.sig.ident),
                syn::Item::Struct(s) => Some(&s.ident),
                syn::Item::Enum(e) => Some(&e.ident),
                syn::Item::Union(u) => Some(&u.ident),
                syn::Item::Const(c) => Some(&c.ident),
                syn::Item::Static(s) => Some(&s.ident),
                syn::Item::Trait(t) => Some(&t.ident),
                syn::Item::TraitAlias(t) => Some(&t.ident),
                syn::Item::Type(t) => Some(&t.ident),
                syn::Item::Macro(m) => m.ident.as_ref(),
                syn::Item::ExternCrate(c) if c.ident == "self" => {
                    if let Some((_, name)) = &c.rename {
                        self.self_names.push(name.unraw().to_string());
                    }
                    continue;
                }
                _ => None,
            };
            if let Some(name) = name {
                self.scopes[scope].items.insert(name.unraw().to_string());
            }
            let mut local = LocalUses(Vec::new());
            local.visit_item(item);
            self.scopes[scope].local_uses.extend(local.0);
        }
        Ok(())
    }

    /// A `mod` item of `scope`: an inline block, or a file to load.
    fn add_module(&mut self, scope: ScopeId, m: &syn::ItemMod, file: &Path) -> Result<(), Error> {
        let name = m.ident.unraw().to_string();
        if let Some((_, content)) = &m.content {
            let (child, _) = self.child(scope, &name, false);
            return self.add_items(child, content, file);
        }
        let here = &self.scopes[scope];
        let candidates = match path_attribute(&m.attrs) {
            // Relative to the file's directory, or, inside an inline
            // module, to that module's directory.
            Some(path) if here.path == here.module => {
                vec![file.parent().unwrap_or(Path::new(".")).join(path)]
            }
            Some(path) => vec![here.dir.join(path)],
            None => vec![
                here.dir.join(format!("{name}.rs")),
                here.dir.join(&name).join("mod.rs"),
            ],
        };
        let Some(found) = candidates.iter().find(|f| f.is_file()).cloned() else {
            return Err(Error::new(format!(
                "{}:{}: module `{name}` has no file (looked for {})",
                file.display(),
                m.span().start().line,
                candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let by_path = path_attribute(&m.attrs).is_some();
        let (child, new) = self.child(scope, &name, true);
        if new {
            if by_path {
                // Its own modules are beside it, as a `mod.rs`'s are.
                self.scopes[child].dir = found.parent().unwrap_or(Path::new(".")).to_path_buf();
            }
            self.load_file(child, &found)?;
        }
        Ok(())
    }
}

/// The file a `#[path = "..."]` attribute names.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether `attrs` hold `#[cfg(test)]`.
pub(crate) fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The leaves of a `use` tree.
pub(crate) fn use_leaves(tree: &syn::UseTree) -> Vec<UseLeaf> {
    let mut leaves = Vec::new();
    collect_leaves(tree, &mut Vec::new(), &mut leaves);
    leaves
}

fn collect_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    let line = tree.span().start().line;
    let leaf = |bound: Bound, path: Vec<String>, suffix: &str| UseLeaf {
        text: format!("{}{suffix}", path.join("::")),
        bound,
        path,
        line,
    };
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            collect_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                collect_leaves(t, prefix, out);
            }
        }
        syn::UseTree::Glob(_) => out.push(leaf(Bound::Glob, prefix.clone(), "::*")),
        syn::UseTree::Name(n) => {
            let name = n.ident.unraw().to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name);
            }
            let bound = path
                .last()
                .map_or(Bound::Nothing, |n| Bound::Name(n.clone()));
            out.push(leaf(bound, path, ""));
        }
        syn::UseTree::Rename(r) => {
            let name = r.ident.unraw().to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name);
            }
            let alias = r.rename.unraw().to_string();
            let suffix = format!(" as {alias}");
            let bound = if alias == "_" {
                Bound::Nothing
            } else {
                Bound::Name(alias)
            };
            out.push(leaf(bound, path, &suffix));
        }
    }
}

/// The `use` items inside one item's code (a function's body, an `impl`'s
/// methods), not inside modules it declares.
struct LocalUses(Vec<UseLeaf>);

impl<'ast> Visit<'ast> for LocalUses {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_none() {
            self.0.extend(use_leaves(&u.tree));
        }
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}
}
