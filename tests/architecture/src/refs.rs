//! The paths one module file uses: its `use` trees, every path in its code
//! (expressions, types, patterns, trait bounds; not attributes), and the
//! paths inside macro calls' tokens (`info_span!(target: crate::X, ...)`),
//! which syn leaves unparsed.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

use crate::tree::{ScopeId, SourceFile, Tree, use_leaves};

/// How a file came to use a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// A leaf of a `use` item; `public` for `pub use` in any form.
    Use {
        /// Whether the `use` is `pub` (a re-export).
        public: bool,
    },
    /// A path in code, or in a macro call's tokens.
    Code,
}

/// One path a file uses.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    /// The module (or inline block) the path is written in.
    pub scope: ScopeId,
    /// Its segments.
    pub path: Vec<String>,
    /// Where it was written.
    pub via: Via,
    /// Its line.
    pub line: usize,
    /// The path as text.
    pub text: String,
}

/// Every path `file` uses that could name something of its crate: what
/// does not start with `::` (the first segment decides the rest later).
pub(crate) fn references(tree: &Tree, file: &SourceFile) -> Vec<Reference> {
    let mut collector = Collector {
        tree,
        scope: file.scope,
        out: Vec::new(),
    };
    collector.visit_file(&file.ast);
    collector.out
}

struct Collector<'t> {
    tree: &'t Tree,
    scope: ScopeId,
    out: Vec<Reference>,
}

impl Collector<'_> {
    fn push(&mut self, path: Vec<String>, via: Via, line: usize, text: String) {
        if !path.is_empty() {
            self.out.push(Reference {
                scope: self.scope,
                path,
                via,
                line,
                text,
            });
        }
    }

    /// The paths in a macro call's tokens: `a::b` sequences (two segments
    /// or more; a lone name in a macro is as likely a local as an item),
    /// `$crate` read as `crate`, `$x::y` and `::a::b` skipped.
    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let colons = |at: usize| {
            matches!(trees.get(at), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
                && matches!(trees.get(at + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
        };
        let mut at = 0;
        while at < trees.len() {
            let ident = match &trees[at] {
                TokenTree::Group(g) => {
                    self.scan(g.stream());
                    at += 1;
                    continue;
                }
                TokenTree::Ident(ident) => ident,
                TokenTree::Punct(_) | TokenTree::Literal(_) => {
                    at += 1;
                    continue;
                }
            };
            let first = ident.unraw().to_string();
            let dollar =
                at > 0 && matches!(&trees[at - 1], TokenTree::Punct(p) if p.as_char() == '$');
            let absolute = at >= 2 && colons(at - 2);
            let line = ident.span().start().line;
            let mut path = vec![first];
            let mut next = at + 1;
            while colons(next) {
                let Some(TokenTree::Ident(segment)) = trees.get(next + 2) else {
                    break;
                };
                path.push(segment.unraw().to_string());
                next += 3;
            }
            let skipped = absolute || (dollar && path[0] != "crate");
            if path.len() > 1 && !skipped {
                let text = path.join("::");
                self.push(path, Via::Code, line, text);
            }
            at = next;
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_none() {
            return;
        }
        let name = m.ident.unraw().to_string();
        let Some(&child) = self.tree.scopes[self.scope].children.get(&name) else {
            return; // a test module the tree left out
        };
        let outer = std::mem::replace(&mut self.scope, child);
        visit::visit_item_mod(self, m);
        self.scope = outer;
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_some() {
            return;
        }
        let public = !matches!(u.vis, syn::Visibility::Inherited);
        for leaf in use_leaves(&u.tree) {
            self.push(leaf.path, Via::Use { public }, leaf.line, leaf.text);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let path: Vec<String> = p
                .segments
                .iter()
                .map(|s| s.ident.unraw().to_string())
                .collect();
            let text = path.join("::");
            self.push(path, Via::Code, p.span().start().line, text);
        }
        visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        visit::visit_macro(self, m);
        self.scan(m.tokens.clone());
    }
}
