//! Tests of the contract versions' type check (`versions.rs`): a
//! component's exports are checked once, on its first instance, a `call` of
//! another type is refused there, and an instance is called only through the
//! build that made it. The components are `wit-component`'s dummy modules
//! (every function traps) of corral's WIT, edited where a test needs
//! another type.

use std::sync::Arc;

use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

use super::PluginPre;
use crate::sandbox::store::{Blank, Bound, new_store};
use crate::sandbox::{self, Op, RunSetup};
use crate::{Engine, Grants, Leaks, Limits, PoolConfig, SystemResolver};

/// corral's 0.3.0 WIT (`wit/corral-tool.wit`), with `call`'s line
/// replaced by `call`.
fn wit_with_call(call: &str) -> String {
    const LINE: &str = "    call: func(name: string, arguments: string, context: context) -> result<tool-output, tool-error>;";
    let wit = include_str!("../../../../wit/corral-tool.wit");
    assert!(
        wit.contains(LINE),
        "the WIT's `call` moved: update this test"
    );
    wit.replace(LINE, call)
}

/// A component of `wit`'s `plugin` world whose functions all trap
/// (`wit-component`'s dummy module), linked on `engine`.
fn plugin(engine: &Engine, wit: &str) -> PluginPre {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str("corral-tool.wit", wit)
        .expect("the WIT parses");
    let world = resolve
        .select_world(&[package], Some("plugin"))
        .expect("the WIT has `plugin`");
    let mut module =
        wit_component::dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .expect("metadata embeds");
    let bytes = ComponentEncoder::default()
        .module(&module)
        .expect("a core module")
        .validate(true)
        .encode()
        .expect("the component encodes");
    let component =
        wasmtime::component::Component::new(engine.wasmtime(), &bytes).expect("it compiles");
    let pre = sandbox::linker(engine)
        .expect("linker")
        .instantiate_pre(&component)
        .expect("corral's linker satisfies the world's imports");
    PluginPre::new(pre).expect("it exports corral:tool/tool@0.3.0")
}

/// Whether `pre`'s exports have passed their type check.
fn checked(pre: &PluginPre) -> bool {
    pre.type_checked()
}

/// One run of `op` on a fresh instance of `pre`, nothing granted: its
/// failure's text (every function of a dummy module traps).
async fn failure(engine: &Engine, pre: &PluginPre, op: Op<'_>) -> String {
    let limits = Limits::default();
    let setup = RunSetup {
        tape: None,
        engine,
        pre,
        limits: &limits,
        plugin: Arc::from("dummy"),
        tool: Arc::from("t"),
        grants: &Grants::none(),
        approval: None,
        client: None,
        tools: None,
        resolver: Arc::new(SystemResolver),
        progress: None,
        leaks: Leaks::new(None, Arc::from("t"), Default::default()),
        slot: None,
    };
    let (result, _) = sandbox::run(setup, op).await;
    result
        .err()
        .expect("a dummy component's call fails")
        .to_string()
}

fn call<'a>(context: &'a Vec<(String, String)>) -> Op<'a> {
    Op::Call {
        name: "t",
        arguments: "{}",
        context,
    }
}

#[tokio::test]
async fn a_call_export_of_another_type_is_refused_by_describe_and_by_a_first_call() {
    let engine = Engine::new(PoolConfig::default()).expect("engine");
    let pre = plugin(
        &engine,
        &wit_with_call(
            "    call: func(name: string, arguments: string, context: context) -> result<string, tool-error>;",
        ),
    );
    let context = Vec::new();
    // `describe`, at load, refuses it first; a call's instance would too.
    let text = failure(&engine, &pre, Op::Describe).await;
    assert!(
        text.contains("do not have the types of corral:tool/plugin@0.3.0"),
        "{text}"
    );
    for _ in 0..2 {
        let text = failure(&engine, &pre, call(&context)).await;
        assert!(
            text.contains("do not have the types of corral:tool/plugin@0.3.0")
                && text.contains("expected `list` found `string`"),
            "{text}"
        );
        assert!(!checked(&pre), "a failed check is not remembered");
    }
}

#[tokio::test]
async fn exports_are_type_checked_once_by_describe_or_the_first_call() {
    let engine = Engine::new(PoolConfig::default()).expect("engine");
    let wit = include_str!("../../../../wit/corral-tool.wit");
    let context = Vec::new();
    // The first call's instance checks them (and then the guest traps).
    let pre = plugin(&engine, wit);
    assert!(!checked(&pre));
    let text = failure(&engine, &pre, call(&context)).await;
    assert!(!text.contains("do not have the types"), "{text}");
    assert!(checked(&pre), "the first instance checked the exports");
    // So does `describe`'s, through the bindings.
    let pre = plugin(&engine, wit);
    failure(&engine, &pre, Op::Describe).await;
    assert!(checked(&pre), "describe checked the exports");
}

#[tokio::test]
async fn an_instance_is_called_only_through_the_build_that_made_it() {
    let engine = Engine::new(PoolConfig::default()).expect("engine");
    let wit = include_str!("../../../../wit/corral-tool.wit");
    // Two builds of one component: each its own contract.
    let (made_by, other) = (plugin(&engine, wit), plugin(&engine, wit));
    let plugin_name: Arc<str> = Arc::from("dummy");
    let grants = Grants::none();
    let limits = Limits::default();
    let mut store = new_store(
        Blank {
            engine: &engine,
            pre: &made_by,
            plugin: plugin_name.clone(),
            grants: &grants,
            resolver: Arc::new(SystemResolver),
            tape: None,
        },
        &limits,
        Bound::idle(&plugin_name, &grants),
    )
    .unwrap_or_else(|_| panic!("a store"));
    let instance = made_by
        .instantiate(&mut store)
        .await
        .expect("it instantiates")
        .expect("a plugin of corral's world");
    let context = Vec::new();
    let err = other
        .call(&mut store, Some(instance), "t", "{}", &context, 1024)
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains("made by another plugin build"),
        "{err:#}"
    );
}
