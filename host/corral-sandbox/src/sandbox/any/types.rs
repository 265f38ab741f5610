//! Facts about a foreign component's WIT types, each found once per type
//! definition (types form a DAG: one may be used many times): which have no
//! JSON form, how deeply they nest, and how large their schema would be
//! inlined, so that `schema.rs` puts a large type used more than once in
//! `$defs` instead of copying it. A hostile component controls its types;
//! these facts keep what the host does with them linear in their number.

use std::cell::RefCell;
use std::collections::HashMap;

use wit_parser::{Resolve, Type, TypeDefKind, TypeId};

use super::docs::{self, Docs};

/// The deepest nesting of types followed (a record in a list in a record is
/// 3): 64. A function whose types nest deeper is not offered, so that no
/// recursive walk over a hostile component's types can exhaust the host's
/// stack.
pub(crate) const MAX_DEPTH: usize = 64;

/// Memoised facts about the types of one component.
pub(crate) struct TypeFacts<'a> {
    resolve: &'a Resolve,
    docs: &'a Docs,
    depth: RefCell<HashMap<TypeId, usize>>,
    unsupported: RefCell<HashMap<TypeId, Option<&'static str>>>,
    weight: RefCell<HashMap<TypeId, usize>>,
}

/// The types a type definition uses directly.
fn children(resolve: &Resolve, id: TypeId) -> Vec<Type> {
    match &resolve.types[id].kind {
        TypeDefKind::Record(r) => r.fields.iter().map(|f| f.ty).collect(),
        TypeDefKind::Tuple(t) => t.types.clone(),
        TypeDefKind::Variant(v) => v.cases.iter().filter_map(|c| c.ty).collect(),
        TypeDefKind::Option(t) | TypeDefKind::List(t) | TypeDefKind::Type(t) => vec![*t],
        TypeDefKind::Result(r) => r.ok.iter().chain(r.err.iter()).copied().collect(),
        TypeDefKind::FixedLengthList(t, _) => vec![*t],
        TypeDefKind::Map(k, v) => vec![*k, *v],
        TypeDefKind::Future(t) | TypeDefKind::Stream(t) => t.iter().copied().collect(),
        TypeDefKind::Flags(_)
        | TypeDefKind::Enum(_)
        | TypeDefKind::Resource
        | TypeDefKind::Handle(_)
        | TypeDefKind::Unknown => Vec::new(),
    }
}

fn ids(types: Vec<Type>) -> impl Iterator<Item = TypeId> {
    types.into_iter().filter_map(|t| match t {
        Type::Id(id) => Some(id),
        _ => None,
    })
}

impl<'a> TypeFacts<'a> {
    /// Facts about the types of `resolve`, whose schemas carry `docs`.
    pub fn new(resolve: &'a Resolve, docs: &'a Docs) -> Self {
        Self {
            resolve,
            docs,
            depth: RefCell::default(),
            unsupported: RefCell::default(),
            weight: RefCell::default(),
        }
    }

    /// The resolve the types belong to.
    pub fn resolve(&self) -> &'a Resolve {
        self.resolve
    }

    /// How deeply `ty` nests (a primitive is 0), found without recursion.
    pub fn depth(&self, ty: &Type) -> usize {
        let Type::Id(root) = ty else { return 0 };
        let mut memo = self.depth.borrow_mut();
        // Post-order over the DAG with an explicit stack: component types
        // cannot be recursive, so every child is done before its parent.
        let mut stack = vec![(*root, false)];
        while let Some((id, expanded)) = stack.pop() {
            if memo.contains_key(&id) {
                continue;
            }
            let kids = ids(children(self.resolve, id));
            if expanded {
                let deepest = kids.filter_map(|k| memo.get(&k)).max().copied();
                memo.insert(id, 1 + deepest.unwrap_or(0));
            } else {
                stack.push((id, true));
                stack.extend(kids.map(|k| (k, false)));
            }
        }
        memo.get(root).copied().unwrap_or(0)
    }

    /// Why `ty` has no JSON form (or is nested deeper than [`MAX_DEPTH`]),
    /// or `None` when it has one.
    pub fn unsupported(&self, ty: &Type) -> Option<&'static str> {
        if self.depth(ty) > MAX_DEPTH {
            return Some("types nested more than 64 deep");
        }
        self.unsupported_within(ty)
    }

    /// [`Self::unsupported`] for a type known to nest at most
    /// [`MAX_DEPTH`] deep.
    fn unsupported_within(&self, ty: &Type) -> Option<&'static str> {
        let Type::Id(id) = ty else {
            return matches!(ty, Type::ErrorContext).then_some("an error-context");
        };
        if let Some(known) = self.unsupported.borrow().get(id) {
            return *known;
        }
        let answer = match &self.resolve.types[*id].kind {
            TypeDefKind::Resource | TypeDefKind::Handle(_) => Some("a resource"),
            TypeDefKind::Future(_) => Some("a future"),
            TypeDefKind::Stream(_) => Some("a stream"),
            TypeDefKind::Map(..) => Some("a map"),
            TypeDefKind::FixedLengthList(..) => Some("a fixed-length list"),
            TypeDefKind::Unknown => Some("a type of unknown structure"),
            _ => children(self.resolve, *id)
                .iter()
                .find_map(|t| self.unsupported_within(t)),
        };
        self.unsupported.borrow_mut().insert(*id, answer);
        answer
    }

    /// About how many bytes the schema of `ty` takes inlined, docs included
    /// (saturating; for a type of at most [`MAX_DEPTH`] levels).
    pub fn weight(&self, ty: &Type) -> usize {
        let Type::Id(id) = ty else { return 32 };
        if let Some(known) = self.weight.borrow().get(id) {
            return *known;
        }
        let def = &self.resolve.types[*id];
        let owner = docs::owner_of(self.resolve, def.owner);
        let name = def.name.as_deref().unwrap_or_default();
        let doc = |path: &[&str]| self.docs.get(&docs::key(&owner, path)).map_or(0, str::len);
        let mut own = 48 + doc(&[name]);
        match &def.kind {
            TypeDefKind::Record(r) => {
                for f in &r.fields {
                    own += 16 + f.name.len() + doc(&[name, &f.name]);
                }
            }
            TypeDefKind::Variant(v) => {
                for c in &v.cases {
                    own += 96 + c.name.len() + doc(&[name, &c.name]);
                }
            }
            TypeDefKind::Enum(e) => {
                for c in &e.cases {
                    own += 16 + c.name.len() + doc(&[name, &c.name]);
                }
            }
            TypeDefKind::Flags(f) => {
                for flag in &f.flags {
                    own += 8 + flag.name.len() + doc(&[name, &flag.name]);
                }
            }
            _ => {}
        }
        let total = children(self.resolve, *id)
            .iter()
            .fold(own, |sum, t| sum.saturating_add(self.weight(t)));
        self.weight.borrow_mut().insert(*id, total);
        total
    }

    /// `ty` without aliases (`type a = b`).
    pub fn base(&self, ty: &Type) -> Type {
        let mut ty = *ty;
        for _ in 0..=MAX_DEPTH {
            match ty {
                Type::Id(id) => match &self.resolve.types[id].kind {
                    TypeDefKind::Type(inner) => ty = *inner,
                    _ => return ty,
                },
                _ => return ty,
            }
        }
        ty
    }

    /// Whether JSON `null` is one of the values of `ty`, so an `option` of
    /// it needs the tagged form: it is an `option` itself.
    pub fn nullable(&self, ty: &Type) -> bool {
        match self.base(ty) {
            Type::Id(id) => matches!(self.resolve.types[id].kind, TypeDefKind::Option(_)),
            _ => false,
        }
    }

    /// Every type definition used more than once under `types` (through
    /// aliases), each counted once per use.
    pub fn shared(&self, types: &[Type]) -> Vec<TypeId> {
        let mut uses: HashMap<TypeId, usize> = HashMap::new();
        let mut pending: Vec<Type> = types.to_vec();
        while let Some(ty) = pending.pop() {
            let Type::Id(id) = self.base(&ty) else {
                continue;
            };
            let count = uses.entry(id).or_default();
            *count += 1;
            if *count == 1 {
                pending.extend(children(self.resolve, id));
            }
        }
        uses.into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(id, _)| id)
            .collect()
    }
}
