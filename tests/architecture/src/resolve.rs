//! Paths to the modules that define what they name, walked segment by
//! segment from where they are written, through re-exports and globs.

use crate::tree::{Bound, ROOT, ScopeId, Tree, UseLeaf};

/// What a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A module.
    Module(ScopeId),
    /// An item that module defines (or a name in it the tree does not
    /// know, such as an item a macro generates).
    Item(ScopeId),
}

/// Longest chain of re-exports followed for one name.
const MAX_DEPTH: usize = 64;

/// Resolves paths in one tree.
pub(crate) struct Resolver<'t> {
    tree: &'t Tree,
    /// The names being looked up, innermost last: a name met again while
    /// it is being looked up is a loop of re-exports, and names nothing.
    active: Vec<(ScopeId, String)>,
}

impl<'t> Resolver<'t> {
    /// A resolver of paths in `tree`.
    pub(crate) fn new(tree: &'t Tree) -> Self {
        Self {
            tree,
            active: Vec::new(),
        }
    }

    /// What `path`, written in `from`, names in this crate; `None` when it
    /// is not a path into the crate (another crate, a local, the prelude).
    ///
    /// The first segment is `crate`, `self`, `super`, a name `from`
    /// defines, declares or imports, or the crate's own name (`extern crate
    /// self as name;`); each later one is looked up in the
    /// module reached so far. A path that reaches an item stops there (the
    /// rest are its variants or associated items); a segment the tree
    /// cannot find stops the walk in the module reached so far.
    pub(crate) fn resolve(&mut self, from: ScopeId, path: &[String]) -> Option<Target> {
        let (first, rest) = path.split_first()?;
        let mut at = match first.as_str() {
            "crate" => Target::Module(ROOT),
            "self" => Target::Module(from),
            "super" => Target::Module(self.tree.scopes[from].parent?),
            "Self" => return None,
            name => match self.lookup(from, name, true) {
                Some(found) => found,
                None if self.tree.self_names.iter().any(|n| n == name) => Target::Module(ROOT),
                None => return None,
            },
        };
        for segment in rest {
            let Target::Module(scope) = at else {
                break;
            };
            at = match segment.as_str() {
                "self" => at,
                "super" => match self.tree.scopes[scope].parent {
                    Some(parent) => Target::Module(parent),
                    None => return None,
                },
                name => match self.lookup(scope, name, false) {
                    Some(found) => found,
                    None => Target::Item(scope),
                },
            };
        }
        Some(at)
    }

    /// What `name` means in `scope`: a child module, an item it defines, or
    /// what one of its `use` items (named, then glob) brings in. `local`
    /// adds the `use` items of its function bodies (for code written in
    /// the module itself).
    fn lookup(&mut self, scope: ScopeId, name: &str, local: bool) -> Option<Target> {
        let here = &self.tree.scopes[scope];
        if let Some(&child) = here.children.get(name) {
            return Some(Target::Module(child));
        }
        if here.items.contains(name) {
            return Some(Target::Item(scope));
        }
        let key = (scope, name.to_string());
        if self.active.len() >= MAX_DEPTH || self.active.contains(&key) {
            return None;
        }
        self.active.push(key);
        let found = self.through_uses(scope, name, local);
        self.active.pop();
        found
    }

    fn through_uses(&mut self, scope: ScopeId, name: &str, local: bool) -> Option<Target> {
        let tree = self.tree;
        let here = &tree.scopes[scope];
        let locals = if local { &here.local_uses[..] } else { &[] };
        let leaves = || here.uses.iter().chain(locals);
        for leaf in leaves() {
            if matches!(&leaf.bound, Bound::Name(n) if n == name)
                && let Some(found) = self.resolve(scope, &leaf.path)
            {
                return Some(found);
            }
        }
        for leaf in leaves() {
            if leaf.bound == Bound::Glob
                && let Some(Target::Module(target)) = self.resolve(scope, &leaf.path)
                && let Some(found) = self.lookup(target, name, false)
            {
                return Some(found);
            }
        }
        None
    }
}

/// Whether `path`, written in `scope`, starts by climbing to the parent:
/// `super::...`, or a name that a `use super::...` (or `use super::*`) of
/// `scope` brought in.
pub(crate) fn climbs(tree: &Tree, scope: ScopeId, path: &[String]) -> bool {
    let Some(first) = path.first() else {
        return false;
    };
    if first == "super" {
        return true;
    }
    let here = &tree.scopes[scope];
    if here.children.contains_key(first) || here.items.contains(first) {
        return false;
    }
    let leaves = || here.uses.iter().chain(&here.local_uses);
    let up = |leaf: &UseLeaf| leaf.path.first().is_some_and(|s| s == "super");
    let mut named = leaves()
        .filter(|l| matches!(&l.bound, Bound::Name(n) if n == first))
        .peekable();
    if named.peek().is_some() {
        return named.any(up);
    }
    leaves().filter(|l| l.bound == Bound::Glob).any(up)
}
