//! Toolchain hooks: functions a guest toolchain adds to every component it
//! builds, for its own build step, which are not the author's tools. A
//! model must never call one (componentize-qjs's `init` evaluates the
//! script it is given). Each is recognised by its toolchain's own signature
//! (name, parameter names and types, result), wherever it sits: at the
//! world's top level or inside an exported interface. A function of the
//! author's that happens to be called `init` is still a tool.
//!
//! | toolchain | signature | where it sits |
//! |---|---|---|
//! | componentize-py 0.25 | `init: func(app-name: string, symbols: symbols, stub-wasi: bool) -> result<_, string>` | the `exports` interface |
//! | componentize-qjs 0.x | `init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>` | the world's top level |
//!
//! The README's any-component section keeps the same table; a new
//! toolchain's hook is a row there and an entry in [`HOOKS`].

use wit_parser::{Function, Resolve, Type, TypeDefKind};

/// A parameter type as a hook's signature states it.
#[derive(Debug, Clone, Copy)]
enum Shape {
    String,
    Bool,
    OptionOfString,
    /// A record of this name (its fields are the toolchain's business).
    Record(&'static str),
}

/// One toolchain's hook.
struct Hook {
    toolchain: &'static str,
    name: &'static str,
    params: &'static [(&'static str, Shape)],
}

/// Every hook recognised; each returns `result<_, string>`.
const HOOKS: &[Hook] = &[
    Hook {
        toolchain: "componentize-py",
        name: "init",
        params: &[
            ("app-name", Shape::String),
            ("symbols", Shape::Record("symbols")),
            ("stub-wasi", Shape::Bool),
        ],
    },
    Hook {
        toolchain: "componentize-qjs",
        name: "init",
        params: &[
            ("shim", Shape::String),
            ("script", Shape::String),
            ("entry-path", Shape::OptionOfString),
            ("disable-gc", Shape::Bool),
        ],
    },
];

/// The toolchain whose build-time hook `function` is, if it is one.
pub(super) fn toolchain_of(resolve: &Resolve, function: &Function) -> Option<&'static str> {
    HOOKS
        .iter()
        .find(|hook| {
            function.name == hook.name
                && function.params.len() == hook.params.len()
                && function
                    .params
                    .iter()
                    .zip(hook.params)
                    .all(|(p, (name, shape))| p.name == *name && is(resolve, &p.ty, *shape))
                && function
                    .result
                    .is_some_and(|r| is_unit_or_string_error(resolve, &r))
        })
        .map(|hook| hook.toolchain)
}

/// `ty` with its aliases (`type a = b`) followed.
fn kind(resolve: &Resolve, ty: &Type) -> Option<TypeDefKind> {
    let mut ty = *ty;
    loop {
        let Type::Id(id) = ty else { return None };
        match &resolve.types[id].kind {
            TypeDefKind::Type(inner) => ty = *inner,
            other => return Some(other.clone()),
        }
    }
}

fn is(resolve: &Resolve, ty: &Type, shape: Shape) -> bool {
    match shape {
        Shape::String => matches!(ty, Type::String),
        Shape::Bool => matches!(ty, Type::Bool),
        Shape::OptionOfString => {
            matches!(kind(resolve, ty), Some(TypeDefKind::Option(Type::String)))
        }
        Shape::Record(name) => match ty {
            Type::Id(id) => {
                matches!(resolve.types[*id].kind, TypeDefKind::Record(_))
                    && resolve.types[*id].name.as_deref() == Some(name)
            }
            _ => false,
        },
    }
}

fn is_unit_or_string_error(resolve: &Resolve, ty: &Type) -> bool {
    matches!(
        kind(resolve, ty),
        Some(TypeDefKind::Result(r)) if r.ok.is_none() && r.err == Some(Type::String)
    )
}

#[cfg(test)]
mod tests {
    use super::toolchain_of;
    use wit_parser::{Resolve, WorldItem};

    /// The functions a world exports, at the top level and in its
    /// interfaces, with the toolchain each is the hook of.
    fn hooks(wit: &str) -> Vec<(String, Option<&'static str>)> {
        let mut resolve = Resolve::default();
        let package = resolve.push_str("test.wit", wit).expect("wit");
        let world = resolve.select_world(&[package], None).expect("world");
        let mut found = Vec::new();
        for item in resolve.worlds[world].exports.values() {
            match item {
                WorldItem::Function(f) => found.push((f.name.clone(), toolchain_of(&resolve, f))),
                WorldItem::Interface { id, .. } => {
                    for f in resolve.interfaces[*id].functions.values() {
                        found.push((f.name.clone(), toolchain_of(&resolve, f)));
                    }
                }
                WorldItem::Type { .. } => {}
            }
        }
        found
    }

    #[test]
    fn each_toolchains_hook_is_recognised_wherever_it_sits() {
        let wit = r#"
            package t:t;
            interface exports {
              record symbols { count: u32 }
              init: func(app-name: string, symbols: symbols, stub-wasi: bool) -> result<_, string>;
            }
            interface tools {
              init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
            }
            world w {
              export init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
              export exports;
              export tools;
            }
        "#;
        assert_eq!(
            hooks(wit),
            [
                ("init".to_string(), Some("componentize-qjs")),
                ("init".to_string(), Some("componentize-py")),
                ("init".to_string(), Some("componentize-qjs")),
            ]
        );
    }

    #[test]
    fn an_authors_own_init_is_a_tool() {
        // Each differs from a hook in one place: the parameter count, a
        // parameter's name, a parameter's type (a string, not the record),
        // the result, the function's name.
        let wit = r#"
            package t:t;
            interface a {
              init: func(shim: string, script: string) -> result<_, string>;
            }
            interface b {
              init: func(shim: string, source: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
            }
            interface c {
              init: func(app-name: string, symbols: string, stub-wasi: bool) -> result<_, string>;
            }
            interface d {
              init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<string, string>;
            }
            world w {
              export setup: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
              export a;
              export b;
              export c;
              export d;
            }
        "#;
        let found = hooks(wit);
        assert_eq!(found.len(), 5);
        assert!(found.iter().all(|(_, hook)| hook.is_none()), "{found:?}");
    }
}
